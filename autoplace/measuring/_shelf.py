"""Compiled steps passed from a tune's shared worker to its fresh workers, serialized.

A fresh worker of a verdict's window measures one configuration the shared worker has
compiled already. Through JAX's persistent compilation cache it still traces and lowers
the step (0.3-0.5 s in a cold process on a 2-core CPU, issue 38) to find the cached
compile. The :class:`Shelf` skips that: the shared worker puts each executable it
compiles on it (``jax.experimental.serialize_executable``: the XLA executable's bytes and
its argument and result trees), with the figures of the compile that made it, and a fresh
worker takes it (33 ms for the README MLP) instead of tracing, lowering and compiling. A
step whose trees do not pickle (a user's pytree node that cannot be imported by name), or
an executable this JAX cannot serialize, is not put: its fresh workers trace it as before.

The shelf is a folder of the backend's own (beside its compilation cache), read only by
the workers it starts: what it loads was written by the same tune.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autoplace.measuring._setup import Executable


class Shelf:
    """Executables by key (see :func:`~._preparing.executable_key`), in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: tuple) -> Path:
        name = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
        return self.folder / f"{name}.pkl"

    def put(self, key: tuple, executable: Executable) -> bool:
        """Keep ``executable`` for the fresh workers; whether it could be (see the module
        docstring: an executable or trees that do not serialize are not kept)."""
        from jax.experimental import serialize_executable

        try:
            blob, in_tree, out_tree = serialize_executable.serialize(executable.compiled)
            data = pickle.dumps((blob, in_tree, out_tree, _figures(executable)))
        except Exception:  # not serializable here: the fresh workers trace it as before
            return False
        self.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=self.folder, delete=False, suffix=".tmp") as f:
            f.write(data)
        os.replace(f.name, self._path(key))
        return True

    def take(self, key: tuple, devices: Sequence[Any]) -> Executable | None:
        """The executable kept for ``key``, loaded to run on ``devices``, with the figures of
        the compile that made it (``cache = "hit"``); ``None`` when none was kept or it
        does not load."""
        from jax.experimental import serialize_executable

        path = self._path(key)
        if not path.exists():
            return None
        try:
            blob, in_tree, out_tree, figures = pickle.loads(path.read_bytes())
            compiled = serialize_executable.deserialize_and_load(
                blob, in_tree, out_tree, execution_devices=list(devices)
            )
        except Exception:  # a damaged or foreign file: trace, lower and compile instead
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return Executable(compiled=compiled, cache="hit", **figures)


def _figures(e: Executable) -> dict[str, Any]:
    return {
        "lower_s": e.lower_s,
        "compile_s": e.compile_s,
        "compute_dtypes": e.compute_dtypes,
        "flops": e.flops,
        "predicted_bytes": e.predicted_bytes,
        "bytes_accessed": e.bytes_accessed,
        "reduced_bytes": e.reduced_bytes,
    }
