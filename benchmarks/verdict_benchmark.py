"""Does the verdict say no more than it knows? A calibration of ``autoplace tune``.

For each workload (the examples and the curved workloads), in ONE run on one machine, in
each condition (``idle``; ``busy``: two processes spinning beside it, started and stopped
by this script):

a. ``--tunes`` tunes with this autoplace, each a fresh ``autoplace tune`` process into a
   study of its own, and ``--baseline-tunes`` with the *baseline* autoplace (the commit
   before the verdict was made honest: ``--baseline``, run from a git worktree of it),
   in turns, so that their wall times are paired;
b. every claim a tune made that its pick is faster than another configuration beyond the
   noise ("a real difference": this autoplace's ``faster`` verdicts against each other
   confirmed finalist; the baseline's ``runner_up`` called ``significant``) is
   re-measured minutes later, after every tune of the workload, on the idle machine, by
   an independent loop (``benchmarks/remeasure.py``): each configuration timed in a
   fresh process of its own, in turns, ``--rounds`` rounds, the order rotating;
c. the figures: (a) the share of claims the re-measurement contradicts (the other
   configuration ran faster, at the median of the rounds' ratios), and the share it
   does not confirm (its interval holds 1); (b) the share of pairs of this autoplace's
   tunes whose picks are not in each other's ``equivalent`` lists (each pick, the other
   tune's pick or among the configurations it could not tell apart from); (c) the tune's
   wall time against the baseline's, paired by turn; per tune, whether it said the
   machine was busy; and issue 36's (d) the share of listed configurations the plain loop
   puts more than 10% behind its best, (e) the share of those it puts within 3% of its
   best that a list misses, and the half-widths of each tune's closest comparison.

Run from the repository root (minutes per workload; the machine must be otherwise idle):

    python benchmarks/verdict_benchmark.py                       # every workload, both conditions
    python benchmarks/verdict_benchmark.py --workloads mlp --tunes 2 --conditions idle
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import remeasure
import tomllib
from measurement_benchmark import LISTED_BEHIND, MUST_LIST, Reference
from results_file import write_results
from tune_runs import ROOT, WORKLOADS, code_tree, run_tune

import autoplace

#: The commit before issue 23 (the verdict that claimed more than it knew).
BASELINE = "b7b2dfe"


def uptime() -> str:
    with contextlib.suppress(OSError):
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return ""


@contextlib.contextmanager
def background_load(spinners: int) -> Iterator[None]:
    """``spinners`` processes spinning on the CPU while the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(spinners)]
    try:
        time.sleep(1.0)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def run(code: Path | None, model: str, workload: str, folder: Path, tag: str) -> dict:
    """One tune in a fresh process: its wall time and recommendation file, or its error."""
    done = run_tune(code, model, workload, folder, tag)
    if done.error is not None:
        return {"tag": tag, "wall_s": done.wall_s, "error": done.error}
    return {"tag": tag, "wall_s": done.wall_s, "doc": tomllib.loads(done.out.read_text())}


def key(c: dict[str, Any]) -> str:
    """A configuration of a file as remeasure names it: ``cpu:0/64/float32/128``."""
    width = "" if c.get("width") is None else f"/{c['width']}"
    return f"{c['device']}/{c['batch_size']}/{c['precision']}{width}"


def claims_of(doc: dict[str, Any], baseline: bool) -> list[tuple[str, str]]:
    """The (pick, other) pairs a tune called a real difference."""
    rec = doc["recommendation"]
    if baseline:
        r = rec.get("runner_up")
        return [(key(rec), key(r))] if r and r.get("significant") else []
    found = [*rec.get("finalists", []), *([rec["closest"]] if "closest" in rec else [])]
    return sorted({(key(rec), key(c)) for c in found if c.get("verdict") == "faster"})


def pick_and_equals(doc: dict[str, Any]) -> tuple[str, set[str]]:
    rec = doc["recommendation"]
    return key(rec), {key(e) for e in rec.get("equivalent", [])}


def agree(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two tunes agree when their picks are the same, or each is among the configurations
    the other could not tell apart from its pick."""
    (pa, ea), (pb, eb) = pick_and_equals(a), pick_and_equals(b)
    return pa == pb or (pb in ea and pa in eb)


def recheck(model: str, workload: str, pair: tuple[str, str], rounds: int, seconds: float):
    """The pick and the other, re-measured in turns in fresh processes: the median ratio
    pick/other over rounds and its interval (the pick's width resolved by remeasure)."""
    configs = [remeasure.Config.parse(k) for k in pair]
    report = remeasure.remeasure(
        ROOT / model,
        workload,
        configs,
        rounds=rounds,
        settings=remeasure.TimingSettings(seconds=seconds, loop="fed"),
        progress=lambda line: None,
    )
    a, b = report.configs
    p = remeasure.compare(a, b, report.turns)
    interval = p.interval
    return {
        "ratio": p.median,
        "low": interval.low if interval else None,
        "high": interval.high if interval else None,
        "rounds": len(p.ratios),
        "led": p.a_led,
    }


def listing(model: str, workload: str, tunes: Sequence[dict], rounds: int, seconds: float):
    """Issue 36's (d), (e) and interval widths for one workload's tunes of this autoplace:
    every pick and every configuration a tune listed as not told apart from it, re-measured
    by the plain loop in ``rounds`` rounds; (d) the listed ones more than 10% behind the
    reference's best, (e) those the reference puts within 3% of its best that a tune's list
    misses, and each tune's closest comparison's half-width."""
    docs = [t["doc"] for t in tunes if "doc" in t]
    if not docs:
        return {}
    keys = sorted({k for d in docs for k in (pick_and_equals(d)[0], *pick_and_equals(d)[1])})
    ref = Reference(model, workload, seconds)
    for _ in range(rounds):
        ref.round(keys)
    best = ref.best(keys)
    top = ref.median(best) if best else None
    near = [k for k in keys if top and (ref.median(k) or 0) >= top * (1 - MUST_LIST)]
    d, e, widths = [], [], []
    for doc in docs:
        pick, listed = pick_and_equals(doc)
        d += [1 - ref.median(k) / top > LISTED_BEHIND for k in listed if top and ref.median(k)]
        e += [k not in listed for k in near if k != pick]
        closest = doc["recommendation"].get("closest")
        if closest and closest.get("windows"):
            widths.append((closest["high"] - closest["low"]) / 2)
    return {
        "reference_best": best,
        "within_3pct": near,
        "d_listed_over_10pct_behind": {"count": sum(d), "of": len(d)},
        "e_near_missing": {"count": sum(e), "of": len(e)},
        "closest_half_widths": widths,
    }


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The three figures, and what they rest on."""
    out: dict[str, Any] = {}
    for who in ("new", "baseline"):
        claims = [c for r in rows for c in r["claims"][who]]
        checked = [c for c in claims if c.get("ratio") is not None]
        contradicted = [c for c in checked if c["ratio"] < 1]
        unconfirmed = [c for c in checked if c["low"] is None or c["low"] <= 1]
        out[who] = {
            "claims": len(claims),
            "contradicted": len(contradicted),
            "not_confirmed": len(unconfirmed),
            "contradicted_share": len(contradicted) / len(checked) if checked else None,
        }
    pairs = [ok for r in rows for ok in r["agreement"]]
    out["pairs"] = {
        "pairs": len(pairs),
        "disagree": pairs.count(False),
        "disagree_share": pairs.count(False) / len(pairs) if pairs else None,
    }
    ratios = [x for r in rows for x in r["wall_ratio"]]
    out["wall"] = {
        "median_ratio": statistics.median(ratios) if ratios else None,
        "min": min(ratios, default=None),
        "max": max(ratios, default=None),
    }
    said = [s for r in rows for s in r["busy_said"]]
    out["busy_said"] = {"tunes": len(said), "said": sum(said)}
    listed = [r["listing"] for r in rows if r.get("listing")]
    for name in ("d_listed_over_10pct_behind", "e_near_missing"):
        count = sum(x[name]["count"] for x in listed)
        of = sum(x[name]["of"] for x in listed)
        out[name] = {"count": count, "of": of, "share": count / of if of else None}
    widths = [w for x in listed for w in x["closest_half_widths"]]
    out["closest_half_width"] = {
        "median": statistics.median(widths) if widths else None,
        "max": max(widths, default=None),
    }
    return out


def tunes_in_turns(
    args: argparse.Namespace, name: str, condition: str, old: Path, folder: Path
) -> dict[str, list[dict]]:
    """``--tunes`` tunes of each autoplace, alternating which goes first."""
    model, workload = WORKLOADS[name]
    tunes: dict[str, list[dict]] = {"new": [], "baseline": []}
    load = background_load(2) if condition == "busy" else contextlib.nullcontext()
    with load:
        for n in range(args.tunes):
            order = [("new", None), ("baseline", old)][: 1 if n >= args.baseline_tunes else 2]
            for who, code in order if n % 2 == 0 else order[::-1]:
                tag = f"{name}-{condition}-{who}-{n}"
                found = run(code, model, workload, folder, tag)
                found["uptime"] = uptime()
                tunes[who].append(found)
                pick = key(found["doc"]["recommendation"]) if "doc" in found else "error"
                print(f"{tag}: {found['wall_s']:.1f} s, {pick}", flush=True)
    return tunes


def described(t: dict[str, Any]) -> dict[str, Any]:
    """A tune as the results file keeps it (its document summed up)."""
    out = {k: v for k, v in t.items() if k != "doc"}
    if "doc" in t:
        rec = t["doc"]["recommendation"]
        out |= {
            "pick": key(rec),
            "equivalent": sorted(pick_and_equals(t["doc"])[1]),
            "closest": rec.get("closest") or rec.get("runner_up"),
            "findings": [f["kind"] for f in t["doc"].get("findings", [])],
        }
    return out


def bench(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    checked: dict[tuple[str, str, str], dict] = {}
    with code_tree(args.baseline) as old, tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch  # --keep: the studies and files stay, to be read after
        for name in args.workloads:
            model, workload = WORKLOADS[name]
            for condition in args.conditions:
                before = uptime()
                tunes = tunes_in_turns(args, name, condition, old, Path(tmp))
                ok = {w: [t for t in ts if "doc" in t] for w, ts in tunes.items()}
                claims: dict[str, list[dict]] = {"new": [], "baseline": []}
                for who in ("new", "baseline"):
                    for t in ok[who]:
                        for pair in claims_of(t["doc"], who == "baseline"):
                            if (name, *pair) not in checked:  # on the idle machine
                                print(f"  re-measuring {pair[0]} against {pair[1]}", flush=True)
                                checked[(name, *pair)] = recheck(
                                    model, workload, pair, args.rounds, args.seconds
                                )
                            claims[who].append(
                                {
                                    "pick": pair[0],
                                    "other": pair[1],
                                    "tune": t["tag"],
                                    **checked[(name, *pair)],
                                }
                            )
                rows.append(
                    {
                        "workload": name,
                        "condition": condition,
                        "uptime_before": before,
                        "tunes": {w: [described(t) for t in ts] for w, ts in tunes.items()},
                        "claims": claims,
                        "agreement": [
                            agree(a["doc"], b["doc"])
                            for a, b in itertools.combinations(ok["new"], 2)
                        ],
                        "wall_ratio": [
                            n["wall_s"] / b["wall_s"]
                            for n, b in zip(tunes["new"], tunes["baseline"], strict=False)
                            if "doc" in n and "doc" in b
                        ],
                        "busy_said": [
                            any(f["kind"] == "busy_machine" for f in t["doc"].get("findings", []))
                            for t in ok["new"]
                        ],
                        "listing": listing(model, workload, ok["new"], args.rounds, args.seconds),
                    }
                )
                print(json.dumps(summarize(rows[-1:])), flush=True)
                if args.partial is not None:  # what was measured survives an interrupted run
                    args.partial.write_text(json.dumps({"rows": rows}, indent=1, default=str))
    return {
        "rows": rows,
        "summary": summarize(rows),
        "per_condition": {
            c: summarize([r for r in rows if r["condition"] == c]) for c in args.conditions
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=lambda s: s.split(","), default=list(WORKLOADS))
    parser.add_argument("--conditions", type=lambda s: s.split(","), default=["idle", "busy"])
    parser.add_argument("--tunes", type=int, default=5)
    parser.add_argument("--baseline-tunes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument(
        "--partial", type=Path, default=None, help="rewrite the rows so far here after each"
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="keep every tune's study and file in this folder"
    )
    args = parser.parse_args(argv)
    started = uptime()
    body = bench(args)
    body["uptime"] = {"start": started, "end": uptime()}
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results("verdict", devices, ROOT / "benchmarks" / "results", body)
    print(json.dumps(body["summary"], indent=2))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
