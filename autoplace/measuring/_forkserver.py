"""Fresh workers forked from a process that has imported JAX and nothing more.

A fresh worker started from scratch spends most of its start importing Python, NumPy,
JAX and the engine: 1.6 s of a 2-core CPU's time, paid by every process of every
window of a tune's verdict. :class:`ForkServer` pays it once. Its process imports those
modules and waits. Each fresh worker is forked from it and goes on as a started one
would: :func:`~autoplace.measuring._serve.serve_worker` on its own connection and log,
in a session of its own. It starts in about a tenth of the time.

A forked worker is as fresh as a started one where it matters to a timing. The server
has created no JAX backend, touched no device, built no model, compiled nothing and
allocated no buffer, so the child's XLA client, allocator arenas and caches are all its
own, made when it first uses them, as in the user's training process. Python's own
heap after the imports is the one thing carried over, and a started process builds the
same one. The server runs no thread of its own. NumPy's BLAS pool is the only other
thread, and it is fork-safe.

A worker that must start with an environment of its own (a remedy: ``LD_PRELOAD`` or
``GLIBC_TUNABLES``, read when a process starts) is never forked: the caller starts it
from scratch (see ``SubprocessBackend.measure_fresh``).

The protocol is one ``SOCK_SEQPACKET`` socket, one JSON message per request and reply:
``ping`` answers once the imports are done; ``fork`` (the child's end of its connection
passes as a file descriptor) answers the child's pid; ``poll`` answers a child's exit
code (reaped by the server, its parent), or ``None`` while it runs. The server exits when
the socket closes or its caller dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from autoplace.host import process_alive

#: How the server starts: a fresh interpreter calling :func:`serve` on its end of the socket.
_SERVER_BOOT = (
    "import sys; from autoplace.measuring._forkserver import serve; serve(int(sys.argv[1]))"
)
#: How long the server may take to import JAX and answer its first request.
_START_TIMEOUT_S = 300.0
#: How often the server, idle, looks whether its caller still lives.
_CALLER_POLL_S = 0.2
#: How often :meth:`Forked.wait` asks whether the child has ended.
_WAIT_POLL_S = 0.01
_MESSAGE_BYTES = 1 << 16


class ForkServer:
    """Forks fresh workers from one process that has imported JAX (see the module
    docstring). Started on the first :meth:`fork`; thread-safe; :meth:`close` ends it.

    Args:
        log: where the server writes (its children write to logs of their own).
        env: the environment the server, and so every child, runs with.
    """

    def __init__(self, log: Path, env: dict[str, str]) -> None:
        self._log, self._env = log, env
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        #: Set once the server failed: later forks start workers from scratch.
        self.broken = False

    def launch(self) -> None:
        """Start the server, not waiting for it (:meth:`ready` does). Optional: the first
        :meth:`fork` starts it otherwise; started beside another process's start-up, its
        imports are off the critical path."""
        with self._lock:
            if not self.broken and self._sock is None:
                try:
                    self._launch()
                except OSError:
                    self._break()

    def ready(self) -> bool:
        """Wait until the server has imported what it forks with; false if it failed (later
        forks then start their workers from scratch)."""
        self.launch()
        with self._lock:
            if self.broken:
                return False
            try:
                self._ask({"op": "ping"})
            except (OSError, ValueError):
                self._break()
        return not self.broken

    def fork(self, connection: int, log: Path, boot: dict[str, Any]) -> Forked | None:
        """A child running the worker loop on file descriptor ``connection``, writing to
        ``log``, started with ``boot``; ``None`` when the server cannot fork (it failed to
        start, or died): the caller then starts the worker from scratch."""
        message = {"op": "fork", "log": str(log), "boot": boot}
        with self._lock:
            if self.broken:
                return None
            try:
                if self._sock is None:
                    self._launch()
                reply = self._ask(message, fds=[connection])
            except (OSError, ValueError):
                self._break()
                return None
        return Forked(self, int(reply["pid"]))

    def poll(self, pid: int) -> tuple[int | None, bool]:
        """Child ``pid``'s exit code as :meth:`subprocess.Popen.poll` gives it (minus the
        signal that killed it), ``None`` while it runs; and whether the server reported it.
        With the server gone (a child then has no parent to report its code, and ends
        within 0.2 s: it watches the server) a child that ended reads as code 1, not
        reported."""
        with self._lock:
            if not self.broken and self._sock is not None:
                try:
                    return self._ask({"op": "poll", "pid": pid})["code"], True
                except (OSError, ValueError):
                    self._break()
        return (None if process_alive(pid) else 1), False

    def close(self) -> None:
        """End the server (its children are the callers' to stop). May be called twice."""
        with self._lock:
            self._break()

    # --- internals -------------------------------------------------------------------

    def _launch(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._process = start_python(_SERVER_BOOT, theirs.fileno(), [], self._log, self._env)
        theirs.close()
        ours.settimeout(_START_TIMEOUT_S)  # the first reply waits for the imports
        self._sock = ours

    def _ask(self, message: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        assert self._sock is not None
        data = json.dumps(message).encode()
        if fds:
            socket.send_fds(self._sock, [data], fds)
        else:
            self._sock.send(data)
        reply = self._sock.recv(_MESSAGE_BYTES)
        if not reply:
            raise OSError("the fork server closed its socket")
        answer = json.loads(reply)
        if "error" in answer:
            raise OSError(answer["error"])
        return answer

    def _break(self) -> None:
        self.broken = True
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)  # it exits on the closed socket
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait(timeout=30)
            self._process = None


class Forked:
    """A forked worker's handle, as much of :class:`subprocess.Popen`'s as a worker's
    caller uses: ``pid``, :meth:`poll`, :meth:`wait`, :meth:`kill`."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self._server, self.pid = server, pid
        self.returncode: int | None = None
        #: Whether the fork server was gone when last asked for its code: the code is then
        #: unknown, and its end most likely the server's (a child follows its server
        #: within 0.2 s), not its own doing.
        self.orphaned = False

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode, reported = self._server.poll(self.pid)
            self.orphaned = not reported
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"fresh worker {self.pid}", timeout or 0.0)
            time.sleep(_WAIT_POLL_S)
        return code

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def start_python(
    code: str, fd: int, args: list[str], log: Path, env: dict[str, str]
) -> subprocess.Popen:
    """A fresh interpreter running ``code`` with ``fd`` (its end of a socket) and ``args`` as
    its arguments, writing to ``log``, with ``env`` over this process's environment, in a
    session of its own (a Ctrl-C at the terminal reaches only the caller)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", code, str(fd), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            pass_fds=(fd,),
            env={**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false", **env},
            start_new_session=True,
        )


def serve(fd: int) -> None:
    """The server's loop (see the module docstring): import, then answer until the socket
    closes or the caller dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    # What every worker imports before it measures: NumPy, JAX, the engine. Never more
    # (a model file's own imports could touch a device).
    import autoplace.measuring._engine
    import autoplace.measuring._serve  # noqa: F401

    sock = socket.socket(fileno=fd)
    sock.settimeout(_CALLER_POLL_S)
    caller = os.getppid()
    codes: dict[int, int] = {}
    while True:
        try:
            data, fds, _flags, _address = socket.recv_fds(sock, _MESSAGE_BYTES, 1)
        except TimeoutError:
            if os.getppid() != caller:
                os._exit(0)  # the caller died: its children follow us (they watch us)
            continue
        except OSError:
            os._exit(0)
        if not data:
            os._exit(0)  # the caller closed the socket
        message = json.loads(data)
        if message["op"] == "fork":
            sys.stdout.flush()
            sys.stderr.flush()
            server = os.getpid()
            pid = os.fork()
            if pid == 0:
                _child(sock, fds[0], message, server)  # never returns
            for passed in fds:
                os.close(passed)
            reply: dict[str, Any] = {"pid": pid}
        elif message["op"] == "ping":
            reply = {"ok": True}
        elif message["op"] == "poll":
            reply = {"code": _code(int(message["pid"]), codes)}
        else:
            reply = {"error": f"unknown operation {message['op']!r}"}
        sock.send(json.dumps(reply).encode())


def _code(pid: int, codes: dict[int, int]) -> int | None:
    """Child ``pid``'s exit code, reaped once and kept; ``None`` while it runs."""
    if pid not in codes:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 1  # not a child of ours (or reaped already): nothing to report
        if done == 0:
            return None
        codes[pid] = os.waitstatus_to_exitcode(status)
    return codes[pid]


def _child(server: socket.socket, fd: int, message: dict[str, Any], parent: int) -> None:
    """A forked worker: its own session and log, then the worker loop, which ends with
    ``parent`` (the server, whose pid the child cannot safely read once forked); never
    returns."""
    code = 0
    try:
        server.close()
        os.setsid()  # a Ctrl-C at the terminal reaches only the caller, as for a started one
        log = os.open(message["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        from autoplace.measuring._serve import serve_worker

        serve_worker(fd, message["boot"], caller=parent)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
