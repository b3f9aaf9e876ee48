"""What a study measures, where and for what (recorded with it, and in the recommendation
file and the answer), its default name, and the requests its measurements are made of."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.devices import DeviceInfo
from autoplace.host import fingerprint, hardware_key
from autoplace.objectives import Objective
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.tuning._loop import Requester
from autoplace.tuning._phase import Want
from autoplace.tuning._space import Space
from autoplace.workload import ModelFile, WorkloadInfo


def identity(
    mf: ModelFile,
    info: WorkloadInfo,
    devices: Sequence[DeviceInfo],
    obj: Objective,
    space: Space,
) -> dict[str, Any]:
    """What a study measures, where and for what: recorded with the study. The widths
    searched and the file's default are part of it: a pick holds for those widths, and a
    look-up without widths asks for the default's."""
    return {
        "workload": {
            "path": str(mf.path),
            "sha256": mf.sha256,
            "name": info.name,
            "widths": [w for w in space.widths if w is not None],
            "default_width": info.default_width,
        },
        **fingerprint(devices),
        "objective": {"name": obj.name, **obj.run},
    }


def study_name(identity: dict[str, Any]) -> str:
    """The default study name: the workload's, the widths searched unless the default
    alone (:func:`widths_label`), then :func:`study_suffix`."""
    wl = identity["workload"]
    hw, sw = identity["hardware"], identity["software"]
    widths = widths_label(wl["widths"], wl["default_width"])
    suffix = study_suffix(identity["objective"], wl["sha256"], hw, sw)
    return wl["name"] + widths + suffix


def study_suffix(
    objective: Mapping[str, Any], sha256: str, hw: Mapping[str, Any], sw: Mapping[str, Any]
) -> str:
    """The default study name after the workload's name: the objective (with its run
    length for time-to-finish: a study's scores hold for one), the model file's hash and
    the hardware key, e.g. ``-time-to-finish-samples180000-epochs3-c4972a4a-89bd41dbd0``.
    Identical machines share a study; different ones never mix theirs."""
    run = [f"{k}{v}" for k, v in objective.items() if k != "name" and v is not None]
    label = "-".join([str(objective["name"]), *run])
    return f"-{label}-{sha256[:8]}-{hardware_key(hw, sw)}"


def widths_label(widths: Sequence[int] | None, default_width: int | None) -> str:
    """The default study name's mark of the widths searched, after the workload's name:
    none for the file's default width alone (so that such studies keep their names),
    else ``-w8-16-32``. A study's pick holds for the widths it searched, so two searches of
    other widths are two studies, never one whose answer the last tune overwrote."""
    chosen = sorted(set(widths or ()))
    if not chosen or chosen == [default_width]:
        return ""
    return "-w" + "-".join(map(str, chosen))


def requester(
    mf: ModelFile, info: WorkloadInfo, user: MeasureSettings, objective: Objective
) -> Requester:
    """How the loop turns a phase's want into a request: the phase's settings (from the
    user's), the want's environment and steps per call."""
    from autoplace.tuning._phases import PHASES

    settings = {p.name: p.settings(user, objective) for p in PHASES}

    def request(want: Want, phase: str) -> MeasureRequest:
        return MeasureRequest(str(mf.path), mf.sha256, info.name, want.config, settings[phase],
                              env=want.env, steps_per_call=want.steps_per_call)  # fmt: skip

    return request
