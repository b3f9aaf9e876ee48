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
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.answer import Question
from autoplace.explaining import MEMORY_MARGIN, Explanation, explain_standing
from autoplace.findings import Finding
from autoplace.findings import as_dict as finding_dict
from autoplace.limits import MachineLimits
from autoplace.tuning._findings import findings
from autoplace.tuning._fusing import untimed
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
    """A study's verdict, every conclusion drawn: the standing (the pick, its comparisons,
    what it cannot be told apart from), the explanation (why it wins, in sentences, with
    the cost model behind them) and the findings (what the tune noticed), under
    ``judged``."""

    standing: Standing
    explanation: Explanation
    findings: tuple[Finding, ...]
    judged: Judged

    @property
    def best(self) -> Any:
        return self.standing.best

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
    """The verdict on ``standing`` (a study's, judged under ``judged``): its explanation,
    each arm against the machine's ``limits`` where they were measured (``autoplace
    limits``; a tune never waits on them), the findings, and, where the pick's steps per
    call were not timed because the windows could not have shown their gain, why
    (:func:`._fusing.untimed`), after the verdict's sentence."""
    explanation = explain_standing(
        standing, space=space, device_memory=memory, margin=margin, limits=limits
    )
    found = findings(standing, judged.if_busy)
    explanation = dataclasses.replace(explanation, findings=tuple(map(finding_dict, found)))
    why = _untimed(standing, space, judged.steps_per_call)
    if why is not None:
        first, *rest = explanation.sentences
        explanation = dataclasses.replace(explanation, sentences=(first, why, *rest))
    return Verdict(standing, explanation, found, judged)


def _untimed(standing: Standing, space: Space, steps_per_call: Sequence[int]) -> str | None:
    """Why the pick's steps per call were not timed, where they were not (else ``None``)."""
    best = standing.best
    if best is None or standing.fusing is not None:
        return None
    fixed_batch = len(space.batch_sizes) == 1
    why = untimed(best.config, standing.figures, standing.objective, steps_per_call,
                  fixed_batch, standing.noise)  # fmt: skip
    return None if why is None else why.text()
