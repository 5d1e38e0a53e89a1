"""Re-planning from a given or previous placement, and from monitored statistics.

- :mod:`planner.replan.placement`: a placement read from a plan directory or a JSON
  ``{op: device}`` map, checked against a spec, pinned into a scheduling problem;
- :mod:`planner.replan.warm`: the warm start that keeps a previous placement
  (``plan solve --warm-start``);
- :mod:`planner.replan.score`: ``plan score``, a given placement scheduled, lowered, replayed
  and verified without optimising the placement.

This package imports nothing at import time, so :mod:`planner.scheduling` can use its warm start.
"""

__all__ = []  # the submodules are the API
