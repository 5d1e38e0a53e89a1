"""The islands section of report.md: the split, the cross-island bytes, each island's solve, the comparison.

The ratios are the other plan's objective over the islands plan's (both minimised, so above
100% the islands plan is better):

>>> _ratio(97, 100), _ratio(None, 100), _pct(_gap(100, 97))
('97.0%', '-', '3.00%')
"""

from __future__ import annotations

from typing import Any

from planner.plan import Plan
from planner.units import format_bytes

__all__ = ["render_islands_section"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _gap(objective: int | None, bound: int | None) -> float | None:
    if objective is None or bound is None:
        return None
    return 0.0 if objective == 0 else (objective - bound) / objective


def _ratio(theirs: int | None, ours: int | None) -> str:
    return "-" if not theirs or not ours else f"{100 * theirs / ours:.1f}%"


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
             "| island | devices | host memory | portions | ops | status | objective | bound given the split | gap |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["islands"]:
        host = "-" if r["host_memory_bytes"] is None else format_bytes(r["host_memory_bytes"])
        lines.append(f"| {r['name']} | {', '.join(r['devices'])} | {host} | {counts.get(r['name'], 0)} | {r['ops']} "
                     f"| {r['status']} | {r['objective']} | {r['bound_given_split']} | "
                     f"{_pct(_gap(r['objective'], r['bound_given_split']))} |")
    gangs = plan.solver["islands"].get("gangs", [])
    if gangs:
        lines += ["", "Gangs (each gang's shards start on one cycle, each on its own device; checked in the replay):", ""]
        lines += [f"- {', '.join(g['ops'])}: cycle {g['start_cycle']}" for g in gangs]
    one, big = doc["one_problem"], doc["one_island"]
    kind = plan.objective_kind
    lines += ["", f"Each island was scheduled on its own devices and fast links, then the whole graph once with "
              f"the islands' placement fixed (objective {plan.objective}).", ""]
    rounds = doc.get("arrival_rounds")
    if rounds:
        lines += [f"Latency: {len(rounds)} rounds of island solves and global schedule, each after the first "
                  "with the previous global schedule's arrival cycles of cross-island inputs (release times) "
                  "and the chains after cross-island outputs (tails); global makespan per round: "
                  f"{', '.join(map(str, rounds))}; the best (the first on a tie) is the plan. The islands' "
                  "objectives and bounds above are that round's (after the first round they include the "
                  "release times and tails).", ""]
    if big is not None:
        lines.append(f"- **One big island** (the same devices, every cross-island pair joined as fast as the fastest "
                     f"island link): objective {big['objective']} ({big['status']}, bound {big['bound']}). The "
                     f"islands plan reaches {_ratio(big['objective'], plan.objective)} of its {kind} figure "
                     "(one island's objective / the islands').")
    lines += [f"- **One problem** (the same hardware, network included, placement free, no split): objective "
              f"{one['objective']}, bound {one['bound']} ({_ratio(one['objective'], plan.objective)}). Its bound is a "
              f"lower bound of the global problem, and the plan's: bound {plan.bound}, gap {_pct(plan.gap)}. An "
              "island's own bound holds only given the split.", ""]
    return "\n".join(lines)
