"""Why the winner wins: a cost model per arm, the answers it gives, in sentences.

* ``_fit``: a line ``t(b) = a + c·b`` through an arm's step times, robust to the
  machine's noise, with where the measurements leave it;
* ``_model``: each arm's lines (steady and fed loop), one-off costs and memory;
* the answers, a family each: ``_crossing`` (where two arms' lines cross), ``_run_length``
  (compile break-even, run-length picks), ``_fixed_cost`` (put, dispatch or neither),
  ``_feeding`` (the feeding share and its remedies), ``_emulated`` (precisions with no
  faster kernels), ``_memory`` (the largest batch that fits);
* ``_explanation``: :class:`Explanation`, the answers found; ``_sentences``: them in
  words, most important first;
* ``_standing``: :func:`explain_standing`, a tuning standing's explanation with its
  verdict first (``autoplace.explain``, in ``report``, reads it from a study);
* ``_plots``: the throughput figure and the helpers every figure of the report uses
  (markers placed right on log axes); plotly is imported when a figure is drawn.

Nothing here measures or imports JAX: the study's own measurements are the evidence.
"""

from autoplace.explaining._explanation import MEMORY_MARGIN, Explanation, explain_figures
from autoplace.explaining._fit import Line, Point, fit_line, fit_memory
from autoplace.explaining._model import TIMED_CHUNKS, ArmModel, arm_models, one_off
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
from autoplace.explaining._standing import explain_standing

__all__ = [
    "FAR",
    "MEMORY_MARGIN",
    "PALETTE",
    "TIMED_CHUNKS",
    "ArmModel",
    "Explanation",
    "Line",
    "Point",
    "Style",
    "arm_key",
    "arm_models",
    "arm_styles",
    "clusters",
    "configuration_label",
    "decades",
    "explain_figures",
    "explain_standing",
    "finish_s",
    "fit_line",
    "fit_memory",
    "hline",
    "layout",
    "linear_ticks",
    "log2_axis",
    "note",
    "octaves",
    "one_off",
    "per_sample",
    "precision_color",
    "short_label",
    "throughput_figure",
    "vline",
]
