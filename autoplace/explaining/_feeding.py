"""How much of the fed step is putting the batch on the device, and what prefetching or the
data on the device gains where timed (:func:`feeding`)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from autoplace.costs import TIMED_CHUNKS
from autoplace.measurement import Measurement

#: A remedy that gains less than this (1.05: 5%) gains nothing to speak of.
NO_GAIN = 1.05


@dataclasses.dataclass(frozen=True)
class Feeding:
    """What feeding a host batch each step costs, and what the remedies gain.

    ``step_s``: the step with the batch on the device where timed in full (a glance is too
    rough to subtract). ``share``: the feeding's share of the fed step, resting on
    ``basis``: ``loops`` (the fed step less that step) or ``put`` (the put timed alone: an
    upper bound, as alone it cannot overlap a step).
    """

    fed_step_s: float
    step_s: float | None
    prefetch_step_s: float | None
    transfer_s: float | None
    batch_bytes: float
    basis: Literal["loops", "put"] | None
    share: float | None

    @property
    def prefetch_gain(self) -> float | None:
        return self.fed_step_s / self.prefetch_step_s if self.prefetch_step_s else None

    @property
    def resident_gain(self) -> float | None:
        return self.fed_step_s / self.step_s if self.step_s else None

    @property
    def notable(self) -> bool:
        """Worth a sentence near the top: a fifth of the step is feeding, or a remedy gains a
        quarter."""
        gains = [g for g in (self.prefetch_gain, self.resident_gain) if g is not None]
        return (self.share or 0.0) >= 0.20 or any(g >= 1.25 for g in gains)

    def as_dict(self) -> dict[str, object]:
        return {
            **dataclasses.asdict(self),
            "prefetch_gain": self.prefetch_gain,
            "resident_gain": self.resident_gain,
        }


def feeding(m: Measurement) -> Feeding | None:
    """``m``'s :class:`Feeding`; ``None`` without a fed step or anything to set against it."""
    if not m.fed.step_s:
        return None
    step = m.step.step_s if m.step.step_s and (m.step.samples or 0) >= TIMED_CHUNKS else None
    share: float | None = None
    basis: Literal["loops", "put"] | None = None
    if step is not None:
        share, basis = max(0.0, m.fed.step_s - step) / m.fed.step_s, "loops"
    elif m.transfer_s is not None:
        share, basis = min(1.0, m.transfer_s / m.fed.step_s), "put"
    elif not m.loop("prefetch").step_s:
        return None
    return Feeding(
        fed_step_s=m.fed.step_s,
        step_s=step,
        prefetch_step_s=m.loop("prefetch").step_s or None,
        transfer_s=m.transfer_s,
        batch_bytes=float(m.batch_bytes or 0),
        basis=basis,
        share=share,
    )
