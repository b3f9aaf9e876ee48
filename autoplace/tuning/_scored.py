"""A configuration with its figures and its score: what the standing ranks."""

from __future__ import annotations

import dataclasses

from autoplace.config import Config
from autoplace.measurement import Measurement


@dataclasses.dataclass(frozen=True)
class Scored:
    """A measured configuration, its figures and its score.

    Attributes:
        measurement: its figures: its latest window's that ran, else the search's.
        score: what it is ranked on: the geometric mean of its windows' scores where it was
            confirmed, else its search estimate.
        searched: its search estimate (the search's figures on one scale), if searched.
        windows: its confirmation windows that ran, oldest first (empty: not confirmed).
        votes: its score in each of those windows.
    """

    measurement: Measurement
    score: float
    searched: float | None = None
    windows: tuple[Measurement, ...] = ()
    votes: tuple[float, ...] = ()

    @property
    def confirmed(self) -> bool:
        return bool(self.windows)

    @property
    def config(self) -> Config:
        m = self.measurement
        return Config(m.device, m.batch_size, m.precision, m.width)

    @property
    def group(self) -> tuple[str, str]:
        """Its (device, precision)."""
        return (self.measurement.device, self.measurement.precision)
