"""``autoplace.measure``: one configuration of one workload, measured in isolation."""

from __future__ import annotations

import contextlib
from pathlib import Path

from autoplace.config import Config
from autoplace.devices import check_device
from autoplace.measurement import Measurement
from autoplace.measuring._backend import Backend
from autoplace.measuring._client import SubprocessBackend
from autoplace.measuring._lock import timing_lock
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.workload import ModelFile, WorkloadInfo, check_width, pick_workload


def resolve_workload(
    backend: Backend, model_file: str | Path, workload: str | None
) -> tuple[ModelFile, WorkloadInfo]:
    """Check the file exists and imports, and pick the workload (by name, or the only one)."""
    mf = ModelFile.at(model_file)
    found = backend.catalog(str(mf.path), mf.sha256)
    name = pick_workload(found, mf.path, workload)
    return mf, found[name]


def measure(
    model_file: str | Path,
    *,
    device: str = "cpu",
    batch_size: int,
    precision: str = "float32",
    width: int | None = None,
    workload: str | None = None,
    settings: MeasureSettings | None = None,
    backend: Backend | None = None,
) -> Measurement:
    """Measure one configuration of a model file's workload and return its figures.

    Failures of the configuration (out of memory, crash, hang, an exception in the
    workload's code) come back as a :class:`Measurement` with a ``status``; bad
    input (missing file, unknown device, ...) raises
    :class:`~autoplace.errors.BadInputError`. Without ``backend``, a worker process
    is started for this call and stopped after it; pass a
    :class:`~autoplace.measuring.SubprocessBackend` to reuse one across calls.
    """
    config = Config(device=device, batch_size=batch_size, precision=precision, width=width)
    with contextlib.ExitStack() as stack:
        if backend is None:
            backend = stack.enter_context(SubprocessBackend())
        mf, info = resolve_workload(backend, model_file, workload)
        check_device(backend.devices(), config.device)
        if config.width is not None:
            check_width(config.width, info.widths)
        elif info.default_width is not None:
            config = Config(config.device, config.batch_size, config.precision, info.default_width)
        request = MeasureRequest(
            model_file=str(mf.path),
            sha256=mf.sha256,
            workload=info.name,
            config=config,
            settings=settings or MeasureSettings(),
        )
        with timing_lock([config.device]):
            return backend.measure(request)
