"""Do two checkouts of autoplace make the same decisions? For refactorings that must not
change behaviour.

Runs 144 tunes against the synthetic test backend (so that both see the very same
measurements): Climb and Grid; throughput, time-to-finish and latency; with and without
a slow spell every third group; small and large turn noise; with and without a trial
budget; no, two and four finalists. For each it records every group measured, the
settings of every measurement, and the recommendation (less its time stamp and
paths), in each checkout, and compares.

    python benchmarks/same_decisions.py ../before .     # exit 0: the same, key for key

Each checkout runs with its own ``tests/synthetic.py`` (about 1.5 min each here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RUN = r"""
import itertools, json, sys, tempfile
from pathlib import Path
root = Path(sys.argv[1]); sys.path.insert(0, str(root / "tests"))
from synthetic import SyntheticBackend, bfloat16_ahead
import autoplace

out = []
for strat, obj, drift, noise, trials, confirm in itertools.product(
    ["climb", "grid"], ["throughput", "time-to-finish", "latency"], [False, True],
    [0.01, 0.15], [None, 7], [0, 2, 4],
):
    with tempfile.TemporaryDirectory() as d:
        model = Path(d) / "m.py"
        model.write_text("# synthetic\n")
        def fail(r):
            big = r.config.batch_size >= 1024 and r.config.precision == "float16"
            return ("oom", "x") if big else None
        backend = SyntheticBackend(
            devices=("cpu:0", "cpu:1"), turn_noise=noise, fail=fail,
            slowdown=bfloat16_ahead(0.03),
            group_drift=(lambda n: 1.5 if n % 3 == 0 else 1.0) if drift else None,
        )
        kw = dict(steps=100) if obj == "time-to-finish" else {}
        r = autoplace.tune(
            model, devices=["cpu:0", "cpu:1"], objective=obj, storage=f"sqlite:///{d}/s.db",
            study="s", out=f"{d}/o.toml", backend=backend, trials=trials, confirm=confirm,
            strategy=autoplace.Grid() if strat == "grid" else autoplace.Climb(),
            batch_sizes=[1, 4, 16, 64, 256, 1024, 4096], **kw,
        )
        doc = dict(r.document)
        for key in ("created", "workload", "fingerprint"):
            doc.pop(key, None)
        doc["study"] = {k: v for k, v in doc["study"].items() if k != "storage"}
        out.append({
            "groups": [[str(c) for c in g] for g in backend.groups],
            "settings": [repr(q.settings) for q in backend.measured],
            "document": doc, "new_trials": r.new_trials,
        })
json.dump(out, sys.stdout, default=str, sort_keys=True)
"""


def decisions(root: Path) -> list:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(root)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def main() -> int:
    a, b = (Path(p).resolve() for p in sys.argv[1:3])
    first, second = decisions(a), decisions(b)
    differ = [i for i, (x, y) in enumerate(zip(first, second, strict=True)) if x != y]
    print(f"{len(first)} tunes; {len(differ)} differ" + (f": {differ[:10]}" if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
