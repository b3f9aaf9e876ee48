"""The verdict, drawn once: :func:`judge` turns a study's final :class:`~._standing.Standing`
into a :class:`Verdict` holding the standing, its explanation and its findings.

Everything a tune says is a view of that one value, as hyperfine's exports are of its one
result: the recommendation file (:mod:`._document`), the answer a study keeps for
``recommend()`` (:mod:`._answer`), the terminal (``autoplace.report``), the HTML report
and the dashboard's note. None of them draws a conclusion of its own. ``autoplace
explain`` and ``report`` of a file judge the study again as the file was judged
(:class:`Judged`, the file's ``[verdict]``), so that they say what the file says.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from autoplace import units
from autoplace.answer import Question
from autoplace.config import Config
from autoplace.explaining import MEMORY_MARGIN, Explanation, explain_figures
from autoplace.findings import Finding
from autoplace.findings import as_dict as finding_dict
from autoplace.limits import MachineLimits
from autoplace.tuning._findings import findings
from autoplace.tuning._scored import Scored
from autoplace.tuning._search import REACH
from autoplace.tuning._space import Space
from autoplace.tuning._standing import Standing


@dataclasses.dataclass(frozen=True)
class Judged:
    """What a verdict is drawn under: the tune's options that change it, and which of the
    study's measurements it rests on (the file's ``[verdict]``).

    Attributes:
        if_busy: the busy-machine policy (its finding's fix depends on it).
        max_deviation: a lower precision's tolerance against float32 (``None``: off).
        steps_per_call: the K the tune could time (its untimed sentence depends on them).
        since: a ``--remeasure``'s start: only measurements from then on count.
        newest_trial: the highest trial number the verdict read (``-1``: unknown).
    """

    if_busy: str = "warn"
    max_deviation: float | None = None
    steps_per_call: tuple[int, ...] = ()
    since: dt.datetime | None = None
    newest_trial: int = -1

    def as_dict(self) -> dict[str, Any]:
        return {
            "if_busy": self.if_busy,
            "max_deviation": "off" if self.max_deviation is None else self.max_deviation,
            "steps_per_call": list(self.steps_per_call),
            "since": self.since.isoformat() if self.since is not None else None,
            "newest_trial": self.newest_trial,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], default_deviation: float | None) -> Judged:
        """The options a file's ``[verdict]`` records (a file from before it: defaults)."""
        allowed = data.get("max_deviation", default_deviation)
        since = data.get("since")
        newest = data.get("newest_trial")
        return cls(
            if_busy=str(data.get("if_busy", "warn")),
            max_deviation=None if allowed in (None, "off") else float(allowed),
            steps_per_call=tuple(data.get("steps_per_call", ())),
            since=dt.datetime.fromisoformat(since) if since else None,
            newest_trial=int(newest) if isinstance(newest, int) else -1,
        )


@dataclasses.dataclass(frozen=True)
class Tuned:
    """What a verdict is about: the study (its name and storage, credentials masked), what
    it measures, where and for what (its identity: ``workload``, ``hardware``, ``software``,
    ``objective``), the space searched and each device's memory; the question the tune
    asked (what its answer holds for) and the batch sizes a launcher's question asks of
    this workload (its default ones)."""

    study: str
    storage: str
    identity: Mapping[str, Any]
    space: Space
    memory: Mapping[str, int | None]
    question: Question
    default_batches: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A study's verdict, every conclusion drawn: the standing (the pick, its ranking, what
    each phase found), the explanation (why it wins, in sentences, with the cost model
    behind them) and the findings (what the tune noticed), under ``judged``."""

    standing: Standing
    explanation: Explanation
    findings: tuple[Finding, ...]
    judged: Judged
    #: The explanation's first sentences: the pick's (its ranking's), then each phase's
    #: after it; the rest are its figures' (the cost models').
    said: tuple[str, ...] = ()
    phases: tuple[str, ...] = ()

    @property
    def best(self) -> Scored | None:
        return self.standing.best

    @property
    def claims(self) -> tuple[str, ...]:
        """What the verdict says beyond the pick and the closest: why a hair behind another
        it is the pick, what it is faster or slower than beyond the machine's resolution,
        why a row of the table reads better in the search (the finding says the group)."""
        ranking = self.standing.ranking
        if ranking is None:
            return self.said[1:]
        closest = ranking.closest
        return (
            *ranking.preferred(),
            *(
                f"The pick is {c.sentence(s.config.label())}."
                for s, c in ranking.comparisons_by_ratio()
                if c.verdict != "within" and (closest is None or s is not closest[0])
            ),
            *self.standing.above_pick(),
        )

    @property
    def why(self) -> tuple[str, ...]:
        """What the figures say, after the pick's and the phases' sentences."""
        return self.explanation.sentences[len(self.said) + len(self.phases) :]

    def note(self) -> str:
        """The study's note for optuna-dashboard: why the winner wins, in Markdown."""
        lines = ["## Why the winner wins (autoplace)", ""]
        lines += [f"* {s}" for s in self.explanation.sentences]
        lines += ["", "The figure beside this note: throughput against batch size, per arm."]
        return "\n".join(lines)


def judge(
    standing: Standing,
    space: Space,
    memory: Mapping[str, int | None],
    judged: Judged,
    limits: MachineLimits | None = None,
    margin: float = MEMORY_MARGIN,
) -> Verdict:
    """The verdict on ``standing`` (a study's, judged under ``judged``): the pick's sentences
    (the ranking's, each phase's), then the explanation of its figures (each arm against the
    machine's ``limits`` where they were measured: ``autoplace limits``; a tune never waits
    on them), and the findings."""
    best = standing.best
    spread = standing.search_spread
    explanation = explain_figures(
        standing.figures,
        best.measurement if best else None,
        [s.measurement for s in standing.per_group[1:]],
        loop=standing.objective.loop,
        largest_batch=max(space.batch_sizes),
        device_memory=memory,
        margin=margin,
        noise=spread.sigma if spread is not None else None,
        busy=standing.busy,
        limits=limits,
        rates=_rates(standing),
    )
    found = findings(standing, judged.if_busy)
    said = (*_verdict_sentences(standing), *standing.above_pick()) if best is not None else ()
    results = tuple(x for r in standing.results.values() for x in r.sentences())
    explanation = dataclasses.replace(
        explanation,
        sentences=(*said, *results, *explanation.sentences),
        findings=tuple(map(finding_dict, found)),
    )
    return Verdict(standing, explanation, found, judged, said, results)


def _alone(standing: Standing) -> tuple[str, ...]:
    """Why the pick was timed in windows alone: nothing else came near it in the search."""
    pick, objective = standing.best, standing.objective
    assert pick is not None
    other = next((s for s in standing.searched if s.config != pick.config), None)
    if other is None or pick.searched is None:
        return ()
    ratio = objective.gain(other.score, pick.searched) + 1
    return (
        f"No other configuration came within {REACH:.0%} of it in the search: the next, "
        f"{other.config.label()}, read {ratio:.2f}x its figure there (the search's figures, "
        "one shared process), so none was timed beside it in windows.",
    )


def _rates(standing: Standing) -> dict[Config, float] | None:
    """The fed samples per second the table shows (the search's, on one scale), where the
    objective ranks on the fed loop's samples per second."""
    objective = standing.objective
    if not objective.rate or objective.loop != "fed":
        return None
    return {c: s for c, s in standing.estimates.items() if s is not None}


#: The most of the search's best a verdict without windows names.
SEARCH_TOP = 3


def _verdict_sentences(standing: Standing) -> tuple[str, ...]:
    """The pick in words: the ranking's sentences, or, where no window confirmed it, the
    search's top few, said to be the search's and not confirmed."""
    ranking = standing.ranking
    if ranking is not None:
        alone = len(ranking.ranked) == 1 and len(standing.searched) > 1
        return (*ranking.sentences(), *(_alone(standing) if alone else ()))
    top = standing.searched[:SEARCH_TOP]
    unit = standing.objective.unit
    named = ", ".join(f"{s.config.label()} ({units.score(s.score, unit)})" for s in top)
    return (
        f"{top[0].config.label()} leads the search ({standing.objective.name}); no window in "
        f"fresh processes confirmed it: the search's top {len(top)}, not confirmed: {named}.",
    )
