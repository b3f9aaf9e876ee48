"""A tune's answer, compact: what :func:`autoplace.recommend` caches and a study keeps.

The recommendation file holds the whole evidence; a launcher needs less, but enough to
honour its own limits (a batch-size cap, a memory margin, a numeric tolerance) without
measuring again: the pick with its margin, and every ranked configuration with the
figures those limits are checked against. It is JSON, versioned by
:data:`autoplace.fingerprint.ANSWER_SCHEMA` (an answer of another is not read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoplace.fingerprint import ANSWER_SCHEMA
from autoplace.tuning._margin import Scored
from autoplace.tuning._verdict import Standing

#: The ranked configurations an answer keeps, best first (a study attribute stays small).
MAX_CANDIDATES = 64
#: What an answer keeps of a configuration compared with the pick.
_COMPARED = (
    "device",
    "batch_size",
    "precision",
    "width",
    "ratio",
    "low",
    "high",
    "verdict",
    "windows",
    "margin",
    "noise",
    "significant",
)


def build_answer(
    document: dict[str, Any], standing: Standing, sentences: Sequence[str]
) -> dict[str, Any]:
    """The answer of a finished tune: from its recommendation ``document``, the final
    ``standing`` and the explanation's ``sentences`` (the first two are kept as the why)."""
    objective = {k: v for k, v in document["objective"].items() if k != "description"}
    hardware = document["fingerprint"]["hardware"]
    closest = document["recommendation"].get("closest")
    return {
        "answer_schema": ANSWER_SCHEMA,
        "created": document["created"],
        "workload": {
            **document["workload"],
            "widths": document["search_space"]["widths"],
        },
        "objective": objective,
        "hardware": {k: v for k, v in hardware.items() if k != "host"},
        "measured_on": hardware.get("host"),
        "software": document["fingerprint"]["software"],
        "study": {k: document["study"][k] for k in ("name", "storage")},
        "device_memory": document["search_space"]["device_memory"],
        "why": list(sentences[:2]),
        "closest": None if closest is None else {k: closest.get(k) for k in _COMPARED},
        "equivalent": [
            {k: e.get(k) for k in _COMPARED}
            for e in document["recommendation"].get("equivalent", [])
        ],
        "findings": [f["text"] for f in document.get("findings", [])],
        "candidates": [_candidate(s) for s in standing.ranked[:MAX_CANDIDATES]],
    }


def _candidate(s: Scored) -> dict[str, Any]:
    m = s.measurement
    one_off = [x for x in (m.lower_s, m.compile_s) if x is not None]
    return {
        "device": m.device,
        "batch_size": m.batch_size,
        "precision": m.precision,
        "width": m.width,
        "score": s.score,
        "confirmed": s.confirmed,
        "step_s": m.step_s,
        "fed_step_s": m.fed_step_s,
        "compile_s": sum(one_off) if one_off else None,
        "peak_bytes": m.peak_bytes,
        "peak_bytes_source": m.peak_bytes_source,
        "deviation_vs_float32": m.deviation_vs_float32,
    }
