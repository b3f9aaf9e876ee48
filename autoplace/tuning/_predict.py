"""What the cost model says of the batches the search did not measure.

Each arm's fed step is fitted as ``t(b) = a + c·b`` where the measurements hold it
(:mod:`autoplace.explaining`). The line predicts the throughput of a batch that was not
measured, on the search's scale: the nearest measured batch's score times the line's
ratio of the two. Where it may speak:

- one batch size below the run of batches it holds over (below it the device is not yet
  filled, and small batches run slower than the line);
- every batch size above that run, up to the arm's first failure or the space's end. The
  throughput ``b/(a + c·b)`` of a line only rises towards ``1/c`` as the batch grows, so
  far above the run the prediction is close to the line's ceiling: a plateau, where a
  search that stopped climbing an arm early cannot rule out that its larger batches are
  as good as the pick (the verdict benchmark found such arms behind most tunes that
  disagreed, 2026-11-25);
- but not from a measured batch above the run that ran slower than the line
  (``departs_at``) upwards: there the curve bends down (caches outgrown, a kernel that
  changes), and a line that only rises cannot say so. On a held-out encoder whose
  throughput falls beyond batch 32 (at 128 it is 0.31 of 32), the line over its small
  batches predicted 128, 1024 and 4096 near the pick, and the plain loop put all three
  67-77% behind (issue 36's benchmark, 2026-11-26);
- an arm measured at one batch size has no line: each larger batch, up to a failure, gets
  that batch's score (the flat line of no fixed cost; a fixed cost only makes the
  throughput rise with the batch), its error compounding from two steps out.

A line over :data:`MIN_POINTS` batches or more was 3-16% off at a batch one step beyond
them (median 7.6%, the explain benchmark), so a prediction one step away carries
:data:`PREDICTION_ERROR`. Further away, and from a line through two points that nothing
checks, the error is *assumed* to compound, :data:`PREDICTION_ERROR` per batch step
(a line through two points counting one step more): not measured, but wide on purpose,
because the verdict uses a prediction only to be honest about what it did not measure. A
batch the line says could be as good as the pick is listed among the configurations the
pick could not be told apart from, marked as predicted; a prediction never makes a
difference real. Only the throughput objective is predicted (its score is the line's own
quantity).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from autoplace.config import Config
from autoplace.costs import MIN_POINTS, PREDICTION_ERROR, arm_models
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._failures import arm_bounds
from autoplace.tuning._margin import ALPHA, Comparison, Noise, t_quantile
from autoplace.tuning._space import Space


@dataclasses.dataclass(frozen=True)
class Prediction:
    """A score the line predicts at a batch the search did not measure, and how far off it
    may be (relative: 0.16 is 16%)."""

    score: float
    error: float


def predicted(
    figures: Mapping[Config, Measurement],
    estimates: Mapping[Config, float | None],
    space: Space,
    objective: Objective,
) -> dict[Config, Prediction]:
    """Each unmeasured configuration of ``space`` a line can speak for, with its predicted
    score on the search's scale and its error (see the module docstring)."""
    if not objective.rate:
        return {}
    batches = space.batch_sizes
    out: dict[Config, Prediction] = {}
    for arm, model in arm_models(figures).items():
        ran = [c.batch_size for c, m in figures.items() if _arm(c) == arm and m.status == "ok"]
        failed = [c.batch_size for c, m in figures.items() if _arm(c) == arm and m.status != "ok"]
        line = model.fed
        if len(set(ran)) == 1:
            out.update(_flat(arm, ran[0], failed, estimates, space))
            continue
        if line is None or len(line.batches) < 2 or line.per_sample <= 0:
            continue
        floor, ceiling = arm_bounds(ran, failed)
        if line.departs_at is not None and (line.departure or 0.0) > 0:
            # Measured slower than the line above its run: the line has no say from there.
            ceiling = line.departs_at if ceiling is None else min(ceiling, line.departs_at)
        inside = [i for i, b in enumerate(batches) if line.batches[0] <= b <= line.batches[-1]]
        if not inside:
            continue
        unchecked = 1 if len(line.batches) < MIN_POINTS else 0
        for i in range(max(0, inside[0] - 1), len(batches)):
            b = batches[i]
            c = Config(arm[0], b, arm[1], arm[2])
            if c in figures or c not in space:
                continue
            if (floor is not None and b <= floor) or (ceiling is not None and b >= ceiling):
                continue
            near = min(line.batches, key=lambda x, b=b: abs(math.log(x) - math.log(b)))
            score = estimates.get(Config(arm[0], near, arm[1], arm[2]))
            if score:
                steps = max(1, i - inside[-1], inside[0] - i) + unchecked
                out[c] = Prediction(
                    score=score * (b / line.at(b)) / (near / line.at(near)),
                    error=(1 + PREDICTION_ERROR) ** steps - 1,
                )
    return out


def _flat(
    arm: tuple[str, str, int | None],
    batch: int,
    failed: list[int],
    estimates: Mapping[Config, float | None],
    space: Space,
) -> dict[Config, Prediction]:
    """An arm measured at one batch size: no line, so each larger batch (up to a failure)
    is given that batch's score, the flat line of no fixed cost (with one, the throughput
    only rises with the batch), its error compounding from two steps out: nothing checks
    it, and it only says what the search cannot rule out."""
    score = estimates.get(Config(arm[0], batch, arm[1], arm[2]))
    if not score:
        return {}
    _, ceiling = arm_bounds([batch], failed)
    batches = space.batch_sizes
    if batch not in batches:
        return {}
    start = batches.index(batch)
    out = {}
    for i in range(start + 1, len(batches)):
        b = batches[i]
        c = Config(arm[0], b, arm[1], arm[2])
        if (ceiling is not None and b >= ceiling) or c not in space:
            break
        out[c] = Prediction(score=score, error=(1 + PREDICTION_ERROR) ** (i - start + 1) - 1)
    return out


def _arm(c: Config) -> tuple[str, str, int | None]:
    return (c.device, c.precision, c.width)


def compare_predicted(
    objective: Objective, pick: float, prediction: Prediction, noise: Noise, comparisons: int
) -> Comparison:
    """How many times better the pick's search score is than a prediction: the interval
    counts the search's noise (the pick's figure and the measured neighbour's) and the
    prediction's own error; never ``faster`` (a prediction shows no difference real)."""
    x = prediction.score
    diff = math.log(pick / x) if objective.direction == "maximize" else math.log(x / pick)
    se = math.sqrt(2 * noise.sigma**2 + math.log1p(prediction.error) ** 2)
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
