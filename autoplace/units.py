"""Reading and writing the quantities people type and read: durations, sizes, rates."""

from __future__ import annotations

import math
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


def parse_size(text: str, what: str = "size") -> int:
    """``"8GiB"`` -> 8589934592; bare numbers are bytes. ``what`` names it in an error."""
    match = _SIZE_RE.match(text)
    unit = (match[2] or "").lower() if match else None
    if match is None or unit not in _SIZE_UNITS:
        raise BadInputError(f"cannot read {what} {text!r}: write e.g. 512MiB, 8GiB or 4000000000")
    value = int(Decimal(match[1]) * _SIZE_UNITS[unit])  # exact: 8.2MB is 8200000
    if value <= 0:
        raise BadInputError(f"{what} must be positive, got {text!r}: write e.g. 512MiB or 8GiB")
    return value


#: The largest deviation from float32's output a limit may allow (past 100%, nothing is
#: left out).
MOST_DEVIATION = 1.0


def parse_fraction(text: str, what: str, at_most: float | None = None) -> float | None:
    """``"5%"`` or ``"0.05"`` -> 0.05; ``"off"`` -> ``None``; over ``at_most`` refused."""
    t = text.strip().lower()
    if t in ("off", "none"):
        return None
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise BadInputError(f"cannot read {what} {text!r}: write e.g. 5% or 0.05, or off") from None
    if not 0 < value < float("inf"):
        raise BadInputError(f"{what} must be positive, got {text!r} (or off for no limit)")
    if at_most is not None and value > at_most:
        raise BadInputError(
            f"{what} must be at most {at_most:.0%}, got {text!r}: past it nothing is left "
            "out; give e.g. 5%, or off for no limit"
        )
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


def score(value: float | None, unit: str) -> str:
    """An objective's score in its unit: a duration, or a rate (``1.23 k samples/s``)."""
    if value is None:
        return "-"
    return seconds(value) if unit == "s" else f"{rate(value)} {unit}"


def size(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0:  # a fitted line's intercept can be: -10.5 MiB, never -11040101 B
        return f"-{size(-value)}"
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


def count(value: float | None) -> str:
    """A count: whole below ten thousand (``2,490``), else as a rate (``2.49 M``)."""
    if value is None:
        return "-"
    return f"{math.ceil(value):,}" if value < 1e4 else rate(value)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def parse_list(text: str, what: str = "list") -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; an empty one is refused."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise BadInputError(
            f"empty {what} {text!r}: give comma-separated values, or leave the option out "
            "for its default"
        )
    return items


def parse_ints(text: str, what: str) -> list[int]:
    """A comma-separated list (``16,32,48``) or a power-of-two range (``8..1024``)."""
    try:
        if ".." in text:
            low_text, high_text = text.split("..", 1)
            low, high = int(low_text), int(high_text)
            if low < 1 or high < low:
                raise ValueError
        else:
            values = [int(t) for t in parse_list(text, what)]
    except ValueError:
        bad = next((t for t in text.replace("..", ",").split(",") if not t.strip().isdigit()), "")
        which = f" ({bad.strip()!r} is not a whole number)" if bad.strip() else ""
        like = (
            "a list like 16,32,64 or a range like 8..1024 (powers of two)"
            if what == "batch sizes"
            else "a list of whole numbers like 64,128"
        )
        raise BadInputError(f"cannot read {what} {text!r}{which}: give {like}") from None
    if ".." in text:
        if low & (low - 1) or high & (high - 1):  # not powers of two
            raise BadInputError(
                f"{what} {text!r}: a range runs from a power of two to a power of two (the "
                f"nearest inside it: {1 << (low - 1).bit_length()}.."
                f"{2 ** (high.bit_length() - 1)}); for other sizes give a list like 3,10,100"
            )
        return [2**i for i in range(low.bit_length() - 1, high.bit_length())]
    if any(v < 1 for v in values):
        raise BadInputError(f"{what} must be at least 1, got {text!r}")
    return values


#: A ratio whose interval spans more than this factor is said alone.
CARRIED = 2.0


def ratio(value: float, low: float | None = None, high: float | None = None) -> str:
    """A ratio with its 95% interval: ``1.36x (95%: 1.29–1.43)`` (never ``± x``: it is not
    symmetric); alone where the interval is unknown or too wide (:data:`CARRIED`)."""
    if low is None or high is None or low <= 0 or not high / low <= CARRIED:
        return f"{value:.2f}x"
    return f"{value:.2f}x (95%: {low:.2f}–{high:.2f})"
