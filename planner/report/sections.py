"""report.md's route sections drawn from ``plan.json``'s fields alone: max-load, islands, warm
start, a given placement, a re-placement.

The one drawing of these sections. ``plan solve`` (and ``plan score``, ``plan replan``) draw
them here from the plan's fields as plan.json will hold them
(:func:`planner.output.plan_route_sections`); the verifier draws them again from the sealed
``plan.json`` (``solver`` records what each route decided, ``ops`` and ``devices`` the plan)
and the binaries' level capacities, so an edited report is refused. The routes record their
decisions in ``solver`` and render nothing: this module imports nothing from the solve stage,
so the verifier can use it. Which sections a plan has, and in which order, follows from
``solver`` (:func:`route_sections`).

Examples
--------
>>> doc = {"objective_kind": "latency", "solver": {"warm_start": {"ops_placed": 3, "ops": 4, "objective": 5500}}}
>>> [s.splitlines()[0] for s in route_sections(doc, {})]
['## Warm start']
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.units import format_bytes

__all__ = ["route_sections", "max_load_section", "islands_section", "warm_start_section", "given_placement_section",
           "replan_section"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _gap(objective: int | None, bound: int | None) -> float | None:
    if objective is None or bound is None:
        return None
    return 0.0 if objective == 0 else (objective - bound) / objective


def _ratio(theirs: int | None, ours: int | None) -> str:
    return "-" if not theirs or not ours else f"{100 * theirs / ours:.1f}%"


def _kind_of(doc: Mapping[str, Any], names: list[str]) -> str | None:
    """The kind of the first of ``names`` among plan.json's devices (max-load: one kind per role)."""
    kinds = {d["name"]: d["kind"] for d in doc["devices"]}
    return kinds.get(names[0]) if names else None


def max_load_section(doc: Mapping[str, Any], capacities: Mapping[str, int]) -> str:
    """The max-load model, per-device loads and the baselines' max-loads (``solver``'s record).

    ``capacities``: per device, its main level's capacity (the accelerators' memory).
    """
    solver = doc["solver"]
    accelerators, cpus, loads = list(solver["accelerators"]), list(solver["cpus"]), solver["loads"]
    objective = doc["objective"]
    acc_kind, cpu_kind = _kind_of(doc, accelerators), _kind_of(doc, cpus)
    memory = format_bytes(capacities[accelerators[0]]) if accelerators else "-"
    lines = ["## Max-load (Tarnawski et al., NeurIPS 2020)", "",
             f"Accelerators: kind `{acc_kind}` ({len(accelerators)}); CPUs: "
             + (f"kind `{cpu_kind}` ({len(cpus)})" if cpu_kind else "none")
             + f"; contiguous: {'yes' if solver['contiguous'] else 'no'}; accelerator memory {memory}. The objective "
             f"is the largest load; the plan's ops and transfers are one sample scheduled with this placement fixed "
             f"(makespan {doc['makespan_cycles']} cycles).", "",
             "| device | role | ops | compute cycles | communication cycles | load | of max-load |",
             "|---|---|---|---|---|---|---|"]
    compute: dict[str, int] = {}
    count: dict[str, int] = {}
    for o in doc["ops"]:
        compute[o["device"]] = compute.get(o["device"], 0) + o["duration_cycles"]
        count[o["device"]] = count.get(o["device"], 0) + 1
    top = max(loads.values(), default=0)
    for name in [*accelerators, *cpus]:
        load = loads.get(name, 0)
        role = "accelerator" if name in accelerators else "CPU"
        lines.append(f"| {name} | {role} | {count.get(name, 0)} | {compute.get(name, 0)} | "
                     f"{load - compute.get(name, 0)} | {load} | {100 * load / max(top, 1):.1f}% |")
    lines += ["", "| placement | max-load | vs planner |", "|---|---|---|"]
    for name, value in solver["baselines"].items():
        shown = "not valid (memory, colour classes or contiguity)" if value is None else value
        vs = "-" if value is None else f"{100 * (value - objective) / max(objective, 1):+.2f}%"
        lines.append(f"| {name} | {shown} | {vs} |")
    return "\n".join(lines) + "\n"


def islands_section(doc: Mapping[str, Any]) -> str:
    """The split, the network, each island's solve and the one-problem comparison (``solver.islands``)."""
    islands = doc["solver"]["islands"]
    split = islands["split"]
    counts: dict[str, int] = {}
    for portion in split["portions"]:
        counts[portion["island"]] = counts.get(portion["island"], 0) + 1
    lines = ["## Islands", "",
             f"The split ({split['solver']}, {split['status']}) put {len(split['portions'])} portions on "
             f"{len(islands['islands'])} islands: bottleneck {split['bottleneck_cycles']} cycles "
             f"(bound {split['bound']}: the split's load bound at portion granularity). "
             f"Cross-island traffic: {islands['cross_bytes']:,} bytes, {islands['network_cycles']} cycles on the "
             "shared network link.", "",
             "| island | devices | host memory | portions | ops | status | objective | bound given the split | gap |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in islands["islands"]:
        host = "-" if r["host_memory_bytes"] is None else format_bytes(r["host_memory_bytes"])
        lines.append(f"| {r['name']} | {', '.join(r['devices'])} | {host} | {counts.get(r['name'], 0)} | {r['ops']} "
                     f"| {r['status']} | {r['objective']} | {r['bound_given_split']} | "
                     f"{_pct(_gap(r['objective'], r['bound_given_split']))} |")
    gangs = islands.get("gangs", [])
    if gangs:
        lines += ["", "Gangs (each gang's shards start on one cycle, each on its own device; checked in the replay):", ""]
        lines += [f"- {', '.join(g['ops'])}: cycle {g['start_cycle']}" for g in gangs]
    one, big = islands["one_problem"], islands["one_island"]
    kind, objective = doc["objective_kind"], doc["objective"]
    lines += ["", f"Each island was scheduled on its own devices and fast links, then the whole graph once with "
              f"the islands' placement fixed (objective {objective}).", ""]
    rounds = islands.get("arrival_rounds")
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
                     f"islands plan reaches {_ratio(big['objective'], objective)} of its {kind} figure "
                     "(one island's objective / the islands').")
    lines += [f"- **One problem** (the same hardware, network included, placement free, no split): objective "
              f"{one['objective']}, bound {one['bound']} ({_ratio(one['objective'], objective)}). Its bound is a "
              f"lower bound of the global problem, and the plan's: bound {doc['bound']}, gap {_pct(doc['gap'])}. An "
              "island's own bound holds only given the split.", ""]
    return "\n".join(lines)


def warm_start_section(solver: Mapping[str, Any]) -> str:
    """How much of a previous placement the warm start kept (``solver.warm_start``).

    >>> warm_start_section({"warm_start": {"ops_placed": 3, "ops": 4, "objective": None}}).endswith(
    ...     "each island's solve started from its part of that placement.")
    True
    """
    warm = solver["warm_start"]
    head = (f"## Warm start\n\nThe solve started from a previous plan: {warm['ops_placed']} of the {warm['ops']} "
            f"ops kept their devices (ops that no longer exist dropped, new ops placed by the heuristic); ")
    if warm["objective"] is None:  # islands: a partial start hints each island's solve, it is no plan itself
        return head + "each island's solve started from its part of that placement."
    return head + f"that start scheduled to objective {warm['objective']}, and the plan is never worse than it."


def given_placement_section(solver: Mapping[str, Any]) -> str:
    """``plan score``'s placement, by the name of the file or directory it came from (``solver.placement_source``).

    >>> given_placement_section({"placement": "given", "placement_source": "p.json"}).splitlines()[2][:40]
    '`plan score` placed every op as p.json s'
    """
    return (f"## Placement given\n\n`plan score` placed every op as {solver['placement_source']} says and did not "
            "optimise the placement: the status, bound and gap are those of the schedule for that placement.")


def replan_section(solver: Mapping[str, Any]) -> str:
    """The re-placement's decision, predictions, measured speeds and moves (``solver.replan``)."""
    decision = solver["replan"]
    lines = ["## Re-placement", "", decision["reason"] + ".", "",
             f"Predicted at the measured speeds: current placement {decision['predicted_current_cycles']} cycles, "
             f"re-placed {decision['predicted_new_cycles']} cycles; migration {decision['migration_cycles']} cycles "
             "(charged over the amortisation runs). The figures above this section are the new placement at the "
             "spec's own costs.", ""]
    lines += ["| device | op type | measured / planned |", "|---|---|---|"]
    lines += [f"| {d} | {k} | {r:.3f} |" for d, by in decision["ratios"].items() for k, r in by.items() if k != "*"]
    if decision["moved"]:
        lines += ["", "| op | from | to | migration bytes | migration cycles | why |", "|---|---|---|---|---|---|"]
        lines += [f"| {m['op']} | {m['from_device']} | {m['to_device']} | {m['migration_bytes']} | "
                  f"{m['migration_cycles']} | {m['why']} |" for m in decision["moved"]]
    return "\n".join(lines)


def route_sections(doc: Mapping[str, Any], capacities: Mapping[str, int]) -> list[str]:
    """The sections the plan's route added to report.md, in the routes' order.

    Max-load (the objective), then islands (``solver.islands``), then a warm start
    (``solver.warm_start`` of a solve: a given placement records the start it scheduled from
    but says nothing of it), a given placement (``solver.placement``), a re-placement
    (``solver.replan``, after the given placement it is planned as). ``capacities``: per
    device, its main level's capacity.
    """
    solver = doc["solver"]
    given = solver.get("placement") == "given"
    sections = []
    if doc["objective_kind"] == "max-load":
        sections.append(max_load_section(doc, capacities))
    if solver.get("islands") is not None:
        sections.append(islands_section(doc))
    if solver.get("warm_start") is not None and not given:
        sections.append(warm_start_section(solver))
    if given:
        sections.append(given_placement_section(solver))
    if solver.get("replan") is not None:
        sections.append(replan_section(solver))
    return sections
