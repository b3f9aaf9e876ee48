"""Steps per call, timed, not guessed: the pick at one step a call and at several.

A step pays a fixed cost per call (dispatch, the loop's own overhead, a launch on an
accelerator, one transfer) that a small batch cannot amortise. ``K`` steps in one call
(:func:`autoplace.fuse`: a ``lax.scan`` over ``K`` batches stacked along a new leading
axis, one transfer a call) pay it once per ``K`` steps, and compute exactly what ``K``
plain steps do. How much that gains is a property of the machine and the program, so
the tune measures it where it can matter and never guesses:

* **where**: the pick's arm's line ``t(b) = a + c·b`` (``autoplace.explaining``) puts at
  least :data:`FIXED_SHARE` of the pick's step in its fixed cost ``a`` (at 10%, 16 steps a
  call could gain at most 1.10x), or the batch size is fixed (the space holds one: a
  larger batch is not the user's to take), or the arm has no line to say; and where the
  most that share lets the largest ``K`` gain could be shown at all: two windows, with a
  window's noise as the confirmation just measured it, must be able to call that gain
  faster (:func:`untimed`: an 11% fixed share lets 16 steps a call gain at most 1.12x,
  where two windows with a window's noise at 10% show no less than 1.29x, at 2% 1.05x);
* **how**: the pick is timed at one step a call and at each ``K`` asked
  (``TuneRequest.steps_per_call``, 4 and 16 by default), each in a fresh process of its
  own, in turns, in :data:`~._margin.MIN_WINDOWS` windows, as a remedy is, and a third,
  as the verdict's duel, only where the best ``K`` is still undecided and one more window
  could settle it; the noise between windows pooled with the confirmation's. (One window
  alone decides nothing: the README MLP's first window at batch 32 once put 16 steps a
  call at 0.75x one a call, where seven rounds re-measured gave 1.82x, one of them 0.68x);
* **what is recommended**: the best ``K`` where it is faster than one step a call beyond
  doubt (the windows' rule, Bonferroni over the ``K`` tried, the interval widened on a busy
  machine as the verdict's are), or where it is at least :data:`AHEAD_ENOUGH` ahead on
  the estimate without being shown so (as the verdict picks its best estimate: fused steps
  compute what plain ones do, so the best estimate costs no accuracy; the sentence says it
  was not shown), and its peak memory is within ``--max-memory``; else one step a call.
  Where the fixed cost is small no window runs, so the knob costs nothing; where the
  windows could not show what it could gain, none runs either, and the explanation says
  why (:class:`Untimed`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.config import Config
from autoplace.costs import arm_models
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._drift import Effects
from autoplace.tuning._margin import (
    ALPHA,
    MIN_WINDOWS,
    Comparison,
    Noise,
    against_base,
    could_decide,
    t_quantile,
)

#: The share of the pick's step its fixed cost must reach for steps per call to be timed:
#: at 10%, sixteen steps a call would make the step at most 1.10x faster (1 / (0.9 +
#: 0.1/16)), about the smallest gain two windows on this kind of machine can show.
FIXED_SHARE = 0.10
#: The least gain, by the windows' estimate, for which a ``K`` not shown faster beyond doubt
#: is still recommended: fused steps compute exactly what plain ones do, so running the
#: best estimate costs no accuracy (as the verdict picks its best estimate), only the
#: memory of ``K`` batches; below it one step a call is kept (the simpler loop).
AHEAD_ENOUGH = 0.05


@dataclasses.dataclass(frozen=True)
class Fusing:
    """What the best ``K`` steps per call did to the pick, timed in turns with one a call.

    Attributes:
        steps_per_call: the ``K`` that scored best of those tried (not one).
        comparison: how many times better the pick scored at ``K`` than at one step a
            call (its interval, its verdict).
        fixed_share: the share of the pick's step the arm's line puts in its fixed cost
            (``None``: no line; timed because the batch size was fixed).
        figures: the pick's figures at ``K`` (its step, throughput, the call's memory).
        noise: the noise of one window's score the comparison rests on.
    """

    steps_per_call: int
    comparison: Comparison
    fixed_share: float | None
    figures: Measurement
    noise: Noise

    @property
    def helps(self) -> bool:
        """Whether ``K`` was faster than one a call beyond doubt."""
        return self.comparison.verdict == "faster"

    @property
    def ahead(self) -> bool:
        """Whether ``K`` is ahead by at least :data:`AHEAD_ENOUGH` on the estimate, not shown
        beyond doubt (nor shown behind)."""
        c = self.comparison
        return c.verdict in ("ahead", "undecided") and c.ratio >= 1 + AHEAD_ENOUGH

    @property
    def recommended(self) -> int:
        """The steps per call to run the pick at: ``K`` where it was faster beyond doubt or is
        ahead enough on the estimate, else 1."""
        return self.steps_per_call if self.helps or self.ahead else 1

    def text(self) -> str:
        """The result in words, for the explanation: what ``K`` did, and what to do."""
        k = self.steps_per_call
        said = self.comparison.sentence("one step a call")
        run = f"run them fused (autoplace.fuse(step, {k}) over {k} stacked batches)"
        if self.helps:
            return f"{k} steps per call: {said}; {run}"
        if self.ahead:
            return (
                f"{k} steps per call: {said}; ahead on the estimate, and fused steps compute "
                f"what plain ones do: {run}, or re-measure with --remeasure"
            )
        return f"{k} steps per call (the best tried): {said}; one step a call is kept"

    def as_dict(self) -> dict[str, Any]:
        m = self.figures
        return {
            "steps_per_call": self.recommended,
            "best_tried": self.steps_per_call,
            **self.comparison.as_dict(),
            "fixed_share": self.fixed_share,
            "step_s": m.fed_step_s if m.fed_step_s is not None else m.step_s,
            "peak_bytes": m.peak_bytes,
        }


@dataclasses.dataclass(frozen=True)
class Untimed:
    """Why the pick's steps per call were not timed although its fixed cost matters: the
    most the largest ``K`` could gain is less than :data:`~._margin.MIN_WINDOWS` windows
    could show with this machine's noise.

    Attributes:
        batch_size: the pick's batch size.
        fixed_share: the share of its step the arm's line puts in the fixed cost.
        steps_per_call: the largest ``K`` asked.
        most: the most ``K`` steps a call could make it faster (:func:`most_gain`).
        least_shown: the least gain the windows could call faster (:func:`least_shown`).
    """

    batch_size: int
    fixed_share: float
    steps_per_call: int
    most: float
    least_shown: float

    def text(self) -> str:
        """The reason in words, for the explanation."""
        return (
            f"At batch {self.batch_size} (its fixed cost is {self.fixed_share:.0%} of a step "
            f"at one a call), {self.steps_per_call} steps per call could make it at most "
            f"{self.most:.2f}x as fast, and {MIN_WINDOWS} windows on this machine now could "
            f"show no less than {self.least_shown:.2f}x (by the confirmation's noise): steps "
            "per call were not timed, and one step a call is kept; on a quieter machine "
            "they are timed."
        )


def most_gain(share: float, k: int) -> float:
    """How many times as fast ``k`` steps a call could make a step whose fixed cost is
    ``share`` of it: the fixed cost paid once per ``k`` steps, nothing else gained."""
    return 1.0 / (1.0 - share + share / k)


def least_shown(noise: Noise, variants: int) -> float:
    """The least ratio to one step a call that :data:`~._margin.MIN_WINDOWS` windows of the
    pick at one a call and at ``variants`` ``K`` could call faster, with a window's score as
    noisy as ``noise``: Student's t (Bonferroni over the ``K``, at the degrees of freedom
    the windows would add) times the standard error of a difference over those windows."""
    df = noise.df + variants * (MIN_WINDOWS - 1)
    t = t_quantile(1 - ALPHA / (2 * max(variants, 1)), df)
    return math.exp(t * noise.sigma * math.sqrt(2 / MIN_WINDOWS))


def untimed(
    pick: Config,
    figures: Mapping[Config, Measurement],
    objective: Objective,
    steps_per_call: Sequence[int],
    fixed_batch: bool,
    noise: Noise | None,
) -> Untimed | None:
    """Why steps per call are not timed for ``pick`` although its fixed cost is a share of
    its step that matters (:data:`FIXED_SHARE`, or any with the batch size fixed): the
    windows could not show what the largest ``K`` could gain. ``None``: they could, or
    another rule decides (the latency objective, no ``K`` asked, a small share), or
    nothing says (no line, no noise yet)."""
    tried = steps_tried(steps_per_call)[1:]
    share = fixed_share(figures, pick, objective.loop)
    if objective.one_batch or not tried or share is None or noise is None:
        return None
    if share < FIXED_SHARE and not fixed_batch:
        return None
    most, least = most_gain(share, tried[-1]), least_shown(noise, len(tried))
    if most >= least:
        return None
    return Untimed(pick.batch_size, share, tried[-1], most, least)


def steps_tried(steps_per_call: Sequence[int]) -> list[int]:
    """The steps per call a fusing window times, in its order: one, then each ``K`` asked."""
    return [1, *sorted({k for k in steps_per_call if k > 1})]


def fixed_share(figures: Mapping[Config, Measurement], pick: Config, loop: str) -> float | None:
    """The share of the pick's step that its arm's line puts in the fixed cost, from the
    arm's measurements at one step a call (``None``: no line through them)."""
    arm = (pick.device, pick.precision, pick.width)
    own = {
        c: m
        for c, m in figures.items()
        if (c.device, c.precision, c.width) == arm and m.steps_per_call == 1
    }
    model = arm_models(own).get(arm)
    line = None if model is None else model.line(loop)
    if line is None:
        return None
    step = line.fixed + line.per_sample * pick.batch_size
    return line.fixed / step if step > 0 else None


def fusing_window(
    pick: Config | None,
    figures: Mapping[Config, Measurement],
    fused: Mapping[Config, Sequence[Measurement]],
    objective: Objective,
    steps_per_call: Sequence[int],
    fixed_batch: bool,
    judged: Fusing | None = None,
    noise: Noise | None = None,
) -> list[int]:
    """The steps per call to time the pick at in the next window (one first), or none: no
    ``K`` asked beside one, the latency objective (one request is one step), the pick not
    confirmed in fresh processes, its fixed cost too small a share of its step with a batch
    size free to grow, none timed yet and what the largest ``K`` could gain more than two
    windows could show with ``noise`` (the confirmation's: :func:`untimed`), or its
    windows already timed: two, and a third where ``judged`` (the two, judged) is
    undecided and one more window could settle it."""
    tried = steps_tried(steps_per_call)[1:]
    figure = figures.get(pick) if pick is not None else None
    if not tried or objective.one_batch or figure is None or not figure.fresh_process:
        return []
    assert pick is not None
    share = fixed_share(figures, pick, objective.loop)
    if not fixed_batch and share is not None and share < FIXED_SHARE:
        return []
    timed = fused.get(pick, ())
    # Windows timed: those with a result, or as many as their measurements make, failed
    # ones included (a window whose every process failed is a window all the same).
    windows = max(
        len({m.interleave_id for m in timed if m.interleave_id}), len(timed) // (len(tried) + 1)
    )
    if windows == 0 and untimed(pick, figures, objective, steps_per_call, fixed_batch, noise):
        return []
    if windows < MIN_WINDOWS:
        return [1, *tried]
    if windows == MIN_WINDOWS and judged is not None and _open(judged):
        return [1, *tried]
    return []


def _open(judged: Fusing) -> bool:
    """Whether the best ``K`` is undecided against one a call and one more window could
    settle it (:func:`._margin.could_decide`, as before a duel)."""
    return judged.comparison.verdict == "undecided" and could_decide(
        judged.comparison, judged.noise
    )


def fusing_of(
    objective: Objective,
    pick: Config,
    figures: Mapping[Config, Measurement],
    fused: Mapping[Config, Sequence[Measurement]],
    max_memory: int | None = None,
    prior: Effects | None = None,
) -> Fusing | None:
    """The best ``K``'s effect on the pick, from its steps-per-call windows (``None``: none
    ran, or none beside one step a call ran). The windows are fitted as the
    confirmation's are (log score = steps per call + window), each ``K`` compared with one
    step a call, Bonferroni over the ``K`` tried (the verdict widens the interval on a busy
    machine), the noise between windows pooled with ``prior``'s (the confirmation's
    windows). A ``K`` whose call needs more memory than ``max_memory`` is never the one
    recommended."""
    ran = [
        m
        for m in fused.get(pick, ())
        if m.status == "ok" and objective.score(m) and not m.environment
    ]
    fits = [m for m in ran if max_memory is None or (m.peak_bytes or 0) <= max_memory]
    scores = [(m.steps_per_call, m.interleave_id, objective.score(m)) for m in fits]
    judged = against_base(objective, scores, 1, prior)  # type: ignore[arg-type]
    if judged is None:
        return None
    found, noise = judged
    best, comparison = max(found, key=lambda kc: kc[1].ratio)
    at_best = [m for m in fits if m.steps_per_call == best]
    share = fixed_share(figures, pick, objective.loop)
    return Fusing(best, comparison, share, at_best[-1], noise)
