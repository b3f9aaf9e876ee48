"""What the measurement worker reports about the machine's devices."""

from __future__ import annotations

import dataclasses

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
