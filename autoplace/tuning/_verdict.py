"""The verdict: what the measurements say, once per pass, as one :class:`Standing`.

Scores taken at different times are put on one scale (:mod:`._drift`); finalists
timed in turns are compared turn by turn (:func:`margin`: a sign test on the
per-turn ratios, which cancels drift); of the finalists no other beats beyond the
noise, those within :data:`EQUIVALENT` of the best are equals, and of equals the
preferred one wins (:func:`preference`: float32, then the smaller batch). The loop,
the progress callback, the recommendation document and the terminal display all
read the same :class:`Standing`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.study import History
from autoplace.tuning._drift import corrected_scores
from autoplace.tuning._failures import ended_arms, inaccurate_arms, over_memory
from autoplace.tuning._margin import Comparison, Scored, margin
from autoplace.tuning._space import Arm, Space, arm_of

#: Configurations whose search score is within this of the search's best are finalists.
CONFIRM_REACH = 0.20
#: Finalists that no other beats beyond the noise and that trail the best of them by
#: at most this are equals; of equals, the preferred one wins (see :func:`preference`).
EQUIVALENT = 0.02
#: Among finalists equal within the noise, the precision preferred first.
PRECISION_PREFERENCE = ("float32", "bfloat16", "float16")


def preference(objective: Objective, s: Scored) -> tuple[int, int, float]:
    """Among configurations equal within the noise: full precision first, then the
    smallest batch (least memory), then the better score (smallest key first)."""
    m = s.measurement
    rank = PRECISION_PREFERENCE.index(m.precision) if m.precision in PRECISION_PREFERENCE else 9
    return (rank, m.batch_size, -objective.key(s.score))


def in_the_running(ranked: Sequence[Scored], objective: Objective) -> list[Scored]:
    """The confirmed configurations no other confirmed one beats beyond the noise."""
    confirmed = [s for s in ranked if s.confirmed]
    return [
        s
        for s in confirmed
        if not any(o is not s and margin(objective, o, s).significant for o in confirmed)
    ]


def _lead(running: Sequence[Scored], objective: Objective) -> Scored:
    """Of confirmed configurations, the one ahead of most others in their turn-by-turn
    comparison (:func:`margin`), then the best scored: the comparison that decides
    significance decides the order too."""

    def standing(s: Scored) -> tuple[int, float]:
        ahead = sum(margin(objective, s, o).margin > 0 for o in running if o is not s)
        return ahead, objective.key(s.score)

    return max(running, key=standing)


def rank(
    figures: Mapping[Config, Measurement],
    objective: Objective,
    verdicts: Mapping[Config, Scored] | None = None,
    estimates: Mapping[Config, float | None] | None = None,
) -> list[Scored]:
    """Measured configurations, best first.

    Confirmed ones (in ``verdicts``) carry their confirmed score and rank before the
    rest, so a quick search measurement never beats a confirmed one by a lucky draw;
    the rest carry the search's drift-corrected score (``estimates``; their own
    measurement's score where it has none). A winner by less than the noise is no
    winner, and one by a hair is no reason to give up precision or memory: of the
    confirmed configurations that no other beats beyond the noise, those within
    ``EQUIVALENT`` of the best of them are equals, and the preferred of those (see
    :func:`preference`) leads.
    """
    verdicts, estimates = verdicts or {}, estimates or {}
    out = []
    for c, m in figures.items():
        if c in verdicts:
            out.append(verdicts[c])
        elif m.status == "ok":
            score = estimates.get(c)
            out.append(Scored(m, objective.score(m) if score is None else score))  # type: ignore[arg-type]
    ranked = sorted(out, key=lambda x: (not x.confirmed, -objective.key(x.score)))
    running = in_the_running(ranked, objective)
    if running:
        lead = _lead(running, objective)
        equals = [s for s in running if margin(objective, lead, s).margin <= EQUIVALENT]
        chosen = min(equals, key=lambda s: preference(objective, s))
        ranked = [chosen, *(s for s in ranked if s is not chosen)]
    return ranked


def search_estimates(history: History, objective: Objective) -> dict[Config, float | None]:
    """The search's score of each configuration, drift between its groups removed
    (see :mod:`._drift`); ``None`` for one that never ran."""
    scored = ((c, m, objective.score(m)) for c, m in history.searches if m.status == "ok")
    fitted = corrected_scores([(c, m.interleave_id, s) for c, m, s in scored if s])
    return {c: fitted.get(c) for c in history.figures()}  # type: ignore[misc]


def _verdicts(
    confirmed: Mapping[Config, Sequence[Measurement]], objective: Objective
) -> tuple[dict[Config, Measurement], dict[Config, Scored]]:
    """Each confirmed configuration's figures, and the verdict on it.

    A confirmed configuration's score rests on its confirmations alone: they were
    timed in turns with the other finalists, so drift between the search's
    measurements does not decide, and where there were several (a duel), the drift
    between them is fitted out as the search's is (:mod:`._drift`). Its figures are
    those of its latest confirmation: a real measurement.
    """
    ran = {c: [m for m in ms if m.status == "ok"] for c, ms in confirmed.items()}
    fitted = corrected_scores(
        [
            (c, m.interleave_id, objective.score(m))
            for c, ms in ran.items()
            for m in ms
            if objective.score(m)
        ]
    )
    figures, verdicts = {}, {}
    for c, ms in confirmed.items():
        figures[c] = ran[c][-1] if ran[c] else ms[-1]
        if c in fitted:
            votes = tuple(objective.score(m) for m in ran[c])
            verdicts[c] = Scored(ran[c][-1], fitted[c], votes, tuple(ran[c]))  # type: ignore[arg-type]
    return figures, verdicts


@dataclasses.dataclass(frozen=True)
class Standing:
    """The verdict on what a study holds, computed once per pass by :func:`standing`.

    Attributes:
        objective: what the scores mean.
        figures: every configuration's figures: its latest confirmation, else its
            latest search measurement that ran, else its latest failure.
        estimates: the search's drift-corrected score of each searched configuration
            (``None``: it failed): what the strategy sees.
        searched: the search's own ranking, best first: finalists are chosen from it.
        ranked: the verdict, best first: confirmed configurations first, the
            preferred of equals leading.
        running: the confirmed configurations no other beats beyond the noise.
        ended: the arms whose failures do not depend on the batch size, and why
            (see :mod:`._failures`): no strategy tries them further.
        inaccurate: the arms whose output deviates from float32's beyond the
            tolerance, and by how much: never ranked, so never recommended.
    """

    objective: Objective
    figures: Mapping[Config, Measurement]
    estimates: Mapping[Config, float | None]
    searched: tuple[Scored, ...]
    ranked: tuple[Scored, ...]
    running: tuple[Scored, ...]
    ended: Mapping[Arm, str] = dataclasses.field(default_factory=dict)
    inaccurate: Mapping[Arm, str] = dataclasses.field(default_factory=dict)

    @property
    def best(self) -> Scored | None:
        return self.ranked[0] if self.ranked else None

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

    @property
    def runner_up(self) -> tuple[Scored, Comparison] | None:
        """The best of another (device, precision), and the winner's margin over it."""
        rows = self.per_group
        if len(rows) < 2:
            return None
        return rows[1], margin(self.objective, rows[0], rows[1])

    @property
    def within_noise(self) -> list[tuple[Scored, Comparison]]:
        """The finalists the confirmed winner does not beat beyond the noise."""
        best = self.best
        if best is None or not best.confirmed:
            return []
        return [(s, margin(self.objective, best, s)) for s in self.running if s is not best]

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


def standing(
    history: History,
    objective: Objective,
    space: Space | None = None,
    max_deviation: float | None = None,
) -> Standing:
    """The verdict on ``history`` (of configurations in ``space``): see :class:`Standing`.

    A lower precision that deviates from float32 by more than ``max_deviation`` is left
    out of both rankings (see :func:`._failures.inaccurate_arms`).
    """
    estimates = search_estimates(history, objective)
    confirmed_figures, verdicts = _verdicts(history.confirmed, objective)
    figures = {**history.figures(), **confirmed_figures}
    inaccurate = inaccurate_arms(figures, max_deviation)
    too_big = over_memory(figures, space.max_memory if space is not None else None)

    def accurate(found: Mapping[Config, Measurement]) -> dict[Config, Measurement]:
        return {c: m for c, m in found.items() if arm_of(c) not in inaccurate and c not in too_big}

    ranked = rank(accurate(figures), objective, verdicts, estimates)
    return Standing(
        objective=objective,
        figures=figures,
        estimates=estimates,
        searched=tuple(rank(accurate(history.figures()), objective, estimates=estimates)),
        ranked=tuple(ranked),
        running=tuple(in_the_running(ranked, objective)),
        ended=ended_arms(figures, space) if space is not None else {},
        inaccurate=inaccurate,
    )


def incumbent(standing: Standing) -> Config | None:
    """The configuration the search scores best so far, if any ran."""
    ran = [c for c, s in standing.estimates.items() if s is not None]
    return max(ran, key=lambda c: standing.objective.key(standing.estimates[c]), default=None)  # type: ignore[arg-type]


def finalists(searched: Sequence[Scored], objective: Objective, k: int) -> list[Config]:
    """Up to ``k`` of the search's ranked configurations within ``CONFIRM_REACH`` of its
    best, best first; one slot goes to the best of another (device, precision) if one
    is that close."""
    if not searched:
        return []
    close = [s for s in searched if objective.gain(searched[0].score, s.score) <= CONFIRM_REACH]
    chosen = close[:k]
    if chosen and k >= 2:
        other = next((s for s in close if s.group != chosen[0].group), None)
        if other is not None and other not in chosen:
            chosen[-1] = other
    return [s.config for s in chosen]


def finalists_to_confirm(
    searched: Sequence[Scored],
    confirmed: Mapping[Config, Sequence[Measurement]],
    objective: Objective,
    k: int,
    taken: frozenset[Config],
) -> list[Config]:
    """The finalists to measure together, or none once each has a confirmation.

    ``searched`` is the search's standing (its drift-corrected scores, best first).
    While any finalist lacks a confirmation, all of them are measured together (those
    confirmed before, e.g. by another worker, get another): a comparison is fair only
    within one interleaved measurement. While any finalist is being measured (``taken``:
    another worker confirming them), none: the study is confirmed once, not once per
    worker, and this worker waits for that result. Finalists are chosen on the search's own
    measurements, so a confirmation that reshuffles the ranking sets off no more.
    """
    chosen = finalists(searched, objective, k)
    if any(c in taken for c in chosen):
        return []  # another worker is confirming them: the study's confirmation is its
    if all(confirmed.get(c) for c in chosen):
        return []
    return chosen


def duel(standing: Standing) -> list[Config]:
    """The winner and its closest challenger, to be timed in turns once more and for
    longer, when the confirmation did not tell them apart beyond the noise: whether
    one is ahead, or within ``EQUIVALENT`` (so that the preferred one may win), then
    rests on every turn of both. None when the winner is beyond doubt, or once the
    finalists have had their duel."""
    objective = standing.objective
    confirmed = [s for s in standing.ranked if s.confirmed]
    if len({m.interleave_id for s in confirmed for m in s.rounds}) != 1:
        return []
    best = confirmed[0]
    others = [s for s in standing.running if s is not best]
    if not others:
        return []
    challenger = min(others, key=lambda s: margin(objective, best, s).margin)
    if margin(objective, best, challenger).significant:
        return []
    return [best.config, challenger.config]
