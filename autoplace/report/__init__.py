"""What autoplace measured and found, for people: the terminal's rich tables and lines, and
the offline HTML page (``_html``). Nothing here computes a figure or a verdict: it renders
the measurements and the verdict the tune drew.
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
