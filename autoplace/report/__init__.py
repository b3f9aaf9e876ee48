"""Reporting: the recommendation file (built, written, read) and the terminal display."""

from autoplace.report._file import SCHEMA_VERSION, read, write

__all__ = ["SCHEMA_VERSION", "read", "write"]
