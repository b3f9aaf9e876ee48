"""The points a cost-model line still lacks: what ``autoplace explain --measure`` measures."""

from __future__ import annotations

from autoplace.config import Config, config_at
from autoplace.objectives import Objective
from autoplace.tuning._space import Space, arm_of
from autoplace.tuning._strategies import MAX_GROUP, Scores


class FitPoints:
    """For every arm that ran at one batch size only, its neighbouring batch (the one below,
    else the one above, skipping one that failed): a line needs two batch sizes. Nothing
    else: the explanation is fitted from the study's own measurements, and this only fills
    where the fit is undetermined."""

    def propose(
        self, space: Space, objective: Objective, scores: Scores, pending: frozenset[Config]
    ) -> tuple[Config, ...]:
        ran: dict[tuple, set[int]] = {}
        for c, s in scores.items():
            if s is not None and c in space:
                ran.setdefault(arm_of(c), set()).add(c.per_device_batch)
        group: list[Config] = []
        for (device, precision, width), batches in ran.items():
            if len(batches) != 1:
                continue
            i = space.batch_sizes.index(next(iter(batches)))
            for j in (i - 1, i + 1):
                if not 0 <= j < len(space.batch_sizes):
                    continue
                c = config_at((device, precision, width), space.batch_sizes[j])
                if c in pending:
                    break  # being measured: wait for it
                if c not in scores and c in space:
                    group.append(c)
                    break
        return tuple(group[:MAX_GROUP])
