"""The value :func:`autoplace.recommend` returns, and what a launcher does with it."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Literal

from autoplace import units
from autoplace.devices import device_names
from autoplace.errors import BadInputError

#: Where an answer came from: this machine's cache, a shared study, a tune just run, or
#: the fallback (nothing measured: see ``stale_reason`` for why).
Source = Literal["cache", "study", "tuned", "fallback"]


#: The least gain of two puts in flight over a put before each step at which a launcher is
#: told to prefetch: 5% ahead, as a tune's steps per call are recommended on the estimate.
PREFETCH_HELPS = 1.05


@dataclasses.dataclass(frozen=True)
class Recommendation:
    """Where to run, at what batch size and precision, and how sure that is.

    Attributes:
        device, batch_size, precision, width: what to run (``width`` is ``None`` for a
            model without widths). ``device`` may name several devices used together
            (``gpu:0-3``): ``batch_size`` is then the global batch, split evenly across
            them (:attr:`per_device_batch`); :meth:`mesh` and :meth:`sharding` put it there.
        source: ``cache``, ``study``, ``tuned`` or ``fallback``.
        key: the cache slot it was found under (``autoplace cache list`` shows it).
        objective, unit: what ``score`` measures (``throughput`` in samples/s, ...).
        score, step_s, compile_s, peak_bytes: the expected score, steady-state seconds per
            step, one-off lowering + compile seconds and peak device memory, as measured
            (``None`` for a fallback).
        ratio, low, high: how many times as fast as the runner-up it ran in their windows,
            and that ratio's 95% interval; ``None`` when there was none, or the caller's
            limits moved the pick away from the measured winner.
        verdict: what that comparison concluded (``faster``: in every window, beyond the
            machine's resolution; ``within``: they cannot be told apart here; ``slower``),
            or ``None`` with the ratio.
        confirmed: whether it was measured again with the other finalists, in turns.
        measured_at: when the answer was measured (UTC).
        stale_reason: why it is not an exact match (``"jaxlib 0.7.0 → 0.7.1"``, ``"model
            file changed ..."``, an age over ``max_age``), or ``None`` when it is.
        why: the one-line reason the winner wins, from the explanation.
        limits: how the caller's limits were applied (the memory margin's arithmetic, a
            batch-size cap, a numeric tolerance), one line each.
        study: the study that measured it.
        steps_per_call: steps to run in one jitted call (``autoplace.fuse(step, k)`` over
            ``k`` stacked batches): more than one where the tune timed it faster than one
            a call beyond doubt or 5% ahead on the estimate, else 1.
        verdict: see ``ratio``.
        prefetch_gain: how many times faster the pick's steps ran with two puts in flight
            (:func:`autoplace.prefetch`) than with a put before each, in the tune's feeding
            windows; ``None``: not timed. ``prefetch`` says whether to use it.
    """

    device: str
    batch_size: int
    precision: str
    width: int | None
    source: Source
    key: str
    objective: str
    unit: str | None = None
    score: float | None = None
    step_s: float | None = None
    compile_s: float | None = None
    peak_bytes: int | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    confirmed: bool = False
    measured_at: dt.datetime | None = None
    stale_reason: str | None = None
    why: str = ""
    limits: tuple[str, ...] = ()
    study: str | None = None
    steps_per_call: int = 1
    verdict: str | None = None
    prefetch_gain: float | None = None

    @property
    def devices(self) -> list[str]:
        """Each device to use (``["gpu:0", "gpu:1"]``; one for a single device)."""
        return device_names(self.device)

    @property
    def device_count(self) -> int:
        return len(self.devices)

    @property
    def per_device_batch(self) -> int:
        """Each device's share of :attr:`batch_size`."""
        return self.batch_size // self.device_count

    @property
    def paced(self) -> bool:
        """Whether a training loop must keep at most two steps in flight (block on every
        second step's output), as the tune timed it: over several CPU devices, XLA's CPU
        all-reduce deadlocks with more queued (see ``autoplace.measuring._placement``)."""
        return self.device_count > 1 and self.device.startswith("cpu")

    @property
    def margin(self) -> float | None:
        """How far it beat the runner-up, a fraction (``ratio - 1``)."""
        return None if self.ratio is None else self.ratio - 1

    @property
    def prefetch(self) -> bool:
        """Whether to feed the steps with :func:`autoplace.prefetch`: the tune timed them
        at least :data:`PREFETCH_HELPS` times as fast with two puts in flight as with a put
        before each."""
        return self.prefetch_gain is not None and self.prefetch_gain >= PREFETCH_HELPS

    @property
    def exact(self) -> bool:
        """Measured for exactly this machine, software, model and objective."""
        return self.source != "fallback" and self.stale_reason is None

    def jax_device(self) -> Any:
        """The (first) ``jax.Device`` to run on (imports JAX)."""
        return self.jax_devices()[0]

    def jax_devices(self) -> list[Any]:
        """The ``jax.Device``s to run on, in order (imports JAX)."""
        import jax

        platform = self.device.partition(":")[0]
        found = jax.devices(platform)
        indices = [int(name.partition(":")[2]) for name in self.devices]
        if indices[-1] >= len(found):
            raise BadInputError(
                f"the recommendation uses {self.device}, but this process sees {len(found)} "
                f"{platform} device(s): run it where the tune ran, or tune here"
            )
        return [found[i] for i in indices]

    def mesh(self) -> Any:
        """A 1-D mesh over :meth:`jax_devices`, its axis named ``batch`` (imports JAX)."""
        import jax

        return jax.make_mesh((self.device_count,), ("batch",), devices=self.jax_devices())

    def sharding(self, steps_per_call: int = 1) -> Any:
        """Where a batch goes: split along its leading axis over :meth:`mesh`, as the tune
        timed it (``jax.device_put(batch, rec.sharding())``, or
        ``autoplace.prefetch(batches, rec.sharding())``); with ``steps_per_call`` over one,
        of ``autoplace.stack``'s stacked batches, split along their second axis. On one
        device, that device's sharding: the same lines run there."""
        from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

        if self.device_count == 1:
            return SingleDeviceSharding(self.jax_device())
        split = PartitionSpec("batch") if steps_per_call == 1 else PartitionSpec(None, "batch")
        return NamedSharding(self.mesh(), split)

    def replicated(self) -> Any:
        """Where the state goes: a copy on every device of :meth:`mesh` (on one device,
        that device's sharding); also what ``jax.jit``'s ``out_shardings`` keeps it as."""
        from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

        if self.device_count == 1:
            return SingleDeviceSharding(self.jax_device())
        return NamedSharding(self.mesh(), PartitionSpec())

    def dtype(self) -> Any:
        """The precision as a JAX dtype (``jnp.bfloat16``; imports JAX)."""
        import jax.numpy as jnp

        return jnp.dtype(self.precision)

    def log_line(self) -> str:
        """One line for a launcher's log: what, from where, how sure, and why."""
        what = f"{self.device}, batch {self.batch_size}, {self.precision}"
        if self.device_count > 1:
            what = (
                f"{self.device} ({self.device_count} devices), batch {self.batch_size} "
                f"({self.per_device_batch} a device), {self.precision}"
            )
        if self.width is not None:
            what += f", width {self.width}"
        if self.steps_per_call > 1:
            what += f", {self.steps_per_call} steps a call"
        if self.prefetch:
            what += f", batches prefetched ({self.prefetch_gain:.2f}x)"
        if self.source == "fallback":
            return f"autoplace: {what} (fallback, nothing measured: {self.stale_reason})"
        when = self.measured_at.strftime("%Y-%m-%d %H:%M UTC") if self.measured_at else "?"
        parts = [f"{self.source}, measured {when}"]
        if self.score is not None and self.unit:
            parts.append(units.score(self.score, self.unit))
        if self.ratio is not None:
            parts.append(self._against_runner_up())
        if self.stale_reason:
            parts.append(f"stale: {self.stale_reason}")
        line = f"autoplace: {what} ({'; '.join(parts)})"
        return f"{line}. {self.why}" if self.why else line

    def _against_runner_up(self) -> str:
        """The runner-up as a ratio with its interval (as the tune said it), and what it
        means: a lead only where the windows showed one."""
        figure = units.ratio(self.ratio, self.low, self.high)  # type: ignore[arg-type]
        if self.verdict == "faster":
            return f"{figure} the runner-up, faster in every window"
        if self.verdict == "slower":
            return f"{figure} the runner-up, slower in every window"
        return f"{figure} the runner-up: cannot be told apart here"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``measured_at`` as ISO 8601)."""
        out = dataclasses.asdict(self)
        out["measured_at"] = self.measured_at.isoformat() if self.measured_at else None
        out["limits"] = list(self.limits)
        out["exact"] = self.exact
        out["device_count"] = self.device_count
        out["per_device_batch"] = self.per_device_batch
        return out

    def env(self) -> dict[str, str]:
        """``AUTOPLACE_DEVICE``, ``AUTOPLACE_DEVICE_COUNT``, ``AUTOPLACE_BATCH_SIZE`` (the
        global batch), ``AUTOPLACE_PER_DEVICE_BATCH``, ``AUTOPLACE_PRECISION``,
        ``AUTOPLACE_STEPS_PER_CALL``, ``AUTOPLACE_PREFETCH`` (and ``AUTOPLACE_WIDTH``,
        ``AUTOPLACE_SOURCE``) for shell launchers."""
        out = {
            "AUTOPLACE_DEVICE": self.device,
            "AUTOPLACE_DEVICE_COUNT": str(self.device_count),
            "AUTOPLACE_PER_DEVICE_BATCH": str(self.per_device_batch),
            "AUTOPLACE_BATCH_SIZE": str(self.batch_size),
            "AUTOPLACE_PRECISION": self.precision,
            "AUTOPLACE_STEPS_PER_CALL": str(self.steps_per_call),
            "AUTOPLACE_PREFETCH": "1" if self.prefetch else "0",
            "AUTOPLACE_SOURCE": self.source,
        }
        if self.width is not None:
            out["AUTOPLACE_WIDTH"] = str(self.width)
        return out
