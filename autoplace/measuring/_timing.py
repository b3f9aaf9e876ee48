"""Timing loops, JAX-free: chunks of steps, taken in turns, until the comparison settles."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from autoplace.measurement import Loop, LoopFigures
from autoplace.settings import MeasureSettings


def relative_spread(samples: list[float]) -> float:
    """Interquartile range over median: 0.05 means the middle half lies within 5%."""
    if len(samples) < 2:
        return 0.0
    q1, med, q3 = np.percentile(samples, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else 0.0


def time_steps(
    run_chunk: Callable[[int], float],
    per_step_guess: float,
    settings: MeasureSettings,
    cap_s: float,
) -> tuple[float, float, int]:
    """Median seconds per step, its relative spread, and the number of chunks timed.

    Stops once ``settings.min_samples`` chunks agree within ``settings.target_spread``,
    or at ``settings.max_samples``, or past ``cap_s`` with at least ``settings.min_chunks``; a
    ``cap_s`` of 0 times a single chunk.

    ``run_chunk(k)`` runs ``k`` steps, blocks until they are done and returns the
    seconds it took. Chunks are sized to last at least ``settings.sample_min_s``
    so timer resolution and the final synchronisation are amortised; the size
    comes from ``per_step_guess``, the seconds of one step timed just before, which
    counts as the first chunk when it lasted ``sample_min_s`` already (a step that
    slow is timed one step a chunk anyway).
    """
    return summarize(time_interleaved([run_chunk], [per_step_guess], settings, cap_s)[0])


def summarize(samples: Sequence[float]) -> tuple[float, float, int]:
    """(median, relative spread, count) of per-step seconds, one per timed chunk."""
    return float(np.median(samples)), relative_spread(list(samples)), len(samples)


def loop_figures(chunks: Sequence[float]) -> LoopFigures:
    """The figures of a loop whose chunks took ``chunks`` seconds per step."""
    step_s, spread, samples = summarize(chunks)
    return LoopFigures(step_s=step_s, spread=spread, chunks=tuple(chunks), samples=samples)


def time_interleaved(
    run_chunks: Sequence[Callable[[int], float]],
    per_step_guesses: Sequence[float],
    settings: MeasureSettings,
    cap_s: float,
    on_turn: Callable[[int], None] | None = None,
    batch_sizes: Sequence[int] | None = None,
) -> list[list[float]]:
    """:func:`time_steps` for several loops at once, their chunks taking turns (A B C A B C).

    Every loop gets the same number of chunks, each about ``settings.sample_min_s``
    long, so a machine that drifts (another process, clocks, heat) slows them
    alike and their comparison keeps what the drift would have spoilt when timed
    one after the other. No untimed steps settle a loop resumed after another's turn:
    switched off in the ablation, settling changed no pick and no claim and cost 13% of
    the tune's wall time (benchmarks/README.md#ablation). Chunks are sized from the guess
    at first, then from the loop's median so far: a guess timed just after another loop's
    turn runs long.

    Stops after ``min_samples`` turns once the comparison is settled: every loop's
    chunks agree within ``settings.target_spread``, or, with several loops, every
    two loops' turn-by-turn ratios do (drift moves both loops of a turn, so their
    ratio settles long before their times do); else at ``max_samples``, or past
    ``cap_s`` per loop with at least ``min_chunks`` chunks each. A ``cap_s`` of 0 is a glance,
    for a loop nothing is ranked on: each loop's one sample is the step timed for its
    guess. Returns, per loop, the seconds per step of each chunk in the order timed:
    chunk ``i`` of every loop ran within one turn, so loops can be compared chunk by
    chunk.
    """
    if cap_s <= 0:
        return [[g] for g in per_step_guesses]
    # A guess that is a one-step chunk already is a sample: slow steps are costly.
    samples: list[list[float]] = [[] for _ in run_chunks]
    if all(_chunk_size(g, settings) == 1 for g in per_step_guesses):
        samples = [[g] for g in per_step_guesses]
    stopped: set[int] = set()
    start = time.perf_counter()

    def live() -> list[list[float]]:
        return [taken for i, taken in enumerate(samples) if i not in stopped]

    def enough(n: int) -> bool:
        if n == 0:
            return False
        if n >= settings.min_samples and _settled(live(), settings.target_spread):
            return True
        return n >= settings.max_samples or (
            n >= settings.min_chunks and time.perf_counter() - start >= cap_s * len(live())
        )

    turn_s = [0.0 for _ in run_chunks]  # each loop's latest timed chunk, in seconds
    while not enough(len(samples[0])):
        if on_turn is not None:
            on_turn(len(samples[0]))
        for i, (run, guess, taken) in enumerate(
            zip(run_chunks, per_step_guesses, samples, strict=True)
        ):
            if i in stopped:
                continue
            per_step = float(np.median(taken)) if taken else guess
            untimed, k = _turn_sizes(per_step, settings, not taken)
            if untimed:
                run(untimed)
            seconds = run(k)
            turn_s[i] = seconds
            taken.append(seconds / k)
        if batch_sizes is not None and (
            settings.stop_behind is not None or settings.stop_far_behind
        ):
            stopped |= _stops(samples, batch_sizes, settings, turn_s)
            if stopped and len(stopped) == len(samples) - 1:
                break  # the reference left alone: nothing left to compare it with
    return samples


def _turn_sizes(per_step: float, settings: MeasureSettings, first: bool) -> tuple[int, int]:
    """The untimed steps and the timed ones of a loop's turn: in its ``first`` turn, the
    warm-up; then none."""
    k = _chunk_size(per_step, settings)
    if first and settings.warmup_s > 0:
        return math.ceil(settings.warmup_s / max(per_step, 1e-7)), k
    return 0, k


def _stops(
    samples: Sequence[Sequence[float]],
    batch_sizes: Sequence[int],
    settings: MeasureSettings,
    turn_s: Sequence[float],
) -> set[int]:
    """The loops to time no further after this turn: clearly behind the reference
    (:func:`behind`, where ``settings.stop_behind`` is set), or long and far behind it
    (:func:`far_behind`, where ``settings.stop_far_behind`` is); never the reference."""
    found = set()
    if settings.stop_behind is not None:
        found |= behind(samples, batch_sizes, settings.stop_behind)
    if settings.stop_far_behind:
        found |= far_behind(samples, batch_sizes, turn_s)
    return found - {0}


#: A turn this long or longer is a long one (:func:`far_behind`): the usual 0.05-0.1 s is not.
LONG_TURN_S = 0.5

#: Turns a loop is timed before it may be stopped as clearly behind the reference: if its
#: time per sample were in truth at ``stop_behind`` times the reference's, every one of
#: four turns would be over it with probability 1/16 (a sign test, one-sided): the rule's
#: error rate, at most, on a loop it stops (docs/search.md).
STOP_AFTER_TURNS = 4


def behind(
    samples: Sequence[Sequence[float]],
    batch_sizes: Sequence[int],
    factor: float,
    turns: int = STOP_AFTER_TURNS,
) -> set[int]:
    """The loops clearly behind the first (the reference): timed ``turns`` turns at least
    (:data:`STOP_AFTER_TURNS`), and in every turn more than ``factor`` times the
    reference's time per sample in that turn (turn by turn, so drift cancels)."""
    reference = [t / batch_sizes[0] for t in samples[0]]
    out = set()
    for i, taken in enumerate(samples[1:], start=1):
        if len(taken) < turns or len(taken) > len(reference):
            continue
        if all(t / batch_sizes[i] > factor * r for t, r in zip(taken, reference, strict=False)):
            out.add(i)
    return out


#: A loop whose timed chunk takes :data:`LONG_TURN_S` or more, and that ran more than this
#: many times the reference's time per sample in every turn so far, stops after its first
#: turn. Such a loop is a large batch's, far behind: on the held-out encoder, batch 4096's
#: step took 5.4 s at 2.5 times batch 16's time per sample, and its three turns of the
#: search cost 18 s of a 100 s tune (issue 38). A chunk that long averages over a burst of
#: other processes' load (0.5-1 s at 2x on this 2-core CPU) rather than being it, and a loop
#: within the finalists' reach (``tuning._search.REACH``, 20%) would have to read 1.7
#: times slower than it runs.
FAR_BEHIND = 2.0


def far_behind(
    samples: Sequence[Sequence[float]], batch_sizes: Sequence[int], turn_s: Sequence[float]
) -> set[int]:
    """The loops far behind the first (the reference), each chunk long: their latest chunk
    took ``turn_s`` of :data:`LONG_TURN_S` or more, and every turn so far more than
    :data:`FAR_BEHIND` times the reference's time per sample in that turn."""
    far = behind(samples, batch_sizes, FAR_BEHIND, turns=1)
    return {i for i in far if turn_s[i] >= LONG_TURN_S}


def _chunk_size(per_step: float, settings: MeasureSettings) -> int:
    """The steps of a timed chunk: ``settings.sample_min_s`` at least, one step at least."""
    return max(1, math.ceil(settings.sample_min_s / max(per_step, 1e-7)))


def _settled(samples: list[list[float]], target_spread: float) -> bool:
    """Every loop's chunks agree within ``target_spread``, or, with several loops, every
    two loops' turn-by-turn ratios do."""
    if all(relative_spread(t) <= target_spread for t in samples):
        return True
    ratios = (
        [x / y for x, y in zip(a, b, strict=True)] for a, b in itertools.combinations(samples, 2)
    )
    return len(samples) > 1 and all(relative_spread(r) <= target_spread for r in ratios)


def loops(settings: MeasureSettings) -> list[tuple[Loop, float]]:
    """The loops a measurement times, in order, each with its cap: the resident step and
    the fed one always (a cap of 0 is a glance), the prefetched one where its cap is set."""
    out: list[tuple[Loop, float]] = [
        ("step", settings.time_cap_s),
        ("fed", settings.fed_time_cap_s),
    ]
    if settings.prefetch_time_cap_s > 0:
        out.append(("prefetch", settings.prefetch_time_cap_s))
    return out


def compiles_alone(platforms: Iterable[str]) -> bool:
    """Whether steps for these platforms compile one at a time: any accelerator's do. XLA's
    GPU autotuner times candidate kernels on the device while it compiles, and side by side
    it reads its own timings wrong (an H200 took 20 s a compile three at a time, against
    0.7-1.3 s alone, and logged "measured time has sub-optimal accuracy")."""
    return any(p != "cpu" for p in platforms)
