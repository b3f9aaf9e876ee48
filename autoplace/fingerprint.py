"""Who measured what, where: hardware, software and workload identities.

Studies are keyed by these so that workers on identical machines share results and
different machines never mix theirs.
"""

from __future__ import annotations

import hashlib
import json
import platform
import socket
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from autoplace._version import __version__
from autoplace.devices import DeviceInfo


def _version(package: str) -> str | None:
    import importlib.metadata  # here, not at the top: 15 ms a cached look-up does not need

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


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


def hardware(devices: list[DeviceInfo]) -> dict[str, Any]:
    """Device kinds and counts, the CPU model and the host name."""
    counts = Counter((d.platform, d.kind) for d in devices)
    return {
        "host": socket.gethostname(),
        "cpu": cpu_model(),
        "devices": [{"platform": p, "kind": k, "count": n} for (p, k), n in sorted(counts.items())],
    }


def software() -> dict[str, Any]:
    return {
        "autoplace": __version__,
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "optuna": _version("optuna"),
        "python": platform.python_version(),
    }


#: The version of the compact answer a finished tune leaves for ``autoplace.recommend``
#: (``autoplace.tuning._answer``): part of the software an answer holds for. Version 2:
#: ``closest`` (with its ratio, interval and verdict) and ``equivalent`` for ``runner_up``.
ANSWER_SCHEMA = 2


def study_suffix(
    objective: Mapping[str, Any], sha256: str, hw: dict[str, Any], sw: dict[str, Any]
) -> str:
    """The default study name after the workload's name: the objective (with its run
    length for time-to-finish: a study's scores hold for one), the model file's hash and
    the hardware key, e.g. ``-time-to-finish-samples180000-epochs3-c4972a4a-89bd41dbd0``.
    Identical machines share a study; different ones never mix theirs."""
    run = [f"{k}{v}" for k, v in objective.items() if k != "name" and v is not None]
    label = "-".join([str(objective["name"]), *run])
    return f"-{label}-{sha256[:8]}-{hardware_key(hw, sw)}"


def widths_label(widths: Sequence[int] | None, default_width: int | None) -> str:
    """The default study name's mark of the widths searched, after the workload's name:
    none for the file's default width alone (so that such studies keep their names),
    else ``-w8-16-32``. A study's pick holds for the widths it searched, so two searches of
    other widths are two studies, never one whose answer the last tune overwrote."""
    chosen = sorted(set(widths or ()))
    if not chosen or chosen == [default_width]:
        return ""
    return "-w" + "-".join(map(str, chosen))


def hardware_key(hw: dict[str, Any], sw: dict[str, Any]) -> str:
    """Short hash of what changes timings: devices, CPU model and the JAX versions.

    The host name is left out, so identical machines share a key (and a study).
    """
    basis = {"devices": hw["devices"], "cpu": hw["cpu"], "jax": sw["jax"], "jaxlib": sw["jaxlib"]}
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:10]
