"""Why the winner wins: a cost model per arm, the answers it gives, in sentences.

* ``_fit``: a line ``t(b) = a + c·b`` through an arm's step times, robust to the
  machine's noise, with where the measurements leave it;
* ``_model``: each arm's lines (steady and fed loop), one-off costs and memory;
* ``_answers``: crossovers, compile break-even, run-length picks, feeding share,
  emulated precisions, the largest batch that fits;
* ``_explanation``: :class:`Explanation`, the sentences, most important first;
* ``_standing``: :func:`explain_standing`, a tuning standing's explanation with its
  verdict first (``autoplace.explain``, in ``report``, reads it from a study).

Nothing here measures or imports JAX: the study's own measurements are the evidence.
"""

from autoplace.explaining._explanation import MEMORY_MARGIN, Explanation, explain_figures
from autoplace.explaining._fit import Line, Point, fit_line, fit_memory
from autoplace.explaining._model import ArmModel, arm_models
from autoplace.explaining._standing import explain_standing

__all__ = [
    "MEMORY_MARGIN",
    "ArmModel",
    "Explanation",
    "Line",
    "Point",
    "arm_models",
    "explain_figures",
    "explain_standing",
    "fit_line",
    "fit_memory",
]
