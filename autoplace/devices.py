"""The machine's devices as a worker reports them, and how several used together are named."""

from __future__ import annotations

import dataclasses

from autoplace.errors import BadInputError

#: JAX platform names that autoplace calls ``gpu``: one name, whatever the vendor.
_GPU_PLATFORMS = frozenset({"cuda", "rocm", "gpu"})


def canonical_platform(platform: str) -> str:
    """``gpu`` for any GPU platform name JAX or a user gives (``cuda``, ``rocm``), else as is."""
    return "gpu" if platform in _GPU_PLATFORMS else platform


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """One JAX device as seen from a worker: ``name`` is ``platform:index``."""

    name: str
    platform: str
    kind: str
    #: Memory the device can hand out, in bytes (host RAM for CPU devices), if known.
    memory_bytes: int | None = None


def distinct_kinds(devices: list[DeviceInfo]) -> list[DeviceInfo]:
    """The first device of each (platform, kind): identical devices measure the same."""
    seen: set[tuple[str, str]] = set()
    out = []
    for d in devices:
        if (d.platform, d.kind) not in seen:
            seen.add((d.platform, d.kind))
            out.append(d)
    return out


def device_group(first: str, count: int) -> str:
    """The name of ``count`` devices used together, from ``first`` on (``gpu:0``, 4 ->
    ``gpu:0-3``; one device keeps its own name)."""
    platform, _, index = first.partition(":")
    i = int(index or 0)
    return f"{platform}:{i}" if count == 1 else f"{platform}:{i}-{i + count - 1}"


def device_names(device: str) -> list[str]:
    """Each device of ``device`` (``gpu:0-3`` -> ``gpu:0`` ... ``gpu:3``)."""
    platform, _, span = device.partition(":")
    first, _, last = span.partition("-")
    return [f"{platform}:{i}" for i in range(int(first), int(last or first) + 1)]


def device_counts(n: int) -> list[int]:
    """The device counts a search tries on a kind with ``n`` devices: 1, 2, 4, ... and ``n``."""
    return sorted({2**i for i in range(n.bit_length()) if 2**i <= n} | {n})


def device_choices(devices: list[DeviceInfo]) -> list[str]:
    """What a search tries by default: each kind's first device alone, and where a kind has
    several devices, 2, 4, ... and all of them together (:func:`device_counts`)."""
    out = []
    for first in distinct_kinds(devices):
        n = sum(d.platform == first.platform and d.kind == first.kind for d in devices)
        out += [device_group(first.name, c) for c in device_counts(n)]
    return out


def check_device(devices: list[DeviceInfo], device: str) -> None:
    """Refuse ``device`` (one, or several together: ``gpu:0-3``) unless the machine has it."""
    names = [d.name for d in devices]
    missing = [n for n in device_names(device) if n not in names]
    if missing:
        several = (
            "; several CPU devices are emulated with JAX_NUM_CPU_DEVICES=N in the environment"
            if device.startswith("cpu")
            else ""
        )
        raise BadInputError(
            f"unknown device {missing[0]!r}: this machine has {', '.join(names)}{several}"
        )
