"""Model-variant choice: how many instances of each variant serve a task at least cost.

A task receives ``rate_rps`` requests per second and needs a rate-weighted mean precision
of at least ``min_precision_bp`` (basis points) with every request answered within
``deadline_ns``. Each variant ``v`` answers at precision ``precision_bp[v]`` with latency
``latency_ns[v]``; one instance serves up to ``capacity_rps[v]`` requests per second and
costs ``cost[v]`` (any integer resource measure, e.g. a share of a processor).

Notes
-----
Variables: ``n_v`` instances and ``s_v`` requests per second routed to variant v.

* ``sum_v s_v = rate``; ``s_v <= capacity_v n_v``; ``n_v <= max_instances_v``;
* ``sum_v precision_v s_v >= min_precision rate`` (the rate-weighted mean precision);
* ``n_v = 0`` when ``latency_v > deadline``;
* minimize ``sum_v cost_v n_v``.

Solved exactly with CP-SAT (a small integer program).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from solvers.budget import COLOCATION, Budget
from solvers.cpsat_support import STATUS_MAP, integer_objective_bound
from solvers.core import Accepting, SolveOptions, SolveResult, failure_result

__all__ = ["VariantProblem", "VariantSolution", "CpSatVariantSolver", "validate_variants", "variant_cost"]

_STATUS_MAP = STATUS_MAP  # CP-SAT status -> Status, shared by every family
_MAX_MAGNITUDE = 2**62  # CP-SAT refuses linear expressions whose bounds may overflow int64


@dataclass(frozen=True, slots=True)
class VariantProblem:
    """One task and its candidate variants (integers, units in the names).

    Examples
    --------
    >>> p = VariantProblem(100, 9000, None, capacity_rps=(20, 50), precision_bp=(9500, 8500),
    ...                    latency_ns=(10, 5), cost=(10, 3))
    >>> p.num_variants, p.allowed(0)
    (2, True)
    >>> VariantProblem(10**18, 9000, None, (20,), (9500,), (10,), (10,))
    Traceback (most recent call last):
    ...
    ValueError: the precision constraint (rate x precision, summed over variants) reaches 1e+22, beyond the 2^62 the variant model's 64-bit integer arithmetic holds
    """

    rate_rps: int
    min_precision_bp: int
    deadline_ns: int | None
    capacity_rps: tuple[int, ...]
    precision_bp: tuple[int, ...]
    latency_ns: tuple[int, ...]
    cost: tuple[int, ...]
    max_instances: tuple[int, ...] = ()  # empty = no limit beyond what the rate needs
    names: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        n = len(self.capacity_rps)
        for what in ("precision_bp", "latency_ns", "cost"):
            if len(getattr(self, what)) != n:
                raise ValueError(f"{what} must have {n} entries")
        if self.max_instances and len(self.max_instances) != n:
            raise ValueError(f"max_instances must have {n} entries")
        if n == 0:
            raise ValueError("at least one variant is required")
        if self.rate_rps <= 0:
            raise ValueError(f"rate_rps must be > 0, got {self.rate_rps}")
        if any(c <= 0 for c in self.capacity_rps):
            raise ValueError("capacity_rps must be > 0")
        if any(c < 0 for c in self.cost):
            raise ValueError("cost must be >= 0")
        if not all(0 <= p <= 10_000 for p in (*self.precision_bp, self.min_precision_bp)):
            raise ValueError("precisions are basis points in 0..10000")
        self._check_magnitudes()

    def _check_magnitudes(self) -> None:
        """Every linear expression of the CP-SAT model must fit its 64-bit arithmetic.

        A rate of 10^15 requests per second (10^18 in the integer units of the fleet bridge)
        times a precision in basis points is 9e21: the model could not even be built (the
        OR-Tools wrapper raised a TypeError). Refused here, with the terms that overflow.
        """
        n = self.num_variants
        terms = {
            "the precision constraint (rate x precision, summed over variants)":
                n * 10_000 * self.rate_rps,
            "the capacity constraints (capacity x instances)":
                max(c * self.instance_limit(v) for v, c in enumerate(self.capacity_rps)),
            "the cost (cost x instances, summed over variants)":
                sum(c * self.instance_limit(v) for v, c in enumerate(self.cost)),
            "the latencies and deadline": max((*self.latency_ns, self.deadline_ns or 0)),
        }
        for what, value in terms.items():
            if value > _MAX_MAGNITUDE:
                raise ValueError(f"{what} reaches {value:.3g}, beyond the 2^62 the variant model's 64-bit "
                                 "integer arithmetic holds")

    @property
    def num_variants(self) -> int:
        return len(self.capacity_rps)

    def allowed(self, v: int) -> bool:
        return self.deadline_ns is None or self.latency_ns[v] <= self.deadline_ns

    def instance_limit(self, v: int) -> int:
        need = -(-self.rate_rps // self.capacity_rps[v])
        return min(need, self.max_instances[v]) if self.max_instances else need


@dataclass(frozen=True, slots=True)
class VariantSolution:
    """Instances of each variant and the requests per second routed to it.

    >>> VariantSolution((3, 1), (50, 50)).instances
    (3, 1)
    """

    instances: tuple[int, ...]
    served_rps: tuple[int, ...]


def variant_cost(problem: VariantProblem, solution: VariantSolution) -> int:
    """``sum_v cost_v n_v``.

    >>> p = VariantProblem(100, 9000, None, (20, 50), (9500, 8500), (10, 5), (10, 3))
    >>> variant_cost(p, VariantSolution((3, 1), (50, 50)))
    33
    """
    return sum(c * n for c, n in zip(problem.cost, solution.instances))


def validate_variants(problem: VariantProblem, solution: VariantSolution) -> list[str]:
    """Every violated rule, in words; empty when feasible.

    >>> p = VariantProblem(100, 9000, None, (20, 50), (9500, 8500), (10, 5), (10, 3))
    >>> validate_variants(p, VariantSolution((3, 1), (50, 50)))
    []
    >>> validate_variants(p, VariantSolution((2, 2), (40, 60)))
    ['mean precision 8900 bp < required 9000 bp']
    """
    errors = []
    if sum(solution.served_rps) != problem.rate_rps:
        errors.append(f"served {sum(solution.served_rps)} rps != rate {problem.rate_rps} rps")
    for v in range(problem.num_variants):
        n, s = solution.instances[v], solution.served_rps[v]
        if n < 0 or s < 0:
            errors.append(f"variant {v}: negative count")
        if s > n * problem.capacity_rps[v]:
            errors.append(f"variant {v}: {s} rps > {n} x {problem.capacity_rps[v]} rps")
        if n > 0 and not problem.allowed(v):
            errors.append(f"variant {v}: latency {problem.latency_ns[v]} ns > deadline {problem.deadline_ns} ns")
        if problem.max_instances and n > problem.max_instances[v]:
            errors.append(f"variant {v}: {n} instances > limit {problem.max_instances[v]}")
    weighted = sum(p * s for p, s in zip(problem.precision_bp, solution.served_rps))
    if weighted < problem.min_precision_bp * problem.rate_rps:
        mean = weighted // max(1, sum(solution.served_rps))
        errors.append(f"mean precision {mean} bp < required {problem.min_precision_bp} bp")
    return errors


@dataclass(frozen=True, slots=True)
class CpSatVariantSolver(Accepting):
    """Least-cost mix of variants (see the module Notes).

    Examples
    --------
    Big (precision 95%, 20 rps, cost 10) and small (85%, 50 rps, cost 3) for 100 rps at a
    90% mean: at least 50 rps must go to big (0.95 x + 0.85 (100 - x) >= 90), so 3 big
    instances and 1 small one, cost 33:

    >>> p = VariantProblem(100, 9000, None, (20, 50), (9500, 8500), (10, 5), (10, 3))
    >>> r = CpSatVariantSolver().solve(p)
    >>> r.status.name, r.objective, r.solution.instances
    ('OPTIMAL', 33, (3, 1))
    """

    name: str = "cpsat-variants"
    problem_type = VariantProblem

    def solve(self, problem: VariantProblem, options: SolveOptions = SolveOptions()) -> SolveResult[VariantSolution]:
        t0 = time.perf_counter()
        model = cp_model.CpModel()
        n, s = [], []
        for v in range(problem.num_variants):
            hi = problem.instance_limit(v) if problem.allowed(v) else 0
            n.append(model.new_int_var(0, hi, f"n_{v}"))
            s.append(model.new_int_var(0, problem.rate_rps if hi else 0, f"s_{v}"))
            model.add(s[v] <= problem.capacity_rps[v] * n[v])
        model.add(sum(s) == problem.rate_rps)
        model.add(sum(p * x for p, x in zip(problem.precision_bp, s)) >= problem.min_precision_bp * problem.rate_rps)
        model.minimize(sum(c * x for c, x in zip(problem.cost, n)))
        budget = Budget.of(options, COLOCATION, t0)  # deterministic time; the wall clock a net only
        status, solver, _ = budget.run_cpsat(model, options, budget.total, "cpsat")
        wall = time.perf_counter() - t0
        if not status.has_solution:
            return failure_result(status, self.name, wall, **budget.stats())
        sol = VariantSolution(tuple(int(solver.value(x)) for x in n), tuple(int(solver.value(x)) for x in s))
        # Drop instances that serve nothing (zero-cost variants could keep idle ones).
        sol = VariantSolution(tuple(k if r else 0 for k, r in zip(sol.instances, sol.served_rps)), sol.served_rps)
        return SolveResult(status, variant_cost(problem, sol), integer_objective_bound(solver), sol, wall, self.name,
                           budget.stats())
