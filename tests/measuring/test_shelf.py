"""The shelf: a tune's shared worker passes its compiled steps to its fresh workers,
serialized, so that they neither trace, lower nor compile (issue 38)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import model, request

from autoplace.measuring._setup import Executable
from autoplace.measuring._shelf import Shelf


def _executable(fn, *args) -> Executable:
    compiled = jax.jit(fn).trace(*args).lower().compile()
    return Executable(compiled, lower_s=0.1, compile_s=0.2, compute_dtypes=("f32",),
                      flops=8.0, predicted_bytes=64)  # fmt: skip


def test_an_executable_put_is_taken_back_with_its_figures_and_runs_alike(tmp_path):
    shelf = Shelf(tmp_path / "executables")
    x = jnp.arange(8.0)
    made = _executable(lambda a: a * 2.0 + 1.0, x)
    assert shelf.put(("key",), made)
    taken = shelf.take(("key",), jax.devices("cpu")[:1])
    assert taken is not None and taken.cache == "hit"
    assert (taken.lower_s, taken.compile_s, taken.flops) == (0.1, 0.2, 8.0)
    np.testing.assert_array_equal(taken.compiled(x), made.compiled(x))
    assert shelf.take(("another key",), jax.devices("cpu")[:1]) is None


def test_a_damaged_entry_is_dropped_and_traced_instead(tmp_path):
    shelf = Shelf(tmp_path)
    assert shelf.put(("key",), _executable(lambda a: a + 1, jnp.ones(3)))
    (path,) = tmp_path.glob("*.pkl")
    path.write_bytes(b"not a pickle")
    assert shelf.take(("key",), jax.devices("cpu")[:1]) is None and not path.exists()


@pytest.mark.slow  # a shared worker and a fresh one
def test_a_fresh_worker_takes_the_shared_workers_compile_from_the_shelf(subproc):
    # The shared worker compiles (and shelves) it; a fresh worker of the same backend
    # loads it: it reports the compile that made it, lowering included, as a cache hit.
    r = request(model("tiny_mlp"), "mlp", batch_size=16)
    (shared,) = subproc.measure_together([r])
    (fresh,) = subproc.measure_fresh([r])
    assert shared.status == fresh.status == "ok"
    assert fresh.compile_cache == "hit" and fresh.compile_cached
    assert fresh.lower_s == shared.lower_s and fresh.compile_s == shared.compile_s
