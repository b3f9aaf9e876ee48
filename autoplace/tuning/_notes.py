"""What a tune did that its table does not show, one line each (``TuneResult.notes``): an
interrupt during a wait, a run that measured nothing new, earlier runs' trials taken for
dead and measured again, batches slow to make."""

from __future__ import annotations

from autoplace import units
from autoplace.tuning._loop import Loop
from autoplace.tuning._standing import Standing


def notes(
    loop: Loop, reclaimed: int, final: Standing, new_trials: int, interrupted: bool, wall_s: float
) -> tuple[str, ...]:
    """The notes of a run of ``loop`` that ended with ``final`` after ``new_trials`` new
    measurements in ``wall_s`` seconds, its log having ``reclaimed`` trials of dead owners."""
    out = []
    if interrupted and loop.waiting is not None:
        out.append(
            f"interrupted while {loop.waiting.removeprefix('waiting: ')}: nothing was "
            "measured during that wait"
        )
    elif not interrupted and new_trials == 0 and final.best is not None:
        out.append(
            f"nothing new to measure: study {loop.log.name!r} already held every measurement "
            f"this tune needs ({len(final.figures)} configurations, from earlier runs), so "
            "this is its verdict again; --remeasure measures again"
        )
    if reclaimed:
        out.append(
            f"{reclaimed} measurement(s) left running by an earlier run that stopped "
            "without ending them (killed?) were marked failed and measured again: nothing "
            "they had finished was lost"
        )
    slow = loop.slowest_batch
    if slow is not None and slow.batch_s is not None and slow.batch_s >= 1.0:
        out.append(
            f"make_batch took {units.seconds(slow.batch_s)} to make one batch of "
            f"{slow.batch_size} ({slow.device}, {slow.precision}): "
            f"{units.seconds(loop.batch_s)} of this {units.seconds(wall_s)} tune went to "
            "making batches, two for each configuration in each process that measured it; "
            "make them cheaper (draw them with the rng given, or build the arrays once and "
            "slice them)"
        )
    return tuple(out)
