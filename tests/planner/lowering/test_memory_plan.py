"""Memory plans lowered as they are: buffers, views, op instances, DMAs and their semaphores."""

from __future__ import annotations

import dataclasses

import pytest

from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Device, Hardware, Link, MemoryLevel, Profile
from planner.isa import (
    COMPUTE_OPCODES,
    DMA_STREAM,
    TRANSFER_STREAM,
    Opcode,
    Operand,
    decode,
    encode,
    expected_duration_cycles,
    get_profile,
)
from planner.lowering import allocation, lower, peak_memory
from planner.memory.plan import DeviceMemoryPlan, MemoryBuffer, MemoryPlan, MemoryTransfer, OpAccess
from planner.plan import PlacedOp, PlacedTransfer
from planner.simulator import simulate
from planner.verify import compare_with_plan
from tests.planner.lowering.checks import address_violations
from tests.planner.test_lowering import make_plan

# A toy device at the reference clock (1 GHz: device cycles = timeline cycles): a 4x4 array,
# 4 lanes, a 4 KiB SRAM at 4 B/cycle (fast) and a 1 MiB DRAM at 1 B/cycle (main), DMA start-up 10.
TOY = Profile("toy", 10**9, 4, 4, 4, (MemoryLevel("sram", 4096, 4 * 10**9), MemoryLevel("dram", 1 << 20, 10**9)),
              dma_latency_cycles=10)
SRAM, DRAM = 0, 1


def three_op_case():
    """mm1 = x[8,4] @ w1[4,4] -> h; act = relu(h) -> g, split in two row portions; mm2 = g @ w2 -> y.

    Memory plan (one stream; every op an instance in this order):
      mm1    reads x, w1 (DRAM, preloaded), writes h (DRAM): systolic (2*4 + 4 + 8 - 2) = 18,
             main 128 + 64 + 128 = 320 B at 1 B/cycle = 320 -> [0, 320)
      act#0  reads h#0 (view of h, DRAM), writes g#0@sram.0: 16 elements / 4 lanes = 4,
             fast 64 B / 4 = 16 + main 64 B = 64 -> 80: [320, 400)
      act#1  the same on row portion 1: [400, 480)
      mm2    reads g#0, g#1 (views of g, DRAM) and w2@sram.0, writes y (DRAM): 18 vs
             fast 64/4 = 16 + main 256 = 272 -> 272; it waits for the DMAs: [554, 826)
    DMAs (one at a time, 10 + 64 B at min(4, 1) B/cycle = 74 cycles each):
      prefetch w2 -> w2@sram.0, triggered by mm1 (a third op), released by mm2: [320, 394)
      evict g#0@sram.0 -> g#0, triggered by act#0, released by mm2: [400, 474)
      evict g#1@sram.0 -> g#1, triggered by act#1, released by mm2: [480, 554)
    """
    tensors = [Tensor("x", (8, 4), kind="input"), Tensor("w1", (4, 4), kind="weight"), Tensor("h", (8, 4)),
               Tensor("g", (8, 4)), Tensor("w2", (4, 4), kind="weight"), Tensor("y", (8, 4), kind="output")]
    ops = [Op("mm1", "matmul", ("x", "w1"), ("h",)), Op("act", "relu", ("h",), ("g",)),
           Op("mm2", "matmul", ("g", "w2"), ("y",))]
    graph = Graph(tensors, ops)
    hw = Hardware((Device("t0", "toy", TOY),), ())
    plan = make_plan([PlacedOp("mm1", "t0", 0, 0, 320), PlacedOp("act#0", "t0", 0, 320, 80),
                      PlacedOp("act#1", "t0", 0, 400, 80), PlacedOp("mm2", "t0", 0, 554, 272)])
    end = 826
    buffers = (
        MemoryBuffer("x", "x", -1, "dram", 0, 128, 0, end, preloaded=True),
        MemoryBuffer("w1", "w1", -1, "dram", 128, 64, 0, end, preloaded=True),
        MemoryBuffer("w2", "w2", -1, "dram", 192, 64, 0, end, preloaded=True),
        MemoryBuffer("h", "h", -1, "dram", 256, 128, 0, 480),
        MemoryBuffer("h#0", "h", 0, "dram", 256, 64, 0, 480, view_of="h"),
        MemoryBuffer("h#1", "h", 1, "dram", 320, 64, 0, 480, view_of="h"),
        MemoryBuffer("g", "g", -1, "dram", 384, 128, 400, end),
        MemoryBuffer("g#0", "g", 0, "dram", 384, 64, 400, end, view_of="g"),
        MemoryBuffer("g#1", "g", 1, "dram", 448, 64, 400, end, view_of="g"),
        MemoryBuffer("y", "y", -1, "dram", 512, 128, 554, end),
        MemoryBuffer("w2@sram.0", "w2", -1, "sram", 0, 64, 320, end),
        MemoryBuffer("g#0@sram.0", "g", 0, "sram", 64, 64, 320, 474),
        MemoryBuffer("g#1@sram.0", "g", 1, "sram", 128, 64, 400, 554),
    )
    accesses = {
        "mm1": OpAccess("mm1", "mm1", -1, 1, (("x",), ("w1",)), (("h",),), 0, 320),
        "act#0": OpAccess("act#0", "act", 0, 2, (("h#0",),), (("g#0@sram.0",),), 64, 64),
        "act#1": OpAccess("act#1", "act", 1, 2, (("h#1",),), (("g#1@sram.0",),), 64, 64),
        "mm2": OpAccess("mm2", "mm2", -1, 1, (("g#0", "g#1"), ("w2@sram.0",)), (("y",),), 64, 256),
    }
    transfers = (
        MemoryTransfer("prefetch", "w2", -1, "w2", "w2@sram.0", 64, "mm1", "mm2", 320, 74),
        MemoryTransfer("evict", "g", 0, "g#0@sram.0", "g#0", 64, "act#0", "mm2", 400, 74),
        MemoryTransfer("evict", "g", 1, "g#1@sram.0", "g#1", 64, "act#1", "mm2", 480, 74),
    )
    mp = DeviceMemoryPlan("t0", "sram", "dram", ("mm1", "act#0", "act#1", "mm2"), accesses, buffers, transfers,
                          {"act..act": 2})
    return plan, graph, hw, MemoryPlan({"t0": mp})


def render(program, ins) -> str:
    """One line per instruction: start, stream, opcode, then what matters for it."""
    names = program.buffers
    stream = {DMA_STREAM: "dma", TRANSFER_STREAM: "xfer"}.get(ins.stream, f"s{ins.stream}")
    head = f"{ins.start_cycle} {stream} {ins.opcode.name}"
    rw = f"{','.join(names[b] for b in ins.reads)} -> {','.join(names[b] for b in ins.writes)}"
    if ins.opcode in (Opcode.ALLOC, Opcode.FREE):
        flags = "".join((" preloaded" if ins.subop & 1 else "", " view" if ins.subop & 2 else ""))
        return f"{head} {names[ins.a]} {program.levels[ins.b].name}@{ins.d}+{ins.c}{flags}"
    if ins.opcode == Opcode.MATMUL:
        return (f"{head} {ins.op} {ins.duration_cycles} T={ins.a} K={ins.b} N={ins.c} sets={ins.d} "
                f"main={ins.mem_bytes} fast={ins.fast_bytes} {rw}")
    if ins.opcode == Opcode.VECTOR:
        return (f"{head} {ins.op} {ins.duration_cycles} sub={ins.subop} n={ins.a} window={ins.b} "
                f"main={ins.mem_bytes} fast={ins.fast_bytes} {rw}")
    if ins.opcode == Opcode.DMA:
        return (f"{head} {ins.op} {ins.duration_cycles} {program.levels[ins.a].name}->{program.levels[ins.b].name} "
                f"{ins.c} {rw}")
    if ins.opcode in (Opcode.SIGNAL, Opcode.WAIT):
        return f"{head} {ins.a} {ins.op}"
    if ins.opcode in (Opcode.SEND, Opcode.RECV):
        return f"{head} {ins.op} {ins.duration_cycles} xfer={ins.c} bytes={ins.b} {rw}"
    return head


EXPECTED = [
    # cycle 0: every buffer alive from the start (parents before their views), then mm1
    "0 s0 ALLOC x dram@0+128 preloaded",
    "0 s0 ALLOC w1 dram@128+64 preloaded",
    "0 s0 ALLOC w2 dram@192+64 preloaded",
    "0 s0 ALLOC h dram@256+128",
    "0 s0 ALLOC h#0 dram@256+64 view",
    "0 s0 ALLOC h#1 dram@320+64 view",
    "0 s0 MATMUL mm1 320 T=8 K=4 N=4 sets=1 main=320 fast=0 x,w1 -> h",
    # mm1 ends: it triggers the prefetch of w2 (semaphore 0); act#0 writes its portion on chip
    # (record order: semaphores first, ALLOCs as late as the instructions that need them allow)
    "320 s0 SIGNAL 0 mm1",
    "320 dma WAIT 0 prefetch:w2@sram.0",
    "320 s0 ALLOC w2@sram.0 sram@0+64",
    "320 s0 ALLOC g#0@sram.0 sram@64+64",
    "320 s0 VECTOR act#0 80 sub=3 n=16 window=1 main=64 fast=64 h#0 -> g#0@sram.0",
    "320 dma DMA prefetch:w2@sram.0 74 dram->sram 64 w2 -> w2@sram.0",
    "394 dma SIGNAL 1 prefetch:w2@sram.0",
    # act#0 ends: it triggers the eviction of its portion (semaphore 2) into g's first row view
    "400 s0 SIGNAL 2 act#0",
    "400 dma WAIT 2 evict:g#0",
    "400 s0 ALLOC g dram@384+128",
    "400 s0 ALLOC g#1@sram.0 sram@128+64",
    "400 s0 ALLOC g#0 dram@384+64 view",
    "400 s0 ALLOC g#1 dram@448+64 view",
    "400 s0 VECTOR act#1 80 sub=3 n=16 window=1 main=64 fast=64 h#1 -> g#1@sram.0",
    "400 dma DMA evict:g#0 74 sram->dram 64 g#0@sram.0 -> g#0",
    "474 s0 FREE g#0@sram.0 sram@64+64",
    "474 dma SIGNAL 3 evict:g#0",
    # act#1 ends: h and its views go (views first), the second eviction starts (semaphore 4)
    "480 s0 FREE h#0 dram@256+64 view",
    "480 s0 FREE h#1 dram@320+64 view",
    "480 s0 FREE h dram@256+128",
    "480 s0 SIGNAL 4 act#1",
    "480 dma WAIT 4 evict:g#1",
    "480 dma DMA evict:g#1 74 sram->dram 64 g#1@sram.0 -> g#1",
    # the last DMA ends: mm2 waits for all three (semaphores 1, 3, 5; 5 signalled at this cycle,
    # so before its WAIT in the record order) and reads both row views
    "554 s0 FREE g#1@sram.0 sram@128+64",
    "554 s0 WAIT 1 mm2",
    "554 s0 WAIT 3 mm2",
    "554 dma SIGNAL 5 evict:g#1",
    "554 s0 WAIT 5 mm2",
    "554 s0 ALLOC y dram@512+128",
    "554 s0 MATMUL mm2 272 T=8 K=4 N=4 sets=1 main=256 fast=64 g#0,g#1,w2@sram.0 -> y",
    # the end: views freed before their parents
    "826 s0 FREE g#0 dram@384+64 view",
    "826 s0 FREE g#1 dram@448+64 view",
    "826 s0 FREE x dram@0+128",  # FREE carries only the view flag
    "826 s0 FREE w1 dram@128+64",
    "826 s0 FREE w2 dram@192+64",
    "826 s0 FREE g dram@384+128",
    "826 s0 FREE y dram@512+128",
    "826 s0 FREE w2@sram.0 sram@0+64",
    "826 s0 HALT",
]


def test_hand_made_memory_plan_lowers_to_the_expected_sequence():
    plan, graph, hw, mp = three_op_case()
    program = lower(plan, graph, hw, memory_plan=mp)["t0"]
    assert [render(program, i) for i in program.instructions] == EXPECTED
    assert program.fast_level == SRAM and program.main_level == DRAM and program.addressed
    assert program.buffers == tuple(b.name for b in mp.devices["t0"].buffers)
    # Every compute instruction is timed as the ISA recomputes it from its operands.
    for ins in program.instructions:
        if ins.opcode in COMPUTE_OPCODES:
            assert ins.duration_cycles == expected_duration_cycles(ins, program), ins.op
    assert address_violations(program) == []
    assert decode(encode(program)) == program


def test_kernels_of_the_memory_plan_use_portion_shapes_and_views():
    plan, graph, hw, mp = three_op_case()
    program = lower(plan, graph, hw, memory_plan=mp)["t0"]
    ids = {name: i for i, name in enumerate(program.buffers)}
    kernels = {k.op: k for k in program.kernels}
    assert list(kernels) == ["act#0", "act#1", "mm1", "mm2"]
    assert kernels["act#1"].type == "relu"
    assert kernels["act#1"].inputs == (Operand((4, 4), "fp32", (ids["h#1"],)),)
    assert kernels["act#1"].outputs == (Operand((4, 4), "fp32", (ids["g#1@sram.0"],)),)
    # mm2 reads g whole, as its two row portions concatenated.
    assert kernels["mm2"].inputs == (Operand((8, 4), "fp32", (ids["g#0"], ids["g#1"])),
                                     Operand((4, 4), "fp32", (ids["w2@sram.0"],)))
    assert kernels["mm1"].outputs == (Operand((8, 4), "fp32", (ids["h"],)),)


def test_allocation_lists_the_memory_plan_buffers_and_instances():
    plan, graph, hw, mp = three_op_case()
    programs = lower(plan, graph, hw, memory_plan=mp)
    doc = allocation(plan, graph, hw, programs)
    dev = doc["devices"]["t0"]
    assert dev["fast_level"] == "sram" and dev["ops"] == 4 and dev["streams_used"] == [0]
    assert doc["ops"]["act"] == {"device": "t0", "stream": 0, "start_cycle": 320, "end_cycle": 480,
                                 "instances": ["act#0", "act#1"]}
    rows = {b["name"]: b for b in dev["buffers"]}
    assert rows["g#1"] == {"name": "g#1", "level": "dram", "address": 448, "size_bytes": 64, "start_cycle": 400,
                           "end_cycle": 826, "preloaded": False, "view": True}
    # SRAM: w2@sram.0 [320, 826), g#0@sram.0 [320, 474) and g#1@sram.0 [400, 554) all live over
    # [400, 474): 3 * 64 = 192. DRAM: x, w1, w2 always (256), h [0, 480), g [400, 826) and
    # y [554, 826) of 128 each: at most two of those at once, 256 + 256 = 512 (views count nothing).
    assert peak_memory(programs["t0"]) == {"sram": 192, "dram": 512}


def mixed_case():
    """The memory-planned t0 sends y to an unplanned generic device d1, which adds it to itself.

    The link (1 GB/s, latency 5) carries 128 B in 5 + 128 = 133 cycles: [826, 959). On d1
    (1 lane, 1000 GB/s) out = y + y: 32 elements = 32 cycles: [959, 991).
    """
    plan, graph, hw, mp = three_op_case()
    tensors = [*graph.tensors.values(), Tensor("out", (8, 4), kind="output")]
    tensors = [dataclasses.replace(t, kind="activation") if t.name == "y" else t for t in tensors]
    graph2 = Graph(tensors, [*graph.ops.values(), Op("dbl", "add", ("y", "y"), ("out",))])
    hw2 = Hardware((hw.devices[0], Device("d1", "g", get_profile("generic"))), (Link("l", ("t0", "d1"), 10**9, 5),))
    plan2 = make_plan([*plan.ops, PlacedOp("dbl", "d1", 0, 959, 32)],
                      [PlacedTransfer("mm2", "dbl", ("y",), 128, "t0", "d1", "l", 826, 133)])
    dmp = mp.devices["t0"]  # y, sent, now lives until its transfer ends
    buffers = tuple(dataclasses.replace(b, end_cycle=959) if b.name == "y" else b for b in dmp.buffers)
    return plan2, graph2, hw2, MemoryPlan({"t0": dataclasses.replace(dmp, buffers=buffers)})


def test_transfers_from_a_memory_planned_device_send_its_slow_buffer():
    plan, graph, hw, mp = mixed_case()
    programs = lower(plan, graph, hw, memory_plan=mp)
    t0, d1 = programs["t0"], programs["d1"]
    send = next(i for i in t0.instructions if i.opcode == Opcode.SEND)
    assert render(t0, send) == "826 xfer SEND mm2 133 xfer=0 bytes=128 y -> "
    recv = next(i for i in d1.instructions if i.opcode == Opcode.RECV)
    assert render(d1, recv) == "826 xfer RECV dbl 133 xfer=0 bytes=128  -> y@t0->dbl"
    (k,) = d1.kernels
    assert k.inputs[0].buffers == k.inputs[1].buffers == (d1.buffers.index("y@t0->dbl"),)
    assert t0.fast_level == SRAM and d1.fast_level == -1


def test_transfers_into_a_memory_planned_device_write_its_received_copy():
    # Reverse roles: d1 makes x, t0 receives it into the memory plan's copy "x@d1->mm1".
    plan, graph, hw, mp = three_op_case()
    tensors = [dataclasses.replace(t, kind="activation") if t.name == "x" else t for t in graph.tensors.values()]
    tensors.append(Tensor("seed", (8, 4), kind="input"))
    graph2 = Graph(tensors, [Op("mk", "relu", ("seed",), ("x",)), *graph.ops.values()])
    hw2 = Hardware((hw.devices[0], Device("d1", "g", get_profile("generic"))), (Link("l", ("t0", "d1"), 10**9, 5),))
    shift = 200  # mk [0, 32) on d1, the transfer [32, 165); t0's plan starts at 200
    plan2 = make_plan([PlacedOp("mk", "d1", 0, 0, 32)]
                      + [dataclasses.replace(o, start_cycle=o.start_cycle + shift) for o in plan.ops],
                      [PlacedTransfer("mk", "mm1", ("x",), 128, "d1", "t0", "l", 32, 133)])
    dmp = mp.devices["t0"]
    buffers = [dataclasses.replace(b, name="x@d1->mm1", preloaded=False, start_cycle=32,
                                   end_cycle=b.end_cycle + shift) if b.name == "x" else
               dataclasses.replace(b, start_cycle=b.start_cycle + shift if b.start_cycle else 0,
                                   end_cycle=b.end_cycle + shift) for b in dmp.buffers]
    accesses = dict(dmp.accesses, mm1=dataclasses.replace(dmp.accesses["mm1"], inputs=(("x@d1->mm1",), ("w1",))))
    transfers = tuple(dataclasses.replace(t, start_cycle=t.start_cycle + shift) for t in dmp.transfers)
    mp2 = MemoryPlan({"t0": dataclasses.replace(dmp, buffers=tuple(buffers), accesses=accesses,
                                                transfers=transfers)})
    programs = lower(plan2, graph2, hw2, memory_plan=mp2)
    t0 = programs["t0"]
    recv = next(i for i in t0.instructions if i.opcode == Opcode.RECV)
    assert render(t0, recv) == "32 xfer RECV mm1 133 xfer=0 bytes=128  -> x@d1->mm1"
    mm1 = next(i for i in t0.instructions if i.op == "mm1" and i.opcode == Opcode.MATMUL)
    assert render(t0, mm1) == "200 s0 MATMUL mm1 320 T=8 K=4 N=4 sets=1 main=320 fast=0 x@d1->mm1,w1 -> h"
    assert address_violations(t0) == []
    result = simulate({n: encode(p) for n, p in programs.items()})
    assert result.violations == () and result.makespan_cycles == 826 + shift


@pytest.mark.parametrize("edit, message", [
    (lambda d: dataclasses.replace(d, accesses=dict(
        d.accesses, mm2=dataclasses.replace(d.accesses["mm2"], inputs=(("g#0", "g#9"), ("w2@sram.0",))))),
     r"memory plan of t0: instance 'mm2' uses unknown buffer 'g#9'"),
    (lambda d: dataclasses.replace(d, transfers=(dataclasses.replace(d.transfers[0], src_buffer="w3"),)),
     r"memory plan of t0: prefetch of 'w2' uses unknown buffer 'w3'"),
    (lambda d: dataclasses.replace(d, buffers=tuple(dataclasses.replace(b, level="vmem") if b.name == "y" else b
                                                    for b in d.buffers)),
     r"memory plan of t0: buffer 'y' is in unknown level 'vmem' \(levels: sram, dram\)"),
    (lambda d: dataclasses.replace(d, fast_level="l1"),
     r"memory plan of t0: unknown fast level 'l1' \(levels: sram, dram\)"),
    (lambda d: dataclasses.replace(d, slow_level="sram"),
     r"memory plan of t0: slow level 'sram' is not the main memory 'dram'"),
    (lambda d: dataclasses.replace(d, transfers=(dataclasses.replace(d.transfers[0], trigger_op="mm7"),)),
     r"memory plan of t0: prefetch into 'w2@sram.0' has trigger op 'mm7', which is not an instance of the plan"),
    (lambda d: dataclasses.replace(d, buffers=tuple(dataclasses.replace(b, address=448) if b.name == "h#1" else b
                                                    for b in d.buffers)),
     r"memory plan of t0: view 'h#1' \(\[448, 512\) over cycles \[0, 480\)\) is not inside 'h'"),
    (lambda d: dataclasses.replace(d, buffers=tuple(dataclasses.replace(b, address=4064) if b.name == "w2@sram.0"
                                                    else b for b in d.buffers)),
     r"memory plan of t0: buffer 'w2@sram.0' \[4064, 4128\) exceeds level 'sram' \(capacity 4096 B\)"),
])
def test_memory_plan_mismatches_are_named(edit, message):
    plan, graph, hw, mp = three_op_case()
    broken = MemoryPlan({"t0": edit(mp.devices["t0"])})
    with pytest.raises(ValueError, match=message):
        lower(plan, graph, hw, memory_plan=broken)


def test_plan_and_memory_plan_must_list_the_same_instances():
    plan, graph, hw, mp = three_op_case()
    unsplit = make_plan([o for o in plan.ops if o.name != "act#1"] + [PlacedOp("act", "t0", 0, 400, 80)])
    with pytest.raises(ValueError, match=r"op instance 'act' on t0 is not in the device's memory plan"):
        lower(unsplit, graph, hw, memory_plan=mp)
    missing = make_plan([o for o in plan.ops if o.name != "act#1"])
    with pytest.raises(ValueError, match=r"memory plan of t0 lists instances the plan does not place on t0: "
                                         r"\['act#1'\]"):
        lower(missing, graph, hw, memory_plan=mp)
    with pytest.raises(ValueError, match=r"memory plan of t9: no such device"):
        lower(plan, graph, hw, memory_plan=MemoryPlan({"t9": mp.devices["t0"]}))


def test_the_simulator_replays_the_hand_made_memory_plan():
    plan, graph, hw, mp = three_op_case()
    result = simulate({"t0": encode(lower(plan, graph, hw, memory_plan=mp)["t0"])})
    assert result.violations == ()
    assert result.makespan_cycles == 826
    assert compare_with_plan(result, plan) == []
    assert result.peak_bytes["t0"] == {"sram": 192, "dram": 512}


def test_the_simulator_replays_memory_planned_and_plain_devices_together():
    plan, graph, hw, mp = mixed_case()
    result = simulate({n: encode(p) for n, p in lower(plan, graph, hw, memory_plan=mp).items()})
    assert result.violations == ()
    assert result.makespan_cycles == 991


@pytest.mark.parametrize("case", [three_op_case, mixed_case])
def test_the_numeric_replay_of_the_memory_plan_equals_the_reference(case):
    # The kernels' operands (portion shapes, row views, fast copies, received copies) carry the
    # numbers: every whole tensor the binaries hold in main memory equals plain numpy on the graph.
    from planner.verify.compare import compare_numeric

    plan, graph, hw, mp = case()
    result = compare_numeric({n: encode(p) for n, p in lower(plan, graph, hw, memory_plan=mp).items()}, graph)
    assert result.ok and not result.missing_outputs
    assert "y" in {c.tensor for c in result.checks}
