"""The address pass: lowered programs whose buffers have no addresses yet → addressed programs.

Lowering (:func:`planner.lowering.lower`) emits one program per device and never solves:
a device with a memory plan brings the plan's addresses (its claim, which the replay and
the directory verifier check), every other device's program comes out *unaddressed*
(:attr:`planner.isa.Program.addressed` False, every ALLOC/FREE ``d = 0``). This pass gives
those programs their addresses, level by level, from nothing but the program:

* each buffer's level (ALLOC ``b``) and size (ALLOC ``c``), and the level's capacity
  (:attr:`planner.isa.LevelInfo.capacity_bytes`);
* its lifetime: the cycles of its ALLOC and FREE, refined within a cycle by their positions
  in the record order (``docs/isa.md``), so a buffer freed at cycle ``t`` shares bytes only
  with buffers allocated after its FREE in that order;
* the alignment, which the spec gives (``memory.alignment_bytes``).

The packing is :func:`planner.memory.addresses.assign_addresses` (greedy-by-size, then
CP-SAT under the deterministic :class:`solvers.budget.Budget`), so the same program gives
the same addresses; a level too fragmented to pack raises
:class:`~planner.errors.InfeasibleError`. Addressed programs pass through unchanged. The
binaries are encoded after this pass.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import fields, replace
from operator import attrgetter
from typing import Mapping

from planner.isa.instructions import ALLOC_VIEW, Instruction, Opcode, Program
from planner.memory.addresses import Lifetime, assign_addresses

__all__ = ["address_program", "address_programs"]

# An instruction's fields in constructor order, read in one C call: giving an ALLOC/FREE its
# address builds the new record from them positionally (``dataclasses.replace`` walks the
# fields in Python for each of the tens of thousands of records of a large program).
_FIELD_NAMES = tuple(f.name for f in fields(Instruction))
_FIELD_VALUES = attrgetter(*_FIELD_NAMES)
_ADDRESS_FIELD = _FIELD_NAMES.index("d")


def _with_address(ins: Instruction, address: int) -> Instruction:
    """``replace(ins, d=address)``, without its per-call field walk."""
    values = list(_FIELD_VALUES(ins))
    values[_ADDRESS_FIELD] = address
    return Instruction(*values)


def _lifetimes_by_level(program: Program) -> dict[int, list[tuple[int, Lifetime]]]:
    """Per level: (buffer id, lifetime) in buffer-id order, from the ALLOC/FREE records."""
    alloc: dict[int, tuple[int, Instruction]] = {}
    free: dict[int, tuple[int, Instruction]] = {}
    for position, ins in enumerate(program.instructions):
        if ins.opcode == Opcode.ALLOC:
            if ins.subop & ALLOC_VIEW:
                raise ValueError(f"device {program.device}: buffer {program.buffers[ins.a]!r} is a view, which "
                                 f"only an addressed program can have (a view lies inside its parent's bytes)")
            alloc[ins.a] = (position, ins)
        elif ins.opcode == Opcode.FREE:
            free[ins.a] = (position, ins)
    unpaired = sorted(set(alloc) ^ set(free))
    if unpaired:
        raise ValueError(f"device {program.device}: buffers {[program.buffers[b] for b in unpaired[:5]]} lack "
                         f"an ALLOC or a FREE")
    levels: dict[int, list[tuple[int, Lifetime]]] = defaultdict(list)
    for buf in sorted(alloc):
        (start_order, a), (end_order, f) = alloc[buf], free[buf]
        levels[a.b].append((buf, Lifetime(program.buffers[buf], a.c, a.start_cycle, f.start_cycle,
                                          start_order, end_order)))
    return levels


def address_program(program: Program, alignment_bytes: int = 64) -> Program:
    """``program`` with an address in every ALLOC/FREE, packed level by level over its record order.

    Parameters
    ----------
    program
        One device's program. An addressed one (a memory plan's addresses) is returned as it is.
    alignment_bytes
        Every address is a multiple of it; sizes are rounded up to it.

    Returns
    -------
    Program
        The same program, ``addressed``, with each ALLOC/FREE's ``d`` its buffer's address.

    Raises
    ------
    InfeasibleError
        The buffers of a level cannot be packed into its capacity (the message names the
        busiest cycle and its biggest buffers).
    ValueError
        ``alignment_bytes < 1``; a buffer without its ALLOC or FREE; a view in an unaddressed program.

    Examples
    --------
    ``x`` is freed before ``y`` is allocated in the record order of cycle 5, so they share address 0:

    >>> from planner.isa.instructions import LevelInfo
    >>> ins = (Instruction(Opcode.ALLOC, 0, 0, 0, a=0, c=8), Instruction(Opcode.FREE, 0, 5, 0, a=0, c=8),
    ...        Instruction(Opcode.ALLOC, 0, 5, 0, a=1, c=8), Instruction(Opcode.ALLOC, 0, 5, 0, a=2, c=8),
    ...        Instruction(Opcode.FREE, 0, 9, 0, a=1, c=8), Instruction(Opcode.FREE, 0, 9, 0, a=2, c=8),
    ...        Instruction(Opcode.HALT, 0, 9, 0))
    >>> p = Program("d", "g", 1, 1, 1, 1, 1, 0, (LevelInfo("m", 1024, 1),), 0, (), 1, ("x", "y", "z"), ins)
    >>> q = address_program(p)
    >>> q.addressed, [(i.opcode.name, p.buffers[i.a], i.d) for i in q.instructions if i.opcode != Opcode.HALT]
    (True, [('ALLOC', 'x', 0), ('FREE', 'x', 0), ('ALLOC', 'y', 0), ('ALLOC', 'z', 64), ('FREE', 'y', 0), \
('FREE', 'z', 64)])
    """
    if alignment_bytes < 1:
        raise ValueError(f"alignment_bytes must be >= 1, got {alignment_bytes}")
    if program.addressed:
        return program
    address: dict[int, int] = {}
    for level, buffers in sorted(_lifetimes_by_level(program).items()):
        placed = assign_addresses([lifetime for _, lifetime in buffers], program.levels[level].capacity_bytes,
                                  alignment_bytes, device=program.device, level=program.levels[level].name)
        address.update((buf, at) for (buf, _), at in zip(buffers, placed))
    paired = (Opcode.ALLOC, Opcode.FREE)
    instructions = tuple(_with_address(i, address[i.a]) if i.opcode in paired else i for i in program.instructions)
    return replace(program, instructions=instructions, addressed=True)


def address_programs(programs: Mapping[str, Program], alignment_bytes: int = 64) -> dict[str, Program]:
    """:func:`address_program` on every program, in the mapping's order.

    Examples
    --------
    >>> address_programs({}, 64)
    {}
    """
    return {name: address_program(program, alignment_bytes) for name, program in programs.items()}
