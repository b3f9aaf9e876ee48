"""The recommendation document: what a tune found, as plain data.

A view of the tune's :class:`~._judge.Verdict`, which it only reads (it draws no
conclusion of its own), so the file, ``tune --json`` and the terminal say the same thing.
Its schema is in docs/recommendation-file.md; :mod:`autoplace.recommendation` writes and
reads it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from autoplace.config import Config
from autoplace.devices import device_names
from autoplace.findings import as_dict as finding_dict
from autoplace.measurement import Measurement
from autoplace.recommendation import SCHEMA_VERSION
from autoplace.tuning._compare import Comparison
from autoplace.tuning._failures import over_memory
from autoplace.tuning._judge import Tuned, Verdict
from autoplace.tuning._scored import Scored
from autoplace.tuning._standing import Standing


def build_document(verdict: Verdict, tuned: Tuned) -> dict[str, Any]:
    """The recommendation file's content, a view of ``verdict`` on ``tuned``'s study: the
    pick and its evidence, ``[explanation]`` (why it wins), ``[machine]`` (how busy the
    machine was), ``[[findings]]``, and ``[verdict]`` (the options it was drawn under, so
    that ``explain`` and ``report`` of the file draw the same one)."""
    standing, space = verdict.standing, tuned.space
    figures, best, objective = standing.figures, standing.best, standing.objective
    identity = tuned.identity
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "recommendation": placement(best) if best else {},
        "objective": {
            "name": objective.name,
            "direction": objective.direction,
            "unit": objective.unit,
            "description": objective.describe(),
            **objective.run,
        },
        "workload": dict(identity["workload"]),
        "fingerprint": {"hardware": identity["hardware"], "software": identity["software"]},
        "study": _study(standing, tuned),
        # The question the tune asked: what its pick holds for (explain, report and show
        # of this file judge within it, whatever else the study holds).
        "search_space": {
            **tuned.question.as_dict(),
            "widths": [w for w in space.widths if w is not None],
            "device_memory": dict(tuned.memory),
        },
        "verdict": verdict.judged.as_dict(),
        "explanation": verdict.explanation.as_dict(),
    }
    if standing.interference is not None:
        doc["machine"] = standing.interference.as_dict()
    doc["findings"] = [finding_dict(f) for f in verdict.findings]
    if best is None:
        return doc
    _evidence(doc["recommendation"], standing, best)
    doc["alternatives"] = [
        placement(s)
        for d in space.devices
        if d != best.measurement.device and (s := standing.best_where(device=d)) is not None
    ]
    if len(space.widths) > 1:
        # Each width's best, with the batch sizes its arm ran at: one alone is one noisy
        # point, not the best of a curve, and the file and the terminal say so.
        doc["per_width"] = [
            {**placement(s), "arm_batches": _arm_batches(figures, s)}
            for w in space.widths
            if (s := standing.best_where(width=w)) is not None
        ]
    return doc


def _study(standing: Standing, tuned: Tuned) -> dict[str, Any]:
    """The file's ``[study]``: where the figures are, how many, what the search left out."""
    figures, space = standing.figures, tuned.space
    return {
        "name": tuned.study,
        "storage": tuned.storage,
        "measured": sum(1 for m in figures.values() if m.status == "ok"),
        "failed": sum(1 for m in figures.values() if m.status != "ok"),
        "space_size": len(space),
        "ended_arms": _arms(standing.ended),
        "inaccurate_arms": _arms(standing.inaccurate),
        "over_memory": [
            {**_named(c), "reason": why}
            for c, why in over_memory(figures, space.max_memory).items()
            if figures[c].status == "ok"
        ],
    }


def _evidence(rec: dict[str, Any], standing: Standing, best: Scored) -> None:
    """The pick's evidence, added to its ``[recommendation]``: its windows and how they
    spread, what each phase after the pick found (``[recommendation.<phase>]``), and how it
    stands against each other finalist, the closest and those it cannot be told apart from."""
    rec["steps_per_call"] = standing.steps_per_call
    rec["windows"] = len(best.windows)
    for name, result in standing.results.items():
        found = result.as_dict()
        if found:
            rec[name] = found
    ranking = standing.ranking
    if ranking is None:
        return
    rec["noise"] = ranking.as_dict()
    closest = ranking.closest
    if closest is not None:
        rec["closest"] = _compared(*closest)
    others = ranking.comparisons_by_ratio()
    if others:
        # The pick against every other confirmed finalist, on their windows.
        rec["finalists"] = [_compared(s, c) for s, c in others]
    group = ranking.group
    if group:
        # What the pick cannot be told apart from here, closest first.
        rec["equivalent"] = [_compared(s, c) for s, c in group]


def _arms(arms: Mapping[tuple[str, str, int | None], str]) -> list[dict[str, Any]]:
    """Arms with their reason (ended, or inaccurate), as the file keeps them."""
    return [{"device": d, "precision": p, "width": w, "reason": why}
            for (d, p, w), why in arms.items()]  # fmt: skip


def _arm_batches(figures: Mapping[Config, Measurement], s: Scored) -> list[int]:
    """The batch sizes that ran in ``s``'s arm (its device, precision and width)."""
    m = s.measurement
    return sorted(
        c.batch_size
        for c, f in figures.items()
        if (c.device, c.precision, c.width) == (m.device, m.precision, m.width) and f.status == "ok"
    )


def placement(s: Scored) -> dict[str, Any]:
    """Where and how a configuration runs, with the figures its score rests on."""
    m = s.measurement
    return {
        "device": m.device,
        "device_kind": m.device_kind,
        "batch_size": m.batch_size,
        # Several devices: each one, the mesh the batch is split over, each one's share.
        "devices": device_names(m.device),
        "mesh": {"batch": m.config.device_count},
        "per_device_batch_size": m.config.per_device_batch,
        "precision": m.precision,
        "width": m.width,
        "confirmed": s.confirmed,
        "figures": {
            "score": s.score,
            "score_votes": list(s.votes),
            "interleaved_with": m.interleaved_with,
            "fresh_process": m.fresh_process,
            "step_s": m.step.step_s,
            "step_spread": m.step.spread,
            "step_samples": m.step.samples,
            "fed_step_s": m.fed.step_s,
            "fed_step_spread": m.fed.spread,
            "fed_step_samples": m.fed.timed or None,
            "samples_per_s": m.step.rate(m.batch_size),
            "fed_samples_per_s": m.fed.rate(m.batch_size),
            "lower_s": m.lower_s,
            "compile_s": m.compile_s,
            "first_call_s": m.first_call_s,
            "transfer_s": m.transfer_s,
            "peak_bytes": m.peak_bytes,
            "peak_bytes_source": m.peak_bytes_source,
            "flops": m.flops,
            "reduced_bytes": m.reduced_bytes,
            "deviation_vs_float32": m.deviation_vs_float32,
            "page_faults_per_step": m.machine.page_faults_per_step,
            "resident_bytes": m.machine.resident_bytes,
            "resident_growth_per_step": m.machine.resident_growth_per_step,
        },
    }


def _named(c: Config) -> dict[str, Any]:
    return {"device": c.device, "batch_size": c.batch_size, "precision": c.precision,
            "width": c.width}  # fmt: skip


def _compared(s: Scored, comparison: Comparison) -> dict[str, Any]:
    """Another configuration, without figures, and how the pick compares with it: how many
    times better the pick scores (``ratio``) and its interval (``low``, ``high``), the
    ``verdict`` (``faster``, ``within``, ``slower``: :class:`~._compare.Comparison`), the
    ``windows`` both were timed in."""
    shown = {k: v for k, v in placement(s).items() if k != "figures"}
    return {**shown, "score": s.score, **comparison.as_dict()}
