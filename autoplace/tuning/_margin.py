"""How far one configuration beats another, with an interval that holds minutes later.

A configuration's score is only as good as the windows it was measured in. Inside one
window (one call that times several configurations in turns) the turns agree far more
than two windows a minute apart do: other processes come and go, clocks change, and a
process's allocator settles differently each time it starts. So a comparison rests on
*windows*, not turns:

* the scores of each window are put on one scale by the effects model of
  :mod:`._drift` (``log score = effect(config) + drift(window)``), whose residual is
  how much the configurations' standing moves from one window to the next;
* that residual variance is pooled with the search's own residual, which rests on many
  more windows, never below what the windows showed, nor a floor (:data:`NOISE_FLOOR`,
  about what a quiet machine showed minutes later in other processes): a :class:`Noise`;
* a comparison's interval is Student's t over that noise, two-sided at ``1 - ALPHA``,
  Bonferroni-corrected for the number of comparisons made at once; for windows, it also
  counts how far a ratio moves when measured again minutes later in other fresh
  processes (:data:`REPEAT_SIGMA`), which no number of windows in one tune narrows;
* its verdict (:class:`Comparison`): ``faster`` only when the whole interval is above 1,
  the two shared at least :data:`MIN_WINDOWS` windows and the difference has the same
  sign in every one of them; ``ahead`` when the interval is above 1 but that is not
  shown (one window, the search's figures, a window where it reversed): ahead here, not
  shown to hold minutes later; ``equal`` only when the whole interval lies within
  ``1 ± EQUIVALENT``; otherwise ``undecided``: they cannot be told apart here.
  (``behind`` and ``slower`` are ``ahead`` and ``faster`` the other way round.)
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._drift import Effects, fit_effects

#: Two-sided level of every interval, before the correction for several comparisons.
ALPHA = 0.05
#: Two configurations whose ratio's whole interval lies within ``1 ± EQUIVALENT`` are
#: *equal*: of equals, the preferred one wins (float32, then the smaller batch).
EQUIVALENT = 0.02
#: Independent windows two configurations must share before one is called faster.
MIN_WINDOWS = 2
#: The least noise (log units, per window's score) the verdict assumes, however quiet the
#: windows looked: minutes later, in other processes, a ratio moves by about this much
#: on a quiet machine (benchmarks/README.md, the verdict benchmark).
NOISE_FLOOR = 0.015
#: How far the ratio of two configurations timed in one tune's windows moves when it is
#: measured again minutes later, in other fresh processes, beyond what those windows'
#: spread shows (log units, one standard deviation of the ratio): the windows of one tune
#: share the machine's state of those minutes (what else runs, memory, clocks), so more
#: of them never narrow this part. Added to every window comparison's standard error.
#: From issue 36's runs of 2026-11-26 (docs/measurement.md, "Minutes later"): the six
#: "faster" claims of 42 the plain loop contradicted had intervals starting at
#: 1.008-1.025; with this part, five of them hold 1.
REPEAT_SIGMA = 0.03
#: The most degrees of freedom the search's residual lends the confirmation's noise.
PRIOR_DF = 8

Verdict = Literal["faster", "ahead", "equal", "undecided", "behind", "slower"]


@dataclasses.dataclass(frozen=True)
class Scored:
    """A measured configuration and its objective score."""

    measurement: Measurement
    score: float
    #: For a confirmed configuration, its score in each confirmation window, oldest first;
    #: empty when not confirmed. ``score`` is then its effect in the windows' fit.
    votes: tuple[float, ...] = ()
    #: The confirmations themselves, oldest first (``measurement`` is the latest).
    rounds: tuple[Measurement, ...] = ()

    @property
    def confirmed(self) -> bool:
        return bool(self.votes)

    @property
    def config(self) -> Config:
        m = self.measurement
        return Config(m.device, m.batch_size, m.precision, m.width)

    @property
    def group(self) -> tuple[str, str]:
        """Its (device, precision)."""
        return (self.measurement.device, self.measurement.precision)


@dataclasses.dataclass(frozen=True)
class Noise:
    """The noise of one window's log score, as the verdict uses it.

    Attributes:
        sigma: its standard deviation (log units: 0.05 is about 5%).
        df: the degrees of freedom it rests on (the windows' own and the prior's).
        windows_sigma: what the windows alone show (``None``: too few to tell).
        prior_sigma: what the search's windows show (``None``: too few).
    """

    sigma: float
    df: float
    windows_sigma: float | None = None
    prior_sigma: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def pooled_noise(windows: Effects | None, prior: Effects | None) -> Noise:
    """The noise of a window's score: the windows' own residual variance pooled with the
    search's (at most :data:`PRIOR_DF` degrees of freedom of it), or the windows' own where
    that is larger (a prior never talks down what the windows showed), never below
    :data:`NOISE_FLOOR`. With no degree of freedom at all, one is assumed: the interval is
    then very wide, as it should be."""
    own_var = windows.variance if windows is not None else None
    own_df = windows.df if own_var is not None and windows is not None else 0
    prior_var = prior.variance if prior is not None else None
    prior_df = min(prior.df, PRIOR_DF) if prior_var is not None and prior is not None else 0
    total = own_df + prior_df
    pooled = ((own_var or 0.0) * own_df + (prior_var or 0.0) * prior_df) / total if total else 0.0
    return Noise(
        sigma=max(math.sqrt(max(pooled, own_var or 0.0)), NOISE_FLOOR),
        df=float(max(total, 1)),
        windows_sigma=None if own_var is None else math.sqrt(own_var),
        prior_sigma=None if prior_var is None else math.sqrt(prior_var),
    )


def search_noise(searches: Effects, windows: Effects | None) -> Noise:
    """The noise of the search's figures as a prediction of what fresh processes show: the
    spread, over the confirmed finalists, of their search score against their windows'
    (centred: the two fits' scales differ), pooled with the search's own residual; never
    below what the windows showed, nor the floor.

    A search measurement is one short window in a worker shared with other configurations,
    so it is noisier than a confirmation's windows and can be biased by what ran before it
    in its process: how far the finalists' search figures strayed from their windows' is
    the honest measure of it (the search's own residual is usually nil: one reference a
    group links its groups in a tree)."""
    common = [k for k in windows.keys if k in searches] if windows is not None else []
    parts: list[tuple[float, int]] = []
    if len(common) >= 2:
        d = [math.log(searches.score(k)) - math.log(windows.score(k)) for k in common]  # type: ignore[union-attr]
        mean = sum(d) / len(d)
        parts.append((sum((x - mean) ** 2 for x in d) / (len(d) - 1), len(d) - 1))
    if searches.variance is not None:
        parts.append((searches.variance, min(searches.df, PRIOR_DF)))
    floor = pooled_noise(windows, None) if windows is not None and windows.keys else None
    df = sum(n for _, n in parts)
    if not df:
        return floor or Noise(NOISE_FLOOR, 1.0)
    sigma = math.sqrt(sum(v * n for v, n in parts) / df)
    return Noise(
        sigma=max(sigma, floor.sigma if floor else NOISE_FLOOR),
        df=float(df),
        windows_sigma=None if floor is None else floor.windows_sigma,
        prior_sigma=math.sqrt(parts[0][0]) if parts else None,
    )


@dataclasses.dataclass(frozen=True)
class Comparison:
    """How many times better one configuration scores than another, and whether that holds.

    Attributes:
        ratio: how many times better the first scores (1.1: 10% better; for a time to
            minimise, the second's time over the first's).
        low, high: the two-sided interval of ``ratio`` (corrected for the comparisons
            made with it).
        verdict: ``faster`` (the first, beyond doubt, in every window), ``ahead`` (its
            interval is above 1, but that is not shown to hold across windows),
            ``equal`` (within ``1 ± EQUIVALENT`` beyond doubt), ``undecided`` (cannot be
            told apart), ``behind`` or ``slower``.
        windows: the independent windows both were timed in (0: search figures only).
        basis: what it rests on, in words.
    """

    ratio: float
    low: float
    high: float
    verdict: Verdict
    windows: int
    basis: str

    @property
    def margin(self) -> float:
        """How much better the first scores, as a fraction (negative: worse)."""
        return self.ratio - 1.0

    @property
    def noise(self) -> float:
        """Half the interval's width: the ``±`` of ``ratio``."""
        return (self.high - self.low) / 2

    @property
    def significant(self) -> bool:
        """Whether the first beats the second beyond the noise."""
        return self.verdict == "faster"

    def text(self) -> str:
        """``1.52 ± 0.05 times`` (the interval is two-sided; see :func:`compare`)."""
        d = _digits(self.noise)
        return f"{self.ratio:.{d}f} ± {self.noise:.{d}f} times"

    def interval(self) -> str:
        """``95% interval 1.47–1.57, 2 windows in fresh processes``."""
        d = _digits(self.noise)
        if self.basis.startswith("windows"):  # "2 windows in fresh processes", "1 window ..."
            basis = self.basis if self.windows != 1 else self.basis.replace("windows", "window", 1)
            where = f"{self.windows} {basis}"
        else:
            where = self.basis
        return f"{1 - ALPHA:.0%} interval {self.low:.{d}f}–{self.high:.{d}f}, {where}"

    def sentence(self, other: str) -> str:
        """How the first compares with ``other``, in words: the ratio, its interval, what
        they rest on, and the verdict (the terminal, the file's explanation and the report
        say it alike)."""
        if self.verdict == "faster":
            return f"{self.text()} faster than {other} ({self.interval()}): a real difference"
        if self.verdict == "ahead":
            return (
                f"{self.text()} faster than {other} ({self.interval()}): ahead here, not "
                f"shown to hold in {MIN_WINDOWS} windows"
            )
        if self.verdict in ("slower", "behind"):
            return f"{self.text()} as fast as {other} ({self.interval()}): {self.verdict}"
        if self.verdict == "equal":
            return f"equal to {other} within {EQUIVALENT:.0%} ({self.text()}; {self.interval()})"
        return (
            f"{self.text()} as fast as {other} ({self.interval()}): they cannot be told apart here"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "verdict": self.verdict,
            "windows": self.windows,
            "basis": self.basis,
            # The fields of schema 2, for readers of older files' keys.
            "margin": self.margin,
            "noise": self.noise,
            "significant": self.significant,
        }


def _digits(noise: float) -> int:
    """Decimals that show the interval's half-width to its first significant digit (2 to 4),
    as hyperfine does: ``1.52 ± 0.05``, ``1.523 ± 0.004``."""
    if noise <= 0 or not math.isfinite(noise):
        return 2
    return min(4, max(2, -math.floor(math.log10(noise))))


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (scipy's, imported when first needed: a tune has it anyway,
    as jax depends on scipy)."""
    from scipy.special import stdtrit

    return float(stdtrit(max(df, 1.0), p))


def compare(
    objective: Objective,
    fit: Effects,
    noise: Noise,
    a: Hashable,
    b: Hashable,
    *,
    comparisons: int = 1,
    per_window: Mapping[Hashable, Mapping[Hashable, float]] | None = None,
    basis: str = "windows",
) -> Comparison:
    """How many times better ``a`` scores than ``b`` in ``fit``, with its interval and
    verdict (see the module docstring). ``per_window`` holds each key's log score per
    window, for the rule that a difference called real holds in every shared window, and
    marks a comparison of windows: its standard error then counts :data:`REPEAT_SIGMA`
    too. Without it (search figures, whose noise is already how far they strayed from
    the windows: :func:`search_noise`), a comparison is never ``faster`` on fewer than
    :data:`MIN_WINDOWS` shared groups either."""
    diff, factor = fit.difference(a, b)
    sign = 1.0 if objective.direction == "maximize" else -1.0
    diff *= sign
    se = noise.sigma * math.sqrt(max(factor, 0.0))
    p = 1 - ALPHA / (2 * max(comparisons, 1))
    half = _half_width(se, noise.df, p) if per_window is not None else t_quantile(p, noise.df) * se
    low, high = diff - half, diff + half
    shared = fit.shared_groups(a, b)
    windows = len(shared)
    verdict: Verdict = "undecided"
    if low > 0 or high < 0:
        signs = _signs(per_window, a, b, shared, sign)
        held = windows >= MIN_WINDOWS and per_window is not None
        if low > 0:
            verdict = "faster" if held and all(s > 0 for s in signs) else "ahead"
        else:
            verdict = "slower" if held and all(s < 0 for s in signs) else "behind"
    elif low >= -math.log1p(EQUIVALENT) and high <= math.log1p(EQUIVALENT):
        verdict = "equal"
    return Comparison(
        ratio=math.exp(diff),
        low=math.exp(low),
        high=math.exp(high),
        verdict=verdict,
        windows=windows,
        basis=basis,
    )


def could_decide(c: Comparison, noise: Noise) -> bool:
    """Whether one more window shared by the two could settle an undecided comparison: if
    its estimate held, the interval it would then have (narrower by one window's share, and
    by Student's t over one more degree of freedom) would lie wholly on one side of 1, or
    wholly within ``1 ± EQUIVALENT``. Only the windows' share of the interval narrows: the
    part that measures how far the ratio moves minutes later (:data:`REPEAT_SIGMA`) stays.
    A duel that cannot settle anything is not run: on a noisy machine it would cost a
    window and leave them as undecided as before."""
    if c.windows < 1 or c.low <= 0:
        return True
    estimate = math.log(c.ratio)
    p = 1 - ALPHA / 2
    own = _own_se((math.log(c.high) - math.log(c.low)) / 2, noise.df, p)
    after = _half_width(own * math.sqrt(c.windows / (c.windows + 1)), noise.df + 1, p)
    return abs(estimate) > after or abs(estimate) + after <= math.log1p(EQUIVALENT)


def windows_share(c: Comparison, noise: Noise) -> float:
    """The half-width (log units) a window comparison's interval would have without its
    :data:`REPEAT_SIGMA` part: what more windows can narrow."""
    p = 1 - ALPHA / 2
    return t_quantile(p, noise.df) * _own_se((math.log(c.high) - math.log(c.low)) / 2, noise.df, p)


def _half_width(own: float, df: float, p: float) -> float:
    """The half-width (log units) of a window comparison's interval at level ``p``: the
    windows' own part (Student's t over their ``df`` degrees of freedom times their
    standard error ``own``) and the minutes-later part (the normal quantile times
    :data:`REPEAT_SIGMA`, known rather than estimated), added in quadrature."""
    return math.hypot(t_quantile(p, df) * own, _normal_quantile(p) * REPEAT_SIGMA)


def _own_se(half: float, df: float, p: float) -> float:
    """The windows' own standard error behind an interval of half-width ``half``
    (:func:`_half_width` inverted; 0 where the minutes-later part alone is that wide)."""
    repeat = _normal_quantile(p) * REPEAT_SIGMA
    return math.sqrt(max(half * half - repeat * repeat, 0.0)) / t_quantile(p, df)


def _normal_quantile(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


def _signs(
    per_window: Mapping[Hashable, Mapping[Hashable, float]] | None,
    a: Hashable,
    b: Hashable,
    shared: frozenset[Hashable],
    sign: float,
) -> list[float]:
    """The sign of ``a``'s lead over ``b`` in each window both were timed in."""
    if per_window is None:
        return []
    ours, theirs = per_window.get(a, {}), per_window.get(b, {})
    return [sign * (ours[w] - theirs[w]) for w in shared if w in ours and w in theirs]


def against_base(
    objective: Objective,
    scores: Sequence[tuple[Hashable, str | None, float]],
    base: Hashable,
    prior: Effects | None = None,
) -> tuple[list[tuple[Hashable, Comparison]], Noise] | None:
    """Each variant of one configuration against its ``base`` (the pick as it is, one step
    a call), from ``(variant, window, score)`` timed in turns in windows of fresh
    processes: fitted as the confirmation's windows are (log score = variant + window),
    the noise between windows pooled with ``prior``'s, each variant compared with the base,
    Bonferroni over the variants. ``None`` where the base or every variant is missing."""
    fit = fit_effects(scores)
    if base not in fit:
        return None
    tried = [k for k in fit.keys if k != base]
    if not tried:
        return None
    noise = pooled_noise(fit, prior)
    per_window: dict[Hashable, dict[Hashable, float]] = {}
    for key, window, score in scores:
        per_window.setdefault(key, {})[window] = math.log(score)
    found = [
        (
            k,
            compare(
                objective,
                fit,
                noise,
                k,
                base,
                comparisons=len(tried),
                per_window=per_window,
                basis="windows in fresh processes",
            ),
        )
        for k in tried
    ]
    return found, noise


def window_scores(
    objective: Objective, rounds: Mapping[Config, Sequence[Measurement]]
) -> list[tuple[Config, str | None, float]]:
    """``(config, window, score)`` of every confirmation that ran, for :mod:`._drift`."""
    out = []
    for c, ms in rounds.items():
        for m in ms:
            score = objective.score(m) if m.status == "ok" else None
            if score:
                out.append((c, m.interleave_id, score))
    return out
