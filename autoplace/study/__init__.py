"""Studies: where measurements are kept and shared, through Optuna's storages.

The tuning loop reads and writes a study only through a :class:`StudyLog`
(``_log``; :class:`OptunaStudyLog` is the one over Optuna, and the one place
autoplace calls Optuna while tuning).
``_storage`` turns a URL into one of Optuna's storages (SQLite, Journal file,
PostgreSQL, MySQL, Redis); Optuna's storages are the distributed engine, and
autoplace never writes one of its own.
"""

from autoplace.study._answers import answers_ending, find_answer
from autoplace.study._foreign import refuse_foreign_tables
from autoplace.study._log import History, OptunaStudyLog, StoredPhase, StudyLog, Ticket
from autoplace.study._storage import (
    DEFAULT_DB,
    close_storage,
    default_url,
    mask_url,
    normalize_url,
    open_storage,
    storage_at,
)

__all__ = [
    "DEFAULT_DB",
    "History",
    "OptunaStudyLog",
    "StoredPhase",
    "StudyLog",
    "Ticket",
    "answers_ending",
    "close_storage",
    "default_url",
    "find_answer",
    "mask_url",
    "normalize_url",
    "open_storage",
    "refuse_foreign_tables",
    "storage_at",
]
