"""Reporting what autoplace measured and found, for people: the terminal display and the
offline HTML report (``_html``).

The terminal: a measurement (``_measurement``), the tune's progress (``_progress``), its
result (``_tuned``), a recommendation file (``_recommendation``) and an explanation
(``_explained``), as rich tables, with the lines they share in ``_lines``. The page:
its assembly (``_html``), the finalists' costs (``_costs``), the curves (``_plots``) and
the table of every measurement (``_table``). Nothing here computes a figure or a verdict:
it reads the measurements and the :class:`~autoplace.tuning.Standing` the tuning loop made.
"""

from autoplace.report._explained import explanation_report
from autoplace.report._html import render, write_report
from autoplace.report._measurement import measurement_table
from autoplace.report._progress import tune_progress
from autoplace.report._recommendation import recommendation_report
from autoplace.report._tuned import tune_report, tune_summary

__all__ = [
    "explanation_report",
    "measurement_table",
    "recommendation_report",
    "render",
    "tune_progress",
    "tune_report",
    "tune_summary",
    "write_report",
]
