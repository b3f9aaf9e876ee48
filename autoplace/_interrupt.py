"""A Ctrl-C while a tune runs, taken by autoplace's SIGINT handler and acted on where
stopping keeps everything.

Python's own ``KeyboardInterrupt`` raised inside a garbage-collector callback is printed
and dropped (issue 50), so a first SIGINT only sets an :class:`Interrupt` that the tune
checks where stopping is safe; a second stops at once, saying what was kept.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType


class Interrupt:
    """Whether a Ctrl-C was taken: set by :func:`taking_ctrl_c`'s handler, read by the tune."""

    def __init__(self) -> None:
        self._taken = threading.Event()
        #: What a second Ctrl-C says was kept (the tune sets it once it has a study).
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
        """Sleep ``seconds``, or raise ``KeyboardInterrupt`` once a Ctrl-C is taken."""
        if self._taken.wait(seconds):
            raise KeyboardInterrupt

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds``, or less if a Ctrl-C is taken: whether one was."""
        return self._taken.wait(seconds)


class _Handler:
    """The first SIGINT sets ``interrupt``; a second says what was kept, then ends the
    process (``exit_at_once``) or raises ``KeyboardInterrupt``."""

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
    """While the block runs, SIGINT sets the :class:`Interrupt` it yields; a second ends the
    process with code 130 (``exit_at_once``: the command line's) or raises
    ``KeyboardInterrupt`` (a launcher's process is not ours to end).

    An outer autoplace handler's :class:`Interrupt` is reused; where none can be installed
    (not the main thread, SIGINT ignored) one that no signal sets is yielded.
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
