"""Co-location as vector bin packing: problem and solution types.

Glossary
--------
dimension  one resource a processor offers per unit of time or in total, e.g. operations
           per second, IO bytes per second, storage bytes; index ``0..num_dims-1``.
class      a pool of identical processors (bins), index ``0..num_classes-1``, with
           ``class_count[c]`` bins of capacity ``capacity[c][d]`` and a cost per used bin.
bin        one processor; bins are numbered class by class: class 0's bins first.
item type  a group of identical items (tenants, or replicas of one), index
           ``0..num_types-1``, with ``multiplicity[t]`` copies. ``demand[t][c]`` is the
           demand vector of one copy on a bin of class ``c``, or ``None`` when the type
           may not run on that class (e.g. another ISA profile).
item       one copy of a type; items are numbered type by type (type 0's copies first).

Semantics (what :mod:`solvers.colocation.validate` checks)
---------------------------------------------------------
* every item sits on exactly one bin whose class allows its type;
* on every bin and dimension, the sum of its items' demands is ``<= capacity``;
* objective ``MIN_COST``: the sum of ``class_cost`` over bins that hold at least one item
  (with unit costs: the number of processors used);
* objective ``MIN_MAX_UTILIZATION``: the largest ``ceil(10_000 * load / capacity)`` over
  every bin and dimension, in basis points (100% = 10 000). Minimizing it is the same as
  maximizing the minimum headroom ``10_000 - utilization``;
* optional ``cost_budget``: the cost of the used bins must be ``<= cost_budget``
  (used to rebalance a packing after its fewest-processors cost is known).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["ColocationObjective", "ColocationProblem", "ColocationSolution", "BASIS_POINTS"]

BASIS_POINTS = 10_000
# Capacities are kept small enough that 10 000 x load stays far inside int64.
MAX_CAPACITY = 10**12


class ColocationObjective(enum.Enum):
    """What the co-location solvers minimize.

    Examples
    --------
    >>> ColocationObjective("min_cost")
    <ColocationObjective.MIN_COST: 'min_cost'>
    """

    MIN_COST = "min_cost"
    MIN_MAX_UTILIZATION = "min_max_utilization"


@dataclass(frozen=True, slots=True)
class ColocationProblem:
    """Item types with demand vectors, and pools of bins with capacity vectors.

    Examples
    --------
    The co-location example of the issue: one model needs 20 000 ops and 30 GB of IO per
    unit time, another 80 000 ops and 10 GB; a processor offers 100 000 ops and 100 GB.

    >>> p = ColocationProblem(
    ...     capacity=((100_000, 100),),
    ...     class_count=(2,),
    ...     demand=(((20_000, 30),), ((80_000, 10),)),
    ... )
    >>> p.num_types, p.num_items, p.num_bins, p.num_dims
    (2, 2, 2, 2)
    >>> p.bin_class(1), p.item_type(1)
    (0, 1)
    """

    capacity: tuple[tuple[int, ...], ...]
    class_count: tuple[int, ...]
    demand: tuple[tuple[tuple[int, ...] | None, ...], ...]
    multiplicity: tuple[int, ...] = ()  # empty = one copy of every type
    class_cost: tuple[int, ...] = ()  # empty = cost 1 per used bin
    objective: ColocationObjective = ColocationObjective.MIN_COST
    cost_budget: int | None = None
    dim_names: tuple[str, ...] = field(default=(), compare=False)
    type_names: tuple[str, ...] = field(default=(), compare=False)
    class_names: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        cap = tuple(tuple(int(x) for x in row) for row in self.capacity)
        object.__setattr__(self, "capacity", cap)
        object.__setattr__(self, "class_count", tuple(int(x) for x in self.class_count))
        dem = tuple(tuple(None if v is None else tuple(int(x) for x in v) for v in row)
                    for row in self.demand)
        object.__setattr__(self, "demand", dem)
        if not self.multiplicity:
            object.__setattr__(self, "multiplicity", (1,) * len(dem))
        else:
            object.__setattr__(self, "multiplicity", tuple(int(x) for x in self.multiplicity))
        if not self.class_cost:
            object.__setattr__(self, "class_cost", (1,) * len(cap))
        else:
            object.__setattr__(self, "class_cost", tuple(int(x) for x in self.class_cost))
        if not cap:
            raise ValueError("at least one processor class is required")
        nd = len(cap[0])
        if nd == 0:
            raise ValueError("at least one resource dimension is required")
        if len(self.class_count) != len(cap) or len(self.class_cost) != len(cap):
            raise ValueError("capacity, class_count and class_cost must have one entry per class")
        for c, row in enumerate(cap):
            if len(row) != nd:
                raise ValueError(f"capacity[{c}] has {len(row)} dimensions, expected {nd}")
            if any(x <= 0 or x > MAX_CAPACITY for x in row):
                raise ValueError(f"capacity[{c}] must be in 1..{MAX_CAPACITY}, got {row}")
        if any(n < 0 for n in self.class_count) or sum(self.class_count) == 0:
            raise ValueError("class_count must be >= 0 with at least one bin")
        if any(x < 0 for x in self.class_cost):
            raise ValueError("class_cost must be >= 0")
        if len(self.multiplicity) != len(dem):
            raise ValueError("multiplicity must have one entry per item type")
        if any(m < 1 for m in self.multiplicity):
            raise ValueError("multiplicity must be >= 1")
        for t, row in enumerate(dem):
            if len(row) != len(cap):
                raise ValueError(f"demand[{t}] has {len(row)} classes, expected {len(cap)}")
            if all(v is None for v in row):
                raise ValueError(f"item type {self.type_name(t)} may run on no class")
            for v in row:
                if v is not None and (len(v) != nd or any(x < 0 for x in v)):
                    raise ValueError(f"demand[{t}] must be {nd} non-negative integers per class")
        for names, n, what in ((self.dim_names, nd, "dim_names"), (self.type_names, len(dem), "type_names"),
                               (self.class_names, len(cap), "class_names")):
            if names and len(names) != n:
                raise ValueError(f"{what} must have {n} entries")

    # -- sizes and index maps -------------------------------------------------------------
    @property
    def num_dims(self) -> int:
        return len(self.capacity[0])

    @property
    def num_classes(self) -> int:
        return len(self.capacity)

    @property
    def num_types(self) -> int:
        return len(self.demand)

    @property
    def num_items(self) -> int:
        return sum(self.multiplicity)

    @property
    def num_bins(self) -> int:
        return sum(self.class_count)

    def bin_class(self, b: int) -> int:
        """Class of bin ``b`` (bins are numbered class by class)."""
        for c, n in enumerate(self.class_count):
            if b < n:
                return c
            b -= n
        raise IndexError("bin out of range")

    def class_bins(self, c: int) -> range:
        """The bin indices of class ``c``."""
        start = sum(self.class_count[:c])
        return range(start, start + self.class_count[c])

    def item_type(self, i: int) -> int:
        """Type of item ``i`` (items are numbered type by type)."""
        for t, m in enumerate(self.multiplicity):
            if i < m:
                return t
            i -= m
        raise IndexError("item out of range")

    def type_items(self, t: int) -> range:
        """The item indices of type ``t``."""
        start = sum(self.multiplicity[:t])
        return range(start, start + self.multiplicity[t])

    def fits_alone(self, t: int, c: int) -> bool:
        """Whether one copy of type ``t`` fits an empty bin of class ``c``."""
        v = self.demand[t][c]
        return v is not None and all(x <= k for x, k in zip(v, self.capacity[c]))

    def dim_name(self, d: int) -> str:
        return self.dim_names[d] if self.dim_names else f"dim{d}"

    def type_name(self, t: int) -> str:
        return self.type_names[t] if self.type_names else f"type{t}"

    def class_name(self, c: int) -> str:
        return self.class_names[c] if self.class_names else f"class{c}"


@dataclass(frozen=True, slots=True)
class ColocationSolution:
    """The bin of every item (items numbered type by type).

    Examples
    --------
    >>> s = ColocationSolution(bin_of_item=(0, 0, 2))
    >>> s.used_bins()
    (0, 2)
    >>> s.items_on(0)
    (0, 1)
    """

    bin_of_item: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "bin_of_item", tuple(int(b) for b in self.bin_of_item))

    def used_bins(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.bin_of_item)))

    def items_on(self, b: int) -> tuple[int, ...]:
        return tuple(i for i, x in enumerate(self.bin_of_item) if x == b)
