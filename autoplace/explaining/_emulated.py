"""Lower precisions with no faster kernels on a device (:func:`emulated`)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping
from typing import Literal

from autoplace.config import Arm, Config
from autoplace.costs import TIMED_CHUNKS, ArmModel
from autoplace.explaining._run_length import per_sample
from autoplace.limits import MachineLimits
from autoplace.measurement import Measurement

#: A lower precision is emulated where its measured peak is under ``1 + EMULATED`` times
#: float32's (no faster kernels for it); without the peaks, where its time per sample
#: exceeds float32's by more than this.
EMULATED = 0.10


@dataclasses.dataclass(frozen=True)
class Emulated:
    """A lower precision with no faster kernels on a device, or one slower than float32.

    ``basis``: ``peak`` (its measured peak is under ``1 + EMULATED`` times float32's;
    ``width`` then ``None``), ``step`` (no peaks: its best time per sample with the batch on
    the device is ``ratio`` times float32's) or ``fed`` (the fed step's, feeding included:
    said, not judged). ``ratio_basis``: the loop ``ratio`` rests on; ``peaks``: its
    measured peak and float32's, FLOP/s.
    """

    device: str
    precision: str
    width: int | None
    ratio: float | None
    compute_dtypes: tuple[str, ...]
    deviation: float | None
    basis: Literal["peak", "step", "fed"] = "fed"
    ratio_basis: Literal["step", "fed"] | None = None
    peaks: tuple[float, float] | None = None

    @property
    def peak_ratio(self) -> float | None:
        return None if self.peaks is None else self.peaks[0] / self.peaks[1]

    def as_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "peak_ratio": self.peak_ratio}


def emulated(
    figures: Mapping[Config, Measurement],
    models: Iterable[ArmModel],
    limits: MachineLimits | None = None,
    rates: Mapping[Config, float] | None = None,
) -> list[Emulated]:
    """The lower precisions with no faster kernels (see :class:`Emulated`), judged from the
    measured peaks, else the best steps against float32's; the fed loop's on ``rates``
    where given (the table's figures, so the sentence never contradicts it)."""
    best = {loop: _best_per_sample(figures, loop) for loop in ("step", "fed")}
    if rates:
        best["fed"] = _best_of_rates(rates)
    out: list[Emulated] = []
    judged: set[tuple[str, str]] = set()
    for model in models:
        device, precision, width = model.arm
        if precision == "float32":
            continue
        ratio: float | None = None
        ratio_basis: Literal["step", "fed"] | None = None
        for loop in ("step", "fed"):
            f32, mine = best[loop].get((device, "float32", width)), best[loop].get(model.arm)
            if f32 is not None and mine is not None:
                ratio, ratio_basis = mine / f32, loop
                break
        peaks = _peaks(limits, device, precision)
        found = functools.partial(
            Emulated, device, precision, ratio=ratio, compute_dtypes=model.compute_dtypes,
            deviation=model.deviation, ratio_basis=ratio_basis,
        )  # fmt: skip
        if peaks is not None:
            if peaks[0] < (1.0 + EMULATED) * peaks[1] and (device, precision) not in judged:
                judged.add((device, precision))
                out.append(found(width=None, basis="peak", peaks=peaks))
        elif ratio is not None and ratio_basis is not None and ratio - 1.0 > EMULATED:
            out.append(found(width=width, basis=ratio_basis))
    return out


def _peaks(limits: MachineLimits | None, device: str, precision: str) -> tuple[float, float] | None:
    limit = limits.of(device) if limits is not None else None
    if limit is None or precision not in limit.peak_flops or "float32" not in limit.peak_flops:
        return None
    return limit.peak_flops[precision].median, limit.peak_flops["float32"].median


def _best_of_rates(rates: Mapping[Config, float]) -> dict[Arm, float]:
    """Each arm's best time per sample from its configurations' samples per second."""
    best: dict[Arm, float] = {}
    for c, rate in rates.items():
        if rate > 0:
            best[c.arm] = min(best.get(c.arm, math.inf), 1 / rate)
    return best


def _best_per_sample(figures: Mapping[Config, Measurement], loop: str) -> dict[Arm, float]:
    """Each arm's best time per sample in ``loop``: ``step`` (timed ``TIMED_CHUNKS`` chunks
    at least) or ``fed``."""
    best: dict[Arm, float] = {}
    for c, m in figures.items():
        step = m.step.step_s if (m.step.samples or 0) >= TIMED_CHUNKS else None
        p = (step / m.batch_size if step else None) if loop == "step" else per_sample(m)
        if m.status == "ok" and p is not None:
            best[c.arm] = min(best.get(c.arm, math.inf), p)
    return best
