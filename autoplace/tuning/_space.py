"""The search space: every combination of device, batch size, precision and width."""

from __future__ import annotations

import dataclasses
import itertools

from autoplace.config import Config


@dataclasses.dataclass(frozen=True)
class Space:
    """The candidates: every combination of the four axes."""

    devices: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    precisions: tuple[str, ...]
    widths: tuple[int | None, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_sizes", tuple(sorted(set(self.batch_sizes))))

    def arms(self) -> list[tuple[str, str, int | None]]:
        return list(itertools.product(self.devices, self.precisions, self.widths))

    def configs(self) -> list[Config]:
        return [
            Config(device=d, batch_size=b, precision=p, width=w)
            for d, p, w in self.arms()
            for b in self.batch_sizes
        ]

    def __contains__(self, c: object) -> bool:
        return (
            isinstance(c, Config)
            and c.device in self.devices
            and c.batch_size in self.batch_sizes
            and c.precision in self.precisions
            and c.width in self.widths
        )

    def __len__(self) -> int:
        return len(self.devices) * len(self.batch_sizes) * len(self.precisions) * len(self.widths)
