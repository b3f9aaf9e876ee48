"""The loop's phases, and how hard each one measures.

* search: quick measurements of what the strategy proposes, each group timed in
  turns with the best configuration so far;
* confirm: the finalists, measured again together, longer, with the float32
  comparison;
* duel: the winner and its closest challenger, once more and longer still, when the
  confirmation could not tell them apart;
* remedy: the pick as it is and with a setting that may remedy what it showed (its
  temporaries mapped afresh every step), in fresh processes, as long as a confirmation;
* fuse: the pick at one step a call and at several (its fixed cost mattering), in fresh
  processes, as long as a confirmation;
* feeding: the pick and each other device's best, their steps fed three ways (a host
  batch put each step, two puts in flight, the data on the device), every loop timed as
  a confirmation's, in fresh processes.

Every phase's :class:`~autoplace.MeasureSettings` is built here, in one place.
"""

from __future__ import annotations

import dataclasses
import enum

from autoplace.objectives import Objective
from autoplace.settings import MeasureSettings
from autoplace.study import StoredPhase

#: Time cap of the loop that ranks, per configuration, while searching (three turns, at
#: least, of a 50 ms chunk after 30 ms of settling), in a confirmation window, and in a
#: duel's. A verdict rests on its windows, not their length: what moves a figure is the
#: spread between windows, which a longer window does not shrink (docs/search.md).
SEARCH_CAP_S = 0.2
CONFIRM_CAP_S = 0.25
DUEL_CAP_S = 0.5
#: A window's fresh process first runs its loop untimed for this long, in its first turn:
#: a fresh process's first chunks ran 20-50% slower than its later ones (page faults of its
#: allocator's first buffers), and three chunks, one of them that first, made a window's
#: figure move by 11% from one window to the next (issue 36, docs/measurement.md).
WINDOW_WARMUP_S = 0.1
#: The chunks a window's ranked loop times at least, whatever its cap: their median
#: leaves a slow first chunk out.
WINDOW_CHUNKS = 6
#: While searching for throughput, a configuration whose every one of its first four turns
#: takes more than this many times the group's reference's time per sample stops being
#: timed: it is 20% behind the best so far, further than any finalist may be
#: (:data:`~._verdict.CONFIRM_REACH`), and its time goes to the others.
STOP_BEHIND = 1.25


class Phase(enum.Enum):
    SEARCH = "search"
    CONFIRM = "confirm"
    DUEL = "duel"
    #: The pick as it is and with a setting that may remedy what it showed, timed in turns
    #: in fresh processes (see ``autoplace.tuning._remedy``).
    REMEDY = "remedy"
    #: The pick at one step a call and at several, timed in turns in fresh processes (see
    #: ``autoplace.tuning._fusing``).
    FUSE = "fuse"
    #: The pick and each other device's best, fed three ways (a host batch put each step,
    #: two puts in flight, the data on the device), in fresh processes (see
    #: ``autoplace.tuning._feeding``).
    FEED = "feeding"

    @property
    def stored(self) -> StoredPhase:
        """How the study records it: a duel is a confirmation too."""
        if self is Phase.SEARCH:
            return "search"
        if self is Phase.REMEDY:
            return "remedy"
        if self is Phase.FEED:
            return "feeding"
        return "fuse" if self is Phase.FUSE else "confirm"


def phase_settings(settings: MeasureSettings, objective: Objective) -> dict[Phase, MeasureSettings]:
    """The settings each phase measures with, from the user's ``settings``.

    The loop the objective ranks on gets the phase's cap (or the user's, if lower);
    the other loop (and the transfer, unless latency counts it) only a glance. One
    warm-up step follows the first call, none when the ranked loop is the fed one:
    the step loop's glance, timed first, warms it. The search skips the float32
    comparison; the confirmation and the duel make it (as ``settings`` says).
    """

    def ranking(base: MeasureSettings, cap: float) -> MeasureSettings:
        """``base`` with the ranked loop capped at ``cap`` (or the user's, if lower) and
        the others glanced at (the prefetched one, not ranked, not timed at all)."""
        caps = {"time_cap_s": 0.0, "fed_time_cap_s": 0.0, "prefetch_time_cap_s": 0.0}
        ranked = {"step": "time_cap_s", "fed": "fed_time_cap_s", "prefetch": "prefetch_time_cap_s"}
        own = ranked[objective.loop]
        caps[own] = min(getattr(settings, own) or cap, cap)
        return dataclasses.replace(base, **caps)

    def feeding(base: MeasureSettings) -> MeasureSettings:
        """``base`` with all three loops timed as a window's ranked loop is."""
        return dataclasses.replace(
            base,
            time_cap_s=CONFIRM_CAP_S,
            fed_time_cap_s=CONFIRM_CAP_S,
            prefetch_time_cap_s=CONFIRM_CAP_S,
        )

    quick = dataclasses.replace(
        settings,
        deviation=False,
        transfer_cap_s=settings.transfer_cap_s if objective.one_batch else 0.0,
        warmup_steps=min(settings.warmup_steps, 1 if objective.loop == "step" else 0),
    )
    windows = dataclasses.replace(quick, warmup_s=WINDOW_WARMUP_S, min_chunks=WINDOW_CHUNKS)
    confirming = dataclasses.replace(windows, deviation=settings.deviation)
    searching = dataclasses.replace(
        quick, stop_behind=STOP_BEHIND if objective.rate else None, stop_far_behind=objective.rate
    )
    # A fusing window's K steps a call far slower than one a call stop after one turn: on
    # the residual CNN, lax.scan ran each step 7-10 times slower, and six chunks of 16 steps a
    # call (5 s each) made one window take 72 s (issue 38).
    fusing = dataclasses.replace(windows, stop_far_behind=objective.rate)
    return {
        Phase.SEARCH: ranking(searching, SEARCH_CAP_S),
        Phase.CONFIRM: ranking(confirming, CONFIRM_CAP_S),
        Phase.DUEL: ranking(confirming, DUEL_CAP_S),
        Phase.REMEDY: ranking(windows, CONFIRM_CAP_S),
        Phase.FUSE: ranking(fusing, CONFIRM_CAP_S),
        Phase.FEED: feeding(windows),
    }
