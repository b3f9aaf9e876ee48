"""What one tune is asked: the value :func:`autoplace.tune` takes, checked when it is made.

The CLI, ``recommend()`` and a launcher build the same :class:`TuneRequest`, so a bad value
fails in one place, before any worker starts or any measurement is taken, with one line
naming the option.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from autoplace._paths import shown
from autoplace.errors import BadInputError
from autoplace.objectives import Objective, make_objective
from autoplace.settings import DEFAULT_STEPS_PER_CALL, MeasureSettings
from autoplace.study import check_study_name
from autoplace.tuning._failures import DEFAULT_MAX_DEVIATION
from autoplace.tuning._quiet import QUIET_WAIT_S, BusyPolicy, check_policy
from autoplace.tuning._strategies import Strategy
from autoplace.units import MOST_DEVIATION


@dataclasses.dataclass(frozen=True)
class TuneRequest:
    """One tune: what to measure, for how long, where the study lives, what is written.

    ``devices``, ``batch_sizes``, ``precisions`` and ``widths`` bound the search space
    (``None``: the machine's devices, the file's batch sizes or 1..4096, every precision,
    the file's default width). ``objective`` is ``throughput``, ``time-to-finish`` (with
    ``steps``, or ``samples`` and ``epochs``) or ``latency``, or an
    :class:`~autoplace.Objective`; ``feeding`` (``put``, ``prefetch``, ``resident``) how
    its steps are fed, the loop the search ranks on. The tune stops starting measurements
    after ``trials`` new ones or ``timeout`` seconds. The study is ``study`` (default:
    named by workload and hardware) in ``storage`` (an Optuna storage URL; default:
    ``studies/autoplace.db``).
    ``out`` is the recommendation file (``None``: none written). ``max_memory`` (bytes)
    skips configurations predicted to need more; ``max_deviation`` (a fraction, at most
    1; ``None``: not checked) leaves out lower precisions whose output strays further
    from float32's. ``remeasure`` measures again what the study holds; ``confirm``
    finalists are confirmed (0: none, the search's pick stands); ``strategy`` proposes
    each group (default: a climb); ``settings`` say how a measurement runs; ``if_busy``
    (``warn``, ``wait`` up to ``quiet_wait`` seconds, ``refuse``) what to do on a busy
    machine. ``steps_per_call`` are the steps per call timed against one a call for the
    pick when its fixed cost matters (``(1,)`` or empty: never; see
    :mod:`autoplace.tuning._fusing`).

    Every value is checked here: a bad one raises :class:`~autoplace.BadInputError`.
    """

    model_file: str | Path
    workload: str | None = None
    devices: Sequence[str] | None = None
    batch_sizes: Sequence[int] | None = None
    precisions: Sequence[str] | None = None
    widths: Sequence[int] | None = None
    objective: str | Objective = "throughput"
    steps: int | None = None
    samples: int | None = None
    epochs: int | None = None
    feeding: str = "put"
    trials: int | None = None
    timeout: float | None = None
    storage: str | None = None
    study: str | None = None
    out: str | Path | None = "autoplace.toml"
    max_memory: int | None = None
    max_deviation: float | None = DEFAULT_MAX_DEVIATION
    remeasure: bool = False
    confirm: int = 4
    strategy: Strategy | None = None
    settings: MeasureSettings | None = None
    if_busy: BusyPolicy = "warn"
    quiet_wait: float = QUIET_WAIT_S
    steps_per_call: Sequence[int] = DEFAULT_STEPS_PER_CALL

    def __post_init__(self) -> None:
        positive: tuple[tuple[str, float | None], ...] = (
            ("--trials", self.trials),
            ("--timeout", self.timeout),
            ("--max-memory", self.max_memory),
            ("--max-deviation", self.max_deviation),
            ("--quiet-wait", self.quiet_wait),
        )
        for option, number in positive:
            if number is not None and not number > 0:
                raise BadInputError(f"{option} must be positive, got {number}")
        if self.max_deviation is not None and self.max_deviation > MOST_DEVIATION:
            raise BadInputError(
                f"--max-deviation must be at most {MOST_DEVIATION:.0%}, got "
                f"{self.max_deviation:.0%}: past it nothing is left out; give e.g. 5%, or "
                "None for no limit"
            )
        if self.confirm < 0:
            raise BadInputError(f"confirm is a number of finalists, 0 or more, got {self.confirm}")
        named: tuple[tuple[str, str | None], ...] = (
            ("--study", self.study),
            ("--workload", self.workload),
        )
        for option, value in named:
            if value is not None and not value.strip():
                raise BadInputError(
                    f"{option} is empty: give a name, or leave {option} out for the default"
                )
        if self.out is not None and Path(self.out).is_dir():
            raise BadInputError(
                f"--out {shown(Path(self.out))} is a folder: give the recommendation file's "
                f"path, e.g. --out {shown(Path(self.out) / 'autoplace.toml')}"
            )
        if self.out is not None and Path(self.out).suffix.lower() != ".toml":
            out = Path(self.out)
            raise BadInputError(
                f"--out {shown(out)}: the recommendation file is TOML, and `autoplace explain` "
                "and `autoplace report` tell it from a model file by its .toml: name it "
                f"{shown(out.with_suffix('.toml'))}"
            )
        if self.study is not None:
            check_study_name(self.study)
        object.__setattr__(self, "if_busy", check_policy(self.if_busy))
        object.__setattr__(self, "steps_per_call", _steps_per_call(self.steps_per_call))
        _ = self.objective_value  # a bad objective or run length fails now, not after set-up

    @property
    def objective_value(self) -> Objective:
        """The objective, its run length checked (:func:`~autoplace.make_objective`)."""
        if isinstance(self.objective, Objective):
            return self.objective
        return make_objective(
            self.objective,
            steps=self.steps,
            samples=self.samples,
            epochs=self.epochs,
            feeding=self.feeding,
        )

    @property
    def measure_settings(self) -> MeasureSettings:
        """How each measurement runs, ``max_memory`` included."""
        settings = self.settings or MeasureSettings()
        if self.max_memory is None:
            return settings
        return dataclasses.replace(settings, max_memory=self.max_memory)


#: The most steps per call a tune times: K batches are stacked on the device at once.
MOST_STEPS_PER_CALL = 1024


def _steps_per_call(values: Sequence[int]) -> tuple[int, ...]:
    """The steps per call to try, checked: whole numbers from 1 to
    :data:`MOST_STEPS_PER_CALL`, sorted, without repeats."""
    out = set()
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MOST_STEPS_PER_CALL:
            raise BadInputError(
                f"--steps-per-call takes whole numbers from 1 to {MOST_STEPS_PER_CALL}, got "
                f"{k!r}: e.g. --steps-per-call 4,16, or 1 to never fuse steps"
            )
        out.add(k)
    return tuple(sorted(out))
