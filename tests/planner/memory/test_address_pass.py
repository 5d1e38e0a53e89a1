"""The contract between lowering and the address pass.

Lowering emits programs without addresses; the address pass (planner.memory.address_pass)
fills them from the program alone; the replay accepts the result and refuses an overlap.
(Another planted overlap, in a memory-planned program's fast level:
tests/planner/simulator/test_memory_replay.py::test_planted_address_overlap_and_capacity.)
"""

from __future__ import annotations

import dataclasses

import pytest

from planner.isa import Opcode, encode
from planner.lowering import lower
from planner.memory.address_pass import address_program, address_programs
from planner.simulator import simulate, simulate_programs
from planner.verify import compare_with_plan
from tests.planner.lowering.checks import address_violations
from tests.planner.test_lowering import two_device_case, two_stream_case


def records(program, opcode):
    return [i for i in program.instructions if i.opcode == opcode]


def test_lowered_programs_have_no_addresses_until_the_pass_gives_them():
    plan, graph, hw = two_device_case()
    unaddressed = lower(plan, graph, hw)
    assert not any(p.addressed for p in unaddressed.values())
    assert {i.d for p in unaddressed.values() for i in records(p, Opcode.ALLOC) + records(p, Opcode.FREE)} == {0}
    addressed = address_programs(unaddressed, 64)
    assert list(addressed) == list(unaddressed) and all(p.addressed for p in addressed.values())
    d0 = addressed["d0"]
    # Every ALLOC has its address (hand-checked in tests/planner/lowering/test_addresses.py), its
    # FREE names the same one, and only the addresses changed: same records, same order.
    assert {d0.buffers[i.a]: i.d for i in records(d0, Opcode.ALLOC)} == {"ta": 0, "tb": 1024, "tc@d1->d": 0,
                                                                        "w": 2048}
    assert all(i.d == {a.a: a.d for a in records(d0, Opcode.ALLOC)}[i.a] for i in records(d0, Opcode.FREE))
    assert [dataclasses.replace(i, d=0) for i in d0.instructions] == list(unaddressed["d0"].instructions)
    for program in addressed.values():  # no two live buffers of a level overlap, all aligned, in capacity
        assert address_violations(program, 64) == []
    result = simulate({name: encode(p) for name, p in addressed.items()}, strict=True)
    assert result.valid and compare_with_plan(result, plan) == []


def test_the_pass_leaves_addressed_programs_alone_and_is_deterministic():
    plan, graph, hw = two_stream_case()
    once = address_programs(lower(plan, graph, hw))
    assert address_programs(once) == once == address_programs(lower(plan, graph, hw))
    assert all(address_program(p) is p for p in once.values())
    with pytest.raises(ValueError, match="alignment_bytes must be >= 1"):
        address_program(lower(plan, graph, hw)["d0"], 0)


def test_the_replay_refuses_an_overlapping_address_assignment():
    # On d0, tb [4, 36) is live with ta [0, 16) and with tc [22, 36), both at address 0; put tb there.
    plan, graph, hw = two_device_case()
    programs = address_programs(lower(plan, graph, hw))
    d0 = programs["d0"]
    tb = d0.buffers.index("tb")
    moved = dataclasses.replace(d0, instructions=tuple(
        dataclasses.replace(i, d=0) if i.opcode in (Opcode.ALLOC, Opcode.FREE) and i.a == tb else i
        for i in d0.instructions))
    violations = simulate_programs(dict(programs, d0=moved)).violations
    ta, tc = d0.buffers.index("ta"), d0.buffers.index("tc@d1->d")
    assert violations == (f"d0: buffers {ta} (ta) at [0, 1000) and {tb} (tb) at [0, 1000) of level mem overlap "
                          f"at cycle 4",
                          f"d0: buffers {tb} (tb) at [0, 1000) and {tc} (tc@d1->d) at [0, 1000) of level mem "
                          f"overlap at cycle 22")


def test_giving_an_address_keeps_every_other_field():
    # The pass rebuilds each ALLOC/FREE positionally from its fields (no dataclasses.replace per
    # record): every field set to something other than its default must come through unchanged.
    from planner.isa import Instruction
    from planner.memory.address_pass import _with_address

    ins = Instruction(Opcode.ALLOC, 3, 17, 5, op="mm", subop=1, a=4, b=2, c=4096, d=0, mem_bytes=9,
                      reads=(1, 2), writes=(3,), peer="d1", fast_bytes=7, level_bytes=(1, 2, 3))
    assert _with_address(ins, 8192) == dataclasses.replace(ins, d=8192)
    assert [getattr(ins, f.name) for f in dataclasses.fields(ins) if f.name != "d"] == \
        [getattr(_with_address(ins, 64), f.name) for f in dataclasses.fields(ins) if f.name != "d"]
