"""Where a configuration runs: one device, or several with the batch split across them.

Several devices are a 1-D mesh (``jax.make_mesh``): the batch's leading axis sharded over
it (``NamedSharding(mesh, P("batch"))``), the state replicated, and XLA inserting the
reduction of a training step's gradients, as JAX's data-parallel guides do. The model file
stays as it is: its step is jitted over the shardings of its inputs.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from autoplace.devices import device_names

#: The mesh axis the batch is split along.
AXIS = "batch"


@dataclasses.dataclass(frozen=True)
class Placement:
    """The devices of one configuration, and where its state and batch are put.

    ``batch`` and ``state`` are what ``jax.device_put`` takes: the device itself when there
    is one, the shardings when there are several. ``steps_per_call`` over one: a batch
    holds that many steps' batches stacked along a new leading axis, and is split along
    its second."""

    devices: tuple[Any, ...]
    batch: Any
    state: Any

    @classmethod
    def of(cls, name: str, by_name: dict[str, Any], steps_per_call: int = 1) -> Placement:
        devices = tuple(by_name[n] for n in device_names(name))
        if len(devices) == 1:
            return cls(devices, devices[0], devices[0])
        mesh = jax.make_mesh((len(devices),), (AXIS,), devices=devices)
        split = PartitionSpec(AXIS) if steps_per_call == 1 else PartitionSpec(None, AXIS)
        return cls(devices, NamedSharding(mesh, split), NamedSharding(mesh, PartitionSpec()))

    @property
    def device(self) -> Any:
        """The first device: the one whose kind, memory and start-up stand for all of them
        (the mesh's devices are of one kind, each holding the state and its share)."""
        return self.devices[0]

    @property
    def several(self) -> bool:
        return len(self.devices) > 1

    @property
    def paced(self) -> bool:
        """Whether a loop of steps keeps at most two calls in flight (it waits for every
        second call's output: a training step donates its input, so not the one before).
        Over several CPU devices it must: XLA's CPU all-reduce meets every device's thread at
        a rendezvous, and with more calls queued some never arrive; JAX aborts the process
        after 40 s ("Termination timeout for all reduce": JAX 0.10, 2 to 8 devices on 2
        cores, within 500 steps; jax-ml/jax#25861 is a relative). A user's loop on such
        devices must do the same, and the timed loop times what it can run. GPUs'
        collectives have no such limit."""
        return self.several and self.device.platform == "cpu"

    def put_state(self, state: Any) -> Any:
        """A copy of ``state`` where it goes: the step donates it, and the built state is
        kept for the next configuration. (A replicated put may alias the shard on the
        device the state is on, whatever ``may_alias`` says: it goes by way of the host.)"""
        if self.several:
            return jax.device_put(jax.device_get(state), self.state)
        return jax.device_put(state, self.state, may_alias=False)

    def out_shardings(self, train: bool) -> Any:
        """What the jitted step is told of its output: a training step's next state stays
        replicated on every device (left to XLA, it could come back split); otherwise
        nothing."""
        return self.state if self.several and train else None


_REDUCE = re.compile(r"=\s*(\([^=]*?\)|\S+)\s+all-reduce(?:-start)?\(")
_SHAPE = re.compile(r"\b(pred|[suf]\d+|bf16)\[([\d,]*)\]")
_BITS = {"pred": 8, "bf16": 16}


def reduced_bytes(hlo: str) -> int:
    """The bytes each device all-reduces a step, read off the compiled program's text (the
    outputs of its ``all-reduce`` instructions): a data-parallel training step's gradients."""
    total = 0
    for shapes in _REDUCE.findall(hlo):
        for dtype, dims in _SHAPE.findall(shapes):
            n = 1
            for d in filter(None, dims.split(",")):
                n *= int(d)
            total += n * _BITS.get(dtype, int(dtype[1:] or 32)) // 8
    return total
