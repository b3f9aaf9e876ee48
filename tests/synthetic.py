"""A measurement backend with a known performance model, for testing the tuner's logic.

It is a real implementation of the :class:`autoplace.Backend` protocol whose
figures come from a formula instead of a device, so tests of search, resume,
failure handling and storages run in milliseconds and know the right answer.
The measurement core itself is tested against JAX in test_engine and test_worker.

Its ``cpu:*`` devices follow :func:`step_time`. A ``gpu:*`` device follows
:func:`gpu_times`, shaped by the first GPU autoplace ran on: the NVIDIA H200 of
``../shared/gpu-reference/h200-2026-11-26/`` (JAX 0.11.2; its README MLP): a dispatch
floor of 41.6 µs, a put of a pageable host batch costing about 250 µs plus its bytes at
about 9 GB/s, a step with the batch on the device of 50 µs plus a little per sample, a
prefetched step in between, compiles that slow down side by side, and the device's
start-up once a process. :func:`synthetic_limits` gives that machine's measured limits.

Several GPUs used together (``gpu:0-3``) split the batch: each runs the step on its share,
then the gradients are all-reduced over NVLink, shaped by published figures: NCCL's
``all_reduce_perf`` on 8 H100 SXM5 (NVLink 4, NVSwitch) reaches a bus bandwidth of
460-480 GB/s at large sizes (the NCCL-tests reference table of docs.alayanew.com's
"NCCL-tests in practice", 2026-05-06; bus bandwidth as NVIDIA/nccl-tests' PERFORMANCE.md
defines it: the bytes times ``2(n-1)/n`` over the time). Its latency at small sizes,
:data:`REDUCE_LATENCY`, is assumed, not from that source. The host's put of the whole
batch is not split: one process stages every shard.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import statistics
from collections.abc import Callable

from autoplace import Config, DeviceInfo, Measurement, MeasureRequest, WorkloadInfo
from autoplace.devices import check_device
from autoplace.limits import DeviceLimits, Figure, MachineLimits
from autoplace.measurement import LoopFigures, MachineFigures

#: Per-sample seconds by precision and per-step overhead by device.
PER_SAMPLE = {"float32": 2e-6, "bfloat16": 1.5e-6, "float16": 4e-6}
OVERHEAD = {"cpu:0": 1e-4, "cpu:1": 5e-4}
#: Timed turns of each loop measured together.
TURNS = 10

#: The synthetic GPU (see the module docstring), each figure from the H200 reference
#: folder: ``limits.json`` (floor, memory), ``plain/`` (steps, puts, compiles, start-up).
GPU_KIND = "NVIDIA H200 (synthetic)"
GPU_MEMORY = 112_583_507_968
#: The dispatch floor: a trivial jitted call, back to back.
GPU_FLOOR = 41.6e-6
#: The step with its batch on the device: 45-86 µs for the README MLP at batch 32 to 4096.
GPU_STEP = 50e-6
GPU_PER_SAMPLE = {"float32": 6e-9, "bfloat16": 4e-9, "float16": 4e-9}
#: One put of a pageable numpy batch: a fixed part (200-340 µs alone at batch 32), then
#: its bytes, staged through pinned memory (the study's put line: 0.198 µs a 1.57 kB
#: sample, about 8 GB/s; the brief's 9).
PUT_FIXED = 250e-6
PUT_BANDWIDTH = 9e9
#: A sample's bytes in float32 (an MNIST image: 784 floats); half in a 16-bit precision.
SAMPLE_BYTES = 3136
#: Puts a prefetching thread keeps in flight (``autoplace.prefetch``'s default).
PREFETCH_DEPTH = 2
#: A configuration compiled alone (0.66-1.52 s); side by side, each of ``n`` takes
#: ``SIDE_BY_SIDE·(n - 1)`` times that (two: 10.4 s each; three: 20-25 s each).
GPU_COMPILE = 1.0
SIDE_BY_SIDE = 10.0
#: A process's first use of the GPU (context, handles, the autotuner's start).
GPU_INIT = 0.32
#: All-reduce over NVLink: bus bandwidth (see the module docstring) and a latency a call.
REDUCE_BANDWIDTH = 470e9
REDUCE_LATENCY = 20e-6
#: The gradients a training step reduces, float32: the README MLP's 118k parameters.
GRAD_BYTES = 472_000


def reduce_s(devices: int, precision: str) -> float:
    """Seconds of one all-reduce of the gradients over ``devices`` GPUs (0 for one)."""
    if devices == 1:
        return 0.0
    size = GRAD_BYTES * (1.0 if precision == "float32" else 0.5)
    return REDUCE_LATENCY + size * 2 * (devices - 1) / devices / REDUCE_BANDWIDTH


def gpu_times(
    batch: int,
    precision: str,
    steps_per_call: int = 1,
    sample_bytes: int = SAMPLE_BYTES,
    devices: int = 1,
) -> dict[str, float]:
    """Seconds per step on the synthetic GPU: ``step`` (the batch on the device), ``put``
    (one batch's put, alone), ``fed`` (put, then step: the put's copy is waited for),
    ``prefetch`` (``PREFETCH_DEPTH`` puts in flight on a thread: the step waits for the
    longer of itself and its share of the puts, which share the copy engine, plus a tenth
    of a step handing the batch over), and ``bytes`` (one step's batch). A call of
    ``steps_per_call`` steps pays the fixed parts once. On several ``devices``, each steps
    through its share of ``batch``, then the gradients are reduced (:func:`reduce_s`)."""
    k = steps_per_call
    size = sample_bytes * (1.0 if precision == "float32" else 0.5) * batch
    step = GPU_STEP / k + GPU_PER_SAMPLE[precision] * batch / devices + reduce_s(devices, precision)
    put = PUT_FIXED / k + size / PUT_BANDWIDTH
    return {
        "step": step,
        "put": put,
        "fed": put + step,
        "prefetch": max(step, put / PREFETCH_DEPTH) + 0.1 * step,
        "bytes": size,
    }


def synthetic_limits() -> MachineLimits:
    """The measured limits of the reference's machine (``limits.json``: one window each),
    for ``gpu:0`` and ``cpu:0``."""

    def device(name, kind, peaks, size, bandwidth, to_device, floor):
        flops = {p: Figure.of([v]) for p, v in peaks.items()}
        return DeviceLimits(name, kind, flops, size, Figure.of([bandwidth]),
                            Figure.of([to_device]), Figure.of([floor]))  # fmt: skip

    gpu = device("gpu:0", GPU_KIND, {"float32": 442.6e12, "bfloat16": 829.6e12,
                 "float16": 778.1e12}, 8192, 3259e9, 32.7e9, GPU_FLOOR)  # fmt: skip
    gpu = dataclasses.replace(gpu, all_reduce=Figure.of([REDUCE_BANDWIDTH]), all_reduce_devices=8)
    cpu = device("cpu:0", "cpu", {"float32": 1.106e12, "bfloat16": 2.392e12,
                 "float16": 0.953e12}, 1024, 167.2e9, 1.445e9, 5.6e-6)  # fmt: skip
    return MachineLimits((gpu, cpu), {}, "2026-11-26T07:28:56+00:00")


def step_time(device: str, batch: int, precision: str, steps_per_call: int = 1) -> float:
    """Fixed overhead (paid once a call: ``steps_per_call`` steps share it) plus per-sample
    cost, with a penalty past a cache size of 2048."""
    t = OVERHEAD.get(device, 1e-4) / steps_per_call + batch * PER_SAMPLE[precision]
    if batch > 2048:
        t *= 1.0 + (batch - 2048) / 2048
    return t


def bfloat16_ahead(by: float) -> Callable[[MeasureRequest], float]:
    """A ``slowdown`` that makes bfloat16 ``by`` (0.005: 0.5%) faster than float32 at
    every batch size."""

    def slowdown(request: MeasureRequest) -> float:
        c = request.config
        if c.precision != "bfloat16":
            return 1.0
        f32, bf16 = (step_time(c.device, c.batch_size, p) for p in ("float32", "bfloat16"))
        return f32 / bf16 / (1.0 + by)

    return slowdown


bfloat16_just_ahead = bfloat16_ahead(0.005)


class SyntheticBackend:
    """Implements ``autoplace.Backend`` with figures from :func:`step_time`.

    ``fail`` maps a config predicate to a (status, reason) result; ``memory_limit``
    makes batches above it ``too_big``; ``interrupt_at`` raises KeyboardInterrupt on
    that (1-based) measurement; ``slowdown`` multiplies a request's step times (a
    lucky or unlucky draw); ``turn_noise`` is each fed loop's own jitter per turn
    when measured together (fresh in every call); ``group_drift`` maps the n-th
    ``measure_together`` call (from 1) to a factor on the step times of all its
    configurations: a slow spell; ``deviation`` gives a lower precision's deviation from
    float32 (when the request asks for it; 0.1% otherwise); ``compile_s`` a request's
    compile seconds (0.1 otherwise). ``window_noise`` is each configuration's own factor
    in each call, the same for all its turns (what moves between windows and the turns of
    one window do not show); ``fresh`` multiplies a request's step times in a fresh process
    (:meth:`measure_fresh`: a shared worker's allocator state can differ from a fresh one's;
    it sees the request's ``env``, which the measurement records); ``faults`` gives a
    request's page faults a step; ``batch_s`` the seconds ``make_batch`` takes a batch.

    ``gpu:*`` devices follow :func:`gpu_times` (``sample_bytes``: a float32 sample's
    bytes): their steady step is timed in full (5 chunks) where the request's
    ``time_cap_s`` is above 0, else glanced at (1 chunk); the prefetched step is timed
    where its ``prefetch_time_cap_s`` is (on every device); the first configuration a
    process measures on a GPU (the shared worker's first, every fresh process's) carries
    the device's start-up (``device_init_s``); and with ``side_by_side`` a group measured
    together compiles its GPU configurations side by side, each compile slowed as the
    reference's were (:data:`SIDE_BY_SIDE`).
    """

    def __init__(
        self,
        devices: tuple[str, ...] = ("cpu:0",),
        fail: Callable[[MeasureRequest], tuple[str, str] | None] | None = None,
        memory_limit: int | None = None,
        interrupt_at: int | None = None,
        slowdown: Callable[[MeasureRequest], float] | None = None,
        turn_noise: float = 0.01,
        group_drift: Callable[[int], float] | None = None,
        deviation: Callable[[MeasureRequest], float] | None = None,
        compile_s: Callable[[MeasureRequest], float] | None = None,
        window_noise: float = 0.0,
        fresh: Callable[[MeasureRequest], float] | None = None,
        faults: Callable[[MeasureRequest], float] | None = None,
        batch_s: float | None = None,
        sample_bytes: int = SAMPLE_BYTES,
        side_by_side: bool = False,
    ) -> None:
        self._devices = [
            DeviceInfo(d, "gpu", GPU_KIND, GPU_MEMORY)
            if d.startswith("gpu")
            else DeviceInfo(d, "cpu", "cpu", 2**34)
            for d in devices
        ]
        self._fail = fail
        self._memory_limit = memory_limit
        self._interrupt_at = interrupt_at
        self._slowdown = slowdown
        self.turn_noise = turn_noise
        self._group_drift = group_drift
        self._deviation = deviation
        self._compile_s = compile_s
        self.window_noise = window_noise
        self._fresh = fresh
        self._faults = faults
        self._batch_s = batch_s
        self.sample_bytes = sample_bytes
        self.side_by_side = side_by_side
        self._drift = 1.0
        #: The GPUs the shared worker has started (its first configuration on each pays it).
        self._started: set[str] = set()
        self.measured: list[MeasureRequest] = []
        #: The configurations of each ``measure_together`` or ``measure_fresh`` call, and
        #: of each ``measure_fresh`` call alone.
        self.groups: list[list] = []
        self.fresh_groups: list[list] = []
        #: The configurations of each of the verdict's windows (a confirmation's or a
        #: duel's: not the feeding's, a remedy's or a steps-per-call window).
        self.windows: list[list] = []

    def devices(self) -> list[DeviceInfo]:
        return self._devices

    def catalog(self, model_file: str, sha256: str) -> dict[str, WorkloadInfo]:
        return {"synthetic": WorkloadInfo("synthetic", (64, 128), 64)}

    def measure(self, request: MeasureRequest) -> Measurement:
        if self._interrupt_at is not None and len(self.measured) + 1 == self._interrupt_at:
            self._interrupt_at = None
            raise KeyboardInterrupt
        c = request.config
        check_device(self._devices, c.device)
        self.measured.append(request)
        base = dict(config=c, workload=request.workload, device_kind="cpu")
        failure = self._fail(request) if self._fail else None
        if failure:
            return Measurement(status=failure[0], reason=failure[1], **base)
        predicted = c.batch_size * 1000
        if self._memory_limit is not None and predicted > self._memory_limit:
            return Measurement(status="too_big", reason="predicted over limit", **base)
        k = request.steps_per_call
        t = step_time(c.device, c.batch_size, c.precision, k)
        # Deterministic jitter of +-1% so ties are broken the same way every run.
        jitter = int(hashlib.sha1(c.label().encode()).hexdigest()[:4], 16) / 65535 * 0.02 - 0.01
        t *= 1 + jitter
        if self._slowdown is not None:
            t *= self._slowdown(request)
        t *= self._drift
        if c.device.startswith("gpu"):
            first = c.device not in self._started
            self._started.add(c.device)
            factor = t / step_time(c.device, c.batch_size, c.precision, k)
            return self._gpu(request, base, factor, first, predicted * k)
        prefetch = request.settings.prefetch_time_cap_s > 0
        return Measurement(
            status="ok",
            reason="",
            batch_s=self._batch_s,
            lower_s=0.01,
            compile_s=self._compile_s(request) if self._compile_s else 0.1,
            first_call_s=0.002,
            loops={
                "step": LoopFigures(t, 0.01),
                "fed": LoopFigures(t * 1.1, 0.01),
                **({"prefetch": LoopFigures(t * 1.05, 0.01)} if prefetch else {}),
            },
            transfer_s=t * 0.1,
            predicted_bytes=predicted * k,
            peak_bytes=predicted * k,
            peak_bytes_source="predicted",
            steps_per_call=k,
            finite=True,
            deviation_vs_float32=self._deviation_of(request),
            **base,
        )

    def _gpu(
        self, request: MeasureRequest, base: dict, factor: float, first: bool, peak: int
    ) -> Measurement:
        """A GPU configuration's figures (:func:`gpu_times`, times ``factor``: the jitter,
        slowdown and drift the CPU's get); ``first``: the process's first on the GPU."""
        c, settings = request.config, request.settings
        times = gpu_times(c.batch_size, c.precision, request.steps_per_call, self.sample_bytes,
                          c.device_count)  # fmt: skip
        step, put, fed, prefetch = (times[x] * factor for x in ("step", "put", "fed", "prefetch"))
        chunks = 5 if settings.time_cap_s > 0 else 1
        timed = settings.prefetch_time_cap_s > 0
        return Measurement(
            status="ok",
            reason="",
            device_init_s=GPU_INIT if first else None,
            batch_s=self._batch_s,
            lower_s=0.05,
            compile_s=self._compile_s(request) if self._compile_s else GPU_COMPILE,
            first_call_s=0.04,
            loops={
                "step": LoopFigures(step, 0.01, (step,) * chunks, chunks),
                "fed": LoopFigures(fed, 0.01),
                **({"prefetch": LoopFigures(prefetch, 0.01)} if timed else {}),
            },
            transfer_s=put,
            batch_bytes=round(times["bytes"]),
            predicted_bytes=peak,
            peak_bytes=peak // c.device_count,
            peak_bytes_source="measured",
            reduced_bytes=round(GRAD_BYTES * (1 if c.precision == "float32" else 0.5))
            if c.device_count > 1
            else None,
            steps_per_call=request.steps_per_call,
            finite=True,
            deviation_vs_float32=self._deviation_of(request),
            **{**base, "device_kind": GPU_KIND},
        )

    def _deviation_of(self, request: MeasureRequest) -> float | None:
        """The deviation from float32 when the request asks for one (0 for float32)."""
        if not request.settings.deviation:
            return None
        if request.config.precision == "float32":
            return 0.0
        return self._deviation(request) if self._deviation else 0.001

    def measure_together(
        self, requests: list[MeasureRequest], on_progress: object = None
    ) -> list[Measurement]:
        """Each fed loop timed in ``TURNS`` turns: a drift common to the group (what
        timing in turns cancels) times a jitter of +-``turn_noise`` of each own."""
        return self._together(requests, fresh=False)

    def measure_fresh(
        self, requests: list[MeasureRequest], on_progress: object = None
    ) -> list[Measurement]:
        """As :meth:`measure_together`, each configuration as in a fresh process."""
        return self._together(requests, fresh=True)

    def _together(self, requests: list[MeasureRequest], fresh: bool) -> list[Measurement]:
        self.groups.append([r.config for r in requests])
        if fresh:
            self.fresh_groups.append([r.config for r in requests])
            if _verdict_window(requests):
                self.windows.append([r.config for r in requests])
        n, group = len(requests), f"group-{len(self.groups)}"
        gpus = sum(r.config.device.startswith("gpu") for r in requests)
        out = []
        for r in requests:
            self._drift = self._group_drift(len(self.groups)) if self._group_drift else 1.0
            started = set(self._started)
            m = self.measure(r)  # a subclass's own measure too
            self._drift = 1.0
            if fresh:  # a process of its own: the shared worker's GPUs are as they were
                self._started = started
                if m.device.startswith("gpu") and m.status == "ok":
                    m = dataclasses.replace(m, device_init_s=GPU_INIT)
            if self.side_by_side and gpus > 1 and m.device.startswith("gpu") and m.compile_s:
                m = dataclasses.replace(m, compile_s=m.compile_s * SIDE_BY_SIDE * (gpus - 1))
            if m.status != "ok":
                out.append(dataclasses.replace(m, interleaved_with=n - 1, interleave_id=group))
                continue
            own = 1.0 + self.window_noise * _unit(m, -1, len(self.groups))
            if fresh and self._fresh is not None:
                own *= self._fresh(r)
            chunks = tuple(
                m.fed.step_s  # type: ignore[operator]
                * own
                * (1.0 + 0.3 * (j % 3 - 1))
                * (1.0 + self.turn_noise * _unit(m, j, len(self.groups)))
                for j in range(TURNS)
            )
            median = statistics.median(chunks)
            q1, _, q3 = statistics.quantiles(chunks, n=4)
            out.append(
                dataclasses.replace(
                    m.with_loop("fed", LoopFigures(median, (q3 - q1) / median, chunks)),
                    interleaved_with=n - 1,
                    interleave_id=group,
                    fresh_process=fresh,
                    environment=tuple(f"{k}={v}" for k, v in r.env),
                    machine=MachineFigures(
                        page_faults_per_step=self._faults(r) if self._faults else None
                    ),
                )
            )
        return out

    def close(self) -> None:
        pass


def _unit(m: Measurement, turn: int, call: int) -> float:
    """A fixed pseudo-random number in [-1, 1] for a configuration, a turn and a call."""
    key = f"{m.device} {m.batch_size} {m.precision} {m.width} {turn} {call}".encode()
    return int(hashlib.sha1(key).hexdigest()[:4], 16) / 65535 * 2 - 1


def best_by_formula(configs, objective) -> Measurement:
    """The true optimum over ``configs`` under the synthetic model (without jitter)."""
    backend = SyntheticBackend(devices=tuple(dict.fromkeys(c.device for c in configs)))
    scored = []
    for c in configs:
        req = MeasureRequest("x.py", "0", "synthetic", c)
        m = dataclasses.replace(backend.measure(req))
        scored.append((objective.score(m), m))
    return max(scored, key=lambda s: objective.key(s[0]))[1]


def shape(peaks: dict[int, float]):
    """A throughput curve over log2(batch): straight lines between the given points."""
    xs = sorted(peaks)

    def curve(c: Config) -> float:
        b = c.batch_size
        lo = max((x for x in xs if x <= b), default=xs[0])
        hi = min((x for x in xs if x >= b), default=xs[-1])
        if lo == hi:
            return peaks[lo]
        t = (math.log2(b) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
        return peaks[lo] + t * (peaks[hi] - peaks[lo])

    return curve


#: Curves a one-peak search is fooled by, and the batch each peaks at. Throughput, in
#: units of the best: a search must find the exact best batch of each.
SHAPES = {
    "two peaks, the small one higher": ({1: 0.3, 16: 1.0, 128: 0.5, 1024: 0.9, 4096: 0.4}, 16),
    "two peaks, the large one higher": ({1: 0.3, 8: 0.85, 64: 0.4, 1024: 1.0, 4096: 0.6}, 1024),
    "an early peak falling away": ({1: 0.4, 16: 1.0, 32: 0.98, 256: 0.5, 4096: 0.2}, 16),
    "a plateau": ({1: 0.2, 64: 1.0, 1024: 1.0, 4096: 0.7}, None),
    "a cliff after the best": ({1: 0.1, 512: 1.0, 1024: 0.45, 4096: 0.4}, 512),
    "the best at the smallest batch": ({1: 1.0, 4096: 0.2}, 1),
    "the best at the largest batch": ({1: 0.01, 4096: 1.0}, 4096),
    "a dip in the middle": ({1: 0.5, 4: 0.95, 32: 0.5, 256: 0.6, 2048: 1.0, 4096: 0.97}, 2048),
}


def shaped(points: dict[int, float]) -> Callable[[MeasureRequest], float]:
    """A ``slowdown`` that gives the synthetic backend the throughput curve ``points``
    (see :func:`shape`) at every device and precision."""
    curve = shape(points)

    def slowdown(request: MeasureRequest) -> float:
        c = request.config
        return c.batch_size / curve(c) / step_time(c.device, c.batch_size, c.precision) * 1e-6

    return slowdown


def _verdict_window(requests: list[MeasureRequest]) -> bool:
    """Whether a fresh call is one of the verdict's windows (see ``windows``)."""
    return all(
        r.settings.prefetch_time_cap_s == 0 and r.steps_per_call == 1 and not r.env
        for r in requests
    )


_POSITIONAL = ("status", "reason", "device", "batch_size", "precision", "width")


def measured(*args: object, **flat: object) -> Measurement:
    """A measurement written flat, as a test lists its figures: ``measured("ok", "",
    "cpu:0", 8, "float32", None, fed_step_s=0.01, page_faults_per_step=9000.0)`` (each
    loop's figures by their old prefixes, the machine's by name), read the way a study
    written before measurements were kept by concept is read."""
    fields = {**dict(zip(_POSITIONAL, args, strict=False)), **flat}
    fields.setdefault("width", None)
    return Measurement.from_dict(fields)
