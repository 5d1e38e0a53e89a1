"""What report.md says about a warm start (``plan solve --warm-start``).

The warm start itself is :class:`planner.scheduling.PlacementStart`: HEFT with every op of the
previous placement pinned to its device, the exact scheduler's hint.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

__all__ = ["warm_start_sections", "with_warm_start_section"]


def warm_start_sections(solver: dict[str, Any]) -> tuple[str, ...]:
    """report.md's warm-start section for a plan's ``solver`` record (none without a warm start).

    Examples
    --------
    >>> warm_start_sections({"warm_start": {"ops_placed": 3, "ops": 4, "objective": 5500}})[0].splitlines()[0]
    '## Warm start'
    >>> warm_start_sections({})
    ()
    """
    warm = solver.get("warm_start")
    if warm is None:
        return ()
    head = (f"## Warm start\n\nThe solve started from a previous plan: {warm['ops_placed']} of the {warm['ops']} "
            f"ops kept their devices (ops that no longer exist dropped, new ops placed by the heuristic); ")
    if warm["objective"] is None:  # islands: a partial start hints each island's solve, it is no plan itself
        return (head + "each island's solve started from its part of that placement.",)
    return (head + f"that start scheduled to objective {warm['objective']}, and the plan is never worse than it.",)


def with_warm_start_section(outcome: Any, solved: Any) -> Any:
    """A route's ``finish``: report.md says the solve was warm-started and how many ops the start placed."""
    return replace(outcome, report_sections=(*outcome.report_sections, *warm_start_sections(outcome.plan.solver)))
