"""``autoplace.recommend``: cache, study, tune, fallback; stale answers; the caller's
limits; damaged and unwritable caches; two processes at once. The tuner runs on the
synthetic backend (known answers, milliseconds); the worker-free cached path is checked in
a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import optuna
import pytest
from conftest import REPO
from synthetic import SyntheticBackend

import autoplace
from autoplace import NoAnswerError
from autoplace.host import CacheWarning
from autoplace.recommending import remember

SPACE = {"batch_sizes": (8, 64, 512), "precisions": ("float32", "bfloat16"), "confirm": 2}
#: The whole default space: what a look-up that narrows nothing asks.
WHOLE = {"confirm": 2}


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A model file, an empty cache, and recommend() bound to them."""
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    cache = tmp_path / "cache"
    monkeypatch.chdir(tmp_path)

    def recommend(**kwargs):
        options = {"cache_dir": cache, "backend": SyntheticBackend(), "tune_options": SPACE}
        options.update(kwargs)
        return autoplace.recommend(model, **options)

    recommend.model, recommend.cache = model, cache
    return recommend


def entry_of(cache: Path) -> tuple[Path, dict]:
    [path] = list((cache / "answers").glob("*.json"))
    return path, json.loads(path.read_text())


def test_a_miss_tunes_once_then_the_cache_answers_exactly(env):
    tuned = env()
    assert tuned.source == "tuned" and tuned.exact and tuned.score > 0
    # the synthetic model's best: the largest batch, bfloat16 (cheaper per sample)
    assert (tuned.device, tuned.batch_size, tuned.precision) == ("cpu:0", 512, "bfloat16")
    again = env(on_miss="raise")
    assert again.source == "cache" and again.exact and again.key == tuned.key
    assert (again.device, again.batch_size, again.precision, again.width) == (
        tuned.device, tuned.batch_size, tuned.precision, tuned.width,
    )  # fmt: skip
    assert again.measured_at == tuned.measured_at and again.why == tuned.why != ""
    assert again.step_s == tuned.step_s and again.compile_s == tuned.compile_s
    # the synthetic model's runner-up is over 20% behind in the search: not a finalist, never
    # timed beside the pick in windows, so no ratio to it is claimed
    assert tuned.ratio is None and again.verdict == tuned.verdict is None
    assert "runner-up" not in tuned.log_line()


def test_a_miss_under_each_policy(env):
    with pytest.raises(NoAnswerError, match="nothing cached or stored") as info:
        env(on_miss="raise")
    assert "autoplace recommend" in str(info.value) and "\n" not in str(info.value)
    safest = env(on_miss="fallback")
    assert (safest.source, safest.device, safest.precision, safest.batch_size) == (
        "fallback", "cpu:0", "float32", 32,
    )  # fmt: skip
    assert not safest.exact and safest.score is None and "nothing cached" in safest.stale_reason
    given = env(on_miss="fallback", fallback={"device": "cpu:0", "batch_size": 4}, max_batch_size=8)
    assert (given.batch_size, given.precision) == (4, "float32")
    assert env(on_miss="fallback", max_batch_size=8).batch_size == 8
    assert not (env.cache / "answers").exists()  # a fallback is never cached


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_stale_by_software_is_used_marked_or_retuned_or_refused(env, monkeypatch):
    import autoplace.recommending._key as module  # where a look-up's key reads the versions

    first = env()
    real = module.software()
    monkeypatch.setattr(module, "software", lambda: {**real, "jaxlib": "9.9.9"})  # an upgrade
    stale = env(on_miss="raise")
    assert stale.source == "cache" and not stale.exact
    assert stale.stale_reason == f"jaxlib {real['jaxlib']} → 9.9.9"
    assert (stale.batch_size, stale.precision) == (first.batch_size, first.precision)
    with pytest.raises(NoAnswerError, match=r"stale \(jaxlib"):
        env(on_stale="raise")
    retuned = env(on_stale="retune")
    assert retuned.source == "tuned" and retuned.exact
    assert env(on_miss="raise").exact  # the cache holds the new answer


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_version_edited_in_the_cache_reads_as_stale(env):
    # what a user does to try it: the cached answer's jaxlib is no longer this machine's
    env()
    path, entry = entry_of(env.cache)
    entry["key"]["software"]["jaxlib"] = "0.0.1"
    path.write_text(json.dumps(entry))
    stale = env(on_miss="raise")
    assert stale.source == "cache" and stale.stale_reason.startswith("jaxlib 0.0.1 → ")


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_stale_by_age(env):
    env()
    old = env(max_age=0.0)
    assert old.source == "cache" and "over max_age 0 s" in old.stale_reason
    assert env(max_age=3600.0).exact


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_changed_model_file_is_a_miss_that_says_so(env):
    env()
    env.model.write_text("# synthetic, edited\n")
    fallback = env(on_miss="fallback")
    assert fallback.source == "fallback"
    assert fallback.stale_reason.startswith("model file changed since it was measured")
    with pytest.raises(NoAnswerError, match="model file changed"):
        env(on_miss="raise")
    assert env().source == "tuned"


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_another_machine_with_the_same_hardware_answers_through_the_study(
    env, tmp_path, monkeypatch
):
    import autoplace.host._identity as identity  # where a study's fingerprint reads the host name

    url = f"sqlite:///{tmp_path / 'team.db'}"
    with monkeypatch.context() as m:
        m.setattr(identity.socket, "gethostname", lambda: "another-host")
        result = autoplace.tune(env.model, storage=url, out=None, backend=SyntheticBackend(),
                                **SPACE)  # fmt: skip
    assert result.answer.measured_on == "another-host"
    backend = SyntheticBackend()
    shared = env(storage=url, on_miss="raise", backend=backend)
    assert shared.source == "study" and shared.exact and backend.measured == []
    assert (shared.batch_size, shared.precision) == (
        result.best.config.batch_size, result.best.config.precision,
    )  # fmt: skip
    assert env(on_miss="raise").source == "cache"  # cached on the way
    # other hardware is a miss, not a stale answer
    two = SyntheticBackend(devices=("cpu:0", "cpu:1"))
    with pytest.raises(NoAnswerError):
        env(storage=url, on_miss="raise", backend=two)


def test_limits_pick_among_the_measured_without_measuring(env):
    best = env()
    path, entry = entry_of(env.cache)
    backend = SyntheticBackend()
    capped = env(max_batch_size=100, on_miss="raise", backend=backend)
    assert capped.batch_size == 64 and backend.measured == []
    assert capped.margin is None and any("over 100 left out" in n for n in capped.limits)
    # a device with little memory: only batch 8's measured peak leaves half of it free
    peaks = {c["batch_size"]: c["peak_bytes"] for c in entry["answer"]["candidates"]}
    assert peaks[8] < peaks[64] < peaks[512]
    entry["answer"]["device_memory"] = {"cpu:0": 2 * peaks[8]}
    path.write_text(json.dumps(entry))
    tight = env(memory_margin=0.5, on_miss="raise")
    assert tight.batch_size == 8
    assert "leaves 50% of cpu:0's" in tight.limits[0] and "margin asked: 50%" in tight.limits[0]
    entry["answer"]["device_memory"] = {"cpu:0": 2**34}
    for c in entry["answer"]["candidates"]:
        c["deviation_vs_float32"] = 0.05 if c["precision"] == "bfloat16" else 0.0
    path.write_text(json.dumps(entry))
    assert env(on_miss="raise").precision == best.precision == "bfloat16"
    strict = env(max_deviation=0.01, on_miss="raise")
    assert strict.precision == "float32" and strict.batch_size == 512
    # a candidate its tune never compared with float32 strays as far as its arm's others
    bf16 = [c for c in entry["answer"]["candidates"] if c["precision"] == "bfloat16"]
    for c in bf16[:1]:
        c["deviation_vs_float32"] = None
    path.write_text(json.dumps(entry))
    assert env(max_deviation=0.01, on_miss="raise").precision == "float32"


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_damaged_cache_file_is_ignored_with_a_warning_then_refilled(env):
    env()
    path, _ = entry_of(env.cache)
    path.write_text('{"entry_schema": 1, "key": ')
    backend = SyntheticBackend()
    with pytest.warns(CacheWarning, match="damaged cache file"):
        again = env(backend=backend)
    assert again.source == "study" and backend.measured == []  # from the study beside it
    assert env(on_miss="raise").source == "cache"  # and the file is whole again
    assert "answer" in entry_of(env.cache)[1]


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_cache_file_of_valid_json_but_no_answer_is_ignored_too(env):
    env()
    path, entry = entry_of(env.cache)
    entry["answer"]["candidates"] = [{"device": "cpu:0"}]  # cut short: no batch size
    path.write_text(json.dumps(entry))
    with pytest.warns(CacheWarning, match="damaged cache file"):
        assert env().source == "study"


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_an_unwritable_cache_works_without_caching_and_says_so_once(env, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    import warnings

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        first = env(cache_dir=blocker / "cache")
        second = env(cache_dir=blocker / "cache")
    # the first tuned into the command line's default study (studies/autoplace.db here), where
    # the second finds its answer without tuning again
    assert (first.source, second.source) == ("tuned", "study")
    lines = [str(w.message) for w in said if w.category is CacheWarning]
    assert (
        len(lines) == 1 and "going on without caching" in lines[0] and "AUTOPLACE_CACHE" in lines[0]
    )


def test_a_fallback_for_a_width_the_file_does_not_declare_is_refused_as_a_tune_would_be(env):
    # the synthetic file declares widths 64 and 128
    assert env(on_miss="fallback", widths=(128,)).source == "fallback"
    for policy in ("fallback", "tune"):
        with pytest.raises(autoplace.BadInputError, match="width 7 is not one the model file"):
            env(on_miss=policy, widths=(7,))
    assert not (env.cache / "answers").exists()


def test_bad_options_are_one_line(env):
    for kwargs, fragment in (
        ({"on_miss": "maybe"}, r"--on-miss \(on_miss in Python\) must be one of"),
        ({"memory_margin": 1.5}, "memory_margin"),
        ({"max_batch_size": 0}, "max_batch_size"),
        ({"objective": "speed"}, "unknown objective"),
        ({"objective": "time-to-finish"}, "run length"),
    ):
        with pytest.raises(autoplace.BadInputError, match=fragment):
            env(**kwargs)


_TWO_AT_ONCE = """
import json, pathlib, sys, time
sys.path.insert(0, {tests!r})
from synthetic import SyntheticBackend
import autoplace

here = pathlib.Path.cwd()

class Held(SyntheticBackend):
    # The tune that measures says so, then measures only once the test lets it go on.
    def measure_together(self, requests, on_progress=None):
        (here / "tuning").touch()
        while not (here / "go").exists():
            time.sleep(0.01)
        return super().measure_together(requests)

r = autoplace.recommend({model!r}, cache_dir={cache!r}, backend=Held(),
                        tune_options={space!r}, storage={url!r},
                        on_wait=lambda line: print(line, file=sys.stderr, flush=True))
print(json.dumps(r.as_dict()))
"""


@pytest.mark.slow
def test_two_processes_at_once_one_tunes_the_other_waits_for_its_answer(env, tmp_path):
    # The first holds its tune until the second says it waits: no clock decides the order.
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    code = _TWO_AT_ONCE.format(
        tests=str(REPO / "tests"), model=str(env.model), cache=str(env.cache), space=SPACE, url=url
    )
    run = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "cwd": tmp_path}
    first = subprocess.Popen([sys.executable, "-c", code], **run)
    while not (tmp_path / "tuning").exists():
        assert first.poll() is None, first.communicate()
        time.sleep(0.01)
    second = subprocess.Popen([sys.executable, "-c", code], **run)
    heard = second.stderr.readline()  # blocks until it waits for the first (or ends)
    (tmp_path / "go").touch()
    outs = [p.communicate(timeout=600) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], [o[1] for o in outs]
    answers = [json.loads(o[0]) for o in outs]
    assert [a["source"] for a in answers] == ["tuned", "cache"]
    assert "for another process tuning this model" in heard  # it waited, it did not tune
    picks = {(a["device"], a["batch_size"], a["precision"], a["width"]) for a in answers}
    assert len(picks) == 1
    study = optuna.load_study(study_name=optuna.get_all_study_names(url)[0], storage=url)
    searched = [
        t.user_attrs["config"]
        for t in study.trials
        if t.user_attrs.get("phase") == "search" and not t.user_attrs.get("reference")
    ]
    assert len(searched) == len(set(searched))  # nothing measured twice


@pytest.mark.slow
def test_a_cached_look_up_imports_neither_jax_nor_optuna_nor_numpy(env):
    from autoplace.host import Cache
    from autoplace.host._machine import probe, probe_key

    env()
    # this machine's devices as the synthetic backend reports them, cached under this
    # machine's probe: what the first look-up with a worker would have left
    Cache(env.cache).write(
        Cache(env.cache).machine_path(probe_key(probe())),
        {"devices": [d.__dict__ for d in SyntheticBackend().devices()]},
    )
    code = textwrap.dedent(f"""
        import sys, autoplace
        r = autoplace.recommend({str(env.model)!r}, cache_dir={str(env.cache)!r}, on_miss="raise",
                               tune_options={SPACE!r})
        print(r.source, *sorted(m for m in ("jax", "optuna", "numpy") if m in sys.modules))
    """)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environment, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cache"]


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_the_command_line_prints_env_json_and_one_line_errors(env, monkeypatch, capsys):
    from test_cli import run_cli

    from autoplace.host import Cache
    from autoplace.host._machine import probe, probe_key

    tuned = env(tune_options=WHOLE)  # what the command line asks
    cache = Cache(env.cache)
    cache.write(
        cache.machine_path(probe_key(probe())),
        {"devices": [d.__dict__ for d in SyntheticBackend().devices()]},
    )
    monkeypatch.setenv("AUTOPLACE_CACHE", str(env.cache))
    code, out, _ = run_cli(capsys, "recommend", str(env.model), "--format", "env")
    assert code == 0
    assert out.splitlines()[:6] == [
        "AUTOPLACE_DEVICE=cpu:0",
        "AUTOPLACE_DEVICE_COUNT=1",
        f"AUTOPLACE_PER_DEVICE_BATCH={tuned.batch_size}",
        f"AUTOPLACE_BATCH_SIZE={tuned.batch_size}",
        f"AUTOPLACE_PRECISION={tuned.precision}",
        f"AUTOPLACE_STEPS_PER_CALL={tuned.steps_per_call}",
    ]
    code, out, _ = run_cli(capsys, "recommend", str(env.model), "--json", "--max-batch-size", "64")
    shown = json.loads(out)
    assert code == 0 and shown["batch_size"] == 64 and shown["source"] == "cache"
    code, out, err = run_cli(
        capsys, "recommend", str(env.model), "--objective", "latency", "--on-miss", "raise"
    )
    assert code == 1 and out == "" and len(err.splitlines()) == 1
    assert "to fill the cache" in err and "Traceback" not in err
    code, out, _ = run_cli(capsys, "cache", "list")
    assert code == 0 and str(env.model) in out and tuned.key in out
    code, out, _ = run_cli(capsys, "cache", "clear")
    assert code == 0 and "removed 2 cached file(s)" in out
    assert Cache(env.cache).entries() == []


def _wider_is_faster(request):
    """Width 64 runs twice as slow as width 128: the study's pick is width 128."""
    return 2.0 if request.config.width == 64 else 1.0


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_widths_are_part_of_the_study_and_the_look_up(env, monkeypatch, capsys):
    # tune --widths 64,128 of a file whose default is 64; then recommend with no widths
    # answers for the default (64), --widths 128 for 128, both from that tune's study.
    from test_cli import run_cli

    from autoplace.host import Cache
    from autoplace.host._machine import probe, probe_key

    url = f"sqlite:///{env.cache.parent / 'team.db'}"
    backend = SyntheticBackend(slowdown=_wider_is_faster)
    # the whole default space: what the command line's look-ups below ask
    searched = autoplace.tune(
        env.model, widths=(64, 128), storage=url, out=None, backend=backend, confirm=2
    )
    assert searched.best.config.width == 128
    assert "-w64-128-throughput-" in searched.study_name  # its own study, named for them
    default = env(storage=url, on_miss="raise", backend=backend, tune_options=WHOLE)
    assert (default.source, default.width) == ("study", 64)
    assert any("the study's pick over every width it searched is width 128" in line
               for line in default.limits)  # fmt: skip
    wide = env(storage=url, on_miss="raise", backend=backend, widths=[128], tune_options=WHOLE)
    assert (wide.source, wide.width, wide.exact) == ("study", 128, True)
    assert wide.why and wide.margin is not None  # the study's own pick, with its margin
    # the command line, as a launcher runs it: the same answers
    cache = Cache(env.cache)
    cache.write(
        cache.machine_path(probe_key(probe())),
        {"devices": [d.__dict__ for d in SyntheticBackend().devices()]},
    )
    monkeypatch.setenv("AUTOPLACE_CACHE", str(env.cache))
    for args, width in (([], 64), (["--widths", "128"], 128), (["--widths", "64"], 64)):
        asked = ["--storage", url, "--on-miss", "raise", "--json", *args]
        code, out, err = run_cli(capsys, "recommend", str(env.model), *asked)
        assert code == 0, err
        assert json.loads(out)["width"] == width
    # a tune of the default width alone keeps the study name it always had
    alone = autoplace.tune(env.model, storage=url, out=None, backend=backend, **SPACE)
    assert alone.study_name == searched.study_name.replace("-w64-128", "")
    assert alone.best.config.width == 64


def test_a_tunes_answer_remembered_is_found_by_name_or_without(tmp_path):
    """What ``autoplace tune`` leaves for launchers (``remember``): the look-up by the
    workload's name, or without one (the file's only workload), answers from the cache
    with the tune's pick, without tuning or listing devices again."""
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    result = autoplace.tune(
        model,
        storage=f"journal:///{tmp_path / 'elsewhere.log'}",  # not where recommend looks
        out=None,
        backend=SyntheticBackend(),
        **WHOLE,
    )
    cache = tmp_path / "cache"
    written = remember(result, result.devices, cache_dir=cache)
    assert len(written.paths) == 2  # asked without a name; resolved to the file's workload's
    assert written.narrower == ()
    best = result.best.config
    for workload in (None, result.answer.workload.name):
        found = autoplace.recommend(model, workload=workload, cache_dir=cache, on_miss="raise")
        assert found.source == "cache" and found.exact
        assert (found.device, found.batch_size, found.precision) == (
            best.device, best.batch_size, best.precision,
        )  # fmt: skip
    with pytest.raises(NoAnswerError):  # another objective is another key
        autoplace.recommend(model, objective="latency", cache_dir=cache, on_miss="raise")


@pytest.mark.slow  # a real tune through the CLI, then the look-up in this process
def test_a_launcher_finds_what_autoplace_tune_measured(tmp_path, monkeypatch, capsys):
    """Issue 35: after ``autoplace tune`` with its default storage, the launcher's
    ``recommend(..., on_miss="raise")`` answered "nothing cached or stored"; it now
    answers from the cache, with the CLI's pick."""
    from autoplace.cli import main

    monkeypatch.setenv("AUTOPLACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # the CLI's default storage: ./studies/autoplace.db
    model = REPO / "tests" / "models" / "tiny_mlp.py"
    args = ["tune", str(model), "--batch-sizes", "4,8", "--precisions", "float32", "--json"]
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 0, capsys.readouterr().err
    picked = json.loads(capsys.readouterr().out)["recommendation"]
    # a launcher asking the same narrowed question finds the CLI's answer (issue 47: the
    # CLI caches only an answer to a launcher's whole question, so this one is not cached)
    asked = {"batch_sizes": (4, 8), "precisions": ("float32",)}
    found = autoplace.recommend(str(model), workload="mlp", on_miss="raise", tune_options=asked)
    assert found.source == "study"  # the command line's default study, ./studies/autoplace.db
    assert (found.batch_size, found.precision) == (picked["batch_size"], picked["precision"])
    assert (
        autoplace.recommend(str(model), workload="mlp", on_miss="raise", tune_options=asked).source
        == "cache"
    )  # cached on the way
    # the whole question (every batch size and precision) is not answered by this tune
    with pytest.raises(NoAnswerError, match="searched less than this look-up asks"):
        autoplace.recommend(str(model), workload="mlp", on_miss="raise")
    # after `autoplace cache clear`, the command line's default study is looked in again
    with pytest.raises(SystemExit):
        main(["cache", "clear"])
    again = autoplace.recommend(str(model), workload="mlp", on_miss="raise", tune_options=asked)
    assert again.source == "study"


@pytest.mark.parametrize("name", ["gone.db", "gone.log"])
def test_a_look_up_in_a_study_file_that_is_not_there_makes_none(env, tmp_path, name):
    with pytest.raises(NoAnswerError):
        env(storage=str(tmp_path / name), on_miss="raise")
    assert not (tmp_path / name).exists()
    assert env(storage=str(tmp_path / name), on_miss="fallback").source == "fallback"
    assert not (tmp_path / name).exists()


def test_a_narrowed_tune_never_replaces_the_answer_to_a_wider_question(tmp_path, monkeypatch):
    """Issue 47: after the whole tune, a tune narrowed to batch 32, float32 (the same study:
    its identity holds the widths, not the batch sizes) replaced the study's answer and the
    cache's, and every launcher got batch 32; ``explain`` of the narrowed file described the
    whole tune's pick. Now each question keeps its own answer; a look-up answers from one
    whose question covers its own; each file is explained within its own space."""
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "model.py"
    model.write_text("# synthetic\n")
    cache, url = tmp_path / "cache", f"sqlite:///{tmp_path / 'studies.db'}"
    backend = SyntheticBackend()
    whole = autoplace.tune(model, storage=url, out=tmp_path / "whole.toml", backend=backend,
                           **WHOLE)  # fmt: skip
    assert len(remember(whole, whole.devices, cache_dir=cache).paths) == 2  # named or not
    picked = whole.best.config
    assert picked.batch_size != 32
    narrow = autoplace.tune(model, storage=url, out=tmp_path / "fixed.toml", backend=backend,
                            batch_sizes=(32,), precisions=("float32",), confirm=2)  # fmt: skip
    assert narrow.study_name == whole.study_name  # one study, its measurements shared
    assert narrow.best.config.batch_size == 32
    kept = remember(narrow, narrow.devices, cache_dir=cache)
    assert kept.paths == () and any("batch sizes 32" in n for n in kept.narrower)
    for storage in (None, url):  # the cache, then the study itself
        found = autoplace.recommend(model, cache_dir=cache, storage=storage, on_miss="raise",
                                    backend=backend)  # fmt: skip
        assert (found.batch_size, found.precision) == (picked.batch_size, picked.precision)
    # the study keeps both answers, each under its own question
    attrs = optuna.load_study(study_name=whole.study_name, storage=url).user_attrs
    answers = {k: v for k, v in attrs.items() if k.startswith("autoplace_answer")}
    assert sorted(a["question"]["batch_sizes"] == [32] for a in answers.values()) == [False, True]
    # each file explains its own pick, within its own space
    wide_said = " ".join(autoplace.explain(tmp_path / "whole.toml").sentences)
    fixed_said = " ".join(autoplace.explain(tmp_path / "fixed.toml").sentences)
    assert f"batch={picked.batch_size} " in wide_said or f"batch {picked.batch_size}" in wide_said
    assert "batch=32 " in fixed_said or "batch 32" in fixed_said
    assert f"batch={picked.batch_size} " not in fixed_said


@pytest.mark.parametrize("on_miss", ["raise", "fallback", "tune"])
def test_a_file_of_several_workloads_and_none_named_is_one_line_naming_them(tmp_path, on_miss):
    """Issue 47: it said "nothing cached or stored", named neither workload, and suggested a
    command without --workload."""
    model = tmp_path / "two.py"
    model.write_text(
        "import autoplace\n\n@autoplace.workload(widths=(8,), default_width=8)\n"
        "def small(width, dtype): ...\n\n@autoplace.workload\ndef large(width, dtype): ...\n"
    )
    with pytest.raises(autoplace.BadInputError, match=r"several workloads \(small, large\)"):
        autoplace.recommend(model, cache_dir=tmp_path / "cache", on_miss=on_miss,
                            backend=SyntheticBackend())  # fmt: skip
