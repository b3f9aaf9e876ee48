"""Compiles an older autoplace timed side by side on an accelerator, read back as such.

autoplace compiles an accelerator's steps one at a time (``compiles_alone`` in
``autoplace/measuring/_timing.py``): XLA's GPU autotuner times candidate kernels on the
device as it compiles, and side by side it reads its own timings wrong. Before that
change (2026-11-26, the same one that made the engine say a device's start-up apart), a
group's steps compiled side by side (in the shared worker's threads, or in a window's
processes at once), each slowed by the others': on the H200 of
``../shared/gpu-reference/h200-2026-11-26/`` three VGG configurations compiled together
in 21-25 s each, and in 0.66-1.31 s one after another. Studies written then keep those
figures. Read back, each such figure says so (``Measurement.compiled_beside``), with the
same configuration's compile alone where the study has one
(``Measurement.compile_alone_s``), so that the explanation never quotes it as a compile
alone.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.measurement import Measurement


def compiled_side_by_side(data: Mapping[str, Any]) -> bool:
    """Whether a stored measurement (its JSON form) was made by an engine that compiled a
    group's accelerator steps side by side: one kept flat, with no ``device_init_s``
    (written before the engine said a device's start-up apart, in the same change)."""
    return "config" not in data and "device_init_s" not in data


def with_side_by_side(measured: Sequence[tuple[Measurement, bool]]) -> list[Measurement]:
    """The ``measured`` (in the order they were measured, each with whether
    :func:`compiled_side_by_side` holds), each whose compile figure was timed side by side
    with others for its accelerator marked so, with the same configuration's compile alone
    where the study has one; the others as they are.

    A figure is its own compile's, or (an executable reused, or loaded from the
    persistent cache) the figure of the latest such compile of its configuration. A
    compile was timed side by side where an older engine compiled other steps for an
    accelerator in the same call (``interleave_id``) besides it; any other is alone."""

    def key(m: Measurement) -> tuple[Any, ...]:
        return (m.config, m.steps_per_call)

    def own(m: Measurement) -> bool:
        return not m.compile_cached and m.compile_cache != "hit"

    mine = [
        (i, m, old)
        for i, (m, old) in enumerate(measured)
        if m.compile_s is not None and not m.device.startswith("cpu")
    ]
    together = Counter(m.interleave_id for _, m, old in mine if old and own(m) and m.interleave_id)
    made: dict[tuple[Any, ...], tuple[float | None, int]] = {}
    alone: dict[tuple[Any, ...], float | None] = {}
    beside: dict[int, int] = {}
    for i, m, old in mine:
        if own(m):
            n = together[m.interleave_id] - 1 if old and m.interleave_id else 0
            made[key(m)] = (m.compile_s, n)
            if n == 0:
                alone[key(m)] = m.compile_s
            beside[i] = n
        elif key(m) in made and made[key(m)][0] == m.compile_s:
            beside[i] = made[key(m)][1]
    return [
        dataclasses.replace(m, compiled_beside=beside[i], compile_alone_s=alone.get(key(m)))
        if beside.get(i)
        else m
        for i, (m, _) in enumerate(measured)
    ]
