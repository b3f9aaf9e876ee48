"""``autoplace.recommend``: the one call a training launcher makes at start-up.

Look-up order: this machine's cache, then the study storage (a team's shared study: an
identical machine's answer, found without measuring), then ``on_miss``. A cached
look-up imports neither JAX nor Optuna: the devices come from the cache too (see
:func:`autoplace.host.machine_devices`). Only one process per key and machine tunes; the
others wait for its answer (bounded) or take the fallback.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from autoplace._calls import build
from autoplace.answer import Answer, Question
from autoplace.config import Config, parse_precision
from autoplace.errors import BadInputError, NoAnswerError
from autoplace.host import Cache, fingerprint, lock_dir, machine_devices
from autoplace.recommending._key import (
    Key,
    asked_question,
    asked_widths,
    fill_command,
    key_for,
    tune_arguments,
)
from autoplace.recommending._pick import choose
from autoplace.recommending._recommendation import Recommendation, Source
from autoplace.recommending._request import RecommendRequest
from autoplace.study import default_url
from autoplace.workload import ModelFile, check_width, declared_workloads

#: The batch size of the safest fallback (capped by ``max_batch_size``).
FALLBACK_BATCH = 32


def recommend(
    request: RecommendRequest | str | Path,
    /,
    workload: str | None = None,
    *,
    backend: Any = None,
    on_wait: Callable[[str], None] | None = None,
    **options: Any,
) -> Recommendation:
    """Where a model file's workload should run, at what batch size and precision.

    ``request`` is a :class:`RecommendRequest`, or a model file whose ``workload`` and
    ``options`` build one: ``recommend("model.py", "mlp", max_batch_size=256)`` is
    ``recommend(RecommendRequest("model.py", "mlp", max_batch_size=256))``.

    Looks in this machine's cache, then in the request's ``storage`` (a study another
    machine with the same hardware filled; default: the study database beside the
    cache), then acts on ``on_miss``: ``"tune"`` runs :func:`autoplace.tune` with its
    default budget and caches the answer, ``"fallback"`` returns the fallback marked
    ``source="fallback"``, ``"raise"`` raises :class:`~autoplace.NoAnswerError` naming
    the command that fills the cache. An answer measured under other jax/jaxlib versions,
    or older than ``max_age``, is stale: ``on_stale`` says whether to use it (marked with
    ``stale_reason``), tune again, or raise. Another model file, workload, objective or
    hardware is a miss. The caller's limits pick among the measured configurations,
    without measuring; the result's ``limits`` say how each was applied.

    When several processes look up one key at once on a machine, one tunes; the others
    wait for its answer or take the fallback (``on_busy``). ``on_wait`` hears (a line)
    when this process waits: for another process's tune, or for the storage. ``backend``
    measures a tune (default: a worker process of its own).
    """
    r = _request(request, workload, options)
    mf = ModelFile.at(r.model_file)
    if r.storage is not None:  # another program's SQLite file is never made a study storage
        from autoplace.study import check_usable

        check_usable(r.storage)
    cache = Cache(r.cache_dir)
    devices = machine_devices(cache, backend, worker=_worker)
    assert devices is not None  # listed by a worker when not cached
    model = {"path": str(mf.path), "sha256": mf.sha256}
    key = key_for(devices, model, r.workload, r.widths, {"name": r.objective, **r.run})
    lookup = _Lookup(key, cache, devices, limits=r.limits, max_age=r.max_age_s, fallback=r.fallback,
                     tune_options=r.tune_options)  # fmt: skip
    found = lookup.cached()
    if found is not None and found.exact:
        return found
    if r.workload is None:
        _one_workload(mf)
    url = r.storage or _beside(cache)
    # A team's study (``storage``) may hold an answer for newer software than the cache;
    # this machine's own studies (beside the cache: a launcher's tunes; the command line's
    # default, studies/autoplace.db under this folder) are consulted only on a miss.
    if r.storage is not None:
        stores = [r.storage]
    else:
        stores = [] if found is not None else [u for u in (url, default_url()) if u]
    for store in dict.fromkeys(stores):
        shared = lookup.stored(store, r.study, on_wait)
        if shared is not None:
            return shared
    if found is not None:  # stale: by software or age
        if r.on_stale == "use":
            return found
        if r.on_stale == "raise":
            raise NoAnswerError(
                f"the cached answer for {mf.path} is stale ({found.stale_reason}): "
                f"{fill_command(key)}, or pass on_stale='use'"
            )
    elif r.on_miss == "raise":
        raise NoAnswerError(
            f"no answer for {mf.path} on this machine ({lookup.why_missed}): "
            f"{fill_command(key)} to fill the cache"
        )
    elif r.on_miss == "fallback":
        if r.widths:  # as a tune would: a width the file never declared is refused
            _check_widths(mf, r.workload, r.widths, backend)
        return lookup.fallback(lookup.why_missed)
    return _tune_once(lookup, url, r, backend, on_wait)


def _request(
    request: RecommendRequest | str | Path, workload: str | None, options: dict[str, Any]
) -> RecommendRequest:
    """The one request value a look-up works from (see :func:`recommend`)."""
    if not isinstance(request, RecommendRequest):
        return build(RecommendRequest, request, workload=workload, **options)
    if options or workload is not None:
        raise BadInputError(
            "recommend(RecommendRequest(...)) takes no workload or options: put them in "
            "the RecommendRequest"
        )
    return request


def _check_widths(mf: ModelFile, workload: str | None, widths: Sequence[int], backend: Any) -> None:
    """Refuse ``widths`` the model file does not declare (the file imported by a worker,
    ``backend`` if given), as the tune ``on_miss="tune"`` runs would."""
    from autoplace.measuring import SubprocessBackend, resolve_workload

    with contextlib.ExitStack() as stack:
        if backend is None:
            backend = stack.enter_context(SubprocessBackend())
        _, info = resolve_workload(backend, mf.path, workload)
    for width in widths:
        check_width(width, info.widths)


def _one_workload(mf: ModelFile) -> None:
    """Refuse a look-up without a workload of a file that declares several: which one's
    answer it wants is the caller's to say."""
    names = declared_workloads(mf.path)
    if len(names) > 1:
        raise BadInputError(
            f"{mf.path} holds several workloads ({', '.join(names)}): name one, e.g. "
            f"recommend({str(mf.path)!r}, workload={names[0]!r}) or `autoplace recommend "
            f"{mf.path} --workload {names[0]}`"
        )


def _worker() -> Any:
    """A measurement worker to list this machine's devices in (imported only when the
    cache does not hold them)."""
    from autoplace.measuring import SubprocessBackend

    return SubprocessBackend()


class _Lookup:
    """One look-up's key, cache and limits, and the answers it turns into values."""

    def __init__(
        self,
        key: Key,
        cache: Cache,
        devices: Sequence[Any],
        *,
        limits: Mapping[str, Any],
        max_age: float | None,
        fallback: Config | Mapping[str, Any] | None,
        tune_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.key, self.cache, self.devices = key, cache, devices
        self.limits, self.max_age, self._fallback = limits, max_age, fallback
        self.tune_options = dict(tune_options or {})
        self.path = cache.answer_path(key.slot)
        self.why_missed = "nothing cached or stored for it"

    def question(self, answer: Answer) -> Question:
        """What this look-up asks of ``answer``'s workload (:func:`._key.asked_question`)."""
        return asked_question(
            answer, self.key, self.devices, self.limits["max_batch_size"], self.tune_options
        )

    def unanswered(self, answer: Answer) -> str | None:
        """Why ``answer`` does not answer this look-up's question (``None``: it does)."""
        if answer.question is None:
            return "it was kept before autoplace recorded what a tune searched"
        asked = self.question(answer)
        narrower = answer.question.narrower(asked)
        if narrower:
            return "its tune searched less than this look-up asks: " + "; ".join(narrower)
        if not any(asked.holds(c) for c in answer.candidates):
            return "its tune, which searched more, measured none of the configurations asked"
        return None

    def cached(self) -> Recommendation | None:
        """The cached answer for this key: exact, or stale (``stale_reason`` set); ``None``
        on a miss (``why_missed`` then says why)."""
        entry = self.cache.read(self.path)
        if entry is None:
            return None
        held = entry.get("key")
        try:
            miss = self.key.miss(held)  # type: ignore[arg-type]
            if miss is not None:
                self.why_missed = miss
                return None
            answer = Answer.from_dict(entry.get("answer"))
            unanswered = self.unanswered(answer)
            if unanswered is not None:
                self.why_missed = f"the cached answer does not answer it: {unanswered}"
                return None
            stale = self.key.stale(held) or self._too_old(answer)  # type: ignore[arg-type]
            return self.value(answer, "cache", stale)
        except (AttributeError, KeyError, TypeError, ValueError):
            self.cache.damaged(self.path)
            return None

    def stored(
        self, url: str, study: str | None, on_wait: Callable[[str], None] | None = None
    ) -> Recommendation | None:
        """The answer a finished tune left with a study for this key (exact matches only, of
        a question that covers this look-up's), cached on the way; ``None`` when there is
        none. Without ``study``, every study of this model file, objective and machine is
        looked at (one per workload and set of widths searched): of those that measured the
        widths asked, the one that searched exactly those, else the newest."""
        from autoplace.study import stored_answers
        from autoplace.tuning import study_suffix

        wl = self.key.workload
        hw = fingerprint(self.devices)["hardware"]
        suffix = study_suffix(self.key.objective, wl["sha256"], hw, self.key.software)
        found = stored_answers(url, name=study, suffix=suffix, on_wait=on_wait)
        answers = [a for a in map(_readable, found) if a is not None]
        usable = [
            a
            for a in answers
            if self._answers_this(a) and not self._too_old(a) and self.unanswered(a) is None
        ]
        if not usable:
            narrower = [why for a in answers if self._answers_this(a)
                        and (why := self.unanswered(a)) is not None]  # fmt: skip
            if narrower:
                self.why_missed = f"the study's answer does not answer it: {narrower[0]}"
            return None
        answer = max(usable, key=lambda a: (self._exactly(a), str(a.created)))
        self.save(answer, "study")
        return self.value(answer, "study", None)

    def _exactly(self, answer: Answer) -> bool:
        """Whether ``answer``'s tune searched exactly the widths asked (or, asked none, the
        file's default alone)."""
        asked = asked_widths(answer, self.key)
        return sorted(answer.workload.widths) == sorted(w for w in asked if w is not None)

    def _answers_this(self, answer: Answer) -> bool:
        """Whether a study's answer is an exact one for this key: the same file, workload,
        objective and software, and the widths asked among those its tune measured."""
        wl, mine = answer.workload, self.key.workload
        return (
            answer.schema == self.key.software["answer_schema"]
            and wl.sha256 == mine["sha256"]
            and (mine["name"] is None or wl.name == mine["name"])
            and set(asked_widths(answer, self.key)) <= set(wl.widths or [None])
            and {"name": answer.objective.name, **answer.objective.run} == dict(self.key.objective)
            and {k: answer.software.get(k) for k in ("jax", "jaxlib")}
            == {k: self.key.software[k] for k in ("jax", "jaxlib")}
        )

    def save(self, answer: Answer, source: Source) -> None:
        self.cache.write(
            self.path, {"key": self.key.as_dict(), "source": source, "answer": answer.as_dict()}
        )

    def value(self, answer: Answer, source: Source, stale: str | None) -> Recommendation:
        """The answer under the caller's limits, as a :class:`Recommendation`."""
        pick, winner, notes = choose(
            answer,
            **self.limits,
            widths=asked_widths(answer, self.key),
            question=self.question(answer),
        )
        runner = answer.closest if winner else None
        return Recommendation(
            device=pick.device,
            batch_size=pick.batch_size,
            precision=pick.precision,
            width=pick.width,
            source=source,
            key=self.key.slot,
            objective=answer.objective.name,
            unit=answer.objective.unit,
            score=pick.score,
            step_s=pick.step_s,
            compile_s=pick.compile_s,
            peak_bytes=pick.peak_bytes,
            ratio=runner.ratio if runner is not None else None,
            low=runner.low if runner is not None else None,
            high=runner.high if runner is not None else None,
            verdict=runner.verdict if runner is not None else None,
            confirmed=pick.confirmed,
            measured_at=_when(answer.created),
            stale_reason=stale,
            why=(answer.why or ("",))[0] if winner else "",
            limits=notes,
            study=answer.study,
            steps_per_call=pick.steps_per_call,
            prefetch_gain=pick.prefetch_gain,
        )

    def fallback(self, why: str) -> Recommendation:
        """The caller's fallback configuration, or the safest: the first device, float32,
        a small batch."""
        given = self._fallback
        if isinstance(given, Config):
            given = {"device": given.device, "batch_size": given.batch_size,
                     "precision": given.precision, "width": given.width}  # fmt: skip
        given = dict(given or {})
        cap = self.limits["max_batch_size"]
        batch = int(given.get("batch_size") or min(FALLBACK_BATCH, cap or FALLBACK_BATCH))
        return Recommendation(
            device=str(given.get("device") or self.devices[0].name),
            batch_size=batch,
            precision=parse_precision(str(given.get("precision") or "float32")),
            width=given.get("width"),
            source="fallback",
            key=self.key.slot,
            objective=self.key.objective["name"],
            stale_reason=why,
        )

    def _too_old(self, answer: Answer) -> str | None:
        when = _when(answer.created)
        if self.max_age is None or when is None:
            return None
        age = (dt.datetime.now(dt.timezone.utc) - when).total_seconds()
        if age <= self.max_age:
            return None
        return f"measured {_duration(age)} ago, over max_age {_duration(self.max_age)}"


def _tune_once(
    lookup: _Lookup,
    url: str | None,
    request: RecommendRequest,
    backend: Any,
    on_wait: Callable[[str], None] | None,
) -> Recommendation:
    """Tune, unless another process on this machine is tuning this key: then wait for its
    answer (at most ``wait_s``) or take the fallback, as ``on_busy`` says."""
    from filelock import FileLock, Timeout

    on_busy, wait_s = request.on_busy, request.wait_s
    lock = FileLock(lock_dir() / f"recommend-{lookup.key.slot}.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if on_busy == "fallback":
            return lookup.fallback("another process on this machine is tuning this model")
        if on_wait is not None:
            on_wait(f"waiting (at most {wait_s:g} s) for another process tuning this model")
        try:
            lock.acquire(timeout=wait_s)
        except Timeout:
            return lookup.fallback(f"waited {wait_s:g} s for another process's tune")
    try:
        found = lookup.cached()  # the process that held the lock may have filled it
        if found is not None and found.exact:
            return found
        from autoplace.tuning import TuneRequest, tune

        path = lookup.key.workload["path"]
        options = {**tune_arguments(lookup.key), "storage": url, "out": None}
        asked = TuneRequest(path, **{**options, **(request.tune_options or {})})
        result = tune(asked, backend=backend, on_wait=on_wait)
        if result.answer is None:
            raise NoAnswerError(
                f"the tune of {path} ended without a configuration that runs "
                f"({'interrupted' if result.interrupted else 'every one failed'}): see "
                f"`autoplace show` or run `autoplace tune {path}`"
            )
        lookup.save(result.answer, "tuned")
        return lookup.value(result.answer, "tuned", None)
    finally:
        lock.release()


def _readable(stored: Any) -> Answer | None:
    """A study's stored answer as a value; ``None`` for one this autoplace cannot read."""
    try:
        return None if stored is None else Answer.from_dict(stored)
    except ValueError:
        return None


def _beside(cache: Cache) -> str | None:
    """The study database kept beside the cache: where a launcher's tunes go by default."""
    folder = cache.root
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # the cache is unwritable (said once): the tune keeps its own default
    return f"sqlite:///{folder / 'studies.db'}" if os.access(folder, os.W_OK) else None


def _when(text: Any) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"
