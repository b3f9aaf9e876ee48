"""The machine's limits, measured by the probe in a fresh process, once, then cached."""

from __future__ import annotations

import json

import pytest

from autoplace.host import Cache
from autoplace.limits import LimitsRequest, cached_limits, machine_limits

QUICK = LimitsRequest(seconds=0.05, windows=2)


@pytest.mark.slow
def test_the_probe_measures_each_limit_then_the_cache_answers_without_measuring(tmp_path):
    cache = Cache(tmp_path)
    assert cached_limits(cache) is None
    said: list[str] = []
    fresh = machine_limits(QUICK, cache=cache, on_progress=said.append)
    assert not fresh.cached and any("measuring this machine's limits" in s for s in said)
    cpu = fresh.of("cpu:0")
    assert set(cpu.peak_flops) == {"float32", "bfloat16", "float16"}
    for figure in (*cpu.peak_flops.values(), cpu.memory_bandwidth, cpu.host_to_device):
        assert figure.windows == 2 and 0 < figure.low <= figure.median <= figure.high
    assert cpu.peak_flops["float32"].median > 1e8  # any CPU of this century
    assert 0 < cpu.dispatch_floor.median < 1e-3  # a trivial call: microseconds, not ms
    again = machine_limits(QUICK, cache=cache, on_progress=said.append)
    assert again.cached  # read back, not measured: the probe ran once (below)
    assert again.as_dict() == fresh.as_dict() and cached_limits(cache).as_dict() == fresh.as_dict()
    assert len([s for s in said if "measuring" in s]) == 1


@pytest.mark.slow
def test_limits_of_other_hardware_or_a_damaged_entry_are_measured_again(tmp_path):
    cache = Cache(tmp_path)
    fresh = machine_limits(QUICK, cache=cache)
    (path,) = (tmp_path / "limits").glob("*.json")
    entry = json.loads(path.read_text())
    entry["key"]["hardware"]["cpu"] = "another CPU"
    path.write_text(json.dumps(entry))
    assert cached_limits(cache) is None
    path.write_text("{not json")
    with pytest.warns(UserWarning, match="damaged cache file"):
        again = machine_limits(QUICK, cache=cache)
    assert not again.cached and again.key == fresh.key
