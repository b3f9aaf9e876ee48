"""The subprocess backend: what its workers survive, when one is reused, and what crosses
the boundary."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from conftest import FAST, REPO, line_of, model, request, write_model

import autoplace
from autoplace import (
    BadInputError,
    ModelFileError,
    SubprocessBackend,
)
from autoplace.workload import ModelFile

#: Every test here starts a measurement worker (JAX in a fresh process).
pytestmark = pytest.mark.slow


def measure(backend, name: str, settings=FAST, **kw) -> autoplace.Measurement:
    return autoplace.measure(model(name), batch_size=4, settings=settings, backend=backend, **kw)


def assert_works(backend: SubprocessBackend) -> autoplace.Measurement:
    m = measure(backend, "tiny_mlp")
    assert m.status == "ok", m.reason
    assert m.step.step_s > 0
    return m


def test_measures_in_a_worker(subproc: SubprocessBackend) -> None:
    m = assert_works(subproc)
    assert m.timing_compiles == 0
    assert m.wall_s > 0
    assert subproc.starts >= 1
    assert subproc.last_start_s > 0
    assert [d.name for d in subproc.devices()] == ["cpu:0"]


def test_crash_is_a_status_and_the_next_measurement_gets_a_fresh_worker(
    subproc: SubprocessBackend,
) -> None:
    assert_works(subproc)
    starts = subproc.starts
    m = measure(subproc, "crash")
    assert m.status == "crash"
    assert "SIGSEGV" in m.reason
    # the last informative line the worker printed, not faulthandler's module list
    assert "Segmentation fault" in m.reason
    assert "Extension modules" not in m.reason
    assert (m.device, m.batch_size, m.workload) == ("cpu:0", 4, "crash")
    assert m.step.step_s is None
    assert_works(subproc)
    # dead alone: measured once more in a fresh worker (a kill from outside is not the
    # configuration's doing), dead again: a crash; then a fresh worker for the next
    assert subproc.starts == starts + 2


def test_a_crash_among_several_is_pinned_on_its_configuration(subproc: SubprocessBackend) -> None:
    # The crash takes the worker, and the group's other results, with it. The worker had
    # said which configuration it was setting up: that one is measured once more alone
    # (a crash alone twice is its own), the others again together without it, so no
    # configuration is blamed for its neighbour.
    reqs = [
        request(model("tiny_mlp"), "mlp"),
        request(model("crash"), "crash"),
        request(model("tiny_mlp"), "mlp", batch_size=8),
    ]
    heard: list[autoplace.measuring.Progress] = []
    good, crashed, other = subproc.measure_together(reqs, heard.append)
    assert crashed.status == "crash" and "SIGSEGV" in crashed.reason
    for m, batch in ((good, 4), (other, 8)):
        assert m.status == "ok" and m.batch_size == batch
        assert m.interleaved_with == 1  # the two measured again together, after the group died
    assert [p.index for p in heard if p.index is not None][:2] == [0, 1]
    assert "setting up cpu:0 batch=4" in heard[0].what
    assert_works(subproc)


def test_error_in_user_code_keeps_the_worker(subproc: SubprocessBackend) -> None:
    assert_works(subproc)
    starts = subproc.starts
    path = model("raises")
    m = measure(subproc, "raises")
    assert m.status == "error"
    assert f"ValueError: shapes do not line up ({path}:{line_of(path, 'RAISE_LINE')})" in m.reason
    assert m.worker_start_s == 0.0
    assert_works(subproc)
    assert subproc.starts == starts


def test_oom_is_a_status_and_the_worker_is_replaced(subproc: SubprocessBackend) -> None:
    assert_works(subproc)
    starts = subproc.starts
    m = measure(subproc, "oom_build")
    assert m.status in ("oom", "too_big")
    assert m.status == "oom"  # building allocates eagerly, before any memory analysis
    assert "RESOURCE_EXHAUSTED" in m.reason
    assert_works(subproc)
    assert subproc.starts == starts + 1  # an allocator that failed once is not trusted


def test_too_big_is_pruned_without_running(subproc: SubprocessBackend) -> None:
    starts = subproc.starts
    m = measure(subproc, "too_big")
    assert m.status == "too_big"
    assert m.first_call_s is None
    assert m.predicted_bytes >= 2**40
    assert_works(subproc)
    assert subproc.starts == max(starts, 1)  # nothing went wrong in the worker


def test_nonfinite_through_the_worker(subproc: SubprocessBackend) -> None:
    m = measure(subproc, "nan")
    assert m.status == "nonfinite"
    assert m.finite is False


def test_hang_times_out_and_the_next_measurement_works(subproc: SubprocessBackend) -> None:
    assert_works(subproc)
    starts = subproc.starts
    m = measure(subproc, "hang", settings=dataclasses.replace(FAST, timeout_s=3))
    assert m.status == "timeout"
    assert "3 s" in m.reason and "killed" in m.reason
    assert m.wall_s >= 3.0  # it waited the whole limit (and was then killed, not left)
    assert_works(subproc)
    assert subproc.starts == starts + 1


@pytest.mark.slow
def test_a_hang_among_several_costs_one_limit_and_is_pinned_on_its_configuration(
    subproc: SubprocessBackend,
) -> None:
    # The worker says which configuration it sets up: the hang is that one's, found after
    # one limit; the others are measured again together without it (not each alone, nor
    # the hang again alone: six limits, before).
    assert_works(subproc)
    starts = subproc.starts
    quick = dataclasses.replace(FAST, timeout_s=3)
    reqs = [
        request(model("tiny_mlp"), "mlp", quick),
        request(model("hang"), "hang", quick),
        request(model("tiny_mlp"), "mlp", quick, batch_size=8),
    ]
    good, hung, other = subproc.measure_together(reqs)
    assert hung.status == "timeout" and "while setting up cpu:0 batch=4" in hung.reason
    assert good.status == other.status == "ok"
    assert good.interleaved_with == other.interleaved_with == 1
    assert subproc.starts == starts + 1  # one kill, one fresh worker


def test_bad_requests_raise_through_the_process_boundary(subproc: SubprocessBackend) -> None:
    assert_works(subproc)
    starts = subproc.starts
    with pytest.raises(BadInputError, match=r"unknown device 'cpu:5'.*cpu:0"):
        subproc.measure(request(model("tiny_mlp"), "mlp", device="cpu:5"))
    with pytest.raises(BadInputError, match="nope"):
        subproc.measure(request(model("tiny_mlp"), "nope"))
    assert_works(subproc)
    assert subproc.starts == starts


def test_catalog_errors_cross_the_boundary(subproc: SubprocessBackend) -> None:
    path = model("import_error")
    mf = ModelFile.at(path)
    with pytest.raises(ModelFileError, match=re.escape(f"{path}:{line_of(path, 'SIZES[')}")):
        subproc.catalog(str(mf.path), mf.sha256)
    mf = ModelFile.at(model("no_workload"))
    with pytest.raises(ModelFileError, match="no workload found"):
        subproc.catalog(str(mf.path), mf.sha256)
    mf = ModelFile.at(model("syntax_error"))
    with pytest.raises(ModelFileError, match="SyntaxError"):
        subproc.catalog(str(mf.path), mf.sha256)


def test_a_model_file_that_kills_the_worker_at_import(
    subproc: SubprocessBackend, tmp_path: Path
) -> None:
    path = write_model(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    mf = ModelFile.at(path)
    with pytest.raises(ModelFileError, match=r"ended the worker.*SIGKILL") as info:
        subproc.catalog(str(mf.path), mf.sha256)
    # a kill -9 with memory to spare is not blamed on the out-of-memory killer
    assert "from outside; the kernel's log names no out-of-memory kill" in str(info.value)
    assert "GiB of memory free" in str(info.value)
    assert_works(subproc)


def test_a_worker_killed_once_while_importing_the_file_imports_it_again(
    subproc: SubprocessBackend, tmp_path: Path
) -> None:
    # Killed by a signal during the import (here the file's own kill, the first time only;
    # a kill -9 from outside reads alike): the file is imported once more, not blamed.
    marker = tmp_path / "killed-once"
    preamble = (
        f"import os, pathlib, signal\nif not pathlib.Path({str(marker)!r}).exists():\n"
        f"    pathlib.Path({str(marker)!r}).touch()\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    path = write_model(tmp_path, preamble + model("tiny_mlp").read_text())
    mf = ModelFile.at(path)
    assert "mlp" in subproc.catalog(str(mf.path), mf.sha256)
    assert marker.exists()


def test_silent_exit_is_a_crash_without_borrowed_output() -> None:
    # The reason quotes the worker's last line; a worker that printed nothing must
    # not be blamed on what an earlier worker (or Python's start-up) wrote to the log.
    with SubprocessBackend() as backend:
        assert measure(backend, "crash").status == "crash"
        m = measure(backend, "exit_silently")
    assert m.status == "crash"
    assert m.reason.startswith("the worker exited with code 3")
    assert "Segmentation" not in m.reason
    assert "RuntimeWarning" not in m.reason


def test_worker_start_is_charged_to_the_measurement_that_started_it() -> None:
    with SubprocessBackend() as backend:
        req = request(model("tiny_mlp"), "mlp")
        first = backend.measure(req)
        second = backend.measure(req)
    assert first.status == second.status == "ok"
    assert first.worker_start_s > 0
    assert first.worker_start_s == backend.last_start_s
    assert second.worker_start_s == 0.0


def test_worker_start_through_measure() -> None:
    # autoplace.measure asks the worker for the catalogue first: the worker that
    # call starts serves this measurement, so its start-up belongs to it.
    with SubprocessBackend() as backend:
        first = measure(backend, "tiny_mlp")
        second = measure(backend, "tiny_mlp")
        assert measure(backend, "crash").status == "crash"
        after_crash = measure(backend, "tiny_mlp")
    assert first.worker_start_s > 0
    assert second.worker_start_s == 0.0
    assert after_crash.worker_start_s > 0


def test_a_worker_that_died_while_idle_is_replaced() -> None:
    # Killed from outside between measurements (the kernel's OOM killer making room
    # for another process, say): the next request is not to blame for it.
    with SubprocessBackend() as backend:
        assert_works(backend)
        starts = backend.starts
        os.kill(backend.process.pid, signal.SIGKILL)
        backend.process.wait(timeout=10)
        m = assert_works(backend)  # neither a ModelFileError from catalog nor a "crash"
        assert backend.starts == starts + 1
        mf = ModelFile.at(model("tiny_mlp"))
        os.kill(backend.process.pid, signal.SIGKILL)
        backend.process.wait(timeout=10)
        direct = backend.measure(request(mf.path, "mlp"))
    assert m.status == direct.status == "ok", direct.reason


def test_jax_config_reaches_the_worker() -> None:
    with SubprocessBackend(jax_config={"jax_num_cpu_devices": 2}) as backend:
        assert [d.name for d in backend.devices()] == ["cpu:0", "cpu:1"]
        m = measure(backend, "tiny_mlp", device="cpu:1")
    assert m.status == "ok", m.reason
    assert m.device == "cpu:1"


def test_close_stops_the_worker_and_may_be_called_twice() -> None:
    backend = SubprocessBackend()
    backend.devices()
    process = backend.process
    assert process.poll() is None
    backend.close()
    assert process.poll() == 0  # told to exit, it exited cleanly
    backend.close()
    # a closed backend starts a new worker when used again
    assert_works(backend)
    backend.close()


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run(
        [sys.executable, *([code] if code.endswith(".py") else ["-c", code])],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


_FAST_SRC = (
    "autoplace.MeasureSettings(time_cap_s=0.2, fed_time_cap_s=0.1, min_samples=3, max_samples=10)"
)


def test_the_caller_never_imports_jax() -> None:
    code = (
        "import autoplace, sys\n"
        f"m = autoplace.measure('studies/mnist_mlp.py', workload='mlp', batch_size=8, width=32,"
        f" settings={_FAST_SRC})\n"
        "print(m.status, 'jax' in sys.modules, 'jaxlib' in sys.modules)\n"
    )
    done = _run(code, REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "False", "False"]


def test_a_script_without_a_main_guard(tmp_path: Path) -> None:
    script = tmp_path / "measure_it.py"
    script.write_text(
        textwrap.dedent(f"""
        import autoplace

        print("top level ran")
        m = autoplace.measure({str(model("tiny_mlp"))!r}, batch_size=4, settings={_FAST_SRC})
        print("status", m.status)
        """)
    )
    done = _run(str(script), tmp_path)
    assert done.returncode == 0, done.stderr
    # the worker is a fresh interpreter: it does not re-run this script's top level
    assert done.stdout.splitlines() == ["top level ran", "status ok"]


def test_a_killed_owners_worker_folder_is_swept_by_the_next_backend():
    # A process that made a worker folder and was killed before closing its backend.
    code = (
        "import os, tempfile; "
        "print(tempfile.mkdtemp(prefix=f'autoplace-worker-{os.getpid()}-'), flush=True); "
        "os.kill(os.getpid(), 9)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    orphan = Path(done.stdout.strip())
    assert orphan.is_dir() and orphan.parent == Path(tempfile.gettempdir())
    with SubprocessBackend():
        assert not orphan.exists()


def test_a_worker_log_an_error_names_still_exists_after_close():
    backend = SubprocessBackend(jax_config={"jax_no_such_option": 1})
    with pytest.raises(autoplace.WorkerError, match="failed to start") as info:
        backend.devices()
    backend.close()
    log = Path(re.search(r"see (\S+)$", str(info.value)).group(1))
    assert "jax_no_such_option" in log.read_text()
    log.unlink()


def test_a_worker_killed_mid_measurement_then_at_start_up_loses_nothing():
    # Killed from outside twice in a row: the worker measuring, then its replacement
    # while it starts. The configuration is healthy: it must not be stored as a crash.
    import threading
    import time

    with SubprocessBackend() as backend:
        backend.devices()
        killed: list[int] = []
        done = threading.Event()

        def kill_twice() -> None:
            while len(killed) < 2 and not done.is_set():
                process = backend.process
                ready = backend._worker._busy if not killed else True  # then: the next
                if process is not None and process.pid not in killed and ready:
                    os.kill(process.pid, signal.SIGKILL)
                    killed.append(process.pid)
                time.sleep(0.002)

        killer = threading.Thread(target=kill_twice)
        killer.start()
        try:
            m = measure(backend, "tiny_mlp")
        finally:
            done.set()
            killer.join()
    assert len(killed) == 2
    assert m.status == "ok", m.reason


def test_a_worker_whose_caller_is_killed_stops_at_once():
    # kill -9 of a tune mid-measurement: its worker must not go on timing loops beside the
    # tune that resumes (the caller's device lock died with the caller)
    import time

    code = (
        "import autoplace, sys; b = autoplace.SubprocessBackend(); b.devices(); "
        "print(b.process.pid, flush=True); "
        f"autoplace.measure({str(model('hang'))!r}, batch_size=4, backend=b)"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    ) as caller:
        worker = int(caller.stdout.readline())
        time.sleep(1.0)  # the worker is measuring (hanging in the step)
        caller.kill()
    deadline = time.monotonic() + 120  # it goes within 0.2 s; a busy machine may be slower
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(worker), "the worker outlived its killed caller"


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
