"""``autoplace explain`` of the shared H200 study (tests/data/h200/, copied from
``../shared/gpu-reference/h200-2026-11-26/``): the causes it names are the figures'.

Its pick, gpu:0 bfloat16 at 4096, has a fed line of a fixed 451 µs plus 0.147 µs a
sample, which autoplace at ``a738151`` called "(dispatch, launch, loop overhead)"; the put
timed alone costs a fixed 328 µs of it, and that machine's dispatch floor is 41.6 µs.
"""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import autoplace
from autoplace.cli import app
from autoplace.limits import MachineLimits

DATA = Path(__file__).parent.parent / "data" / "h200"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The recommendation file, naming its study's copy in a folder of its own."""
    tmp_path = tmp_path_factory.mktemp("h200")
    shutil.copy(DATA / "studies.db", tmp_path / "studies.db")
    text = (DATA / "mlp.toml").read_text()
    assert "sqlite:////tmp/r/studies.db" in text
    out = tmp_path / "mlp.toml"
    out.write_text(text.replace("sqlite:////tmp/r/studies.db", f"sqlite:///{tmp_path}/studies.db"))
    return out


@pytest.fixture
def h200_limits(monkeypatch):
    """That machine's limits, as this machine's cache would give them had it measured them
    there (``explain`` places a study only against limits of the same hardware)."""
    limits = MachineLimits.from_dict(json.loads((DATA / "limits.json").read_text()), cached=True)
    monkeypatch.setattr("autoplace.tuning._explain.cached_limits", lambda *a, **k: limits)
    return limits


@pytest.fixture(scope="module")
def sentences(study):
    """``autoplace explain`` of it, here (whose cache holds no limits)."""
    return autoplace.explain(study).sentences


def fixed_sentence(sentences):
    (said,) = [s for s in sentences if "a step costs a fixed 451 µs" in s]
    return said


def test_the_451_us_fixed_cost_is_the_put_not_dispatch(sentences):
    said = fixed_sentence(sentences)
    assert said.startswith(
        "On gpu:0 bfloat16 width 128, a step costs a fixed 451 µs (putting the batch on the "
        "device: a put timed alone costs a fixed 328 µs, 73% of it) plus 0.147 µs per sample"
    )
    assert "dispatch" not in said


def test_with_that_machines_limits_too(study, h200_limits):
    placed = autoplace.explain(study).sentences
    said = fixed_sentence(placed)
    assert "(putting the batch on the device: a put timed alone" in said
    assert "dispatch" not in said
    # Its CPU's bfloat16 peak is 2.15x float32's: not emulated; float16's is 0.86x.
    assert not any(s.startswith("bfloat16 is emulated on cpu:0") for s in placed)
    assert any(
        s.startswith("float16 is emulated on cpu:0: its measured peak is 0.86x float32's")
        for s in placed
    )
    assert any(s.startswith("At batch 4096 the step reaches") for s in placed)  # placed


def test_no_precision_is_called_emulated_from_fed_steps_and_memory_is_never_negative(sentences):
    assert not any("emulated" in s for s in sentences)  # no peaks, no step timed
    assert any(
        s.startswith("bfloat16 runs 1.15x float32's time per sample on cpu:0") for s in sentences
    )
    (memory,) = [s for s in sentences if s.startswith("Memory on gpu:0")]
    assert memory.startswith(
        "Memory on gpu:0 bfloat16 width 128: 15.2 KiB per sample and no fixed part"
    )
    assert "-" not in memory.split(":")[1]


def test_the_feeding_sentence_claims_no_share_the_put_cannot_give(sentences):
    (said,) = [s for s in sentences if s.startswith("One put of a 6.1 MiB batch")]
    assert "longer than the whole 1.05 ms fed step" in said and "100.0%" not in said


def test_the_cli_says_the_same(study):
    result = CliRunner().invoke(app, ["explain", str(study)], terminal_width=400)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "a step costs a fixed 451 µs (putting the batch on the device" in text
    assert "(dispatch, launch, loop overhead)" not in text


@pytest.fixture(scope="module")
def vgg(study):
    """``autoplace explain`` of the same database's VGG study, from its model file."""
    return autoplace.explain(
        Path(__file__).parents[2] / "studies" / "vgg_predict.py",
        "vgg",
        storage=f"sqlite:///{study.parent / 'studies.db'}",
        study="vgg-throughput-2585099e-a18716df89",
    ).sentences


def test_a_compile_timed_side_by_side_says_so(vgg, sentences):
    """That autoplace compiled a group's GPU steps side by side: its pick's 10.5 s was
    one of three compiled together (trials 98-100; 1.03 s, 10.4 s, 10.5 s), against
    0.78 s alone in a plain loop (``plain/cf_alone.json``). The study has no compile of
    it alone, and says so."""
    (first,) = [s for s in vgg if s.startswith("The first call from a fresh process")]
    assert first.startswith("The first call from a fresh process takes 10.5 s (")
    assert first.endswith(
        "That compile of 10.5 s was timed side by side with 2 other steps for gpu:0, as "
        "autoplace compiled an accelerator's steps before it compiled them one at a time; "
        "each slows the others' (XLA's autotuner times kernels on the device as it "
        "compiles), so it overstates a compile alone: the study has no compile of this "
        "configuration alone."
    )
    evens = [s for s in vgg if " starts " in s and " later (" in s]
    assert evens and all(
        s.endswith(
            "its compile figure was timed side by side with others, which overstates how "
            "much later it starts."
        )
        for s in evens
    )
    # The README MLP's pick compiled alone on the GPU (trial 18, 1.54 s; its windows read
    # that figure back): nothing to say.
    (mlp,) = [s for s in sentences if s.startswith("The first call from a fresh process")]
    assert "compiling 1.54 s" in mlp and "side by side" not in mlp
    assert not any("side by side" in s for s in sentences)
