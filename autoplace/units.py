"""Reading and writing the quantities people type and read: durations, sizes, rates."""

from __future__ import annotations

import re
from decimal import Decimal

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
    value = int(Decimal(match[1]) * _SIZE_UNITS[unit])  # exact: 8.2MB is 8200000
    if value <= 0:
        raise BadInputError(f"size must be positive, got {text!r}")
    return value


def seconds(value: float | None) -> str:
    """Three significant figures in the largest unit that keeps the number at least 1."""
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        scaled = float(f"{value / scale:.3g}")  # round first, so 999.7 ms becomes 1.00 s
        if scaled >= 1 or unit == "µs":
            break
    if unit == "s" and scaled >= 1000:
        return f"{value:.0f} s"
    return f"{scaled:.3g} {unit}" if scaled < 100 else f"{scaled:.0f} {unit}"


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


def parse_list(text: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise BadInputError(f"empty list {text!r}: give comma-separated values")
    return items


def parse_ints(text: str, what: str) -> list[int]:
    """A comma-separated list (``16,32,48``) or a power-of-two range (``8..1024``)."""
    try:
        if ".." in text:
            low_text, high_text = text.split("..", 1)
            low, high = int(low_text), int(high_text)
            if low < 1 or high < low:
                raise ValueError
            values, v = [], 1
            while v <= high:
                if v >= low:
                    values.append(v)
                v *= 2
            if not values:
                raise ValueError
            return values
        values = [int(t) for t in parse_list(text)]
    except ValueError:
        raise BadInputError(
            f"cannot read {what} {text!r}: give a list like 16,32,64 or a range like 8..1024 "
            "(powers of two)"
        ) from None
    if any(v < 1 for v in values):
        raise BadInputError(f"{what} must be at least 1, got {text!r}")
    return values
