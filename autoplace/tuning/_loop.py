"""``autoplace.tune``: search device x batch size x precision x width, write a recommendation.

The loop is ask-and-tell over an Optuna study. A :mod:`search <autoplace.search>`
strategy proposes each group of configurations, the isolated measurement core
measures them together with the best configuration so far (their timed loops in
turns, so that :mod:`autoplace.drift` can fit the machine's drift out of the
scores), and every figure is stored as trial attributes, so:

* a configuration is searched once per study (unless ``remeasure``), and measured
  again only as a reference or a finalist; running the same command again resumes,
  and other workers sharing the storage see it;
* a failed configuration is stored with its status and reason and never retried;
  one XLA predicts cannot fit is stored as PRUNED without running;
* an interrupt marks the trial in flight as interrupted (it will be measured on
  resume) and leaves every finished measurement in the study.

Optuna is imported when :func:`tune` runs, never at ``import autoplace``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime as dt
import math
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from autoplace import fingerprint
from autoplace.config import PRECISIONS, Config
from autoplace.errors import BadInputError, StorageError
from autoplace.measurement import Measurement
from autoplace.measuring import Backend, SubprocessBackend, resolve_workload
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.study._storage import (
    close_storage,
    default_url,
    mask_url,
    normalize_url,
    open_storage,
)
from autoplace.tuning._climb import Climb
from autoplace.tuning._objectives import Objective, make_objective
from autoplace.tuning._options import DEFAULT_BATCH_SIZES, build_space, check_positive
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import Strategy

_ATTR = "measurement"
#: Time cap of the loop that ranks, per configuration, while searching (three turns, at
#: least, of a 50 ms chunk after 30 ms of settling), while confirming, and in a duel.
SEARCH_CAP_S = 0.2
CONFIRM_CAP_S = 0.4
DUEL_CAP_S = 1.0
#: Configurations whose search score is within this of the search's best are finalists.
CONFIRM_REACH = 0.20
#: The one-sided level at which a finalist must beat another to count as faster.
SIGNIFICANCE = 0.05
#: Finalists that no other beats beyond the noise and that trail the best of them by
#: at most this are equals; of equals, the preferred one wins (see ``_preference``).
EQUIVALENT = 0.02
#: Turns (chunks timed in turns) needed before two finalists are compared turn by turn.
_MIN_TURNS = 5
#: Among finalists equal within the noise, the precision preferred first.
PRECISION_PREFERENCE = ("float32", "bfloat16", "float16")
_MAX_INT = 2**40


@dataclasses.dataclass(frozen=True)
class Scored:
    """A measured configuration and its objective score."""

    measurement: Measurement
    score: float
    #: For a confirmed configuration, the scores of its confirmations (usually one: the
    #: finalists measured together; two after a duel), oldest first; empty when not
    #: confirmed. ``score`` is then theirs with the drift between them fitted out.
    votes: tuple[float, ...] = ()
    #: The confirmations themselves, oldest first (``measurement`` is the latest).
    rounds: tuple[Measurement, ...] = ()

    @property
    def confirmed(self) -> bool:
        return bool(self.votes)

    @property
    def config(self) -> Config:
        m = self.measurement
        return Config(m.device, m.batch_size, m.precision, m.width)


@dataclasses.dataclass(frozen=True)
class TrialEvent:
    """What the progress callback hears after each configuration."""

    measurement: Measurement
    score: float | None
    best: Scored | None
    new_trials: int
    budget: int | None
    objective: Objective


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """Everything :func:`tune` found. ``document`` is what was written to ``out``."""

    study_name: str
    storage: str
    objective: Objective
    space: Space
    measurements: dict[Config, Measurement]
    best: Scored | None
    #: Best configuration of each (device, precision), best first.
    per_device_precision: list[Scored]
    new_trials: int
    interrupted: bool
    out: Path | None
    document: dict[str, Any]

    @property
    def runner_up(self) -> Scored | None:
        rows = self.per_device_precision
        return rows[1] if len(rows) > 1 else None


def _noise(s: Scored, objective: Objective) -> float:
    """A score's relative noise: its loop's spread, or, when confirmed, how far its
    measurements' scores lie apart (relative range), whichever is larger."""
    spread = objective.spread(s.measurement)
    if len(s.votes) >= 2:
        spread = max(spread, (max(s.votes) - min(s.votes)) / abs(s.score))
    return spread


def _paired_ratios(objective: Objective, a: Scored, b: Scored) -> list[float] | None:
    """Turn by turn, over every call that timed the two in turns, how many times better
    ``a`` scored than ``b`` (1.0: equal), when those turns number at least
    ``_MIN_TURNS``; else ``None``."""
    ours = {m.interleave_id: m for m in a.rounds or (a.measurement,) if m.interleave_id}
    out: list[float] = []
    for mb in b.rounds or (b.measurement,):
        ma = ours.get(mb.interleave_id)
        if ma is None:
            continue
        sa, sb = objective.chunk_scores(ma), objective.chunk_scores(mb)
        if len(sa) == len(sb):
            out += [1.0 + objective.gain(x, y) for x, y in zip(sa, sb, strict=True)]
    return out if len(out) >= _MIN_TURNS else None


def lower_bound(values: Sequence[float], alpha: float) -> float:
    """A one-sided ``1 - alpha`` lower confidence bound for the median of ``values``
    (the sign test's order statistic: assumes nothing about their distribution);
    ``-inf`` when there are too few values for one."""
    n, ordered = len(values), sorted(values)
    k, below = 0, 0.0
    while k < n and below + math.comb(n, k) / 2**n <= alpha:  # P(Binomial(n, 1/2) <= k)
        below += math.comb(n, k) / 2**n
        k += 1
    return ordered[k - 1] if k else -math.inf


def margin(objective: Objective, best: Scored, other: Scored) -> dict[str, Any]:
    """How far ``best`` beats ``other``, the noise of that figure, and whether the
    difference is real.

    For two configurations timed in turns (finalists measured together), the
    comparison is paired, turn by turn, which cancels drift: ``margin`` is the
    median of the per-turn ratios less one, ``noise`` how far below it their
    ``1 - SIGNIFICANCE`` lower confidence bound lies, and the difference is real
    when that bound is above 1. Otherwise ``margin`` compares the two scores and
    ``noise`` is the larger of their own (see :func:`_noise`).
    """
    ratios = _paired_ratios(objective, best, other)
    if ratios is None:
        gain = objective.gain(best.score, other.score)
        noise = max(_noise(best, objective), _noise(other, objective))
        return {"margin": gain, "noise": noise, "significant": gain > noise, "basis": "scores"}
    middle, low = statistics.median(ratios), lower_bound(ratios, SIGNIFICANCE)
    return {
        "margin": middle - 1.0,
        "noise": middle - low,
        "significant": low > 1.0,
        "basis": f"paired over {len(ratios)} turns",
    }


def _preference(objective: Objective, s: Scored) -> tuple:
    """Among configurations equal within the noise: full precision first, then the
    smallest batch (least memory), then the better score."""
    m = s.measurement
    rank = PRECISION_PREFERENCE.index(m.precision) if m.precision in PRECISION_PREFERENCE else 9
    sign = -1.0 if objective.direction == "maximize" else 1.0
    return (rank, m.batch_size, sign * s.score)


def _in_the_running(ranked: list[Scored], objective: Objective) -> list[Scored]:
    """The confirmed configurations no other confirmed one beats beyond the noise."""
    confirmed = [s for s in ranked if s.confirmed]
    return [
        s
        for s in confirmed
        if not any(o is not s and margin(objective, o, s)["significant"] for o in confirmed)
    ]


# --- Optuna glue ---------------------------------------------------------------------


def _start_trial(
    storage: Any, study_id: int, config: Config, attrs: dict[str, Any], dists: dict[str, Any]
) -> tuple[int, int]:
    """Start a trial of ``config``, its parameters and user attributes written in one
    storage call (``Study.ask`` commits each parameter on its own: 50 ms a trial on
    SQLite); return its id and number. The strategy, not a sampler, chose ``config``."""
    from optuna.trial import FrozenTrial, TrialState

    params = _params(config)
    template = FrozenTrial(
        number=-1,
        state=TrialState.RUNNING,
        value=None,
        datetime_start=dt.datetime.now(),
        datetime_complete=None,
        params=params,
        distributions={k: dists[k] for k in params},
        user_attrs=attrs,
        system_attrs={},
        intermediate_values={},
        trial_id=-1,
    )
    trial_id = storage.create_new_trial(study_id, template_trial=template)
    return trial_id, storage.get_trial_number_from_id(trial_id)


def _distributions(all_devices: Sequence[str], with_width: bool) -> dict[str, Any]:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    dists: dict[str, Any] = {
        "device": CategoricalDistribution(sorted(all_devices)),
        "batch_size": IntDistribution(1, _MAX_INT),
        "precision": CategoricalDistribution(list(PRECISIONS)),
    }
    if with_width:
        dists["width"] = IntDistribution(1, _MAX_INT)
    return dists


def _params(config: Config) -> dict[str, Any]:
    params: dict[str, Any] = {
        "device": config.device,
        "batch_size": config.batch_size,
        "precision": config.precision,
    }
    if config.width is not None:
        params["width"] = config.width
    return params


def _config_of(params: dict[str, Any]) -> Config:
    return Config(
        device=params["device"],
        batch_size=int(params["batch_size"]),
        precision=params["precision"],
        width=int(params["width"]) if "width" in params else None,
    )


@contextlib.contextmanager
def _storage_errors(url: str) -> Iterator[None]:
    try:
        yield
    except (StorageError, BadInputError, KeyboardInterrupt):
        raise
    except Exception as exc:
        import sqlalchemy.exc

        if not isinstance(exc, (sqlalchemy.exc.SQLAlchemyError, OSError, ValueError)) and (
            "redis" not in type(exc).__module__
        ):
            raise
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise StorageError(
            f"study storage {mask_url(url)} failed: {first}; check that the server is up and "
            "the database is an autoplace/Optuna study (or pass another --storage)"
        ) from exc


@dataclasses.dataclass
class _Seen:
    """What the study holds for this tune."""

    #: Every search measurement, oldest first: the groups the drift fit rests on.
    searches: list[tuple[Config, Measurement]]
    #: Every confirmation per configuration, oldest first.
    confirmed: dict[Config, list[Measurement]]
    #: The configurations being measured right now, by this process or another worker.
    pending: frozenset[Config]

    def figures(self) -> dict[Config, Measurement]:
        """Each configuration's latest search measurement that ran (else its latest)."""
        out: dict[Config, Measurement] = {}
        for c, m in self.searches:
            if m.status == "ok" or c not in out or out[c].status != "ok":
                out[c] = m
        return out

    def estimates(self, obj: Objective) -> dict[Config, float | None]:
        """The search's score of each configuration, drift between its groups removed
        (see :mod:`autoplace.drift`); ``None`` for one that never ran."""
        from autoplace.tuning._drift import corrected_scores

        scored = ((c, m, obj.score(m)) for c, m in self.searches if m.status == "ok")
        fitted = corrected_scores([(c, m.interleave_id, s) for c, m, s in scored if s])
        return {c: fitted.get(c) for c in self.figures()}

    def within(self, space: Space) -> _Seen:
        return _Seen(
            [(c, m) for c, m in self.searches if _in(space, c)],
            {c: ms for c, ms in self.confirmed.items() if _in(space, c)},
            self.pending,
        )


def _history(study: Any, stale_after_s: float, since: dt.datetime | None) -> _Seen:
    """Every finished search measurement and confirmation (since ``since``, oldest
    first), and the configurations being measured right now."""
    from optuna.trial import TrialState

    finished: list[tuple[dt.datetime, int, str, Config, Measurement]] = []
    pending: set[Config] = set()
    now = dt.datetime.now()
    for t in study.get_trials(deepcopy=False):
        if set(t.params) < {"device", "batch_size", "precision"}:
            continue
        config = _config_of(t.params)
        if t.state == TrialState.RUNNING:
            started = t.datetime_start or now
            if (now - started).total_seconds() < stale_after_s:
                pending.add(config)
            continue
        data = t.user_attrs.get(_ATTR)
        if data is None or t.user_attrs.get("interrupted"):
            continue
        when = t.datetime_complete or t.datetime_start or now
        if since is not None and when < since:
            continue
        phase = t.user_attrs.get("phase", "search")
        finished.append((when, t.number, phase, config, Measurement.from_dict(data)))
    finished.sort(key=lambda f: f[:2])
    confirmed: dict[Config, list[Measurement]] = {}
    for _, _, phase, c, m in finished:
        if phase == "confirm":
            confirmed.setdefault(c, []).append(m)
    searches = [(c, m) for _, _, phase, c, m in finished if phase != "confirm"]
    return _Seen(searches, confirmed, frozenset(pending))


def _standings(
    searched: dict[Config, Measurement], confirmed: dict[Config, list[Measurement]], obj: Objective
) -> tuple[dict[Config, Measurement], dict[Config, Scored]]:
    """Every configuration's figures, and the verdict on each confirmed one.

    A confirmed configuration's score rests on its confirmations alone: they were
    timed in turns with the other finalists, so drift between the search's
    measurements does not decide, and where there were several (a duel), the drift
    between them is fitted out as the search's is (:mod:`autoplace.drift`). Its
    figures are those of its latest confirmation: a real measurement.
    """
    from autoplace.tuning._drift import corrected_scores

    figures = dict(searched)
    ran = {c: [m for m in ms if m.status == "ok"] for c, ms in confirmed.items()}
    fitted = corrected_scores(
        [(c, m.interleave_id, obj.score(m)) for c, ms in ran.items() for m in ms if obj.score(m)]
    )
    verdicts: dict[Config, Scored] = {}
    for c, ms in confirmed.items():
        figures[c] = ran[c][-1] if ran[c] else ms[-1]
        if c in fitted:
            votes = tuple(obj.score(m) for m in ran[c])
            verdicts[c] = Scored(ran[c][-1], fitted[c], votes, tuple(ran[c]))  # type: ignore[arg-type]
    return figures, verdicts


# --- the loop ------------------------------------------------------------------------


def tune(
    model_file: str | Path,
    *,
    workload: str | None = None,
    devices: Sequence[str] | None = None,
    batch_sizes: Sequence[int] | None = None,
    precisions: Sequence[str] | None = None,
    widths: Sequence[int] | None = None,
    objective: str | Objective = "throughput",
    steps: int | None = None,
    samples: int | None = None,
    epochs: int | None = None,
    trials: int | None = None,
    timeout: float | None = None,
    storage: str | None = None,
    study: str | None = None,
    out: str | Path | None = "autoplace.toml",
    max_memory: int | None = None,
    remeasure: bool = False,
    confirm: int = 4,
    strategy: Strategy | None = None,
    settings: MeasureSettings | None = None,
    backend: Backend | None = None,
    on_trial: Callable[[TrialEvent], None] | None = None,
) -> TuneResult:
    """Search placements of a model file's workload and write the recommendation to ``out``.

    Runs until the search strategy has nothing worth measuring, or ``trials`` new
    measurements, or ``timeout`` seconds (a measurement in flight finishes). The
    search measures quickly (the loop the objective ranks on capped at
    ``SEARCH_CAP_S``, no float32 comparison), each group the strategy proposes
    together with the best configuration so far, and scores every configuration on
    all those groups with the drift between them fitted out
    (:func:`autoplace.drift.corrected_scores`). Then up to ``confirm`` finalists
    (the search's best, and the next ones within ``CONFIRM_REACH`` of it) are
    measured again together, the ranking loop capped at ``CONFIRM_CAP_S``, their
    timed loops taking turns chunk by chunk (A B C A B C) until their turn-by-turn
    ratios settle (see :func:`autoplace.engine.time_interleaved`), and compared turn
    by turn (see :func:`margin`), so the winner is never a lucky draw nor a victim
    of drift. When that does not tell the winner from its closest challenger beyond
    the noise, the two are measured together once more with the ranking loop capped
    at ``DUEL_CAP_S`` (a duel), and compared over every turn they shared. Of the
    finalists no other beats beyond the noise, those within
    ``EQUIVALENT`` of the best of them are equals, and of equals the winner is
    float32 if one is, then the smallest batch. Executables compiled while searching
    are reused. A KeyboardInterrupt ends the search early: the result has
    ``interrupted=True`` and everything measured is in the study. See the README
    for each option.
    """
    obj = (
        objective
        if isinstance(objective, Objective)
        else make_objective(objective, steps=steps, samples=samples, epochs=epochs)
    )
    check_positive("--trials", trials)
    check_positive("--timeout", timeout)
    check_positive("--max-memory", max_memory)
    url = normalize_url(storage) if storage else default_url()
    settings = settings or MeasureSettings()
    if max_memory is not None:
        settings = dataclasses.replace(settings, max_memory=max_memory)
    strategy = strategy or Climb()
    # While searching, the loop the objective rests on gets the search cap, the other
    # one (and the transfer, unless latency counts it) a glance. One warm-up step
    # follows the first call, none when the ranked loop is the fed one: the step
    # loop's glance, timed first, warms it. Finalists are measured the same way, but
    # with the confirmation's cap for the loop that ranks them (or the settings', if
    # lower) and the float32 comparison.
    ranked_loop = "time_cap_s" if obj.loop == "step" else "fed_time_cap_s"
    glance = {"time_cap_s": 0.0, "fed_time_cap_s": 0.0}
    search_settings = dataclasses.replace(
        settings,
        deviation=False,
        transfer_cap_s=settings.transfer_cap_s if obj.name == "latency" else 0.0,
        warmup_steps=min(settings.warmup_steps, 1 if obj.loop == "step" else 0),
        **{**glance, ranked_loop: min(getattr(settings, ranked_loop), SEARCH_CAP_S)},
    )
    confirm_settings, duel_settings = (
        dataclasses.replace(
            search_settings,
            deviation=settings.deviation,
            **{ranked_loop: min(getattr(settings, ranked_loop), cap)},
        )
        for cap in (CONFIRM_CAP_S, DUEL_CAP_S)
    )

    with contextlib.ExitStack() as stack:
        if backend is None:
            backend = stack.enter_context(SubprocessBackend())
        # Open the storage (import Optuna, create its tables) while the worker starts.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            opening = pool.submit(open_storage, url)
            stack.callback(_close_opened, opening)
            mf, info = resolve_workload(backend, model_file, workload)
            available = backend.devices()
        opened = opening.result()
        default_batches = (1,) if obj.name == "latency" else info.batch_sizes or DEFAULT_BATCH_SIZES
        space = build_space(
            devices,
            batch_sizes,
            precisions,
            widths,
            available=available,
            default_width=info.default_width,
            default_batches=default_batches,
        )
        hw, sw = fingerprint.hardware(available), fingerprint.software()
        name = study or f"{info.name}-{obj.name}-{mf.sha256[:8]}-{fingerprint.hardware_key(hw, sw)}"

        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with _storage_errors(url):
            handle = optuna.create_study(
                study_name=name,
                storage=opened,
                direction=obj.direction,
                sampler=optuna.samplers.RandomSampler(),  # never asked: see _start_trial
                load_if_exists=True,
            )
            study_id = opened.get_study_id_from_name(name)
            if handle.direction.name.lower() != obj.direction:
                raise BadInputError(
                    f"study {name!r} was made for an objective to "
                    f"{handle.direction.name.lower()}, not {obj.name}: pass another --study"
                )
            attrs = handle.user_attrs
            for key, value in {
                "workload": {"path": str(mf.path), "sha256": mf.sha256, "name": info.name},
                "hardware": hw,
                "software": sw,
                "objective": {"name": obj.name, **obj.run},
            }.items():
                if key not in attrs:
                    handle.set_user_attr(key, value)
        dists = _distributions([d.name for d in available], space.widths != (None,))
        stale_after = settings.timeout_s + 120.0
        since = dt.datetime.now() if remeasure else None

        started = time.monotonic()
        new_trials = 0
        interrupted = False
        while True:
            with _storage_errors(url):
                seen = _history(handle, stale_after, since).within(space)
            if trials is not None and new_trials >= trials:
                break
            if timeout is not None and time.monotonic() - started >= timeout:
                break
            # The strategy sees the search's quick measurements only: one fidelity, and a
            # confirmation does not restart the search.
            estimates = seen.estimates(obj)
            phase = "search"
            group = list(strategy.propose(space, obj, estimates, seen.pending))
            room = _MAX_INT if trials is None else trials - new_trials
            reference = _incumbent(estimates, obj) if group and room >= 2 else None
            if reference is not None and reference not in group:
                # Measured with the best so far, timed in turns, every new score is
                # anchored to it: drift between groups is fitted out (autoplace.drift).
                group = [reference, *group]
            else:
                reference = None
            duel = False
            if not group:
                phase = "confirm"
                ranked = _scored(seen.figures(), obj, estimates=estimates)
                group = _finalists_to_confirm(ranked, seen.confirmed, obj, confirm, seen.pending)
            if not group:
                group = _duel(_ranking(seen, obj, estimates)[1], obj)
                duel = bool(group)
            if not group:
                break
            group = group[:room]
            asked = []
            with _storage_errors(url):
                for config in group:
                    attrs: dict[str, Any] = {"config": config.label(), "phase": phase}
                    if config == reference:
                        attrs["reference"] = True
                    asked.append(_start_trial(opened, study_id, config, attrs, dists))
            settings_now = search_settings if phase == "search" else confirm_settings
            if duel:
                settings_now = duel_settings
            requests = [
                MeasureRequest(
                    model_file=str(mf.path),
                    sha256=mf.sha256,
                    workload=info.name,
                    config=config,
                    settings=settings_now,
                )
                for config in group
            ]
            try:
                results = backend.measure_together(requests)
            except KeyboardInterrupt:
                interrupted = True
                backend.close()
                with _storage_errors(url):
                    for trial_id, number in asked:
                        opened.set_trial_user_attr(trial_id, "interrupted", True)
                        handle.tell(number, state=optuna.trial.TrialState.FAIL)
                break
            except BaseException:
                with contextlib.suppress(Exception):
                    for _, number in asked:
                        handle.tell(number, state=optuna.trial.TrialState.FAIL)
                raise
            for config, (trial_id, number), result in zip(group, asked, results, strict=True):
                score = obj.score(result) if result.status == "ok" else None
                with _storage_errors(url):
                    opened.set_trial_user_attr(trial_id, _ATTR, result.to_dict())
                    if score is not None:
                        handle.tell(number, score)
                    elif result.status == "too_big":
                        handle.tell(number, state=optuna.trial.TrialState.PRUNED)
                    else:
                        handle.tell(number, state=optuna.trial.TrialState.FAIL)
                new_trials += 1
                if phase == "confirm":
                    seen.confirmed[config] = [*seen.confirmed.get(config, []), result]
                else:
                    seen.searches.append((config, result))
            if on_trial is not None:
                ranked = _ranking(seen, obj)[1]
                best = ranked[0] if ranked else None
                for result in results:
                    score = obj.score(result) if result.status == "ok" else None
                    on_trial(TrialEvent(result, score, best, new_trials, trials, obj))

    in_space, ranked = _ranking(seen, obj)
    rows = _per_group(ranked)
    best = rows[0] if rows else None
    document = recommendation_document(
        obj=obj,
        space=space,
        measurements=in_space,
        ranked=ranked,
        rows=rows,
        study_name=name,
        storage_url=url,
        workload={"path": str(mf.path), "sha256": mf.sha256, "name": info.name},
        hw=hw,
        sw=sw,
    )
    written = None
    if out is not None and best is not None:
        from autoplace.report import _file as recommendation

        written = recommendation.write(out, document)
    return TuneResult(
        study_name=name,
        storage=mask_url(url),
        objective=obj,
        space=space,
        measurements=in_space,
        best=best,
        per_device_precision=rows,
        new_trials=new_trials,
        interrupted=interrupted,
        out=written,
        document=document,
    )


def _close_opened(opening: concurrent.futures.Future) -> None:
    if opening.done() and opening.exception() is None:
        close_storage(opening.result())


def _incumbent(estimates: Mapping[Config, float | None], obj: Objective) -> Config | None:
    """The configuration the search scores best so far, if any ran."""
    ran = [c for c, s in estimates.items() if s is not None]
    sign = 1.0 if obj.direction == "maximize" else -1.0
    return max(ran, key=lambda c: sign * estimates[c], default=None)  # type: ignore[operator]


def _finalists(ranked: list[Scored], obj: Objective, k: int) -> list[Config]:
    """Up to ``k`` of the search's ``ranked`` configurations within ``CONFIRM_REACH`` of
    its best, best first; one slot goes to the best of another (device, precision) if
    one is that close."""
    if not ranked:
        return []
    close = [s for s in ranked if obj.gain(ranked[0].score, s.score) <= CONFIRM_REACH]
    chosen = close[:k]
    if chosen and k >= 2:
        group = _group(chosen[0])
        other = next((s for s in close if _group(s) != group), None)
        if other is not None and other not in chosen:
            chosen[-1] = other
    return [s.config for s in chosen]


def _finalists_to_confirm(
    ranked: list[Scored],
    confirmed: dict[Config, list[Measurement]],
    obj: Objective,
    k: int,
    taken: frozenset[Config],
) -> list[Config]:
    """The finalists to measure together, or none once each has a confirmation.

    ``ranked`` is the search's standing (its drift-corrected scores, best first).
    While any finalist lacks a confirmation, all of them are measured together (those
    confirmed before, e.g. by another worker, get another): a comparison is fair only
    within one interleaved measurement. Finalists are chosen on the search's own
    measurements, so a confirmation that reshuffles the ranking sets off no more.
    """
    finalists = [c for c in _finalists(ranked, obj, k) if c not in taken]
    if all(confirmed.get(c) for c in finalists):
        return []
    return finalists


def _duel(ranked: list[Scored], obj: Objective) -> list[Config]:
    """The winner and its closest challenger, to be timed in turns once more and for
    longer, when the confirmation did not tell them apart beyond the noise: whether
    one is ahead, or within ``EQUIVALENT`` (so that the preferred one may win), then
    rests on every turn of both. None when the winner is beyond doubt, or once the
    finalists have had their duel."""
    confirmed = [s for s in ranked if s.confirmed]
    if len({m.interleave_id for s in confirmed for m in s.rounds}) != 1:
        return []
    best, running = confirmed[0], _in_the_running(ranked, obj)
    others = [s for s in running if s is not best]
    if not others:
        return []
    challenger = min(others, key=lambda s: margin(obj, best, s)["margin"])
    if margin(obj, best, challenger)["significant"]:
        return []
    return [best.config, challenger.config]


def _in(space: Space, c: Config) -> bool:
    return (
        c.device in space.devices
        and c.batch_size in space.batch_sizes
        and c.precision in space.precisions
        and c.width in space.widths
    )


def _group(s: Scored) -> tuple[str, str]:
    return (s.measurement.device, s.measurement.precision)


def _scored(
    measurements: dict[Config, Measurement],
    obj: Objective,
    verdicts: Mapping[Config, Scored] | None = None,
    estimates: Mapping[Config, float | None] | None = None,
) -> list[Scored]:
    """Measured configurations, best first.

    Confirmed ones (in ``verdicts``) carry their confirmed score and rank before the
    rest, so a quick search measurement never beats a confirmed one by a lucky draw;
    the rest carry the search's drift-corrected score (``estimates``; their own
    measurement's score where it has none). Of the confirmed ones that no other beats
    beyond the noise, those within ``EQUIVALENT`` of the best of them are equals, and
    the preferred of those (see :func:`_preference`) leads."""
    verdicts, estimates = verdicts or {}, estimates or {}
    out = []
    for c, m in measurements.items():
        if c in verdicts:
            out.append(verdicts[c])
        elif m.status == "ok":
            score = estimates.get(c)
            out.append(Scored(m, obj.score(m) if score is None else score))  # type: ignore[arg-type]
    sign = -1.0 if obj.direction == "maximize" else 1.0
    ranked = sorted(out, key=lambda x: (not x.confirmed, sign * x.score))
    # A winner by less than the noise is no winner, and one by a hair is no reason to
    # give up precision or memory: of the confirmed configurations none beats beyond
    # the noise, those within EQUIVALENT of the best are equals, and the preferred
    # one (full precision, then the smallest batch) leads.
    running = _in_the_running(ranked, obj)
    if running:
        lead = _lead(running, obj)
        equals = [s for s in running if margin(obj, lead, s)["margin"] <= EQUIVALENT]
        chosen = min(equals, key=lambda s: _preference(obj, s))
        ranked = [chosen, *(s for s in ranked if s is not chosen)]
    return ranked


def _lead(running: list[Scored], obj: Objective) -> Scored:
    """Of confirmed configurations, the one ahead of most others in their turn-by-turn
    comparison (:func:`margin`), then the best scored: the comparison that decides
    significance decides the order too."""
    sign = 1.0 if obj.direction == "maximize" else -1.0

    def standing(s: Scored) -> tuple[int, float]:
        ahead = sum(margin(obj, s, o)["margin"] > 0 for o in running if o is not s)
        return ahead, sign * s.score

    return max(running, key=standing)


def _ranking(
    seen: _Seen, obj: Objective, estimates: Mapping[Config, float | None] | None = None
) -> tuple[dict[Config, Measurement], list[Scored]]:
    """Every configuration's figures (see :func:`_standings`) and the standing on what
    ``seen`` holds, best first; ``estimates``: ``seen.estimates(obj)``, if at hand."""
    figures, verdicts = _standings(seen.figures(), seen.confirmed, obj)
    estimates = seen.estimates(obj) if estimates is None else estimates
    return figures, _scored(figures, obj, verdicts, estimates)


def _per_group(ranked: list[Scored]) -> list[Scored]:
    """Best configuration of each (device, precision) of ``ranked``, in its order."""
    seen: set[tuple[str, str]] = set()
    rows = []
    for s in ranked:
        if _group(s) not in seen:
            seen.add(_group(s))
            rows.append(s)
    return rows


# --- the recommendation document ---------------------------------------------------------


def _figures(s: Scored) -> dict[str, Any]:
    m = s.measurement
    return {
        "score": s.score,
        "score_votes": list(s.votes),
        "interleaved_with": m.interleaved_with,
        "step_s": m.step_s,
        "step_spread": m.step_spread,
        "step_samples": m.step_samples,
        "fed_step_s": m.fed_step_s,
        "fed_step_spread": m.fed_step_spread,
        "samples_per_s": m.samples_per_s,
        "fed_samples_per_s": m.fed_samples_per_s,
        "lower_s": m.lower_s,
        "compile_s": m.compile_s,
        "first_call_s": m.first_call_s,
        "transfer_s": m.transfer_s,
        "peak_bytes": m.peak_bytes,
        "peak_bytes_source": m.peak_bytes_source,
        "flops": m.flops,
        "deviation_vs_float32": m.deviation_vs_float32,
    }


def _placement(s: Scored) -> dict[str, Any]:
    m = s.measurement
    return {
        "device": m.device,
        "device_kind": m.device_kind,
        "batch_size": m.batch_size,
        "precision": m.precision,
        "width": m.width,
        "confirmed": s.confirmed,
        "figures": _figures(s),
    }


def recommendation_document(
    *,
    obj: Objective,
    space: Space,
    measurements: dict[Config, Measurement],
    ranked: list[Scored],
    rows: list[Scored],
    study_name: str,
    storage_url: str,
    workload: dict[str, Any],
    hw: dict[str, Any],
    sw: dict[str, Any],
) -> dict[str, Any]:
    """The recommendation file's content (see the README for its schema); ``ranked`` is
    :func:`_scored`'s standing of ``measurements``, ``rows`` its :func:`_per_group`."""
    from autoplace.report._file import SCHEMA_VERSION

    best = ranked[0] if ranked else None
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "recommendation": _placement(best) if best else {},
        "objective": {
            "name": obj.name,
            "direction": obj.direction,
            "unit": obj.unit,
            "description": obj.describe(),
            **obj.run,
        },
        "workload": workload,
        "fingerprint": {"hardware": hw, "software": sw},
        "study": {
            "name": study_name,
            "storage": mask_url(storage_url),
            "measured": sum(1 for m in measurements.values() if m.status == "ok"),
            "failed": sum(1 for m in measurements.values() if m.status != "ok"),
            "space_size": len(space),
        },
        "search_space": {
            "devices": list(space.devices),
            "batch_sizes": list(space.batch_sizes),
            "precisions": list(space.precisions),
            "widths": [w for w in space.widths if w is not None],
        },
    }
    if best is not None and len(rows) > 1:
        runner = rows[1]
        doc["recommendation"]["runner_up"] = {
            **{k: v for k, v in _placement(runner).items() if k != "figures"},
            "score": runner.score,
            **margin(obj, best, runner),
        }
    if best is not None and best.confirmed:
        # Finalists no finalist beats beyond the noise: the winner is the preferred one.
        tied = [s for s in _in_the_running(ranked, obj) if s is not best]
        if tied:
            doc["recommendation"]["within_noise"] = [
                {
                    **{k: v for k, v in _placement(s).items() if k != "figures"},
                    "score": s.score,
                    **margin(obj, best, s),
                }
                for s in tied
            ]
    if best is not None:
        doc["alternatives"] = [
            _placement(next(s for s in ranked if s.measurement.device == d))
            for d in space.devices
            if d != best.measurement.device and any(s.measurement.device == d for s in ranked)
        ]
        if len(space.widths) > 1:
            doc["per_width"] = [
                _placement(next(s for s in ranked if s.measurement.width == w))
                for w in space.widths
                if any(s.measurement.width == w for s in ranked)
            ]
    return doc
