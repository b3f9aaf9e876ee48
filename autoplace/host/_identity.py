"""Who this machine is: its hardware and software, as a look-up's key holds them and as a
study records them.

Two views of one machine, each kept where it is compared:

* the **key** (:func:`hardware`, :func:`software`): what an answer or a machine's limits
  hold for: the CPU model and each kind of device (platform, kind, count, memory), never
  the host name, so identical machines share answers; the jax and jaxlib versions and the
  answer's schema;
* the **fingerprint** (:func:`fingerprint`): what a study, its recommendation file and
  its answer record about where they were measured: the host name too, and the versions
  of autoplace, Optuna and Python. :func:`hardware_key` is its short hash, in a study's
  default name, so identical machines share a study and different ones never mix theirs.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace._version import __version__
from autoplace.answer import ANSWER_SCHEMA
from autoplace.devices import DeviceInfo

#: Installed distributions that change which devices JAX sees, and the versions in the
#: software key: found by their ``.dist-info`` folders (importlib.metadata costs ~60 ms).
_JAX_DISTS = ("jax", "jaxlib", "jax_cuda", "jax_rocm", "libtpu")


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def installed() -> dict[str, str]:
    """The JAX distributions on ``sys.path`` and their versions, from folder names."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            dist, _, version = name[: -len(".dist-info")].partition("-")
            dist = dist.lower().replace("-", "_")
            if dist.startswith(_JAX_DISTS) and dist not in found:
                found[dist] = version
    return found


def hardware(devices: Sequence[DeviceInfo]) -> dict[str, Any]:
    """The key's hardware: CPU model and device kinds, counts and memory (no host name)."""
    counts = Counter((d.platform, d.kind, d.memory_bytes) for d in devices)
    return {
        "cpu": cpu_model(),
        "devices": [
            {"platform": p, "kind": k, "count": n, "memory": m}
            for (p, k, m), n in sorted(counts.items(), key=lambda item: str(item[0]))
        ],
    }


def software() -> dict[str, Any]:
    """The key's software: jax, jaxlib and the answer schema."""
    found = installed()
    return {"jax": found.get("jax"), "jaxlib": found.get("jaxlib"), "answer_schema": ANSWER_SCHEMA}


def fingerprint(devices: Sequence[DeviceInfo]) -> dict[str, dict[str, Any]]:
    """What a study records about where it was measured: ``hardware`` (the host name, the
    CPU model, device kinds and counts) and ``software`` (the versions of autoplace, jax,
    jaxlib, Optuna and Python)."""
    counts = Counter((d.platform, d.kind) for d in devices)
    return {
        "hardware": {
            "host": socket.gethostname(),
            "cpu": cpu_model(),
            "devices": [
                {"platform": p, "kind": k, "count": n} for (p, k), n in sorted(counts.items())
            ],
        },
        "software": {
            "autoplace": __version__,
            "jax": _version("jax"),
            "jaxlib": _version("jaxlib"),
            "optuna": _version("optuna"),
            "python": platform.python_version(),
        },
    }


def hardware_key(hw: Mapping[str, Any], sw: Mapping[str, Any]) -> str:
    """Short hash of what changes timings: devices, CPU model and the JAX versions.

    The host name is left out, so identical machines share a key (and a study).
    """
    basis = {"devices": hw["devices"], "cpu": hw["cpu"], "jax": sw["jax"], "jaxlib": sw["jaxlib"]}
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:10]


def _version(package: str) -> str | None:
    import importlib.metadata  # here, not at the top: 15 ms a cached look-up does not need

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
