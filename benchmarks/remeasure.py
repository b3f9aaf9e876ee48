"""An independent re-measurement of a workload's configurations, each timing in a fresh
Python process, in turns, over rounds: the yardstick autoplace's verdicts are judged by
(issue 23).

What it measures. The steady-state throughput (samples/s) of each configuration
(device, batch size, precision, width) of a model file's workload: either with a fresh
host batch put on the device every step, the loop autoplace's throughput objective
scores (``--loop fed``: two host batches made once, put on the device in turn), or with
the batch left on the device (``--loop step``). Beside it each timing records what the
machine and the allocator did: the 1-minute load average, the process's CPU time per
wall second while timing, minor page faults per step and the peak resident memory.

Why a fresh process per timing. A step's time depends on what ran before it in the same
process: issue 23 reports a two-tower recommender's step at 20 ms in a fresh process,
13 ms in the middle of a sweep and 7.5 ms after other configurations had run there
(glibc's allocator had grown enough to keep its 37 MiB of temporaries instead of mapping
them afresh each step). A user's training process is a fresh one, so each timing here runs
in a process of its own that imports the model file, calls the workload function with
``(width, dtype)``, jits the step (donating the state for ``kind="train"``), puts the
state and the batch on the device, warms up, times chunks of steps (each at least
50 ms, ended by ``jax.block_until_ready``) for the given seconds, prints the median
seconds per step as JSON and exits. It uses only the public fields of
``autoplace.Workload`` (through the model file) and none of autoplace's measuring code.

Why in turns and rounds. The machine drifts over seconds to minutes. In every round
each configuration is timed once, one process at a time, and the order rotates from one
pair of rounds to the next, the second of each pair reversed: every two rounds, each pair
of configurations is timed in both orders. Two configurations are compared by the ratio
of their throughputs *within* a round, where drift between rounds cancels; its median
over rounds gets a distribution-free confidence interval (sign-test order statistics,
two-sided 95%, so at least 6 rounds; with 7 the interval is the rounds' range, 98.4%),
with the number of rounds each led. A round where a configuration failed (an error, a
crash, a timeout, output that is not finite) is left out of its comparisons and listed.

``sweep`` times every configuration of a grid the same way, in fewer and shorter rounds
(3 of 0.2 s by default), then re-measures the best few (4) in turns with full rounds,
and names the best: the highest median throughput among those finite and error-free
in every final round, with its interval against each other finalist, and those it
cannot be told apart from (an interval holding 1). Every timing is kept in a JSON cache
(under the system's temporary folder, named after the request, or ``--cache``) as it
ends, so an interrupted sweep resumes where it stopped when the same command runs
again. The result goes to ``benchmarks/results/remeasure-<mode>-<workload>-<time>.json``
(or ``--out``), with a summary on the terminal.

From the repository root, with the venv active::

    python benchmarks/remeasure.py measure studies/mnist_mlp.py --workload mlp \\
        --config cpu:0/256/float32 --config cpu:0/1024/float32 --rounds 7 --seconds 1
    python benchmarks/remeasure.py sweep benchmarks/unseen_workloads.py --workload gnn
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SCHEMA = 1
#: The line prefix a child process prints its result after (the user's code may print too).
MARK = "remeasure-result: "
PRECISIONS = {
    "float32": "float32",
    "f32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "f16": "float16",
    "fp16": "float16",
}
Loop = Literal["fed", "step"]


# --- what is timed ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, order=True)
class Config:
    """One configuration: where and how a workload's step runs."""

    device: str  # "cpu:0", "gpu:0": the platform and the index among its devices
    batch_size: int
    precision: str  # "float32", "bfloat16" or "float16"
    width: int | None = None  # None: the workload's default width, resolved before timing
    #: Steps run inside one jitted call (a ``lax.scan`` over that many stacked batches).
    steps_per_call: int = 1

    @classmethod
    def parse(cls, text: str) -> Config:
        """``DEVICE/BATCH/PRECISION[/WIDTH][@K]``, e.g. ``cpu:0/128/bf16/64`` or
        ``cpu:0/32/f32@16`` (16 steps per call)."""
        text, _, k = text.partition("@")
        if k and not (k.isdigit() and int(k) >= 1):
            raise ValueError(f"steps per call {k!r} is not a positive whole number (@16)")
        parts = text.split("/")
        if len(parts) not in (3, 4):
            raise ValueError(
                f"configuration {text!r} is not DEVICE/BATCH/PRECISION[/WIDTH]: "
                "write it like cpu:0/128/bf16 or cpu:0/128/float32/64"
            )
        device, batch, precision = parts[:3]
        width = int(parts[3]) if len(parts) == 4 else None
        return cls(parse_device(device), int(batch), parse_precision(precision), width,
                   int(k) if k else 1)  # fmt: skip

    @property
    def key(self) -> str:
        """The configuration as ``parse`` reads it back: its name in files."""
        width = "" if self.width is None else f"/{self.width}"
        fused = "" if self.steps_per_call == 1 else f"@{self.steps_per_call}"
        return f"{self.device}/{self.batch_size}/{self.precision}{width}{fused}"

    @property
    def label(self) -> str:
        width = "" if self.width is None else f" w{self.width}"
        fused = "" if self.steps_per_call == 1 else f" x{self.steps_per_call}/call"
        return f"{self.device} b{self.batch_size} {self.precision}{width}{fused}"


def parse_device(text: str) -> str:
    platform, _, index = text.partition(":")
    if not platform or not (index or "0").isdigit():
        raise ValueError(f"device {text!r} is not PLATFORM:INDEX: write it like cpu:0 or gpu:0")
    return f"{platform}:{index or 0}"


def parse_precision(text: str) -> str:
    try:
        return PRECISIONS[text.lower()]
    except KeyError:
        raise ValueError(
            f"precision {text!r} is not one of float32, bfloat16, float16 (or f32, bf16, f16)"
        ) from None


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """``LOW..HIGH`` (the powers of two between, both included) or ``A,B,C``."""
    if ".." in text:
        low, high = (int(v) for v in text.split(".."))
        return tuple(2**i for i in range(low.bit_length() - 1, high.bit_length()) if 2**i >= low)
    return tuple(sorted({int(v) for v in text.split(",")}))


@dataclasses.dataclass(frozen=True)
class TimingSettings:
    """How each fresh process times its configuration."""

    seconds: float = 1.0  # timed chunks run until this much time has passed
    loop: Loop = "fed"
    warmup_steps: int = 5
    #: Then untimed steps until this much time has passed since the first call: a fresh
    #: process's first fraction of a second runs slow (issue 36's plain loop: 0.3 s).
    warmup_s: float = 0.3
    min_chunk_s: float = 0.05
    min_chunks: int = 3
    timeout_s: float = 600.0  # a process still running then is killed: a "timeout"
    compile_cache: str | None = None  # JAX's persistent compilation cache, if any


@dataclasses.dataclass(frozen=True)
class Timing:
    """One configuration timed in one fresh process.

    ``status`` is ``ok``, ``nonfinite`` (the output after the timed loop held NaN or
    inf), ``error`` (the workload raised; ``reason`` says where and what), ``crash``
    (the process died) or ``timeout``. Figures a failure never reached are ``None``.
    """

    status: str
    reason: str = ""
    step_s: float | None = None
    samples_per_s: float | None = None
    chunk_s: tuple[float, ...] = ()
    steps: int = 0
    first_call_s: float | None = None  # compile and first run, from the jitted call
    cpu_per_wall: float | None = None  # the process's CPU time / wall time while timing
    minor_faults_per_step: float | None = None
    max_rss_mib: float | None = None
    loadavg: float | None = None  # the 1-minute load average when the process started
    process_s: float | None = None  # the whole process, interpreter start-up included
    import_s: float | None = None  # of which importing JAX and NumPy (the worker's start-up)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Timing:
        return cls(**{**data, "chunk_s": tuple(data.get("chunk_s", ()))})


# --- the pure parts: turn orders and intervals -----------------------------------------


def round_orders(n: int, rounds: int) -> list[list[int]]:
    """The order of ``n`` configurations in each round: round ``2k`` is the list rotated
    by ``k``, round ``2k + 1`` that order reversed. So every two rounds time every pair
    in both orders, and over ``2n`` rounds each configuration opens two rounds."""
    orders = []
    for r in range(rounds):
        shift = (r // 2) % n if n else 0
        order = list(range(shift, n)) + list(range(shift))
        orders.append(order[::-1] if r % 2 else order)
    return orders


@dataclasses.dataclass(frozen=True)
class Interval:
    """A confidence interval of a median, and the confidence it actually reaches (order
    statistics reach only certain levels: at least the one asked for)."""

    low: float
    high: float
    confidence: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def binomial_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: Sequence[float], confidence: float = 0.95) -> Interval | None:
    """The distribution-free two-sided interval of the median of ``values`` from the sign
    test: the ``k``-th smallest and ``k``-th largest value, ``k`` the largest for which
    ``1 - 2 P(Binomial(n, 1/2) <= k - 1)`` is still at least ``confidence``. ``None``
    when no ``k`` reaches it (fewer than 6 values at 95%)."""
    n = len(values)
    best = None
    for k in range(1, n // 2 + 1):
        reached = 1 - 2 * binomial_cdf_half(k - 1, n)
        if reached < confidence:
            break
        best = (k, reached)
    if best is None:
        return None
    k, reached = best
    ordered = sorted(values)
    return Interval(ordered[k - 1], ordered[n - k], reached)


# --- summaries of rounds ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Turn:
    """One timing in its place: which round, at which position of that round's order."""

    round: int
    position: int
    config: Config
    timing: Timing


@dataclasses.dataclass(frozen=True)
class ConfigSummary:
    config: Config
    rounds: int
    samples_per_s: float | None  # median over the rounds it succeeded in
    low: float | None
    high: float | None
    failures: tuple[tuple[int, str, str], ...]  # (round, status, reason)

    @property
    def spread(self) -> float | None:
        """(max - min) / median over rounds, unpaired: includes the machine's drift."""
        if self.samples_per_s is None or self.low is None or self.high is None:
            return None
        return (self.high - self.low) / self.samples_per_s


@dataclasses.dataclass(frozen=True)
class Pair:
    """A against B: their throughputs' ratio A/B within each round both succeeded in."""

    a: Config
    b: Config
    ratios: tuple[float, ...]
    rounds: tuple[int, ...]
    interval: Interval | None

    @property
    def median(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def a_led(self) -> int:
        return sum(r > 1 for r in self.ratios)

    @property
    def verdict(self) -> str:
        if self.interval is None:
            return "too few rounds to tell"
        if self.interval.low > 1:
            return "A faster"
        if self.interval.high < 1:
            return "B faster"
        return "cannot tell apart"


def summarise(configs: Sequence[Config], turns: Iterable[Turn]) -> list[ConfigSummary]:
    """Each configuration's median throughput over rounds, its range and its failures."""
    turns = list(turns)
    out = []
    for c in configs:
        mine = sorted((t for t in turns if t.config == c), key=lambda t: t.round)
        scores = [t.timing.samples_per_s for t in mine if t.timing.ok]
        scores = [s for s in scores if s is not None]
        failures = tuple(
            (t.round, t.timing.status, t.timing.reason) for t in mine if not t.timing.ok
        )
        out.append(
            ConfigSummary(
                config=c,
                rounds=len(mine),
                samples_per_s=statistics.median(scores) if scores else None,
                low=min(scores) if scores else None,
                high=max(scores) if scores else None,
                failures=failures,
            )
        )
    return out


def compare(a: Config, b: Config, turns: Iterable[Turn], confidence: float = 0.95) -> Pair:
    """A against B, round by round: rounds where either failed are left out."""
    score: dict[tuple[int, Config], float] = {
        (t.round, t.config): t.timing.samples_per_s
        for t in turns
        if t.timing.ok and t.timing.samples_per_s
    }
    rounds = sorted({r for r, c in score if c == a} & {r for r, c in score if c == b})
    ratios = tuple(score[(r, a)] / score[(r, b)] for r in rounds)
    return Pair(a, b, ratios, tuple(rounds), median_interval(ratios, confidence))


def all_pairs(configs: Sequence[Config], turns: Sequence[Turn]) -> list[Pair]:
    return [compare(a, b, turns) for a, b in itertools.combinations(configs, 2)]


# --- one timing in a fresh process ------------------------------------------------------


def time_in_fresh_process(
    model: Path, workload: str, config: Config, settings: TimingSettings
) -> Timing:
    """Start a Python process that times ``config`` once (see the module docstring),
    wait for it, and return what it printed; a failure of any kind is a ``Timing`` with
    its status and reason, never an exception."""
    spec = {
        "model": str(model),
        "workload": workload,
        "config": dataclasses.asdict(config),
        "settings": dataclasses.asdict(settings),
    }
    command = [sys.executable, str(Path(__file__).resolve()), "_child", json.dumps(spec)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=settings.timeout_s)
    except subprocess.TimeoutExpired:
        return Timing("timeout", f"still running after {settings.timeout_s:g} s: killed")
    wall = time.perf_counter() - started
    results = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if not results:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        last = lines[-1].strip() if lines else "no output"
        return Timing("crash", f"the process exited with {done.returncode}: {last}", process_s=wall)
    data = json.loads(results[-1][len(MARK) :])
    return dataclasses.replace(Timing.from_json(data), process_s=wall)


def _load_module(model: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_remeasure_model", model)
    if spec is None or spec.loader is None:
        raise ImportError(f"{model} is not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(model.parent))  # the file may import its siblings
    spec.loader.exec_module(module)
    return module


def _find_workload(module: Any, name: str) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The workload function named ``name`` and what its file declares about it: through
    the public ``autoplace.WorkloadInfo`` the decorator leaves on it, or, undecorated, a
    function of that name and the module's ``WIDTHS`` and ``DEFAULT_WIDTH``."""
    import autoplace

    for value in vars(module).values():
        for attribute in getattr(value, "__dict__", {}).values():
            if isinstance(attribute, autoplace.WorkloadInfo) and attribute.name == name:
                return value, {
                    "widths": list(attribute.widths),
                    "default_width": attribute.default_width,
                    "batch_sizes": list(attribute.batch_sizes),
                }
    fn = getattr(module, name, None)
    if not callable(fn):
        raise LookupError(f"no workload {name!r} in {module.__file__}")
    widths = [int(w) for w in getattr(module, "WIDTHS", ())]
    default = getattr(module, "DEFAULT_WIDTH", widths[0] if widths else None)
    return fn, {"widths": widths, "default_width": default, "batch_sizes": []}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _child_describe(spec: dict[str, Any]) -> dict[str, Any]:
    """What a fresh process finds: the workload's declarations and the devices."""
    import jax

    _, facts = _find_workload(_load_module(Path(spec["model"])), spec["workload"])
    platforms = dict.fromkeys([jax.default_backend(), "cpu"])
    devices = [f"{p}:{i}" for p in platforms for i in range(len(jax.devices(p)))]
    return {**facts, "devices": devices, "jax": jax.__version__, "python": sys.version.split()[0]}


def _child_time(spec: dict[str, Any]) -> dict[str, Any]:
    """The timing itself, in the fresh process (see the module docstring)."""
    import resource

    loadavg = os.getloadavg()[0]
    config = Config(**spec["config"])
    settings = TimingSettings(**spec["settings"])
    phase = "importing JAX"
    began_imports = time.perf_counter()
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np

        import_s = time.perf_counter() - began_imports

        if settings.compile_cache:
            jax.config.update("jax_compilation_cache_dir", settings.compile_cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        phase = "building the workload"
        fn, _ = _find_workload(_load_module(Path(spec["model"])), spec["workload"])
        platform, index = config.device.split(":")
        device = jax.devices(platform)[int(index)]
        w = fn(config.width, getattr(jnp, config.precision))
        train = w.kind == "train"
        rng = np.random.default_rng(0)
        per_call = config.steps_per_call
        hosts = [w.make_batch(config.batch_size, rng) for _ in range(2 * per_call)]
        if per_call > 1:  # K batches stacked along a new leading axis, one transfer a call
            hosts = [
                jax.tree.map(lambda *xs: np.stack(xs), *hosts[i * per_call : (i + 1) * per_call])
                for i in range(2)
            ]
        state = jax.device_put(w.state, device, may_alias=False)
        batch = jax.device_put(hosts[0], device)
        one_step = w.step
        if per_call > 1:  # written here, not autoplace.fuse: this loop is the yardstick
            if train:

                def one_step(s: Any, bs: Any) -> Any:
                    return jax.lax.scan(lambda c, b: (w.step(c, b), None), s, bs)[0]
            else:

                def one_step(s: Any, bs: Any) -> Any:
                    return jax.lax.scan(lambda c, b: (c, w.step(c, b)), s, bs)[1]

        step = jax.jit(one_step, donate_argnums=(0,) if train else ())
        fed = settings.loop == "fed"
        count = 0

        def run(k: int) -> Any:
            nonlocal state, count
            out = None
            for _ in range(k):
                b = jax.device_put(hosts[count % 2], device) if fed else batch
                out = step(state, b)
                state = out if train else state
                count += 1
            return jax.block_until_ready(out)

        phase = "compiling and the first call"
        started = time.perf_counter()
        run(1)
        first_call_s = time.perf_counter() - started
        phase = "timing"
        run(settings.warmup_steps)
        warm_until = time.perf_counter() + settings.warmup_s
        while time.perf_counter() < warm_until:
            run(1)
        started = time.perf_counter()
        run(1)
        one = time.perf_counter() - started
        k = max(1, math.ceil(settings.min_chunk_s / max(one, 1e-9)))
        chunks: list[float] = []
        usage = resource.getrusage(resource.RUSAGE_SELF)
        began = time.perf_counter()
        while len(chunks) < settings.min_chunks or time.perf_counter() - began < settings.seconds:
            started = time.perf_counter()
            out = run(k)
            chunks.append((time.perf_counter() - started) / k)
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_SELF)
        finite = all(
            bool(jnp.isfinite(leaf).all())
            for leaf in jax.tree.leaves(out)
            if jax.dtypes.issubdtype(leaf.dtype, jnp.inexact)
        )
    except Exception as exc:  # the user's workload: any failure is a result to record
        return {"status": "error", "reason": f"{phase}: {_first_line(exc)}", "loadavg": loadavg}
    step_s = statistics.median(chunks) / per_call  # a chunk's figure is per call
    cpu = (after.ru_utime + after.ru_stime) - (usage.ru_utime + usage.ru_stime)
    steps = k * len(chunks) * per_call
    return {
        "status": "ok" if finite else "nonfinite",
        "reason": "" if finite else "NaN or inf in the output after the timed loop",
        "step_s": step_s,
        "samples_per_s": config.batch_size / step_s,
        "chunk_s": chunks,
        "steps": steps,
        "first_call_s": first_call_s,
        "cpu_per_wall": cpu / wall,
        "minor_faults_per_step": (after.ru_minflt - usage.ru_minflt) / steps,
        "max_rss_mib": after.ru_maxrss / 1024,  # Linux reports KiB
        "loadavg": loadavg,
        "import_s": import_s,
    }


# --- rounds, and the cache that makes them resumable -----------------------------------


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(f.name, path)


class Store:
    """Every timing of a run, kept in a JSON file as it ends, under a header that says
    what the run is (model file and its hash, workload, settings): running the same
    command again skips what is there. Without a path it keeps them in memory."""

    def __init__(self, path: Path | None, header: dict[str, Any]) -> None:
        self.path, self.header = path, json.loads(json.dumps(header))  # as it reads back
        self.records: list[dict[str, Any]] = []
        if path is not None and path.exists():
            data = json.loads(path.read_text())
            if data.get("header") != self.header:
                raise ValueError(
                    f"the cache {path} was written for another run (model file, workload or "
                    "settings differ): pass another --cache, or delete it to start over"
                )
            self.records = data["timings"]

    def get(self, phase: str, round_: int, config: Config) -> Timing | None:
        for r in self.records:
            if (r["phase"], r["round"], r["config"]) == (phase, round_, config.key):
                return Timing.from_json(r["timing"])
        return None

    def put(self, phase: str, round_: int, position: int, config: Config, timing: Timing) -> None:
        self.records.append(
            {
                "phase": phase,
                "round": round_,
                "position": position,
                "config": config.key,
                "timing": dataclasses.asdict(timing),
            }
        )
        if self.path is not None:
            doc = {"schema": SCHEMA, "header": self.header, "timings": self.records}
            write_atomic(self.path, json.dumps(doc, indent=1))


Progress = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Report:
    """What a set of rounds found: per configuration, per pair, and every timing."""

    phase: str
    configs: tuple[Config, ...]
    rounds: int
    settings: TimingSettings
    turns: tuple[Turn, ...]
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)  # from ``describe``

    @property
    def summaries(self) -> list[ConfigSummary]:
        return summarise(self.configs, self.turns)

    @property
    def pairs(self) -> list[Pair]:
        return all_pairs(self.configs, self.turns)

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "rounds": self.rounds,
            "settings": dataclasses.asdict(self.settings),
            "configurations": [
                {
                    "config": s.config.key,
                    "median_samples_per_s": s.samples_per_s,
                    "min_samples_per_s": s.low,
                    "max_samples_per_s": s.high,
                    "spread": s.spread,
                    "failures": [
                        {"round": r, "status": st, "reason": why} for r, st, why in s.failures
                    ],
                }
                for s in self.summaries
            ],
            "pairs": [pair_json(p) for p in self.pairs],
            "timings": [
                {
                    "round": t.round,
                    "position": t.position,
                    "config": t.config.key,
                    **dataclasses.asdict(t.timing),
                }
                for t in self.turns
            ],
        }

    def render(self) -> str:
        loads = [t.timing.loadavg for t in self.turns if t.timing.loadavg is not None]
        load = f"; 1-min load average {min(loads):.2f}-{max(loads):.2f}" if loads else ""
        rounds = f"{self.rounds} round{'s' * (self.rounds != 1)}"
        lines = [
            f"{self.phase}: {rounds}, {self.settings.loop} loop, "
            f"{self.settings.seconds:g} s a timing, each in a fresh process{load}",
            f"  {'configuration':32} {'samples/s':>11} {'±range/2':>8}  failed",
        ]
        for s in self.summaries:
            median = "-" if s.samples_per_s is None else rate(s.samples_per_s)
            spread = "-" if s.spread is None else f"±{s.spread / 2:.1%}"
            lines.append(
                f"  {s.config.label:32} {median:>11} {spread:>8}  {len(s.failures)}/{s.rounds}"
                + "".join(f"\n      round {r}: {st}: {why}" for r, st, why in s.failures)
            )
        lines += [f"  {render_pair(p)}" for p in self.pairs]
        return "\n".join(lines)


def rate(samples_per_s: float) -> str:
    """``148.7 k``: a throughput with four significant figures and an SI prefix."""
    for factor, prefix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if samples_per_s >= factor:
            return f"{samples_per_s / factor:.4g}{prefix}"
    return f"{samples_per_s:.4g}"


def pair_json(p: Pair) -> dict[str, Any]:
    return {
        "a": p.a.key,
        "b": p.b.key,
        "ratio_a_to_b_per_round": list(p.ratios),
        "rounds": list(p.rounds),
        "median_ratio": p.median,
        "interval": None
        if p.interval is None
        else {"low": p.interval.low, "high": p.interval.high, "confidence": p.interval.confidence},
        "rounds_a_led": p.a_led,
        "verdict": p.verdict,
    }


def render_pair(p: Pair) -> str:
    """``A / B: 1.07x [1.01-1.12] (98.4%), A led 6 of 7 rounds: A faster``."""
    if p.median is None:
        return f"{p.a.label} / {p.b.label}: no round where both succeeded"
    interval = (
        "no interval"
        if p.interval is None
        else f"[{p.interval.low:.3f}-{p.interval.high:.3f}] ({p.interval.confidence:.1%})"
    )
    return (
        f"{p.a.label} / {p.b.label}: {p.median:.3f}x {interval}, A led "
        f"{p.a_led} of {len(p.ratios)} rounds: {p.verdict}"
    )


def describe(model: Path, workload: str) -> dict[str, Any]:
    """Ask a fresh process for the workload's widths, batch sizes and the devices."""
    spec = json.dumps({"model": str(model), "workload": workload})
    command = [sys.executable, str(Path(__file__).resolve()), "_describe", spec]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    results = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode or not results:
        lines = done.stderr.strip().splitlines()
        raise ValueError(
            f"cannot load workload {workload!r} from {model}: {lines[-1] if lines else '?'}"
        )
    return json.loads(results[-1][len(MARK) :])


def with_width(configs: Sequence[Config], facts: dict[str, Any]) -> list[Config]:
    """Each configuration with its width spelled out (the workload's default where none is
    given); a width the model file does not declare is refused, as autoplace refuses it."""
    default, declared = facts["default_width"], facts["widths"]
    out = []
    for c in configs:
        if c.width is None and default is None:
            raise ValueError("the workload declares no default width: give each configuration one")
        c = c if c.width is not None else dataclasses.replace(c, width=default)
        if declared and c.width not in declared:
            offered = ", ".join(map(str, declared))
            raise ValueError(
                f"width {c.width} is not one the workload declares ({offered}): pick one of those"
            )
        out.append(c)
    return out


@dataclasses.dataclass(frozen=True)
class Session:
    """One run: a model file's workload, what a fresh process found about it (widths,
    batch sizes, devices, versions), where the timings are kept, the pause between
    rounds and where progress is told."""

    model: Path
    workload: str
    facts: dict[str, Any]
    store: Store
    pause_s: float = 0.0
    progress: Progress = _stderr

    @classmethod
    def open(
        cls,
        model: Path,
        workload: str,
        cache: Path | None,
        pause_s: float,
        progress: Progress,
        **request: Any,
    ) -> Session:
        """Describe the workload and open the store, its header naming the model file (and
        its hash), the workload and the ``request``: a cache of another run is refused."""
        model = model.resolve()
        header = {
            "model": str(model),
            "model_sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
            "workload": workload,
            **request,
        }
        store = Store(cache, header)
        if cache is not None:
            kept = (
                f"; {len(store.records)} already there are not run again" if store.records else ""
            )
            progress(f"timings kept in {cache} (run the same command again to resume){kept}")
        return cls(model, workload, describe(model, workload), store, pause_s, progress)

    def rounds(
        self, phase: str, configs: Sequence[Config], rounds: int, settings: TimingSettings
    ) -> Report:
        """Time every configuration once a round, one process at a time, in the rotating
        orders of ``round_orders``; timings already in the store are not repeated."""
        turns = []
        for r, order in enumerate(round_orders(len(configs), rounds)):
            ran = False
            for position, i in enumerate(order):
                config = configs[i]
                timing = self.store.get(phase, r, config)
                if timing is None:
                    timing = time_in_fresh_process(self.model, self.workload, config, settings)
                    self.store.put(phase, r, position, config, timing)
                    ran = True
                    figure = (
                        f"{rate(timing.samples_per_s or 0.0)} samples/s"
                        if timing.ok
                        else f"{timing.status}: {timing.reason}"
                    )
                    self.progress(f"{phase} round {r + 1}/{rounds}: {config.label}: {figure}")
                turns.append(Turn(r, position, config, timing))
            if ran and self.pause_s > 0 and r < rounds - 1:
                time.sleep(self.pause_s)
        return Report(phase, tuple(configs), rounds, settings, tuple(turns), self.facts)


def remeasure(
    model: Path,
    workload: str,
    configs: Sequence[Config],
    rounds: int = 7,
    settings: TimingSettings = TimingSettings(),
    pause_s: float = 0.0,
    cache: Path | None = None,
    progress: Progress = _stderr,
) -> Report:
    """Re-measure ``configs`` in turns over ``rounds``, each timing in a fresh process."""
    session = Session.open(
        model,
        workload,
        cache,
        pause_s,
        progress,
        mode="remeasure",
        configs=[c.key for c in configs],
        rounds=rounds,
        settings=dataclasses.asdict(settings),
    )
    return session.rounds("remeasure", with_width(configs, session.facts), rounds, settings)


@dataclasses.dataclass(frozen=True)
class SweepReport:
    """The grid's quick rounds, the best few's full rounds, and the best of those."""

    sweep: Report
    final: Report
    best: Config | None
    against: tuple[Pair, ...]  # best / each other finalist

    @property
    def equivalent(self) -> list[Config]:
        """The finalists the best could not be told apart from (interval holds 1, or none)."""
        return [p.b for p in self.against if p.interval is None or p.interval.contains(1.0)]

    def to_json(self) -> dict[str, Any]:
        return {
            "best": None if self.best is None else self.best.key,
            "best_against": [pair_json(p) for p in self.against],
            "equivalent": [c.key for c in self.equivalent],
            "sweep": self.sweep.to_json(),
            "final": self.final.to_json(),
        }

    def render(self) -> str:
        lines = [self.sweep.render(), "", self.final.render(), ""]
        if self.best is None:
            lines.append("no configuration succeeded in every final round: no best")
        else:
            lines.append(f"best: {self.best.label}")
            lines += [f"  {render_pair(p)}" for p in self.against]
            if self.equivalent:
                names = ", ".join(c.label for c in self.equivalent)
                lines.append(f"  not told apart from: {names}")
        return "\n".join(lines)


def finalists(summaries: Sequence[ConfigSummary], top: int) -> list[Config]:
    """The ``top`` configurations of highest median throughput among those that
    succeeded in every round."""
    clean = [s for s in summaries if not s.failures and s.samples_per_s is not None]
    clean.sort(key=lambda s: -(s.samples_per_s or 0.0))
    return [s.config for s in clean[:top]]


def sweep(
    model: Path,
    workload: str,
    devices: Sequence[str] | None = None,
    batch_sizes: Sequence[int] | None = None,
    precisions: Sequence[str] = ("float32", "bfloat16", "float16"),
    widths: Sequence[int] | None = None,
    sweep_rounds: int = 3,
    sweep_settings: TimingSettings = TimingSettings(seconds=0.2),
    top: int = 4,
    rounds: int = 7,
    settings: TimingSettings = TimingSettings(),
    pause_s: float = 0.0,
    cache: Path | None = None,
    progress: Progress = _stderr,
) -> SweepReport:
    """Every configuration of devices x batch sizes x precisions x widths (by default the
    workload's declared batch sizes, its default width and one device of each platform)
    in ``sweep_rounds`` quick rounds; then the ``top`` best in ``rounds`` full rounds."""
    session = Session.open(
        model,
        workload,
        cache,
        pause_s,
        progress,
        mode="sweep",
        grid={
            "devices": devices,
            "batch_sizes": batch_sizes,
            "precisions": precisions,
            "widths": widths,
        },
        sweep_rounds=sweep_rounds,
        sweep_settings=dataclasses.asdict(sweep_settings),
        top=top,
        rounds=rounds,
        settings=dataclasses.asdict(settings),
    )
    facts = session.facts
    if devices:
        devices = [parse_device(d) for d in devices]
    else:  # one device of each platform: identical devices time the same
        devices = [d for d in facts["devices"] if d.endswith(":0")]
    precisions = [parse_precision(p) for p in precisions]
    batch_sizes = batch_sizes or facts["batch_sizes"] or parse_batch_sizes("1..4096")
    grid = [
        Config(d, b, p, w)
        for d, p, w, b in itertools.product(devices, precisions, widths or [None], batch_sizes)
    ]
    quick = session.rounds("sweep", with_width(grid, facts), sweep_rounds, sweep_settings)
    chosen = finalists(quick.summaries, top)
    final = session.rounds("final", chosen, rounds, settings)
    ranked = finalists(final.summaries, len(chosen))
    best = ranked[0] if ranked else None
    against = tuple(compare(best, c, final.turns) for c in chosen if c != best) if best else ()
    return SweepReport(quick, final, best, against)


# --- the command line ---------------------------------------------------------------------


def default_cache(args: argparse.Namespace) -> Path:
    """A cache file named after what the command asks to measure (not where its result
    goes, nor the pause): the same request resumes from the same file."""
    request = {k: v for k, v in vars(args).items() if k not in ("out", "cache", "pause")}
    request["model"] = str(Path(args.model).resolve())
    digest = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode())
    return Path(tempfile.gettempdir()) / f"remeasure-{args.workload}-{digest.hexdigest()[:12]}.json"


def write_output(
    path: Path | None, workload: str, mode: str, body: dict[str, Any], facts: dict[str, Any]
) -> Path:
    stamp = dt.datetime.now(dt.timezone.utc)
    path = path or RESULTS / f"remeasure-{mode}-{workload}-{stamp:%Y%m%d-%H%M}.json"
    doc = {
        "benchmark": f"remeasure {mode}",
        "schema": SCHEMA,
        "date": stamp.isoformat(timespec="seconds"),
        "command": " ".join(["python", "benchmarks/remeasure.py", *sys.argv[1:]]),
        "workload": workload,
        "facts": facts,
        "loadavg_at_end": list(os.getloadavg()),
        "cpu_count": os.cpu_count(),
        "jax": facts.get("jax"),
        "python": facts.get("python"),
        **body,
    }
    write_atomic(path, json.dumps(doc, indent=1))
    return path


def _comma(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Re-measure a workload's configurations, each timing in a fresh process, "
        "in turns over rounds."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, rounds: int, seconds: float) -> None:
        p.add_argument("model", type=Path, help="the model file")
        p.add_argument("--workload", required=True, help="the workload function's name")
        p.add_argument("--rounds", type=int, default=rounds, help=f"rounds (default {rounds})")
        p.add_argument("--seconds", type=float, default=seconds, help="timed seconds a timing")
        p.add_argument(
            "--loop",
            choices=("fed", "step"),
            default="fed",
            help="fed: a fresh host batch put on the device each step (default); "
            "step: the batch stays on the device",
        )
        p.add_argument("--pause", type=float, default=0.0, help="seconds between rounds")
        p.add_argument("--timeout", type=float, default=600.0, help="seconds a process may run")
        p.add_argument("--compile-cache", help="a folder for JAX's persistent compilation cache")
        p.add_argument("--cache", type=Path, help="the JSON file timings are kept in, to resume")
        p.add_argument(
            "--out", type=Path, help="the result file (default under benchmarks/results)"
        )

    measure = commands.add_parser("measure", help="re-measure the configurations given")
    common(measure, 7, 1.0)
    measure.add_argument(
        "--config",
        action="append",
        required=True,
        type=Config.parse,
        help="DEVICE/BATCH/PRECISION[/WIDTH], e.g. cpu:0/128/bf16; repeat it",
    )

    grid = commands.add_parser("sweep", help="time a whole grid, then re-measure its best few")
    common(grid, 7, 1.0)
    grid.add_argument("--devices", type=_comma, help="e.g. cpu:0,gpu:0 (default: each :0)")
    grid.add_argument(
        "--batch-sizes",
        type=parse_batch_sizes,
        help="LOW..HIGH (powers of two) or A,B,C (default: the file's)",
    )
    grid.add_argument("--precisions", type=_comma, default=["float32", "bfloat16", "float16"])
    grid.add_argument(
        "--widths",
        type=lambda t: [int(v) for v in _comma(t)],
        help="default: the workload's default width",
    )
    grid.add_argument("--sweep-rounds", type=int, default=3)
    grid.add_argument("--sweep-seconds", type=float, default=0.2)
    grid.add_argument("--top", type=int, default=4, help="finalists re-measured in full rounds")

    for hidden in ("_child", "_describe"):  # what the fresh processes run
        commands.add_parser(hidden).add_argument("spec")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("_child", "_describe"):
        spec = json.loads(args.spec)
        result = _child_time(spec) if args.command == "_child" else _child_describe(spec)
        print(MARK + json.dumps(result), flush=True)
        return 0
    settings = TimingSettings(
        seconds=args.seconds,
        loop=args.loop,
        timeout_s=args.timeout,
        compile_cache=args.compile_cache,
    )
    try:
        if args.command == "measure":
            report: Report | SweepReport = remeasure(
                args.model,
                args.workload,
                args.config,
                args.rounds,
                settings,
                args.pause,
                args.cache,
            )
        else:
            cache = args.cache or default_cache(args)
            report = sweep(
                args.model,
                args.workload,
                args.devices,
                args.batch_sizes,
                args.precisions,
                args.widths,
                args.sweep_rounds,
                dataclasses.replace(settings, seconds=args.sweep_seconds),
                args.top,
                args.rounds,
                settings,
                args.pause,
                cache,
            )
    except ValueError as exc:
        print(f"remeasure: error: {exc}", file=sys.stderr)
        return 2
    facts = report.facts if isinstance(report, Report) else report.final.facts
    out = write_output(args.out, args.workload, args.command, report.to_json(), facts)
    print(report.render())
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
