"""A study read back: its measurements by phase, what is in flight, its attributes.

The reader writes nothing. Opened on its own (:meth:`StudyReader.open`: ``explain``,
``report``), it creates no study, reclaims no trial and imports no spill file; every
trial running counts as in flight. Within a tune's :class:`~._log.OptunaStudyLog` it
also says which running trials are their owners' no longer (``alive``), for the writer
to reclaim.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection
from typing import Any

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.study._access import Access
from autoplace.study._history import History
from autoplace.study._side_by_side import compiled_side_by_side, with_side_by_side
from autoplace.study._storage import check_study_name
from autoplace.study._trials import ATTR, PARAMS, SYSTEM_ATTR, UID, config_of, reclaimed

#: Whether a running trial's owner still measures it (the trial, and the time now).
Alive = Callable[[Any, dt.datetime], bool]


class StudyReader:
    """Reads one study of an opened storage, every call through ``access``.

    Args:
        access: the storage, reached with patience (see :class:`~._access.Access`).
        study: the Optuna study.
        name: its name.
        since: only measurements finished after this count (``--remeasure``).
    """

    def __init__(self, access: Access, study: Any, name: str, since: dt.datetime | None) -> None:
        self.access, self.study, self.name, self._since = access, study, name, since
        self.study_id: int = access.do(lambda: access.storage.get_study_id_from_name(name))

    @classmethod
    def open(
        cls,
        storage: Any,
        url: str,
        name: str,
        *,
        since: dt.datetime | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> StudyReader:
        """Study ``name`` read as it is (``explain``, ``report``): nothing created,
        written, reclaimed or imported. ``storage``: opened (see
        :func:`autoplace.study.open_storage`); ``url``: its URL (shown without
        credentials); ``on_wait`` hears a line while a storage fault is waited for."""
        import optuna

        check_study_name(name)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        access = Access(storage, url, on_wait)
        study = access.do(lambda: optuna.load_study(study_name=name, storage=storage))
        reader = cls(access, study, name, since)
        access.opened = True
        return reader

    @property
    def study_attrs(self) -> dict[str, Any]:
        """What the study was recorded with (workload, hardware, device memory, ...)."""
        return self.access.do(lambda: dict(self.study.user_attrs))

    def history(self, *, upto: int | None = None, until: dt.datetime | None = None) -> History:
        """What the study holds; ``upto``: only its trials numbered up to that, ``until``:
        only what finished before then (what a recommendation file rested on: the newest
        trial number it records, else the time it was written). Every running trial is
        in flight."""
        return self.scan(upto=upto, until=until)[0]

    def scan(
        self,
        *,
        upto: int | None = None,
        until: dt.datetime | None = None,
        alive: Alive | None = None,
    ) -> tuple[History, list[Any]]:
        """What the study holds (see :meth:`history`), and the running trials that
        ``alive`` finds their owners' no longer (with no ``alive``, none: all in flight)."""
        from optuna.trial import TrialState

        stale: list[Any] = []
        finished: list[tuple[dt.datetime, int, str, Config, Measurement]] = []
        side_by_side: set[int] = set()  # trial numbers an older engine compiled so
        pending: set[Config] = set()
        now = dt.datetime.now()
        trials = self.access.do(lambda: self.study.get_trials(deepcopy=False))
        for t in trials:
            if not set(t.params) >= PARAMS or (upto is not None and t.number > upto):
                continue
            config = config_of(t.params)
            if t.state == TrialState.RUNNING:
                if alive is None or alive(t, now):
                    pending.add(config)
                else:
                    stale.append(t)
                continue
            if reclaimed(t):
                continue  # taken for dead: its owner, if alive, stored a new trial
            data = t.system_attrs.get(SYSTEM_ATTR) or t.user_attrs.get(ATTR)
            if data is None or t.user_attrs.get("interrupted"):
                continue
            when = t.datetime_complete or t.datetime_start or now
            if self._since is not None and when < self._since:
                continue
            if until is not None and when >= until:
                continue
            phase = t.user_attrs.get("phase", "search")
            finished.append((when, t.number, phase, config, Measurement.from_dict(data)))
            if compiled_side_by_side(data):
                side_by_side.add(t.number)
        return _history(finished, pending, side_by_side), stale

    def counts(self, t: Any) -> bool:
        """Whether a finished trial counts in this reader's history (``--remeasure``
        leaves out what finished before it started)."""
        when = t.datetime_complete or t.datetime_start
        return self._since is None or when is None or when >= self._since

    def find(self, uid: str) -> int | None:
        """The trial whose ``uid`` attribute is ``uid``, if the storage holds one (one
        storage call, not retried: for an action that is)."""
        for t in self.access.storage.get_all_trials(self.study_id, deepcopy=False):
            if t.user_attrs.get(UID) == uid:
                return t._trial_id
        return None

    def holds(self, trial_id: int, uid: str | None) -> bool:
        """Whether trial ``trial_id`` of this study is the one a spill entry names (its
        ``uid`` the same: a recreated storage may number another trial so)."""
        try:
            trial = self.access.storage.get_trial(trial_id)
        except KeyError:
            return False
        return uid is not None and trial.user_attrs.get(UID) == uid


def _history(
    finished: list[tuple[dt.datetime, int, str, Config, Measurement]],
    pending: set[Config],
    side_by_side: Collection[int] = (),
) -> History:
    """The history of the ``finished`` measurements (when, trial number, phase,
    configuration, measurement) and the ``pending`` configurations; ``side_by_side``:
    the trial numbers an older engine measured, compiling an accelerator's steps side by
    side (each figure read so: :func:`with_side_by_side`)."""
    finished.sort(key=lambda f: f[:2])
    read = with_side_by_side([(f[4], f[1] in side_by_side) for f in finished])
    measured: dict[str, list[tuple[Config, Measurement]]] = {}
    for (_, _, phase, c, _), m in zip(finished, read, strict=True):
        measured.setdefault(phase, []).append((c, m))
    newest = max((number for _, number, *_ in finished), default=-1)
    return History({p: tuple(found) for p, found in measured.items()}, frozenset(pending), newest)
