"""Request values built from a library call's keywords."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from autoplace.errors import BadInputError

_Request = TypeVar("_Request")


def build(kind: type[_Request], first: Any, **options: Any) -> _Request:
    """``kind(first, **options)``, an unknown keyword refused in one line naming those it
    takes: a launcher's typo is not a traceback."""
    fields = [f.name for f in dataclasses.fields(kind)][1:]  # type: ignore[arg-type]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise BadInputError(
            f"{kind.__name__} takes no option {', '.join(map(repr, unknown))}: it takes "
            f"{', '.join(fields)}"
        )
    return kind(first, **options)  # type: ignore[call-arg]
