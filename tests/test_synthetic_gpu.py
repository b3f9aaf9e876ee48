"""The synthetic GPU of tests/synthetic.py keeps the shape of the H200 reference
(``../shared/gpu-reference/h200-2026-11-26/``), and a tune on it is explained from it."""

import pytest
from synthetic import (
    GPU_COMPILE,
    GPU_FLOOR,
    GPU_INIT,
    GPU_KIND,
    PUT_BANDWIDTH,
    PUT_FIXED,
    SIDE_BY_SIDE,
    SyntheticBackend,
    gpu_times,
    synthetic_limits,
)

import autoplace
from autoplace import Config, MeasureRequest, MeasureSettings
from autoplace.config import config_at
from autoplace.explaining import explain_figures
from autoplace.study._side_by_side import compiled_side_by_side, with_side_by_side


def request(device="gpu:0", batch=4096, precision="float32", **settings):
    c = Config(device, batch, precision, None)
    return MeasureRequest("m.py", "0", "synthetic", c, MeasureSettings(**settings))


def test_its_figures_have_the_references_shape():
    backend = SyntheticBackend(devices=("gpu:0", "cpu:0"))
    (gpu,) = [d for d in backend.devices() if d.name == "gpu:0"]
    assert (gpu.platform, gpu.kind) == ("gpu", GPU_KIND)
    m = backend.measure(request(prefetch_time_cap_s=0.5))
    # The put: a fixed part, then the bytes of 4096 float32 MNIST samples at ~9 GB/s.
    assert m.batch_bytes == 4096 * 3136
    assert m.transfer_s == pytest.approx(PUT_FIXED + m.batch_bytes / PUT_BANDWIDTH, rel=0.02)
    # Resident 45-86 µs, above the floor; prefetched between resident and fed.
    assert GPU_FLOOR < 45e-6 <= m.step.step_s <= 86e-6
    assert m.step.step_s < m.loop("prefetch").step_s < m.fed.step_s
    assert m.fed.step_s == pytest.approx(m.transfer_s + m.step.step_s)
    assert m.step.samples >= 3  # timed in full: the request gave it a time cap
    half = backend.measure(request(precision="bfloat16"))
    assert half.batch_bytes == m.batch_bytes // 2 and half.loop("prefetch").step_s is None
    assert backend.measure(request(time_cap_s=0.0)).step.samples == 1  # a glance
    cpu = backend.measure(request("cpu:0", prefetch_time_cap_s=0.5))
    assert (
        cpu.step.step_s < cpu.loop("prefetch").step_s < cpu.fed.step_s and cpu.device_init_s is None
    )
    assert backend.measure(request("cpu:0")).step.samples is None  # as before: the CPU's


def test_a_process_starts_the_gpu_once():
    backend = SyntheticBackend(devices=("gpu:0", "cpu:0"))
    first, second = (backend.measure(request(batch=b)) for b in (32, 64))
    assert (first.device_init_s, second.device_init_s) == (GPU_INIT, None)
    fresh = backend.measure_fresh([request(batch=b) for b in (32, 64)])
    assert [m.device_init_s for m in fresh] == [GPU_INIT, GPU_INIT]  # a process each
    assert backend.measure(request(batch=128)).device_init_s is None  # the shared one's


@pytest.mark.parametrize(("side_by_side", "factor"), [(False, 1.0), (True, 2 * SIDE_BY_SIDE)])
def test_compiles_side_by_side_slow_down_as_the_references_did(side_by_side, factor):
    backend = SyntheticBackend(devices=("gpu:0", "cpu:0"), side_by_side=side_by_side)
    group = [request(precision=p) for p in ("float32", "bfloat16", "float16")]
    assert [m.compile_s for m in backend.measure_together(group)] == [GPU_COMPILE * factor] * 3
    (alone,) = backend.measure_together(group[:1])
    assert alone.compile_s == GPU_COMPILE
    cpu = backend.measure_together([request("cpu:0", precision=p) for p in ("float32", "bfloat16")])
    assert [m.compile_s for m in cpu] == [0.1, 0.1]  # CPU compiles keep their figures


def test_a_compile_an_older_autoplace_timed_side_by_side_is_explained_so():
    """Before autoplace compiled an accelerator's steps one at a time, a group's compiled
    side by side, each slowed by the others' (:data:`SIDE_BY_SIDE`). Read back from a
    study written then, the pick's compile figure says so, with its compile alone."""
    backend = SyntheticBackend(devices=("gpu:0", "cpu:0"), side_by_side=True)
    (alone,) = backend.measure_together([request(batch=4096)])
    group = backend.measure_together([request(batch=b) for b in (256, 1024, 4096)])
    cpu = backend.measure_together([request("cpu:0", batch=b) for b in (256, 4096)])
    assert alone.compile_s == GPU_COMPILE and group[2].compile_s == 2 * SIDE_BY_SIDE
    measured = [alone, *group, *cpu]

    def first_call(old: bool) -> str:
        read = with_side_by_side([(m, old) for m in measured])
        figures = {m.config: m for m in read}  # the latest of each configuration
        winner = figures[Config("gpu:0", 4096, "float32", None)]
        explained = explain_figures(figures, winner, [figures[cpu[1].config]])
        (said,) = [s for s in explained.sentences if s.startswith("The first call")]
        return said

    said = first_call(old=True)
    assert "compiling 20 s" in said
    assert said.endswith(
        "That compile of 20 s was timed side by side with 2 other steps for gpu:0, as "
        "autoplace compiled an accelerator's steps before it compiled them one at a time; "
        "each slows the others' (XLA's autotuner times kernels on the device as it "
        "compiles), so it overstates a compile alone: alone, this configuration compiled "
        "in 1 s."
    )
    # The same figures from today's engine, which compiles them one at a time: no caveat
    # (the synthetic backend's side_by_side stands for the older engine only).
    assert "side by side" not in first_call(old=False)
    # CPU steps compile side by side in threads by design: never said so.
    read = with_side_by_side([(m, True) for m in measured])
    assert [m.compiled_beside for m in read] == [None, 2, 2, 2, None, None]


def test_a_study_written_by_the_older_engine_is_told_by_its_stored_form():
    m = SyntheticBackend(devices=("gpu:0",)).measure(request())
    assert not compiled_side_by_side(m.to_dict())  # today's form, by concept
    flat = {"status": "ok", "device": "gpu:0", "batch_size": 32, "compile_s": 24.65}
    assert compiled_side_by_side(flat)  # the H200 reference study's trials
    assert not compiled_side_by_side({**flat, "device_init_s": None})  # since the change


def test_its_limits_are_the_references():
    gpu = synthetic_limits().of("gpu:0")
    assert gpu.dispatch_floor.median == GPU_FLOOR == 41.6e-6
    assert gpu.host_to_device.median == 32.7e9
    assert gpu.peak_flops["bfloat16"].median / gpu.peak_flops["float32"].median > 1.8


def test_a_tune_on_it_names_the_put_as_the_fixed_cost(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    result = autoplace.tune(
        model,
        devices=("gpu:0", "cpu:0"),
        precisions=("float32", "bfloat16"),
        storage=f"journal:///{tmp_path / 's.log'}",
        out=tmp_path / "autoplace.toml",
        backend=SyntheticBackend(devices=("gpu:0", "cpu:0")),
    )
    assert result.best.config.device == "gpu:0"
    explanation = result.explanation
    assert explanation.fixed_cost.cause == "put"
    (said,) = [s for s in explanation.sentences if "a step costs a fixed" in s]
    assert "(putting the batch on the device:" in said and "dispatch" not in said
    doc = autoplace.recommendation.read(result.out)
    assert doc["explanation"]["fixed_cost"]["cause"] == "put"


EIGHT = tuple(f"gpu:{i}" for i in range(8))


def test_on_eight_gpus_the_search_tries_each_count_and_the_answer_carries_its_split(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    result = autoplace.tune(
        model,
        precisions=("float32",),
        batch_sizes=(256, 1024, 4096),
        storage=f"journal:///{tmp_path / 's.log'}",
        out=tmp_path / "autoplace.toml",
        backend=SyntheticBackend(devices=EIGHT),
    )
    measured = {c.device for c in result.standing.figures}
    assert measured == {"gpu:0", "gpu:0-1", "gpu:0-3", "gpu:0-7"}
    # The search's pick is the one an exhaustive look at the formula makes: fed from one
    # host, the put of the whole batch grows with the count, the steps shrink, and more
    # devices win only by what the put leaves.
    space = [config_at((d, "float32", 64), b) for d in measured for b in (256, 1024, 4096)]
    fed = {c: gpu_times(c.batch_size, "float32", devices=c.device_count)["fed"] for c in space}
    truth = max(fed, key=lambda c: c.batch_size / fed[c])
    best = result.best.config
    assert best.batch_size / fed[best] >= 0.97 * truth.batch_size / fed[truth]
    s = result.explanation.scaling
    assert [c.count for c in s.counts] == [1, 2, 4, 8] and s.cause == "put"
    doc = autoplace.recommendation.read(result.out)
    rec = doc["recommendation"]
    assert rec["devices"] == [f"gpu:{i}" for i in range(best.device_count)]
    assert rec["mesh"] == {"batch": best.device_count}
    assert rec["per_device_batch_size"] * best.device_count == rec["batch_size"]
    assert doc["explanation"]["scaling"]["cause"] == "put"
    assert doc["schema_version"] == 4
