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


def test_configurations_it_cannot_tell_apart_keep_confirmed_and_searched_apart():
    found = findings.CannotTellApart("A", ("B", "C"), 0.05, 2, ("D",), 0.30)
    assert found.text() == (
        "A, or any of B, C (within ±5.0% of each other here); D (on the search's figures "
        "alone: within ±30.0% of each other here)"
    )
    assert "2 windows" in found.cause
    guessed = findings.CannotTellApart("A", (), None, 0, ("D",), 0.3, ("E",))
    assert guessed.text().endswith("; E (predicted by the cost model, not measured)")
    lots = findings.CannotTellApart("A", tuple("BCDEFG"), 2.5, 2)
    assert "and 2 more" in lots.text() and "too few measurements" in lots.text()


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
    # only the search measured them: its figures, not the windows', are what a rerun redoes
    searched = findings.CannotTellApart("A", (), None, 0, ("D",), 0.3, quiet=True)
    assert searched.fix.endswith("rerun with --remeasure")


def test_memory_findings_name_their_figures():
    pages = findings.FreshPagesEveryStep("cpu:0 batch=128 float32", 9500.0, 9500 * 4096, 0.02)
    assert "maps 37.1 MiB of fresh memory every step (9,500 page faults a step" in pages.text()
    leak = findings.HostMemoryGrows("cpu:0 batch=8 float32", 64 * 1024, 2**30)
    assert "grows by 64.0 KiB a step" in leak.text() and "1.0 GiB at the end" in leak.text()
    assert findings.lines([findings.as_dict(leak)])[0].startswith(leak.text() + " (")
