"""Findings: what a tune noticed that the user should know, as a closed set of values.

Each carries its numbers, cause and fix, and reads alike in the terminal, the file's
``[[findings]]`` (:func:`as_dict`) and the HTML report, as hyperfine's warnings do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import ClassVar

from autoplace import units
from autoplace.machine import Interference


@dataclasses.dataclass(frozen=True)
class BusyMachine:
    """Other processes competed for the cores while the verdict's measurements were timed.
    ``resolution``: how close two configurations could be and still be ordered here (a
    fraction); ``policy``: ``--if-busy``'s."""

    interference: Interference
    resolution: float | None
    policy: str = "warn"
    kind: ClassVar[str] = "busy_machine"

    def text(self) -> str:
        r = self.resolution
        if r is None:
            told = ""
        elif r >= CANNOT_TELL:
            told = "; busy: it cannot tell its finalists apart at all"
        else:
            told = f"; differences under ±{units.percent(r)} cannot be told apart here"
        return f"the machine was busy: {self.interference.describe()}{told}"

    cause: ClassVar[str] = (
        "other processes took the cores in turns with the steps being timed, so a "
        "figure moves between windows far more than the turns of one window show"
    )

    @property
    def fix(self) -> str:
        if self.policy == "wait":
            return "rerun when it is idle: it stayed busy past --quiet-wait"
        return "rerun when it is idle (`uptime` shows the load), or pass --if-busy wait"


#: A resolution at or above this (a ratio's interval spanning 2x) tells nothing apart.
CANNOT_TELL = 1.0


@dataclasses.dataclass(frozen=True)
class CannotTellApart:
    """The pick could not be told apart from ``others`` (closest first) over ``windows``
    windows: within ``within`` (a fraction) of each other. ``quiet``: whether the machine
    was (``None``: not known); ``machine``: what it showed, in words."""

    pick: str
    others: tuple[str, ...]
    within: float | None
    windows: int
    quiet: bool | None = None
    machine: str | None = None
    kind: ClassVar[str] = "cannot_tell_apart"

    def text(self) -> str:
        more = f" and {len(self.others) - 4} more" if len(self.others) > 4 else ""
        some = ", ".join(self.others[:4]) + more
        return f"{self.pick}, or any of {some} ({_within(self.within, self.quiet)})"

    @property
    def cause(self) -> str:
        return (
            f"their differences are smaller than the spread between the {self.windows} "
            "windows they were timed in, each in fresh processes"
        )

    @property
    def fix(self) -> str:
        if self.quiet:
            seen = f" ({self.machine})" if self.machine else ""
            return (
                f"any of them will do here: the machine was quiet{seen}, so that is how far a "
                "figure moves from one fresh process to the next on it, and a rerun would meet "
                "the same spread; choose among them by memory or precision if either matters"
            )
        rerun = "any of them will do here; to separate them, rerun with --remeasure"
        if self.quiet is None:
            return f"{rerun} on a quiet machine"
        return f"{rerun} when the machine is idle"


def _within(half: float | None, quiet: bool | None) -> str:
    if half is None or half >= CANNOT_TELL:
        return "cannot be told apart here" if quiet else "busy: cannot tell these apart"
    return f"within ±{units.percent(half)} of each other here"


@dataclasses.dataclass(frozen=True)
class FreshPagesEveryStep:
    """The step's temporaries are mapped afresh and zeroed by the kernel every step.
    ``remedy``: what the best allocator setting timed against it did, in words (``None``:
    none timed); ``remedy_helps``: whether it made the step faster beyond doubt."""

    config: str
    faults_per_step: float
    bytes_per_step: float
    step_s: float | None
    remedy: str | None = None
    remedy_helps: bool | None = None
    kind: ClassVar[str] = "fresh_pages_every_step"

    def text(self) -> str:
        return (
            f"{self.config} maps {units.size(self.bytes_per_step)} of fresh memory every step "
            f"({self.faults_per_step:,.0f} page faults a step"
            + (f", in a {units.seconds(self.step_s)} step" if self.step_s else "")
            + ")"
        )

    cause: ClassVar[str] = (
        "the step's buffers are handed back to the kernel when freed and mapped again "
        "the next step (glibc's allocator unmaps a freed block above its mmap threshold, "
        "128 KiB rising to at most 32 MiB, and trims the top of its heap), and the "
        "kernel zeroes every page it maps"
    )

    @property
    def fix(self) -> str:
        if self.remedy is not None and self.remedy_helps:
            return f"timed here, {self.remedy}: set it in the training process's environment"
        if self.remedy is not None:
            return (
                f"timed here, {self.remedy}: it did not help beyond doubt; a smaller batch "
                "keeps the temporaries under that size"
            )
        return (
            "a smaller batch keeps the temporaries under that size; or time a long-lived "
            "allocator (jemalloc or tcmalloc through LD_PRELOAD) against this figure"
        )


@dataclasses.dataclass(frozen=True)
class HostMemoryGrows:
    """The process's resident memory grew step after step once settled: something keeps
    every step's arrays."""

    config: str
    per_step_bytes: float
    resident_bytes: int | None
    kind: ClassVar[str] = "host_memory_grows"

    def text(self) -> str:
        end = f", {units.size(self.resident_bytes)} at the end" if self.resident_bytes else ""
        return (
            f"{self.config}: host memory grows by {units.size(self.per_step_bytes)} a step{end}"
            f" (a million steps: {units.size(self.per_step_bytes * 1e6)})"
        )

    cause: ClassVar[str] = (
        "the step, make_batch or code around them keeps a reference to every step's "
        "arrays (a list that only grows, a cache keyed by step, a Python-side log)"
    )

    fix: ClassVar[str] = "find what holds them (tracemalloc, or jax.live_arrays() after some steps)"


#: Every kind of finding: the closed set.
Finding = BusyMachine | CannotTellApart | FreshPagesEveryStep | HostMemoryGrows


def as_dict(finding: Finding) -> dict[str, object]:
    """The file's ``[[findings]]`` entry: the kind, the line, cause and fix, and the numbers."""
    numbers = {
        f.name: (v.as_dict() if isinstance(v, Interference) else v)
        for f in dataclasses.fields(finding)
        if (v := getattr(finding, f.name)) is not None
    }
    return {
        "kind": finding.kind,
        "text": finding.text(),
        "cause": finding.cause,
        "fix": finding.fix,
        **{k: list(v) if isinstance(v, tuple) else v for k, v in numbers.items()},
    }


def lines(findings: Sequence[Mapping[str, object]]) -> list[str]:
    """Each finding of a file as ``TEXT (CAUSE); FIX``."""
    return [f"{f['text']} ({f['cause']}); {f['fix']}" for f in findings]
