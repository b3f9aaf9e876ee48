"""``autoplace.prefetch``: host batches put on a device ahead of the step that needs them.

(A first version for the engine's prefetch loop; the launcher-facing one replaces it.)
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from autoplace.errors import BadInputError

_DONE = object()


def prefetch(batches: Iterable[Any], device: Any, depth: int = 2) -> Iterator[Any]:
    """Yield ``batches`` in order, each already put on ``device``, with ``depth`` puts kept
    in flight by a background thread."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise BadInputError(f"prefetch depth is a whole number of 1 or more, got {depth!r}")
    import jax

    ready: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def fill() -> None:
        try:
            for batch in batches:
                if stop.is_set():
                    return
                item = jax.device_put(batch, device)
                while not stop.is_set():
                    try:
                        ready.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:  # handed to the consumer
            ready.put(exc)
            return
        ready.put(_DONE)

    thread = threading.Thread(target=fill, name="autoplace-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()
