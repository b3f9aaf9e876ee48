"""What an answer holds for: the key a look-up is made under, and how an answer differs.

A key has four parts:

* **hardware** (:func:`autoplace.host.hardware`): the CPU model and each kind of device
  (platform, kind, count, memory), never the host name, so identical machines share
  answers;
* **software** (:func:`autoplace.host.software`): the jax and jaxlib versions and the
  answer's schema;
* **workload**: the model file (path and content hash), the workload's name and the
  widths asked for;
* **objective**: its name and run length.

The cache file is named after the *slot*: every part but the software and the file's
content. So a look-up finds the answer measured under older software (returned marked
stale: a patch release rarely moves the best placement, and a launcher must not stall)
or for an earlier version of the file (a miss, whose reason says so).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.answer import Answer, Question
from autoplace.config import PRECISIONS, parse_precision
from autoplace.devices import DeviceInfo, device_choices
from autoplace.host import hardware, software
from autoplace.settings import DEFAULT_STEPS_PER_CALL


def key_for(
    devices: Sequence[DeviceInfo],
    model: Mapping[str, str],
    workload: str | None,
    widths: Sequence[int] | None,
    objective: Mapping[str, Any],
) -> Key:
    """The key a look-up of ``model`` (its ``path`` and ``sha256``) makes on a machine with
    ``devices``: its ``workload`` as named (``None``: the file's only one), the ``widths``
    asked (``None``: the file's default) and the ``objective`` (its name and run length)."""
    return Key(
        hardware=hardware(devices),
        software=software(),
        workload={
            "path": model["path"],
            "sha256": model["sha256"],
            "name": workload,
            "widths": sorted(widths) if widths else None,
        },
        objective=dict(objective),
    )


@dataclasses.dataclass(frozen=True)
class Key:
    """What a look-up asks for (see the module docstring)."""

    hardware: Mapping[str, Any]
    software: Mapping[str, Any]
    workload: Mapping[str, Any]
    objective: Mapping[str, Any]

    @property
    def slot(self) -> str:
        """The cache file's name: the key without the software or the file's content."""
        where = {k: v for k, v in self.workload.items() if k != "sha256"}
        basis = {"hardware": self.hardware, "workload": where, "objective": self.objective}
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:16]

    def as_dict(self) -> dict[str, Any]:
        return {
            "hardware": dict(self.hardware),
            "software": dict(self.software),
            "workload": dict(self.workload),
            "objective": dict(self.objective),
        }

    def miss(self, held: Mapping[str, Any]) -> str | None:
        """Why an answer held under key ``held`` is not for this look-up at all (other
        hardware, model, workload or objective), or ``None``."""
        if held.get("hardware") != self.hardware:
            return "measured on other hardware"
        if held.get("objective") != self.objective:
            return "measured for another objective or run length"
        theirs, mine = held.get("workload", {}), self.workload
        if theirs.get("sha256") != mine["sha256"]:
            return (
                f"model file changed since it was measured (sha256 "
                f"{str(theirs.get('sha256'))[:8]} → {mine['sha256'][:8]})"
            )
        if dict(theirs) != dict(mine):
            return "measured for another workload or widths"
        return None

    def stale(self, held: Mapping[str, Any]) -> str | None:
        """How the software an answer was measured under differs from this one's
        (``"jaxlib 0.7.0 → 0.7.1"``), or ``None``."""
        theirs = held.get("software", {})
        changes = [
            f"{name.replace('_', ' ')} {theirs.get(name)} → {now}"
            for name, now in self.software.items()
            if theirs.get(name) != now
        ]
        return ", ".join(changes) or None


def tune_arguments(key: Key) -> dict[str, Any]:
    """What :func:`autoplace.tune` is asked for ``key``'s workload and objective (the run
    length as it takes it: ``samples`` is one epoch)."""
    run = {k: v for k, v in key.objective.items() if k != "name"}
    if "samples" in run and run.get("epochs"):
        run["samples"] //= run["epochs"]
    return {
        "workload": key.workload["name"],
        "widths": key.workload["widths"],
        "objective": key.objective["name"],
        **run,
    }


def fill_command(key: Key) -> str:
    """The ``autoplace recommend`` command that fills the cache for ``key``."""
    args = [f"autoplace recommend {key.workload['path']}"]
    for name, value in tune_arguments(key).items():
        if value is not None and (name, value) != ("objective", "throughput"):
            shown = ",".join(map(str, value)) if isinstance(value, list) else value
            args.append(f"--{name} {shown}")
    return "run `" + " ".join(args) + "`"


def asked_widths(answer: Answer, key: Key) -> list[int | None]:
    """The widths a look-up asks of ``answer``: those in ``key``, else the file's default
    width as the answer records it (an answer from before widths were recorded: the one
    width it searched, which without ``--widths`` was the default)."""
    if key.workload["widths"]:
        return list(key.workload["widths"])
    wl = answer.workload
    if wl.default_width is not None:
        return [wl.default_width]
    return list(wl.widths) if len(wl.widths) == 1 else [None]


def asked_question(
    answer: Answer,
    key: Key,
    devices: Sequence[DeviceInfo],
    max_batch_size: int | None = None,
    tune_options: Mapping[str, Any] | None = None,
) -> Question:
    """What a look-up under ``key`` on a machine with ``devices`` asks of ``answer``'s
    workload: every device kind, the workload's default batch sizes (up to
    ``max_batch_size``), every precision, the widths asked, the default steps per call, as
    the objective feeds its steps; narrowed as far as ``tune_options`` narrow the tune the
    look-up would run."""
    o = dict(tune_options or {})
    batches = o.get("batch_sizes") or answer.workload.batch_sizes
    steps = o.get("steps_per_call")
    kinds = device_choices(list(devices))
    return Question(
        devices=tuple(o.get("devices") or kinds),
        batch_sizes=tuple(b for b in batches if max_batch_size is None or b <= max_batch_size),
        precisions=tuple(map(parse_precision, o.get("precisions") or PRECISIONS)),
        widths=tuple(asked_widths(answer, key)),
        steps_per_call=DEFAULT_STEPS_PER_CALL if steps is None else tuple(steps),
        feeding=str(key.objective.get("feeding") or "put"),
        max_memory=o.get("max_memory"),
    )
