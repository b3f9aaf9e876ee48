"""How a benchmark records its figures: one JSON file under ``benchmarks/results/``,
named after the benchmark, the machine's hardware key and the time, tagged with the
hardware and software fingerprint and the command that produced it."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from autoplace import DeviceInfo
from autoplace._atomic import write_atomic
from autoplace.host import fingerprint, hardware_key


def write_results(
    benchmark: str, devices: list[DeviceInfo], out_dir: Path, body: dict[str, Any]
) -> Path:
    """Write ``body`` under the benchmark's header, atomically; return the file's path."""
    machine = fingerprint(devices)
    hw, sw = machine["hardware"], machine["software"]
    key = hardware_key(hw, sw)
    stamp = dt.datetime.now(dt.timezone.utc)
    doc = {
        "benchmark": benchmark,
        "date": stamp.isoformat(timespec="seconds"),
        "command": " ".join(["python", os.path.relpath(sys.argv[0]), *sys.argv[1:]]),
        "machine": {"hardware": hw, "software": sw, "key": key},
        **body,
    }
    name = f"{benchmark}-{key}-{stamp:%Y%m%d-%H%M}.json"
    return write_atomic(out_dir / name, json.dumps(doc, indent=2))
