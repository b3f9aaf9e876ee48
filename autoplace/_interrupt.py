"""A Ctrl-C while a tune runs: taken by autoplace's own SIGINT handler, acted on where
stopping keeps everything.

Python's own handler raises ``KeyboardInterrupt`` wherever the main thread happens to be.
Where that is a callback the garbage collector runs (a SQLAlchemy weakref's, any
finalizer's), Python prints "Exception ignored in ..." and drops it, and the run goes on
(issue 50). So while a tune runs, a first SIGINT only sets an :class:`Interrupt`, and the
tune looks at it where stopping is safe: between groups, in its waits (which wake at once),
in a measurement worker's round trip (the measurement in flight is abandoned, and measured
again on resume), never while a finished measurement is being recorded. There it raises
``KeyboardInterrupt`` from its own code (:meth:`Interrupt.check`), and the stop path takes
it as before. A second SIGINT, while the first is being handled, stops at once
(:func:`taking_ctrl_c`) with one line saying what was kept (:attr:`Interrupt.kept`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType


class Interrupt:
    """Whether a Ctrl-C was taken (see the module docstring): set by the handler of
    :func:`taking_ctrl_c`; read by the tune where stopping is safe. One that no handler
    sets (outside the main thread) never stops anything."""

    def __init__(self) -> None:
        self._taken = threading.Event()
        #: What a second Ctrl-C says was kept; the tune sets it once it has a study.
        self.kept: Callable[[], str] = lambda: "nothing was measured yet"

    def set(self) -> None:
        self._taken.set()

    def is_set(self) -> bool:
        return self._taken.is_set()

    def check(self) -> None:
        """Stop here if a Ctrl-C was taken: raise ``KeyboardInterrupt``."""
        if self._taken.is_set():
            raise KeyboardInterrupt

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, or stop (:meth:`check`) as soon as a Ctrl-C is taken."""
        if self._taken.wait(seconds):
            raise KeyboardInterrupt

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds``, or less if a Ctrl-C is taken: whether one was."""
        return self._taken.wait(seconds)


class _Handler:
    """The SIGINT handler of :func:`taking_ctrl_c`: the first sets ``interrupt``; a second
    says what was kept and ends the process (``exit_at_once``) or raises
    ``KeyboardInterrupt`` as Python's own handler would."""

    def __init__(self, interrupt: Interrupt, exit_at_once: bool) -> None:
        self.interrupt, self._exit_at_once = interrupt, exit_at_once

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if not self.interrupt.is_set():
            self.interrupt.set()
            return
        try:
            kept = self.interrupt.kept()
        except Exception:  # a handler never fails: what was kept is then not said
            kept = "see the study for what was kept"
        how = "stopped at once" if self._exit_at_once else "stopping at once (KeyboardInterrupt)"
        line = f"autoplace: interrupted again: {how}; {kept}\n"
        shown = "\x1b[?25h\n" if os.isatty(2) else ""  # the live line's hidden cursor
        with contextlib.suppress(OSError):
            os.write(2, (shown + line).encode())
        if self._exit_at_once:
            os._exit(130)
        raise KeyboardInterrupt


@contextlib.contextmanager
def taking_ctrl_c(*, exit_at_once: bool = False) -> Iterator[Interrupt]:
    """While the block runs, SIGINT sets the :class:`Interrupt` it yields (see the module
    docstring); the handler before is given back after. A second SIGINT says what was kept
    and ends the process with exit code 130 (``exit_at_once``: the command line's), or
    raises ``KeyboardInterrupt`` (a launcher's process is not autoplace's to end).

    Where autoplace's handler is in place already (the command line's, around the whole
    command), its :class:`Interrupt` is yielded. Where no handler can be put in place (not
    the main thread; SIGINT ignored, or handled by C code), an :class:`Interrupt` no
    signal sets: a Ctrl-C then does what it did before.
    """
    before = signal.getsignal(signal.SIGINT)
    if isinstance(before, _Handler):
        yield before.interrupt
        return
    if threading.current_thread() is not threading.main_thread() or before in (
        signal.SIG_IGN,
        None,
    ):
        yield Interrupt()
        return
    handler = _Handler(Interrupt(), exit_at_once)
    signal.signal(signal.SIGINT, handler)
    try:
        yield handler.interrupt
    finally:
        signal.signal(signal.SIGINT, before)
