"""Lowering: plans built by hand become programs that replay exactly as planned."""

from __future__ import annotations

import json

import pytest

from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Device, Hardware, Link
from planner.isa import (
    ALLOC_PRELOADED,
    TRANSFER_STREAM,
    Opcode,
    decode,
    encode,
    get_profile,
    op_duration_cycles,
)
from planner.lowering import allocation, lower, peak_memory, write_allocation, write_binaries
from planner.memory.address_pass import address_programs
from planner.plan import PlacedOp, PlacedTransfer, Plan
from planner.simulator import simulate, simulate_dir, simulate_programs
from planner.verify import compare_with_plan

GEN = get_profile("generic")


def lowered(plan, graph, hw, **kwargs):
    """What the pipeline replays: the lowered programs after the address pass."""
    return address_programs(lower(plan, graph, hw, **kwargs))


def make_plan(ops, transfers=()) -> Plan:
    ends = [o.end_cycle for o in ops] + [t.end_cycle for t in transfers]
    return Plan("test", "latency", "FEASIBLE", max(ends), None, None, max(ends), 10**9,
                tuple(ops), tuple(transfers))


def two_device_case(memory_limit: int | None = None):
    """Fork-join on two generic devices joined by a 100 GB/s link with 2-cycle latency.

    a(4) -> b(6) on d0, a -> c(6) on d1, b -> d(2), c -> d on d0. Each activation is
    250 fp32 = 1000 B: a transfer takes 2 + ceil(1000 * 1e9 / 100e9) = 12 cycles.
      d0: a [0, 4), b [4, 10), d [34, 36)
      l0: ta a->c [4, 16), tc c->d [22, 34)
      d1: c [16, 22)
    b also reads a 400 B weight w. Makespan 36.
    """
    tensors = [Tensor(n, (250,)) for n in ("ta", "tb", "tc")] + [Tensor("w", (100,), kind="weight")]
    ops = [
        Op("a", "task", (), ("ta",), cycles={"g": 4}),
        Op("b", "task", ("ta", "w"), ("tb",), cycles={"g": 6}),
        Op("c", "task", ("ta",), ("tc",), cycles={"g": 6}),
        Op("d", "task", ("tb", "tc"), (), cycles={"g": 2}),
    ]
    graph = Graph(tensors, ops)
    hw = Hardware((Device("d0", "g", GEN, memory_limit_bytes=memory_limit), Device("d1", "g", GEN)),
                  (Link("l0", ("d0", "d1"), 100 * 10**9, 2),))
    assert hw.links[0].transfer_cycles(1000, hw.clock_hz) == 12
    plan = make_plan(
        [PlacedOp("a", "d0", 0, 0, 4), PlacedOp("b", "d0", 0, 4, 6), PlacedOp("c", "d1", 0, 16, 6),
         PlacedOp("d", "d0", 0, 34, 2)],
        [PlacedTransfer("a", "c", ("ta",), 1000, "d0", "d1", "l0", 4, 12),
         PlacedTransfer("c", "d", ("tc",), 1000, "d1", "d0", "l0", 22, 12)])
    return plan, graph, hw


def two_stream_case():
    """One generic device with two streams: a [0,4) s0, b [4,10) s1, c [4,8) s0, d [10,12) s0."""
    tensors = [Tensor(n, (250,)) for n in ("ta", "tb", "tc")]
    ops = [
        Op("a", "task", (), ("ta",), cycles={"g": 4}),
        Op("b", "task", ("ta",), ("tb",), cycles={"g": 6}),
        Op("c", "task", ("ta",), ("tc",), cycles={"g": 4}),
        Op("d", "task", ("tb", "tc"), (), cycles={"g": 2}),
    ]
    graph = Graph(tensors, ops)
    hw = Hardware((Device("d0", "g", GEN, streams=2),), ())
    plan = make_plan([PlacedOp("a", "d0", 0, 0, 4), PlacedOp("b", "d0", 1, 4, 6),
                      PlacedOp("c", "d0", 0, 4, 4), PlacedOp("d", "d0", 0, 10, 2)])
    return plan, graph, hw


def tpu_case():
    """A 256-cube int8 matmul then a relu on one TPU v1 (700 MHz) on a 1 GHz timeline.

    matmul: 4048 device cycles (memory bound, see test_isa_cost) -> ceil(4048/0.7) = 5783.
    relu over 65536 int8: compute ceil(65536/256) = 256; memory 131072 B over DDR3:
    ceil(131072 * 7e8 / 34e9) = ceil(2698.5) = 2699 device cycles -> ceil(2699/0.7) = 3856.
    """
    tensors = [Tensor("x", (256, 256), "int8", "input"), Tensor("w", (256, 256), "int8", "weight"),
               Tensor("y", (256, 256), "int8"), Tensor("z", (256, 256), "int8", "output")]
    graph = Graph(tensors, [Op("mm", "matmul", ("x", "w"), ("y",)), Op("act", "relu", ("y",), ("z",))])
    dev = Device("t0", "tpu", get_profile("tpu-v1"))
    hw = Hardware((dev,), ())
    d_mm = op_duration_cycles(graph.ops["mm"], graph, dev, hw)
    d_act = op_duration_cycles(graph.ops["act"], graph, dev, hw)
    assert (d_mm, d_act) == (5783, 3856)
    plan = make_plan([PlacedOp("mm", "t0", 0, 0, 5783), PlacedOp("act", "t0", 0, 5783, 3856)])
    return plan, graph, hw


def opcodes(program):
    return [(i.opcode.name, i.start_cycle, i.op) for i in program.instructions]


def test_two_devices_lower_to_send_recv_and_replay_exactly():
    plan, graph, hw = two_device_case()
    programs = lowered(plan, graph, hw)
    assert list(programs) == ["d0", "d1"]
    d0, d1 = programs["d0"], programs["d1"]
    sends = [i for i in d0.instructions if i.opcode == Opcode.SEND]
    recvs = [i for i in d1.instructions if i.opcode == Opcode.RECV]
    assert len(sends) == len(recvs) == 1
    s, r = sends[0], recvs[0]
    # Transfer 0 (a->c): same id, link, bytes and timing on both sides.
    assert (s.a, s.b, s.c, s.start_cycle, s.duration_cycles, s.peer) == (0, 1000, 0, 4, 12, "d1")
    assert (r.a, r.b, r.c, r.start_cycle, r.duration_cycles, r.peer) == (0, 1000, 0, 4, 12, "d0")
    assert s.stream == r.stream == TRANSFER_STREAM
    assert d0.instructions[-1].opcode == Opcode.HALT and d0.instructions[-1].start_cycle == 36
    # The weight is preloaded from cycle 0 to the device's end.
    w = d0.buffers.index("w")
    allocs = [i for i in d0.instructions if i.opcode == Opcode.ALLOC and i.a == w]
    assert allocs[0].start_cycle == 0 and allocs[0].subop & ALLOC_PRELOADED
    result = simulate({name: encode(p) for name, p in programs.items()})
    assert result.violations == ()
    assert compare_with_plan(result, plan) == []
    assert result.makespan_cycles == 36
    assert result.ops["c"].device == "d1" and (result.ops["c"].start_cycle, result.ops["c"].end_cycle) == (16, 22)
    assert [(t.start_cycle, t.end_cycle, t.link) for t in result.transfers.values()] == [(4, 16, "l0"), (22, 34, "l0")]
    # Memory, d0: w 400 always; ta [0, 16) (its transfer ends at 16); tb [4, 36) (d ends at 36);
    # received tc [22, 36). Peak 400 + 1000 + 1000 = 2400 (ta and tc never overlap).
    # d1: received ta [4, 22), tc [16, 34) (its transfer ends at 34): peak 2000.
    assert result.peak_bytes == {"d0": {"mem": 2400}, "d1": {"mem": 2000}}
    assert peak_memory(d0) == {"mem": 2400}
    assert result.instruction_count == sum(len(p.instructions) for p in programs.values())


def test_buffer_lifetimes_follow_the_scheduler_model():
    plan, graph, hw = two_device_case()
    d0 = lowered(plan, graph, hw)["d0"]
    spans = {}
    for i in d0.instructions:
        if i.opcode in (Opcode.ALLOC, Opcode.FREE):
            spans.setdefault(d0.buffers[i.a], []).append(i.start_cycle)
    # ta lives until max(end a=4, end b=10, end of transfer a->c=16); the received tc from
    # the transfer's start to its consumer's end.
    assert spans["ta"] == [0, 16]
    assert spans["tb"] == [4, 36]
    assert spans["tc@d1->d"] == [22, 36]
    assert spans["w"] == [0, 36]


def test_compute_instructions_carry_graph_dimensions():
    plan, graph, hw = tpu_case()
    prog = lowered(plan, graph, hw)["t0"]
    mm = next(i for i in prog.instructions if i.opcode == Opcode.MATMUL)
    assert (mm.a, mm.b, mm.c, mm.d, mm.mem_bytes, mm.duration_cycles) == (256, 256, 256, 1, 196608, 5783)
    act = next(i for i in prog.instructions if i.opcode == Opcode.VECTOR)
    assert (act.a, act.b, act.mem_bytes) == (65536, 1, 131072)
    assert prog.device_clock_hz == 700_000_000 and prog.reference_clock_hz == 10**9
    result = simulate_programs({"t0": prog})
    assert result.valid and compare_with_plan(result, plan) == []
    # Input x and weight w preloaded (2 * 65536), y [0, 9639), z [5783, 9639): peak 4 * 65536.
    assert result.peak_bytes["t0"] == {"onchip": 0, "ddr3": 262144}


def test_cross_stream_dependencies_get_semaphores():
    plan, graph, hw = two_stream_case()
    prog = lowered(plan, graph, hw)["d0"]
    sync = [(i.opcode.name, i.stream, i.start_cycle, i.a) for i in prog.instructions
            if i.opcode in (Opcode.SIGNAL, Opcode.WAIT)]
    # a (s0) -> b (s1): semaphore 0 signalled at 4; b (s1) -> d (s0): semaphore 1 at 10.
    # a -> c and c -> d stay on stream 0: no semaphore.
    assert sorted(sync) == [("SIGNAL", 0, 4, 0), ("SIGNAL", 1, 10, 1), ("WAIT", 0, 10, 1), ("WAIT", 1, 4, 0)]
    result = simulate_programs({"d0": prog})
    assert result.valid and result.makespan_cycles == 12


def test_deterministic_order_and_bytes():
    plan, graph, hw = two_device_case()
    a = {k: encode(v) for k, v in lowered(plan, graph, hw).items()}
    b = {k: encode(v) for k, v in lowered(plan, graph, hw).items()}
    assert a == b
    for prog in lowered(plan, graph, hw).values():
        starts = [i.start_cycle for i in prog.instructions]
        assert starts == sorted(starts)


def test_round_trip_of_lowered_programs():
    for plan, graph, hw in (two_device_case(), two_stream_case(), tpu_case()):
        for prog in lowered(plan, graph, hw).values():
            assert decode(encode(prog)) == prog


def test_allocation_document():
    plan, graph, hw = two_device_case()
    doc = allocation(plan, graph, hw, lowered(plan, graph, hw))
    assert doc["devices"]["d0"]["memory"]["mem"]["reserved_bytes"] == 2400
    assert doc["devices"]["d1"]["streams_used"] == [0]
    assert doc["ops"]["c"] == {"device": "d1", "stream": 0, "start_cycle": 16, "end_cycle": 22}
    assert doc["resources"]["devices"]["d0"]["weight_bytes"] == {"mem": 400}
    assert doc["resources"]["devices"]["d0"]["busy_cycles"] == 4 + 6 + 2
    assert [t["id"] for t in doc["transfers"]] == [0, 1]
    json.dumps(doc)  # serializable
    with pytest.raises(ValueError, match=r"allocation.json needs addressed programs; d0, d1 have no addresses"):
        allocation(plan, graph, hw, lower(plan, graph, hw))  # its addresses would be placeholders


def test_write_and_simulate_dir(tmp_path):
    plan, graph, hw = two_device_case()
    programs = lowered(plan, graph, hw)
    paths = write_binaries(programs, tmp_path)
    write_allocation(allocation(plan, graph, hw, programs), tmp_path)
    assert sorted(p.name for p in paths) == ["d0.bin", "d0.lst", "d1.bin", "d1.lst"]
    assert (tmp_path / "allocation.json").is_file()
    lst = (tmp_path / "bin" / "d0.lst").read_text()
    assert "SEND" in lst and "to=d1 link=l0 bytes=1000 xfer=0" in lst and lst.rstrip().endswith("HALT")
    result = simulate_dir(tmp_path)
    assert result.valid and result.makespan_cycles == 36


def test_lowering_rejects_a_plan_missing_a_transfer():
    plan, graph, hw = two_device_case()
    broken = make_plan(plan.ops, plan.transfers[:1])
    with pytest.raises(ValueError, match="no transfer"):
        lower(broken, graph, hw)
    with pytest.raises(ValueError, match="unplaced"):
        lower(make_plan(plan.ops[:3], plan.transfers), graph, hw)


def test_device_without_ops_gets_a_halt_only_program():
    plan, graph, hw = two_stream_case()
    hw2 = Hardware(hw.devices + (Device("idle", "g", GEN),), ())
    programs = lowered(plan, graph, hw2)
    assert opcodes(programs["idle"]) == [("HALT", 0, "")]
    assert simulate_programs(programs).valid


def test_canonical_attrs_json_is_json_dumps_sorted_and_compact():
    import json as _json

    from planner.lowering.kernels import attrs_json

    for attrs in ({}, {"stride": (2, 2), "axis": -1}, {"b": 1.5, "a": [1, (2, 3)], "c": "x\u00e9", "d": None,
                                                       "e": True, "f": float("inf")}):
        assert attrs_json(attrs) == _json.dumps(_json.loads(_json.dumps(attrs)), sort_keys=True, separators=(",", ":"))
