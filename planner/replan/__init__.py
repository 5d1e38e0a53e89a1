"""Re-planning from a given or previous placement, and from monitored statistics.

- :mod:`planner.replan.placement`: a placement read from a plan directory or a JSON
  ``{op: device}`` map, checked against a spec, pinned into a scheduling problem;
- :mod:`planner.replan.commands`: ``plan solve --warm-start`` (the warm start that keeps a
  previous placement) and ``plan score`` (a given placement scheduled, lowered, replayed and
  verified without optimising the placement).

What report.md says of a warm start, a given placement or a re-placement is drawn from the
plan's ``solver`` records (:mod:`planner.report.sections`), as the verifier redraws it.

This package imports nothing at import time, so :mod:`planner.scheduling` can use its warm start.
"""

__all__ = []  # the submodules are the API
