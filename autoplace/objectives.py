"""What "best" means: objectives are values (a name, a direction, a scoring function).

Scores are computed from the stored figures every time, never read back from Optuna's
trial value, so one study's measurements can answer several questions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, Literal

from autoplace.errors import BadInputError
from autoplace.measurement import Loop, Measurement

Direction = Literal["maximize", "minimize"]
OBJECTIVES = ("throughput", "time-to-finish", "latency")
#: How a run feeds its steps: a host batch put before each (``put``), two puts kept in
#: flight (``prefetch``: :func:`autoplace.prefetch`), or the data on the device (``resident``).
Feeding = Literal["put", "prefetch", "resident"]
FEEDINGS: tuple[Feeding, ...] = ("put", "prefetch", "resident")
#: The timed loop each feeding's step is.
FEEDING_LOOP: dict[Feeding, Loop] = {"put": "fed", "prefetch": "prefetch", "resident": "step"}


@dataclasses.dataclass(frozen=True)
class Objective:
    """A way to score a measurement (``score``: ``None`` when it cannot).

    ``name`` is one of :data:`OBJECTIVES`; ``run`` the run length it was built with,
    recorded with the study; ``loop`` the timed loop the score rests on. The fields say how
    it behaves, so nothing compares objectives by name.
    """

    name: str
    direction: Direction
    unit: str
    score_fn: Callable[[Measurement], float | None] = dataclasses.field(repr=False)
    run: dict[str, Any] = dataclasses.field(default_factory=dict)
    loop: Loop = "fed"
    #: Whether the score is samples per second, what an arm's cost line speaks of (the
    #: climb tests the line, the search stops timing what is clearly behind).
    rate: bool = False
    #: Whether a step starts from one batch on the host: neither fed three ways nor fused.
    one_batch: bool = False
    #: What it scores, in words.
    description: str = ""

    def score(self, m: Measurement) -> float | None:
        return self.score_fn(m) if m.measured else None

    def spread(self, m: Measurement) -> float:
        """The relative spread (IQR / median) of the loop the score rests on."""
        return m.loop(self.loop).spread or 0.0

    def chunk_scores(self, m: Measurement) -> list[float]:
        """The score once per timed chunk of its loop, in the order timed."""
        timed = m.loop(self.loop)
        scores = (
            self.score(m.with_loop(self.loop, dataclasses.replace(timed, step_s=t)))
            for t in timed.chunks
        )
        return [s for s in scores if s is not None]

    @property
    def feeding(self) -> Feeding:
        return next(f for f, loop in FEEDING_LOOP.items() if loop == self.loop)

    def better(self, a: float, b: float) -> bool:
        """True when score ``a`` beats score ``b``."""
        return self.key(a) > self.key(b)

    def key(self, score: float) -> float:
        """The better the score, the larger the key (``max(..., key=objective.key)``)."""
        return score if self.direction == "maximize" else -score

    def gain(self, a: float, b: float) -> float:
        """How much better ``a`` is than ``b``, as a fraction of ``b`` (negative: worse)."""
        if self.direction == "maximize":
            return a / b - 1.0
        return b / a - 1.0

    def describe(self) -> str:
        return self.description


#: How each feeding is said.
_FED = {
    "put": "feeding host batches",
    "prefetch": "host batches prefetched",
    "resident": "the data on the device",
}


def throughput(feeding: Feeding = "put") -> Objective:
    """Steady-state samples per second, each step fed as ``feeding`` says."""
    loop = FEEDING_LOOP[feeding]

    def score(m: Measurement) -> float | None:
        return m.loop(loop).rate(m.batch_size)

    run = {} if feeding == "put" else {"feeding": feeding}
    said = f"throughput (samples/s, {_FED[feeding]})"
    return Objective("throughput", "maximize", "samples/s", score, run, loop, True, False, said)


def latency() -> Objective:
    """Seconds to answer one batch that starts on the host: transfer + one step."""

    def score(m: Measurement) -> float | None:
        step = m.step.step_s
        if step is None or m.transfer_s is None:
            return None
        return m.transfer_s + step

    said = "latency of one step (transfer + step)"
    return Objective("latency", "minimize", "s", score, loop="step", one_batch=True,
                     description=said)  # fmt: skip


def time_to_finish(
    *,
    steps: int | None = None,
    samples: int | None = None,
    epochs: int | None = None,
    feeding: Feeding = "put",
) -> Objective:
    """Seconds to run a job of ``steps`` steps or ``samples`` samples (times ``epochs``):
    the device's start-up where the process paid it, lowering, compile, first call and
    the remaining fed steps. One-off costs weigh more the shorter the run.
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
    total = 0 if samples is None else samples * (epochs or 1)
    loop = FEEDING_LOOP[feeding]

    def score(m: Measurement) -> float | None:
        step, lower, compile_, call = m.loop(loop).step_s, m.lower_s, m.compile_s, m.first_call_s
        if step is None or lower is None or compile_ is None or call is None:
            return None
        n = steps if steps is not None else math.ceil(total / m.batch_size)
        return (m.device_init_s or 0.0) + lower + compile_ + call + (n - 1) * step

    run: dict[str, Any] = {"steps": steps} if steps is not None else {"samples": total}
    if epochs is not None:
        run["epochs"] = epochs
    if feeding != "put":
        run["feeding"] = feeding
    length = f"{steps} steps" if steps is not None else f"{total} samples"
    said = f"time to finish {length} (compile + first call + steps)"
    return Objective("time-to-finish", "minimize", "s", score, run, loop=loop, description=said)


def make_objective(
    name: str,
    *,
    steps: int | None = None,
    samples: int | None = None,
    epochs: int | None = None,
    feeding: str = "put",
) -> Objective:
    """The objective called ``name`` on the command line, fed as ``feeding`` says. A run
    length with another objective than time-to-finish is refused, not ignored; so is a
    feeding for latency."""
    if feeding not in FEEDINGS:
        raise BadInputError(
            f"unknown feeding {feeding!r}: use put (a host batch put before each step, as a "
            "plain loop does), prefetch (two puts in flight) or resident (data on the device)"
        )
    if name == "time-to-finish":
        return time_to_finish(steps=steps, samples=samples, epochs=epochs, feeding=feeding)
    if name not in OBJECTIVES:
        raise BadInputError(f"unknown objective {name!r}: use one of {', '.join(OBJECTIVES)}")
    if name == "latency" and feeding != "put":
        raise BadInputError(
            f"--feeding {feeding} with --objective latency: latency is one batch from the "
            "host, transfer and step; drop --feeding, or tune for throughput"
        )
    given = [f"--{k}" for k, v in (("steps", steps), ("samples", samples), ("epochs", epochs)) if v]
    if given:
        them = "them" if len(given) > 1 else "it"
        raise BadInputError(
            f"{' and '.join(given)} only count for --objective time-to-finish, and {name} "
            f"ignores {them}: drop {them}, or tune for time-to-finish"
        )
    return throughput(feeding) if name == "throughput" else latency()
