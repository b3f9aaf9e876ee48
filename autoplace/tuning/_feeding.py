"""Feeding, timed three ways, not guessed: what a training run gains by prefetching its
batches or by keeping its data on the device.

A plain training loop puts a host batch on the device, then steps; the step waits for
the put. On an H200 the README MLP's float32 step at batch 4096 took 2.10 ms so, 0.58 ms
with a thread keeping two puts in flight, and 76 µs with the batch on the device already
(``../shared/gpu-reference/h200-2026-11-26/``): the "fixed cost" of that GPU was the put,
not dispatch. So, once the verdict is in, the tune times the pick and each other device's
best with their steps fed each way (:data:`~autoplace.objectives.FEEDINGS`), each in a
fresh process of its own, in turns, in :data:`~._confirm.WINDOWS` windows, every loop
timed as a confirmation's: (a) a host batch put each step (``fed_step_s``), (b) two puts
kept in flight by :func:`autoplace.prefetch`'s thread (``prefetch_step_s``), (c) the batch
resident on the device (``step_s``). :func:`feeding_of` judges them: each one's step per
feeding (the median over windows), the gains of prefetching and of resident data over
the put, and which of them wins under each feeding, so that a pick another feeding would
change is said. Where every one of them runs on the CPU and the run puts its batches (the
default), the phase does not run: see :func:`_group`.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace import units
from autoplace.config import Config
from autoplace.costs import TIMED_CHUNKS
from autoplace.findings import Finding
from autoplace.measurement import Loop, LoopFigures, Measurement
from autoplace.objectives import FEEDING_LOOP, FEEDINGS, Objective
from autoplace.settings import MeasureSettings
from autoplace.tuning._confirm import CAP_S, WINDOWS, window_settings
from autoplace.tuning._phase import BLOCKED, Context, Group, windows_of

#: How each feeding is said.
SAID = {
    "put": "a host batch put before each step",
    "prefetch": "two batches in flight (autoplace.prefetch)",
    "resident": "the data on the device",
}


@dataclasses.dataclass(frozen=True)
class Fed:
    """One configuration's step fed each way, the median over its feeding windows.

    Attributes:
        config: the configuration.
        steps: seconds a step, by feeding (``put``, ``prefetch``, ``resident``); a
            feeding that failed to time is left out.
        windows: the windows it was timed in.
    """

    config: Config
    steps: Mapping[str, float]
    windows: int

    def gain(self, feeding: str) -> float | None:
        """How many times faster a step fed so runs than one fed by a put."""
        put, other = self.steps.get("put"), self.steps.get(feeding)
        return put / other if put and other else None

    def rate(self, feeding: str) -> float | None:
        step = self.steps.get(feeding)
        return self.config.batch_size / step if step else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.config.device,
            "batch_size": self.config.batch_size,
            "precision": self.config.precision,
            "width": self.config.width,
            "windows": self.windows,
            **{f"{f}_step_s": self.steps.get(f) for f in FEEDINGS},
            "prefetch_gain": self.gain("prefetch"),
            "resident_gain": self.gain("resident"),
        }


@dataclasses.dataclass(frozen=True)
class Feeding:
    """The feeding windows judged: the pick's (first) and each other device's best, and
    how the objective feeds its steps (``chosen``)."""

    fed: tuple[Fed, ...]
    chosen: str = "put"

    @property
    def pick(self) -> Fed:
        return self.fed[0]

    def winner(self, feeding: str) -> Fed | None:
        """The fastest of those timed when their steps are fed so."""
        timed = [f for f in self.fed if f.rate(feeding)]
        return max(timed, key=lambda f: f.rate(feeding) or 0.0, default=None)

    def sentences(self) -> tuple[str, ...]:
        """The pick's step fed each way with its gains; and, for each feeding other than
        the ``chosen`` one, the configuration that would win under it where not the pick."""
        chosen, p = self.chosen, self.pick
        parts = []
        for feeding in FEEDINGS:
            step = p.steps.get(feeding)
            if step is None:
                continue
            gain = p.gain(feeding)
            x = "" if feeding == "put" or gain is None else f" ({gain:.2f}x the put's)"
            parts.append(f"{SAID[feeding]} {units.seconds(step)}{x}")
        out = [f"Fed three ways, {p.config.label()} takes a step in: " + "; ".join(parts) + "."]
        for feeding in FEEDINGS:
            if feeding == chosen:
                continue
            best = self.winner(feeding)
            if best is not None and best.config != p.config:
                rate = units.rate(best.rate(feeding), "samples/s")
                out.append(
                    f"With {SAID[feeding]}, {best.config.label()} would win ({rate}, against "
                    f"{units.rate(p.rate(feeding), 'samples/s')} for the pick)."
                )
        return tuple(out)

    def findings(self) -> tuple[Finding, ...]:
        return ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "fed": [f.as_dict() for f in self.fed],
            "winner": {
                feeding: w.config.label()
                for feeding in FEEDINGS
                if (w := self.winner(feeding)) is not None
            },
        }


class Feed:
    """The feeding phase: see the module docstring."""

    name = "feeding"

    def settings(self, user: MeasureSettings, objective: Objective) -> MeasureSettings:
        """Every loop timed as a window's ranked loop is."""
        return dataclasses.replace(
            window_settings(user, objective),
            time_cap_s=CAP_S,
            fed_time_cap_s=CAP_S,
            prefetch_time_cap_s=CAP_S,
        )

    def next(self, ctx: Context) -> Group | str | None:
        """The pick and each other device's best, fed three ways, in the next window (the
        pick first), or none: for the latency objective (one batch from the host, by
        definition), or once each has been in :data:`~._confirm.WINDOWS` windows (one its
        configuration failed in counts: it would fail again)."""
        group = _group(ctx)
        if not group:
            return None
        done = [len({m.interleave_id or id(m) for m in ctx.done(self.name, c)}) for c in group]
        if min(done) >= WINDOWS:
            return None
        if len(group) > ctx.room or ctx.history.pending.intersection(group):
            return BLOCKED
        order = group if min(done) % 2 == 0 else [group[0], *reversed(group[1:])]
        return Group.of(self.name, order, True)

    def judge(self, ctx: Context) -> Feeding | None:
        """The feeding windows of the pick and the other devices' bests, judged (``None``:
        the pick's have not run)."""
        best = ctx.standing.best
        held = ctx.history.of(self.name)
        if best is None or not windows_of(held.get(best.config, ())):
            return None
        group = [c for c in _group(ctx) if windows_of(held.get(c, ()))]
        chosen = ctx.plan.objective.feeding
        return Feeding(tuple(_fed(c, held[c]) for c in group), chosen)


def _group(ctx: Context) -> list[Config]:
    """The pick, then each other device's best; none for the latency objective, nor where
    all of them run on the CPU and the run puts its batches: there the "device" is the
    host, the put a copy in its own memory, and the windows bought nothing in the ablation
    (``benchmarks/README.md#ablation``: 19% of the tune's wall time, the same picks and
    regret), while every window still times the put and the resident loops."""
    best = ctx.standing.best
    if best is None or ctx.plan.objective.one_batch:
        return []
    pick = best.config
    group = [pick, *(c for c in ctx.standing.device_bests if c.device != pick.device)]
    on_host = all(c.device.partition(":")[0] == "cpu" for c in group)
    if on_host and ctx.plan.objective.feeding == "put":
        return []
    return group


def with_feeding(m: Measurement, ms: Sequence[Measurement]) -> Measurement:
    """``m`` (a configuration's figures) with its three loops as its feeding windows timed
    them, each in full there, in the same processes (where the confirmation glances at the
    resident one): so every sentence on feeding, and the file, say one figure for each
    loop (its score stays its confirmation windows')."""
    ran = [x for x in ms if x.status == "ok"]
    out = m
    timed_in_full: tuple[tuple[Loop, int], ...] = (
        ("step", TIMED_CHUNKS),
        ("fed", 1),
        ("prefetch", 1),
    )
    for loop, least in timed_in_full:
        timed = [x.loop(loop) for x in ran if x.loop(loop).step_s and x.loop(loop).timed >= least]
        if timed:
            merged = LoopFigures(
                step_s=statistics.median(t.step_s for t in timed),  # type: ignore[type-var]
                spread=statistics.median(t.spread or 0.0 for t in timed),
                chunks=tuple(c for t in timed for c in t.chunks),
                samples=sum(t.timed for t in timed),
            )
            out = out.with_loop(loop, merged)
    return out


def _fed(c: Config, ms: Sequence[Measurement]) -> Fed:
    ran = [m for m in ms if m.status == "ok"]
    steps: dict[str, float] = {}
    for feeding, loop in FEEDING_LOOP.items():
        values = [t for m in ran if (t := m.loop(loop).step_s)]
        if values:
            steps[feeding] = statistics.median(values)
    return Fed(c, steps, windows_of(ran))
