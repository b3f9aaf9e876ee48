"""Could the search's figures list what the windows did not time? (issue 36, (d) and (e))

Beside a pick timed in windows, a tune lists the finalists it could not tell apart from
it. Issue 36 asks for two things of that list: (d) at most 5% of its configurations more
than 10% behind the plain loop's best, and (e) at most 5% of those the plain loop puts
within 3% of its best missing. The finalists are a few of the search's best, so (e) fails
wherever the search underrates a configuration that is in fact near the top.

This reads the measurement benchmark's committed results (every idle run) and asks what
listing the configurations only the search measured, those within a reach of the pick on
the search's figures, would have given: how many would be listed, how many of them more
than 10% behind the plain loop's best (d), and how many of the near ones (within 3%) it
would have caught (e). It also sets the search's ratios beside the windows' on the same
pairs of finalists near the top (both within 10% of the plain loop's best, two windows or
more), against the plain loop's. From the repository root::

    python benchmarks/listing_tradeoff.py

It measures nothing itself: every figure is in the files it names.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
REACHES = (0.0, 0.05, 0.10, 0.15, 0.20, 0.30)


def idle_rows(paths: Sequence[Path]) -> Iterator[dict[str, Any]]:
    """Every idle workload row of the measurement benchmark's files at ``paths``."""
    for path in paths:
        for row in json.loads(path.read_text())["rows"]:
            if row.get("condition") == "idle":
                yield row


def search_only(rows: Sequence[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(workload, the pick over it on the search's figures, its share of the plain loop's
    best) for each configuration only the search measured, beside a pick timed in windows."""
    found = []
    for row in rows:
        reference = {k: v["median"] for k, v in row["reference"].items()}
        best = max(reference.values())
        for tune in row["tunes"]:
            finalists = tune.get("finalists", {})
            if tune["pick"] not in finalists:
                continue
            for c, compared in tune.get("comparisons", {}).items():
                if c not in finalists and c in reference:
                    found.append((row["workload"], compared["ratio"], reference[c] / best))
    return found


def near_pairs(rows: Sequence[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Per workload, for each pair of finalists both within 10% of the plain loop's best and
    each timed in two windows or more: how far (log units) the search's ratio and the
    windows' ratio lie from the plain loop's."""
    found: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        reference = {k: v["median"] for k, v in row["reference"].items()}
        best = max(reference.values())
        for tune in row["tunes"]:
            search, finalists = tune.get("search", {}), tune.get("finalists", {})
            near = [
                c
                for c, f in finalists.items()
                if c in search and reference.get(c, 0) >= 0.9 * best and len(f["windows"]) >= 2
            ]
            for i, a in enumerate(near):
                for b in near[i + 1 :]:
                    truth = math.log(reference[a] / reference[b])
                    off_search = abs(math.log(search[a] / search[b]) - truth)
                    off_windows = abs(
                        math.log(finalists[a]["score"] / finalists[b]["score"]) - truth
                    )
                    found.setdefault(row["workload"], []).append((off_search, off_windows))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", default=str(RESULTS / "measurement-*.json"))
    args = parser.parse_args(argv)
    paths = [Path(p) for p in sorted(glob.glob(args.files))]
    rows = list(idle_rows(paths))
    print(f"{len(paths)} files, {len(rows)} idle workload runs: {', '.join(p.name for p in paths)}")
    alone = search_only(rows)
    near = [x for x in alone if x[2] >= 0.97]
    print(f"\n{len(alone)} configurations only the search measured, beside a pick timed in "
          f"windows; {len(near)} of them within 3% of the plain loop's best")  # fmt: skip
    print("reach on the search's figures | listed | >10% behind (d) | near caught (e)")
    for reach in REACHES:
        listed = [x for x in alone if x[1] <= 1 + reach]
        behind = [x for x in listed if x[2] < 0.9]
        caught = [x for x in near if x[1] <= 1 + reach]
        share = len(behind) / len(listed) if listed else 0.0
        print(f"{reach:>29.0%} | {len(listed):6} | {len(behind):4} ({share:4.0%})      | "
              f"{len(caught)} of {len(near)}")  # fmt: skip
    print("the near ones, the pick over each on the search's figures:",
          ", ".join(f"{x[1]:.2f} ({x[0]})" for x in sorted(near, key=lambda x: x[1])))  # fmt: skip
    pairs = near_pairs(rows)
    print("\nfinalists near the top, off the plain loop's ratio (median, log units):")
    every = [o for offs in pairs.values() for o in offs]
    for workload, offs in [*sorted(pairs.items()), ("all", every)]:
        search = statistics.median(o[0] for o in offs) if offs else math.nan
        windows = statistics.median(o[1] for o in offs) if offs else math.nan
        print(f"  {workload:9} {len(offs):3} pairs: search {search:.1%}, windows {windows:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
