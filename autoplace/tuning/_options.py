"""What the user asked for, checked and turned into a search space and a strategy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoplace.config import PRECISIONS, check_batch_size, parse_device, parse_precision
from autoplace.devices import device_choices
from autoplace.errors import BadInputError
from autoplace.measuring import check_device
from autoplace.tuning._climb import Climb
from autoplace.tuning._grid import Grid
from autoplace.tuning._space import Space
from autoplace.tuning._strategies import Strategy
from autoplace.workload import check_width

#: Default batch sizes: powers of two; sizes XLA predicts cannot fit are pruned.
DEFAULT_BATCH_SIZES: tuple[int, ...] = tuple(2**i for i in range(13))  # 1 .. 4096


def build_space(
    devices: Sequence[str] | None,
    batch_sizes: Sequence[int] | None,
    precisions: Sequence[str] | None,
    widths: Sequence[int] | None,
    *,
    available: Sequence[Any],
    declared_widths: Sequence[int],
    default_width: int | None,
    default_batches: Sequence[int],
    max_memory: int | None = None,
) -> Space:
    """The search space from the user's options and what the machine and file offer."""
    if devices:
        names = tuple(dict.fromkeys(parse_device(d) for d in devices))
        for name in names:
            check_device(list(available), name)
    else:
        names = tuple(device_choices(list(available)))
    batches = tuple(check_batch_size(b) for b in (batch_sizes or default_batches))
    precs = tuple(dict.fromkeys(parse_precision(p) for p in (precisions or PRECISIONS)))
    for w in widths or ():
        check_width(w, declared_widths)
    ws: tuple[int | None, ...] = tuple(dict.fromkeys(widths)) if widths else (default_width,)
    return Space(
        devices=names, batch_sizes=batches, precisions=precs, widths=ws, max_memory=max_memory
    )


def strategy_named(name: str) -> Strategy:
    """The strategy ``--search NAME`` asks for."""
    if name == "climb":
        return Climb()
    if name == "grid":
        return Grid()
    raise BadInputError(f"unknown search {name!r}: use climb (the default) or grid")
