"""Independent replay of per-device binaries.

The simulator reads nothing but the binaries: it decodes each one (refusing a bad magic,
version, checksum or truncation), recomputes every instruction's duration from the ISA
formulas and the header's profile and clocks, replays the programs event by event and
collects every broken rule as a violation. It never imports the solver or the plan.

Checks
------
* program shape: records sorted by start cycle, exactly one HALT, last, at or after
  every other instruction's end; compute on a valid stream, SEND/RECV on the transfer
  engine, bookkeeping (ALLOC, FREE, SIGNAL, WAIT, HALT) of zero duration;
* timing: each compute instruction's duration equals its recomputed cycles converted to
  the reference clock; each SEND/RECV's equals the link's latency + bytes / bandwidth;
* streams: compute instructions of one stream do not overlap; each op runs once;
* dependencies: every buffer read starts at or after the buffer is ready (its writer's
  end, a RECV's end, or its ALLOC when preloaded), and reads and writes happen while
  the buffer is allocated; a buffer has one writer;
* transfers: every RECV matches one SEND (same id, bytes and link, crossed peers) and
  starts no earlier than it; a link carries one transfer at a time across all binaries;
* semaphores: each WAIT is at or after its SIGNAL;
* memory: live ALLOC'd bytes never exceed the header's capacity per level (FREE before
  ALLOC at equal cycles: lifetimes are half-open).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from planner.errors import BinaryFormatError, InternalError
from planner.isa.binary import decode
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    COMPUTE_OPCODES,
    TRANSFER_STREAM,
    Instruction,
    Opcode,
    Program,
    expected_duration_cycles,
)

__all__ = [
    "OpTiming",
    "TransferTiming",
    "SimulationResult",
    "SimulationError",
    "simulate",
    "simulate_programs",
    "simulate_dir",
    "compare_with_plan",
]

_BOOKKEEPING = frozenset({Opcode.ALLOC, Opcode.FREE, Opcode.SIGNAL, Opcode.WAIT, Opcode.HALT})


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

    Examples
    --------
    >>> TransferTiming(0, "d0", "d1", "l0", 1000, 4, 16).end_cycle
    16
    """

    id: int
    src_device: str
    dst_device: str
    link: str
    size_bytes: int
    start_cycle: int
    end_cycle: int


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """What the replay found. ``violations`` is empty when the binaries are valid.

    Examples
    --------
    >>> r = SimulationResult(0, {}, {}, {}, 0, ("x",))
    >>> r.valid
    False
    """

    makespan_cycles: int
    ops: dict[str, OpTiming]
    transfers: dict[int, TransferTiming]
    peak_bytes: dict[str, dict[str, int]]  # device -> level -> peak live bytes
    instruction_count: int
    violations: tuple[str, ...] = ()
    devices: tuple[str, ...] = field(default=())

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
                           "end_cycle": t.end_cycle} for t in self.transfers.values()],
        }


def _where(p: Program, idx: int, ins: Instruction) -> str:
    op = f" ({ins.op})" if ins.op else ""
    return f"{p.device}#{idx} {ins.opcode.name}{op}"


def _check_program(p: Program, v: list[str]) -> None:
    """Shape, timing, streams, buffers, semaphores and memory of one program."""
    instrs = p.instructions
    halts = [i for i, ins in enumerate(instrs) if ins.opcode == Opcode.HALT]
    if not instrs or instrs[-1].opcode != Opcode.HALT:
        v.append(f"{p.device}: the last instruction is not HALT")
    if len(halts) > 1:
        v.append(f"{p.device}: {len(halts)} HALT instructions (expected one)")
    end_all = max((ins.end_cycle for ins in instrs if ins.opcode != Opcode.HALT), default=0)
    for i in halts:
        if instrs[i].start_cycle < end_all:
            v.append(f"{_where(p, i, instrs[i])} at cycle {instrs[i].start_cycle} before the program's "
                     f"last cycle {end_all}")
    for i in range(1, len(instrs)):
        if instrs[i].start_cycle < instrs[i - 1].start_cycle:
            v.append(f"{_where(p, i, instrs[i])} starts at {instrs[i].start_cycle}, before the previous "
                     f"record's {instrs[i - 1].start_cycle}: records out of order")

    # Timing and streams.
    for i, ins in enumerate(instrs):
        if ins.opcode in _BOOKKEEPING:
            if ins.duration_cycles != 0:
                v.append(f"{_where(p, i, ins)} has duration {ins.duration_cycles}, expected 0")
            if ins.stream >= p.num_streams and ins.stream != TRANSFER_STREAM:
                v.append(f"{_where(p, i, ins)} on stream {ins.stream}; the device has {p.num_streams}")
            continue
        if ins.opcode in (Opcode.SEND, Opcode.RECV):
            if ins.stream != TRANSFER_STREAM:
                v.append(f"{_where(p, i, ins)} must run on the transfer engine, not stream {ins.stream}")
        elif ins.stream >= p.num_streams:
            v.append(f"{_where(p, i, ins)} on stream {ins.stream}; the device has {p.num_streams}")
        try:
            expected = expected_duration_cycles(ins, p)
        except (ValueError, IndexError, KeyError) as e:
            v.append(f"{_where(p, i, ins)}: cannot be timed ({e!s})")
            continue
        if expected != ins.duration_cycles:
            v.append(f"{_where(p, i, ins)}: duration mismatch: encoded {ins.duration_cycles} cycles, "
                     f"the ISA formulas give {expected}")
    by_stream: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for i, ins in enumerate(instrs):
        if ins.opcode in COMPUTE_OPCODES and ins.duration_cycles > 0:
            by_stream[ins.stream].append((ins.start_cycle, ins.end_cycle, i))
    for stream in sorted(by_stream):
        spans = sorted(by_stream[stream])
        for (s0, e0, i0), (s1, _e1, i1) in zip(spans, spans[1:]):
            if s1 < e0:
                v.append(f"{p.device} stream {stream}: {_where(p, i1, instrs[i1])} starts at {s1}, "
                         f"while {_where(p, i0, instrs[i0])} runs until {e0}")

    # Buffers: allocation windows, readiness, one writer.
    alloc: dict[int, tuple[int, int, int, bool]] = {}  # buffer -> (cycle, level, bytes, preloaded)
    freed: dict[int, int] = {}
    ready: dict[int, int] = {}
    for i, ins in enumerate(instrs):
        if ins.opcode == Opcode.ALLOC:
            if ins.a in alloc:
                v.append(f"{_where(p, i, ins)}: buffer {ins.a} allocated twice")
                continue
            pre = bool(ins.subop & ALLOC_PRELOADED)
            alloc[ins.a] = (ins.start_cycle, ins.b, ins.c, pre)
            if pre:
                ready[ins.a] = ins.start_cycle
    for i, ins in enumerate(instrs):
        if ins.opcode == Opcode.FREE:
            if ins.a not in alloc:
                v.append(f"{_where(p, i, ins)}: frees buffer {ins.a}, which is never allocated")
            elif ins.a in freed:
                v.append(f"{_where(p, i, ins)}: buffer {ins.a} freed twice")
            else:
                cyc, level, size, _ = alloc[ins.a]
                if (level, size) != (ins.b, ins.c):
                    v.append(f"{_where(p, i, ins)}: frees {ins.c} bytes of level {ins.b}, "
                             f"allocated {size} bytes of level {level}")
                if ins.start_cycle < cyc:
                    v.append(f"{_where(p, i, ins)}: freed at {ins.start_cycle} before its ALLOC at {cyc}")
                freed[ins.a] = ins.start_cycle
    for i, ins in enumerate(instrs):
        for b in ins.writes:
            if b in ready:
                v.append(f"{_where(p, i, ins)}: writes buffer {b} ({p.buffers[b]}), which already has a writer")
            ready[b] = ins.end_cycle

    def live(b: int, i: int, ins: Instruction, how: str) -> None:
        if b not in alloc or alloc[b][0] > ins.start_cycle:
            v.append(f"{_where(p, i, ins)}: {how} buffer {b} ({p.buffers[b]}) at {ins.start_cycle} "
                     f"before it is allocated")
        elif b in freed and freed[b] < ins.end_cycle:
            v.append(f"{_where(p, i, ins)}: {how} buffer {b} ({p.buffers[b]}) until {ins.end_cycle}, "
                     f"but it is freed at {freed[b]}")

    for i, ins in enumerate(instrs):
        for b in ins.reads:
            live(b, i, ins, "reads")
            if b not in ready:
                v.append(f"{_where(p, i, ins)}: reads buffer {b} ({p.buffers[b]}), which nothing writes")
            elif ready[b] > ins.start_cycle:
                v.append(f"{_where(p, i, ins)}: dependency violation: reads buffer {b} ({p.buffers[b]}) "
                         f"at {ins.start_cycle}, before it is ready at {ready[b]}")
        for b in ins.writes:
            live(b, i, ins, "writes")

    # Semaphores.
    signals: dict[int, int] = {}
    for i, ins in enumerate(instrs):
        if ins.opcode == Opcode.SIGNAL:
            if ins.a in signals:
                v.append(f"{_where(p, i, ins)}: semaphore {ins.a} signalled twice")
            signals[ins.a] = ins.start_cycle
    for i, ins in enumerate(instrs):
        if ins.opcode == Opcode.WAIT:
            if ins.a not in signals:
                v.append(f"{_where(p, i, ins)}: waits on semaphore {ins.a}, which is never signalled")
            elif signals[ins.a] > ins.start_cycle:
                v.append(f"{_where(p, i, ins)}: dependency violation: waits at {ins.start_cycle} on "
                         f"semaphore {ins.a}, signalled only at {signals[ins.a]}")


def _peaks(p: Program, v: list[str]) -> dict[str, int]:
    events = sorted((ins.start_cycle, 0 if ins.opcode == Opcode.FREE else 1, ins.b, ins.c)
                    for ins in p.instructions if ins.opcode in (Opcode.ALLOC, Opcode.FREE))
    live = [0] * len(p.levels)
    peak = [0] * len(p.levels)
    reported = set()
    for cycle, is_alloc, level, size in events:
        live[level] += size if is_alloc else -size
        peak[level] = max(peak[level], live[level])
        cap = p.levels[level].capacity_bytes
        if live[level] > cap and level not in reported:
            reported.add(level)
            v.append(f"{p.device}: memory level {p.levels[level].name} holds {live[level]} bytes at cycle "
                     f"{cycle}, over its capacity of {cap}")
    return {lv.name: peak[i] for i, lv in enumerate(p.levels)}


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
    ops: dict[str, OpTiming] = {}
    peaks: dict[str, dict[str, int]] = {}
    sends: dict[int, list[tuple[Program, Instruction]]] = defaultdict(list)
    recvs: dict[int, list[tuple[Program, Instruction]]] = defaultdict(list)
    count = 0
    names = sorted(programs)
    for key in names:
        p = programs[key]
        if p.device != key:
            v.append(f"binary {key!r} is for device {p.device!r}")
        _check_program(p, v)
        peaks[p.device] = _peaks(p, v)
        count += len(p.instructions)
        for i, ins in enumerate(p.instructions):
            if ins.opcode in COMPUTE_OPCODES and ins.op:
                if ins.op in ops:
                    v.append(f"{_where(p, i, ins)}: op {ins.op!r} runs twice (also on {ops[ins.op].device})")
                    continue
                ops[ins.op] = OpTiming(p.device, ins.stream, ins.start_cycle, ins.end_cycle)
            elif ins.opcode == Opcode.SEND:
                sends[ins.c].append((p, ins))
            elif ins.opcode == Opcode.RECV:
                recvs[ins.c].append((p, ins))

    transfers: dict[int, TransferTiming] = {}
    links: dict[int, tuple[str, int, int]] = {}
    for key in names:
        for lk in programs[key].links:
            params = (lk.name, lk.bandwidth_bytes_per_s, lk.latency_cycles)
            if links.setdefault(lk.id, params) != params:
                v.append(f"link {lk.id} is {params} in {key} but {links[lk.id]} elsewhere")
    occupancy: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for tid in sorted(set(sends) | set(recvs)):
        s, r = sends.get(tid, []), recvs.get(tid, [])
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
                                        start, end)
    for link_id in sorted(occupancy):
        spans = sorted(x for x in occupancy[link_id] if x[1] > x[0])
        for (s0, e0, t0), (s1, _e1, t1) in zip(spans, spans[1:]):
            if s1 < e0:
                v.append(f"link {links.get(link_id, ('?',))[0]}: transfer {t1} starts at {s1} while "
                         f"transfer {t0} holds the link until {e0}")
    for key in names:
        for peer in sorted({ins.peer for ins in programs[key].instructions if ins.peer}):
            if peer not in programs:
                v.append(f"{key} exchanges data with {peer!r}, which has no binary")

    makespan = max((p.end_cycle for p in programs.values()), default=0)
    result = SimulationResult(makespan, ops, dict(sorted(transfers.items())), peaks, count, tuple(v),
                              tuple(names))
    if strict:
        result.raise_if_invalid()
    return result


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
    programs = {name: decode(data, name=name) for name, data in sorted(binaries.items())}
    return simulate_programs(programs, strict=strict)


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
    programs = {f.stem: decode(f.read_bytes(), name=str(f)) for f in files}
    return simulate_programs(programs, strict=strict)


def compare_with_plan(result: SimulationResult, plan: Any) -> list[str]:
    """Differences between a replay and a plan (a :class:`planner.plan.Plan`); empty if none.

    Ops must sit on the same device and stream with the same start and end; transfers (in
    the lowering's order: start, source op, destination op, link) must match in devices,
    link, bytes and timing; the makespans must agree.

    Examples
    --------
    >>> from planner.plan import Plan, PlacedOp
    >>> plan = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9, (PlacedOp("t", "d0", 0, 1, 5),), ())
    >>> r = SimulationResult(5, {"t": OpTiming("d0", 0, 0, 5)}, {}, {}, 2)
    >>> compare_with_plan(r, plan)
    ['op t: plan says d0 stream 0 [1, 6), the binaries run it on d0 stream 0 [0, 5)']
    """
    diffs: list[str] = []
    for o in plan.ops:
        got = result.ops.get(o.name)
        want = (o.device, o.stream, o.start_cycle, o.end_cycle)
        if got is None:
            diffs.append(f"op {o.name}: in the plan, not in the binaries")
        elif (got.device, got.stream, got.start_cycle, got.end_cycle) != want:
            diffs.append(f"op {o.name}: plan says {o.device} stream {o.stream} [{o.start_cycle}, {o.end_cycle}), "
                         f"the binaries run it on {got.device} stream {got.stream} "
                         f"[{got.start_cycle}, {got.end_cycle})")
    extra = sorted(set(result.ops) - {o.name for o in plan.ops})
    if extra:
        diffs.append(f"ops in the binaries but not in the plan: {', '.join(extra[:5])}")
    ordered = sorted(plan.transfers, key=lambda t: (t.start_cycle, t.src_op, t.dst_op, t.link))
    if len(ordered) != len(result.transfers):
        diffs.append(f"the plan has {len(ordered)} transfers, the binaries {len(result.transfers)}")
    for tid, t in enumerate(ordered):
        got = result.transfers.get(tid)
        want = (t.src_device, t.dst_device, t.link, t.size_bytes, t.start_cycle, t.end_cycle)
        if got is not None and (got.src_device, got.dst_device, got.link, got.size_bytes,
                                got.start_cycle, got.end_cycle) != want:
            diffs.append(f"transfer {tid} ({t.src_op}->{t.dst_op}): plan says {want}, the binaries "
                         f"{(got.src_device, got.dst_device, got.link, got.size_bytes, got.start_cycle, got.end_cycle)}")
    if plan.makespan_cycles != result.makespan_cycles:
        diffs.append(f"makespan: plan says {plan.makespan_cycles}, the binaries end at {result.makespan_cycles}")
    return diffs
