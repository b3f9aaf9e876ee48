"""What the cost model says of the batches the search did not measure.

Each arm's fed step is fitted as ``t(b) = a + c·b`` where the measurements hold it
(:mod:`autoplace.explaining`). Within that run of batches, and one batch size beyond it
either way (not past a batch that failed), the line predicts the throughput of a batch
that was not measured, on the search's scale: the nearest measured batch's score times
the line's ratio of the two. The prediction is only as good as the line: at a batch the
search did not measure, the explain benchmark found it 3-16% off (median 7.6%), so every
prediction carries :data:`PREDICTION_ERROR`.

The verdict uses predictions only to be honest about what it did not measure: a batch the
line says could be as good as the pick is listed among the configurations the pick could
not be told apart from, marked as predicted; a prediction never makes a difference real.
Only the throughput objective is predicted (its score is the line's own quantity).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from autoplace.config import Config
from autoplace.explaining import arm_models
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._failures import arm_bounds
from autoplace.tuning._margin import ALPHA, Comparison, Noise, t_quantile
from autoplace.tuning._space import Space

#: How far the line's prediction at a batch the search did not measure may be off (the
#: explain benchmark's worst, 16%, in the README).
PREDICTION_ERROR = 0.16
#: Batches a line must hold over before it predicts others.
MIN_POINTS = 3


def predicted(
    figures: Mapping[Config, Measurement],
    estimates: Mapping[Config, float | None],
    space: Space,
    objective: Objective,
) -> dict[Config, float]:
    """Each unmeasured configuration of ``space`` a line can speak for, with its predicted
    score on the search's scale (see the module docstring)."""
    if objective.name != "throughput":
        return {}
    batches = space.batch_sizes
    out: dict[Config, float] = {}
    for arm, model in arm_models(figures).items():
        line = model.fed
        if line is None or len(line.batches) < MIN_POINTS or line.per_sample <= 0:
            continue
        ran = [c.batch_size for c, m in figures.items() if _arm(c) == arm and m.status == "ok"]
        failed = [c.batch_size for c, m in figures.items() if _arm(c) == arm and m.status != "ok"]
        floor, ceiling = arm_bounds(ran, failed)
        inside = [i for i, b in enumerate(batches) if line.batches[0] <= b <= line.batches[-1]]
        if not inside:
            continue
        reach = range(max(0, inside[0] - 1), min(len(batches), inside[-1] + 2))
        for i in reach:
            b = batches[i]
            c = Config(arm[0], b, arm[1], arm[2])
            if c in figures or c not in space:
                continue
            if (floor is not None and b <= floor) or (ceiling is not None and b >= ceiling):
                continue
            near = min(line.batches, key=lambda x, b=b: abs(math.log(x) - math.log(b)))
            score = estimates.get(Config(arm[0], near, arm[1], arm[2]))
            if score:
                out[c] = score * (b / line.at(b)) / (near / line.at(near))
    return out


def _arm(c: Config) -> tuple[str, str, int | None]:
    return (c.device, c.precision, c.width)


def compare_predicted(
    objective: Objective, pick: float, prediction: float, noise: Noise, comparisons: int
) -> Comparison:
    """How many times better the pick's search score is than a prediction: the interval
    counts the search's noise (the pick's figure and the measured neighbour's) and the
    prediction's own error; never ``faster`` (a prediction shows no difference real)."""
    diff = (
        math.log(pick / prediction)
        if objective.direction == "maximize"
        else math.log(prediction / pick)
    )
    se = math.sqrt(2 * noise.sigma**2 + math.log1p(PREDICTION_ERROR) ** 2)
    t = t_quantile(1 - ALPHA / (2 * max(comparisons, 1)), noise.df)
    low, high = diff - t * se, diff + t * se
    verdict = "ahead" if low > 0 else "behind" if high < 0 else "undecided"
    return Comparison(
        ratio=math.exp(diff),
        low=math.exp(low),
        high=math.exp(high),
        verdict=verdict,  # type: ignore[arg-type]
        windows=0,
        basis="predicted by the cost model, not measured",
    )
