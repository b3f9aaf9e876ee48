"""What a larger minutes-later part would do to the verdict's claims and intervals (issue 36).

A window comparison's 95% interval adds, in quadrature to the windows' own part, how far
a ratio moves when it is measured again minutes later in other fresh processes
(``tuning._margin.REPEAT_SIGMA``, one standard deviation of the ratio, log units; 0.03).
Two of issue 36's targets pull it in opposite ways: (a) a "faster" claim must hold when
the plain loop re-measures it minutes later (at most 5% contradicted), and a comparison's
interval must be no wider than ±10% where the plain loop's spread is ±5% or less. A larger
part keeps more claims from being contradicted and widens every interval.

This reads the committed results of every run made with that part in the interval (the
measurement benchmark's from 2026-11-26 22:40 UTC on, and the verdict benchmark's
closest comparisons), recovers each window comparison's own part from its stored
interval (the total half-width, log units, less the part at 0.03), and recomputes, for
each candidate part: which of the claims still stand ("faster": the whole interval above
1), how many of those the plain loop contradicted (its ratio below 1), and the
half-widths where the plain loop held ±5%. It only ever removes claims: a claim also needs
the difference's sign in every shared window, which the files do not keep.

From the repository root::

    python benchmarks/repeat_tradeoff.py

It measures nothing itself: every figure is in the files it reads.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
#: The part the stored intervals were made with, and the candidates tried.
STORED = 0.03
PARTS = (0.03, 0.04, 0.05, 0.06, 0.075, 0.10)
#: The normal quantile of a two-sided 95% interval.
Z = 1.959963984540054
#: The first runs made with the part in the interval (the commit of 2026-11-26 22:40).
SINCE = "2026-11-26T22:40"


def comparisons(paths: Sequence[Path]) -> Iterator[dict]:
    """Every window comparison (two shared windows or more) of the runs at ``paths``
    made since :data:`SINCE`: its ratio, its interval's half-width (log), the plain loop's
    ratio and the wider of the two configurations' plain-loop spreads, where known."""
    for path in paths:
        data = json.loads(path.read_text())
        if data.get("date", "") < SINCE:
            continue
        for row in data.get("rows", ()):
            if row.get("condition") != "idle":
                continue
            if data.get("benchmark") == "measurement":
                yield from _measured(path.name, row)
            elif data.get("benchmark") == "verdict":
                yield from _claimed(path.name, row)


def _measured(name: str, row: dict) -> Iterator[dict]:
    reference = {(r["pick"], r["other"]): r for r in row.get("ratios", ())}
    for tune in row.get("tunes", ()):
        for other, c in tune.get("comparisons", {}).items():
            ref = reference.get((tune["pick"], other))
            if c.get("windows", 0) < 2 or ref is None or ref.get("reference") is None:
                continue
            yield {
                "run": f"{name} {row['workload']}",
                "ratio": c["ratio"],
                "half": (math.log(c["high"]) - math.log(c["low"])) / 2,
                "reference": ref["reference"],
                "spread": ref.get("spread"),
            }


def _claimed(name: str, row: dict) -> Iterator[dict]:
    """The verdict benchmark keeps each tune's closest comparison with its interval, and
    the plain loop's ratio of each claim it re-measured."""
    remeasured = {(c["tune"], c["pick"], c["other"]): c["ratio"] for c in row["claims"]["new"]}
    for tune in row["tunes"]["new"]:
        c = tune.get("closest") or {}
        if c.get("windows", 0) < 2 or not c.get("low"):
            continue
        other = f"{c['device']}/{c['batch_size']}/{c['precision']}/{c['width']}"
        ref = remeasured.get((tune["tag"], tune["pick"], other))
        if ref is None:
            continue  # not a claim: the plain loop re-measured only the claims
        yield {
            "run": f"{name} {row['workload']}",
            "ratio": c["ratio"],
            "half": (math.log(c["high"]) - math.log(c["low"])) / 2,
            "reference": ref,
            "spread": None,
        }


def recomputed(c: dict, part: float) -> float:
    """``c``'s half-width (log units) with ``part`` in place of the stored one."""
    own = math.sqrt(max(c["half"] ** 2 - (Z * STORED) ** 2, 0.0))
    return math.hypot(own, Z * part)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", type=Path, nargs="*", help="results (default: every one)")
    args = parser.parse_args(argv)
    paths = args.files or [
        Path(p) for p in sorted(glob.glob(str(RESULTS / "measurement-*.json")))
        + sorted(glob.glob(str(RESULTS / "verdict-*.json")))
    ]  # fmt: skip
    found = list(comparisons(paths))
    stored = [c for c in found if abs(math.log(c["ratio"])) > c["half"]]
    print(f"{len(found)} window comparisons, {len(stored)} of them claims as stored")
    print("part  claims  contradicted  half-width where the plain loop held ±5%: median (n)")
    for part in PARTS:
        claims = [c for c in stored if abs(math.log(c["ratio"])) > recomputed(c, part)]
        wrong = [c for c in claims if (c["ratio"] > 1) != (c["reference"] > 1)]
        quiet = [math.expm1(recomputed(c, part)) for c in found if (c["spread"] or 1) <= 0.05]
        width = f"±{statistics.median(quiet):.1%} ({len(quiet)})" if quiet else "none held"
        print(f"{part:.3f}  {len(claims):6}  {len(wrong):12}  {width}")
    for c in stored:
        if (c["ratio"] > 1) != (c["reference"] > 1):
            print(
                f"  contradicted as stored: {c['run']}: {c['ratio']:.3f} "
                f"(±{math.expm1(c['half']):.1%}), plain loop {c['reference']:.3f}"
            )


if __name__ == "__main__":
    main()
