"""The search phase: what the strategy proposes, measured quickly in the shared worker, each
group timed in turns with the best configuration so far (its reference), so that every
group's figures are put on one scale (:func:`estimates`: ``log figure = configuration +
group``, the drift between groups fitted out). Once the strategy has nothing left, the batch
above each arm's largest measured one is measured where the arm's cost line predicts it
could match the best so far (:func:`_predicted`). The search only chooses the finalists;
the confirmation's windows decide the pick (:mod:`._confirm`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from autoplace.config import Config, config_at
from autoplace.costs import arm_models
from autoplace.objectives import Objective
from autoplace.settings import MeasureSettings
from autoplace.study import History
from autoplace.tuning._compare import Fit, fit
from autoplace.tuning._phase import Context, Group

#: Configurations whose search score is within this of the search's best are finalists
#: (:mod:`._confirm`), and a batch the line predicts within it is measured.
REACH = 0.20
#: The cap of the loop the objective ranks on, per configuration, in a search group (three
#: turns, at least, of a 50 ms chunk).
SEARCH_CAP_S = 0.2
#: While searching for throughput, a configuration whose every one of its first four turns
#: takes more than this many times the reference's time per sample stops being timed: it
#: is 20% behind the best so far, further than any finalist may be (:data:`REACH`).
STOP_BEHIND = 1.25


def quick(user: MeasureSettings, objective: Objective) -> MeasureSettings:
    """The user's settings as every phase starts from them: no float32 comparison, the
    transfer timed only where the objective counts it, one warm-up step after the first
    call (none where the fed loop is ranked: the resident loop's glance, timed first, warms
    it)."""
    return dataclasses.replace(
        user,
        deviation=False,
        transfer_cap_s=user.transfer_cap_s if objective.one_batch else 0.0,
        warmup_steps=min(user.warmup_steps, 1 if objective.loop == "step" else 0),
    )


def ranking(
    base: MeasureSettings, user: MeasureSettings, objective: Objective, cap: float
) -> MeasureSettings:
    """``base`` with the loop the objective ranks on capped at ``cap`` (or the user's cap,
    if lower) and the other loops glanced at (the prefetched one not timed at all)."""
    own = {
        "step": user.time_cap_s,
        "fed": user.fed_time_cap_s,
        "prefetch": user.prefetch_time_cap_s,
    }
    capped = {loop: min(asked or cap, cap) if loop == objective.loop else 0.0
              for loop, asked in own.items()}  # fmt: skip
    return dataclasses.replace(
        base,
        time_cap_s=capped["step"],
        fed_time_cap_s=capped["fed"],
        prefetch_time_cap_s=capped["prefetch"],
    )


def estimates(history: History, objective: Objective) -> Fit:
    """The search's figures on one scale: each configuration's score with the drift between
    the groups it was timed in fitted out."""
    cells: dict[Config, dict[Any, float]] = {}
    for n, (c, m) in enumerate(history.searches):
        score = objective.score(m) if m.status == "ok" else None
        if score:
            cells.setdefault(c, {})[m.interleave_id or ("alone", n)] = score
    return fit(cells)


class Search:
    """The search: see the module docstring."""

    name = "search"

    def settings(self, user: MeasureSettings, objective: Objective) -> MeasureSettings:
        searching = dataclasses.replace(
            quick(user, objective),
            stop_behind=STOP_BEHIND if objective.rate else None,
            stop_far_behind=objective.rate,
        )
        return ranking(searching, user, objective, SEARCH_CAP_S)

    def next(self, ctx: Context) -> Group | None:
        """The strategy's proposal, led by the best so far as its reference where there is
        room for it and it is not in the group already."""
        now, plan = ctx.standing, ctx.plan
        space = plan.space.without(now.ended)
        group = list(
            plan.strategy.propose(space, plan.objective, now.estimates, ctx.history.pending)
        ) or _predicted(ctx)
        if not group:
            return None
        reference = _incumbent(now.estimates, plan.objective) if ctx.room >= 2 else None
        if reference is not None and reference not in group:
            return Group.of(self.name, [reference, *group][: ctx.room], False, reference)
        return Group.of(self.name, group[: ctx.room], False)

    def judge(self, ctx: Context) -> None:
        """The search's figures are the standing's estimates: nothing of its own to say."""
        return None


def _incumbent(scores: Mapping[Config, float | None], objective: Objective) -> Config | None:
    """The configuration the search scores best so far, if any ran."""
    ran = {c: s for c, s in scores.items() if s is not None}
    return max(ran, key=lambda c: objective.key(ran[c]), default=None)


def _predicted(ctx: Context) -> list[Config]:
    """For the throughput objective, the batch one step above each arm's largest measured
    one, where the arm's line (``a + c·b``, :mod:`autoplace.costs`) predicts it could score
    within :data:`REACH` of the best so far, unmeasured, in the space and below
    any failure or a bend of the line. The ablation (benchmarks/README.md) measured why: with
    this step off, a held-out VGG's pick was 17% behind the plain loop's best in one quiet
    round of two, a search having stopped climbing below it."""
    now, plan = ctx.standing, ctx.plan
    scores = {c: s for c, s in now.estimates.items() if s}
    if not plan.objective.rate or not scores:
        return []
    best = max(scores.values(), key=plan.objective.key)
    space = plan.space.without(now.ended)
    searched = {c: m for c, m in now.figures.items() if c in now.estimates}
    out = []
    for arm, model in arm_models(searched).items():
        line = model.line(plan.objective.loop)
        if line is None or line.per_sample <= 0 or (line.departure or 0.0) > 0:
            continue
        mine = [c for c in searched if c.arm == arm]
        top = max((c for c in mine if c in scores), key=lambda c: c.batch_size, default=None)
        above = [b for b in space.batch_sizes if top is not None and b > top.per_device_batch]
        if top is None or not above or any(c.batch_size > top.batch_size for c in mine):
            continue  # nothing above it, or it failed (or is being measured) above
        c = config_at(arm, above[0])
        predicted = (
            scores[top]
            * (c.batch_size / line.at(c.batch_size))
            / (top.batch_size / line.at(top.batch_size))
        )
        if (
            c in space
            and c not in ctx.history.pending
            and plan.objective.gain(predicted, best) >= -REACH
        ):
            out.append(c)
    return out
