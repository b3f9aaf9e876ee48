"""What one look-up is asked: the value :func:`autoplace.recommend` takes, checked when made.

Importing it costs nothing heavy: a cached look-up still imports neither JAX nor Optuna.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from autoplace.config import Config
from autoplace.errors import BadInputError
from autoplace.study import check_study_name
from autoplace.units import MOST_DEVIATION

OnMiss = Literal["tune", "fallback", "raise"]
OnStale = Literal["use", "retune", "raise"]
OnBusy = Literal["wait", "fallback"]


@dataclasses.dataclass(frozen=True)
class RecommendRequest:
    """One look-up: which model, objective and widths; what to do without a fresh answer;
    the caller's limits.

    ``model_file``'s ``workload`` under ``objective`` (``throughput``, ``time-to-finish``
    with ``steps`` or ``samples`` and ``epochs``, ``latency``; its steps fed as ``feeding``
    says: ``put``, ``prefetch`` or ``resident``) at ``widths`` (default: the
    file's default width). ``storage`` is a team's study storage (default: the study
    database beside the cache); ``study`` one study in it (default: every study of this
    model, objective and machine). ``on_miss`` (no answer): ``tune`` (and cache it),
    ``fallback`` or ``raise``; ``on_stale`` (an answer of other jax/jaxlib versions, or
    older than ``max_age``, seconds or a timedelta): ``use``, ``retune`` or ``raise``;
    ``on_busy`` (another process on this machine is tuning this key): ``wait`` at most
    ``wait_s`` seconds, or ``fallback`` at once. The limits pick among the measured
    configurations, without measuring: a batch at most ``max_batch_size``; a peak that
    leaves ``memory_margin`` of the device's memory free; output within ``max_deviation``
    of float32's (default: not checked). ``fallback`` is the answer of last resort
    (default: the first device, float32, batch 32); ``cache_dir`` the cache (default:
    ``$AUTOPLACE_CACHE``, else the user's cache directory); ``tune_options`` go to the
    :class:`~autoplace.TuneRequest` of a tune this look-up runs.

    Every value is checked here: a bad one raises :class:`~autoplace.BadInputError`.
    """

    model_file: str | Path
    workload: str | None = None
    objective: str = "throughput"
    steps: int | None = None
    samples: int | None = None
    epochs: int | None = None
    feeding: str = "put"
    widths: Sequence[int] | None = None
    storage: str | None = None
    study: str | None = None
    on_miss: OnMiss = "tune"
    on_stale: OnStale = "use"
    on_busy: OnBusy = "wait"
    wait_s: float = 1800.0
    max_batch_size: int | None = None
    memory_margin: float = 0.1
    max_deviation: float | None = None
    max_age: float | dt.timedelta | None = None
    fallback: Config | Mapping[str, Any] | None = None
    cache_dir: str | Path | None = None
    tune_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("on_miss", self.on_miss, ("tune", "fallback", "raise")),
            ("on_stale", self.on_stale, ("use", "retune", "raise")),
            ("on_busy", self.on_busy, ("wait", "fallback")),
        ):
            if value not in allowed:
                # The command line's flag where there is one, and the argument's name.
                flag = "--" + name.replace("_", "-")
                named = f"{flag} ({name} in Python)" if name != "on_busy" else name
                raise BadInputError(f"{named} must be one of {', '.join(allowed)}, got {value!r}")
        if not 0.0 <= self.memory_margin < 1.0:
            raise BadInputError(
                f"memory_margin is a fraction of memory in [0, 1), got {self.memory_margin}"
            )
        if self.max_batch_size is not None and self.max_batch_size < 1:
            raise BadInputError(f"max_batch_size must be at least 1, got {self.max_batch_size}")
        if self.max_deviation is not None and not 0 < self.max_deviation <= MOST_DEVIATION:
            raise BadInputError(
                "max_deviation is a fraction of float32's output in (0, 1], got "
                f"{self.max_deviation}"
            )
        if self.wait_s < 0:
            raise BadInputError(f"wait_s must be 0 or more seconds, got {self.wait_s}")
        if self.max_age_s is not None and self.max_age_s < 0:
            raise BadInputError(f"--max-age must be 0 or more seconds, got {self.max_age_s:g}")
        if self.study is not None and not self.study.strip():
            raise BadInputError("--study is empty: give a name, or leave --study out for all")
        if self.study is not None:
            check_study_name(self.study)
        _ = self.run  # a bad objective or run length fails now

    @property
    def max_age_s(self) -> float | None:
        """``max_age`` in seconds."""
        age = self.max_age
        if age is None:
            return None
        return age.total_seconds() if isinstance(age, dt.timedelta) else float(age)

    @property
    def run(self) -> dict[str, Any]:
        """The objective's run length as a study records it (checked by
        :func:`~autoplace.make_objective`)."""
        from autoplace.objectives import make_objective

        objective = make_objective(
            self.objective,
            steps=self.steps,
            samples=self.samples,
            epochs=self.epochs,
            feeding=self.feeding,
        )
        return dict(objective.run)

    @property
    def limits(self) -> dict[str, Any]:
        """The caller's limits, as the pick applies them."""
        return {
            "max_batch_size": self.max_batch_size,
            "memory_margin": self.memory_margin,
            "max_deviation": self.max_deviation,
        }
