"""``autoplace.tune``: search device x batch size x precision x width, write a recommendation.

The loop is ask-and-tell over an Optuna study. A :mod:`search <autoplace.search>`
strategy proposes each configuration, the isolated measurement core measures it,
and every figure is stored as trial attributes, so:

* a configuration is measured once per study (unless ``remeasure``); running the
  same command again resumes, and other workers sharing the storage see it;
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
from autoplace.config import PRECISIONS, Config, check_batch_size, parse_device, parse_precision
from autoplace.devices import distinct_kinds
from autoplace.errors import BadInputError, StorageError
from autoplace.measure import check_device, resolve_workload
from autoplace.measurement import Measurement
from autoplace.objectives import Objective, make_objective
from autoplace.search import Climb, Space, Strategy
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.storage import close_storage, default_url, mask_url, normalize_url, open_storage
from autoplace.worker import Backend, SubprocessBackend

#: Default batch sizes: powers of two; sizes XLA predicts cannot fit are pruned.
DEFAULT_BATCH_SIZES: tuple[int, ...] = tuple(2**i for i in range(13))  # 1 .. 4096
_ATTR = "measurement"
#: Time cap of each timed loop while searching; confirmations use the full settings.
SEARCH_CAP_S = 0.3
#: Configurations whose search score is within this of the search's best are finalists.
CONFIRM_REACH = 0.15
#: The one-sided level at which a finalist must beat another to count as faster.
SIGNIFICANCE = 0.05
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
    #: finalists measured together), whose median is ``score``; empty when not confirmed.
    votes: tuple[float, ...] = ()

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
    """Turn by turn, how many times better ``a`` scored than ``b`` (1.0: equal), when
    the two were timed in turns in one call with at least ``_MIN_TURNS`` turns;
    else ``None``."""
    ma, mb = a.measurement, b.measurement
    if ma.interleave_id is None or ma.interleave_id != mb.interleave_id:
        return None
    sa, sb = objective.chunk_scores(ma), objective.chunk_scores(mb)
    if len(sa) != len(sb) or len(sa) < _MIN_TURNS:
        return None
    return [1.0 + objective.gain(x, y) for x, y in zip(sa, sb, strict=True)]


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


# --- options -------------------------------------------------------------------------


def _check_positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise BadInputError(f"{name} must be positive, got {value}")


def build_space(
    devices: Sequence[str] | None,
    batch_sizes: Sequence[int] | None,
    precisions: Sequence[str] | None,
    widths: Sequence[int] | None,
    *,
    available: Sequence[Any],
    default_width: int | None,
    default_batches: Sequence[int],
) -> Space:
    """The search space from the user's options and what the machine and file offer."""
    if devices:
        names = tuple(dict.fromkeys(parse_device(d) for d in devices))
        for name in names:
            check_device(list(available), name)
    else:
        names = tuple(d.name for d in distinct_kinds(list(available)))
    batches = tuple(check_batch_size(b) for b in (batch_sizes or default_batches))
    precs = tuple(dict.fromkeys(parse_precision(p) for p in (precisions or PRECISIONS)))
    if widths:
        for w in widths:
            if w < 1:
                raise BadInputError(f"width must be at least 1, got {w}")
    ws: tuple[int | None, ...] = tuple(dict.fromkeys(widths)) if widths else (default_width,)
    return Space(devices=names, batch_sizes=batches, precisions=precs, widths=ws)


# --- Optuna glue ---------------------------------------------------------------------


def _chosen_sampler() -> Any:
    """An Optuna sampler that hands out exactly the configuration the strategy chose."""
    import optuna

    class Chosen(optuna.samplers.BaseSampler):
        def __init__(self) -> None:
            self.params: dict[str, Any] = {}

        def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
            return {}

        def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict[str, Any]:
            return {}

        def sample_independent(self, study: Any, trial: Any, name: str, dist: Any) -> Any:
            return self.params[name]

    return Chosen()


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


def _history(
    study: Any, stale_after_s: float, since: dt.datetime | None
) -> tuple[dict[Config, Measurement], dict[Config, list[Measurement]], frozenset[Config]]:
    """The latest search measurement per configuration, every confirmation per
    configuration (oldest first), and the configurations being measured right now (by
    this process or another worker)."""
    from optuna.trial import TrialState

    latest: dict[Config, tuple[dt.datetime, Measurement]] = {}
    rounds: dict[Config, list[tuple[dt.datetime, Measurement]]] = {}
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
        finished = t.datetime_complete or t.datetime_start or now
        if since is not None and finished < since:
            continue
        if t.user_attrs.get("phase", "search") == "confirm":
            rounds.setdefault(config, []).append((finished, Measurement.from_dict(data)))
        elif config not in latest or finished >= latest[config][0]:
            latest[config] = (finished, Measurement.from_dict(data))
    searched = {c: m for c, (_, m) in latest.items()}
    confirmed = {c: [m for _, m in sorted(ms, key=lambda x: x[0])] for c, ms in rounds.items()}
    return searched, confirmed, frozenset(pending)


def _standings(
    searched: dict[Config, Measurement], confirmed: dict[Config, list[Measurement]], obj: Objective
) -> tuple[dict[Config, Measurement], dict[Config, Scored]]:
    """Every configuration's figures, and the verdict on each confirmed one.

    A confirmed configuration's score rests on its confirmations alone (the median,
    if several): they were timed in turns with the other finalists, so drift
    between the search's measurements does not decide. Its figures are those of
    the confirmation whose score is nearest that median: a real measurement.
    """
    figures = dict(searched)
    verdicts: dict[Config, Scored] = {}
    for c, ms in confirmed.items():
        ok = [m for m in ms if m.status == "ok"]
        if not ok:
            figures[c] = ms[-1]
            continue
        votes = [obj.score(m) for m in ok]
        score = statistics.median(votes)
        chosen = min(ok, key=lambda m: abs(obj.score(m) - score))
        figures[c] = chosen
        verdicts[c] = Scored(chosen, score, tuple(votes))
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
    confirm: int = 3,
    strategy: Strategy | None = None,
    settings: MeasureSettings | None = None,
    backend: Backend | None = None,
    on_trial: Callable[[TrialEvent], None] | None = None,
) -> TuneResult:
    """Search placements of a model file's workload and write the recommendation to ``out``.

    Runs until the search strategy has nothing worth measuring, or ``trials`` new
    measurements, or ``timeout`` seconds (a measurement in flight finishes). The
    search measures quickly (timed loops capped at ``SEARCH_CAP_S``, no float32
    comparison); then up to ``confirm`` finalists (the search's best, and the next
    ones within ``CONFIRM_REACH`` of it) are measured again together, the loop the
    objective ranks on with ``settings``' cap, their timed loops taking turns chunk
    by chunk (A B C A B C) until their turn-by-turn ratios settle (see
    :func:`autoplace.engine.time_interleaved`), and compared turn by turn (see
    :func:`margin`), so the winner is never a lucky draw nor a victim of drift. Of
    the finalists no other beats beyond the noise, the winner is float32 if one is,
    then the smallest batch. Executables compiled while searching are reused. A
    KeyboardInterrupt ends the search early: the result has ``interrupted=True``
    and everything measured is in the study. See the README for each option.
    """
    obj = (
        objective
        if isinstance(objective, Objective)
        else make_objective(objective, steps=steps, samples=samples, epochs=epochs)
    )
    _check_positive("--trials", trials)
    _check_positive("--timeout", timeout)
    _check_positive("--max-memory", max_memory)
    url = normalize_url(storage) if storage else default_url()
    settings = settings or MeasureSettings()
    if max_memory is not None:
        settings = dataclasses.replace(settings, max_memory=max_memory)
    strategy = strategy or Climb()
    # While searching, the loop the objective rests on gets the search cap, the other
    # one (and the transfer, unless latency counts it) a glance. One warm-up step
    # follows the first call, none when the ranked loop is the fed one: the step
    # loop's glance, timed first, warms it. Finalists are measured the same way, but
    # with the full settings' cap for the loop that ranks them and the float32
    # comparison.
    ranked_loop = "time_cap_s" if obj.loop == "step" else "fed_time_cap_s"
    glance = {"time_cap_s": 0.0, "fed_time_cap_s": 0.0}
    search_settings = dataclasses.replace(
        settings,
        deviation=False,
        transfer_cap_s=settings.transfer_cap_s if obj.name == "latency" else 0.0,
        warmup_steps=min(settings.warmup_steps, 1 if obj.loop == "step" else 0),
        **{**glance, ranked_loop: min(getattr(settings, ranked_loop), SEARCH_CAP_S)},
    )
    confirm_settings = dataclasses.replace(
        search_settings,
        deviation=settings.deviation,
        **{ranked_loop: getattr(settings, ranked_loop)},
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
        chooser = _chosen_sampler()
        with _storage_errors(url):
            handle = optuna.create_study(
                study_name=name,
                storage=opened,
                direction=obj.direction,
                sampler=chooser,
                load_if_exists=True,
            )
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
                searched, confirmed, pending = _history(handle, stale_after, since)
            searched = {c: m for c, m in searched.items() if _in(space, c)}
            confirmed = {c: ms for c, ms in confirmed.items() if _in(space, c)}
            in_space, verdicts = _standings(searched, confirmed, obj)
            if trials is not None and new_trials >= trials:
                break
            if timeout is not None and time.monotonic() - started >= timeout:
                break
            # The strategy sees the search's quick measurements only: one fidelity, and a
            # confirmation does not restart the search.
            scores = {c: obj.score(m) if m.status == "ok" else None for c, m in searched.items()}
            phase = "search"
            proposed = strategy.propose(space, obj, scores, pending)
            group = [proposed] if proposed is not None else []
            if not group:
                phase = "confirm"
                group = _finalists_to_confirm(searched, confirmed, obj, confirm, pending)
            if not group:
                break
            if trials is not None:
                group = group[: trials - new_trials]
            asked = []
            with _storage_errors(url):
                for config in group:
                    chooser.params = _params(config)
                    trial = handle.ask(dists)
                    trial.set_user_attr("config", config.label())
                    trial.set_user_attr("phase", phase)
                    asked.append(trial)
            requests = [
                MeasureRequest(
                    model_file=str(mf.path),
                    sha256=mf.sha256,
                    workload=info.name,
                    config=config,
                    settings=confirm_settings if phase == "confirm" else search_settings,
                )
                for config in group
            ]
            try:
                results = (
                    [backend.measure(requests[0])]
                    if phase == "search"
                    else backend.measure_together(requests)
                )
            except KeyboardInterrupt:
                interrupted = True
                backend.close()
                with _storage_errors(url):
                    for trial in asked:
                        trial.set_user_attr("interrupted", True)
                        handle.tell(trial, state=optuna.trial.TrialState.FAIL)
                break
            except BaseException:
                with contextlib.suppress(Exception):
                    for trial in asked:
                        handle.tell(trial, state=optuna.trial.TrialState.FAIL)
                raise
            for config, trial, result in zip(group, asked, results, strict=True):
                score = obj.score(result) if result.status == "ok" else None
                with _storage_errors(url):
                    trial.set_user_attr(_ATTR, result.to_dict())
                    if score is not None:
                        handle.tell(trial, score)
                    elif result.status == "too_big":
                        handle.tell(trial, state=optuna.trial.TrialState.PRUNED)
                    else:
                        handle.tell(trial, state=optuna.trial.TrialState.FAIL)
                new_trials += 1
                if phase == "confirm":
                    confirmed[config] = [*confirmed.get(config, []), result]
                else:
                    searched[config] = result
            if on_trial is not None:
                in_space, verdicts = _standings(searched, confirmed, obj)
                best = _best(in_space, obj, verdicts)
                for result in results:
                    score = obj.score(result) if result.status == "ok" else None
                    on_trial(TrialEvent(result, score, best, new_trials, trials, obj))

    rows = _per_group(in_space, obj, verdicts)
    best = rows[0] if rows else None
    document = recommendation_document(
        obj=obj,
        space=space,
        measurements=in_space,
        verdicts=verdicts,
        rows=rows,
        study_name=name,
        storage_url=url,
        workload={"path": str(mf.path), "sha256": mf.sha256, "name": info.name},
        hw=hw,
        sw=sw,
    )
    written = None
    if out is not None and best is not None:
        from autoplace import recommendation

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


def _finalists(searched: dict[Config, Measurement], obj: Objective, k: int) -> list[Config]:
    """Up to ``k`` configurations the search puts within ``CONFIRM_REACH`` of its best,
    best first; one slot goes to the best of another (device, precision) if one is close."""
    ranked = _scored(searched, obj)
    close = [s for s in ranked if obj.gain(ranked[0].score, s.score) <= CONFIRM_REACH]
    chosen = close[:k]
    if chosen and k >= 2:
        group = _group(chosen[0])
        other = next((s for s in close if _group(s) != group), None)
        if other is not None and other not in chosen:
            chosen[-1] = other
    return [s.config for s in chosen]


def _finalists_to_confirm(
    searched: dict[Config, Measurement],
    confirmed: dict[Config, list[Measurement]],
    obj: Objective,
    k: int,
    taken: frozenset[Config],
) -> list[Config]:
    """The finalists to measure together, or none once each has a confirmation.

    While any finalist lacks one, all of them are measured together (those confirmed
    before, e.g. by another worker, get another): a comparison is fair only within
    one interleaved measurement. Finalists are chosen on the search's own
    measurements, so a confirmation that reshuffles the ranking sets off no more.
    """
    finalists = [c for c in _finalists(searched, obj, k) if c not in taken]
    if all(confirmed.get(c) for c in finalists):
        return []
    return finalists


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
) -> list[Scored]:
    """Measured configurations, best first. Confirmed ones (in ``verdicts``) carry their
    confirmed score and rank before the rest, so a quick search measurement never
    beats a confirmed one by a lucky draw; of the confirmed ones that no other beats
    beyond the noise, the preferred (see :func:`_preference`) leads."""
    verdicts = verdicts or {}
    out = []
    for c, m in measurements.items():
        if c in verdicts:
            out.append(verdicts[c])
        elif m.status == "ok":
            out.append(Scored(m, obj.score(m)))
    sign = -1.0 if obj.direction == "maximize" else 1.0
    ranked = sorted(out, key=lambda x: (not x.confirmed, sign * x.score))
    # A winner by less than the noise is no winner: of the confirmed configurations
    # none beats beyond it, the preferred one (full precision, smallest batch) leads.
    running = _in_the_running(ranked, obj)
    if running:
        chosen = min(running, key=lambda s: _preference(obj, s))
        ranked = [chosen, *(s for s in ranked if s is not chosen)]
    return ranked


def _best(
    measurements: dict[Config, Measurement],
    obj: Objective,
    verdicts: Mapping[Config, Scored] | None = None,
) -> Scored | None:
    ranked = _scored(measurements, obj, verdicts)
    return ranked[0] if ranked else None


def _per_group(
    measurements: dict[Config, Measurement],
    obj: Objective,
    verdicts: Mapping[Config, Scored] | None = None,
) -> list[Scored]:
    """Best configuration of each (device, precision), best (and confirmed) first."""
    seen: set[tuple[str, str]] = set()
    rows = []
    for s in _scored(measurements, obj, verdicts):
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
    verdicts: Mapping[Config, Scored],
    rows: list[Scored],
    study_name: str,
    storage_url: str,
    workload: dict[str, Any],
    hw: dict[str, Any],
    sw: dict[str, Any],
) -> dict[str, Any]:
    """The recommendation file's content (see the README for its schema)."""
    from autoplace.recommendation import SCHEMA_VERSION

    ranked = _scored(measurements, obj, verdicts)
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
