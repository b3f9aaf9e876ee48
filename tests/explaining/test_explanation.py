"""The explanation against a synthetic machine whose costs are known exactly.

cpu:0 launches slowly (a = 2 ms, like an accelerator's dispatch) but costs 1 µs a
sample, and its steps run 2x slower from batch 4096 on (a cache cliff); cpu:1
launches fast (0.1 ms) but costs 4 µs a sample. Their lines cross at batch
(2e-3 - 1e-4) / (4e-6 - 1e-6) = 633. cpu:0 compiles in 1 s, cpu:1 in 0.1 s. The
synthetic backend's fed loop runs 1.1x the step (so the fed line is 1.1 a + 1.1 c b).
"""

import dataclasses
import math

import pytest
from synthetic import SyntheticBackend, measured, step_time

import autoplace
from autoplace import Config, Grid
from autoplace.tuning import DEFAULT_BATCH_SIZES

FIXED = {"cpu:0": 2e-3, "cpu:1": 1e-4}
PER_SAMPLE = {"cpu:0": 1e-6, "cpu:1": 4e-6}
COMPILE = {"cpu:0": 1.0, "cpu:1": 0.1}
CLIFF = 4096
CROSSOVER = (FIXED["cpu:0"] - FIXED["cpu:1"]) / (PER_SAMPLE["cpu:1"] - PER_SAMPLE["cpu:0"])


def true_step(device: str, batch: int) -> float:
    t = FIXED[device] + PER_SAMPLE[device] * batch
    return t * (2.0 if device == "cpu:0" and batch >= CLIFF else 1.0)


def slowdown(request):
    c = request.config
    return true_step(c.device, c.batch_size) / step_time(c.device, c.batch_size, c.precision)


@pytest.fixture(scope="module")
def grid_result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explain")
    model = tmp / "m.py"
    model.write_text("# synthetic\n")
    backend = SyntheticBackend(
        devices=("cpu:0", "cpu:1"),
        slowdown=slowdown,
        turn_noise=0.03,
        compile_s=lambda r: COMPILE[r.config.device],
    )
    return autoplace.tune(
        model,
        batch_sizes=DEFAULT_BATCH_SIZES,
        devices=("cpu:0", "cpu:1"),
        precisions=("float32",),
        storage=f"journal:///{tmp / 's.log'}",
        out=tmp / "autoplace.toml",
        backend=backend,
        strategy=Grid(),
    )


def arm(result, device):
    return result.explanation.models[(device, "float32", 64)]


@pytest.mark.parametrize("device", ["cpu:0", "cpu:1"])
@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_fixed_and_per_sample_costs_within_ten_percent(grid_result, device):
    line = arm(grid_result, device).fed
    assert line.fixed == pytest.approx(1.1 * FIXED[device], rel=0.10)
    assert line.per_sample == pytest.approx(1.1 * PER_SAMPLE[device], rel=0.10)


def test_the_cliff_is_found_where_it_starts(grid_result):
    assert arm(grid_result, "cpu:0").fed.departs_at == CLIFF
    assert arm(grid_result, "cpu:1").fed.departs_at is None


def test_the_crossover_within_a_power_of_two(grid_result):
    (x,) = grid_result.explanation.crossovers
    assert x.faster.startswith("cpu:0")  # the cheaper sample wins above the crossover
    assert CROSSOVER / 2 <= x.above <= CROSSOVER * 2
    assert any(f"Above batch {x.above:.0f}" in s for s in grid_result.explanation.sentences)


def test_the_compile_break_even_within_twenty_percent(grid_result):
    (even,) = grid_result.explanation.break_even
    win = grid_result.best.measurement
    other = grid_result.standing.per_group[1].measurement
    assert even.slow_start == Config(win.device, win.batch_size, "float32", 64).label()

    def truth(m):  # one-off and per-sample seconds of the synthetic machine
        one_off = 0.01 + COMPILE[m.device] + 0.002
        return one_off, 1.1 * true_step(m.device, m.batch_size) / m.batch_size

    (o1, p1), (o2, p2) = truth(win), truth(other)
    assert even.samples == pytest.approx((o1 - o2) / (p2 - p1), rel=0.20)


def test_run_length_picks_follow_the_break_even(grid_result):
    picks = grid_result.explanation.run_lengths
    assert picks["short"]["pick"].startswith("cpu:1")  # the fast compile wins a short run
    assert picks["long"]["pick"].startswith("cpu:0")


def test_the_file_holds_the_explanation_and_reads_back(grid_result):
    doc = autoplace.recommendation.read(grid_result.out)
    assert doc["schema_version"] == autoplace.recommendation.SCHEMA_VERSION == 4
    section = doc["explanation"]
    assert section["sentences"] == list(grid_result.explanation.sentences)
    fitted = {(a["device"], a["precision"]): a for a in section["arms"]}
    assert math.isclose(
        fitted[("cpu:1", "float32")]["fed"]["per_sample_s"],
        arm(grid_result, "cpu:1").fed.per_sample,
    )


def test_explain_reads_the_same_from_the_file(grid_result):
    again = autoplace.explain(grid_result.out)
    assert again.sentences == grid_result.explanation.sentences


def test_the_verdict_comes_first(grid_result):
    first = grid_result.explanation.sentences[0]
    assert first.startswith(grid_result.best.config.label() + " wins")


def _arm(precision, fixed, per_sample, batches, cliff=None):
    """Measurements of one arm on cpu:0 (width 8) whose fed step is ``fixed + per_sample·b``,
    three times slower from batch ``cliff`` on."""
    out = {}
    for b in batches:
        t = (fixed + per_sample * b) * (3.0 if cliff is not None and b >= cliff else 1.0)
        c = Config("cpu:0", b, precision, 8)
        out[c] = measured(
            "ok", "", "cpu:0", b, precision, 8, fed_step_s=t, fed_step_spread=0.01,
            fed_samples_per_s=b / t, fed_step_chunk_s=(t,) * 5,
        )  # fmt: skip
    return out


def test_no_sentence_says_ahead_beside_figures_that_show_the_opposite():
    # float16 starts cheap (0.1 ms a step) but its line holds only up to batch 64 (3x slower
    # from 128); bfloat16 costs 0.5 ms a step but half float16's per sample, to batch 512.
    # Where both lines hold (8 to 64) float16 is ahead; at their best batches bfloat16 runs
    # 1.7x as fast. A sentence must not leave the reader with the first half only.
    from autoplace.explaining import explain_figures

    f16 = _arm("float16", 1e-4, 1e-6, (8, 16, 32, 64, 128, 256), cliff=128)
    bf16 = _arm("bfloat16", 5e-4, 0.5e-6, (8, 16, 32, 64, 128, 256, 512))
    figures = {**f16, **bf16}
    winner, other = (
        f16[Config("cpu:0", 64, "float16", 8)],
        bf16[Config("cpu:0", 512, "bfloat16", 8)],
    )
    explanation = explain_figures(figures, winner, [other])
    (x,) = explanation.crossovers
    assert (x.low, x.high, x.above) == (8, 64, None)
    (sentence,) = [s for s in explanation.sentences if "keeps ahead" in s]
    assert sentence.startswith("cpu:0 float16 width 8 keeps ahead of cpu:0 bfloat16 width 8 from")
    ratio = (winner.fed.step_s / 64) / (other.fed.step_s / 512)  # per sample, best to best
    assert (
        f"at their best batches, cpu:0 bfloat16 width 8 (batch 512) runs {ratio:.2f}x as fast "
        "as cpu:0 float16 width 8 (batch 64)"
    ) in sentence
    assert "measured" not in sentence  # the measurements agree with the lines where both hold


def test_the_emulated_sentence_names_the_width():
    from autoplace.explaining import explain_figures

    f32 = _steady_arm("float32", 1e-4, 1e-6, (8, 16))
    bf16 = _steady_arm("bfloat16", 1e-4, 3e-6, (8, 16))
    explanation = explain_figures({**f32, **bf16}, f32[Config("cpu:0", 16, "float32", 8)], [])
    (sentence,) = [s for s in explanation.sentences if "emulated" in s]
    assert sentence.startswith("bfloat16 is emulated on cpu:0 width 8: ")
    assert "float32's time per sample with the batch on the device" in sentence
    assert "unknown" not in sentence  # no dtypes known: none named


def _steady_arm(precision, fixed, per_sample, batches, flops_per_sample=2e5):
    """An arm whose steady step is ``fixed + per_sample·b``, with XLA's FLOPs and bytes."""
    out = {}
    for b in batches:
        t = fixed + per_sample * b
        c = Config("cpu:0", b, precision, 8)
        out[c] = measured(
            "ok", "", "cpu:0", b, precision, 8, step_s=t, step_spread=0.01, step_samples=5,
            step_chunk_s=(t,) * 5, fed_step_s=t, fed_step_spread=0.01, fed_samples_per_s=b / t,
            fed_step_chunk_s=(t,) * 5, flops=flops_per_sample * b, bytes_accessed=1e4 * b,
        )  # fmt: skip
    return out


def test_with_the_machines_limits_each_arm_stands_against_them_in_numbers():
    from autoplace.explaining import explain_figures
    from autoplace.limits import DeviceLimits, Figure, MachineLimits

    device = DeviceLimits(
        "cpu:0", "cpu", {"float32": Figure.of([1e11]), "bfloat16": Figure.of([5e10])}, 1024,
        Figure.of([1e10]), Figure.of([5e9]), Figure.of([1e-5]),
    )  # fmt: skip
    limits = MachineLimits((device,), {}, "2026-11-25T05:00:00+00:00")
    f32 = _steady_arm("float32", 6e-4, 1e-6, (8, 16, 32, 64))
    bf16 = _steady_arm("bfloat16", 6e-4, 2e-6, (8, 16, 32, 64))
    winner = f32[Config("cpu:0", 32, "float32", 8)]
    other = bf16[Config("cpu:0", 32, "bfloat16", 8)]
    explanation = explain_figures({**f32, **bf16}, winner, [other], limits=limits)
    mine, theirs = explanation.rooflines
    assert (mine.config, theirs.config) == (winner_config := Config("cpu:0", 32, "float32", 8),
                                            Config("cpu:0", 32, "bfloat16", 8))  # fmt: skip
    step = 6e-4 + 32e-6
    assert mine.flops_per_s == pytest.approx(2e5 * 32 / step)
    assert mine.fixed_s == pytest.approx(6e-4, rel=0.01) and mine.regime == "overhead-bound"
    said = [s for s in explanation.sentences if s.startswith("At batch 32")]
    assert (
        said == [mine.sentence("cpu")] and "overhead-bound (the fixed 600 µs of a 632 µs" in said[0]
    )
    assert explanation.as_dict()["roofline"][0]["regime"] == "overhead-bound"
    assert winner_config.label() in explanation.winner
    without = explain_figures({**f32, **bf16}, winner, [other])
    assert without.rooflines == () and "autoplace limits" in without.sentences[-1]
    assert not any("autoplace limits" in s for s in explanation.sentences)


def _cliff_arm(flops_at, bytes_at=None):
    """cpu:0 float32 width 8: a line to batch 256, three times slower from 512, with XLA's
    FLOPs (and bytes) of each batch from ``flops_at(b)`` (``bytes_at(b)``)."""
    out = _arm("float32", 1e-4, 1e-6, (16, 32, 64, 128, 256, 512), cliff=512)
    return {
        c: dataclasses.replace(
            m,
            flops=flops_at(c.batch_size),
            bytes_accessed=bytes_at(c.batch_size) if bytes_at else None,
        )
        for c, m in out.items()
    }


@pytest.mark.parametrize(
    ("flops_at", "bytes_at", "said"),
    [
        (lambda b: 1e6 * b * (12 if b >= 512 else 1), None,
         "the program changed: XLA counts 12.00x the FLOPs per sample at batch 512 as at 256"),
        (lambda b: 1e6 * b, lambda b: 1e4 * b, "the memory hierarchy, caches outgrown"),
        (lambda b: 1e6 * b, None, "the cause is not in the figures"),
        (lambda b: None, None, "the cause is not in the figures: XLA gave no FLOPs"),
    ],
)  # fmt: skip
def test_a_cliff_is_explained_from_xlas_figures_or_said_to_be_unexplained(flops_at, bytes_at, said):
    from autoplace.explaining import explain_figures

    figures = _cliff_arm(flops_at, bytes_at)
    winner = figures[Config("cpu:0", 256, "float32", 8)]
    (sentence,) = [s for s in explain_figures(figures, winner, []).sentences if "at batch 512" in s]
    assert said in sentence and "caches outgrown, memory pressure" not in sentence


def feeding_sentence(**figures):
    from autoplace.explaining import explain_figures

    c = Config("cpu:0", 32, "float32", None)
    m = measured(status="ok", reason="", device="cpu:0", batch_size=32,
                              precision="float32", width=None, batch_bytes=100_352,
                              **figures)  # fmt: skip
    sentences = explain_figures({c: m}, m, []).sentences
    (found,) = [s for s in sentences if s.startswith(("One put", "Putting"))]
    return found


def test_a_put_timed_alone_bounds_the_feeding_share_and_claims_no_gain():
    # A 98 KiB put alone took 141 us of a 142 us fed step (timed alone, it cannot overlap a
    # step as it does in the loop): the share is at most that, and nothing is promised.
    said = feeding_sentence(fed_step_s=142e-6, transfer_s=141e-6, step_s=90e-6, step_samples=1)
    assert "up to 99.3% of the 142 µs fed step" in said
    assert "x (" not in said and "so what either gains is not known" in said


def test_both_loops_timed_give_the_feeding_share_and_the_gain_on_the_device():
    said = feeding_sentence(fed_step_s=142e-6, transfer_s=141e-6, step_s=100e-6, step_samples=5)
    assert "takes 29.6% of the 142 µs step" in said
    assert "with the data on the device, 1.4x (142 µs → 100 µs a step)" in said
