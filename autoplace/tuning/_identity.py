"""What a study measures, where and for what (recorded with it, and in the recommendation
file and the answer), its default name, and the requests its measurements are made of."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoplace import fingerprint
from autoplace.config import Config
from autoplace.devices import DeviceInfo
from autoplace.objectives import Objective
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.tuning._group import Requester
from autoplace.tuning._phases import Phase
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
        "hardware": fingerprint.hardware(list(devices)),
        "software": fingerprint.software(),
        "objective": {"name": obj.name, **obj.run},
    }


def study_name(identity: dict[str, Any]) -> str:
    """The default study name: the workload's, the widths searched unless the default
    alone (:func:`fingerprint.widths_label`), then :func:`fingerprint.study_suffix`."""
    wl = identity["workload"]
    hw, sw = identity["hardware"], identity["software"]
    widths = fingerprint.widths_label(wl["widths"], wl["default_width"])
    suffix = fingerprint.study_suffix(identity["objective"], wl["sha256"], hw, sw)
    return wl["name"] + widths + suffix


def requester(
    mf: ModelFile, info: WorkloadInfo, settings: dict[Phase, MeasureSettings]
) -> Requester:
    """How the loop asks for a group's measurements in a phase."""

    def requests(group: Sequence[Config], phase: Phase) -> list[MeasureRequest]:
        return [
            MeasureRequest(str(mf.path), mf.sha256, info.name, config, settings[phase])
            for config in group
        ]

    return requests
