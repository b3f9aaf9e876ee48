"""Failures that speak for a whole arm, not for one batch size.

An arm is a (device, precision, width). Most failures belong to one batch size:
out of memory, predicted too big, a timeout at a large batch; they cap the arm
(the strategies measure no larger batch of it). Some do not depend on the batch
size at all, and measuring the arm again at every other batch would only repeat
them, at the cost of a build, a compile or a timeout each time. Those *end* the arm,
with one recorded reason:

* an error while building the workload or tracing and lowering its step (the code
  or the precision, not the batch, is at fault: a dtype mismatch, an NNX trace
  error at float16);
* output that is not finite (NaN or inf) at two batch sizes (float16 overflowing,
  an optimiser's epsilon underflowing);
* a timeout at the arm's smallest batch size, where the step is cheapest.

And a lower precision whose output strays too far from float32's (the
``deviation_vs_float32`` of a finalist, over ``max_deviation``) is never
recommended, however fast: :func:`inaccurate_arms`; nor is a configuration whose peak
memory, measured or predicted, is over ``--max-memory``, whenever it was measured
(an earlier tune of the study may have had no limit): :func:`over_memory`.

(:data:`DEFAULT_MAX_DEVIATION`, the guard's default, is defined with the other knobs in
:mod:`autoplace.settings`; it is named here too for the loop.)
"""

from __future__ import annotations

from collections.abc import Mapping

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.settings import DEFAULT_MAX_DEVIATION
from autoplace.tuning._space import Arm, Space, arm_of
from autoplace.units import size

#: How a reason for an error of the configuration's own code begins when the batch
#: size plays no part in it (see ``autoplace.measuring._setup``).
_BATCH_FREE_ERRORS = ("building the workload raised", "tracing and lowering the step raised")
#: Non-finite outputs at this many batch sizes end an arm.
NONFINITE_LIMIT = 2


def ended_arms(figures: Mapping[Config, Measurement], space: Space) -> dict[Arm, str]:
    """The arms of ``space`` that ``figures`` show to be over, and why, in a few words
    (e.g. ``NaN or inf at batch 8 and 16``)."""
    failures: dict[Arm, list[Measurement]] = {}
    for c, m in sorted(figures.items(), key=lambda cm: cm[0].batch_size):
        if c in space and m.status != "ok":
            failures.setdefault(arm_of(c), []).append(m)
    ended = {}
    for arm, failed in failures.items():
        reason = _why_ended(failed, space.batch_sizes[0])
        if reason:
            ended[arm] = reason
    return ended


def _why_ended(failed: list[Measurement], smallest: int) -> str | None:
    """Why these failures of one arm (by batch size) end it, or ``None`` if they don't."""
    for m in failed:
        if m.status == "error" and m.reason.startswith(_BATCH_FREE_ERRORS):
            return f"error at batch {m.batch_size}: {m.reason}"
    nonfinite = [m.batch_size for m in failed if m.status == "nonfinite"]
    if len(nonfinite) >= NONFINITE_LIMIT:
        batches = ", ".join(map(str, nonfinite[:-1])) + f" and {nonfinite[-1]}"
        return f"NaN or inf at batch {batches}"
    if any(m.status == "timeout" and m.batch_size == smallest for m in failed):
        return f"timed out at batch {smallest}, its smallest"
    return None


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
