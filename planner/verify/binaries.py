"""What the decoded binaries say beyond the replay's timings: buffers, syncs, kernels, streams.

The replay (:func:`planner.simulator.simulate_programs`) times every instruction and checks
the rules; the verifier also compares the files' other claims with the binaries, and reads
them here, from the decoded :class:`~planner.isa.instructions.Program` alone:

buffers     every ALLOC/FREE pair by buffer name: level, address, bytes, lifetime,
            preloaded and view flags (a name used twice is refused);
syncs       every semaphore's SIGNAL and WAIT: which op signals, which op waits;
kernels     per compute op, the buffer names of each input and output operand;
streams     the compute streams that run an op.

Examples
--------
>>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
>>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),), 0, (), 1,
...             ("t",), (Instruction(Opcode.ALLOC, 0, 0, 0, a=0, c=16), Instruction(Opcode.TASK, 0, 0, 5, op="a", a=5),
...                      Instruction(Opcode.FREE, 0, 5, 0, a=0, c=16), Instruction(Opcode.HALT, 0, 5, 0)))
>>> facts = program_facts(p)
>>> facts.buffers["t"], facts.streams_used
(BufferFact(id=0, level='mem', address=0, size_bytes=16, start_cycle=0, end_cycle=5, preloaded=False, view=False), [0])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from planner.errors import VerificationError
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    COMPUTE_OPCODES,
    DMA_STREAM,
    TRANSFER_STREAM,
    Instruction,
    Opcode,
    Program,
)

__all__ = ["BufferFact", "ProgramFacts", "program_facts", "check_unused_fields"]


class BufferFact(NamedTuple):
    """One buffer as its ALLOC and FREE give it (``end_cycle`` None: never freed)."""

    id: int
    level: str
    address: int
    size_bytes: int
    start_cycle: int
    end_cycle: int | None
    preloaded: bool
    view: bool


@dataclass(frozen=True)
class ProgramFacts:
    """The facts of one program the verifier compares with the files."""

    buffers: dict[str, BufferFact]  # by name, in buffer-id order
    signalled_by: dict[str, list[str]]  # waiting op -> the ops whose SIGNAL it WAITs on
    compute: dict[str, Instruction]  # op -> its compute instruction (memory DMAs excluded)
    kernel_operands: dict[str, tuple[list[list[str]], list[list[str]]]]  # op -> (inputs, outputs) buffer names
    streams_used: list[int]


def _buffers(p: Program, label: str) -> dict[str, BufferFact]:
    by_id: dict[int, BufferFact] = {}
    for ins in p.instructions:
        if ins.opcode == Opcode.ALLOC and ins.a not in by_id and ins.b < len(p.levels) and ins.a < len(p.buffers):
            by_id[ins.a] = BufferFact(ins.a, p.levels[ins.b].name, ins.d, ins.c, ins.start_cycle, None,
                                      bool(ins.subop & ALLOC_PRELOADED), bool(ins.subop & ALLOC_VIEW))
        elif ins.opcode == Opcode.FREE and ins.a in by_id and by_id[ins.a].end_cycle is None:
            by_id[ins.a] = by_id[ins.a]._replace(end_cycle=ins.start_cycle)
    out: dict[str, BufferFact] = {}
    for b in sorted(by_id):
        name = p.buffers[b]
        if name in out:
            raise VerificationError(label, "buffers", detail=f"two buffers are named {name!r}")
        out[name] = by_id[b]
    return out


def _syncs(p: Program) -> dict[str, list[str]]:
    signal_op: dict[int, str] = {}
    for ins in p.instructions:
        if ins.opcode == Opcode.SIGNAL:
            signal_op.setdefault(ins.a, ins.op)
    out: dict[str, list[str]] = {}
    for ins in p.instructions:
        if ins.opcode == Opcode.WAIT and ins.a in signal_op:
            out.setdefault(ins.op, []).append(signal_op[ins.a])
    return out


_ROOFLINE = ("mem_bytes", "fast_bytes", "op", "reads", "writes")
# The fields each opcode gives a meaning (docs/isa.md); every other one is zero in a binary the
# lowering wrote, so a non-zero one is a binary edited after it was written.
_MEANINGFUL = {
    Opcode.MATMUL: ("a", "b", "c", "d", *_ROOFLINE), Opcode.CONV: ("a", "b", "c", "d", *_ROOFLINE),
    Opcode.VECTOR: ("subop", "a", "b", *_ROOFLINE), Opcode.DMA: ("a", "b", "c", *_ROOFLINE),
    Opcode.SEND: ("a", "b", "c", "op", "peer", "reads"), Opcode.RECV: ("a", "b", "c", "op", "peer", "writes"),
    Opcode.SIGNAL: ("a", "op"), Opcode.WAIT: ("a", "op"), Opcode.ALLOC: ("subop", "a", "b", "c", "d", "op"),
    Opcode.FREE: ("subop", "a", "b", "c", "d", "op"), Opcode.TASK: ("a", "op", "reads", "writes"), Opcode.HALT: (),
}
_FIELDS = ("subop", "a", "b", "c", "d", "mem_bytes", "fast_bytes", "op", "reads", "writes", "peer")
# Per opcode, the fields it leaves unused, in _FIELDS's order (an opcode not listed uses them all).
_UNUSED = {opcode: tuple(f for f in _FIELDS if f not in meaningful) for opcode, meaningful in _MEANINGFUL.items()}


def check_unused_fields(p: Program, label: str) -> None:
    """Refuse an instruction with a value in a field its opcode does not use.

    Examples
    --------
    >>> from planner.isa.instructions import LevelInfo
    >>> p = Program("d0", "generic", 1, 1, 1, 1, 1, 0, (LevelInfo("m", 8, 1),), 0, (), 1, (),
    ...             (Instruction(Opcode.HALT, 0, 0, 0, mem_bytes=3),))
    >>> check_unused_fields(p, "bin/d0.bin")
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: bin/d0.bin: instruction 0 (HALT).mem_bytes: expected 0 (unused by HALT), found 3
    """
    for i, ins in enumerate(p.instructions):
        for field in _UNUSED.get(ins.opcode, ()):
            value = getattr(ins, field)
            if value not in (0, "", ()):
                raise VerificationError(label, f"instruction {i} ({ins.opcode.name}).{field}",
                                        expected=f"{'0' if isinstance(value, int) else 'empty'} (unused by "
                                                 f"{ins.opcode.name})", found=repr(value))


def program_facts(p: Program, label: str = "bin") -> ProgramFacts:
    """The :class:`ProgramFacts` of a decoded program (``label`` names it in errors).

    Raises
    ------
    VerificationError
        Two buffers of one name.
    """
    names = p.buffers

    def operand_names(operands) -> list[list[str]]:
        return [[names[b] if b < len(names) else f"#{b}" for b in o.buffers] for o in operands]

    compute = {ins.op: ins for ins in p.instructions
               if ins.opcode in COMPUTE_OPCODES and ins.op and ins.stream != DMA_STREAM}
    kernels = {k.op: (operand_names(k.inputs), operand_names(k.outputs)) for k in p.kernels}
    streams = sorted({ins.stream for ins in p.instructions if ins.opcode != Opcode.HALT and ins.op
                      and ins.stream not in (TRANSFER_STREAM, DMA_STREAM)})
    return ProgramFacts(_buffers(p, label), _syncs(p), compute, kernels, streams)
