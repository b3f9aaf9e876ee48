"""autoplace: where should this JAX model run, at what batch size and precision, and why.

The public API. Importing it loads neither JAX nor Optuna: measurements run in a
worker process, and the tuner imports Optuna when it is called.
"""

from autoplace._version import __version__
from autoplace.config import PRECISIONS, Config
from autoplace.devices import DeviceInfo
from autoplace.errors import (
    AutoplaceError,
    BadInputError,
    ConfigFileError,
    ModelFileError,
    StorageError,
    StorageFaultError,
    WorkerError,
)
from autoplace.measurement import Measurement
from autoplace.measuring import Backend, InProcessBackend, SubprocessBackend, measure
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.tuning import (
    Climb,
    Grid,
    GroupEvent,
    Objective,
    Space,
    Strategy,
    TrialEvent,
    TuneResult,
    explain,
    make_objective,
    tune,
)
from autoplace.workload import Workload, WorkloadInfo, workload

__all__ = [
    "PRECISIONS",
    "AutoplaceError",
    "Backend",
    "BadInputError",
    "Climb",
    "Config",
    "ConfigFileError",
    "DeviceInfo",
    "Grid",
    "GroupEvent",
    "InProcessBackend",
    "MeasureRequest",
    "MeasureSettings",
    "Measurement",
    "ModelFileError",
    "Objective",
    "Space",
    "StorageError",
    "StorageFaultError",
    "Strategy",
    "SubprocessBackend",
    "TrialEvent",
    "TuneResult",
    "WorkerError",
    "Workload",
    "WorkloadInfo",
    "__version__",
    "explain",
    "make_objective",
    "measure",
    "tune",
    "workload",
]
