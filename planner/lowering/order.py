"""Record order: the instructions of one device that start on one cycle, in dependency order.

A program lists its instructions by start cycle; ``docs/isa.md`` ("Record order") makes the
order of the records that start on the same cycle meaningful: at cycle ``t`` a device first
completes every instruction of positive duration that ends at ``t``, then takes the
instructions that start at ``t`` one by one in record order (across all its streams and
engines): an instruction of zero duration acts entirely at its place, one of positive
duration starts there. So a zero-duration op (a reshape, a zero-byte copy) must come after
the writer of what it reads and before the FREE of it, and an ALLOC before every use.

:func:`order_records` sorts one device's instructions by start cycle and, within a cycle, in
a topological order of these precedences (``u -> v``: ``u`` first), all between instructions
of the same cycle:

* ``ALLOC b -> `` every instruction that reads or writes ``b``, ``-> FREE b``, ``-> ALLOC``
  of a view of ``b``; every instruction that reads or writes ``b -> FREE b``; ``FREE`` of a
  view ``-> FREE`` of its parent;
* a zero-duration write ``->`` every read of the same bytes (a buffer, a view inside it or the
  allocation it is a view of); a zero-duration read ``->`` a positive-duration write of them;
* graph edges: the instruction running a predecessor op ``->`` the one running its
  successor (``op_preds``, data and control edges alike);
* ``SIGNAL s -> WAIT s``; the instruction running the op a SIGNAL names ``-> SIGNAL``;
  ``WAIT ->`` the instruction running the op it names;
* with known addresses (a memory plan): ``FREE x -> ALLOC y`` when ``x`` and ``y`` overlap
  in one level.

Among the instructions that are ready, the order prefers FREE, SIGNAL and WAIT, then
zero-duration work, then the ALLOCs that zero-duration work needs, then the other ALLOCs
and last the positive-duration instructions: memory is freed as early and allocated as late
as the precedences allow. Ties follow stream, kind (FREE, SIGNAL, WAIT, ALLOC, RECV,
compute, SEND), views (allocated after and freed before their parents), op name, buffer.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from planner.errors import InternalError
from planner.isa.instructions import ALLOC_VIEW, COMPUTE_OPCODES, Instruction, Opcode

__all__ = ["BufferSpan", "order_records"]

_RANK = {Opcode.FREE: 0, Opcode.SIGNAL: 1, Opcode.WAIT: 2, Opcode.ALLOC: 3, Opcode.RECV: 4,
         Opcode.SEND: 6, Opcode.HALT: 9}
_COMPUTE_RANK = 5
_TIER_SYNC, _TIER_NEEDED_ALLOC, _TIER_ALLOC, _TIER_LONG = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class BufferSpan:
    """Where a buffer's bytes lie: in the allocation ``root`` (itself unless a view), ``[lo, hi)``.

    ``level`` and ``view`` serve the address precedences (FREE before an overlapping ALLOC);
    without known addresses every buffer is its own root at ``[0, size)``.

    Examples
    --------
    >>> BufferSpan(root=3, lo=64, hi=128, level=0, view=True).hi
    128
    """

    root: int
    lo: int
    hi: int
    level: int = 0
    view: bool = False

    def overlaps(self, other: "BufferSpan") -> bool:
        """Same allocation and a common byte (an empty span overlaps nothing)."""
        return self.root == other.root and self.lo < other.hi and other.lo < self.hi


def _tie_key(ins: Instruction) -> tuple:
    rank = _RANK.get(ins.opcode, _COMPUTE_RANK)
    view_rank = 0
    if ins.opcode == Opcode.FREE:
        view_rank = 0 if ins.subop & ALLOC_VIEW else 1  # views freed before their parents
    elif ins.opcode == Opcode.ALLOC:
        view_rank = 1 if ins.subop & ALLOC_VIEW else 0  # and allocated after them
    return (ins.stream, rank, view_rank, ins.op, ins.a, ins.c)


def _precedences(group: Sequence[Instruction], spans: Mapping[int, BufferSpan],
                 op_preds: Mapping[str, Iterable[str]], addressed: bool) -> list[set[int]]:
    """``succ[u]``: the group positions that must follow position ``u``."""
    succ: list[set[int]] = [set() for _ in group]

    def edge(u: int, v: int) -> None:
        if u != v:
            succ[u].add(v)

    alloc_at: dict[int, int] = {}
    free_at: dict[int, int] = {}
    runs: dict[str, int] = {}  # op name -> the position of the instruction running it
    signals: dict[int, int] = {}
    accesses: dict[int, list[tuple[int, int, bool]]] = defaultdict(list)  # root -> (pos, buffer, writes)
    for pos, ins in enumerate(group):
        if ins.opcode == Opcode.ALLOC:
            alloc_at[ins.a] = pos
        elif ins.opcode == Opcode.FREE:
            free_at[ins.a] = pos
        elif ins.opcode == Opcode.SIGNAL:
            signals[ins.a] = pos
        elif ins.opcode in COMPUTE_OPCODES and ins.op:
            runs[ins.op] = pos
        for b in ins.reads:
            accesses[spans[b].root].append((pos, b, False))
        for b in ins.writes:
            accesses[spans[b].root].append((pos, b, True))
    for root_accesses in accesses.values():
        for pos, b, _ in root_accesses:
            if b in alloc_at:
                edge(alloc_at[b], pos)
            if b in free_at:
                edge(pos, free_at[b])
        for pw, bw, writes in root_accesses:
            if not writes:
                continue
            for pr, br, reads_too in root_accesses:
                if reads_too or pr == pw or not (br == bw or spans[bw].overlaps(spans[br])):
                    continue
                if group[pw].duration_cycles == 0:
                    edge(pw, pr)  # the reader reads what this write wrote
                elif group[pr].duration_cycles == 0:
                    edge(pr, pw)  # the reader reads the bytes before they are overwritten
    for b, pos in alloc_at.items():
        if b in free_at:
            edge(pos, free_at[b])
        root = spans[b].root
        if root != b:
            if root in alloc_at:
                edge(alloc_at[root], pos)
            if b in free_at and root in free_at:
                edge(free_at[b], free_at[root])
    for pos, ins in enumerate(group):
        if ins.opcode in COMPUTE_OPCODES and ins.op:
            for pred in op_preds.get(ins.op, ()):
                if pred in runs:
                    edge(runs[pred], pos)
        elif ins.opcode == Opcode.SIGNAL and ins.op in runs:
            edge(runs[ins.op], pos)
        elif ins.opcode == Opcode.WAIT:
            if ins.a in signals:
                edge(signals[ins.a], pos)
            if ins.op in runs:
                edge(pos, runs[ins.op])
    if addressed:
        _address_precedences(group, alloc_at, free_at, spans, edge)
    return succ


def _address_precedences(group: Sequence[Instruction], alloc_at: Mapping[int, int], free_at: Mapping[int, int],
                         spans: Mapping[int, BufferSpan], edge) -> None:
    """FREE of a buffer before the ALLOC of another that reuses its bytes (same level)."""
    freed = [(spans[b].level, spans[b].lo, spans[b].hi, b, pos) for b, pos in free_at.items()
             if not spans[b].view and spans[b].hi > spans[b].lo]
    if not freed:
        return
    for b, pos in alloc_at.items():
        s = spans[b]
        if s.view or s.hi <= s.lo:
            continue
        for level, lo, hi, other, fpos in freed:
            if other != b and level == s.level and lo < s.hi and s.lo < hi:
                edge(fpos, pos)


def _tiers(group: Sequence[Instruction], succ: Sequence[set[int]]) -> list[int]:
    tier = [_TIER_LONG if ins.duration_cycles > 0 else
            _TIER_ALLOC if ins.opcode == Opcode.ALLOC else _TIER_SYNC for ins in group]
    changed = True
    while changed:  # an ALLOC that zero-duration work (or such an ALLOC) needs comes first
        changed = False
        for pos, ins in enumerate(group):
            if tier[pos] == _TIER_ALLOC and any(tier[s] <= _TIER_NEEDED_ALLOC for s in succ[pos]):
                tier[pos] = _TIER_NEEDED_ALLOC
                changed = True
    return tier


def _order_group(group: list[Instruction], spans: Mapping[int, BufferSpan],
                 op_preds: Mapping[str, Iterable[str]], addressed: bool, device: str) -> list[Instruction]:
    if len(group) == 1:
        return group
    group.sort(key=_tie_key)
    succ = _precedences(group, spans, op_preds, addressed)
    indegree = [0] * len(group)
    for targets in succ:
        for v in targets:
            indegree[v] += 1
    tier = _tiers(group, succ)
    ready = [(tier[p], p) for p in range(len(group)) if indegree[p] == 0]
    heapq.heapify(ready)
    out: list[Instruction] = []
    while ready:
        _, pos = heapq.heappop(ready)
        out.append(group[pos])
        for v in sorted(succ[pos]):
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, (tier[v], v))
    if len(out) != len(group):
        stuck = [f"{ins.opcode.name} {ins.op or ins.a}" for p, ins in enumerate(group) if indegree[p]]
        raise InternalError(f"device {device}: the instructions starting at cycle {group[0].start_cycle} "
                            f"depend on each other in a cycle: {', '.join(stuck[:8])}")
    return out


def order_records(items: Iterable[Instruction], spans: Mapping[int, BufferSpan],
                  op_preds: Mapping[str, Iterable[str]], *, addressed: bool, device: str = "") -> list[Instruction]:
    """``items`` by start cycle, and within a cycle in dependency order (module docstring).

    Parameters
    ----------
    items
        One device's instructions, HALT excluded.
    spans
        Every buffer id the instructions name: its root allocation and byte range.
    op_preds
        Op (or instance) name -> the names of the ops on this device it depends on (graph
        data and control edges).
    addressed
        The spans carry real addresses: order a FREE before an ALLOC that reuses its bytes.
    device
        For the error message.

    Returns
    -------
    list[Instruction]

    Raises
    ------
    InternalError
        The precedences of one cycle form a cycle (a lowering bug or a memory plan whose
        buffers overlap while an instruction of that cycle needs both).

    Examples
    --------
    A reshape (zero duration) at cycle 5 reads ``c`` (buffer 0) and writes ``r`` (1); the
    relu starting at 5 reads ``r``; ``c`` is freed at 5:

    >>> ins = [Instruction(Opcode.VECTOR, 0, 5, 9, op="relu", subop=3, a=4, b=1, reads=(1,), writes=(2,)),
    ...        Instruction(Opcode.FREE, 0, 5, 0, a=0, c=16), Instruction(Opcode.ALLOC, 0, 5, 0, a=1, c=16),
    ...        Instruction(Opcode.ALLOC, 0, 5, 0, a=2, c=16),
    ...        Instruction(Opcode.DMA, 0, 5, 0, op="reshape", reads=(0,), writes=(1,))]
    >>> spans = {b: BufferSpan(b, 0, 16) for b in range(3)}
    >>> [(i.opcode.name, i.op or i.a) for i in order_records(ins, spans, {"relu": ["reshape"]}, addressed=False)]
    [('ALLOC', 1), ('DMA', 'reshape'), ('FREE', 0), ('ALLOC', 2), ('VECTOR', 'relu')]
    """
    by_cycle: dict[int, list[Instruction]] = defaultdict(list)
    for ins in items:
        by_cycle[ins.start_cycle].append(ins)
    out: list[Instruction] = []
    for cycle in sorted(by_cycle):
        out.extend(_order_group(by_cycle[cycle], spans, op_preds, addressed, device))
    return out
