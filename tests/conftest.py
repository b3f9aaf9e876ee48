"""Shared fixtures for autoplace's tests.

The in-process tests run the Engine in this process, on four virtual CPU devices
so that placement can be tested on a machine without accelerators. The device
count has to be set before JAX initialises a backend, so it is set here, at
conftest import, before any test module runs JAX.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import optuna
import pytest

import autoplace
from autoplace.host import LOCK_DIR_ENV
from autoplace.study import storage_at
from autoplace.workload import ModelFile

#: Virtual CPU devices the test process (and the in-process engine) sees.
N_CPU_DEVICES = 4

# Pinned to the CPU, here and in every worker and CLI the tests start (they inherit the
# environment): on a machine with a GPU, jax.devices() would otherwise be the GPU, and the
# tests of placement across the four fake CPU devices would find one device.
os.environ["JAX_PLATFORMS"] = "cpu"
jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_num_cpu_devices", N_CPU_DEVICES)

# This run's own lock folder (the workers and CLIs it starts inherit it): no test waits on
# another process's timing, such as a tune or another test run on the same machine.
os.environ.setdefault(LOCK_DIR_ENV, tempfile.mkdtemp(prefix="autoplace-test-locks-"))
# And its own cache: nothing the user cached (answers, the machine's limits) leaks into a
# test, nor a test's into the user's.
os.environ.setdefault("AUTOPLACE_CACHE", tempfile.mkdtemp(prefix="autoplace-test-cache-"))


def pytest_configure(config: pytest.Config) -> None:
    """Each test's ``tmp_path`` in memory (``/dev/shm``) where there is one: the tests
    write SQLite studies, whose every commit waits for the disk, and on a busy machine's
    shared disk that wait was half the quick tests' time. ``--basetemp`` still decides."""
    shm = Path("/dev/shm")
    if config.option.basetemp is None and shm.is_dir() and os.access(shm, os.W_OK):
        config.option.basetemp = tempfile.mkdtemp(prefix="autoplace-tests-", dir=shm)
        config.stash[_IN_MEMORY] = config.option.basetemp


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs a server (marked ``storage``) is ``slow`` too: a server's round
    trips, and the faults put in through a proxy, take seconds; the quick tier keeps to
    SQLite and Journal files."""
    for item in items:
        if item.get_closest_marker("storage") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_IN_MEMORY, None)
    if folder is not None:  # memory, not disk: kept no longer than the run
        shutil.rmtree(folder, ignore_errors=True)


_IN_MEMORY = pytest.StashKey[str]()

#: The repository's root, and the small model files the tests measure.
REPO = Path(__file__).resolve().parent.parent
MODELS = Path(__file__).parent / "models"


def model(name: str) -> Path:
    """Path of ``tests/models/<name>.py``."""
    path = MODELS / f"{name}.py"
    assert path.is_file(), path
    return path


def line_of(path: Path, marker: str) -> int:
    """1-based number of the first line of ``path`` that contains ``marker``."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if marker in line:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


def write_model(tmp_path: Path, source: str, name: str = "model.py") -> Path:
    """Write a (dedented) model file under ``tmp_path`` and return its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return path


FAST = autoplace.MeasureSettings(
    time_cap_s=0.2,
    fed_time_cap_s=0.1,
    min_samples=3,
    max_samples=10,
    sample_min_s=0.01,
)


def request(
    path: Path, workload: str, settings: autoplace.MeasureSettings = FAST, **config: object
) -> autoplace.MeasureRequest:
    """A request to measure ``workload`` of ``path`` (on cpu, batch 4 unless ``config`` says)."""
    mf = ModelFile.at(path)
    return autoplace.MeasureRequest(
        model_file=str(mf.path),
        sha256=mf.sha256,
        workload=workload,
        config=autoplace.Config(**{"device": "cpu", "batch_size": 4, **config}),
        settings=settings,
    )


@pytest.fixture(autouse=True)
def _quick_tests_start_no_python(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that starts a Python process (a measurement worker, the CLI in a subprocess,
    a second tune) takes seconds on a busy machine: it must be marked ``slow``, so that
    ``-m "not slow"`` stays quick. A quick test that starts one fails, naming the rule."""
    if request.node.get_closest_marker("slow"):
        return

    def refuse() -> None:
        pytest.fail(
            "this test starts a Python process (a JAX worker or the autoplace CLI): "
            "mark it @pytest.mark.slow",
            pytrace=False,
        )

    real = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        if argv and os.path.realpath(str(argv[0])) == os.path.realpath(sys.executable):
            refuse()
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
    # Before the worker's socket pair is made, so that refusing leaks nothing.
    monkeypatch.setattr("autoplace.measuring._worker.Worker.launch", lambda self: refuse())


@pytest.fixture
def fast_settings() -> autoplace.MeasureSettings:
    """Settings that keep one measurement of a tiny model well under a second."""
    return FAST


@pytest.fixture(scope="session")
def inproc() -> autoplace.InProcessBackend:
    """An engine in this process. Its jax_config repeats the value set above, which
    JAX accepts after backend initialisation because it does not change anything."""
    backend = autoplace.InProcessBackend(jax_config={"jax_num_cpu_devices": N_CPU_DEVICES})
    assert len(jax.devices()) == N_CPU_DEVICES
    return backend


@pytest.fixture(scope="module")
def subproc() -> Iterator[autoplace.SubprocessBackend]:
    """A measurement worker process shared by one test module."""
    backend = autoplace.SubprocessBackend()
    try:
        yield backend
    finally:
        backend.close()


# --- storages: every kind a study can live in -----------------------------------------

SERVERS = {
    "postgresql": "postgresql://postgres@127.0.0.1:5432/test",
    "mysql": "mysql://root@127.0.0.1:3306/test",
    "redis": "redis://127.0.0.1:6379/0",
}
skip_servers = pytest.mark.skipif(
    os.environ.get("AUTOPLACE_SKIP_SERVER_TESTS") == "1", reason="AUTOPLACE_SKIP_SERVER_TESTS=1"
)
ADDRESSES = {
    "postgresql": ("127.0.0.1", 5432),
    "mysql": ("127.0.0.1", 3306),
    "redis": ("127.0.0.1", 6379),
}
_ANSWERS: dict[str, bool] = {}


def _answers(kind: str) -> bool:
    """Whether the server of ``kind`` accepts a connection (asked once per test run)."""
    if kind not in _ANSWERS:
        try:
            socket.create_connection(ADDRESSES[kind], timeout=0.5).close()
            _ANSWERS[kind] = True
        except OSError:
            _ANSWERS[kind] = False
    return _ANSWERS[kind]


@pytest.fixture(
    params=[
        "sqlite",
        "journal",
        # A server's round trips add up to seconds a test: the full suite runs them.
        pytest.param("postgresql", marks=[skip_servers, pytest.mark.storage, pytest.mark.slow]),
        pytest.param("mysql", marks=[skip_servers, pytest.mark.storage, pytest.mark.slow]),
        pytest.param("redis", marks=[skip_servers, pytest.mark.storage, pytest.mark.slow]),
    ]
)
def storage_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty place for studies, once per kind of storage."""
    kind = request.param
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'studies.db'}"
    if kind == "journal":
        return f"journal:///{tmp_path / 'studies.log'}"
    if not _answers(kind):
        host, port = ADDRESSES[kind]
        why = f"no {kind} server answers at {host}:{port}"
        if os.environ.get("AUTOPLACE_REQUIRE_SERVERS") == "1":  # set by .ci/run
            pytest.fail(f"{why}: CI needs the servers the README names")
        pytest.skip(why)
    return SERVERS[kind]


@pytest.fixture
def study_name(storage_url: str) -> Iterator[str]:
    """A fresh study name, its study deleted afterwards."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    yield name
    with storage_at(storage_url) as storage, contextlib.suppress(KeyError):
        optuna.delete_study(study_name=name, storage=storage)


@pytest.fixture
def env(tmp_path):
    """A tune's files for the synthetic backend: a model file (never read), a study and a
    recommendation file of the test's own (``tests/recommending`` has its own ``env``)."""
    model_file = tmp_path / "model.py"
    model_file.write_text("# synthetic\n")
    return {
        "model": model_file,
        "storage": f"journal:///{tmp_path / 'studies.log'}",
        "out": tmp_path / "autoplace.toml",
    }
