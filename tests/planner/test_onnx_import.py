"""ONNX import: models built with onnx.helper, weight-free models, unknown ops, round trips,
and a real CNN shipped inside the onnx package."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from planner.graph.ir import Graph  # noqa: E402
from planner.importers import write_spec_yaml  # noqa: E402
from planner.importers.onnx import import_onnx, import_onnx_to_spec, load_onnx_graph  # noqa: E402


def _zeros(name, dims):
    n = 1
    for d in dims:
        n *= d
    return helper.make_tensor(name, TensorProto.FLOAT, dims, [0.0] * n)


@pytest.fixture
def cnn_path(tmp_path) -> Path:
    """Conv(+bias) -> BatchNorm -> Relu -> MaxPool -> GlobalAveragePool -> Flatten -> Gemm -> Softmax."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "W", "C"], ["fc"], name="fc", transB=1),
        helper.make_node("Softmax", ["fc"], ["z"], name="softmax", axis=1),
    ]
    inits = [_zeros("w", [4, 3, 3, 3]), _zeros("b", [4]), _zeros("s", [4]), _zeros("bb", [4]),
             _zeros("m", [4]), _zeros("v", [4]), _zeros("W", [10, 4]), _zeros("C", [10])]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 10])], inits)
    path = tmp_path / "cnn.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_cnn_maps_to_isa_ops_with_shapes_and_attrs(cnn_path):
    imp = import_onnx(cnn_path, "cnn")
    types = [(o.name, o.type) for o in imp.ops]
    assert types == [("cnn/conv", "conv2d"), ("cnn/conv_bias", "add"), ("cnn/bn", "mul"),
                     ("cnn/bn_shift", "add"), ("cnn/relu", "relu"), ("cnn/pool", "maxpool"),
                     ("cnn/gap", "global_avgpool"), ("cnn/flat", "reshape"), ("cnn/fc", "matmul"),
                     ("cnn/fc_bias", "add"), ("cnn/softmax", "softmax")]
    ops = {o.name: o for o in imp.ops}
    assert dict(ops["cnn/conv"].attrs) == {"stride": 1, "padding": 1, "groups": 1}
    assert dict(ops["cnn/pool"].attrs) == {"kernel": 2, "stride": 2, "padding": 0}
    assert dict(ops["cnn/softmax"].attrs) == {"axis": 1}
    assert all(o.model == "cnn" for o in imp.ops)
    t = {x.name: x for x in imp.tensors}
    assert t["cnn/x"].kind == "input" and t["cnn/z"].kind == "output"
    assert t["cnn/c"].shape == (1, 4, 8, 8)  # padding 1 keeps 8x8
    assert t["cnn/p"].shape == (1, 4, 4, 4)
    assert t["cnn/W"].shape == (4, 10)  # the transB weight is declared in [K, N] layout
    assert ops["cnn/fc"].inputs == ("cnn/f", "cnn/W")
    # weights: w 108 + b 4 + BN scale 4 + shift 4 + W 40 + C 10 = 170 floats = 680 bytes
    # (BN mean and var fold into scale and shift and are not stored)
    assert imp.weight_bytes == 680
    assert imp.fallback_ops == {}
    Graph(imp.tensors, imp.ops)  # a valid graph: every tensor known, acyclic


def test_unknown_op_is_costed_by_fallback_and_reported(tmp_path, caplog):
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("LRN", ["r"], ["n"], name="lrn", size=3),
         helper.make_node("Relu", ["n"], ["y"], name="relu2")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5])])
    path = tmp_path / "lrn.onnx"
    onnx.save(helper.make_model(g), path)
    with caplog.at_level(logging.WARNING, logger="planner.importers.onnx"):
        imp = import_onnx(path, "m")
    lrn = [o for o in imp.ops if o.name == "m/lrn"]
    assert lrn and lrn[0].type == "relu" and lrn[0].attrs["fallback"] is True and lrn[0].attrs["onnx_op"] == "LRN"
    assert imp.fallback_ops == {"LRN": 1}
    assert any("LRN" in w for w in imp.warnings)
    assert any("LRN" in r.getMessage() for r in caplog.records)
    assert len(imp.ops) == 3  # nothing dropped


def test_weight_free_model_weights_given_as_shapes(tmp_path):
    shape = helper.make_tensor("w_shape", TensorProto.INT64, [2], [16, 8])
    g = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["w_shape"], ["w"], name="w_const"),
         helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [shape])
    path = tmp_path / "light.onnx"
    onnx.save(helper.make_model(g), path)
    tensors, ops = load_onnx_graph(path, "light")
    assert [(o.name, o.type, o.inputs) for o in ops] == [("light/mm", "matmul", ("light/x", "light/w"))]
    w = {t.name: t for t in tensors}["light/w"]
    assert (w.kind, w.shape, w.size_bytes) == ("weight", (16, 8), 16 * 8 * 4)


def test_batched_matmul_and_reshape_shape_input_is_not_data(tmp_path):
    target = helper.make_tensor("target", TensorProto.INT64, [3], [2, 4, 8])
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "target"], ["x3"], name="rs"),
         helper.make_node("MatMul", ["x3", "w"], ["y"], name="mm")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 5])], [target, _zeros("w", [8, 5])])
    path = tmp_path / "bmm.onnx"
    onnx.save(helper.make_model(g), path)
    imp = import_onnx(path, "")
    ops = {o.name: o for o in imp.ops}
    assert ops["rs"].inputs == ("x",) and dict(ops["rs"].attrs) == {"shape": [2, 4, 8]}
    assert {t.name: t.shape for t in imp.tensors}["y"] == (2, 4, 5)
    assert "target" not in {t.name for t in imp.tensors}


def test_round_trip_through_yaml_and_spec_loader(cnn_path, tmp_path):
    load_spec = pytest.importorskip("planner.spec").load_spec
    direct_t, direct_o = load_onnx_graph(cnn_path, "cnn")
    inline = write_spec_yaml(import_onnx_to_spec(cnn_path), tmp_path / "cnn.yaml")
    by_ref = import_onnx_to_spec(cnn_path, inline=False)
    for spec in (load_spec(inline), load_spec(by_ref)):
        g = spec.graph
        assert sorted(g.ops) == sorted(o.name for o in direct_o)
        assert {n: t.shape for n, t in g.tensors.items()} == {t.name: t.shape for t in direct_t}
        assert [g.ops[o.name].type for o in direct_o] == [o.type for o in direct_o]
        assert sum(g.weight_bytes(n) for n in g.ops) == 680


def test_real_cnn_shipped_in_the_onnx_package():
    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"
    if not path.exists():
        pytest.skip("onnx package without its light test models")
    imp = import_onnx(path, "resnet50")
    graph = Graph(imp.tensors, imp.ops)
    types = [o.type for o in imp.ops]
    assert types.count("conv2d") == 53
    assert types.count("matmul") == 1 and types.count("softmax") == 1
    # ResNet-50 has 25,557,032 parameters (weights given as shapes only), fp32:
    # 4 x 25,557,032 = 102,228,128 bytes (BN folded to scale + shift: 53 x 2 vectors)
    assert imp.weight_bytes == 102_228_128
    assert imp.fallback_ops == {}
    assert len(graph.topological_order()) == len(imp.ops)
