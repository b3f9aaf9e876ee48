"""The findings of a verdict (see :mod:`autoplace.findings`), computed once from a
:class:`~._standing.Standing`."""

from __future__ import annotations

from autoplace.findings import (
    BusyMachine,
    CannotTellApart,
    Finding,
    FreshPagesEveryStep,
    HostMemoryGrows,
)
from autoplace.tuning._remedy import needs_remedy
from autoplace.tuning._standing import Standing

#: Growth of resident memory per step from which a process counts as leaking (a million
#: steps would need 16 GiB).
GROWTH_PER_STEP = 16 * 1024
#: The size of a page the kernel maps (the faults' unit).
PAGE = 4096


def resolution(standing: Standing) -> float | None:
    """The smallest difference the verdict could tell apart: half the widest interval of the
    pick's comparisons with the finalists (the search's when none was confirmed)."""
    confirmed = [c for s, c in _compared(standing) if s.confirmed]
    pool = confirmed or [c for _, c in _compared(standing)]
    return max((c.noise for c in pool), default=None)


def _compared(standing: Standing) -> list:
    return [(s, standing.comparisons[s.config]) for s in standing.ranked[1:]
            if s.config in standing.comparisons]  # fmt: skip


def findings(standing: Standing, policy: str = "warn") -> tuple[Finding, ...]:
    """What the verdict noticed, most important first."""
    out: list[Finding] = []
    best = standing.best
    machine = standing.interference
    if machine is not None and machine.busy:
        out.append(BusyMachine(machine, resolution(standing), policy))
    if best is None:
        return tuple(out)
    equals = standing.equivalent
    confirmed = [(s, c) for s, c in equals if s.confirmed]
    searched = [(s, c) for s, c in equals if not s.confirmed]
    surmised = standing.predicted_equivalent
    if equals or surmised:
        out.append(
            CannotTellApart(
                pick=best.config.label(),
                others=tuple(s.config.label() for s, _ in confirmed),
                within=max((c.noise for _, c in confirmed), default=None),
                windows=max((c.windows for _, c in confirmed), default=0),
                searched=tuple(s.config.label() for s, _ in searched),
                searched_within=max((c.noise for _, c in searched), default=None),
                predicted=tuple(c.label() for c, _ in surmised),
                quiet=None if machine is None else not machine.busy,
            )
        )
    m = best.measurement
    if needs_remedy(m):
        step = m.step_time(standing.objective.loop)
        remedy = standing.remedy
        out.append(
            FreshPagesEveryStep(
                best.config.label(),
                m.page_faults_per_step,  # type: ignore[arg-type]
                m.page_faults_per_step * PAGE,  # type: ignore[operator]
                step,
                remedy=None if remedy is None else remedy.text(),
                remedy_helps=None if remedy is None else remedy.helps,
            )
        )
    growth = m.resident_growth_per_step
    if growth is not None and growth >= GROWTH_PER_STEP:
        out.append(HostMemoryGrows(best.config.label(), growth, m.resident_bytes))
    return tuple(out)
