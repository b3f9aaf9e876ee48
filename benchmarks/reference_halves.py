"""Can the plain loop meet issue 36's listing targets against itself? (its (d) and (e))

Issue 36 judges the list a tune prints beside its pick ("cannot be told apart") by the
plain loop (``remeasure.py``): (d) at most 5% of the listed configurations more than 10%
behind the plain loop's best, and (e) at most 5% of those the plain loop puts within 3%
of its best missing from the list. Whether any list can meet that depends on whether the
plain loop itself puts the same configurations within 3% from one run to the next.

This reads one ``remeasure.py measure`` run (its rounds of every configuration, in turns,
each in a fresh process) and splits its rounds in two: the even rounds and the odd ones,
two runs of the plain loop interleaved over the same minutes, so the machine's drift
touches both alike. In each half, each configuration's ratio to the half's best is the
median over its rounds of the within-round ratio (as ``measurement_benchmark.py`` takes
the reference's); how far those ratios move from one half to the other says how far the
plain loop's own ratios hold. Then each half's own list, the configurations it puts within
``--near`` of its best (3%: the list (e) asks for), is judged by the other half, as a
tune's list is judged by the plain loop: (d) its share more than 10% behind the other
half's best, (e) the share of the other half's near configurations it misses.

From the repository root::

    python benchmarks/reference_halves.py benchmarks/results/remeasure-measure-*.json \
        benchmarks/results/measurement-*.json

It reads every plain-loop run of eight rounds or more in the files given (a
``remeasure.py measure`` file, or each idle row of a measurement benchmark's file). It
measures nothing itself: every figure is in the files it reads.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Issue 36's thresholds: a listed configuration may be at most this far behind the best
#: (d), and every one within this much of it must be listed (e).
BEHIND = 0.10
NEAR = 0.03
#: The reaches of a half's own list tried in the summary: wider lists miss fewer near ones
#: and hold more far ones.
REACHES = (0.03, 0.05, 0.10, 0.15)


def by_round(timings: Sequence[Mapping]) -> dict[int, dict[str, float]]:
    """Samples per second of each configuration, per round (failed timings left out)."""
    out: dict[int, dict[str, float]] = {}
    for t in timings:
        if t.get("status") == "ok" and t.get("samples_per_s"):
            out.setdefault(t["round"], {})[t["config"]] = t["samples_per_s"]
    return out


def reference_rounds(reference: Mapping[str, Mapping]) -> dict[int, dict[str, float]]:
    """The same, from a measurement benchmark row's ``reference`` (each configuration's
    ``scores`` in the rounds ``rounds_timed``)."""
    out: dict[int, dict[str, float]] = {}
    for c, r in reference.items():
        for k, score in zip(r.get("rounds_timed", ()), r.get("scores", ()), strict=False):
            out.setdefault(k, {})[c] = score
    return out


def runs(path: Path, min_rounds: int) -> list[tuple[str, dict[int, dict[str, float]]]]:
    """Every plain-loop run in ``path`` with ``min_rounds`` rounds or more: a
    ``remeasure.py measure`` file's, or each idle row's reference of a measurement
    benchmark's file."""
    data = json.loads(path.read_text())
    if "timings" in data:
        found = [(path.name, by_round(data["timings"]))]
    else:
        found = [
            (f"{path.name} {row['workload']}", reference_rounds(row["reference"]))
            for row in data.get("rows", ())
            if row.get("condition") == "idle" and "reference" in row
        ]
    return [(name, rounds) for name, rounds in found if len(rounds) >= min_rounds]


def standing(rounds: Mapping[int, Mapping[str, float]]) -> dict[str, float]:
    """Each configuration's ratio to the best of these rounds: the best is the highest
    median throughput; a ratio is the median over rounds of the within-round ratio."""
    configs = sorted({c for r in rounds.values() for c in r})
    medians = {c: statistics.median(r[c] for r in rounds.values() if c in r) for c in configs}
    best = max(medians, key=medians.__getitem__)
    return {
        c: statistics.median(r[c] / r[best] for r in rounds.values() if c in r and best in r)
        for c in configs
    }


def judged(listed: set[str], judge: Mapping[str, float]) -> dict[str, object]:
    """``listed`` judged as issue 36 judges a tune's list, by ``judge``'s ratios."""
    far = sorted(c for c in listed if judge[c] < 1 - BEHIND)
    near = {c for c, r in judge.items() if r >= 1 - NEAR}
    missing = sorted(near - listed)
    return {
        "listed": sorted(listed),
        "d_far": far,
        "d_share": len(far) / len(listed) if listed else None,
        "judge_near": sorted(near),
        "e_missing": missing,
        "e_share": len(missing) / len(near) if near else None,
    }


def halves(name: str, rounds: Mapping[int, Mapping[str, float]], near: float) -> dict[str, object]:
    """The two halves of ``rounds`` (even, odd), each one's list judged by the other."""
    # configurations timed in every round only: a half's best must be timed beside each
    every = set.intersection(*(set(r) for r in rounds.values()))
    rounds = {k: {c: v for c, v in r.items() if c in every} for k, r in rounds.items()}
    even = {k: v for k, v in rounds.items() if k % 2 == 0}
    odd = {k: v for k, v in rounds.items() if k % 2 == 1}
    a, b = standing(even), standing(odd)
    out: dict[str, object] = {
        "run": name,
        "rounds": [len(even), len(odd)],
        "ratio_to_best": {c: [round(a[c], 4), round(b[c], 4)] for c in sorted(a)},
        "moved": statistics.median(abs(math.log(a[c] / b[c])) for c in a),
        "moved_worst": max(abs(math.log(a[c] / b[c])) for c in a),
    }
    for name, own, other in (("even judged by odd", a, b), ("odd judged by even", b, a)):
        out[name] = judged({c for c, r in own.items() if r >= 1 - near}, other)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", type=Path, nargs="+", help="remeasure.py measure results")
    parser.add_argument("--near", type=float, default=NEAR, help="a half's own list's reach")
    parser.add_argument("--min-rounds", type=int, default=8, help="a run's rounds at least")
    args = parser.parse_args(argv)
    found = [run for path in args.files for run in runs(path, args.min_rounds)]
    for name, rounds in found:
        show(halves(name, rounds, args.near))
    print(f"\nOver the {len(found)} runs, both halves each, a half listing what it puts within:")
    for reach in REACHES:
        tally = [0, 0, 0, 0]  # far, listed, missing, near
        for name, rounds in found:
            result = halves(name, rounds, reach)
            for side in ("even judged by odd", "odd judged by even"):
                j: Any = result[side]
                tally[0] += len(j["d_far"])
                tally[1] += len(j["listed"])
                tally[2] += len(j["e_missing"])
                tally[3] += len(j["judge_near"])
        print(
            f"  {reach:.0%}: (d) {tally[0]} of {tally[1]} listed more than {BEHIND:.0%} behind; "
            f"(e) {tally[2]} of {tally[3]} near ones missing"
        )


def show(result: Mapping[str, object]) -> None:
    print(f"{result['run']}: rounds {result['rounds']}, ratio to each half's best:")
    for c, (x, y) in result["ratio_to_best"].items():  # type: ignore[attr-defined]
        print(f"  {c:28} even {x:.3f}  odd {y:.3f}")
    print(
        f"  a ratio to the best, from one half to the other: {result['moved']:.1%} at the "
        f"median, {result['moved_worst']:.1%} at worst (log units)"
    )
    for name in ("even judged by odd", "odd judged by even"):
        j: Any = result[name]
        print(
            f"  {name}: listed {len(j['listed'])}; (d) {len(j['d_far'])} more than "
            f"{BEHIND:.0%} behind {j['d_far']}; (e) {len(j['e_missing'])} of "
            f"{len(j['judge_near'])} near ones missing {j['e_missing']}"
        )


if __name__ == "__main__":
    main()
