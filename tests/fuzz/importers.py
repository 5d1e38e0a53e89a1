"""A structure-aware fuzzer for ``plan import`` (ONNX, STG, jsplib, dnn-partitioning).

Inputs:

* ONNX: small valid models built with ``onnx.helper`` from drawn templates (a CNN block,
  an MLP, a data-movement chain), then mutated as protobufs — a dimension set to 0, -1,
  2^40 or a symbolic name, an element type changed (STRING, COMPLEX64, UNDEFINED, 99),
  an edge rewired (cycles, dangling names), an output duplicated, an op type swapped,
  an attribute made hostile, a node or graph output dropped — and sometimes as bytes
  (truncated, bytes flipped, junk inserted);
* STG, jsplib and dnn-partitioning files from ``/work/shared/benchmarks`` (the test data
  when that is absent), mutated by token, line and byte (numbers made negative, huge or
  non-numeric; lines dropped, duplicated, swapped; files truncated; NUL or invalid UTF-8
  inserted), and dnn-partitioning JSON also structurally (NaN, Infinity, 1e999, wrong
  types, duplicate ids, reversed edges, deep nesting);
* each written with its own extension, none, or a wrong one.

Every input is imported; a spec ``plan import`` writes must pass ``plan validate``, and
some are solved (``--time-limit 2``); each run is checked by
:func:`tests.fuzz.cli_check.run_plan`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from hypothesis import strategies as st

from tests.fuzz.cli_check import Run, Tally, run_plan

__all__ = ["SHARED", "light_models", "onnx_models", "mutate_onnx", "mutate_text", "mutate_dnn", "text_sources", "check_import"]

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks"
_TEST_DATA = Path(__file__).resolve().parents[1] / "data" / "importers"

_ONNX_TYPES = [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 21, 99]
_OP_TYPES = ["Relu", "Sigmoid", "Tanh", "Add", "Sub", "Mul", "Div", "LRN", "Foo", "Conv", "MatMul", "Gemm",
             "MaxPool", "Concat", "Reshape", "Softmax", "Identity", "Clip", "Resize", "Transpose"]
_HOSTILE_INTS = [0, -1, -7, 2**31, 2**40, 10**18, 3, 1]


def text_sources() -> list[Path]:
    """Small STG, jsplib and dnn-partitioning files to mutate (shared benchmarks, else test data)."""
    files: list[Path] = []
    if SHARED.is_dir():
        files += sorted((SHARED / "stg" / "50").glob("rand000*.stg"))[:4]
        files += [SHARED / "jsplib" / "instances" / n for n in ("ft06", "la01", "abz5")]
        files += sorted((SHARED / "dnn-partitioning" / "throughput-inputs" / "LayerGraphs").glob("bert24_inference.json"))
        files += sorted((SHARED / "dnn-partitioning" / "latency-inputs" / "LayerGraphs").glob("bert24_inference.json"))
    files += [_TEST_DATA / n for n in ("tiny.stg", "tiny.jsp", "tiny_dnn.json")]
    return [f for f in files if f.is_file()]


# ----------------------------------------------------------------------------- ONNX

def _cnn(draw: Callable) -> Any:
    from onnx import TensorProto, helper

    c, f, hw = draw(st.sampled_from([1, 3])), draw(st.sampled_from([2, 4])), draw(st.sampled_from([6, 8, 9]))
    k, s, p = draw(st.sampled_from([1, 3])), draw(st.sampled_from([1, 2])), draw(st.sampled_from([0, 1]))
    oh = (hw + 2 * p - k) // s + 1
    pool = draw(st.sampled_from(["MaxPool", "AveragePool"]))
    ph = (oh - 2) // 2 + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", strides=[s, s], pads=[p] * 4),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn"),
             helper.make_node(draw(st.sampled_from(["Relu", "Sigmoid", "Clip", "LeakyRelu"])), ["n"], ["r"], name="act"),
             helper.make_node(pool, ["r"], ["q"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["q"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["fl"], name="flat"),
             helper.make_node("Gemm", ["fl", "W", "C"], ["fc"], name="fc", transB=1),
             helper.make_node("Softmax", ["fc"], ["y"], name="sm", axis=1)]
    inits = [_tensor("w", [f, c, k, k]), _tensor("b", [f]), _tensor("s", [f]), _tensor("bb", [f]), _tensor("m", [f]),
             _tensor("v", [f]), _tensor("W", [5, f]), _tensor("C", [5])]
    vi = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, f, ph, ph])]
    return nodes, [("x", [1, c, hw, hw])], [("y", [1, 5])], inits, vi


def _mlp(draw: Callable) -> Any:
    d = draw(st.sampled_from([4, 8, 16]))
    acts = draw(st.lists(st.sampled_from(["Relu", "Sigmoid", "Tanh", "Gelu", "Erf"]), min_size=1, max_size=2))
    from onnx import helper

    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"), helper.make_node("Add", ["h", "b1"], ["a0"], name="add")]
    for i, act in enumerate(acts):
        nodes.append(helper.make_node(act, [f"a{i}"], [f"a{i + 1}"], name=f"act{i}"))
    last = f"a{len(acts)}"
    nodes += [helper.make_node(draw(st.sampled_from(["Sub", "Div", "Mul", "Max"])), [last, "x"], ["z"], name="mix"),
              helper.make_node("MatMul", ["z", "w2"], ["y"], name="mm2")]
    return nodes, [("x", [2, d])], [("y", [2, 3])], [_tensor("w1", [d, d]), _tensor("b1", [d]), _tensor("w2", [d, 3])], []


def _movement(draw: Callable) -> Any:
    from onnx import TensorProto, helper

    n = draw(st.sampled_from([2, 4]))
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="tr", perm=[1, 0]),
             helper.make_node("Split", ["t", "sizes"], ["s0", "s1"], name="sp", axis=0),
             helper.make_node("Relu", ["s0"], ["r0"], name="r0"),
             helper.make_node("Concat", ["r0", "s1"], ["c"], name="cat", axis=0),
             helper.make_node("Reshape", ["c", "shape"], ["y"], name="rs")]
    inits = [helper.make_tensor("sizes", TensorProto.INT64, [2], [n // 2, n - n // 2]),
             helper.make_tensor("shape", TensorProto.INT64, [1], [6 * n])]
    return nodes, [("x", [6, n])], [("y", [6 * n])], inits, []


def _tensor(name: str, dims: list[int]) -> Any:
    from onnx import TensorProto, helper

    size = 1
    for d in dims:
        size *= d
    return helper.make_tensor(name, TensorProto.FLOAT, dims, [0.5] * size)


def light_models() -> list[Path]:
    """The small CNNs shipped with the onnx package (weights given as shapes), to mutate too."""
    import onnx

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return [light / f"light_{n}.onnx" for n in ("bvlc_alexnet", "zfnet512", "squeezenet", "vgg19")
            if (light / f"light_{n}.onnx").is_file()]


@st.composite
def onnx_models(draw: Callable) -> Any:
    """A small valid ONNX model from one of the templates, or one of :func:`light_models`."""
    import onnx
    from onnx import TensorProto, helper

    light = light_models()
    if light and draw(st.integers(0, 3)) == 2:
        return onnx.load(str(draw(st.sampled_from(light))))
    nodes, ins, outs, inits, vi = draw(st.sampled_from([_cnn, _mlp, _movement]))(draw)
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in ins],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in outs], inits, value_info=vi)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", draw(st.sampled_from([13, 17])))])


def mutate_onnx(draw: Callable, model: Any) -> bytes:
    """One drawn protobuf-level mutation of ``model`` (in place), then sometimes a byte-level one."""
    from onnx import helper

    g = model.graph
    values = [*g.input, *g.output, *g.value_info]
    kind = draw(st.sampled_from(["none"] * 5 + ["dim", "dtype", "rewire", "duplicate", "op_type", "attr", "drop_node",
                                                "drop_output", "drop_init", "symbolic"]))
    node = g.node[draw(st.integers(0, len(g.node) - 1))]
    names = sorted({x for n in g.node for x in (*n.input, *n.output)} | {v.name for v in values} | {"nowhere"})
    if kind in ("dim", "symbolic") and values:
        v = values[draw(st.integers(0, len(values) - 1))]
        dims = v.type.tensor_type.shape.dim
        if dims:
            d = dims[draw(st.integers(0, len(dims) - 1))]
            if kind == "symbolic":
                d.dim_param = draw(st.sampled_from(["N", "batch", ""]))
            else:
                d.dim_value = draw(st.sampled_from(_HOSTILE_INTS))
    elif kind == "dtype" and values:
        values[draw(st.integers(0, len(values) - 1))].type.tensor_type.elem_type = draw(st.sampled_from(_ONNX_TYPES))
    elif kind == "rewire" and node.input:
        node.input[draw(st.integers(0, len(node.input) - 1))] = draw(st.sampled_from(names))
    elif kind == "duplicate" and len(g.node) > 1:
        node.output[0] = draw(st.sampled_from([o for n in g.node for o in n.output]))
    elif kind == "op_type":
        node.op_type = draw(st.sampled_from(_OP_TYPES))
    elif kind == "attr":
        key = draw(st.sampled_from(["pads", "strides", "kernel_shape", "perm", "axis", "group", "dilations",
                                    "auto_pad", "transB", "alpha"]))
        del node.attribute[:]
        if key in ("axis", "group", "transB"):
            node.attribute.append(helper.make_attribute(key, draw(st.sampled_from(_HOSTILE_INTS))))
        elif key == "auto_pad":
            node.attribute.append(helper.make_attribute(key, draw(st.sampled_from(["SAME_UPPER", "VALID", "BOGUS"]))))
        elif key == "alpha":
            node.attribute.append(helper.make_attribute(key, draw(st.sampled_from([0.5, float("nan"), 1e300]))))
        else:
            node.attribute.append(helper.make_attribute(key, draw(st.lists(st.sampled_from(_HOSTILE_INTS), min_size=1,
                                                                          max_size=5))))
    elif kind == "drop_node" and len(g.node) > 1:
        del g.node[draw(st.integers(0, len(g.node) - 1))]
    elif kind == "drop_output":
        del g.output[:]
    elif kind == "drop_init" and g.initializer:
        del g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
    data = model.SerializeToString()
    return _mutate_bytes(draw, data, p_none=12)


def _mutate_bytes(draw: Callable, data: bytes, p_none: int = 3) -> bytes:
    kind = draw(st.sampled_from(["none"] * p_none + ["truncate", "flip", "insert", "nul", "utf8"]))
    if not data or kind == "none":
        return data
    at = draw(st.integers(0, len(data) - 1))
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    if kind == "nul":
        return data[:at] + b"\0" + data[at:]
    return data[:at] + b"\xc3\x28" + data[at:]


_TOKENS = ["-5", "0", "9" * 25, "1e3", "x", "4294967296", "-0", "99999999", "1", "-999999999999"]


def mutate_text(draw: Callable, text: str) -> bytes:
    """A token, line or byte mutation of an STG or jsplib file."""
    lines = text.splitlines()
    kind = draw(st.sampled_from(["token", "token", "drop_line", "dup_line", "swap", "header", "bytes", "none", "none",
                                 "none"]))
    if kind in ("token", "header") and lines:
        k = 0 if kind == "header" else draw(st.integers(0, len(lines) - 1))
        while k < len(lines) - 1 and (not lines[k].split() or lines[k].lstrip().startswith("#")):
            k += 1
        tokens = lines[k].split()
        if tokens:
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(_TOKENS))
            lines[k] = " ".join(tokens)
    elif kind == "drop_line" and lines:
        del lines[draw(st.integers(0, len(lines) - 1))]
    elif kind == "dup_line" and lines:
        k = draw(st.integers(0, len(lines) - 1))
        lines.insert(k, lines[k])
    elif kind == "swap" and len(lines) > 1:
        a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[a], lines[b] = lines[b], lines[a]
    data = ("\n".join(lines) + "\n").encode()
    return _mutate_bytes(draw, data) if kind == "bytes" else data


def mutate_dnn(draw: Callable, text: str) -> bytes:
    """A structural or textual mutation of a dnn-partitioning workload."""
    data = json.loads(text)
    kind = draw(st.sampled_from(["value", "value", "drop_key", "dup_id", "cycle", "top", "deep", "token", "bytes",
                                 "none", "none", "none"]))
    nodes, edges = data.get("nodes", []), data.get("edges", [])
    if kind == "value" and nodes:
        nd = nodes[draw(st.integers(0, len(nodes) - 1))]
        key = draw(st.sampled_from(["id", "cpuLatency", "fpgaLatency", "size", "colorClass", "supportedOnFpga"]))
        nd[key] = draw(st.sampled_from([-1, 0, 1e300, "x", None, [], 1.5, True, 10**30, "(", 2**53 + 1]))
    elif kind == "drop_key" and nodes:
        nd = nodes[draw(st.integers(0, len(nodes) - 1))]
        if nd:
            del nd[draw(st.sampled_from(sorted(nd)))]
    elif kind == "dup_id" and len(nodes) > 1:
        nodes[1]["id"] = nodes[0].get("id")
    elif kind == "cycle" and edges:
        e = edges[draw(st.integers(0, len(edges) - 1))]
        edges.append({"sourceId": e.get("destId"), "destId": e.get("sourceId"), "cost": e.get("cost", 0)})
    elif kind == "top":
        data[draw(st.sampled_from(["maxFPGAs", "maxCPUs", "maxSizePerFPGA", "nodes", "edges"]))] = draw(
            st.sampled_from([0, -1, 10**6, "x", None, {}, 1.5]))
    out = json.dumps(data, indent=1)
    if kind == "deep":
        out = out.replace('"nodes"', '"x": ' + "[" * 3000 + "]" * 3000 + ', "nodes"', 1)
    elif kind == "token":
        out = out.replace(draw(st.sampled_from(['"cost": 0', '"cpuLatency": ', '"size": '])),
                          draw(st.sampled_from(['"cost": NaN, "c": 0', '"cpuLatency": Infinity, "c": ',
                                                '"size": 1e999, "s": ', '"size": -Infinity, "s": '])), 1)
    data_bytes = out.encode()
    return _mutate_bytes(draw, data_bytes) if kind == "bytes" else data_bytes


def check_import(data: bytes, name: str, work: Path, tally: Tally, *, dims: list[str] = (), solve: bool = False
                 ) -> Run:
    """Import one input; a written spec must validate; optionally solve it. Every run is recorded."""
    src = work / name
    src.write_bytes(data)
    spec = work / "imported.yaml"
    tally.inputs += 1
    args = ["import", str(src), "-o", str(spec)] + [a for d in dims for a in ("--dim", d)]
    run = tally.record("import", run_plan(args, [spec]), src)
    if run.code != 0:
        return run
    v = run_plan(["validate", str(spec)])
    if v.code != 0 and v.failure is None:
        v.failure = "import wrote a spec validate rejects"
    tally.record("validate", v, spec)
    if solve:
        out = work / "out"
        tally.record("solve", run_plan(["solve", str(spec), "--time-limit", "2", "-o", str(out), "--quiet"], [out]),
                     spec)
    return run
