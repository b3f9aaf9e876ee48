"""``autoplace.explain``: the explanation of a study's pick, from a recommendation file or
a model file's study, reading the measurements the study holds (no JAX, no new runs)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autoplace import recommendation
from autoplace._paths import check_length, shown
from autoplace.errors import BadInputError
from autoplace.explaining import MEMORY_MARGIN, Explanation
from autoplace.limits import MachineLimits, cached_limits
from autoplace.objectives import make_objective
from autoplace.settings import DEFAULT_MAX_DEVIATION
from autoplace.study import (
    History,
    check_study_name,
    close_storage,
    default_url,
    normalize_url,
    refuse_foreign_tables,
)
from autoplace.tuning._judge import Judged, Verdict, judge
from autoplace.tuning._plan import Plan
from autoplace.tuning._reading import (
    cut,
    find_study,
    local,
    opened,
    read_history,
    refuse_gone,
    run_of,
    stored_url,
)
from autoplace.tuning._space import Space
from autoplace.tuning._standing import Standing, standing

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
        from autoplace.tuning._fill import fill_fit  # it tunes: the session imports this

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
        url = normalize_url(storage) if storage else stored_url(doc, path)
    else:
        url = normalize_url(storage) if storage else default_url()
    run = run_of(doc) if doc is not None else {}
    obj = make_objective(objective, **run) if run else make_objective(objective)
    read = _read(path, doc, url, storage, study, workload, obj, judged)
    history, later, attrs = read.history, read.later, read.attrs
    space = _space_of(history, read.devices, read.widths)
    asked = _asked(doc, space)
    if asked is not None:  # the file's own question: its pick, whatever else the study holds
        space, history = asked, history.only(asked.__contains__)
    memory = (doc or {}).get("search_space", {}).get("device_memory") or attrs.get(
        "device_memory", {}
    )
    plan = Plan.judging(space, obj, judged.max_deviation, judged.steps_per_call)
    now = standing(history, plan)
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
        refuse_gone(url, named_in)
    storage_ = opened(url, named_in)
    try:
        name = study or find_study(storage_, url, path, workload, obj.name)
        history, later, devices, widths, attrs = read_history(
            storage_, url, name, cut(doc, judged), local(judged.since)
        )
    finally:
        close_storage(storage_)
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


def _asked(doc: Mapping[str, Any] | None, measured: Space) -> Space | None:
    """The space a recommendation file's tune searched (its ``[search_space]``), ``None``
    for a model file; a file from before the space was complete keeps what the study
    measured on the axes it does not record."""
    if doc is None or not isinstance(doc.get("search_space"), dict):
        return None
    asked = doc["search_space"]
    return Space(
        tuple(asked.get("devices") or measured.devices),
        tuple(asked.get("batch_sizes") or measured.batch_sizes),
        tuple(asked.get("precisions") or measured.precisions),
        tuple(asked.get("widths") or ()) or measured.widths,
        max_memory=asked.get("max_memory"),
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
