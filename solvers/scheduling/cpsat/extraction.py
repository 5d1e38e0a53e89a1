"""Results out of a CP-SAT scheduling solve.

One job: read a solved model back as a :class:`~solvers.scheduling.problem.SchedulingSolution`
(streams by colouring, transfers on the links chosen), check it, and summarise the solve
in the result's stats.
"""
from __future__ import annotations

from ortools.sat.python import cp_model

from solvers.core import SolveOptions, Status
from solvers.scheduling.problem import ScheduledTransfer, SchedulingProblem, SchedulingSolution
from solvers.scheduling.streams import assign_streams
from solvers.scheduling.validate import validate_schedule

__all__ = ["extract_solution", "checked_solution", "run_stats"]


def extract_solution(v: "SchedulingVars", solver: cp_model.CpSolver) -> SchedulingSolution:
    """The solver's solution as a :class:`SchedulingSolution` (streams by colouring).

    ``v`` is a :class:`~solvers.scheduling.cpsat.variables.SchedulingVars` (not imported here:
    that module imports this one for :meth:`SchedulingVars.extract`).

    Examples
    --------
    >>> from solvers.scheduling.cpsat.model import build
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> model, v = build(p, horizon=20, bound=7)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> _ = solver.solve(model); extract_solution(v, solver).makespan_cycles
    7
    """
    p = v.problem
    dev = tuple(v.device_of(solver, i) for i in range(p.num_ops))
    start = tuple(int(solver.value(s)) for s in v.start)
    dur = tuple(p.durations_cycles[i][dev[i]] for i in range(p.num_ops))
    transfers = []
    for (e, link), zl in sorted(v.z.items()):
        if v.value_of(solver, zl):
            transfers.append(ScheduledTransfer(e, link, int(solver.value(v.ts[e])),
                                               p.transfer_cycles[e][link]))
    stream = assign_streams(p, dev, start, dur)
    return SchedulingSolution(dev, stream, start, dur, tuple(transfers))


def checked_solution(problem: SchedulingProblem, v: "SchedulingVars", solver: cp_model.CpSolver,
                     what: str = "CP-SAT solution") -> SchedulingSolution:
    """:func:`extract_solution`, raising AssertionError (our bug) when it fails validation.

    Examples
    --------
    >>> from solvers.scheduling.cpsat.model import build
    >>> p = SchedulingProblem(((4,), (3,)), ((0, 1, 0),), (1,), ((-1,),), ((),))
    >>> model, v = build(p, horizon=20)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> _ = solver.solve(model); checked_solution(p, v, solver).op_start
    (0, 4)
    """
    found = extract_solution(v, solver)
    errs = validate_schedule(problem, found)
    if errs:
        raise AssertionError(f"{what} fails validation: " + "; ".join(errs[:5]))
    return found


def run_stats(solver: cp_model.CpSolver, status: Status, options: SolveOptions, interleave_search: bool) -> dict:
    """The figures of one CP-SAT solve a result's stats carry.

    Examples
    --------
    >>> solver = cp_model.CpSolver(); _ = solver.solve(cp_model.CpModel())
    >>> run_stats(solver, Status.OPTIMAL, SolveOptions(), True)["cpsat_status"]
    'OPTIMAL'
    
    """
    return {"cpsat_status": status.value, "deterministic_time": solver.deterministic_time,
            "num_workers": options.num_workers, "random_seed": options.random_seed,
            "interleave_search": interleave_search,
            "cpsat_best_bound": solver.best_objective_bound if status.has_solution else None}
