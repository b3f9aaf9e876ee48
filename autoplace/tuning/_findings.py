"""The findings of a verdict (see :mod:`autoplace.findings`), computed once from a
:class:`~._standing.Standing`: the machine's, the ranking's, each phase's own."""

from __future__ import annotations

from autoplace.findings import BusyMachine, Finding
from autoplace.tuning._standing import Standing


def findings(standing: Standing, policy: str = "warn") -> tuple[Finding, ...]:
    """What the verdict noticed, most important first."""
    out: list[Finding] = []
    machine, ranking = standing.interference, standing.ranking
    if machine is not None and machine.busy:
        out.append(BusyMachine(machine, ranking.resolution if ranking else None, policy))
    if ranking is not None:
        out += ranking.findings(machine.describe() if machine is not None else None)
    for result in standing.results.values():
        out += result.findings()
    return tuple(out)
