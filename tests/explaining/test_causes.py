"""The causes the explanation names, read from the figures: what the fixed cost of a step
is (the put, dispatch, or neither), what feeding costs and what its remedies gain, which
precisions are emulated, the memory line, and the device's start-up said apart.

Most figures come from the synthetic GPU (``tests/synthetic.py``), shaped by the H200 of
``../shared/gpu-reference/h200-2026-11-26/``; its limits are that machine's.
"""

import dataclasses

import pytest
from synthetic import GPU_FLOOR, GPU_INIT, PUT_FIXED, SyntheticBackend, measured, synthetic_limits

from autoplace import Config, MeasureRequest, MeasureSettings, units
from autoplace.costs import fit_memory, one_off
from autoplace.explaining import explain_figures

BATCHES = (32, 64, 128, 256, 512, 1024, 2048, 4096)


def gpu_figures(precision="bfloat16", batches=BATCHES, **settings):
    """The synthetic GPU's figures of one arm, measured in one shared worker."""
    backend = SyntheticBackend(devices=("gpu:0", "cpu:0"))
    figures = {}
    for b in batches:
        c = Config("gpu:0", b, precision, None)
        request = MeasureRequest("m.py", "0", "synthetic", c, MeasureSettings(**settings))
        figures[c] = backend.measure(request)
    return figures


def scaling(explanation):
    (said,) = [s for s in explanation.sentences if "a step costs a fixed" in s]
    return said


def test_at_the_references_shapes_the_fixed_cost_is_the_put_not_dispatch():
    # Fed, a step costs about 300 µs fixed; with the batch on the device 50 µs: the put
    # accounts for the rest, six times the 41.6 µs floor.
    figures = gpu_figures()
    winner = figures[Config("gpu:0", 4096, "bfloat16", None)]
    explanation = explain_figures(figures, winner, [], limits=synthetic_limits())
    cause = explanation.fixed_cost
    assert (cause.cause, cause.put_basis) == ("put", "loops")
    assert cause.step_fixed_s == pytest.approx(50e-6, rel=0.02)
    said = scaling(explanation)
    assert (
        f"a fixed {units.seconds(cause.fixed_s)} (putting the batch on the device: with the "
        f"batch already there the step's own fixed cost is {units.seconds(cause.step_fixed_s)}, "
        f"so the put accounts for {units.seconds(cause.put_s)} of it)"
    ) in said
    assert "dispatch" not in said
    assert explanation.as_dict()["fixed_cost"]["cause"] == "put"


def test_with_the_step_glanced_at_the_put_timed_alone_names_it():
    # The search's figures: the step with the batch on the device glanced at (one chunk),
    # the put timed alone at every batch: its own fixed cost is most of the fed line's.
    figures = gpu_figures(time_cap_s=0.0)
    winner = figures[Config("gpu:0", 4096, "bfloat16", None)]
    explanation = explain_figures(figures, winner, [])  # and no limits
    cause = explanation.fixed_cost
    assert (cause.cause, cause.put_basis) == ("put", "put alone")
    assert cause.put_s == pytest.approx(PUT_FIXED, rel=0.02)
    share = cause.put_s / cause.fixed_s
    assert (
        f"(putting the batch on the device: a put timed alone costs a fixed "
        f"{units.seconds(cause.put_s)}, {share:.0%} of it)"
    ) in scaling(explanation)


def test_dispatch_is_named_where_the_fixed_cost_is_near_the_measured_floor():
    # The line of the step with the batch on the device: 50 µs fixed, 1.2 floors.
    figures = gpu_figures()
    winner = figures[Config("gpu:0", 4096, "bfloat16", None)]
    explanation = explain_figures(figures, winner, [], loop="step", limits=synthetic_limits())
    cause = explanation.fixed_cost
    assert cause.cause == "dispatch" and cause.floors == pytest.approx(50e-6 / GPU_FLOOR, rel=0.05)
    assert (
        f"(dispatch: {cause.floors:.1f} times the device's measured 41.6 µs dispatch floor)"
    ) in scaling(explanation)


def cpu_arm(
    fixed,
    per_sample,
    put_fixed=None,
    batches=(64, 128, 256, 512),
    precision="float32",
    step_fixed=None,
):
    """cpu:0 measurements whose fed step is ``fixed + per_sample·b``; the put timed alone
    costs ``put_fixed`` plus 10 ns a sample (``None``: not timed); the step with the batch
    on the device, ``step_fixed + per_sample·b`` (``None``: not timed)."""
    out = {}
    for b in batches:
        t = fixed + per_sample * b
        put = None if put_fixed is None else put_fixed + 1e-8 * b
        resident = {}
        if step_fixed is not None:
            s = step_fixed + per_sample * b
            resident = dict(step_s=s, step_spread=0.01, step_samples=5, samples_per_s=b / s)
        c = Config("cpu:0", b, precision, None)
        out[c] = measured(
            "ok", "", "cpu:0", b, precision, None, fed_step_s=t, fed_step_spread=0.01,
            fed_step_chunk_s=(t,) * 5, fed_samples_per_s=b / t, transfer_s=put, **resident,
        )  # fmt: skip
    return out


def test_a_fixed_cost_neither_the_put_nor_dispatch_is_said_to_be_neither():
    # The step with the batch on the device costs 800 µs of the fed line's 1 ms fixed.
    figures = cpu_arm(1e-3, 1e-6, put_fixed=1e-4, step_fixed=8e-4)
    winner = figures[Config("cpu:0", 512, "float32", None)]
    explanation = explain_figures(figures, winner, [], limits=synthetic_limits())
    assert (explanation.fixed_cost.cause, explanation.fixed_cost.put_basis) == ("step", "loops")
    floors = explanation.fixed_cost.fixed_s / 5.6e-6
    put = units.seconds(explanation.fixed_cost.put_s)
    assert (
        f"(launches and the loop's own work: not the put, which accounts for {put} of it, and "
        f"not dispatch, at {floors:.1f} times the device's measured 5.6 µs dispatch floor)"
    ) in scaling(explanation)


def test_a_put_timed_alone_does_not_clear_the_put_of_a_fixed_cost_it_falls_short_of():
    # The H200's README MLP (gpu_check-a18716df89-20261126-1911.json): a put alone cost a
    # fixed 200 µs of the fed line's 570 µs, yet the whole step with the batch on the device
    # took 89 µs: the put was most of it. With the step on the device not timed, nothing
    # but the put alone can be said.
    figures = cpu_arm(1e-3, 1e-6, put_fixed=1e-4)
    winner = figures[Config("cpu:0", 512, "float32", None)]
    explanation = explain_figures(figures, winner, [], limits=synthetic_limits())
    assert explanation.fixed_cost.cause == "unattributed"
    floors = explanation.fixed_cost.fixed_s / 5.6e-6
    said = scaling(explanation)
    assert (
        "(not attributed: the step with the batch on the device was not timed at two batch "
        "sizes, and a put timed alone (a fixed 100 µs) tells its own cost, not what it adds "
        f"to a step it overlaps; not dispatch, at {floors:.1f} times the device's measured "
        "5.6 µs dispatch floor)"
    ) in said
    assert "launches" not in said and "not the put" not in said


def test_a_fixed_cost_nothing_was_measured_to_tell_is_not_attributed():
    figures = cpu_arm(1e-3, 1e-6)  # no put timed, no step with the batch on the device
    winner = figures[Config("cpu:0", 512, "float32", None)]
    said = scaling(explain_figures(figures, winner, []))
    assert (
        "(not attributed: neither the step with the batch on the device nor the put alone was "
        "timed at two batch sizes; this machine's dispatch floor was not measured)"
    ) in said
    assert "dispatch, launch" not in said


def feeding(**figures):
    c = Config("gpu:0", 4096, "float32", None)
    m = measured("ok", "", "gpu:0", 4096, "float32", None,
                              batch_bytes=4096 * 3140, **figures)  # fmt: skip
    explanation = explain_figures({c: m}, m, [])
    (said,) = [s for s in explanation.sentences if "put" in s.lower() and "batch" in s]
    return explanation.transfer, said


def test_the_feeding_sentence_carries_the_remedies_measured_gains():
    # The reference's README MLP, float32 at 4096 (plain/cf_feed.json): 2,102 µs a step
    # put first, 580 µs with two puts in flight, 76 µs with the batch on the device.
    t, said = feeding(fed_step_s=2102e-6, prefetch_step_s=580e-6, step_s=76e-6, step_samples=5)
    assert said == (
        "Putting a fresh host batch each step takes 96.4% of the 2.1 ms step (76 µs with the "
        "batch already on the device); keep two batches in flight (`autoplace.prefetch`): 3.6x "
        "(2.1 ms → 580 µs a step); with the data on the device, 28x."
    )
    assert t.as_dict()["prefetch_gain"] == pytest.approx(2102 / 580)


def test_a_remedy_not_timed_is_said_not_timed_and_a_long_put_claims_no_share():
    # The H200 study's pick: a put alone (1.65 ms) longer than the whole fed step (1.05 ms).
    _, said = feeding(fed_step_s=1.05e-3, transfer_s=1.65e-3, step_s=653e-6, step_samples=1)
    assert said.startswith(
        "One put of a 12.3 MiB batch, timed alone, takes 1.65 ms, longer than the whole 1.05 "
        "ms fed step: in the loop the put overlaps the step, so this figure does not tell"
    )
    assert "100.0%" not in said
    assert said.endswith(
        "keeping two batches in flight and the step with the batch on the device were not "
        "timed here, so what either gains is not known."
    )
    _, said = feeding(fed_step_s=1.05e-3, prefetch_step_s=0.5e-3, transfer_s=0.3e-3)
    assert "keep two batches in flight (`autoplace.prefetch`): 2.1x (1.05 ms → 500 µs" in said
    assert said.endswith("the step with the batch on the device was not timed here, so what it "
                         "gains is not known.")  # fmt: skip


def test_the_synthetic_gpu_feeding_figures_reach_the_sentence():
    figures = gpu_figures("float32", prefetch_time_cap_s=0.5)
    m = figures[Config("gpu:0", 4096, "float32", None)]
    assert m.step.step_s < m.loop("prefetch").step_s < m.fed.step_s
    (said,) = [s for s in explain_figures(figures, m, []).sentences if "Putting" in s]
    gain = m.fed.step_s / m.loop("prefetch").step_s
    assert (
        f"keep two batches in flight (`autoplace.prefetch`): {gain:.1f}x "
        f"({units.seconds(m.fed.step_s)} → {units.seconds(m.loop('prefetch').step_s)} a step); "
        "with "
        f"the data on the device, {m.fed.step_s / m.step.step_s:.0f}x."
    ) in said


def emulated_sentences(explanation, precision):
    return [s for s in explanation.sentences if s.startswith(precision)]


def test_emulated_is_judged_from_the_measured_peaks_not_the_fed_steps():
    # The reference's CPU: bfloat16's peak 2.15x float32's, float16's 0.86x; fed, both run
    # slower than float32 (the feeding is in those figures).
    f32 = cpu_arm(1e-4, 1e-6)
    bf16 = cpu_arm(1e-4, 1.2e-6, precision="bfloat16")
    f16 = cpu_arm(1e-4, 1.3e-6, precision="float16")
    figures = {**f32, **bf16, **f16}
    winner = f32[Config("cpu:0", 512, "float32", None)]
    explanation = explain_figures(figures, winner, [], limits=synthetic_limits())
    assert emulated_sentences(explanation, "bfloat16") == []
    (said,) = emulated_sentences(explanation, "float16")
    assert said.startswith(
        "float16 is emulated on cpu:0: its measured peak is 0.86x float32's (953.00 GFLOP/s "
        "against 1.11 TFLOP/s): the device has no faster kernels for it"
    )
    assert [e.basis for e in explanation.emulated] == ["peak"]


def resident_arm(precision, per_sample, fed_per_sample):
    """cpu:0 width 8: the step with the batch on the device timed in full."""
    out = {}
    for b in (64, 128, 256):
        t, fed = 1e-4 + per_sample * b, 1e-4 + fed_per_sample * b
        c = Config("cpu:0", b, precision, 8)
        out[c] = measured(
            "ok", "", "cpu:0", b, precision, 8, step_s=t, step_samples=5, step_spread=0.01,
            fed_step_s=fed, fed_step_spread=0.01, fed_step_chunk_s=(fed,) * 5,
        )  # fmt: skip
    return out


def test_without_the_peaks_emulated_rests_on_the_step_with_the_batch_on_the_device():
    f32 = resident_arm("float32", 1e-6, 1e-6)
    winner = f32[Config("cpu:0", 256, "float32", 8)]
    # Slower fed (1.5x), as fast with the batch on the device: not emulated.
    fed_only = explain_figures({**f32, **resident_arm("bfloat16", 1e-6, 1.5e-6)}, winner, [])
    assert emulated_sentences(fed_only, "bfloat16") == []
    # Three times float32's time per sample on the device: emulated, and said on what.
    slow = explain_figures({**f32, **resident_arm("bfloat16", 3e-6, 3e-6)}, winner, [])
    (said,) = emulated_sentences(slow, "bfloat16")
    ratio = (1e-4 + 3e-6 * 256) / (1e-4 + 1e-6 * 256)
    assert said.startswith(
        f"bfloat16 is emulated on cpu:0 width 8: {ratio:.2f}x float32's time per sample with "
        "the batch on the device, at the best batch of each"
    )
    assert "judged from the steps" in said


def fed_arm(precision, per_sample):
    """cpu:0 width 8, fed only (the step with the batch on the device glanced at)."""
    out = {}
    for b in (64, 128, 256):
        fed = 1e-4 + per_sample * b
        out[Config("cpu:0", b, precision, 8)] = measured(
            "ok", "", "cpu:0", b, precision, 8, fed_step_s=fed, fed_step_chunk_s=(fed,) * 5
        )
    return out


def test_the_fed_time_per_sample_is_read_off_the_figures_the_table_shows():
    # Issue 47: "bfloat16 runs 1.52x float32's time per sample ... at the best batch of
    # each" beside a table where bfloat16 @2048 (212.88 k) beat float32 @1024 (209.60 k):
    # the sentence read one measurement of each, the table the search's figures.
    f32, bf16 = fed_arm("float32", 1e-6), fed_arm("bfloat16", 1.6e-6)
    figures = {**f32, **bf16}
    winner = f32[Config("cpu:0", 256, "float32", 8)]
    alone = explain_figures(figures, winner, [])
    assert emulated_sentences(alone, "bfloat16")  # these figures alone: 1.6x slower
    # the table's figures (the search's, on one scale) put bfloat16 a little ahead
    table = {c: c.batch_size / m.fed.step_s for c, m in f32.items()}
    table |= {c: 1.02 * table[Config("cpu:0", c.batch_size, "float32", 8)] for c in bf16}
    beside = explain_figures(figures, winner, [], rates=table)
    assert emulated_sentences(beside, "bfloat16") == []  # no sentence contradicts the table


def test_a_memory_line_never_has_a_negative_fixed_part():
    # The H200 study's bfloat16 arm: a least-squares line would put -11 MB fixed.
    points = [(256, 3.7e6), (2048, 2.4e7), (4096, 7.4e7)]
    line = fit_memory(points)
    assert (line.fixed, line.fit) == (0.0, "through zero")
    assert line.per_sample == pytest.approx(
        sum(b * m for b, m in points) / sum(b * b for b, _ in points)
    )
    assert fit_memory([(b, 5e6 + 3e3 * b) for b in (16, 64)]).fit == "least squares"

    def at(b, m):
        t = 1e-3 + b * 1e-7
        return measured("ok", "", "gpu:0", b, "float32", None, fed_step_s=t,
                        fed_step_chunk_s=(t,) * 5, peak_bytes=int(m))  # fmt: skip

    figures = {Config("gpu:0", b, "float32", None): at(b, m) for b, m in points}
    winner = figures[Config("gpu:0", 4096, "float32", None)]
    explanation = explain_figures(figures, winner, [], device_memory={"gpu:0": 2**36})
    (said,) = [s for s in explanation.sentences if s.startswith("Memory")]
    assert said.startswith(
        f"Memory on gpu:0 float32: {units.size(line.per_sample)} per sample and no fixed part "
        "(XLA's figures; a least-squares line put its fixed part below zero, so it is held at "
        "zero and the slope fitted alone)"
    )
    assert explanation.memory["fixed_bytes"] == 0.0


def test_the_devices_start_up_is_said_apart_and_counted_once_a_process():
    # One shared worker: its first GPU configuration carries the start-up; the winner
    # (measured later) pays it all the same from a fresh process, once.
    gpu = gpu_figures("bfloat16", batches=(256, 4096))
    first, winner = gpu.values()
    assert first.device_init_s == GPU_INIT and winner.device_init_s is None
    backend = SyntheticBackend(devices=("cpu:0",))
    cpu = {}
    for b in (256, 4096):
        c = Config("cpu:0", b, "float32", None)
        cpu[c] = backend.measure(MeasureRequest("m.py", "0", "synthetic", c))
    other = cpu[Config("cpu:0", 4096, "float32", None)]
    explanation = explain_figures({**gpu, **cpu}, winner, [other])
    assert explanation.device_start == {"gpu:0": GPU_INIT}
    (said,) = [s for s in explanation.sentences if s.startswith("The first call")]
    total = GPU_INIT + one_off(winner)
    assert said.startswith(
        f"The first call from a fresh process takes {units.seconds(total)} (starting gpu:0 "
        "320 ms, as every fresh process pays it once, whatever it runs; tracing and lowering "
        "50 ms, compiling 1 s, the first run 40 ms)"
    )
    (even,) = explanation.break_even
    assert even.one_off_s[0] == pytest.approx(total)  # once, not once per configuration
    assert even.device_start_s == (GPU_INIT, 0.0)
    assert "(its device's start-up, once a process; lowering, compile, first call)" in " ".join(
        explanation.sentences
    )
    # Dropped from the figures, the start-up is not counted anywhere.
    without = {c: dataclasses.replace(m, device_init_s=None) for c, m in {**gpu, **cpu}.items()}
    alone = explain_figures(without, winner, [other])
    assert alone.break_even[0].one_off_s[0] == pytest.approx(one_off(winner))
