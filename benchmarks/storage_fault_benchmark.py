"""Do shared studies survive their storage failing, and two same-named hosts?

Issue 24's faults, tried as a user meets them: every run is the real CLI,
``python -m autoplace tune`` on ``tests/models/tiny_mlp.py`` (batch 2..256, float32 and
bfloat16: ~10 s a tune here), storing into a study on the local PostgreSQL, MariaDB or
Redis server through a TCP proxy of the tests (``tests/study/storage_faults.py``) that
takes the server away once the study holds a finished measurement:

* ``down5``, ``down15``: connections refused and reset for 5 s or 15 s, then back;
* ``gone``: down for good (the tune must end in one line after its 60 s of patience);
* ``drops``: every connection reset, every 2 s for 10 s;
* ``silent``: connections accepted, nothing answered, for 25 s (past the 20 s statement
  timeout: a hang would show here);
* ``slow``: every packet 0.3 s late, for 20 s.

After each, the same command runs again with the server healthy (the resume). The URL of
PostgreSQL and Redis carries a password (both accept any: PostgreSQL trusts its user,
Redis's default user has none); MariaDB's root has none, so its URL carries none.

Then ``kill -9`` with two same-named hosts: two workers on one PostgreSQL study, the second
started under ``unshare --pid --fork --mount-proc`` (the same host name and boot, another
pid namespace, as two containers); once the victim has a trial in flight it is killed with
SIGKILL (its process group), the other runs on; then the same command resumes. Round 1
kills the worker of this namespace, round 2 the other.

Counted, per run (target 0 for each but the times):
- lost: a finished measurement seen in the study (polled every 0.25 s, directly, not
  through the proxy) that is later gone or changed, plus one kept in the spill file that
  the resume did not store;
- not stored, measured again: a configuration in flight when the faulted run ended that
  the resume measured afresh (its finished measurement was neither stored nor kept);
- measured twice: configurations with more than one search measurement (references,
  measured again on purpose, left out);
- RUNNING left after the resume (and, for information, right after the faulted run);
- tracebacks in any output; error lines other than one last line;
- leaks: outputs, files (recommendation, spill), study and trial attributes holding the
  password or a piece of it;
- crashes of a live owner whose trial was reclaimed (``UpdateFinishedTrialError``);
- times: from the server's return to the study's next change (recover_s), from the fault
  to the one-line exit (gone), from a kill to the victim's trials being reclaimed.

Figures go to ``benchmarks/results/storage_fault-<hardware key>-<time>.json``.
Run from the repository root:  python benchmarks/storage_fault_benchmark.py [--quick]
(~15 min; ``--quick``: down5, gone and silent, one kill round, ~7 min).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

from results_file import write_results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "study"))
from storage_faults import FaultProxy  # noqa: E402

import autoplace  # noqa: E402

MODEL = ROOT / "tests" / "models" / "tiny_mlp.py"
SPACE = ("--batch-sizes", "2..256", "--precisions", "float32,bfloat16", "--measure-timeout", "30")
SERVERS = {
    "postgresql": (("127.0.0.1", 5432), "postgresql://postgres{auth}@{host}/test"),
    "mysql": (("127.0.0.1", 3306), "mysql://root@{host}/test"),
    "redis": (("127.0.0.1", 6379), "redis://{auth}@{host}/0"),
}
#: The password the URLs carry, each piece long enough to be found on its own.
PASSWORD = "Sekr1t/Wort?Geheim@Tajny#Salainen"
PIECES = ("Sekr1t", "Wort", "Geheim", "Tajny", "Salainen", quote(PASSWORD, safe=""))
SCENARIOS = ("down5", "down15", "gone", "drops", "silent", "slow")
QUICK = ("down5", "gone", "silent")
POLL_S = 0.25
RUN_LIMIT_S = 420.0
FINISHED = ("COMPLETE", "PRUNED", "FAIL")


# -- the study, read directly (not through the proxy) -------------------------------------------


class Study:
    """Polls a study in the background: every finished measurement seen (to count what is
    lost), and when the study last changed (to time the recovery)."""

    def __init__(self, url: str, name: str) -> None:
        from autoplace.study import open_storage

        self.storage, self.name = open_storage(url), name
        self.seen: dict[int, str] = {}
        self.changes: list[tuple[float, int]] = []  # (time, a fingerprint of the trials)
        self.running_by_pidns: dict[str, set[int]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def trials(self) -> list[Any]:
        with contextlib.suppress(KeyError):
            study_id = self.storage.get_study_id_from_name(self.name)
            return self.storage.get_all_trials(study_id, deepcopy=False)
        return []

    def _poll(self) -> None:
        while not self._done.wait(POLL_S):
            try:
                trials = self.trials()
            except Exception:  # the storage itself hiccups: next poll
                continue
            mark = hash(tuple((t.number, t.state.name) for t in trials))
            if not self.changes or self.changes[-1][1] != mark:
                self.changes.append((time.monotonic(), mark))
            running: dict[str, set[int]] = {}
            for t in trials:
                if t.state.name in FINISHED and measured(t):
                    self.seen.setdefault(t.number, digest(t))
                if t.state.name == "RUNNING":
                    owner = t.user_attrs.get("owner") or {}
                    running.setdefault(str(owner.get("pidns")), set()).add(t.number)
            self.running_by_pidns = running

    def first_change_after(self, moment: float) -> float | None:
        later = [t for t, _ in self.changes if t > moment]
        return later[0] - moment if later else None

    def lost(self) -> int:
        now = {t.number: digest(t) for t in self.trials() if t.state.name in FINISHED}
        return sum(1 for n, d in self.seen.items() if now.get(n) != d)

    def close(self, delete: bool) -> None:
        from autoplace.study import close_storage

        self._done.set()
        self._thread.join()
        if delete:
            import optuna

            with contextlib.suppress(KeyError):
                optuna.delete_study(study_name=self.name, storage=self.storage)
        close_storage(self.storage)


def measured(t: Any) -> bool:
    """A finished trial holding a measurement that counts (not a claim lost, a trial
    interrupted, reclaimed or duplicated)."""
    attrs = t.user_attrs
    if any(attrs.get(k) for k in ("interrupted", "lost_claim", "duplicate")):
        return False
    if t.state.name == "FAIL" and "reclaimed_by" in attrs:
        return False
    return "autoplace:measurement" in t.system_attrs


def digest(t: Any) -> str:
    data = json.dumps(t.system_attrs.get("autoplace:measurement"), sort_keys=True)
    return hashlib.sha256(f"{t.state.name}{data}".encode()).hexdigest()[:16]


def measured_twice(trials: list[Any]) -> int:
    configs = [
        t.user_attrs.get("config")
        for t in trials
        if t.state.name == "COMPLETE"
        and measured(t)
        and t.user_attrs.get("phase", "search") == "search"
        and not t.user_attrs.get("reference")
    ]
    return len(configs) - len(set(configs))


def leaks(texts: list[str]) -> int:
    return sum(1 for text in texts if any(p in text for p in PIECES))


def study_texts(trials: list[Any], storage: Any, name: str) -> list[str]:
    with contextlib.suppress(KeyError):
        study_id = storage.get_study_id_from_name(name)
        attrs = [storage.get_study_user_attrs(study_id), storage.get_study_system_attrs(study_id)]
        return [json.dumps(attrs, default=str)] + [
            json.dumps([t.user_attrs, t.system_attrs], default=str) for t in trials
        ]
    return []


# -- runs ---------------------------------------------------------------------------------------


class Run:
    """``autoplace tune`` as a process of its own (its own process group)."""

    def __init__(self, url: str, study: str, out: Path, log: Path, prefix: tuple = ()) -> None:
        command = [sys.executable, "-m", "autoplace", "tune", str(MODEL), *SPACE]
        command += ["--storage", url, "--study", study, "--out", str(out)]
        self.log, self.started = log, time.monotonic()
        self._stderr = log.open("w")  # closed by wait(), when the run ends
        self.proc = subprocess.Popen(
            [*prefix, *command],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            start_new_session=True,
        )
        self.stdout = ""

    def wait(self) -> int:
        try:
            self.stdout, _ = self.proc.communicate(timeout=RUN_LIMIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            self.stdout, _ = self.proc.communicate()
        self.wall_s = time.monotonic() - self.started
        self._stderr.close()
        return self.proc.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    @property
    def stderr(self) -> str:
        return self.log.read_text()

    def outputs(self) -> str:
        return self.stdout + self.stderr


def wait_until(check, limit_s: float = RUN_LIMIT_S) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(POLL_S)
    return False


def errors_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("autoplace: error")]


def fault_plan(name: str, proxy: FaultProxy) -> tuple[float | None, threading.Thread]:
    """Start fault ``name`` now (in a thread); return its length (None: for good) and the
    thread, which returns when the server is back."""

    def down_for(seconds: float) -> None:
        proxy.down()
        time.sleep(seconds)
        proxy.up()

    def drops() -> None:
        for _ in range(5):
            proxy.drop()
            time.sleep(2.0)

    def window(mode: str, seconds: float, delay: float = 0.0) -> None:
        proxy.set_mode(mode, delay)
        time.sleep(seconds)
        proxy.set_mode("pass")

    plans = {
        "down5": (5.0, lambda: down_for(5.0)),
        "down15": (15.0, lambda: down_for(15.0)),
        "gone": (None, proxy.down),
        "drops": (10.0, drops),
        "silent": (25.0, lambda: window("silent", 25.0)),
        "slow": (20.0, lambda: window("delay", 20.0, 0.3)),
    }
    length, action = plans[name]
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return length, thread


def scenario(kind: str, name: str, tmp: Path, keep: bool) -> dict[str, Any]:
    (host, port), template = SERVERS[kind]
    auth = "" if kind == "mysql" else f":{quote(PASSWORD, safe='')}"
    direct = template.format(auth="", host=f"{host}:{port}")
    proxy = FaultProxy((host, port))
    url = template.format(auth=auth, host=proxy.url_host)
    study_name = f"fault-{kind}-{name}-{uuid.uuid4().hex[:6]}"
    folder = tmp / study_name
    folder.mkdir()
    out, spill = folder / "autoplace.toml", folder / "autoplace.unstored.json"
    study = Study(direct, study_name)
    row: dict[str, Any] = {"storage": kind, "fault": name, "study": study_name}
    try:
        run = Run(url, study_name, out, folder / "run.log")
        if not wait_until(lambda: bool(study.seen) or run.proc.poll() is not None):
            raise RuntimeError(f"{study_name}: no measurement in {RUN_LIMIT_S:g} s")
        row["fault_after_s"] = time.monotonic() - run.started
        faulted = time.monotonic()
        length, plan = fault_plan(name, proxy)
        code = run.wait()
        if length is None:
            row["gave_up_after_s"] = time.monotonic() - faulted
        else:
            plan.join()
            back = faulted + length
            row["recover_s"] = study.first_change_after(back) if code == 0 else None
        proxy.set_mode("pass")
        proxy.up()
        after_fault = study.trials()
        spilled = json.loads(spill.read_text())["records"] if spill.exists() else []
        running = {t._trial_id for t in after_fault if t.state.name == "RUNNING"}
        row["run"] = {
            "exit": code,
            "wall_s": run.wall_s,
            "error_lines": errors_of(run.stderr),
            "running_after": len(running),
            # RUNNING trials the spill file does not name: a resume elsewhere would wait for
            # their heartbeat to age (on this machine a dead owner is seen at once anyway)
            "running_not_in_spill": len(running - {r["trial_id"] for r in spilled}),
            "spilled": sum("measurement" in r for r in spilled),
        }
        texts = [run.outputs()]
        texts += [p.read_text() for p in (out, spill, folder / "autoplace.partial.toml")
                  if p.exists()]  # fmt: skip
        resume = Run(url, study_name, out, folder / "resume.log")
        row["resume"] = {"exit": resume.wait(), "wall_s": resume.wall_s}
        texts += [resume.outputs()] + ([out.read_text()] if out.exists() else [])
        final = study.trials()
        # finished measurements the faulted run could not store and did not keep: the
        # resume measures their configurations again (its own new trials)
        last = max((t.number for t in after_fault), default=-1)
        in_flight = {t.user_attrs.get("config") for t in after_fault if t.state.name == "RUNNING"}
        remeasured = [
            t
            for t in final
            if t.number > last
            and measured(t)
            and not t.user_attrs.get("reference")
            and t.user_attrs.get("config") in in_flight
        ]
        uids = {t.user_attrs.get("uid") for t in final if measured(t)}
        numbers = {t._trial_id for t in final if measured(t)}
        spill_lost = sum(
            1
            for r in spilled
            if "measurement" in r and r.get("uid") not in uids and r["trial_id"] not in numbers
        )
        texts += study_texts(final, study.storage, study_name)
        row.update(
            lost=study.lost() + spill_lost,
            not_stored_measured_again=len(remeasured),
            measured_twice=measured_twice(final),
            running_left=sum(t.state.name == "RUNNING" for t in final),
            spill_left=spill.exists(),
            tracebacks=sum("Traceback" in t for t in texts),
            extra_error_lines=max(0, len(errors_of(run.stderr)) - 1)
            + len(errors_of(resume.stderr)),
            leaks=leaks(texts) if kind != "mysql" else None,
        )
    finally:
        study.close(delete=not keep)
        proxy.close()
    return row


def kill_round(victim: str, tmp: Path, keep: bool) -> dict[str, Any]:
    """Two workers on one PostgreSQL study, one under unshare --pid; kill -9 ``victim``."""
    (host, port), template = SERVERS["postgresql"]
    url = template.format(auth=f":{quote(PASSWORD, safe='')}", host=f"{host}:{port}")
    direct = template.format(auth="", host=f"{host}:{port}")
    study_name = f"kill-{victim}-{uuid.uuid4().hex[:6]}"
    folder = tmp / study_name
    folder.mkdir()
    here = os.readlink("/proc/self/ns/pid")
    study = Study(direct, study_name)
    row: dict[str, Any] = {"victim": victim, "study": study_name}
    try:
        runs = {
            "here": Run(url, study_name, folder / "here.toml", folder / "here.log"),
            "unshared": Run(
                url,
                study_name,
                folder / "unshared.toml",
                folder / "unshared.log",
                prefix=("unshare", "--pid", "--fork", "--mount-proc"),
            ),
        }

        def victims_trials() -> set[int]:
            mine = {ns for ns in study.running_by_pidns if (ns == here) == (victim == "here")}
            return set().union(*(study.running_by_pidns[ns] for ns in mine)) if mine else set()

        killed = wait_until(lambda: bool(victims_trials()) and bool(study.seen))
        left = victims_trials()
        killed_at = time.monotonic()
        if killed:
            runs[victim].kill()
        survivor = "unshared" if victim == "here" else "here"
        codes = {k: r.wait() for k, r in runs.items()}
        wait_until(lambda: not (left & set().union(*study.running_by_pidns.values())), 90.0)
        gone = not (left & set().union(*study.running_by_pidns.values()))
        resume = Run(url, study_name, folder / "resume.toml", folder / "resume.log")
        row["resume_exit"] = resume.wait()
        final = study.trials()
        texts = [r.outputs() for r in (*runs.values(), resume)]
        texts += [p.read_text() for p in folder.glob("*.toml")]
        texts += study_texts(final, study.storage, study_name)
        row.update(
            killed_mid_measurement=killed,
            victim_trials_in_flight=len(left),
            reclaimed_after_s=(time.monotonic() - killed_at) if gone else None,
            survivor_exit=codes[survivor],
            survivor_wall_s=runs[survivor].wall_s,
            crashes=sum("UpdateFinishedTrialError" in t for t in texts),
            live_owner_recovered=sum(1 for t in final if "recovered_from" in t.user_attrs),
            lost=study.lost(),
            measured_twice=measured_twice(final),
            running_left=sum(t.state.name == "RUNNING" for t in final),
            tracebacks=sum("Traceback" in r.outputs() for r in (*runs.values(), resume)),
            leaks=leaks(texts),
        )
    finally:
        study.close(delete=not keep)
    return row


def server_answers(kind: str) -> bool:
    import socket

    with contextlib.suppress(OSError):
        socket.create_connection(SERVERS[kind][0], timeout=1).close()
        return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}; 1 kill")
    parser.add_argument("--storages", default="postgresql,mysql,redis")
    parser.add_argument("--faults", help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--kills", default="here,unshared", help="victims of the kill rounds")
    parser.add_argument("--keep", action="store_true", help="keep temporary files and studies")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    faults = args.faults.split(",") if args.faults else list(QUICK if args.quick else SCENARIOS)
    kills = [k for k in args.kills.split(",") if k][: 1 if args.quick else None]
    started = time.monotonic()
    os.environ.setdefault("AUTOPLACE_LOCK_DIR", tempfile.mkdtemp(prefix="autoplace-locks-"))
    warnings.simplefilter("ignore")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    rows, rounds, skipped = [], [], {}
    with tempfile.TemporaryDirectory(prefix="autoplace-faults-") as name:
        tmp = Path(name)
        for kind in [k for k in args.storages.split(",") if k]:
            if not server_answers(kind):
                skipped[kind] = "no server answers"
                continue
            for fault in faults:
                row = scenario(kind, fault, tmp, args.keep)
                rows.append(row)
                print(json.dumps(row, default=str), flush=True)
        if kills and server_answers("postgresql"):
            for victim in kills:
                row = kill_round(victim, tmp, args.keep)
                rounds.append(row)
                print(json.dumps(row, default=str), flush=True)
    total = {
        key: sum(r.get(key) or 0 for r in [*rows, *rounds])
        for key in (
            "lost",
            "not_stored_measured_again",
            "measured_twice",
            "running_left",
            "tracebacks",
            "leaks",
        )
    }
    total["crashes"] = sum(r["crashes"] for r in rounds)
    total["nonzero_resumes"] = sum(r["resume"]["exit"] != 0 for r in rows) + sum(
        r["resume_exit"] != 0 for r in rounds
    )
    path = write_results(
        "storage_fault",
        devices,
        args.out,
        {
            "uptime_at_start": uptime,
            "uptime_at_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout,
            "settings": {
                "model": str(MODEL.relative_to(ROOT)),
                "space": list(SPACE),
                "faults": faults,
                "kills": kills,
                "poll_s": POLL_S,
            },
            "skipped": skipped,
            "total": total,
            "total_wall_s": time.monotonic() - started,
            "scenarios": rows,
            "kill_rounds": rounds,
        },
    )
    print(json.dumps(total))
    print(f"total {time.monotonic() - started:.0f} s; results written to {path}")


if __name__ == "__main__":
    main()
