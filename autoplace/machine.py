"""What the machine does while autoplace times: other processes' load, this process's memory.

Every timed chunk also samples, outside its timed region, the other runnable tasks
(``/proc/stat``), the CPU pressure (``/proc/pressure/cpu``), this process's CPU share, page
faults and resident memory. :class:`Interference` sums them up for a set of measurements
and says whether the machine was busy. JAX-free; Linux (elsewhere the figures are ``None``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from autoplace.measurement import MachineFigures, Measurement

#: Other runnable tasks per core above which the machine is busy: a step using every core
#: then loses a quarter of them. (CPU pressure is recorded, not judged: it counts the
#: measuring process's own threads waiting for each other.)
BUSY_RUNNABLE_PER_CORE = 0.5
#: Steps the later chunks must span before resident memory's growth is judged: a fresh
#: process fills its caches over its first hundreds of steps.
GROWTH_MIN_STEPS = 200


def cores() -> int:
    """The cores this process may run on (what XLA's CPU thread pool sizes itself by)."""
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _field(path: str, prefix: str, key: str = "") -> int | None:
    """The number after ``key`` on the line of ``path`` starting with ``prefix``."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(prefix):
            fields = line.split()
            if not key:
                return int(fields[1])
            return next((int(f[len(key) :]) for f in fields if f.startswith(key)), None)
    return None


def own_running_threads() -> int:
    """This process's threads running or runnable right now."""
    n = 0
    for stat in Path("/proc/self/task").glob("*/stat"):
        with contextlib.suppress(OSError, ValueError):
            text = stat.read_text()
            n += text[text.rindex(")") + 2] == "R"
    return n


def others_running() -> int | None:
    """Runnable tasks that are not this process's threads, right now."""
    total = _field("/proc/stat", "procs_running")
    return None if total is None else max(0, total - own_running_threads())


def pressure_us() -> int | None:
    """The kernel's running total of microseconds some task waited for a CPU."""
    return _field("/proc/pressure/cpu", "some", "total=")


def resident_bytes() -> int | None:
    """This process's resident memory."""
    with contextlib.suppress(OSError, IndexError):
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return None


def load_average() -> float | None:
    with contextlib.suppress(OSError):
        return os.getloadavg()[0]
    return None


@dataclasses.dataclass(slots=True)
class ChunkStats:
    """What one configuration's timed chunks saw, summed chunk by chunk (:meth:`around`)."""

    steps: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    #: (steps, page faults) of each chunk, in the order timed.
    faults: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    pressure_us: int = 0
    pressure_known: bool = True
    #: Other runnable tasks, sampled at the end of each chunk.
    others: list[int] = dataclasses.field(default_factory=list)
    #: (steps so far, resident bytes) at the end of each chunk.
    resident: list[tuple[int, int]] = dataclasses.field(default_factory=list)

    @contextlib.contextmanager
    def around(self, steps: int) -> Iterator[None]:
        """Count what happens while the block runs ``steps`` steps."""
        before = resource.getrusage(resource.RUSAGE_SELF)
        psi, t = pressure_us(), time.perf_counter()
        yield
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_SELF)
        psi_after = pressure_us()
        self.steps += steps
        self.wall_s += wall
        self.cpu_s += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        faults = after.ru_minflt - before.ru_minflt + after.ru_majflt - before.ru_majflt
        self.faults.append((steps, faults))
        if psi is None or psi_after is None:
            self.pressure_known = False
        else:
            self.pressure_us += psi_after - psi
        others = others_running()
        if others is not None:
            self.others.append(others)
        rss = resident_bytes()
        if rss is not None:
            self.resident.append((self.steps, rss))

    def figures(self) -> MachineFigures:
        if not self.steps or self.wall_s <= 0:
            return MachineFigures()
        return MachineFigures(
            others_running=sum(self.others) / len(self.others) if self.others else None,
            cpu_pressure=self.pressure_us / 1e6 / self.wall_s if self.pressure_known else None,
            cpu_share=self.cpu_s / (self.wall_s * cores()),
            page_faults_per_step=_later(self.faults),
            resident_bytes=self.resident[-1][1] if self.resident else None,
            resident_growth_per_step=_growth(self.resident),
        )


def _later(chunks: Sequence[tuple[int, int]]) -> float | None:
    """Page faults per step over the later half of the chunks (the first fill the caches)."""
    later = chunks[len(chunks) // 2 :]
    steps = sum(n for n, _ in later)
    return sum(f for _, f in later) / steps if steps else None


def _slope(points: Sequence[tuple[int, int]]) -> float | None:
    """Least-squares bytes per step through ``(steps, bytes)`` points."""
    if len(points) < 2 or points[-1][0] == points[0][0]:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else None


def _growth(points: Sequence[tuple[int, int]]) -> float | None:
    """Resident memory's growth per step over the later half of the chunks, where it spans
    :data:`GROWTH_MIN_STEPS` and holds up (a leak; caches still filling slow down: 0);
    ``None``: too few steps to tell."""
    later = list(points[len(points) // 2 :])
    if len(later) < 4 or later[-1][0] - later[0][0] < GROWTH_MIN_STEPS:
        return None
    slope = _slope(later)
    first, last = _slope(later[: len(later) // 2 + 1]), _slope(later[len(later) // 2 :])
    if slope is None or first is None or last is None:
        return None
    return slope if slope > 0 and last >= 0.5 * first else 0.0


@dataclasses.dataclass(frozen=True)
class Interference:
    """How busy the machine was while a set of measurements was timed.

    ``others_running``: other runnable tasks on average; ``cpu_pressure``: the share of the
    time some task waited for a CPU; ``cpu_share``: the measured process's CPU time over
    wall time x cores; ``load``: the 1-minute load average at the end; ``lock_waiters``:
    the most other autoplace processes seen waiting for the timing lock (they count in
    ``uptime``'s load but do not run meanwhile).
    """

    cores: int
    others_running: float | None
    cpu_pressure: float | None
    cpu_share: float | None
    load: float | None
    measurements: int
    lock_waiters: int | None = None

    @property
    def busy(self) -> bool:
        """Whether other processes competed for the cores enough to move the figures."""
        return (
            self.others_running is not None
            and self.others_running >= BUSY_RUNNABLE_PER_CORE * self.cores
        )

    def describe(self) -> str:
        """What was measured, as far as the machine says, in words."""
        parts = []
        if self.others_running is not None:
            parts.append(
                f"{self.others_running:.1f} other runnable processes on {self.cores} cores"
            )
        if self.cpu_pressure is not None:
            parts.append(f"some task waiting for a CPU {self.cpu_pressure:.0%} of the time")
        if self.load is not None:
            parts.append(f"load average {self.load:.1f}")
        if self.lock_waiters:
            parts.append(
                f"{self.lock_waiters} other autoplace process(es) waiting for their turn to "
                "time (counted in uptime's load average; not running while this one timed)"
            )
        return ", ".join(parts) or "no figures from this machine"

    def as_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "busy": self.busy}

    @classmethod
    def of(cls, measurements: Iterable[Measurement]) -> Interference | None:
        """The interference over ``measurements`` weighted alike; ``None`` when none has it."""
        rows = [m.machine for m in measurements if m.machine.others_running is not None]
        if not rows:
            return None

        def mean(name: str) -> float | None:
            values = [getattr(m, name) for m in rows if getattr(m, name) is not None]
            return sum(values) / len(values) if values else None

        waiters = [m.lock_waiters for m in rows if m.lock_waiters is not None]
        return cls(
            cores=cores(),
            others_running=mean("others_running"),
            cpu_pressure=mean("cpu_pressure"),
            cpu_share=mean("cpu_share"),
            load=load_average(),
            measurements=len(rows),
            lock_waiters=max(waiters, default=None),
        )


def sample(seconds: float = 1.0, every: float = 0.05) -> Interference:
    """How busy the machine is now, sampled for ``seconds`` by this idle process."""
    others: list[int] = []
    psi, t = pressure_us(), time.perf_counter()
    while time.perf_counter() < t + seconds:
        n = others_running()
        if n is not None:
            others.append(n)
        time.sleep(every)
    psi_after, wall = pressure_us(), time.perf_counter() - t
    return Interference(
        cores=cores(),
        others_running=sum(others) / len(others) if others else None,
        cpu_pressure=None if psi is None or psi_after is None else (psi_after - psi) / 1e6 / wall,
        cpu_share=None,
        load=load_average(),
        measurements=0,
    )
