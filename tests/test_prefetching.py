"""``autoplace.prefetch``: the same batches, in the same order, on the device, a bounded
number ahead; errors reach the consumer; stopping early stops the thread. On CPU (the
overlap it buys is timed on a GPU: ``../shared/gpu-reference/h200-2026-11-26/``)."""

from __future__ import annotations

import gc
import threading

import jax
import numpy as np
import pytest

import autoplace
from autoplace import BadInputError

#: The longest a test waits for the prefetching thread to do what it must: a bound on a
#: hang, never a timing the test depends on.
PATIENCE_S = 30.0


def batches(n, seed=0):
    """``n`` host batches: a pytree of numpy arrays of two dtypes."""
    rng = np.random.default_rng(seed)
    return [
        {"x": rng.normal(size=(4, 3)).astype(np.float32), "y": np.arange(4, dtype=np.int32) + i}
        for i in range(n)
    ]


class Recording:
    """A source that records, for each batch it hands out, how many batches the consumer
    had asked for by then (``asked``: counted before each ``next``)."""

    def __init__(self, items, fail_at=None):
        self.items = list(items)
        self.fail_at = fail_at
        self.asked = 0
        self.drawn: list[int] = []
        self.reached: dict[int, threading.Event] = {}

    def event(self, n):
        return self.reached.setdefault(n, threading.Event())

    def __iter__(self):
        for i, item in enumerate(self.items):
            if i == self.fail_at:
                raise ValueError(f"batch {i} could not be made")
            self.drawn.append(self.asked)
            self.event(len(self.drawn)).set()
            yield item


def thread_started_by(action):
    """The prefetching thread that ``action`` starts."""
    before = set(threading.enumerate())
    out = action()
    (thread,) = [
        t for t in threading.enumerate() if t not in before and t.name == "autoplace.prefetch"
    ]
    return out, thread


@pytest.mark.parametrize("device", ["cpu:0", "cpu:1"])
def test_the_same_batches_in_the_same_order_on_the_device(device):
    host = batches(7)
    got = list(autoplace.prefetch(iter(host), device))
    assert len(got) == len(host)
    want = jax.devices("cpu")[int(device[-1])]
    for mine, theirs in zip(got, host, strict=True):
        assert jax.tree.structure(mine) == jax.tree.structure(theirs)
        for leaf, original in zip(jax.tree.leaves(mine), jax.tree.leaves(theirs), strict=True):
            assert isinstance(leaf, jax.Array) and leaf.devices() == {want}
            assert leaf.dtype == original.dtype
            np.testing.assert_array_equal(np.asarray(leaf), original)


def test_a_jax_device_and_a_list_are_taken_too():
    device = jax.devices("cpu")[2]
    (got,) = autoplace.prefetch([np.ones(3)], device, depth=1)
    assert got.devices() == {device}


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_at_most_depth_plus_one_batches_are_taken_ahead_of_the_consumer(depth):
    source = Recording(batches(12))
    it = autoplace.prefetch(source, "cpu:0", depth=depth)
    source.asked = 1
    first = next(it)
    # With one batch handed out, the thread fills up to depth + 1 more ahead of it...
    assert source.event(depth + 2).wait(PATIENCE_S)
    out = [first]
    for _ in range(11):
        source.asked += 1
        out.append(next(it))
    with pytest.raises(StopIteration):
        next(it)
    # ... and never more: batch k is drawn only once the consumer asked for k - depth - 1.
    ahead = [k - asked for k, asked in enumerate(source.drawn, start=1)]
    assert max(ahead) == depth + 1
    assert [int(b["y"][0]) for b in out] == list(range(12))


def test_an_error_of_the_source_reaches_the_consumer_where_its_batch_would_be():
    it = autoplace.prefetch(Recording(batches(5), fail_at=3), "cpu:0")
    assert [int(next(it)["y"][0]) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="batch 3 could not be made"):
        next(it)


def test_a_put_that_fails_reaches_the_consumer():
    it = autoplace.prefetch([np.ones(2), object()], "cpu:0")
    next(it)
    with pytest.raises(TypeError):
        next(it)


@pytest.mark.parametrize("stop", ["close", "drop"])
def test_stopping_early_stops_the_thread(stop):
    def endless():
        i = 0
        while True:
            yield np.full(2, i)
            i += 1

    it = autoplace.prefetch(endless(), "cpu:0", depth=2)
    first, thread = thread_started_by(lambda: next(it))
    assert first[0] == 0 and thread.is_alive()
    if stop == "close":
        it.close()
    else:
        del it
        gc.collect()
    thread.join(PATIENCE_S)
    assert not thread.is_alive()


def test_an_empty_source_ends_at_once():
    assert list(autoplace.prefetch([], "cpu:0")) == []


@pytest.mark.parametrize("depth", [0, -1, 1.5, True, "2"])
def test_a_bad_depth_is_bad_input(depth):
    with pytest.raises(BadInputError, match="depth is how many puts to keep in flight"):
        autoplace.prefetch(batches(1), "cpu:0", depth=depth)


@pytest.mark.parametrize(
    ("device", "said"),
    [("tpu:0", "this machine has no tpu devices"), ("cpu:99", "cpu:0 to cpu:3"),
     ("cpu:x", "name a device as platform:index")],
)  # fmt: skip
def test_a_device_this_machine_lacks_is_bad_input(device, said):
    with pytest.raises(BadInputError, match=said):
        autoplace.prefetch(batches(1), device)
