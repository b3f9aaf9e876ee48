"""What ``autoplace cache list`` shows: every file in the cache, a usable answer, machine
description or machine's limits, or damaged (never a traceback: a cache is written by other
processes and versions, and by hand). A file is listed as usable only when a look-up would
use it: whatever a look-up ignores, ``cache list`` shows as damaged, with why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autoplace.answer import Answer
from autoplace.host import ENTRY_SCHEMA, Cache


def listed(cache: Cache) -> list[dict[str, Any]]:
    """One row per cached answer (its key, model, workload, objective, pick, when, software
    and source) and one per damaged file, answers, machine descriptions and limits alike
    (those say ``damaged``, with the file and why)."""
    from autoplace.limits import MachineLimits

    rows = []
    for path in _files(cache.root / "answers"):
        entry, why = _entry(path)
        row = _answer_row(path, entry) if entry is not None else None
        rows.append(row or _damaged(path, why or "not an answer autoplace wrote"))
    for path in _files(cache.root / "machines"):
        entry, why = _entry(path)
        devices = entry.get("devices") if entry is not None else None
        if not (isinstance(devices, list) and all(isinstance(d, dict) for d in devices)):
            rows.append(_damaged(path, why or "not a machine's devices"))
    for path in _files(cache.root / "limits"):
        entry, why = _entry(path)
        try:
            if entry is not None:
                MachineLimits.from_dict(entry)
        except ValueError:
            why = "not a machine's limits"
        if why is not None:
            rows.append(_damaged(path, why))
    return rows


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _entry(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The cache entry at ``path`` as a look-up reads it (:meth:`Cache.read`), or ``None``
    and why it would be ignored."""
    try:
        entry = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not text"
    except ValueError:
        return None, "not JSON"
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    if not isinstance(entry, dict):
        return None, f"JSON, but {_JSON_KINDS.get(type(entry), 'a number')}, not an object"
    if entry.get("entry_schema") != ENTRY_SCHEMA:
        if "entry_schema" not in entry:
            return None, "no entry_schema: not written by autoplace"
        held = entry["entry_schema"]
        return None, f"another layout: entry_schema {held!r}, where autoplace reads {ENTRY_SCHEMA}"
    return entry, None


_JSON_KINDS = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}


def _damaged(path: Path, why: str) -> dict[str, Any]:
    return {"key": path.stem, "damaged": True, "why": why, "file": str(path)}


def _answer_row(path: Path, entry: Any) -> dict[str, Any] | None:
    """The row of a cached answer, or ``None`` when the entry is not one."""
    try:
        answer, key = Answer.from_dict(entry["answer"]), entry.get("key", {})
        best = answer.candidates[0]
        return {
            "key": path.stem,
            "model": key["workload"]["path"],
            "workload": answer.workload.name,
            "objective": key["objective"]["name"],
            "pick": {k: getattr(best, k) for k in ("device", "batch_size", "precision", "width")},
            "measured": answer.created,
            "software": dict(key.get("software") or {}),
            "source": entry.get("source"),
        }
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return None
