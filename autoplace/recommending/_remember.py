"""A finished tune's answer kept where :func:`autoplace.recommend` looks first.

``autoplace tune`` keeps its study where ``--storage`` says (by default
``studies/autoplace.db`` under the current folder), which a launcher started elsewhere
does not know. So the tune also leaves its answer in this machine's cache, under the key
the launcher's look-up makes (:func:`._key.key_for`), with this machine's devices: the
next ``autoplace.recommend`` of that model file, workload, widths and objective answers
from it in milliseconds, without JAX (``source="cache"``), as it would after a tune of its
own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autoplace.devices import DeviceInfo
from autoplace.host import Cache, remember_devices
from autoplace.recommending._key import asked_question, key_for

if TYPE_CHECKING:
    from autoplace.tuning import TuneResult


@dataclasses.dataclass(frozen=True)
class Remembered:
    """What :func:`remember` cached: the files written, and what a launcher asks that the
    tune did not search (in words; empty where the tune answers a launcher's question)."""

    paths: tuple[Path, ...]
    narrower: tuple[str, ...] = ()


def remember(
    result: TuneResult,
    devices: Sequence[DeviceInfo],
    *,
    workload: str | None = None,
    widths: Sequence[int] | None = None,
    cache_dir: str | Path | None = None,
) -> Remembered:
    """Cache ``result``'s answer for the look-ups that ask for it: the model file's
    workload as the tune was asked for it (``workload``: the name given, ``None`` when
    none was) and as it resolved, at the ``widths`` asked (``None``: the file's default).
    Returns the cache files written (none for a tune without an answer: interrupted, or
    nothing ran; nor for one whose tune searched less than such a look-up asks: batch 32
    alone does not answer which batch is best). The machine's ``devices`` are cached too,
    so that the look-up lists none. A cache that cannot be written is said once and
    skipped, as look-ups do."""
    answer = result.answer
    if answer is None:
        return Remembered(())
    cache = Cache(cache_dir)
    remember_devices(cache, devices)
    wl = answer.workload
    model = {"path": wl.path, "sha256": wl.sha256}
    objective = {"name": answer.objective.name, **answer.objective.run}
    written: list[Path] = []
    narrower: list[str] = []
    for name in dict.fromkeys((workload, wl.name)):
        key = key_for(devices, model, name, widths, objective)
        if answer.question is not None:
            narrower = answer.question.narrower(asked_question(answer, key, devices))
        if narrower:
            continue
        path = cache.answer_path(key.slot)
        entry = {"key": key.as_dict(), "source": "tuned", "answer": answer.as_dict()}
        if cache.write(path, entry):
            written.append(path)
    return Remembered(tuple(written), tuple(narrower))
