"""The verdict: what the measurements say, once per pass, as one :class:`Standing`.

The search's scores, taken at different times, are put on one scale (:mod:`._drift`).
Then the finalists are confirmed: measured again in *windows*, each finalist in a fresh
process of its own as the user's training run will be, their timed loops taking turns
across the processes, at least :data:`~._margin.MIN_WINDOWS` windows apart in time and in
different turn orders (:func:`confirmation_window`); when that leaves the pick and its
closest rival undecided, one more, longer window (:func:`duel`). The pick rests on the
windows alone: every comparison is a ratio with an interval that counts the spread
between windows, corrected for comparing several finalists (:mod:`._margin`).

Of the confirmed finalists, the one scoring best leads; a finalist it trails by a hair
(equal to it beyond doubt, the whole interval within ``1 ± EQUIVALENT``; or not told apart
from it and within ``EQUIVALENT`` at the estimate) that autoplace prefers (float32, then
the smaller batch: :func:`preference`) is picked instead: a hair's difference is no
reason to give up precision or memory, and a fixed rule makes tunes agree. Every
configuration the pick could not be told apart from is listed
(:attr:`Standing.equivalent`). The loop, the progress callback, the recommendation
document and the terminal display all read the same :class:`Standing`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from autoplace.config import Config
from autoplace.machine import Interference
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.study import History
from autoplace.tuning._drift import Effects, fit_effects
from autoplace.tuning._failures import ended_arms, inaccurate_arms, over_memory
from autoplace.tuning._feeding import feeding_of, with_feeding
from autoplace.tuning._fusing import Fusing, fusing_of
from autoplace.tuning._margin import (
    EQUIVALENT,
    NOISE_FLOOR,
    Comparison,
    Noise,
    Scored,
    compare,
    pooled_noise,
    search_noise,
    t_quantile,
    window_scores,
)
from autoplace.tuning._predict import compare_predicted, predicted
from autoplace.tuning._remedy import remedy_of
from autoplace.tuning._space import Space, arm_of
from autoplace.tuning._standing import CONFIRM_REACH, Standing, _device_bests, preference

__all__ = ["CONFIRM_REACH", "EQUIVALENT", "Standing", "standing"]


def search_fit(history: History, objective: Objective) -> Effects:
    """The search's measurements on one scale: the drift between its groups removed."""
    return fit_effects(
        [
            (c, m.interleave_id, s)
            for c, m in history.searches
            if m.status == "ok" and (s := objective.score(m))
        ]
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
    searches = search_fit(history, objective)
    estimates: dict[Config, float | None] = {c: None for c in history.figures()}
    estimates.update(searches.scores())  # type: ignore[arg-type]
    unconfirmed = _failed_confirmations(history.confirmed)
    kept = {c: ms for c, ms in history.confirmed.items() if c not in unconfirmed}
    latest = {c: _latest(ms) for c, ms in kept.items()}
    figures: dict[Config, Measurement] = {**history.figures(), **latest}
    for c, ms in history.confirmed.items():
        figures.setdefault(c, ms[-1])
    for c, ms in history.feeding.items():
        if c in figures:  # its resident and prefetched steps, each timed in full there
            figures[c] = with_feeding(figures[c], ms)
    inaccurate = inaccurate_arms(figures, max_deviation)
    too_big = over_memory(figures, space.max_memory if space is not None else None)

    def accurate(c: Config) -> bool:
        return arm_of(c) not in inaccurate and c not in too_big

    searched = sorted(
        (Scored(figures[c], s) for c, s in estimates.items() if s is not None and accurate(c)),
        key=lambda x: -objective.key(x.score),
    )
    # A finalist's slow window among three or more is weighed down (a fresh process's
    # slower mode: see ._drift), the windows' scale never below the verdict's floor.
    windows = fit_effects(
        window_scores(objective, {c: ms for c, ms in kept.items()}), robust_floor=NOISE_FLOOR
    )
    noise = pooled_noise(windows, searches) if windows.keys else None
    confirmed = [
        _confirmed(c, kept[c], windows, objective, history.feeding.get(c, ()))  # type: ignore[arg-type]
        for c in windows.keys
        if accurate(c)  # type: ignore[arg-type]
    ]
    interference = Interference.of([m for ms in kept.values() for m in ms]) or Interference.of(
        m for _, m in history.searches
    )
    contention = _contention(interference)
    ranked, comparisons = _rank(
        objective, confirmed, searched, windows, noise, searches, contention
    )
    surmised = _predicted(objective, ranked, figures, estimates, space, searches, windows)
    return Standing(
        objective=objective,
        figures=figures,
        estimates=estimates,
        searched=tuple(searched),
        ranked=tuple(ranked),
        comparisons=comparisons,
        noise=noise,
        search_noise=search_noise(searches, windows) if searches.keys else None,
        windows=len({m.interleave_id for ms in kept.values() for m in ms}),
        ended=ended_arms(figures, space) if space is not None else {},
        inaccurate=inaccurate,
        unconfirmed=unconfirmed,
        interference=interference,
        remedy=remedy_of(objective, ranked[0].config, history.remedies) if ranked else None,
        fusing=_fused(objective, ranked, figures, history, space, contention, windows),
        predicted=surmised,
        feeding=feeding_of(
            ranked[0].config if ranked else None, _device_bests(ranked), history.feeding
        ),
    )


def _fused(
    objective: Objective,
    ranked: Sequence[Scored],
    figures: Mapping[Config, Measurement],
    history: History,
    space: Space | None,
    contention: float,
    windows: Effects,
) -> Fusing | None:
    """The pick's steps-per-call windows judged (:func:`._fusing.fusing_of`), their noise
    pooled with the confirmation ``windows``', the interval widened by the machine's
    contention as every window comparison is."""
    if not ranked:
        return None
    max_memory = space.max_memory if space is not None else None
    prior = windows if windows.keys else None
    found = fusing_of(objective, ranked[0].config, figures, history.fused, max_memory, prior)
    if found is None:
        return None
    return dataclasses.replace(found, comparison=_widened(found.comparison, contention))


def _latest(ms: Sequence[Measurement]) -> Measurement:
    """A confirmed configuration's figures: its latest confirmation, with the deviation from
    float32 its first window measured (the later ones do not measure it again)."""
    latest = next(m for m in reversed(ms) if m.status == "ok")
    if latest.deviation_vs_float32 is None:
        known = next((m.deviation_vs_float32 for m in ms if m.deviation_vs_float32 is not None),
                     None)  # fmt: skip
        latest = dataclasses.replace(latest, deviation_vs_float32=known)
    return latest


def _failed_confirmations(confirmed: Mapping[Config, Sequence[Measurement]]) -> dict[Config, str]:
    """The finalists a confirmation failed for (a fresh process gave NaN, crashed, ran out
    of memory...), and the first such reason: a pick must hold in every window."""
    return {
        c: f"{bad.status} when confirmed: {bad.reason}"
        for c, ms in confirmed.items()
        if (bad := next((m for m in ms if m.status != "ok"), None)) is not None
    }


def _confirmed(
    c: Config,
    ms: Sequence[Measurement],
    windows: Effects,
    objective: Objective,
    fed: Sequence[Measurement] = (),
) -> Scored:
    ran = [m for m in ms if m.status == "ok"]
    votes = tuple(s for m in ran if (s := objective.score(m)))
    # Its figures are the study's (its deviation from float32 from its first window; its
    # resident and prefetched steps from its feeding windows, where they ran).
    return Scored(with_feeding(_latest(ms), fed), windows.score(c), votes, tuple(ran))


def _rank(
    objective: Objective,
    confirmed: list[Scored],
    searched: list[Scored],
    windows: Effects,
    noise: Noise | None,
    searches: Effects,
    contention: float = 1.0,
) -> tuple[list[Scored], dict[Config, Comparison]]:
    """The verdict's order and the pick's comparisons (see :class:`Standing`).

    On a busy machine a timed loop, a search figure or a turn of a window, can be slowed by
    a burst of other processes' load by as much as they take from it: ``contention`` (see
    :func:`_contention`). So every comparison has its interval widened by that factor
    either way before it is judged, and every one still undecided is a configuration the
    pick could not be told apart from, however far its estimate
    (:attr:`Standing.equivalent`). Both from 2026-11-25's busy runs: a lucky search figure
    left a pick alone, listing nothing, that four other tunes did not pick; and a busy
    LSTM tune's "faster" over float32 at 64, 1.08 in two windows, read 0.99 re-measured
    on the idle machine."""
    confirmed.sort(key=lambda s: -objective.key(s.score))
    rest = [s for s in searched if s.config not in {x.config for x in confirmed}]
    if confirmed:
        assert noise is not None
        per_window = _per_window(confirmed, objective)

        def against(pick: Scored) -> dict[Config, Comparison]:
            others = [s for s in confirmed if s is not pick]
            return {
                s.config: _widened(
                    compare(
                        objective,
                        windows,
                        noise,
                        pick.config,
                        s.config,
                        per_window=per_window,
                        basis="windows in fresh processes",
                    ),
                    contention,
                )
                for s in others
            }

        leader = confirmed[0]
        ahead = against(leader)
        equals = [leader] + [s for s in confirmed[1:] if _a_hair(ahead[s.config])]
        pick = min(equals, key=lambda s: preference(objective, s))
        comparisons = ahead if pick is leader else against(pick)
        ranked = [pick, *(s for s in confirmed if s is not pick), *rest]
    else:
        ranked, comparisons = list(searched), {}
    if ranked and ranked[0].config in searches:
        pick, noise_s = ranked[0], search_noise(searches, windows)
        # Every other searched configuration is compared on the search's figures; the
        # correction for several comparisons counts the near contenders only (within
        # CONFIRM_REACH of the pick's search score, or three of its noises on a noisy
        # machine): the rest trail it clearly, and are compared only to say by how much.
        reach = near_reach(noise_s)
        mine = searches.score(pick.config)
        others = [s for s in rest if s is not pick and s.config in searches]
        near = [s for s in others if objective.gain(mine, searches.score(s.config)) <= reach]
        for s in others:
            found = compare(
                objective,
                searches,
                noise_s,
                pick.config,
                s.config,
                comparisons=max(len(near), 1),
                basis="search figures",
            )
            comparisons[s.config] = _widened(found, contention)
    return ranked, comparisons


def _contention(interference: Interference | None) -> float:
    """How much slower than it would run alone a timed loop may read on a busy machine:
    ``1 / cpu_share``, the CPU the measured processes got against what they would have
    got alone (0.5 beside two spinning processes on two cores: 2x); 1 on a quiet one."""
    if interference is None or not interference.busy or not interference.cpu_share:
        return 1.0
    return max(1.0, 1.0 / min(1.0, interference.cpu_share))


def _widened(c: Comparison, factor: float) -> Comparison:
    """``c`` with its interval widened by ``factor`` either way, and judged again: what
    it still shows beyond doubt (``faster`` and ``slower`` for windows, ``ahead`` and
    ``behind`` for the search), else undecided."""
    if factor <= 1.0:
        return c
    low, high = c.low / factor, c.high * factor
    if low > 1:
        verdict = c.verdict if c.verdict in ("faster", "ahead") else "ahead"
    elif high < 1:
        verdict = c.verdict if c.verdict in ("slower", "behind") else "behind"
    else:
        verdict = "undecided"
    return dataclasses.replace(c, low=low, high=high, verdict=verdict)  # type: ignore[arg-type]


def _predicted(
    objective: Objective,
    ranked: Sequence[Scored],
    figures: Mapping[Config, Measurement],
    estimates: Mapping[Config, float | None],
    space: Space | None,
    searches: Effects,
    windows: Effects,
) -> dict[Config, Comparison]:
    """The pick against each batch the cost model predicts (see :mod:`._predict`), on the
    search's scale and noise.

    A prediction starts from its arm's nearest measured batch. Where that batch was timed
    in windows beside the pick, it starts from the windows' ratio to the pick, not the
    search's figure. The search's worker, shared with other configurations, read the
    held-out encoder's configurations from 0.69 to 1.30 times a plain loop's (issue 36):
    its bfloat16 at batch 32, 1.09 times the pick in the search and 0.79 in the windows,
    had bfloat16 at 1024 and 4096 listed as good as the pick."""
    if not ranked or space is None or ranked[0].config not in searches:
        return {}
    pick = ranked[0].config
    mine = searches.score(pick)
    anchored = dict(estimates)
    if pick in windows:
        for c in windows.keys:
            if c != pick and windows.shared_groups(c, pick):
                anchored[c] = mine * windows.score(c) / windows.score(pick)  # type: ignore[index]
    found = predicted(figures, anchored, space, objective)
    if not found:
        return {}
    noise = search_noise(searches, windows)
    reach = near_reach(noise)
    near = {c: x for c, x in found.items() if objective.gain(mine, x.score) <= reach + x.error}
    return {c: compare_predicted(objective, mine, x, noise, len(near)) for c, x in near.items()}


def near_reach(noise: Noise) -> float:
    """How far behind the pick, on the search's figures, a configuration may be and still
    count as a near contender: ``CONFIRM_REACH``, or, on a noisy machine, the half-width of
    the 95% interval of one difference of two search figures (Student's t over the noise's
    degrees of freedom: the less known the noise, the further). Only near contenders are
    listed as what the pick could not be told apart from, and counted in the correction for
    several comparisons."""
    half = t_quantile(0.975, noise.df) * noise.sigma * math.sqrt(2)
    return max(CONFIRM_REACH, math.expm1(half))


def _a_hair(c: Comparison) -> bool:
    """Whether the leader's lead over another is no reason to give up precision or memory:
    equal beyond doubt, or not told apart and within ``EQUIVALENT`` at the estimate."""
    return c.verdict == "equal" or (c.verdict == "undecided" and c.ratio <= 1 + EQUIVALENT)


def _per_window(
    confirmed: Sequence[Scored], objective: Objective
) -> dict[Config, dict[str, float]]:
    """Each confirmed configuration's log score in each window it was timed in."""
    return {
        s.config: {
            m.interleave_id: math.log(score)
            for m in s.rounds
            if m.interleave_id and (score := objective.score(m))
        }
        for s in confirmed
    }
