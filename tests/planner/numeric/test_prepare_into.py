"""prepare_into (the numeric replay's in-place kernel steps) writes exactly evaluate_op's bits."""

from __future__ import annotations

import numpy as np
import pytest

from planner.errors import UnsupportedError
from planner.graph.ir import GraphError
from planner.numeric.kernels import evaluate_op, prepare_into


def rnd(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


CASES = [  # (op type, attrs, input shapes, output shape): the fast paths and the general one
    ("add", {}, [(4, 8), (8,)], (4, 8)),
    ("sub", {}, [(4, 8), (4, 8)], (4, 8)),
    ("mul", {}, [(2, 4, 8), (1, 8)], (2, 4, 8)),
    ("relu", {}, [(3, 5)], (3, 5)),
    ("matmul", {}, [(2, 3, 16), (16, 8)], (2, 3, 8)),
    ("matmul", {}, [(3, 16), (16, 8), (8,)], (3, 8)),
    ("matmul", {}, [(2, 3, 16), (2, 16, 8)], (2, 3, 8)),
    ("transpose", {"perm": [0, 2, 1]}, [(2, 3, 4)], (2, 4, 3)),
    ("reshape", {}, [(2, 3, 4)], (6, 4)),
    ("softmax", {"axis": -1}, [(4, 7)], (4, 7)),
    ("layernorm", {"axis": -1}, [(4, 8), (8,), (8,)], (4, 8)),
    ("gelu", {}, [(4, 8)], (4, 8)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type,attrs,shapes,out", CASES)
def test_same_bits_as_evaluate_op(op_type, attrs, shapes, out, dtype):
    xs = [rnd(s, i, dtype) for i, s in enumerate(shapes)]
    xs[0].flat[0] = np.nan  # NaN propagates the same way
    ir = "fp32" if dtype == np.float32 else "fp64"
    want = evaluate_op(op_type, attrs, xs, [out], [ir])[0]
    y = np.full(out, 7.0, dtype)
    step = prepare_into(op_type, attrs, xs, [y])
    with np.errstate(all="ignore"):
        step()
    assert y.tobytes() == want.tobytes()
    xs[0][...] = 1.0  # the step reads the inputs' current values on every call
    want = evaluate_op(op_type, attrs, xs, [out], [ir])[0]
    step()
    assert y.tobytes() == want.tobytes()


def test_split_into_several_outputs():
    x, a, b = rnd((5, 2)), np.zeros((2, 2), np.float32), np.zeros((3, 2), np.float32)
    prepare_into("split", {"axis": 0}, [x], [a, b])()
    assert np.array_equal(a, x[:2]) and np.array_equal(b, x[2:])


def test_errors():
    with pytest.raises(UnsupportedError, match="task"):
        prepare_into("task", {}, [], [])
    with pytest.raises(GraphError, match="matmul needs"):  # K = 4 vs 5: checked when prepared
        prepare_into("matmul", {}, [rnd((3, 4)), rnd((5, 2))], [np.zeros((3, 2), np.float32)])
    with pytest.raises(GraphError, match=r"computes shape \(3, 4\)"):
        prepare_into("add", {}, [rnd((3, 4)), rnd((3, 4))], [np.zeros((3, 5), np.float32)])
