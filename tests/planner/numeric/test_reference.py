"""Reference evaluation: seeded inputs and whole generated graphs against hand-written numpy."""

import math

import numpy as np
import pytest

from planner.errors import SpecError, UnsupportedError
from planner.graph import Graph, Op, Tensor, generate
from planner.graph.ir import GraphError
from planner.numeric.reference import evaluate, random_inputs, source_tensors


def gen(kind, params, model="m"):
    return Graph(*generate(kind, params, model))


def layernorm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


# ------------------------------------------------------------------ random_inputs

def test_random_inputs_cover_the_sources_only():
    g = gen("mlp", {"layers": 3, "width": 16, "batch": 2})
    vals = random_inputs(g)
    assert sorted(vals) == sorted(source_tensors(g)) == ["m/fc0/w", "m/fc1/w", "m/fc2/w", "m/x"]
    assert all(vals[n].shape == g.tensors[n].shape and vals[n].dtype == np.float32 for n in vals)


def test_random_inputs_same_seed_same_bytes_other_seed_differs():
    g = gen("transformer", {"layers": 1, "d_model": 16, "heads": 2, "seq": 4, "dtype": "fp32"})
    a, b, c = random_inputs(g, 3), random_inputs(g, 3), random_inputs(g, 4)
    assert all(a[n].tobytes() == b[n].tobytes() for n in a)
    assert all(a[n].tobytes() != c[n].tobytes() for n in a)


def test_random_inputs_independent_of_order_and_of_other_tensors():
    tensors, ops = generate("mlp", {"layers": 2, "width": 8}, "m")
    base = random_inputs(Graph(tensors, ops), 7)
    reordered = random_inputs(Graph(list(reversed(tensors)), ops), 7)
    extra = random_inputs(Graph([Tensor("zz", (5,), kind="input"), *tensors], ops), 7)
    for n in base:
        assert base[n].tobytes() == reordered[n].tobytes() == extra[n].tobytes()
    # Two tensors of one shape in one graph get different values.
    assert base["m/fc0/w"].tobytes() != base["m/fc1/w"].tobytes()


def test_random_inputs_scale_by_role():
    t = [Tensor("x", (64, 400), kind="input"), Tensor("w", (400, 300), kind="weight"),
         Tensor("y", (64, 300)), Tensor("g", (300,), kind="weight"), Tensor("b", (300,), kind="weight"),
         Tensor("z", (64, 300)), Tensor("cx", (1, 16, 8, 8), kind="input"),
         Tensor("cw", (32, 16, 3, 3), kind="weight"), Tensor("cy", (1, 32, 6, 6), kind="output"),
         Tensor("s", (300,), kind="weight"), Tensor("zs", (64, 300), kind="output")]
    g = Graph(t, [Op("fc", "matmul", ("x", "w"), ("y",)), Op("ln", "layernorm", ("y", "g", "b"), ("z",)),
                  Op("conv", "conv2d", ("cx", "cw"), ("cy",)), Op("sc", "mul", ("z", "s"), ("zs",))])
    v = random_inputs(g, 0)
    assert abs(v["x"].std() - 1) < 0.02                        # graph input: N(0, 1)
    assert abs(v["w"].std() - 1 / math.sqrt(400)) < 0.002      # matmul weight: 1/sqrt(K) = 0.05
    assert abs(v["cw"].std() - 1 / math.sqrt(16 * 9)) < 0.004  # conv weight: 1/sqrt(C*KH*KW) = 1/12
    assert abs(v["g"].mean() - 1) < 0.02 and abs(v["g"].std() - 0.1) < 0.02   # gamma ~ 1
    assert abs(v["b"].mean()) < 0.02 and abs(v["b"].std() - 0.1) < 0.02       # beta ~ 0
    assert abs(v["s"].mean() - 1) < 0.02                       # a weight scaling a mul ~ 1


def test_random_inputs_refuse_unsupported_dtypes_and_bad_seeds():
    with pytest.raises(UnsupportedError, match="'bf16'"):
        random_inputs(gen("mlp", {"layers": 2, "width": 8, "dtype": "bf16"}))
    with pytest.raises(UnsupportedError, match="'int8'"):
        random_inputs(gen("mlp", {"layers": 2, "width": 8, "dtype": "int8"}))
    with pytest.raises(ValueError, match="seed"):
        random_inputs(gen("mlp", {"layers": 2, "width": 8}), -1)


# ------------------------------------------------------------------ evaluate on generated graphs

@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_mlp_matches_a_hand_written_forward_pass(activation):
    g = gen("mlp", {"hidden": [12, 10], "in_features": 7, "out_features": 5, "batch": 3,
                    "activation": activation})
    inp = random_inputs(g, 11)
    vals = evaluate(g, inp)
    act = (lambda z: np.maximum(z, 0)) if activation == "relu" else gelu
    h = inp["m/x"].astype(np.float64)
    h = act(h @ inp["m/fc0/w"])
    assert np.allclose(vals["m/act0/y"], h, rtol=1e-5, atol=1e-6)
    h = act(h @ inp["m/fc1/w"])
    y = h @ inp["m/fc2/w"]
    assert vals["m/y"].shape == (3, 5) and vals["m/y"].dtype == np.float32
    np.testing.assert_allclose(vals["m/y"], y, rtol=1e-5, atol=1e-6)
    assert set(vals) == set(g.tensors)


def transformer_forward(inp, layers, heads, d, m="t"):
    x = inp[f"{m}/x"].astype(np.float64)
    dh = d // heads
    for layer in range(layers):
        L = f"{m}/layer{layer}"
        n1 = layernorm(x, inp[f"{L}/ln1/gamma"], inp[f"{L}/ln1/beta"])
        qkv = n1 @ inp[f"{L}/attn_qkv/w"]
        ctx = []
        for j in range(heads):
            q = qkv[..., j * dh:(j + 1) * dh]
            k = qkv[..., (heads + j) * dh:(heads + j + 1) * dh]
            v = qkv[..., (2 * heads + j) * dh:(2 * heads + j + 1) * dh]
            s = q @ k.transpose(0, 2, 1)  # the generator does not scale by 1/sqrt(dh)
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            ctx.append(p / p.sum(axis=-1, keepdims=True) @ v)
        r1 = x + np.concatenate(ctx, axis=2) @ inp[f"{L}/attn_out/w"]
        n2 = layernorm(r1, inp[f"{L}/ln2/gamma"], inp[f"{L}/ln2/beta"])
        x = r1 + gelu(n2 @ inp[f"{L}/mlp_up/w"]) @ inp[f"{L}/mlp_down/w"]
    return layernorm(x, inp[f"{m}/ln_f/gamma"], inp[f"{m}/ln_f/beta"])


def test_transformer_matches_a_hand_written_forward_pass():
    g = gen("transformer", {"layers": 2, "d_model": 16, "heads": 2, "seq": 5, "batch": 2, "dtype": "fp32"}, "t")
    inp = random_inputs(g, 5)
    vals = evaluate(g, inp)
    out = vals["t/ln_f/y"]
    assert out.shape == (2, 5, 16) and np.isfinite(out).all()
    # Per-op fp32 rounding in the graph vs float64 throughout here.
    np.testing.assert_allclose(out, transformer_forward(inp, 2, 2, 16), rtol=1e-4, atol=1e-4)
    assert all(np.isfinite(v).all() and v.shape == g.tensors[n].shape for n, v in vals.items())


def test_fp16_transformer_stays_fp16_and_finite():
    g = gen("transformer", {"layers": 1, "d_model": 32, "heads": 4, "seq": 8}, "t")  # default fp16
    vals = evaluate(g, random_inputs(g, 0))
    assert vals["t/ln_f/y"].dtype == np.float16
    assert all(np.isfinite(v).all() for v in vals.values())
    ref = transformer_forward(random_inputs(g, 0), 1, 4, 32)
    np.testing.assert_allclose(vals["t/ln_f/y"], ref, rtol=0.05, atol=0.05)


def test_resnet_is_finite_with_the_declared_shapes():
    g = gen("resnet", {"blocks": [1, 1], "width": 8, "image": 32, "classes": 10, "batch": 2}, "r")
    vals = evaluate(g, random_inputs(g, 0))
    assert vals["r/fc/y"].shape == (2, 10)
    assert all(np.isfinite(v).all() and v.shape == g.tensors[n].shape for n, v in vals.items())
    # Cross-op consistency: the head's pool is the spatial mean of the last block's output.
    last = vals["r/stage1/block0/relu2/y"].astype(np.float64)
    np.testing.assert_allclose(vals["r/pool/y"][..., 0, 0], last.mean(axis=(2, 3)), rtol=1e-6)
    # The stem pool sees the stem relu: its max is the max of the whole stem output per channel.
    assert np.array_equal(vals["r/stem_pool/y"].max(axis=(2, 3)), vals["r/stem_relu/y"].max(axis=(2, 3)))


def test_resnet18_at_32px_evaluates():
    # ResNet-18 on a 32x32 image (11M weights, 20 convs): finite and of moderate size.
    g = gen("resnet", {"image": 32, "classes": 10}, "r")
    y = evaluate(g, random_inputs(g, 0))["r/fc/y"]
    assert y.shape == (1, 10) and np.isfinite(y).all() and 0.01 < np.abs(y).max() < 100


# ------------------------------------------------------------------ evaluate errors

def small():
    return Graph([Tensor("x", (2, 3), kind="input"), Tensor("w", (3, 2), kind="weight"),
                  Tensor("y", (2, 2), kind="output")], [Op("fc", "matmul", ("x", "w"), ("y",))])


def test_evaluate_input_errors():
    g = small()
    good = {"x": np.ones((2, 3)), "w": np.ones((3, 2))}
    assert evaluate(g, good)["y"].tolist() == [[3, 3], [3, 3]]
    assert evaluate(g, good)["x"].dtype == np.float32  # inputs take the tensor's dtype
    with pytest.raises(SpecError, match="missing input value for tensor 'w'"):
        evaluate(g, {"x": good["x"]})
    with pytest.raises(SpecError, match=r"'x' has shape \(3, 2\), expected \(2, 3\)"):
        evaluate(g, {**good, "x": np.ones((3, 2))})
    with pytest.raises(SpecError, match="no tensor of the graph"):
        evaluate(g, {**good, "q": np.ones(1)})
    with pytest.raises(SpecError, match="op 'fc' produces"):
        evaluate(g, {**good, "y": np.ones((2, 2))})


def test_evaluate_names_the_op_it_cannot_run():
    g = Graph([Tensor("x", (2,), kind="input")], [Op("j1", "task", ("x",), cycles={"cpu": 3})])
    with pytest.raises(UnsupportedError, match="op 'j1': numeric mode cannot evaluate op type 'task'"):
        evaluate(g, {"x": np.ones(2)})
    bad = Graph([Tensor("x", (2, 3), kind="input"), Tensor("y", (3, 2), kind="output")],
                [Op("r", "reshape", ("x",), ("y",)), ])
    assert evaluate(bad, {"x": np.arange(6.0).reshape(2, 3)})["y"].tolist() == [[0, 1], [2, 3], [4, 5]]
    bad = Graph([Tensor("x", (2, 3), kind="input"), Tensor("y", (2, 2), kind="output")],
                [Op("r", "relu", ("x",), ("y",))])
    with pytest.raises(GraphError, match="op 'r': relu computes shape") as e:
        evaluate(bad, {"x": np.ones((2, 3))})
    assert e.value.op == "r"


def test_random_inputs_equal_their_definition_with_the_positions_built_per_tensor():
    # the op positions are built once per graph now (they were rebuilt per tensor): the values
    # are those of the per-tensor definition, byte for byte, on generated graphs
    from planner.numeric import reference

    def role_scale_per_tensor(graph, tensor, pos):
        return original(graph, tensor, {name: i for i, name in enumerate(graph.topological_order())})

    original = reference._role_scale
    for kind, params in (("transformer", {"layers": 2, "d_model": 64, "heads": 2, "seq": 8}),
                         ("resnet", {"image": 32, "classes": 10}), ("mlp", {"layers": 3, "width": 16})):
        tensors, ops = generate(kind, params, "m")
        g = Graph(tensors, ops)
        fast = random_inputs(g, 3)
        reference._role_scale = role_scale_per_tensor
        try:
            slow = random_inputs(g, 3)
        finally:
            reference._role_scale = original
        assert list(fast) == list(slow)
        assert all(fast[k].tobytes() == slow[k].tobytes() for k in fast)
