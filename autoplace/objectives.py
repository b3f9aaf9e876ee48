"""What "best" means: objectives are values (a name, a direction, a scoring function).

An objective scores a :class:`~autoplace.Measurement`; the search and the
recommendation only ever compare scores, so adding an objective is adding a value
here. Scores are computed from the stored figures every time, never read back
from Optuna's trial value, so one study's measurements can answer several questions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, Literal

from autoplace.errors import BadInputError
from autoplace.measurement import Measurement

Direction = Literal["maximize", "minimize"]
OBJECTIVES = ("throughput", "time-to-finish", "latency")


@dataclasses.dataclass(frozen=True)
class Objective:
    """A way to score a measurement. ``score`` returns ``None`` when it cannot.

    Attributes:
        name: one of :data:`OBJECTIVES`.
        direction: whether larger or smaller scores are better.
        unit: what the score is in, for display.
        run: the run length it was built with, recorded with the study.
        loop: the timed loop the score rests on: ``fed`` (each step puts a fresh
            host batch on the device) or ``step`` (the batch stays on the device).
    """

    name: str
    direction: Direction
    unit: str
    score_fn: Callable[[Measurement], float | None] = dataclasses.field(repr=False)
    run: dict[str, Any] = dataclasses.field(default_factory=dict)
    loop: Literal["step", "fed"] = "fed"

    def score(self, m: Measurement) -> float | None:
        return self.score_fn(m) if m.measured else None

    def spread(self, m: Measurement) -> float:
        """The relative spread (IQR / median) of the loop the score rests on."""
        value = m.step_spread if self.loop == "step" else m.fed_step_spread
        return value or 0.0

    def chunk_scores(self, m: Measurement) -> list[float]:
        """The score once per timed chunk of its loop (that chunk's time standing in
        for the median), in the order the chunks were timed."""
        chunks = m.step_chunk_s if self.loop == "step" else m.fed_step_chunk_s
        out = []
        for t in chunks:
            if self.loop == "step":
                one = dataclasses.replace(m, step_s=t, samples_per_s=m.batch_size / t)
            else:
                one = dataclasses.replace(m, fed_step_s=t, fed_samples_per_s=m.batch_size / t)
            score = self.score(one)
            if score is not None:
                out.append(score)
        return out

    def better(self, a: float, b: float) -> bool:
        """True when score ``a`` beats score ``b``."""
        return self.key(a) > self.key(b)

    def key(self, score: float) -> float:
        """A sort key for ``score``: the better the score, the larger the key, whatever
        the direction (``max(..., key=objective.key)`` is the best)."""
        return score if self.direction == "maximize" else -score

    def gain(self, a: float, b: float) -> float:
        """How much better ``a`` is than ``b``, as a fraction of ``b`` (negative: worse)."""
        if self.direction == "maximize":
            return a / b - 1.0
        return b / a - 1.0

    def describe(self) -> str:
        if self.name == "time-to-finish":
            if "steps" in self.run:
                return f"time to finish {self.run['steps']} steps (compile + first call + steps)"
            return f"time to finish {self.run['samples']} samples (compile + first call + steps)"
        if self.name == "latency":
            return "latency of one step (transfer + step)"
        return "throughput (samples/s, feeding host batches)"


def throughput() -> Objective:
    """Steady-state samples per second, including putting each host batch on the device."""
    return Objective("throughput", "maximize", "samples/s", lambda m: m.fed_samples_per_s)


def latency() -> Objective:
    """Seconds to answer one batch that starts on the host: transfer + one step."""

    def score(m: Measurement) -> float | None:
        if m.step_s is None or m.transfer_s is None:
            return None
        return m.transfer_s + m.step_s

    return Objective("latency", "minimize", "s", score, loop="step")


def time_to_finish(
    *, steps: int | None = None, samples: int | None = None, epochs: int | None = None
) -> Objective:
    """Seconds to run a job: lower + compile + first call + the remaining fed steps.

    The run length is ``steps`` steps, or ``samples`` samples (times ``epochs`` when
    given: ``samples`` is then one epoch), so the step count depends on the batch
    size. One-off costs weigh more the shorter the run: the seeds' "first inference
    is slow" and "small model, few epochs" cases.
    """
    if steps is not None and samples is not None:
        raise BadInputError(
            f"--steps {steps} and --samples {samples} are two run lengths: give one of them "
            "(--samples N with --epochs E for epochs of N samples)"
        )
    if steps is None and samples is None:
        raise BadInputError(
            "time-to-finish needs a run length: give --steps N, or --samples N "
            "(with --epochs E, --samples is one epoch)"
        )
    if epochs is not None and samples is None:
        raise BadInputError("--epochs needs --samples (the samples in one epoch)")
    for label, v in (("steps", steps), ("samples", samples), ("epochs", epochs)):
        if v is not None and v < 1:
            raise BadInputError(f"--{label} must be at least 1, got {v}")
    total = None if samples is None else samples * (epochs or 1)

    def score(m: Measurement) -> float | None:
        parts = (m.lower_s, m.compile_s, m.first_call_s, m.fed_step_s)
        if any(p is None for p in parts):
            return None
        n = steps if steps is not None else math.ceil(total / m.batch_size)  # type: ignore[operator]
        return m.lower_s + m.compile_s + m.first_call_s + (n - 1) * m.fed_step_s  # type: ignore[operator]

    run: dict[str, Any] = {"steps": steps} if steps is not None else {"samples": total}
    if epochs is not None:
        run["epochs"] = epochs
    return Objective("time-to-finish", "minimize", "s", score, run)


def make_objective(
    name: str,
    *,
    steps: int | None = None,
    samples: int | None = None,
    epochs: int | None = None,
) -> Objective:
    """The objective called ``name`` (as typed on the command line).

    A run length (``steps``, ``samples``, ``epochs``) counts only for time-to-finish;
    given with another objective it is refused rather than silently ignored.
    """
    if name == "time-to-finish":
        return time_to_finish(steps=steps, samples=samples, epochs=epochs)
    if name not in OBJECTIVES:
        raise BadInputError(f"unknown objective {name!r}: use one of {', '.join(OBJECTIVES)}")
    given = [f"--{k}" for k, v in (("steps", steps), ("samples", samples), ("epochs", epochs)) if v]
    if given:
        them = "them" if len(given) > 1 else "it"
        raise BadInputError(
            f"{' and '.join(given)} only count for --objective time-to-finish, and {name} "
            f"ignores {them}: drop {them}, or tune for time-to-finish"
        )
    return throughput() if name == "throughput" else latency()
