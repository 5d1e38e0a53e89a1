"""ONNX import: malformed models are errors naming the node or tensor; every approximation is
named in the import's notes and on the op; the light CNNs shipped with onnx import and validate."""

from __future__ import annotations

from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from planner.errors import SpecError  # noqa: E402
from planner.importers import import_file  # noqa: E402
from planner.importers.onnx import import_onnx  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _vi(name, dims, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, dims)


def _save(tmp_path, nodes, inputs, outputs, inits=(), opset=13, name="m.onnx") -> Path:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    path = tmp_path / name
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def _zeros(name, dims):
    n = 1
    for d in dims:
        n *= d
    return helper.make_tensor(name, TensorProto.FLOAT, dims, [0.0] * n)


def _import_error(path, **kw) -> str:
    with pytest.raises(SpecError) as e:
        import_onnx(path, "", **kw)
    assert e.value.file == str(path)
    return e.value.message


# ----------------------------------------------------------------------------- malformed files

def test_bytes_that_are_no_model(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(b"\xff" * 64)
    assert _import_error(p).startswith("not an ONNX model: the protobuf does not parse")
    p.write_bytes(b"")
    assert _import_error(p) == "not an ONNX model: it has no graph nodes"


def test_cycle_and_duplicate_output_are_errors_at_import(tmp_path):
    relu = lambda i, o, n: helper.make_node("Relu", [i], [o], name=n)  # noqa: E731
    p = _save(tmp_path, [relu("x", "a", "r0"), relu("b", "c", "r1"), relu("c", "b", "r2"), relu("a", "y", "r3")],
              [_vi("x", [4])], [_vi("y", [4])])
    assert _import_error(p).startswith("the nodes form a cycle: node 'r")
    p = _save(tmp_path, [relu("x", "a", "first"), relu("x", "a", "second"), relu("a", "y", "r3")],
              [_vi("x", [4])], [_vi("y", [4])])
    assert _import_error(p) == ("tensor 'a' is produced twice: by node 'first' (Relu) and by node 'second' "
                                "(Relu)")


def test_nodes_out_of_order_are_sorted(tmp_path):
    p = _save(tmp_path, [helper.make_node("Relu", ["a"], ["y"], name="second"),
                         helper.make_node("Relu", ["x"], ["a"], name="first")], [_vi("x", [4])], [_vi("y", [4])])
    assert [o.name for o in import_onnx(p, "").ops] == ["first", "second"]


def test_wrong_input_count_names_the_node_and_the_schema(tmp_path):
    p = _save(tmp_path, [helper.make_node("Conv", ["x"], ["y"], name="c")], [_vi("x", [1, 3, 8, 8])],
              [_vi("y", [1, 4, 6, 6])])
    assert _import_error(p) == "node 'c' (Conv) has 1 input; Conv (opset 13) takes 2 to 3"


def test_conv_channels_that_do_not_fit_are_named(tmp_path):
    p = _save(tmp_path, [helper.make_node("Conv", ["x", "w"], ["y"], name="c")], [_vi("x", [1, 3, 8, 8])],
              [_vi("y", [1, 4, 6, 6])], [_zeros("w", [4, 2, 3, 3])])
    assert "node 'c' (Conv): input [1, 3, 8, 8], weight [4, 2, 3, 3] and output [1, 4, 6, 6] do not fit group=1" \
        in _import_error(p)


# ----------------------------------------------------------------------------- dims and dtypes

def test_symbolic_dims_need_a_value_and_take_one(tmp_path):
    p = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [_vi("x", ["N", 4])],
              [_vi("y", ["N", 4])])
    assert _import_error(p) == ("tensor 'x' has the symbolic dimension 'N' (shape [N, 4]); give it a value "
                                "with --dim N=<value>")
    imp = import_onnx(p, "", dims={"N": 3})
    assert [(t.name, t.shape) for t in imp.tensors] == [("x", (3, 4)), ("y", (3, 4))]
    assert "no symbolic dimension of that name (its symbolic dimensions: N)" in _import_error(p, dims={"B": 1})


@pytest.mark.parametrize("dims, words", [
    ([0, 4], "tensor 'x' has dimension 0 of size 0 (shape [0, 4]); every dimension must be >= 1"),
    ([-3, 4], "tensor 'x' has dimension 0 of size -3 (shape [-3, 4]); every dimension must be >= 1"),
    ([2**33, 4], "tensor 'x' has dimension 0 of size 8,589,934,592"),
])
def test_non_positive_or_huge_dims_are_errors_not_ones(tmp_path, dims, words):
    p = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [_vi("x", dims)], [_vi("y", dims)])
    assert words in _import_error(p)


@pytest.mark.parametrize("dtype, name", [(TensorProto.STRING, "STRING"), (TensorProto.COMPLEX64, "COMPLEX64"),
                                         (TensorProto.UINT32, "UINT32")])
def test_unsupported_dtypes_are_errors_not_fp32(tmp_path, dtype, name):
    p = _save(tmp_path, [helper.make_node("Identity", ["x"], ["y"], name="i")], [_vi("x", [4], dtype)],
              [_vi("y", [4], dtype)])
    assert _import_error(p).startswith(f"tensor 'x' has element type {name}, which the planner does not support")


def test_weights_with_unsupported_dtypes_are_named(tmp_path):
    w = helper.make_tensor("w", TensorProto.UINT16, [4], [1, 2, 3, 4])
    p = _save(tmp_path, [helper.make_node("Add", ["x", "w"], ["y"], name="a")], [_vi("x", [4])], [_vi("y", [4])],
              [w])
    with pytest.raises(SpecError, match="tensor 'w' has element type UINT16"):
        import_onnx(p, "")


# ----------------------------------------------------------------------------- exact and approximate

def test_sub_sigmoid_tanh_are_exact_and_div_is_a_named_approximation(tmp_path):
    nodes = [helper.make_node("Sub", ["x", "x"], ["a"], name="sub"), helper.make_node("Sigmoid", ["a"], ["b"], name="sg"),
             helper.make_node("Tanh", ["b"], ["c"], name="th"), helper.make_node("Div", ["c", "x"], ["y"], name="dv")]
    p = _save(tmp_path, nodes, [_vi("x", [4])], [_vi("y", [4])])
    r = import_file(p)
    ops = {o["name"]: o for o in r.spec["models"][0]["graph"]["ops"]}
    assert [ops[n]["type"] for n in ("sub", "sg", "th", "dv")] == ["sub", "sigmoid", "tanh", "mul"]
    assert all("attrs" not in ops[n] for n in ("sub", "sg", "th"))
    assert ops["dv"]["attrs"] == {"onnx_op": "Div", "approximation": "computed as mul"}
    assert r.notes == ("Div: computed as mul (1 op)",)


def test_asymmetric_pool_pads_are_named_and_keep_the_output_shape(tmp_path):
    p = _save(tmp_path, [helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[3, 3], strides=[2, 2],
                                          pads=[0, 0, 1, 1])], [_vi("x", [1, 2, 112, 112])], [_vi("y", [1, 2, 56, 56])])
    imp = import_onnx(p, "")
    (op,) = imp.ops
    # (112 + 2*1 - 3) // 2 + 1 = 56, the ONNX output size: the symmetric padding 1 keeps the shape.
    assert (op.attrs["kernel"], op.attrs["stride"], op.attrs["padding"]) == (3, 2, 1)
    assert op.attrs["approximation"] == "pads [0, 0, 1, 1] (begin h, w, end h, w) taken as [1, 1] on both sides"


def test_a_pool_window_covering_the_whole_input_is_exact(tmp_path):
    # GoogLeNet's last pool: 7x7 window on a 6x6 input with pads (0, 0, 1, 1) averages the 36
    # real cells, which an average pool with a 6x6 window and no padding does exactly.
    p = _save(tmp_path, [helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[7, 7],
                                          pads=[0, 0, 1, 1])], [_vi("x", [1, 2, 6, 6])], [_vi("y", [1, 2, 1, 1])])
    (op,) = import_onnx(p, "").ops
    assert (op.type, op.attrs) == ("avgpool", {"kernel": 6, "stride": 1, "padding": 0})


def test_non_uniform_strides_and_pads_per_axis_are_exact(tmp_path):
    p = _save(tmp_path, [helper.make_node("Conv", ["x", "w"], ["y"], name="c", strides=[1, 2], pads=[1, 0, 1, 0])],
              [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 4, 8, 3])], [_zeros("w", [4, 3, 3, 3])])
    (op,) = import_onnx(p, "").ops
    assert dict(op.attrs) == {"stride": [1, 2], "padding": [1, 0], "groups": 1}


def test_names_are_printable_and_bounded(tmp_path):
    long = "n" * 500
    p = _save(tmp_path, [helper.make_node("Relu", ["x y"], [long], name="a\nb")], [_vi("x y", [4])],
              [_vi(long, [4])])
    (op,) = import_onnx(p, "").ops
    assert op.name == "a_b" and op.inputs == ("x_y",) and len(op.outputs[0]) == 200


# ----------------------------------------------------------------------------- the light CNNs

_LIGHT_NOTES = {
    "light_bvlc_alexnet": ("MaxPool: pads [0, 0, 1, 1] (begin h, w, end h, w) taken as [1, 1] on both sides (1 op)",
                           "LRN: costed only, as one vector pass (no arithmetic; 2 ops)"),
    "light_densenet121": (),
    "light_inception_v1": ("LRN: costed only, as one vector pass (no arithmetic; 2 ops)",),
    "light_inception_v2": ("MaxPool: pads [0, 0, 1, 1] (begin h, w, end h, w) taken as [1, 1] on both sides "
                           "(4 ops)",),
    "light_resnet50": (), "light_shufflenet": (), "light_squeezenet": (), "light_vgg19": (),
    "light_zfnet512": ("LRN: costed only, as one vector pass (no arithmetic; 2 ops)",),
}


@pytest.mark.parametrize("name", sorted(_LIGHT_NOTES))
def test_light_cnns_import_to_specs_that_validate_with_their_approximations_named(name):
    path = LIGHT / f"{name}.onnx"
    if not path.exists():
        pytest.skip("onnx package without its light test models")
    r = import_file(path)  # validates the spec as `plan validate` does
    assert r.notes == _LIGHT_NOTES[name]
    approximated = [o for o in r.spec["models"][0]["graph"]["ops"] if "approximation" in o.get("attrs", {})]
    assert len(approximated) == sum(int(n.rsplit("(", 1)[1].split()[0]) for n in r.notes if "costed only" not in n)


def test_names_that_are_not_utf8_are_refused(tmp_path):
    # protobuf returns a proto2 string that is not UTF-8 as bytes; the importer must not take it.
    p = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="relu")], [_vi("x", [4])], [_vi("y", [4])])
    data = p.read_bytes()
    p.write_bytes(data.replace(b"relu", b"r\xffl\xfe", 1))
    assert _import_error(p) == "not an ONNX model: node #0's name is not UTF-8 text (b'r\\xffl\\xfe')"
