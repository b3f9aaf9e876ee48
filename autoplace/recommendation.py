"""The recommendation file: what to run, with the evidence, as versioned TOML, written
atomically and read back checked (a damaged or future file is one clear error)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import tomli_w

from autoplace._atomic import write_atomic
from autoplace._paths import check_length, shown
from autoplace.errors import ConfigFileError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SCHEMA_VERSION = 4
#: Versions this autoplace reads (3: one device a configuration; 2: ``runner_up`` for
#: ``closest``, no ``[machine]`` nor ``[[findings]]``; 1: no ``[explanation]``).
READABLE = (1, 2, 3, 4)

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
    """Write ``document`` (of the current ``schema_version``) to ``path`` atomically."""
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ValueError("recommendation documents must carry the current schema_version")
    return write_atomic(path, tomli_w.dumps(_clean(document)), what="the recommendation (--out)")


def read(path: str | Path) -> dict[str, Any]:
    """Read and check a recommendation file; :class:`ConfigFileError` with the fix."""
    p = check_length(path, "recommendation file")
    if p.suffix == ".py":
        raise ConfigFileError(
            f"{shown(p)} is a model file, not a recommendation file: `autoplace tune "
            f"{shown(p)}` writes one (autoplace.toml), which this command reads"
        )
    try:
        data = tomllib.loads(p.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ConfigFileError(
            f"no recommendation file at {shown(p)}: run `autoplace tune MODEL_FILE --out "
            f"{shown(p)}` first"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigFileError(
            f"{shown(p)} is not a text file (not UTF-8 at byte {exc.start}): it is not a "
            "recommendation file; pass the autoplace.toml that `autoplace tune` wrote"
        ) from None
    except OSError as exc:
        raise ConfigFileError(f"cannot read {shown(p)}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(
            f"{shown(p)} is not valid TOML ({exc}): it is damaged; "
            "run `autoplace tune` again to rewrite it"
        ) from exc
    _check_version(p, data)
    missing = [k for k in REQUIRED if k not in data]
    rec = data.get("recommendation", {})
    missing += [
        f"recommendation.{k}"
        for k in ("device", "batch_size", "precision")
        if not isinstance(rec, dict) or k not in rec
    ]
    if missing:
        raise ConfigFileError(
            f"{shown(p)} is missing {', '.join(missing)}: it is damaged; run `autoplace tune` again"
        )
    wrong = _wrong_values(data)
    if wrong:
        raise ConfigFileError(
            f"{shown(p)} holds {wrong}: it was damaged or edited by hand; run `autoplace tune` "
            "again to rewrite it"
        )
    return data


def _check_version(p: Path, data: dict[str, Any]) -> None:
    """Refuse a TOML file without ``schema_version`` (a ``pyproject.toml``) or of a version
    this autoplace cannot read."""
    if "schema_version" not in data:
        what = "empty" if not data else f"a TOML file of {_tables(data)}"
        raise ConfigFileError(
            f"{shown(p)} is not an autoplace recommendation file ({what}, with no "
            "schema_version): pass the autoplace.toml that `autoplace tune` wrote, or run "
            f"`autoplace tune MODEL_FILE --out {shown(p)}`"
        )
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise ConfigFileError(
            f"{shown(p)} has {_as_written('schema_version', version)} where it is an "
            f"integer (schema_version = {SCHEMA_VERSION}): it was edited by hand or not written "
            "by autoplace; run `autoplace tune` again to rewrite it"
        )
    if version not in READABLE:
        raise ConfigFileError(
            f"{shown(p)} has schema version {version}, but this autoplace reads versions "
            f"{', '.join(map(str, READABLE))}: use the autoplace that wrote it, "
            "or run `autoplace tune` again"
        )


def _as_written(key: str, value: object) -> str:
    """``key = value`` as TOML writes it, and its kind."""
    if isinstance(value, (dict, list)):
        return f"{key} as {'a table' if isinstance(value, dict) else 'an array'}"
    kind = {str: "a string", float: "a float", bool: "a boolean"}.get(type(value), "a date")
    return f"{tomli_w.dumps({key: value}).strip()}, {kind},"


def _tables(data: dict[str, Any]) -> str:
    """The top-level keys of a TOML document, in words (``[project], [tool], name``)."""
    keys = [f"[{k}]" if isinstance(v, dict) else k for k, v in data.items()]
    return ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")


def _wrong_values(data: dict[str, Any]) -> str | None:
    """The first value of a recommendation file of the wrong kind, in words."""
    from autoplace.config import PRECISIONS
    from autoplace.objectives import OBJECTIVES

    for section in ("recommendation", "objective", "workload", "study"):
        if not isinstance(data[section], dict):
            return f"{section} = {data[section]!r}, not a table"
    rec = data["recommendation"]

    def count(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    checks = [
        ("recommendation.device", rec["device"], isinstance(rec["device"], str), "a device"),
        ("recommendation.batch_size", rec["batch_size"], count(rec["batch_size"]),
         "a whole number of at least 1"),
        ("recommendation.precision", rec["precision"], rec["precision"] in PRECISIONS,
         f"one of {', '.join(PRECISIONS)}"),
        ("recommendation.width", rec.get("width", 1), count(rec.get("width", 1)),
         "a whole number of at least 1"),
        ("objective.name", data["objective"].get("name"),
         data["objective"].get("name") in OBJECTIVES, f"one of {', '.join(OBJECTIVES)}"),
        ("study.name", data["study"].get("name"), isinstance(data["study"].get("name"), str),
         "a study's name"),
    ]  # fmt: skip
    for key, value, ok, wanted in checks:
        if not ok:
            return f"{key} = {value!r}, not {wanted}"
    return None
