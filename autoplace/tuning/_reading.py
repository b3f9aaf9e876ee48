"""A study read back, read only, for ``explain``, ``report`` and ``explain --measure``:
the storage a recommendation file names (refused when gone, never created), the study of
a model file found by its name, and its history up to what a file's verdict rested on."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autoplace._paths import shown
from autoplace.errors import BadInputError, StorageError
from autoplace.study import (
    History,
    StudyReader,
    ask_storage,
    missing_study_file,
    normalize_url,
    open_storage,
    study_names,
)
from autoplace.tuning._judge import Judged

_SECOND = dt.timedelta(seconds=1)


def cut(doc: Mapping[str, Any] | None, judged: Judged) -> int | dt.datetime | None:
    """Where a recommendation file's measurements end: the newest trial number its verdict
    read, else (a file from before it was recorded) the time it was written."""
    if doc is None:
        return None
    if judged.newest_trial >= 0:
        return judged.newest_trial
    return local(written(doc.get("created")))


def written(text: Any) -> dt.datetime | None:
    """A time a recommendation file records, aware (UTC where it says no zone)."""
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def local(when: dt.datetime | None) -> dt.datetime | None:
    """``when`` as Optuna stamps trials: local and naive."""
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone().replace(tzinfo=None)


def run_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The run length a recommendation file's objective was made with (time-to-finish)."""
    return {
        k: v for k, v in doc["objective"].items() if k in ("steps", "samples", "epochs", "feeding")
    }


def opened(url: str, named_in: Path | None) -> Any:
    """The storage at ``url``; ``named_in``: the recommendation file that named it, which
    keeps it without credentials (a reader of a shared storage passes their own). Read
    only: a study file that is not there is not made (nor tables in one)."""
    try:
        return open_storage(url, reading=True)
    except StorageError as exc:
        if named_in is None:
            raise
        raise type(exc)(
            f"{exc} (the storage {named_in} names, kept without credentials: pass --storage "
            "URL to read it with yours)"
        ) from None


def refuse_gone(url: str, named_in: Path) -> None:
    """Refuse the study file a recommendation file names when it holds no study now (moved,
    deleted, emptied): reading it would find nothing, and must not create it."""
    gone = missing_study_file(url)
    if gone is None:
        return
    what = (
        "is gone (moved or deleted since the tune)"
        if not gone.exists()
        else "holds no study (no Optuna tables in it: emptied or replaced since the tune)"
    )
    raise BadInputError(
        f"the study database {shown(gone)} named in {shown(named_in)} {what}: run `autoplace "
        "tune` again, or pass --storage URL where the study is now"
    )


def stored_url(doc: dict[str, Any], path: Path) -> str:
    stored = doc["study"].get("storage", "")
    if "***" in stored or not stored:
        raise BadInputError(
            f"{path} names its study storage with the password masked: pass --storage URL"
        )
    return normalize_url(stored)


def find_study(storage: Any, url: str, model: Path, workload: str | None, objective: str) -> str:
    """The study of ``model``'s ``workload`` for ``objective`` in ``storage`` (the default
    study name starts with workload, objective and the first 8 hex digits of the hash)."""
    sha = hashlib.sha256(model.read_bytes()).hexdigest()[:8]
    names = study_names(storage, url)
    found = [
        n
        for n in names
        if f"-{objective}-{sha}-" in n and (workload is None or n.startswith(f"{workload}-"))
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise BadInputError(
            f"no {objective} study of {model} (this version of it) in the storage: run "
            f"`autoplace tune {model}` first, or pass --study NAME / --storage URL"
        )
    raise BadInputError(
        f"{model} has several {objective} studies ({', '.join(sorted(found))}: one per "
        "workload and set of widths searched): pick one with --study NAME or --workload NAME"
    )


def read_history(
    storage: Any,
    url: str,
    name: str,
    cut: int | dt.datetime | None = None,
    since: dt.datetime | None = None,
) -> tuple[History, int, Sequence[str], Sequence[int], Mapping[str, Any]]:
    """The history of study ``name`` up to ``cut`` if given (a file's newest trial number,
    or the time it was written: see :func:`_cut`), from ``since`` on if given (a
    remeasure's start); how many measurements it gained after ``cut``; its devices and
    widths. A missing study is bad input. Read only: a tune running on the study right
    now loses nothing to it."""
    try:
        ask_storage(storage, url, lambda s: s.get_study_id_from_name(name))
    except KeyError:
        raise BadInputError(
            f"no study {name!r} in the storage: run `autoplace tune` first, or pass --storage"
        ) from None
    reader = StudyReader.open(storage, url, name, since=since)
    everything = reader.history()
    if cut is None:
        history = everything
    elif isinstance(cut, int):
        history = reader.history(upto=cut)
    else:  # ``created`` is cut to the second, after the last measurement finished
        history = reader.history(until=cut + _SECOND)
    configs = list(history.figures())
    devices = sorted({c.device for c in configs})
    widths = sorted({c.width for c in configs if c.width is not None})
    return history, len(everything) - len(history), devices, widths, reader.study_attrs
