"""Each phase's settings: which of them stop a loop early."""

from autoplace import MeasureSettings
from autoplace.tuning import latency, throughput
from autoplace.tuning._phases import STOP_BEHIND, Phase, phase_settings


def test_only_the_search_and_the_fusing_windows_stop_a_loop_early():
    found = phase_settings(MeasureSettings(), throughput())
    search, fuse = found[Phase.SEARCH], found[Phase.FUSE]
    assert search.stop_behind == STOP_BEHIND and search.stop_far_behind
    # K steps a call far slower than one a call need not be timed six chunks long
    assert fuse.stop_behind is None and fuse.stop_far_behind
    # the windows the pick rests on time every finalist in full
    for phase in (Phase.CONFIRM, Phase.DUEL, Phase.REMEDY, Phase.FEED):
        assert found[phase].stop_behind is None and not found[phase].stop_far_behind


def test_no_loop_stops_early_for_latency():
    found = phase_settings(MeasureSettings(), latency())
    assert not any(s.stop_far_behind or s.stop_behind for s in found.values())
