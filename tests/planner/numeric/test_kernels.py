"""Kernels: hand-checked numbers, naive-loop references, errors and the dtype policy."""

import math

import numpy as np
import pytest

from planner.errors import UnsupportedError
from planner.graph.ir import GraphError
from planner.numeric.kernels import SUPPORTED_OP_TYPES, evaluate_op
from planner.isa.cost import DATA_MOVEMENT_OPS, MATRIX_OPS, VECTOR_OPS


def run(op_type, inputs, out_shape, attrs=None, dtype="fp32"):
    return evaluate_op(op_type, attrs or {}, inputs, [out_shape], [dtype])[0]


def f32(x):
    return np.asarray(x, dtype=np.float32)


def rnd(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------ coverage

def test_every_cost_model_type_but_task_has_a_kernel():
    assert set(SUPPORTED_OP_TYPES) == {*MATRIX_OPS, *VECTOR_OPS, *DATA_MOVEMENT_OPS}


# ------------------------------------------------------------------ matmul

def test_matmul_2x2_with_bias_by_hand():
    # [[1,2],[3,4]] @ [[5,6],[7,8]] = [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]] = [[19,22],[43,50]]
    # + bias [10, 20] on every row = [[29, 42], [53, 70]]
    y = run("matmul", [f32([[1, 2], [3, 4]]), f32([[5, 6], [7, 8]]), f32([10, 20])], (2, 2))
    assert y.dtype == np.float32
    assert y.tolist() == [[29, 42], [53, 70]]


def test_matmul_batched_a_shares_b():
    a, b = rnd((2, 3, 4)), rnd((4, 5), 1)
    y = run("matmul", [a, b], (2, 3, 5))
    for i in range(2):
        np.testing.assert_allclose(y[i], a[i].astype(np.float64) @ b, rtol=1e-6, atol=1e-6)


def test_matmul_batched_b_one_matrix_per_batch():
    a, b = rnd((2, 3, 4)), rnd((2, 4, 5), 1)
    y = run("matmul", [a, b], (2, 3, 5))
    np.testing.assert_allclose(y[1], a[1].astype(np.float64) @ b[1], rtol=1e-6, atol=1e-6)
    # Not the other batch's weights:
    assert not np.allclose(y[1], a[1] @ b[0])


def test_matmul_row_portions_give_the_same_bits():
    # Why float64 accumulation: a plan may compute a matmul in row portions (memory splits),
    # and the replay is compared with the whole-tensor reference at rtol 1e-5. K = 512 sums
    # in float32 differ by BLAS path (1-row portions go through gemv); in float64 they
    # round to identical float32 values.
    a, b = rnd((8, 512)), rnd((512, 96), 1)
    whole = run("matmul", [a, b], (8, 96))
    rows = np.concatenate([run("matmul", [a[i:i + 1], b], (1, 96)) for i in range(8)])
    halves = np.concatenate([run("matmul", [a[i:i + 4], b], (4, 96)) for i in (0, 4)])
    assert np.array_equal(whole, rows) and np.array_equal(whole, halves)


@pytest.mark.parametrize("op_type, attrs, shapes, out", [
    ("conv2d", {"stride": 2, "padding": 1}, [(4, 8, 9, 9), (16, 8, 3, 3)], (4, 16, 5, 5)),
    ("conv2d", {"padding": 1, "groups": 4}, [(4, 8, 5, 5), (8, 2, 3, 3)], (4, 8, 5, 5)),
    ("matmul", {}, [(4, 6, 256), (256, 32), (32,)], (4, 6, 32)),
    ("matmul", {}, [(4, 6, 64), (4, 64, 6)], (4, 6, 6)),
    ("softmax", {"axis": -1}, [(4, 3, 300)], (4, 3, 300)),
    ("layernorm", {"axis": -1}, [(4, 3, 300), (300,), (300,)], (4, 3, 300)),
    ("gelu", {}, [(4, 1000)], (4, 1000)),
    ("avgpool", {"kernel": 3, "stride": 2, "padding": 1}, [(4, 3, 9, 9)], (4, 3, 5, 5)),
    ("global_avgpool", {}, [(4, 64, 7, 7)], (4, 64, 1, 1)),
])
def test_dim0_portions_give_the_same_bits(op_type, attrs, shapes, out):
    # Memory plans split row-separable ops along dim 0 (docs/memory.md); every portion
    # must round to exactly the values of the whole.
    xs = [rnd(s, i) for i, s in enumerate(shapes)]
    whole = run(op_type, xs, out, attrs)

    def portion(a, b):  # the input rows a:b (and a batched matmul B's), weights whole
        split = [True, op_type == "matmul" and len(shapes[1]) == 3] + [False] * (len(xs) - 2)
        return [x[a:b] if s else x for x, s in zip(xs, split)]

    for cut in ([0, 1, 2, 3, 4], [0, 2, 4]):
        parts = [run(op_type, portion(a, b), (b - a, *out[1:]), attrs) for a, b in zip(cut, cut[1:])]
        assert np.array_equal(np.concatenate(parts), whole)


def test_read_only_inputs_are_not_written():
    x = np.frombuffer(rnd((1, 2, 4, 4)).tobytes(), np.float32).reshape(1, 2, 4, 4)
    w = np.frombuffer(rnd((2, 2, 3, 3), 1).tobytes(), np.float32).reshape(2, 2, 3, 3)
    assert not x.flags.writeable
    y = run("conv2d", [x, w], (1, 2, 4, 4), {"padding": 1})
    assert y.flags.writeable and y.flags.c_contiguous
    run("layernorm", [x], (1, 2, 4, 4), {"axis": 1})
    run("maxpool", [x], (1, 2, 2, 2), {"kernel": 2, "stride": 2})


def test_matmul_shape_errors():
    with pytest.raises(GraphError, match="K, N"):
        run("matmul", [rnd((2, 3)), rnd((4, 5))], (2, 5))
    with pytest.raises(GraphError, match="declared"):
        run("matmul", [rnd((2, 3)), rnd((3, 5))], (2, 6))
    with pytest.raises(GraphError, match="2 to 3 inputs"):
        run("matmul", [rnd((2, 3))], (2, 3))


# ------------------------------------------------------------------ conv2d

def naive_conv(x, w, stride, pad, groups, bias=None):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, f, oh, ow))
    fg = f // groups
    for b in range(n):
        for o in range(f):
            g = o // fg
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for ci in range(cg):
                        for u in range(kh):
                            for v in range(kw):
                                acc += xp[b, g * cg + ci, i * stride + u, j * stride + v] * w[o, ci, u, v]
                    y[b, o, i, j] = acc + (bias[o] if bias is not None else 0.0)
    return y


def test_conv2d_by_hand():
    # x = 1..9 in a 3x3 grid, a 2x2 kernel of ones, stride 1, no padding: each output is the
    # sum of a 2x2 block: 1+2+4+5 = 12, 2+3+5+6 = 16, 4+5+7+8 = 24, 5+6+8+9 = 28.
    x = f32(np.arange(1, 10).reshape(1, 1, 3, 3))
    y = run("conv2d", [x, np.ones((1, 1, 2, 2), np.float32)], (1, 1, 2, 2), {"stride": 1, "padding": 0})
    assert y.tolist() == [[[[12, 16], [24, 28]]]]
    # With padding 1 and stride 2: windows at rows/cols -1 and 1 -> corners of the padded grid:
    # top-left 1 (only x[0,0]), top-right 2+3 = 5, bottom-left 4+7 = 11, 5+6+8+9 = 28.
    y = run("conv2d", [x, np.ones((1, 1, 2, 2), np.float32)], (1, 1, 2, 2), {"stride": 2, "padding": 1})
    assert y.tolist() == [[[[1, 5], [11, 28]]]]


def test_conv2d_padding1_stride2_matches_naive_loop():
    x, w, b = rnd((2, 3, 7, 6)), rnd((4, 3, 3, 3), 1), rnd((4,), 2)
    y = run("conv2d", [x, w, b], (2, 4, 4, 3), {"stride": 2, "padding": 1, "groups": 1})
    np.testing.assert_allclose(y, naive_conv(x, w, 2, 1, 1, b), rtol=1e-5, atol=1e-5)


def test_grouped_conv_matches_naive_loop():
    x, w = rnd((1, 6, 5, 5)), rnd((4, 3, 3, 3), 1)  # 2 groups: 3 channels -> 2 filters each
    y = run("conv2d", [x, w], (1, 4, 5, 5), {"stride": 1, "padding": 1, "groups": 2})
    np.testing.assert_allclose(y, naive_conv(x, w, 1, 1, 2), rtol=1e-5, atol=1e-5)
    # Filter 0 sees only channels 0..2: changing channel 5 leaves it alone.
    x2 = x.copy()
    x2[:, 5] += 1
    y2 = run("conv2d", [x2, w], (1, 4, 5, 5), {"stride": 1, "padding": 1, "groups": 2})
    assert np.array_equal(y2[:, :2], y[:, :2]) and not np.array_equal(y2[:, 2:], y[:, 2:])


def test_depthwise_conv_and_list_attrs():
    x, w = rnd((1, 4, 6, 6)), rnd((4, 1, 3, 3), 1)
    y = run("conv2d", [x, w], (1, 4, 3, 3), {"stride": [2, 2], "padding": [1], "groups": 4})
    np.testing.assert_allclose(y, naive_conv(x, w, 2, 1, 4), rtol=1e-5, atol=1e-5)


def test_conv2d_errors():
    with pytest.raises(GraphError, match="groups=2"):
        run("conv2d", [rnd((1, 3, 4, 4)), rnd((2, 3, 1, 1))], (1, 2, 4, 4), {"groups": 2})
    with pytest.raises(GraphError, match="declared"):
        run("conv2d", [rnd((1, 3, 4, 4)), rnd((2, 3, 3, 3))], (1, 2, 4, 4), {"padding": 0})
    with pytest.raises(GraphError, match="one value per filter"):
        run("conv2d", [rnd((1, 3, 4, 4)), rnd((2, 3, 1, 1)), rnd((3,))], (1, 2, 4, 4))


# ------------------------------------------------------------------ elementwise

def test_binary_ops_broadcast():
    a, b = f32([[1, 2, 3], [4, 5, 6]]), f32([10, 20, 30])
    assert run("add", [a, b], (2, 3)).tolist() == [[11, 22, 33], [14, 25, 36]]
    assert run("sub", [a, b], (2, 3)).tolist() == [[-9, -18, -27], [-6, -15, -24]]
    assert run("mul", [a, f32([[2], [3]])], (2, 3)).tolist() == [[2, 4, 6], [12, 15, 18]]
    with pytest.raises(GraphError, match="broadcast"):
        run("add", [a, f32([1, 2])], (2, 3))
    with pytest.raises(GraphError, match="declared"):
        run("add", [a, b], (3, 2))


def test_unary_ops_by_hand():
    x = f32([-2.0, 0.0, 1.0])
    assert run("relu", [x], (3,)).tolist() == [0, 0, 1]
    # gelu, tanh form: 0.5 * 1 * (1 + tanh(sqrt(2/pi) * (1 + 0.044715))) = 0.841192
    g1 = 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715))
    gm2 = 0.5 * -2 * (1 + math.tanh(math.sqrt(2 / math.pi) * (-2 - 0.044715 * 8)))
    np.testing.assert_allclose(run("gelu", [x], (3,)), [gm2, 0.0, g1], rtol=1e-6)
    assert abs(g1 - 0.841192) < 1e-6  # differs from the erf form 0.841345
    np.testing.assert_allclose(run("sigmoid", [x], (3,)), [1 / (1 + math.e ** 2), 0.5, 1 / (1 + math.e ** -1)],
                               rtol=1e-6)
    np.testing.assert_allclose(run("tanh", [x], (3,)), np.tanh([-2.0, 0.0, 1.0]), rtol=1e-6)


def test_sigmoid_saturates_without_overflow():
    with np.errstate(all="raise"):
        y = run("sigmoid", [f32([-1000.0, 1000.0])], (2,))
    assert y.tolist() == [0.0, 1.0]


# ------------------------------------------------------------------ softmax, layernorm

def test_softmax_by_hand_and_rows_sum_to_one():
    # exp(0), exp(ln 2), exp(ln 3) = 1, 2, 3 -> 1/6, 2/6, 3/6; shifting a row changes nothing.
    x = f32([[0.0, math.log(2), math.log(3)], [100.0, 100 + math.log(2), 100 + math.log(3)]])
    y = run("softmax", [x], (2, 3), {"axis": -1})
    np.testing.assert_allclose(y, [[1 / 6, 2 / 6, 3 / 6]] * 2, rtol=1e-5)
    r = run("softmax", [rnd((4, 7)) * 10], (4, 7))  # default axis -1
    np.testing.assert_allclose(r.sum(axis=-1), 1.0, rtol=1e-6)


def test_softmax_axis0():
    x = rnd((3, 5))
    y = run("softmax", [x], (3, 5), {"axis": 0})
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(y, e / e.sum(axis=0), rtol=1e-6)
    with pytest.raises(GraphError, match="out of range"):
        run("softmax", [x], (3, 5), {"axis": 2})


def test_layernorm_by_hand():
    # [1, 2, 3]: mean 2, biased variance (1 + 0 + 1)/3 = 2/3 -> (x - 2) / sqrt(2/3 + 1e-5)
    y = run("layernorm", [f32([[1, 2, 3]])], (1, 3), {"axis": -1})
    s = math.sqrt(2 / 3 + 1e-5)
    np.testing.assert_allclose(y, [[-1 / s, 0, 1 / s]], rtol=1e-6)
    # gamma and beta: y * gamma + beta; epsilon from the attr.
    y = run("layernorm", [f32([[1, 2, 3]]), f32([1, 2, 3]), f32([0, 1, 0])], (1, 3),
            {"axis": -1, "epsilon": 0.5})
    s = math.sqrt(2 / 3 + 0.5)
    np.testing.assert_allclose(y, [[-1 / s, 1, 3 / s]], rtol=1e-6)


def test_layernorm_mean_zero_variance_one():
    x = rnd((2, 5, 64)) * 7 + 3
    y = run("layernorm", [x, np.ones(64, np.float32), np.zeros(64, np.float32)], (2, 5, 64), {"axis": 2})
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-6)
    np.testing.assert_allclose(y.var(axis=-1), 1, rtol=1e-3)


def test_layernorm_over_trailing_axes_and_bad_gamma():
    x = rnd((2, 3, 4))
    y = run("layernorm", [x], (2, 3, 4), {"axis": 1})  # ONNX: normalise axes 1 and 2 together
    np.testing.assert_allclose(y.reshape(2, -1).mean(axis=1), 0, atol=1e-6)
    with pytest.raises(GraphError, match="gamma"):
        run("layernorm", [x, np.ones(3, np.float32)], (2, 3, 4))


# ------------------------------------------------------------------ pools

def naive_pool(x, k, s, p, mode):
    n, c, h, w = x.shape
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    y = np.zeros((n, c, oh, ow))
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    cells = [x[b, ch, r, q]
                             for r in range(i * s - p, i * s - p + k)
                             for q in range(j * s - p, j * s - p + k)
                             if 0 <= r < h and 0 <= q < w]
                    y[b, ch, i, j] = max(cells) if mode == "max" else sum(cells) / len(cells)
    return y


@pytest.mark.parametrize("k, s, p", [(3, 2, 1), (2, 2, 0), (3, 1, 1), (2, 1, 1)])
def test_pools_match_naive_loop(k, s, p):
    x = rnd((2, 3, 7, 6)) - 1.0  # mostly negative: a max that counted zero padding would show
    attrs = {"kernel": k, "stride": s, "padding": p}
    shape = (2, 3, (7 + 2 * p - k) // s + 1, (6 + 2 * p - k) // s + 1)
    np.testing.assert_allclose(run("maxpool", [x], shape, attrs), naive_pool(x, k, s, p, "max"), rtol=1e-6)
    np.testing.assert_allclose(run("avgpool", [x], shape, attrs), naive_pool(x, k, s, p, "avg"), rtol=1e-6)


def test_avgpool_excludes_padding_by_hand():
    # 2x2 grid [[1, 2], [3, 4]], kernel 2, stride 1, padding 1 -> 3x3 windows; the corner
    # windows hold one real cell (1, 2, 3, 4), the edges two ((1+2)/2 ...), the centre four.
    x = f32([[[[1, 2], [3, 4]]]])
    y = run("avgpool", [x], (1, 1, 3, 3), {"kernel": 2, "stride": 1, "padding": 1})
    assert y[0, 0].tolist() == [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]
    y = run("maxpool", [-x], (1, 1, 3, 3), {"kernel": 2, "stride": 1, "padding": 1})
    assert y[0, 0].tolist() == [[-1, -1, -2], [-1, -1, -2], [-3, -3, -4]]


def test_pool_errors():
    with pytest.raises(GraphError, match="padding"):
        run("maxpool", [rnd((1, 1, 4, 4))], (1, 1, 6, 6), {"kernel": 2, "stride": 1, "padding": 2})
    with pytest.raises(GraphError, match="N,C,H,W"):
        run("avgpool", [rnd((4, 4))], (3, 3), {"kernel": 2})


def test_global_avgpool():
    x = f32(np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2))
    y = run("global_avgpool", [x], (2, 3, 1, 1))
    assert y[0, 0, 0, 0] == 1.5 and y[1, 2, 0, 0] == (20 + 21 + 22 + 23) / 4


# ------------------------------------------------------------------ data movement

def test_reshape_transpose_round_trips():
    x = rnd((2, 3, 4))
    r = run("reshape", [x], (6, 4), {"shape": [6, 4]})
    assert np.array_equal(run("reshape", [r], (2, 3, 4)), x)
    t = run("transpose", [x], (4, 2, 3), {"perm": [2, 0, 1]})
    assert t[1, 0, 2] == x[0, 2, 1] and t.flags.c_contiguous
    assert np.array_equal(run("transpose", [t], (2, 3, 4), {"perm": [1, 2, 0]}), x)
    assert run("transpose", [x], (4, 3, 2)).shape == (4, 3, 2)  # default: reversed axes
    with pytest.raises(GraphError, match="reshape"):
        run("reshape", [x], (5, 5))
    with pytest.raises(GraphError, match="permutation"):
        run("transpose", [x], (2, 3, 4), {"perm": [0, 0, 1]})


def test_concat_split_round_trip():
    parts = [rnd((2, 1, 3), 0), rnd((2, 2, 3), 1), rnd((2, 3, 3), 2)]
    cat = run("concat", parts, (2, 6, 3), {"axis": 1})
    assert np.array_equal(cat[:, 1:3], parts[1])
    back = evaluate_op("split", {"axis": 1, "sizes": [1, 2, 3]}, [cat], [(2, 1, 3), (2, 2, 3), (2, 3, 3)],
                       ["fp32"] * 3)
    assert all(np.array_equal(a, b) for a, b in zip(back, parts))
    # sizes are optional (the outputs' shapes say them), but must agree when given.
    back = evaluate_op("split", {"axis": -2}, [cat], [(2, 4, 3), (2, 2, 3)], ["fp32"] * 2)
    assert np.array_equal(back[1], cat[:, 4:])
    with pytest.raises(GraphError, match="differ"):
        evaluate_op("split", {"axis": 1, "sizes": [3, 3]}, [cat], [(2, 4, 3), (2, 2, 3)], ["fp32"] * 2)
    with pytest.raises(GraphError, match="add up"):
        evaluate_op("split", {"axis": 1}, [cat], [(2, 4, 3), (2, 1, 3)], ["fp32"] * 2)
    with pytest.raises(GraphError, match="do not fit"):
        run("concat", [parts[0], rnd((3, 1, 3))], (5, 1, 3), {"axis": 1})


# ------------------------------------------------------------------ dtypes, errors, determinism

def test_fp16_computed_wide_then_rounded():
    # 2048 + 1 + 1: in fp16 steps 2048 + 1 = 2049 rounds back to 2048 (spacing 2, ties to
    # even), twice, giving 2048; computed wide it is 2050, which fp16 holds exactly.
    a = np.array([[2048.0, 1.0, 1.0]], np.float16)
    b = np.ones((3, 1), np.float16)
    y = run("matmul", [a, b], (1, 1), dtype="fp16")
    assert y.dtype == np.float16 and y[0, 0] == np.float16(2050.0)
    assert run("relu", [f32([1.5])], (1,), dtype="fp64").dtype == np.float64


@pytest.mark.parametrize("dtype", ["bf16", "fp8", "int8", "int32", "bool"])
def test_unsupported_output_dtypes(dtype):
    with pytest.raises(UnsupportedError, match=f"dtype '{dtype}'"):
        run("relu", [f32([1.0])], (1,), dtype=dtype)


def test_unsupported_input_dtype():
    with pytest.raises(UnsupportedError, match="int32"):
        run("relu", [np.array([1], np.int32)], (1,))


def test_task_unknown_and_fallback_ops_raise():
    with pytest.raises(UnsupportedError, match="op type 'task': it has no arithmetic meaning"):
        evaluate_op("task", {}, [], [], [])
    with pytest.raises(UnsupportedError, match="op type 'lrn': unknown op type"):
        evaluate_op("lrn", {}, [f32([1.0])], [(1,)], ["fp32"])
    with pytest.raises(UnsupportedError, match="ONNX op 'LRN'"):
        evaluate_op("relu", {"onnx_op": "LRN", "fallback": True}, [f32([1.0])], [(1,)], ["fp32"])


def test_results_are_fresh_deterministic_arrays():
    x = rnd((3, 4))
    y1 = run("reshape", [x], (3, 4))
    assert not np.shares_memory(y1, x)
    a, b = rnd((5, 7)), rnd((7, 3), 1)
    outs = [run("matmul", [a, b], (5, 3)).tobytes() for _ in range(3)]
    assert outs[0] == outs[1] == outs[2]


def test_max_pool_equals_the_reduction_over_sliding_windows():
    # the shifted-slice maximum against its definition (a max over each window's view),
    # NaN and infinities included, over kernels, strides and paddings
    from numpy.lib.stride_tricks import sliding_window_view

    from planner.numeric.kernels import _max_over_windows

    rng = np.random.default_rng(7)
    for trial in range(60):
        kh, kw, sh, sw = (int(v) for v in rng.integers(1, 4, size=4))
        ph, pw = int(rng.integers(0, kh)), int(rng.integers(0, kw))
        h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
        dtype = (np.float16, np.float32, np.float64)[trial % 3]
        x = rng.standard_normal((2, 3, h, w)).astype(dtype)
        x.flat[rng.integers(0, x.size, size=3)] = (np.nan, np.inf, -np.inf)
        padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
        oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
        want = sliding_window_view(padded, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :oh, :ow].max(axis=(4, 5))
        got = _max_over_windows(padded, kh, kw, sh, sw, oh, ow)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=True)
