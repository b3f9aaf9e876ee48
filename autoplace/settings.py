"""Knobs of one measurement, and the request that carries them to a worker."""

from __future__ import annotations

import dataclasses

from autoplace.config import Config
from autoplace.errors import BadInputError

#: The largest relative deviation from float32 a recommended lower precision may show
#: (``--max-deviation``; docs/search.md says why).
DEFAULT_MAX_DEVIATION = 0.05
#: The steps per call a tune times the pick at beside one (``--steps-per-call``).
DEFAULT_STEPS_PER_CALL = (4, 16)


@dataclasses.dataclass(frozen=True)
class MeasureSettings:
    """How hard to try to get a stable steady-state number, and when to give up.

    A loop times chunks of steps (each at least ``sample_min_s``) until ``min_samples``
    agree within ``target_spread`` (IQR / median; loops timed in turns: their ratios), or
    ``time_cap_s`` has passed with ``min_chunks`` timed, or ``max_samples``.
    """

    warmup_steps: int = 2
    #: Chunks a loop times before its time cap may stop it (three moved 11%: issue 36).
    min_chunks: int = 3
    #: Untimed steps for about this long before a loop's first chunk, in its own turn: a
    #: fresh process's first fraction of a second runs slow (docs/measurement.md).
    warmup_s: float = 0.0
    min_samples: int = 5
    max_samples: int = 40
    target_spread: float = 0.03
    sample_min_s: float = 0.05
    time_cap_s: float = 1.0
    #: Time cap of the loop that feeds a host batch every step.
    fed_time_cap_s: float = 1.0
    #: Time cap of the loop with two puts kept in flight; 0: not timed.
    prefetch_time_cap_s: float = 0.0
    #: Time cap of timing one batch's transfer (at least 3 puts).
    transfer_cap_s: float = 0.3
    #: Whole-measurement limit; past it the worker is killed and the result is ``timeout``.
    timeout_s: float = 300.0
    #: Configurations XLA predicts to need more bytes than this are not run (``too_big``).
    max_memory: int | None = None
    #: For loops timed in turns: stop timing a configuration over this many times the first's
    #: time per sample in its first four turns (``None``: never; ``_timing.behind``).
    stop_behind: float | None = None
    #: ... or after a turn of half a second or more at over twice it (``_timing.far_behind``).
    stop_far_behind: bool = False
    #: Compare a lower precision's first output with float32 on the same inputs.
    deviation: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise BadInputError(f"timeout must be positive, got {self.timeout_s}")
        if self.max_memory is not None and self.max_memory <= 0:
            raise BadInputError(f"max memory must be positive, got {self.max_memory}")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise BadInputError("need 1 <= min_samples <= max_samples")
        if self.min_chunks < 1:
            raise BadInputError(f"min_chunks must be at least 1, got {self.min_chunks}")


@dataclasses.dataclass(frozen=True)
class MeasureRequest:
    """Everything a worker needs to measure one configuration.

    ``env``: the measuring process's environment variables (a remedy timed); only
    :meth:`autoplace.Backend.measure_fresh` honours them. ``steps_per_call``: K steps fused
    in one call (:func:`autoplace.fuse`); the figures stay per step.
    """

    model_file: str
    sha256: str
    workload: str
    config: Config
    settings: MeasureSettings = MeasureSettings()
    env: tuple[tuple[str, str], ...] = ()
    steps_per_call: int = 1

    @property
    def samples_per_call(self) -> int:
        """The samples one call takes (what the stop rules compare per sample)."""
        return self.config.batch_size * self.steps_per_call

    def __post_init__(self) -> None:
        k = self.steps_per_call
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise BadInputError(f"steps per call is a whole number of 1 or more, got {k!r}")
