"""Measuring one configuration, or several in turns: compile apart from step, in isolation.

Backends say *where* a measurement runs (:class:`SubprocessBackend`, the default:
a worker process no configuration can take down; :class:`InProcessBackend`: this
process). The engine (``_engine``, loaded by a backend when it first measures, with
the other modules that import JAX) takes each configuration through its phases
(``_setup``: build, transfer, compile, first call), a ``_run`` holding its figures;
``_timing`` holds the timed loops, free of JAX; ``_xla`` what XLA tells about a
program and a device. :func:`measure` is the library call behind
``autoplace measure``.
"""

from typing import Any

from autoplace.devices import check_device
from autoplace.measuring._backend import Backend, InProcessBackend
from autoplace.measuring._client import SubprocessBackend
from autoplace.measuring._lock import timing_lock, waiting
from autoplace.measuring._measure import measure, resolve_workload
from autoplace.measuring._progress import Progress
from autoplace.measuring._timing import relative_spread, summarize, time_interleaved, time_steps

#: Names that live beside JAX, imported on first use so that ``import autoplace`` stays
#: free of JAX: the engine and what XLA tells about a program.
_WITH_JAX = {
    "ConfigFailure": "_setup",
    "Engine": "_engine",
    "user_phase": "_setup",
    "compute_dtypes": "_xla",
    "relative_deviation": "_xla",
    "tree_bytes": "_xla",
}


def __getattr__(name: str) -> Any:
    if name in _WITH_JAX:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WITH_JAX[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Backend",
    "ConfigFailure",
    "Engine",
    "InProcessBackend",
    "Progress",
    "SubprocessBackend",
    "check_device",
    "compute_dtypes",
    "measure",
    "relative_deviation",
    "relative_spread",
    "resolve_workload",
    "summarize",
    "time_interleaved",
    "time_steps",
    "timing_lock",
    "tree_bytes",
    "user_phase",
    "waiting",
]
