"""autoplace: where should this JAX model run, at what batch size and precision, and why.

The public API, each name imported on first use (PEP 562): importing autoplace loads
neither JAX nor Optuna, so a launcher's cached ``autoplace.recommend(...)`` is cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from autoplace._version import __version__

# Imported now: importing the submodule ``autoplace.workload`` would bind it here instead.
from autoplace.workload import workload

if TYPE_CHECKING:
    from autoplace.config import PRECISIONS, Config
    from autoplace.devices import DeviceInfo
    from autoplace.errors import (
        AutoplaceError,
        BadInputError,
        BusyMachineError,
        ConfigFileError,
        KilledFromOutsideError,
        ModelFileError,
        NoAnswerError,
        OutputError,
        StorageError,
        StorageFaultError,
        WorkerError,
    )
    from autoplace.fusing import fuse, stack
    from autoplace.measurement import Measurement
    from autoplace.measuring import Backend, InProcessBackend, SubprocessBackend, measure
    from autoplace.prefetching import prefetch
    from autoplace.recommending import Recommendation, RecommendRequest, recommend
    from autoplace.settings import MeasureRequest, MeasureSettings
    from autoplace.tuning import (
        Climb,
        Grid,
        GroupEvent,
        Objective,
        Space,
        Strategy,
        TrialEvent,
        TuneRequest,
        TuneResult,
        explain,
        make_objective,
        tune,
    )
    from autoplace.workload import Workload, WorkloadInfo

#: Where each public name lives, its names space-separated.
_HOMES = {
    "autoplace.config": "PRECISIONS Config",
    "autoplace.devices": "DeviceInfo",
    "autoplace.errors": (
        "AutoplaceError BadInputError BusyMachineError ConfigFileError KilledFromOutsideError "
        "ModelFileError NoAnswerError OutputError StorageError StorageFaultError WorkerError"
    ),
    "autoplace.fusing": "fuse stack",
    "autoplace.measurement": "Measurement",
    "autoplace.measuring": "Backend InProcessBackend SubprocessBackend measure",
    "autoplace.prefetching": "prefetch",
    "autoplace.recommending": "RecommendRequest Recommendation recommend",
    "autoplace.settings": "MeasureRequest MeasureSettings",
    "autoplace.tuning": (
        "Climb Grid GroupEvent Objective Space Strategy TrialEvent TuneRequest TuneResult "
        "explain make_objective tune"
    ),
    "autoplace.workload": "Workload WorkloadInfo",
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names.split()}

__all__ = [
    "PRECISIONS",
    "AutoplaceError",
    "Backend",
    "BadInputError",
    "BusyMachineError",
    "Climb",
    "Config",
    "ConfigFileError",
    "DeviceInfo",
    "Grid",
    "GroupEvent",
    "InProcessBackend",
    "KilledFromOutsideError",
    "MeasureRequest",
    "MeasureSettings",
    "Measurement",
    "ModelFileError",
    "NoAnswerError",
    "Objective",
    "OutputError",
    "RecommendRequest",
    "Recommendation",
    "Space",
    "StorageError",
    "StorageFaultError",
    "Strategy",
    "SubprocessBackend",
    "TrialEvent",
    "TuneRequest",
    "TuneResult",
    "WorkerError",
    "Workload",
    "WorkloadInfo",
    "__version__",
    "explain",
    "fuse",
    "make_objective",
    "measure",
    "prefetch",
    "recommend",
    "stack",
    "tune",
    "workload",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'autoplace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return __all__
