"""The explanation of a tuning standing's pick: what ``tune`` writes in its recommendation
file, with the verdict (what wins, by how much) as its first sentence."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from autoplace import units
from autoplace.explaining._explanation import MEMORY_MARGIN, Explanation, explain_figures


def explain_standing(
    standing: Any,
    *,
    space: Any = None,
    device_memory: Mapping[str, int | None] | None = None,
    margin: float = MEMORY_MARGIN,
) -> Explanation:
    """The explanation of a :class:`~autoplace.tuning.Standing`'s pick (what ``tune`` adds
    to its recommendation file)."""
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
    )
    if best is None:
        return explanation
    return _with_verdict(explanation, standing)


def _with_verdict(explanation: Explanation, standing: Any) -> Explanation:
    """The explanation with its first sentence: what wins, and by how much."""
    best, objective = standing.best, standing.objective
    score = units.score(best.score, objective.unit)
    text = f"{explanation.winner} wins ({objective.name}: {score}"
    runner = standing.runner_up
    if runner is not None:
        other, c = runner
        verdict = "beyond the noise" if c.significant else "within the noise"
        if c.margin >= 0:
            text += (
                f"), {units.percent(c.margin)} ahead of {other.config.label()} "
                f"(noise ±{units.percent(c.noise)}: {verdict})."
            )
        else:  # equal within the noise, and the preferred of equals
            text += (
                f"), {units.percent(-c.margin)} behind {other.config.label()}, within the "
                f"noise (±{units.percent(c.noise)}): of equals, autoplace prefers float32, "
                "then the smaller batch."
            )
    else:
        text += ")."
    return dataclasses.replace(explanation, sentences=(text, *explanation.sentences))
