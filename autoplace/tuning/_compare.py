"""How far one configuration beats another, as a ratio a later re-measurement will hold.

A comparison rests on *windows*: calls that timed the configurations in turns, each in a
fresh process of its own (as the training run will be). Inside one window the turns agree
far more than two windows a minute apart do, so each window gives one figure per
configuration, and two configurations are compared window by window:

* the ratio is the geometric mean over the windows they shared of the one's figure over
  the other's (for a time to minimise, the other's over the one's);
* how far such a ratio moves from one window to the next is the windows' own spread:
  the residual of ``log figure = configuration + window`` over every configuration the
  windows timed (:func:`spread`), a few degrees of freedom however few the windows;
* the machine's *resolution* is the half-width of a ratio's 95% interval on that spread,
  never below :data:`FLOOR`: the plain loop's own ratios move by 5-9% between halves of
  its rounds on the README MLP (docs/measurement.md), so nothing closer is ever ordered;
* the verdict: ``faster`` when the ratio is beyond the resolution and the lead held in
  every shared window; within the resolution the two are one group ("cannot be told apart
  here"), the answer a later run would give too; ``slower`` the other way round.

An interval too wide to say anything (its ends more than :data:`CARRIED` apart, as on a
busy machine) is never printed as figures: :meth:`Comparison.sentence` says the two cannot
be told apart, and why.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Hashable, Mapping
from typing import Any, Literal

from autoplace import units
from autoplace.units import CARRIED

#: The least resolution a verdict claims: closer than this, configurations are one group.
FLOOR = 0.05
#: Degrees of freedom assumed where the windows leave none (one window, one configuration):
#: the interval is then as wide as one degree makes it.
LEAST_DF = 1
#: The most degrees of freedom the search's spread lends the windows' (it is timed in one
#: shared process, the windows in fresh ones: it lends certainty, never quiet).
PRIOR_DF = 8
#: The weight pulling each group's drift towards zero in :func:`fit`.
RIDGE = 1e-3

Verdict = Literal["faster", "within", "slower"]
#: One configuration's figure in each window it ran in: ``{window: figure}``.
Figures = Mapping[Any, float]


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (scipy's, imported when needed: jax depends on scipy)."""
    from scipy.special import stdtrit

    return float(stdtrit(max(df, 1.0), p))


@dataclasses.dataclass(frozen=True)
class Spread:
    """How far a configuration's log figure moves from one window to the next, beyond the
    window's own drift (every configuration of a window moves together): ``sigma`` (log
    units: 0.05 is about 5%) on ``df`` degrees of freedom; ``sigma`` is ``None`` where the
    windows leave none."""

    sigma: float | None
    df: int

    def half_width(self, windows: int) -> float:
        """The half-width (a fraction) of the 95% interval of a ratio of two configurations
        compared over ``windows`` shared windows, never below :data:`FLOOR`; infinite where
        nothing is known."""
        if self.sigma is None or windows < 1:
            return math.inf
        log_half = t_quantile(0.975, max(self.df, LEAST_DF)) * self.sigma * math.sqrt(2 / windows)
        return max(FLOOR, math.expm1(log_half))

    def pooled(self, prior: Spread | None, most_df: int = PRIOR_DF) -> Spread:
        """This spread pooled with ``prior``'s (at most ``most_df`` of its degrees of
        freedom), never below this one's own: a prior lends certainty, never quiet."""
        if prior is None or prior.sigma is None:
            return self
        lent = min(prior.df, most_df)
        own = (self.sigma or 0.0) ** 2 * self.df
        sigma = math.sqrt((own + prior.sigma**2 * lent) / (self.df + lent))
        return Spread(max(sigma, self.sigma or 0.0), self.df + lent)


@dataclasses.dataclass(frozen=True)
class Fit:
    """Each key's log figure with each group's drift removed (``effects``), and the
    residual spread: the least-squares fit of ``log figure = key + group``."""

    effects: Mapping[Any, float]
    spread: Spread

    def figure(self, key: Hashable) -> float:
        return math.exp(self.effects[key])


def fit(cells: Mapping[Any, Figures]) -> Fit:
    """The fit of ``log figure = key + group`` to every key's figure per group. A group
    that shares no key with the others is taken at face value (a tiny ridge on the group
    drifts fixes what the data leave open, biasing no linked comparison measurably)."""
    import numpy as np

    rows = [(k, g, math.log(v)) for k, per in cells.items() for g, v in per.items() if v > 0]
    if not rows:
        return Fit({}, Spread(None, 0))
    keys = list(dict.fromkeys(k for k, _, _ in rows))
    groups = list(dict.fromkeys(g for _, g, _ in rows))
    a = np.zeros((len(rows), len(keys) + len(groups)))
    for i, (k, g, _) in enumerate(rows):
        a[i, keys.index(k)] = a[i, len(keys) + groups.index(g)] = 1.0
    y = np.array([v for _, _, v in rows])
    ridge = np.diag([0.0] * len(keys) + [RIDGE] * len(groups))
    solution = np.linalg.solve(a.T @ a + ridge, a.T @ y)
    df = len(rows) - int(np.linalg.matrix_rank(a))
    residual = float(np.sum((y - a @ solution) ** 2))
    sigma = math.sqrt(residual / df) if df > 0 else None
    return Fit(dict(zip(keys, map(float, solution[: len(keys)]), strict=True)), Spread(sigma, df))


@dataclasses.dataclass(frozen=True)
class Comparison:
    """How many times better one configuration scores than another, over the windows both
    ran in.

    Attributes:
        ratio: how many times better the first scores (1.1: 10% better).
        low, high: its 95% interval (``ratio`` over and times ``1 + resolution``).
        resolution: the machine's resolution for this comparison (see the module
            docstring); infinite where the windows say nothing.
        verdict: ``faster``, ``within`` (one group: cannot be told apart here) or
            ``slower``.
        windows: the windows both ran in.
        per_window: the ratio in each of them, oldest first.
        busy: whether the machine was busy while they were timed.
    """

    ratio: float
    low: float
    high: float
    resolution: float
    verdict: Verdict
    windows: int
    per_window: tuple[float, ...] = ()
    busy: bool = False

    @property
    def carried(self) -> bool:
        """Whether its interval is narrow enough to be worth printing (:data:`CARRIED`)."""
        return self.low > 0 and self.high / self.low <= CARRIED

    def figure(self) -> str:
        """``1.36x (95%: 1.29–1.43)``, or the ratio alone where the interval says nothing
        (:func:`autoplace.units.ratio`)."""
        return units.ratio(self.ratio, self.low, self.high)

    def sentence(self, other: str) -> str:
        """How the first compares with ``other``, in words, as the terminal, the file, the
        report and a launcher's log say it."""
        shared = f"{self.windows} window{'s' if self.windows != 1 else ''} in fresh processes"
        if not self.carried:
            why = "busy: " if self.busy else ""
            return (
                f"{why}cannot be told apart from {other} here: their ratio moved by more than "
                f"{CARRIED:g}x between the {shared}"
            )
        said = f"{self.figure()} as fast as {other}" + (f", {shared}" if self.windows else "")
        if self.verdict == "faster":
            return f"{said}: faster in every window, beyond this machine's ±{self.resolution:.0%}"
        if self.verdict == "slower":
            return f"{said}: slower in every window, beyond this machine's ±{self.resolution:.0%}"
        return f"{said}: within this machine's ±{self.resolution:.0%}, cannot be told apart here"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """A comparison a recommendation file or an answer keeps (one of schema 3, whose
        verdicts were ``ahead``, ``equal``, ``undecided`` and ``behind`` too, reads as
        ``within`` for those: not shown to hold)."""
        ratio = float(data.get("ratio") or 1.0)
        low, high = data.get("low"), data.get("high")
        verdict = data.get("verdict")
        resolution = data.get("resolution")
        if resolution is None:
            resolution = high / ratio - 1 if high else math.inf
        return cls(
            ratio=ratio,
            low=float(low) if low is not None else 0.0,
            high=float(high) if high is not None else math.inf,
            resolution=float(resolution),
            verdict=verdict if verdict in ("faster", "slower") else "within",
            windows=int(data.get("windows") or 0),
            per_window=tuple(data.get("per_window") or ()),
            busy=bool(data.get("busy")),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "resolution": self.resolution if math.isfinite(self.resolution) else None,
            "verdict": self.verdict,
            "windows": self.windows,
            "per_window": list(self.per_window),
            "busy": self.busy,
        }


def compare(
    mine: Figures,
    theirs: Figures,
    noise: Spread,
    *,
    maximize: bool = True,
    busy: bool = False,
) -> Comparison:
    """``mine`` against ``theirs`` (each a figure per window), over the windows both ran
    in, with the windows' ``noise``: see :class:`Comparison`."""
    shared = [w for w in mine if w in theirs and mine[w] > 0 and theirs[w] > 0]
    sign = 1.0 if maximize else -1.0
    logs = [sign * (math.log(mine[w]) - math.log(theirs[w])) for w in shared]
    ratio = math.exp(statistics.fmean(logs)) if logs else 1.0
    half = noise.half_width(len(shared))
    low, high = ratio / (1 + half), ratio * (1 + half)
    verdict: Verdict = "within"
    if low > 1 and all(x > 0 for x in logs):
        verdict = "faster"
    elif high < 1 and all(x < 0 for x in logs):
        verdict = "slower"
    return Comparison(ratio, low, high, half, verdict, len(shared),
                      tuple(math.exp(x) for x in logs), busy)  # fmt: skip
