"""Counting XLA's compiles in this process: the proof that the timed loops compiled nothing.

JAX reports each backend compile as an event; :class:`CompileCounter` listens from the
moment it is made. It counts for the process (the timed loops' proof, see
``Engine.finish``) and per thread (a group's steps compile side by side, each thread
checking its own compile, see ``_setup.compile_lowered``). Imports JAX.
"""

from __future__ import annotations

import threading
from typing import Any

import jax

_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


class CompileCounter:
    """Compiles and persistent-cache hits JAX reports, for the process and per thread.
    Listens from its making on (JAX keeps its listeners for the process: make one per
    engine)."""

    def __init__(self) -> None:
        self._compiles = 0
        self._cache_hits = 0
        #: Held while the counts change; also the engine's lock for what compiling threads
        #: share (its executables).
        self.lock = threading.Lock()
        self._mine = threading.local()
        jax.monitoring.register_event_duration_secs_listener(self._on_event)  # type: ignore[arg-type]
        jax.monitoring.register_event_listener(self._on_count)

    def _on_event(self, event: str, duration: float, **_: Any) -> None:
        if event == _COMPILE_EVENT:
            self._count(compiles=1)

    def _count(self, compiles: int = 0, hits: int = 0) -> None:
        with self.lock:
            self._compiles += compiles
            self._cache_hits += hits
        mine = self._mine
        mine.compiles = getattr(mine, "compiles", 0) + compiles
        mine.hits = getattr(mine, "hits", 0) + hits

    def _on_count(self, event: str, **_: Any) -> None:
        # JAX times a persistent-cache hit as a compile too (the hit is said first): it
        # compiled nothing, so it does not count as one; hits are counted on their own.
        if event == _CACHE_HIT_EVENT:
            self._count(compiles=-1, hits=1)

    @property
    def compiles(self) -> int:
        """Compiles XLA has reported in this process since the counter was made, of any
        function (a load from the persistent cache counts)."""
        return self._compiles

    def this_thread(self) -> int:
        """Compiles reported in the calling thread."""
        return getattr(self._mine, "compiles", 0)

    def this_thread_hits(self) -> int:
        """Persistent-cache hits reported in the calling thread."""
        return getattr(self._mine, "hits", 0)
