"""A process killed from outside fails no configuration: a window that loses one is
measured again in new processes, the shared worker's measurement once more; one killed
every time ends the call with ``KilledFromOutsideError``, storing nothing against the
configuration. Quick: scripted workers and windows, no process started (the real kills
are in test_window.py and tests/tuning/test_loop.py)."""

from __future__ import annotations

import pytest
from synthetic import measured

from autoplace import KilledFromOutsideError, Measurement, SubprocessBackend, WorkerError
from autoplace.config import Config
from autoplace.measuring import _client
from autoplace.measuring._messages import Chunk, Done, Finish, Prepare, Warm
from autoplace.measuring._window import FreshWindow, KilledFromOutside
from autoplace.measuring._worker import Death, Stop
from autoplace.settings import MeasureRequest, MeasureSettings

SETTINGS = MeasureSettings(time_cap_s=0.01, fed_time_cap_s=0.01, min_samples=3, max_samples=4)
KILLED = "the worker was killed by SIGKILL (from outside; the kernel's log names no oom kill)"
REASONS = {
    Death.OUTSIDE: KILLED,
    Death.FAULT: "the worker was killed by SIGSEGV",
    Death.EXITED: "the worker exited with code 1",
}


def req(batch: int) -> MeasureRequest:
    return MeasureRequest("m.py", "0", "w", Config("cpu:0", batch, "float32"), SETTINGS)


def ok(request: MeasureRequest) -> Measurement:
    c = request.config
    return measured("ok", "", c.device, c.batch_size, c.precision, c.width, step_s=1e-3)


class Scripted:
    """A fresh worker's stand-in: answers as a healthy one would, but dies (``death``) when
    sent a message of type ``dies_on`` (``"ready"``: while it starts)."""

    def __init__(self, request: MeasureRequest, dies_on: type | str | None = None,
                 death: Death = Death.OUTSIDE) -> None:  # fmt: skip
        self.request, self.dies_on, self.death = request, dies_on, death
        self.start_s, self.stopped, self._sent = 0.01, False, None

    def launch(self) -> None:
        pass

    def _stop(self) -> Stop:
        return Stop("crash", REASONS[self.death], None, self.death)

    def log_hint(self) -> str:
        return "; it wrote nothing to its log"

    def ready(self) -> Done | Stop:
        return self._stop() if self.dies_on == "ready" else Done([])

    def send(self, message: object) -> None:
        self._sent = message

    def answer(self, timeout: float, on_progress: object = None) -> Done | Stop:
        message = self._sent
        if self.dies_on is not None and isinstance(message, self.dies_on):  # type: ignore[arg-type]
            return self._stop()
        if isinstance(message, Prepare):
            return Done(None)
        if isinstance(message, Warm):
            return Done(1e-3)
        if isinstance(message, Chunk):
            return Done(1e-3 * message.steps)
        assert isinstance(message, Finish)
        return Done(ok(self.request))

    def call(self, message: object, timeout: float, on_progress: object = None) -> Done | Stop:
        self.send(message)
        return self.answer(timeout, on_progress)

    def stop(self, kill: bool = False) -> None:
        self.stopped = True


def window(dies_on: type | str | None, death: Death = Death.OUTSIDE) -> FreshWindow:
    requests = [req(8), req(16)]
    workers = [Scripted(requests[0]), Scripted(requests[1], dies_on, death)]
    return FreshWindow(workers, requests, None)  # type: ignore[arg-type]


def test_an_undisturbed_scripted_window_measures_both() -> None:
    assert [m.status for m in window(None).run()] == ["ok", "ok"]


@pytest.mark.parametrize("when", ["ready", Prepare, Warm, Chunk, Finish])
def test_a_window_whose_process_is_killed_from_outside_fails_no_configuration(when) -> None:
    # At start-up, set-up, warm-up, mid-timing or at the end: never a ``crash``.
    with pytest.raises(KilledFromOutside, match="SIGKILL"):
        window(when).run()


@pytest.mark.parametrize("when", [Prepare, Chunk, Finish])
def test_a_window_process_dying_of_its_own_drops_its_configuration_out(when) -> None:
    good, bad = window(when, Death.FAULT).run()
    assert good.status == "ok" and bad.status == "crash" and "SIGSEGV" in bad.reason


def test_a_window_process_failing_to_start_on_its_own_is_a_worker_error() -> None:
    with pytest.raises(WorkerError, match="failed to start: the worker exited with code 1; it"):
        window("ready", Death.EXITED).run()


class _Windows:
    """Stands in for FreshWindow: killed from outside in the first ``kills`` windows."""

    def __init__(self, kills: int) -> None:
        self.kills, self.made = kills, []

    def __call__(self, workers, requests, on_progress) -> _Windows:
        self.made.append(workers)
        self.requests = requests
        return self

    @property
    def workers(self):
        return self.made[-1]

    def run(self) -> list[Measurement]:
        if len(self.made) <= self.kills:
            raise KilledFromOutside(KILLED)
        return [ok(r) for r in self.requests]


@pytest.fixture
def backend():
    b = SubprocessBackend()  # starts no process until it measures
    yield b
    b.close()


@pytest.mark.parametrize("kills", [1, 2])
def test_a_window_killed_from_outside_is_measured_again_in_new_processes(
    backend: SubprocessBackend, monkeypatch: pytest.MonkeyPatch, kills: int
) -> None:
    windows = _Windows(kills)
    monkeypatch.setattr(_client, "FreshWindow", windows)
    heard = []
    out = backend.measure_fresh([req(8), req(16)], heard.append)
    assert [m.status for m in out] == ["ok", "ok"]
    assert len(windows.made) == kills + 1
    firsts = {id(w) for ws in windows.made for w in ws}
    assert len(firsts) == 2 * (kills + 1)  # new workers (new processes) each time
    assert sum("the window again in new processes" in p.what for p in heard) == kills


def test_a_window_killed_from_outside_every_time_ends_with_nothing_stored(
    backend: SubprocessBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    windows = _Windows(kills=99)
    monkeypatch.setattr(_client, "FreshWindow", windows)
    with pytest.raises(KilledFromOutsideError, match="killed from outside 3 times") as info:
        backend.measure_fresh([req(8), req(16)])
    assert "SIGKILL" in str(info.value) and "run the same command again" in str(info.value)
    assert len(windows.made) == 3


def _shared(backend: SubprocessBackend, monkeypatch: pytest.MonkeyPatch, replies: list) -> list:
    """The shared worker's replies, scripted: each call takes the next."""
    calls = []

    def call(message, timeout, on_progress=None):
        calls.append(message)
        reply = replies.pop(0)
        return Done([ok(r) for r in message.requests]) if reply == "ok" else reply

    monkeypatch.setattr(backend, "_call", call)
    return calls


def test_the_shared_workers_measurement_killed_from_outside_twice_stores_nothing(
    backend: SubprocessBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = Stop("crash", KILLED, None, Death.OUTSIDE)
    calls = _shared(backend, monkeypatch, [outside, "ok"])
    assert backend.measure(req(8)).status == "ok"  # killed once: measured again
    assert len(calls) == 2
    _shared(backend, monkeypatch, [outside, outside])
    with pytest.raises(KilledFromOutsideError, match="2 times in a row"):
        backend.measure(req(8))


def test_the_shared_workers_own_crash_twice_is_the_configurations(
    backend: SubprocessBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    segfault = Stop("crash", "the worker was killed by SIGSEGV", None, Death.FAULT)
    outside = Stop("crash", KILLED, None, Death.OUTSIDE)
    _shared(backend, monkeypatch, [outside, segfault])
    m = backend.measure(req(8))
    assert m.status == "crash" and "SIGSEGV" in m.reason
