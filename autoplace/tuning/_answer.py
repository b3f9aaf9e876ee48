"""A tune's answer, built from its recommendation document and final standing (the value
is :class:`autoplace.answer.Answer`: what a study keeps and ``recommend()`` caches)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoplace.answer import Answer, AnswerObjective, AnswerWorkload, Candidate, Compared
from autoplace.fingerprint import ANSWER_SCHEMA
from autoplace.tuning._margin import Scored
from autoplace.tuning._verdict import Standing

#: The ranked configurations an answer keeps, best first (a study attribute stays small).
MAX_CANDIDATES = 64


def build_answer(document: dict[str, Any], standing: Standing, sentences: Sequence[str]) -> Answer:
    """The answer of a finished tune: from its recommendation ``document``, the final
    ``standing`` and the explanation's ``sentences`` (the first two are kept as the why)."""
    objective = document["objective"]
    hardware = document["fingerprint"]["hardware"]
    workload = document["workload"]
    rec = document["recommendation"]
    closest = rec.get("closest")
    return Answer(
        schema=ANSWER_SCHEMA,
        created=document["created"],
        workload=AnswerWorkload(
            path=workload["path"],
            sha256=workload["sha256"],
            name=workload.get("name"),
            widths=tuple(document["search_space"]["widths"]),
            default_width=workload.get("default_width"),
        ),
        objective=AnswerObjective(
            name=objective["name"],
            direction=objective.get("direction"),
            unit=objective.get("unit"),
            run={
                k: v
                for k, v in objective.items()
                if k not in ("name", "direction", "unit", "description")
            },
        ),
        hardware={k: v for k, v in hardware.items() if k != "host"},
        measured_on=hardware.get("host"),
        software=document["fingerprint"]["software"],
        study=document["study"]["name"],
        storage=document["study"]["storage"],
        device_memory=document["search_space"]["device_memory"],
        why=tuple(sentences[:2]),
        closest=None if closest is None else _compared(closest),
        equivalent=tuple(_compared(e) for e in rec.get("equivalent", [])),
        findings=tuple(f["text"] for f in document.get("findings", [])),
        candidates=tuple(
            _candidate(s, standing if n == 0 else None)
            for n, s in enumerate(standing.ranked[:MAX_CANDIDATES])
        ),
    )


def _compared(c: dict[str, Any]) -> Compared:
    return Compared(
        device=c["device"],
        batch_size=c["batch_size"],
        precision=c["precision"],
        width=c.get("width"),
        ratio=c.get("ratio"),
        low=c.get("low"),
        high=c.get("high"),
        verdict=c.get("verdict"),
        windows=c.get("windows"),
        margin=c.get("margin"),
        noise=c.get("noise"),
        significant=c.get("significant"),
    )


def _candidate(s: Scored, pick_of: Standing | None = None) -> Candidate:
    """A ranked configuration; the pick (``pick_of`` its standing) with the steps per call
    its windows recommend, and that call's peak memory."""
    m = s.measurement
    one_off = [x for x in (m.lower_s, m.compile_s) if x is not None]
    k = pick_of.steps_per_call if pick_of is not None else 1
    fused = pick_of.fusing.figures if pick_of is not None and pick_of.fusing and k > 1 else None
    return Candidate(
        device=m.device,
        batch_size=m.batch_size,
        precision=m.precision,
        width=m.width,
        score=s.score,
        confirmed=s.confirmed,
        step_s=m.step_s,
        fed_step_s=m.fed_step_s,
        compile_s=sum(one_off) if one_off else None,
        peak_bytes=fused.peak_bytes if fused is not None else m.peak_bytes,
        peak_bytes_source=fused.peak_bytes_source if fused is not None else m.peak_bytes_source,
        deviation_vs_float32=m.deviation_vs_float32,
        steps_per_call=k,
        prefetch_gain=_prefetch_gain(s, pick_of),
    )


def _prefetch_gain(s: Scored, pick_of: Standing | None) -> float | None:
    """How much prefetching sped up the pick's steps in its feeding windows, if timed."""
    fed = pick_of.feeding if pick_of is not None else None
    if fed is None or fed.pick.config != s.config:
        return None
    return fed.pick.gain("prefetch")
