"""What a measurement is doing now, as it goes: the value an engine tells and a backend
passes on to its caller's progress line. Below both (free of JAX and of any backend), so
that the engine and the backends each take it from here and not from one another."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Progress:
    """What a backend is doing now, for a progress line: ``index`` is the configuration of
    the call it is on (``None``: all of them, e.g. timing them in turns), ``what`` says it
    in words (``setting up cpu:0 batch=256 bfloat16``)."""

    index: int | None
    what: str
