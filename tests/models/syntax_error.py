"""A model file that does not parse: line 5 is broken."""

import autoplace

def workload(width, dtype)
    return None
