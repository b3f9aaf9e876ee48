"""Findings: what a tune noticed that the user should know, as a closed set of values.

Each finding carries its numbers, its likely cause and the fix that fits, and renders the
same way in the terminal, the recommendation file and the HTML report (as hyperfine's
warnings do): :meth:`text` is the one line, :meth:`as_dict` the file's
``[[findings]]`` entry. They are computed once, from the verdict
(``autoplace.tuning``), and never measured here.

* :class:`BusyMachine`: other processes competed for the cores while autoplace timed.
* :class:`CannotTellApart`: the pick and others are within the noise of each other.
* :class:`FreshPagesEveryStep`: the step maps fresh memory every step.
* :class:`HostMemoryGrows`: the process's memory grows step after step (a leak).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from autoplace import units
from autoplace.machine import Interference


@dataclasses.dataclass(frozen=True)
class BusyMachine:
    """Other processes competed for the cores while the verdict's measurements were timed.

    Attributes:
        interference: what the machine showed, over those measurements.
        resolution: how close two configurations could be and still be ordered here (the
            widest half-width of the pick's comparisons, a fraction), ``None`` when unknown.
        policy: the ``--if-busy`` policy in force.
    """

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

    @property
    def cause(self) -> str:
        return (
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
    """The pick could not be told apart from other configurations timed in its windows.

    Attributes:
        pick: the recommended configuration, in words.
        others: the finalists it could not be told apart from, closest first.
        within: the machine's resolution here (a fraction): how close two configurations
            could be and still be ordered.
        windows: the windows in fresh processes those comparisons rest on.
        quiet: whether the machine was quiet while they were timed (``False``: busy;
            ``None``: not known). On a quiet machine that spread is how far a figure moves
            from one fresh process to the next there, and a rerun meets it again.
        machine: what the machine showed meanwhile, in words (its load as ``uptime``
            counts it, and why that can read high on a quiet machine).
    """

    pick: str
    others: tuple[str, ...]
    within: float | None
    windows: int
    quiet: bool | None = None
    machine: str | None = None
    kind: ClassVar[str] = "cannot_tell_apart"

    def text(self) -> str:
        return f"{self.pick}, or any of {_some(self.others)} ({_within(self.within, self.quiet)})"

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


def _some(names: Sequence[str]) -> str:
    """Up to four names, and how many more."""
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return ", ".join(names[:4]) + more


def _within(half: float | None, quiet: bool | None) -> str:
    if half is None or half >= CANNOT_TELL:
        return "cannot be told apart here" if quiet else "busy: cannot tell these apart"
    return f"within ±{units.percent(half)} of each other here"


@dataclasses.dataclass(frozen=True)
class FreshPagesEveryStep:
    """The measuring process took many page faults per step, the batch on the device: its
    temporaries are mapped afresh and zeroed by the kernel every step.

    Attributes:
        config: the configuration, in words.
        faults_per_step: page faults per step in a fresh process.
        bytes_per_step: what they map (faults x the page size).
        step_s: the step's time, for scale.
        remedy: what the best setting timed against it did, in words (``None``: none was
            timed; see ``autoplace.tuning._remedy``).
        remedy_helps: whether that setting made it faster beyond doubt.
    """

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

    @property
    def cause(self) -> str:
        return (
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
    """The measuring process's resident memory grew step after step (after its caches were
    filled): something keeps every step's arrays.

    Attributes:
        config: the configuration, in words.
        per_step_bytes: the growth per step.
        resident_bytes: the process's resident memory at the end.
    """

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

    @property
    def cause(self) -> str:
        return (
            "the step, make_batch or code around them keeps a reference to every step's "
            "arrays (a list that only grows, a cache keyed by step, a Python-side log)"
        )

    @property
    def fix(self) -> str:
        return "find what holds them (tracemalloc, or jax.live_arrays() after some steps)"


#: Every kind of finding: the closed set.
Finding = BusyMachine | CannotTellApart | FreshPagesEveryStep | HostMemoryGrows
KINDS: tuple[type, ...] = (BusyMachine, CannotTellApart, FreshPagesEveryStep, HostMemoryGrows)


def as_dict(finding: Finding) -> dict[str, Any]:
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


def lines(findings: Sequence[dict[str, Any]]) -> list[str]:
    """Each finding of a file (its ``[[findings]]``) as the terminal and the report show
    it: ``TEXT (CAUSE); FIX``."""
    return [f"{f['text']} ({f['cause']}); {f['fix']}" for f in findings]
