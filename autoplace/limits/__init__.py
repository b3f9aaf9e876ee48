"""The machine's limits, and each step against them (the roofline).

* ``_values``: :class:`MachineLimits`, each device's :class:`DeviceLimits` (peak FLOP/s per
  precision, memory and host-to-device bandwidth, the dispatch floor), each a
  :class:`Figure` with its spread between windows;
* ``_probe``: what measures them, in a fresh process of its own (imports JAX);
* ``_lookup``: :func:`machine_limits`, measured once per hardware and software (the key
  ``recommend()`` uses) and cached; :func:`cached_limits`, only what the cache holds;
* ``_roofline``: :func:`roofline`, a step's achieved FLOP/s and bytes/s against them, and
  its regime: overhead-, memory- or compute-bound.

Importing this package imports no JAX.
"""

from autoplace.limits._lookup import LimitsRequest, cached_limits, machine_limits
from autoplace.limits._roofline import FIXED_SHARE, FLOOR_MULTIPLE, Regime, Roofline, roofline
from autoplace.limits._values import DeviceLimits, Figure, MachineLimits

__all__ = [
    "FIXED_SHARE",
    "FLOOR_MULTIPLE",
    "DeviceLimits",
    "Figure",
    "LimitsRequest",
    "MachineLimits",
    "Regime",
    "Roofline",
    "cached_limits",
    "machine_limits",
    "roofline",
]
