"""Failures: where they bound an arm's batch sizes, and when they speak for the whole arm.

An arm is a (device, precision, width). Most failures belong to a range of batch sizes,
not to the arm. Large batches run out of memory, are predicted too big, time out, or meet
an error only they meet (a shape limit); tiny ones go non-finite (BatchNorm's variance
over a batch of one or two, a loss over too few samples). So a failure *bounds* the arm
(:func:`arm_bounds`): below a batch size that ran, it is a floor (the search goes up);
otherwise a ceiling (the search goes down). A hang caps its arm after one timeout.

Only a failure seen across the arm's range *ends* it (:func:`ended_arms`): it failed at
its smallest batch and in the upper half of its range (the screen's batch), and ran at
none. That is where a failure that does not depend on the batch size shows (a dtype
mismatch, float16 overflowing everywhere), at the cost of two tries.

And a lower precision whose output strays too far from float32's (the
``deviation_vs_float32`` of a finalist, over ``max_deviation``) is never recommended,
however fast: :func:`inaccurate_arms`; nor is a configuration whose peak memory,
measured or predicted, is over ``--max-memory``, whenever it was measured (an earlier
tune of the study may have had no limit): :func:`over_memory`.

(:data:`DEFAULT_MAX_DEVIATION`, the guard's default, is defined with the other knobs in
:mod:`autoplace.settings`; it is named here too for the loop.)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.settings import DEFAULT_MAX_DEVIATION
from autoplace.tuning._space import Arm, Space, arm_of
from autoplace.units import size


def arm_bounds(ran: Collection[int], failed: Collection[int]) -> tuple[int | None, int | None]:
    """``(floor, ceiling)`` of an arm's batch sizes, from those that ``ran`` and those that
    ``failed``: a failure below a batch that ran is a floor, any other a ceiling. Batches at
    or below the floor, and at or above the ceiling, are not worth trying (``None``: no
    bound)."""
    top = max(ran, default=None)
    floor = max((b for b in failed if top is not None and b < top), default=None)
    ceiling = min((b for b in failed if top is None or b > top), default=None)
    return floor, ceiling


def ended_arms(figures: Mapping[Config, Measurement], space: Space) -> dict[Arm, str]:
    """The arms of ``space`` that ``figures`` show to be over, and why, in a few words
    (e.g. ``NaN or inf at batch 1 and 256, and it ran at none``)."""
    failures: dict[Arm, list[Measurement]] = {}
    ran: set[Arm] = set()
    for c, m in sorted(figures.items(), key=lambda cm: cm[0].batch_size):
        if c not in space:
            continue
        if m.status == "ok":
            ran.add(arm_of(c))
        else:
            failures.setdefault(arm_of(c), []).append(m)
    batches = space.batch_sizes
    upper = batches[(len(batches) - 1) // 2]
    ended = {}
    for arm, failed in failures.items():
        tried = [m.config.per_device_batch for m in failed]
        if arm not in ran and batches[0] in tried and max(tried) >= upper:
            ended[arm] = _why(failed)
    return ended


def _why(failed: list[Measurement]) -> str:
    """The failures of an arm that ran nowhere, in a few words."""
    kinds = {
        "nonfinite": "NaN or inf",
        "oom": "out of memory",
        "too_big": "predicted too big",
        "timeout": "timed out",
        "crash": "crashed",
        "error": "an error",
    }
    first = failed[0]
    batches = [str(m.batch_size) for m in failed]
    where = batches[0] if len(batches) == 1 else ", ".join(batches[:-1]) + f" and {batches[-1]}"
    what = kinds.get(first.status, first.status)
    reason = f": {first.reason}" if first.status in ("error", "crash") and first.reason else ""
    return f"{what} at batch {where}, across its range{reason}"


def inaccurate_arms(
    figures: Mapping[Config, Measurement], max_deviation: float | None
) -> dict[Arm, str]:
    """The arms whose output deviates from float32's by more than ``max_deviation``
    (relative L2 of the first step's output, on the same inputs), and by how much;
    none when ``max_deviation`` is ``None``."""
    if max_deviation is None:
        return {}
    out: dict[Arm, str] = {}
    for c, m in figures.items():
        d = m.deviation_vs_float32
        if d is not None and d > max_deviation and arm_of(c) not in out:
            out[arm_of(c)] = (
                f"deviates {d:.1%} from float32 at batch {c.batch_size}, over the "
                f"{max_deviation:.1%} allowed (--max-deviation)"
            )
    return out


def over_memory(figures: Mapping[Config, Measurement], max_memory: int | None) -> dict[Config, str]:
    """The configurations whose peak memory (measured, else XLA's prediction) is over
    ``max_memory`` bytes, and by how much; none when ``max_memory`` is ``None``. A
    configuration measured before the limit was set ran, and stays in the study, but is
    never recommended under it."""
    if max_memory is None:
        return {}
    out = {}
    for c, m in figures.items():
        peak = max((b for b in (m.peak_bytes, m.predicted_bytes) if b is not None), default=None)
        if peak is not None and peak > max_memory:
            out[c] = f"needs {size(peak)}, over the {size(max_memory)} allowed (--max-memory)"
    return out


__all__ = ["DEFAULT_MAX_DEVIATION", "ended_arms", "inaccurate_arms", "over_memory"]
