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

Reduction (cvxpy style, with an inverse): :func:`to_placement_problem` builds a
:class:`~solvers.placement.PlacementProblem` in timeline cycles: per op its cycles on the
accelerator kind and on the CPU kind (:func:`planner.pipeline.op_device_cycles`; a ``task``
op without cycles for the accelerator kind, or pinned to the CPU kind, may not use an
accelerator), ``comm(u)`` = the transfer time over the spec's links of u's largest out-edge
(the slowest link when links differ; a control edge costs the link latency), memory = the
accelerators' main memory, colour classes = colocation groups, backward flags from op
``attrs: {backward: true}``. CP-SAT (warm-started from the greedy split) solves it; the
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

>>> from planner.spec import load_spec
>>> spec = load_spec(_EXAMPLE)
>>> problem, red = to_placement_problem(spec)
>>> problem.acc_time, problem.comm_time, red.device_names
((30, 30), (10, 0), ('acc0', 'acc1'))
>>> outcome = run_max_load(spec)
>>> outcome.plan.objective_kind, outcome.plan.objective, outcome.plan.status, outcome.loads
('max-load', 40, 'OPTIMAL', {'acc0': 40, 'acc1': 40})
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from planner.errors import InfeasibleError, InternalError, TimeLimitError, UnsupportedError
from planner.pipeline import Outcome, from_solution, op_device_cycles, to_problem
from planner.plan import Plan
from planner.report.markdown import format_bytes
from solvers.budget import run_summary
from solvers.core import ProgressPoint, SolveOptions, SolveResult, Status
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

__all__ = [
    "MaxLoadSettings",
    "MaxLoadReduction",
    "MaxLoadOutcome",
    "to_placement_problem",
    "placement_baselines",
    "schedule_placement",
    "plan_loads",
    "render_max_load_section",
    "run_max_load",
]

log = logging.getLogger(__name__)

# The spec of the Examples: two chained 30-cycle tasks, a 10-byte tensor between them.
_EXAMPLE: dict[str, Any] = {
    "version": 1, "name": "chain",
    "hardware": {"devices": [{"name": "acc", "profile": "generic", "count": 2}],
                 "topology": {"kind": "all-to-all", "bandwidth": "1 GB/s"}},
    "models": [{"name": "m", "graph": {
        "tensors": [{"name": "a", "shape": [10], "dtype": "uint8"}],
        "ops": [{"name": "x", "type": "task", "outputs": ["a"], "cycles": {"acc": 30}},
                {"name": "y", "type": "task", "inputs": ["a"], "cycles": {"acc": 30}}]}}],
    "objective": "max-load", "solver": {"time_limit": "5 s", "workers": 1}}


@dataclass(frozen=True, slots=True)
class MaxLoadSettings:
    """Tunables of :func:`run_max_load`; every field has a default.

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
class MaxLoadReduction:
    """The inverse map of :func:`to_placement_problem`: placement indices back to names.

    ``device_names`` lists the accelerators (placement devices ``0..k-1``), then the CPUs.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> _, red = to_placement_problem(load_spec(_EXAMPLE))
    >>> red.op_names, red.num_accelerators, red.cpu_kind
    (('m/x', 'm/y'), 2, None)
    """

    op_names: tuple[str, ...]
    device_names: tuple[str, ...]
    num_accelerators: int
    accelerator_kind: str | None
    cpu_kind: str | None
    contiguous: bool

    def device_of(self, solution: PlacementSolution) -> dict[str, str]:
        """Op name -> device instance name of a placement.

        Examples
        --------
        >>> r = MaxLoadReduction(("m/x", "m/y"), ("acc0", "cpu0"), 1, "acc", "cpu", False)
        >>> r.device_of(PlacementSolution((0, 1)))
        {'m/x': 'acc0', 'm/y': 'cpu0'}
        """
        return {op: self.device_names[d] for op, d in zip(self.op_names, solution.device_of)}


@dataclass
class MaxLoadOutcome(Outcome):
    """An :class:`~planner.pipeline.Outcome` whose ``result`` is the placement solver's.

    ``problem``/``reduction`` are the single-sample scheduling problem (placement fixed) and
    its inverse; ``schedule`` is that schedule's solver result. ``extra_baselines`` and
    ``report_sections`` are shown by :mod:`planner.output` (baseline rows and report.md).

    Examples
    --------
    >>> from planner.output import baseline_rows
    >>> from planner.spec import load_spec
    >>> outcome = run_max_load(load_spec(_EXAMPLE))
    >>> [(r["solver"], r["objective"]) for r in baseline_rows(outcome)]
    [('cpsat-placement', 40), ('greedy (linear split + local search)', 40), ('linear split', 40), ('one accelerator', 60), ('lower bound', None)]
    """

    placement_problem: PlacementProblem | None = None
    placement_reduction: MaxLoadReduction | None = None
    schedule: SolveResult | None = None
    loads: dict[str, int] = field(default_factory=dict)
    baselines: dict[str, Any] = field(default_factory=dict)
    extra_baselines: list[dict[str, Any]] = field(default_factory=list)
    report_sections: list[str] = field(default_factory=list)


def _resident_bytes(graph, op: str) -> int:
    """Weights and graph inputs an op reads (what the scheduler keeps resident, too)."""
    return sum(graph.tensors[t].size_bytes for t in graph.ops[op].inputs
               if graph.tensors[t].kind in ("weight", "input"))


def _comm_cycles(spec) -> dict[str, int]:
    """Per op: the transfer time of its largest out-edge over the slowest link (0: no out-edge)."""
    graph, hw = spec.graph, spec.hardware
    largest: dict[str, int] = {}
    for src, dst, _ in graph.op_edges():
        largest[src] = max(largest.get(src, 0), graph.edge_bytes(src, dst))
    if not hw.links:
        return {op: 0 for op in largest}
    return {op: max(link.transfer_cycles(b, hw.clock_hz) for link in hw.links) for op, b in largest.items()}


def to_placement_problem(spec, cycles: dict[tuple[str, str], int | None] | None = None
                         ) -> tuple[PlacementProblem, MaxLoadReduction]:
    """The spec's max-load problem in timeline cycles, and its inverse map.

    Nodes are the ops in the graph's topological order; devices the accelerator-kind
    instances, then the CPU-kind instances (see the module notes for every field).

    Raises
    ------
    UnsupportedError
        An op that cannot run on the CPU kind (the model needs a CPU time for every op).
    InfeasibleError
        An op that may run on no device (CPU-only with no CPUs).

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> spec = load_spec({"version": 1,
    ...     "hardware": {"devices": [{"name": "acc", "profile": "generic"}, {"name": "cpu", "profile": "generic"}],
    ...                  "topology": {"kind": "bus", "bandwidth": "1 GB/s", "latency": 5}},
    ...     "models": [{"name": "m", "graph": {
    ...         "tensors": [{"name": "w", "shape": [64], "dtype": "uint8", "kind": "weight"},
    ...                     {"name": "a", "shape": [100], "dtype": "uint8"}],
    ...         "ops": [{"name": "x", "type": "task", "inputs": ["w"], "outputs": ["a"],
    ...                  "cycles": {"acc": 30, "cpu": 300}, "attrs": {"backward": True}},
    ...                 {"name": "y", "type": "task", "inputs": ["a"], "cycles": {"cpu": 70}}]}}],
    ...     "objective": "max-load"})
    >>> p, red = to_placement_problem(spec)
    >>> p.acc_time, p.cpu_time, p.comm_time, p.size_bytes, p.is_backward
    ((30, -1), (300, 70), (105, 0), (64, 0), (True, False))
    >>> red.device_names, red.num_accelerators, p.memory_bytes == 1 << 40
    (('acc0', 'cpu0'), 1, True)
    """
    opts = spec.max_load
    if opts is None:
        raise ValueError(f"the spec's objective is {spec.objective}, not max-load")
    graph, hw = spec.graph, spec.hardware
    cycles = op_device_cycles(graph, hw) if cycles is None else cycles
    ops = graph.topological_order()
    index = {n: i for i, n in enumerate(ops)}
    accs = [d for d in hw.devices if d.kind == opts.accelerator_kind]
    cpus = [d for d in hw.devices if d.kind == opts.cpu_kind]
    cpu_names = {d.name for d in cpus}
    acc_time, cpu_time = [], []
    for name in ops:
        allowed = spec.allowed_devices.get(name)
        pinned_to_cpu = allowed is not None and set(allowed) <= cpu_names
        a = cycles[name, accs[0].kind] if accs else None
        acc_time.append(FORBIDDEN if a is None or pinned_to_cpu else a)
        if cpus:
            c = cycles[name, cpus[0].kind]
            if c is None:
                raise UnsupportedError(
                    f"op {name!r} gives no cycles for the CPU kind {opts.cpu_kind!r}; the max-load model "
                    f"needs every op to be able to run on a CPU (give it cycles: {{{opts.cpu_kind}: ...}})")
            cpu_time.append(c)
        else:
            cpu_time.append(0)
            if acc_time[-1] == FORBIDDEN:
                raise InfeasibleError(f"op {name!r} can run on no device: it gives no cycles for the "
                                      f"accelerator kind {opts.accelerator_kind!r}, and there is no CPU kind")
    comm = _comm_cycles(spec)
    edges = sorted({(index[u], index[v]) for u, v, _ in graph.op_edges()})
    problem = PlacementProblem(
        acc_time=tuple(acc_time), cpu_time=tuple(cpu_time),
        comm_time=tuple(comm.get(n, 0) for n in ops), edges=tuple(edges),
        num_accelerators=len(accs), num_cpus=len(cpus),
        size_bytes=tuple(_resident_bytes(graph, n) for n in ops),
        memory_bytes=accs[0].memory_capacity_bytes if accs else 0,
        color_classes=tuple(tuple(sorted(index[n] for n in g)) for g in spec.colocation_groups),
        is_backward=tuple(bool(graph.ops[n].attrs.get("backward", False)) for n in ops),
        contiguous=opts.contiguous, node_names=tuple(ops))
    reduction = MaxLoadReduction(tuple(ops), tuple(d.name for d in (*accs, *cpus)), len(accs),
                                 opts.accelerator_kind, opts.cpu_kind, opts.contiguous)
    return problem, reduction


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


def _fixed_schedule_problem(sproblem, sred, placement: dict[str, str]):
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


def _precheck_schedule_memory(fixed, sred) -> None:
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


def schedule_placement(spec, placement: dict[str, str], *, time_limit_s: float, workers: int, seed: int,
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
    >>> result, fixed, _ = schedule_placement(load_spec(_EXAMPLE), {"m/x": "acc0", "m/y": "acc1"},
    ...                                       time_limit_s=1, workers=1, seed=0)
    >>> result.objective, fixed.allowed_devices(1)  # 30 + 10 (transfer) + 30
    (70, (1,))
    """
    from solvers.scheduling import CpSatScheduler, HeftScheduler, validate_schedule

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


def plan_loads(plan: Plan, spec) -> dict[str, int]:
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
    comm = _comm_cycles(spec)
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


def _role(reduction: MaxLoadReduction, name: str) -> str:
    return "accelerator" if name in reduction.device_names[:reduction.num_accelerators] else "CPU"


def render_max_load_section(outcome: "MaxLoadOutcome") -> str:
    """The report.md section: the model, per-device loads and the baselines' max-loads.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> text = render_max_load_section(run_max_load(load_spec(_EXAMPLE)))
    >>> [line for line in text.splitlines() if line.startswith("| acc")]
    ['| acc0 | accelerator | 1 | 30 | 10 | 40 | 100.0% |', '| acc1 | accelerator | 1 | 30 | 10 | 40 | 100.0% |']
    """
    red, p, plan = outcome.placement_reduction, outcome.placement_problem, outcome.plan
    lines = ["## Max-load (Tarnawski et al., NeurIPS 2020)", "",
             f"Accelerators: kind `{red.accelerator_kind}` ({red.num_accelerators}); CPUs: "
             + (f"kind `{red.cpu_kind}` ({len(red.device_names) - red.num_accelerators})" if red.cpu_kind else "none")
             + f"; contiguous: {'yes' if red.contiguous else 'no'}; accelerator memory "
             f"{format_bytes(p.memory_bytes) if p.num_accelerators else '-'}. The objective is the largest load; "
             f"the plan's ops and transfers are one sample scheduled with this placement fixed "
             f"(makespan {plan.makespan_cycles} cycles).", "",
             "| device | role | ops | compute cycles | communication cycles | load | of max-load |",
             "|---|---|---|---|---|---|---|"]
    compute: dict[str, int] = {}
    count: dict[str, int] = {}
    for o in plan.ops:
        compute[o.device] = compute.get(o.device, 0) + o.duration_cycles
        count[o.device] = count.get(o.device, 0) + 1
    top = max(outcome.loads.values(), default=0)
    for name in red.device_names:
        load = outcome.loads.get(name, 0)
        lines.append(f"| {name} | {_role(red, name)} | {count.get(name, 0)} | {compute.get(name, 0)} | "
                     f"{load - compute.get(name, 0)} | {load} | {100 * load / max(top, 1):.1f}% |")
    lines += ["", "| placement | max-load | vs planner |", "|---|---|---|"]
    for name, value in outcome.baselines.items():
        shown = "not valid (memory, colour classes or contiguity)" if value is None else value
        vs = "-" if value is None else f"{100 * (value - plan.objective) / max(plan.objective, 1):+.2f}%"
        lines.append(f"| {name} | {shown} | {vs} |")
    return "\n".join(lines) + "\n"


def _explain_infeasible(spec, problem: PlacementProblem, reduction: MaxLoadReduction) -> str:
    """A user-level reason when the placement solver proves infeasibility."""
    names = reduction.op_names
    k, mem = problem.num_accelerators, problem.memory_bytes
    parts = []
    if mem and problem.num_cpus == 0:  # every op must sit on an accelerator
        need = sum(problem.size(i) for i in range(problem.num_nodes))
        if need > k * mem:
            parts.append(f"the weights total {format_bytes(need)}, more than the {k} accelerators hold together "
                         f"({format_bytes(k * mem)}), and there is no CPU")
        for g in problem.groups():
            if sum(problem.size(i) for i in g) > mem:
                what = f"op {names[g[0]]!r}" if len(g) == 1 else f"colocation group {[names[i] for i in g]}"
                parts.append(f"{what} alone needs more than one accelerator's {format_bytes(mem)}")
                break
    msg = "no max-load placement satisfies the memory limit, colocation groups and contiguity together"
    return msg + (": " + "; ".join(parts) if parts else " (the placement solver proved it)")


def run_max_load(spec, time_limit_s: float | None = None, workers: int | None = None,
                 seed: int | None = None, progress: Callable[[ProgressPoint], None] | None = None,
                 solver_log: Callable[[str], None] | None = None, *,
                 settings: MaxLoadSettings = MaxLoadSettings(), search: str | None = None) -> MaxLoadOutcome:
    """Plan a max-load spec end to end: place, schedule one sample, lower, replay, verify.

    Parameters are those of :func:`planner.pipeline.run` (which calls this for
    ``objective: max-load``); the time limit is shared between the placement and the
    single-sample schedule (``settings.schedule_share``), a split fixed up front so that both
    stop on deterministic budgets (never on the wall time the placement happened to take).

    Raises
    ------
    InfeasibleError
        No placement satisfies the constraints, or no schedule of it fits memory.
    TimeLimitError
        No placement found within the time limit.
    InternalError
        The recomputed max-load, a schedule or the replay disagrees with the plan (a bug).

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> outcome = run_max_load(load_spec(_EXAMPLE), time_limit_s=2, workers=1)
    >>> outcome.plan.bound, outcome.plan.makespan_cycles, outcome.simulation.makespan_cycles
    (40, 70, 70)
    """
    from planner.isa.resources import determine_resources
    from planner.pipeline import _lower_and_replay

    time_limit_s = spec.time_limit_s if time_limit_s is None else time_limit_s
    workers = spec.workers if workers is None else workers
    seed = spec.seed if seed is None else seed
    search = spec.search if search is None else search
    start = time.perf_counter()
    schedule_s = min(settings.schedule_max_s, max(settings.schedule_min_s, settings.schedule_share * time_limit_s))
    placement_s = max(0.1, time_limit_s - schedule_s)

    problem, reduction = to_placement_problem(spec)
    options = SolveOptions(time_limit_s=placement_s, num_workers=workers, random_seed=seed,
                           progress=progress, log=solver_log, search=search)
    greedy = GreedyPlacementSolver().solve(problem, options)
    if progress is not None and greedy.status.has_solution:
        progress(ProgressPoint(time.perf_counter() - start, greedy.objective, lower_bound(problem)))
    result = CpSatPlacementSolver().solve(problem, replace(options, hint=greedy.solution))
    if result.status is Status.INFEASIBLE:
        raise InfeasibleError(_explain_infeasible(spec, problem, reduction))
    if result.status is Status.MODEL_INVALID:
        raise InternalError(f"the placement CP-SAT model is invalid: {result.stats}")
    if not result.status.has_solution:
        raise TimeLimitError(f"no max-load placement found within {placement_s:g} s (status {result.status.value}); "
                          "raise --time-limit")
    errors = validate_placement(problem, result.solution)
    if errors:
        raise InternalError(f"{result.solver_name} returned an invalid placement:\n  " + "\n  ".join(errors[:20]))
    objective = int(result.objective)
    if max_load(problem, result.solution.device_of) != objective:
        raise InternalError(f"{result.solver_name} reports max-load {objective}, its placement scores "
                            f"{max_load(problem, result.solution.device_of)}")

    placement = reduction.device_of(result.solution)
    schedule, fixed, sred = schedule_placement(
        spec, placement, time_limit_s=schedule_s, workers=workers, seed=seed, settings=settings, search=search)
    resources = determine_resources(spec.graph, spec.hardware)
    device_load = dict(zip(reduction.device_names, device_loads(problem, result.solution.device_of)))
    baselines: dict[str, Any] = {}
    if greedy.status.has_solution:
        baselines["greedy (linear split + local search)"] = int(greedy.objective)
    for name, dev in placement_baselines(problem).items():
        baselines[name] = None if dev is None else max_load(problem, dev)
    solver_info = {
        "name": result.solver_name, "heuristic": greedy.solver_name, "workers": workers, "seed": seed,
        "time_limit_s": time_limit_s, "contiguous": reduction.contiguous,
        "accelerators": list(reduction.device_names[:reduction.num_accelerators]),
        "cpus": list(reduction.device_names[reduction.num_accelerators:]),
        "loads": device_load, "baselines": baselines,
        "schedule": {"name": schedule.solver_name, "status": schedule.status.value,
                     "makespan_cycles": int(schedule.objective)},
        **run_summary(search, [result.stats.get("stopped_by"), schedule.stats.get("stopped_by")]),
    }
    spine_plan = from_solution(schedule, replace(sred, objective_kind="max-load"), fixed, spec_name=spec.name,
                               resources=resources.to_dict() if hasattr(resources, "to_dict") else dict(resources))
    bound = None if result.bound is None else int(result.bound)
    plan = replace(spine_plan, status=result.status.value, objective=objective, bound=bound, gap=result.gap,
                   heuristic_objective=int(greedy.objective) if greedy.status.has_solution else None,
                   wall_time_s=result.wall_time_s, solver=solver_info)

    loads = plan_loads(plan, spec)
    if loads != device_load or max(loads.values(), default=0) != objective:
        raise InternalError(f"the max-load recomputed from the plan ({max(loads.values(), default=0)}, loads {loads}) "
                            f"disagrees with the placement solver's ({objective}, loads {device_load})")

    heuristic = greedy if greedy.status.has_solution else result
    outcome = MaxLoadOutcome(plan, fixed, replace(sred, objective_kind="max-load"), result, heuristic,
                             placement_problem=problem, placement_reduction=reduction, schedule=schedule,
                             loads=loads, baselines=baselines)
    outcome.extra_baselines = [
        {"solver": name, "status": "FEASIBLE" if value is not None else "INVALID", "objective": value,
         "bound": None} for name, value in baselines.items() if not name.startswith("greedy")]
    _lower_and_replay(outcome, spec)
    outcome.plan = replace(outcome.plan, wall_time_s=time.perf_counter() - start)
    outcome.report_sections = [render_max_load_section(outcome)]
    log.info("max-load %d (%s, bound %s) in %.2f s", objective, result.status.value, bound,
             outcome.plan.wall_time_s)
    return outcome

