"""Independent checks of a lowered program's addresses (plain replay of ALLOC/FREE)."""

from __future__ import annotations

from collections import defaultdict

from planner.isa import ALLOC_VIEW, Opcode, Program


def address_violations(program: Program, alignment_bytes: int = 64) -> list[str]:
    """Every broken address rule: unaligned, beyond the level, or overlapping a live buffer.

    Replays ALLOC/FREE by cycle: buffers freed at a cycle leave before those allocated at
    it arrive (half-open lifetimes); a buffer allocated and freed at one cycle is live at
    that instant, with everything else live then. Views are checked against their level's
    capacity only.
    """
    allocs: dict[int, tuple[int, int, int, int, bool]] = {}  # id -> (cycle, level, address, size, view)
    frees: dict[int, int] = {}
    for i in program.instructions:
        if i.opcode == Opcode.ALLOC:
            allocs[i.a] = (i.start_cycle, i.b, i.d, i.c, bool(i.subop & ALLOC_VIEW))
        elif i.opcode == Opcode.FREE:
            frees[i.a] = i.start_cycle
    errors = []
    by_cycle: dict[int, list[int]] = defaultdict(list)
    for buf, (cycle, level, address, size, view) in allocs.items():
        name = program.buffers[buf]
        if address % alignment_bytes:
            errors.append(f"{name} at {address} is not {alignment_bytes}-aligned")
        if address + size > program.levels[level].capacity_bytes:
            errors.append(f"{name} [{address}, {address + size}) exceeds level {program.levels[level].name}")
        if buf not in frees:
            errors.append(f"{name} is never freed")
        by_cycle[cycle].append(buf)
    free_at: dict[int, list[int]] = defaultdict(list)
    for buf, cycle in frees.items():
        free_at[cycle].append(buf)
    live: set[int] = set()
    for cycle in sorted(set(by_cycle) | set(free_at)):
        live -= {b for b in free_at[cycle] if allocs[b][0] < cycle}
        for buf in sorted(by_cycle[cycle]):
            _, level, address, size, view = allocs[buf]
            if view or not size:
                continue
            for other in sorted(live):
                _, lv2, a2, s2, v2 = allocs[other]
                if lv2 == level and not v2 and s2 and address < a2 + s2 and a2 < address + size:
                    errors.append(f"cycle {cycle}: {program.buffers[buf]} [{address}, {address + size}) overlaps "
                                  f"{program.buffers[other]} [{a2}, {a2 + s2})")
            live.add(buf)
        live -= {b for b in free_at[cycle] if allocs[b][0] == cycle}
    return errors
