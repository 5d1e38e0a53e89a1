"""The max-load objective through the planner's whole path: the bridge to :mod:`solvers.placement`.

``objective: max-load`` (or ``{kind: max-load, contiguous: true, cpu: <kind>}``) asks for
the throughput objective of Tarnawski et al. (NeurIPS 2020): place every op on an
accelerator or a CPU so that the largest device *load* is smallest, where

* an accelerator's load is its ops' cycles, plus ``comm(u)`` once for every op u on it
  whose output goes to another device, and once for every op u elsewhere whose output it
  consumes (the paper's "calls" model: communication is not overlapped with compute);
* a CPU's load is its ops' cycles (data already sits in CPU memory);
* accelerators hold their ops' weights (and graph inputs) within their main memory;
  colocated ops share a device; with ``contiguous`` each device's forward ops are convex.

The reduction (cvxpy style, with an inverse) is :mod:`planner.reductions.max_load`: the
spec becomes a :class:`~solvers.placement.PlacementProblem` in timeline cycles. This module
is the max-load strategy of :mod:`planner.pipeline`'s objective table (:func:`solve_max_load`
returns the :class:`~planner.stages.Solved` stage, :func:`max_load_outcome` dresses the
final outcome). CP-SAT (warm-started from the greedy split) solves the placement; the
placement is then scheduled for one sample by the spine's scheduler with every op forbidden
on all devices but its own (HEFT, then CP-SAT with a short budget), so the plan has
concrete ops and transfers and is lowered to binaries and replayed like every plan.

The plan's objective is the max-load (kind ``"max-load"``) with the placement solver's
status, bound and gap; ``makespan_cycles`` is the single-sample schedule's. The max-load is
recomputed from the plan alone by :func:`plan_loads` (an independent check, as
``validate`` is for schedules).

Examples
--------
Two 30-cycle ops in a chain on two accelerators; the 10-byte output costs 10 cycles at
1 GB/s: apart, each accelerator carries 30 + 10 = 40 < 60 together.

>>> from planner.pipeline import run
>>> from planner.spec import load_spec
>>> outcome = run(load_spec(EXAMPLE))
>>> outcome.plan.objective_kind, outcome.plan.objective, outcome.plan.status, outcome.loads
('max-load', 40, <PlanStatus.OPTIMAL: 'OPTIMAL'>, {'acc0': 40, 'acc1': 40})
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Mapping

from planner.errors import InfeasibleError, InternalError, SpecError, TimeLimitError
from planner.isa.resources import determine_resources
from planner.plan import Plan
from planner.reductions.max_load import EXAMPLE, MaxLoadReduction, comm_cycles, to_placement_problem
from planner.reductions.scheduling import Reduction, from_solution, to_problem
from planner.report.markdown import format_bytes
from planner.spec import Spec
from planner.stages import Outcome, Problem, RunSettings, Solved
from solvers.budget import run_summary
from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.placement import (
    FORBIDDEN,
    CpSatPlacementSolver,
    GreedyPlacementSolver,
    PlacementProblem,
    PlacementSolution,
    device_loads,
    linear_split,
    lower_bound,
    max_load,
    validate_placement,
)
from solvers.portfolio import Portfolio
from solvers.scheduling import CpSatScheduler, HeftScheduler, SchedulingProblem, validate_schedule

__all__ = [
    "MaxLoadSettings",
    "GivenPlacement",
    "MaxLoadDetails",
    "MaxLoadOutcome",
    "placement_baselines",
    "schedule_placement",
    "plan_loads",
    "solve_max_load",
    "max_load_outcome",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MaxLoadSettings:
    """Tunables of :func:`solve_max_load`; every field has a default.

    Examples
    --------
    >>> MaxLoadSettings().schedule_share
    0.2
    """

    # Share of the time limit given to the single-sample schedule; the placement gets the rest.
    schedule_share: float = 0.2
    # At most this many seconds for the schedule, whatever the time limit.
    schedule_max_s: float = 10.0
    # At least this many seconds for the schedule (HEFT alone needs far less).
    schedule_min_s: float = 0.2
    # CP-SAT improves HEFT's single-sample schedule only up to this many ops (the objective
    # is the max-load, which the schedule cannot change).
    schedule_cpsat_max_ops: int = 400


@dataclass(frozen=True)
class MaxLoadDetails:
    """What the max-load strategy adds to its :class:`~planner.stages.Solved` stage.

    ``placement_problem``/``placement_reduction`` are the placement problem and its inverse;
    ``schedule`` the single-sample schedule's solver result; ``loads`` every device's load
    (recomputed from the plan by :func:`plan_loads`); ``baselines`` the other placements'
    max-loads by name (None: not valid); ``extra_baselines`` their rows for
    :func:`planner.output.baseline_rows`.
    """

    placement_problem: PlacementProblem
    placement_reduction: MaxLoadReduction
    schedule: SolveResult
    loads: Mapping[str, int]
    baselines: Mapping[str, Any]
    extra_baselines: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class MaxLoadOutcome(Outcome):
    """An :class:`~planner.stages.Outcome` whose ``result`` is the placement solver's.

    ``problem``/``reduction`` are the single-sample scheduling problem (placement fixed) and
    its inverse; the other fields, with ``baselines`` and ``extra_baselines``, are the
    :class:`MaxLoadDetails`. report.md's max-load section is drawn from plan.json's ``solver``
    record (:func:`planner.report.sections.max_load_section`), as the verifier redraws it.

    Examples
    --------
    >>> from planner.output import baseline_rows
    >>> from planner.pipeline import run
    >>> from planner.spec import load_spec
    >>> outcome = run(load_spec(EXAMPLE))
    >>> [(r["solver"], r["objective"]) for r in baseline_rows(outcome)]
    [('cpsat-placement', 40), ('greedy (linear split + local search)', 40), ('linear split', 40), ('one accelerator', 60), ('lower bound', None)]
    >>> from planner.output import plan_route_sections
    >>> text, = plan_route_sections(outcome.plan, load_spec(EXAMPLE).hardware)
    >>> [line for line in text.splitlines() if line.startswith("| acc")]
    ['| acc0 | accelerator | 1 | 30 | 10 | 40 | 100.0% |', '| acc1 | accelerator | 1 | 30 | 10 | 40 | 100.0% |']
    """

    placement_problem: PlacementProblem | None = None
    placement_reduction: MaxLoadReduction | None = None
    schedule: SolveResult | None = None
    loads: Mapping[str, int] = field(default_factory=dict)


def _smallest_linear_split(problem: PlacementProblem) -> tuple[int, ...] | None:
    """The balanced linear split of a topological order (PipeDream-like), smallest target."""
    lo = lower_bound(problem)
    hi = sum(max(problem.acc_time[i], problem.cpu_time[i]) + problem.comm_time[i]
             for i in range(problem.num_nodes)) + 1
    if linear_split(problem, hi) is None:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if linear_split(problem, mid) is not None:
            hi = mid
        else:
            lo = mid + 1
    return linear_split(problem, hi)


def placement_baselines(problem: PlacementProblem) -> dict[str, tuple[int, ...] | None]:
    """Simple placements to compare with: name -> device per node (None: not valid here).

    * ``linear split`` — consecutive ops of a topological order fill accelerator 0 up to
      the smallest target load that works, then accelerator 1, ... (PipeDream-like);
    * ``one accelerator`` — every op that may on accelerator 0, the rest on CPU 0;
    * ``one CPU`` — every op on CPU 0.

    Examples
    --------
    >>> p = PlacementProblem((3, 3, 3, 3), (30, 30, 30, 30), (1, 1, 1, 0), ((0, 1), (1, 2), (2, 3)), 2, 1)
    >>> placement_baselines(p)
    {'linear split': (0, 0, 1, 1), 'one accelerator': (0, 0, 0, 0), 'one CPU': (2, 2, 2, 2)}
    """
    k, c, n = problem.num_accelerators, problem.num_cpus, problem.num_nodes
    out: dict[str, tuple[int, ...] | None] = {}
    if k:
        out["linear split"] = _smallest_linear_split(problem)
        one = tuple(0 if problem.acc_time[i] != FORBIDDEN else k for i in range(n))
        out["one accelerator"] = one if (c or FORBIDDEN not in problem.acc_time) else None
    if c:
        out["one CPU"] = tuple([k] * n)
    for name, dev in out.items():
        if dev is not None and validate_placement(problem, PlacementSolution(dev)):
            out[name] = None
    return out


def _fixed_schedule_problem(sproblem: SchedulingProblem, sred: Reduction, placement: dict[str, str]
                            ) -> SchedulingProblem:
    """The scheduling problem with every op allowed only on its placed device."""
    dev_index = {n: j for j, n in enumerate(sred.device_names)}
    rows = []
    for i, name in enumerate(sred.op_names):
        d = dev_index[placement[name]]
        row = [FORBIDDEN] * sproblem.num_devices
        if sproblem.durations_cycles[i][d] == FORBIDDEN:
            raise InternalError(f"the placement puts op {name!r} on {placement[name]}, where it cannot run")
        row[d] = sproblem.durations_cycles[i][d]
        rows.append(tuple(row))
    return replace(sproblem, durations_cycles=tuple(rows), colocation_groups=(), device_class=())


def _precheck_schedule_memory(fixed: SchedulingProblem, sred: Reduction) -> None:
    """Explain, in names, an op whose weights, received inputs and output cannot be live at once."""
    received = [0] * fixed.num_ops
    dev = [fixed.allowed_devices(i)[0] for i in range(fixed.num_ops)]
    for u, v, size in fixed.edges:
        if dev[u] != dev[v]:
            received[v] += size
    for i in range(fixed.num_ops):
        cap = fixed.memory_bytes(dev[i])
        need = fixed.resident_bytes(i) + fixed.output_bytes(i) + received[i]
        if cap and need > cap:
            raise InfeasibleError(
                f"memory: the max-load placement puts op {sred.op_names[i]!r} on {sred.device_names[dev[i]]}, which "
                f"holds {format_bytes(cap)}, but running it needs {format_bytes(need)} at once (weights, inputs "
                "received and output); the max-load model counts only weights, a concrete schedule also holds "
                "the activations: raise the memory limit")


def schedule_placement(spec: Spec, placement: dict[str, str], *, time_limit_s: float, workers: int, seed: int,
                       settings: MaxLoadSettings = MaxLoadSettings(), search: str = "deterministic"):
    """A single-sample schedule (latency) of a fixed placement by the spine's scheduler.

    HEFT, then CP-SAT warm-started from it for at most ``time_limit_s`` (graphs up to
    ``settings.schedule_cpsat_max_ops`` ops); every schedule is checked by
    :func:`solvers.scheduling.validate_schedule`.

    Returns
    -------
    (SolveResult, SchedulingProblem, Reduction)

    Raises
    ------
    InfeasibleError
        No schedule of the placement fits the devices' memory with its activations.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> result, fixed, _ = schedule_placement(load_spec(EXAMPLE), {"m/x": "acc0", "m/y": "acc1"},
    ...                                       time_limit_s=1, workers=1, seed=0)
    >>> result.objective, fixed.allowed_devices(1)  # 30 + 10 (transfer) + 30
    (70, (1,))
    """
    sproblem, sred = to_problem(replace(spec, objective="latency"))
    fixed = _fixed_schedule_problem(sproblem, sred, placement)
    _precheck_schedule_memory(fixed, sred)
    options = SolveOptions(time_limit_s=max(0.05, time_limit_s), num_workers=workers, random_seed=seed,
                           search=search)
    best = HeftScheduler().solve(fixed, options)
    if fixed.num_ops <= settings.schedule_cpsat_max_ops or not best.status.has_solution:
        hint = best.solution if best.status.has_solution else None
        exact = CpSatScheduler().solve(fixed, replace(options, hint=hint))
        if exact.status.has_solution and (not best.status.has_solution or exact.objective <= best.objective):
            best = exact
    if not best.status.has_solution:
        raise InfeasibleError(
            "the max-load placement fits the accelerators' weights, but no single-sample schedule of it fits "
            "the devices' memory together with the activations in flight (status "
            f"{best.status.value} within {time_limit_s:.2g} s); raise the memory limits or --time-limit")
    violations = validate_schedule(fixed, best.solution)
    if violations:
        raise InternalError(f"{best.solver_name} returned an invalid schedule:\n  " + "\n  ".join(violations[:20]))
    return best, fixed, sred


def plan_loads(plan: Plan, spec: Spec) -> dict[str, int]:
    """The max-load model's load of every device, recomputed from a plan alone.

    Independent of the reduction and of :mod:`solvers.placement`: op durations are the
    plan's, devices are the plan's, communication follows the module notes (each op u
    whose output crosses to another device costs ``comm(u)`` on its own device and on each
    distinct consuming device, if they are accelerators; CPUs pay none).

    Examples
    --------
    >>> from planner.plan import PlacedOp
    >>> from planner.spec import load_spec
    >>> spec = load_spec({"version": 1,
    ...     "hardware": {"devices": [{"name": "acc", "profile": "generic", "count": 2},
    ...                              {"name": "cpu", "profile": "generic"}],
    ...                  "topology": {"kind": "all-to-all", "bandwidth": "1 GB/s"}},
    ...     "models": [{"name": "m", "graph": {
    ...         "tensors": [{"name": "a", "shape": [7], "dtype": "uint8"}],
    ...         "ops": [{"name": "x", "type": "task", "outputs": ["a"], "cycles": {"acc": 5, "cpu": 50}},
    ...                 {"name": "y", "type": "task", "inputs": ["a"], "cycles": {"acc": 6, "cpu": 60}},
    ...                 {"name": "z", "type": "task", "inputs": ["a"], "cycles": {"acc": 9, "cpu": 90}}]}}],
    ...     "objective": "max-load"})
    >>> plan = Plan("s", "max-load", "FEASIBLE", 0, None, None, 0, 10**9,
    ...     (PlacedOp("m/x", "acc0", 0, 0, 5), PlacedOp("m/y", "acc1", 0, 12, 6),
    ...      PlacedOp("m/z", "cpu0", 0, 12, 90)), ())
    >>> plan_loads(plan, spec)  # acc0: 5 + 7 (sends a); acc1: 6 + 7 (receives a); cpu0: 90
    {'acc0': 12, 'acc1': 13, 'cpu0': 90}
    """
    opts = spec.max_load
    graph, hw = spec.graph, spec.hardware
    device_of = {o.name: o.device for o in plan.ops}
    loads = {d.name: 0 for d in hw.devices}
    for o in plan.ops:
        loads[o.device] += o.duration_cycles
    accelerators = {d.name for d in hw.devices if d.kind == opts.accelerator_kind}
    comm = comm_cycles(spec)
    charged: set[tuple[str, str]] = set()
    for src, dst, _ in graph.op_edges():
        a, b = device_of[src], device_of[dst]
        if a == b:
            continue
        for dev in (a, b):
            if dev in accelerators and (src, dev) not in charged:
                charged.add((src, dev))
                loads[dev] += comm[src]
    return loads


def _explain_infeasible(spec: Spec, problem: PlacementProblem, reduction: MaxLoadReduction) -> str:
    """A user-level reason when the placement solver proves infeasibility."""
    names = reduction.op_names
    k, mem = problem.num_accelerators, problem.memory_bytes
    parts = []
    if mem and problem.num_cpus == 0:  # every op must sit on an accelerator
        need = problem.held_bytes(range(problem.num_nodes))
        if need > k * mem:
            parts.append(f"the weights total {format_bytes(need)}, more than the {k} accelerators hold together "
                         f"({format_bytes(k * mem)}), and there is no CPU")
        for g in problem.groups():
            if problem.held_bytes(g) > mem:
                what = f"op {names[g[0]]!r}" if len(g) == 1 else f"colocation group {[names[i] for i in g]}"
                parts.append(f"{what} alone needs more than one accelerator's {format_bytes(mem)}")
                break
    msg = "no max-load placement satisfies the memory limit, colocation groups and contiguity together"
    return msg + (": " + "; ".join(parts) if parts else " (the placement solver proved it)")


@dataclass(frozen=True)
class GivenPlacement(Accepting):
    """A placement given by name (``plan score``, ``plan solve --warm-start``) as a solver result:
    its max-load, exact for that placement, so OPTIMAL for it (``name`` says where it came from).

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> problem, reduction = to_placement_problem(load_spec(EXAMPLE))
    >>> r = GivenPlacement.of(reduction, {op: "acc0" for op in reduction.op_names}).solve(problem)
    >>> r.solver_name, r.status.value, r.objective  # both ops on one accelerator: 30 + 30
    ('given', 'OPTIMAL', 60)
    """

    device_of: tuple[int, ...]
    name: str = "given"
    problem_type: ClassVar[type] = PlacementProblem

    @classmethod
    def of(cls, reduction: MaxLoadReduction, placement: Mapping[str, str], name: str = "given") -> "GivenPlacement":
        index = {d: i for i, d in enumerate(reduction.device_names)}
        return cls(tuple(index[placement[op]] for op in reduction.op_names), name)

    def solve(self, problem: PlacementProblem, options: SolveOptions = SolveOptions()) -> SolveResult:
        value = max_load(problem, self.device_of)
        return SolveResult(Status.OPTIMAL, value, value, PlacementSolution(self.device_of), 0.0, self.name,
                           {"stopped_by": "finished"})


def _place(problem: PlacementProblem, reduction: MaxLoadReduction, spec: Spec, options: SolveOptions,
           start: GivenPlacement | None = None) -> tuple[SolveResult, SolveResult]:
    """The greedy split and CP-SAT warm-started from it (a :class:`~solvers.portfolio.Portfolio`):
    the greedy result and the better of the two, checked twice. ``start``: ``"given"`` is the
    result as it is; another name is a third candidate of the portfolio (CP-SAT starts from the
    better of it and the greedy split; the result is never worse than either)."""
    if start is not None:
        errors = validate_placement(problem, PlacementSolution(start.device_of))
        if errors:
            raise SpecError(f"the {start.name} placement breaks the max-load constraints: {'; '.join(errors[:3])}")
    if start is not None and start.name == "given":
        greedy = GreedyPlacementSolver().solve(problem, options)
        given = start.solve(problem, options)
        return greedy, given
    # A warm start is a third candidate: CP-SAT starts from the better of it and the greedy split,
    # and the result (named after its source) is never worse than either.
    run = Portfolio(GreedyPlacementSolver(), CpSatPlacementSolver(), start=start).run(problem, options)
    greedy = run.heuristic or failure_result(Status.UNKNOWN, GreedyPlacementSolver.name, 0.0)  # it refused
    result = run.best
    if result.status is Status.INFEASIBLE:
        raise InfeasibleError(_explain_infeasible(spec, problem, reduction))
    if result.status is Status.MODEL_INVALID:
        raise InternalError(f"the placement CP-SAT model is invalid: {result.stats}")
    if not result.status.has_solution:
        raise TimeLimitError(f"no max-load placement found within {options.time_limit_s:g} s "
                             f"(status {result.status.value}); raise --time-limit")
    errors = validate_placement(problem, result.solution)
    if errors:
        raise InternalError(f"{result.solver_name} returned an invalid placement:\n  " + "\n  ".join(errors[:20]))
    if max_load(problem, result.solution.device_of) != int(result.objective):
        raise InternalError(f"{result.solver_name} reports max-load {int(result.objective)}, its placement scores "
                            f"{max_load(problem, result.solution.device_of)}")
    return greedy, result


def _solver_info(settings: RunSettings, reduction: MaxLoadReduction, result: SolveResult, greedy: SolveResult,
                 schedule: SolveResult, device_load: dict[str, int], baselines: dict[str, Any]) -> dict[str, Any]:
    """plan.json's ``solver`` record of a max-load run."""
    return {
        "name": result.solver_name, "heuristic": greedy.solver_name, "workers": settings.workers,
        "seed": settings.seed, "time_limit_s": settings.time_limit_s, "contiguous": reduction.contiguous,
        "accelerators": list(reduction.device_names[:reduction.num_accelerators]),
        "cpus": list(reduction.device_names[reduction.num_accelerators:]),
        "loads": device_load, "baselines": baselines,
        "schedule": {"name": schedule.solver_name, "status": schedule.status.value,
                     "makespan_cycles": int(schedule.objective)},
        **run_summary(settings.search, [result.stats.get("stopped_by"), schedule.stats.get("stopped_by")]),
    }


def solve_max_load(problem: Problem, tunables: MaxLoadSettings = MaxLoadSettings(),
                   start: Mapping[str, str] | None = None, start_name: str = "given") -> Solved:
    """The max-load strategy: place, schedule one sample, and invert both into a plan.

    ``start`` is a placement ``{op: device}`` of every op: with ``start_name`` ``"given"``
    (``plan score``) it is the placement, not optimised; with another name (``"warm-start"``)
    the portfolio also tries it (CP-SAT starts from the better of it and the greedy split), and the plan is never worse than either.

    ``problem`` is :func:`~planner.reductions.max_load.to_placement_problem`'s reduction.
    The time limit is shared between the placement and the single-sample schedule
    (``tunables.schedule_share``), a split fixed up front so that both stop on deterministic
    budgets (never on the wall time the placement happened to take).

    Raises
    ------
    InfeasibleError
        No placement satisfies the constraints, or no schedule of it fits memory.
    TimeLimitError
        No placement found within the time limit.
    InternalError
        The recomputed max-load or a schedule disagrees with the solver (a bug).

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> spec = load_spec(EXAMPLE)
    >>> solved = solve_max_load(Problem(spec, RunSettings.of(spec, time_limit_s=2, workers=1),
    ...                                 *to_placement_problem(spec)))
    >>> solved.plan.bound, solved.plan.makespan_cycles, dict(solved.details.loads)
    (40, 70, {'acc0': 40, 'acc1': 40})
    """
    spec, settings, placement_problem, reduction = problem.spec, problem.settings, problem.solver_problem, problem.inverse
    schedule_s = min(tunables.schedule_max_s,
                     max(tunables.schedule_min_s, tunables.schedule_share * settings.time_limit_s))
    placement_s = max(0.1, settings.time_limit_s - schedule_s)
    given = None if start is None else GivenPlacement.of(reduction, start, start_name)
    greedy, result = _place(placement_problem, reduction, spec, settings.solve_options(time_limit_s=placement_s),
                            given)
    objective = int(result.objective)
    schedule, fixed, sred = schedule_placement(
        spec, reduction.device_of(result.solution), time_limit_s=schedule_s, workers=settings.workers,
        seed=settings.seed, settings=tunables, search=settings.search)
    resources = determine_resources(spec.graph, spec.hardware)
    device_load = dict(zip(reduction.device_names, device_loads(placement_problem, result.solution.device_of)))
    baselines: dict[str, Any] = {}
    if greedy.status.has_solution:
        baselines["greedy (linear split + local search)"] = int(greedy.objective)
    for name, dev in placement_baselines(placement_problem).items():
        baselines[name] = None if dev is None else max_load(placement_problem, dev)
    spine_plan = from_solution(schedule, replace(sred, objective_kind="max-load"), fixed, spec_name=spec.name,
                               resources=resources.to_dict() if hasattr(resources, "to_dict") else dict(resources))
    plan = replace(spine_plan, status=result.status.value, objective=objective,
                   bound=None if result.bound is None else int(result.bound), gap=result.gap,
                   heuristic_objective=int(greedy.objective) if greedy.status.has_solution else None,
                   wall_time_s=result.wall_time_s,
                   solver=_solver_info(settings, reduction, result, greedy, schedule, device_load, baselines))
    loads = plan_loads(plan, spec)
    if loads != device_load or max(loads.values(), default=0) != objective:
        raise InternalError(f"the max-load recomputed from the plan ({max(loads.values(), default=0)}, loads {loads}) "
                            f"disagrees with the placement solver's ({objective}, loads {device_load})")
    extra = tuple({"solver": name, "status": "FEASIBLE" if value is not None else "INVALID", "objective": value,
                   "bound": None} for name, value in baselines.items() if not name.startswith("greedy"))
    details = MaxLoadDetails(placement_problem, reduction, schedule, loads, baselines, extra)
    return Solved(plan, fixed, replace(sred, objective_kind="max-load"), result,
                  greedy if greedy.status.has_solution else result, details)


def max_load_outcome(outcome: Outcome, solved: Solved) -> MaxLoadOutcome:
    """The pipeline's outcome with the max-load details added (the baselines' rows among them)."""
    d: MaxLoadDetails = solved.details
    stages = {f.name: getattr(outcome, f.name) for f in fields(Outcome)}
    full = MaxLoadOutcome(**{**stages, "baselines": d.baselines, "extra_baselines": d.extra_baselines},
                          placement_problem=d.placement_problem, placement_reduction=d.placement_reduction,
                          schedule=d.schedule, loads=d.loads)
    log.info("max-load %d (%s, bound %s) in %.2f s", full.plan.objective, full.result.status.value,
             full.plan.bound, full.plan.wall_time_s)
    return full
