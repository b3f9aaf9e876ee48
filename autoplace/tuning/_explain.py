"""``autoplace.explain``: the explanation of a study's pick, from a recommendation file or
a model file's study, reading the measurements the study holds (no JAX, no new runs)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autoplace import recommendation
from autoplace._paths import check_length, shown
from autoplace.errors import BadInputError, StorageError
from autoplace.explaining import MEMORY_MARGIN, Explanation
from autoplace.limits import MachineLimits, cached_limits
from autoplace.objectives import make_objective
from autoplace.settings import DEFAULT_MAX_DEVIATION
from autoplace.study import (
    History,
    OptunaStudyLog,
    ask_storage,
    check_study_name,
    close_storage,
    default_url,
    missing_study_file,
    normalize_url,
    open_storage,
    refuse_foreign_tables,
    study_names,
)
from autoplace.tuning._judge import Judged, Verdict, judge
from autoplace.tuning._space import Space
from autoplace.tuning._standing import Standing
from autoplace.tuning._verdict import standing

_SECOND = dt.timedelta(seconds=1)


@dataclasses.dataclass(frozen=True)
class StudyView:
    """A study read back for explaining: its name, its verdict (drawn by
    :func:`~._judge.judge`, as the tune drew it), space and each device's memory."""

    name: str
    verdict: Verdict
    space: Space
    device_memory: Mapping[str, int | None]

    @property
    def standing(self) -> Standing:
        return self.verdict.standing

    @property
    def explanation(self) -> Explanation:
        return self.verdict.explanation


def explain(
    source: str | Path,
    workload: str | None = None,
    *,
    storage: str | None = None,
    study: str | None = None,
    objective: str = "throughput",
    max_deviation: float | None = DEFAULT_MAX_DEVIATION,
    margin: float = MEMORY_MARGIN,
    measure: bool = False,
) -> Explanation:
    """Why a study's pick wins: ``source`` is a recommendation file (its study is read
    from the storage it names, or ``storage``) or a model file (its study in
    ``storage``, found by ``workload``, ``objective`` and the file's hash, or named by
    ``study``). Raises :class:`~autoplace.BadInputError` when the study holds too few
    measurements for a fit, saying which are missing and how to get them.

    ``measure``: first measure, in the study, the points a line still lacks (each arm that
    ran at one batch size only gets its neighbour; :class:`FitPoints`), resuming the tune
    with that strategy; a recommendation file given as ``source`` is rewritten. The
    explanation then says what it rests on, as always."""
    if measure:
        fill_fit(source, workload, storage=storage, study=study, objective=objective)
    return read_study(
        source,
        workload,
        storage=storage,
        study=study,
        objective=objective,
        max_deviation=max_deviation,
        margin=margin,
    ).explanation


def read_study(
    source: str | Path,
    workload: str | None = None,
    *,
    storage: str | None = None,
    study: str | None = None,
    objective: str = "throughput",
    max_deviation: float | None = DEFAULT_MAX_DEVIATION,
    margin: float = MEMORY_MARGIN,
) -> StudyView:
    """The study behind ``source`` (see :func:`explain`), judged and explained.

    A recommendation file is explained as it was written: from the measurements its
    study held then, judged under the options its tune was given (its ``[verdict]``), so
    that ``explain``, ``report`` and ``show`` of one file agree. Measurements the study
    gained since (a later tune of it) are counted, and the explanation says so first."""
    path = check_length(source, "recommendation or model file")
    if not path.is_file():
        raise BadInputError(f"no file at {shown(path)}: pass a recommendation file or a model file")
    doc = recommendation.read(path) if path.suffix == ".toml" else None
    judged = Judged(max_deviation=max_deviation)
    if doc is not None:
        study, objective = study or doc["study"]["name"], doc["objective"]["name"]
        judged = Judged.from_dict(doc.get("verdict") or {}, max_deviation)
        url = normalize_url(storage) if storage else _stored_url(doc, path)
    else:
        url = normalize_url(storage) if storage else default_url()
    run = _run_of(doc) if doc is not None else {}
    obj = make_objective(objective, **run) if run else make_objective(objective)
    read = _read(path, doc, url, storage, study, workload, obj, judged)
    history, later, attrs = read.history, read.later, read.attrs
    space = _space_of(history, read.devices, read.widths)
    memory = (doc or {}).get("search_space", {}).get("device_memory") or attrs.get(
        "device_memory", {}
    )
    now = standing(history, obj, space, judged.max_deviation)
    verdict = judge(now, space, memory, judged, _limits_for(doc, attrs), margin)
    if later:
        sentences = (_moved_on(path, doc, later), *verdict.explanation.sentences)
        explained = dataclasses.replace(verdict.explanation, sentences=sentences)
        verdict = dataclasses.replace(verdict, explanation=explained)
    return StudyView(read.name, verdict, space, memory)


@dataclasses.dataclass(frozen=True)
class _Read:
    """A study read for explaining (see :func:`_read_study`)."""

    name: str
    history: History
    later: int
    devices: Sequence[str]
    widths: Sequence[int]
    attrs: Mapping[str, Any]


def _read(
    path: Path,
    doc: Mapping[str, Any] | None,
    url: str,
    storage: str | None,
    study: str | None,
    workload: str | None,
    obj: Any,
    judged: Judged,
) -> _Read:
    """The study ``path`` names (a file's) or holds measurements of (a model file's), read
    up to what the file's verdict rested on, never created nor written."""
    if study is not None:
        check_study_name(study)
    refuse_foreign_tables(url)
    named_in = path if doc is not None and storage is None else None
    if named_in is not None:
        _refuse_gone(url, named_in)
    opened = _open(url, named_in)
    try:
        name = study or _find_study(opened, url, path, workload, obj.name)
        cut = _cut(doc, judged)
        history, later, devices, widths, attrs = _read_study(
            opened, url, name, obj, cut, _local(judged.since)
        )
    finally:
        close_storage(opened)
    if not any(m.status == "ok" for m in history.figures().values()):
        raise BadInputError(
            f"study {name!r} holds no measurement that ran: run `autoplace tune {path}` first"
        )
    return _Read(name, history, later, devices, widths, attrs)


def _space_of(history: History, devices: Sequence[str], widths: Sequence[int]) -> Space:
    """The space a study's measurements span."""
    figures = history.figures()
    return Space(
        tuple(sorted(devices)),
        tuple(sorted({c.batch_size for c in figures})),
        tuple(dict.fromkeys(c.precision for c in figures)),
        tuple(widths) or (None,),
    )


def _moved_on(path: Path, doc: Mapping[str, Any] | None, later: int) -> str:
    """The sentence that says a study holds measurements newer than the file explained."""
    wl = (doc or {}).get("workload", {})
    return (
        f"The study has moved on since {shown(path)} was written: {later} newer "
        f"measurement{'s' if later != 1 else ''} (a later tune of it) are left out here, "
        "so this explains the file's own pick; `autoplace explain "
        f"{wl.get('path', 'MODEL_FILE')} --workload {wl.get('name', 'NAME')}` (with the "
        "file's --storage) explains the study as it stands now."
    )


def _cut(doc: Mapping[str, Any] | None, judged: Judged) -> int | dt.datetime | None:
    """Where a recommendation file's measurements end: the newest trial number its verdict
    read, else (a file from before it was recorded) the time it was written."""
    if doc is None:
        return None
    if judged.newest_trial >= 0:
        return judged.newest_trial
    return _local(_written(doc.get("created")))


def _written(text: Any) -> dt.datetime | None:
    """A time a recommendation file records, aware (UTC where it says no zone)."""
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def _local(when: dt.datetime | None) -> dt.datetime | None:
    """``when`` as Optuna stamps trials: local and naive."""
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone().replace(tzinfo=None)


def _run_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The run length a recommendation file's objective was made with (time-to-finish)."""
    return {
        k: v for k, v in doc["objective"].items() if k in ("steps", "samples", "epochs", "feeding")
    }


def _open(url: str, named_in: Path | None) -> Any:
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


def _refuse_gone(url: str, named_in: Path) -> None:
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


def _stored_url(doc: dict[str, Any], path: Path) -> str:
    stored = doc["study"].get("storage", "")
    if "***" in stored or not stored:
        raise BadInputError(
            f"{path} names its study storage with the password masked: pass --storage URL"
        )
    return normalize_url(stored)


def _find_study(storage: Any, url: str, model: Path, workload: str | None, objective: str) -> str:
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


def _read_study(
    storage: Any,
    url: str,
    name: str,
    obj: Any,
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
    log = OptunaStudyLog(
        storage,
        url,
        name=name,
        direction=obj.direction,
        objective=obj.name,
        attrs={},
        devices=["cpu:0"],
        with_width=True,
        stale_after_s=0.0,
        since=since,
        read_only=True,
    )
    everything = log.history()
    if cut is None:
        history = everything
    elif isinstance(cut, int):
        history = log.history(upto=cut)
    else:  # ``created`` is cut to the second, after the last measurement finished
        history = log.history(until=cut + _SECOND)
    configs = list(history.figures())
    devices = sorted({c.device for c in configs})
    widths = sorted({c.width for c in configs if c.width is not None})
    return history, len(everything) - len(history), devices, widths, log.study_attrs


def fill_fit(
    source: str | Path,
    workload: str | None = None,
    *,
    storage: str | None = None,
    study: str | None = None,
    objective: str = "throughput",
    backend: Any = None,
) -> int:
    """Measure the points the cost-model lines still lack (see :func:`explain`); return how
    many measurements that took. ``backend``: where to measure (default: a worker)."""
    from autoplace.tuning._fit_points import FitPoints
    from autoplace.tuning._session import tune

    path = check_length(source, "recommendation or model file")
    if not path.is_file():
        raise BadInputError(f"no file at {shown(path)}: pass a recommendation file or a model file")
    options: dict[str, Any] = {"storage": storage, "study": study, "objective": objective}
    out: Path | None = None
    model = path
    if path.suffix == ".toml":
        doc = recommendation.read(path)
        model, workload, out = Path(doc["workload"]["path"]), doc["workload"]["name"], path
        space = doc.get("search_space", {})
        options.update(
            storage=storage or _stored_url(doc, path),
            study=study or doc["study"]["name"],
            objective=doc["objective"]["name"],
            devices=space.get("devices"),
            batch_sizes=space.get("batch_sizes"),
            precisions=space.get("precisions"),
            widths=space.get("widths") or None,
            **_run_of(doc),
        )
        if not model.is_file():
            raise BadInputError(
                f"{path} was made from {model}, which is gone: pass the model file instead"
            )
        if storage is None:  # measuring into a new, empty study would explain nothing
            _refuse_gone(options["storage"], path)
    elif options["study"] is None:
        url = normalize_url(storage) if storage else default_url()
        refuse_foreign_tables(url)
        opened = open_storage(url, reading=True)
        try:
            options["study"] = _find_study(opened, url, path, workload, objective)
        finally:
            close_storage(opened)
    result = tune(
        model, workload=workload, out=out, strategy=FitPoints(), backend=backend, **options
    )
    return result.new_trials


def _limits_for(doc: Mapping[str, Any] | None, attrs: Mapping[str, Any]) -> MachineLimits | None:
    """This machine's cached limits, if the study was measured on a machine with the same
    CPU and devices (a study from elsewhere is not placed against this one's roofline)."""
    limits = cached_limits()
    if limits is None:
        return None
    theirs = ((doc or {}).get("fingerprint") or {}).get("hardware") or attrs.get("hardware") or {}
    mine = limits.key.get("hardware", {})
    kinds = sorted((d.get("platform"), d.get("kind")) for d in theirs.get("devices", []))
    same = theirs.get("cpu") == mine.get("cpu") and kinds == sorted(
        (d.get("platform"), d.get("kind")) for d in mine.get("devices", [])
    )
    return limits if same else None
