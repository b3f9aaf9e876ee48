"""This machine's devices, without importing JAX after the first time.

Listing JAX's devices means importing JAX (a second or more), which a cached look-up
must not pay. So the devices are listed once by a measurement worker and kept in the
cache under a *probe*: the cheap facts that decide what JAX would see (CPU model and
count, memory, the GPU and accelerator nodes in ``/dev`` and ``/proc`` (with the NVIDIA
driver's version), the variables
that hide or choose devices, and the JAX packages installed). Change any of them and the
devices are listed again.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from autoplace.devices import DeviceInfo
from autoplace.host._cache import Cache
from autoplace.host._identity import cpu_model, hardware, installed, software

#: Environment variables that change which devices JAX sees.
_DEVICE_ENV = (
    "JAX_PLATFORMS",
    "JAX_PLATFORM_NAME",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "TPU_VISIBLE_CHIPS",
    "XLA_FLAGS",
)


def probe() -> dict[str, Any]:
    """The cheap facts that decide what devices JAX would list here (no host name)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = None
    gpus = []
    found = sorted(glob.glob("/proc/driver/nvidia/gpus/*/information"))
    for info in ["/proc/driver/nvidia/version", *found]:
        with contextlib.suppress(OSError):
            gpus.append(Path(info).read_text())
    return {
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "memory": memory,
        "nodes": sorted(
            os.path.basename(p) for p in glob.glob("/dev/nvidia[0-9]*") + glob.glob("/dev/accel*")
        )
        + (["kfd"] if os.path.exists("/dev/kfd") else []),
        "gpus": gpus,
        "env": {k: os.environ[k] for k in _DEVICE_ENV if k in os.environ},
        "jax": installed(),
    }


def probe_key(facts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def cached_devices(cache: Cache) -> list[DeviceInfo] | None:
    """This machine's devices as cached for this probe, or ``None`` (never lists them)."""
    entry = cache.read(cache.machine_path(probe_key(probe())))
    if entry is not None:
        try:
            return [DeviceInfo(**d) for d in entry["devices"]]
        except (KeyError, TypeError):
            pass  # damaged: listed again by machine_devices
    return None


def machine_devices(
    cache: Cache, backend: Any = None, *, worker: Callable[[], Any] | None = None
) -> list[DeviceInfo] | None:
    """This machine's devices: from ``backend`` when given; else as cached for this probe;
    else listed by a measurement worker that ``worker()`` starts (a backend to use as a
    context manager: JAX is imported there, once) and cached; ``None`` without ``worker``
    (never lists them)."""
    if backend is not None:
        return list(backend.devices())
    found = cached_devices(cache)
    if found is not None or worker is None:
        return found
    facts = probe()  # before the worker starts, as the devices it lists are for these
    with worker() as started:
        devices = started.devices()
    cache.write(cache.machine_path(probe_key(facts)), {"devices": [d.__dict__ for d in devices]})
    return devices


def remember_devices(cache: Cache, devices: Sequence[DeviceInfo]) -> None:
    """Cache ``devices`` as this machine's, for this probe (a look-up then lists none)."""
    cache.write(cache.machine_path(probe_key(probe())), {"devices": [d.__dict__ for d in devices]})


def machine_key(
    cache: Cache, backend: Any = None, *, worker: Callable[[], Any] | None = None
) -> dict[str, Any] | None:
    """The hardware and software parts of this machine's key (its devices as
    :func:`machine_devices` finds them): what machine-wide figures, such as its measured
    limits, hold for; ``None`` when neither ``backend``, the cache nor a ``worker`` lists
    the devices."""
    devices = machine_devices(cache, backend, worker=worker)
    if devices is None:
        return None
    return {"hardware": hardware(devices), "software": software()}
