"""The package root: every public name resolves, and importing it stays light."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

import autoplace


def test_every_public_name_resolves_to_what_its_home_module_holds():
    import importlib

    for name in autoplace.__all__:
        value = getattr(autoplace, name)
        home = autoplace._HOME_OF.get(name)
        if home is not None:
            assert value is getattr(importlib.import_module(home), name)
    assert callable(autoplace.workload) and not isinstance(autoplace.workload, type(os))


@pytest.mark.slow
def test_importing_autoplace_loads_neither_jax_nor_optuna_nor_numpy():
    code = (
        "import sys, autoplace, autoplace.workload; "
        "print(type(autoplace.workload).__name__, "
        "*sorted(m for m in ('jax', 'optuna', 'numpy') if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["function"]  # the decorator, not the submodule
