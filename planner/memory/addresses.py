"""Addresses for the buffers of one memory level when no memory plan gives them.

Every buffer lives over a half-open interval ``[start, end)`` of the program's time: a
cycle, refined within the cycle by the position of its ALLOC and FREE records (the record
order ``docs/isa.md`` defines); two buffers live at the same time must not share an
address. The time axis is compressed to event indices (the distinct start and end points),
which :class:`solvers.memory.offsets.OffsetProblem` needs as steps, and sizes are rounded up
to the alignment, so every address is a multiple of it. Greedy-by-size (TFLite's arena
planner) packs the buffers; when its arena exceeds the level, CP-SAT searches for a packing
under a small deterministic budget; when that fails too,
:class:`~planner.errors.InfeasibleError` says how many bytes are live, when, and which
buffers are the biggest there.

Time axis
---------
A point is ``(cycle, order)``: ``order`` is the record position of the buffer's ALLOC
(start) or FREE (end), 0 when not given. Point ``p`` of rank ``r`` (among the distinct
points) is step ``2r``. A lifetime from ``s`` to ``e > s`` becomes ``[2r(s), 2r(e))``: a
buffer freed at a cycle shares bytes with one allocated at the same cycle only when the FREE
comes first in the record order. An empty lifetime (``e == s``: a buffer allocated and freed
at one point, only without orders) becomes ``[2r(s), 2r(s) + 1)``, so it conflicts with every
buffer live there (including those allocated there and other empty ones) and with none freed
there.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator, Sequence

from planner.errors import InfeasibleError, InternalError
from planner.units import format_bytes
from solvers.budget import MEMORY_OFFSETS, NET_SLOWDOWN_ENV, Budget
from solvers.core import SolveOptions, Status
from solvers.memory.offsets import (
    GreedyBySizeOffsetSolver,
    OffsetProblem,
    build_offset_model,
    peak_bytes,
    validate_offsets,
)

__all__ = ["Lifetime", "assign_addresses", "OFFSET_CPSAT_DETERMINISTIC_TIME", "offset_budget", "round_up",
           "collecting_net_stops"]

_LOG = logging.getLogger(__name__)

# The active collectors' lists (innermost last): a net stop of any address search in their
# blocks, wherever it is called from (the address pass, the memory plans' assembly).
_COLLECTORS: ContextVar[tuple[list[str], ...]] = ContextVar("address_net_stops", default=())

# CP-SAT budget when greedy-by-size cannot pack a level: deterministic time (CP-SAT's
# work units, about a second each) with one worker and seed 0, so the outcome repeats;
# the shared budget's wall-clock net (solvers.budget) is only a safety net far above it.
OFFSET_CPSAT_DETERMINISTIC_TIME = 2.0


def round_up(size_bytes: int, alignment_bytes: int) -> int:
    """``size_bytes`` rounded up to a multiple of ``alignment_bytes``.

    Examples
    --------
    >>> round_up(1000, 64), round_up(0, 64), round_up(64, 64)
    (1024, 0, 64)
    """
    return -(-size_bytes // alignment_bytes) * alignment_bytes


@dataclass(frozen=True, slots=True)
class Lifetime:
    """A buffer to place: ``size_bytes`` live over cycles ``[start_cycle, end_cycle)``.

    ``start_order`` and ``end_order`` place its ALLOC and FREE within their cycles (record
    positions; 0 when not known): ``(start_cycle, start_order) < (end_cycle, end_order)``
    unless both are equal.

    Examples
    --------
    >>> Lifetime("y", 1000, 4, 36).end_cycle
    36
    >>> Lifetime("r", 64, 7, 7, start_order=3, end_order=5).end
    (7, 5)
    """

    name: str
    size_bytes: int
    start_cycle: int
    end_cycle: int
    start_order: int = 0
    end_order: int = 0

    def __post_init__(self) -> None:
        if self.size_bytes < 0 or not 0 <= self.start_cycle <= self.end_cycle or self.end < self.start:
            raise ValueError(f"buffer {self.name!r}: needs size >= 0 and 0 <= start <= end, got "
                             f"{self.size_bytes} B over [{self.start}, {self.end})")

    @property
    def start(self) -> tuple[int, int]:
        """The ALLOC's point in time: (cycle, record order)."""
        return (self.start_cycle, self.start_order)

    @property
    def end(self) -> tuple[int, int]:
        """The FREE's point in time: (cycle, record order)."""
        return (self.end_cycle, self.end_order)


def _to_problem(buffers: Sequence[Lifetime], capacity_bytes: int, alignment_bytes: int) -> OffsetProblem:
    points = sorted({b.start for b in buffers} | {b.end for b in buffers})
    rank = {c: i for i, c in enumerate(points)}
    start = [2 * rank[b.start] for b in buffers]
    end = [2 * rank[b.end] if b.end > b.start else 2 * rank[b.start] + 1 for b in buffers]
    return OffsetProblem(size_bytes=tuple(round_up(b.size_bytes, alignment_bytes) for b in buffers),
                         start=tuple(start), end=tuple(end), capacity_bytes=capacity_bytes,
                         alignment_bytes=(alignment_bytes,) * len(buffers),
                         names=tuple(b.name for b in buffers))


def _busiest_step(problem: OffsetProblem) -> tuple[int, int]:
    """(step, live bytes) where the most (alignment-rounded) bytes are live; earliest on ties."""
    events = sorted([(problem.start[i], 1, problem.size_bytes[i]) for i in range(problem.num_buffers)]
                    + [(problem.end[i], 0, -problem.size_bytes[i]) for i in range(problem.num_buffers)])
    live, best, best_step = 0, 0, 0
    for step, _, delta in events:  # frees (0) before allocations (1) at one step
        live += delta
        if live > best:
            best, best_step = live, step
    return best_step, best


def _format_bytes(n: int) -> str:
    """The report's byte format, with the exact count when it is rounded (1.95 KiB (2000 B))."""
    text = format_bytes(n)
    return text if text.endswith(" B") and text[:-2].isdigit() else f"{text} ({n} B)"


def _explain(buffers: Sequence[Lifetime], problem: OffsetProblem, *, device: str, level: str,
             alignment_bytes: int, packed_bytes: int | None, proven: bool, wall_clock: bool = False) -> str:
    step, live = _busiest_step(problem)
    points = sorted({b.start for b in buffers} | {b.end for b in buffers})
    cycle = points[step // 2][0]
    there = sorted((i for i in range(problem.num_buffers)
                    if problem.start[i] <= step < problem.end[i] and problem.size_bytes[i]),
                   key=lambda i: (-buffers[i].size_bytes, buffers[i].name))
    unrounded = sum(buffers[i].size_bytes for i in there)
    biggest = ", ".join(f"{buffers[i].name} {_format_bytes(buffers[i].size_bytes)} live "
                        f"[{buffers[i].start_cycle}, {buffers[i].end_cycle})" for i in there[:3])
    head = (f"device {device}: the buffers of memory level {level!r} (capacity "
            f"{_format_bytes(problem.capacity_bytes)}) do not fit at {alignment_bytes}-byte-aligned addresses")
    if live > problem.capacity_bytes:
        return (f"{head}: at cycle {cycle}, {len(there)} buffers are live, holding {_format_bytes(live)} once "
                f"each is rounded up to {alignment_bytes} B ({_format_bytes(unrounded)} as allocated), more "
                f"than the capacity; the biggest: {biggest}. Lower the memory use at that cycle, raise the "
                f"device's memory limit, or use a smaller alignment.")
    why = ("no placement fits (proven by CP-SAT)" if proven else
           f"no placement was found before the wall-clock safety net stopped the search (not reproducible: "
           f"a less busy machine or a larger {NET_SLOWDOWN_ENV} may find one)" if wall_clock else
           "no placement was found within the search budget")
    found = ("" if packed_bytes is None else
             f"; the best packing found (greedy-by-size) needs {_format_bytes(packed_bytes)}")
    return (f"{head}, although at most {_format_bytes(live)} are live at once (cycle {cycle}: {len(there)} "
            f"buffers; the biggest: {biggest}): buffers live at the same time cannot share addresses, and "
            f"the free space is fragmented between buffers that live at different times; {why}{found}. "
            f"Raise the device's memory limit to leave room for fragmentation, or lower the memory use.")


def assign_addresses(buffers: Sequence[Lifetime], capacity_bytes: int, alignment_bytes: int = 64, *,
                     device: str = "", level: str = "") -> tuple[int, ...]:
    """One address per buffer, a multiple of ``alignment_bytes``, packed into the capacity.

    Parameters
    ----------
    buffers
        The buffers of one memory level with their lifetimes (cycles of the plan).
    capacity_bytes
        The level's capacity: every buffer's rounded size ends at or below it.
    alignment_bytes
        Every address is a multiple of it; sizes are rounded up to it.
    device, level
        Names for the error message.

    Returns
    -------
    tuple[int, ...]
        The addresses, in the order of ``buffers``. Deterministic.

    Raises
    ------
    InfeasibleError
        Neither greedy-by-size nor CP-SAT (deterministic budget) packs the buffers into the
        capacity; the message gives the busiest cycle and its biggest buffers.

    Examples
    --------
    ``x`` and ``z`` live at different times and share address 0; ``y`` overlaps both:

    >>> assign_addresses([Lifetime("x", 100, 0, 5), Lifetime("y", 64, 0, 10), Lifetime("z", 10, 5, 10)], 1024)
    (0, 128, 0)

    Three 64-byte buffers live together cannot fit in 128 bytes:

    >>> assign_addresses([Lifetime(n, 64, 0, 1) for n in "abc"], 128, device="d0", level="mem")
    Traceback (most recent call last):
    ...
    planner.errors.InfeasibleError: device d0: the buffers of memory level 'mem' (capacity 128 B) do not fit \
at 64-byte-aligned addresses: at cycle 0, 3 buffers are live, holding 192 B once each is rounded up to 64 B \
(192 B as allocated), more than the capacity; the biggest: a 64 B live [0, 1), b 64 B live [0, 1), c 64 B \
live [0, 1). Lower the memory use at that cycle, raise the device's memory limit, or use a smaller alignment.
    """
    if alignment_bytes < 1:
        raise ValueError(f"alignment_bytes must be >= 1, got {alignment_bytes}")
    if not buffers:
        return ()
    problem = _to_problem(buffers, capacity_bytes, alignment_bytes)
    greedy = GreedyBySizeOffsetSolver().solve(problem)
    if greedy.solution is not None:
        return greedy.solution.offsets
    greedy_peak = greedy.stats.get("peak_bytes")
    _, live = _busiest_step(problem)
    context = dict(device=device, level=level, alignment_bytes=alignment_bytes)
    if live > capacity_bytes:
        raise InfeasibleError(_explain(buffers, problem, packed_bytes=greedy_peak, proven=True, **context))
    _LOG.info("device %s, level %s: greedy-by-size needs %s B > %s B; trying CP-SAT", device, level,
              greedy_peak, capacity_bytes)
    model, variables = build_offset_model(problem, capacity_bytes, live)
    budget = offset_budget()
    status, solver, _ = budget.run_cpsat(model, SolveOptions(num_workers=1, random_seed=0),
                                         OFFSET_CPSAT_DETERMINISTIC_TIME, f"addresses {device}/{level}",
                                         interleave=False)
    if budget.stopped_by == "wall_clock":
        for stops in _COLLECTORS.get():
            stops.append(f"addresses {device}/{level}")
        _LOG.warning("device %s, level %s: the address search stopped on the wall-clock safety net, not its "
                     "deterministic budget: these addresses may differ on a less busy machine (raise %s)",
                     device, level, NET_SLOWDOWN_ENV)
    if status.has_solution:
        solution = variables.extract(solver)
        errors = validate_offsets(problem, solution)
        if errors:
            raise InternalError(f"CP-SAT offsets for level {level!r} of {device}: " + "; ".join(errors[:5]))
        _LOG.info("CP-SAT packs level %s of %s into %d B", level, device, peak_bytes(problem, solution))
        return solution.offsets
    raise InfeasibleError(_explain(buffers, problem, packed_bytes=greedy_peak, proven=status is Status.INFEASIBLE,
                                   wall_clock=budget.stopped_by == "wall_clock", **context))


def offset_budget() -> Budget:
    """The budget of one offset search: :data:`OFFSET_CPSAT_DETERMINISTIC_TIME` units decide,
    and the wall-clock net is the one :mod:`solvers.budget` gives a solve of the time limit that
    grants those units at :data:`~solvers.budget.MEMORY_OFFSETS`' rate (200 s), so it stands
    ``PLAN_NET_SLOWDOWN`` x that limit + 5 s away (the 5 s growing with a factor above the
    default: :func:`~solvers.budget.net_seconds`) and widens with the variable like every other
    net. A fixed net (it was 120 s) fired on a busy machine, where NoOverlap2D runs 0.02-0.03 units
    per second (2 units: 70-100 s), before the budget and changed the packing or refused it.

    Examples
    --------
    >>> b = offset_budget()
    >>> b.total == OFFSET_CPSAT_DETERMINISTIC_TIME, b.deterministic
    (True, True)
    """
    return Budget.start(OFFSET_CPSAT_DETERMINISTIC_TIME / MEMORY_OFFSETS.units_per_second, MEMORY_OFFSETS)


@contextmanager
def collecting_net_stops() -> Iterator[list[str]]:
    """The address searches the wall-clock safety net stopped inside the block, as
    ``"addresses <device>/<level>"`` in the order they ran: each such search may pack (or
    refuse) differently on a less busy machine, so a run that had one is not reproducible
    (:func:`planner.pipeline.Route.plan` writes them to plan.json's ``solver.net_stops``).
    Nested blocks each see the stops inside them.

    Examples
    --------
    >>> with collecting_net_stops() as stops:
    ...     _ = assign_addresses([Lifetime("x", 64, 0, 1)], 64)
    >>> stops
    []
    """
    stops: list[str] = []
    token = _COLLECTORS.set((*_COLLECTORS.get(), stops))
    try:
        yield stops
    finally:
        _COLLECTORS.reset(token)
