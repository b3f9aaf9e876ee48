"""What each refinement of the search and the verdict buys: every one switched off in turn,
tunes in turns with the full code, judged by the plain loop (issue 48).

For each workload, in one run on one otherwise idle machine:

1. a **plain sweep** of the workload's default space (``remeasure.py``: every
   configuration in fresh processes, in turns, short rounds; the best few again in full
   rounds), unless ``--sweeps`` names an earlier run's;
2. ``--rounds`` rounds, each one ``autoplace tune`` per variant, in a fresh process into a
   study of its own, the variants' order rotating from round to round: ``full`` (the code
   as it is) and each refinement switched off alone (``AUTOPLACE_ABLATE=<name>``, read by
   the code tree given with ``--tree``);
3. each tune's pick against the sweep's best, re-measured by the plain loop in turns in
   fresh processes (the regret, ``1 - pick / best`` at the median of the rounds' ratios);
   every claim of "faster" a tune made, re-measured the same way (contradicted when the
   other configuration runs faster at the median); every configuration a tune listed as
   not told apart from its pick, against the sweep's figures (listed more than 10% behind
   the best).

Per variant: the tunes' wall seconds and their ratio to the full code's in the same round,
the regrets, the claims and how many the plain loop contradicted, the lists' lengths and
how many listed lie more than 10% behind. The switches live in ``ablation.patch`` (on the
code of 2026-11-28, ``aaa0d4f``, before issue 48 removed what they switch off). From the
repository root::

    git worktree add /tmp/ablation aaa0d4f
    git -C /tmp/ablation apply "$PWD/benchmarks/ablation.patch"
    python benchmarks/ablation.py --tree /tmp/ablation --workloads mlp,vgg,encoder --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import remeasure
import tomllib
from results_file import write_results
from tune_costs import costs
from tune_runs import ROOT, WORKLOADS

import autoplace

#: The refinements a tune can switch off (the tree's ``autoplace._ablate.NAMES``).
VARIANTS = (
    "full",
    "duels",
    "drift",
    "huber",
    "repeat",
    "pooled",
    "predicted",
    "chunks",
    "warmup",
    "settle",
    "feeding",
    "remedy",
    "fuse",
    "windows1",
)
#: A listed configuration further behind the plain loop's best than this is listed wrongly.
LISTED_BEHIND = 0.10


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def key(c: dict[str, Any]) -> str:
    width = "" if c.get("width") is None else f"/{c['width']}"
    return f"{c['device']}/{c['batch_size']}/{c['precision']}{width}"


def tune(tree: Path, variant: str, model: str, workload: str, folder: Path, tag: str) -> dict:
    """One tune of ``variant`` in a fresh process, summed up from its file and study."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    env["AUTOPLACE_ABLATE"] = "" if variant == "full" else variant
    db, out = folder / f"{tag}.db", folder / f"{tag}.toml"
    cmd = [sys.executable, "-m", "autoplace", "tune", str(ROOT / model), "--workload", workload,
           "--storage", f"sqlite:///{db}", "--out", str(out), "--json"]  # fmt: skip
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=folder)
    wall = time.perf_counter() - t
    row: dict[str, Any] = {"variant": variant, "tag": tag, "wall_s": wall, "load": os.getloadavg()}
    if done.returncode != 0 or not out.exists():
        row["error"] = (done.stderr or done.stdout)[-600:]
        return row
    doc = tomllib.loads(out.read_text())
    rec = doc["recommendation"]
    compared = [*rec.get("finalists", []), *([rec["closest"]] if "closest" in rec else [])]
    row |= {
        "pick": key(rec),
        "windows": rec.get("windows", 0),
        "claims": sorted({key(c) for c in compared if c.get("verdict") == "faster"}),
        "listed": sorted({key(c) for c in rec.get("equivalent", [])}),
        "busy": any(f["kind"] == "busy_machine" for f in doc.get("findings", [])),
        "phases": costs(db),
    }
    return row


def plain_sweep(model: str, workload: str, rounds: int, seconds: float) -> dict[str, Any]:
    """Every configuration by the plain loop: each one's median throughput (the best few
    from their full rounds), the best, and the sweep's cost."""
    report = remeasure.sweep(
        ROOT / model,
        workload,
        sweep_rounds=rounds,
        sweep_settings=remeasure.TimingSettings(seconds=seconds, warmup_s=0.0),
        top=4,
        rounds=5,
        progress=lambda line: None,
    )
    figures = {s.config.key: s.samples_per_s for s in report.sweep.summaries if s.samples_per_s}
    if report.final is not None:
        figures |= {s.config.key: s.samples_per_s for s in report.final.summaries
                    if s.samples_per_s}  # fmt: skip
    best = max(figures, key=figures.__getitem__) if figures else None
    return {"figures": figures, "best": best}


def against(model: str, workload: str, a: str, b: str, rounds: int) -> float | None:
    """``a``'s throughput over ``b``'s, by the plain loop in turns (median of rounds)."""
    report = remeasure.remeasure(
        ROOT / model,
        workload,
        [remeasure.Config.parse(a), remeasure.Config.parse(b)],
        rounds=rounds,
        settings=remeasure.TimingSettings(seconds=1.0, loop="fed"),
        progress=lambda line: None,
    )
    x, y = report.configs
    return remeasure.compare(x, y, report.turns).median


def judge(model: str, workload: str, sweep: dict, tunes: list[dict], rounds: int) -> None:
    """Each tune's regret, its claims re-measured, its list against the sweep (in place)."""
    best, figures = sweep["best"], sweep["figures"]
    ratios: dict[tuple[str, str], float | None] = {}

    def ratio(a: str, b: str) -> float | None:
        if (a, b) not in ratios:
            print(f"  plain loop: {a} against {b}", flush=True)
            ratios[(a, b)] = against(model, workload, a, b, rounds)
        return ratios[(a, b)]

    for t in tunes:
        if "pick" not in t:
            continue
        r = 1.0 if t["pick"] == best else ratio(t["pick"], best)
        t["regret"] = None if r is None else max(0.0, 1 - r)
        t["claims_checked"] = [{"other": o, "ratio": ratio(t["pick"], o)} for o in t["claims"]]
        top = figures.get(best)
        far = top * (1 - LISTED_BEHIND) if top else 0.0
        t["listed_behind"] = sum(1 for k in t["listed"] if figures.get(k, far) < far)


def summary(tunes: list[dict]) -> dict[str, dict[str, Any]]:
    """Per variant: walls, paired wall ratios to ``full``, regrets, claims, lists."""
    by_round: dict[tuple[str, int], float] = {
        (t["workload"], t["round"]): t["wall_s"] for t in tunes if t["variant"] == "full"
    }
    out = {}
    for v in VARIANTS:
        mine = [t for t in tunes if t["variant"] == v]
        if not mine:
            continue
        ok = [t for t in mine if "pick" in t]
        paired = [t["wall_s"] / by_round[(t["workload"], t["round"])] for t in mine
                  if (t["workload"], t["round"]) in by_round]  # fmt: skip
        regrets = [t["regret"] for t in ok if t.get("regret") is not None]
        checked = [c for t in ok for c in t.get("claims_checked", []) if c["ratio"] is not None]
        out[v] = {
            "tunes": len(mine),
            "errors": len(mine) - len(ok),
            "wall_median_s": statistics.median(t["wall_s"] for t in mine),
            "wall_ratio_to_full": statistics.median(paired) if paired else None,
            "regret_median": statistics.median(regrets) if regrets else None,
            "regret_max": max(regrets, default=None),
            "claims": len(checked),
            "contradicted": sum(1 for c in checked if c["ratio"] < 1),
            "listed_median": statistics.median(len(t["listed"]) for t in ok) if ok else None,
            "listed_behind": sum(t.get("listed_behind", 0) for t in ok),
            "listed": sum(len(t["listed"]) for t in ok),
            "windows_median": statistics.median(t["windows"] for t in ok) if ok else None,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, required=True, help="the code tree with switches")
    parser.add_argument("--workloads", type=lambda s: s.split(","), default=["mlp"])
    parser.add_argument("--variants", type=lambda s: s.split(","), default=list(VARIANTS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--judge-rounds", type=int, default=5)
    parser.add_argument("--sweep-rounds", type=int, default=3)
    parser.add_argument("--sweep-seconds", type=float, default=0.2)
    parser.add_argument("--sweeps", type=Path, default=None, help="an earlier run's results")
    parser.add_argument("--partial", type=Path, default=None, help="rows so far, after each")
    args = parser.parse_args(argv)
    earlier = json.loads(args.sweeps.read_text())["sweeps"] if args.sweeps else {}
    started = uptime()
    sweeps, tunes = dict(earlier), []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.workloads:
            model, workload = WORKLOADS[name]
            if name not in sweeps:
                print(f"{name}: plain sweep ({uptime()})", flush=True)
                sweeps[name] = plain_sweep(model, workload, args.sweep_rounds, args.sweep_seconds)
            print(f"{name}: plain best {sweeps[name]['best']}", flush=True)
            mine = []
            for n in range(args.rounds):
                shift = n % len(args.variants)
                order = args.variants[shift:] + args.variants[:shift]
                order = order if n % 2 == 0 else order[::-1]
                for v in order:
                    row = tune(args.tree, v, model, workload, Path(tmp), f"{name}-{v}-{n}")
                    row |= {"workload": name, "round": n}
                    mine.append(row)
                    print(f"{name} {n} {v:9}: {row['wall_s']:5.1f} s  {row.get('pick')}  "
                          f"claims {row.get('claims')}  listed {len(row.get('listed', []))}"
                          f"{'  ERROR' if 'error' in row else ''}", flush=True)  # fmt: skip
                    if args.partial is not None:
                        args.partial.write_text(json.dumps(
                            {"sweeps": sweeps, "tunes": tunes + mine}, default=str))  # fmt: skip
            judge(model, workload, sweeps[name], mine, args.judge_rounds)
            tunes += mine
    body = {"sweeps": sweeps, "tunes": tunes, "summary": summary(tunes),
            "per_workload": {w: summary([t for t in tunes if t["workload"] == w])
                             for w in args.workloads},
            "uptime": {"start": started, "end": uptime()}}  # fmt: skip
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results("ablation", devices, ROOT / "benchmarks" / "results", body)
    for v, row in body["summary"].items():
        print(f"{v:9} " + json.dumps({k: round(x, 3) if isinstance(x, float) else x
                                      for k, x in row.items()}))  # fmt: skip
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
