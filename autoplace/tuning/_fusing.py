"""Steps per call, timed, not guessed: the pick at one step a call and at several.

A step pays a fixed cost per call (dispatch, the loop's own overhead, a launch on an
accelerator, one transfer) that a small batch cannot amortise. ``K`` steps in one call
(:func:`autoplace.fuse`: a ``lax.scan`` over ``K`` stacked batches, one transfer a call)
pay it once per ``K`` steps, and compute exactly what ``K`` plain steps do. How much that
gains is the machine's and the program's, so the tune measures it where it can matter:

* **where**: the pick's arm's line ``t(b) = a + c·b`` puts at least :data:`FIXED_SHARE` of
  the pick's step in its fixed cost ``a``, or the batch size is fixed (the space holds
  one), or the arm has no line to say; and the most that share lets the largest ``K`` gain
  could be shown at all by two windows with the confirmation's spread (:class:`Untimed`
  says why not, where not);
* **how**: the pick at one step a call and at each ``K`` asked (4 and 16 by default), each
  in a fresh process of its own, in turns, in :data:`~._confirm.WINDOWS` windows;
* **what is recommended**: the best ``K`` where it is faster than one a call in every
  window beyond the machine's resolution, or at least :data:`AHEAD_ENOUGH` ahead on the
  estimate (fused steps compute what plain ones do, so the best estimate costs no
  accuracy), and its call's peak memory is within ``--max-memory``; else one a call.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.config import Config
from autoplace.costs import arm_models
from autoplace.findings import Finding
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.settings import MeasureSettings
from autoplace.tuning._compare import Comparison, Spread, compare, fit
from autoplace.tuning._confirm import CAP_S, WINDOWS, window_settings
from autoplace.tuning._phase import BLOCKED, Context, Group, Want
from autoplace.tuning._search import ranking

#: The share of the pick's step its fixed cost must reach for steps per call to be timed:
#: at 10%, sixteen steps a call would make the step at most 1.10x faster.
FIXED_SHARE = 0.10
#: The least gain on the estimate for which a ``K`` not shown faster is still recommended.
AHEAD_ENOUGH = 0.05


@dataclasses.dataclass(frozen=True)
class Fusing:
    """What the best ``K`` steps per call did to the pick, timed in turns with one a call.

    Attributes:
        batch_size: the pick's batch size.
        steps_per_call: the ``K`` that scored best of those tried (not one).
        comparison: how many times better the pick scored at ``K`` than at one a call.
        fixed_share: the share of the pick's step its arm's line puts in the fixed cost
            (``None``: no line; timed because the batch size was fixed).
        figures: the pick's figures at ``K`` (its step, the call's memory).
    """

    batch_size: int
    steps_per_call: int
    comparison: Comparison
    fixed_share: float | None
    figures: Measurement

    @property
    def helps(self) -> bool:
        """Whether ``K`` was faster than one a call beyond the machine's resolution."""
        return self.comparison.verdict == "faster"

    @property
    def ahead(self) -> bool:
        """Whether ``K`` is ahead by at least :data:`AHEAD_ENOUGH` on the estimate."""
        return self.comparison.ratio >= 1 + AHEAD_ENOUGH

    @property
    def recommended(self) -> int:
        """The steps per call to run the pick at: ``K`` where faster or ahead enough."""
        return self.steps_per_call if self.helps or self.ahead else 1

    def sentences(self) -> tuple[str, ...]:
        k = self.steps_per_call
        said = self.comparison.sentence("one step a call")
        run = f"run them fused (autoplace.fuse(step, {k}) over {k} stacked batches)"
        if self.helps:
            what = f"{k} steps per call: {said}; {run}"
        elif self.ahead:
            what = (
                f"{k} steps per call: {said}; ahead on the estimate, and fused steps compute "
                f"what plain ones do: {run}, or re-measure with --remeasure"
            )
        else:
            what = f"{k} steps per call (the best tried): {said}; one step a call is kept"
        share = self.fixed_share
        why = "" if share is None else f" (its fixed cost is {share:.0%} of a step at one a call)"
        return (f"At batch {self.batch_size}{why}, {what}.",)

    def findings(self) -> tuple[Finding, ...]:
        return ()

    def as_dict(self) -> dict[str, Any]:
        m = self.figures
        return {
            "steps_per_call": self.recommended,
            "best_tried": self.steps_per_call,
            **self.comparison.as_dict(),
            "fixed_share": self.fixed_share,
            "step_s": m.fed.step_s if m.fed.step_s is not None else m.step.step_s,
            "peak_bytes": m.peak_bytes,
        }


@dataclasses.dataclass(frozen=True)
class Untimed:
    """Why the pick's steps per call were not timed although its fixed cost matters: the
    most the largest ``K`` could gain is less than two windows could show here.

    Attributes:
        batch_size: the pick's batch size.
        fixed_share: the share of its step the arm's line puts in the fixed cost.
        steps_per_call: the largest ``K`` asked.
        most: the most ``K`` steps a call could make it faster.
        least_shown: the least gain two windows with the confirmation's spread could show.
    """

    batch_size: int
    fixed_share: float
    steps_per_call: int
    most: float
    least_shown: float
    recommended: int = 1

    def sentences(self) -> tuple[str, ...]:
        return (
            f"At batch {self.batch_size} (its fixed cost is {self.fixed_share:.0%} of a step "
            f"at one a call), {self.steps_per_call} steps per call could make it at most "
            f"{self.most:.2f}x as fast, and {WINDOWS} windows on this machine now could show "
            f"no less than {self.least_shown:.2f}x (by the confirmation's spread): steps per "
            "call were not timed, and one step a call is kept; on a quieter machine they are "
            "timed.",
        )

    def findings(self) -> tuple[Finding, ...]:
        return ()

    def as_dict(self) -> dict[str, Any]:
        return {"steps_per_call": 1, "untimed": self.sentences()[0]}


def most_gain(share: float, k: int) -> float:
    """How many times as fast ``k`` steps a call could make a step whose fixed cost is
    ``share`` of it: the fixed cost paid once per ``k`` steps, nothing else gained."""
    return 1.0 / (1.0 - share + share / k)


def steps_tried(steps_per_call: Sequence[int]) -> list[int]:
    """The steps per call a fusing window times, in its order: one, then each ``K`` asked."""
    return [1, *sorted({k for k in steps_per_call if k > 1})]


def fixed_share(figures: Mapping[Config, Measurement], pick: Config, loop: str) -> float | None:
    """The share of the pick's step that its arm's line puts in the fixed cost, from the
    arm's measurements at one step a call (``None``: no line through them)."""
    arm = pick.arm
    own = {c: m for c, m in figures.items() if c.arm == arm and m.steps_per_call == 1}
    model = arm_models(own).get(arm)
    line = None if model is None else model.line(loop)
    if line is None:
        return None
    step = line.fixed + line.per_sample * pick.batch_size
    return line.fixed / step if step > 0 else None


class Fuse:
    """The steps-per-call phase: see the module docstring."""

    name = "fuse"

    def settings(self, user: MeasureSettings, objective: Objective) -> MeasureSettings:
        # A K far slower than one a call stops after its first turn: on the residual CNN,
        # lax.scan ran each step 7-10 times slower, and six chunks of 16 steps a call took
        # 72 s of one window (issue 38).
        fusing = dataclasses.replace(
            window_settings(user, objective), stop_far_behind=objective.rate
        )
        return ranking(fusing, user, objective, CAP_S)

    def next(self, ctx: Context) -> Group | str | None:
        """The pick at one step a call and at each ``K``, in the next window, or none: no
        ``K`` asked, the latency objective, a pick not confirmed in fresh processes, a fixed
        cost too small a share of a step whose batch is free to grow, a gain two windows
        could not show (:func:`untimed`), or its windows timed."""
        ks = steps_tried(ctx.plan.steps_per_call)
        pick = _pick(ctx)
        if pick is None or len(ks) < 2:
            return None
        share = fixed_share(ctx.standing.figures, pick, ctx.plan.objective.loop)
        if not ctx.plan.fixed_batch and share is not None and share < FIXED_SHARE:
            return None
        timed = ctx.done(self.name, pick)
        windows = max(
            len({m.interleave_id for m in timed if m.interleave_id}), len(timed) // len(ks)
        )
        if windows == 0 and untimed(ctx) is not None:
            return None
        if windows >= WINDOWS:
            return None
        if len(ks) > ctx.room or pick in ctx.history.pending:
            return BLOCKED
        wants = tuple(Want(pick, steps_per_call=k) for k in ks)
        return Group(self.name, wants, True)

    def judge(self, ctx: Context) -> Fusing | Untimed | None:
        """The best ``K``'s effect on the pick (each ``K`` against one a call, over the
        windows, their spread pooled with the confirmation's); or why none was timed."""
        pick = _pick(ctx)
        if pick is None:
            return None
        objective, max_memory = ctx.plan.objective, ctx.plan.space.max_memory
        ran = [m for m in ctx.done(self.name, pick) if m.status == "ok" and not m.environment]
        fits = [m for m in ran if max_memory is None or (m.peak_bytes or 0) <= max_memory]
        per: dict[int, dict[str, float]] = {}
        for m in fits:
            score = objective.score(m)
            if score and m.interleave_id:
                per.setdefault(m.steps_per_call, {})[m.interleave_id] = score
        if 1 not in per or len(per) < 2:
            return untimed(ctx)
        ranking_ = ctx.standing.ranking
        spread = fit(per).spread.pooled(ranking_.spread if ranking_ else None)
        maximize = objective.direction == "maximize"
        busy = ctx.standing.busy
        found = {k: compare(per[k], per[1], spread, maximize=maximize, busy=busy)
                 for k in per if k != 1}  # fmt: skip
        best = max(found, key=lambda k: found[k].ratio)
        figures = [m for m in fits if m.steps_per_call == best][-1]
        share = fixed_share(ctx.standing.figures, pick, objective.loop)
        return Fusing(pick.batch_size, best, found[best], share, figures)


def untimed(ctx: Context) -> Untimed | None:
    """Why steps per call are not timed for the pick although its fixed cost is a share of
    its step that matters (:data:`FIXED_SHARE`, or any with the batch size fixed): two
    windows could not show what the largest ``K`` could gain. ``None``: they could, or
    another rule decides, or nothing says (no line, no windows yet, a spread not known)."""
    pick, ranking_ = _pick(ctx), ctx.standing.ranking
    tried = steps_tried(ctx.plan.steps_per_call)[1:]
    if pick is None or not tried or ranking_ is None or ranking_.spread.sigma is None:
        return None
    share = fixed_share(ctx.standing.figures, pick, ctx.plan.objective.loop)
    if share is None or (share < FIXED_SHARE and not ctx.plan.fixed_batch):
        return None
    most, least = most_gain(share, tried[-1]), 1 + least_shown(ranking_.spread)
    if most >= least:
        return None
    return Untimed(pick.batch_size, share, tried[-1], most, least)


def least_shown(spread: Spread) -> float:
    """The least gain two windows with ``spread`` could call faster (a fraction)."""
    half = spread.half_width(WINDOWS)
    return half if math.isfinite(half) else math.inf


def _pick(ctx: Context) -> Config | None:
    """The pick, where the steps per call may be timed for it: confirmed in fresh
    processes, for an objective whose runs are longer than one step."""
    best = ctx.standing.best
    if best is None or ctx.plan.objective.one_batch or not best.measurement.fresh_process:
        return None
    return best.config
