"""A model file whose top-level code raises."""

import autoplace

SIZES = {"small": 8}
WIDTH = SIZES["large"]  # KeyError at import, line 6


@autoplace.workload
def never(width, dtype):
    raise AssertionError("unreachable")
