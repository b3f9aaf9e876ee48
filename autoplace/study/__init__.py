"""Studies: where measurements are kept and shared, through Optuna's storages.

The tuning loop reads and writes a study only through a :class:`StudyLog`
(``_log``; :class:`OptunaStudyLog` is the one over Optuna, and the one place
autoplace calls Optuna while tuning): a study's identity check (``_identity``:
:class:`StudyIdentity`), its reader (``_reading``: :class:`StudyReader`, also opened on
its own to read a study without writing) and its writer (``_writing``, with ``_claims``:
the trials a worker holds in flight), over one ``_access`` to the storage; ``_trials``
says how a measurement is kept as a trial (:class:`TrialSpace`: the parameters it takes)
and ``_history`` what a study holds (:class:`History`); ``_side_by_side`` reads back the
compiles an older autoplace timed side by side on an accelerator as such.
``_storage`` turns a URL into one of Optuna's storages (SQLite, Journal file,
PostgreSQL, MySQL, Redis), with timeouts so that no call hangs; Optuna's storages are
the distributed engine, and autoplace never writes one of its own. Around them:
``_faults`` (which faults pass, how long they are waited for, the one line a user
reads), ``_owner`` (who owns a trial in flight, and when that owner is known dead),
``_spill`` (measurements a failing storage would not take, kept for the resume) and
``_url`` (URLs without credentials, drivers' messages scrubbed).
"""

from autoplace.study._answers import stored_answers, study_names
from autoplace.study._foreign import refuse_foreign_tables
from autoplace.study._history import History
from autoplace.study._identity import StudyIdentity
from autoplace.study._log import OptunaStudyLog, StudyLog
from autoplace.study._reading import StudyReader
from autoplace.study._storage import (
    DEFAULT_DB,
    MAX_STUDY_NAME,
    ask_storage,
    check_storage_url,
    check_study_name,
    check_usable,
    close_storage,
    default_url,
    missing_study_file,
    open_storage,
    refuse_unreachable,
    storage_at,
)
from autoplace.study._trials import StoredPhase, Ticket, TrialSpace
from autoplace.study._url import mask_url, normalize_url

__all__ = [
    "DEFAULT_DB",
    "MAX_STUDY_NAME",
    "History",
    "OptunaStudyLog",
    "StoredPhase",
    "StudyIdentity",
    "StudyLog",
    "StudyReader",
    "Ticket",
    "TrialSpace",
    "ask_storage",
    "check_storage_url",
    "check_study_name",
    "check_usable",
    "close_storage",
    "default_url",
    "mask_url",
    "missing_study_file",
    "normalize_url",
    "open_storage",
    "refuse_foreign_tables",
    "refuse_unreachable",
    "storage_at",
    "stored_answers",
    "study_names",
]
