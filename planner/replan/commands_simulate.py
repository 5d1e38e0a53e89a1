"""What ``plan simulate --slow/--noise/--stats-out/--trace-out`` writes (nothing here prints).

Examples
--------
>>> from planner.replan.commands_simulate import write_what_if
>>> write_what_if.__name__
'write_what_if'
"""

from __future__ import annotations

from typing import Any

from planner.replan.stats import dumps, trace_document, what_if_stats
from planner.safe_output import atomic_file

__all__ = ["write_what_if"]


def write_what_if(verdict: Any, slow: str | None, noise_pct: float, seed: int, stats_out: str | None,
                  trace_out: str | None, force: bool) -> dict[str, Any]:
    """Replay the verified plan under the slowdown, write the stats and trace asked for, and
    return the summary ``plan simulate`` prints (``makespan_cycles``, ``change``, ``wrote``)."""
    replay, stats = what_if_stats(verdict, slow, noise_pct, seed)
    wrote = []
    for target, doc in ((stats_out, stats), (trace_out, None)):
        if target is None:
            continue
        text = dumps(doc if doc is not None else trace_document(replay, verdict.document.clock_hz))
        with atomic_file(target, force=force, inputs=[verdict.plan_dir]) as tmp:
            tmp.write_text(text)
        wrote.append(str(target))
    planned = verdict.simulation.makespan_cycles
    return {"makespan_cycles": replay.makespan_cycles, "planned_makespan_cycles": planned,
            "change": (replay.makespan_cycles - planned) / max(planned, 1), "injected": stats["injected"],
            "wrote": wrote}
