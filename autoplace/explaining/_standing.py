"""The explanation of a tuning standing's pick: what ``tune`` writes in its recommendation
file, with the verdict (what wins, by how much) as its first sentence."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from autoplace import units
from autoplace.explaining._explanation import MEMORY_MARGIN, explain_figures
from autoplace.explaining._value import Explanation
from autoplace.limits import MachineLimits


def explain_standing(
    standing: Any,
    *,
    space: Any = None,
    device_memory: Mapping[str, int | None] | None = None,
    margin: float = MEMORY_MARGIN,
    limits: MachineLimits | None = None,
) -> Explanation:
    """The explanation of a :class:`~autoplace.tuning.Standing`'s pick (what ``tune`` adds
    to its recommendation file). Causes are named only where the points support them
    (not on a busy machine, nor for a bend within the search's noise)."""
    best = standing.best
    others = [s.measurement for s in standing.per_group[1:]]
    largest = max(space.batch_sizes) if space is not None else None
    explanation = explain_figures(
        standing.figures,
        best.measurement if best else None,
        others,
        loop=standing.objective.loop,
        largest_batch=largest,
        device_memory=device_memory,
        margin=margin,
        noise=standing.search_noise.sigma if standing.search_noise is not None else None,
        busy=standing.interference is not None and standing.interference.busy,
        limits=limits,
    )
    if best is None:
        return explanation
    return _with_verdict(explanation, standing)


def _with_verdict(explanation: Explanation, standing: Any) -> Explanation:
    """The explanation with its first sentence: what wins, and against the configuration
    closest to it, how many times faster, with its interval and verdict."""
    best, objective = standing.best, standing.objective
    score = units.score(best.score, objective.unit)
    text = f"{explanation.winner} wins ({objective.name}: {score})"
    closest = standing.closest
    if closest is not None:
        other, c = closest
        text += f": {c.sentence(other.config.label())}"
        if c.ratio < 1 and c.verdict in ("equal", "undecided"):
            text += (
                "; of configurations within 2% of each other, autoplace prefers float32, "
                "then the smaller batch"
            )
    fused = _fused(standing)
    fed = () if standing.feeding is None else standing.feeding.sentences(objective.feeding)
    return dataclasses.replace(
        explanation, sentences=(text + ".", *fused, *fed, *explanation.sentences)
    )


def _fused(standing: Any) -> tuple[str, ...]:
    """The sentence on steps per call, where the tune timed them (``standing.fusing``): at
    the pick's batch, what the best K did against one a call, and what to run."""
    fusing = standing.fusing
    if fusing is None:
        return ()
    share = fusing.fixed_share
    why = "" if share is None else f" (its fixed cost is {share:.0%} of a step at one a call)"
    return (f"At batch {standing.best.config.batch_size}{why}, {fusing.text()}.",)
