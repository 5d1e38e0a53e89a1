"""Independent checks of a lowered program's addresses (plain replay of ALLOC/FREE)."""

from __future__ import annotations

from planner.isa import ALLOC_VIEW, Opcode, Program


def address_violations(program: Program, alignment_bytes: int = 64) -> list[str]:
    """Every broken address rule: unaligned, beyond the level, or overlapping a live buffer.

    Replays ALLOC/FREE in record order (``docs/isa.md``): a buffer freed at a cycle leaves at
    its FREE's place, so it shares bytes with one allocated at that cycle only when its FREE
    comes first. Views are checked against their level's capacity only.
    """
    errors = []
    live: dict[int, tuple[int, int, int]] = {}  # id -> (level, address, size), non-view
    allocated: set[int] = set()
    freed: set[int] = set()
    for i in program.instructions:
        if i.opcode == Opcode.FREE:
            if i.a not in allocated:
                errors.append(f"{program.buffers[i.a]} is freed before it is allocated")
            live.pop(i.a, None)
            freed.add(i.a)
            continue
        if i.opcode != Opcode.ALLOC:
            continue
        buf, level, address, size, view = i.a, i.b, i.d, i.c, bool(i.subop & ALLOC_VIEW)
        name = program.buffers[buf]
        allocated.add(buf)
        if address % alignment_bytes:
            errors.append(f"{name} at {address} is not {alignment_bytes}-aligned")
        if address + size > program.levels[level].capacity_bytes:
            errors.append(f"{name} [{address}, {address + size}) exceeds level {program.levels[level].name}")
        if view or not size:
            continue
        for other, (lv2, a2, s2) in sorted(live.items()):
            if lv2 == level and address < a2 + s2 and a2 < address + size:
                errors.append(f"cycle {i.start_cycle}: {name} [{address}, {address + size}) overlaps "
                              f"{program.buffers[other]} [{a2}, {a2 + s2})")
        live[buf] = (level, address, size)
    errors += [f"{program.buffers[b]} is never freed" for b in sorted(allocated - freed)]
    return errors
