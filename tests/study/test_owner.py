"""Who owns a trial: an identity no two workers share, and a process check made only where
a process id means something (the same boot and pid namespace)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings

import pytest

from autoplace.study._owner import Owner

#: Prints, as JSON, the Owner of the process that runs it.
_REPORT = (
    "import json; from autoplace.study._owner import Owner; "
    "print(json.dumps(Owner.here().as_dict()))"
)


def _owner_of(*prefix: str) -> dict:
    """The owner a new Python process reports, started under ``prefix`` (e.g. unshare)."""
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _REPORT], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        pytest.skip(f"cannot start a process under {' '.join(prefix)}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def test_every_log_is_an_owner_of_its_own():
    first, second = Owner.here(), Owner.here()
    assert first.token != second.token
    assert (first.pid, first.host, first.boot, first.pidns) == (
        second.pid,
        second.host,
        second.boot,
        second.pidns,
    )
    assert first.boot and first.pidns and first.started  # read from /proc on Linux


@pytest.mark.slow  # a subprocess running autoplace
def test_a_dead_process_of_this_boot_and_namespace_is_seen_gone():
    here = Owner.here()
    dead = _owner_of()  # a process that has ended by now
    assert dead["boot"] == here.boot and dead["pidns"] == here.pidns
    assert here.sees_gone(dead)
    assert not here.sees_gone(here.as_dict())  # this process lives


def test_a_reused_process_id_is_seen_gone():
    here = Owner.here()
    before = {**here.as_dict(), "started": here.started - 1}  # this pid, another process
    assert here.sees_gone(before)


@pytest.mark.slow  # a subprocess running autoplace
@pytest.mark.skipif(shutil.which("unshare") is None, reason="no unshare here")
def test_a_process_in_another_pid_namespace_is_never_judged_by_its_pid():
    # What two containers of the same host name look like to each other: their processes
    # have small pids that may or may not exist here. Only a heartbeat can tell.
    here = Owner.here()
    there = _owner_of("unshare", "--pid", "--fork", "--mount-proc")
    assert there["host"] == here.host and there["boot"] == here.boot
    assert there["pidns"] != here.pidns and there["pid"] == 1
    assert not here.sees_gone(there)  # though it is gone, and pid 1 here is another process
    assert not here.sees_gone({**there, "pid": os.getpid() + 10**6})


@pytest.mark.slow  # a subprocess running autoplace
def test_an_owner_recorded_elsewhere_or_before_owners_had_boot_ids_is_not_judged():
    here = Owner.here()
    gone = _owner_of()
    assert not here.sees_gone({**gone, "boot": "another machine"})
    assert not here.sees_gone({"host": here.host, "pid": gone["pid"]})  # an old record


def test_a_forked_worker_is_another_owner(tmp_path):
    from autoplace.study import (
        OptunaStudyLog,
        StudyIdentity,
        TrialSpace,
        close_storage,
        open_storage,
    )

    url = f"sqlite:///{tmp_path / 's.db'}"
    storage = open_storage(url)
    log = OptunaStudyLog(
        storage,
        url,
        name="forked",
        identity=StudyIdentity(direction="maximize", objective="throughput", attrs={}),
        space=TrialSpace(devices=["cpu:0"], with_width=False),
        stale_after_s=60.0,
    )
    read, write = os.pipe()
    # Python's and JAX's warnings that forking a multi-threaded process may deadlock: the
    # child only reads its identity (no lock another thread may hold), then exits.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        child = os.fork()
    if child == 0:
        try:
            owner = log.owner
            os.write(write, json.dumps([owner.token, owner.pid]).encode())
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    token, pid = json.loads(os.read(read, 4096))
    os.close(read)
    os.close(write)
    close_storage(storage)
    assert pid == child and token != log.owner.token
