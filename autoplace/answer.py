"""A tune's answer, compact and typed: what a study keeps and ``autoplace.recommend`` caches.

The recommendation file holds the whole evidence; a launcher needs less, but enough to
honour its own limits (a batch-size cap, a memory margin, a numeric tolerance) without
measuring again: the pick with its margin, and every ranked configuration with the
figures those limits are checked against. :class:`Answer` is that value. It crosses
three packages (the tuner builds it, a study keeps it, a look-up reads it), and is
stored as JSON (:meth:`Answer.as_dict`), versioned by
:data:`ANSWER_SCHEMA`; :meth:`Answer.from_dict` reads one back and
raises :class:`ValueError` on anything that is not one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from autoplace.devices import device_names

#: The version of the compact answer a finished tune leaves for ``autoplace.recommend``
#: (``autoplace.tuning._answer``): part of the software an answer holds for. Version 2:
#: ``closest`` (with its ratio, interval and verdict) and ``equivalent`` for ``runner_up``.
#: Version 3: ``question`` (what the tune searched) and the workload's default batch sizes;
#: comparisons as a ratio and its interval (``within`` for what cannot be told apart).
ANSWER_SCHEMA = 3


@dataclasses.dataclass(frozen=True)
class Question:
    """What a tune searched, and so what its answer holds for: the devices, batch sizes,
    precisions and widths it tried, the steps per call it could time beside one (none: it
    never fused steps), how its steps were fed, and the memory it allowed a configuration
    (``None``: the device's). An answer answers a question only if its own covers it
    (:meth:`covers`): a tune narrowed to batch 32 does not answer what the best batch is.
    """

    devices: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    precisions: tuple[str, ...]
    widths: tuple[int | None, ...]
    steps_per_call: tuple[int, ...] = ()
    feeding: str = "put"
    max_memory: int | None = None

    def __post_init__(self) -> None:
        for name in ("devices", "batch_sizes", "precisions", "widths"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(
            self, "steps_per_call", tuple(sorted({k for k in self.steps_per_call if k > 1}))
        )

    def narrower(self, other: Question) -> list[str]:
        """What ``other`` asks that this question did not search, in words (none: this one
        covers it)."""
        out = []
        for name, mine, theirs in (
            ("devices", self.devices, other.devices),
            ("batch sizes", self.batch_sizes, other.batch_sizes),
            ("precisions", self.precisions, other.precisions),
            ("widths", self.widths, other.widths),
            ("steps per call", self.steps_per_call, other.steps_per_call),
        ):
            missing = [v for v in theirs if v not in mine]
            if missing:
                shown = ",".join(str(v) for v in mine) or "1"
                out.append(f"{name} {shown} (not {','.join(map(str, missing))})")
        if self.feeding != other.feeding:
            out.append(f"feeding {self.feeding} (not {other.feeding})")
        if self.max_memory is not None and (
            other.max_memory is None or other.max_memory > self.max_memory
        ):
            out.append(f"at most {self.max_memory} bytes of memory")
        return out

    def holds(self, c: Candidate) -> bool:
        """Whether the configuration ``c`` is one this question asks about (its batch
        sizes are each device's, as the search's are)."""
        share = c.batch_size // len(device_names(c.device))  # each device's batch
        return (
            c.device in self.devices
            and share in self.batch_sizes
            and c.precision in self.precisions
            and (None in self.widths or c.width in self.widths)
        )

    def covers(self, other: Question) -> bool:
        """Whether an answer to this question answers ``other``: it searched everything
        ``other`` asks (devices, batch sizes, precisions, widths, steps per call), fed alike,
        and allowed at least the memory ``other`` allows."""
        return not self.narrower(other)

    @property
    def key(self) -> str:
        """A short name of this question (a study keeps each question's answer under it)."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def as_dict(self) -> dict[str, Any]:
        return {
            "devices": list(self.devices),
            "batch_sizes": list(self.batch_sizes),
            "precisions": list(self.precisions),
            "widths": list(self.widths),
            "steps_per_call": list(self.steps_per_call),
            "feeding": self.feeding,
            "max_memory": self.max_memory,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Question:
        return cls(
            devices=tuple(data["devices"]),
            batch_sizes=tuple(int(b) for b in data["batch_sizes"]),
            precisions=tuple(data["precisions"]),
            widths=tuple(data.get("widths") or (None,)),
            steps_per_call=tuple(int(k) for k in data.get("steps_per_call") or ()),
            feeding=str(data.get("feeding") or "put"),
            max_memory=data.get("max_memory"),
        )


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A ranked configuration, with the figures a caller's limits are checked against."""

    device: str
    batch_size: int
    precision: str
    width: int | None
    score: float | None
    confirmed: bool
    step_s: float | None
    fed_step_s: float | None
    #: Lowering plus XLA's compile, in seconds.
    compile_s: float | None
    peak_bytes: int | None
    #: ``measured`` or ``predicted`` (by XLA).
    peak_bytes_source: str | None
    deviation_vs_float32: float | None
    #: Steps to run in one call (``autoplace.fuse``): more than one only for the pick, when
    #: its windows showed it faster (beyond doubt, or 5% ahead on the estimate);
    #: ``peak_bytes`` is then that call's.
    steps_per_call: int = 1
    #: How many times faster its steps ran with two puts kept in flight
    #: (:func:`autoplace.prefetch`) than with a put before each, in the tune's feeding
    #: windows (the pick's; ``None``: not timed there).
    prefetch_gain: float | None = None

    @property
    def arm(self) -> tuple[str, str, int | None]:
        """Its device, precision and width: what its batch sizes share."""
        return (self.device, self.precision, self.width)


@dataclasses.dataclass(frozen=True)
class Compared:
    """A configuration compared with the pick: how many times better the pick is, with its
    95% interval and the verdict (``faster``, ``within``: cannot be told apart here,
    ``slower``; see ``autoplace.tuning``'s comparisons), over ``windows`` windows."""

    device: str
    batch_size: int
    precision: str
    width: int | None
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str | None
    windows: int | None


@dataclasses.dataclass(frozen=True)
class AnswerWorkload:
    """What was tuned: the model file (path and content hash), the workload, the widths
    searched, the file's default width and the batch sizes a tune tries by default (the
    file's, else autoplace's; 1 for latency): what a launcher's question asks."""

    path: str
    sha256: str
    name: str | None
    widths: tuple[int, ...]
    default_width: int | None
    batch_sizes: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class AnswerObjective:
    """What "best" meant: the objective's name, direction, unit and run length."""

    name: str
    direction: str | None
    unit: str | None
    run: Mapping[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "direction": self.direction, "unit": self.unit, **self.run}


@dataclasses.dataclass(frozen=True)
class Answer:
    """A finished tune's answer (see the module docstring).

    Attributes:
        schema: the answer schema it was written with.
        created: when the tune wrote it (ISO 8601, UTC).
        workload, objective: what was tuned, and for what.
        hardware: the machine's hardware key (no host name); ``measured_on`` the host.
        software: jax, jaxlib and the schemas.
        study, storage: the study's name and its storage (without credentials).
        device_memory: each device's memory in bytes (``None``: unknown).
        why: the explanation's first sentences.
        closest: the pick against its closest configuration; ``equivalent`` those it could
            not be told apart from.
        findings: the findings, one line each.
        candidates: every ranked configuration, best first (the pick first).
        question: what the tune searched (``None``: an answer from before it was kept,
            which answers no question for sure).
    """

    schema: int
    created: str | None
    workload: AnswerWorkload
    objective: AnswerObjective
    hardware: Mapping[str, Any]
    measured_on: str | None
    software: Mapping[str, Any]
    study: str | None
    storage: str | None
    device_memory: Mapping[str, int | None]
    why: tuple[str, ...]
    closest: Compared | None
    equivalent: tuple[Compared, ...]
    findings: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    question: Question | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form a study attribute and the cache keep."""
        return {
            "answer_schema": self.schema,
            "created": self.created,
            "workload": {
                **dataclasses.asdict(self.workload),
                "widths": list(self.workload.widths),
                "batch_sizes": list(self.workload.batch_sizes),
            },
            "objective": self.objective.as_dict(),
            "hardware": dict(self.hardware),
            "measured_on": self.measured_on,
            "software": dict(self.software),
            "study": {"name": self.study, "storage": self.storage},
            "device_memory": dict(self.device_memory),
            "why": list(self.why),
            "closest": None if self.closest is None else dataclasses.asdict(self.closest),
            "equivalent": [dataclasses.asdict(e) for e in self.equivalent],
            "findings": list(self.findings),
            "candidates": [dataclasses.asdict(c) for c in self.candidates],
            "question": None if self.question is None else self.question.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Answer:
        """An answer read back from its JSON form. Raises :class:`ValueError` when ``data``
        is not one (a damaged cache file, another program's attribute)."""
        try:
            wl, obj = data["workload"], dict(data["objective"])
            study = data.get("study") or {}
            closest = data.get("closest")
            return cls(
                schema=int(data["answer_schema"]),
                created=data.get("created"),
                workload=AnswerWorkload(
                    path=str(wl.get("path", "")),
                    sha256=str(wl["sha256"]),
                    name=wl.get("name"),
                    widths=tuple(wl.get("widths") or ()),
                    default_width=wl.get("default_width"),
                    batch_sizes=tuple(int(b) for b in wl.get("batch_sizes") or ()),
                ),
                objective=AnswerObjective(
                    name=str(obj.pop("name")),
                    direction=obj.pop("direction", None),
                    unit=obj.pop("unit", None),
                    run={k: v for k, v in obj.items() if k != "description"},
                ),
                hardware=dict(data.get("hardware") or {}),
                measured_on=data.get("measured_on"),
                software=dict(data.get("software") or {}),
                study=study.get("name"),
                storage=study.get("storage"),
                device_memory=dict(data.get("device_memory") or {}),
                why=tuple(data.get("why") or ()),
                closest=None if closest is None else _typed(Compared, closest),
                equivalent=tuple(_typed(Compared, e) for e in data.get("equivalent") or ()),
                findings=tuple(data.get("findings") or ()),
                candidates=tuple(_typed(Candidate, c) for c in data["candidates"]),
                question=None if not data.get("question") else Question.from_dict(data["question"]),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an autoplace answer: {exc!r}") from None


def _typed(kind: type, data: Mapping[str, Any]) -> Any:
    """``kind`` from a mapping: its required fields must be there (a batch size that is a
    whole number); fields it does not know are left out, missing optional ones are
    ``None``."""
    values = {f.name: data.get(f.name) for f in dataclasses.fields(kind)}
    if not isinstance(values["device"], str) or not isinstance(values["precision"], str):
        raise ValueError(f"a configuration without its device or precision: {dict(data)}")
    batch = values["batch_size"]
    if isinstance(batch, bool) or not isinstance(batch, int):
        raise ValueError(f"a configuration whose batch size is not a whole number: {batch!r}")
    if "confirmed" in values:
        values["confirmed"] = bool(values["confirmed"])
    if "steps_per_call" in values:  # answers kept before steps per call were timed: one
        k = values["steps_per_call"]
        values["steps_per_call"] = 1 if k is None else int(k)
    return kind(**values)
