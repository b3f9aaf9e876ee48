"""One point of the search space: where, how many at once, in what precision, how wide."""

from __future__ import annotations

import dataclasses
import re

from autoplace.devices import canonical_platform
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

_DEVICE_RE = re.compile(r"^(?P<platform>[a-z]+)(?::(?P<index>\d+))?$")


def parse_precision(text: str) -> str:
    """Canonical precision name for ``text`` (``bf16`` -> ``bfloat16``)."""
    name = _PRECISION_ALIASES.get(text.strip().lower())
    if name is None:
        raise BadInputError(
            f"unknown precision {text!r}: use one of {', '.join(PRECISIONS)} (or fp32, bf16, fp16)"
        )
    return name


def parse_device(text: str) -> str:
    """Canonical device name: ``platform:index`` (``cpu`` -> ``cpu:0``, ``cuda:1`` -> ``gpu:1``).

    Only the syntax is checked here; whether the device exists is checked against
    the devices the worker sees.
    """
    match = _DEVICE_RE.match(text.strip().lower())
    if match is None:
        raise BadInputError(
            f"bad device {text!r}: write it as PLATFORM or PLATFORM:INDEX, e.g. cpu, gpu:0"
        )
    return f"{canonical_platform(match['platform'])}:{int(match['index'] or 0)}"


def check_batch_size(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInputError(f"batch size must be a whole number of at least 1, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True, order=True)
class Config:
    """A configuration to measure. ``width`` of ``None`` means the workload's default."""

    device: str
    batch_size: int
    precision: str = "float32"
    width: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", parse_device(self.device))
        object.__setattr__(self, "precision", parse_precision(self.precision))
        check_batch_size(self.batch_size)
        if self.width is not None and (
            isinstance(self.width, bool) or not isinstance(self.width, int) or self.width < 1
        ):
            raise BadInputError(f"width must be a whole number of at least 1, got {self.width!r}")

    @property
    def arm(self) -> Arm:
        """Its device, precision and width: the axes its batch sizes share."""
        return (self.device, self.precision, self.width)

    def label(self) -> str:
        width = "" if self.width is None else f" width={self.width}"
        return f"{self.device} batch={self.batch_size} {self.precision}{width}"
