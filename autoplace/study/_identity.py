"""A study's identity: what a tune's study must be, and the refusal of any other.

A study holds measurements of one model file's workload, on one kind of machine, scored
for one objective and run length, in one direction. A tune that opens a study checks
all of it (:func:`adopt`) before it measures anything: a study made by something else,
or for another workload, hardware or objective, is refused in one line that says which
and what to pass instead, because resuming it would mix its measurements with this
tune's. What the study lacks of the tune's identity is then recorded with it.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any

from autoplace.errors import BadInputError
from autoplace.study._trials import BOUNDS, PARAMS, TrialSpace, bounds


@dataclasses.dataclass(frozen=True)
class StudyIdentity:
    """What a tune's study is made for, checked against what a study holds.

    Attributes:
        direction: the objective's direction; a study made for the other is refused.
        objective: the objective's name, for that refusal.
        attrs: attributes recorded with a new study (workload, hardware, objective,
            device memory, ...); a study holding another workload, hardware or objective
            is refused.
        metric: the objective's name with its unit, the study's metric name (a
            dashboard's axis); ``None`` leaves the study's as it is.
    """

    direction: str
    objective: str
    attrs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    metric: str | None = None


def adopt(
    study: Any, name: str, identity: StudyIdentity, space: TrialSpace
) -> dict[str, list[int]]:
    """Check that ``study`` (named ``name``) is this tune's (direction, workload,
    hardware, objective) and record what it lacks; return its parameter ranges, widened
    to take ``space``. Idempotent: retried whole."""
    made_for = study.direction.name.lower()
    if made_for != identity.direction:
        raise BadInputError(
            f"study {name!r} was made for an objective to {made_for}, "
            f"not {identity.objective}: pass another --study"
        )
    held = study.user_attrs
    _check_identity(name, held, identity.attrs, study)
    for key, value in identity.attrs.items():
        if key not in held:
            study.set_user_attr(key, value)
    ranges = bounds(held.get(BOUNDS), space)
    if ranges != held.get(BOUNDS):
        study.set_user_attr(BOUNDS, ranges)
    if identity.metric is not None and study.metric_names != [identity.metric]:
        with warnings.catch_warnings():  # experimental in Optuna 4: used on purpose
            warnings.simplefilter("ignore")
            study.set_metric_names([identity.metric])
    return ranges


def _check_identity(
    name: str, held: Mapping[str, Any], attrs: Mapping[str, Any], study: Any
) -> None:
    """Refuse a study made by something else, or for another model file or workload: its
    measurements are not of this model, and resuming it would mix them in."""
    foreign = [t for t in study.get_trials(deepcopy=False) if not set(t.params) >= PARAMS]
    if foreign:
        params = ", ".join(sorted(foreign[0].params)) or "none"
        raise BadInputError(
            f"study {name!r} was not made by autoplace (trial {foreign[0].number} has the "
            f"parameters {params}): pass another --study"
        )
    _check_machine(name, held.get("hardware"), attrs.get("hardware"))
    _check_objective(name, held.get("objective"), attrs.get("objective"))
    mine, theirs = attrs.get("workload"), held.get("workload")
    if mine is None or theirs is None:
        return
    if (theirs.get("name"), theirs.get("sha256")) != (mine.get("name"), mine.get("sha256")):
        raise BadInputError(
            f"study {name!r} holds measurements of workload {theirs.get('name')!r} of "
            f"{theirs.get('path')} (sha256 {str(theirs.get('sha256'))[:8]}), not of "
            f"{mine.get('name')!r} of {mine.get('path')} (sha256 {str(mine.get('sha256'))[:8]}): "
            "pass another --study, or none (the default name is made from the file's hash)"
        )


def _check_machine(name: str, theirs: Any, mine: Any) -> None:
    """Refuse a study measured on other hardware (devices or CPU model; the host name may
    differ: identical machines share studies): its timings are not this machine's."""
    if not theirs or not mine:
        return
    for part, label in (("devices", "devices"), ("cpu", "CPU")):
        if theirs.get(part) != mine.get(part):
            raise BadInputError(
                f"study {name!r} was measured on other hardware ({label} "
                f"{_brief(theirs.get(part))}, here {_brief(mine.get(part))}): its timings are "
                "not this machine's; pass another --study, or none (the default name is "
                "made from the hardware)"
            )


def _check_objective(name: str, theirs: Any, mine: Any) -> None:
    """Refuse a study scored for another objective or run length: its scores (and so its
    pick) answer another question."""
    if not theirs or not mine or theirs == mine:
        return
    raise BadInputError(
        f"study {name!r} was scored for {_brief(theirs)}, not {_brief(mine)}: pass another "
        "--study, or none (the default name is made from the objective)"
    )


def _brief(value: Any) -> str:
    """A study attribute in a few words: ``throughput, steps=1000`` or ``2x cpu/cpu``."""
    if isinstance(value, Mapping):
        items = [str(value["name"])] if "name" in value else []
        items += [f"{k}={v}" for k, v in value.items() if k != "name" and v is not None]
        return ", ".join(items) or "none"
    if isinstance(value, list):
        return " + ".join(
            f"{d.get('count', 1)}x {d.get('platform')}/{d.get('kind')}"
            if isinstance(d, Mapping)
            else str(d)
            for d in value
        )
    return str(value)
