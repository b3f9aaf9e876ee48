"""A window of fresh workers: each configuration in a process of its own, their timed
chunks in turns across the processes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import FAST, model, request, write_model

import autoplace
from autoplace import BadInputError, SubprocessBackend

#: Every test here starts measurement workers (JAX in fresh processes).
pytestmark = pytest.mark.slow


@pytest.mark.slow
def test_fresh_processes_take_turns_and_load_the_real_compile_from_the_cache() -> None:
    reqs = [
        request(model("tiny_mlp"), "mlp", FAST, batch_size=4),
        request(model("tiny_mlp"), "mlp", FAST, batch_size=8),
    ]
    with SubprocessBackend() as backend:
        searched = backend.measure_together(reqs)
        shared = backend.process.pid
        heard: list[autoplace.measuring.Progress] = []
        fresh = backend.measure_fresh(reqs, heard.append)
        assert backend.process.pid == shared  # the shared worker is left as it was
    for before, m in zip(searched, fresh, strict=True):
        assert m.status == "ok", m.reason
        assert m.fresh_process is True and before.fresh_process is False
        # loaded from the persistent cache, reported with the compile that stored it
        assert m.compile_cache == "hit" and before.compile_cache == "miss"
        assert m.compile_s == before.compile_s and m.compile_cached
        assert m.worker_start_s > 0 and m.machine.others_running is not None
    a, b = fresh
    assert a.interleave_id == b.interleave_id and a.interleaved_with == 1
    assert a.fed.timed == b.fed.timed  # chunk i of each in one turn
    assert any("fresh worker" in p.what for p in heard)
    assert any("turn" in p.what for p in heard)


NEEDS_ENV = """
import os

import numpy as np

import autoplace


@autoplace.workload()
def needs_env(width, dtype):
    if os.environ.get("AUTOPLACE_TEST_MARK") != "set":
        raise RuntimeError("AUTOPLACE_TEST_MARK is not in this process's environment")
    return autoplace.Workload(
        state=np.ones(4, dtype),
        step=lambda s, b: s * b.mean(),
        make_batch=lambda n, rng: rng.random((n, 4)).astype(dtype),
        kind="infer",
    )
"""


@pytest.mark.slow
def test_a_fresh_worker_starts_with_its_requests_environment(tmp_path: Path) -> None:
    plain = request(write_model(tmp_path, NEEDS_ENV), "needs_env", FAST)
    marked = dataclasses.replace(plain, env=(("AUTOPLACE_TEST_MARK", "set"),))
    with SubprocessBackend() as backend:
        with_env, without = backend.measure_fresh([marked, plain])  # one started, one forked
        with pytest.raises(BadInputError, match="environment of its own"):
            backend.measure_together([marked])  # the shared worker's environment is set
    assert with_env.status == "ok", with_env.reason
    assert with_env.environment == ("AUTOPLACE_TEST_MARK=set",)
    assert without.status == "error" and "AUTOPLACE_TEST_MARK" in without.reason


@pytest.mark.slow
def test_a_configuration_failing_in_a_fresh_window_drops_out_and_the_others_go_on() -> None:
    reqs = [request(model("tiny_mlp"), "mlp", FAST), request(model("nan"), "nan", FAST)]
    with SubprocessBackend() as backend:
        good, bad = backend.measure_fresh(reqs)
    assert good.status == "ok" and bad.status == "nonfinite"
    assert good.fresh_process is True


def _gone(pids: list[int], within_s: float = 120.0) -> None:
    """Wait until none of ``pids`` runs (a zombie counts as ended); generous: only a
    failure waits it out."""
    import time

    def running(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False

    deadline = time.monotonic() + within_s
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(running(p) for p in pids), "the window's processes outlived the kill"


def _kill_the_worker(backend: SubprocessBackend) -> None:
    import os
    import signal

    os.kill(backend._fresh[1].process.pid, signal.SIGKILL)


def _kill_the_fork_server(backend: SubprocessBackend) -> None:
    import os
    import signal

    children = [w.process.pid for w in backend._fresh]
    os.kill(backend._forks._process.pid, signal.SIGKILL)
    _gone(children)  # each follows its server within 0.2 s: now mid-window, all gone


@pytest.mark.slow
@pytest.mark.parametrize("kill", [_kill_the_worker, _kill_the_fork_server])
def test_a_window_killed_from_outside_mid_window_is_measured_again_in_new_processes(kill) -> None:
    # kill -9 of one of the window's processes, or of the fork server they came from, while
    # their loops are timed in turns: no configuration failed, so none is a ``crash``; the
    # window is measured again whole, in new processes (started from scratch when the
    # fork server is gone).
    reqs = [
        request(model("tiny_mlp"), "mlp", FAST, batch_size=4),
        request(model("tiny_mlp"), "mlp", FAST, batch_size=8),
    ]
    heard: list[str] = []
    killed: list[bool] = []
    with SubprocessBackend() as backend:
        backend.measure_together(reqs)  # the search's compiles, as in a tune

        def on(p: autoplace.measuring.Progress) -> None:
            heard.append(p.what)
            if "turn" in p.what and not killed:
                killed.append(True)
                kill(backend)

        fresh = backend.measure_fresh(reqs, on)
    for m in fresh:
        assert m.status == "ok", m.reason
        assert m.fresh_process is True
    assert fresh[0].interleave_id == fresh[1].interleave_id  # one window, both in it
    (again,) = [h for h in heard if "again in new processes" in h]
    assert "from outside" in again or "fork server" in again
    assert sum("starting 2 fresh worker" in h for h in heard) == 2


@pytest.mark.slow
def test_a_window_process_killed_while_it_starts_is_started_again(monkeypatch) -> None:
    # The kill lands before the worker has answered that it started: once an "exit 1"
    # pointing to an empty log; now the window in new processes.
    import os
    import signal

    from autoplace.measuring._worker import Worker

    reqs = [request(model("tiny_mlp"), "mlp", FAST, batch_size=4)]
    with SubprocessBackend() as backend:
        backend.devices()  # the shared worker and the fork server started
        real, killed = Worker.ready, []

        def ready(self):
            if not killed:
                os.kill(self.process.pid, signal.SIGKILL)
                killed.append(self.process.pid)
            return real(self)

        monkeypatch.setattr(Worker, "ready", ready)
        (m,) = backend.measure_fresh(reqs)
    assert killed and m.status == "ok", m.reason
