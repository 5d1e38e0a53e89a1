"""``plan replan`` of a max-load plan: the prediction is the placement's loads at the measured speeds.

A max-load plan's objective is its busiest device's *load* (:mod:`planner.max_load`), not a
schedule's makespan, so its re-plan predicts loads: each device's compute (its ops' cycles)
times the measured ratio of that device and op type, plus its communication as the model
charges it (:func:`solvers.placement.device_loads`; not re-timed: the model's transfers are
"calls" whose cost the statistics do not measure per device). The model's placement solvers
take identical accelerators, a slowed one is not, so the re-placement is a local search on
the measured loads (:func:`relieve`): from the better of the current placement and the greedy
split, repeatedly move the one op off the busiest device that lowers the largest load most,
each placement checked by :func:`solvers.placement.validate_placement` (memory, colour
classes, contiguity), within a deterministic budget of trials. Never worse than the current
placement or the greedy split.

Examples
--------
:data:`planner.reductions.max_load.EXAMPLE` (two 30-cycle ops, 10 cycles to pass the result):
apart each accelerator carries 40; with acc1 measured 3x slower it carries 90 + 10 = 100,
and both ops on acc0 carry 60.

>>> from planner.reductions.max_load import EXAMPLE, to_placement_problem
>>> from planner.spec import load_spec
>>> spec = load_spec(EXAMPLE)
>>> problem, reduction = to_placement_problem(spec)
>>> ratios = {"acc1": {"task": 3.0, "*": 3.0}}
>>> measured_loads(problem, reduction, spec, ratios, (0, 1)), measured_loads(problem, reduction, spec, ratios, (0, 0))
((40, 100), (60, 0))
>>> relieve(problem, reduction, spec, ratios, (0, 1))
(0, 0)
"""

from __future__ import annotations

from typing import Mapping

from planner.reductions.max_load import MaxLoadReduction
from planner.spec import Spec
from solvers.placement import GreedyPlacementSolver, PlacementProblem, PlacementSolution, device_loads, validate_placement

__all__ = ["measured_loads", "relieve", "BUDGET_WORK"]

#: Ops and edges the local search may score in all (each trial scores every op and edge once): a
#: bound independent of the clock, about 2 s of Python on the reference machine.
BUDGET_WORK = 2_000_000


def _ratio(ratios: Mapping[str, Mapping[str, float]], device: str, kind: str) -> float:
    by_kind = ratios.get(device, {})
    return by_kind.get(kind, by_kind.get("*", 1.0))


def measured_loads(problem: PlacementProblem, reduction: MaxLoadReduction, spec: Spec,
                   ratios: Mapping[str, Mapping[str, float]], device_of: tuple[int, ...]) -> tuple[int, ...]:
    """Every device's load at the measured speeds: the model's loads with each op's cycles times
    its device's measured ratio for its type (module docstring)."""
    loads = list(device_loads(problem, device_of))
    for i, d in enumerate(device_of):
        cycles = problem.time_on(i, d)
        kind = spec.graph.ops[reduction.op_names[i]].type
        loads[d] += round(cycles * _ratio(ratios, reduction.device_names[d], kind)) - cycles
    return tuple(loads)


def _score(problem: PlacementProblem, reduction: MaxLoadReduction, spec: Spec,
           ratios: Mapping[str, Mapping[str, float]], device_of: tuple[int, ...]) -> tuple[int, ...]:
    """Largest load first, then the others in decreasing order (so a move that relieves one of two
    equally busy devices counts as progress)."""
    return tuple(sorted(measured_loads(problem, reduction, spec, ratios, device_of), reverse=True))


def relieve(problem: PlacementProblem, reduction: MaxLoadReduction, spec: Spec,
            ratios: Mapping[str, Mapping[str, float]], current: tuple[int, ...],
            budget_work: int = BUDGET_WORK) -> tuple[int, ...]:
    """The re-placement: steepest descent on the measured loads by moves of one op (or colour
    class) off the busiest device, from the better of ``current`` and the greedy split (``current`` on a tie)."""
    starts = [current]
    greedy = GreedyPlacementSolver().solve(problem)
    if greedy.status.has_solution:
        starts.append(tuple(greedy.solution.device_of))
    placement = min(starts, key=lambda s: _score(problem, reduction, spec, ratios, s))
    score = _score(problem, reduction, spec, ratios, placement)
    trials = budget_work // max(problem.num_nodes + len(problem.edges), 1)
    while trials > 0:
        loads = measured_loads(problem, reduction, spec, ratios, placement)
        busiest = max(range(len(loads)), key=lambda d: (loads[d], -d))
        best = None
        for group in (g for g in problem.groups() if placement[g[0]] == busiest):
            for d in range(problem.num_devices):
                if d == busiest or any(problem.time_on(i, d) < 0 for i in group) or trials <= 0:
                    continue
                trials -= 1
                trial = tuple(d if i in group else at for i, at in enumerate(placement))
                trial_score = _score(problem, reduction, spec, ratios, trial)
                if trial_score < score and (best is None or trial_score < best[0]) \
                        and not validate_placement(problem, PlacementSolution(trial)):
                    best = (trial_score, trial)
        if best is None:
            break
        score, placement = best
    return placement
