"""The tune's phases, in the order the loop asks them (see :mod:`._phase`).

* search: quick measurements of what the strategy proposes, each group timed in turns with
  the best so far, in the shared worker;
* confirm: the finalists, again, in windows of fresh processes: the pick rests on them;
* feeding: the pick and each other device's best, their steps fed three ways;
* remedy: the pick as it is and with settings that may stop it mapping fresh memory every
  step, where it does;
* fuse: the pick at one step a call and at several, where its fixed cost matters.
"""

from __future__ import annotations

from autoplace.tuning._confirm import Confirm
from autoplace.tuning._feeding import Feed
from autoplace.tuning._fusing import Fuse
from autoplace.tuning._phase import Phase
from autoplace.tuning._remedy import Remedy
from autoplace.tuning._search import Search

PHASES: tuple[Phase, ...] = (Search(), Confirm(), Feed(), Remedy(), Fuse())
#: The phases that follow the pick: each judges its own measurements once it is known.
AFTER_PICK: tuple[Phase, ...] = PHASES[2:]


def phase_named(name: str) -> Phase:
    """The phase a study keeps measurements under ``name`` for."""
    return next(p for p in PHASES if p.name == name)
