"""The caller's limits applied to an answer: a batch-size cap, a memory margin, a
numeric tolerance. The answer keeps every ranked configuration (best first) with the
figures these are checked against, so a look-up honours them without measuring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoplace.answer import Answer, Candidate, Question
from autoplace.devices import device_names
from autoplace.errors import NoAnswerError
from autoplace.units import size


def choose(
    answer: Answer,
    *,
    max_batch_size: int | None,
    memory_margin: float,
    max_deviation: float | None,
    widths: Sequence[int | None] = (None,),
    question: Question | None = None,
) -> tuple[Candidate, bool, tuple[str, ...]]:
    """The best ranked configuration of ``widths`` (``None``: any) within the limits and
    the ``question`` asked (its devices, batch sizes and precisions: an answer to a wider
    question may rank others first); whether it is the measured winner; and one line per
    limit saying how it was applied."""
    memory = answer.device_memory
    every = list(answer.candidates)
    if not every:
        raise NoAnswerError("the answer holds no configuration that ran: tune again")
    ranked = [c for c in every if None in widths or c.width in widths]
    if not ranked:
        shown = ", ".join(map(str, widths))
        raise NoAnswerError(
            f"the answer holds no configuration of width {shown} that ran: tune again with "
            f"--widths {shown.replace(', ', ',')}"
        )
    # A precision strays as far as the worst of its arm's measured outputs: a candidate its
    # tune never compared with float32 is judged by those of its arm that were.
    strays: dict[tuple[Any, ...], float] = {}
    for c in every:
        strays[c.arm] = max(strays.get(c.arm, 0.0), c.deviation_vs_float32 or 0.0)
    passed, dropped = [], {"batch": 0, "memory": 0, "deviation": 0, "question": 0}
    for c in ranked:
        if max_batch_size is not None and c.batch_size > max_batch_size:
            dropped["batch"] += 1
        elif question is not None and not question.holds(c):
            dropped["question"] += 1
        elif not _fits(c, memory.get(device_names(c.device)[0]), memory_margin):
            dropped["memory"] += 1
        elif max_deviation is not None and strays[c.arm] > max_deviation:
            dropped["deviation"] += 1
        else:
            passed.append(c)
    if not passed:
        raise NoAnswerError(
            f"no measured configuration is within the limits (batch cap {max_batch_size}, "
            f"memory margin {memory_margin:.0%}, tolerance {max_deviation}): loosen them, or "
            "tune with smaller --batch-sizes"
        )
    pick = passed[0]
    notes = [_memory_note(pick, memory.get(device_names(pick.device)[0]), memory_margin)]
    if ranked[0] is not every[0]:
        notes.append(
            f"width {pick.width}: the best of the width{'s' if len(widths) > 1 else ''} "
            f"asked; the study's pick over every width it searched is width "
            f"{every[0].width}"
        )
    if dropped["batch"]:
        notes.append(f"batch sizes over {max_batch_size} left out ({dropped['batch']} measured)")
    if dropped["question"]:
        notes.append(
            f"{dropped['question']} measured configuration(s) outside the devices, batch sizes "
            "and precisions asked left out (the answer's tune searched more)"
        )
    if dropped["deviation"]:
        notes.append(
            f"{dropped['deviation']} configuration(s) whose output strays from float32's by "
            f"more than {max_deviation:g} left out"
        )
    return pick, pick is every[0], tuple(notes)


def _fits(c: Candidate, memory: int | None, margin: float) -> bool:
    """Whether a configuration's measured peak leaves ``margin`` of the device free
    (unknown peak or memory: it cannot be checked, and passes)."""
    peak = c.peak_bytes
    return peak is None or memory is None or peak <= (1.0 - margin) * memory


def _memory_note(c: Candidate, memory: int | None, margin: float) -> str:
    """How the memory margin was checked for the pick, in one line."""
    peak = c.peak_bytes
    if peak is None or memory is None:
        return "memory margin not checked: the peak or the device's memory is unknown"
    free = 1.0 - peak / memory
    how = {"measured": "measured", "predicted": "predicted by XLA"}.get(
        c.peak_bytes_source or "", "measured or predicted"
    )
    return (
        f"peak {size(peak)} {how} at batch {c.batch_size} leaves {free:.0%} of "
        f"{c.device}'s {size(memory)} free (margin asked: {margin:.0%})"
    )
