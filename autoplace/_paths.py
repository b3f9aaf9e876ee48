"""Paths people type: refused in one line when the system cannot take them, shown short."""

from __future__ import annotations

import os
from pathlib import Path

from autoplace.errors import BadInputError

#: What a path shown in a message keeps of a long one: its start and its end.
SHOWN = 60


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` for a message: whole when short, else its start, ``…`` and its end."""
    text = os.fspath(path)
    return text if len(text) <= 2 * SHOWN else f"{text[:SHOWN]}…{text[-SHOWN:]}"


def _limit(name: str, default: int) -> int:
    try:
        return os.pathconf("/", name)
    except (OSError, ValueError, AttributeError):  # not POSIX, or it will not say
        return default


def check_length(path: str | os.PathLike[str], what: str) -> Path:
    """``path``, or :class:`BadInputError` naming ``what`` when a name or the path is too
    long for the system."""
    text = os.fspath(path)
    name_max, path_max = _limit("PC_NAME_MAX", 255), _limit("PC_PATH_MAX", 4096)
    longest = max(Path(text).parts, key=lambda part: len(os.fsencode(part)), default="")
    if len(os.fsencode(longest)) > name_max:
        raise BadInputError(
            f"{what} {shown(text)}: the name {shown(longest)} is {len(os.fsencode(longest))} "
            f"bytes, over the {name_max} a file or folder name may have here: rename it"
        )
    if len(os.fsencode(text)) >= path_max:
        raise BadInputError(
            f"{what} {shown(text)} is {len(os.fsencode(text))} bytes, over the {path_max} a "
            "path may have here: move the file to a shorter path"
        )
    return Path(text)
