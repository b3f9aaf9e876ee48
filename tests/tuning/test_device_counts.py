"""The whole tune over real sharded steps, on four and eight emulated CPU devices: the
CLI's file names the count and each device's batch, and ``recommend()`` in a launcher's
own process hands back a split that trains. (On one device nothing changes: every other
test runs there.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, model

import autoplace.recommendation

LAUNCHER = """
import json, sys, jax, numpy as np, autoplace
from autoplace.workload import import_model_file, find_workloads
from pathlib import Path
path = Path(sys.argv[1])
rec = autoplace.recommend(path, storage=sys.argv[2], on_miss="raise",
                          tune_options={"batch_sizes": (8, 32), "precisions": ("float32",)})
(info, fn), = find_workloads(import_model_file(path), path).values()
work = fn(rec.width, rec.dtype())
step = jax.jit(work.step, donate_argnums=0, out_shardings=rec.replicated())
state = jax.device_put(work.state, rec.replicated())
for i in range(3):
    host = work.make_batch(rec.batch_size, np.random.default_rng(i))
    batch = jax.device_put(host, rec.sharding())
    state = step(state, batch)
jax.block_until_ready(state)
print(json.dumps({"device": rec.device, "count": rec.device_count, "batch": rec.batch_size,
                  "spans": len(batch[0].sharding.device_set), "source": rec.source}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("n", [4, 8])
def test_a_tune_over_emulated_devices_splits_the_batch_and_its_answer_trains(tmp_path, n):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env |= {"JAX_NUM_CPU_DEVICES": str(n), "JAX_PLATFORMS": "cpu"}
    storage, out = f"sqlite:///{tmp_path / 's.db'}", tmp_path / "a.toml"
    done = subprocess.run(
        [sys.executable, "-m", "autoplace", "tune", str(model("tiny_mlp")), "--batch-sizes",
         "8,32", "--precisions", "float32", "--storage", storage, "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = autoplace.recommendation.read(out)
    searched = set(doc["search_space"]["devices"])
    counts = [1, 2, 4] + ([8] if n == 8 else [])
    assert searched == {"cpu:0" if c == 1 else f"cpu:0-{c - 1}" for c in counts}
    pick = doc["recommendation"]
    assert pick["batch_size"] == pick["per_device_batch_size"] * pick["mesh"]["batch"]
    assert pick["devices"] == [f"cpu:{i}" for i in range(pick["mesh"]["batch"])]
    scaling = doc["explanation"].get("scaling")
    assert scaling is not None and scaling["counts"][0]["count"] == 1
    assert "Scaling on cpu:" in " ".join(doc["explanation"]["sentences"])
    launcher = tmp_path / "launch.py"
    launcher.write_text(textwrap.dedent(LAUNCHER))
    ran = subprocess.run(
        [sys.executable, str(launcher), str(model("tiny_mlp")), storage],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    said = json.loads(ran.stdout.splitlines()[-1])
    assert said["device"] == pick["device"] and said["spans"] == said["count"]
    assert said["batch"] == pick["batch_size"] and said["source"] in ("cache", "study")
