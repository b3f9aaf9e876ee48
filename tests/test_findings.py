"""Findings: each with its numbers, cause and fix, the same in the terminal and the file."""

from __future__ import annotations

from autoplace import findings
from autoplace.machine import Interference


def test_a_busy_machine_says_what_was_seen_and_what_cannot_be_told_apart():
    seen = Interference(2, 7.0, 0.64, 0.31, 6.5, 12)
    found = findings.BusyMachine(seen, 0.40)
    assert found.text() == (
        "the machine was busy: 7.0 other runnable processes on 2 cores, some task waiting "
        "for a CPU 64% of the time, load average 6.5; differences under ±40.0% cannot be "
        "told apart here"
    )
    assert "rerun when it is idle" in found.fix
    entry = findings.as_dict(found)
    assert entry["kind"] == "busy_machine" and entry["resolution"] == 0.40
    assert entry["interference"]["busy"] is True and entry["text"] == found.text()


def test_configurations_it_cannot_tell_apart_say_within_how_much():
    found = findings.CannotTellApart("A", ("B", "C"), 0.05, 2)
    assert found.text() == "A, or any of B, C (within ±5.0% of each other here)"
    assert "2 windows" in found.cause
    lots = findings.CannotTellApart("A", tuple("BCDEFG"), 0.08, 2)
    assert "and 2 more" in lots.text()


def test_no_interval_wider_than_the_figures_carry_is_printed():
    # Issue 47: "differences under ±15521.5% cannot be told apart here" on a busy machine.
    busy = findings.CannotTellApart("A", ("B",), 155.215, 2, quiet=False)
    assert busy.text() == "A, or any of B (busy: cannot tell these apart)"
    assert "%" not in busy.text()
    seen = Interference(2, 7.0, 0.64, 0.31, 6.5, 12)
    machine = findings.BusyMachine(seen, 155.215)
    assert "busy: it cannot tell its finalists apart at all" in machine.text()
    assert "15521" not in machine.text()


def test_a_quiet_machine_is_not_told_to_rerun_on_a_quiet_machine():
    # issue 36: "to separate them, rerun ... on a quiet machine", read on a quiet machine
    quiet = findings.CannotTellApart("A", ("B",), 0.2, 4, quiet=True)
    assert "quiet machine" not in quiet.fix and "--remeasure" not in quiet.fix
    assert "the machine was quiet" in quiet.fix and "a rerun would meet the same" in quiet.fix
    assert findings.as_dict(quiet)["quiet"] is True
    busy = findings.CannotTellApart("A", ("B",), 0.2, 4, quiet=False)
    assert busy.fix.endswith("rerun with --remeasure when the machine is idle")
    unknown = findings.CannotTellApart("A", ("B",), 0.2, 4)
    assert unknown.fix.endswith("on a quiet machine") and "quiet" not in findings.as_dict(unknown)


def test_a_quiet_machine_whose_load_reads_high_says_why():
    # Issue 47: "quiet" while uptime showed 3.7 on 2 cores: the others were autoplace
    # processes waiting for the timing lock, which the load average counts.
    seen = Interference(2, 0.2, None, 0.9, 3.7, 8, lock_waiters=3)
    assert not seen.busy
    said = seen.describe()
    assert "load average 3.7" in said and "3 other autoplace process(es) waiting" in said
    quiet = findings.CannotTellApart("A", ("B",), 0.08, 2, quiet=True, machine=said)
    assert "counted in uptime's load average" in quiet.fix


def test_memory_findings_name_their_figures():
    pages = findings.FreshPagesEveryStep("cpu:0 batch=128 float32", 9500.0, 9500 * 4096, 0.02)
    assert "maps 37.1 MiB of fresh memory every step (9,500 page faults a step" in pages.text()
    leak = findings.HostMemoryGrows("cpu:0 batch=8 float32", 64 * 1024, 2**30)
    assert "grows by 64.0 KiB a step" in leak.text() and "1.0 GiB at the end" in leak.text()
    assert findings.lines([findings.as_dict(leak)])[0].startswith(leak.text() + " (")
