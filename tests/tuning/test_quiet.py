"""A busy machine: warn (the default), wait for quiet up to a limit, or refuse."""

from __future__ import annotations

import pytest

from autoplace import BadInputError
from autoplace.errors import BusyMachineError
from autoplace.machine import Interference
from autoplace.tuning import _quiet, await_quiet

BUSY = Interference(2, 4.0, 0.7, None, 4.2, 0)
QUIET = Interference(2, 0.1, 0.02, None, 0.3, 0)


def samples(*seen):
    left = list(seen)
    return lambda: left.pop(0) if len(left) > 1 else left[0]


def test_warn_does_not_look():
    def never():
        raise AssertionError("warn looked at the machine")

    assert await_quiet("warn", 60, None, never) is None


def test_refuse_a_busy_machine_in_one_line_that_says_what_was_seen():
    with pytest.raises(BusyMachineError) as info:
        await_quiet("refuse", 60, None, samples(BUSY))
    text = str(info.value)
    assert "4.0 other runnable processes on 2 cores" in text and "\n" not in text
    assert "kept in the study" in text and "--if-busy warn" in text
    assert await_quiet("refuse", 60, None, samples(QUIET)) == QUIET


def test_wait_says_why_and_goes_on_once_quiet(monkeypatch):
    monkeypatch.setattr(_quiet, "QUIET_POLL_S", 0.0)
    heard: list[str] = []
    assert await_quiet("wait", 60, heard.append, samples(BUSY, BUSY, QUIET)) == QUIET
    assert len(heard) == 2 and "waiting for the machine to be quiet" in heard[0]
    assert "(--quiet-wait)" in heard[0]


def test_wait_past_its_limit_goes_on_busy(monkeypatch):
    monkeypatch.setattr(_quiet, "QUIET_POLL_S", 0.0)
    assert await_quiet("wait", 0.0, None, samples(BUSY)) == BUSY


def test_an_unknown_policy_is_bad_input():
    with pytest.raises(BadInputError, match="--if-busy"):
        _quiet.check_policy("sometimes")


def test_a_tune_told_to_refuse_a_busy_machine_measures_nothing(tmp_path, monkeypatch):
    from synthetic import SyntheticBackend

    import autoplace
    from autoplace import machine

    monkeypatch.setattr(machine, "sample", lambda: BUSY)
    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    backend = SyntheticBackend()
    with pytest.raises(BusyMachineError, match="the machine is busy"):
        autoplace.tune(model, batch_sizes=(8, 16), storage=f"sqlite:///{tmp_path / 's.db'}",
                       out=tmp_path / "a.toml", backend=backend, if_busy="refuse")  # fmt: skip
    assert backend.measured == []


@pytest.mark.slow  # a second or more: real compiles or a whole tune in process
def test_a_tune_on_a_busy_machine_says_so_in_the_file(tmp_path):
    from synthetic import SyntheticBackend

    import autoplace

    class Busy(SyntheticBackend):
        def _together(self, requests, fresh):
            import dataclasses

            out = super()._together(requests, fresh)
            busy = dataclasses.replace  # the machine's figures, as a loaded machine reads them
            return [busy(m, machine=busy(m.machine, others_running=5.0, cpu_pressure=0.6))
                    for m in out]  # fmt: skip

    model = tmp_path / "m.py"
    model.write_text("# synthetic\n")
    storage = f"sqlite:///{tmp_path / 's.db'}"
    result = autoplace.tune(model, batch_sizes=(8, 16, 32), storage=storage,
                            out=tmp_path / "a.toml", backend=Busy())  # fmt: skip
    doc = autoplace.recommendation.read(tmp_path / "a.toml")
    assert doc["machine"]["busy"] is True and doc["machine"]["others_running"] == 5.0
    (busy,) = [f for f in doc["findings"] if f["kind"] == "busy_machine"]
    assert busy["text"].startswith("the machine was busy: 5.0 other runnable processes")
    assert "rerun when it is idle" in busy["fix"]
    assert result.explanation.findings[0]["kind"] == "busy_machine"
