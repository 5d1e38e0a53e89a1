"""Built-in generators: op counts, shapes, the op/shape contract of the cost model."""

import math
import re

import pytest

from planner.graph import GENERATOR_PARAMS, Graph, conv_output_size, generate
from planner.spec.models import MlpGenerator, ResnetGenerator, TransformerGenerator


def shapes(tensors):
    return {t.name: t.shape for t in tensors}


@pytest.mark.parametrize("layers, heads", [(1, 1), (2, 4), (6, 8)])
def test_transformer_op_count(layers, heads):
    tensors, ops = generate("transformer", {"layers": layers, "heads": heads, "d_model": 64, "seq": 8}, "gpt")
    assert len(ops) == layers * (11 + 4 * heads) + 1
    Graph(tensors, ops)  # valid: acyclic, every tensor known, one producer each


def test_transformer_shapes_and_weights():
    b, s, d, h = 2, 16, 64, 4
    tensors, ops = generate("transformer", {"layers": 1, "heads": h, "d_model": d, "seq": s, "batch": b,
                                            "dtype": "bf16"}, "gpt")
    sh = shapes(tensors)
    dh = d // h
    for j in range(h):
        # attention scores per head: [batch, seq, seq]
        assert sh[f"gpt/layer0/head{j}/scores"] == (b, s, s)
        assert sh[f"gpt/layer0/head{j}/k_t"] == (b, dh, s)
        assert sh[f"gpt/layer0/head{j}/context"] == (b, s, dh)
    assert sh["gpt/layer0/attn_qkv/w"] == (d, 3 * d)
    assert sh["gpt/layer0/mlp_up/w"] == (d, 4 * d)          # d_ff defaults to 4 * d_model
    assert sh["gpt/layer0/mlp_down/y"] == (b, s, d)
    kinds = {t.name: t.kind for t in tensors}
    assert kinds["gpt/x"] == "input" and kinds["gpt/ln_f/y"] == "output"
    weights = [t for t in tensors if t.kind == "weight"]
    # qkv d*3d + out d*d + up d*4d + down 4d*d = 12 d^2, plus 3 layernorms x (gamma, beta) of d
    assert sum(t.num_elements for t in weights) == 12 * d * d + 6 * d
    assert all(t.dtype == "bf16" for t in tensors)
    assert all(op.model == "gpt" and op.name.startswith("gpt/") for op in ops)
    by_name = {op.name: op for op in ops}
    assert by_name["gpt/layer0/head0/scores"].type == "matmul"
    assert by_name["gpt/layer0/head0/scores"].inputs == ("gpt/layer0/head0/q", "gpt/layer0/head0/k_t")
    assert by_name["gpt/layer0/head0/softmax"].attrs == {"axis": -1}
    assert by_name["gpt/layer0/head0/k_t"].attrs == {"perm": [0, 2, 1]}
    assert by_name["gpt/layer0/qkv_split"].attrs == {"axis": 2, "sizes": [dh] * (3 * h)}
    per_layer = [op.type for op in ops if not re.search(r"/head\d+/", op.name)]
    assert per_layer == ["layernorm", "matmul", "split", "concat", "matmul", "add", "layernorm", "matmul",
                         "gelu", "matmul", "add", "layernorm"]   # 11 per layer, then ln_f


def test_matmul_contract_holds_everywhere():
    """Every matmul is A[..., M, K] @ B[K, N] or B[batch..., K, N] -> [..., M, N]."""
    for kind, params in [("transformer", {"layers": 1, "heads": 2, "d_model": 32, "seq": 4}),
                         ("mlp", {"hidden": [16, 8], "in_features": 4, "out_features": 2, "batch": 3}),
                         ("resnet", {"blocks": [1, 1], "width": 8, "image": 32, "classes": 10})]:
        tensors, ops = generate(kind, params, "m")
        sh = shapes(tensors)
        for op in ops:
            if op.type != "matmul":
                continue
            a, b_, y = sh[op.inputs[0]], sh[op.inputs[1]], sh[op.outputs[0]]
            assert a[-1] == b_[-2], op.name
            assert len(b_) == 2 or b_[:-2] == a[:-2], op.name
            assert y == (*a[:-1], b_[-1]), op.name


def test_mlp():
    tensors, ops = generate("mlp", {"layers": 3, "width": 32, "batch": 4}, "m")
    assert [op.type for op in ops] == ["matmul", "relu", "matmul", "relu", "matmul"]  # 2 * 3 - 1
    sh = shapes(tensors)
    assert sh["m/x"] == (4, 32) and sh["m/fc0/w"] == (32, 32) and sh["m/y"] == (4, 32)
    tensors, ops = generate("mlp", {"hidden": [64, 16], "in_features": 8, "out_features": 2,
                                    "activation": "gelu"}, "m")
    sh = shapes(tensors)
    assert [sh[f"m/fc{i}/w"] for i in range(3)] == [(8, 64), (64, 16), (16, 2)]
    assert len(ops) == 5 and ops[1].type == "gelu"
    assert len(generate("mlp", {"layers": 1})[1]) == 1


def test_conv_output_size_arithmetic():
    assert conv_output_size(224, 7, 2, 3) == 112   # (224 + 6 - 7) // 2 + 1
    assert conv_output_size(112, 3, 2, 1) == 56    # (112 + 2 - 3) // 2 + 1
    assert conv_output_size(56, 3, 1, 1) == 56
    assert conv_output_size(56, 1, 2, 0) == 28     # (56 - 1) // 2 + 1
    assert conv_output_size(7, 3, 2, 1) == 4       # odd sizes round up: (7 + 2 - 3) // 2 + 1


def test_resnet_shapes_and_counts():
    tensors, ops = generate("resnet", {}, "r")     # ResNet-18 layout: blocks [2, 2, 2, 2]
    assert len(ops) == 6 + 5 * 8 + 3 == 49
    sh = shapes(tensors)
    assert sh["r/x"] == (1, 3, 224, 224)
    assert sh["r/stem/y"] == (1, 64, 112, 112)
    assert sh["r/stem/w"] == (64, 3, 7, 7)
    assert sh["r/stem_pool/y"] == (1, 64, 56, 56)
    assert sh["r/stage1/block0/conv1/y"] == (1, 128, 28, 28)
    assert sh["r/stage1/block0/proj/w"] == (128, 64, 1, 1)
    assert sh["r/stage1/block0/proj/y"] == (1, 128, 28, 28)
    assert sh["r/stage3/block1/relu2/y"] == (1, 512, 7, 7)
    assert sh["r/pool/y"] == (1, 512, 1, 1)
    assert sh["r/fc/y"] == (1, 1000)
    names = [op.name for op in ops]
    assert "r/stage0/block0/proj" not in names     # same channels and size: identity skip
    by_name = {op.name: op for op in ops}
    add = by_name["r/stage1/block0/add"]
    assert add.inputs == ("r/stage1/block0/conv2/y", "r/stage1/block0/proj/y")   # the branch joins
    assert by_name["r/stage1/block0/conv1"].attrs == {"stride": 2, "padding": 1, "groups": 1}
    assert by_name["r/stem_pool"].attrs == {"kernel": 3, "stride": 2, "padding": 1}
    # every conv2d output follows the arithmetic
    for op in ops:
        if op.type == "conv2d":
            n, c, h, w = sh[op.inputs[0]]
            f, cg, kh, kw = sh[op.inputs[1]]
            s, p = op.attrs["stride"], op.attrs["padding"]
            assert cg == c and sh[op.outputs[0]] == (n, f, conv_output_size(h, kh, s, p),
                                                     conv_output_size(w, kw, s, p))
    g = Graph(tensors, ops)
    # the skip path is a real branch: the block's input feeds both conv1 and proj
    assert set(g.consumers("r/stage0/block1/relu2/y")) == {"r/stage1/block0/conv1", "r/stage1/block0/proj"}


@pytest.mark.parametrize("blocks, expected", [([1], 11), ([1, 1, 1, 1], 29), ([3, 4, 6, 3], 6 + 5 * 16 + 3)])
def test_resnet_op_count(blocks, expected):
    assert len(generate("resnet", {"blocks": blocks, "width": 8, "image": 64})[1]) == expected


@pytest.mark.parametrize("kind, params, fragment", [
    ("transformer", {"d_model": 100, "heads": 8}, "d_model (100) must be divisible by heads (8)"),
    ("transformer", {"layers": 0}, "layers must be a positive integer, got 0"),
    ("transformer", {"seq": "128"}, "seq must be a positive integer, got '128'"),
    ("transformer", {"dtype": "fp12"}, "unknown dtype 'fp12'"),
    ("mlp", {"layer": 2}, "unknown parameter 'layer'; did you mean 'layers'?"),
    ("mlp", {"activation": "tanh"}, "activation must be 'relu' or 'gelu'"),
    ("mlp", {"width": True}, "width must be a positive integer"),
    ("resnet", {"image": 8}, "image size 8 is too small for 4 stages"),
    ("resnet", {"blocks": []}, "blocks must be a non-empty list"),
    ("convnet", {}, "unknown generator 'convnet'"),
])
def test_parameter_errors(kind, params, fragment):
    with pytest.raises(ValueError) as info:
        generate(kind, params, "m")
    assert fragment in str(info.value)


def test_spec_models_match_generator_params():
    """The spec's generator models and the generators accept the same parameters."""
    for model, kind in [(MlpGenerator, "mlp"), (TransformerGenerator, "transformer"), (ResnetGenerator, "resnet")]:
        assert set(model.model_fields) - {"kind"} == set(GENERATOR_PARAMS[kind])
        defaults = {k: f.default for k, f in model.model_fields.items() if k != "kind"}
        assert defaults == GENERATOR_PARAMS[kind]


def test_deterministic():
    a = generate("transformer", {"layers": 2}, "g")
    b = generate("transformer", {"layers": 2}, "g")
    assert a == b
    assert math.prod(shapes(a[0])["g/x"]) == 128 * 512
