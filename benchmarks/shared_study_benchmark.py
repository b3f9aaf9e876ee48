"""Does a study survive ``kill -9`` at random moments, and can workers share it?

Two claims of docs/storage.md, proved by counting. Every run is the real CLI,
``python -m autoplace tune``, as a subprocess, on the MNIST-shaped MLP
(``studies/mnist_mlp.py``, workload ``mlp``) over a small space (batch 16..1024,
float32 and bfloat16: one tune takes 10-20 s on the 2-core CI machine); the study is
read with Optuna directly (``optuna.load_study``), never through autoplace.

A. Killed and resumed (SQLite in a temporary folder, and a Journal file). One
   uninterrupted tune into a study of its own gives the reference pick and its duration
   T. Then, in a fresh study, the same command is started, killed with SIGKILL (the
   tune's process only, as a user's ``kill -9``) after a random time drawn between 1 s
   and T (seeded), and restarted at once, again and again; a resume that finishes before
   its kill ends that study, and the next kill starts a new one. After the last kill a
   final resume runs to its end. Counted:
   - finished measurements lost: every finished trial (COMPLETE, PRUNED or FAIL with a
     measurement, not interrupted, reclaimed or a lost claim) seen before a kill must
     still be finished, with the same measurement, at every later look (target 0);
   - configurations re-measured: one whose finished search measurement existed before a
     kill and that got another search measurement later; references excluded (the best
     so far, measured again with each group on purpose) (target 0);
   - trials RUNNING at the end (target 0), and before each restart;
   - resume to first new trial in the storage: seconds from the resumed process's start
     (target < 10 s), and to its first new finished measurement; a run killed before
     either is counted apart (censored);
   - whether the measurement worker the killed tune leaves behind (it runs in a session
     of its own) exits by itself, and how fast;
   - whether each final file's pick (``[recommendation]``: device, batch size, precision,
     width) equals the uninterrupted run's; if not, both and the reference's margin and
     noise.
B. Shared. Three ``autoplace tune`` processes started at once on one study (a new name
   per round), each with its own ``--out``, on each storage: SQLite (a new file),
   Journal (a new file), PostgreSQL, MySQL/MariaDB and Redis (a storage whose server does
   not answer is skipped, saying so). Counted: configurations with more than one search
   measurement, references excluded (target 0), RUNNING trials left (0), exit codes (all
   0), and whether the three files name the same placement.

The figures are written as JSON under benchmarks/results/ (``shared-<hardware key>-<time>``),
tagged with the machine fingerprint and the state of the working tree. ~6 min with
``--quick`` (10 kills on each of SQLite and Journal, one round per storage), ~8 min
without (15 kills each, two rounds per storage).

Run from the repository root:  python benchmarks/shared_study_benchmark.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import tomllib
from results_file import write_results

import autoplace

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "studies" / "mnist_mlp.py"
WORKLOAD = "mlp"
SPACE = ("--batch-sizes", "16..1024", "--precisions", "float32,bfloat16")
STORAGES = ("sqlite", "journal", "postgresql", "mysql", "redis")
KILLABLE = ("sqlite", "journal")
SERVER_URLS = {
    "postgresql": "postgresql://postgres@127.0.0.1:5432/test",
    "mysql": "mysql://root@127.0.0.1:3306/test",
    "redis": "redis://127.0.0.1:6379/0",
}
#: How long a killed tune's measurement worker is given to exit by itself.
ORPHAN_WAIT_S = 30.0
#: A tune (one of three sharing a study included) that runs longer is killed as hung.
RUN_LIMIT_S = 420.0
#: Target: a resumed tune begins its first trial within this.
RESUME_TARGET_S = 10.0
POLL_S = 0.2
FINISHED = ("COMPLETE", "PRUNED", "FAIL")


# -- the study, read with Optuna ------------------------------------------------------------


def optuna_storage(url: str) -> Any:
    """An Optuna storage for one of the five URLs, made with Optuna alone."""
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalRedisBackend

    scheme, rest = url.split("://", 1)
    if scheme == "journal":
        return optuna.storages.JournalStorage(JournalFileBackend(rest))
    if scheme == "redis":
        with warnings.catch_warnings():  # "experimental" in Optuna: not news here
            warnings.simplefilter("ignore")
            return optuna.storages.JournalStorage(JournalRedisBackend(url))
    driver = {"mysql": "mysql+pymysql", "postgresql": "postgresql+psycopg"}.get(scheme, scheme)
    return optuna.storages.RDBStorage(f"{driver}://{rest}")


def close(storage: Any) -> None:
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()
    client = getattr(getattr(storage, "_backend", None), "_redis", None)
    if client is not None:
        client.close()


def read_trials(url: str, study: str) -> list[Any]:
    """The study's trials, from a storage opened for this look only (no cache between
    looks); none if the study does not exist yet."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna_storage(url)
    try:
        return optuna.load_study(study_name=study, storage=storage).get_trials(deepcopy=False)
    except KeyError:
        return []
    finally:
        close(storage)


def span(stamps: list[str | None]) -> float | None:
    """Seconds from the first to the last of these ISO times."""
    times = sorted(dt.datetime.fromisoformat(s) for s in stamps if s)
    return (times[-1] - times[0]).total_seconds() if times else None


def digest(data: Any) -> str | None:
    if data is None:
        return None
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def row(t: Any) -> dict[str, Any]:
    """One trial, as this benchmark counts it."""
    ua = t.user_attrs
    data = t.system_attrs.get("autoplace:measurement") or ua.get("measurement")
    r = {
        "number": t.number,
        "state": t.state.name,
        "config": ua.get("config"),
        "phase": ua.get("phase", "search"),
        "reference": bool(ua.get("reference")),
        "interrupted": bool(ua.get("interrupted")),
        "reclaimed": "reclaimed_by" in ua,
        "lost_claim": bool(ua.get("lost_claim")),
        "measurement": digest(data),
        "status": (data or {}).get("status"),
        "owner_pid": (ua.get("owner") or {}).get("pid"),
        "start": t.datetime_start.isoformat() if t.datetime_start else None,
    }
    r["counted"] = (
        r["state"] in FINISHED
        and r["measurement"] is not None
        and not (r["interrupted"] or r["reclaimed"] or r["lost_claim"])
    )
    return r


class Snapshot:
    """A study at one moment: every trial's row, and the counts the report uses."""

    def __init__(self, trials: list[Any]) -> None:
        self.rows = {r["number"]: r for r in map(row, trials)}
        self.counted = {n: r for n, r in self.rows.items() if r["counted"]}

    def searches(self) -> dict[str, list[int]]:
        """Each configuration's finished search measurements, references excluded."""
        out: dict[str, list[int]] = {}
        for n, r in sorted(self.counted.items()):
            if r["phase"] == "search" and not r["reference"]:
                out.setdefault(r["config"], []).append(n)
        return out

    def counts(self) -> dict[str, Any]:
        rows = self.rows.values()
        return {
            "trials": len(self.rows),
            "finished_measurements": len(self.counted),
            "running": sum(r["state"] == "RUNNING" for r in rows),
            "running_trials": [
                {k: r[k] for k in ("number", "config", "phase", "owner_pid")}
                for r in rows
                if r["state"] == "RUNNING"
            ],
            "interrupted": sum(r["interrupted"] for r in rows),
            "reclaimed": sum(r["reclaimed"] for r in rows),
            "lost_claim": sum(r["lost_claim"] for r in rows),
            "lost_claim_by_phase": {
                p: sum(r["lost_claim"] and r["phase"] == p for r in rows)
                for p in ("search", "confirm")
            },
            "lost_claim_span_s": span([r["start"] for r in rows if r["lost_claim"]]),
            "lost_claim_most_per_worker_and_config": max(
                Counter((r["owner_pid"], r["config"]) for r in rows if r["lost_claim"]).values(),
                default=0,
            ),
            "other_failed": sum(
                r["state"] == "FAIL"
                and not r["counted"]
                and not r["interrupted"]
                and not r["reclaimed"]
                and not r["lost_claim"]
                for r in rows
            ),
            "references": sum(r["counted"] and r["reference"] for r in rows),
            "confirmations": sum(r["counted"] and r["phase"] == "confirm" for r in rows),
            "states": {
                s: sum(r["state"] == s for r in rows) for s in sorted({r["state"] for r in rows})
            },
        }

    def duplicates(self) -> dict[str, list[int]]:
        """Configurations with more than one search measurement, references excluded."""
        return {c: ns for c, ns in self.searches().items() if len(ns) > 1}


class Poller:
    """Watches a study while a tune runs: when its first new trial appears, and its first
    new finished measurement. One storage kept open (SQLite's tables exist already)."""

    def __init__(self, url: str, study: str, before: Snapshot) -> None:
        self._storage, self._study, self._id = optuna_storage(url), study, None
        self._top = max(before.rows, default=-1)
        self._counted = len(before.counted)

    def look(self) -> tuple[bool, bool]:
        """Whether a new trial, and a new finished measurement, are there now."""
        try:
            if self._id is None:
                self._id = self._storage.get_study_id_from_name(self._study)
            trials = self._storage.get_all_trials(self._id, deepcopy=False)
        except Exception:  # not created yet, or the file mid-write: look again
            return False, False
        rows = [row(t) for t in trials]
        new_trial = any(r["number"] > self._top for r in rows)
        return new_trial, sum(r["counted"] for r in rows) > self._counted

    def close(self) -> None:
        close(self._storage)


# -- processes ---------------------------------------------------------------------------------


def tune_command(url: str, study: str, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "autoplace", "tune", str(MODEL), "--workload", WORKLOAD,
        *SPACE, "--storage", url, "--study", study, "--out", str(out),
    ]  # fmt: skip


class Run:
    """One ``autoplace tune`` subprocess, its output in files."""

    def __init__(self, cmd: list[str], logs: Path, tag: str, cwd: Path) -> None:
        self.tag, self.cmd = tag, cmd
        self.out_path, self.err_path = logs / f"{tag}.out", logs / f"{tag}.err"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.started = time.monotonic()
            self.proc = subprocess.Popen(
                cmd, cwd=cwd, stdout=out, stderr=err, env=env, start_new_session=True
            )

    def wait(self, limit: float = RUN_LIMIT_S) -> int:
        try:
            return self.proc.wait(timeout=max(1.0, self.started + limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"   {self.tag}: still running after {limit:.0f} s, killed as hung")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started

    def stderr_tail(self, lines: int = 15) -> str:
        text = self.err_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def traceback(self) -> bool:
        return "Traceback" in self.err_path.read_text(errors="replace")


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, start time), from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(name)] = (int(fields[1]), fields[0], fields[19])
    return table


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``: pid -> start time (to tell it from a reused pid)."""
    table, out, frontier = _proc_table(), {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, _, start) in table.items():
            if ppid == parent and child not in out:
                out[child] = start
                frontier.append(child)
    return out


def alive(pid: int, start: str) -> bool:
    return cpu_s(pid, start) is not None


def cpu_s(pid: int, start: str) -> float | None:
    """The CPU seconds (user + system) process ``pid`` has used, None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[19] != start or fields[0] in "ZX":
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    return ""


class OrphanWatch(threading.Thread):
    """Waits up to :data:`ORPHAN_WAIT_S` for the processes a killed tune left behind to
    exit by themselves; ends those that do not (they are ours) and says so."""

    def __init__(self, orphans: dict[int, str]) -> None:
        super().__init__(daemon=True)
        self.orphans = orphans
        self.commands = {pid: cmdline(pid) for pid in orphans}
        self.cpu_at_kill = {pid: cpu_s(pid, start) for pid, start in orphans.items()}
        self.cpu_last = dict(self.cpu_at_kill)
        self.killed_at = time.monotonic()
        self.exit_s: dict[int, float | None] = {}
        self.start()

    def run(self) -> None:
        t0, left = self.killed_at, dict(self.orphans)
        while left and time.monotonic() - t0 < ORPHAN_WAIT_S:
            for pid, start in list(left.items()):
                used = cpu_s(pid, start)
                if used is None:
                    self.exit_s[pid] = time.monotonic() - t0
                    del left[pid]
                else:
                    self.cpu_last[pid] = used
            time.sleep(0.05)
        for pid, start in left.items():
            self.exit_s[pid] = None
            if alive(pid, start):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def report(self) -> list[dict[str, Any]]:
        self.join()
        return [
            {
                "pid": pid,
                "command": self.commands[pid],
                "exit_s": self.exit_s.get(pid),
                "cpu_s_after_kill": (self.cpu_last[pid] or 0) - (self.cpu_at_kill[pid] or 0),
            }
            for pid in self.orphans
        ]

    def last_exit(self) -> float | None:
        """When (monotonic) the last of them was gone; None if one never was."""
        self.join()
        times = list(self.exit_s.values())
        if any(t is None for t in times):
            return None
        return self.killed_at + max(times, default=0.0)


# -- part A: kill -9, resume -------------------------------------------------------------------


def pick_of(path: Path) -> dict[str, Any] | None:
    """The placement a recommendation file names, with its margin over the runner-up."""
    if not path.exists():
        return None
    doc = tomllib.loads(path.read_text())
    rec = doc.get("recommendation", {})
    runner = rec.get("runner_up", {})
    return {
        "placement": {k: rec.get(k) for k in ("device", "batch_size", "precision", "width")},
        "score": rec.get("figures", {}).get("score"),
        "confirmed": rec.get("confirmed"),
        "runner_up": {k: runner.get(k) for k in ("device", "batch_size", "precision", "width")},
        "margin": runner.get("margin"),
        "noise": runner.get("noise"),
        "significant": runner.get("significant"),
    }


def label(pick: dict[str, Any] | None) -> str:
    if pick is None:
        return "none"
    p = pick["placement"]
    return f"{p['device']} b={p['batch_size']} {p['precision']} w={p['width']}"


class LostCheck:
    """Every finished measurement once seen must stay finished, with the same measurement."""

    def __init__(self) -> None:
        self.seen: dict[int, dict[str, Any]] = {}
        self.lost: dict[int, dict[str, Any]] = {}

    def look(self, snap: Snapshot, when: str) -> None:
        for n, before in self.seen.items():
            now = snap.rows.get(n)
            if n in self.lost:
                continue
            if (
                now is None
                or not now["counted"]
                or (now["state"], now["measurement"]) != (before["state"], before["measurement"])
            ):
                self.lost[n] = {"before": before, "after": now, "seen_at": when}
        for n, r in snap.counted.items():
            self.seen.setdefault(n, r)


def kill_study(
    kind: str, url: str, ref: dict[str, Any], kills_left: int, rng: random.Random, tmp: Path
) -> dict[str, Any]:
    """One study killed again and again (at most ``kills_left`` times), then left to finish."""
    study = f"killed-{uuid.uuid4().hex[:10]}"
    out = tmp / f"{study}.toml"
    cmd = tune_command(url, study, out)
    check, kills, runs, watches = LostCheck(), [], [], []
    overlaps: list[tuple[dict[str, Any], OrphanWatch, float | None]] = []
    snap = Snapshot([])
    while True:
        last = len(kills) >= kills_left
        delay = None if last else rng.uniform(1.0, ref["wall_s"])
        out.unlink(missing_ok=True)
        resumed = bool(runs)
        poller = Poller(url, study, snap)
        run = Run(cmd, tmp, f"{study}-{len(runs)}", tmp)
        first_trial = first_measurement = None
        previous = watches[-1] if watches and resumed and "killed_at_s" in runs[-1] else None
        while run.proc.poll() is None and (delay is None or run.wall_s < delay):
            if first_trial is None or first_measurement is None:
                new_trial, new_measurement = poller.look()
                if new_trial and first_trial is None:
                    first_trial = run.wall_s
                if new_measurement and first_measurement is None:
                    first_measurement = run.wall_s
            time.sleep(POLL_S)
        poller.close()
        killed = run.proc.poll() is None
        began = None if first_trial is None else run.started + first_trial
        record: dict[str, Any] = {
            "resumed": resumed,
            "delay_s": delay,
            "first_new_trial_s": first_trial,
            "first_new_measurement_s": first_measurement,
        }
        if previous is not None:
            overlaps.append((record, previous[1], began))
        if killed:
            orphans = descendants(run.proc.pid)
            os.kill(run.proc.pid, signal.SIGKILL)  # the tune only, as `kill -9 PID`
            run.proc.wait()
            watch = OrphanWatch({p: s for p, s in orphans.items()})
            watches.append((record, watch))
            record["killed_at_s"] = run.wall_s
        else:
            record["exit_code"] = run.proc.returncode
            record["wall_s"] = run.wall_s
            if run.proc.returncode != 0 or run.traceback():
                record["stderr_tail"] = run.stderr_tail()
        runs.append(record)
        snap = Snapshot(read_trials(url, study))
        check.look(snap, f"after run {len(runs) - 1}")
        counts = snap.counts()
        record["after"] = {
            k: counts[k] for k in ("finished_measurements", "running", "reclaimed", "trials")
        }
        tag = "resume" if resumed else "start "
        shown = "-" if first_trial is None else f"{first_trial:4.1f} s"
        if killed:
            kills.append(
                {"searches": snap.searches(), "numbers": set(snap.counted), "run": len(runs) - 1}
            )
            print(
                f"   {kind:8} {study} {tag} killed at {record['killed_at_s']:5.1f} s "
                f"(first new trial {shown}): {counts['finished_measurements']} finished, "
                f"{counts['running']} RUNNING"
            )
            continue
        print(
            f"   {kind:8} {study} {tag} exited {run.proc.returncode} after {run.wall_s:5.1f} s "
            f"(first new trial {shown}): {counts['finished_measurements']} finished, "
            f"{counts['running']} RUNNING"
        )
        if run.proc.returncode != 0 and "cut or damaged record" in record.get("stderr_tail", ""):
            record["repaired_journal"] = repair_journal(url)
            continue
        break
    final = snap
    remeasured: dict[str, list[int]] = {}
    for k in kills:
        for config, numbers in final.searches().items():
            if config in k["searches"] and any(n not in k["numbers"] for n in numbers):
                remeasured[config] = numbers
    for record, watch in watches:
        record["orphans"] = watch.report()
    for record, watch, began in overlaps:
        gone = watch.last_exit()
        # Did the resumed tune begin a trial while the killed one's worker still ran?
        record["began_while_orphan_alive"] = (
            None if began is None else (gone is None or began < gone)
        )
    pick = pick_of(out)
    return {
        "study": study,
        "kills": len(kills),
        "runs": runs,
        "final": final.counts(),
        "lost": list(check.lost.values()),
        "remeasured": remeasured,
        "duplicates": final.duplicates(),
        "last_exit_code": runs[-1].get("exit_code"),
        "pick": pick,
        "same_pick": pick is not None and pick["placement"] == ref["pick"]["placement"],
    }


def repair_journal(url: str) -> dict[str, Any]:
    """What docs/storage.md tells a user to do with a Journal file whose last record is cut:
    copy it aside, delete its last line."""
    path = Path(url.split("://", 1)[1])
    text = path.read_bytes()
    path.with_suffix(".damaged").write_bytes(text)
    kept = text.rstrip(b"\n").rsplit(b"\n", 1)[0] + b"\n"
    path.write_bytes(kept)
    return {"cut_record": text[len(kept) :].decode(errors="replace")[:300]}


def part_a(kind: str, kills: int, rng: random.Random, tmp: Path) -> dict[str, Any]:
    folder = tmp / f"a-{kind}"
    folder.mkdir()
    url = f"sqlite:///{folder / 'killed.db'}" if kind == "sqlite" else f"journal://{folder}/k.log"
    ref_url = f"sqlite:///{folder / 'ref.db'}" if kind == "sqlite" else f"journal://{folder}/r.log"
    if kind == "sqlite":  # the tables made now: the poller's look must not race to make them
        close(optuna_storage(url))
    out = folder / "reference.toml"
    run = Run(tune_command(ref_url, "reference", out), folder, "reference", folder)
    code = run.wait()
    snap = Snapshot(read_trials(ref_url, "reference"))
    ref = {
        "exit_code": code,
        "wall_s": run.wall_s,
        "pick": pick_of(out),
        "final": snap.counts(),
        "duplicates": snap.duplicates(),
    }
    print(
        f"   {kind:8} reference: exit {code} in {run.wall_s:.1f} s, "
        f"{ref['final']['finished_measurements']} finished, pick {label(ref['pick'])}"
    )
    if code != 0 or ref["pick"] is None:
        ref["stderr_tail"] = run.stderr_tail()
        return {"storage": kind, "reference": ref, "studies": [], "error": "reference run failed"}
    studies: list[dict[str, Any]] = []
    while sum(s["kills"] for s in studies) < kills:
        left = kills - sum(s["kills"] for s in studies)
        studies.append(kill_study(kind, url, ref, left, rng, folder))
    return {"storage": kind, "url": url, "reference": ref, "studies": studies}


def summarize_a(result: dict[str, Any]) -> dict[str, Any]:
    studies = result["studies"]
    runs = [r for s in studies for r in s["runs"]]
    resumes = [r for r in runs if r["resumed"]]
    seen = [r["first_new_trial_s"] for r in resumes if r["first_new_trial_s"] is not None]
    censored = [r for r in resumes if r["first_new_trial_s"] is None and "killed_at_s" in r]
    # A resume of a study whose work was all done (killed while writing its file) begins
    # no trial: it only writes the file again.
    nothing_left = [r for r in resumes if r["first_new_trial_s"] is None and "exit_code" in r]
    measured = [
        r["first_new_measurement_s"] for r in resumes if r["first_new_measurement_s"] is not None
    ]
    orphans = [o for r in runs for o in r.get("orphans", [])]
    overlap = [r["began_while_orphan_alive"] for r in runs if "began_while_orphan_alive" in r]
    exits = [o["exit_s"] for o in orphans if o["exit_s"] is not None]
    before_restart = [r["after"]["running"] for r in runs if "killed_at_s" in r]
    return {
        "kills": sum(s["kills"] for s in studies),
        "studies": len(studies),
        "runs": len(runs),
        "lost": sum(len(s["lost"]) for s in studies),
        "remeasured": sum(len(s["remeasured"]) for s in studies),
        "duplicates": sum(len(s["duplicates"]) for s in studies),
        "running_at_end": sum(s["final"]["running"] for s in studies),
        "running_before_restart_max": max(before_restart, default=0),
        "reclaimed": sum(s["final"]["reclaimed"] for s in studies),
        "resume_first_trial_median_s": statistics.median(seen) if seen else None,
        "resume_first_trial_max_s": max(seen, default=None),
        "resume_first_trial_over_target": sum(t >= RESUME_TARGET_S for t in seen),
        "resume_killed_before_first_trial": len(censored),
        "resume_killed_before_first_trial_after_s": [r["killed_at_s"] for r in censored],
        "resumes_with_nothing_left": len(nothing_left),
        "resume_first_measurement_median_s": statistics.median(measured) if measured else None,
        "resume_first_measurement_max_s": max(measured, default=None),
        "nonzero_exits": [r["exit_code"] for r in runs if r.get("exit_code") not in (None, 0)],
        "tracebacks": sum("Traceback" in r.get("stderr_tail", "") for r in runs),
        "orphans": len(orphans),
        "orphans_not_exited": sum(o["exit_s"] is None for o in orphans),
        "orphan_exit_median_s": statistics.median(exits) if exits else None,
        "orphan_exit_max_s": max(exits, default=None),
        "orphan_cpu_s_after_kill_median": (
            statistics.median(o["cpu_s_after_kill"] for o in orphans) if orphans else None
        ),
        "resumes_beginning_while_orphan_alive": sum(v is True for v in overlap),
        "resumes_compared_with_orphan": sum(v is not None for v in overlap),
        "picks": [label(s["pick"]) for s in studies],
        "reference_pick": label(result["reference"]["pick"]),
        "same_pick": sum(s["same_pick"] for s in studies),
        "reference_margin": result["reference"]["pick"]["margin"],
        "reference_noise": result["reference"]["pick"]["noise"],
    }


# -- part B: three workers, one study ----------------------------------------------------------


def server_answers(kind: str, url: str) -> str | None:
    """None if the storage's server answers, else why not."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=2):
            pass
    except OSError as exc:
        return f"{parts.hostname}:{parts.port} does not answer ({exc})"
    try:
        storage = optuna_storage(url)
        storage.get_all_studies()
        close(storage)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return None


def shared_round(kind: str, url: str, index: int, tmp: Path, keep: bool) -> dict[str, Any]:
    folder = tmp / f"b-{kind}-{index}"
    folder.mkdir()
    study = f"shared-{uuid.uuid4().hex[:10]}"
    outs = [folder / f"worker{w}.toml" for w in range(3)]
    runs = [
        Run(tune_command(url, study, out), folder, f"worker{w}", folder)
        for w, out in enumerate(outs)
    ]
    codes = [run.wait() for run in runs]
    wall = max(run.wall_s for run in runs)
    snap = Snapshot(read_trials(url, study))
    picks = [pick_of(out) for out in outs]
    placements = [p["placement"] if p else None for p in picks]
    result = {
        "storage": kind,
        "study": study,
        "exit_codes": codes,
        "wall_s": wall,
        "final": snap.counts(),
        "duplicates": snap.duplicates(),
        "picks": [label(p) for p in picks],
        "same_pick": placements[0] is not None and placements.count(placements[0]) == 3,
        "tracebacks": sum(run.traceback() for run in runs),
        "stderr_tails": {
            run.tag: run.stderr_tail()
            for run, code in zip(runs, codes, strict=True)
            if code != 0 or run.traceback()
        },
    }
    if kind not in ("sqlite", "journal") and not keep:
        import optuna

        storage = optuna_storage(url)
        with contextlib.suppress(Exception):
            optuna.delete_study(study_name=study, storage=storage)
        close(storage)
    print(
        f"   {kind:10} round {index}: exit {codes} in {wall:5.1f} s, "
        f"{result['final']['finished_measurements']} finished "
        f"({result['final']['lost_claim']} lost claims), "
        f"{len(result['duplicates'])} measured twice, {result['final']['running']} RUNNING, "
        f"picks {'the same' if result['same_pick'] else result['picks']}"
    )
    return result


def part_b(kinds: list[str], rounds: int, tmp: Path, keep: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in kinds:
        if kind in SERVER_URLS:
            url = SERVER_URLS[kind]
            why = server_answers(kind, url)
            if why is not None:
                print(f"   {kind:10} skipped: {why}")
                out[kind] = {"skipped": why}
                continue
        rows = []
        for i in range(rounds):
            if kind == "sqlite":
                url = f"sqlite:///{tmp / f'shared-{i}.db'}"
            elif kind == "journal":
                url = f"journal://{tmp / f'shared-{i}.log'}"
            rows.append(shared_round(kind, url, i, tmp, keep))
        out[kind] = {"rounds": rows}
    return out


# -- the working tree and the report ----------------------------------------------------------


def tree_state() -> dict[str, Any]:
    """Which autoplace was measured: the commit, and the uncommitted changes' digest."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout

    diff = git("diff", "HEAD", "--", "autoplace")
    return {
        "commit": git("rev-parse", "HEAD").strip(),
        "changed": git("status", "--porcelain", "--", "autoplace").split("\n")[:-1],
        "autoplace_diff_sha256": hashlib.sha256(diff.encode()).hexdigest()[:16],
    }


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}{unit}"
    return f"{value}{unit}"


def print_summary(a: dict[str, Any], b: dict[str, Any]) -> None:
    if a:
        print(
            "\nA. kill -9, resume  kills  lost  re-measured  RUNNING at end  "
            "resume to 1st trial: median (max) [killed before]  "
            "orphan worker: not exited, exit median (max), still alive at resume's 1st trial  "
            "same pick"
        )
        for kind, s in a.items():
            if "error" in s:
                print(f"   {kind:15} {s['error']}")
                continue
            print(
                f"   {kind:15} {s['kills']:6}  {s['lost']:4}  {s['remeasured']:11}  "
                f"{s['running_at_end']:14}  "
                f"{fmt(s['resume_first_trial_median_s'], ' s'):>21} "
                f"({fmt(s['resume_first_trial_max_s'], ' s')}) "
                f"[{s['resume_killed_before_first_trial']}]"
                f"{'':10}{s['orphans_not_exited']}/{s['orphans']}, "
                f"{fmt(s['orphan_exit_median_s'], ' s')} ({fmt(s['orphan_exit_max_s'], ' s')}), "
                f"{s['resumes_beginning_while_orphan_alive']}/"
                f"{s['resumes_compared_with_orphan']}"
                f"{'':26}{s['same_pick']}/{s['studies']}"
            )
    if b:
        print(
            "\nB. 3 workers, 1 study  rounds  measured twice  RUNNING left  exit codes     "
            "same placement  lost claims (in confirm; most by one worker on one config)"
        )
        for kind, s in b.items():
            if "skipped" in s:
                print(f"   {kind:18} skipped: {s['skipped']}")
                continue
            codes = "all 0" if not any(s["exit_codes"]) else str(s["exit_codes"])
            print(
                f"   {kind:18} {s['rounds']:6}  {s['measured_twice']:14}  {s['running_left']:12}  "
                f"{codes:13}  {s['same_pick']:>6}/{s['rounds']:<7}  "
                f"{s['lost_claims']} ({s['lost_claims_confirm']}; "
                f"{s['lost_claims_most_per_worker_and_config']})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 kills a storage, 1 round")
    parser.add_argument(
        "--storages",
        default=",".join(STORAGES),
        help=f"comma-separated, of {', '.join(STORAGES)} (part A uses sqlite and journal)",
    )
    parser.add_argument("--kills", type=int, help="kills per storage in part A (15; 10 quick)")
    parser.add_argument("--rounds", type=int, help="rounds per storage in part B (2; 1 quick)")
    parser.add_argument("--parts", default="A,B", help="A, B or A,B")
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill times")
    parser.add_argument("--keep", action="store_true", help="keep temporary files and studies")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    kinds = [k for k in args.storages.split(",") if k]
    unknown = sorted(set(kinds) - set(STORAGES))
    if unknown:
        parser.error(f"unknown storage {', '.join(unknown)}: choose from {', '.join(STORAGES)}")
    kills = args.kills or (10 if args.quick else 15)
    rounds = args.rounds or (1 if args.quick else 2)
    parts = {p.strip().upper() for p in args.parts.split(",")}
    started = time.perf_counter()
    tree = tree_state()
    rng = random.Random(args.seed)
    with autoplace.SubprocessBackend() as backend:
        devices = backend.devices()
    a_results, b_results = {}, {}
    with contextlib.ExitStack() as stack:
        if args.keep:
            tmp = Path(tempfile.mkdtemp(prefix="autoplace-shared-"))
            print(f"temporary files kept in {tmp}")
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="autoplace-shared-")))
        if "A" in parts:
            print(f"== A. kill -9 at random moments, then resume ({kills} kills a storage)")
            for kind in (k for k in kinds if k in KILLABLE):
                a_results[kind] = part_a(kind, kills, rng, tmp)
        if "B" in parts:
            print(f"== B. three workers on one study ({rounds} round(s) a storage)")
            b_results = part_b(kinds, rounds, tmp, args.keep)
    a_summary = {
        k: summarize_a(v) if "error" not in v else {"error": v["error"]}
        for k, v in a_results.items()
    }
    b_summary = {}
    for kind, v in b_results.items():
        if "skipped" in v:
            b_summary[kind] = {"skipped": v["skipped"]}
            continue
        rows = v["rounds"]
        b_summary[kind] = {
            "rounds": len(rows),
            "measured_twice": sum(len(r["duplicates"]) for r in rows),
            "running_left": sum(r["final"]["running"] for r in rows),
            "exit_codes": [c for r in rows for c in r["exit_codes"]],
            "same_pick": sum(r["same_pick"] for r in rows),
            "lost_claims": sum(r["final"]["lost_claim"] for r in rows),
            "lost_claims_confirm": sum(r["final"]["lost_claim_by_phase"]["confirm"] for r in rows),
            "lost_claims_most_per_worker_and_config": max(
                r["final"]["lost_claim_most_per_worker_and_config"] for r in rows
            ),
            "reclaimed": sum(r["final"]["reclaimed"] for r in rows),
            "tracebacks": sum(r["tracebacks"] for r in rows),
            "wall_s": [r["wall_s"] for r in rows],
        }
    after = tree_state()
    out = write_results(
        "shared",
        devices,
        args.out,
        {
            "command": " ".join(["python", "benchmarks/shared_study_benchmark.py", *sys.argv[1:]]),
            "settings": {
                "model": str(MODEL.relative_to(ROOT)),
                "workload": WORKLOAD,
                "space": list(SPACE),
                "kills_per_storage": kills,
                "rounds_per_storage": rounds,
                "seed": args.seed,
                "orphan_wait_s": ORPHAN_WAIT_S,
                "resume_target_s": RESUME_TARGET_S,
                "poll_s": POLL_S,
            },
            "tree": {"start": tree, "end": after, "changed_during_run": tree != after},
            "summary": {
                "part_a": a_summary,
                "part_b": b_summary,
                "total_wall_s": time.perf_counter() - started,
            },
            "part_a": a_results,
            "part_b": b_results,
        },
    )
    print_summary(a_summary, b_summary)
    if tree != after:
        print("\nnote: autoplace/ changed in the working tree during this run")
    print(f"\ntotal {time.perf_counter() - started:.0f} s; results written to {out}")


if __name__ == "__main__":
    main()
