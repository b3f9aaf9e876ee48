"""Why the winner wins: the answers each arm's cost model (:mod:`autoplace.costs`) gives,
in sentences, from the study's own measurements (nothing here measures or imports JAX).

The answers, a family a module (``_crossing``, ``_run_length``, ``_fixed_cost``,
``_feeding``, ``_emulated``, ``_memory``, ``_devices``), are found by ``_explanation``
and said by ``_sentences``; ``_plots`` draws the throughput figure and holds the helpers
every figure of the report uses.
"""

from autoplace.explaining._explanation import MEMORY_MARGIN, explain_figures
from autoplace.explaining._plots import (
    FAR,
    arm_styles,
    clusters,
    decades,
    hline,
    layout,
    linear_ticks,
    log2_axis,
    log_axis,
    marked,
    note,
    octaves,
    precision_color,
    scatter,
    short_label,
    throughput_figure,
)
from autoplace.explaining._run_length import finish_s, per_sample
from autoplace.explaining._value import Explanation

__all__ = [
    "FAR",
    "MEMORY_MARGIN",
    "Explanation",
    "arm_styles",
    "clusters",
    "decades",
    "explain_figures",
    "finish_s",
    "hline",
    "layout",
    "linear_ticks",
    "log2_axis",
    "log_axis",
    "marked",
    "note",
    "octaves",
    "per_sample",
    "precision_color",
    "scatter",
    "short_label",
    "throughput_figure",
]
