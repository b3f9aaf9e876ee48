"""The confirmation: the search's best few, timed again in windows, each in a fresh
process of its own as the training run will be, their loops taking turns across the
processes, in a turn order of their own each window; the pick rests on those windows alone.

:class:`Ranking` is what they say: the finalists ordered by their windows' figures, the
pick and how it compares with each (:mod:`._compare`), and the group the machine cannot
order: every finalist within its resolution of the pick. Of finalists a hair apart
(:data:`HAIR`) the preferred one is picked (float32, then the smaller batch): a hair's
difference is no reason to give up precision or memory, and a fixed rule makes tunes agree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace import units
from autoplace.config import PRECISIONS, Config
from autoplace.findings import CannotTellApart, Finding
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.settings import MeasureSettings
from autoplace.tuning._compare import Comparison, Spread, compare, fit
from autoplace.tuning._phase import BLOCKED, Context, Group, windows_of
from autoplace.tuning._scored import Scored
from autoplace.tuning._search import REACH, quick, ranking

#: The windows every finalist is timed in: the fewest in which a lead can be seen to hold.
WINDOWS = 2
#: The cap of the ranked loop per configuration in a window. A verdict rests on its
#: windows, not their length: what moves a figure is the spread between windows, which a
#: longer window does not shrink (docs/search.md).
CAP_S = 0.25
#: A window's fresh process first runs its loop untimed for this long: a fresh process's
#: first chunks ran 20-50% slower than its later ones (its allocator's first buffers).
WARMUP_S = 0.1
#: The chunks a window's ranked loop times at least: their median leaves a slow first out.
CHUNKS = 6
#: Finalists within this of the leader are a hair apart: the preferred one is picked.
HAIR = 0.02


def window_settings(user: MeasureSettings, objective: Objective) -> MeasureSettings:
    """How a window times its processes (the other phases' windows too): after a warm-up,
    at least :data:`CHUNKS` chunks of the ranked loop."""
    return dataclasses.replace(quick(user, objective), warmup_s=WARMUP_S, min_chunks=CHUNKS)


def finalists(
    searched: Sequence[Scored], objective: Objective, k: int, failed: Sequence[Config] = ()
) -> list[Config]:
    """Up to ``k`` of the search's ranked configurations within :data:`REACH` of its best,
    best first, leaving out those whose confirmation ``failed`` (the next takes the place);
    one slot goes to the best of another (device, precision) if one is that close."""
    usable = [s for s in searched if s.config not in failed]
    if not usable:
        return []
    top = usable[0].score
    close = [s for s in usable if objective.gain(top, s.score) <= REACH]
    chosen = close[:k]
    if chosen and k >= 2:
        other = next((s for s in close if s.group != chosen[0].group), None)
        if other is not None and other not in chosen:
            chosen[-1] = other
    return [s.config for s in chosen]


class Confirm:
    """The confirmation: see the module docstring."""

    name = "confirm"

    def settings(self, user: MeasureSettings, objective: Objective) -> MeasureSettings:
        confirming = dataclasses.replace(window_settings(user, objective), deviation=user.deviation)
        return ranking(confirming, user, objective, CAP_S)

    def next(self, ctx: Context) -> Group | str | None:
        """The finalists' next window, in its turn order (as ranked in even windows,
        reversed in odd ones), or none once each has :data:`WINDOWS` windows that ran.
        All of them are timed together in each window (a comparison rests on windows both
        ran in), so one confirmed before (e.g. by another worker) is timed again with the
        others; while another worker measures any of them, this one waits."""
        if ctx.plan.confirm <= 0:
            return BLOCKED  # the search's pick stands: nothing follows it
        now = ctx.standing
        chosen = finalists(now.searched, now.objective, ctx.plan.confirm, list(now.unconfirmed))
        if not chosen:
            return None
        if any(c in ctx.history.pending for c in chosen):
            return BLOCKED
        done = {c: windows_of(ctx.done(self.name, c)) for c in chosen}
        if min(done.values()) >= WINDOWS:
            return None
        order = chosen if min(done.values()) % 2 == 0 else chosen[::-1]
        return Group.of(self.name, order[: ctx.room], True)

    def judge(self, ctx: Context) -> None:
        """The windows decide the pick: the standing ranks them (:func:`rank`)."""
        return None


def failed_windows(confirmed: Mapping[Config, Sequence[Measurement]]) -> dict[Config, str]:
    """The finalists a window failed for (a fresh process gave NaN, crashed, ran out of
    memory...), with the first such reason: a pick must hold in every window."""
    return {
        c: f"{bad.status} when confirmed: {bad.reason}"
        for c, ms in confirmed.items()
        if (bad := next((m for m in ms if m.status != "ok"), None)) is not None
    }


def preference(s: Scored) -> tuple[int, int]:
    """Of finalists a hair apart: float32 first, then the smaller batch."""
    m = s.measurement
    rank = PRECISIONS.index(m.precision) if m.precision in PRECISIONS else len(PRECISIONS)
    return (rank, m.batch_size)


@dataclasses.dataclass(frozen=True)
class Ranking:
    """What the confirmation's windows say (see the module docstring).

    Attributes:
        objective: what the scores mean.
        ranked: the confirmed finalists, the pick first, then by their windows' figure.
        comparisons: the pick against each other confirmed finalist.
        spread: how far a figure moves from one window to the next here.
        leader: the finalist its windows put first, where a hair behind it the pick is
            preferred to it (``None``: the pick leads).
        busy: whether the machine was busy while the windows were timed.
    """

    objective: Objective
    ranked: tuple[Scored, ...]
    comparisons: Mapping[Config, Comparison]
    spread: Spread
    leader: Scored | None = None
    busy: bool = False

    @property
    def pick(self) -> Scored:
        return self.ranked[0]

    @property
    def group(self) -> list[tuple[Scored, Comparison]]:
        """The finalists the pick cannot be told apart from here, closest first."""
        found = [(s, self.comparisons[s.config]) for s in self.ranked[1:]]
        return sorted((sc for sc in found if sc[1].verdict == "within"), key=lambda sc: sc[1].ratio)

    @property
    def closest(self) -> tuple[Scored, Comparison] | None:
        found = [(s, self.comparisons[s.config]) for s in self.ranked[1:]]
        return min(found, key=lambda sc: sc[1].ratio, default=None)

    @property
    def resolution(self) -> float | None:
        """The widest half-width among the pick's comparisons: how close two
        configurations can be and still be ordered here."""
        return max((c.resolution for c in self.comparisons.values()), default=None)

    def sentences(self) -> tuple[str, ...]:
        """The verdict in words: the pick and its figure, why it over a faster one (where a
        hair behind it), the group it cannot be told apart from, what it beats beyond doubt."""
        pick, unit = self.pick, self.objective.unit
        windows = len(pick.windows)
        out: list[str] = [
            f"{pick.config.label()} wins ({self.objective.name}: "
            f"{units.score(pick.score, unit)}, the geometric mean of {windows} window"
            f"{'s' if windows != 1 else ''} in fresh processes)."
        ]
        if windows < WINDOWS:
            out.append(
                f"It rests on {windows} window{'s' if windows != 1 else ''}, not the {WINDOWS} "
                "the confirmation times: the tune stopped first (its --trials or --timeout "
                "budget, or an interrupt), or a window failed; a lead seen once may not hold, "
                "and tuning again into the same study times the rest."
            )
        out += self.preferred()
        out += self.group_sentences()
        out += [
            f"The pick is {c.sentence(s.config.label())}."
            for s, c in self.comparisons_by_ratio()
            if c.verdict != "within"
        ]
        return tuple(out)

    def preferred(self) -> tuple[str, ...]:
        """Why the pick, where the windows put another a hair ahead of it."""
        if self.leader is None:
            return ()
        ahead = self.comparisons[self.leader.config]
        return (
            f"{self.leader.config.label()} ran {1 / ahead.ratio:.3f}x as fast in the windows, "
            f"within {HAIR:.0%}: of configurations a hair apart autoplace prefers float32, "
            "then the smaller batch.",
        )

    def group_sentences(self) -> tuple[str, ...]:
        """What the pick cannot be told apart from here, each with the pick's ratio to it,
        within the machine's resolution; or, where the windows carry no figure (a busy
        machine), that they cannot tell them apart."""
        group = self.group
        if not group:
            return ()
        windows = max(c.windows for _, c in group)
        if not all(c.carried for _, c in group):
            names = ", ".join(s.config.label() for s, _ in group)
            why = "busy: it" if self.busy else "It"
            return (
                f"{why} cannot tell {names} from the pick: their ratios moved by more than 2x "
                f"between the {windows} windows in fresh processes; any of them will do here.",
            )
        named = ", ".join(f"{s.config.label()} (the pick {c.ratio:.2f}x it)" for s, c in group)
        return (
            f"Within this machine's ±{self.resolution:.0%} (how far a ratio of two moves between "
            f"its {windows} windows in fresh processes), the pick cannot be told apart from "
            f"{named}: any of these will do here.",
        )

    def comparisons_by_ratio(self) -> list[tuple[Scored, Comparison]]:
        found = [(s, self.comparisons[s.config]) for s in self.ranked[1:]]
        return sorted(found, key=lambda sc: sc[1].ratio)

    def findings(self, machine: str | None = None) -> tuple[Finding, ...]:
        """That the pick cannot be told apart from others, where it cannot (``machine``:
        what the machine showed meanwhile, in words)."""
        group = self.group
        if not group:
            return ()
        return (
            CannotTellApart(
                pick=self.pick.config.label(),
                others=tuple(s.config.label() for s, _ in group),
                within=self.resolution,
                windows=max(c.windows for _, c in group),
                quiet=not self.busy,
                machine=machine,
            ),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "windows": len(self.pick.windows),
            "spread": {"sigma": self.spread.sigma, "df": self.spread.df},
            "resolution": self.resolution,
            "busy": self.busy,
        }


def rank(
    objective: Objective,
    confirmed: Sequence[Scored],
    prior: Spread | None,
    busy: bool,
) -> Ranking | None:
    """The ranking of the ``confirmed`` finalists (each with its windows), their windows'
    spread pooled with ``prior`` (the search's), on a ``busy`` machine or not."""
    if not confirmed:
        return None
    per = {s.config: scores_by_window(objective, s.windows) for s in confirmed}
    spread = fit(per).spread.pooled(prior)
    maximize = objective.direction == "maximize"

    def against(pick: Scored) -> dict[Config, Comparison]:
        mine = per[pick.config]
        return {
            s.config: compare(mine, per[s.config], spread, maximize=maximize, busy=busy)
            for s in confirmed
            if s is not pick
        }

    ordered = sorted(confirmed, key=lambda s: -objective.key(s.score))
    leader = ordered[0]
    ahead = against(leader)
    hair = [leader, *(s for s in ordered[1:] if ahead[s.config].ratio <= 1 + HAIR)]
    pick = min(hair, key=preference)
    ranked = (pick, *(s for s in ordered if s is not pick))
    return Ranking(objective, ranked, against(pick), spread,
                   None if pick is leader else leader, busy)  # fmt: skip


def scores_by_window(objective: Objective, ms: Sequence[Measurement]) -> dict[str, float]:
    """``{window: score}`` of the measurements that ran, each timed in a window."""
    return {
        m.interleave_id: s
        for m in ms
        if m.status == "ok" and m.interleave_id and (s := objective.score(m))
    }
