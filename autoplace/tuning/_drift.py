"""One score per configuration from measurements taken at different times, drift removed.

On a shared machine the same configuration measured twice, seconds apart, can score
30% apart: other processes, clocks and caches come and go. Two configurations whose
timed loops take turns in one call (:meth:`autoplace.Backend.measure_together`) see
the same drift, so their *ratio* holds steady even when their scores do not (on the
2-core CI machine, a ratio's range over five repeats was a third to a fifth of a
score's). The search therefore measures every new configuration together with one
already known, and this module puts all those groups on one scale.

The model, fitted by least squares on log scores::

    log score(config c in group g) = effect(c) + drift(g) + noise

Each group's drift is shared by its members and cancels in their comparison; a
configuration measured in several groups links them. A tiny ridge penalty on the
drifts fixes what the data leave open: the common scale (scores keep their units)
and the standing of a group that shares no configuration with the rest, which is
taken at face value, as an unpaired measurement would be.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

#: Weight pulling each group's drift towards zero: small enough to bias no comparison
#: the groups link (by under a tenth of a percent for drifts of 50%), large enough to
#: make the fit unique.
RIDGE = 1e-3


def corrected_scores(
    observations: Sequence[tuple[Hashable, Hashable | None, float]], ridge: float = RIDGE
) -> dict[Hashable, float]:
    """Each key's score with the drift between groups removed.

    Args:
        observations: ``(key, group, score)`` triples, score positive; ``group`` is
            shared by measurements timed together, ``None`` for one measured alone.
        ridge: how strongly a group's drift is pulled towards zero.

    Returns:
        The fitted score per key, in the units of the scores. A key observed only
        alone, never linked to another, keeps the geometric mean of its scores.
    """
    import numpy as np

    obs = [(k, g, s) for k, g, s in observations if s > 0 and math.isfinite(s)]
    if not obs:
        return {}
    keys = list(dict.fromkeys(k for k, _, _ in obs))
    groups: dict[Hashable, int] = {}
    col = {k: i for i, k in enumerate(keys)}
    rows = []
    for n, (k, g, _) in enumerate(obs):
        g = ("alone", n) if g is None else ("group", g)
        rows.append((col[k], len(keys) + groups.setdefault(g, len(groups))))
    a = np.zeros((len(obs) + len(groups), len(keys) + len(groups)))
    for r, (i, j) in enumerate(rows):
        a[r, i] = a[r, j] = 1.0
    for j in range(len(groups)):
        a[len(obs) + j, len(keys) + j] = math.sqrt(ridge)
    y = np.concatenate([np.log([s for _, _, s in obs]), np.zeros(len(groups))])
    fit = np.linalg.lstsq(a, y, rcond=None)[0]
    return {k: float(math.exp(fit[col[k]])) for k in keys}
