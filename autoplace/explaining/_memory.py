"""The largest batch that fits under a device's memory with a margin left free."""

from __future__ import annotations

import math
from typing import Any

from autoplace.costs import ArmModel


def memory_limit_batch(model: ArmModel, limit: int | None, margin: float) -> dict[str, Any] | None:
    """The largest batch whose predicted peak memory leaves ``margin`` of ``limit`` free,
    from the arm's memory line ``m0 + m1·b``; ``None`` without a line or a limit."""
    if model.memory is None or not limit:
        return None
    fixed, each = model.memory.fixed, model.memory.per_sample
    room = (1.0 - margin) * limit - fixed
    if each <= 0:
        return None
    largest = room / each
    return {
        "limit_bytes": float(limit),
        "margin": margin,
        "fixed_bytes": fixed,
        "per_sample_bytes": each,
        "fit": model.memory.fit,
        "largest_batch": largest,
        "largest_power_of_two": float(2 ** math.floor(math.log2(largest))) if largest >= 1 else 0.0,
    }
