"""Recommendations for launchers: :func:`recommend` answers from a cache, a shared
study, or a tune, under the caller's limits (``_recommend``); the answer is a frozen
:class:`Recommendation` (``_recommendation``); ``_key`` says what an answer holds for,
``_machine`` lists this machine's devices without JAX after the first time, ``_cache``
keeps the answers (``_remember``: a CLI tune's too), ``_pick`` applies the caller's
limits.

A cached look-up imports neither JAX, Optuna nor numpy.
"""

from autoplace.recommending._cache import ENV, Cache, CacheWarning, default_dir
from autoplace.recommending._key import machine_key
from autoplace.recommending._listing import listed
from autoplace.recommending._recommend import recommend
from autoplace.recommending._recommendation import Recommendation, Source
from autoplace.recommending._remember import remember
from autoplace.recommending._request import RecommendRequest

__all__ = [
    "ENV",
    "Cache",
    "CacheWarning",
    "RecommendRequest",
    "Recommendation",
    "Source",
    "default_dir",
    "listed",
    "machine_key",
    "recommend",
    "remember",
]
