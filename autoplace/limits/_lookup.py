"""The machine's limits, measured once per hardware and software and cached."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

from autoplace.errors import BadInputError, WorkerError, first_line
from autoplace.host import Cache, machine_key
from autoplace.limits._values import DeviceLimits, Figure, MachineLimits


@dataclasses.dataclass(frozen=True)
class LimitsRequest:
    """What :func:`machine_limits` is asked.

    Attributes:
        refresh: measure again, even when the cache holds this machine's limits.
        seconds: each timed window's length.
        windows: timed windows per figure (the median is the limit, the slowest and the
            fastest its spread).
        timeout_s: the probe's whole allowance before it is given up.
    """

    refresh: bool = False
    seconds: float = 0.25
    windows: int = 5
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise BadInputError(f"seconds={self.seconds!r}: each window lasts a positive time")
        if isinstance(self.windows, bool) or not isinstance(self.windows, int) or self.windows < 1:
            raise BadInputError(f"windows={self.windows!r}: time each figure in 1 or more windows")
        if not self.timeout_s > 0:
            raise BadInputError(f"timeout_s={self.timeout_s!r}: give the probe a positive time")


def machine_limits(
    request: LimitsRequest | None = None,
    *,
    cache: Any = None,
    on_progress: Callable[[str], None] | None = None,
) -> MachineLimits:
    """This machine's limits (see :class:`DeviceLimits`): from the cache, under the
    hardware and software key ``recommend()`` uses; else measured by the probe in a fresh
    process (holding the machine's timing lock, as a tune does) and cached.
    ``cache``: an :class:`autoplace.host.Cache` (default: the user's)."""
    request = request or LimitsRequest()
    cache = cache if cache is not None else Cache()
    key = machine_key(cache, worker=_worker)
    assert key is not None  # devices listed when not cached
    path = cache.limits_path(_digest(key))
    held = None if request.refresh else _held(cache, path, key, say_damaged=True)
    if held is not None:
        return held
    limits = _measure(request, key, on_progress)
    cache.write(path, limits.as_dict())
    return limits


def cached_limits(cache: Any = None, backend: Any = None) -> MachineLimits | None:
    """This machine's limits if the cache holds them (never measured here, nor the devices
    listed: a tune or an explanation does not wait on a probe or a worker); ``backend``
    lists the devices, if given."""
    cache = cache if cache is not None else Cache()
    key = machine_key(cache, backend)
    if key is None:
        return None
    return _held(cache, cache.limits_path(_digest(key)), key, say_damaged=False)


def _worker() -> Any:
    """A measurement worker to list this machine's devices in (imported only when the
    cache does not hold them)."""
    from autoplace.measuring import SubprocessBackend

    return SubprocessBackend()


def _held(cache: Any, path: Any, key: Mapping[str, Any], say_damaged: bool) -> MachineLimits | None:
    """The limits cached at ``path`` if they were measured under ``key``; a damaged entry
    is ``None``, and said (once) where ``say_damaged``."""
    entry = cache.read(path)
    if entry is None:
        return None
    try:
        held = MachineLimits.from_dict(entry, cached=True)
    except ValueError:
        if say_damaged:
            cache.damaged(path)
        return None
    return held if held.key == key else None


def _digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _measure(
    request: LimitsRequest, key: Mapping[str, Any], on_progress: Callable[[str], None] | None
) -> MachineLimits:
    from autoplace.measuring import timing_lock

    say = on_progress or (lambda line: None)
    command = [sys.executable, "-m", "autoplace.limits._probe",
               "--seconds", str(request.seconds), "--windows", str(request.windows)]  # fmt: skip
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with timing_lock(["cpu:0"], on_wait=say):
        say(
            "measuring this machine's limits: peak FLOP/s, memory and host-to-device "
            "bandwidth, dispatch floor (a fresh process, once per hardware and software)"
        )
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=request.timeout_s)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise WorkerError(
                f"the limits probe took over {request.timeout_s:.0f} s and was stopped; "
                "rerun when the machine is idle, or with fewer --windows"
            ) from None
    if done.returncode != 0 or not done.stdout.strip():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise WorkerError(f"the limits probe failed (exit {done.returncode}): {last[:300]}")
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
        devices = tuple(_device(d) for d in found)
    except (ValueError, KeyError, TypeError) as exc:
        raise WorkerError(f"the limits probe answered what autoplace cannot read: "
                          f"{first_line(exc)}") from None  # fmt: skip
    return MachineLimits(
        devices=devices,
        key=dict(key),
        measured=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        load=load,
    )


def _device(raw: Mapping[str, Any]) -> DeviceLimits:
    """A device's limits from the probe's per-window figures."""
    return DeviceLimits(
        device=raw["device"],
        kind=raw["kind"],
        peak_flops={p: Figure.of(v) for p, v in raw["peak_flops"].items()},
        matmul_size=int(raw["matmul_size"]),
        memory_bandwidth=Figure.of(raw["memory_bandwidth"]),
        host_to_device=Figure.of(raw["host_to_device"]),
        dispatch_floor=Figure.of(raw["dispatch_floor"]),
        all_reduce=Figure.of(raw["all_reduce"]) if raw.get("all_reduce") else None,
        all_reduce_devices=raw.get("all_reduce_devices"),
    )
