"""One machine, one timed loop at a time: a second process waits, and says so."""

import os
import subprocess
import sys
import textwrap
import time

from autoplace.measuring import timing_lock
from autoplace.measuring._lock import lock_key


def test_cpu_devices_share_one_lock_other_devices_have_their_own():
    assert lock_key("cpu:0") == lock_key("cpu:3") == "cpu"
    assert lock_key("gpu:0") != lock_key("gpu:1")


def test_a_second_process_waits_for_the_first_and_says_who_holds_it(tmp_path):
    # This process holds the CPU lock for 1.5 s; another asks for it meanwhile.
    waiter = textwrap.dedent(
        """
        import sys, time
        from autoplace.measuring import timing_lock
        heard = []
        t = time.perf_counter()
        with timing_lock(["cpu:1"], heard.append):
            waited = time.perf_counter() - t
        print(waited, heard[0] if heard else "")
        """
    )
    with timing_lock(["cpu:0"]):
        child = subprocess.Popen([sys.executable, "-c", waiter], stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)
    out, _ = child.communicate(timeout=60)
    waited, heard = out.split(" ", 1)
    assert float(waited) >= 1.0
    assert f"pid {os.getpid()}" in heard and "timing on cpu" in heard


def test_an_unheld_lock_is_taken_at_once_and_says_nothing():
    heard = []
    t = time.perf_counter()
    with timing_lock(["gpu:7"], heard.append):
        pass
    assert heard == [] and time.perf_counter() - t < 1.0
