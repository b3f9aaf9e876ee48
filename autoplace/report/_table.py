"""The report's table of every measurement: each figure as the terminal writes it, the raw
value kept for sorting, greyed (with why, on hover) where it is to be read with care."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from autoplace import units
from autoplace.config import Arm
from autoplace.costs import TIMED_CHUNKS
from autoplace.measurement import Measurement

if TYPE_CHECKING:
    from autoplace.tuning import Standing

#: Each column's header, its raw value (kept for sorting) and how the terminal writes it.
_COLUMNS: tuple[tuple[str, Callable[[Measurement], Any], Callable[[Any], str]], ...] = (
    ("device", lambda m: m.device, str),
    ("batch", lambda m: m.batch_size, str),
    ("precision", lambda m: m.precision, str),
    ("width", lambda m: m.width, str),
    ("status", lambda m: m.status, str),
    ("samples/s (fed)", lambda m: m.fed.rate(m.batch_size), units.rate),
    ("fed step", lambda m: m.fed.step_s, units.seconds),
    ("spread", lambda m: m.fed.spread, units.percent),
    ("steady step", lambda m: m.step.step_s, units.seconds),
    ("transfer", lambda m: m.transfer_s, units.seconds),
    ("lowering", lambda m: m.lower_s, units.seconds),
    ("compile", lambda m: m.compile_s, units.seconds),
    ("first call", lambda m: m.first_call_s, units.seconds),
    ("peak memory", lambda m: m.peak_bytes, units.size),
    ("deviation vs float32", lambda m: m.deviation_vs_float32, units.percent),
    ("reason", lambda m: m.reason, str),
)


def _cell(value: Any, shown: Callable[[Any], str], title: str = "") -> str:
    """A cell, the raw value kept for sorting; with a ``title`` (why), greyed."""
    if value is None or value == "":
        return "<td></td>"
    text = html.escape(shown(value))
    said = f' class="arm" title="{html.escape(title)}"' if title else ""
    if isinstance(value, (int, float)):
        return f'<td data-v="{value!r}"{said}>{text}</td>'
    return f"<td{said}>{text}</td>"


#: Why a loop of fewer than ``TIMED_CHUNKS`` chunks is greyed.
_GLANCED = "timed once (one step right after the first call): too rough to read beside a timed loop"


def _loops(m: Measurement) -> dict[str, str]:
    """The titles of ``m``'s loops that were only glanced at, by column."""
    chunks = {"steady step": m.step.samples or 1, "fed step": m.fed.timed or None}
    return {name: _GLANCED for name, n in chunks.items() if n is not None and n < TIMED_CHUNKS}


def _deviations(figures: Sequence[Measurement]) -> dict[Arm, Measurement]:
    """Each lower-precision arm's largest deviation from float32 measured (only a finalist's
    first window compares, never the search)."""
    out: dict[Arm, Measurement] = {}
    for m in figures:
        deviation = m.deviation_vs_float32
        if deviation is None or m.precision == "float32":
            continue
        known = out.get(m.config.arm)
        if known is None or deviation > (known.deviation_vs_float32 or 0.0):
            out[m.config.arm] = m
    return out


def _deviation_cell(m: Measurement, measured: Mapping[Arm, Measurement]) -> str:
    """``m``'s deviation from float32, else its arm's at another batch, said so."""
    if m.deviation_vs_float32 is not None or m.config.arm not in measured:
        return _cell(m.deviation_vs_float32, units.percent)
    other = measured[m.config.arm]
    value = other.deviation_vs_float32
    title = (
        f"not compared at batch {m.batch_size} (the search does not compare with float32): "
        f"its arm's, at batch {other.batch_size}"
    )
    return (
        f'<td class="arm" data-v="{value!r}" title="{html.escape(title)}">'
        f"{units.percent(value)} (at batch {other.batch_size})</td>"
    )


def measurements_table(figures: Sequence[Measurement], standing: Standing) -> str:
    best = standing.best.config if standing.best else None
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _, _ in _COLUMNS)
    measured = _deviations(figures)
    rows = []
    for m in sorted(figures, key=lambda m: (m.device, m.precision, m.width or 0, m.batch_size)):
        mark = ' class="winner"' if m.config == best else ""
        glanced = _loops(m)
        cells = "".join(
            _deviation_cell(m, measured) if name == "deviation vs float32" else
            _cell(get(m), shown, glanced.get(name, ""))
            for name, get, shown in _COLUMNS
        )  # fmt: skip
        rows.append(f"<tr{mark}>{cells}</tr>")
    body = "".join(rows)
    return f'<table id="measurements"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
