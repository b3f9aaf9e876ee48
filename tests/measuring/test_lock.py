"""One machine, one timed loop at a time: a second process waits, and says so."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from autoplace._interrupt import Interrupt
from autoplace.measuring import timing_lock, waiting
from autoplace.measuring._lock import lock_key


def test_cpu_devices_share_one_lock_other_devices_have_their_own():
    assert lock_key("cpu:0") == lock_key("cpu:3") == "cpu"
    assert lock_key("gpu:0") != lock_key("gpu:1")


def test_a_ctrl_c_ends_a_wait_for_the_lock():
    # Held here, as by another autoplace: the wait says so, then a Ctrl-C is taken (issue 50)
    interrupt, heard = Interrupt(), []

    def on_wait(line: str) -> None:
        heard.append(line)
        interrupt.set()

    held, wanted = timing_lock(["cpu:0"]), timing_lock(["cpu:1"], on_wait, interrupt)
    with held, pytest.raises(KeyboardInterrupt), wanted:
        raise AssertionError("took a lock another holds")
    assert len(heard) == 1 and "is timing on cpu" in heard[0]


@pytest.mark.slow
def test_a_second_process_waits_for_the_first_and_says_who_holds_it():
    # This process holds the CPU lock until the other says it waits; the other takes it
    # only after this one let go. No clock decides: a busy machine may take any time.
    waiter = textwrap.dedent(
        """
        import sys, time
        from autoplace.measuring import timing_lock
        say = lambda line: print("waiting:", line, flush=True)
        with timing_lock(["cpu:1"], say):
            print("took it at", time.monotonic(), flush=True)
        """
    )
    with timing_lock(["cpu:0"]):
        child = subprocess.Popen([sys.executable, "-c", waiter], stdout=subprocess.PIPE, text=True)
        heard = child.stdout.readline()  # blocks until the other waits (or ends)
        # the holder can tell that one process waits for it (what uptime counts); its mark is
        # left just before its wait: looked for until it is there, however slow the machine
        while waiting(["cpu:0"]) == 0 and child.poll() is None:
            time.sleep(0.01)
        assert waiting(["cpu:0"]) == 1 and waiting(["gpu:0"]) == 0
        released = time.monotonic()
    out, _ = child.communicate(timeout=600)
    assert heard.startswith("waiting:"), heard + out
    assert f"pid {os.getpid()}" in heard and "timing on cpu" in heard
    took = float(out.split("took it at", 1)[1])
    assert took >= released


def test_an_unheld_lock_is_taken_at_once_and_says_nothing():
    heard = []
    with timing_lock(["gpu:7"], heard.append):
        pass
    assert heard == []


def test_a_mark_left_by_a_dead_process_counts_for_nothing(tmp_path, monkeypatch):
    from autoplace.host import LOCK_DIR_ENV

    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    (tmp_path / f"cpu.wait-{os.getppid()}").touch()  # a live process (the test runner's parent)
    (tmp_path / "cpu.wait-999999999").touch()  # no such process
    (tmp_path / f"cpu.wait-{os.getpid()}").touch()  # this process's own is not another's
    assert waiting(["cpu:0"]) == 1
