"""Recommendations for launchers: :func:`recommend` answers from a cache, a shared
study, or a tune, under the caller's limits (``_recommend``); the answer is a frozen
:class:`Recommendation` (``_recommendation``); ``_key`` says what an answer holds for,
``_remember`` keeps a CLI tune's answer in the cache (:class:`autoplace.host.Cache`, beside
this machine's devices), ``_listing`` shows what the cache holds, ``_pick`` applies the
caller's limits.

A cached look-up imports neither JAX, Optuna nor numpy.
"""

from autoplace.recommending._listing import listed
from autoplace.recommending._recommend import recommend
from autoplace.recommending._recommendation import Recommendation, Source
from autoplace.recommending._remember import Remembered, remember
from autoplace.recommending._request import RecommendRequest

__all__ = [
    "RecommendRequest",
    "Recommendation",
    "Remembered",
    "Source",
    "listed",
    "recommend",
    "remember",
]
