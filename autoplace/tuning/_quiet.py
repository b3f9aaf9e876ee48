"""What a tune does on a busy machine: warn (the default), wait for quiet, or refuse.

Timings taken while other processes compete for the cores move by far more than the
turns of one window show (see :mod:`autoplace.machine`). Every measurement records how
busy the machine was, and the verdict says so whatever the policy; ``wait`` and
``refuse`` also look before the tune measures and before each confirmation window (the
windows the verdict rests on), by sampling the machine for a second while nothing of
the tune's runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from autoplace import machine
from autoplace._interrupt import Interrupt
from autoplace.errors import BadInputError, BusyMachineError

BusyPolicy = Literal["warn", "wait", "refuse"]
BUSY_POLICIES: tuple[str, ...] = ("warn", "wait", "refuse")
#: How long ``wait`` waits for quiet by default, and how often it looks again.
QUIET_WAIT_S = 600.0
QUIET_POLL_S = 5.0


def check_policy(policy: str) -> BusyPolicy:
    if policy not in BUSY_POLICIES:
        raise BadInputError(
            f"unknown --if-busy {policy!r}: use warn (measure and say so), wait (for quiet, "
            "up to --quiet-wait seconds) or refuse"
        )
    return policy  # type: ignore[return-value]


def await_quiet(
    policy: BusyPolicy,
    limit_s: float,
    on_wait: Callable[[str], None] | None,
    sample: Callable[[], machine.Interference] | None = None,
    interrupt: Interrupt | None = None,
) -> machine.Interference | None:
    """Before a measurement the verdict rests on: under ``wait``, wait while the machine is
    busy, up to ``limit_s`` (then go on: the verdict will say it was busy); under
    ``refuse``, raise :class:`BusyMachineError` if it is busy. Returns the last sample
    (``None`` under ``warn``, which does not look). A Ctrl-C taken (``interrupt``) ends the
    wait at once, with ``KeyboardInterrupt``."""
    if policy == "warn":
        return None
    sample = sample or machine.sample
    seen = sample()
    started = time.monotonic()
    while seen.busy:
        waited = time.monotonic() - started
        if policy == "refuse":
            raise BusyMachineError(
                f"the machine is busy ({seen.describe()}): timings here move by more than "
                "the differences autoplace looks for, so it did not measure (--if-busy "
                "refuse); everything measured so far is kept in the study: run the same "
                "command again when the machine is idle, or pass --if-busy warn"
            )
        if waited >= limit_s:
            return seen
        if on_wait is not None:
            on_wait(
                f"waiting for the machine to be quiet ({seen.describe()}): "
                f"{waited:.0f} s of {limit_s:.0f} s (--quiet-wait)"
            )
        if interrupt is not None:
            interrupt.sleep(QUIET_POLL_S)
        else:
            time.sleep(QUIET_POLL_S)
        seen = sample()
    return seen
