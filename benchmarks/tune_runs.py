"""What the benchmarks that run whole tunes share: the workloads they tune, a code tree of
another commit, and one ``autoplace tune`` in a fresh process of its own."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The examples and the curved workloads, by name: (model file, workload).
WORKLOADS = {
    "mlp": ("studies/mnist_mlp.py", "mlp"),
    "mlp_wide": ("studies/mnist_mlp.py", "mlp_wide"),
    "vgg": ("studies/vgg_predict.py", "vgg"),
    "lstm": ("studies/lstm_classifier.py", "lstm"),
    "classify": ("studies/single_image.py", "classify"),
    "encoder": ("benchmarks/curved_workloads.py", "encoder"),
    "mixer": ("benchmarks/curved_workloads.py", "mixer"),
}


@contextlib.contextmanager
def code_tree(rev: str) -> Iterator[Path | None]:
    """The code of ``rev``: ``None`` (this tree, as it is, uncommitted changes included) for
    ``HEAD``, else a git worktree of it, removed afterwards."""
    if rev == "HEAD":
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="autoplace-tree-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(folder), rev], cwd=ROOT,
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield folder
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT,
                       capture_output=True)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class TuneRun:
    """One tune: its wall time, its study and recommendation file, or why it failed."""

    tag: str
    wall_s: float
    db: Path
    out: Path
    error: str | None


def run_tune(
    code: Path | None,
    model: str,
    workload: str,
    folder: Path,
    tag: str,
    options: Sequence[str] = (),
) -> TuneRun:
    """One ``autoplace tune`` of ``model``'s ``workload`` in a fresh process (``code``: a
    tree to run instead of this one), into a study of its own in ``folder``, with the
    command's ``options`` (``--batch-sizes 32``)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    db, out = folder / f"{tag}.db", folder / f"{tag}.toml"
    cmd = [sys.executable, "-m", "autoplace", "tune", str(ROOT / model), "--workload", workload,
           "--storage", f"sqlite:///{db}", "--out", str(out), "--json", *options]  # fmt: skip
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=folder)
    wall = time.perf_counter() - t
    failed = done.returncode != 0 or not out.exists()
    error = (done.stderr or done.stdout)[-600:] if failed else None
    return TuneRun(tag, wall, db, out, error)
