"""Memory-level assignment with prefetch and eviction: problem and solution types.

Glossary
--------
op        a step of a FIXED op order ``0..num_ops-1`` run on one compute stream.
tensor    ``0..num_tensors-1``; written by at most one op (its producer), read by any
          later ops. A tensor nobody writes (weight, graph input) starts in the slow level.
access    one use of a tensor: ``accesses(t) = (a_0, a_1, ..., a_m)`` where ``a_0`` is the
          producer (or the virtual ``-1`` for an input, always slow), then the readers in
          order, then the virtual ``num_ops`` when ``t`` is live-out (must end up slow).
gap j     between accesses ``j-1`` and ``j`` of one tensor.
point     the discrete time axis for capacity: point ``2i+1`` is "during op i", point
          ``2i`` the gap just before op i (``2*num_ops`` is after the last op).
levels    exactly two: index 0 = fast (capacity enforced), 1 = slow (capacity checked as
          the sum of every tensor that ever has a slow copy).

Semantics (what :func:`~solvers.memory.levels.validate.validate_levels` checks)
--------------------------------------------------------------------------------
* every real access is *fast* (the op reads/writes the fast copy) or *slow*; virtual
  accesses are slow; every access of a ``fast_only`` op is fast;
* gap j is *kept* (the fast copy stays across it) only if accesses ``j-1`` and ``j`` are
  both real and fast;
* the producer's fast copy (access 0 fast) lives until the first gap that is not kept;
  if there is such a gap the copy is *evicted* there (a DMA fast -> slow): trigger op
  ``a_{j-1}`` (start >= its end), release op ``r`` in ``[a_{j-1}+1, a_j]`` (op r starts
  after the DMA ends; ``r = num_ops`` means before the plan ends); it occupies fast
  memory over points ``[2a_{j-1}+2, 2r+1)``;
* a fast access j that is not kept is *prefetched* (a DMA slow -> fast) in gap j: trigger
  op ``k`` in ``[a_{j-1}, a_j - 1]`` (``-1`` = program start; the "third op" when it is
  neither producer nor consumer), release op ``a_j``; start >= end of the tensor's
  eviction, if any; when an eviction sits in the same gap, ``k >= r``; the buffer occupies
  points ``[2k+2, 2a_j+1)``;
* a fast access occupies point ``2a_j+1``; a kept gap points ``[2a_{j-1}+2, 2a_j+1)``;
  at every point the bytes of fast pieces are ``<= capacity_bytes[0]``. All allocation
  and free events sit at op boundaries, so this discrete check is exact for any timing
  (a DMA's buffer is counted from its trigger op's end to its release op's start);
* op i takes ``max(compute_cycles[i], ceil(FB/bw[0]) + ceil(SB/bw[1]))`` cycles, where
  FB/SB are the bytes of its fast/slow accesses (reads and writes); ops run in order,
  each after the previous one ends and after every DMA it releases ends;
* a DMA takes ``dma_latency_cycles + ceil(bytes / dma_bytes_per_cycle)``; one DMA engine
  runs one transfer at a time; DMAs overlap compute;
* bandwidths are exact rationals (bytes per device cycle, ints or
  :class:`fractions.Fraction`, e.g. ``Fraction(bytes_per_s, clock_hz)``), so every
  ``ceil`` above is exact: ``ceil(bytes / (p/q)) = ceil(bytes*q / p)`` in integers, the
  ISA's ``ceil(bytes * clock_hz / bytes_per_s)`` to the cycle (:func:`cycles_for_bytes`);
* objective: makespan = max end over ops and DMAs.
* with ``shared_bandwidth``, ops and DMAs also contend for each level's bandwidth: see
  :mod:`solvers.memory.levels.bandwidth` (every instruction holds a constant share of each
  level it moves bytes in and starts only when that share is free).

Several compute streams (``op_streams``; see docs/memory.md, "Several compute streams")
------------------------------------------------------------------------------------
The op order ``0..num_ops-1`` stays one total *merged* order (the spine's: start cycle,
then stream) and capacity is still checked on its points, exactly as above. Each op also
has a stream (default: every op on stream 0, which is the one-stream problem above, to
the byte). With two streams or more, "ops run in order" becomes:

* ops of one stream run one at a time in the merged order; op i starts after the
  previous op of its stream, after the producer of every tensor it reads (a data
  dependency, on any stream) and after every DMA it releases;
* **memory order**: every fast allocation waits for every fast free that precedes it on
  the point axis. A fast piece (:func:`~solvers.memory.levels.validate.fast_pieces`) over
  points ``[lo, hi)`` is allocated at the start of op i when ``lo = 2i+1`` (the producer's
  write) and at the start of its prefetch DMA when ``lo`` is even, and freed at the end of
  op a when ``hi = 2a+2`` and at the end of its eviction DMA when ``hi`` is odd; whenever
  ``hi(c) <= lo(b)``, piece c is freed (in cycles) no later than piece b is allocated.
  With one stream this always holds; with several, it makes the point check sound for
  overlapping ops: every set of pieces live at one cycle is live together at one point
  (the latest allocation among them), so capacity and the offsets found over points hold
  in cycles. The lowered program enforces it with SIGNAL/WAIT (a DMA by its queue order).

Splitting: a :class:`SplitGroup` names a run of consecutive ops and the tensors split
along one dimension; with factor k the group runs k times in series on portions of
``ceil(size/k)`` bytes, each portion op taking the group's ``portion_compute`` cycles for
k (default ``ceil(compute/k)``; see :mod:`solvers.memory.levels.split`).
"""

from __future__ import annotations

import enum
import numbers
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = [
    "SplitGroup", "OpsAndTensors", "LevelProblem", "TransferKind", "Transfer", "LevelSolution", "ceil_div",
    "cycles_for_bytes", "to_rate",
]


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of a / b (b > 0).

    Examples
    --------
    >>> ceil_div(7, 2), ceil_div(0, 3)
    (4, 0)
    """
    return -(-a // b)


def to_rate(x, what: str = "bandwidth") -> Fraction:
    """A bytes-per-cycle rate as an exact :class:`~fractions.Fraction`.

    Ints, Fractions (any :class:`numbers.Rational`) and integral floats are accepted; a
    non-integral float is refused (it is not the exact rate: build it with
    ``Fraction(bytes_per_s, clock_hz)`` instead).

    Examples
    --------
    >>> to_rate(8), to_rate(Fraction(1200 * 10**9, 1050 * 10**6))
    (Fraction(8, 1), Fraction(8000, 7))
    >>> to_rate(1.5)
    Traceback (most recent call last):
    ...
    ValueError: bandwidth must be an int or a fractions.Fraction (exact bytes per cycle), got 1.5
    """
    if isinstance(x, bool):
        raise ValueError(f"{what} must be an int or a fractions.Fraction, got {x!r}")
    if isinstance(x, numbers.Rational):
        return Fraction(x.numerator, x.denominator)
    if isinstance(x, float) and x.is_integer():
        return Fraction(int(x))
    raise ValueError(f"{what} must be an int or a fractions.Fraction (exact bytes per cycle), got {x!r}")


def cycles_for_bytes(nbytes: int, bytes_per_cycle: Fraction | int) -> int:
    """Cycles to move ``nbytes`` at ``bytes_per_cycle``: ``ceil(nbytes / rate)``, exactly.

    With ``rate = p/q`` in lowest terms this is ``ceil(nbytes*q / p)`` in integers, the
    ISA's ``ceil(bytes * clock_hz / bytes_per_s)`` for ``rate = bytes_per_s / clock_hz``.

    Examples
    --------
    HBM at 1200 GB/s on a 1.05 GHz clock moves 8000/7 bytes per cycle:

    >>> hbm = Fraction(1200 * 10**9, 1050 * 10**6)
    >>> cycles_for_bytes(1000, hbm), cycles_for_bytes(8000, hbm), cycles_for_bytes(8001, hbm)
    (1, 7, 8)
    >>> cycles_for_bytes(7, 2)
    4
    """
    r = bytes_per_cycle if isinstance(bytes_per_cycle, Fraction) else Fraction(bytes_per_cycle)
    return -(-(nbytes * r.denominator) // r.numerator)


@dataclass(frozen=True, slots=True)
class SplitGroup:
    """Ops ``first_op..last_op`` may run in k portions over the ``tensors`` split along one dim.

    Every tensor written inside the group must be split; tensors read but not split
    (weights) are read whole by every portion.

    ``portion_compute`` (optional) gives, for each factor k of ``factors`` (a row per
    factor, in the order given), the compute cycles of each op of the group (a column per
    op, ``first_op`` first) when it runs on a ``1/k`` portion: the ISA's cost of the
    portion, which is not ``ceil(compute/k)`` when a systolic array fills and drains per
    portion. Empty: ``ceil(compute/k)``. Rows are stored sorted with ``factors``; the row
    of factor 1, if any, must equal the ops' own compute (checked by
    :class:`LevelProblem`).

    Examples
    --------
    >>> SplitGroup(1, 2, (3, 4)).factors
    (1, 2, 4)
    >>> g = SplitGroup(1, 2, (3, 4), factors=(2, 1), portion_compute=((60, 30), (100, 50)))
    >>> g.factors, g.portion_compute, g.compute_for(2)
    ((1, 2), ((100, 50), (60, 30)), (60, 30))
    >>> SplitGroup(1, 2, (3,), factors=(1, 2), portion_compute=((100, 50),))
    Traceback (most recent call last):
    ...
    ValueError: split group 1..2: portion_compute needs one row per factor (2), got 1
    """

    first_op: int
    last_op: int
    tensors: tuple[int, ...]
    factors: tuple[int, ...] = (1, 2, 4)
    portion_compute: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensors", tuple(sorted(int(t) for t in self.tensors)))
        if not 0 <= self.first_op <= self.last_op:
            raise ValueError(f"split group needs 0 <= first_op <= last_op, got {self.first_op}..{self.last_op}")
        where = f"split group {self.first_op}..{self.last_op}"
        given = tuple(int(k) for k in self.factors)
        if not given or min(given) < 1:
            raise ValueError("split factors must be >= 1")
        rows = tuple(self.portion_compute)
        if not rows:
            object.__setattr__(self, "factors", tuple(sorted(set(given))))
            return
        if len(rows) != len(given):
            raise ValueError(f"{where}: portion_compute needs one row per factor ({len(given)}), got {len(rows)}")
        width = self.last_op - self.first_op + 1
        table: dict[int, tuple[int, ...]] = {}
        for k, row in zip(given, rows):
            row = tuple(row)
            if len(row) != width:
                raise ValueError(f"{where}: portion_compute row of factor {k} needs one entry per op "
                                 f"({width}), got {len(row)}")
            if any(isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0 for c in row):
                raise ValueError(f"{where}: portion_compute of factor {k} must be ints >= 0, got {row}")
            row = tuple(int(c) for c in row)
            if table.setdefault(k, row) != row:
                raise ValueError(f"{where}: factor {k} is listed twice with different portion_compute")
        object.__setattr__(self, "factors", tuple(sorted(table)))
        object.__setattr__(self, "portion_compute", tuple(table[k] for k in sorted(table)))

    @property
    def ops(self) -> range:
        return range(self.first_op, self.last_op + 1)

    def compute_for(self, k: int) -> tuple[int, ...] | None:
        """The group's per-op portion compute for factor ``k`` (None: ``ceil(compute/k)``)."""
        if k not in self.factors:
            raise ValueError(f"factor {k} is not allowed for split group {self.first_op}..{self.last_op}")
        if not self.portion_compute:
            return None
        return self.portion_compute[self.factors.index(k)]


def _t2(rows) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(x) for x in row) for row in rows)


class OpsAndTensors:
    """What every memory-level problem (two levels, :class:`LevelProblem`; N levels,
    ``HierarchyProblem``) says of its ops and tensors: counts, names and each tensor's accesses
    (the subclass has ``compute_cycles``, ``tensor_bytes``, ``reads``, ``writes``, ``live_out``,
    ``fast_only_ops`` and the names, and sets ``_accesses`` from :meth:`_build_accesses`)."""

    __slots__ = ()

    @property
    def num_ops(self) -> int:
        return len(self.compute_cycles)

    @property
    def num_tensors(self) -> int:
        return len(self.tensor_bytes)

    def op_name(self, i: int) -> str:
        return self.op_names[i] if i < len(self.op_names) else str(i)

    def tensor_name(self, t: int) -> str:
        return self.tensor_names[t] if t < len(self.tensor_names) else str(t)

    def accesses(self, t: int) -> tuple[int, ...]:
        """``(producer or -1, readers..., num_ops if live-out)``."""
        return self._accesses[t]

    def is_real(self, op: int) -> bool:
        return 0 <= op < self.num_ops

    def _build_accesses(self) -> tuple[tuple[int, ...], ...]:
        """Per tensor ``(producer or -1, readers..., num_ops if live-out)``; checks the op rows."""
        n, nt = self.num_ops, self.num_tensors
        if len(self.reads) != n or len(self.writes) != n:
            raise ValueError(f"reads and writes need {n} rows each")
        producer = [-1] * nt
        readers: list[list[int]] = [[] for _ in range(nt)]
        for i in range(n):
            rs, ws = self.reads[i], self.writes[i]
            if len(set(rs)) != len(rs) or len(set(ws)) != len(ws):
                raise ValueError(f"op {self.op_name(i)} lists a tensor twice")
            if set(rs) & set(ws):
                raise ValueError(f"op {self.op_name(i)} reads and writes the same tensor")
            for t in (*rs, *ws):
                if not 0 <= t < nt:
                    raise ValueError(f"op {self.op_name(i)} names unknown tensor {t}")
            for t in ws:
                if producer[t] >= 0:
                    raise ValueError(f"tensor {self.tensor_name(t)} is written by two ops")
                producer[t] = i
            for t in rs:
                readers[t].append(i)
        for t in range(nt):
            if readers[t] and producer[t] >= 0 and readers[t][0] <= producer[t]:
                raise ValueError(f"tensor {self.tensor_name(t)} is read before it is written")
        if any(not 0 <= t < nt for t in self.live_out) or any(not 0 <= i < n for i in self.fast_only_ops):
            raise ValueError("live_out / fast_only_ops name an unknown tensor / op")
        live = set(self.live_out)
        return tuple((producer[t], *readers[t], *((n,) if t in live else ())) for t in range(nt))


@dataclass(frozen=True, slots=True)
class LevelProblem(OpsAndTensors):
    """Ops in a fixed order, the tensors they touch, two memory levels and one DMA engine.

    Examples
    --------
    Op 0 writes tensor 1 from weight 0; op 1 reads tensor 1:

    >>> p = LevelProblem(compute_cycles=(10, 10), reads=((0,), (1,)), writes=((1,), ()),
    ...                  tensor_bytes=(40, 20), capacity_bytes=(64, 1 << 20),
    ...                  bandwidth_bytes_per_cycle=(8, 2))
    >>> p.accesses(0), p.accesses(1)
    ((-1, 0), (0, 1))
    >>> p.dma_cycles(1)  # 20 bytes at 2 bytes/cycle
    10

    Exact fractional rates: HBM 1200 GB/s at 1.05 GHz is 8000/7 B/cycle, so 8001 bytes
    take ceil(7.00088) = 8 cycles; a DMA (latency 500) at min(HBM, VMEM) bandwidth likewise:

    >>> hbm = Fraction(1200 * 10**9, 1050 * 10**6)
    >>> q = LevelProblem((0,), ((),), ((0,),), (8001,), (1 << 20, 1 << 30), (Fraction(32000, 7), hbm),
    ...                  dma_bytes_per_cycle=hbm, dma_latency_cycles=500)
    >>> q.op_cycles(0, 0, 8001), q.dma_cycles(0), q.bandwidth_bytes_per_cycle
    (8, 508, (Fraction(32000, 7), Fraction(8000, 7)))
    """

    compute_cycles: tuple[int, ...]
    reads: tuple[tuple[int, ...], ...]
    writes: tuple[tuple[int, ...], ...]
    tensor_bytes: tuple[int, ...]
    capacity_bytes: tuple[int, int]  # (fast, slow)
    # (fast, slow) bytes per cycle as seen by the compute units: ints or exact Fractions
    # (stored as Fractions), e.g. Fraction(bytes_per_s, clock_hz).
    bandwidth_bytes_per_cycle: tuple[Fraction, Fraction]
    dma_bytes_per_cycle: Fraction = Fraction(0)  # int or Fraction; 0 = the slow level's bandwidth
    dma_latency_cycles: int = 0
    live_out: tuple[int, ...] = ()  # tensors that must be in the slow level at the end
    fast_only_ops: tuple[int, ...] = ()  # ops that can only touch fast memory (e.g. a TPU MXU)
    splits: tuple[SplitGroup, ...] = ()
    # per op, its compute stream (empty: every op on stream 0, the one-stream problem)
    op_streams: tuple[int, ...] = ()
    # Ops and DMAs contend for each level's bandwidth (solvers.memory.levels.bandwidth); False:
    # each op has every level's full bandwidth whatever the DMAs move.
    shared_bandwidth: bool = False
    op_names: tuple[str, ...] = field(default=(), compare=False)
    tensor_names: tuple[str, ...] = field(default=(), compare=False)
    _accesses: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        for name in ("compute_cycles", "tensor_bytes", "capacity_bytes", "live_out", "fast_only_ops", "op_streams"):
            object.__setattr__(self, name, tuple(int(x) for x in getattr(self, name)))
        object.__setattr__(self, "bandwidth_bytes_per_cycle", tuple(
            to_rate(x, "bandwidth_bytes_per_cycle") for x in self.bandwidth_bytes_per_cycle))
        object.__setattr__(self, "dma_bytes_per_cycle", to_rate(self.dma_bytes_per_cycle, "dma_bytes_per_cycle"))
        object.__setattr__(self, "dma_latency_cycles", int(self.dma_latency_cycles))
        object.__setattr__(self, "reads", _t2(self.reads))
        object.__setattr__(self, "writes", _t2(self.writes))
        object.__setattr__(self, "splits", tuple(self.splits))
        n, nt = self.num_ops, self.num_tensors
        if len(self.reads) != n or len(self.writes) != n:
            raise ValueError(f"reads and writes need {n} rows each")
        if len(self.capacity_bytes) != 2 or len(self.bandwidth_bytes_per_cycle) != 2:
            raise ValueError("exactly two levels (fast, slow) are supported")
        if min(self.capacity_bytes) <= 0 or min(self.bandwidth_bytes_per_cycle) <= 0:
            raise ValueError("capacities and bandwidths must be > 0")
        if self.dma_bytes_per_cycle < 0 or self.dma_latency_cycles < 0:
            raise ValueError("DMA bandwidth and latency must be >= 0")
        if any(c < 0 for c in self.compute_cycles) or any(b < 0 for b in self.tensor_bytes):
            raise ValueError("compute cycles and tensor bytes must be >= 0")
        if self.op_streams and (len(self.op_streams) != n or min(self.op_streams) < 0):
            raise ValueError(f"op_streams needs one stream >= 0 per op ({n}), got {self.op_streams}")
        accesses = self._build_accesses()
        seen_ops: set[int] = set()
        seen_tensors: set[int] = set()
        for g in self.splits:
            if g.last_op >= n or seen_ops & set(g.ops):
                raise ValueError(f"split group {g.first_op}..{g.last_op} is out of range or overlaps another")
            seen_ops |= set(g.ops)
            if len({self.stream_of(i) for i in g.ops}) > 1:
                raise ValueError(f"split group {g.first_op}..{g.last_op} spans several streams")
            if seen_tensors & set(g.tensors) or any(not 0 <= t < nt for t in g.tensors):
                raise ValueError("a tensor is split by two groups or is unknown")
            seen_tensors |= set(g.tensors)
            for i in g.ops:
                unsplit = set(self.writes[i]) - set(g.tensors)
                if unsplit:
                    raise ValueError(f"op {self.op_name(i)} in a split group writes unsplit tensor(s) "
                                     f"{sorted(unsplit)}")
            whole = g.compute_for(1) if 1 in g.factors else None
            if whole is not None and whole != self.compute_cycles[g.first_op:g.last_op + 1]:
                raise ValueError(f"split group {g.first_op}..{g.last_op}: portion_compute for factor 1 {whole} "
                                 f"differs from the ops' compute_cycles "
                                 f"{self.compute_cycles[g.first_op:g.last_op + 1]}")
        object.__setattr__(self, "_accesses", accesses)


    def stream_of(self, op: int) -> int:
        """The compute stream of op ``op`` (0 without ``op_streams``)."""
        return self.op_streams[op] if self.op_streams else 0

    @property
    def multi_stream(self) -> bool:
        """Whether the ops use two streams or more (the memory-order rule then applies).

        Examples
        --------
        >>> p = LevelProblem((1, 1), ((), ()), ((), ()), (), (8, 99), (4, 1), op_streams=(0, 1))
        >>> p.multi_stream, p.stream_of(1), LevelProblem((1,), ((),), ((),), (), (8, 99), (4, 1)).multi_stream
        (True, 1, False)
        """
        return len(set(self.op_streams)) > 1

    @property
    def dma_rate(self) -> Fraction:
        """The DMA engine's bytes per cycle (``dma_bytes_per_cycle``, or the slow level's)."""
        return self.dma_bytes_per_cycle or self.bandwidth_bytes_per_cycle[1]

    def dma_cycles(self, t: int) -> int:
        """``dma_latency_cycles + ceil(bytes / dma_rate)`` for tensor ``t`` (exact)."""
        return self.dma_latency_cycles + cycles_for_bytes(self.tensor_bytes[t], self.dma_rate)

    def op_accesses(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """Per op, the ``(tensor, access index)`` pairs it touches, in tensor order."""
        rows: list[list[tuple[int, int]]] = [[] for _ in range(self.num_ops)]
        for t in range(self.num_tensors):
            for j, a in enumerate(self.accesses(t)):
                if self.is_real(a):
                    rows[a].append((t, j))
        return tuple(tuple(r) for r in rows)

    def roofline_horizon(self) -> int:
        """No plan's ops take longer in all than this: per op, its compute plus every byte it
        touches at the fast and at the slow rate (a horizon for the CP-SAT models).

        Examples
        --------
        >>> LevelProblem((3,), ((0,),), ((),), (8,), (8, 99), (4, 1)).roofline_horizon()  # 3 + 8/4 + 8/1
        13
        """
        bf, bs = self.bandwidth_bytes_per_cycle
        h = 0
        for i, row in enumerate(self.op_accesses()):
            b = sum(self.tensor_bytes[t] for t, _ in row)
            h += self.compute_cycles[i] + cycles_for_bytes(b, bf) + cycles_for_bytes(b, bs)
        return h

    def op_cycles(self, op: int, fast_bytes: int, slow_bytes: int) -> int:
        """The roofline duration: ``max(compute, ceil(FB/bw_fast) + ceil(SB/bw_slow))`` (exact)."""
        bf, bs = self.bandwidth_bytes_per_cycle
        return max(self.compute_cycles[op], cycles_for_bytes(fast_bytes, bf) + cycles_for_bytes(slow_bytes, bs))


class TransferKind(enum.Enum):
    """Direction of a DMA.

    Examples
    --------
    >>> TransferKind("evict")
    <TransferKind.EVICT: 'evict'>
    """

    PREFETCH = "prefetch"  # slow -> fast
    EVICT = "evict"  # fast -> slow


@dataclass(frozen=True, slots=True)
class Transfer:
    """One DMA: in gap ``gap`` of ``tensor``, started after ``trigger_op`` ends (-1: at once),
    and waited for by ``release_op`` (``num_ops``: the end of the plan).

    Examples
    --------
    >>> Transfer(TransferKind.PREFETCH, tensor=0, gap=1, trigger_op=-1, release_op=0,
    ...          start_cycle=0, duration_cycles=8).end_cycle
    8
    """

    kind: TransferKind
    tensor: int
    gap: int
    trigger_op: int
    release_op: int
    start_cycle: int
    duration_cycles: int

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles


@dataclass(frozen=True, slots=True)
class LevelSolution:
    """Where every access lives, which gaps keep the fast copy, the DMAs and the op times.

    ``in_fast[t][j]`` / ``kept[t][j]`` follow ``accesses(t)`` (``kept[t][0]`` is False).
    ``transfers`` are in DMA-queue order (non-decreasing start). With split groups, the
    solution is over the expanded problem for ``split_factors``.

    ``fast_offsets`` (several streams only; empty: none): an address in the fast level per
    :func:`~solvers.memory.levels.validate.fast_pieces` entry. With them the memory order is
    the one by address (an allocation waits only for the frees of earlier pieces whose
    address range overlaps its own, :func:`~solvers.memory.levels.validate.memory_waits`),
    which the lowered program enforces, and the times are those of that order; pieces that
    overlap on the point axis must be apart (:mod:`solvers.memory.levels.stream_offsets`).

    ``link_starts`` (heads and tails with link holds only; empty: none): the start of each
    :class:`~solvers.memory.levels.link_holds.LinkHold` (a link transfer's end on this device).

    Examples
    --------
    >>> s = LevelSolution(in_fast=((False, True),), kept=((False, False),), transfers=(),
    ...                   op_start=(0, 5), op_duration=(5, 3))
    >>> s.makespan_cycles
    8
    """

    in_fast: tuple[tuple[bool, ...], ...]
    kept: tuple[tuple[bool, ...], ...]
    transfers: tuple[Transfer, ...]
    op_start: tuple[int, ...]
    op_duration: tuple[int, ...]
    split_factors: tuple[int, ...] = ()
    fast_offsets: tuple[int, ...] = ()
    link_starts: tuple[int, ...] = ()

    @property
    def makespan_cycles(self) -> int:
        ends = [s + d for s, d in zip(self.op_start, self.op_duration)]
        ends += [t.end_cycle for t in self.transfers]
        return max(ends, default=0)
