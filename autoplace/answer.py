"""A tune's answer, compact and typed: what a study keeps and ``autoplace.recommend`` caches.

Enough for a launcher to honour its own limits (a batch cap, a memory margin, a numeric
tolerance) without measuring again: the pick with its margin and every ranked
configuration with its figures. Stored as JSON (:meth:`Answer.as_dict`), versioned by
:data:`ANSWER_SCHEMA`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any, TypeVar

from autoplace.devices import device_names

_T = TypeVar("_T", "Candidate", "Compared")

#: The answer's version, part of the software an answer holds for (3: ``question``, the
#: workload's default batch sizes, comparisons as a ratio and its interval).
ANSWER_SCHEMA = 3


@dataclasses.dataclass(frozen=True)
class Question:
    """What a tune searched, and so what its answer holds for: the devices, batch sizes,
    precisions, widths and steps per call beside one it tried, how its steps were fed, and
    the memory it allowed (``None``: the device's). A tune narrowed to batch 32 does not
    answer what the best batch is (:meth:`narrower`).
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
        """What ``other`` asks that this question did not search, in words (none: it answers)."""
        out = []
        for name in ("devices", "batch_sizes", "precisions", "widths", "steps_per_call"):
            mine, theirs = getattr(self, name), getattr(other, name)
            missing = [v for v in theirs if v not in mine]
            if missing:
                shown = ",".join(str(v) for v in mine) or "1"
                said = name.replace("_", " ")
                out.append(f"{said} {shown} (not {','.join(map(str, missing))})")
        if self.feeding != other.feeding:
            out.append(f"feeding {self.feeding} (not {other.feeding})")
        if self.max_memory is not None and (
            other.max_memory is None or other.max_memory > self.max_memory
        ):
            out.append(f"at most {self.max_memory} bytes of memory")
        return out

    def holds(self, c: Candidate) -> bool:
        """Whether this question asks about ``c`` (its batch sizes are each device's)."""
        share = c.batch_size // len(device_names(c.device))  # each device's batch
        return (
            c.device in self.devices
            and share in self.batch_sizes
            and c.precision in self.precisions
            and (None in self.widths or c.width in self.widths)
        )

    @property
    def key(self) -> str:
        """A short name of this question (a study keeps each question's answer under it)."""
        text = json.dumps(self.as_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def as_dict(self) -> dict[str, object]:
        return _listed(self)

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
    #: Steps to run in one call (``autoplace.fuse``; the pick only); ``peak_bytes`` the call's.
    steps_per_call: int = 1
    #: How many times faster the pick's steps ran prefetched than put first (``None``: not
    #: timed).
    prefetch_gain: float | None = None

    @property
    def arm(self) -> tuple[str, str, int | None]:
        return (self.device, self.precision, self.width)


@dataclasses.dataclass(frozen=True)
class Compared:
    """A configuration compared with the pick: how many times better the pick is, its 95%
    interval and verdict (``faster``, ``within`` or ``slower``) over ``windows`` windows."""

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
    """What was tuned: the model file and its hash, the workload, the widths searched, the
    default width and the batch sizes a tune tries by default."""

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

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "direction": self.direction, "unit": self.unit, **self.run}


@dataclasses.dataclass(frozen=True)
class Answer:
    """A finished tune's answer: what was tuned for what, on which hardware and software,
    in which study; the explanation's first sentences (``why``), the pick against its
    closest and those it could not be told apart from, the findings, every ranked
    configuration (the pick first), and the ``question`` it answers (``None``: an old
    answer, which answers none for sure).
    """

    schema: int
    created: str | None
    workload: AnswerWorkload
    objective: AnswerObjective
    hardware: Mapping[str, object]
    measured_on: str | None
    software: Mapping[str, object]
    study: str | None
    storage: str | None
    device_memory: Mapping[str, int | None]
    why: tuple[str, ...]
    closest: Compared | None
    equivalent: tuple[Compared, ...]
    findings: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    question: Question | None = None

    def as_dict(self) -> dict[str, object]:
        """The JSON form a study attribute and the cache keep."""
        return {
            "answer_schema": self.schema,
            "created": self.created,
            "workload": _listed(self.workload),
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
        """An answer read back from its JSON form; :class:`ValueError` if it is not one."""
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


def _listed(value: Question | AnswerWorkload) -> dict[str, object]:
    """A dataclass's fields, its tuples as lists (as JSON keeps them)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(value).items()}


def _typed(kind: type[_T], data: Mapping[str, Any]) -> _T:
    """``kind`` from a mapping, its device, precision and batch size checked; unknown fields
    left out, missing ones ``None``."""
    values: dict[str, Any] = {f.name: data.get(f.name) for f in dataclasses.fields(kind)}
    if not isinstance(values["device"], str) or not isinstance(values["precision"], str):
        raise ValueError(f"a configuration without its device or precision: {dict(data)}")
    batch = values["batch_size"]
    if isinstance(batch, bool) or not isinstance(batch, int):
        raise ValueError(f"a configuration whose batch size is not a whole number: {batch!r}")
    if "confirmed" in values:
        values["confirmed"] = bool(values["confirmed"])
    if "steps_per_call" in values:  # older answers: one
        k = values["steps_per_call"]
        values["steps_per_call"] = 1 if k is None else int(k)
    return kind(**values)
