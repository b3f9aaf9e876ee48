"""Real storage faults for the tests and ``benchmarks/storage_fault_benchmark.py``: a TCP
proxy that takes a server away the ways networks do, and a full disk.

Between autoplace and a real PostgreSQL, MariaDB or Redis server: it forwards bytes both
ways until told to refuse connections (the server down), drop the connections it holds
(a reset), go silent (accept, then never answer), or delay every packet. Threads, not
asyncio, so that a test can drive it from any thread.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path


class FaultProxy:
    """Listens on 127.0.0.1 (``port``, chosen by the OS) and forwards to ``target``.

    Modes: ``pass`` (forward), ``silent`` (hold every byte, both ways, until the mode
    changes; connections are still accepted), ``delay`` (forward each chunk after
    ``delay_s``). :meth:`down` refuses new connections and resets the ones held;
    :meth:`up` listens again on the same port; :meth:`drop` resets the connections held.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._mode, self.delay_s = "pass", 0.0
        self._conns: set[socket.socket] = set()
        #: Armed by :meth:`lose_reply_to`: the marker, and the server sockets whose next
        #: reply is lost.
        self._marker: bytes | None = None
        self._doomed: set[socket.socket] = set()
        #: How many replies were lost so.
        self.lost = 0
        self._closed = False
        self._listener: socket.socket | None = None
        self.port = 0
        self._listen()

    @property
    def url_host(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- faults -----------------------------------------------------------------------

    def down(self) -> None:
        """The server goes away: connecting is refused, the connections held are reset."""
        listener = self._listener
        self._listener = None
        if listener is not None:  # shut down first: close() alone leaves accept() listening
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        self.drop()

    def up(self) -> None:
        """The server is back, at the same address, forwarding."""
        self.set_mode("pass")
        if self._listener is None:
            self._listen()

    def drop(self) -> None:
        """Reset every connection held (RST), as a restarting server or a NAT does."""
        with self._lock:
            conns, self._conns = list(self._conns), set()
            self._changed.notify_all()
        for conn in conns:
            _reset(conn)

    def lose_reply_to(self, marker: bytes) -> None:
        """The next request holding ``marker`` reaches the server, which acts on it; its
        reply never comes back: the connection is reset instead (a commit that happened,
        its acknowledgement lost)."""
        with self._lock:
            self._marker = marker

    def set_mode(self, mode: str, delay_s: float = 0.0) -> None:
        assert mode in ("pass", "silent", "delay"), mode
        with self._lock:
            self._mode, self.delay_s = mode, delay_s
            self._changed.notify_all()

    def down_for(self, seconds: float) -> threading.Timer:
        """Down now, up again ``seconds`` later (the timer that brings it back)."""
        self.down()
        timer = threading.Timer(seconds, self.up)
        timer.start()
        return timer

    def close(self) -> None:
        self._closed = True
        self.set_mode("pass")
        self.down()

    # -- forwarding -------------------------------------------------------------------

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                self._conns.update((client, server))
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                with self._lock:
                    while self._mode == "silent" and src in self._conns:
                        self._changed.wait()
                    if src not in self._conns:
                        break
                    delay = self.delay_s if self._mode == "delay" else 0.0
                    if self._marker is not None and self._marker in chunk:
                        self._marker = None
                        self._doomed.add(dst)
                    lose = src in self._doomed
                    self._doomed.discard(src)
                    self.lost += lose
                if lose:
                    for sock in (src, dst):
                        _reset(sock)
                    break
                if delay:
                    time.sleep(delay)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                held = src in self._conns
                self._conns.discard(src)
                self._conns.discard(dst)
            if held:
                for sock in (src, dst):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                    sock.close()


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a reset (RST), not a graceful FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextlib.contextmanager
def full_disk(folder: Path) -> Iterator[Path]:
    """``folder`` made a tiny file system of its own (tmpfs, 256 KiB), then filled, so that
    writing there fails as on a full disk (ENOSPC); unmounted afterwards. Needs root: a
    test skips where mounting is not allowed."""
    import pytest

    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> None:
    """Fill the file system holding ``folder`` to the last byte."""
    with open(folder / "filler", "ab", buffering=0) as fh, contextlib.suppress(OSError):
        for size in (65536, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    fh.write(b"\0" * size)
