"""One point of the search space: where, how many at once, in what precision, how wide."""

from __future__ import annotations

import dataclasses
import re

from autoplace.devices import canonical_platform, device_group, device_names
from autoplace.errors import BadInputError

#: The precisions autoplace knows, fastest-to-emulate last.
PRECISIONS: tuple[str, ...] = ("float32", "bfloat16", "float16")
#: Bytes per element of each precision.
PRECISION_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2, "float16": 2}
#: An arm: (device, precision, width), every axis of a :class:`Config` but the batch size.
#: A cost line runs along one arm's batch sizes.
Arm = tuple[str, str, "int | None"]

_PRECISION_ALIASES = {
    "fp32": "float32",
    "f32": "float32",
    "float32": "float32",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "float16": "float16",
}

_DEVICE_RE = re.compile(r"^(?P<platform>[a-z]+)(?::(?P<index>\d+)(?:-(?P<last>\d+))?)?$")


def parse_precision(text: str) -> str:
    """Canonical precision name for ``text`` (``bf16`` -> ``bfloat16``)."""
    name = _PRECISION_ALIASES.get(text.strip().lower())
    if name is None:
        raise BadInputError(
            f"unknown precision {text!r}: use one of {', '.join(PRECISIONS)} (or fp32, bf16, fp16)"
        )
    return name


def parse_device(text: str) -> str:
    """Canonical name of one device, ``platform:index`` (``cpu`` -> ``cpu:0``, ``cuda:1`` ->
    ``gpu:1``), or of several used together, ``platform:first-last`` (``gpu:0-3``: four, the
    batch split across them).

    Only the syntax is checked here; whether the devices exist is checked against
    the devices the worker sees.
    """
    match = _DEVICE_RE.match(text.strip().lower())
    first = int(match["index"] or 0) if match else 0
    last = int(match["last"]) if match and match["last"] is not None else first
    if match is None or last < first:
        raise BadInputError(
            f"bad device {text!r}: write it as PLATFORM, PLATFORM:INDEX or, for several used "
            "together, PLATFORM:FIRST-LAST, e.g. cpu, gpu:0, gpu:0-3"
        )
    return device_group(f"{canonical_platform(match['platform'])}:{first}", last - first + 1)


def check_batch_size(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInputError(f"batch size must be a whole number of at least 1, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True, order=True)
class Config:
    """A configuration to measure. ``width`` of ``None`` means the workload's default.

    ``device`` names one device (``gpu:0``) or several used together (``gpu:0-3``): then
    ``batch_size`` is the global batch, split evenly across them (its leading axis sharded
    over a 1-D mesh, the state replicated), and :attr:`per_device_batch` each one's share.
    """

    device: str
    batch_size: int
    precision: str = "float32"
    width: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", parse_device(self.device))
        object.__setattr__(self, "precision", parse_precision(self.precision))
        check_batch_size(self.batch_size)
        if self.batch_size % self.device_count:
            raise BadInputError(
                f"batch size {self.batch_size} does not split across the {self.device_count} "
                f"devices of {self.device}: give a multiple of {self.device_count}"
            )
        if self.width is not None and (
            isinstance(self.width, bool) or not isinstance(self.width, int) or self.width < 1
        ):
            raise BadInputError(f"width must be a whole number of at least 1, got {self.width!r}")

    @property
    def arm(self) -> Arm:
        """Its device, precision and width: the axes its batch sizes share."""
        return (self.device, self.precision, self.width)

    @property
    def device_count(self) -> int:
        """How many devices the batch is split across (1: one device)."""
        span = self.device.partition(":")[2]
        first, _, last = span.partition("-")
        return int(last) - int(first) + 1 if last else 1

    @property
    def per_device_batch(self) -> int:
        """Each device's share of the batch (the batch itself on one device)."""
        return self.batch_size // self.device_count

    def label(self) -> str:
        width = "" if self.width is None else f" width={self.width}"
        split = f" ({self.per_device_batch} a device)" if self.device_count > 1 else ""
        return f"{self.device} batch={self.batch_size}{split} {self.precision}{width}"


def config_at(arm: Arm, per_device_batch: int) -> Config:
    """The configuration of ``arm`` whose devices each take ``per_device_batch`` samples."""
    device, precision, width = arm
    count = len(device_names(device))
    return Config(device, per_device_batch * count, precision, width)
