"""The verdict on what a study holds, as one value: :class:`Standing`, computed once per
pass by :func:`~._verdict.standing`, read by the loop, the progress callback, the
verdict's views (the file, the answer, the terminal) and the choice of what comes next."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from autoplace.config import PRECISIONS, Config
from autoplace.machine import Interference
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._feeding import Feeding
from autoplace.tuning._fusing import Fusing
from autoplace.tuning._margin import Comparison, Noise, Scored
from autoplace.tuning._remedy import Remedy
from autoplace.tuning._space import Arm

#: Configurations whose search score is within this of the search's best are finalists.
CONFIRM_REACH = 0.20
#: What a pick the windows never timed could not be told apart from, on the search's
#: figures alone, lies within this of it there: the closest a plain loop tells
#: configurations apart (issue 36). Also how near the cost model must put a batch it
#: predicts as good as the pick.
LIST_REACH = 0.10


def preference(objective: Objective, s: Scored) -> tuple[int, int, float]:
    """Among configurations equal beyond doubt: full precision first, then the smallest
    batch (least memory), then the better score (smallest key first)."""
    m = s.measurement
    rank = PRECISIONS.index(m.precision) if m.precision in PRECISIONS else len(PRECISIONS)
    return (rank, m.batch_size, -objective.key(s.score))


@dataclasses.dataclass(frozen=True)
class Standing:
    """The verdict on what a study holds, computed once per pass by :func:`standing`.

    Attributes:
        objective: what the scores mean.
        figures: every configuration's figures: its latest confirmation that ran (a fresh
            process's), else its latest search measurement that ran, else its latest
            failure.
        estimates: the search's drift-corrected score of each searched configuration
            (``None``: it failed): what the strategy sees.
        searched: the search's own ranking, best first: finalists are chosen from it.
        ranked: the verdict, best first: the pick, then the other confirmed finalists,
            then the rest by their search scores.
        comparisons: the pick against every other configuration ranked: the confirmed
            ones on their windows, the rest on the search's figures.
        noise: the noise of one confirmation window's score (``None``: none ran).
        search_noise: the same for the search's groups.
        windows: the confirmation windows the study holds.
        ended: the arms no batch size is left to try in, and why (see
            :mod:`._failures`): no strategy tries them further.
        inaccurate: the arms whose output deviates from float32's beyond the
            tolerance, and by how much: never ranked, so never recommended.
        unconfirmed: finalists whose confirmation failed (non-finite, a crash, ...),
            and why: never recommended; the next finalist takes the place.
        interference: how busy the machine was while the measurements the verdict rests
            on (the confirmation windows, else the search) were timed.
        remedy: what the best setting timed against the pick as it is did (see
            :mod:`._remedy`), when the pick mapped fresh memory every step.
        fusing: what the best steps per call timed against one a call did to the pick
            (see :mod:`._fusing`), when its fixed cost mattered.
        predicted: the pick against the batches the search did not measure that the cost
            model speaks for (:mod:`._predict`): never a real difference, only what the pick
            could not be told apart from.
        feeding: the pick and each other device's best fed three ways (a put each step,
            two puts in flight, the data on the device), where timed (:mod:`._feeding`).
    """

    objective: Objective
    figures: Mapping[Config, Measurement]
    estimates: Mapping[Config, float | None]
    searched: tuple[Scored, ...]
    ranked: tuple[Scored, ...]
    comparisons: Mapping[Config, Comparison] = dataclasses.field(default_factory=dict)
    noise: Noise | None = None
    search_noise: Noise | None = None
    windows: int = 0
    ended: Mapping[Arm, str] = dataclasses.field(default_factory=dict)
    inaccurate: Mapping[Arm, str] = dataclasses.field(default_factory=dict)
    unconfirmed: Mapping[Config, str] = dataclasses.field(default_factory=dict)
    interference: Interference | None = None
    remedy: Remedy | None = None
    fusing: Fusing | None = None
    predicted: Mapping[Config, Comparison] = dataclasses.field(default_factory=dict)
    feeding: Feeding | None = None

    @property
    def best(self) -> Scored | None:
        return self.ranked[0] if self.ranked else None

    @property
    def device_bests(self) -> list[Config]:
        """The best configuration of each device, in the verdict's order (the pick first)."""
        return _device_bests(self.ranked)

    @property
    def steps_per_call(self) -> int:
        """The steps per call to run the pick at: the ``K`` its windows recommend
        (:attr:`fusing`; faster beyond doubt, or ahead enough on the estimate), else 1."""
        return self.fusing.recommended if self.fusing is not None else 1

    @property
    def per_group(self) -> list[Scored]:
        """The best configuration of each (device, precision), in the verdict's order."""
        seen: set[tuple[str, str]] = set()
        rows = []
        for s in self.ranked:
            if s.group not in seen:
                seen.add(s.group)
                rows.append(s)
        return rows

    def _compared(self, confirmed: bool) -> list[tuple[Scored, Comparison]]:
        return [
            (s, self.comparisons[s.config])
            for s in self.ranked[1:]
            if s.config in self.comparisons and s.confirmed == confirmed
        ]

    @property
    def closest(self) -> tuple[Scored, Comparison] | None:
        """The configuration closest to the pick, whatever its device or precision, and the
        pick's standing against it: a confirmed finalist if any was compared (the one a
        duel decides between), else the closest on the search's figures."""
        pool = self._compared(confirmed=True) or self._compared(confirmed=False)
        return min(pool, key=lambda sc: sc[1].ratio, default=None)

    @property
    def equivalent(self) -> list[tuple[Scored, Comparison]]:
        """The configurations the pick could not be told apart from (their ratio's interval
        holds 1) or is equal to beyond doubt, closest first: confirmed finalists first, then
        those only the search measured that it saw ahead of the pick (no window measured
        them against it: nothing shows the pick as good, let alone better).

        A configuration only the search measured, which it saw behind the pick, is listed
        only where the pick itself was not timed in windows (then within :data:`LIST_REACH`
        of it on the search's figures), or on a busy machine (then any the search could
        not tell apart). The search's figures come from a worker shared with other
        configurations, which read 6-58% above a plain loop in fresh processes by an
        amount that depends on the configuration (issue 36): of the 17 such configurations
        listed within 10% of a confirmed pick in the measurement benchmark's runs of
        2026-11-26 (18:15-19:39 UTC), 11 re-measured more than 10% behind the plain loop's
        best, and none within 3% of it."""
        told = ("equal", "undecided")
        found = [sc for sc in self._compared(True) if sc[1].verdict in told]
        found.sort(key=lambda sc: sc[1].ratio)
        busy = self.interference is not None and self.interference.busy
        timed = self.best is not None and self.best.confirmed

        def listed(c: Comparison) -> bool:
            if busy:
                return True
            return c.ratio < 1 if timed else c.ratio <= 1 + LIST_REACH

        rest = [
            sc
            for sc in self._compared(False)
            if sc[1].verdict in (*told, "behind") and listed(sc[1])
        ]
        rest.sort(key=lambda sc: sc[1].ratio)
        return found + rest

    @property
    def predicted_equivalent(self) -> list[tuple[Config, Comparison]]:
        """The batches the search did not measure that the cost model says could be as good
        as the pick (their predicted ratio's interval holds 1, or lies above it) and
        predicts within :data:`LIST_REACH` of it, closest first. A prediction far from the
        measured batches has an interval wide enough to hold 1 wherever it lies: on a held-out
        encoder, every one so listed re-measured more than 10% behind (issue 36's benchmark,
        15 of 15), so the line's own figure must be near too."""
        found = [
            (c, x)
            for c, x in self.predicted.items()
            if x.verdict in ("undecided", "behind") and x.ratio <= 1 + LIST_REACH
        ]
        return sorted(found, key=lambda cx: cx[1].ratio)

    @property
    def failed(self) -> list[Measurement]:
        return [m for m in self.figures.values() if m.status != "ok"]

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


def _device_bests(ranked: Sequence[Scored]) -> list[Config]:
    seen: dict[str, Config] = {}
    for s in ranked:
        seen.setdefault(s.measurement.device, s.config)
    return list(seen.values())
