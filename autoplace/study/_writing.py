"""A study written: measurements as trials, begun, claimed, recorded or ended; the pick,
the answer and the dashboard's note.

A measurement the storage would not take is written to the spill file (:mod:`._spill`)
and stored by the next writer opened on the study; a trial's creation retried after its
reply was lost is found again by its ``uid``, never made twice.
"""

from __future__ import annotations

import contextlib
import functools
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from autoplace.config import Config
from autoplace.errors import AutoplaceError, StorageError, StorageFaultError
from autoplace.measurement import Measurement
from autoplace.study import _spill
from autoplace.study._answers import answer_attr
from autoplace.study._claims import Claims
from autoplace.study._reading import StudyReader
from autoplace.study._trials import (
    HEARTBEAT,
    SYSTEM_ATTR,
    UID,
    Outcome,
    StoredPhase,
    Ticket,
    config_of,
    params_of,
    reclaimed,
    scalars,
    template,
    token,
)
from autoplace.study._url import storage_key


class StudyWriter:
    """Writes one study, read through ``reader``, as the worker ``claims`` says.

    Args:
        reader: the study's reader (its storage, study, and the trials it finds).
        claims: this worker's trials in flight.
        dists: the trials' distributions (see :func:`~._trials.distributions`).
        spill: where measurements the storage would not take are kept (see :mod:`._spill`).
    """

    def __init__(
        self, reader: StudyReader, claims: Claims, dists: Mapping[str, Any], spill: Path
    ) -> None:
        self._reader, self._claims, self._dists, self.spill = reader, claims, dists, spill
        self._access, self._study = reader.access, reader.study
        self._storage = reader.access.storage
        self._spilled = 0

    # -- the study's notes ----------------------------------------------------------------

    def annotate(self, note: str, figure: Callable[[], Any]) -> bool:
        """Where optuna-dashboard is installed, save ``note`` (Markdown) as the study's
        note and ``figure()`` (a plotly figure, drawn only then) beside it; whether it was.
        The figure replaces the one an earlier tune of the study saved."""
        try:
            import optuna_dashboard
        except ImportError:
            return False
        drawn = figure()
        self._access.do(lambda: optuna_dashboard.save_note(self._study, note))
        self._access.do(
            lambda: optuna_dashboard.save_plotly_graph_object(
                self._study, drawn, graph_object_id="autoplace-throughput"
            )
        )
        return True

    def mark_pick(self, config: Config, score: float) -> None:
        """Record in the study what autoplace picks, its score and the trials that measured
        it (optuna-dashboard's "best trial" is one lucky measurement, not the pick)."""
        from optuna.trial import TrialState

        def mark() -> None:
            trials = [
                t.number
                for t in self._study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if t.user_attrs.get("config") == config.label()
            ]
            pick = {"config": config.label(), "score": score, "trials": trials}
            self._study.set_user_attr("autoplace_pick", pick)

        self._access.do(mark)

    def save_answer(self, answer: Mapping[str, Any]) -> None:
        """Keep the tune's compact answer with the study, under its question
        (:func:`~._answers.answer_attr`), where a launcher on an identical machine finds it
        without measuring."""
        attr = answer_attr(answer)
        self._access.do(lambda: self._study.set_user_attr(attr, dict(answer)))

    # -- trials ---------------------------------------------------------------------------

    def begin(
        self, configs: Sequence[Config], phase: StoredPhase, reference: Config | None = None
    ) -> list[Ticket]:
        """See :meth:`~._log.StudyLog.begin`."""
        from optuna.trial import TrialState

        tickets = []
        live = self._claims.live
        try:
            for config in configs:
                attrs: dict[str, Any] = {
                    "config": config.label(),
                    "phase": phase,
                    "owner": self._claims.owner.as_dict(),
                    HEARTBEAT: time.time(),
                    UID: uuid.uuid4().hex,
                }
                if config == reference:
                    attrs["reference"] = True
                trial_id = self._create(template(self._dists, config, attrs, TrialState.RUNNING))
                live[trial_id] = attrs
                number = self._access.do(
                    functools.partial(self._storage.get_trial_number_from_id, trial_id)
                )
                tickets.append(Ticket(trial_id, number, config))
        except StorageError:  # the run ends: what this group began is ended for the resume
            self._end_all(list(live), "interrupted", patient=False)
            raise
        return tickets

    def claim(self, tickets: Sequence[Ticket], phase: StoredPhase) -> list[Ticket]:
        """See :meth:`~._log.StudyLog.claim`."""
        from optuna.trial import TrialState

        try:
            trials = self._access.do(
                lambda: self._study.get_trials(
                    deepcopy=False, states=(TrialState.RUNNING, TrialState.COMPLETE)
                )
            )
        except StorageError:  # the run ends: the group is ended for the resume
            self._end_all([t.trial_id for t in tickets], "interrupted", patient=False)
            raise
        # A trial of this log that it holds no ticket for is a duplicate: Optuna's RDB
        # storage retries a creation whose commit happened but whose reply was lost.
        doubles = [
            t._trial_id
            for t in trials
            if t.state == TrialState.RUNNING
            and token(t) == self._claims.owner.token
            and t._trial_id not in self._claims.live
        ]
        if doubles:
            self._end_all(doubles, "duplicate", patient=False)
        others = {*doubles, *(t.trial_id for t in tickets)}
        lost = [t for t in tickets if self._rivalled(t, phase, trials, others)]
        if not lost:
            return list(tickets)
        gone = lost if phase == "search" else list(tickets)
        self._end_all([t.trial_id for t in gone], "lost_claim", patient=True)
        return [t for t in tickets if t not in gone]

    def _rivalled(
        self, ticket: Ticket, phase: StoredPhase, trials: Sequence[Any], left_out: set[int]
    ) -> bool:
        """Whether another worker began ``ticket``'s configuration in ``phase`` earlier
        (among ``trials``, but for those ``left_out``: this worker's group and duplicates).
        A reference is never rivalled: the best so far, measured again with the group on
        purpose."""
        from optuna.trial import TrialState

        if self._claims.live.get(ticket.trial_id, {}).get("reference"):
            return False
        return any(
            t._trial_id not in left_out
            and t.number < ticket.number
            and t.user_attrs.get("config") == ticket.config.label()
            and t.user_attrs.get("phase", "search") == phase
            and not t.user_attrs.get("reference")
            and (phase == "search" or t.state == TrialState.RUNNING)
            and (t.state == TrialState.RUNNING or self._reader.counts(t))
            for t in trials
        )

    def record(self, ticket: Ticket, measurement: Measurement, score: float | None) -> None:
        """See :meth:`~._log.StudyLog.record`."""
        from optuna.trial import TrialState

        if score is not None:
            state, values = TrialState.COMPLETE, [score]
        elif measurement.status == "too_big":
            state, values = TrialState.PRUNED, None
        else:
            state, values = TrialState.FAIL, None
        attrs = self._claims.live.get(ticket.trial_id) or {"config": ticket.config.label()}
        outcome = Outcome(ticket, attrs, measurement, state, values, uuid.uuid4().hex)
        try:
            self._access.do(lambda: self._store(outcome))
        except StorageError as exc:
            raise self._keep_aside(exc, outcome) from exc
        finally:
            self._claims.live.pop(ticket.trial_id, None)

    def abandon(self, tickets: Sequence[Ticket], interrupted: bool) -> None:
        """End ``tickets`` as failed; ``interrupted`` ones are measured again on resume.

        Each is tried once (a Ctrl-C does not wait out a storage's patience): one the
        storage would not end goes in the spill file, so that the resume ends it at once,
        wherever it runs. Storage errors are not raised: autoplace is stopping anyway, and
        they must not hide why.
        """
        self._end_all(
            [t.trial_id for t in tickets], "interrupted" if interrupted else None, patient=False
        )

    def _end_all(self, trial_ids: Sequence[int], mark: str | None, *, patient: bool) -> None:
        """End this log's trials ``trial_ids`` (see :meth:`_end`); those the storage would
        not end go in the spill file, for the resume to end."""
        left = []
        for trial_id in trial_ids:
            try:
                self._access.do(functools.partial(self._end, trial_id, mark), patient=patient)
            except StorageError:
                left.append(self._ending(trial_id, mark))
            self._claims.live.pop(trial_id, None)
        if left:
            with contextlib.suppress(OSError, AutoplaceError):  # then reclaimed by heartbeat
                _spill.add(self.spill, left)

    def _end(self, trial_id: int, mark: str | None) -> None:
        """End trial ``trial_id`` as failed, with the user attribute ``mark`` set (unless
        another worker ended it first: a trial is ended once)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        if self._storage.get_trial(trial_id).state.is_finished():
            return
        with contextlib.suppress(UpdateFinishedTrialError):
            if mark is not None:
                self._storage.set_trial_user_attr(trial_id, mark, True)
            self._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)

    def _store(self, outcome: Outcome) -> None:
        """Write a measurement into its trial; into a new trial (``outcome.uid``) if another
        worker reclaimed that one meanwhile. Retried whole: a finished trial is either this
        call's own earlier try, whose reply was lost, or a reclaimed one."""
        from optuna.exceptions import UpdateFinishedTrialError

        ticket, measurement = outcome.ticket, outcome.measurement
        trial_id = ticket.trial_id
        trial = self._storage.get_trial(trial_id)
        if trial.state.is_finished():
            if not reclaimed(trial):
                return  # an earlier try's, its reply lost
        else:
            try:
                self._storage.set_trial_system_attr(trial_id, SYSTEM_ATTR, measurement.to_dict())
                for key, value in scalars(measurement).items():
                    self._storage.set_trial_user_attr(trial_id, key, value)
                self._storage.set_trial_state_values(
                    trial_id, state=outcome.state, values=outcome.values
                )
                return
            except UpdateFinishedTrialError:
                if not reclaimed(self._storage.get_trial(trial_id)):
                    return
        if self._reader.find(outcome.uid) is None:  # not made by an earlier, unheard try
            self._storage.create_new_trial(
                self._reader.study_id, template_trial=self._anew(outcome)
            )

    def _anew(self, outcome: Outcome) -> Any:
        """The trial ``outcome`` gets when its own is not there to take it."""
        attrs = {**outcome.attrs, UID: outcome.uid, "recovered_from": outcome.ticket.number}
        return template(
            self._dists,
            outcome.ticket.config,
            attrs,
            outcome.state,
            outcome.measurement,
            outcome.values,
        )

    def _create(self, trial: Any) -> int:
        """Create ``trial`` (see :func:`~._trials.template`) in one storage call, retried
        as one: a try after a failure first looks for the trial by its ``uid`` (the
        failure may have been a lost reply to a creation that happened)."""
        tried = False

        def create() -> int:
            nonlocal tried
            if tried:
                found = self._reader.find(trial.user_attrs[UID])
                if found is not None:
                    return found
            tried = True
            return self._storage.create_new_trial(self._reader.study_id, template_trial=trial)

        return self._access.do(create)

    # -- the spill file -------------------------------------------------------------------

    def _keep_aside(self, exc: StorageError, outcome: Outcome) -> StorageError:
        """Write a measurement the storage would not take to the spill file; the error to
        raise, saying where it is (or that it could not be kept)."""
        record = {
            **self._ending(outcome.ticket.trial_id, None),
            "uid": outcome.uid,
            "number": outcome.ticket.number,
            "params": params_of(outcome.ticket.config),
            "attrs": dict(outcome.attrs),
            "measurement": outcome.measurement.to_dict(),
            "state": outcome.state.name,
            "values": outcome.values,
        }
        try:
            _spill.add(self.spill, [record])
        except (OSError, AutoplaceError) as failed:
            return StorageFaultError(
                f"{exc}; a finished measurement could not be kept in {self.spill} either "
                f"({failed}): it is measured again on resume"
            )
        self._spilled += 1
        return StorageFaultError(
            f"{exc}; {self._spilled} finished measurement(s) are kept in {self.spill} and "
            "go into the study when the same command runs again"
        )

    def _ending(self, trial_id: int, mark: str | None) -> dict[str, Any]:
        """A spill entry that ends trial ``trial_id`` (RUNNING, this log's) on resume."""
        return {
            "study": self._reader.name,
            "storage": storage_key(self._access.url),
            "trial_id": trial_id,
            "ticket_uid": self._claims.live.get(trial_id, {}).get(UID),
            "mark": mark or "interrupted",
        }

    def import_spill(self) -> None:
        """Store what an earlier run on this study kept aside, then drop it from the file."""
        from optuna.trial import TrialState

        key = storage_key(self._access.url)

        def mine(record: dict[str, Any]) -> bool:
            stored = record.get("storage")  # an older autoplace kept the URL as typed
            return (
                record.get("study") == self._reader.name
                and isinstance(stored, str)
                and storage_key(stored) == key
            )

        def store(record: dict[str, Any]) -> None:
            trial_id = int(record["trial_id"])
            ours = self._access.do(lambda: self._reader.holds(trial_id, record.get("ticket_uid")))
            if "measurement" not in record:
                if ours:
                    self._access.do(lambda: self._end(trial_id, record.get("mark")))
                return
            ticket = Ticket(trial_id, int(record["number"]), config_of(record["params"]))
            outcome = Outcome(
                ticket,
                record["attrs"],
                Measurement.from_dict(record["measurement"]),
                TrialState[record["state"]],
                record["values"],
                record["uid"],
            )
            if ours:
                self._access.do(lambda: self._store(outcome))
            else:
                self._create(self._anew(outcome))

        _spill.take(self.spill, mine, store)
