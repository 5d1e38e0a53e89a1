"""Simulator: valid binaries pass; every kind of tampering is caught."""

from __future__ import annotations

import dataclasses

import pytest

from planner.errors import BinaryFormatError, InternalError
from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Device, Hardware, Link
from planner.isa import Opcode, decode, encode, get_profile
from planner.lowering import lower
from planner.memory.address_pass import address_programs
from planner.plan import PlacedOp, PlacedTransfer
from planner.simulator import SimulationError, simulate, simulate_programs
from planner.verify import compare_with_plan
from tests.planner.test_lowering import make_plan, two_device_case, two_stream_case

GEN = get_profile("generic")


def lowered(plan, graph, hw, **kwargs):
    """What the pipeline replays: the lowered programs after the address pass."""
    return address_programs(lower(plan, graph, hw, **kwargs))


def binaries(case):
    plan, graph, hw = case
    return {name: encode(p) for name, p in lowered(plan, graph, hw).items()}


def reencode(data: bytes, edit) -> bytes:
    """Decode, apply ``edit`` to the instruction list, re-sort by start and re-encode."""
    prog = decode(data)
    instrs = edit(list(prog.instructions))
    halt = [i for i in instrs if i.opcode == Opcode.HALT]
    body = sorted((i for i in instrs if i.opcode != Opcode.HALT), key=lambda i: i.start_cycle)
    return encode(dataclasses.replace(prog, instructions=tuple(body + halt)))


def replace_op(instrs, op, **changes):
    return [dataclasses.replace(i, **changes) if i.op == op and i.opcode in (Opcode.TASK, Opcode.MATMUL)
            else i for i in instrs]


def test_valid_binaries_have_no_violations():
    result = simulate(binaries(two_device_case()), strict=True)
    assert result.valid and result.makespan_cycles == 36


def test_flipped_byte_fails_the_checksum():
    bins = binaries(two_device_case())
    for pos in (20, 200, len(bins["d0"]) - 3):  # header field, table, last record
        data = bytearray(bins["d0"])
        data[pos] ^= 0xFF
        with pytest.raises(BinaryFormatError, match="checksum mismatch"):
            simulate(dict(bins, d0=bytes(data)))


def test_moved_instruction_is_a_dependency_violation():
    bins = binaries(two_device_case())
    # c reads the received copy of ta, ready when the RECV ends at 16; move c to start at 10.
    bins["d1"] = reencode(bins["d1"], lambda ins: replace_op(ins, "c", start_cycle=10))
    result = simulate(bins)
    assert any("dependency violation" in v and "(c)" in v and "ready at 16" in v for v in result.violations)
    with pytest.raises(SimulationError, match="dependency violation"):
        simulate(bins, strict=True)
    assert issubclass(SimulationError, InternalError)


def test_shortened_duration_is_a_duration_mismatch():
    bins = binaries(two_device_case())
    bins["d1"] = reencode(bins["d1"], lambda ins: replace_op(ins, "c", duration_cycles=5))
    result = simulate(bins)
    assert "d1#3 TASK (c): duration mismatch: encoded 5 cycles, the ISA formulas give 6" in result.violations


def test_shortened_matmul_duration_is_recomputed_from_the_profile():
    from tests.planner.test_lowering import tpu_case

    bins = binaries(tpu_case())
    # 1460 = ceil(1022 / 0.7): the compute-only time, ignoring the DDR3 roofline (5783).
    bins["t0"] = reencode(bins["t0"], lambda ins: replace_op(ins, "mm", duration_cycles=1460))
    violations = simulate(bins).violations
    assert any("duration mismatch: encoded 1460 cycles, the ISA formulas give 5783" in v for v in violations)


def test_same_stream_overlap():
    bins = binaries(two_stream_case())
    # c (stream 0, [4, 8)) moved to stream 1 where b runs [4, 10).
    bins["d0"] = reencode(bins["d0"], lambda ins: replace_op(ins, "c", stream=1))
    assert simulate(bins).violations == ("d0 stream 1: d0#7 TASK (b) starts at 4, while d0#6 TASK (c) runs until 8",)


def test_wait_before_signal():
    plan, graph, hw = two_stream_case()
    # b on stream 1 starts at 3, before a (stream 0) ends at 4.
    early = make_plan([o if o.name != "b" else dataclasses.replace(o, start_cycle=3) for o in plan.ops])
    violations = simulate_programs(lowered(early, graph, hw)).violations
    assert any("semaphore 0, signalled only at 4" in v for v in violations)
    assert any("dependency violation" in v and "(b)" in v for v in violations)


def test_recv_without_send_and_before_send():
    bins = binaries(two_device_case())
    no_send = reencode(bins["d0"], lambda ins: [i for i in ins if i.opcode != Opcode.SEND])
    assert any("transfer 0: 0 SEND and 1 RECV" in v for v in simulate(dict(bins, d0=no_send)).violations)
    early = reencode(bins["d1"], lambda ins: [dataclasses.replace(i, start_cycle=3) if i.opcode == Opcode.RECV
                                              else i for i in ins])
    assert any("before its SEND at 4" in v for v in simulate(dict(bins, d1=early)).violations)


def test_link_is_exclusive_across_binaries():
    # a and b on d0 each feed an op on d1 over l0; transfers [4, 16) and [8, 20) overlap.
    tensors = [Tensor(n, (250,)) for n in ("ta", "tb")]
    graph = Graph(tensors, [
        Op("a", "task", (), ("ta",), cycles={"g": 4}), Op("b", "task", (), ("tb",), cycles={"g": 4}),
        Op("c", "task", ("ta",), (), cycles={"g": 1}), Op("e", "task", ("tb",), (), cycles={"g": 1})])
    hw = Hardware((Device("d0", "g", GEN), Device("d1", "g", GEN)), (Link("l0", ("d0", "d1"), 100 * 10**9, 2),))
    ops = [PlacedOp("a", "d0", 0, 0, 4), PlacedOp("b", "d0", 0, 4, 4), PlacedOp("c", "d1", 0, 16, 1),
           PlacedOp("e", "d1", 0, 20, 1)]
    bad = make_plan(ops, [PlacedTransfer("a", "c", ("ta",), 1000, "d0", "d1", "l0", 4, 12),
                          PlacedTransfer("b", "e", ("tb",), 1000, "d0", "d1", "l0", 8, 12)])
    violations = simulate_programs(lowered(bad, graph, hw)).violations
    assert violations == ("link l0: transfer 1 starts at 8 while transfer 0 holds the link until 16",)
    good = make_plan(ops[:3] + [PlacedOp("e", "d1", 0, 28, 1)],
                     [PlacedTransfer("a", "c", ("ta",), 1000, "d0", "d1", "l0", 4, 12),
                      PlacedTransfer("b", "e", ("tb",), 1000, "d0", "d1", "l0", 16, 12)])
    assert simulate_programs(lowered(good, graph, hw)).valid


def test_transfer_duration_is_checked_against_the_link():
    plan, graph, hw = two_device_case()
    short = make_plan(plan.ops, [dataclasses.replace(plan.transfers[0], duration_cycles=11), plan.transfers[1]])
    violations = simulate_programs(lowered(short, graph, hw)).violations
    assert any("SEND (a): duration mismatch: encoded 11 cycles, the ISA formulas give 12" in v for v in violations)


def test_memory_over_capacity():
    # d0 peaks at 2400 B (see test_lowering); cap it at 2000 in the binary's header (lowering
    # itself refuses buffers that do not fit). The addressed buffers also end beyond 2000.
    plan, graph, hw = two_device_case()
    programs = lowered(plan, graph, hw)
    d0 = programs["d0"]
    capped = dataclasses.replace(d0, levels=tuple(dataclasses.replace(lv, capacity_bytes=2000)
                                                  for lv in d0.levels))
    result = simulate_programs(dict(programs, d0=capped))
    assert "d0: memory level mem holds 2400 bytes at cycle 4, over its capacity of 2000" in result.violations
    assert any("ends beyond level mem's capacity of 2000 bytes" in v for v in result.violations)


def test_missing_halt_and_missing_peer():
    bins = binaries(two_device_case())
    prog = decode(bins["d0"])
    no_halt = encode(dataclasses.replace(prog, instructions=prog.instructions[:-1]))
    assert any("last instruction is not HALT" in v for v in simulate(dict(bins, d0=no_halt)).violations)
    only_d0 = simulate({"d0": bins["d0"]}).violations
    assert any("'d1', which has no binary" in v for v in only_d0)


def test_compare_with_plan_catches_an_edited_plan():
    plan, graph, hw = two_device_case()
    result = simulate(binaries((plan, graph, hw)))
    edited = make_plan([o if o.name != "d" else dataclasses.replace(o, start_cycle=33) for o in plan.ops],
                       plan.transfers)
    diffs = compare_with_plan(result, edited)
    i = next(k for k, o in enumerate(edited.ops) if o.name == "d")
    assert [str(d) for d in diffs] == [
        f"plan.json: ops[{i}] 'd': expected d0 stream 0 [34, 36) (the binaries), found d0 stream 0 [33, 35)",
        "plan.json: makespan_cycles: expected 36 (the binaries end there), found 35"]


def test_decode_errors_are_clear():
    data = binaries(two_stream_case())["d0"]
    with pytest.raises(BinaryFormatError, match="bad magic"):
        decode(b"XX" + data[2:])
    with pytest.raises(BinaryFormatError, match="format version 1 is not supported"):
        decode(data[:8] + (1).to_bytes(2, "little") + data[10:])
    with pytest.raises(BinaryFormatError, match="truncated"):
        decode(data[:-1])
    with pytest.raises(BinaryFormatError, match="truncated"):
        decode(data[:50])
    with pytest.raises(BinaryFormatError, match="trailing"):
        decode(data + b"\0")
