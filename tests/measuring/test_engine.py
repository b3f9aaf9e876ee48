"""The measuring itself, in this process: real JAX on virtual CPU devices, no mocks."""

from __future__ import annotations

import dataclasses
import logging
import math
import statistics
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FAST, N_CPU_DEVICES, line_of, model, request, write_model

import autoplace
from autoplace import BadInputError, Config, InProcessBackend, MeasureSettings, ModelFileError
from autoplace.measuring import (
    ConfigFailure,
    compute_dtypes,
    relative_deviation,
    relative_spread,
    time_interleaved,
    time_steps,
    tree_bytes,
    user_phase,
)
from autoplace.workload import ModelFile, import_model_file


def measure(backend, name: str, batch_size: int = 8, settings: MeasureSettings = FAST, **kw):
    return autoplace.measure(
        model(name), batch_size=batch_size, settings=settings, backend=backend, **kw
    )


@pytest.fixture(scope="module")
def f32(inproc: InProcessBackend) -> autoplace.Measurement:
    """One float32 measurement of the tiny MLP, shared by the tests that read its figures:
    compiled afresh (the session's engine may hold this configuration's executable from
    another test, whose compile and first call this measurement's wall time never saw)."""
    inproc.engine.forget_executables()
    return measure(inproc, "tiny_mlp")


# --- helpers ------------------------------------------------------------------------------


def test_relative_spread() -> None:
    assert relative_spread([]) == 0.0
    assert relative_spread([3.0]) == 0.0
    assert relative_spread([2.0, 2.0, 2.0]) == 0.0
    # numpy's linear percentiles of 1..4: q1 = 1.75, median = 2.5, q3 = 3.25
    assert relative_spread([4.0, 1.0, 3.0, 2.0]) == pytest.approx(1.5 / 2.5)
    assert relative_spread([0.0, 0.0, 0.0]) == 0.0
    # one outlier among many barely moves it: that is why it is used, not max/min
    assert relative_spread([1.0] * 9 + [100.0]) == 0.0


class _FakeChunks:
    """A ``run_chunk`` that reports preset per-step times and records the chunk sizes."""

    def __init__(self, per_step: list[float]) -> None:
        self.per_step = per_step
        self.sizes: list[int] = []

    def __call__(self, k: int) -> float:
        self.sizes.append(k)
        return self.per_step[(len(self.sizes) - 1) % len(self.per_step)] * k


def test_time_steps_stops_once_min_samples_agree() -> None:
    chunks = _FakeChunks([1e-3])
    settings = MeasureSettings(min_samples=4, max_samples=40, sample_min_s=0.02)
    median, spread, n = time_steps(chunks, 1e-3, settings, cap_s=60.0)
    assert median == pytest.approx(1e-3)
    assert spread == 0.0
    assert n == 4
    assert chunks.sizes == [20] * 4  # each chunk lasts sample_min_s: 0.02 / 1e-3 steps


def test_time_steps_respects_max_samples() -> None:
    chunks = _FakeChunks([1e-3, 2e-3])  # never within target_spread
    settings = MeasureSettings(min_samples=3, max_samples=7)
    median, spread, n = time_steps(chunks, 1e-3, settings, cap_s=60.0)
    assert n == 7 == len(chunks.sizes)
    assert median == pytest.approx(1e-3)  # four of the seven samples are 1 ms
    assert spread > settings.target_spread


def test_time_steps_stops_at_the_time_cap_after_three_chunks() -> None:
    chunks = _FakeChunks([1e-3, 2e-3])
    settings = MeasureSettings(min_samples=5, max_samples=40)
    _, _, n = time_steps(chunks, 1e-3, settings, cap_s=1e-9)
    assert n == 3


def test_time_steps_with_no_time_glances_at_the_guess() -> None:
    chunks = _FakeChunks([1e-3, 2e-3])
    median, spread, n = time_steps(chunks, 1.5e-3, MeasureSettings(min_samples=5), cap_s=0.0)
    assert n == 1 and spread == 0.0 and median == 1.5e-3
    assert chunks.sizes == []  # the step timed for the guess is the one sample


def test_time_steps_chunk_size_follows_the_guess() -> None:
    settings = MeasureSettings(min_samples=2, max_samples=2, sample_min_s=0.02)
    slow = _FakeChunks([1.0])
    assert time_steps(slow, 1.0, settings, cap_s=1.0) == (1.0, 0.0, 2)
    assert slow.sizes == [1]  # the guess, one step of 1 s, was the first chunk
    fast = _FakeChunks([1e-6])
    time_steps(fast, 0.0, settings, cap_s=1.0)  # a zero guess must not divide by zero
    # a short guess is not a chunk; after the first, the chunks follow the loop's median
    assert fast.sizes == [math.ceil(0.02 / 1e-7), math.ceil(0.02 / 1e-6)]


def test_time_steps_measures_a_known_duration() -> None:
    step = 0.002

    def run_chunk(k: int) -> float:
        t = time.perf_counter()
        time.sleep(step * k)
        return time.perf_counter() - t

    settings = MeasureSettings(min_samples=3, max_samples=6, sample_min_s=0.02)
    median, _, n = time_steps(run_chunk, step, settings, cap_s=0.5)
    assert 3 <= n <= 6
    # A sleep never ends early; a busy machine may end it any time later.
    assert median >= step


def test_time_interleaved_takes_turns_chunk_by_chunk() -> None:
    order: list[str] = []

    def loop(name: str, per_step: float):
        def run_chunk(k: int) -> float:
            order.append(name)
            return per_step * k

        return run_chunk

    settings = MeasureSettings(min_samples=3, max_samples=40, sample_min_s=0.02)
    timed = time_interleaved(
        [loop("A", 1e-3), loop("B", 2e-3), loop("C", 4e-3)], [1e-3, 2e-3, 4e-3], settings, 60.0
    )
    assert order == ["A", "B", "C"] * 3  # all agree after min_samples: stop together
    assert [statistics.median(t) for t in timed] == pytest.approx([1e-3, 2e-3, 4e-3])
    assert [len(t) for t in timed] == [3, 3, 3]


def test_time_interleaved_waits_for_every_loop_to_settle() -> None:
    steady, noisy = _FakeChunks([1e-3]), _FakeChunks([1e-3, 2e-3])
    settings = MeasureSettings(min_samples=3, max_samples=8)
    timed = time_interleaved([steady, noisy], [1e-3, 1e-3], settings, cap_s=60.0)
    assert [len(t) for t in timed] == [8, 8]  # the noisy one never settles: max_samples
    assert timed[1] == pytest.approx([1e-3, 2e-3] * 4)  # each chunk's time, in order
    assert len(steady.sizes) == len(noisy.sizes) == 8


def test_time_interleaved_stops_once_the_loops_ratios_settle() -> None:
    drift = [1.0, 1.5, 0.8, 1.3, 1.0, 1.6]  # the machine's speed, turn by turn
    fast = _FakeChunks([1e-3 * d for d in drift])
    slow = _FakeChunks([2e-3 * d for d in drift])  # twice as slow in every turn
    settings = MeasureSettings(min_samples=5, max_samples=40)
    timed = time_interleaved([fast, slow], [1e-3, 2e-3], settings, cap_s=60.0)
    assert relative_spread(timed[0]) > settings.target_spread  # neither settles alone
    assert [len(t) for t in timed] == [5, 5]  # but their ratio does: stop at min_samples
    assert [b / a for a, b in zip(*timed, strict=True)] == pytest.approx([2.0] * 5)


class _Clock:
    """A clock that moves only when a fake chunk runs: timing logic tested without the
    machine's own speed in the result."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def chunk(self, seconds: float):
        def run_chunk(k: int) -> float:
            self.now += seconds
            return seconds

        return run_chunk


@pytest.mark.parametrize("loops", [1, 2, 3])
def test_time_interleaved_time_cap_is_per_loop(monkeypatch, loops) -> None:
    import autoplace.measuring._timing as timing

    clock, step = _Clock(), 2.0**-6  # exact in binary: the sums below are exact too
    monkeypatch.setattr(timing, "time", clock)
    settings = MeasureSettings(min_samples=40, max_samples=40, sample_min_s=step)
    run = [clock.chunk(step) for _ in range(loops)]
    timed = time_interleaved(run, [step] * loops, settings, cap_s=5 * step)
    # a cap of five steps per loop: each loop's guess (a one-step chunk already), then
    # five turns, however many loops take them
    assert [len(t) for t in timed] == [6] * loops
    assert clock.now == 5 * step * loops


def test_compute_dtypes_of_lowered_programs() -> None:
    def mm(a, b):
        return a @ b

    def text(f, *args):
        return jax.jit(f).lower(*args).as_text()

    for dtype, name in ((jnp.float32, "f32"), (jnp.bfloat16, "bf16"), (jnp.float16, "f16")):
        x = jnp.ones((4, 8), dtype)
        assert compute_dtypes(text(mm, x, x.T)) == (name,)

    # the result type counts: bf16 inputs accumulated into f32 compute as f32
    x = jnp.ones((4, 8), jnp.bfloat16)
    accumulate = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
    assert compute_dtypes(accumulate.lower(x, x.T).as_text()) == ("f32",)

    def mixed(a, b):
        return (a @ b.T).astype(jnp.float32) @ b.astype(jnp.float32)

    assert compute_dtypes(text(mixed, x, x)) == ("bf16", "f32")

    def conv(img, kernel):
        return jax.lax.conv_general_dilated(
            img, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )

    img = jnp.ones((1, 8, 8, 3), jnp.bfloat16)
    kernel = jnp.ones((3, 3, 3, 4), jnp.bfloat16)
    assert compute_dtypes(text(conv, img, kernel)) == ("bf16",)

    # elementwise work is not compute in this sense
    assert compute_dtypes(text(lambda a: jnp.tanh(a) * 2, x)) == ()


def test_tree_bytes() -> None:
    tree = {"a": np.zeros((2, 3), np.float32), "b": [np.zeros(4, np.int8)]}
    assert tree_bytes(tree) == 2 * 3 * 4 + 4
    assert tree_bytes(jnp.zeros((5,), jnp.bfloat16)) == 10


def test_relative_deviation() -> None:
    ref = {"a": np.array([3.0, 4.0], np.float32), "n": np.array([1, 2])}
    assert relative_deviation(ref, ref) == 0.0
    out = {"a": np.array([3.0, 4.05], np.float32), "n": np.array([1, 2])}
    assert relative_deviation(out, ref) == pytest.approx(0.05 / 5.0, rel=1e-5)
    # bfloat16 outputs are compared with a float32 reference
    assert relative_deviation(jnp.asarray([3.0, 4.0], jnp.bfloat16), ref["a"]) == 0.0
    # integer leaves alone cannot be compared
    assert relative_deviation(np.array([1, 2]), np.array([1, 3])) is None
    # different structures cannot be compared
    assert relative_deviation([np.ones(2)], [np.ones(2), np.ones(2)]) is None
    # zero reference: equal is 0, anything else has no relative size
    assert relative_deviation(np.zeros(3), np.zeros(3)) == 0.0
    assert relative_deviation(np.ones(3), np.zeros(3)) is None


def test_user_phase_turns_exceptions_into_statuses(tmp_path: Path) -> None:
    path = write_model(tmp_path, 'def boom():\n    raise ValueError("bad shape")\n')
    module = import_model_file(path)

    with pytest.raises(ConfigFailure) as info, user_phase("building the workload", path):
        module.boom()
    assert info.value.status == "error"
    assert info.value.reason == f"building the workload raised ValueError: bad shape ({path}:2)"

    with pytest.raises(ConfigFailure) as info, user_phase("running", path):
        raise MemoryError
    assert info.value.status == "oom"

    with pytest.raises(ConfigFailure) as info, user_phase("compiling", path):
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 5 bytes.\nmore")
    assert info.value.status == "oom"
    assert info.value.reason == (
        "out of memory while compiling: RESOURCE_EXHAUSTED: Out of memory allocating 5 bytes."
    )

    original = ConfigFailure("too_big", "over the limit")
    with pytest.raises(ConfigFailure) as info, user_phase("x", path):
        raise original
    assert info.value is original

    with pytest.raises(KeyboardInterrupt), user_phase("x", path):
        raise KeyboardInterrupt


# --- the steady-state loop never compiles ---------------------------------------------------


def _compile_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.getMessage().startswith("Compiling ") or "XLA compilation" in r.getMessage()
    ]


def _aot_chunks(extra=None):
    w = jnp.ones((16, 16))
    x = jnp.ones((8, 16))
    compiled = jax.jit(lambda w, x: jnp.tanh(x @ w)).trace(w, x).lower().compile()
    jax.block_until_ready(compiled(w, x))

    def run_chunk(k: int) -> float:
        t = time.perf_counter()
        out = None
        for _ in range(k):
            out = compiled(w, x)
            if extra is not None:
                out = extra(out)
        jax.block_until_ready(out)
        return time.perf_counter() - t

    return run_chunk


def test_timed_loop_of_an_aot_executable_never_compiles(caplog: pytest.LogCaptureFixture) -> None:
    run_chunk = _aot_chunks()
    settings = MeasureSettings(min_samples=3, max_samples=5, sample_min_s=0.002)
    with caplog.at_level(logging.DEBUG, logger="jax"), jax.log_compiles():
        _, _, n = time_steps(run_chunk, 1e-5, settings, cap_s=0.2)
    assert n >= 3
    assert _compile_lines(caplog) == []


def test_compile_capture_sees_a_compile_in_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    # The counter-test: the same capture around a loop that calls a fresh jitted function.
    fresh = jax.jit(lambda y: y * 3.0 + 1.0)
    run_chunk = _aot_chunks(extra=fresh)
    settings = MeasureSettings(min_samples=3, max_samples=5, sample_min_s=0.002)
    with caplog.at_level(logging.DEBUG, logger="jax"), jax.log_compiles():
        time_steps(run_chunk, 1e-5, settings, cap_s=0.2)
    assert any("Compiling" in line for line in _compile_lines(caplog))


def test_engine_compile_counter_counts_real_compiles(inproc: InProcessBackend) -> None:
    # timing_compiles == 0 means something only if the counter sees compiles at all
    engine = inproc.engine
    before = engine.compiles
    jax.jit(lambda y: y - 7.0)(jnp.ones(3))
    assert engine.compiles > before


def test_measurement_timed_no_compiles(f32: autoplace.Measurement) -> None:
    assert f32.timing_compiles == 0
    assert f32.compile_cache == "off"  # the in-process engine uses no persistent cache


# --- figures ------------------------------------------------------------------------------


def test_figures_of_a_real_measurement(f32: autoplace.Measurement) -> None:
    m = f32
    assert m.status == "ok", m.reason
    assert m.reason == ""
    assert (m.device, m.batch_size, m.precision, m.width, m.workload) == (
        "cpu:0",
        8,
        "float32",
        8,  # the file's default width
        "mlp",
    )
    assert m.device_kind == "cpu"
    for name in ("build_s", "lower_s", "compile_s", "first_call_s", "transfer_s"):
        assert getattr(m, name) > 0, name
    assert m.step.step_s > 0 and m.fed.step_s > 0
    assert m.step.rate(m.batch_size) == pytest.approx(m.batch_size / m.step.step_s)
    assert m.fed.rate(m.batch_size) == pytest.approx(m.batch_size / m.fed.step_s)
    assert m.flops > 0
    assert m.flops_per_s == pytest.approx(m.flops / m.step.step_s)
    assert m.predicted_bytes > 0
    assert m.peak_bytes == m.predicted_bytes and m.peak_bytes_source == "predicted"
    assert m.step.spread >= 0 and m.fed.spread >= 0
    assert FAST.min_samples <= m.step.samples <= FAST.max_samples
    assert m.finite is True
    assert m.measured
    # x: (8, 16) float32 and y: (8, 4) float32
    assert m.batch_bytes == 8 * (16 + 4) * 4
    assert m.worker_start_s == 0.0
    assert m.compile_cached is False  # so the compile and first call ran in this call:
    assert m.wall_s >= m.compile_s + m.first_call_s


def test_width_and_batch_size_reach_the_model(inproc: InProcessBackend) -> None:
    wide = measure(inproc, "tiny_mlp", batch_size=16, width=32)
    assert wide.status == "ok", wide.reason
    assert wide.width == 32
    assert wide.batch_bytes == 16 * (16 + 4) * 4
    narrow = measure(inproc, "tiny_mlp", batch_size=16, width=8)
    assert wide.flops > 2 * narrow.flops


# --- precision ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "dtypes"),
    [("float32", ("f32",)), ("bfloat16", ("bf16",)), ("float16", ("f16",)), ("bf16", ("bf16",))],
)
def test_precision_is_the_compute_precision(
    inproc: InProcessBackend, precision: str, dtypes: tuple[str, ...]
) -> None:
    m = measure(inproc, "tiny_mlp", precision=precision)
    assert m.status == "ok", m.reason
    assert m.compute_dtypes == dtypes
    assert m.precision == Config(device="cpu", batch_size=1, precision=precision).precision


def test_lower_precision_halves_the_batch_bytes(inproc: InProcessBackend, f32) -> None:
    m = measure(inproc, "tiny_mlp", precision="bfloat16")
    # x is cast to the precision (2 bytes), y stays float32
    assert m.batch_bytes == 8 * (16 * 2 + 4 * 4) < f32.batch_bytes


def test_deviation_vs_float32(inproc: InProcessBackend, f32: autoplace.Measurement) -> None:
    assert f32.deviation_vs_float32 == 0.0
    bf16 = measure(inproc, "tiny_mlp", precision="bfloat16")
    f16 = measure(inproc, "tiny_mlp", precision="float16")
    assert 0.0 < bf16.deviation_vs_float32 < 0.1
    assert 0.0 < f16.deviation_vs_float32 < 0.1
    # float16 keeps 10 mantissa bits to bfloat16's 7
    assert f16.deviation_vs_float32 < bf16.deviation_vs_float32


def test_deviation_can_be_switched_off(inproc: InProcessBackend) -> None:
    no_deviation = dataclasses.replace(FAST, deviation=False)
    m = measure(inproc, "tiny_mlp", precision="bf16", settings=no_deviation)
    assert m.status == "ok"
    assert m.deviation_vs_float32 is None


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_deviation_does_not_depend_on_what_was_measured_before() -> None:
    # The float32 output remembered from a training step must be the first step's,
    # not overwritten by the later (donated) steps of the timed loop.
    first = InProcessBackend()
    measure(first, "tiny_mlp", precision="float32")
    after_f32 = measure(first, "tiny_mlp", precision="bfloat16").deviation_vs_float32
    alone = measure(InProcessBackend(), "tiny_mlp", precision="bfloat16").deviation_vs_float32
    assert after_f32 == pytest.approx(alone, rel=1e-6)


def test_deviation_compares_outputs_on_the_same_batch() -> None:
    # A float32 measurement with one seed must not serve as the reference for a
    # measurement with another seed: their batches differ.
    backend = InProcessBackend()
    measure(backend, "tiny_predict", settings=dataclasses.replace(FAST, seed=0))
    other_seed = dataclasses.replace(FAST, seed=1)
    m = measure(backend, "tiny_predict", precision="bfloat16", settings=other_seed)
    assert 0.0 < m.deviation_vs_float32 < 0.1


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_deviation_from_a_reused_float32_executable_is_the_same() -> None:
    # With the float32 executable of the configuration in the worker, the reference
    # runs on it instead of compiling the step again; the result must not change.
    seeded = dataclasses.replace(FAST, seed=3)
    warm = InProcessBackend()
    measure(warm, "tiny_mlp", precision="float32")  # seed 0: its output is no reference here
    reused = measure(warm, "tiny_mlp", precision="bfloat16", settings=seeded)
    fresh = measure(InProcessBackend(), "tiny_mlp", precision="bfloat16", settings=seeded)
    assert reused.deviation_vs_float32 == pytest.approx(fresh.deviation_vs_float32, rel=1e-6)


# --- the build cache and donation -----------------------------------------------------------


def test_measuring_a_training_step_twice_reuses_the_build(inproc: InProcessBackend) -> None:
    # The cached state must survive the first measurement's donated steps.
    settings = dataclasses.replace(FAST, seed=5)
    first = measure(inproc, "tiny_mlp", width=32, settings=settings)
    second = measure(inproc, "tiny_mlp", width=32, settings=settings)
    assert first.status == second.status == "ok", (first.reason, second.reason)
    assert second.build_s == first.build_s  # cached: the same build, not a new one


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_measuring_a_configuration_again_reuses_its_executable(inproc: InProcessBackend) -> None:
    settings = dataclasses.replace(FAST, seed=6)
    first = measure(inproc, "tiny_mlp", width=24, batch_size=4, settings=settings)
    again = measure(inproc, "tiny_mlp", width=24, batch_size=4, settings=settings)
    other = measure(inproc, "tiny_mlp", width=24, batch_size=2, settings=settings)
    assert first.status == again.status == other.status == "ok"
    assert first.compile_cached is False and other.compile_cached is False
    assert again.compile_cached is True
    # the compile's figures are those of the compile that made the executable ...
    for name in ("lower_s", "compile_s", "first_call_s", "flops", "predicted_bytes"):
        assert getattr(again, name) == getattr(first, name), name
    # ... while the steady state is timed anew, without compiling
    assert again.step.step_s != first.step.step_s and again.timing_compiles == 0


def test_a_configuration_compiled_again_is_compiled_for_real(inproc: InProcessBackend) -> None:
    # Once its executable is gone, the same step with the same shapes must be traced,
    # lowered and compiled again, not served from JAX's caches: the engine checks its
    # compile counter and would raise if the compile were a cache hit.
    settings = dataclasses.replace(FAST, seed=7)
    first = measure(inproc, "tiny_mlp", width=40, settings=settings)
    inproc.engine.forget_executables()
    again = measure(inproc, "tiny_mlp", width=40, settings=settings)
    assert first.status == again.status == "ok", (first.reason, again.reason)
    assert again.compile_cached is False and again.build_cached is True
    assert again.compile_s != first.compile_s


def test_inference_workload(inproc: InProcessBackend) -> None:
    m = measure(inproc, "tiny_predict", batch_size=4)
    assert m.status == "ok", m.reason
    assert m.workload == "predict"
    assert m.width is None


# --- placement ------------------------------------------------------------------------------


def test_devices(inproc: InProcessBackend) -> None:
    devices = inproc.devices()
    assert [d.name for d in devices] == [f"cpu:{i}" for i in range(N_CPU_DEVICES)]
    assert all(d.platform == "cpu" and d.kind == "cpu" for d in devices)
    assert all(d.memory_bytes and d.memory_bytes > 2**20 for d in devices)


def test_measure_on_another_cpu_device(inproc: InProcessBackend) -> None:
    m = measure(inproc, "tiny_mlp", device="cpu:2")
    assert m.status == "ok", m.reason
    assert m.device == "cpu:2"


def test_unknown_device_lists_the_devices(inproc: InProcessBackend) -> None:
    listing = "cpu:0, cpu:1, cpu:2, cpu:3"
    with pytest.raises(BadInputError, match="unknown device 'cpu:9'") as info:
        inproc.measure(request(model("tiny_mlp"), "mlp", device="cpu:9"))
    assert listing in str(info.value)
    with pytest.raises(BadInputError, match=listing):
        measure(inproc, "tiny_mlp", device="cpu:9")
    with pytest.raises(BadInputError, match=listing):
        measure(inproc, "tiny_mlp", device="gpu")


def test_unknown_workload_in_a_request_is_bad_input(inproc: InProcessBackend) -> None:
    # The Backend contract: an impossible request raises BadInputError.
    with pytest.raises(BadInputError, match="nope"):
        inproc.measure(request(model("tiny_mlp"), "nope"))


def test_catalog(inproc: InProcessBackend) -> None:
    mf = ModelFile.at(model("tiny_mlp"))
    found = inproc.catalog(str(mf.path), mf.sha256)
    assert list(found) == ["mlp"]
    assert found["mlp"].default_width == 8
    with pytest.raises(autoplace.ModelFileError, match="no workload found"):
        mf = ModelFile.at(model("no_workload"))
        inproc.catalog(str(mf.path), mf.sha256)


# --- statuses -------------------------------------------------------------------------------


def test_nonfinite(inproc: InProcessBackend) -> None:
    m = measure(inproc, "nan")
    assert m.status == "nonfinite"
    assert "NaN" in m.reason
    assert m.finite is False
    assert m.measured  # it ran: the timings are real
    assert m.step.step_s > 0
    # nothing to compare with float32: not "0.0% from float32" (issue 47)
    assert m.deviation_vs_float32 is None


def test_a_nan_output_deviates_by_nothing_that_can_be_said() -> None:
    """Issue 47: a NaN step read "vs float32 0.0%"; neither NaN against float32's output
    nor float32's own NaN is a deviation."""
    from autoplace.measuring._xla import relative_deviation

    fine, nan = np.ones(4, np.float32), np.array([1.0, np.nan, 1.0, 1.0], np.float32)
    assert relative_deviation(fine, fine) == 0.0
    assert relative_deviation(nan, fine) is None
    assert relative_deviation(fine, nan) is None
    assert relative_deviation(nan, nan) is None


def test_error_in_the_step_names_the_model_file_line(inproc: InProcessBackend) -> None:
    path = model("raises")
    m = measure(inproc, "raises")
    assert m.status == "error"
    assert m.reason.startswith("tracing and lowering the step raised ValueError")
    assert "shapes do not line up" in m.reason
    assert f"{path}:{line_of(path, 'RAISE_LINE')}" in m.reason
    assert m.compile_s is None and m.step.step_s is None
    assert not m.measured


def test_workload_function_must_return_a_workload(inproc: InProcessBackend) -> None:
    # the file's contract, broken whatever the configuration: bad input, not a status
    with pytest.raises(ModelFileError, match=r"returned dict, not autoplace\.Workload"):
        autoplace.measure(model("returns_dict"), batch_size=2, settings=FAST, backend=inproc)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("device_batch", "make_batch in .* returned JAX arrays: return numpy arrays"),
        ("short_batch", r"make_batch\(8, rng\) in .* returned an array of 7 rows, not 8"),
    ],
)
def test_make_batch_must_return_host_arrays_of_batch_size_rows(
    inproc: InProcessBackend, name: str, message: str
) -> None:
    with pytest.raises(ModelFileError, match=message):
        autoplace.measure(model(name), batch_size=8, settings=FAST, backend=inproc)


def test_too_big_for_max_memory_is_not_run(inproc: InProcessBackend) -> None:
    m = measure(inproc, "tiny_mlp", settings=dataclasses.replace(FAST, max_memory=1000))
    assert m.status == "too_big"
    assert "KiB, over the 1000 B limit" in m.reason  # sizes in the unit that reads
    assert m.predicted_bytes > 1000
    assert m.compile_s > 0  # compiled, so the prediction is XLA's ...
    assert m.first_call_s is None and m.step.step_s is None  # ... but never run
    assert not m.measured


def test_too_big_for_the_machine_is_not_run(inproc: InProcessBackend) -> None:
    m = measure(inproc, "too_big")
    assert m.status == "too_big"
    assert m.predicted_bytes >= 2**40
    assert m.first_call_s is None


def test_out_of_memory_while_building(inproc: InProcessBackend) -> None:
    m = measure(inproc, "oom_build")
    assert m.status == "oom"
    assert m.reason.startswith("out of memory while building the workload")
    assert "RESOURCE_EXHAUSTED" in m.reason
    # the engine is still usable
    assert measure(inproc, "tiny_predict").status == "ok"


# --- measuring several configurations together ---------------------------------------------


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_measure_together_times_the_loops_in_turns(inproc: InProcessBackend) -> None:
    reqs = [
        request(model("tiny_mlp"), "mlp", batch_size=4),
        request(model("raises"), "broken"),
        request(model("tiny_mlp"), "mlp", batch_size=16),
    ]
    first, broken, second = inproc.measure_together(reqs)
    assert broken.status == "error" and "shapes do not line up" in broken.reason
    for m, batch in ((first, 4), (second, 16)):
        assert m.status == "ok", m.reason
        assert m.batch_size == batch and m.interleaved_with == 2 and m.timing_compiles == 0
        assert m.fed.step_s > 0 and m.step.rate(m.batch_size) == pytest.approx(
            batch / m.step.step_s
        )
    assert first.step.samples == second.step.samples  # the same number of turns each
    assert broken.interleaved_with == 2
    # Each chunk's time is kept, so the two can be compared turn by turn.
    assert first.interleave_id == second.interleave_id == broken.interleave_id is not None
    assert len(first.step.chunks) == first.step.samples == len(second.step.chunks)
    assert first.fed.timed == second.fed.timed >= 1
    assert first.fed.step_s == pytest.approx(statistics.median(first.fed.chunks))
    alone = inproc.measure(reqs[0])
    assert alone.interleaved_with == 0 and alone.compile_cached
    assert alone.interleave_id is None and alone.step.chunks


def test_a_configuration_failing_in_the_timed_loop_drops_out(
    inproc: InProcessBackend, tmp_path: Path
) -> None:
    # The step runs fine at first, then the host callback it calls raises: only the
    # timed loops reach that call, so the failure comes mid-way through the turns.
    path = write_model(
        tmp_path,
        """
        import jax
        import numpy as np

        import autoplace

        calls = [0]


        def count(x):
            calls[0] += 1
            if calls[0] > 8:
                raise RuntimeError("the sensor went away")
            return x


        @autoplace.workload
        def flaky(width, dtype):
            def step(state, x):
                y = jax.pure_callback(count, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
                return state + y.sum()

            return autoplace.Workload(
                state=np.zeros((), np.float32),
                step=step,
                make_batch=lambda b, rng: np.ones((b, 4), np.float32),
                kind="infer",
            )
        """,
    )
    flaky, good = inproc.measure_together(
        [request(path, "flaky"), request(model("tiny_mlp"), "mlp")]
    )
    assert flaky.status == "error" and "steady-state loop raised" in flaky.reason
    assert good.status == "ok" and good.step.step_s > 0 and good.fed.step_s > 0


# --- typed PRNG keys in a state or an output ------------------------------------------


def test_typed_keys_count_as_bytes_and_are_neither_compared_nor_checked_for_nan():
    from autoplace.measuring._xla import all_finite

    key = jax.random.key(0)
    tree = {"key": key, "keys": jax.random.split(key, 3), "w": np.ones(3, np.float32)}
    assert tree_bytes(tree) == key.nbytes * 4 + 12
    other = {**tree, "keys": jax.random.split(jax.random.key(1), 3), "w": np.full(3, 2.0)}
    assert relative_deviation(other, tree) == pytest.approx(1.0)  # w alone: |2-1|/|1|
    assert all_finite(tree)
    assert not all_finite({**tree, "w": np.array([1.0, np.nan])})


@pytest.mark.parametrize(
    ("name", "workload"),
    [
        ("typed_keys", "train"),
        ("typed_keys", "infer"),
        pytest.param("nnx_rnn", "classifier", marks=pytest.mark.slow),  # an LSTM's compile
    ],
    ids=["keys in a training state", "keys in an output", "nnx.RNN's RNG stream"],
)
@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_state_holding_typed_prng_keys_is_measured_like_any_other(
    inproc: InProcessBackend, name: str, workload: str
) -> None:
    # Flax NNX's nnx.RNN keeps an RNG stream: nnx.split((model, optimizer)) puts typed key
    # arrays in the state. Transfer, compile, memory, loops, finiteness and the float32
    # comparison (its reference computed here too) all take them.
    m = measure(inproc, name, workload=workload, precision="bfloat16")
    assert m.status == "ok", m.reason
    assert m.finite is True and m.batch_bytes > 0 and m.peak_bytes > 0 and m.transfer_s > 0
    assert m.fed.step_s > 0 and m.step.step_s > 0
    assert 0.0 < m.deviation_vs_float32 < 0.05  # the same model, in a lower precision


# --- peak memory of configurations measured together ----------------------------------


class _FakeGPU:
    """A device's ``memory_stats`` as a GPU reports them, moved as a test scripts: the
    high-water mark since the process started, and the bytes in use now."""

    platform = "gpu"

    def __init__(self, script: list[tuple[int, int]]) -> None:
        #: (high-water mark, bytes in use) before and after each first call, in order
        self.script, self.read = script, 0

    def memory_stats(self) -> dict[str, int]:
        peak, in_use = self.script[self.read]
        self.read += 1
        return {"peak_bytes_in_use": peak, "bytes_in_use": in_use, "bytes_limit": 10**9}


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_configurations_measured_together_each_get_their_own_peak(
    inproc: InProcessBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three configurations set up in turn, each first call alone: the first raises the
    # device's high-water mark from 1000 to 5000 B, the second stays under it, the third
    # raises it to 9000 B. Each gets its own rise (plus its state and batch, in use before),
    # or XLA's prediction where it set no new mark: never the group's 9000 B for all.
    import autoplace.measuring._preparing as preparing
    from autoplace.measuring._xla import memory_in_use

    fake = _FakeGPU([(1000, 1000), (5000, 1200), (5000, 1500), (5000, 1700), (5000, 2000),
                     (9000, 2100)])  # fmt: skip
    monkeypatch.setattr(preparing, "memory_in_use", lambda device: memory_in_use(fake))
    path = model("tiny_mlp")
    a, b, c = inproc.measure_together([request(path, "mlp", batch_size=n) for n in (4, 8, 16)])
    assert fake.read == 6  # read before and after each first call, never after the loops
    state = jax.tree.leaves(import_model_file(path).mlp(8, jnp.float32).state)
    params = sum(leaf.nbytes for leaf in state)
    assert (a.peak_bytes, a.peak_bytes_source) == (5000 - 1000 + params + a.batch_bytes, "measured")
    assert (b.peak_bytes, b.peak_bytes_source) == (b.predicted_bytes, "predicted")
    assert (c.peak_bytes, c.peak_bytes_source) == (9000 - 2000 + params + c.batch_bytes, "measured")


# --- the two compile checks, each made to fire by a real compile ----------------------


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_compile_inside_the_timed_loops_fails_the_group_and_is_counted(
    inproc: InProcessBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host callback that jits, or another thread, compiles while the steps are timed:
    # here a fresh function jitted once during the first chunk. The timings would hold it.
    from autoplace.measuring._run import Run

    real_chunk, compiled = Run.chunk, []

    def chunk(self, k, loop="step"):
        if not compiled:
            compiled.append(jax.jit(lambda y: y * 5.0 - 2.0)(jnp.ones(3)))
        return real_chunk(self, k, loop)

    monkeypatch.setattr(Run, "chunk", chunk)
    path = model("tiny_mlp")
    results = inproc.measure_together([request(path, "mlp", batch_size=n) for n in (4, 8)])
    for m in results:
        assert m.status == "error" and m.timing_compiles == 1
        assert m.reason.startswith("XLA compiled 1 time(s) while the steps were timed")
    monkeypatch.setattr(Run, "chunk", real_chunk)
    assert measure(inproc, "tiny_mlp").timing_compiles == 0  # and none without it


def test_a_compile_served_from_the_persistent_cache_is_refused(
    inproc: InProcessBackend, tmp_path: Path
) -> None:
    # The model file turns JAX's persistent compilation cache back on (a habit of people
    # who compile big models): the second compile of its step is a cache hit, which JAX
    # times as a compile. compile_s would be the read of a file: refused in one line.
    from jax.experimental.compilation_cache import compilation_cache

    path = write_model(
        tmp_path,
        f"""
        import jax
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", {str(tmp_path / "xla")!r})
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        from tiny_mlp import mlp  # the workload, from beside it
        """,
    )
    (tmp_path / "tiny_mlp.py").write_text(model("tiny_mlp").read_text())
    compilation_cache.reset_cache()  # the session's engine decided on the cache long ago
    try:
        first = autoplace.measure(path, batch_size=8, settings=FAST, backend=inproc)
        assert first.status == "ok" and first.compile_cached is False
        inproc.engine.forget_executables()
        with pytest.raises(ModelFileError, match="from a persistent compilation cache") as info:
            autoplace.measure(path, batch_size=8, settings=FAST, backend=inproc)
        assert "\n" not in str(info.value) and "remove that from the file" in str(info.value)
    finally:
        jax.config.update("jax_enable_compilation_cache", False)
        jax.config.update("jax_compilation_cache_dir", None)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        compilation_cache.reset_cache()


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_groups_steps_compile_side_by_side_before_any_timing(
    inproc: InProcessBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each compile in a thread of its own (XLA compiles outside Python's lock), all of them
    # before the first timed chunk; each reports its own, real compile.
    import threading

    import autoplace.measuring._preparing as preparing
    from autoplace.machine import cores

    threads, real = [], preparing.compile_lowered

    def recording(*args, **kwargs):
        threads.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(preparing, "compile_lowered", recording)
    inproc.engine.forget_executables()
    reqs = [request(model("tiny_mlp"), "mlp", batch_size=b) for b in (3, 5, 7)]
    heard: list = []
    results = inproc.measure_together(reqs, heard.append)
    assert [m.status for m in results] == ["ok"] * 3
    assert all(m.compile_cached is False and m.compile_s > 0 for m in results)
    assert all(m.timing_compiles == 0 for m in results)
    assert len(threads) == 3
    if cores() > 1:
        assert len(set(threads)) > 1 and threading.get_ident() not in threads
    said = [p.what for p in heard]
    compiling = said.index("compiling 3 side by side")
    assert compiling < min(i for i, w in enumerate(said) if "turn" in w)


@pytest.mark.slow  # a second or more: real compiles
@pytest.mark.parametrize("name, workload", [("tiny_mlp", "mlp"), ("tiny_predict", "predict")])
def test_a_fused_measurement_gives_its_figures_per_step(inproc, name, workload):
    # The same configuration at one step a call and at eight, timed in turns: the fused
    # one's loops time calls of eight steps, and every per-step figure divides by eight.
    base = request(model(name), workload, settings=dataclasses.replace(FAST, deviation=True),
                   batch_size=16, precision="bfloat16")  # fmt: skip
    fused_request = dataclasses.replace(base, steps_per_call=8)
    plain, fused = inproc.measure_together([base, fused_request])
    assert plain.status == fused.status == "ok", (plain.reason, fused.reason)
    assert (plain.steps_per_call, fused.steps_per_call) == (1, 8)
    # a call of eight steps is not reported as one step: per step, the same order as one
    assert fused.step.step_s < 4 * plain.step.step_s and fused.fed.step_s < 4 * plain.fed.step_s
    assert fused.step.rate(fused.batch_size) == pytest.approx(16 / fused.step.step_s)
    assert fused.fed.rate(fused.batch_size) == pytest.approx(16 / fused.fed.step_s)
    assert fused.batch_bytes == plain.batch_bytes  # one step's batch, not the stack's
    # XLA counts a loop's body once: no FLOPs claimed for the fused call
    assert plain.flops and fused.flops is None and fused.bytes_accessed is None
    # the call holds eight stacked batches; its output is eight steps', never float32's
    assert fused.predicted_bytes > plain.predicted_bytes
    assert plain.deviation_vs_float32 is not None and fused.deviation_vs_float32 is None


def test_the_seconds_make_batch_takes_are_measured(inproc: InProcessBackend, tmp_path) -> None:
    """``batch_s``: what the user's make_batch costs a batch, so that a tune can say when
    its batches, not its steps, take the time."""
    path = write_model(
        tmp_path,
        """
        import time
        import numpy as np
        import autoplace

        @autoplace.workload
        def slow_batches(width, dtype):
            def make_batch(batch_size, rng):
                time.sleep(0.05)
                return rng.random((batch_size, 4), dtype=np.float32).astype(dtype)

            return autoplace.Workload(
                state=np.zeros(4, np.float32).astype(dtype),
                step=lambda state, x: state + x.sum(0),
                make_batch=make_batch,
                kind="infer",
            )
        """,
    )
    m = inproc.measure(request(path, "slow_batches"))
    assert m.status == "ok", m.reason
    assert m.batch_s is not None and m.batch_s >= 0.05
    fast = inproc.measure(request(model("tiny_predict"), "predict"))
    assert fast.batch_s is not None and fast.batch_s < m.batch_s


def test_the_prefetched_loop_is_timed_only_when_asked(inproc: InProcessBackend) -> None:
    """Issue 37's feeding (b): two puts kept in flight by a thread, timed beside the
    resident (a) and fed (c) loops when its cap is set; not at all otherwise."""
    asked = dataclasses.replace(FAST, prefetch_time_cap_s=0.05)
    m = measure(inproc, "tiny_mlp", settings=asked)
    assert m.status == "ok", m.reason
    assert m.loop("prefetch").step_s is not None and m.loop("prefetch").step_s > 0
    assert m.loop("prefetch").spread is not None
    assert measure(inproc, "tiny_mlp").loop("prefetch").step_s is None


@pytest.mark.slow  # a second or more: real compiles in an engine of its own
def test_a_processes_first_use_of_a_device_is_said_once_apart_from_compiles() -> None:
    """The device's start-up (its context, the compiler's first run) is the process's, not
    a configuration's: the first configuration measured on a device carries it, the next
    does not, and neither's compile holds it."""
    backend = InProcessBackend()  # an engine of its own: no device used yet
    path = model("tiny_mlp")
    first, second = backend.measure_together([request(path, "mlp", batch_size=n) for n in (4, 8)])
    assert first.device_init_s is not None and first.device_init_s > 0
    assert second.device_init_s is None
    assert backend.measure(request(path, "mlp", batch_size=16)).device_init_s is None


@pytest.mark.slow  # a second or more: real compiles in an engine of its own
@pytest.mark.parametrize("alone", [True, False])
def test_steps_for_an_accelerator_compile_one_at_a_time(monkeypatch, alone) -> None:
    """XLA's GPU autotuner times kernels as it compiles: side by side it reads its own
    timings wrong, so an accelerator's steps compile one after another, in the caller's
    thread; a CPU's may compile side by side."""
    from autoplace.measuring import _preparing
    from autoplace.measuring._timing import compiles_alone

    assert (
        compiles_alone(["gpu"]) and compiles_alone(["cpu", "tpu"]) and not compiles_alone(["cpu"])
    )
    threads: list[int] = []
    real = _preparing.Preparer._compile

    def compile_noting_thread(self, run):
        threads.append(threading.get_ident())
        return real(self, run)

    monkeypatch.setattr(_preparing.Preparer, "_compile", compile_noting_thread)
    monkeypatch.setattr(_preparing, "compiles_alone", lambda platforms: alone)
    backend = InProcessBackend()
    path = model("tiny_mlp")
    found = backend.measure_together([request(path, "mlp", batch_size=n) for n in (4, 8, 16)])
    assert all(m.status == "ok" for m in found)
    if alone:
        assert set(threads) == {threading.get_ident()}
    else:
        assert threading.get_ident() not in threads
