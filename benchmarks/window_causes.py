"""What makes a verdict's window stray from a plain loop (issue 36): each candidate cause
timed against the plain-loop reference, in turns, on one workload.

For a few configurations of one model file's workload, each round times:

* the plain-loop reference (``remeasure.py``'s fresh process per configuration: a host
  batch put each step, state donated, 0.3 s of warm-up, then ``--seconds`` timed);
* autoplace's confirmation window as the tune runs it (``measure_fresh``: every
  configuration in a fresh worker of its own, their timed chunks in turns across the
  processes), and variants of it that each change one thing: a warm-up, a longer window,
  one configuration a window (no turns across processes);
* a search group as the tune runs it (``measure_together`` in the shared worker), and
  with a warm-up.

Each figure is divided by the reference's median of the same round's configuration: 1.0
is the plain loop's figure. The spread of those ratios over the rounds, per variant, says
how far and how consistently each variant strays. From the repository root::

    python benchmarks/window_causes.py studies/mnist_mlp.py --workload mlp \\
        --config cpu:0/4096/float32 --config cpu:0/2048/float16 --config cpu:0/4096/bfloat16 \\
        --config cpu:0/1024/float32 --rounds 4
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import remeasure
from results_file import write_results

import autoplace
from autoplace.config import Config
from autoplace.objectives import make_objective
from autoplace.settings import MeasureRequest, MeasureSettings
from autoplace.tuning._phases import Phase, phase_settings
from autoplace.workload import ModelFile

RESULTS = Path(__file__).resolve().parent / "results"


def phase(name: Phase) -> MeasureSettings:
    """The settings a tune's phase measures with."""
    return phase_settings(MeasureSettings(), make_objective("throughput"))[name]


#: Each variant: how it changes the confirmation's settings, and whether its
#: configurations share one window (in turns across processes) or each has its own.
VARIANTS: dict[str, tuple[Phase, Callable[[MeasureSettings], MeasureSettings], str]] = {
    "window as tuned": (Phase.CONFIRM, lambda s: s, "window"),
    "window, warm-up 0.2 s together": (
        Phase.CONFIRM,
        lambda s: dataclasses.replace(s, warmup_s=0.2),
        "window",
    ),
    "window, warm-up 0.2 s, 0.5 s": (
        Phase.CONFIRM,
        lambda s: dataclasses.replace(s, warmup_s=0.2, fed_time_cap_s=0.5),
        "window",
    ),
    "alone, warm-up 0.3 s, 1 s": (
        Phase.CONFIRM,
        lambda s: dataclasses.replace(s, warmup_s=0.3, fed_time_cap_s=1.0),
        "alone",
    ),
    "search group as tuned": (Phase.SEARCH, lambda s: s, "shared"),
    "search group, warm-up 0.1 s": (
        Phase.SEARCH,
        lambda s: dataclasses.replace(s, warmup_s=0.1),
        "shared",
    ),
}


def window_figures(
    backend: autoplace.SubprocessBackend,
    model: ModelFile,
    workload: str,
    configs: Sequence[Config],
    settings: Sequence[MeasureSettings],
    how: str,
) -> list[float | None]:
    """Each configuration's fed samples/s: in a window of fresh processes, each alone in
    a fresh process, or as a search group in the shared worker."""
    requests = [
        MeasureRequest(str(model.path), model.sha256, workload, c, s)
        for c, s in zip(configs, settings, strict=True)
    ]
    if how == "window":
        found = backend.measure_fresh(requests)
    elif how == "alone":
        found = [backend.measure_fresh([r])[0] for r in requests]
    else:
        found = backend.measure_together(requests)
    return [m.fed_samples_per_s if m.status == "ok" else None for m in found]


def run(args: argparse.Namespace) -> dict[str, Any]:
    model = ModelFile.at(args.model)
    configs = [Config(c.device, c.batch_size, c.precision, c.width) for c in args.config]
    plain = [remeasure.Config(c.device, c.batch_size, c.precision, c.width) for c in configs]
    timing = remeasure.TimingSettings(seconds=args.seconds)
    session = remeasure.Session.open(
        args.model, args.workload, None, 0.0, remeasure._stderr, mode="window_causes"
    )
    plain = remeasure.with_width(plain, session.facts)
    configs = [dataclasses.replace(c, width=p.width) for c, p in zip(configs, plain, strict=True)]
    rows: list[dict[str, Any]] = []
    with autoplace.SubprocessBackend() as backend:
        for r in range(args.rounds):
            reference = session.rounds(f"reference-{r}", plain, 1, timing)
            ref = {s.config: s.samples_per_s for s in reference.summaries}
            order = configs if r % 2 == 0 else configs[::-1]
            for name, (when, change, how) in VARIANTS.items():
                if args.variants and name not in args.variants:
                    continue
                settings = [change(phase(when)) for _ in order]
                figures = window_figures(backend, model, args.workload, order, settings, how)
                for c, f in zip(order, figures, strict=True):
                    p = plain[configs.index(c)]
                    rows.append(
                        {
                            "round": r,
                            "variant": name,
                            "config": p.key,
                            "samples_per_s": f,
                            "reference": ref[p],
                            "ratio": None if f is None or not ref[p] else f / ref[p],
                        }
                    )
                    shown = "failed" if f is None else f"{f / ref[p]:.3f}"
                    print(f"round {r + 1} {name:28} {p.label:24} {shown}", file=sys.stderr)
    return {"rows": rows, "summary": summarise(rows)}


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per variant: the median ratio to the reference, its range, and the median over
    configurations of each configuration's own range (how far one configuration's windows
    stray from each other)."""
    out = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        mine = [r for r in rows if r["variant"] == name and r["ratio"] is not None]
        ratios = [r["ratio"] for r in mine]
        per_config = {}
        for key in dict.fromkeys(r["config"] for r in mine):
            own = [r["ratio"] for r in mine if r["config"] == key]
            per_config[key] = {
                "median": statistics.median(own),
                "low": min(own),
                "high": max(own),
            }
        out[name] = {
            "median": statistics.median(ratios) if ratios else None,
            "low": min(ratios) if ratios else None,
            "high": max(ratios) if ratios else None,
            "configs": per_config,
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--config", action="append", required=True, type=remeasure.Config.parse)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--variants", nargs="*", help="only these variants (default: all)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    started = time.time()
    body = run(args)
    body.update(load_at_start=load, load_at_end=os.getloadavg(), wall_s=time.time() - started)
    for name, s in body["summary"].items():
        print(f"{name:28} median {s['median']:.3f}  range {s['low']:.3f}-{s['high']:.3f}")
        for key, c in s["configs"].items():
            print(f"    {key:28} {c['median']:.3f} ({c['low']:.3f}-{c['high']:.3f})")
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    print(f"written to {write_results('window_causes', devices, args.out_dir, body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
