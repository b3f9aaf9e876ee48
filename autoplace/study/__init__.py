"""Studies: where measurements are kept and shared, through Optuna's storages.

``_storage`` turns a URL into one of Optuna's storages (SQLite, Journal file,
PostgreSQL, MySQL, Redis); Optuna's storages are the distributed engine, and
autoplace never writes one of its own.
"""

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
    "close_storage",
    "default_url",
    "mask_url",
    "normalize_url",
    "open_storage",
    "storage_at",
]
