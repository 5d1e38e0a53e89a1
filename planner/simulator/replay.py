"""Independent replay of per-device binaries.

The simulator reads nothing but the binaries: it decodes each one (refusing a bad magic,
version, checksum or truncation), recomputes every instruction's duration from the ISA
formulas and the header's profile and clocks, replays the programs event by event and
collects every broken rule as a violation. It never imports the solver or the plan.

Checks
------
* program shape: records sorted by start cycle, exactly one HALT, last, at or after
  every other instruction's end; compute on a valid stream, SEND/RECV on the transfer
  engine, only DMAs (and bookkeeping) on the DMA engine, bookkeeping (ALLOC, FREE,
  SIGNAL, WAIT, HALT) of zero duration;
* timing: each compute instruction's and memory DMA's duration equals its recomputed
  cycles (roofline with ``fast_bytes``) converted to the reference clock; each
  SEND/RECV's equals the link's latency + bytes / bandwidth;
* streams: compute instructions of one stream do not overlap, nor DMAs on the DMA
  engine (one at a time); each op runs once (memory DMAs are not ops);
* dependencies, in the points of the record order (``docs/isa.md``: at a cycle, what ends
  there first, then the records that start there in record order), so a zero-duration op
  listed before what it depends on is caught: reads and writes happen while the buffer is
  allocated; every byte a read covers was written by a write that ended before the read
  starts (a write to the buffer, to a view inside it or to the allocation it is a view of;
  a preloaded ALLOC writes at its point); no write overlaps in time a read or another
  write of the same bytes (buffers may be written several times: a prefetched copy by its
  DMA, a slow copy by an eviction after its producer);
* memory DMAs (``DMA`` on the DMA engine): one source and one destination buffer, the
  levels they name are the buffers' levels, and the bytes equal the smaller of the two
  buffers (equal sizes for a whole copy; a portion copied into or out of a view);
* kernels: one per op name, naming a compute instruction whose reads and writes are
  exactly the kernel's operand buffers, each buffer large enough for its portion (an
  operand held in k buffers is split in k equal parts along dimension 0); with a memory
  plan (``fast_level >= 0``) a MATMUL/VECTOR's ``fast_bytes`` and ``mem_bytes`` equal the
  summed sizes of its distinct kernel operand buffers in the fast and in the main level, and no
  operand lives in a third level, unless it has level bytes (format version 3): then each
  level's entry is the summed size of its distinct operand buffers in that level;
* level bytes: only on MATMUL/CONV/VECTOR and compute-stream DMAs, one entry per level, the
  main entry equal to ``mem_bytes`` and the fast one to ``fast_bytes`` (0 without a fast level);
* transfers: every RECV matches one SEND (same id, bytes and link, crossed peers) and
  starts no earlier than it; a link carries one transfer at a time across all binaries;
* shared bandwidth (header flag, ``memory.bandwidth: shared``): at no cycle do the records
  running hold more than a level's shares (:mod:`planner.simulator.bandwidth`); the result's
  ``bandwidth`` gives each level's peak shares and contended cycles;
* semaphores: each WAIT (any stream, DMA engine included) comes after its SIGNAL; a
  SIGNAL naming an op after that op's record ends, a WAIT naming one before it starts;
* memory: live non-view bytes never exceed the header's capacity per level (ALLOC and
  FREE replayed in record order; views take no capacity); in an
  addressed program (``Program.addressed``), live non-view buffers of a level never
  overlap in ``[address, address + bytes)`` and end within the level's capacity, and a
  view lies inside one live non-view buffer of its level for its whole life.

Speed: :func:`simulate` and :func:`simulate_dir` screen the binaries' columns with numpy
first (:mod:`planner.simulator.screen`); only binaries the screen cannot show valid (and
those sharing bandwidth, which it hands over) go through the record-by-record checks below (:func:`simulate_programs`), which name every
violation.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import numpy as np

from planner.errors import BinaryFormatError, InternalError
from planner.graph.ir import DTYPE_BYTES
from planner.isa.binary import decode, decode_tables
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    COMPUTE_OPCODES,
    DMA_STREAM,
    TRANSFER_STREAM,
    Instruction,
    Opcode,
    Program,
    expected_duration_cycles,
)
from planner.simulator.bandwidth import check_shared_bandwidth
from planner.simulator.screen import Screened, coverage_end, screened_replay

__all__ = [
    "OpTiming",
    "TransferTiming",
    "DmaTiming",
    "SimulationResult",
    "SimulationError",
    "simulate",
    "simulate_programs",
    "simulate_dir",
    "view_parents",
]

_BOOKKEEPING = frozenset({Opcode.ALLOC, Opcode.FREE, Opcode.SIGNAL, Opcode.WAIT, Opcode.HALT})
_ROOFLINE = frozenset({Opcode.MATMUL, Opcode.CONV, Opcode.VECTOR})
_NEVER = 1 << 62  # "never freed": the buffer lives until the program ends


class SimulationError(InternalError):
    """Strict mode: the binaries break a rule (a lowering or scheduling bug).

    Examples
    --------
    >>> issubclass(SimulationError, InternalError)
    True
    """


class OpTiming(NamedTuple):
    """Where and when the simulator saw an op run (reference cycles); a tuple.

    Examples
    --------
    >>> tuple(OpTiming("d0", 0, 2, 5))
    ('d0', 0, 2, 5)
    """

    device: str
    stream: int
    start_cycle: int
    end_cycle: int


class TransferTiming(NamedTuple):
    """One transfer as the SEND/RECV pair replayed it (reference cycles); a tuple.

    ``src_op`` and ``dst_op`` are the ops the SEND and the RECV name (the producer and the
    consumer the transfer joins).

    Examples
    --------
    >>> TransferTiming(0, "d0", "d1", "l0", 1000, 4, 16, "a", "b").end_cycle
    16
    """

    id: int
    src_device: str
    dst_device: str
    link: str
    size_bytes: int
    start_cycle: int
    end_cycle: int
    src_op: str = ""
    dst_op: str = ""


class DmaTiming(NamedTuple):
    """One memory DMA on a device's DMA engine (not an op of the plan); a tuple.

    ``kind`` is the part of the instruction's op before ``":"`` (``"prefetch"``,
    ``"evict"``), buffers and levels are names.

    Examples
    --------
    >>> DmaTiming("d0", "prefetch:x@vmem.0", "prefetch", "x", "x@vmem.0", "hbm", "vmem", 64, 0, 9).end_cycle
    9
    """

    device: str
    op: str
    kind: str
    src_buffer: str
    dst_buffer: str
    src_level: str
    dst_level: str
    size_bytes: int
    start_cycle: int
    end_cycle: int


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """What the replay found. ``violations`` is empty when the binaries are valid.

    ``dmas`` lists the memory DMAs (sorted by device, start cycle, op); they are not in
    ``ops``. ``peak_bytes`` counts non-view allocations.

    Examples
    --------
    >>> r = SimulationResult(0, {}, {}, {}, 0, ("x",))
    >>> r.valid, r.dmas
    (False, ())
    """

    makespan_cycles: int
    ops: dict[str, OpTiming]
    transfers: dict[int, TransferTiming]
    peak_bytes: dict[str, dict[str, int]]  # device -> level -> peak live bytes
    instruction_count: int
    violations: tuple[str, ...] = ()
    devices: tuple[str, ...] = field(default=())
    dmas: tuple[DmaTiming, ...] = ()
    # Shared bandwidth only: device -> level -> peak_shares, shared_cycles, full_cycles
    # (planner.simulator.bandwidth); empty for programs that do not share bandwidth.
    bandwidth: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.violations

    def raise_if_invalid(self) -> None:
        """Raise :class:`SimulationError` listing the violations, if any."""
        if self.violations:
            shown = "\n  ".join(self.violations[:20])
            more = f"\n  ... and {len(self.violations) - 20} more" if len(self.violations) > 20 else ""
            raise SimulationError(f"simulation found {len(self.violations)} violation(s):\n  {shown}{more}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "makespan_cycles": self.makespan_cycles,
            "instruction_count": self.instruction_count,
            "valid": self.valid,
            "violations": list(self.violations),
            "peak_bytes": self.peak_bytes,
            "ops": {k: {"device": v.device, "stream": v.stream, "start_cycle": v.start_cycle,
                        "end_cycle": v.end_cycle} for k, v in self.ops.items()},
            "transfers": [{"id": t.id, "src_device": t.src_device, "dst_device": t.dst_device,
                           "link": t.link, "size_bytes": t.size_bytes, "start_cycle": t.start_cycle,
                           "end_cycle": t.end_cycle, "src_op": t.src_op, "dst_op": t.dst_op}
                          for t in self.transfers.values()],
            "dmas": [d._asdict() for d in self.dmas],
            **({"bandwidth": self.bandwidth} if self.bandwidth else {}),
        }


def _where(p: Program, idx: int, ins: Instruction) -> str:
    op = f" ({ins.op})" if ins.op else ""
    return f"{p.device}#{idx} {ins.opcode.name}{op}"


def _stream_name(stream: int) -> str:
    if stream == DMA_STREAM:
        return "DMA engine"
    if stream == TRANSFER_STREAM:
        return "transfer engine"
    return f"stream {stream}"


def _is_memory_dma(ins: Instruction) -> bool:
    return ins.opcode == Opcode.DMA and ins.stream == DMA_STREAM


# Event keys: the record order within a cycle (docs/isa.md, "Record order"). Record ``i``
# starts at ``(start, 1, i)``; one of positive duration ends at ``(end, 0, i)``, before
# anything that starts at that cycle; one of zero duration ends where it starts.
_Key = tuple[int, int, int]
_AT = 1  # the phase of the records that start at a cycle, in record order
_ENDS = 0  # the phase of the positive-duration records that end at a cycle, before them
_NEVER_KEY: _Key = (_NEVER, _AT, 0)


def _start_key(i: int, ins: Instruction) -> _Key:
    return (ins.start_cycle, _AT, i)


def _end_key(i: int, ins: Instruction) -> _Key:
    return (ins.end_cycle, _ENDS, i) if ins.duration_cycles > 0 else (ins.start_cycle, _AT, i)


class _Index(NamedTuple):
    """One pass over a program's records that every check reuses: each record's event keys,
    and the records of each opcode (in record order), so a check visits only its own."""

    starts: list[_Key]
    ends: list[_Key]
    by_code: dict[Opcode, list[int]]


def _index(p: Program) -> _Index:
    instrs = p.instructions
    starts = [(ins.start_cycle, _AT, i) for i, ins in enumerate(instrs)]
    ends = [(ins.start_cycle + ins.duration_cycles, _ENDS, i) if ins.duration_cycles > 0 else starts[i]
            for i, ins in enumerate(instrs)]
    codes = np.fromiter((ins.opcode for ins in instrs), dtype=np.int64, count=len(instrs))
    order = np.argsort(codes, kind="stable")  # record order within each opcode
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    by_code = {Opcode(int(codes[group[0]])): group.tolist() for group in np.split(order, bounds) if len(group)}
    return _Index(starts, ends, by_code)


class _Buf(NamedTuple):
    """One buffer's allocation, as its ALLOC and FREE give it (keys: record positions)."""

    alloc_cycle: int
    level: int
    size: int
    preloaded: bool
    view: bool
    address: int
    free_cycle: int  # _NEVER when not freed
    alloc_key: _Key = _NEVER_KEY
    free_key: _Key = _NEVER_KEY  # _NEVER_KEY when not freed


def _check_shape(p: Program, x: _Index, v: list[str]) -> None:
    """HALT, record order, streams, bookkeeping durations and recomputed durations."""
    instrs = p.instructions
    halts = x.by_code.get(Opcode.HALT, [])
    if not instrs or instrs[-1].opcode != Opcode.HALT:
        v.append(f"{p.device}: the last instruction is not HALT")
    if len(halts) > 1:
        v.append(f"{p.device}: {len(halts)} HALT instructions (expected one)")
    ends = [key[0] for key in x.ends]
    for i in halts:
        ends[i] = 0
    end_all = max(ends, default=0)
    for i in halts:
        if instrs[i].start_cycle < end_all:
            v.append(f"{_where(p, i, instrs[i])} at cycle {instrs[i].start_cycle} before the program's "
                     f"last cycle {end_all}")
    starts = [key[0] for key in x.starts]
    for i in [i for i in range(1, len(starts)) if starts[i] < starts[i - 1]]:
        v.append(f"{_where(p, i, instrs[i])} starts at {instrs[i].start_cycle}, before the previous "
                 f"record's {instrs[i - 1].start_cycle}: records out of order")
    _check_streams_and_durations(p, v)
    by_stream: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for code in COMPUTE_OPCODES:
        for i in x.by_code.get(code, ()):
            ins = instrs[i]
            if ins.duration_cycles > 0:
                by_stream[ins.stream].append((ins.start_cycle, x.ends[i][0], i))
    for stream in sorted(by_stream):
        spans = sorted(by_stream[stream])
        for (s0, e0, i0), (s1, _e1, i1) in zip(spans, spans[1:]):
            if s1 < e0:
                v.append(f"{p.device} {_stream_name(stream)}: {_where(p, i1, instrs[i1])} starts at {s1}, "
                         f"while {_where(p, i0, instrs[i0])} runs until {e0}")


def _check_streams_and_durations(p: Program, v: list[str]) -> None:
    """Each record on a stream it may use, bookkeeping of zero duration, and every other
    record's duration as the ISA formulas give it (computed once per distinct operand set:
    a deep model repeats the same instructions layer after layer)."""
    num_streams, engines = p.num_streams, (TRANSFER_STREAM, DMA_STREAM)
    transfers = (Opcode.SEND, Opcode.RECV)
    timed: dict[tuple, int] = {}
    for i, ins in enumerate(p.instructions):
        code, stream = ins.opcode, ins.stream
        if code in _BOOKKEEPING:
            if ins.duration_cycles != 0:
                v.append(f"{_where(p, i, ins)} has duration {ins.duration_cycles}, expected 0")
            if stream >= num_streams and stream not in engines:
                v.append(f"{_where(p, i, ins)} on stream {stream}; the device has {num_streams}")
            continue
        if code in transfers:
            if stream != TRANSFER_STREAM:
                v.append(f"{_where(p, i, ins)} must run on the transfer engine, not stream {stream}")
        elif stream == DMA_STREAM:
            if code != Opcode.DMA:
                v.append(f"{_where(p, i, ins)}: only DMAs run on the DMA engine")
        elif stream >= num_streams:
            v.append(f"{_where(p, i, ins)} on stream {stream}; the device has {num_streams}")
        operands = (code, ins.subop, ins.a, ins.b, ins.c, ins.d, ins.mem_bytes, ins.fast_bytes, ins.level_bytes)
        expected = timed.get(operands)
        if expected is None:
            try:
                expected = timed[operands] = expected_duration_cycles(ins, p)
            except (ValueError, IndexError, KeyError) as e:
                v.append(f"{_where(p, i, ins)}: cannot be timed ({e!s})")
                continue
        if expected != ins.duration_cycles:
            v.append(f"{_where(p, i, ins)}: duration mismatch: encoded {ins.duration_cycles} cycles, "
                     f"the ISA formulas give {expected}")


def _allocations(p: Program, v: list[str], x: _Index | None = None) -> dict[int, _Buf]:
    """Each buffer's ALLOC and FREE (allocated and freed at most once, FREE matching)."""
    instrs = p.instructions
    x = x or _index(p)
    alloc: dict[int, _Buf] = {}
    for i in x.by_code.get(Opcode.ALLOC, ()):
        ins = instrs[i]
        if ins.a in alloc:
            v.append(f"{_where(p, i, ins)}: buffer {ins.a} allocated twice")
            continue
        alloc[ins.a] = _Buf(ins.start_cycle, ins.b, ins.c, bool(ins.subop & ALLOC_PRELOADED),
                            bool(ins.subop & ALLOC_VIEW), ins.d, _NEVER, x.starts[i])
    for i in x.by_code.get(Opcode.FREE, ()):
        ins = instrs[i]
        buf = alloc.get(ins.a)
        if buf is None:
            v.append(f"{_where(p, i, ins)}: frees buffer {ins.a}, which is never allocated")
        elif buf.free_cycle != _NEVER:
            v.append(f"{_where(p, i, ins)}: buffer {ins.a} freed twice")
        else:
            if (buf.level, buf.size) != (ins.b, ins.c):
                v.append(f"{_where(p, i, ins)}: frees {ins.c} bytes of level {ins.b}, "
                         f"allocated {buf.size} bytes of level {buf.level}")
            if buf.address != ins.d or buf.view != bool(ins.subop & ALLOC_VIEW):
                v.append(f"{_where(p, i, ins)}: frees address {ins.d} (view {bool(ins.subop & ALLOC_VIEW)}), "
                         f"allocated at {buf.address} (view {buf.view})")
            if ins.start_cycle < buf.alloc_cycle:
                v.append(f"{_where(p, i, ins)}: freed at {ins.start_cycle} before its ALLOC at {buf.alloc_cycle}")
            elif i < buf.alloc_key[2]:
                v.append(f"{_where(p, i, ins)}: freed at cycle {ins.start_cycle} before its ALLOC "
                         f"(record #{buf.alloc_key[2]}), later in the record order")
            alloc[ins.a] = _Buf(buf.alloc_cycle, buf.level, buf.size, buf.preloaded, buf.view, buf.address,
                                ins.start_cycle, buf.alloc_key, x.starts[i])
    return alloc


def view_parents(p: Program) -> dict[int, int]:
    """The buffer each view of an addressed program lies in (``view id -> parent id``), as the
    replay's memory sweep finds it; broken rules are the replay's to report, not this one's.

    Examples
    --------
    Buffer 1 is a view of bytes 16 to 32 of buffer 0:

    >>> from planner.isa.instructions import ALLOC_VIEW, Instruction, LevelInfo, Opcode, Program
    >>> def rec(code, buf, cycle, size, address, flags=0):
    ...     return Instruction(code, 0, cycle, 0, subop=flags, a=buf, b=0, c=size, d=address)
    >>> p = Program("d0", "g", 1, 1, 1, 1, 1, 0, (LevelInfo("m", 64, 1),), 0, (), 1, ("x", "v"),
    ...             (rec(Opcode.ALLOC, 0, 0, 32, 0), rec(Opcode.ALLOC, 1, 0, 16, 16, ALLOC_VIEW),
    ...              rec(Opcode.FREE, 1, 1, 16, 16, ALLOC_VIEW), rec(Opcode.FREE, 0, 1, 32, 0)), addressed=True)
    >>> view_parents(p)
    {1: 0}
    """
    found: list[str] = []
    return _sweep_memory(p, _allocations(p, found), found)[1]


def _sweep_memory(p: Program, alloc: dict[int, _Buf], v: list[str]) -> tuple[dict[str, int], dict[int, int]]:
    """Peak live bytes per level; in an addressed program, address overlaps, capacity ends and
    the parent of every view. Returns ``(peaks by level name, view -> parent buffer)``."""
    events = []  # (key, is ALLOC, buffer): ALLOC and FREE in record order
    for b, buf in alloc.items():
        if buf.free_key < buf.alloc_key:
            continue  # freed before allocated: reported by _allocations
        events.append((buf.alloc_key, 1, b))
        if buf.free_cycle != _NEVER:
            events.append((buf.free_key, 0, b))
    events.sort()
    n = len(p.levels)
    live_bytes, peak = [0] * n, [0] * n
    over = set()
    live: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]  # per level: (address, end, buffer)
    parents: dict[int, int] = {}
    names = p.buffers
    for (cycle, _, _), is_alloc, b in events:
        buf = alloc[b]
        level = buf.level
        key = (buf.address, buf.address + buf.size, b)
        if not is_alloc:
            if not buf.view:
                live_bytes[level] -= buf.size
                if p.addressed and buf.size:
                    spans = live[level]
                    j = bisect.bisect_left(spans, key)
                    if j < len(spans) and spans[j] == key:
                        del spans[j]
            continue
        lv = p.levels[level]
        if p.addressed and key[1] > lv.capacity_bytes:
            v.append(f"{p.device}: buffer {b} ({names[b]}) at [{key[0]}, {key[1]}) ends beyond level "
                     f"{lv.name}'s capacity of {lv.capacity_bytes} bytes")
        if buf.view:
            if not p.addressed:
                continue
            spans = live[level]
            j = bisect.bisect_right(spans, (buf.address, _NEVER, _NEVER)) - 1
            parent = spans[j] if j >= 0 else None
            if parent is None or parent[1] < key[1] or parent[0] > key[0]:
                v.append(f"{p.device}: view {b} ({names[b]}) at [{key[0]}, {key[1]}) of level {lv.name} lies "
                         f"outside every live allocation at cycle {cycle}")
                continue
            parents[b] = parent[2]
            owner = alloc[parent[2]]
            if buf.free_key > owner.free_key:
                end = "the end" if buf.free_cycle == _NEVER else f"cycle {buf.free_cycle}"
                order = " (later in the record order)" if buf.free_cycle == owner.free_cycle else ""
                v.append(f"{p.device}: view {b} ({names[b]}) lives until {end}{order}, but its parent "
                         f"{parent[2]} ({names[parent[2]]}) is freed at {owner.free_cycle}")
            continue
        live_bytes[level] += buf.size
        peak[level] = max(peak[level], live_bytes[level])
        if live_bytes[level] > lv.capacity_bytes and level not in over:
            over.add(level)
            v.append(f"{p.device}: memory level {lv.name} holds {live_bytes[level]} bytes at cycle "
                     f"{cycle}, over its capacity of {lv.capacity_bytes}")
        if p.addressed and buf.size:
            spans = live[level]
            j = bisect.bisect_left(spans, key)
            for other in (spans[j - 1] if j > 0 else None, spans[j] if j < len(spans) else None):
                if other is not None and other[0] < key[1] and key[0] < other[1]:
                    v.append(f"{p.device}: buffers {other[2]} ({names[other[2]]}) at [{other[0]}, {other[1]}) "
                             f"and {b} ({names[b]}) at [{key[0]}, {key[1]}) of level {lv.name} overlap at "
                             f"cycle {cycle}")
            spans.insert(j, key)
    return {lv.name: peak[i] for i, lv in enumerate(p.levels)}, parents


def _check_buffers(p: Program, x: _Index, alloc: dict[int, _Buf], parents: dict[int, int], v: list[str]) -> None:
    """Allocation windows, readiness (every byte read was written before), and races."""
    instrs = p.instructions
    names = p.buffers

    def live(b: int, i: int, ins: Instruction, how: str) -> None:
        buf = alloc.get(b)
        if buf is None or buf.alloc_key > x.starts[i]:
            when = "" if buf is None or buf.alloc_cycle < ins.start_cycle else " (later in the record order)"
            v.append(f"{_where(p, i, ins)}: {how} buffer {b} ({names[b]}) at {ins.start_cycle} "
                     f"before it is allocated{when}")
        elif buf.free_key < x.ends[i]:
            when = (f"at {buf.free_cycle}" if buf.free_cycle < ins.end_cycle else
                    f"at {buf.free_cycle} by record #{buf.free_key[2]}, earlier in the record order")
            v.append(f"{_where(p, i, ins)}: {how} buffer {b} ({names[b]}) until {ins.end_cycle}, "
                     f"but it is freed {when}")

    # (root buffer, lo, hi) of each buffer: its bytes in its root allocation's address space.
    spans = {b: ((parents.get(b, b), buf.address, buf.address + buf.size) if p.addressed else (b, 0, buf.size))
             for b, buf in alloc.items()}

    # root -> (start key, end key, lo, hi, instruction (-1: a preloaded ALLOC), buffer)
    writes: dict[int, list[tuple[_Key, _Key, int, int, int, int]]] = defaultdict(list)
    reads: dict[int, list[tuple[_Key, _Key, int, int, int, int]]] = defaultdict(list)
    for b, buf in alloc.items():
        if buf.preloaded:
            root, lo, hi = spans[b]
            writes[root].append((buf.alloc_key, buf.alloc_key, lo, hi, -1, b))
    for i, ins in enumerate(instrs):
        if not ins.writes and not ins.reads:
            continue
        start, end = x.starts[i], x.ends[i]
        for b in ins.writes:
            buf = alloc.get(b)
            if buf is None or buf.alloc_key > start or buf.free_key < end:
                live(b, i, ins, "writes")
            root, lo, hi = spans.get(b) or (b, 0, 0)
            writes[root].append((start, end, lo, hi, i, b))
        for b in ins.reads:
            buf = alloc.get(b)
            if buf is None or buf.alloc_key > start or buf.free_key < end:
                live(b, i, ins, "reads")
            root, lo, hi = spans.get(b) or (b, 0, 0)
            reads[root].append((start, end, lo, hi, i, b))

    for root in sorted(reads):
        ws = writes.get(root, [])
        for start, _end, lo, hi, i, b in reads[root]:
            _check_ready(p, i, b, start, lo, hi, ws, v)
    # Races: a write overlapping in time (event keys) and bytes a read or another write of another
    # instruction; a zero-duration write races a positive-duration access it falls inside.
    for root in sorted(writes):
        ws = [w for w in writes[root] if w[4] >= 0]
        rs = reads.get(root, [])
        if len(ws) == 1 and all(r[4] == ws[0][4] for r in rs):
            continue  # one writer: nothing else to race with
        for x, (ws0, we0, lo0, hi0, i0, b0) in enumerate(ws):
            others = [(s1, e1, lo1, hi1, i1, b1, "writes") for s1, e1, lo1, hi1, i1, b1 in ws[x + 1:]]
            others += [(s1, e1, lo1, hi1, i1, b1, "reads") for s1, e1, lo1, hi1, i1, b1 in rs]
            for s1, e1, lo1, hi1, i1, b1, how in others:
                if i1 != i0 and s1 < we0 and ws0 < e1 and lo1 < hi0 and lo0 < hi1:
                    v.append(f"{_where(p, i0, instrs[i0])} writes {names[b0]} [{lo0}, {hi0}) {_when(ws0, we0)} "
                             f"while {_where(p, i1, instrs[i1])} {how} {names[b1]} [{lo1}, {hi1}) "
                             f"{_when(s1, e1)}")


def _when(start: _Key, end: _Key) -> str:
    return f"at {start[0]}" if start == end else f"during [{start[0]}, {end[0]})"


def _check_ready(p: Program, i: int, b: int, start: _Key, lo: int, hi: int,
                 ws: list[tuple[_Key, _Key, int, int, int, int]], v: list[str]) -> None:
    """Every byte of ``[lo, hi)`` that record ``i`` reads was written before its start key."""
    touching = sorted((we, wlo, whi) for _ws, we, wlo, whi, _wi, _wb in ws
                      if wlo < hi and lo < whi or (lo == hi and wlo <= lo <= whi))
    before = [w for w in touching if w[0] < start]
    if coverage_end(lo, hi, before) is not None:
        return
    ready = coverage_end(lo, hi, touching)
    where, name = _where(p, i, p.instructions[i]), p.buffers[b]
    if not touching:
        v.append(f"{where}: reads buffer {b} ({name}), which nothing writes")
    elif ready is None:
        v.append(f"{where}: reads buffer {b} ({name}), which is only partly written")
    elif ready[0] > start[0]:
        v.append(f"{where}: dependency violation: reads buffer {b} ({name}) at {start[0]}, before it is "
                 f"ready at {ready[0]}")
    else:
        writer = _where(p, ready[2], p.instructions[ready[2]]) if 0 <= ready[2] < len(p.instructions) else "?"
        v.append(f"{where}: dependency violation: reads buffer {b} ({name}) at {start[0]} before {writer} "
                 f"writes it, later in the record order of that cycle")


def _level_text(p: Program, level_bytes) -> str:
    return ", ".join(f"{lv.name}={b}" for lv, b in zip(p.levels, level_bytes))


def _check_level_bytes(p: Program, v: list[str]) -> None:
    """Level bytes (format version 3) only on roofline instructions, one per level, agreeing with
    ``mem_bytes`` (main) and ``fast_bytes`` (fast level; none: 0)."""
    for i, ins in enumerate(p.instructions):
        lb = ins.level_bytes
        if not lb:
            continue
        where = _where(p, i, ins)
        if ins.opcode not in _ROOFLINE and not (ins.opcode == Opcode.DMA and not _is_memory_dma(ins)):
            v.append(f"{where}: has level bytes, which only MATMUL, CONV, VECTOR and compute-stream DMAs move")
        elif len(lb) != len(p.levels):
            continue  # reported as an instruction that cannot be timed
        else:
            fast = lb[p.fast_level] if p.fast_level >= 0 else 0
            if (ins.mem_bytes, ins.fast_bytes) != (lb[p.main_level], fast):
                v.append(f"{where}: mem_bytes={ins.mem_bytes} fast_bytes={ins.fast_bytes} disagree with its level bytes "
                         f"{_level_text(p, lb)}")


def _check_kernels_and_dmas(p: Program, x: _Index, alloc: dict[int, _Buf], v: list[str]) -> None:
    """Kernels against their instructions (buffers, portion sizes, roofline bytes); memory DMAs."""
    instrs = p.instructions
    names = p.buffers
    compute = {instrs[i].op: (i, instrs[i]) for i in _compute_records(x)
               if not _is_memory_dma(instrs[i]) and instrs[i].op}
    seen: set[str] = set()
    for k in p.kernels:
        if k.op in seen:
            v.append(f"{p.device}: two kernels for op {k.op!r}")
            continue
        seen.add(k.op)
        if k.op not in compute:
            v.append(f"{p.device}: kernel {k.op!r} names no compute instruction of the program")
            continue
        i, ins = compute[k.op]
        ins_bufs = {b for o in k.inputs for b in o.buffers}
        out_bufs = {b for o in k.outputs for b in o.buffers}
        # Besides its operands, a compute instruction reads the zero-byte token of each
        # control edge from another device (docs/isa.md, "after:<op>@<src>-><op>" buffers).
        tokens = {b for b in set(ins.reads) - ins_bufs
                  if names[b].startswith("after:") and b in alloc and alloc[b].size == 0}
        if ins_bufs != set(ins.reads) - tokens or out_bufs != set(ins.writes):
            v.append(f"{_where(p, i, ins)}: reads {sorted(ins.reads)} and writes {sorted(ins.writes)}, but its kernel's "
                     f"operands are in {sorted(ins_bufs)} and {sorted(out_bufs)}")
        fast = main = 0
        per_level = [0] * len(p.levels)
        counted: set[int] = set()  # the roofline moves each buffer once, however many operands name it
        for o in k.inputs + k.outputs:
            if not o.buffers:
                continue
            parts = len(o.buffers)
            if o.shape and parts > 1 and o.shape[0] % parts:
                v.append(f"{_where(p, i, ins)}: an operand of shape {o.shape} cannot be split in {parts} buffers along dim 0")
            need = _operand_bytes(o) // parts
            for b in o.buffers:
                buf = alloc.get(b)
                if buf is None:
                    continue  # reported as a read or write of an unallocated buffer
                if buf.size < need:
                    v.append(f"{_where(p, i, ins)}: buffer {b} ({names[b]}) holds {buf.size} bytes, its part of a "
                             f"{o.dtype}{list(o.shape)} operand needs {need}")
                if b in counted:
                    continue
                counted.add(b)
                if 0 <= buf.level < len(per_level):
                    per_level[buf.level] += buf.size
                if buf.level == p.fast_level:
                    fast += buf.size
                elif buf.level == p.main_level:
                    main += buf.size
                elif p.fast_level >= 0 and ins.opcode in _ROOFLINE and not ins.level_bytes:
                    v.append(f"{_where(p, i, ins)}: operand buffer {b} ({names[b]}) is in level "
                             f"{p.levels[buf.level].name}, neither the fast nor the main level")
        if p.fast_level >= 0 and ins.opcode in _ROOFLINE and (ins.fast_bytes, ins.mem_bytes) != (fast, main):
            v.append(f"{_where(p, i, ins)}: roofline bytes fast={ins.fast_bytes} main={ins.mem_bytes}, but its operand "
                     f"buffers hold fast={fast} main={main}")
        if ins.level_bytes and ins.opcode in _ROOFLINE and ins.level_bytes != tuple(per_level):
            v.append(f"{_where(p, i, ins)}: level bytes {_level_text(p, ins.level_bytes)}, but its operand buffers "
                     f"hold {_level_text(p, per_level)}")
    for i in x.by_code.get(Opcode.DMA, ()):
        ins = instrs[i]
        if not _is_memory_dma(ins):
            continue
        where = _where(p, i, ins)
        if len(ins.reads) != 1 or len(ins.writes) != 1:
            v.append(f"{where}: a memory DMA reads one buffer and writes one (got {len(ins.reads)} and "
                     f"{len(ins.writes)})")
            continue
        src, dst = alloc.get(ins.reads[0]), alloc.get(ins.writes[0])
        if src is None or dst is None:
            continue  # reported by the buffer checks
        if (ins.a, ins.b) != (src.level, dst.level):
            v.append(f"{where}: copies level {ins.a} -> {ins.b}, but its buffers are in levels "
                     f"{src.level} -> {dst.level}")
        if ins.c != min(src.size, dst.size):
            v.append(f"{where}: moves {ins.c} bytes; its buffers hold {src.size} and {dst.size}")


def _check_semaphores(p: Program, x: _Index, v: list[str]) -> None:
    """Each WAIT (on any stream or engine) comes after its one SIGNAL; a SIGNAL naming an op
    comes after the record running it ends, a WAIT naming one before it starts (event keys:
    at one cycle, the record order decides). Memory DMAs may share a name (a buffer
    prefetched twice): a SIGNAL follows the last such record before it, a WAIT precedes the
    first one after it."""
    instrs = p.instructions
    signals: dict[int, _Key] = {}
    runs: dict[str, list[int]] = defaultdict(list)  # op -> the records running it (compute, memory DMA)
    for i in x.by_code.get(Opcode.SIGNAL, ()):
        ins = instrs[i]
        if ins.a in signals:
            v.append(f"{_where(p, i, ins)}: semaphore {ins.a} signalled twice")
        signals[ins.a] = x.starts[i]
    for i in _compute_records(x):
        if instrs[i].op:
            runs[instrs[i].op].append(i)  # record order is start-key order
    for i in sorted(x.by_code.get(Opcode.SIGNAL, []) + x.by_code.get(Opcode.WAIT, [])):
        ins = instrs[i]
        key = x.starts[i]
        if ins.opcode == Opcode.WAIT:
            if ins.a not in signals:
                v.append(f"{_where(p, i, ins)}: waits on semaphore {ins.a}, which is never signalled")
            elif signals[ins.a] > key:
                later = (f"at {signals[ins.a][0]}" if signals[ins.a][0] > ins.start_cycle else
                         f"by record #{signals[ins.a][2]}, later in the record order")
                v.append(f"{_where(p, i, ins)}: dependency violation: waits at {ins.start_cycle} on "
                         f"semaphore {ins.a}, signalled only {later}")
        if ins.op:
            _check_anchor(p, i, ins, runs.get(ins.op, []), v)


def _compute_records(x: _Index) -> list[int]:
    """The compute records (memory DMAs included), in record order."""
    return sorted(i for code in COMPUTE_OPCODES for i in x.by_code.get(code, ()))


def _operand_bytes(o: Any) -> int:
    """An operand's bytes (``Operand.size_bytes`` without its per-call import)."""
    return prod(o.shape) * DTYPE_BYTES[o.dtype]


def _check_anchor(p: Program, i: int, ins: Instruction, runs: list[int], v: list[str]) -> None:
    """A SIGNAL after the end of the record running its op; a WAIT before the start of one."""
    instrs = p.instructions
    if not runs:
        v.append(f"{_where(p, i, ins)}: names op {ins.op!r}, which does not run on {p.device}")
        return
    j = bisect.bisect_left(runs, i)
    if ins.opcode == Opcode.SIGNAL:
        if j == 0:
            v.append(f"{_where(p, i, ins)}: dependency violation: signals at {ins.start_cycle}, before its op "
                     f"{ins.op!r} ({_where(p, runs[0], instrs[runs[0]])}) starts")
            return
        r = runs[j - 1]
        if _end_key(r, instrs[r]) > _start_key(i, ins):
            v.append(f"{_where(p, i, ins)}: dependency violation: signals at {ins.start_cycle}, before its op "
                     f"{ins.op!r} ({_where(p, r, instrs[r])}) ends at {instrs[r].end_cycle}"
                     + (" (later in the record order)" if instrs[r].end_cycle == ins.start_cycle else ""))
    elif j == len(runs):
        r = runs[-1]
        v.append(f"{_where(p, i, ins)}: dependency violation: waits at {ins.start_cycle}, after its op "
                 f"{ins.op!r} ({_where(p, r, instrs[r])}) starts at {instrs[r].start_cycle}"
                 + (" (earlier in the record order)" if instrs[r].start_cycle == ins.start_cycle else ""))


def _check_program(p: Program, v: list[str]) -> tuple[dict[str, int], _Index]:
    """Every per-program check; returns the peak live bytes per level and the records' index."""
    x = _index(p)
    _check_shape(p, x, v)
    alloc = _allocations(p, v, x)
    peaks, parents = _sweep_memory(p, alloc, v)
    _check_buffers(p, x, alloc, parents, v)
    _check_kernels_and_dmas(p, x, alloc, v)
    _check_level_bytes(p, v)
    _check_semaphores(p, x, v)
    return peaks, x


def simulate_programs(programs: Mapping[str, Program], *, strict: bool = False) -> SimulationResult:
    """Replay already-decoded programs (see :func:`simulate` for the checks).

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),),
    ...             0, (), 1, (), (Instruction(Opcode.TASK, 0, 0, 5, op="t", a=5),
    ...                            Instruction(Opcode.HALT, 0, 5, 0)))
    >>> r = simulate_programs({"d0": p})
    >>> r.makespan_cycles, r.ops["t"], r.valid
    (5, OpTiming(device='d0', stream=0, start_cycle=0, end_cycle=5), True)
    """
    v: list[str] = []
    peaks: dict[str, dict[str, int]] = {}
    timings = _Timings()
    bandwidth: dict[str, dict[str, dict[str, int]]] = {}
    count = 0
    names = sorted(programs)
    for key in names:
        p = programs[key]
        if p.device != key:
            v.append(f"binary {key!r} is for device {p.device!r}")
        peaks[p.device], x = _check_program(p, v)
        if p.shared_bandwidth:  # memory.bandwidth: shared (planner.simulator.bandwidth)
            bandwidth[p.device] = check_shared_bandwidth(p, v)
        count += len(p.instructions)
        timings.collect(p, x, v)
    links = _link_table(programs, names, v)
    transfers, occupancy = _match_transfers(timings, links, v)
    _check_link_occupancy(occupancy, links, v)
    for key in names:
        for peer in sorted({ins.peer for ins in programs[key].instructions if ins.peer}):
            if peer not in programs:
                v.append(f"{key} exchanges data with {peer!r}, which has no binary")
    makespan = max((p.end_cycle for p in programs.values()), default=0)
    result = SimulationResult(makespan, timings.ops, dict(sorted(transfers.items())), peaks, count, tuple(v),
                              tuple(names), tuple(sorted(timings.dmas, key=lambda d: (d.device, d.start_cycle, d.op))),
                              bandwidth)
    if strict:
        result.raise_if_invalid()
    return result


class _Timings:
    """What the programs' timed records say: each op's timing, the memory DMAs, and the SENDs
    and RECVs by transfer id (matched once every program is read)."""

    def __init__(self) -> None:
        self.ops: dict[str, OpTiming] = {}
        self.dmas: list[DmaTiming] = []
        self.sends: dict[int, list[tuple[Program, Instruction]]] = defaultdict(list)
        self.recvs: dict[int, list[tuple[Program, Instruction]]] = defaultdict(list)

    def collect(self, p: Program, x: _Index, v: list[str]) -> None:
        """The compute, DMA, SEND and RECV records of ``p``, in record order; an op run twice is a violation."""
        for i in sorted(_compute_records(x) + x.by_code.get(Opcode.SEND, []) + x.by_code.get(Opcode.RECV, [])):
            ins = p.instructions[i]
            if _is_memory_dma(ins):
                self.dmas.append(_dma_timing(p, ins))
            elif ins.opcode in COMPUTE_OPCODES and ins.op:
                if ins.op in self.ops:
                    v.append(f"{_where(p, i, ins)}: op {ins.op!r} runs twice (also on {self.ops[ins.op].device})")
                    continue
                self.ops[ins.op] = OpTiming(p.device, ins.stream, ins.start_cycle, ins.end_cycle)
            elif ins.opcode == Opcode.SEND:
                self.sends[ins.c].append((p, ins))
            elif ins.opcode == Opcode.RECV:
                self.recvs[ins.c].append((p, ins))


def _dma_timing(p: Program, ins: Instruction) -> DmaTiming:
    """A memory DMA's timing, its buffers and levels by name ("?" for a level out of range)."""
    src = p.buffers[ins.reads[0]] if ins.reads else ""
    dst = p.buffers[ins.writes[0]] if ins.writes else ""
    lv = p.levels
    return DmaTiming(p.device, ins.op, ins.op.split(":", 1)[0], src, dst,
                     lv[ins.a].name if ins.a < len(lv) else "?", lv[ins.b].name if ins.b < len(lv) else "?",
                     ins.c, ins.start_cycle, ins.end_cycle)


def _link_table(programs: Mapping[str, Program], names: list[str], v: list[str]) -> dict[int, tuple[str, int, int]]:
    """Link id -> (name, bandwidth, latency), as the first program lists it; a program that
    disagrees is a violation."""
    links: dict[int, tuple[str, int, int]] = {}
    for key in names:
        for lk in programs[key].links:
            params = (lk.name, lk.bandwidth_bytes_per_s, lk.latency_cycles)
            if links.setdefault(lk.id, params) != params:
                v.append(f"link {lk.id} is {params} in {key} but {links[lk.id]} elsewhere")
    return links


def _match_transfers(timings: _Timings, links: Mapping[int, tuple[str, int, int]], v: list[str]
                     ) -> tuple[dict[int, TransferTiming], dict[int, list[tuple[int, int, int]]]]:
    """Each transfer's one SEND and one RECV, matched (link, bytes, peers, RECV not before SEND):
    its timing, and per link the spans it is held (start, end, transfer id)."""
    transfers: dict[int, TransferTiming] = {}
    occupancy: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for tid in sorted(set(timings.sends) | set(timings.recvs)):
        s, r = timings.sends.get(tid, []), timings.recvs.get(tid, [])
        if len(s) != 1 or len(r) != 1:
            v.append(f"transfer {tid}: {len(s)} SEND and {len(r)} RECV (expected one of each)")
            if not s or not r:
                continue
        (sp, si), (rp, ri) = s[0], r[0]
        if (si.a, si.b) != (ri.a, ri.b):
            v.append(f"transfer {tid}: SEND on link {si.a} with {si.b} bytes, RECV on link {ri.a} with {ri.b}")
        if si.peer != rp.device or ri.peer != sp.device:
            v.append(f"transfer {tid}: SEND {sp.device}->{si.peer} does not match RECV {ri.peer}->{rp.device}")
        if ri.start_cycle < si.start_cycle:
            v.append(f"transfer {tid}: RECV on {rp.device} starts at {ri.start_cycle}, before its SEND "
                     f"at {si.start_cycle}")
        start, end = min(si.start_cycle, ri.start_cycle), max(si.end_cycle, ri.end_cycle)
        occupancy[si.a].append((start, end, tid))
        transfers[tid] = TransferTiming(tid, sp.device, rp.device, links.get(si.a, ("?",))[0], si.b,
                                        start, end, si.op, ri.op)
    return transfers, occupancy


def _check_link_occupancy(occupancy: Mapping[int, list[tuple[int, int, int]]],
                          links: Mapping[int, tuple[str, int, int]], v: list[str]) -> None:
    """A link carries one transfer at a time (zero-length transfers hold it not at all)."""
    for link_id in sorted(occupancy):
        spans = sorted(x for x in occupancy[link_id] if x[1] > x[0])
        for (s0, e0, t0), (s1, _e1, t1) in zip(spans, spans[1:]):
            if s1 < e0:
                v.append(f"link {links.get(link_id, ('?',))[0]}: transfer {t1} starts at {s1} while "
                         f"transfer {t0} holds the link until {e0}")


def simulate(binaries: Mapping[str, bytes], *, strict: bool = False) -> SimulationResult:
    """Decode and replay one binary per device (``device name -> bytes``).

    Parameters
    ----------
    binaries
        The ``.bin`` contents keyed by device name.
    strict
        Raise :class:`SimulationError` (an :class:`~planner.errors.InternalError`) when any
        check fails, instead of only listing the violations.

    Returns
    -------
    SimulationResult

    Raises
    ------
    BinaryFormatError
        A binary with a bad magic, version or checksum, or truncated.

    Examples
    --------
    >>> from planner.isa.binary import encode
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),),
    ...             0, (), 1, (), (Instruction(Opcode.TASK, 0, 0, 4, op="t", a=5),
    ...                            Instruction(Opcode.HALT, 0, 4, 0)))
    >>> simulate({"d0": encode(p)}).violations
    ('d0#0 TASK (t): duration mismatch: encoded 4 cycles, the ISA formulas give 5',)
    """
    return _replay({name: (data, name) for name, data in binaries.items()}, strict)


def _replay(binaries: Mapping[str, tuple[bytes, str]], strict: bool) -> SimulationResult:
    """Binaries (device -> (bytes, label for errors)) screened all at once; the record-by-record
    replay only when the screen cannot show them valid (it names the violations)."""
    tables = {name: decode_tables(data, name=label) for name, (data, label) in sorted(binaries.items())}
    screened = screened_replay(tables)
    if screened is not None:
        return _result(screened)
    programs = {name: decode(data, name=label) for name, (data, label) in sorted(binaries.items())}
    return simulate_programs(programs, strict=strict)


def _result(s: Screened) -> SimulationResult:
    """The result of binaries the screen showed valid (no violations)."""
    return SimulationResult(s.makespan_cycles, {op: OpTiming(*timing) for op, *timing in s.ops},
                            {t[0]: TransferTiming(*t) for t in s.transfers}, s.peak_bytes, s.instruction_count, (),
                            s.devices, tuple(DmaTiming(*d) for d in s.dmas))


def simulate_dir(path: str | Path, *, strict: bool = False) -> SimulationResult:
    """Replay ``<path>/bin/*.bin`` (the device name is the file stem).

    Raises
    ------
    BinaryFormatError
        No binaries in the directory, or a malformed one.

    Examples
    --------
    >>> simulate_dir("/nonexistent")
    Traceback (most recent call last):
    ...
    planner.errors.BinaryFormatError: no binaries in /nonexistent/bin
    """
    folder = Path(path) / "bin"
    files = sorted(folder.glob("*.bin")) if folder.is_dir() else []
    if not files:
        raise BinaryFormatError(f"no binaries in {folder}")
    return _replay({f.stem: (f.read_bytes(), str(f)) for f in files}, strict)
