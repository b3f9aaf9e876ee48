"""Inside a measurement worker: its loop, answering its caller's requests until told to exit.

A worker is a fresh interpreter (started by ``Worker.launch``) or a child of the fork
server (:mod:`._forkserver`); either way it runs :func:`serve_worker` on its end of the
connection. A shared worker measures groups (:class:`~._messages.MeasureGroup`); a fresh
one sets up one configuration (:class:`~._messages.Prepare`) whose loops its caller then
times chunk by chunk (:class:`~._messages.Warm`, :class:`~._messages.Chunk`), and ends it
(:class:`~._messages.Finish`). The engine, and JAX with it, is imported once the worker
is under way, never by the caller.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from autoplace.measuring._messages import (
    PASSED_ERRORS,
    Catalog,
    Chunk,
    Done,
    Exit,
    Failed,
    Finish,
    Internal,
    ListDevices,
    MeasureGroup,
    Prepare,
    Progressed,
    Raised,
    Reply,
    Request,
    Warm,
)
from autoplace.measuring._progress import Progress
from autoplace.measuring._timing import loop_figures

if TYPE_CHECKING:
    from autoplace.measuring._engine import Engine

#: How often a worker looks whether its caller still lives.
_CALLER_POLL_S = 0.2


def serve_worker(fd: int, boot: dict[str, Any], caller: int | None = None) -> None:
    """The worker's loop on connection ``fd``: answer requests until told to exit (or the
    caller is gone). ``boot`` holds the engine's ``jax_config`` and ``compile_cache``.
    ``caller``: the pid of the process whose death ends this one (a forked worker's fork
    server, known before the fork); ``None``: this process's parent now."""
    import faulthandler

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    faulthandler.enable()
    conn = Connection(fd)
    _exit_with_caller(os.getppid() if caller is None else caller)

    from autoplace.measuring._engine import Engine

    engine = Engine(boot.get("jax_config"), boot.get("compile_cache"))
    answers = _Answers(engine, lambda p: conn.send(Progressed(p)))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the caller is gone
        if isinstance(message, Exit):
            return
        try:
            reply = answers.answer(message)
        except PASSED_ERRORS as exc:
            reply = Raised(type(exc).__name__, str(exc))
        except Exception:
            reply = Internal(traceback.format_exc())
        sys.stdout.flush()
        conn.send(reply)


class _Answers:
    """A worker's answers: its engine, and the configuration a fresh worker has prepared
    (kept from :class:`Prepare` to :class:`Finish`)."""

    def __init__(self, engine: Engine, progress: Callable[[Progress], None]) -> None:
        from autoplace.measuring._setup import ConfigFailure

        self.engine, self.progress = engine, progress
        #: What a prepared configuration raises when it fails while its loops are timed.
        self.config_failure = ConfigFailure
        self.run: Any = None

    def answer(self, message: Request) -> Reply:
        """The reply to ``message``; raises what the engine raises."""
        engine = self.engine
        if isinstance(message, ListDevices):
            return Done(engine.devices())
        if isinstance(message, Catalog):
            return Done(engine.catalog(message.model_file, message.sha256))
        if isinstance(message, MeasureGroup):
            return Done(engine.measure_together(message.requests, self.progress))
        if isinstance(message, Prepare):
            self.run = engine.prepare(message.request, fresh_process=True)
            return Done(None) if self.run.failure is None else Failed(self.run.result())
        if isinstance(message, (Warm, Chunk)):
            try:
                if isinstance(message, Warm):
                    return Done(self.run.warm(message.loop))
                return Done(self.run.chunk(message.steps, message.loop))
            except self.config_failure:
                return Failed(self.run.result())
        if isinstance(message, Finish):
            return Done(self._finish(message))
        return Internal(f"unknown request {message!r}")

    def _finish(self, message: Finish) -> Any:
        run = self.run
        for loop, chunks in message.loops.items():
            run.timed(loop, loop_figures(chunks))
        run.timing_s = (run.timing_s or 0.0) + message.timing_s
        return self.engine.finish([run], message.together, message.others)[0]


def _exit_with_caller(caller: int) -> None:
    """End this worker within :data:`_CALLER_POLL_S` of its caller's death (a ``kill -9``
    of the tune): mid-measurement it would not read the closed connection, and its timed
    loops would overlap those of the tune that resumes, which the caller's device lock
    (released by the OS with the caller) no longer keeps apart. ``caller`` is named by who
    knew it before this process could look: a forked worker whose server died before it
    first read its parent would otherwise take its new parent (init) for the caller and
    outlive it."""

    def watch() -> None:
        while os.getppid() == caller:
            time.sleep(_CALLER_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="autoplace-caller-watch", daemon=True).start()
