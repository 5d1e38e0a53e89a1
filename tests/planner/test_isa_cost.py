"""Cost model: exact cycles computed by hand for each formula."""

from __future__ import annotations

import pytest

from planner.errors import UnsupportedError
from planner.graph.ir import Graph, GraphError, Op, Tensor
from planner.hardware import Device, Hardware
from planner.isa import get_profile, op_cost, op_duration_cycles, systolic_cycles

TPU1, TPU4, EDGE, GEN = (get_profile(n) for n in ("tpu-v1", "tpu-v4", "edge-npu", "generic"))


def one_op(op_type, inputs, outputs, attrs=None, cycles=None):
    """A graph with one op; inputs/outputs are (name, shape, dtype) triples."""
    tensors = [Tensor(n, s, d, "input") for n, s, d in inputs] + [Tensor(n, s, d, "output") for n, s, d in outputs]
    op = Op("op", op_type, tuple(n for n, _, _ in inputs), tuple(n for n, _, _ in outputs),
            attrs=attrs or {}, cycles=cycles or {})
    g = Graph(tensors, [op])
    return g.ops["op"], g


def test_matmul_256_cube_on_tpu_v1():
    op, g = one_op("matmul", [("a", (256, 256), "int8"), ("b", (256, 256), "int8")], [("y", (256, 256), "int8")])
    c = op_cost(op, g, TPU1)
    # Compute: (2*256 + 256 + 256 - 2) * ceil(256/256) * ceil(256/256) = 1022.
    assert c.compute_cycles == 1022
    # Memory: 3 * 65536 B = 196608 B over DDR3 34 GB/s at 700 MHz: ceil(196608 * 7e8 / 34e9) = 4048.
    assert c.memory_cycles == 4048 and c.cycles == 4048
    assert c.macs == 256**3 and c.flops == 2 * 256**3
    assert (c.bytes_read, c.bytes_written, c.unit) == (131072, 65536, "matrix")
    assert c.operands == (256, 256, 256, 1)


def test_matmul_batched_activation_folds_batch_into_the_stream():
    # A[2, 64, 300] x B[300, 200] fp16 on tpu-v4 (128x128): T = 2*64 = 128 streamed rows,
    # (2*128 + 128 + 128 - 2) * ceil(300/128) * ceil(200/128) = 510 * 3 * 2 = 3060.
    op, g = one_op("matmul", [("a", (2, 64, 300), "fp16"), ("b", (300, 200), "fp16")], [("y", (2, 64, 200), "fp16")])
    c = op_cost(op, g, TPU4)
    assert c.compute_cycles == 3060
    # Bytes: 76800 + 120000 + 51200 = 248000 over 1200 GB/s at 1.05 GHz = 217 exactly.
    assert c.memory_cycles == 217 and c.cycles == 3060
    assert c.macs == 128 * 300 * 200 and c.operands == (128, 300, 200, 1)


def test_matmul_batched_weights_repeat_the_folds():
    # A[4, 8, 16] x B[4, 16, 8] on edge-npu (32x32): 4 * (64 + 32 + 8 - 2) * 1 * 1 = 408;
    # bytes 2048 + 2048 + 1024 = 5120 over 17 GB/s at 1 GHz: ceil(301.2) = 302.
    op, g = one_op("matmul", [("a", (4, 8, 16), "fp32"), ("b", (4, 16, 8), "fp32")], [("y", (4, 8, 8), "fp32")])
    c = op_cost(op, g, EDGE)
    assert (c.compute_cycles, c.memory_cycles, c.cycles) == (408, 302, 408)
    assert c.operands == (8, 16, 8, 4) and c.macs == 4 * 8 * 16 * 8


def test_matmul_with_bias_is_accepted():
    op, g = one_op("matmul", [("a", (256, 256), "int8"), ("b", (256, 256), "int8"), ("bias", (256,), "int8")],
                   [("y", (256, 256), "int8")])
    c = op_cost(op, g, TPU1)
    assert c.compute_cycles == 1022 and c.bytes_read == 131072 + 256


def test_matmul_shape_errors():
    op, g = one_op("matmul", [("a", (4, 5), "fp32"), ("b", (6, 7), "fp32")], [("y", (4, 7), "fp32")])
    with pytest.raises(GraphError, match=r"matmul needs A\[..., M, K\] and B\[..., K, N\]"):
        op_cost(op, g, TPU1)


def test_conv2d_im2col():
    # x[1,3,32,32] * w[16,3,3,3] -> [1,16,32,32] on tpu-v4: Sr = 3*3*3 = 27, Sc = 16,
    # T = 1*32*32 = 1024: (256 + 128 + 1024 - 2) * 1 * 1 = 1406.
    op, g = one_op("conv2d", [("x", (1, 3, 32, 32), "fp32"), ("w", (16, 3, 3, 3), "fp32")],
                   [("y", (1, 16, 32, 32), "fp32")], attrs={"stride": 1, "padding": 1, "groups": 1})
    c = op_cost(op, g, TPU4)
    # Bytes 12288 + 1728 + 65536 = 79552 -> ceil(79552 * 1.05e9 / 1.2e12) = ceil(69.6) = 70.
    assert (c.compute_cycles, c.memory_cycles, c.cycles) == (1406, 70, 1406)
    assert c.macs == 1024 * 27 * 16 and c.operands == (1024, 27, 16, 1)


def test_grouped_conv2d_multiplies_by_groups():
    # x[1,8,10,10] * w[8,2,3,3], groups 4 -> [1,8,8,8] on edge-npu: per group Sr = 2*9 = 18,
    # Sc = 8/4 = 2, T = 64: (64 + 32 + 64 - 2) = 158, times 4 groups = 632.
    op, g = one_op("conv2d", [("x", (1, 8, 10, 10), "int8"), ("w", (8, 2, 3, 3), "int8")],
                   [("y", (1, 8, 8, 8), "int8")], attrs={"stride": 1, "padding": 0, "groups": 4})
    c = op_cost(op, g, EDGE)
    # Bytes 800 + 144 + 512 = 1456 over 17 GB/s: ceil(85.6) = 86.
    assert (c.compute_cycles, c.memory_cycles, c.cycles) == (632, 86, 632)
    assert c.macs == 64 * 8 * 2 * 9  # N*OH*OW * F * C/g * KH*KW


def test_conv2d_output_must_be_the_computed_shape():
    # x[2,4,9,9], w[6,4,3,3], stride 2, padding 1: OH = (9 + 2 - 3)//2 + 1 = 5; T = 2*25 = 50.
    op, g = one_op("conv2d", [("x", (2, 4, 9, 9), "fp32"), ("w", (6, 4, 3, 3), "fp32")],
                   [("y", (2, 6, 5, 5), "fp32")], attrs={"stride": 2, "padding": 1})
    assert op_cost(op, g, EDGE).operands == (50, 36, 6, 1)
    # The same values flattened to [2, 150] are not what conv2d computes: the numeric reference
    # refuses that output, so the cost model (which shares its shape contract) does too.
    op, g = one_op("conv2d", [("x", (2, 4, 9, 9), "fp32"), ("w", (6, 4, 3, 3), "fp32")],
                   [("y", (2, 150), "fp32")], attrs={"stride": 2, "padding": 1})
    with pytest.raises(GraphError, match=r"computes shape \(2, 6, 5, 5\) but the output is declared \(2, 150\)"):
        op_cost(op, g, EDGE)


def test_softmax_compute_and_memory_bound():
    op, g = one_op("softmax", [("x", (128, 1000), "fp16")], [("y", (128, 1000), "fp16")], attrs={"axis": -1})
    # tpu-v1: ceil(128000/256) = 500 passes * 5 = 2500; bytes 512000 over DDR3: ceil(10541.2) = 10542.
    c1 = op_cost(op, g, TPU1)
    assert (c1.compute_cycles, c1.memory_cycles, c1.cycles, c1.unit) == (2500, 10542, 10542, "vector")
    # tpu-v4: ceil(128000/1024) = 125 * 5 = 625; bytes 512000 over HBM: 448 exactly.
    c4 = op_cost(op, g, TPU4)
    assert (c4.compute_cycles, c4.memory_cycles, c4.cycles) == (625, 448, 625)
    assert c4.flops == 5 * 128000 and c4.macs == 0


def test_elementwise_on_generic():
    # 100 elements on 1 lane: 100 cycles; 800 B at 1000 GB/s at 1 GHz: ceil(0.8) = 1.
    op, g = one_op("relu", [("x", (100,), "fp32")], [("y", (100,), "fp32")])
    c = op_cost(op, g, GEN)
    assert (c.compute_cycles, c.memory_cycles, c.cycles) == (100, 1, 100)
    op, g = one_op("gelu", [("x", (100,), "fp32")], [("y", (100,), "fp32")])
    assert op_cost(op, g, GEN).cycles == 400  # factor 4


def test_pools_by_window():
    # maxpool 3x3 stride 2: [1,64,56,56] -> [1,64,28,28]: 50176 outputs on tpu-v4:
    # ceil(50176/1024) = 49 * 9 = 441; bytes 802816 + 200704 = 1003520 -> ceil(878.08) = 879.
    op, g = one_op("maxpool", [("x", (1, 64, 56, 56), "fp32")], [("y", (1, 64, 28, 28), "fp32")],
                   attrs={"kernel": 3, "stride": 2, "padding": 1})
    c = op_cost(op, g, TPU4)
    assert (c.compute_cycles, c.memory_cycles, c.cycles) == (441, 879, 879)
    assert c.operands == (50176, 9)
    # global average pool [1,512,7,7] -> [1,512,1,1]: ceil(512/1024) = 1 * 49 = 49;
    # bytes 100352 + 2048 = 102400 -> ceil(89.6) = 90.
    op, g = one_op("global_avgpool", [("x", (1, 512, 7, 7), "fp32")], [("y", (1, 512, 1, 1), "fp32")])
    c = op_cost(op, g, TPU4)
    assert (c.compute_cycles, c.memory_cycles, c.cycles) == (49, 90, 90)
    # avgpool with a [2, 2] kernel on generic: 4 outputs * 4 = 16 cycles.
    op, g = one_op("avgpool", [("x", (1, 1, 4, 4), "fp32")], [("y", (1, 1, 2, 2), "fp32")],
                   attrs={"kernel": [2, 2], "stride": 2})
    assert op_cost(op, g, GEN).cycles == 16


def test_data_movement():
    # transpose of 256x256 fp32 on tpu-v1 reads and writes 262144 B each:
    # ceil(524288 * 7e8 / 34e9) = ceil(10794.4) = 10795, on the dma unit.
    op, g = one_op("transpose", [("x", (256, 256), "fp32")], [("y", (256, 256), "fp32")], attrs={"perm": [1, 0]})
    c = op_cost(op, g, TPU1)
    assert (c.cycles, c.unit, c.operands) == (10795, "dma", (524288,))
    # concat of two 160 B tensors into 320 B on generic: 640 B at 1000 B/cycle -> 1.
    tensors = [Tensor("a", (10, 4), kind="input"), Tensor("b", (10, 4), kind="input"),
               Tensor("y", (20, 4), kind="output")]
    g = Graph(tensors, [Op("op", "concat", ("a", "b"), ("y",), attrs={"axis": 0})])
    assert op_cost(g.ops["op"], g, GEN).cycles == 1
    # reshape is a view.
    op, g = one_op("reshape", [("x", (256, 256), "fp32")], [("y", (65536,), "fp32")])
    c = op_cost(op, g, TPU1)
    assert (c.cycles, c.bytes_read, c.bytes_written) == (0, 0, 0)


def test_explicit_cycles_and_tasks():
    op, g = one_op("task", [("x", (4,), "fp32")], [("y", (4,), "fp32")], cycles={"big": 77})
    c = op_cost(op, g, TPU1, "big")
    assert (c.cycles, c.explicit, c.unit) == (77, True, "none")
    with pytest.raises(UnsupportedError, match="task op 'op'.*'small'"):
        op_cost(op, g, TPU1, "small")
    # A matmul with explicit cycles for a kind keeps its MACs but takes the given cycles.
    op, g = one_op("matmul", [("a", (256, 256), "int8"), ("b", (256, 256), "int8")], [("y", (256, 256), "int8")],
                   cycles={"big": 50})
    c = op_cost(op, g, TPU1, "big")
    assert (c.cycles, c.macs, c.unit, c.explicit) == (50, 256**3, "matrix", True)
    assert op_cost(op, g, TPU1, "other").cycles == 4048  # falls back to the cost model


def test_unknown_op_type_is_named():
    op, g = one_op("fft", [("x", (4,), "fp32")], [("y", (4,), "fp32")])
    with pytest.raises(UnsupportedError, match="'fft'"):
        op_cost(op, g, TPU1)


def test_duration_in_reference_cycles():
    op, g = one_op("matmul", [("a", (256, 256), "int8"), ("b", (256, 256), "int8")], [("y", (256, 256), "int8")])
    dev = Device("t0", "tpu", TPU1)
    # 4048 device cycles at 700 MHz on a 1 GHz timeline: ceil(4048 / 0.7) = ceil(5782.86) = 5783.
    assert op_duration_cycles(op, g, dev, Hardware((dev,), ())) == 5783


def test_systolic_formula_edges():
    # K and N just over one fold: ceil(257/256) = 2 in both: (512 + 256 + 1 - 2) * 4 = 3068.
    assert systolic_cycles(256, 256, t=1, k=257, n=257) == 3068
    assert systolic_cycles(256, 256, t=0, k=4, n=4) == 0
