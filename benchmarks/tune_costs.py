"""Where each second of a tune goes: start-up, compile, the search's timed loops, the
confirmation's windows, the duel, the remedy, and the rest, from the study's own figures.

For each workload, ``--tunes`` tunes of each code tree given (this one, and any commit,
run from a git worktree of it), in turns, each a fresh ``autoplace tune`` process into a
study of its own; then, from each study's trials (every measurement keeps its phase, its
compile, its timed loops' seconds, its worker's start-up and its wall time):

* ``start-up``: the worker processes' starts (the shared worker's, and the fresh ones'
  of each window);
* ``compile``: XLA's compiles that were not a cache's (lowering included);
* ``search``, ``confirm``, ``duel`` (code before issue 48), ``feeding``, ``remedy``,
  ``fuse``: the timed loops of each phase;
* ``other``: the tune's wall time less all of those (imports, the study's storage, the
  set-up of each measurement: builds, batches, first calls, the float32 comparison).

And by what each process spends (issue 38), per phase: the calls' wall time (a call
timing several configurations together counts once), and inside it the workers' start,
the builds (the workload function, the host batches), tracing and lowering, compiling
(not counted where a cache or the shelf served it), the first call, the float32
comparison, the timed loops, and ``rest``: the calls' wall less those (loading a compile
from the shelf or the cache, the worker's round trips, memory). Parts of processes set up
side by side overlap, so ``rest`` can be negative.

Run from the repository root:

    python benchmarks/tune_costs.py --workloads mlp --trees HEAD,b7b2dfe --tunes 3
    python benchmarks/tune_costs.py --workloads studies/nnx_encoder.py:encoder --tunes 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from results_file import write_results
from tune_runs import ROOT, WORKLOADS, code_tree, run_tune

import autoplace

#: The parts of a tune: a duel is the window after two confirmation windows of the same
#: finalists (code before issue 48 timed them; now none).
PARTS = ("start-up", "compile", "search", "confirm", "duel", "feeding", "remedy", "fuse", "other")
SPENT = ("wall", "start", "build", "trace", "compile", "first call", "float32", "timing", "rest")


def costs(db: Path) -> dict[str, float]:
    """Seconds by part, from a study's trials (see the module docstring). A confirmation's
    window where every configuration already had two windows is a duel's."""
    out = dict.fromkeys(PARTS[:-1], 0.0)
    windows: dict[str, dict[str, Any]] = {}
    for t, m in _trials(db):
        if not m.get("compile_cached"):
            out["compile"] += (m.get("compile_s") or 0.0) + (m.get("lower_s") or 0.0)
        window = m.get("interleave_id") or f"alone-{t.number}"
        group = windows.setdefault(
            window,
            {"phase": t.user_attrs.get("phase", "search"), "first": t.number, "start": 0.0,
             "timing": 0.0, "configs": set()},
        )  # fmt: skip
        group["configs"].add(t.user_attrs.get("config"))
        group["timing"] += m.get("timing_s") or 0.0
        group["start"] = max(group["start"], m.get("worker_start_s") or 0.0)
    seen: dict[str, int] = {}
    for group in sorted(windows.values(), key=lambda g: g["first"]):
        out["start-up"] += group["start"]
        phase = group["phase"]
        if phase == "confirm":
            if all(seen.get(c, 0) >= 2 for c in group["configs"]):
                phase = "duel"
            for c in group["configs"]:
                seen[c] = seen.get(c, 0) + 1
        out[phase if phase in out else "search"] += group["timing"]
    return out


def _trials(db: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Every trial of the study at ``db`` that holds a measurement, with it."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
    for summary in storage.get_all_studies():
        for t in optuna.load_study(study_name=summary.study_name, storage=storage).trials:
            m = t.system_attrs.get("autoplace:measurement") or t.user_attrs.get("measurement")
            if m:
                yield t, m


def spent(db: Path) -> dict[str, dict[str, float]]:
    """Seconds by phase and by what a process spends on them (the module docstring), and
    under ``search by batch`` the search's wall seconds by batch size."""
    out: dict[str, dict[str, float]] = {}
    by_batch: dict[str, float] = {}
    started: set[str] = set()  # the shared worker's calls, whose start each trial repeats
    for t, m in _trials(db):
        phase = t.user_attrs.get("phase", "search")
        row = out.setdefault(phase, dict.fromkeys(SPENT, 0.0))
        served = m.get("compile_cached") or m.get("compile_cache") == "hit"
        call = m.get("interleave_id") or f"alone-{t.number}"
        shared_again = not m.get("fresh_process") and call in started
        started.add(call)
        parts = {
            "wall": m.get("wall_s") or 0.0,
            "start": 0.0 if shared_again else m.get("worker_start_s") or 0.0,
            "build": (0.0 if m.get("build_cached") else m.get("build_s") or 0.0)
            + (m.get("batch_s") or 0.0),
            "trace": 0.0 if m.get("compile_cached") else m.get("lower_s") or 0.0,
            "compile": 0.0 if served else m.get("compile_s") or 0.0,
            "first call": m.get("first_call_s") or 0.0,
            "float32": m.get("reference_s") or 0.0,
            "timing": m.get("timing_s") or 0.0,
        }
        for k, v in parts.items():
            row[k] += v
        row["rest"] += parts["wall"] - sum(v for k, v in parts.items() if k != "wall")
        if phase == "search":
            key = str(m.get("batch_size") or (m.get("config") or {}).get("batch_size"))
            by_batch[key] = by_batch.get(key, 0.0) + parts["wall"]
    out["search by batch"] = dict(sorted(by_batch.items(), key=lambda kv: int(kv[0])))
    return out


def measured(db: Path) -> dict[str, int]:
    """How many trials the study holds, and how many configurations its search measured."""
    import optuna

    storage = optuna.storages.RDBStorage(f"sqlite:///{db}")
    trials, searched = 0, set()
    for summary in storage.get_all_studies():
        for t in optuna.load_study(study_name=summary.study_name, storage=storage).trials:
            trials += 1
            if t.user_attrs.get("phase", "search") == "search":
                searched.add(t.user_attrs.get("config"))
    return {"trials": trials, "configs": len(searched)}


def tune_costs(code: Path | None, model: str, workload: str, folder: Path, tag: str) -> dict:
    """One tune in a fresh process, where its seconds went, and what it measured."""
    run = run_tune(code, model, workload, folder, tag)
    if run.error is not None:
        return {"tag": tag, "wall_s": run.wall_s, "error": run.error[-400:]}
    parts = costs(run.db)
    parts["other"] = run.wall_s - sum(parts.values())
    return {
        "tag": tag,
        "wall_s": run.wall_s,
        "parts": parts,
        "spent": spent(run.db),
        "measured": measured(run.db),
    }


def bench(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        codes = {rev: stack.enter_context(code_tree(rev)) for rev in args.trees}
        for name in args.workloads:
            model, workload = WORKLOADS[name] if name in WORKLOADS else name.rsplit(":", 1)
            label = name if name in WORKLOADS else f"{Path(model).stem}.{workload}"
            found: dict[str, list[dict]] = {rev: [] for rev in args.trees}
            for n in range(args.tunes):
                order = list(args.trees) if n % 2 == 0 else list(reversed(args.trees))
                for rev in order:
                    tag = f"{label}-{rev}-{n}"
                    run = tune_costs(codes[rev], model, workload, Path(tmp), tag)
                    found[rev].append(run)
                    print(f"{tag}: {run['wall_s']:.1f} s {run.get('measured')} "
                          f"{ {k: round(v, 1) for k, v in run.get('parts', {}).items()} }",
                          flush=True)  # fmt: skip
                    for phase, row in run.get("spent", {}).items():
                        print(f"    {phase:16} " + " ".join(
                            f"{k} {v:.1f}" for k, v in row.items()), flush=True)  # fmt: skip
            rows.append({"workload": name, "tunes": found, "median": {
                rev: {part: statistics.median(r["parts"][part] for r in runs if "parts" in r)
                      for part in (*PARTS, "wall_s") if part != "wall_s"}
                | {"wall_s": statistics.median(r["wall_s"] for r in runs)}
                for rev, runs in found.items() if any("parts" in r for r in runs)}})  # fmt: skip
    return {"rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=lambda s: s.split(","), default=["mlp"])
    parser.add_argument("--trees", type=lambda s: s.split(","), default=["HEAD"])
    parser.add_argument("--tunes", type=int, default=3)
    args = parser.parse_args(argv)
    started = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    body = bench(args)
    body["uptime"] = {
        "start": started,
        "end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
    }
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    path = write_results("tune_costs", devices, ROOT / "benchmarks" / "results", body)
    for row in body["rows"]:
        for rev, med in row["median"].items():
            print(f"{row['workload']:9} {rev:10} " + json.dumps({k: round(v, 1) for k, v in
                                                                med.items()}))  # fmt: skip
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
