"""A remedy, timed, not guessed: what to do about a pick that maps fresh memory every step.

A step whose temporaries are larger than what glibc's allocator keeps for reuse (it hands
blocks over 32 MiB back to the kernel when they are freed) maps them afresh every step,
and the kernel zeroes every page: thousands of page faults a step (a two-tower
recommender's 37 MiB of temporaries: 9,500 to 18,800 a step, half its step time). When
the pick shows that in its fresh processes (:data:`~._findings.FAULTS_PER_STEP`), the
tune times it as it is against it with each candidate setting (:func:`candidates`), in
fresh processes in turns, in :data:`~._margin.MIN_WINDOWS` windows, and the finding says
what the best candidate gave, with its interval (:func:`remedy_of`): a setting that made
it faster beyond doubt is named as the fix, one that did not is said to have not helped.

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

from autoplace.config import Config
from autoplace.measurement import Measurement
from autoplace.objectives import Objective
from autoplace.tuning._margin import MIN_WINDOWS, Comparison, against_base

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
    found = [(("GLIBC_TUNABLES", tunables),)]
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


@dataclasses.dataclass(frozen=True)
class Remedy:
    """What the best candidate setting did to the pick, timed in turns with it as it is.

    Attributes:
        setting: the candidate, as ``NAME=value``.
        comparison: how many times faster the pick ran with it (its interval, its verdict).
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
            f"; {with_it:,.0f} page faults a step instead of {as_is:,.0f}"
            if as_is is not None and with_it is not None
            else ""
        )
        return f"with {self.setting}: {self.comparison.sentence('the step as it is')}{faults}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            **self.comparison.as_dict(),
            "faults_per_step": list(self.faults_per_step),
        }


def needs_remedy(m: Measurement) -> bool:
    """Whether ``m`` (a pick's figures, from a fresh process) maps enough fresh memory every
    step that it may cost a tenth of the step."""
    faults, step = m.page_faults_per_step, m.fed_step_s or m.step_s
    if faults is None or faults < FAULTS_PER_STEP:
        return False
    return step is None or faults * FAULT_S >= FAULTS_SHARE * step


def remedy_window(
    pick: Config | None,
    figures: Measurement | None,
    remedies: Mapping[Config, Sequence[Measurement]],
) -> list[tuple[tuple[str, str], ...]]:
    """The environments to time the pick with in the next remedy window (as it is first),
    or none: when the pick does not need a remedy (its fresh processes mapped little
    memory afresh), or its remedy has had its windows."""
    if pick is None or figures is None or not figures.fresh_process or not needs_remedy(figures):
        return []
    windows = {m.interleave_id for m in remedies.get(pick, ()) if m.interleave_id}
    if len(windows) >= MIN_WINDOWS:
        return []
    return [(), *candidates()]


def remedy_of(
    objective: Objective, pick: Config, remedies: Mapping[Config, Sequence[Measurement]]
) -> Remedy | None:
    """The best candidate's effect on the pick, from its remedy windows (``None``: none ran).

    The windows are fitted as the confirmation's are (log score = setting + window), and
    each candidate is compared with the pick as it is, Bonferroni over the candidates."""
    ran = [m for m in remedies.get(pick, ()) if m.status == "ok" and objective.score(m)]
    scores = [(setting(m.environment), m.interleave_id, objective.score(m)) for m in ran]
    judged = against_base(objective, scores, AS_IT_IS)  # type: ignore[arg-type]
    if judged is None:
        return None
    found, _ = judged
    best, comparison = max(found, key=lambda kc: kc[1].ratio)

    def faults(name: str) -> float | None:
        values = [m.page_faults_per_step for m in ran if setting(m.environment) == name]
        values = [v for v in values if v is not None]
        return sorted(values)[len(values) // 2] if values else None

    return Remedy(best, comparison, (faults(AS_IT_IS), faults(best)))
