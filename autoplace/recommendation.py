"""The recommendation file: what to run, with the evidence, as versioned TOML.

Written atomically (a reader sees the old file or the new one); read back with a
check of the schema version, so a damaged or future file gets one clear error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import tomli_w

from autoplace._atomic import write_atomic
from autoplace.errors import ConfigFileError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SCHEMA_VERSION = 2
#: Versions this autoplace reads: version 1 is version 2 without ``[explanation]``.
READABLE = (1, 2)

#: Sections every file has.
REQUIRED = ("schema_version", "created", "recommendation", "objective", "workload", "study")


def _clean(value: Any) -> Any:
    """TOML has no null: drop ``None`` values, recursively."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value if v is not None]
    return value


def write(path: str | Path, document: dict[str, Any]) -> Path:
    """Write ``document`` (which must carry ``schema_version``) to ``path`` atomically; a
    failure (a full disk) is one line naming its cause (:func:`._atomic.write_error`)."""
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ValueError("recommendation documents must carry the current schema_version")
    return write_atomic(path, tomli_w.dumps(_clean(document)), what="the recommendation (--out)")


def read(path: str | Path) -> dict[str, Any]:
    """Read and check a recommendation file. Raises :class:`ConfigFileError` with the fix."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigFileError(
            f"no recommendation file at {p}: run `autoplace tune MODEL_FILE --out {p}` first"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read {p}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(
            f"{p} is not valid TOML ({exc}): it is damaged; "
            "run `autoplace tune` again to rewrite it"
        ) from exc
    version = data.get("schema_version")
    if version not in READABLE:
        raise ConfigFileError(
            f"{p} has schema version {version!r}, but this autoplace reads versions "
            f"{', '.join(map(str, READABLE))}: use the autoplace that wrote it, "
            "or run `autoplace tune` again"
        )
    missing = [k for k in REQUIRED if k not in data]
    rec = data.get("recommendation", {})
    missing += [
        f"recommendation.{k}"
        for k in ("device", "batch_size", "precision")
        if not isinstance(rec, dict) or k not in rec
    ]
    if missing:
        raise ConfigFileError(
            f"{p} is missing {', '.join(missing)}: it is damaged; run `autoplace tune` again"
        )
    return data
