"""What a study holds, judged once per pass as one value: :class:`Standing`.

The search's figures are put on one scale (:func:`._search.estimates`) and ranked; the
finalists' windows rank them again and decide the pick (:func:`._confirm.rank`); then each
phase that follows the pick judges its own measurements (:data:`._phases.AFTER_PICK`). The
loop, the progress callback, the recommendation file, the answer and the terminal all read
the same standing.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence

from autoplace import units
from autoplace.config import Arm, Config
from autoplace.machine import Interference
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.study import History
from autoplace.tuning._compare import Comparison, Spread
from autoplace.tuning._confirm import Ranking, failed_windows, rank
from autoplace.tuning._failures import ended_arms, inaccurate_arms, over_memory
from autoplace.tuning._feeding import Feeding, with_feeding
from autoplace.tuning._fusing import Fusing, Untimed
from autoplace.tuning._phase import Context, Result
from autoplace.tuning._plan import Plan
from autoplace.tuning._scored import Scored
from autoplace.tuning._search import estimates


@dataclasses.dataclass(frozen=True)
class Standing:
    """The verdict on what a study holds.

    Attributes:
        objective: what the scores mean.
        figures: every configuration's figures: its latest window that ran (a fresh
            process's), else its latest search measurement that ran, else its latest
            failure; the pick's resident and prefetched steps from its feeding windows.
        estimates: the search's score of each searched configuration on one scale
            (``None``: it failed): what the strategy sees.
        searched: the search's ranking, best first: the finalists are chosen from it.
        ranking: what the confirmation's windows say (``None``: none ran).
        search_spread: how far the search's figures move from one group to the next.
        ended: the arms no batch size is left to try in, and why.
        inaccurate: the arms whose output strays from float32's beyond the tolerance.
        unconfirmed: finalists a window failed for, and why: never recommended.
        interference: how busy the machine was while the measurements the pick rests on
            (the windows, else the search) were timed.
        results: what each phase after the pick found, by phase name.
    """

    objective: Objective
    figures: Mapping[Config, Measurement]
    estimates: Mapping[Config, float | None]
    searched: tuple[Scored, ...]
    ranking: Ranking | None = None
    search_spread: Spread | None = None
    ended: Mapping[Arm, str] = dataclasses.field(default_factory=dict)
    inaccurate: Mapping[Arm, str] = dataclasses.field(default_factory=dict)
    unconfirmed: Mapping[Config, str] = dataclasses.field(default_factory=dict)
    interference: Interference | None = None
    results: Mapping[str, Result] = dataclasses.field(default_factory=dict)

    @property
    def best(self) -> Scored | None:
        if self.ranking is not None:
            return self.ranking.pick
        return self.searched[0] if self.searched else None

    @property
    def ranked(self) -> tuple[Scored, ...]:
        """The pick, the other confirmed finalists, then the rest by their search scores."""
        confirmed = self.ranking.ranked if self.ranking is not None else ()
        timed = {s.config for s in confirmed}
        return (*confirmed, *(s for s in self.searched if s.config not in timed))

    @property
    def busy(self) -> bool:
        return self.interference is not None and self.interference.busy

    @property
    def per_group(self) -> list[Scored]:
        """The best configuration of each (device, precision), in the verdict's order."""
        seen: dict[tuple[str, str], Scored] = {}
        for s in self.ranked:
            seen.setdefault(s.group, s)
        return list(seen.values())

    @property
    def device_bests(self) -> list[Config]:
        """The best configuration of each device, in the verdict's order (the pick first)."""
        seen: dict[str, Config] = {}
        for s in self.ranked:
            seen.setdefault(s.measurement.device, s.config)
        return list(seen.values())

    @property
    def fusing(self) -> Fusing | Untimed | None:
        found = self.results.get("fuse")
        return found if isinstance(found, Fusing | Untimed) else None

    @property
    def fused(self) -> Comparison | None:
        """The recommended steps per call against one a call, where timed."""
        found = self.results.get("fuse")
        return found.comparison if isinstance(found, Fusing) else None

    @property
    def feeding(self) -> Feeding | None:
        found = self.results.get("feeding")
        return found if isinstance(found, Feeding) else None

    @property
    def steps_per_call(self) -> int:
        """The steps per call to run the pick at (its fusing windows'), else 1."""
        return self.fusing.recommended if self.fusing is not None else 1

    @property
    def failed(self) -> list[Measurement]:
        return [m for m in self.figures.values() if m.status != "ok"]

    def above_pick(self) -> tuple[str, ...]:
        """Why a row of the table of each (device, precision)'s best reads a better search
        figure than the pick's (the table shows the search's figures on one scale, and the
        windows' beside them): the windows overruled the search, with both figures; or the
        row was never timed in windows, and why. Empty where the pick leads the search."""
        best, objective = self.best, self.objective
        if best is None or best.searched is None or self.ranking is None:
            return ()
        unit, out = objective.unit, []
        for s in self.per_group[1:]:
            if s.searched is None or not objective.better(s.searched, best.searched):
                continue
            read = (
                f"{s.config.label()} read {units.score(s.searched, unit)} in the search, above "
                f"the pick's {units.score(best.searched, unit)} there"
            )
            c = self.ranking.comparisons.get(s.config)
            if c is not None:
                out.append(
                    f"{read}; in {c.windows} windows in fresh processes, as the training run "
                    f"will be, the pick ran {c.figure()} as fast as it: the windows overruled "
                    "the search."
                )
            else:
                why = self.unconfirmed.get(s.config, "it was not among the finalists")
                out.append(f"{read}; it was not timed in windows ({why}).")
        return tuple(out)

    def best_where(self, device: str | None = None, width: int | None = None) -> Scored | None:
        """The best configuration on ``device`` / of ``width`` (``None``: any)."""
        return next(
            (
                s
                for s in self.ranked
                if (device is None or s.measurement.device == device)
                and (width is None or s.measurement.width == width)
            ),
            None,
        )


def standing(history: History, plan: Plan) -> Standing:
    """The verdict on ``history`` under ``plan`` (see :class:`Standing`). A lower precision
    that strays from float32 by more than the plan's tolerance, or a configuration over its
    memory, is left out of both rankings."""
    from autoplace.tuning._phases import AFTER_PICK

    objective, space = plan.objective, plan.space
    search = estimates(history, objective)
    est: dict[Config, float | None] = dict.fromkeys(history.figures())
    est.update({c: math.exp(e) for c, e in search.effects.items()})
    windows = history.of("confirm")
    unconfirmed = failed_windows(windows)
    kept = {c: ms for c, ms in windows.items() if c not in unconfirmed}
    figures: dict[Config, Measurement] = {**history.figures()}
    figures.update({c: _latest(ms) for c, ms in kept.items()})
    for c, ms in windows.items():
        figures.setdefault(c, ms[-1])
    for c, ms in history.of("feeding").items():
        if c in figures:  # its resident and prefetched steps, each timed in full there
            figures[c] = with_feeding(figures[c], ms)
    inaccurate = inaccurate_arms(figures, plan.max_deviation)
    too_big = over_memory(figures, space.max_memory)

    def accurate(c: Config) -> bool:
        return c.arm not in inaccurate and c not in too_big

    searched = sorted(
        (Scored(figures[c], s, s) for c, s in est.items() if s is not None and accurate(c)),
        key=lambda x: -objective.key(x.score),
    )
    interference = Interference.of(m for ms in kept.values() for m in ms) or Interference.of(
        m for _, m in history.searches
    )
    busy = interference is not None and interference.busy
    confirmed = [
        Scored(figures[c], _geomean(votes), est.get(c), ran, votes)
        for c, ms in kept.items()
        if accurate(c)
        and (ran := tuple(m for m in ms if m.status == "ok"))
        and (votes := tuple(s for m in ran if (s := objective.score(m))))
    ]
    now = Standing(
        objective=objective,
        figures=figures,
        estimates=est,
        searched=tuple(searched),
        ranking=rank(objective, confirmed, search.spread, busy),
        search_spread=search.spread,
        ended=ended_arms(figures, space),
        inaccurate=inaccurate,
        unconfirmed=unconfirmed,
        interference=interference,
    )
    results: dict[str, Result] = {}
    for phase in AFTER_PICK:
        ctx = Context(plan, history, dataclasses.replace(now, results=dict(results)), 0)
        found = phase.judge(ctx)
        if found is not None:
            results[phase.name] = found
    return dataclasses.replace(now, results=results)


def _latest(ms: Sequence[Measurement]) -> Measurement:
    """A confirmed configuration's figures: its latest window that ran, with the deviation
    from float32 its first window measured (later ones do not measure it again)."""
    latest = next((m for m in reversed(ms) if m.status == "ok"), ms[-1])
    if latest.deviation_vs_float32 is None:
        known = next((m.deviation_vs_float32 for m in ms if m.deviation_vs_float32 is not None),
                     None)  # fmt: skip
        latest = dataclasses.replace(latest, deviation_vs_float32=known)
    return latest


def _geomean(scores: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(s) for s in scores))
