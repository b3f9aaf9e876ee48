"""Prefetching: host batches put on the device ahead of the step that takes them.

``jax.device_put`` of a numpy batch returns early, but the step that takes the batch
waits for its copy (on a GPU, a pageable batch is first staged into pinned memory, then
copied): put, then step, and the step waits for the put every time. On the H200 of
``../shared/gpu-reference/h200-2026-11-26/`` a put of the README MLP's float32 batch of
4096 took most of a 2.1 ms step whose compute took 76 µs. :func:`prefetch` issues the
puts on a background thread, ``depth`` of them ahead of the step, so the copies overlap
the steps (580 µs a step there): the convention of Flax's ``prefetch_to_device`` and
Grain's device buffer, whose default depth 2 keeps one put overlapping each step.

JAX is imported when :func:`prefetch` is called, not with ``autoplace``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from autoplace.errors import BadInputError

#: How long a wait on the queue lasts before the waiter looks whether the other side is
#: gone (the consumer stopped, or the thread died): never a wait without end.
_POLL_S = 0.1
#: What the thread puts on the queue: a batch, the end of the source, or its error.
_BATCH, _END, _ERROR = "batch", "end", "error"


def prefetch(batches: Iterable[Any], device: Any, depth: int = 2) -> Iterator[Any]:
    """The batches of ``batches`` (pytrees of numpy arrays), in the same order, each
    already put on ``device``, with ``depth`` puts kept in flight ahead of the consumer by
    a background thread.

    ``device`` is a ``jax.Device``, a device name as autoplace writes it (``"cpu:0"``,
    ``"gpu:0"``: ``recommendation.device``), or anything ``jax.device_put`` takes (a
    sharding). The thread starts at the first batch asked for and takes at most
    ``depth + 1`` batches from ``batches`` beyond those handed out (``depth`` put and
    waiting, one being put). An exception ``batches`` (or a put) raises is raised to the
    consumer, where that batch would have come. Stopping early (``break``, ``close()``, or
    the iterator dropped) stops the thread at its next batch. Use it where the
    recommendation says prefetching helps::

        for batch in autoplace.prefetch(make_batches(), rec.device):
            state = step(state, batch)
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise BadInputError(
            f"prefetch(..., depth={depth!r}): depth is how many puts to keep in flight, 1 or "
            "more (2 keeps one put overlapping each step)"
        )
    target = _device(device)
    return _prefetched(iter(batches), target, depth)


def _device(device: Any) -> Any:
    """The ``jax.Device`` a name stands for; anything else as given (imports JAX)."""
    import jax

    if not isinstance(device, str):
        return device
    platform, _, index = device.partition(":")
    if not index.isdigit() and index != "":
        raise BadInputError(
            f"prefetch(..., device={device!r}): name a device as platform:index (cpu:0, gpu:0)"
        )
    try:
        found = jax.devices(platform)
    except RuntimeError:
        here = ", ".join(sorted({d.platform for d in jax.devices()} | {"cpu"}))
        raise BadInputError(
            f"prefetch(..., device={device!r}): this machine has no {platform} devices "
            f"(JAX sees {here}): name one it has"
        ) from None
    number = int(index or 0)
    if number >= len(found):
        raise BadInputError(
            f"prefetch(..., device={device!r}): this machine has {len(found)} {platform} "
            f"device{'s' if len(found) != 1 else ''} ({platform}:0 to {platform}:{len(found) - 1})"
        )
    return found[number]


def _prefetched(source: Iterator[Any], device: Any, depth: int) -> Iterator[Any]:
    """The batches of ``source`` put on ``device`` by a thread, ``depth`` ahead."""
    waiting: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    thread = threading.Thread(
        target=_fill, args=(source, device, waiting, stop), name="autoplace.prefetch", daemon=True
    )
    thread.start()
    try:
        while True:
            try:
                kind, value = waiting.get(timeout=_POLL_S)
            except queue.Empty:
                if thread.is_alive():
                    continue
                kind, value = waiting.get_nowait() if not waiting.empty() else (_END, None)
            if kind == _BATCH:
                yield value
            elif kind == _ERROR:
                raise value
            else:
                return
    finally:  # the end, an error, or the consumer stopped early: the thread stops too
        stop.set()
        while not waiting.empty():  # frees the thread's put, and the device's buffers
            try:
                waiting.get_nowait()
            except queue.Empty:
                break


def _fill(
    source: Iterator[Any], device: Any, waiting: queue.Queue[tuple[str, Any]], stop: threading.Event
) -> None:
    """The thread: put each batch of ``source`` on ``device`` and queue it, until the
    source ends or raises (queued too) or ``stop`` is set."""
    import jax

    try:
        while not stop.is_set():
            try:
                batch = next(source)
            except StopIteration:
                _offer(waiting, stop, (_END, None))
                return
            if not _offer(waiting, stop, (_BATCH, jax.device_put(batch, device))):
                return
    except BaseException as exc:  # the consumer's to handle, where the batch would be
        _offer(waiting, stop, (_ERROR, exc))


def _offer(waiting: queue.Queue[tuple[str, Any]], stop: threading.Event, item: Any) -> bool:
    """Queue ``item`` once there is room; ``False`` if the consumer stopped first."""
    while not stop.is_set():
        try:
            waiting.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


__all__ = ["prefetch"]
