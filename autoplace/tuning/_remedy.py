"""A remedy, timed, not guessed: what to do about a pick that maps fresh memory every step.

A step whose temporaries are larger than what glibc's allocator keeps for reuse (it hands
blocks over 32 MiB back to the kernel when they are freed) maps them afresh every step,
and the kernel zeroes every page: thousands of page faults a step (a two-tower
recommender's 37 MiB of temporaries: 9,500 to 18,800 a step, half its step time). When
the pick shows that in its fresh processes (:data:`FAULTS_PER_STEP`), the tune times it as
it is against it with each candidate setting (:func:`candidates`), in fresh processes in
turns, in :data:`~._confirm.WINDOWS` windows, and the finding
(:class:`~autoplace.findings.FreshPagesEveryStep`) says what the best candidate gave: a
setting that made it faster beyond the machine's resolution is named as the fix, one that
did not is said to have not helped.

The candidates: glibc's ``hugetlb`` tunable (``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``),
which asks the kernel for transparent huge pages for what malloc maps: 2 MiB pages, so a
512th of the faults (on a kernel whose transparent huge pages are ``madvise`` or
``always``); and a long-lived allocator, jemalloc or tcmalloc, through ``LD_PRELOAD``,
where one is installed.
"""

from __future__ import annotations

import ctypes.util
import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace.findings import Finding, FreshPagesEveryStep, HostMemoryGrows
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.settings import MeasureSettings
from autoplace.tuning._compare import Comparison, compare, fit
from autoplace.tuning._confirm import CAP_S, WINDOWS, window_settings
from autoplace.tuning._phase import BLOCKED, Context, Group, Want
from autoplace.tuning._search import ranking

#: Page faults per step from which a pick counts as mapping fresh memory every step: 256
#: faults of 4 KiB pages are a MiB zeroed by the kernel each step ...
FAULTS_PER_STEP = 256
#: ... when they may cost a tenth of the step: a fault and the zeroing of its page take
#: about a microsecond on current x86 machines. (Only what triggers the remedy's windows;
#: what the faults cost is then measured, not assumed.)
FAULT_S = 1e-6
FAULTS_SHARE = 0.10
#: How a measurement taken as the user's process runs is named among the candidates.
AS_IT_IS = "as it is"


def candidates(environ: Mapping[str, str] | None = None) -> list[tuple[tuple[str, str], ...]]:
    """The settings worth timing, each an environment for a fresh process: glibc's huge
    pages for what malloc maps (kept with the user's own ``GLIBC_TUNABLES``), and jemalloc or
    tcmalloc through ``LD_PRELOAD`` where one is installed."""
    environ = os.environ if environ is None else environ
    tunables = ":".join(t for t in (environ.get("GLIBC_TUNABLES"), "glibc.malloc.hugetlb=1") if t)
    found: list[tuple[tuple[str, str], ...]] = [(("GLIBC_TUNABLES", tunables),)]
    for name in ("jemalloc", "tcmalloc_minimal", "tcmalloc"):
        library = ctypes.util.find_library(name)
        if library:
            preload = ":".join(p for p in (environ.get("LD_PRELOAD"), library) if p)
            found.append((("LD_PRELOAD", preload),))
            break
    return found


def setting(env: Sequence[tuple[str, str]] | Sequence[str]) -> str:
    """A candidate in words: ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (or :data:`AS_IT_IS`)."""
    shown = [e if isinstance(e, str) else f"{e[0]}={e[1]}" for e in env]
    return " ".join(shown) or AS_IT_IS


#: Resident memory growing by this much a step, in a settled process, is a leak worth saying.
GROWTH_PER_STEP = 16 * 1024
PAGE = 4096


@dataclasses.dataclass(frozen=True)
class Timed:
    """What the best candidate setting did to the pick, timed in turns with it as it is.

    Attributes:
        setting: the candidate, as ``NAME=value``.
        comparison: how many times faster the pick ran with it.
        faults_per_step: the pick's page faults a step as it is, and with the setting.
    """

    setting: str
    comparison: Comparison
    faults_per_step: tuple[float | None, float | None]

    @property
    def helps(self) -> bool:
        return self.comparison.verdict == "faster"

    def text(self) -> str:
        as_is, with_it = self.faults_per_step
        faults = (
            f"; in those windows, {with_it:,.0f} page faults a step instead of {as_is:,.0f} "
            "as it is"
            if as_is is not None and with_it is not None
            else ""
        )
        return f"with {self.setting}: {self.comparison.sentence('the step as it is')}{faults}"


@dataclasses.dataclass(frozen=True)
class Memory:
    """What the pick's fresh processes showed of host memory: its findings (fresh pages
    every step, with what was timed against them; memory that grows every step)."""

    found: tuple[Finding, ...]
    timed: Timed | None = None

    def sentences(self) -> tuple[str, ...]:
        return ()

    def findings(self) -> tuple[Finding, ...]:
        return self.found

    def as_dict(self) -> dict[str, Any]:
        if self.timed is None:
            return {}
        return {
            "setting": self.timed.setting,
            **self.timed.comparison.as_dict(),
            "faults_per_step": list(self.timed.faults_per_step),
        }


def needs_remedy(m: Measurement) -> bool:
    """Whether ``m`` (a pick's figures, from a fresh process) maps enough fresh memory every
    step that it may cost a tenth of the step."""
    faults, step = m.machine.page_faults_per_step, m.fed.step_s or m.step.step_s
    if faults is None or faults < FAULTS_PER_STEP:
        return False
    return step is None or faults * FAULT_S >= FAULTS_SHARE * step


class Remedy:
    """The remedy phase: see the module docstring."""

    name = "remedy"

    def settings(self, user: MeasureSettings, objective: Objective) -> MeasureSettings:
        return ranking(window_settings(user, objective), user, objective, CAP_S)

    def next(self, ctx: Context) -> Group | str | None:
        """The pick as it is, then with each candidate setting, in the next window; none
        where the pick maps little memory afresh, or once its windows were timed."""
        best = ctx.standing.best
        m = best.measurement if best is not None else None
        if best is None or m is None or not m.fresh_process or not needs_remedy(m):
            return None
        held = ctx.done(self.name, best.config)
        if len({x.interleave_id for x in held if x.interleave_id}) >= WINDOWS:
            return None
        envs = [(), *candidates()]
        if len(envs) > ctx.room or best.config in ctx.history.pending:
            return BLOCKED
        return Group(self.name, tuple(Want(best.config, env=e) for e in envs), True)

    def judge(self, ctx: Context) -> Memory | None:
        """The pick's memory findings, with the best candidate's effect where timed."""
        best = ctx.standing.best
        if best is None:
            return None
        m = best.measurement
        timed = _timed(ctx.plan.objective, ctx.done(self.name, best.config), ctx.standing.busy)
        found: list[Finding] = []
        faults = m.machine.page_faults_per_step
        if faults is not None and needs_remedy(m):
            found.append(
                FreshPagesEveryStep(
                    best.config.label(),
                    faults,
                    faults * PAGE,
                    m.loop(ctx.plan.objective.loop).step_s,
                    remedy=None if timed is None else timed.text(),
                    remedy_helps=None if timed is None else timed.helps,
                )
            )
        growth = m.machine.resident_growth_per_step
        if growth is not None and growth >= GROWTH_PER_STEP:
            found.append(HostMemoryGrows(best.config.label(), growth, m.machine.resident_bytes))
        return Memory(tuple(found), timed) if found or timed else None


def _timed(objective: Objective, ms: Sequence[Measurement], busy: bool) -> Timed | None:
    """The best candidate's effect on the pick, from its windows (``None``: none ran)."""
    ran = [m for m in ms if m.status == "ok" and objective.score(m) and m.interleave_id]
    per: dict[str, dict[str, float]] = {}
    for m in ran:
        per.setdefault(setting(m.environment), {})[m.interleave_id] = objective.score(m)  # type: ignore[index,assignment]
    if AS_IT_IS not in per or len(per) < 2:
        return None
    spread = fit(per).spread
    maximize = objective.direction == "maximize"
    found = {k: compare(per[k], per[AS_IT_IS], spread, maximize=maximize, busy=busy)
             for k in per if k != AS_IT_IS}  # fmt: skip
    best = max(found, key=lambda k: found[k].ratio)

    def faults(name: str) -> float | None:
        values = sorted(
            v
            for m in ran
            if setting(m.environment) == name
            if (v := m.machine.page_faults_per_step) is not None
        )
        return values[len(values) // 2] if values else None

    return Timed(best, found[best], (faults(AS_IT_IS), faults(best)))
