"""Built-in model generators: ``mlp``, ``transformer`` and ``resnet`` graphs.

Each generator returns ``(tensors, ops)`` ready for :class:`planner.graph.ir.Graph`, with
every name prefixed ``"<model_name>/"`` and every op's ``model`` set. Op types and shapes
follow the contract the cost model relies on:

- ``matmul``: ``A[..., M, K] @ B[K, N]`` (or ``B[batch..., K, N]`` with A's batch dims)
  -> ``[..., M, N]``.
- ``conv2d``: ``x[N, C, H, W]``, ``w[F, C/groups, KH, KW]``, attrs ``stride``,
  ``padding``, ``groups`` -> ``[N, F, OH, OW]`` with
  ``OH = (H + 2*padding - KH) // stride + 1``.
- vector ops ``add``, ``mul``, ``relu``, ``gelu``, ``softmax`` (attr ``axis``),
  ``layernorm`` (inputs ``x, gamma, beta``; attr ``axis``), ``maxpool``/``avgpool``
  (attrs ``kernel``, ``stride``, ``padding``), ``global_avgpool`` (-> ``[N, C, 1, 1]``).
- data movement ``reshape`` (attr ``shape``), ``transpose`` (attr ``perm``), ``concat``
  (attr ``axis``), ``split`` (attrs ``axis``, ``sizes``).

Weights are tensors of kind ``"weight"``, the graph input ``"input"``, the final result
``"output"``, everything else ``"activation"``. Biases and batch normalisation are left
out (folded into the preceding matmul/conv, as inference compilers do).
"""

from __future__ import annotations

import difflib
from typing import Any, Callable, Mapping

from planner.graph.ir import DTYPE_BYTES, Op, Tensor

__all__ = ["GENERATORS", "GENERATOR_PARAMS", "generate", "generator_size", "conv_output_size",
           "inception_graph"]

# kind -> {param: default}; ``None`` marks an optional parameter with a computed default.
GENERATOR_PARAMS: dict[str, dict[str, Any]] = {
    "mlp": {"layers": 3, "width": 512, "hidden": None, "in_features": None,
            "out_features": None, "batch": 1, "activation": "relu", "dtype": "fp32"},
    "transformer": {"layers": 2, "d_model": 512, "heads": 8, "seq": 128, "batch": 1,
                    "d_ff": None, "dtype": "fp16"},
    "resnet": {"blocks": [2, 2, 2, 2], "width": 64, "image": 224, "in_channels": 3,
               "classes": 1000, "batch": 1, "dtype": "fp32"},
}


def conv_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output length of a convolution or pooling window along one axis.

    Examples
    --------
    >>> conv_output_size(224, 7, 2, 3), conv_output_size(112, 3, 2, 1), conv_output_size(56, 1, 2, 0)
    (112, 56, 28)
    """
    return (size + 2 * padding - kernel) // stride + 1


class _Builder:
    """Collects tensors and ops under one model prefix."""

    def __init__(self, model: str, dtype: str) -> None:
        self.model, self.dtype = model, dtype
        self.tensors: list[Tensor] = []
        self.ops: list[Op] = []

    def name(self, local: str) -> str:
        return f"{self.model}/{local}" if self.model else local

    def tensor(self, local: str, shape: tuple[int, ...], kind: str = "activation") -> str:
        t = Tensor(self.name(local), tuple(shape), self.dtype, kind)
        self.tensors.append(t)
        return t.name

    def op(self, local: str, type_: str, inputs: list[str], outputs: list[str],
           **attrs: Any) -> None:
        self.ops.append(Op(self.name(local), type_, tuple(inputs), tuple(outputs), attrs,
                           model=self.model))

    def shape(self, tensor: str) -> tuple[int, ...]:
        for t in reversed(self.tensors):
            if t.name == tensor:
                return t.shape
        raise KeyError(tensor)


def _positive_int(kind: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{kind} generator: {key} must be a positive integer, got {value!r}")
    return value


def _check_params(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    known = GENERATOR_PARAMS[kind]
    for key in params:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"
            raise ValueError(f"{kind} generator: unknown parameter {key!r}{hint}")
    merged = {**known, **params}
    if merged["dtype"] not in DTYPE_BYTES:
        raise ValueError(f"{kind} generator: unknown dtype {merged['dtype']!r}; known: "
                         f"{', '.join(DTYPE_BYTES)}")
    return merged


def _mlp(model: str, p: dict[str, Any]) -> tuple[list[Tensor], list[Op]]:
    """A multilayer perceptron: ``fc<i>`` (matmul) each followed by an activation but the last.

    Ops: ``2 * L - 1`` for ``L`` linear layers (``L = layers``, or ``len(hidden) + 1``).
    """
    if p["hidden"] is not None:
        hidden = p["hidden"]
        if not isinstance(hidden, (list, tuple)):
            raise ValueError(f"mlp generator: hidden must be a list of sizes, got {hidden!r}")
        hidden = [_positive_int("mlp", "hidden[]", h) for h in hidden]
    else:
        layers = _positive_int("mlp", "layers", p["layers"])
        hidden = [_positive_int("mlp", "width", p["width"])] * (layers - 1)
    width = hidden[0] if hidden else _positive_int("mlp", "width", p["width"])
    d_in = _positive_int("mlp", "in_features", p["in_features"] if p["in_features"] else width)
    d_out = _positive_int("mlp", "out_features",
                          p["out_features"] if p["out_features"] else (hidden[-1] if hidden else width))
    batch = _positive_int("mlp", "batch", p["batch"])
    if p["activation"] not in ("relu", "gelu"):
        raise ValueError(f"mlp generator: activation must be 'relu' or 'gelu', got {p['activation']!r}")
    b = _Builder(model, p["dtype"])
    sizes = [d_in, *hidden, d_out]
    x = b.tensor("x", (batch, d_in), "input")
    n = len(sizes) - 1
    for i in range(n):
        w = b.tensor(f"fc{i}/w", (sizes[i], sizes[i + 1]), "weight")
        last = i == n - 1
        y = b.tensor(f"fc{i}/y" if not last else "y", (batch, sizes[i + 1]),
                     "output" if last else "activation")
        b.op(f"fc{i}", "matmul", [x, w], [y])
        if not last:
            a = b.tensor(f"act{i}/y", (batch, sizes[i + 1]))
            b.op(f"act{i}", p["activation"], [y], [a])
            y = a
        x = y
    return b.tensors, b.ops


def _transformer(model: str, p: dict[str, Any]) -> tuple[list[Tensor], list[Op]]:
    """Decoder blocks (pre-layernorm) and a final layernorm.

    Per layer ``l``, with ``d = d_model``, ``h = heads``, ``dh = d / h``, ``S = seq``,
    ``B = batch``: ``ln1`` -> ``attn_qkv`` (``[B,S,d] @ [d,3d]``) -> ``qkv_split`` into
    ``3h`` tensors ``[B,S,dh]``; per head ``k_t`` (transpose to ``[B,dh,S]``), ``scores``
    (``[B,S,dh] @ [B,dh,S] -> [B,S,S]``), ``softmax``, ``context``
    (``[B,S,S] @ [B,S,dh]``); ``heads_concat`` -> ``attn_out`` (``@ [d,d]``) ->
    ``attn_residual`` (add) -> ``ln2`` -> ``mlp_up`` (``@ [d,d_ff]``) -> ``gelu`` ->
    ``mlp_down`` (``@ [d_ff,d]``) -> ``mlp_residual`` (add).

    Ops: ``layers * (11 + 4 * heads) + 1``. Names: ``layer<l>/<op>`` and
    ``layer<l>/head<j>/<op>``; the final op is ``ln_f``.
    """
    layers = _positive_int("transformer", "layers", p["layers"])
    d = _positive_int("transformer", "d_model", p["d_model"])
    h = _positive_int("transformer", "heads", p["heads"])
    s = _positive_int("transformer", "seq", p["seq"])
    bs = _positive_int("transformer", "batch", p["batch"])
    d_ff = _positive_int("transformer", "d_ff", p["d_ff"] if p["d_ff"] is not None else 4 * d)
    if d % h:
        raise ValueError(f"transformer generator: d_model ({d}) must be divisible by heads ({h})")
    dh = d // h
    b = _Builder(model, p["dtype"])

    def layernorm(local: str, x: str, out_kind: str = "activation") -> str:
        g = b.tensor(f"{local}/gamma", (d,), "weight")
        beta = b.tensor(f"{local}/beta", (d,), "weight")
        y = b.tensor(f"{local}/y", (bs, s, d), out_kind)
        b.op(local, "layernorm", [x, g, beta], [y], axis=-1)
        return y

    def linear(local: str, x: str, k: int, n: int) -> str:
        w = b.tensor(f"{local}/w", (k, n), "weight")
        y = b.tensor(f"{local}/y", (bs, s, n))
        b.op(local, "matmul", [x, w], [y])
        return y

    x = b.tensor("x", (bs, s, d), "input")
    for layer in range(layers):
        L = f"layer{layer}"
        n1 = layernorm(f"{L}/ln1", x)
        qkv = linear(f"{L}/attn_qkv", n1, d, 3 * d)
        parts = [b.tensor(f"{L}/head{j}/{w}", (bs, s, dh)) for w in "qkv" for j in range(h)]
        b.op(f"{L}/qkv_split", "split", [qkv], parts, axis=2, sizes=[dh] * (3 * h))
        contexts = []
        for j in range(h):
            H = f"{L}/head{j}"
            q, k, v = parts[j], parts[h + j], parts[2 * h + j]
            kt = b.tensor(f"{H}/k_t", (bs, dh, s))
            b.op(f"{H}/k_t", "transpose", [k], [kt], perm=[0, 2, 1])
            sc = b.tensor(f"{H}/scores", (bs, s, s))
            b.op(f"{H}/scores", "matmul", [q, kt], [sc])
            pr = b.tensor(f"{H}/probs", (bs, s, s))
            b.op(f"{H}/softmax", "softmax", [sc], [pr], axis=-1)
            ctx = b.tensor(f"{H}/context", (bs, s, dh))
            b.op(f"{H}/context", "matmul", [pr, v], [ctx])
            contexts.append(ctx)
        cat = b.tensor(f"{L}/heads_concat", (bs, s, d))
        b.op(f"{L}/heads_concat", "concat", contexts, [cat], axis=2)
        ao = linear(f"{L}/attn_out", cat, d, d)
        r1 = b.tensor(f"{L}/attn_residual", (bs, s, d))
        b.op(f"{L}/attn_residual", "add", [x, ao], [r1])
        n2 = layernorm(f"{L}/ln2", r1)
        up = linear(f"{L}/mlp_up", n2, d, d_ff)
        g = b.tensor(f"{L}/gelu", (bs, s, d_ff))
        b.op(f"{L}/gelu", "gelu", [up], [g])
        down = linear(f"{L}/mlp_down", g, d_ff, d)
        r2 = b.tensor(f"{L}/mlp_residual", (bs, s, d))
        b.op(f"{L}/mlp_residual", "add", [r1, down], [r2])
        x = r2
    layernorm("ln_f", x, "output")
    return b.tensors, b.ops


def _resnet(model: str, p: dict[str, Any]) -> tuple[list[Tensor], list[Op]]:
    """A ResNet-style CNN with basic residual blocks (two 3x3 convs and a skip path).

    ``stem`` (7x7/2 conv, ``width`` filters) -> ``stem_relu`` -> ``stem_pool`` (3x3/2 max
    pool); stage ``s`` has ``blocks[s]`` blocks of ``width * 2**s`` channels; the first
    block of each stage after the first halves H and W (stride 2) and its skip path is a
    1x1/2 ``proj`` conv. Each block: ``conv1`` -> ``relu1`` -> ``conv2`` -> ``add``
    (with the skip) -> ``relu2``. Head: ``pool`` (global_avgpool) -> ``flatten`` (reshape)
    -> ``fc`` (matmul to ``classes``).

    Ops: ``6 + 5 * sum(blocks) + (len(blocks) - 1)``; for ``[2, 2, 2, 2]`` that is 49.
    """
    blocks = p["blocks"]
    if isinstance(blocks, int) and not isinstance(blocks, bool):
        blocks = [blocks] * 4
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise ValueError(f"resnet generator: blocks must be a non-empty list of per-stage block "
                         f"counts, got {blocks!r}")
    blocks = [_positive_int("resnet", "blocks[]", n) for n in blocks]
    width = _positive_int("resnet", "width", p["width"])
    image = _positive_int("resnet", "image", p["image"])
    c_in = _positive_int("resnet", "in_channels", p["in_channels"])
    classes = _positive_int("resnet", "classes", p["classes"])
    n = _positive_int("resnet", "batch", p["batch"])
    # The stem conv, the stem pool and each stage after the first halve H and W.
    if image < 2 ** (len(blocks) + 1):
        raise ValueError(f"resnet generator: image size {image} is too small for "
                         f"{len(blocks)} stages (need at least {2 ** (len(blocks) + 1)})")
    b = _Builder(model, p["dtype"])

    def conv(local: str, x: str, filters: int, k: int, stride: int, pad: int) -> str:
        _, c, hh, ww = b.shape(x)
        w = b.tensor(f"{local}/w", (filters, c, k, k), "weight")
        y = b.tensor(f"{local}/y", (n, filters, conv_output_size(hh, k, stride, pad),
                                    conv_output_size(ww, k, stride, pad)))
        b.op(local, "conv2d", [x, w], [y], stride=stride, padding=pad, groups=1)
        return y

    def unary(local: str, type_: str, x: str, **attrs: Any) -> str:
        y = b.tensor(f"{local}/y", b.shape(x))
        b.op(local, type_, [x], [y], **attrs)
        return y

    x = b.tensor("x", (n, c_in, image, image), "input")
    x = unary("stem_relu", "relu", conv("stem", x, width, 7, 2, 3))
    _, c, hh, ww = b.shape(x)
    pooled = b.tensor("stem_pool/y", (n, c, conv_output_size(hh, 3, 2, 1), conv_output_size(ww, 3, 2, 1)))
    b.op("stem_pool", "maxpool", [x], [pooled], kernel=3, stride=2, padding=1)
    x = pooled
    for stage, count in enumerate(blocks):
        channels = width * 2 ** stage
        for blk in range(count):
            P = f"stage{stage}/block{blk}"
            stride = 2 if stage > 0 and blk == 0 else 1
            y = conv(f"{P}/conv1", x, channels, 3, stride, 1)
            y = unary(f"{P}/relu1", "relu", y)
            y = conv(f"{P}/conv2", y, channels, 3, 1, 1)
            skip = x
            if stride != 1 or b.shape(x)[1] != channels:
                skip = conv(f"{P}/proj", x, channels, 1, stride, 0)
            s = b.tensor(f"{P}/add/y", b.shape(y))
            b.op(f"{P}/add", "add", [y, skip], [s])
            x = unary(f"{P}/relu2", "relu", s)
    c = b.shape(x)[1]
    g = b.tensor("pool/y", (n, c, 1, 1))
    b.op("pool", "global_avgpool", [x], [g])
    f = b.tensor("flatten/y", (n, c))
    b.op("flatten", "reshape", [g], [f], shape=[n, c])
    w = b.tensor("fc/w", (c, classes), "weight")
    y = b.tensor("fc/y", (n, classes), "output")
    b.op("fc", "matmul", [f, w], [y])
    return b.tensors, b.ops


def inception_graph(model: str = "", modules: int = 4, channels: int = 64, image: int = 28,
                    in_channels: int = 3, classes: int = 10, batch: int = 1,
                    dtype: str = "fp16") -> tuple[list[Tensor], list[Op]]:
    """A branchy CNN: stacked inception-style modules (benchmarks' scale graphs).

    ``stem`` (3x3 conv to ``channels``) -> ``stem_relu``, then ``modules`` modules, each with
    four parallel branches on the module's input, concatenated along the channels:
    ``b1`` (1x1 conv, relu), ``b3`` (1x1 conv, relu, 3x3 conv, relu), ``b5`` (1x1 conv, relu,
    5x5 conv, relu), ``pool`` (3x3/1 max pool, 1x1 conv, relu); each branch has
    ``channels / 4`` filters, so every module keeps ``channels`` channels and the image
    size. Head: ``pool`` (global_avgpool) -> ``flatten`` -> ``fc``.

    Ops: ``5 + 14 * modules`` (10,000 ops: ``modules=714``). Not a spec generator kind (the
    spec's generator models do not list it): benchmarks build the graph directly.

    Examples
    --------
    >>> tensors, ops = inception_graph("net", modules=2, channels=16, image=8)
    >>> len(ops), ops[2].name, [o.type for o in ops if o.name.startswith("net/module0/b3/")]
    (33, 'net/module0/b1/conv', ['conv2d', 'relu', 'conv2d', 'relu'])
    >>> {t.name: t.shape for t in tensors}["net/module1/concat/y"]
    (1, 16, 8, 8)
    """
    for key, value in (("modules", modules), ("channels", channels), ("image", image),
                       ("in_channels", in_channels), ("classes", classes), ("batch", batch)):
        _positive_int("inception", key, value)
    if channels % 4:
        raise ValueError(f"inception generator: channels ({channels}) must be divisible by 4")
    b = _Builder(model, dtype)

    def conv(local: str, x: str, filters: int, k: int) -> str:
        """A same-size k x k convolution followed by its relu (``<local>_relu``)."""
        n, c, hh, ww = b.shape(x)
        w = b.tensor(f"{local}/w", (filters, c, k, k), "weight")
        y = b.tensor(f"{local}/y", (n, filters, hh, ww))
        b.op(local, "conv2d", [x, w], [y], stride=1, padding=k // 2, groups=1)
        return _unary(b, f"{local}_relu", "relu", y)

    x = conv("stem", b.tensor("x", (batch, in_channels, image, image), "input"), channels, 3)
    q = channels // 4
    for m in range(modules):
        M = f"module{m}"
        b1 = conv(f"{M}/b1/conv", x, q, 1)
        b3 = conv(f"{M}/b3/conv3", conv(f"{M}/b3/reduce", x, q, 1), q, 3)
        b5 = conv(f"{M}/b5/conv5", conv(f"{M}/b5/reduce", x, q, 1), q, 5)
        pooled = b.tensor(f"{M}/pool/max/y", b.shape(x))
        b.op(f"{M}/pool/max", "maxpool", [x], [pooled], kernel=3, stride=1, padding=1)
        bp = conv(f"{M}/pool/conv", pooled, q, 1)
        cat = b.tensor(f"{M}/concat/y", (batch, channels, image, image))
        b.op(f"{M}/concat", "concat", [b1, b3, b5, bp], [cat], axis=1)
        x = cat
    g = b.tensor("pool/y", (batch, channels, 1, 1))
    b.op("pool", "global_avgpool", [x], [g])
    f = b.tensor("flatten/y", (batch, channels))
    b.op("flatten", "reshape", [g], [f], shape=[batch, channels])
    w = b.tensor("fc/w", (channels, classes), "weight")
    b.op("fc", "matmul", [f, w], [b.tensor("fc/y", (batch, classes), "output")])
    return b.tensors, b.ops


def _unary(b: _Builder, local: str, type_: str, x: str) -> str:
    y = b.tensor(f"{local}/y", b.shape(x))
    b.op(local, type_, [x], [y])
    return y


GENERATORS: dict[str, Callable[[str, dict[str, Any]], tuple[list[Tensor], list[Op]]]] = {
    "mlp": _mlp, "transformer": _transformer, "resnet": _resnet,
}


def generator_size(kind: str, params: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """``(ops, tensors)`` a generator would make, computed from its parameters alone.

    For checking a size limit before anything is built (``layers: 10**10`` must not spin).

    Raises
    ------
    ValueError
        Unknown kind or parameter, or a count that is not a positive integer.

    Examples
    --------
    >>> generator_size("transformer", {"layers": 2, "heads": 4})  # 2 * (11 + 4 * 4) + 1 ops
    (55, 96)
    >>> generator_size("resnet", {"blocks": [2, 2, 2, 2]}), generator_size("mlp", {"layers": 3})
    ((49, 71), (5, 9))
    """
    if kind not in GENERATORS:
        raise ValueError(f"unknown generator {kind!r} (known: {', '.join(GENERATORS)})")
    p = _check_params(kind, dict(params or {}))
    if kind == "mlp":
        if p["hidden"] is not None:
            if not isinstance(p["hidden"], (list, tuple)):
                raise ValueError(f"mlp generator: hidden must be a list of sizes, got {p['hidden']!r}")
            linear = len(p["hidden"]) + 1
        else:
            linear = _positive_int("mlp", "layers", p["layers"])
        return 2 * linear - 1, 3 * linear
    if kind == "transformer":
        layers = _positive_int("transformer", "layers", p["layers"])
        heads = _positive_int("transformer", "heads", p["heads"])
        return layers * (11 + 4 * heads) + 1, layers * (18 + 7 * heads) + 4
    blocks = p["blocks"]
    if isinstance(blocks, int) and not isinstance(blocks, bool):
        blocks = [blocks] * 4
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise ValueError(f"resnet generator: blocks must be a non-empty list of per-stage block counts, got "
                         f"{blocks!r:.60}")
    total = sum(_positive_int("resnet", "blocks[]", n) for n in blocks)
    return 6 + 5 * total + len(blocks) - 1, 9 + 7 * total + 2 * (len(blocks) - 1)


def generate(kind: str, params: Mapping[str, Any] | None = None,
             model_name: str = "") -> tuple[list[Tensor], list[Op]]:
    """Build a model graph from a built-in generator.

    Parameters
    ----------
    kind : {"mlp", "transformer", "resnet"}
        The generator.
    params : mapping, optional
        Generator parameters (missing ones take the defaults in ``GENERATOR_PARAMS``):

        - ``mlp``: ``layers`` (linear layers), ``width`` (hidden size), or ``hidden``
          (list of hidden sizes, overrides both), ``in_features``/``out_features``
          (default: the first/last hidden size), ``batch``, ``activation`` (relu|gelu),
          ``dtype``. Ops: ``2 * layers - 1``.
        - ``transformer``: ``layers``, ``d_model``, ``heads``, ``seq``, ``batch``,
          ``d_ff`` (default ``4 * d_model``), ``dtype``. Ops: ``layers * (11 + 4 * heads) + 1``.
        - ``resnet``: ``blocks`` (per-stage block counts), ``width`` (stem channels),
          ``image`` (input H = W), ``in_channels``, ``classes``, ``batch``, ``dtype``.
          Ops: ``6 + 5 * sum(blocks) + len(blocks) - 1``.
    model_name : str
        Prefix of every op and tensor name (``"<model_name>/..."``); also each op's ``model``.

    Returns
    -------
    tensors, ops : list of Tensor, list of Op
        In declaration (topological) order.

    Raises
    ------
    ValueError
        Unknown kind or parameter, or a parameter of the wrong type or value.

    Examples
    --------
    >>> tensors, ops = generate("transformer", {"layers": 2, "heads": 4, "d_model": 64, "seq": 16}, "gpt")
    >>> len(ops) == 2 * (11 + 4 * 4) + 1
    True
    >>> ops[0].name, ops[0].model
    ('gpt/layer0/ln1', 'gpt')
    >>> shapes = {t.name: t.shape for t in tensors}
    >>> shapes["gpt/layer0/head0/scores"]
    (1, 16, 16)
    >>> [op.type for op in generate("mlp", {"layers": 2, "width": 8})[1]]
    ['matmul', 'relu', 'matmul']
    >>> generate("mlp", {"layer": 2})
    Traceback (most recent call last):
    ...
    ValueError: mlp generator: unknown parameter 'layer'; did you mean 'layers'?
    """
    if kind not in GENERATORS:
        close = difflib.get_close_matches(str(kind), list(GENERATORS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown generator {kind!r}{hint} (known: {', '.join(GENERATORS)})")
    merged = _check_params(kind, dict(params or {}))
    return GENERATORS[kind](model_name, merged)
