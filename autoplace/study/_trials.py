"""How a measurement is kept as an Optuna trial, shared by the study's reader and writer.

A measurement is a trial: its parameters are the configuration, its system attribute
``autoplace:measurement`` the whole :class:`~autoplace.Measurement`, its user attributes
the figures a dashboard shows (``fed_samples_per_s``, ``compile_s``, ...), the phase that
measured it (``phase``: ``search`` or ``confirm``), whether it served as a group's
reference (``reference``) and whether an interrupt cut it short (``interrupted``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.config import PRECISIONS, Config
from autoplace.devices import device_group, device_names
from autoplace.measurement import Measurement

#: How a trial keeps the phase that measured it: the phase's name (``search``,
#: ``confirm``, ...: ``autoplace.tuning``'s phases; any other is kept as it is).
StoredPhase = str
#: Where a trial keeps its whole Measurement: a system attribute (out of the dashboard's
#: table, which shows the scalar figures below instead); studies written before kept it
#: in the user attribute of the same name, which is still read.
ATTR = "measurement"
SYSTEM_ATTR = "autoplace:measurement"
#: The figures each trial also carries as user attributes of their own, numbers (or the
#: status), so that optuna-dashboard's table shows, sorts and plots them.
_SCALARS = ("status", "transfer_s", "compile_s", "first_call_s", "peak_bytes",
            "deviation_vs_float32")  # fmt: skip
#: The study attribute holding its parameters' ranges (see :func:`bounds`).
BOUNDS = "param_ranges"
_MAX_INT = 2**40
#: The most devices a configuration uses together (the ``device_count`` parameter's range).
_MAX_DEVICES = 4096
#: The user attribute a worker refreshes on the trials it is measuring (see ``_claims``).
HEARTBEAT = "heartbeat"
#: Each trial's own id, made before it is created: a creation retried after its reply was
#: lost finds the trial instead of making a second.
UID = "uid"
#: The parameters every autoplace trial has.
PARAMS = frozenset({"device", "batch_size", "precision"})


@dataclasses.dataclass(frozen=True)
class Ticket:
    """A trial in flight: begun, not yet recorded or abandoned."""

    trial_id: int
    number: int
    config: Config


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A measurement on its way into the study: its ticket and the ticket's attributes,
    the state and value its trial ends in, and the id of the trial it gets instead should
    its own be gone (reclaimed by another worker)."""

    ticket: Ticket
    attrs: Mapping[str, Any]
    measurement: Measurement
    state: Any
    values: list[float] | None
    uid: str


@dataclasses.dataclass(frozen=True)
class TrialSpace:
    """The parameters a study's trials take.

    Attributes:
        devices: every device name of the machine (the ``device`` parameter's choices).
        with_width: whether configurations carry a width.
        batch_sizes: the batch sizes this tune searches (widen the study's range).
        widths: the widths this tune searches (widen the study's range).
    """

    devices: Sequence[str]
    with_width: bool
    batch_sizes: Sequence[int] = ()
    widths: Sequence[int] = ()


def token(trial: Any) -> str | None:
    """The token of ``trial``'s owner (``None`` for a trial of an autoplace before owners)."""
    owner = trial.user_attrs.get("owner")
    return owner.get("token") if isinstance(owner, Mapping) else None


def reclaimed(trial: Any) -> bool:
    """Whether another worker took ``trial`` for dead and ended it."""
    return trial.state.name == "FAIL" and "reclaimed_by" in trial.user_attrs


def scalars(measurement: Measurement) -> dict[str, Any]:
    """The figures a trial carries as user attributes of their own (see :data:`_SCALARS`),
    and its steps' (the fed and the resident one, and the fed one's samples per second)."""
    m = measurement
    found = {k: getattr(m, k) for k in _SCALARS}
    found |= {"fed_step_s": m.fed.step_s, "step_s": m.step.step_s,
              "fed_samples_per_s": m.fed.rate(m.batch_size)}  # fmt: skip
    return {k: v for k, v in found.items() if v is not None}


def bounds(held: Any, space: TrialSpace) -> dict[str, list[int]]:
    """The study's parameter ranges: those it holds, widened to take the space's batch
    sizes and widths (the same for every trial unless a later tune searches wider)."""
    out = {k: list(v) for k, v in (held or {}).items()}
    for key, values in (("batch_size", space.batch_sizes), ("width", space.widths)):
        if values:
            lo, hi = out.get(key, [min(values), max(values)])
            out[key] = [min(lo, *values), max(hi, *values)]
    return out


def distributions(space: TrialSpace, ranges: Mapping[str, Sequence[int]]) -> dict[str, Any]:
    """The trials' distributions: log-scaled over the study's ranges (a plot's axis and a
    parameter importance then spread the powers of two evenly)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    def ints(key: str) -> Any:
        lo, hi = ranges.get(key, (1, _MAX_INT))
        return IntDistribution(lo, max(hi, lo + 1), log=True)

    dists: dict[str, Any] = {
        "device": CategoricalDistribution(sorted(space.devices)),
        "batch_size": ints("batch_size"),
        "precision": CategoricalDistribution(list(PRECISIONS)),
    }
    if space.with_width:
        dists["width"] = ints("width")
    dists["device_count"] = IntDistribution(1, _MAX_DEVICES, log=True)
    return dists


def template(
    dists: Mapping[str, Any],
    config: Config,
    attrs: Mapping[str, Any],
    state: Any,
    measurement: Measurement | None = None,
    values: list[float] | None = None,
) -> Any:
    """A trial of ``config`` whole: parameters, attributes, and a finished trial's
    measurement and state (``Study.ask`` commits each parameter on its own: 50 ms a
    trial on SQLite). The strategy, not a sampler, chose ``config``."""
    from optuna.trial import FrozenTrial

    params = params_of(config)
    return FrozenTrial(
        number=-1,
        state=state,
        value=None,
        values=values,
        datetime_start=dt.datetime.now(),
        datetime_complete=dt.datetime.now() if state.is_finished() else None,
        params=params,
        distributions={k: dists[k] for k in params},
        user_attrs={**attrs, **(scalars(measurement) if measurement else {})},
        system_attrs={SYSTEM_ATTR: measurement.to_dict()} if measurement else {},
        intermediate_values={},
        trial_id=-1,
    )


def params_of(config: Config) -> dict[str, Any]:
    """A configuration as a trial's parameters."""
    params: dict[str, Any] = {
        "device": device_names(config.device)[0],
        "batch_size": config.batch_size,
        "precision": config.precision,
    }
    if config.width is not None:
        params["width"] = config.width
    if config.device_count > 1:  # several devices together: the first, and how many
        params["device_count"] = config.device_count
    return params


def config_of(params: Mapping[str, Any]) -> Config:
    """A trial's parameters as a configuration."""
    return Config(
        device=device_group(params["device"], int(params.get("device_count", 1))),
        batch_size=int(params["batch_size"]),
        precision=params["precision"],
        width=int(params["width"]) if "width" in params else None,
    )
