"""The report's table of every measurement: each figure as the terminal writes it, its
raw value kept for sorting, and greyed (with why, on hover) where it is to be read with care."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from autoplace import units
from autoplace.costs import TIMED_CHUNKS
from autoplace.explaining import arm_key
from autoplace.measurement import Measurement

#: The measurements table: each column's header, its raw value (kept for sorting) and how
#: the terminal writes it.
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
    """A cell: the value as the terminal writes it, the raw one kept for sorting; with a
    ``title``, greyed (a figure to read with care: the title says why)."""
    if value is None or value == "":
        return "<td></td>"
    text = html.escape(shown(value))
    said = f' class="arm" title="{html.escape(title)}"' if title else ""
    if isinstance(value, (int, float)):
        return f'<td data-v="{value!r}"{said}>{text}</td>'
    return f"<td{said}>{text}</td>"


#: A loop's chunks (the step's ``step_samples``, the fed loop's chunks) below
#: ``TIMED_CHUNKS``: a glance, one step right after the first call.
_GLANCED = "timed once (one step right after the first call): too rough to read beside a timed loop"


def _loops(m: Measurement) -> dict[str, str]:
    """The titles of ``m``'s loops that were only glanced at, by column."""
    chunks = {"steady step": m.step.samples or 1, "fed step": m.fed.timed or None}
    return {name: _GLANCED for name, n in chunks.items() if n is not None and n < TIMED_CHUNKS}


def _deviations(figures: Sequence[Measurement]) -> dict[Any, Measurement]:
    """Each lower-precision arm's measurement of its deviation from float32 (its largest):
    only a finalist's first window compares with float32, never the search."""
    out: dict[Any, Measurement] = {}
    for m in figures:
        if m.deviation_vs_float32 is None or m.precision == "float32":
            continue
        known = out.get(arm_key(m))
        if known is None or m.deviation_vs_float32 > known.deviation_vs_float32:  # type: ignore[operator]
            out[arm_key(m)] = m
    return out


def _deviation_cell(m: Measurement, measured: Mapping[Any, Measurement]) -> str:
    """``m``'s deviation from float32; where it has none but its arm measured one at
    another batch, that one, said so."""
    if m.deviation_vs_float32 is not None or arm_key(m) not in measured:
        return _cell(m.deviation_vs_float32, units.percent)
    other = measured[arm_key(m)]
    value = other.deviation_vs_float32
    title = (
        f"not compared at batch {m.batch_size} (the search does not compare with float32): "
        f"its arm's, at batch {other.batch_size}"
    )
    return (
        f'<td class="arm" data-v="{value!r}" title="{html.escape(title)}">'
        f"{units.percent(value)} (at batch {other.batch_size})</td>"
    )


def measurements_table(figures: Sequence[Measurement], standing: Any) -> str:
    best = standing.best.config if standing.best else None
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _, _ in _COLUMNS)
    measured = _deviations(figures)
    rows = []
    for m in sorted(figures, key=lambda m: (m.device, m.precision, m.width or 0, m.batch_size)):
        mark = ' class="winner"' if best and _is(m, best) else ""
        glanced = _loops(m)
        cells = "".join(
            _deviation_cell(m, measured) if name == "deviation vs float32" else
            _cell(get(m), shown, glanced.get(name, ""))
            for name, get, shown in _COLUMNS
        )  # fmt: skip
        rows.append(f"<tr{mark}>{cells}</tr>")
    body = "".join(rows)
    return f'<table id="measurements"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _is(m: Measurement, c: Any) -> bool:
    return (m.device, m.batch_size, m.precision, m.width) == (
        c.device,
        c.batch_size,
        c.precision,
        c.width,
    )
