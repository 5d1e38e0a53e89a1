"""The island split: each portion to one island, minimising the bottleneck, then the cross-island bytes.

The model (CP-SAT): ``x[p][i]`` is 1 when portion ``p`` goes to island ``i`` (exactly one,
only where every op of ``p`` can run on ``i``); portions that must share a device share an
island; each island's memory holds its portions' resident bytes (a weight or input several
portions read once: ``shared_memory``), and each island's host memory
(where given) the host items (weights and graph inputs, each counted once per island however
many of its portions read it: ``h[t][i] >= x[p][i]`` for every portion ``p`` reading item ``t``)
of the portions it holds; ``cut[e]`` is 1 when
edge ``e``'s ends are on different islands. The bottleneck ``B`` is at least each island's
work divided over its device lanes (``lanes_i * B >= sum_p work[p][i] x[p][i]``) and at least
the network's busy cycles (``sum_e cut[e] * network_cycles[e]``: the network carries one
transfer at a time). First ``B`` is minimised, then, with ``B`` fixed to the value found,
the cross-island bytes. The bound is CP-SAT's bound on ``B`` for *this* model: the split's
load bound at portion granularity, not a bound of the scheduled plan.

Determinism: one worker, a fixed seed and a deterministic-time limit proportional to the
time limit; the wall clock only as a safety net (``stats["stopped_by"]``).

Examples
--------
Two islands of one lane each, a chain of four portions of 10 cycles, each edge 4 cycles on
the network: the best split cuts the chain once (bottleneck 20, one edge of 8 bytes across).

>>> p = SplitProblem(portion_work=((10, 10),) * 4, portion_memory=(0,) * 4, island_lanes=(1, 1),
...                  island_memory=(100, 100), edges=((0, 1, 8), (1, 2, 8), (2, 3, 8)),
...                  network_cycles=(4, 4, 4))
>>> r = CpSatSplitSolver().solve(p)
>>> r.status.value, r.objective, r.solution.cross_bytes, r.solution.island_of in [(0, 0, 1, 1), (1, 1, 0, 0)]
('OPTIMAL', 20, 8, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.budget import Budget, net_seconds
from solvers.cpsat_support import integer_objective_bound

__all__ = ["SplitProblem", "SplitSolution", "CpSatSplitSolver", "split_loads", "split_errors"]

# Deterministic time per second of the time limit (a small model: the split rarely needs it).
_DTIME_PER_SECOND = 0.5
_MAX_DTIME = 20.0


@dataclass(frozen=True)
class SplitProblem:
    """Portions, islands and the network, in integers.

    ``portion_work[p][i]``: cycles of portion ``p``'s ops on island ``i``'s fastest kind (None:
    it cannot run there); ``portion_memory[p]``: bytes it keeps resident; ``island_lanes[i]``:
    device instances times streams; ``island_memory[i]``: main-memory bytes of its devices;
    ``edges``: ``(p, q, bytes)`` between portions; ``network_cycles[e]``: edge ``e``'s
    transfer on the network; ``together``: groups of portions that must share an island;
    ``host_items``: ``(bytes, portions)`` of each weight or graph input, held once by every
    island running one of those portions; ``island_host_memory[i]``: island ``i``'s host
    memory (None: not limited; empty: no island limited); ``shared_memory``: ``(bytes,
    portions)`` of each weight or graph input two or more portions read, counted in full in
    each reader's ``portion_memory`` but once per island holding a reader (:meth:`island_held`:
    its devices hold it at least once, so the island row stays a relaxation of theirs).
    """

    portion_work: tuple[tuple[int | None, ...], ...]
    portion_memory: tuple[int, ...]
    island_lanes: tuple[int, ...]
    island_memory: tuple[int, ...]
    edges: tuple[tuple[int, int, int], ...]
    network_cycles: tuple[int, ...]
    together: tuple[tuple[int, ...], ...] = ()
    host_items: tuple[tuple[int, tuple[int, ...]], ...] = ()
    island_host_memory: tuple[int | None, ...] = ()
    shared_memory: tuple[tuple[int, tuple[int, ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.island_host_memory and len(self.island_host_memory) != self.num_islands:
            raise ValueError(f"island_host_memory has {len(self.island_host_memory)} entries, "
                             f"expected {self.num_islands}")
        for size, readers in self.host_items:
            if size < 0 or not readers or any(not 0 <= p < self.num_portions for p in readers):
                raise ValueError(f"host item ({size}, {readers}) needs bytes >= 0 and known portions")
        for size, readers in self.shared_memory:
            if size < 0 or len(set(readers)) < 2 or any(not 0 <= p < self.num_portions for p in readers):
                raise ValueError(f"shared item ({size}, {readers}) needs bytes >= 0 and two or more known portions")
            if any(self.portion_memory[p] < size for p in readers):
                raise ValueError(f"shared item ({size}, {readers}): a reader's portion_memory must include it")

    def host_limit(self, island: int) -> int | None:
        """Island ``island``'s host memory, or None when it is not limited."""
        return self.island_host_memory[island] if self.island_host_memory else None

    def host_held(self, island_of: tuple[int, ...], island: int) -> int:
        """The host bytes ``island`` holds under a split: each item one of its portions reads, once.

        >>> p = SplitProblem(((1, 1),) * 3, (0,) * 3, (1, 1), (9, 9), (), (),
        ...                  host_items=((5, (0, 1)), (7, (2,))), island_host_memory=(6, None))
        >>> p.host_held((0, 0, 1), 0), p.host_held((0, 0, 1), 1), p.host_held((0, 1, 0), 0)
        (5, 7, 12)
        """
        return sum(size for size, readers in self.host_items if any(island_of[p] == island for p in readers))

    def island_held(self, island_of: tuple[int, ...], island: int) -> int:
        """The main-memory bytes ``island`` holds under a split: its portions' ``portion_memory``,
        a shared item once.

        >>> p = SplitProblem(((1, 1),) * 3, (6, 6, 2), (1, 1), (9, 9), (), (), shared_memory=((5, (0, 1)),))
        >>> p.island_held((0, 0, 1), 0), p.island_held((0, 1, 0), 0)
        (7, 8)
        """
        held = sum(m for p, m in enumerate(self.portion_memory) if island_of[p] == island)
        for size, readers in self.shared_memory:
            here = sum(1 for p in readers if island_of[p] == island)
            held -= size * max(0, here - 1)
        return held

    @property
    def num_portions(self) -> int:
        return len(self.portion_work)

    @property
    def num_islands(self) -> int:
        return len(self.island_lanes)


@dataclass(frozen=True)
class SplitSolution:
    """Each portion's island, and what the split costs: its bottleneck, and the cut's bytes and network cycles."""

    island_of: tuple[int, ...]
    bottleneck: int
    cross_bytes: int
    network_cycles: int


def split_loads(problem: SplitProblem, island_of: tuple[int, ...]) -> tuple[int, int, int]:
    """The bottleneck, cross-island bytes and network cycles of a given split (for checks and reports).

    >>> p = SplitProblem(((3, 3), (5, 5)), (0, 0), (1, 2), (9, 9), ((0, 1, 7),), (2,))
    >>> split_loads(p, (0, 1))
    (3, 7, 2)
    """
    loads = [0] * problem.num_islands
    for p, i in enumerate(island_of):
        loads[i] += problem.portion_work[p][i]
    per_lane = max(-(-load // lanes) for load, lanes in zip(loads, problem.island_lanes))
    cut = [e for e, (p, q, _) in enumerate(problem.edges) if island_of[p] != island_of[q]]
    network = sum(problem.network_cycles[e] for e in cut)
    return max(per_lane, network), sum(problem.edges[e][2] for e in cut), network


def split_errors(problem: SplitProblem, island_of: tuple[int, ...]) -> list[str]:
    """Why a given split is not one of ``problem``'s (empty when it is): a portion on an island it
    cannot run on, a portion group split up, or an island's memory overfull.

    >>> p = SplitProblem(((3, None), (5, 5)), (4, 4), (1, 1), (6, 9), ((0, 1, 7),), (2,), ((0, 1),))
    >>> split_errors(p, (1, 1)), split_errors(p, (0, 1)), split_errors(p, (0, 0))
    (['portion 0 cannot run on island 1'], ['portions 0 and 1 must share an island'], ['island 0 holds 8 bytes, more than its 6'])
    >>> h = replace(p, portion_work=((3, 3), (5, 5)), together=(), host_items=((5, (0,)), (5, (1,))),
    ...             island_host_memory=(None, 6))
    >>> split_errors(h, (0, 1)), split_errors(h, (1, 1))
    ([], ['island 1 holds 10 bytes of host items, more than its host memory 6'])
    """
    if len(island_of) != problem.num_portions:
        return [f"{len(island_of)} islands given for {problem.num_portions} portions"]
    errors = [f"portion {p} cannot run on island {i}" for p, i in enumerate(island_of)
              if not 0 <= i < problem.num_islands or problem.portion_work[p][i] is None]
    if errors:
        return errors
    errors += [f"portions {g[0]} and {q} must share an island" for g in problem.together for q in g[1:]
               if island_of[q] != island_of[g[0]]]
    for i, cap in enumerate(problem.island_memory):
        held = problem.island_held(island_of, i)
        if held > cap:
            errors.append(f"island {i} holds {held} bytes, more than its {cap}")
    for i in range(problem.num_islands):
        cap, held = problem.host_limit(i), problem.host_held(island_of, i)
        if cap is not None and held > cap:
            errors.append(f"island {i} holds {held} bytes of host items, more than its host memory {cap}")
    return errors


class CpSatSplitSolver(Accepting):
    """The split as a CP-SAT model (module docstring): bottleneck first, then cross-island bytes.
    ``options.hint`` (a :class:`SplitSolution`, e.g. a warm start's)
    starts the first phase."""

    name = "cpsat-split"
    problem_type = SplitProblem

    def solve(self, problem: SplitProblem, options: SolveOptions = SolveOptions()) -> SolveResult[SplitSolution]:
        started = time.perf_counter()
        dtime = min(_MAX_DTIME, _DTIME_PER_SECOND * options.time_limit_s)
        model, x, cut, bottleneck = _build(problem)
        if isinstance(options.hint, SplitSolution):
            for p, i_hint in enumerate(options.hint.island_of):
                for i, var in x[p].items():
                    model.AddHint(var, int(i == i_hint))
        budget = _budget(options, dtime, started)
        first_status, first = _run(model, options, budget)
        if not first_status.has_solution:
            status = Status.INFEASIBLE if first_status is Status.INFEASIBLE else Status.UNKNOWN
            return failure_result(status, self.name, time.perf_counter() - started)
        # The bottleneck's own value, not the float objective: CP-SAT's presolve may rescale the
        # objective, so 2 can read 1.9999999999999996, and int() would cap the second phase at 1.
        best, bound = first.Value(bottleneck), integer_objective_bound(first)
        proven = first_status is Status.OPTIMAL
        model.Add(bottleneck <= best)
        model.Minimize(sum(problem.edges[e][2] * c for e, c in enumerate(cut)))
        for p in range(problem.num_portions):  # start the second phase from the first's split
            for i, var in x[p].items():
                model.AddHint(var, first.Value(var))
        second_status, second = _run(model, options, budget)
        chosen = second if second_status.has_solution else first
        island_of = tuple(next(i for i, var in x[p].items() if chosen.Value(var)) for p in range(problem.num_portions))
        value, cross, network = split_loads(problem, island_of)
        status = Status.OPTIMAL if proven and value == bound else Status.FEASIBLE
        stats = {"stopped_by": budget.stopped_by or ("deterministic_budget" if not proven else "optimal"),
                 "cross_bytes_optimal": second_status is Status.OPTIMAL}
        return SolveResult(status, value, bound, SplitSolution(island_of, value, cross, network),
                           time.perf_counter() - started, self.name, stats)


def _build(problem: SplitProblem):
    """The model with the bottleneck as its objective; returns the model and its variables."""
    model = cp_model.CpModel()
    x: list[dict[int, cp_model.IntVar]] = []
    for p, work in enumerate(problem.portion_work):
        row = {i: model.NewBoolVar(f"x{p}_{i}") for i, w in enumerate(work) if w is not None}
        model.AddExactlyOne(row.values())
        x.append(row)
    for group in problem.together:
        for p in group[1:]:
            for i in range(problem.num_islands):
                a, b = x[group[0]].get(i), x[p].get(i)
                if a is None or b is None:
                    for var in (a, b):
                        if var is not None:
                            model.Add(var == 0)
                else:
                    model.Add(a == b)
    total_work = sum(max(w for w in work if w is not None) for work in problem.portion_work)
    network_total = sum(problem.network_cycles)
    bottleneck = model.NewIntVar(0, max(total_work, network_total), "bottleneck")
    for i, lanes in enumerate(problem.island_lanes):
        mine = [(problem.portion_work[p][i], x[p][i]) for p in range(problem.num_portions) if i in x[p]]
        model.Add(sum(w * v for w, v in mine) <= lanes * bottleneck)
        _add_island_memory(model, problem, x, i)
    _add_host_memory(model, problem, x)
    cut = []
    for e, (p, q, _) in enumerate(problem.edges):
        c = model.NewBoolVar(f"cut{e}")
        for i in range(problem.num_islands):
            a, b = x[p].get(i), x[q].get(i)
            if a is not None:
                model.Add(c >= a - (b if b is not None else 0))
        cut.append(c)
    model.Add(sum(problem.network_cycles[e] * c for e, c in enumerate(cut)) <= bottleneck)
    model.Minimize(bottleneck)
    return model, x, cut, bottleneck


def _add_island_memory(model: cp_model.CpModel, problem: SplitProblem, x: list[dict[int, cp_model.IntVar]],
                       i: int) -> None:
    """Island ``i``'s main memory holds its portions' bytes, a shared item once (``h[t] >= x[p][i]``
    for each reading portion). Where even every portion's full bytes fit (or nothing is shared),
    the plain row: the model stays as it was before shared items were counted."""
    terms = [(problem.portion_memory[p], x[p][i]) for p in range(problem.num_portions) if i in x[p]]
    if not problem.shared_memory or sum(m for m, _ in terms) <= problem.island_memory[i]:
        model.Add(sum(m * v for m, v in terms) <= problem.island_memory[i])
        return
    shared = [0] * problem.num_portions
    for size, readers in problem.shared_memory:
        for p in readers:
            shared[p] += size
    own = [(problem.portion_memory[p] - shared[p]) * x[p][i] for p in range(problem.num_portions) if i in x[p]]
    for t, (size, readers) in enumerate(problem.shared_memory):
        held = [x[p][i] for p in readers if i in x[p]]
        if held and size > 0:
            h = model.NewBoolVar(f"shared{t}_{i}")
            for var in held:
                model.AddImplication(var, h)
            own.append(size * h)
    model.Add(sum(own) <= problem.island_memory[i])


def _add_host_memory(model: cp_model.CpModel, problem: SplitProblem, x: list[dict[int, cp_model.IntVar]]) -> None:
    """Each limited island's host memory holds every item one of its portions reads, once. An island
    that could hold every item it may ever need gets no constraint (the model stays as without limits)."""
    for i in range(problem.num_islands):
        cap = problem.host_limit(i)
        items = [(size, [x[p][i] for p in readers if i in x[p]]) for size, readers in problem.host_items]
        items = [(size, held) for size, held in items if held and size > 0]
        if cap is None or sum(size for size, _ in items) <= cap:
            continue
        terms = []
        for t, (size, held) in enumerate(items):
            h = model.NewBoolVar(f"host{t}_{i}")
            for var in held:
                model.AddImplication(var, h)
            terms.append(size * h)
        model.Add(sum(terms) <= cap)


def _budget(options: SolveOptions, dtime: float, started: float) -> Budget:
    """``dtime`` deterministic units for both phases; the wall clock a safety net only, at the
    distance :meth:`Budget.start` gives a solve of the time limit
    (:func:`~solvers.budget.net_seconds`: ``PLAN_NET_SLOWDOWN`` x the limit + 5 s, the 5 s
    growing with a factor above the default). It was 1 x the limit per phase, not reported: 0.25 units per second of limit
    for each phase is more than a loaded machine's one worker may do, so the clock, not the
    budget, could pick the split, and the stats still said ``deterministic_budget``."""
    limit = max(options.time_limit_s, 1.0)
    return Budget(max(dtime, 0.02), started + net_seconds(limit))


def _run(model: cp_model.CpModel, options: SolveOptions, budget: Budget) -> tuple[Status, cp_model.CpSolver]:
    """One worker, the caller's seed, half of ``budget`` (deterministic time; its net stops a
    runaway solve and sets ``budget.stopped_by`` to ``"wall_clock"``)."""
    quiet = replace(options, num_workers=1, progress=None, log=None)
    status, solver, _ = budget.run_cpsat(model, quiet, budget.total / 2, None, interleave=False)
    return status, solver
