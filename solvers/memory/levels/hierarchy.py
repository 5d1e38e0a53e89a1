"""Level assignment over N memory levels (issue 14, item 1): problem and solution types.

The two-level :class:`~solvers.memory.levels.problem.LevelProblem` is the special case
``levels = (fast, slow)``, ``main_level = 1``, one DMA path: :func:`from_level_problem`
and :func:`from_level_solution` convert, and the N-level validator and greedy agree with
the two-level ones on it (tests/solvers/memory/test_hierarchy.py).

Glossary
--------
level       ``0..N-1``, each with a capacity and a bandwidth (bytes per cycle as the
            compute units see it). Level 0 is where fast-only ops work.
home        the level holding a tensor's persistent copy: ``main_level`` unless
            ``tensor_home`` says otherwise (host memory for a tensor that starts there).
            Inputs start at home, live-out tensors end at home.
access      as in :mod:`~solvers.memory.levels.problem`: producer (or virtual ``-1``),
            readers in order, virtual ``num_ops`` when live-out; each real access has a level.
path        a pair of levels a DMA joins (either way), at its own rate (default: the
            slower level's bandwidth).
route       the levels a copy passes from one level to another: the fewest hops over the
            declared paths (ties: the lexicographically smallest sequence of levels).
move        one DMA of one hop of a route: a fetch (home -> an access's level) or an
            eviction (the producer's level -> home), each hop with its own trigger and
            release op.

Semantics (what :func:`~solvers.memory.levels.hierarchy_validate.validate_hierarchy` checks)
---------------------------------------------------------------------------------------------
* every virtual access is at the tensor's home; every access of a fast-only op at level 0;
* gap j is *kept* only if accesses ``j-1`` and ``j`` are real, at one level, not home: the
  copy stays in that level across the gap;
* a tensor has its home copy and at most one other copy at a time (plus the staging
  buffers of a route's middle levels); the producer's copy at a level other than home
  lives until the first gap that is not kept, where it is *evicted* along
  ``route(level, home)``; an access at level ``l != home`` that is not kept is *fetched*
  along ``route(home, l)`` in its gap (after the tensor's eviction, if any);
* hop h of a route, with trigger ``k_h`` and release ``r_h``: starts after op ``k_h`` ends
  (``-1``: program start), after hop ``h-1`` ends, and (first hop of a fetch) after the
  tensor's eviction ends; op ``r_h`` starts after it ends (``num_ops``: before the plan
  ends). Fetch in gap j (accesses ``lo = a_{j-1}``, ``hi = a_j``): triggers in
  ``[lo, hi-1]``, non-decreasing, the first ``>=`` the release of an eviction in the same
  gap; releases non-decreasing, ``r_h > k_h``, the last ``= hi``. Eviction: first trigger
  ``= lo``, triggers non-decreasing, releases in ``[k_h+1, hi]`` non-decreasing;
* occupancy on the point axis of :mod:`~solvers.memory.levels.problem`: an access at level
  ``l != home`` holds ``l`` at point ``2a+1``, a kept gap ``[2a_{j-1}+2, 2a_j+1)``; the
  destination of hop h holds its level over ``[2k_h+2, 2r_{h+1}+1)`` (middle levels) or
  ``[2k_h+2, 2hi+1)`` (a fetch's last hop); an eviction's source copy holds its level
  until ``2r_0+1``; the home copy holds home from the input start (point 0), the
  producer's write at home (``2a_0+1``) or the eviction's last trigger (``2k+2``) to the
  end (``2*num_ops``); at every point every level holds ``<= capacity_bytes[level]``;
* op i takes ``max(compute_cycles[i], sum over levels of ceil(B_l / bw_l))`` where ``B_l``
  is the bytes of its accesses at level l; a hop takes ``dma_latency_cycles +
  ceil(bytes / path rate)``; one DMA engine runs one hop at a time; the objective is the
  makespan.

With two levels this is the two-level semantics exactly, except that the slow level's
capacity is checked at every point rather than as one sum over the whole plan (a weaker
check: every two-level plan passes it).
"""

from __future__ import annotations

import numbers
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

from solvers.memory.levels.problem import (
    LevelProblem, LevelSolution, OpsAndTensors, TransferKind, cycles_for_bytes, to_rate,
)

__all__ = ["HierarchyProblem", "Move", "HierarchySolution", "from_level_problem", "from_level_solution"]


def _ints(xs) -> tuple[int, ...]:
    return tuple(int(x) for x in xs)


def _check_int(x, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{what} must be an int, got {x!r}")
    return int(x)


@dataclass(frozen=True, slots=True)
class HierarchyProblem(OpsAndTensors):
    """Ops in a fixed order, the tensors they touch, N memory levels joined by DMA paths.

    Examples
    --------
    Three levels: vmem (16 B, 8 B/cycle), hbm (main, 4 B/cycle), host (1 B/cycle); vmem-hbm
    and hbm-host are paths, so a host tensor reaches vmem in two hops:

    >>> p = HierarchyProblem(compute_cycles=(4,), reads=((0,),), writes=((),), tensor_bytes=(8,),
    ...                      capacity_bytes=(16, 64, 1024), bandwidth_bytes_per_cycle=(8, 4, 1),
    ...                      main_level=1, dma_paths=((0, 1), (1, 2)), tensor_home=(2,))
    >>> p.route(2, 0), p.hop_cycles(0, 2, 1), p.hop_cycles(0, 1, 0)
    ((2, 1, 0), 8, 2)
    >>> p.op_cycles(0, {0: 8}), p.op_cycles(0, {2: 8})
    (4, 8)
    """

    compute_cycles: tuple[int, ...]
    reads: tuple[tuple[int, ...], ...]
    writes: tuple[tuple[int, ...], ...]
    tensor_bytes: tuple[int, ...]
    capacity_bytes: tuple[int, ...]  # per level
    bandwidth_bytes_per_cycle: tuple[Fraction, ...]  # per level, ints or exact Fractions
    main_level: int
    dma_paths: tuple[tuple[int, int], ...]  # pairs of levels a DMA joins, either way
    # Per path (same order), its bytes per cycle; empty or 0: the slower level's bandwidth.
    dma_path_bytes_per_cycle: tuple[Fraction, ...] = ()
    dma_latency_cycles: int = 0
    tensor_home: tuple[int, ...] = ()  # per tensor; empty: every tensor's home is main_level
    live_out: tuple[int, ...] = ()  # tensors that must be at home at the end
    fast_only_ops: tuple[int, ...] = ()  # ops whose accesses must all be at level 0
    # Groups of ops that may run in portions (the two-level SplitGroup); solve the expansion
    # (solvers.memory.levels.hierarchy_split), as the two-level solver does.
    splits: tuple = ()
    # Ops and DMAs contend for each level's bandwidth (solvers.memory.levels.hierarchy_bandwidth).
    shared_bandwidth: bool = False
    level_names: tuple[str, ...] = field(default=(), compare=False)
    op_names: tuple[str, ...] = field(default=(), compare=False)
    tensor_names: tuple[str, ...] = field(default=(), compare=False)
    _accesses: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False, default=())
    _routes: dict = field(init=False, repr=False, compare=False, default=None)
    _path_rate: dict = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        for name in ("compute_cycles", "tensor_bytes", "capacity_bytes", "live_out", "fast_only_ops"):
            object.__setattr__(self, name, _ints(getattr(self, name)))
        object.__setattr__(self, "reads", tuple(_ints(r) for r in self.reads))
        object.__setattr__(self, "writes", tuple(_ints(w) for w in self.writes))
        object.__setattr__(self, "main_level", _check_int(self.main_level, "main_level"))
        object.__setattr__(self, "dma_latency_cycles", _check_int(self.dma_latency_cycles, "dma_latency_cycles"))
        object.__setattr__(self, "bandwidth_bytes_per_cycle", tuple(
            to_rate(x, "bandwidth_bytes_per_cycle") for x in self.bandwidth_bytes_per_cycle))
        self._check_levels()
        self._check_paths()
        nt = self.num_tensors
        homes = _ints(self.tensor_home) if self.tensor_home else (self.main_level,) * nt
        if len(homes) != nt or any(not 0 <= h < self.num_levels for h in homes):
            raise ValueError(f"tensor_home needs one known level per tensor ({nt}), got {self.tensor_home}")
        object.__setattr__(self, "tensor_home", homes)
        object.__setattr__(self, "_accesses", self._build_accesses())
        object.__setattr__(self, "splits", tuple(self.splits))
        if self.splits:  # the two-level view checks the groups (ops in range, disjoint, factors)
            self.as_level_problem()

    def as_level_problem(self) -> LevelProblem:
        """The same ops, tensors and split groups over level 0 and main (the two-level view:
        :func:`~solvers.memory.levels.split.expand_splits` expands it)."""
        main = self.main_level
        return LevelProblem(
            compute_cycles=self.compute_cycles, reads=self.reads, writes=self.writes, tensor_bytes=self.tensor_bytes,
            capacity_bytes=(self.capacity_bytes[0], self.capacity_bytes[main]),
            bandwidth_bytes_per_cycle=(self.bandwidth_bytes_per_cycle[0], self.bandwidth_bytes_per_cycle[main]),
            dma_latency_cycles=self.dma_latency_cycles, live_out=self.live_out, fast_only_ops=self.fast_only_ops,
            splits=self.splits, shared_bandwidth=self.shared_bandwidth, op_names=self.op_names,
            tensor_names=self.tensor_names)

    def _check_levels(self) -> None:
        nl = len(self.capacity_bytes)
        if nl < 2 or len(self.bandwidth_bytes_per_cycle) != nl:
            raise ValueError(f"need >= 2 levels with one capacity and one bandwidth each, got "
                             f"{nl} capacities and {len(self.bandwidth_bytes_per_cycle)} bandwidths")
        for lv in range(nl):
            if self.capacity_bytes[lv] <= 0:
                raise ValueError(f"level {self.level_name(lv)} has capacity {self.capacity_bytes[lv]}; must be > 0")
            if self.bandwidth_bytes_per_cycle[lv] <= 0:
                raise ValueError(f"level {self.level_name(lv)} has zero bandwidth; must be > 0 bytes per cycle")
        if not 0 <= self.main_level < nl:
            raise ValueError(f"main_level {self.main_level} is not one of the {nl} levels")
        if self.dma_latency_cycles < 0:
            raise ValueError("dma_latency_cycles must be >= 0")
        if any(c < 0 for c in self.compute_cycles) or any(b < 0 for b in self.tensor_bytes):
            raise ValueError("compute cycles and tensor bytes must be >= 0")

    def _check_paths(self) -> None:
        """Paths join two distinct known levels, once each; every level is reachable from main."""
        nl = self.num_levels
        paths = tuple(tuple(_ints(p)) for p in self.dma_paths)
        rates = tuple(to_rate(x, "dma_path_bytes_per_cycle") for x in self.dma_path_bytes_per_cycle)
        if rates and len(rates) != len(paths):
            raise ValueError(f"dma_path_bytes_per_cycle needs one rate per path ({len(paths)}), got {len(rates)}")
        seen: dict[frozenset, Fraction] = {}
        for q, p in enumerate(paths):
            if len(p) != 2 or not all(0 <= x < nl for x in p) or p[0] == p[1]:
                raise ValueError(f"DMA path {p} must join two distinct known levels")
            key = frozenset(p)
            if key in seen:
                raise ValueError(f"DMA path {p} is listed twice")
            rate = rates[q] if rates and rates[q] else min(self.bandwidth_bytes_per_cycle[x] for x in p)
            if rate < 0:
                raise ValueError(f"DMA path {p} has a negative rate")
            seen[key] = rate
        object.__setattr__(self, "dma_paths", paths)
        object.__setattr__(self, "dma_path_bytes_per_cycle", rates)
        object.__setattr__(self, "_path_rate", seen)
        routes = _all_routes(nl, paths)
        for lv in range(nl):
            if (self.main_level, lv) not in routes:
                raise ValueError(f"level {self.level_name(lv)} has no DMA path to main level "
                                 f"{self.level_name(self.main_level)} (a level order that skips a level?)")
        object.__setattr__(self, "_routes", routes)

    @property
    def num_levels(self) -> int:
        return len(self.capacity_bytes)

    def level_name(self, lv: int) -> str:
        return self.level_names[lv] if lv < len(self.level_names) else str(lv)

    def home(self, t: int) -> int:
        return self.tensor_home[t]

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """The levels from ``src`` to ``dst`` (both included) over the declared paths."""
        return self._routes[(src, dst)]

    def path_rate(self, a: int, b: int) -> Fraction:
        """The bytes per cycle of the path joining levels ``a`` and ``b``."""
        return self._path_rate[frozenset((a, b))]

    def hop_cycles(self, t: int, a: int, b: int) -> int:
        """``dma_latency_cycles + ceil(bytes / path rate)`` for tensor ``t`` over the path a-b."""
        return self.dma_latency_cycles + cycles_for_bytes(self.tensor_bytes[t], self.path_rate(a, b))

    def op_accesses(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """Per op, the ``(tensor, access index)`` pairs it touches, in tensor order."""
        rows: list[list[tuple[int, int]]] = [[] for _ in range(self.num_ops)]
        for t in range(self.num_tensors):
            for j, a in enumerate(self.accesses(t)):
                if self.is_real(a):
                    rows[a].append((t, j))
        return tuple(tuple(r) for r in rows)

    def op_cycles(self, op: int, level_bytes: dict[int, int]) -> int:
        """The roofline: ``max(compute, sum over levels of ceil(bytes_l / bw_l))`` (exact)."""
        bw = self.bandwidth_bytes_per_cycle
        return max(self.compute_cycles[op], sum(cycles_for_bytes(b, bw[lv]) for lv, b in level_bytes.items()))


def _all_routes(num_levels: int, paths) -> dict[tuple[int, int], tuple[int, ...]]:
    """Fewest-hop routes between every pair of connected levels (BFS over sorted neighbours,
    so ties go to the lexicographically smallest level sequence)."""
    nbr: list[list[int]] = [[] for _ in range(num_levels)]
    for a, b in paths:
        nbr[a].append(b)
        nbr[b].append(a)
    routes = {}
    for src in range(num_levels):
        prev = {src: None}
        todo = deque([src])
        while todo:
            x = todo.popleft()
            for y in sorted(nbr[x]):
                if y not in prev:
                    prev[y] = x
                    todo.append(y)
        for dst in prev:
            seq, x = [], dst
            while x is not None:
                seq.append(x)
                x = prev[x]
            routes[(src, dst)] = tuple(reversed(seq))
    return routes


@dataclass(frozen=True, slots=True)
class Move:
    """One hop of a fetch (``PREFETCH``) or an eviction (``EVICT``) of ``tensor`` in ``gap``:
    a DMA from ``src_level`` to ``dst_level``, started after ``trigger_op`` ends and waited
    for by ``release_op``.

    Examples
    --------
    >>> Move(TransferKind.PREFETCH, tensor=0, gap=1, hop=0, src_level=2, dst_level=1,
    ...      trigger_op=-1, release_op=0, start_cycle=0, duration_cycles=8).end_cycle
    8
    """

    kind: TransferKind
    tensor: int
    gap: int
    hop: int
    src_level: int
    dst_level: int
    trigger_op: int
    release_op: int
    start_cycle: int
    duration_cycles: int

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles

    @property
    def key(self) -> tuple:
        """What identifies the move among those a residency requires."""
        return (self.kind, self.tensor, self.gap, self.hop, self.src_level, self.dst_level)


@dataclass(frozen=True, slots=True)
class HierarchySolution:
    """The level of every access, the kept gaps, the moves (in DMA-queue order) and op times.

    Examples
    --------
    >>> s = HierarchySolution(level=((2, 0),), kept=((False, False),), moves=(),
    ...                       op_start=(0, 5), op_duration=(5, 3))
    >>> s.makespan_cycles
    8
    """

    level: tuple[tuple[int, ...], ...]
    kept: tuple[tuple[bool, ...], ...]
    moves: tuple[Move, ...]
    op_start: tuple[int, ...]
    op_duration: tuple[int, ...]
    # One factor per split group of the problem: the solution is then one of its expansion's
    # (solvers.memory.levels.hierarchy_split.expand_hierarchy_splits), op for op.
    split_factors: tuple[int, ...] = ()
    # Under heads and tails with link holds (shared bandwidth): each hold's start, in the holds'
    # order (solvers.memory.levels.hierarchy_link_holds); empty otherwise.
    link_starts: tuple[int, ...] = ()

    @property
    def makespan_cycles(self) -> int:
        ends = [s + d for s, d in zip(self.op_start, self.op_duration)]
        ends += [m.end_cycle for m in self.moves]
        return max(ends, default=0)


def from_level_problem(problem: LevelProblem) -> HierarchyProblem:
    """The two-level problem as a hierarchy: level 0 fast, level 1 main, one path at the DMA rate
    (its split groups and shared bandwidth too).

    Examples
    --------
    >>> p = LevelProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1), dma_bytes_per_cycle=2)
    >>> h = from_level_problem(p)
    >>> h.num_levels, h.main_level, h.route(1, 0), h.hop_cycles(0, 1, 0) == p.dma_cycles(0)
    (2, 1, (1, 0), True)
    """
    return HierarchyProblem(
        compute_cycles=problem.compute_cycles, reads=problem.reads, writes=problem.writes,
        tensor_bytes=problem.tensor_bytes, capacity_bytes=problem.capacity_bytes,
        bandwidth_bytes_per_cycle=problem.bandwidth_bytes_per_cycle, main_level=1, dma_paths=((0, 1),),
        dma_path_bytes_per_cycle=(problem.dma_rate,), dma_latency_cycles=problem.dma_latency_cycles,
        live_out=problem.live_out, fast_only_ops=problem.fast_only_ops, splits=problem.splits,
        shared_bandwidth=problem.shared_bandwidth, level_names=("fast", "slow"), op_names=problem.op_names, tensor_names=problem.tensor_names)


def from_level_solution(solution: LevelSolution) -> HierarchySolution:
    """A two-level solution as a hierarchy solution (fast = level 0, slow = level 1).

    Examples
    --------
    >>> s = LevelSolution(((False, True),), ((False, False),), (), (0,), (4,))
    >>> from_level_solution(s).level
    ((1, 0),)
    """
    level = tuple(tuple(0 if f else 1 for f in row) for row in solution.in_fast)
    moves = tuple(Move(tr.kind, tr.tensor, tr.gap, 0, *((1, 0) if tr.kind is TransferKind.PREFETCH else (0, 1)),
                       tr.trigger_op, tr.release_op, tr.start_cycle, tr.duration_cycles)
                  for tr in solution.transfers)
    return HierarchySolution(level, solution.kept, moves, solution.op_start, solution.op_duration,
                             tuple(solution.split_factors))
