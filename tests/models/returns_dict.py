"""The workload function returns a dict, not an autoplace.Workload."""

import autoplace


@autoplace.workload
def wrong(width, dtype):
    return {"state": 1}
