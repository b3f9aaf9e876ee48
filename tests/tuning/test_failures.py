"""Failures that end an arm (device, precision, width) rather than cap it."""

from __future__ import annotations

import pytest
from synthetic import SyntheticBackend, bfloat16_ahead, measured

import autoplace
from autoplace import Config, Space
from autoplace.tuning._failures import arm_bounds, ended_arms

SPACE = Space(("cpu:0",), (8, 16, 32, 64), ("float32", "float16"), (None,))


def failed(batch: int, status: str, reason: str = "", precision: str = "float16"):
    c = Config("cpu:0", batch, precision)
    return c, measured(status, reason, "cpu:0", batch, precision, None)  # type: ignore[arg-type]


def ran(batch: int, precision: str = "float16"):
    c = Config("cpu:0", batch, precision)
    return c, measured("ok", "", "cpu:0", batch, precision, None)


@pytest.mark.parametrize(
    ("failures", "why"),
    [
        ([failed(8, "nonfinite"), failed(32, "nonfinite")], "NaN or inf at batch 8 and 32"),
        ([failed(8, "error", "tracing and lowering the step raised TypeError: x"),
          failed(64, "error", "tracing and lowering the step raised TypeError: x")],
         "an error at batch 8 and 64, across its range: tracing and lowering"),
        ([failed(8, "timeout", "no result within 300 s"), failed(32, "timeout")],
         "timed out at batch 8 and 32"),
    ],
    ids=["nonfinite", "trace error", "timeout"],
)  # fmt: skip
def test_failures_across_the_range_end_the_arm(failures, why):
    ended = ended_arms(dict(failures), SPACE)
    assert list(ended) == [("cpu:0", "float16", None)]
    assert why in ended[("cpu:0", "float16", None)]


@pytest.mark.parametrize(
    "failures",
    [
        [failed(64, "nonfinite"), failed(32, "nonfinite")],  # the large end only
        [failed(8, "nonfinite"), failed(16, "nonfinite"), ran(32)],  # tiny batches: BatchNorm
        [failed(64, "oom"), failed(32, "too_big"), ran(8)],  # these cap the arm
        [failed(64, "error", "tracing and lowering the step raised TypeError: x"), ran(8)],
        [failed(8, "timeout")],  # the small end only: the screen has yet to say
    ],
    ids=["large end", "tiny batches", "out of memory", "an error only large batches meet",
         "timeout at the smallest"],
)  # fmt: skip
def test_failures_that_depend_on_the_batch_size_do_not_end_the_arm(failures):
    assert ended_arms(dict(failures), SPACE) == {}


@pytest.mark.parametrize(
    ("ran_at", "failed_at", "bounds"),
    [
        ([], [256], (None, 256)),  # no batch ran: a ceiling (the search goes down)
        ([256], [1, 4], (4, None)),  # below a batch that ran: a floor (the search goes up)
        ([16, 256], [1, 8, 1024], (8, 1024)),
        ([4, 16], [8], (8, None)),  # between two that ran: a floor, where it is unreliable
    ],
)
def test_a_failure_is_a_floor_below_a_batch_that_ran_and_a_ceiling_otherwise(
    ran_at, failed_at, bounds
):
    assert arm_bounds(ran_at, failed_at) == bounds


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
    assert why.startswith("NaN or inf at batch") and "across its range" in why
    doc = result.document
    assert doc["study"]["ended_arms"] == [
        {"device": "cpu:0", "precision": "float16", "width": 64, "reason": why}
    ]
    assert result.best.config.precision != "float16"


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("timeout", "no result within 300 s; the worker was killed"),
        ("error", "tracing and lowering the step raised TypeError: float16"),
    ],
)
def test_an_arm_that_hangs_or_fails_to_trace_everywhere_costs_two_tries(tmp_path, status, reason):
    def fail(r):
        return (status, reason) if r.config.precision == "bfloat16" else None

    result, backend = tune(tmp_path, fail, tuple(2**i for i in range(13)))
    assert [r.config.precision for r in backend.measured].count("bfloat16") == 2  # screen, 1
    assert ("cpu:0", "bfloat16", 64) in result.standing.ended


def tune(tmp_path, fail, batches, precisions=("float32", "bfloat16")):
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    backend = SyntheticBackend(fail=fail)
    result = autoplace.tune(
        model,
        batch_sizes=batches,
        precisions=precisions,
        storage=f"journal:///{tmp_path / 's.log'}",
        out=tmp_path / "a.toml",
        backend=backend,
    )
    return result, backend


def test_non_finite_tiny_batches_bound_the_search_from_below_and_end_no_arm(tmp_path):
    # BatchNorm over a batch of 1 to 4 goes non-finite, as it does in every precision; from
    # 8 up it trains. The tune searches above and recommends in range, never ending an arm.
    def batchnorm(r):
        return ("nonfinite", "the step produced NaN or inf") if r.config.batch_size <= 4 else None

    batches = tuple(2**i for i in range(11))
    result, backend = tune(tmp_path, batchnorm, batches, ("float32", "bfloat16", "float16"))
    assert result.standing.ended == {}
    assert result.best is not None and result.best.confirmed
    assert result.best.config.batch_size >= 8
    tiny = [r.config.batch_size for r in backend.measured if r.config.batch_size <= 4]
    assert len(tiny) <= 3  # the cover's smallest steps, then none below its floor


def test_an_error_only_large_batches_meet_bounds_the_search_from_above(tmp_path):
    # every batch from 64 up fails: the screen (at 256) fails, the search goes down
    def large(r):
        return (
            ("error", "running the steady-state loop raised ValueError: too large")
            if (r.config.batch_size >= 64)
            else None
        )

    result, backend = tune(tmp_path, large, tuple(2**i for i in range(11)))
    assert result.best is not None and result.best.config.batch_size == 32
    assert result.standing.ended == {}
    tried = {r.config.batch_size for r in backend.measured}
    assert 16 in tried and 32 in tried and max(b for b in tried if b < 64) == 32


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
        m = measured("ok", "", "cpu:0", batch, "float32", None, peak_bytes=peak,
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
