"""The worker's messages: each crosses the connection pickled and comes back equal, and
an error raised on purpose comes back as its own class."""

from __future__ import annotations

import pickle

import pytest

from autoplace.errors import BadInputError, ModelFileError, WorkerError
from autoplace.measuring._messages import (
    Catalog,
    Chunk,
    Done,
    Exit,
    Finish,
    Internal,
    ListDevices,
    Raised,
    Warm,
)


@pytest.mark.parametrize(
    "message",
    [
        ListDevices(),
        Catalog("model.py", "abc"),
        Warm("fed"),
        Chunk("fed", 7),
        Finish({"step": [0.1, 0.2]}, "window", 1, 0.5),
        Exit(),
        Done([1, 2]),
        Raised("BadInputError", "no such device"),
        Internal("Traceback ..."),
    ],
)
def test_a_message_crosses_pickled_and_comes_back_equal(message) -> None:
    assert pickle.loads(pickle.dumps(message)) == message


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("BadInputError", BadInputError),
        ("ModelFileError", ModelFileError),
        ("KeyError", WorkerError),  # not one a worker passes: a bug of ours
    ],
)
def test_an_error_raised_on_purpose_comes_back_as_its_class(name, cls) -> None:
    error = Raised(name, "why").error()
    assert type(error) is cls and str(error) == "why"
