"""What the machine does while autoplace times: other runnable tasks, the kernel's CPU
pressure, this process's page faults and resident memory."""

from __future__ import annotations

import mmap
import subprocess
import sys
import time
from pathlib import Path

import pytest
from synthetic import measured

from autoplace import machine


def _chunks(touch_mib: int) -> machine.ChunkStats:
    """Six chunks of two steps, each step mapping ``touch_mib`` MiB afresh and writing every
    page of it (an anonymous map, as glibc makes for a block over 32 MiB), then freeing it."""
    stats = machine.ChunkStats()
    for _ in range(6):
        with stats.around(steps=2):
            for _ in range(2):
                if touch_mib:
                    m = mmap.mmap(-1, touch_mib << 20)
                    for offset in range(0, touch_mib << 20, 4096):
                        m[offset] = 1
                    m.close()
    return stats


def test_a_chunk_that_maps_fresh_memory_every_step_counts_its_page_faults():
    fresh, idle = _chunks(40).figures(), _chunks(0).figures()
    # 40 MiB of 4 KiB pages is 10,240 faults a step (fewer where the kernel backs the map
    # with huge pages): far more than a step that maps nothing
    assert fresh.page_faults_per_step >= 10 * (idle.page_faults_per_step or 0) + 10
    assert fresh.cpu_share is not None and 0 < fresh.cpu_share <= 1.5


def test_resident_memory_that_grows_every_step_has_a_slope_of_about_what_it_keeps():
    stats, kept = machine.ChunkStats(), []
    for _ in range(10):
        with stats.around(steps=64):
            for _ in range(64):  # keeps 64 KiB a step, fresh pages: a leak
                m = mmap.mmap(-1, 64 << 10)
                for offset in range(0, 64 << 10, 4096):
                    m[offset] = 1
                kept.append(m)
    growth = stats.figures().resident_growth_per_step
    assert growth == pytest.approx(64 << 10, rel=0.25)


def test_memory_a_process_fills_its_caches_with_is_no_leak():
    # an LSTM's fresh process grew 50 MiB over its first 300 steps, then not at all
    rising = [(s, (300 << 20) + min(s, 300) * (170 << 10)) for s in range(100, 1700, 100)]
    assert machine._growth(rising) == 0.0
    assert machine._growth(rising[:6]) is None  # too few steps to tell
    leaking = [(s, (300 << 20) + s * (170 << 10)) for s in range(100, 1700, 100)]
    assert machine._growth(leaking) == pytest.approx(170 << 10)


def test_page_faults_per_step_leave_out_the_first_half_of_the_chunks():
    stats = machine.ChunkStats(steps=4, wall_s=1.0, faults=[(1, 900), (1, 900), (1, 2), (1, 4)])
    assert stats.figures().page_faults_per_step == 3.0


def _running(pid: int) -> bool:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2] == "R"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux's /proc")
def test_processes_spinning_beside_it_are_counted_and_make_the_machine_busy():
    spin = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(spin) for _ in range(machine.cores())]
    try:
        deadline = time.monotonic() + 30
        while not all(_running(p.pid) for p in spinners) and time.monotonic() < deadline:
            time.sleep(0.05)
        seen = machine.sample(seconds=0.5)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    # as many spinning processes as cores (and whatever else runs here): at least those
    assert seen.others_running is not None and seen.others_running >= 0.75 * machine.cores()
    assert seen.busy
    assert f"on {machine.cores()} cores" in seen.describe()


@pytest.mark.parametrize(
    ("others", "pressure", "busy"),
    [(0.2, 0.05, False), (1.0, 0.05, True), (0.2, 0.40, False), (None, None, False)],
)
def test_busy_means_others_runnable_on_half_the_cores_whatever_the_pressure(others, pressure, busy):
    seen = machine.Interference(2, others, pressure, None, None, 3)
    assert seen.busy is busy


def test_the_interference_of_measurements_is_the_mean_of_their_figures():
    def M(others, pressure):
        return measured("ok", "", "cpu:0", 8, "float32", others_running=others,
                        cpu_pressure=pressure, cpu_share=0.5)  # fmt: skip

    seen = machine.Interference.of([M(1.0, 0.1), M(3.0, 0.3), M(None, None)])
    assert seen.others_running == 2.0 and seen.cpu_pressure == pytest.approx(0.2)
    assert seen.measurements == 2
    assert machine.Interference.of([M(None, None)]) is None
