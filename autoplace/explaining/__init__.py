"""Why the winner wins: the answers each arm's cost model (:mod:`autoplace.costs`) gives,
in sentences.

* the answers, a family each: ``_crossing`` (where two arms' lines cross), ``_run_length``
  (compile break-even, run-length picks), ``_fixed_cost`` (put, dispatch or neither),
  ``_feeding`` (the feeding share and its remedies), ``_emulated`` (precisions with no
  faster kernels), ``_memory`` (the largest batch that fits);
* ``_explanation``: :class:`Explanation`, the answers found; ``_sentences``: them in
  words, most important first;
* ``_plots``: the throughput figure and the helpers every figure of the report uses
  (markers placed right on log axes); plotly is imported when a figure is drawn.

Nothing here measures or imports JAX: the study's own measurements are the evidence.
"""

from autoplace.explaining._explanation import MEMORY_MARGIN, explain_figures
from autoplace.explaining._plots import (
    FAR,
    PALETTE,
    Style,
    arm_key,
    arm_styles,
    clusters,
    configuration_label,
    decades,
    hline,
    layout,
    linear_ticks,
    log2_axis,
    note,
    octaves,
    precision_color,
    short_label,
    throughput_figure,
    vline,
)
from autoplace.explaining._run_length import finish_s, per_sample
from autoplace.explaining._value import Explanation

__all__ = [
    "FAR",
    "MEMORY_MARGIN",
    "PALETTE",
    "Explanation",
    "Style",
    "arm_key",
    "arm_styles",
    "clusters",
    "configuration_label",
    "decades",
    "explain_figures",
    "finish_s",
    "hline",
    "layout",
    "linear_ticks",
    "log2_axis",
    "note",
    "octaves",
    "per_sample",
    "precision_color",
    "short_label",
    "throughput_figure",
    "vline",
]
