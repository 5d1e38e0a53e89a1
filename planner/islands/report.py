"""The islands section of report.md: the split, the cross-island bytes, each island's solve, the comparison.

Examples
--------
>>> from planner.pipeline import run
>>> outcome = run("specs/islands.yaml", time_limit_s=4, workers=1)
>>> print(outcome.report_sections[-1].splitlines()[0])
## Islands
"""

from __future__ import annotations

from typing import Any

from planner.plan import Plan
from planner.units import format_bytes

__all__ = ["render_islands_section"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def render_islands_section(plan: Plan, details: Any) -> str:
    """Markdown: the split (portions per island), the network, each island's solve, and the one-problem comparison."""
    doc = details.to_dict()
    split = doc["split"]
    counts: dict[str, int] = {}
    for portion in split["portions"]:
        counts[portion["island"]] = counts.get(portion["island"], 0) + 1
    lines = ["## Islands", "",
             f"The split ({split['solver']}, {split['status']}) put {len(split['portions'])} portions on "
             f"{len(doc['islands'])} islands: bottleneck {split['bottleneck_cycles']} cycles "
             f"(bound {split['bound']}: the split's load bound at portion granularity). "
             f"Cross-island traffic: {doc['cross_bytes']:,} bytes, {doc['network_cycles']} cycles on the shared "
             "network link.", "",
             "| island | devices | host memory | portions | ops | status | objective | bound given the split |",
             "|---|---|---|---|---|---|---|---|"]
    for r in doc["islands"]:
        host = "-" if r["host_memory_bytes"] is None else format_bytes(r["host_memory_bytes"])
        lines.append(f"| {r['name']} | {', '.join(r['devices'])} | {host} | {counts.get(r['name'], 0)} | {r['ops']} "
                     f"| {r['status']} | {r['objective']} | {r['bound_given_split']} |")
    gangs = plan.solver["islands"].get("gangs", [])
    if gangs:
        lines += ["", "Gangs (each gang's shards start on one cycle, each on its own device; checked in the replay):", ""]
        lines += [f"- {', '.join(g['ops'])}: cycle {g['start_cycle']}" for g in gangs]
    one = doc["one_problem"]
    ratio = "-" if not plan.objective else f"{100 * one['objective'] / plan.objective:.1f}%"
    lines += ["", f"Each island was scheduled on its own devices and fast links, then the whole graph once with "
              f"the islands' placement fixed (objective {plan.objective}). The same workload as one problem over "
              f"all devices (placement free, network included): objective {one['objective']}, bound "
              f"{one['bound']}. The islands plan reaches {ratio} of its {plan.objective_kind} figure "
              f"(one-problem objective / islands objective). The plan's bound {plan.bound} is the one problem's: "
              f"a lower bound of the global problem, so the gap {_pct(plan.gap)} is honest; an island's own bound "
              "holds only given the split.", ""]
    return "\n".join(lines)
