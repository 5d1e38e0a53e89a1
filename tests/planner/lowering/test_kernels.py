"""Kernels: one per compute instruction of an op with arithmetic meaning, operands in buffers."""

from __future__ import annotations

import json

from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Device, Hardware, Link
from planner.isa import COMPUTE_OPCODES, DMA_STREAM, Opcode, decode, encode, get_profile, op_duration_cycles
from planner.lowering import lower
from planner.plan import PlacedOp, PlacedTransfer
from planner.simulator import simulate
from tests.planner.test_lowering import make_plan, two_device_case

GEN = get_profile("generic")


def check_kernels(outcome) -> int:
    """Every kernel against the graph and the plan: shapes, dtypes, attrs, buffer names. Returns the count."""
    graph, plan = outcome.graph, outcome.plan
    device_of = {o.name: o.device for o in plan.ops}
    count = 0
    for device, program in outcome.programs.items():
        kernels = {k.op: k for k in program.kernels}
        assert [k.op for k in program.kernels] == sorted(kernels)
        computes = [i for i in program.instructions if i.opcode in COMPUTE_OPCODES and i.stream != DMA_STREAM]
        assert set(kernels) == {i.op for i in computes if graph.ops[i.op].type != "task"}
        for ins in computes:
            k = kernels.get(ins.op)
            if k is None:
                continue
            op = graph.ops[ins.op]
            assert (k.type, json.loads(k.attrs_json)) == (op.type, json.loads(json.dumps(dict(op.attrs))))
            for tensor, operand in zip(op.inputs, k.inputs):
                t = graph.tensors[tensor]
                assert (operand.shape, operand.dtype) == (t.shape, t.dtype)
                (buf,) = operand.buffers
                producer = graph.producer(tensor)
                if producer is None or device_of[producer] == device:
                    assert program.buffers[buf] == tensor
                else:
                    assert program.buffers[buf] == f"{tensor}@{device_of[producer]}->{ins.op}"
                assert buf in ins.reads
            for tensor, operand in zip(op.outputs, k.outputs):
                assert operand.shape == graph.tensors[tensor].shape
                assert [program.buffers[b] for b in operand.buffers] == [tensor]
                assert operand.buffers[0] in ins.writes
            count += 1
    return count


def test_kernels_of_the_shipped_cnn(cnn_outcome):
    # 29 ops, none a task: 29 kernels across the TPU and the NPU, some reading received copies.
    assert check_kernels(cnn_outcome) == 29
    received = [name for p in cnn_outcome.programs.values() for k in p.kernels for o in k.inputs
                for name in (p.buffers[b] for b in o.buffers) if "@" in name]
    assert received  # the plan moves activations between the devices
    for name, program in cnn_outcome.programs.items():
        assert decode(encode(program)).kernels == program.kernels


def test_kernels_of_the_shipped_mlp(mlp_outcome):
    assert check_kernels(mlp_outcome) == 7
    kernels = [k for p in mlp_outcome.programs.values() for k in p.kernels]
    fc0 = next(k for k in kernels if k.op == "mlp/fc0")
    # mlp generator: x[8, 1024] fp16 times w[1024, 1024].
    assert [(o.shape, o.dtype) for o in fc0.inputs] == [((8, 1024), "fp16"), ((1024, 1024), "fp16")]


def split_add_case():
    """s = split(x[4,8]) -> (y1, y2) on d0; c = y1 + y2 on d1; one transfer carries both.

    Generic devices (1 GHz, 1 lane, 1000 GB/s): s copies 128 + 128 B: ceil(256e9/1e12) = 1 cycle;
    c: 16 elements on one lane = 16 cycles (memory 192 B: 1). The link (100 GB/s, 2 cycles)
    carries 128 B in 2 + ceil(128e9/100e9) = 4 cycles: s [0,1), transfer [1,5), c [5,21).
    """
    tensors = [Tensor("x", (4, 8), kind="input"), Tensor("y1", (2, 8)), Tensor("y2", (2, 8)),
               Tensor("z", (2, 8), kind="output")]
    ops = [Op("s", "split", ("x",), ("y1", "y2"), attrs={"axis": 0}), Op("c", "add", ("y1", "y2"), ("z",))]
    graph = Graph(tensors, ops)
    hw = Hardware((Device("d0", "g", GEN), Device("d1", "g", GEN)), (Link("l0", ("d0", "d1"), 100 * 10**9, 2),))
    assert [op_duration_cycles(graph.ops[n], graph, hw.devices[0], hw) for n in ("s", "c")] == [1, 16]
    plan = make_plan([PlacedOp("s", "d0", 0, 0, 1), PlacedOp("c", "d1", 0, 5, 16)],
                     [PlacedTransfer("s", "c", ("y1", "y2"), 128, "d0", "d1", "l0", 1, 4)])
    return plan, graph, hw


def test_each_transferred_tensor_gets_its_own_received_buffer():
    plan, graph, hw = split_add_case()
    programs = lower(plan, graph, hw)
    d0, d1 = programs["d0"], programs["d1"]
    send = next(i for i in d0.instructions if i.opcode == Opcode.SEND)
    recv = next(i for i in d1.instructions if i.opcode == Opcode.RECV)
    assert [d0.buffers[b] for b in send.reads] == ["y1", "y2"]
    assert [d1.buffers[b] for b in recv.writes] == ["y1@d0->c", "y2@d0->c"]
    assert (send.b, recv.b, send.c, recv.c) == (128, 128, 0, 0)  # bytes stay the transfer's sum
    sizes = {d1.buffers[i.a]: i.c for i in d1.instructions if i.opcode == Opcode.ALLOC}
    assert sizes == {"y1@d0->c": 64, "y2@d0->c": 64, "z": 64}
    (c,) = d1.kernels
    assert (c.op, c.type, c.attrs_json) == ("c", "add", "{}")
    assert [(o.shape, [d1.buffers[b] for b in o.buffers]) for o in c.inputs] == [
        ((2, 8), ["y1@d0->c"]), ((2, 8), ["y2@d0->c"])]
    (s,) = d0.kernels
    assert s.attrs_json == '{"axis":0}'
    assert [d0.buffers[b] for o in s.outputs for b in o.buffers] == ["y1", "y2"]
    # The DMA-unit split keeps its main -> main operands; the add reads both copies.
    split = next(i for i in d0.instructions if i.op == "s" and i.opcode == Opcode.DMA)
    assert (split.a, split.b, split.c) == (0, 0, 256)
    add = next(i for i in d1.instructions if i.op == "c" and i.opcode == Opcode.VECTOR)
    assert [d1.buffers[b] for b in add.reads] == ["y1@d0->c", "y2@d0->c"]
    assert simulate({n: encode(p) for n, p in programs.items()}).violations == ()


def test_a_tensor_read_twice_appears_in_both_operands():
    tensors = [Tensor("x", (4,), kind="input"), Tensor("y", (4,), kind="output")]
    graph = Graph(tensors, [Op("sq", "mul", ("x", "x"), ("y",))])
    hw = Hardware((Device("d0", "g", GEN),), ())
    plan = make_plan([PlacedOp("sq", "d0", 0, 0, op_duration_cycles(graph.ops["sq"], graph, hw.devices[0], hw))])
    program = lower(plan, graph, hw)["d0"]
    (k,) = program.kernels
    assert k.inputs[0].buffers == k.inputs[1].buffers == (program.buffers.index("x"),)
    mul = next(i for i in program.instructions if i.op == "sq" and i.opcode == Opcode.VECTOR)
    assert mul.reads == (program.buffers.index("x"),)


def test_tasks_have_no_kernel_and_control_edges_carry_no_tensor():
    # two_device_case is all tasks: no kernels. A control edge a -> e (after:) from d0 to d1
    # travels as a zero-byte transfer whose zero-byte copy e reads.
    plan, graph, hw = two_device_case()
    assert all(p.kernels == () for p in lower(plan, graph, hw).values())
    g2 = Graph([], [Op("a", "task", cycles={"g": 4}), Op("e", "task", after=("a",), cycles={"g": 3})])
    plan2 = make_plan([PlacedOp("a", "d0", 0, 0, 4), PlacedOp("e", "d1", 0, 6, 3)],
                      [PlacedTransfer("a", "e", (), 0, "d0", "d1", "l0", 4, 2)])
    programs = lower(plan2, g2, hw)
    d1 = programs["d1"]
    recv = next(i for i in d1.instructions if i.opcode == Opcode.RECV)
    assert [d1.buffers[b] for b in recv.writes] == ["after:a@d0->e"] and recv.b == 0
    task = next(i for i in d1.instructions if i.opcode == Opcode.TASK)
    assert task.reads == recv.writes
    send = next(i for i in programs["d0"].instructions if i.opcode == Opcode.SEND)
    assert send.reads == ()
    assert simulate({n: encode(p) for n, p in programs.items()}).violations == ()


def test_a_kernel_op_reads_a_control_token_from_another_device():
    # relu e runs after task a of another device (after: only, no data): its VECTOR reads the
    # zero-byte token besides its operand, and the replay accepts that (it used to report the
    # instruction's reads disagreeing with its kernel's operands: exit 3 on `plan solve`).
    plan, graph, hw = two_device_case()
    g2 = Graph([Tensor("x", (8,), kind="input"), Tensor("y", (8,), kind="output")],
               [Op("a", "task", cycles={"g": 4}), Op("e", "relu", ("x",), ("y",), after=("a",))])
    relu = op_duration_cycles(g2.ops["e"], g2, hw.devices[1], hw)
    plan2 = make_plan([PlacedOp("a", "d0", 0, 0, 4), PlacedOp("e", "d1", 0, 6, relu)],
                      [PlacedTransfer("a", "e", (), 0, "d0", "d1", "l0", 4, 2)])
    d1 = lower(plan2, g2, hw)["d1"]
    vector = next(i for i in d1.instructions if i.op == "e" and i.opcode in COMPUTE_OPCODES)
    assert sorted(d1.buffers[b] for b in vector.reads) == ["after:a@d0->e", "x"]
    (k,) = d1.kernels
    assert [d1.buffers[b] for o in k.inputs for b in o.buffers] == ["x"]
    programs = lower(plan2, g2, hw)
    assert simulate({n: encode(p) for n, p in programs.items()}).violations == ()


def test_an_op_with_explicit_cycles_keeps_its_kernel():
    # A matmul whose device kind gives its cycles runs as a TASK but still computes a matmul.
    tensors = [Tensor("a", (2, 3), kind="input"), Tensor("b", (3, 4), kind="weight"),
               Tensor("y", (2, 4), kind="output")]
    graph = Graph(tensors, [Op("mm", "matmul", ("a", "b"), ("y",), cycles={"g": 7})])
    hw = Hardware((Device("d0", "g", GEN),), ())
    program = lower(make_plan([PlacedOp("mm", "d0", 0, 0, 7)]), graph, hw)["d0"]
    assert [i.opcode for i in program.instructions if i.op == "mm" and i.opcode in COMPUTE_OPCODES] == [Opcode.TASK]
    (k,) = program.kernels
    assert [o.shape for o in (*k.inputs, *k.outputs)] == [(2, 3), (3, 4), (2, 4)]
