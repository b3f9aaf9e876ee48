"""The search space: every combination of device, batch size, precision and width.

A device may be several used together (``gpu:0-3``): its batch sizes are each device's
share, the configuration's batch the global one (:func:`autoplace.config.config_at`)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable

from autoplace.config import Arm, Config, config_at


def arm_of(c: Config) -> Arm:
    return (c.device, c.precision, c.width)


@dataclasses.dataclass(frozen=True)
class Space:
    """The candidates: every combination of the four axes, less the ``excluded`` arms."""

    devices: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    precisions: tuple[str, ...]
    widths: tuple[int | None, ...]
    #: Arms left out (see :meth:`without`): what a strategy must not propose.
    excluded: frozenset[Arm] = frozenset()
    #: The memory a recommended configuration may need, in bytes (``--max-memory``): one
    #: whose peak is over it is never recommended, whenever it was measured.
    max_memory: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_sizes", tuple(sorted(set(self.batch_sizes))))

    def arms(self) -> list[Arm]:
        every = itertools.product(self.devices, self.precisions, self.widths)
        return [arm for arm in every if arm not in self.excluded]

    def without(self, arms: Iterable[Arm]) -> Space:
        """This space without ``arms`` (ended: nothing more to learn there)."""
        return dataclasses.replace(self, excluded=self.excluded | frozenset(arms))

    def configs(self) -> list[Config]:
        return [config_at(arm, b) for arm in self.arms() for b in self.batch_sizes]

    def __contains__(self, c: object) -> bool:
        return (
            isinstance(c, Config)
            and c.device in self.devices
            and c.per_device_batch in self.batch_sizes
            and c.precision in self.precisions
            and c.width in self.widths
            and arm_of(c) not in self.excluded
        )

    def __len__(self) -> int:
        return len(self.arms()) * len(self.batch_sizes)
