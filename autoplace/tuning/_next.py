"""What a pass measures next: the phase, its group of configurations, and the search
group's reference. In order: what the strategy proposes (search), with the best so far
as its reference; else the batches the cost model predicts as good as the pick, measured
in the same way (search); else the finalists' next window (confirm); else a duel window
while the pick's comparisons are open (duel); else the pick and each other device's best
fed three ways (feeding); else, when the pick maps fresh memory every step, its remedy's
window (remedy); else, when its fixed cost matters, it at one step a call and at several
(fuse); else nothing: the tune is done."""

from __future__ import annotations

from autoplace.config import Config
from autoplace.study import History
from autoplace.tuning._feeding import feeding_window
from autoplace.tuning._fusing import fusing_window
from autoplace.tuning._phases import Phase
from autoplace.tuning._plan import Plan
from autoplace.tuning._remedy import remedy_window
from autoplace.tuning._standing import Standing
from autoplace.tuning._windows import confirmation_window, duel, incumbent

#: What a pass measures: its phase, the group (empty: nothing now) and the reference.
Next = tuple[Phase, list[Config], Config | None]


def next_group(plan: Plan, now: Standing, history: History, room: int) -> Next:
    """The phase, the group to measure (at most ``room``), and the search group's
    reference: the best so far, measured again with the group so that every new score is
    anchored to it (the drift between groups is fitted out)."""
    if room <= 0:
        return Phase.SEARCH, [], None
    found = (
        _searched(plan, now, history, room)
        or _predicted(now, history, room)
        or _judged(plan, now, history, room)
    )
    return found or _after(plan, now, history, room)


def _searched(plan: Plan, now: Standing, history: History, room: int) -> Next | None:
    """The strategy's proposal, with the best so far as its reference."""
    pending, space = history.pending, plan.space.without(now.ended)
    group = list(plan.strategy.propose(space, plan.objective, now.estimates, pending))
    return _anchored(group, now, room)


def _predicted(now: Standing, history: History, room: int) -> Next | None:
    """The batches the strategy left unmeasured that the cost model predicts as good as the
    pick (:attr:`Standing.predicted_equivalent`), with the best so far as their reference:
    measured, not listed. On the held-out encoder, the line through its batches up to the
    best predicted the batch one step above as good as it, where the throughput halves;
    listed, it was 48-54% behind the plain loop's best (issue 36). Once measured, a batch
    that falls below the line also ends the line's predictions above it."""
    group = [c for c, _ in now.predicted_equivalent if c not in history.pending]
    return _anchored(group, now, room)


def _anchored(group: list[Config], now: Standing, room: int) -> Next | None:
    """A search group (none if ``group`` is empty), led by the best so far as its reference
    where there is room for it and it is not in the group already."""
    if not group:
        return None
    reference = incumbent(now) if room >= 2 else None
    if reference is not None and reference not in group:
        return Phase.SEARCH, [reference, *group][:room], reference
    return Phase.SEARCH, group[:room], None


def _judged(plan: Plan, now: Standing, history: History, room: int) -> Next | None:
    """The verdict's windows: the finalists' confirmation, then the duels."""
    pending = history.pending
    group = confirmation_window(now, history.confirmed, plan.confirm, pending)
    if group:
        return Phase.CONFIRM, group[:room], None
    if plan.confirm <= 0:
        return Phase.DUEL, [], None
    group = duel(now)
    if pending.intersection(group):
        return Phase.DUEL, [], None  # another worker is dueling them: wait for its result
    return (Phase.DUEL, group[:room], None) if group else None


def _after(plan: Plan, now: Standing, history: History, room: int) -> Next:
    """Once the verdict is in: the feeding, the remedy, the steps per call, or nothing."""
    best, pending = now.best, history.pending
    pick = best.config if best else None
    fed = feeding_window(pick, now.device_bests, history.feeding, plan.objective)
    if fed:
        busy = len(fed) > room or pending.intersection(fed)
        return Phase.FEED, ([] if busy else fed), None
    settings = remedy_window(pick, best.measurement if best else None, history.remedies)
    if settings:
        if len(settings) > room or pick in pending:
            return Phase.REMEDY, [], None
        return Phase.REMEDY, [pick] * len(settings), None  # type: ignore[list-item]
    ks = fusing_window(
        pick,
        now.figures,
        history.fused,
        plan.objective,
        plan.steps_per_call,
        fixed_batch=plan.fixed_batch,
        judged=now.fusing,
        noise=now.noise,
    )
    if not ks or len(ks) > room or pick in pending:
        return Phase.FUSE, [], None
    return Phase.FUSE, [pick] * len(ks), None  # type: ignore[list-item]
