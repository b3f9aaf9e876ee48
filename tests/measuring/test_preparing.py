"""A process's first use of an accelerator, timed as a user's fresh process pays it.

A tune's workers share a persistent compilation cache. The small jitted product that
starts an accelerator's compiler was served from it to every process after the first, so
an H200's start-up read 55-74 ms in a fresh window against 434-530 ms in a first process
(``../shared/gpu-reference/``). There is no GPU here: the CPU device stands in for one
(``platform_of`` says ``gpu``), with the cache on, as in a tune's workers.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.compilation_cache import compilation_cache

from autoplace.measuring import _preparing
from autoplace.measuring._compiles import CompileCounter
from autoplace.measuring._preparing import Preparer, start_program


def test_each_start_programs_is_its_own() -> None:
    x = jnp.arange(64, dtype=jnp.float32).reshape(8, 8)
    a, b = start_program(), start_program()
    assert jax.jit(a).lower(x).as_text() != jax.jit(b).lower(x).as_text()
    # Still the product it stands for, times a constant of its own.
    ratio = a(x) / (x @ x)
    assert jnp.allclose(ratio[1:], ratio[1, 1])


@pytest.fixture
def compile_cache(tmp_path):
    """JAX's persistent compilation cache on, in ``tmp_path``, storing every compile (as
    a tune's workers set it: ``Engine(compile_cache=...)``); off again afterwards."""
    compilation_cache.reset_cache()  # the session's engine decided on the cache long ago
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:
        yield tmp_path
    finally:
        jax.config.update("jax_enable_compilation_cache", False)
        jax.config.update("jax_compilation_cache_dir", None)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        compilation_cache.reset_cache()


def test_an_accelerators_start_up_is_compiled_in_every_process(monkeypatch, compile_cache):
    """Two processes' first use of the same accelerator, one after the other, with the
    tune's cache between them: the second compiles its start too (on the old code its
    small product was a hit, read from the file the first had written)."""
    monkeypatch.setattr(_preparing, "platform_of", lambda device: "gpu")
    counter = CompileCounter()
    device = jax.devices("cpu")[0]
    for process in (1, 2):  # a Preparer a process
        compiles, hits = counter.compiles, counter.this_thread_hits()
        start = Preparer(counter, None, counts_hits=True)._first_use([device])
        assert start is not None and start > 0
        assert counter.this_thread_hits() == hits, process  # never read from the cache
        assert counter.compiles > compiles, process
    # Nor is it written there (the small product's module is ``jit__lambda``; the put's
    # own little programs are): a user's process writes no such file.
    kept = [p.name for p in compile_cache.rglob("*") if p.is_file()]
    assert not [name for name in kept if name.startswith("jit__lambda")]
    # The cache was on: the same small product without a constant of its own (the old
    # start) is read from it the second time.
    x = jax.device_put(jnp.ones((8, 8), jnp.float32), device)
    hits = counter.this_thread_hits()
    for _ in (1, 2):
        jax.block_until_ready(jax.jit(lambda a: a @ a)(x))
    assert counter.this_thread_hits() == hits + 1
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0  # as it was


def test_a_cpus_start_up_compiles_nothing(monkeypatch):
    """On a CPU the start-up is one small put: no jitted product (a fresh worker that
    loads its step from the shelf compiles nothing, and the compiler's start would be
    most of the figure)."""
    started = []
    monkeypatch.setattr(_preparing, "start_compiler", started.append)
    preparer = Preparer(CompileCounter(), None, counts_hits=False)
    assert preparer._first_use(jax.devices("cpu")[:2]) is not None
    assert started == []
    monkeypatch.setattr(_preparing, "platform_of", lambda device: "gpu")
    assert preparer._first_use(jax.devices("cpu")[:2]) is None  # once a process
    assert Preparer(CompileCounter(), None, counts_hits=False)._first_use(jax.devices("cpu")[:2])
    assert len(started) == 2  # one a device
