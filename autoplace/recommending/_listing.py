"""What ``autoplace cache list`` shows: every file in the cache, a usable answer or machine
description, or damaged (never a traceback: a cache is written by other processes and
versions, and by hand)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autoplace.answer import Answer
from autoplace.recommending._cache import Cache


def listed(cache: Cache) -> list[dict[str, Any]]:
    """One row per cached answer (its key, model, workload, objective, pick, when, software
    and source) and one per damaged file, answers or machine descriptions alike (those say
    ``damaged``, with the file and why)."""
    rows = []
    for path in _files(cache.root / "answers"):
        entry, why = _json(path)
        row = _answer_row(path, entry) if entry is not None else None
        rows.append(row or _damaged(path, why or "not an answer autoplace wrote"))
    for path in _files(cache.root / "machines"):
        entry, why = _json(path)
        devices = entry.get("devices") if isinstance(entry, dict) else None
        if not (isinstance(devices, list) and all(isinstance(d, dict) for d in devices)):
            rows.append(_damaged(path, why or "not a machine's devices"))
    return rows


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _json(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(path.read_text()), None
    except UnicodeDecodeError:
        return None, "not text"
    except ValueError:
        return None, "not JSON"
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"


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
