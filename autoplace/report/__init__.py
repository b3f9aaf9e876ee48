"""Reporting what autoplace measured and found, for people: the terminal display.

``_display`` prints a measurement, the tune's progress, its result and a
recommendation file as rich tables. Nothing here computes a figure or a verdict:
it reads the measurements and the :class:`~autoplace.tuning.Standing` the tuning
loop made.
"""

from autoplace.report._display import (
    measurement_table,
    recommendation_report,
    tune_progress,
    tune_report,
    tune_summary,
)

__all__ = [
    "measurement_table",
    "recommendation_report",
    "tune_progress",
    "tune_report",
    "tune_summary",
]
