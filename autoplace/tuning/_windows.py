"""Which windows the verdict times: the finalists' confirmation windows, then the duels.

The finalists are the search's best few (:func:`finalists`); all of them are timed
together in each window, each in a fresh process of its own, in turn orders of their own
(:func:`in_turn_order`), until each has :data:`~._margin.MIN_WINDOWS` windows
(:func:`confirmation_window`); while the pick and a finalist are undecided and another
window could settle them or narrow an interval wider than the machine's resolution, one
more (:func:`duel`), up to :data:`MAX_WINDOWS`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._margin import MIN_WINDOWS, Scored, could_decide, windows_share
from autoplace.tuning._standing import CONFIRM_REACH, Standing


def incumbent(standing: Standing) -> Config | None:
    """The configuration the search scores best so far, if any ran."""
    ran = [c for c, s in standing.estimates.items() if s is not None]
    return max(ran, key=lambda c: standing.objective.key(standing.estimates[c]), default=None)  # type: ignore[arg-type]


def finalists(
    searched: Sequence[Scored],
    objective: Objective,
    k: int,
    failed: Collection[Config] = (),
) -> list[Config]:
    """Up to ``k`` of the search's ranked configurations within ``CONFIRM_REACH`` of its
    best, best first, leaving out those whose confirmation ``failed`` (the next one takes
    the place); one slot goes to the best of another (device, precision) if one is that
    close."""
    usable = [s for s in searched if s.config not in failed]
    if not usable:
        return []
    top = usable[0].score
    close = [s for s in usable if objective.gain(top, s.score) <= CONFIRM_REACH]
    chosen = close[:k]
    if chosen and k >= 2:
        other = next((s for s in close if s.group != chosen[0].group), None)
        if other is not None and other not in chosen:
            chosen[-1] = other
    return [s.config for s in chosen]


def ok_windows(confirmations: Sequence[Measurement]) -> int:
    """The distinct windows a configuration's confirmations ran in."""
    return len({m.interleave_id or id(m) for m in confirmations if m.status == "ok"})


def in_turn_order(group: Sequence[Config], window: int) -> list[Config]:
    """The order a window times ``group`` in: as ranked in even windows, reversed in odd
    ones, so that no finalist is always timed first (or just after another)."""
    return list(group) if window % 2 == 0 else list(reversed(group))


def confirmation_window(
    now: Standing,
    confirmed: Mapping[Config, Sequence[Measurement]],
    k: int,
    taken: frozenset[Config],
) -> list[Config]:
    """The finalists to time in the next confirmation window, in its turn order, or none
    once each has :data:`MIN_WINDOWS` windows that ran.

    Finalists are chosen on the search's figures (see :func:`finalists`); all of them are
    timed together in each window (a comparison rests on windows both were timed in), so
    one confirmed before (e.g. by another worker) is timed again with the others. While
    any finalist is being measured (``taken``: another worker confirming them), none:
    the study is confirmed once, not once per worker, and this worker waits.
    """
    chosen = finalists(now.searched, now.objective, k, now.unconfirmed)
    if not chosen or any(c in taken for c in chosen):
        return []
    done = {c: ok_windows(confirmed.get(c, ())) for c in chosen}
    if all(n >= MIN_WINDOWS for n in done.values()):
        return []
    return in_turn_order(chosen, min(done.values()))


#: The most finalists a duel times beside the pick.
DUEL_RIVALS = 3
#: The most windows the pick is timed in: the confirmation's, then duels.
MAX_WINDOWS = 4
#: The half-width a comparison's interval is worth narrowing to with another window, on a
#: quiet machine: a plain loop's figures spread by 3-8% across fresh processes there
#: (issue 36), so two configurations' ratio is known to about this much at best.
RESOLUTION = 0.10
_RESOLUTION_LOG = math.log((1 + RESOLUTION) / (1 - RESOLUTION)) / 2


def duel(now: Standing) -> list[Config]:
    """The pick and the confirmed finalists it could not be told apart from (closest first,
    at most :data:`DUEL_RIVALS` of them), to be timed in one more, longer window, while
    the windows so far left them undecided and one more window could settle it
    (:func:`._margin.could_decide`) or narrow an interval whose windows' share
    (:func:`._margin.windows_share`: all but the minutes-later part) is wider than
    :data:`RESOLUTION` either way: "they cannot be told apart" then says so within the
    machine's resolution, not within ±40%. A confirmed finalist the pick is ahead of (or
    behind) on fewer than :data:`~._margin.MIN_WINDOWS` shared windows duels too (a README
    tune of 2026-11-26 20:01 ended "ahead here, not shown to hold", its finalists having
    changed after the first window). None once the pick has had :data:`MAX_WINDOWS`
    windows, or on a busy machine (its windows' spread is the machine's, not the
    configurations': more of them would not narrow it)."""
    best = now.best
    if best is None or not best.confirmed or len(best.rounds) >= MAX_WINDOWS:
        return []
    if now.interference is not None and now.interference.busy:
        return []
    assert now.noise is not None
    undecided = [
        s.config
        for s, c in now.equivalent
        if s.confirmed
        and c.verdict == "undecided"
        and (could_decide(c, now.noise) or windows_share(c, now.noise) > _RESOLUTION_LOG)
    ]
    # Ahead (or behind) on fewer shared windows than a real difference needs: the finalists
    # changed between windows (the search's ranking moved), so the two met in one window
    # alone; one more shows whether the lead holds.
    unshown = [
        s.config
        for s in now.ranked[1:]
        if s.confirmed
        and (c := now.comparisons.get(s.config)) is not None
        and c.verdict in ("ahead", "behind")
        and c.windows < MIN_WINDOWS
    ]
    rivals = list(dict.fromkeys([*undecided, *unshown]))[:DUEL_RIVALS]
    if not rivals:
        return []
    return in_turn_order([best.config, *rivals], len(best.rounds))
