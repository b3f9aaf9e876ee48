"""Failures that end an arm (device, precision, width) rather than cap it."""

from __future__ import annotations

import pytest
from synthetic import SyntheticBackend, bfloat16_ahead

import autoplace
from autoplace import Config, Measurement, Space
from autoplace.tuning._failures import ended_arms

SPACE = Space(("cpu:0",), (8, 16, 32, 64), ("float32", "float16"), (None,))


def failed(batch: int, status: str, reason: str = "", precision: str = "float16"):
    c = Config("cpu:0", batch, precision)
    return c, Measurement(status, reason, "cpu:0", batch, precision, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("failures", "why"),
    [
        ([failed(64, "nonfinite"), failed(32, "nonfinite")], "NaN or inf at batch 32 and 64"),
        ([failed(64, "error", "tracing and lowering the step raised TypeError: x")],
         "error at batch 64: tracing and lowering the step raised TypeError"),
        ([failed(64, "error", "building the workload raised ValueError")], "error at batch 64"),
        ([failed(8, "timeout", "no result within 300 s")], "timed out at batch 8, its smallest"),
    ],
    ids=["nonfinite twice", "trace error", "build error", "timeout at the smallest"],
)  # fmt: skip
def test_batch_free_failures_end_the_arm(failures, why):
    ended = ended_arms(dict(failures), SPACE)
    assert list(ended) == [("cpu:0", "float16", None)] and ended[("cpu:0", "float16", None)]
    assert why in ended[("cpu:0", "float16", None)]


@pytest.mark.parametrize(
    "failures",
    [
        [failed(64, "nonfinite")],  # once may be the batch's doing
        [failed(64, "oom"), failed(32, "too_big")],  # these cap the arm
        [failed(64, "timeout")],  # a timeout at a large batch caps it too
        [failed(64, "error", "running the steady-state loop raised ValueError")],
    ],
    ids=["nonfinite once", "out of memory", "timeout at a large batch", "error in the loop"],
)
def test_failures_of_one_batch_do_not_end_the_arm(failures):
    assert ended_arms(dict(failures), SPACE) == {}


def test_a_tune_stops_trying_an_arm_that_fails_whatever_the_batch(tmp_path):
    # float16 overflows at every batch size: two NaNs end it, instead of one try per batch
    def nan_at_float16(r):
        return (
            ("nonfinite", "the step produced NaN or inf")
            if r.config.precision == "float16"
            else None
        )

    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    backend = SyntheticBackend(fail=nan_at_float16)
    batches = tuple(2**i for i in range(3, 12))
    storage = f"journal:///{tmp_path / 's.log'}"
    result = autoplace.tune(
        model, batch_sizes=batches, storage=storage, out=tmp_path / "a.toml", backend=backend
    )
    tried = [r.config.batch_size for r in backend.measured if r.config.precision == "float16"]
    assert len(tried) == 2
    why = result.standing.ended[("cpu:0", "float16", 64)]
    assert why.startswith("NaN or inf at batch")
    doc = result.document
    assert doc["study"]["ended_arms"] == [
        {"device": "cpu:0", "precision": "float16", "width": 64, "reason": why}
    ]
    assert result.best.config.precision != "float16"


@pytest.mark.parametrize(
    ("status", "reason", "tries"),
    [
        ("timeout", "no result within 300 s; the worker was killed", 2),  # screen, smallest
        ("error", "tracing and lowering the step raised TypeError: float16", 1),
    ],
)
def test_an_arm_that_hangs_or_fails_to_trace_costs_one_or_two_tries(
    tmp_path, status, reason, tries
):
    def fail(r):
        return (status, reason) if r.config.precision == "bfloat16" else None

    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    backend = SyntheticBackend(fail=fail)
    result = autoplace.tune(
        model,
        batch_sizes=tuple(2**i for i in range(13)),
        precisions=("float32", "bfloat16"),
        storage=f"journal:///{tmp_path / 's.log'}",
        out=tmp_path / "a.toml",
        backend=backend,
    )
    assert [r.config.precision for r in backend.measured].count("bfloat16") == tries
    assert ("cpu:0", "bfloat16", 64) in result.standing.ended


def test_a_lower_precision_too_far_from_float32_is_never_recommended(tmp_path):
    # bfloat16 is 10% faster but its output strays 12% from float32's: the guard keeps
    # float32, and the file and the table say why; without the guard, bfloat16 wins
    def run(study, **options):
        model = tmp_path / "model.py"
        model.write_text("# synthetic\n")
        backend = SyntheticBackend(
            slowdown=bfloat16_ahead(0.10),
            deviation=lambda r: 0.12 if r.config.precision == "bfloat16" else 0.001,
        )
        return autoplace.tune(
            model,
            batch_sizes=(16, 32, 64),
            precisions=("float32", "bfloat16", "float16"),
            storage=f"journal:///{tmp_path / 's.log'}",
            study=study,
            out=tmp_path / f"{study}.toml",
            backend=backend,
            **options,
        )

    guarded = run("guarded")
    assert guarded.best.config.precision != "bfloat16"
    why = guarded.standing.inaccurate[("cpu:0", "bfloat16", 64)]
    assert why.startswith("deviates 12.0% from float32") and "over the 5.0% allowed" in why
    assert guarded.document["study"]["inaccurate_arms"][0]["precision"] == "bfloat16"
    free = run("free", max_deviation=None)
    assert free.best.config.precision == "bfloat16"


def test_over_memory_names_each_configuration_over_the_limit():
    from autoplace.tuning._failures import over_memory

    def ran(batch, peak, predicted):
        c = Config("cpu:0", batch, "float32")
        m = Measurement("ok", "", "cpu:0", batch, "float32", None, peak_bytes=peak,
                        predicted_bytes=predicted)  # fmt: skip
        return c, m

    figures = dict([ran(8, 500, 400), ran(16, None, 900), ran(32, 2000, 800), ran(64, None, None)])
    over = over_memory(figures, 896)
    assert sorted(c.batch_size for c in over) == [16, 32]  # predicted 900; measured 2000
    assert over[Config("cpu:0", 32, "float32")].startswith("needs 2.0 KiB, over the 896 B allowed")
    assert over_memory(figures, None) == {}


def test_max_memory_holds_for_what_the_study_measured_before(tmp_path):
    # An earlier tune without a limit measured everything (1000 B and more); a tune of the
    # same study with --max-memory 1B must recommend none of it (the tune picked a
    # configuration predicted to need 896 B from the study's earlier measurement).
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    options = dict(
        batch_sizes=(1, 2, 4), precisions=("float32",), storage=f"journal:///{tmp_path / 's.log'}"
    )
    first = autoplace.tune(model, out=tmp_path / "a.toml", backend=SyntheticBackend(), **options)
    assert first.best is not None and first.best.measurement.peak_bytes > 1
    limited = autoplace.tune(
        model, out=tmp_path / "b.toml", max_memory=1, backend=SyntheticBackend(memory_limit=1),
        **options,
    )  # fmt: skip
    assert limited.best is None and limited.standing.ranked == ()
    assert not (tmp_path / "b.toml").exists()
    # within a limit that some fit, only those: the largest batch needs 4000 B
    within = autoplace.tune(
        model, out=tmp_path / "c.toml", max_memory=2500, backend=SyntheticBackend(), **options
    )
    assert within.best.measurement.peak_bytes <= 2500
    assert all(s.measurement.peak_bytes <= 2500 for s in within.standing.ranked)
    # the file says what was left out
    over = within.document["study"]["over_memory"]
    assert [o["batch_size"] for o in over] == [4]
    assert "over the 2.4 KiB allowed" in over[0]["reason"]
