"""graph.json: lossless, deterministic round trips and clear refusals."""

import json

import numpy as np
import pytest

from planner.errors import BinaryFormatError
from planner.graph import Graph, Op, Tensor, generate
from planner.graph.ir import GraphError
from planner.graph.serialize import (GRAPH_FORMAT_VERSION, graph_from_dict, graph_to_dict, read_graph_json,
                                     write_graph_json)


def same_graph(a, b):
    assert list(a.tensors.items()) == list(b.tensors.items())  # same tensors, same order
    assert list(a.ops.items()) == list(b.ops.items())          # same ops (all fields), same order
    assert a.topological_order() == b.topological_order()
    assert a.op_edges() == b.op_edges()


@pytest.mark.parametrize("kind, params", [
    ("mlp", {"layers": 3, "width": 16, "activation": "gelu"}),
    ("transformer", {"layers": 2, "d_model": 32, "heads": 4, "seq": 8}),
    ("resnet", {"blocks": [1, 2], "width": 8, "image": 32, "classes": 10}),
])
def test_generated_graphs_round_trip(kind, params):
    g = Graph(*generate(kind, params, "net"))
    d = graph_to_dict(g)
    text = json.dumps(d, sort_keys=True)
    g2 = graph_from_dict(json.loads(text))
    same_graph(g, g2)
    assert json.dumps(graph_to_dict(g2), sort_keys=True) == text  # a fixed point
    assert d["version"] == GRAPH_FORMAT_VERSION and d["format"] == "plan-graph"


def control_graph():
    tensors = [Tensor("in", (4, 8), "fp16", "input"), Tensor("w", (8, 8), "bf16", "weight"),
               Tensor("h", (4, 8), "fp16"), Tensor("out", (4, 8), "int8", "output")]
    ops = [
        Op("load", "task", cycles={"gpu": 7, "cpu": 3}, model="a"),
        Op("mm", "matmul", ("in", "w"), ("h",), attrs={"z": 1, "a": {"nested": [1, 2.5, None, True]}},
           model="a", after=("load",)),
        Op("q", "relu", ("h",), ("out",), attrs={"note": "x", "eps": 1e-5, "pair": (2, 3)}, model="b",
           after=("load", "mm")),
    ]
    return Graph(tensors, ops)


def test_after_cycles_attrs_models_kinds_dtypes_round_trip():
    g = control_graph()
    d = graph_to_dict(g)
    ops = {o["name"]: o for o in d["ops"]}
    assert list(ops["mm"]["attrs"]) == ["a", "z"]            # mapping keys sorted
    assert list(ops["load"]["cycles"]) == ["cpu", "gpu"]
    assert ops["q"]["after"] == ["load", "mm"] and ops["q"]["attrs"]["pair"] == [2, 3]
    g2 = graph_from_dict(json.loads(json.dumps(d)))
    assert list(g2.tensors.values()) == list(g.tensors.values())
    for name in ("load", "mm"):
        assert g2.ops[name] == g.ops[name]
    # Tuples come back as lists; everything else is equal.
    q, q2 = g.ops["q"], g2.ops["q"]
    assert q2.attrs == {"note": "x", "eps": 1e-5, "pair": [2, 3]} and q2.after == q.after
    assert q2.model == "b" and q2.cycles == {}
    assert g2.op_edges() == g.op_edges() and g2.edge_bytes("load", "mm") == 0


def test_numpy_attr_values_become_python():
    g = Graph([Tensor("x", (2, 2), kind="input"), Tensor("y", (2, 2), kind="output")],
              [Op("t", "transpose", ("x",), ("y",), {"perm": np.array([1, 0]), "k": np.int64(3),
                                                     "f": np.float32(0.5), "b": np.bool_(True)})])
    attrs = graph_to_dict(g)["ops"][0]["attrs"]
    assert attrs == {"b": True, "f": 0.5, "k": 3, "perm": [1, 0]}
    assert [type(v) for v in (attrs["b"], attrs["f"], attrs["k"], attrs["perm"][0])] == [bool, float, int, int]


def test_non_json_attrs_are_refused_with_the_op_named():
    g = Graph([], [Op("j", "task", attrs={"bad": {1, 2}})])
    with pytest.raises(TypeError, match=r"op 'j' attrs.bad: set value"):
        graph_to_dict(g)
    g = Graph([], [Op("j", "task", attrs={"m": {1: "x"}})])
    with pytest.raises(TypeError, match="keys must be strings"):
        graph_to_dict(g)


def test_file_round_trip_is_byte_identical(tmp_path):
    g = Graph(*generate("transformer", {"layers": 1, "d_model": 16, "heads": 2, "seq": 4}, "t"))
    p1 = write_graph_json(g, tmp_path / "a.json")
    g2 = read_graph_json(p1)
    p2 = write_graph_json(g2, tmp_path / "b.json")
    assert p1.read_bytes() == p2.read_bytes() and p1.read_text().endswith("}\n")
    same_graph(g, g2)


def doc(**over):
    d = graph_to_dict(control_graph())
    d.update(over)
    return d


@pytest.mark.parametrize("data, message", [
    ([], "expected a mapping"),
    (doc(format="onnx"), "format is 'onnx'"),
    (doc(version=2), "unsupported version 2"),
    (doc(version=True), "unsupported version True"),   # JSON true equals 1 in Python
    (doc(version=1.0), "unsupported version 1.0"),
    (doc(extra=1), "unknown extra"),
    (doc(tensors={}), "tensors and ops must be lists"),
    (doc(tensors=[{"name": "x", "shape": [2], "dtype": "fp32"}]), r"tensors\[0\]: missing kind"),
    (doc(tensors=[{"name": "x", "shape": [2.0], "dtype": "fp32", "kind": "input"}]), "list of ints"),
    (doc(ops=[{"name": "j", "type": "task", "inputs": [], "outputs": [], "attrs": {}, "cycles": {"a": "1"},
               "model": "", "after": []}]), r"ops\[0\].cycles"),
    (doc(ops=[{"name": "j", "type": "task", "inputs": "x", "outputs": [], "attrs": {}, "cycles": {},
               "model": "", "after": []}]), r"ops\[0\].inputs must be a list of strings"),
])
def test_malformed_documents_are_refused(data, message):
    with pytest.raises(BinaryFormatError, match=message):
        graph_from_dict(data)


def test_invalid_graphs_are_refused_by_the_ir():
    d = graph_to_dict(Graph([], [Op("a", "task"), Op("b", "task", after=("a",))]))
    d["ops"][0]["after"] = ["b"]
    with pytest.raises(BinaryFormatError, match="graph data: the graph has a cycle: a -> b -> a"):
        graph_from_dict(d)


def test_ops_that_break_their_shape_contract_are_refused():
    # An edited graph.json: the numeric replay would meet this op's shapes as a GraphError.
    d = graph_to_dict(Graph([Tensor("x", (1, 4, 8, 8), kind="input"), Tensor("y", (1, 4, 4, 4), kind="output")],
                            [Op("p", "avgpool", ("x",), ("y",), {"kernel": 2, "stride": 2})]))
    d["tensors"][1]["shape"] = [1, 4, 3, 3]
    with pytest.raises(BinaryFormatError, match=r"op 'p': avgpool computes shape \(1, 4, 4, 4\)"):
        graph_from_dict(d)
    d["tensors"][1]["shape"] = [1, 0, 3, 3]
    with pytest.raises(BinaryFormatError, match="non-positive dimension"):
        graph_from_dict(d)


def test_read_names_the_file(tmp_path):
    p = tmp_path / "graph.json"
    p.write_text(json.dumps({"format": "plan-graph", "version": 0, "tensors": [], "ops": []}))
    with pytest.raises(BinaryFormatError, match="graph.json: graph data: unsupported version 0"):
        read_graph_json(p)
