"""Reporting what autoplace measured and found, for people: the terminal display
(``_display``) and the offline HTML report (``_html``).

``_display`` prints a measurement, the tune's progress, its result and a
recommendation file as rich tables. Nothing here computes a figure or a verdict:
it reads the measurements and the :class:`~autoplace.tuning.Standing` the tuning
loop made.
"""

from autoplace.report._display import (
    explanation_report,
    measurement_table,
    recommendation_report,
    tune_progress,
    tune_report,
    tune_summary,
)
from autoplace.report._html import render, write_report

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
