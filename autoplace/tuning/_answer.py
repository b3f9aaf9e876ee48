"""A tune's answer, a view of its :class:`~._judge.Verdict` (the value is
:class:`autoplace.answer.Answer`: what a study keeps and ``recommend()`` caches)."""

from __future__ import annotations

from autoplace.answer import (
    ANSWER_SCHEMA,
    Answer,
    AnswerObjective,
    AnswerWorkload,
    Candidate,
    Compared,
)
from autoplace.tuning._compare import Comparison
from autoplace.tuning._fusing import Fusing
from autoplace.tuning._judge import Tuned, Verdict
from autoplace.tuning._scored import Scored
from autoplace.tuning._standing import Standing

#: The ranked configurations an answer keeps, best first (a study attribute stays small).
MAX_CANDIDATES = 64


def build_answer(verdict: Verdict, tuned: Tuned, created: str) -> Answer:
    """The answer of a finished tune, a view of its ``verdict`` on ``tuned``'s study made at
    ``created`` (the recommendation file's time): the pick and its comparisons, every
    ranked configuration with the figures a caller's limits are checked against, and the
    explanation's first two sentences as the why."""
    standing, identity = verdict.standing, tuned.identity
    objective, ranking = standing.objective, standing.ranking
    hardware, workload = identity["hardware"], identity["workload"]
    closest = ranking.closest if ranking is not None else None
    group = ranking.group if ranking is not None else []
    return Answer(
        schema=ANSWER_SCHEMA,
        created=created,
        workload=AnswerWorkload(
            path=workload["path"],
            sha256=workload["sha256"],
            name=workload.get("name"),
            widths=tuple(w for w in tuned.space.widths if w is not None),
            default_width=workload.get("default_width"),
            batch_sizes=tuned.default_batches,
        ),
        objective=AnswerObjective(
            name=objective.name,
            direction=objective.direction,
            unit=objective.unit,
            run=dict(objective.run),
        ),
        hardware={k: v for k, v in hardware.items() if k != "host"},
        measured_on=hardware.get("host"),
        software=dict(identity["software"]),
        study=tuned.study,
        storage=tuned.storage,
        device_memory=dict(tuned.memory),
        why=tuple(verdict.explanation.sentences[:2]),
        closest=None if closest is None else _compared(*closest),
        equivalent=tuple(_compared(s, c) for s, c in group),
        findings=tuple(f.text() for f in verdict.findings),
        candidates=tuple(
            _candidate(s, standing if n == 0 else None)
            for n, s in enumerate(standing.ranked[:MAX_CANDIDATES])
        ),
        question=tuned.question,
    )


def _compared(s: Scored, c: Comparison) -> Compared:
    k = s.config
    return Compared(k.device, k.batch_size, k.precision, k.width, c.ratio, c.low, c.high,
                    c.verdict, c.windows)  # fmt: skip


def _candidate(s: Scored, pick_of: Standing | None = None) -> Candidate:
    """A ranked configuration; the pick (``pick_of`` its standing) with the steps per call
    its windows recommend, and that call's peak memory."""
    m = s.measurement
    one_off = [x for x in (m.lower_s, m.compile_s) if x is not None]
    k = pick_of.steps_per_call if pick_of is not None else 1
    fusing = pick_of.fusing if pick_of is not None else None
    fused = fusing.figures if isinstance(fusing, Fusing) and k > 1 else None
    feeding = pick_of.feeding if pick_of is not None else None
    gain = feeding.pick.gain("prefetch") if feeding and feeding.pick.config == s.config else None
    return Candidate(
        device=m.device,
        batch_size=m.batch_size,
        precision=m.precision,
        width=m.width,
        score=s.score,
        confirmed=s.confirmed,
        step_s=m.step.step_s,
        fed_step_s=m.fed.step_s,
        compile_s=sum(one_off) if one_off else None,
        peak_bytes=fused.peak_bytes if fused is not None else m.peak_bytes,
        peak_bytes_source=fused.peak_bytes_source if fused is not None else m.peak_bytes_source,
        deviation_vs_float32=m.deviation_vs_float32,
        steps_per_call=k,
        prefetch_gain=gain,
    )
