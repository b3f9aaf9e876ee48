"""Reading and writing the quantities people type and read: durations, sizes, rates."""

from __future__ import annotations

import re

from autoplace.errors import BadInputError

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "kib": 2**10, "ki": 2**10,
    "m": 10**6, "mb": 10**6, "mib": 2**20, "mi": 2**20,
    "g": 10**9, "gb": 10**9, "gib": 2**30, "gi": 2**30,
    "t": 10**12, "tb": 10**12, "tib": 2**40, "ti": 2**40,
}  # fmt: skip


def parse_size(text: str) -> int:
    """``"8GiB"`` -> 8589934592. Bare numbers are bytes."""
    match = _SIZE_RE.match(text)
    unit = (match[2] or "").lower() if match else None
    if match is None or unit not in _SIZE_UNITS:
        raise BadInputError(f"cannot read size {text!r}: write e.g. 512MiB, 8GiB or 4000000000")
    value = int(float(match[1]) * _SIZE_UNITS[unit])
    if value <= 0:
        raise BadInputError(f"size must be positive, got {text!r}")
    return value


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


def size(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{int(value)} B"


def rate(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:.1f} {unit}".rstrip()


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"
