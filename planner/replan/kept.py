"""A plan's own schedule as a solver result: what ``plan replan`` keeps instead of a final solve.

When the re-plan moves no op, the placement is the plan's own, and so is its schedule: scheduling
that placement again at the spec's costs would spend the final solve's budget to find (at best)
the same thing, and could only churn the order. When it moves ops, the re-placement's schedule
at the measured speeds, its order on every stream and link kept and re-timed at the spec's costs
(:func:`at_spec_costs`), is the final schedule: the order chosen for the devices as they run.
:class:`KeptSchedule` returns such a schedule with a lower bound computed here for this spec
(never the input's own figure, which a changed spec would not bound), so its status and gap
are honest.

Examples
--------
>>> from solvers.scheduling import SchedulingProblem, SchedulingSolution
>>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
>>> r = KeptSchedule(SchedulingSolution((0, 0), (0, 0), (0, 4), (4, 3), ())).solve(p)
>>> r.solver_name, r.status.value, r.objective, r.bound
('kept', 'OPTIMAL', 7, 7)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from planner.islands.gang import retime
from solvers.core import Accepting, SolveOptions, SolveResult, Status
from solvers.scheduling import SchedulingProblem, SchedulingSolution, validate_schedule
from solvers.scheduling.bounds import lower_bound
from solvers.scheduling.problem import ScheduledTransfer
from solvers.scheduling.validate import objective_value

__all__ = ["KeptSchedule", "plan_schedule", "at_spec_costs"]


@dataclass(frozen=True)
class KeptSchedule(Accepting):
    """A solver that returns ``solution`` (a schedule of the problem it is given), with the
    problem's static lower bound: OPTIMAL when that bound meets it, else FEASIBLE."""

    solution: SchedulingSolution
    name: str = "kept"  # "re-timed": the re-placement's schedule at the spec's costs
    problem_type: ClassVar[type] = SchedulingProblem

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        """The kept schedule and its bound (the caller checks it is valid: :func:`plan_schedule`)."""
        objective = objective_value(problem, self.solution)
        bound = min(lower_bound(problem), objective)
        status = Status.OPTIMAL if bound >= objective else Status.FEASIBLE
        return SolveResult(status, objective, bound, self.solution, 0.0, self.name, {"stopped_by": "finished"})


def plan_schedule(plan: Any, problem: SchedulingProblem, reduction: Any) -> SchedulingSolution | None:
    """The schedule of a verified :class:`planner.plan.Plan` as a solution of ``problem``
    (``reduction``: its :class:`planner.reductions.scheduling.Reduction`), or None when it is
    not one: a memory-planned plan (its ops were rewritten), another graph or other costs.

    Examples
    --------
    >>> from planner.pipeline import run
    >>> from planner.reductions.scheduling import to_problem
    >>> from planner.spec import load_spec
    >>> spec = load_spec("specs/taskgraph.yaml")
    >>> problem, reduction = to_problem(spec)
    >>> plan = run(spec, time_limit_s=2, workers=1).plan
    >>> plan_schedule(plan, problem, reduction).makespan_cycles == plan.makespan_cycles
    True
    """
    ops = {o.name: o for o in plan.ops}
    if set(ops) != set(reduction.op_names):
        return None
    device = {name: i for i, name in enumerate(reduction.device_names)}
    link = {name: i for i, name in enumerate(reduction.link_names)}
    edge = {(src, dst): k for k, (src, dst, _, _) in enumerate(reduction.edges)}
    placed = [ops[name] for name in reduction.op_names]
    if any(o.device not in device for o in placed) or any(
            (t.src_op, t.dst_op) not in edge or t.link not in link for t in plan.transfers):
        return None
    solution = SchedulingSolution(
        tuple(device[o.device] for o in placed), tuple(o.stream for o in placed),
        tuple(o.start_cycle for o in placed), tuple(o.duration_cycles for o in placed),
        tuple(ScheduledTransfer(edge[(t.src_op, t.dst_op)], link[t.link], t.start_cycle, t.duration_cycles)
              for t in plan.transfers))
    return None if validate_schedule(problem, solution) else solution


def at_spec_costs(solution: SchedulingSolution, problem: SchedulingProblem) -> SchedulingSolution | None:
    """``solution`` (a schedule of ``problem`` at other speeds: same ops, edges and links) with
    ``problem``'s durations, its placement and its order on every stream and link kept, each op and
    transfer as early as that order allows; None when that is no valid schedule of ``problem``
    (memory, for one).

    Examples
    --------
    >>> from solvers.scheduling import SchedulingProblem
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> slow = SchedulingSolution((0, 0), (0, 0), (0, 8), (8, 6), ())  # measured 2x slower
    >>> at_spec_costs(slow, p).op_start
    (0, 4)
    """
    durations = tuple(problem.durations_cycles[i][d] for i, d in enumerate(solution.op_device))
    transfers = tuple(ScheduledTransfer(t.edge, t.link, t.start_cycle, problem.transfer_cycles[t.edge][t.link])
                      for t in solution.transfers)
    timed = retime(SchedulingSolution(solution.op_device, solution.op_stream, solution.op_start, durations, transfers),
                   edges=problem.edges, gangs=())
    return None if validate_schedule(problem, timed) else timed
