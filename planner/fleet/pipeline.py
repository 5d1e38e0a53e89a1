"""Fleet bridge: tenants → co-location problem → solvers → allocation in the user's names.

Steps (each a function, cvxpy-style reduction with an inverse):

1. :func:`choose_variants` – for tenants with variants, the least-cost mix meeting the
   precision and the deadline (CP-SAT, :mod:`solvers.colocation.variants`);
2. :func:`expand_items` – tenants (replicas, variant instances) become *items* with an
   exact demand vector per allowed pool; an item that fits no processor is a SpecError;
3. :func:`to_problem` – demands and capacities quantised per dimension (demands rounded
   up, capacities down, so a quantised packing is a packing), identical items grouped;
4. solve in two modes side by side: **power** (fewest/cheapest processors by column
   generation, then rebalanced among the processors used to the lowest peak) and **spread**
   (lowest peak utilization over every processor), each beside its greedy baseline;
5. :func:`from_solution` – item → processor, checked in exact units.

Determinism: every solver stage is limited by deterministic time (:mod:`solvers.budget`),
and the stages of a mode (packing, the exact check on small fleets, rebalancing) split the
mode's share of the time limit by the deterministic time the earlier ones used, never by
elapsed wall time. Same spec, seed and workers give the same ``allocation.json`` bytes (it
records ``stopped_by`` per mode, not wall time), unless the wall-clock safety net fired
(``stopped_by: wall_clock``) or the spec asks for ``search: until-limit``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from planner.errors import InfeasibleError, InternalError, SpecError
from planner.fleet.backfill import simulate_fleet
from planner.fleet.resolve import DIMENSIONS, MAX_ITEMS, MAX_PLACEMENT_PAIRS, FleetSpec, Need, Pool, Tenant
from planner.fleet.reduction import (
    FleetInverse,
    Item,
    from_solution,
    pool_of,
    processor_key,
    quantum,
    to_problem,
)
from planner.spec.loader import format_path
from planner.stages import RunSettings
from solvers.colocation import (
    BASIS_POINTS,
    ColocationObjective,
    ColocationProblem,
    ColocationSolution,
    ColumnGenerationColocationSolver,
    CpSatColocationSolver,
    CpSatVariantSolver,
    FirstFitDecreasingSolver,
    VariantProblem,
    explain_infeasibility,
    validate_colocation,
)
from solvers.budget import UNTIL_LIMIT, combine_stops, run_summary
from solvers.colocation.budget import DTIME_PER_SECOND
from solvers.colocation.validate import solution_cost
from solvers.core import ProgressPoint, SolveOptions, SolveResult, Status, relative_gap

__all__ = ["Item", "VariantChoice", "ModeResult", "FleetResult", "choose_variants", "expand_items", "to_problem",
           "solve_fleet", "plan_fleet"]

log = logging.getLogger(__name__)

_MILLI = 1000  # variant rates in milli-requests per second
_EXACT_ASSIGNMENT_MAX_ITEMS = 300  # power mode also runs the assignment model up to this many items


@dataclass(frozen=True, slots=True)
class VariantChoice:
    """The mix chosen for one tenant: instances and requests/s per variant.

    >>> VariantChoice("t", {"big": 3, "small": 1}, {"big": 50.0, "small": 50.0}, 0.9, 3500, "OPTIMAL").instances
    {'big': 3, 'small': 1}
    """

    tenant: str
    instances: dict[str, int]
    served_rps: dict[str, float]
    mean_precision: float
    cost_bp: int
    status: str


@dataclass(frozen=True, slots=True)
class ModeResult:
    """One mode's allocation (power or spread) and its greedy baseline, in the user's names.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> spec = load_fleet_spec(ISSUE_EXAMPLE)
    >>> m = solve_fleet(spec, time_limit_s=2, workers=1).modes["spread"]
    >>> m.placement, m.objective, m.baseline_objective
    ({'a': 'p1', 'b': 'p0'}, 8000, 8000)
    """

    mode: str
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    wall_time_s: float
    solver: str
    placement: dict[str, str]  # item label -> processor
    processors_used: int
    cost: int
    peak_utilization: float  # fraction, exact units
    baseline_objective: float | None
    baseline_processors: int | None
    baseline_cost: int | None
    baseline_peak: float | None
    objective_unit: str
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FleetResult:
    """Everything ``plan solve`` reports for a fleet.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> spec = load_fleet_spec(ISSUE_EXAMPLE)
    >>> r = solve_fleet(spec, time_limit_s=2, workers=1)
    >>> r.chosen, r.allocation.processors_used, r.processor_loads()
    ('power', 1, {'p0': (100000, 40000000000, 0)})
    """

    spec: FleetSpec
    items: tuple[Item, ...]
    variants: tuple[VariantChoice, ...]
    modes: dict[str, ModeResult]
    chosen: str
    quantum: tuple[int, int, int]
    backfill: Any = None
    wall_time_s: float = 0.0
    search: str = "deterministic"

    @property
    def allocation(self) -> ModeResult:
        return self.modes[self.chosen]

    @property
    def solver_summary(self) -> dict[str, Any]:
        """``search``, ``stopped_by`` over every mode, and ``reproducible`` (see :mod:`solvers.budget`)."""
        return run_summary(self.search, [m.stats.get("stopped_by") for m in self.modes.values()])

    def processor_loads(self, mode: str | None = None) -> dict[str, tuple[int, int, int]]:
        """Exact summed demand per used processor."""
        m = self.modes[mode or self.chosen]
        by_label = {it.label: it for it in self.items}
        loads: dict[str, list[int]] = {}
        for label, proc in m.placement.items():
            pool = pool_of(self.spec, proc)
            row = loads.setdefault(proc, [0, 0, 0])
            for d, x in enumerate(by_label[label].demand[pool.name]):
                row[d] += x
        return {p: tuple(v) for p, v in sorted(loads.items(), key=lambda kv: processor_key(self.spec, kv[0]))}


# ---------------------------------------------------------------------------------------
def _reference_pool(spec: FleetSpec, pools: list[str]) -> Pool:
    return spec.pool(pools[0])


def _service_s(need: Need, pool: Pool) -> float:
    return need.ops_per_request / pool.ops_per_s


def choose_variants(spec: FleetSpec, tenant: Tenant, options: SolveOptions) -> VariantChoice:
    """The least-cost variant mix of one tenant (cost: basis points of a reference processor).

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec
    >>> spec = load_fleet_spec({"fleet": {
    ...     "pools": [{"name": "p", "profile": "generic", "capacity": {"ops": 1000000}}],
    ...     "tenants": [{"name": "t", "rate": 100, "precision": 0.9, "variants": [
    ...         {"name": "big", "precision": 0.95, "capacity": 20, "requirements": {"ops": 5000}},
    ...         {"name": "small", "precision": 0.85, "capacity": 50, "requirements": {"ops": 1000}}]}]}})
    >>> c = choose_variants(spec, spec.tenants[0], SolveOptions())
    >>> c.instances, c.cost_bp   # 3 x 10% + 1 x 5% of a processor
    ({'big': 3, 'small': 1}, 3500)
    """
    vs = tenant.variants
    pools = [p.name for p in spec.pools if all(p.name in v.needs for v in vs)]
    if not pools:
        raise SpecError(f"tenant {tenant.name!r}: no pool can run every variant", path=_path(tenant))
    ref = _reference_pool(spec, pools)
    caps = ref.capacity
    cost, latency = [], []
    for v in vs:
        need = v.needs[ref.name]
        dem = need.demand(v.capacity_rps)
        share = max(-(-BASIS_POINTS * x // c) for x, c in zip(dem, caps))
        if share > BASIS_POINTS:
            raise SpecError(f"tenant {tenant.name!r}: one instance of variant {v.name!r} at "
                            f"{v.capacity_rps:g} requests/s needs {share / 100:.1f}% of a {ref.name} processor; "
                            f"lower its capacity", path=_path(tenant))
        cost.append(max(1, share))
        latency.append(math.ceil(_service_s(need, ref) * 1e9))
    try:  # the problem refuses magnitudes its 64-bit model cannot hold (a rate of 10^15/s)
        problem = VariantProblem(
            rate_rps=max(1, round(tenant.rate_rps * _MILLI)),
            min_precision_bp=round((tenant.precision or 0.0) * BASIS_POINTS),
            deadline_ns=None if tenant.deadline_s is None else math.floor(tenant.deadline_s * 1e9),
            capacity_rps=tuple(max(1, math.floor(v.capacity_rps * _MILLI)) for v in vs),
            precision_bp=tuple(round(v.precision * BASIS_POINTS) for v in vs),
            latency_ns=tuple(latency), cost=tuple(cost), names=tuple(v.name for v in vs))
    except ValueError as e:
        raise SpecError(f"tenant {tenant.name!r}: its rate, capacities or deadline are out of range: {e}",
                        path=_path(tenant)) from None
    r = CpSatVariantSolver().solve(problem, options)
    if r.solution is None:
        fast = [v.name for v, lat in zip(vs, latency) if problem.deadline_ns is None or lat <= problem.deadline_ns]
        best = max((v.precision for v in vs if v.name in fast), default=None)
        why = (f"no variant meets the deadline of {tenant.deadline_s * 1e3:g} ms" if not fast else
               f"the most precise variant within the deadline reaches {best:.4g} < required {tenant.precision:.4g}"
               if tenant.precision is not None and best is not None and best < tenant.precision
               else f"solver status {r.status.value}")
        raise InfeasibleError(f"tenant {tenant.name!r}: no variant mix meets the requirements: {why}")
    sol = r.solution
    served = {v.name: s / _MILLI for v, s in zip(vs, sol.served_rps)}
    mean = sum(v.precision * s for v, s in zip(vs, sol.served_rps)) / max(1, sum(sol.served_rps))
    return VariantChoice(tenant.name, {v.name: n for v, n in zip(vs, sol.instances)}, served, mean,
                         int(r.objective), r.status.value)


def _path(tenant: Tenant) -> str | None:
    return format_path(tenant.where) or None


def _error_at(spec: FleetSpec, tenant: Tenant, message: str, key: str | None = None) -> SpecError:
    if spec.locator is not None and tenant.where:
        return spec.locator.error(message, (*tenant.where, key) if key else tenant.where)
    return SpecError(message, path=_path(tenant))


def expand_items(spec: FleetSpec, choices: dict[str, VariantChoice]) -> tuple[Item, ...]:
    """Tenants → items, each with its exact demand per pool it may use and fits.

    Raises
    ------
    SpecError
        A tenant whose instance fits no processor of any allowed pool (the message gives
        the resource, the pool, the shortfall and how many replicas would fit), or whose
        deadline no pool can meet.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec, solve_fleet
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> spec = load_fleet_spec(ISSUE_EXAMPLE)
    >>> [(it.label, it.demand["p"]) for it in expand_items(spec, {})]
    [('a', (20000, 30000000000, 0)), ('b', (80000, 10000000000, 0))]
    """
    _check_instances(spec, choices)
    items: list[Item] = []
    for t in spec.tenants:
        parts: list[tuple[str | None, float, dict[str, Need]]] = []
        if t.variants:
            choice = choices[t.name]
            for v in t.variants:
                n = choice.instances[v.name]
                for k in range(n):
                    parts.append((v.name, choice.served_rps[v.name] / n, v.needs))
        else:
            parts = [(None, t.rate_rps / t.replicas, t.needs)] * t.replicas
        counter: dict[str | None, int] = {}
        for variant, rate, needs in parts:
            demand: dict[str, tuple[int, int, int]] = {}
            worst: tuple[float, str, str, int, int] | None = None
            too_slow = []
            for pool in spec.pools:
                need = needs.get(pool.name)
                if need is None:
                    continue
                if t.deadline_s is not None and variant is None and _service_s(need, pool) > t.deadline_s:
                    too_slow.append(f"{pool.name}: {_service_s(need, pool) * 1e3:.4g} ms")
                    continue
                dem = need.demand(rate)
                cap = pool.allocatable(spec.max_utilization)
                over = [(x / c, DIMENSIONS[d], x, c) for d, (x, c) in enumerate(zip(dem, cap)) if x > c]
                if over:
                    ratio, dim, x, c = max(over)
                    if worst is None or ratio < worst[0]:
                        worst = (ratio, pool.name, dim, x, c)
                    continue
                demand[pool.name] = dem
            if not demand:
                if too_slow and worst is None:
                    raise _error_at(spec, t, f"tenant {t.name!r}: no pool meets its deadline of "
                                    f"{t.deadline_s * 1e3:g} ms (one request takes {', '.join(too_slow)})",
                                    "deadline")
                assert worst is not None
                ratio, pool_name, dim, x, c = worst
                capped = (f" (at most {spec.max_utilization:.0%} of it may be allocated)"
                          if spec.max_utilization < 1 and dim != "storage" else "")
                if dim == "storage":
                    hint = capped + "; its resident bytes alone exceed the processor"
                elif variant is not None:
                    # Variant instances come from the variant choice, not from replicas.
                    hint = capped + (f"; one instance of variant {variant!r} serves {rate:g} req/s: give the "
                                     f"variant a capacity of at most {rate / ratio:.4g}/s so an instance fits")
                else:
                    hint = capped + f"; give it replicas: {math.ceil(ratio * t.replicas)} or more"
                raise _error_at(spec, t, f"tenant {t.name!r} fits no processor: it needs {_fmt(dim, x)} of {dim} "
                                f"on pool {pool_name!r}, which offers {_fmt(dim, c)} "
                                f"(short by {_fmt(dim, x - c)}, {100 * (ratio - 1):.1f}%){hint}")
            k = counter.get(variant, 0)
            counter[variant] = k + 1
            items.append(Item(t.name, k, variant, rate, demand))
    return tuple(items)


def _check_instances(spec: FleetSpec, choices: dict[str, VariantChoice]) -> None:
    """Refuse a fleet whose variant mixes need more instances than are placed (before building them)."""
    total = sum(sum(choices[t.name].instances.values()) if t.variants else t.replicas for t in spec.tenants)
    processors = sum(p.count for p in spec.pools)
    if total > MAX_ITEMS or total * processors > MAX_PLACEMENT_PAIRS:
        mixes = ", ".join(f"{c.tenant}: {sum(c.instances.values()):,}" for c in choices.values())
        raise SpecError(f"the fleet needs {total:,} instances to place (variant mixes {mixes}) on {processors:,} "
                        f"processors; at most {MAX_ITEMS:,} instances and {MAX_PLACEMENT_PAIRS:,} instance-processor "
                        "pairs: raise the variants' capacities or lower the rates", path="fleet.tenants")


def _fmt(dim: str, x: float) -> str:
    """Human figure of a quantity in a dimension.

    >>> _fmt("ops", 2.5e12), _fmt("io", 3e10), _fmt("storage", 2**30)
    ('2.5 Tops/s', '30 GB/s', '1.07 GB')
    """
    units = {"ops": "ops/s", "io": "B/s", "storage": "B"}[dim]
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{units}"
    return f"{x:.3g} {units}"


def _check_exact(spec: FleetSpec, items: tuple[Item, ...], placement: dict[str, str]) -> tuple[int, int, float]:
    """Validate in exact units; return (processors used, cost, peak utilization)."""
    by_label = {it.label: it for it in items}
    loads: dict[str, list[int]] = {}
    for label, proc in placement.items():
        pool = pool_of(spec, proc)
        dem = by_label[label].demand.get(pool.name)
        if dem is None:
            raise InternalError(f"{label} placed on {proc}, a pool it may not use")
        row = loads.setdefault(proc, [0, 0, 0])
        for d in range(3):
            row[d] += dem[d]
    peak = 0.0
    cost = 0
    for proc, row in loads.items():
        pool = pool_of(spec, proc)
        cost += pool.cost
        for d in range(3):
            cap = pool.allocatable(spec.max_utilization)[d]
            if row[d] > cap:
                raise InternalError(f"{proc}: {DIMENSIONS[d]} load {row[d]} > allocatable capacity {cap}")
            peak = max(peak, row[d] / pool.capacity[d])
    return len(loads), cost, peak


def explain(spec: FleetSpec, problem: ColocationProblem, quantum: tuple[int, int, int]) -> str:
    """Which resource on which pool runs out, and by how much (a counting argument)."""
    lines = []
    for s in explain_infeasibility(problem)[:5]:
        pools = "+".join(spec.pools[c].name for c in s.classes)
        dim = DIMENSIONS[s.dim]
        q = quantum[s.dim]
        lines.append(f"{dim} on pool {pools} runs out: the tenants that can only use it need "
                     f"{_fmt(dim, s.demand * q)}, it offers {_fmt(dim, s.capacity * q)} "
                     f"(short by {_fmt(dim, s.missing * q)}, {100 * s.missing / s.capacity:.1f}%)")
    if not lines:
        lines.append("no single resource runs out in total, but the tenants cannot be packed onto the "
                     "processors (add processors or replicas)")
    return "; ".join(lines)


def _solve_mode(spec: FleetSpec, items, mode: str, options: SolveOptions, budget_share: float,
                hint_power: tuple[ColocationProblem, FleetInverse, ColocationSolution] | None = None
                ) -> tuple[ModeResult, ColocationProblem, FleetInverse, ColocationSolution | None]:
    t0 = time.perf_counter()
    quanta = quantum(spec)
    if mode == "power":
        problem, inverse = to_problem(spec, items, ColocationObjective.MIN_COST)
        solver = ColumnGenerationColocationSolver()
    else:
        problem, inverse = to_problem(spec, items, ColocationObjective.MIN_MAX_UTILIZATION)
        solver = CpSatColocationSolver()
    # Power: 70% of its share packs, 30% rebalances among the processors used.
    pack_share = budget_share * (0.7 if mode == "power" else 1.0)
    opts = SolveOptions(time_limit_s=max(0.2, options.time_limit_s * pack_share), num_workers=options.num_workers,
                        random_seed=options.random_seed, progress=options.progress, log=options.log,
                        search=options.search)
    baseline = FirstFitDecreasingSolver().solve(problem, opts)
    result: SolveResult = solver.solve(problem, opts)
    if not result.status.has_solution:
        if result.status is Status.INFEASIBLE or baseline.status is Status.INFEASIBLE or explain_infeasibility(problem):
            raise InfeasibleError(f"the fleet does not fit: {explain(spec, problem, quanta)}")
        raise InfeasibleError(f"no allocation found within the time limit ({result.status.value}); "
                              f"{explain(spec, problem, quanta)}")
    sol = result.solution
    status, objective, bound = result.status, result.objective, result.bound
    stats = dict(result.stats)
    # Budgets are split by the deterministic time each stage used (in seconds of time limit),
    # never by elapsed wall time, so the same spec, seed and workers give the same plan.
    spent = _spent_s(result)
    stopped = [result.stats.get("stopped_by")]
    if (mode == "power" and status is not Status.OPTIMAL and problem.num_items <= _EXACT_ASSIGNMENT_MAX_ITEMS
            and opts.time_limit_s - spent > 0.2):
        # Small fleets: the assignment model can prove what the pattern bound cannot.
        exact = CpSatColocationSolver().solve(problem, SolveOptions(
            time_limit_s=opts.time_limit_s - spent, num_workers=options.num_workers,
            random_seed=options.random_seed, hint=sol, search=options.search))
        spent += _spent_s(exact)
        stopped.append(exact.stats.get("stopped_by"))
        stats["assignment_status"] = exact.status.value
        if exact.bound is not None:
            bound = max(bound if bound is not None else exact.bound, exact.bound)
        if exact.solution is not None and exact.objective is not None and exact.objective < objective:
            sol, objective = exact.solution, exact.objective
        if bound is not None and bound >= objective:
            bound, status = objective, Status.OPTIMAL
    if mode == "power":
        # Rebalance among the processors the fewest-processors packing uses.
        bal_problem, _ = to_problem(spec, items, ColocationObjective.MIN_MAX_UTILIZATION, cost_budget=int(objective))
        left = max(0.2, options.time_limit_s * budget_share - spent)
        bal = CpSatColocationSolver().solve(bal_problem, SolveOptions(
            time_limit_s=left, num_workers=options.num_workers, random_seed=options.random_seed,
            hint=sol, search=options.search))
        stopped.append(bal.stats.get("stopped_by"))
        if bal.solution is not None and not validate_colocation(problem, bal.solution):
            if solution_cost(problem, bal.solution) <= objective:
                sol = bal.solution
                stats["rebalance_status"] = bal.status.value
                stats["rebalance_peak_bp"] = bal.objective
    # The wall clock is a safety net only; when it ended a stage, the run may not repeat.
    stats["stopped_by"] = combine_stops(stopped)
    errors = validate_colocation(problem, sol)
    if errors:
        raise InternalError(f"{mode}: solver returned an invalid packing: {errors[0]}")
    placement = from_solution(problem, inverse, items, sol)
    used, cost, peak = _check_exact(spec, items, placement)
    b_used = b_cost = b_peak = None
    if baseline.solution is not None:
        b_place = from_solution(problem, inverse, items, baseline.solution)
        b_used, b_cost, b_peak = _check_exact(spec, items, b_place)
    unit = ("cost of processors used" if mode == "power"
            else "peak share of allocatable capacity (basis points)")
    res = ModeResult(mode, status.value, objective, bound, relative_gap(objective, bound), time.perf_counter() - t0,
                     result.solver_name + ("+cpsat" if "assignment_status" in stats else ""),
                     placement, used, cost, peak, baseline.objective, b_used, b_cost, b_peak, unit, stats)
    return res, problem, inverse, sol


def _spent_s(result: SolveResult) -> float:
    """The budget a solve used, in seconds of time limit (0 when it used none): its
    deterministic time at the family's rate (until-limit search: the seconds it took)."""
    used = float(result.stats.get("dtime_used", 0.0))
    return used if result.stats.get("search") == UNTIL_LIMIT else used / DTIME_PER_SECOND


def solve_fleet(spec: FleetSpec, *, time_limit_s: float | None = None, workers: int | None = None,
                seed: int | None = None, progress: Callable[[ProgressPoint], None] | None = None,
                search: str | None = None) -> "FleetResult":
    """Plan a fleet: variants, co-location in both modes, backfill simulation.

    Parameters
    ----------
    spec : FleetSpec
        From :func:`planner.fleet.load_fleet_spec`.
    time_limit_s, workers, seed, search
        Override the spec's solver settings (``search``: ``"deterministic"`` or ``"until-limit"``).
    progress
        Receives each improving (time, objective, bound) of the exact solvers.

    Raises
    ------
    SpecError
        A tenant that fits no processor or no deadline.
    InfeasibleError
        The fleet does not fit (the message names the resource, the pool and the shortfall).

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec
    >>> spec = load_fleet_spec({"version": 1, "fleet": {
    ...     "pools": [{"name": "p", "profile": "generic", "count": 2,
    ...                "capacity": {"ops": 100000, "io": "100 GB/s"}}],
    ...     "tenants": [{"name": "a", "rate": 1, "requirements": {"ops": 20000, "io": "30 GB"}},
    ...                 {"name": "b", "rate": 1, "requirements": {"ops": 80000, "io": "10 GB"}}]}})
    >>> r = solve_fleet(spec, time_limit_s=5, workers=1)
    >>> r.allocation.placement, r.allocation.processors_used, r.allocation.status
    ({'a': 'p0', 'b': 'p0'}, 1, 'OPTIMAL')
    """
    return plan_fleet(spec, RunSettings.of(spec, time_limit_s, workers, seed, search, progress))


def plan_fleet(spec: FleetSpec, settings: RunSettings) -> "FleetResult":
    """The fleet's route (:data:`planner.pipeline.OBJECTIVES` ``"fleet"``): :func:`solve_fleet`
    with the run's settings already resolved (the spec's, overridden by the caller).

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> spec = load_fleet_spec(ISSUE_EXAMPLE)
    >>> plan_fleet(spec, RunSettings.of(spec, time_limit_s=2, workers=1)).allocation.processors_used
    1
    """
    options = settings.solve_options()
    choices = {}
    for t in spec.tenants:
        if t.variants:
            choices[t.name] = choose_variants(spec, t, SolveOptions(time_limit_s=max(0.5, options.time_limit_s * 0.05),
                                                                    num_workers=options.num_workers,
                                                                    random_seed=options.random_seed,
                                                                    search=options.search))
    items = expand_items(spec, choices)
    modes: dict[str, ModeResult] = {}
    power, *_ = _solve_mode(spec, items, "power", options, 0.6)  # variants took at most 5%
    modes["power"] = power
    spread, *_ = _solve_mode(spec, items, "spread", options, 0.3)
    modes["spread"] = spread
    result = FleetResult(spec, items, tuple(choices[n] for n in sorted(choices)), modes, spec.objective,
                         quantum(spec))
    if spec.document.fleet.backfill is not None:
        result = FleetResult(result.spec, result.items, result.variants, result.modes, result.chosen,
                             result.quantum, simulate_fleet(result))
    return FleetResult(result.spec, result.items, result.variants, result.modes, result.chosen, result.quantum,
                       result.backfill, time.perf_counter() - settings.started_s, options.search)
