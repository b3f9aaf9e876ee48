"""Knobs of one measurement, and the request that carries them to a worker."""

from __future__ import annotations

import dataclasses

from autoplace.config import Config
from autoplace.errors import BadInputError

#: The largest relative deviation from float32 a recommended lower precision may show
#: (``--max-deviation``; docs/search.md says why this value, for training and inference).
DEFAULT_MAX_DEVIATION = 0.05
#: The steps per call a tune times the pick at beside one, where its fixed cost matters
#: (``--steps-per-call``; see ``autoplace.tuning._fusing``).
DEFAULT_STEPS_PER_CALL = (4, 16)


@dataclasses.dataclass(frozen=True)
class MeasureSettings:
    """How hard to try to get a stable steady-state number, and when to give up.

    The steady-state loop times chunks of steps (each chunk at least
    ``sample_min_s`` long, ended by ``block_until_ready``) until ``min_samples``
    chunks agree within ``target_spread`` (interquartile range / median; for loops
    timed in turns, their turn-by-turn ratios may agree instead), or
    ``time_cap_s`` has passed (with at least 3 chunks), or ``max_samples``.
    """

    warmup_steps: int = 2
    #: A loop stops at its time cap only once it has timed this many chunks: a figure from
    #: three chunks moved by 11% between windows (issue 36), the first chunk after a cold
    #: start being one of the three.
    min_chunks: int = 3
    #: Untimed steps for about this long before a loop's first timed chunk, in its own
    #: turn (the others idle): a fresh process's first fraction of a second runs slow (its
    #: allocator's first pages, its thread pool and caches settling). Run side by side
    #: instead, the warm-up left the processes' timed loops sharing the cores with
    #: runnable threads for seconds after (issue 36, docs/measurement.md).
    warmup_s: float = 0.0
    min_samples: int = 5
    max_samples: int = 40
    target_spread: float = 0.03
    sample_min_s: float = 0.05
    #: For loops timed in turns: before each timed chunk, steps run untimed for about
    #: this long (none for a step longer than twice this). A loop resumed after another
    #: loop's turn runs slow for its first few steps (caches, cores gone idle), which
    #: would count against the loop with the shorter chunks.
    settle_s: float = 0.03
    time_cap_s: float = 1.0
    #: Time cap of the loop that feeds a host batch every step.
    fed_time_cap_s: float = 1.0
    #: Time cap of the same loop with two puts kept in flight by a background thread
    #: (``Measurement.prefetch_step_s``); 0: not timed.
    prefetch_time_cap_s: float = 0.0
    #: Time cap of timing the host-to-device transfer of one batch (at least 3 puts).
    transfer_cap_s: float = 0.3
    #: Whole-measurement limit; past it the worker is killed and the result is ``timeout``.
    timeout_s: float = 300.0
    #: Configurations XLA predicts to need more bytes than this are not run (``too_big``).
    max_memory: int | None = None
    #: For loops timed in turns: stop timing a configuration whose time per sample was more
    #: than this many times the first configuration's (the search's reference) in every one
    #: of its first four turns, or later (``None``: never; see ``_timing.behind``).
    stop_behind: float | None = None
    #: For loops timed in turns: stop timing a configuration after its first turn where
    #: its chunk took half a second or more at over twice the first configuration's time
    #: per sample (``_timing.far_behind``): the search's large batches, and a fusing
    #: window's many steps a call that run slower than one a call.
    stop_far_behind: bool = False
    #: Compare a lower precision's first output with float32 on the same inputs.
    deviation: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise BadInputError(f"timeout must be positive, got {self.timeout_s}")
        if self.max_memory is not None and self.max_memory <= 0:
            raise BadInputError(f"max memory must be positive, got {self.max_memory}")
        if self.settle_s < 0:
            raise BadInputError(f"settle time must not be negative, got {self.settle_s}")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise BadInputError("need 1 <= min_samples <= max_samples")
        if self.min_chunks < 1:
            raise BadInputError(f"min_chunks must be at least 1, got {self.min_chunks}")


@dataclasses.dataclass(frozen=True)
class MeasureRequest:
    """Everything a worker needs to measure one configuration.

    ``env``: environment variables the measuring process starts with (an allocator setting
    autoplace times as a remedy). Only a process started for this request can have them:
    :meth:`autoplace.Backend.measure_fresh` honours them, the other calls refuse them.

    ``steps_per_call``: steps run in one call of the compiled program (``K``): the step
    fused with :func:`autoplace.fuse` over ``K`` batches stacked along a new leading axis,
    one transfer a call. The measurement's figures stay per step (see
    :attr:`autoplace.Measurement.steps_per_call`).
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
        """The samples one call of the compiled program takes: the batch times the steps a
        call (what the stop rules compare per sample, ``_timing.behind``)."""
        return self.config.batch_size * self.steps_per_call

    def __post_init__(self) -> None:
        k = self.steps_per_call
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise BadInputError(f"steps per call is a whole number of 1 or more, got {k!r}")
