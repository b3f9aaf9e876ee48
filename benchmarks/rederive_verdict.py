"""The verdict of this tree applied again to the studies a verdict benchmark kept.

``verdict_benchmark.py --keep DIR`` keeps every tune's study and file. This reads each of
this autoplace's tunes there (``*-new-*.toml`` and its ``.db``), judges its trials with
this tree's verdict over the tune's own search space (nothing is measured again), and
counts, per workload and condition, the pairs of tunes whose picks are not in each
other's lists of what they could not be told apart from (the benchmark's figure (b)).
It shows what a change to the verdict does to measurements already made: on the data a
rule was made from, not instead of a fresh run.

    python benchmarks/rederive_verdict.py /path/to/keep
"""

from __future__ import annotations

import collections
import itertools
import json
import sys
from pathlib import Path

import tomllib

import autoplace
from autoplace.study import StudyReader, open_storage
from autoplace.tuning import standing


def judged(toml: Path) -> tuple[autoplace.Config, set[autoplace.Config]]:
    """A kept tune's pick and what it could not be told apart from, judged anew."""
    doc = tomllib.loads(toml.read_text())
    objective = autoplace.make_objective(doc["objective"]["name"])
    sp = doc["search_space"]
    widths = tuple(sp.get("widths") or [doc["workload"].get("default_width")])
    space = autoplace.Space(tuple(sp["devices"]), tuple(sp["batch_sizes"]),
                            tuple(sp["precisions"]), widths)  # fmt: skip
    url = f"sqlite:///{toml.with_suffix('.db')}"
    reader = StudyReader.open(open_storage(url), url, doc["study"]["name"])
    now = standing(reader.history(), objective, space)
    equals = {s.config for s, _ in now.equivalent} | {c for c, _ in now.predicted_equivalent}
    return now.ranked[0].config, equals


def main(argv: list[str] | None = None) -> int:
    keep = Path((argv or sys.argv[1:])[0])
    rows: dict[tuple[str, str], dict[str, tuple]] = collections.defaultdict(dict)
    for toml in sorted(keep.glob("*-new-*.toml")):
        workload, condition = toml.stem.split("-new-")[0].rsplit("-", 1)
        rows[(workload, condition)][toml.stem] = judged(toml)
    out = {}
    for (workload, condition), tunes in sorted(rows.items()):
        pairs = [
            pa == pb or (pb in ea and pa in eb)
            for (pa, ea), (pb, eb) in itertools.combinations(tunes.values(), 2)
        ]
        out[f"{workload}/{condition}"] = {
            "disagree": pairs.count(False),
            "pairs": len(pairs),
            "listed": [len(e) for _, e in tunes.values()],
        }
        print(f"{workload} {condition}: {pairs.count(False)} of {len(pairs)} pairs disagree; "
              f"listed {[len(e) for _, e in tunes.values()]}")  # fmt: skip
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
