"""The local cache: one small JSON file per key, under the user's cache directory.

``AUTOPLACE_CACHE`` overrides the place (``platformdirs`` finds the platform's own:
``~/.cache/autoplace`` on Linux). Files are written atomically, so a reader sees an old
answer or a new one, never half of one. A damaged file is skipped with a warning (and
overwritten by the next answer for its key); a cache that cannot be written is used
read-only, or not at all, and says so once.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from autoplace._atomic import write_atomic
from autoplace.errors import AutoplaceError

#: The environment variable that moves the cache.
ENV = "AUTOPLACE_CACHE"
#: The version of a cache file's layout; a file of another is a miss.
ENTRY_SCHEMA = 1


class CacheWarning(UserWarning):
    """The cache could not be read or written; autoplace went on without it."""


#: Warnings already given in this process (each is said once).
_SAID: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _SAID:
        _SAID.add(message)
        warnings.warn(message, CacheWarning, stacklevel=4)


def default_dir() -> Path:
    """``$AUTOPLACE_CACHE``, else the user's cache directory for autoplace."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("autoplace", appauthor=False))


class Cache:
    """Answers under ``root/answers/SLOT.json``, machine descriptions under
    ``root/machines/PROBE.json`` and the machine's measured limits under
    ``root/limits/KEY.json``."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else default_dir()

    def answer_path(self, slot: str) -> Path:
        return self.root / "answers" / f"{slot}.json"

    def machine_path(self, probe: str) -> Path:
        return self.root / "machines" / f"{probe}.json"

    def limits_path(self, key: str) -> Path:
        return self.root / "limits" / f"{key}.json"

    def read(self, path: Path) -> dict[str, Any] | None:
        """The entry at ``path``; ``None`` when there is none, or it is damaged or of
        another layout (with a warning: it is then refilled)."""
        try:
            data = json.loads(path.read_text())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            _warn_once(f"autoplace: ignoring damaged cache file {path} ({exc}); it is refilled")
            return None
        if not isinstance(data, dict) or data.get("entry_schema") != ENTRY_SCHEMA:
            _warn_once(f"autoplace: ignoring cache file {path} of another layout; it is refilled")
            return None
        return data

    def damaged(self, path: Path) -> None:
        """Say (once) that the entry at ``path`` is whole JSON but not a usable answer."""
        _warn_once(f"autoplace: ignoring damaged cache file {path}; it is refilled")

    def write(self, path: Path, entry: dict[str, Any]) -> bool:
        """Write ``entry`` atomically; whether it was (a cache that cannot be written is
        said once, and autoplace goes on without it)."""
        try:
            write_atomic(
                path,
                json.dumps({"entry_schema": ENTRY_SCHEMA, **entry}, indent=1),
                what=f"the cache (set {ENV})",
            )
        except AutoplaceError as exc:  # the cause in words: a full disk, a read-only folder
            _warn_once(f"autoplace: {exc}; going on without caching")
            return False
        return True

    def entries(self) -> list[tuple[Path, dict[str, Any] | None]]:
        """Every cached answer, with its content (``None``: damaged)."""
        folder = self.root / "answers"
        if not folder.is_dir():
            return []
        out = []
        for path in sorted(folder.glob("*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                data = None
            out.append((path, data if isinstance(data, dict) else None))
        return out

    def clear(self) -> int:
        """Remove every cached answer and machine description; how many files went."""
        gone = 0
        for sub in ("answers", "machines", "limits"):
            folder = self.root / sub
            for path in folder.glob("*.json") if folder.is_dir() else ():
                path.unlink(missing_ok=True)
                gone += 1
        return gone
