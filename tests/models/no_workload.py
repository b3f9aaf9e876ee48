"""A model file that imports fine but declares no workload."""

import numpy as np


def helper(width, dtype):
    return np.zeros(width, dtype)
