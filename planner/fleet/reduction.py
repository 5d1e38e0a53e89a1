"""The fleet reduction: tenants' items → :class:`~solvers.colocation.ColocationProblem`, and back.

:func:`to_problem` quantises demands and capacities per dimension (demands rounded up,
capacities down, so a quantised packing is a packing) and groups identical items; its
:class:`FleetInverse` maps solver item types and bins back to item labels and processor
names (:func:`from_solution`). :func:`pool_of` and :func:`processor_key` read a processor
name back to its pool and order. The items themselves (:class:`Item`) come from
:func:`planner.fleet.pipeline.expand_items`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.fleet.resolve import DIMENSIONS, FleetSpec, Pool
from solvers.colocation import ColocationObjective, ColocationProblem, ColocationSolution

__all__ = ["Item", "FleetInverse", "pool_of", "processor_key", "quantum", "to_problem", "from_solution"]

_MAX_QUANTUM_CAPACITY = 10**9  # capacities are scaled to at most this many units per dimension


@dataclass(frozen=True, slots=True)
class Item:
    """One instance to place: a tenant replica or a variant instance, with its exact demand per pool.

    >>> Item("a", 0, None, 1.0, {"p": (1, 2, 3)}).label
    'a'
    >>> Item("a", 1, "int8", 1.0, {"p": (1, 2, 3)}).label
    'a.int8#1'
    """

    tenant: str
    index: int
    variant: str | None
    rate_rps: float
    demand: dict[str, tuple[int, int, int]]  # pool -> (ops/s, io bytes/s, storage bytes)

    @property
    def label(self) -> str:
        base = self.tenant + (f".{self.variant}" if self.variant else "")
        return base if self.index == 0 and self.variant is None else f"{base}#{self.index}"


def pool_of(spec: FleetSpec, processor: str) -> Pool:
    """The pool a processor name belongs to (``<pool><index>``; the longest pool name first).

    >>> from planner.fleet import load_fleet_spec
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> pool_of(load_fleet_spec(ISSUE_EXAMPLE), "p1").name
    'p'
    """
    for p in sorted(spec.pools, key=lambda p: -len(p.name)):
        suffix = processor[len(p.name):]
        if processor.startswith(p.name) and suffix.isdigit():
            return p
    raise KeyError(processor)


def processor_key(spec: FleetSpec, processor: str) -> tuple[int, int]:
    """A processor's order: its pool's place in the spec, then its index.

    >>> from planner.fleet import load_fleet_spec
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> processor_key(load_fleet_spec(ISSUE_EXAMPLE), "p1")
    (0, 1)
    """
    p = pool_of(spec, processor)
    return ([q.name for q in spec.pools].index(p.name), int(processor[len(p.name):]))


def quantum(spec: FleetSpec) -> tuple[int, int, int]:
    """Per dimension, the power of ten that scales the largest capacity to at most 10^9 units."""
    out = []
    for d in range(3):
        top = max(p.capacity[d] for p in spec.pools)
        q = 1
        while top // q > _MAX_QUANTUM_CAPACITY:
            q *= 10
        out.append(q)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class FleetInverse:
    """How solver indices map back to items and processors."""

    type_items: tuple[tuple[int, ...], ...]  # type -> item indices (in order)
    processors: tuple[str, ...]  # bin -> processor name


def to_problem(spec: FleetSpec, items: tuple[Item, ...], objective: ColocationObjective,
               cost_budget: int | None = None) -> tuple[ColocationProblem, FleetInverse]:
    """The co-location problem (quantised, identical items grouped) and its inverse.

    Examples
    --------
    >>> from planner.fleet import load_fleet_spec
    >>> from planner.fleet.pipeline import expand_items
    >>> from planner.fleet.spec import ISSUE_EXAMPLE
    >>> spec = load_fleet_spec(ISSUE_EXAMPLE)
    >>> problem, inverse = to_problem(spec, expand_items(spec, {}), ColocationObjective.MIN_COST)
    >>> problem.capacity, problem.demand, inverse.processors   # io in 100 B, storage in 10 kB quanta
    (((100000, 1000000000, 109951162),), (((20000, 300000000, 0),), ((80000, 100000000, 0),)), ('p0', 'p1'))
    """
    q = quantum(spec)
    # A capacity below one quantum still holds an item that fits it exactly (expand_items
    # checked each item against the exact capacity), so it is one quantum, never zero.
    caps = tuple(tuple(max(1, c // qd) for c, qd in zip(p.allocatable(spec.max_utilization), q)) for p in spec.pools)
    groups: dict[tuple, list[int]] = {}
    for i, it in enumerate(items):
        key = tuple(None if p.name not in it.demand else tuple(-(-x // qd) for x, qd in zip(it.demand[p.name], q))
                    for p in spec.pools)
        groups.setdefault(key, []).append(i)
    keys = list(groups)
    problem = ColocationProblem(
        capacity=caps, class_count=tuple(p.count for p in spec.pools), demand=tuple(keys),
        multiplicity=tuple(len(groups[k]) for k in keys), class_cost=tuple(p.cost for p in spec.pools),
        objective=objective, cost_budget=cost_budget, dim_names=DIMENSIONS,
        type_names=tuple(items[groups[k][0]].label for k in keys), class_names=tuple(p.name for p in spec.pools))
    processors = tuple(p.processor(k) for p in spec.pools for k in range(p.count))
    return problem, FleetInverse(tuple(tuple(groups[k]) for k in keys), processors)


def from_solution(problem: ColocationProblem, inverse: FleetInverse, items: tuple[Item, ...],
                  solution: ColocationSolution) -> dict[str, str]:
    """Item label → processor name, in item order."""
    where: dict[int, str] = {}
    for t, members in enumerate(inverse.type_items):
        for i, item_index in zip(problem.type_items(t), members):
            where[item_index] = inverse.processors[solution.bin_of_item[i]]
    return {items[i].label: where[i] for i in range(len(items))}
