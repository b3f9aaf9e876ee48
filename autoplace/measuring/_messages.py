"""What the caller and a measurement worker say to one another, one frozen value per message.

Each message crosses the worker's connection pickled, as it is: the caller
(:mod:`._worker`) and the worker's loop (:mod:`._serve`) agree by type, not by a
tuple's positions. Free of JAX: the caller imports it.

The caller asks (:data:`Request`):

* :class:`ListDevices`, :class:`Catalog`: what the worker sees;
* :class:`MeasureGroup`: a shared worker measures configurations together;
* :class:`Prepare`, :class:`Warm`, :class:`Chunk`, :class:`Finish`: a fresh worker sets up
  one configuration, whose loops the caller times chunk by chunk, and ends it;
* :class:`Exit`: the worker returns.

The worker answers each request once (:data:`Reply`), after any number of
:class:`Progressed` (each one a sign of life, see ``Worker.receive``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from autoplace.errors import AutoplaceError, BadInputError, ModelFileError, WorkerError

if TYPE_CHECKING:
    from autoplace.measurement import Measurement
    from autoplace.measuring._progress import Progress
    from autoplace.settings import MeasureRequest

#: Exceptions a worker may raise on purpose; they cross the process boundary by name.
PASSED_ERRORS: tuple[type[AutoplaceError], ...] = (BadInputError, ModelFileError)


# --- the caller's requests -------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ListDevices:
    """The devices the worker sees (answered once JAX is up: the worker has started)."""


@dataclasses.dataclass(frozen=True)
class Catalog:
    """The workloads of a model file."""

    model_file: str
    sha256: str


@dataclasses.dataclass(frozen=True)
class MeasureGroup:
    """Measure ``requests`` together in this worker (a shared worker's request)."""

    requests: list[MeasureRequest]


@dataclasses.dataclass(frozen=True)
class Prepare:
    """Set ``request``'s configuration up, to be timed chunk by chunk (a fresh worker's)."""

    request: MeasureRequest


@dataclasses.dataclass(frozen=True)
class Warm:
    """Warm the prepared configuration's ``loop`` (``step``, ``fed`` or ``prefetch``) up;
    answers one step's seconds."""

    loop: str


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Run ``steps`` steps of the prepared configuration's ``loop``; answers the seconds."""

    loop: str
    steps: int


@dataclasses.dataclass(frozen=True)
class Finish:
    """End the prepared configuration with the seconds per step of each timed chunk, per
    loop; ``together`` names the window, ``others`` its other configurations, ``timing_s``
    this one's share of the window's timing."""

    loops: dict[str, list[float]]
    together: str
    others: int
    timing_s: float


@dataclasses.dataclass(frozen=True)
class Exit:
    """Return from the worker's loop."""


Request = ListDevices | Catalog | MeasureGroup | Prepare | Warm | Chunk | Finish | Exit


# --- the worker's replies --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Progressed:
    """Not a reply: what the worker is doing now, sent while it works on a request."""

    progress: Progress


@dataclasses.dataclass(frozen=True)
class Done:
    """The request's answer."""

    value: Any


@dataclasses.dataclass(frozen=True)
class Failed:
    """The prepared configuration failed (its failure is the configuration's, not the
    worker's): ``measurement`` says how."""

    measurement: Measurement


@dataclasses.dataclass(frozen=True)
class Raised:
    """The worker raised one of :data:`PASSED_ERRORS` on purpose, named ``name``."""

    name: str
    message: str

    def error(self) -> AutoplaceError:
        """The exception to raise in the caller (a :class:`WorkerError` for a name not
        among :data:`PASSED_ERRORS`)."""
        passed = {cls.__name__: cls for cls in PASSED_ERRORS}
        return passed.get(self.name, WorkerError)(self.message)


@dataclasses.dataclass(frozen=True)
class Internal:
    """A bug in autoplace, in the worker: its ``traceback``."""

    traceback: str


Reply = Done | Failed | Raised | Internal
