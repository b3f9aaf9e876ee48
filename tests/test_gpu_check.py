"""``benchmarks/gpu_check.py``: its parts start only within its budget, and its smoke mode
runs end to end on a CPU, writing its results whatever it had time for."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import REPO


def _script():
    """The script as a module: it imports ``results_file`` from beside it."""
    folder = REPO / "benchmarks"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location("gpu_check", folder / "gpu_check.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


gpu_check = _script()


def test_a_part_starts_only_if_its_estimate_fits_in_what_is_left(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(gpu_check.time, "perf_counter", lambda: clock[0])
    given = []

    def part(seconds: float):
        def run(limit: float) -> dict:
            given.append(limit)
            clock[0] += seconds
            return {"took": seconds}

        return run

    parts = [
        ("limits", 10, part(30)),  # runs over its estimate
        ("mlp", 20, part(5)),  # 10 s left: not started
        ("prefetch", 5, part(1)),  # fits in the 10 s
        ("devices", 5, "no kind of device with several here"),
        ("compiles", 9.5, part(1)),  # 9 s left
    ]
    body = {"tunes": {}, "part_s": {}, "skipped": {}}
    gpu_check.run_parts(parts, gpu_check.Budget(40), body)
    assert given == [40, 10]  # each part's processes stop where the budget ends
    assert body["limits"] == {"took": 30} and body["tunes"] == {"prefetch": {"took": 1}}
    assert body["part_s"] == {"limits": 30, "prefetch": 1}
    assert body["skipped"] == {
        "mlp": "needs about 20 s; 10 s of the 40 s budget left",
        "devices": "no kind of device with several here",
        "compiles": "needs about 10 s; 9 s of the 40 s budget left",
    }


@pytest.mark.slow  # it starts a dozen processes: about 35 s on the 2-core CI machine
def test_its_smoke_run_ends_within_its_budget_with_every_part_accounted_for(tmp_path):
    budget = 45
    done = subprocess.run(
        [sys.executable, "benchmarks/gpu_check.py", "--smoke", "--budget", str(budget),
         "--results", str(tmp_path), "--out", str(tmp_path / "out")],
        cwd=REPO, capture_output=True, text=True, timeout=budget + 60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("gpu_check-*.json")
    body = json.loads(path.read_text())
    # The budget is the script's own clock (from its start): the interpreter's start and its
    # imports before it are the machine's, which a busy machine stretches at will.
    assert body["smoke"] and body["wall_s"] <= budget + 5
    # Every smoke part ran or was skipped, saying why; the README MLP's tune always runs.
    assert set(body["part_s"]).isdisjoint(body["skipped"])
    assert set(body["part_s"]) | set(body["skipped"]) == set(gpu_check.SMOKE)
    assert all("budget left" in why for why in body["skipped"].values())
    tunes = body["tunes"]
    assert tunes["mlp"]["pick"]["device"] == "cpu:0", tunes["mlp"]
    if "prefetch" in tunes:
        assert tunes["prefetch"]["ranked_on"] == "prefetch", tunes["prefetch"]
    if "devices" in tunes:  # two emulated CPU devices: both counts, and their scaling
        devices = tunes["devices"]
        assert devices["measured_counts"] == [1, 2], devices
        assert [c["count"] for c in devices["scaling"]["counts"]] == [1, 2]
    assert (tmp_path / "out" / "mlp.toml").exists() and (tmp_path / "out" / path.name).exists()


@pytest.mark.slow  # it starts processes
def test_with_no_budget_left_it_starts_nothing_and_still_writes_its_results(tmp_path):
    done = subprocess.run(
        [sys.executable, "benchmarks/gpu_check.py", "--smoke", "--budget", "1",
         "--results", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("gpu_check-*.json")
    body = json.loads(path.read_text())
    assert set(body["skipped"]) == set(gpu_check.SMOKE) and body["part_s"] == {}
    assert "skipped: needs about" in done.stderr
