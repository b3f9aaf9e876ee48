"""The phases as values: their names, their settings, and which of them stop a loop early."""

from autoplace import MeasureSettings
from autoplace.tuning import PHASES, latency, throughput
from autoplace.tuning._search import STOP_BEHIND


def settings(objective):
    return {p.name: p.settings(MeasureSettings(), objective) for p in PHASES}


def test_the_phases_run_in_order_and_keep_their_stored_names():
    # a study written by one version is read by the next: the names are stable
    assert [p.name for p in PHASES] == ["search", "confirm", "feeding", "remedy", "fuse"]


def test_only_the_search_and_the_fusing_windows_stop_a_loop_early():
    found = settings(throughput())
    search, fuse = found["search"], found["fuse"]
    assert search.stop_behind == STOP_BEHIND and search.stop_far_behind
    # K steps a call far slower than one a call need not be timed six chunks long
    assert fuse.stop_behind is None and fuse.stop_far_behind
    # the windows the pick rests on time every finalist in full
    for name in ("confirm", "remedy", "feeding"):
        assert found[name].stop_behind is None and not found[name].stop_far_behind


def test_only_the_confirmation_compares_with_float32_and_windows_warm_up():
    found = settings(throughput())
    assert found["confirm"].deviation and not found["search"].deviation
    assert found["search"].warmup_s == 0.0
    assert all(found[n].warmup_s > 0 and found[n].min_chunks > 3 for n in ("confirm", "fuse"))


def test_no_loop_stops_early_for_latency():
    found = settings(latency())
    assert not any(s.stop_far_behind or s.stop_behind for s in found.values())
