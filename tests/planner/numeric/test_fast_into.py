"""prepare_into's in-place float64 softmax/layernorm/gelu and copy split/concat give evaluate_op's exact bits."""

from __future__ import annotations

import numpy as np
import pytest

from planner.numeric.kernels import evaluate_op, prepare_into


def rnd(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


CASES = [  # (op type, attrs, input shapes, output shapes)
    ("softmax", {"axis": -1}, [(4, 7)], [(4, 7)]),
    ("softmax", {"axis": 1}, [(2, 3, 5)], [(2, 3, 5)]),
    ("softmax", {}, [(2, 4, 4, 4)], [(2, 4, 4, 4)]),
    ("layernorm", {"axis": -1}, [(4, 16), (16,), (16,)], [(4, 16)]),
    ("layernorm", {"axis": 1, "epsilon": 1e-3}, [(3, 4, 5), (4, 5), (4, 5)], [(3, 4, 5)]),
    ("layernorm", {}, [(4, 16), (16,)], [(4, 16)]),
    ("layernorm", {}, [(4, 16)], [(4, 16)]),
    ("gelu", {}, [(16, 64)], [(16, 64)]),
    ("gelu", {}, [(3,)], [(3,)]),
    ("split", {"axis": 0}, [(5, 2)], [(2, 2), (3, 2)]),
    ("split", {"axis": -1, "sizes": [4, 4, 8]}, [(2, 3, 16)], [(2, 3, 4), (2, 3, 4), (2, 3, 8)]),
    ("concat", {"axis": 1}, [(2, 3), (2, 5)], [(2, 8)]),
    ("concat", {}, [(1, 4), (3, 4), (2, 4)], [(6, 4)]),
]


@pytest.mark.parametrize("scale", [1.0, 100.0])
@pytest.mark.parametrize("op_type,attrs,shapes,outs", CASES)
def test_same_bits_as_evaluate_op(op_type, attrs, shapes, outs, scale):
    for seed in range(5):
        xs = [rnd(s, 10 * seed + i, scale) for i, s in enumerate(shapes)]
        if seed == 1:
            xs[0].flat[0] = np.nan  # NaN propagates the same way
        if seed == 2:
            xs[0].flat[-1] = np.inf
        want = evaluate_op(op_type, attrs, xs, outs, ["fp32"] * len(outs))
        ys = [np.full(o, 7.0, np.float32) for o in outs]
        step = prepare_into(op_type, attrs, xs, ys)
        with np.errstate(all="ignore"):
            step()
            assert [y.tobytes() for y in ys] == [w.tobytes() for w in want]
            for x in xs:  # the step reads the inputs' current values on every call
                x[...] = rnd(x.shape, 99 + seed)
            want = evaluate_op(op_type, attrs, xs, outs, ["fp32"] * len(outs))
            step()
        assert [y.tobytes() for y in ys] == [w.tobytes() for w in want]


def test_softmax_of_constant_rows_is_uniform():
    y = np.zeros((2, 4), np.float32)
    prepare_into("softmax", {"axis": -1}, [np.full((2, 4), 3.0, np.float32)], [y])()
    assert y.tolist() == [[0.25] * 4] * 2  # exp(0) / 4 for every cell


def test_bad_shapes_fall_back_to_the_checked_path():
    from planner.graph.ir import GraphError

    # The operands are checked against the op's shape contract once, when the step is prepared.
    with pytest.raises(GraphError, match="gamma"):
        prepare_into("layernorm", {}, [rnd((4, 8)), rnd((4,))], [np.zeros((4, 8), np.float32)])
    with pytest.raises(GraphError, match="add up"):
        prepare_into("split", {"sizes": [1, 1]}, [rnd((3, 2))], [np.zeros((1, 2), np.float32)] * 2)
