"""Where measurements run: the :class:`Backend` protocol, and the in-process backend.

:class:`~autoplace.measuring.SubprocessBackend` (the default, in ``_client``)
isolates each measurement in a worker process; :class:`InProcessBackend` runs in the
calling process: no isolation, no start-up cost. Tests and debuggers use it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from autoplace.devices import DeviceInfo
from autoplace.errors import BadInputError
from autoplace.measurement import Measurement
from autoplace.measuring._progress import Progress
from autoplace.settings import MeasureRequest
from autoplace.workload import WorkloadInfo

if TYPE_CHECKING:
    from autoplace.measuring._engine import Engine


@runtime_checkable
class Backend(Protocol):
    """Where measurements run. The contract every backend keeps:

    * calls come one at a time from one thread (timings need the machine quiet);
    * :meth:`measure` returns a :class:`Measurement` for every failure that belongs
      to the configuration (``oom``, ``crash``, ``timeout``, ``error``, ...); it
      raises :class:`~autoplace.errors.BadInputError` for an impossible request
      (unknown device, unknown workload) and :class:`WorkerError` for its own faults;
    * :meth:`catalog` raises :class:`~autoplace.errors.ModelFileError` for a model
      file that does not import or holds no workload;
    * ``on_progress``, where given, hears what the call is doing as it goes (a
      :class:`Progress` for each configuration set up, each turn of the timed loops);
    * :meth:`close` releases processes and may be called twice.
    """

    def devices(self) -> list[DeviceInfo]: ...

    def catalog(self, model_file: str, sha256: str) -> dict[str, WorkloadInfo]: ...

    def measure(self, request: MeasureRequest) -> Measurement: ...

    def measure_together(
        self,
        requests: Sequence[MeasureRequest],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> list[Measurement]:
        """Measure several configurations with their timed loops taking turns chunk by
        chunk (A B C A B C), one result per request, in order, so that drift slows
        all alike; the loop settings are the first request's. Each keeps the
        failure statuses of :meth:`measure`; a failure that may be its neighbours'
        doing (``oom``, ``crash``, ``timeout``) is measured again alone."""
        ...

    def measure_fresh(
        self,
        requests: Sequence[MeasureRequest],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> list[Measurement]:
        """Measure several configurations as :meth:`measure_together` does (their timed
        loops in turns, one ``interleave_id`` for the call), but each in a fresh process of
        its own that measures nothing else, as the user's training run will: a step's time
        can depend on what ran before in its process. A backend that cannot start
        processes measures them together in its own and says so
        (``Measurement.fresh_process`` is then false)."""
        ...

    def close(self) -> None: ...


class InProcessBackend:
    """Measures in this process. No isolation: a crash here is the caller's crash."""

    def __init__(self, jax_config: dict[str, Any] | None = None) -> None:
        from autoplace.measuring._engine import Engine

        self._engine = Engine(jax_config)

    @property
    def engine(self) -> Engine:
        """The engine measuring in this process (its compile counter, its caches)."""
        return self._engine

    def devices(self) -> list[DeviceInfo]:
        return self._engine.devices()

    def catalog(self, model_file: str, sha256: str) -> dict[str, WorkloadInfo]:
        return self._engine.catalog(model_file, sha256)

    def measure(self, request: MeasureRequest) -> Measurement:
        return self.measure_together([request])[0]

    def measure_together(
        self,
        requests: Sequence[MeasureRequest],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> list[Measurement]:
        if any(r.env for r in requests):
            raise BadInputError(
                "the in-process backend cannot start a process with an environment of its own "
                "(MeasureRequest.env): use SubprocessBackend"
            )
        t = time.perf_counter()
        results = self._engine.measure_together(requests, on_progress)
        share = (time.perf_counter() - t) / len(results)
        return [with_figures(m, worker_start_s=0.0, wall_s=share) for m in results]

    def measure_fresh(
        self,
        requests: Sequence[MeasureRequest],
        on_progress: Callable[[Progress], None] | None = None,
    ) -> list[Measurement]:
        """No fresh process here: measured together in this one (``fresh_process`` false);
        a request with an environment of its own is refused (it needs a process of its own)."""
        return self.measure_together(requests, on_progress)

    def close(self) -> None:
        pass

    def __enter__(self) -> InProcessBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_figures(m: Measurement, **changes: Any) -> Measurement:
    """``m`` with the bookkeeping figures the backend adds (worker start, wall time)."""
    return dataclasses.replace(m, **changes)
