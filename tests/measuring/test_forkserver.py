"""The fork server: fresh workers forked from a process that has imported JAX."""

from __future__ import annotations

import os
import signal
import socket
import time
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from autoplace.measuring._forkserver import ForkServer
from autoplace.measuring._messages import Done, Exit, ListDevices

#: Every test here starts the server (JAX imported in a process of its own).
pytestmark = pytest.mark.slow


def fork(server: ForkServer, tmp_path: Path, name: str = "child"):
    """A forked worker and our end of its connection."""
    ours, theirs = socket.socketpair()
    child = server.fork(theirs.fileno(), tmp_path / f"{name}.log", {"fresh": True})
    theirs.close()
    return child, Connection(ours.detach())


def gone(pid: int, within_s: float = 120.0) -> bool:
    """Whether process ``pid`` ends within ``within_s`` (generous: only a failure waits it
    out, and a busy machine must not fail the test)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_forked_worker_answers_and_is_the_servers_child_in_a_session_of_its_own(tmp_path):
    server = ForkServer(tmp_path / "server.log", {})
    try:
        server.launch()  # started ahead, as beside the shared worker's start
        assert server.ready()
        child, conn = fork(server, tmp_path)
        assert child is not None and child.poll() is None
        conn.send(ListDevices())
        reply = conn.recv()
        assert isinstance(reply, Done) and [d.name for d in reply.value] == ["cpu:0"]
        assert os.getpgid(child.pid) == child.pid  # its own session: Ctrl-C is ours alone
        with open(f"/proc/{child.pid}/stat") as stat:
            parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        assert parent != os.getpid()  # forked by the server, not started by us
        conn.send(Exit())
        assert child.wait(timeout=30) == 0
    finally:
        server.close()


def test_a_killed_worker_reads_as_killed_and_two_forks_are_two_processes(tmp_path):
    server = ForkServer(tmp_path / "server.log", {})
    try:
        (a, _ca), (b, _cb) = fork(server, tmp_path, "a"), fork(server, tmp_path, "b")
        assert a is not None and b is not None and a.pid != b.pid
        a.kill()
        assert a.wait(timeout=30) == -signal.SIGKILL
        assert b.poll() is None  # the other lives on
        b.kill()
        assert b.wait(timeout=30) == -signal.SIGKILL
    finally:
        server.close()


def test_a_closed_server_takes_its_idle_children_with_it_and_forks_no_more(tmp_path):
    server = ForkServer(tmp_path / "server.log", {})
    child, _conn = fork(server, tmp_path)
    assert child is not None
    server.close()
    assert gone(child.pid)  # it watched its parent, the server: no orphan left measuring
    assert child.poll() is not None
    assert fork(server, tmp_path, "late")[0] is None  # the caller then starts one from scratch


def test_a_server_that_cannot_start_forks_nothing(tmp_path):
    # An interpreter that cannot find its standard library dies before it imports anything.
    server = ForkServer(tmp_path / "server.log", {"PYTHONHOME": str(tmp_path / "nowhere")})
    try:
        assert not server.ready()
        assert fork(server, tmp_path)[0] is None
        assert server.broken
    finally:
        server.close()
