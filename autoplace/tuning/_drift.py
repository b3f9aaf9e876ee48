"""One score per configuration from measurements taken at different times, drift removed,
and how well the measurements pin each comparison down.

On a shared machine the same configuration measured twice, seconds apart, can score
30% apart: other processes, clocks and caches come and go. Two configurations whose
timed loops take turns in one call (:meth:`autoplace.Backend.measure_together`) see
the same drift, so their *ratio* holds steady even when their scores do not (on the
2-core CI machine, a ratio's range over five repeats was a third to a fifth of a
score's). The search therefore measures every new configuration together with one
already known, and the confirmation measures the finalists together in several
*windows* (see :mod:`._verdict`); this module puts all those groups on one scale.

The model, fitted by least squares on log scores::

    log score(config c in group g) = effect(c) + drift(g) + noise

Each group's drift is shared by its members and cancels in their comparison; a
configuration measured in several groups links them. A tiny ridge penalty on the
drifts fixes what the data leave open: the common scale (scores keep their units)
and the standing of a group that shares no configuration with the rest, which is
taken at face value, as an unpaired measurement would be.

What the model cannot explain, the residual, is how much a configuration's standing
moves from one group to the next: the noise *between* windows, which the spread of the
turns inside one window does not show (:class:`Effects` keeps it, with its degrees of
freedom, and the covariance of the effects, so that a comparison gets an interval).

A fresh process can land in a slower mode and keep it: on this 2-core CPU one window of
four read the wide MLP's float16 @1024 at 12.8 k samples/s where its three others read
18.2–20.1 k, and one read the encoder's float32 @16 at 1,659 where its three others read
2,220–2,530 (``benchmarks/results/measurement-89bd41dbd0-20261126-{1909,1758}.json``). A
plain loop takes the median over processes; least squares takes the mean, and such a
window then moves the effect by about a tenth and widens every interval of the fit about
twofold (the wide MLP's: ±24%, against ±12-14% weighed by Huber's rule). With
``robust_floor`` set, the windows of a key timed in :data:`ROBUST_FROM` windows or more
are weighed by Huber's rule (iteratively reweighted least squares; the scale is the
residuals' median absolute deviation), so that one slow window counts in proportion to
how far it lies, not its square. With fewer windows a key's slow window cannot be told
from its fast one, and it is fitted by least squares as before.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence

import numpy as np

#: Weight pulling each group's drift towards zero: small enough to bias no comparison
#: the groups link (by under a tenth of a percent for drifts of 50%), large enough to
#: make the fit unique.
RIDGE = 1e-3
#: Huber's tuning constant, in units of the residuals' scale: 95% as efficient as least
#: squares where the residuals are normal.
HUBER_K = 1.345
#: The windows a key must have been timed in before its slow ones are weighed down.
ROBUST_FROM = 3
#: Reweighting rounds of the robust fit (it settles in a few).
ROBUST_ROUNDS = 20


@dataclasses.dataclass(frozen=True)
class Effects:
    """The fitted model: each key's effect (log score) and what the fit says of its noise.

    Attributes:
        keys: the keys fitted, in the order first observed.
        effects: each key's log score, drift removed.
        covariance: the effects' covariance in units of the residual variance (multiply by
            :attr:`variance`): two keys no group links differ by a huge variance, so that
            no comparison between them is ever called certain.
        residual: the sum of squared residuals (log units) over the observations.
        df: the residual's degrees of freedom: observations less the parameters they
            determine (0: every observation fits exactly, the noise is unknown).
        groups: the groups each key was observed in (``None``-grouped observations each
            form a group of their own).
    """

    keys: tuple[Hashable, ...]
    effects: np.ndarray
    covariance: np.ndarray
    residual: float
    df: int
    groups: dict[Hashable, frozenset[Hashable]]

    def __contains__(self, key: object) -> bool:
        return key in self._index

    @property
    def _index(self) -> dict[Hashable, int]:
        return {k: i for i, k in enumerate(self.keys)}

    def score(self, key: Hashable) -> float:
        """The key's score, drift removed, in the units of the scores."""
        return float(math.exp(self.effects[self._index[key]]))

    def scores(self) -> dict[Hashable, float]:
        return {k: float(math.exp(e)) for k, e in zip(self.keys, self.effects, strict=True)}

    @property
    def variance(self) -> float | None:
        """The residual variance (log units), or ``None`` with no degree of freedom."""
        return self.residual / self.df if self.df > 0 else None

    def difference(self, a: Hashable, b: Hashable) -> tuple[float, float]:
        """``effect(a) - effect(b)`` (a log ratio of scores) and its variance in units of
        the residual variance."""
        i, j = self._index[a], self._index[b]
        c = self.covariance
        return float(self.effects[i] - self.effects[j]), float(c[i, i] + c[j, j] - 2 * c[i, j])

    def shared_groups(self, a: Hashable, b: Hashable) -> frozenset[Hashable]:
        """The groups both keys were observed in: where they were timed in turns."""
        return self.groups.get(a, frozenset()) & self.groups.get(b, frozenset())


def fit_effects(
    observations: Sequence[tuple[Hashable, Hashable | None, float]],
    ridge: float = RIDGE,
    *,
    robust_floor: float | None = None,
) -> Effects:
    """Fit ``log score = effect(key) + drift(group)`` to ``(key, group, score)`` triples.

    ``group`` is shared by measurements timed together, ``None`` for one measured alone.
    Scores that are not positive and finite are left out. With ``robust_floor`` (the least
    scale of the residuals, log units), the groups of a key observed in
    :data:`ROBUST_FROM` groups or more are weighed by Huber's rule (see the module
    docstring); the residual is then the weighted one, and the covariance the weighted
    fit's.
    """
    obs = [(k, g, s) for k, g, s in observations if s > 0 and math.isfinite(s)]
    keys = tuple(dict.fromkeys(k for k, _, _ in obs))
    col = {k: i for i, k in enumerate(keys)}
    group_col: dict[Hashable, int] = {}
    seen: dict[Hashable, set[Hashable]] = {k: set() for k in keys}
    rows = []
    for n, (k, g, _) in enumerate(obs):
        label = ("alone", n) if g is None else ("group", g)
        rows.append((col[k], len(keys) + group_col.setdefault(label, len(group_col))))
        seen[k].add(label if g is None else g)
    p = len(keys) + len(group_col)
    a = np.zeros((len(obs), p))
    for r, (i, j) in enumerate(rows):
        a[r, i] = a[r, j] = 1.0
    y = np.log([s for _, _, s in obs]) if obs else np.zeros(0)
    penalty = np.zeros((p, p))
    penalty[len(keys) :, len(keys) :] = ridge * np.eye(len(group_col))
    rank = int(np.linalg.matrix_rank(a)) if obs else 0
    weights = np.ones(len(obs))
    inverse, fit = _solve(a, y, weights, penalty)
    counts = {k: len(v) for k, v in seen.items()}
    weighed = np.array([counts[k] >= ROBUST_FROM for k, _, _ in obs], dtype=bool)
    df = len(obs) - rank
    if robust_floor is not None and df > 0 and weighed.any():
        for _ in range(ROBUST_ROUNDS):
            r = np.abs(y - a @ fit)
            scale = max(1.4826 * float(np.median(r)) * math.sqrt(len(obs) / df), robust_floor)
            new = np.where(weighed, np.minimum(1.0, HUBER_K * scale / np.maximum(r, 1e-300)), 1.0)
            if np.allclose(new, weights, atol=1e-6):
                break
            weights = new
            inverse, fit = _solve(a, y, weights, penalty)
    residual = float(np.sum(weights * (y - a @ fit) ** 2)) if obs else 0.0
    return Effects(
        keys=keys,
        effects=fit[: len(keys)],
        covariance=inverse[: len(keys), : len(keys)],
        residual=residual,
        df=df,
        groups={k: frozenset(v) for k, v in seen.items()},
    )


def _solve(
    a: np.ndarray, y: np.ndarray, weights: np.ndarray, penalty: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The weighted, penalised least-squares fit: the normal matrix's inverse and the fit."""
    p = a.shape[1]
    if not p:
        return np.zeros((0, 0)), np.zeros(0)
    inverse = np.linalg.inv(a.T @ (weights[:, None] * a) + penalty)
    return inverse, inverse @ a.T @ (weights * y)


def corrected_scores(
    observations: Sequence[tuple[Hashable, Hashable | None, float]], ridge: float = RIDGE
) -> dict[Hashable, float]:
    """Each key's score with the drift between groups removed (see :func:`fit_effects`).

    Returns the fitted score per key, in the units of the scores. A key observed only
    alone, never linked to another, keeps the geometric mean of its scores.
    """
    return fit_effects(observations, ridge).scores()
