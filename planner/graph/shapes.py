"""The shape contract of every op type: one check that the spec loader, the cost model and the
numeric kernels all rely on.

:func:`check_op` takes an op type, its attributes and the shapes of its inputs and outputs,
and raises :class:`~planner.graph.ir.GraphError` when they contradict the type: the wrong
number of inputs or outputs, a rank or dimension that does not fit, an attribute of the
wrong form, or a declared output shape that differs from the one the op computes. The
spec loader runs it on every op (so the error names the op's line), the cost model and
the numeric kernels run it on what they are given, so a graph the cost model accepts is
one the numeric reference evaluates.

The contract per type (``stride``, ``padding`` and ``kernel`` are an int or a list of one
or two ints ``(h, w)``; ``axis`` an int in ``[-rank, rank)``):

==============  ======  =======  =====================================================
type            inputs  outputs  output shape
==============  ======  =======  =====================================================
matmul          2-3     1        ``A[..., M, K] @ B[K, N]`` (or ``B[batch..., K, N]``
                                 with A's batch dims): ``[..., M, N]``; a third input
                                 (bias) broadcasts to it
conv2d          2-3     1        ``x[N, C, H, W]``, ``w[F, C/groups, KH, KW]``:
                                 ``[N, F, OH, OW]``, ``OH = (H + 2 pad - KH) // stride + 1``
                                 >= 1; ``groups`` divides C and F; a bias has F values
add, sub, mul   2       1        the numpy broadcast of the two inputs
relu, gelu,     1       1        the input's
sigmoid, tanh
softmax         1       1        the input's
layernorm       1-3     1        the input's; gamma, beta match its trailing axes from ``axis``
maxpool,        1       1        ``x[N, C, H, W]``: ``[N, C, OH, OW]``, kernel and stride
avgpool                          >= 1, ``0 <= padding < kernel``
global_avgpool  1       1        ``x[N, C, ...]`` (rank >= 3): ``[N, C, 1, ...]``
reshape         1       1        any shape of as many elements
transpose       1       1        the input's axes permuted by ``perm`` (default reversed)
concat          >= 1    1        the inputs joined along ``axis``
split           1       >= 1     the input cut along ``axis`` (``sizes`` must agree)
==============  ======  =======  =====================================================

``task`` ops and ops the ONNX importer only costs (attr ``fallback``) have no contract.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

from planner.graph.ir import Graph, GraphError, Op

__all__ = ["CHECKED_OP_TYPES", "check_op", "check_graph_op", "window_pair", "normalized_axis"]

Shape = tuple[int, ...]


def _fail(message: str) -> GraphError:
    return GraphError(message)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(f"attr {what} must be an integer, got {value!r:.40}")
    return value


def window_pair(attrs: Mapping[str, Any], key: str, default: int) -> tuple[int, int]:
    """An int or a list of one or two ints ``(h, w)``.

    Examples
    --------
    >>> window_pair({"stride": [2, 3]}, "stride", 1), window_pair({}, "padding", 0)
    ((2, 3), (0, 0))
    >>> window_pair({"kernel": [1, 2, 3]}, "kernel", 1)
    Traceback (most recent call last):
    ...
    planner.graph.ir.GraphError: attr 'kernel' must be an int or a list of one or two ints, got [1, 2, 3]
    """
    v = attrs.get(key, default)
    if isinstance(v, (list, tuple)):
        if len(v) not in (1, 2):
            raise _fail(f"attr {key!r} must be an int or a list of one or two ints, got {list(v)}")
        h = _int(v[0], repr(key))
        return h, _int(v[-1], repr(key))
    v = _int(v, repr(key))
    return v, v


def normalized_axis(op_type: str, attrs: Mapping[str, Any], rank: int, default: int) -> int:
    """Attr ``axis`` in ``[0, rank)`` (negative counts from the end).

    Examples
    --------
    >>> normalized_axis("softmax", {"axis": -1}, 3, 0)
    2
    >>> normalized_axis("softmax", {"axis": 3}, 3, 0)
    Traceback (most recent call last):
    ...
    planner.graph.ir.GraphError: softmax: axis 3 is out of range for rank 3
    """
    axis = _int(attrs.get("axis", default), "'axis'")
    if not -rank <= axis < max(rank, 1):
        raise _fail(f"{op_type}: axis {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


def _arity(op_type: str, count: int, low: int, high: int | None, what: str = "inputs") -> None:
    if count < low or (high is not None and count > high):
        want = (str(low) if low == high else f"{low} to {high}" if high is not None else f"at least {low}")
        raise _fail(f"{op_type} takes {want} {what}, got {count}")


def _declared(op_type: str, computed: Shape, declared: Shape, which: str = "the output") -> None:
    if tuple(computed) != tuple(declared):
        raise _fail(f"{op_type} computes shape {tuple(computed)} but {which} is declared {tuple(declared)}")


def _broadcast(a: Shape, b: Shape) -> Shape | None:
    """numpy's broadcast of two shapes, or None."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(reversed(out))


def _matmul(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    a, b = ins[0], ins[1]
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise _fail(f"matmul needs A[..., M, K] and B[..., K, N], got {a} and {b}")
    if len(b) > 2 and b[:-2] != a[:-2]:
        raise _fail(f"matmul: batch dimensions of {a} and {b} differ")
    out = (*a[:-1], b[-1])
    _declared("matmul", out, outs[0])
    if len(ins) == 3 and _broadcast(out, ins[2]) != out:
        raise _fail(f"matmul: bias {ins[2]} does not broadcast to the output {out}")


def _conv2d(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    x, w = ins[0], ins[1]
    if len(x) != 4 or len(w) != 4:
        raise _fail(f"conv2d needs x[N,C,H,W] and w[F,C/groups,KH,KW], got {x} and {w}")
    groups = _int(attrs.get("groups", 1), "'groups'")
    n, c, h, wd = x
    f, cg, kh, kw = w
    if groups < 1 or c % groups or f % groups or cg != c // groups:
        raise _fail(f"conv2d: channels {c}, filters {f}, weight {w} do not fit groups={groups}")
    (sh, sw), (ph, pw) = window_pair(attrs, "stride", 1), window_pair(attrs, "padding", 0)
    if min(sh, sw) < 1 or min(ph, pw) < 0:
        raise _fail(f"conv2d: stride {(sh, sw)} must be >= 1 and padding {(ph, pw)} >= 0")
    oh, ow = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
    if oh < 1 or ow < 1:
        raise _fail(f"conv2d: a {kh}x{kw} kernel does not fit the padded {h}x{wd} input")
    _declared("conv2d", (n, f, oh, ow), outs[0])
    if len(ins) == 3 and math.prod(ins[2]) != f:
        raise _fail(f"conv2d: bias {ins[2]} must have one value per filter ({f})")


def _elementwise(op_type: str) -> Callable[[Mapping[str, Any], Sequence[Shape], Sequence[Shape]], None]:
    def check(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
        out = ins[0] if len(ins) == 1 else _broadcast(ins[0], ins[1])
        if out is None:
            raise _fail(f"{op_type}: shapes {ins[0]} and {ins[1]} do not broadcast")
        _declared(op_type, out, outs[0])
    return check


def _softmax(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    normalized_axis("softmax", attrs, len(ins[0]), -1)
    _declared("softmax", ins[0], outs[0])


def _layernorm(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    x = ins[0]
    axis = normalized_axis("layernorm", attrs, len(x), -1)
    eps = attrs.get("epsilon", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
        raise _fail(f"layernorm: attr 'epsilon' must be a finite number >= 0, got {eps!r:.40}")
    for name, p in zip(("gamma", "beta"), ins[1:]):
        if len(p) > len(x) - axis or tuple(p) != tuple(x[len(x) - len(p):]):
            raise _fail(f"layernorm: {name} {p} must match the normalised axes {x[axis:]}")
    _declared("layernorm", x, outs[0])


def _pool(op_type: str) -> Callable[[Mapping[str, Any], Sequence[Shape], Sequence[Shape]], None]:
    def check(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
        x = ins[0]
        if len(x) != 4:
            raise _fail(f"{op_type} needs x[N,C,H,W], got {x}")
        (kh, kw), (sh, sw) = window_pair(attrs, "kernel", 1), window_pair(attrs, "stride", 1)
        ph, pw = window_pair(attrs, "padding", 0)
        if min(kh, kw, sh, sw) < 1 or not (0 <= ph < kh and 0 <= pw < kw):
            raise _fail(f"{op_type}: kernel {(kh, kw)} and stride {(sh, sw)} must be >= 1 "
                        f"and 0 <= padding {(ph, pw)} < kernel")
        n, c, h, wd = x
        oh, ow = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
        if oh < 1 or ow < 1:
            raise _fail(f"{op_type}: a {kh}x{kw} window does not fit the padded {h}x{wd} input")
        _declared(op_type, (n, c, oh, ow), outs[0])
    return check


def _global_avgpool(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    x = ins[0]
    if len(x) < 3:
        raise _fail(f"global_avgpool needs x[N, C, spatial...], got {x}")
    _declared("global_avgpool", (*x[:2], *(1,) * (len(x) - 2)), outs[0])


def _reshape(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    if math.prod(ins[0]) != math.prod(outs[0]):
        raise _fail(f"reshape cannot turn {ins[0]} ({math.prod(ins[0])} elements) into {outs[0]}")


def _transpose(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    x = ins[0]
    perm = attrs.get("perm", list(range(len(x) - 1, -1, -1)))
    if not isinstance(perm, (list, tuple)):
        raise _fail(f"transpose: attr 'perm' must be a list of axes, got {perm!r:.40}")
    perm = [_int(p, "'perm'") for p in perm]
    rank = max(len(x), 1)
    if len(perm) != len(x) or any(not -rank <= p < rank for p in perm) or sorted(p % rank for p in perm) != list(
            range(len(x))):
        raise _fail(f"transpose: perm {perm} is not a permutation of {len(x)} axes")
    _declared("transpose", tuple(x[p] for p in perm), outs[0])


def _concat(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    rank = len(ins[0])
    if rank == 0:
        raise _fail("concat: the inputs must have rank >= 1")
    axis = normalized_axis("concat", attrs, rank, 0)
    rest = [s[:axis] + s[axis + 1:] for s in ins]
    if any(len(s) != rank for s in ins) or any(r != rest[0] for r in rest):
        raise _fail(f"concat along axis {axis}: shapes {[tuple(s) for s in ins]} do not fit")
    _declared("concat", (*ins[0][:axis], sum(s[axis] for s in ins), *ins[0][axis + 1:]), outs[0])


def _split(attrs: Mapping[str, Any], ins: Sequence[Shape], outs: Sequence[Shape]) -> None:
    x = ins[0]
    if not x:
        raise _fail("split: the input must have rank >= 1")
    axis = normalized_axis("split", attrs, len(x), 0)
    if any(len(s) != len(x) or s[:axis] + s[axis + 1:] != x[:axis] + x[axis + 1:] for s in outs):
        raise _fail(f"split: outputs {[tuple(s) for s in outs]} must have the shape of the input {x} "
                    f"but along axis {axis}")
    sizes = [s[axis] for s in outs]
    given = attrs.get("sizes")
    if given is not None and (not isinstance(given, (list, tuple))
                              or [_int(v, "'sizes'") for v in given] != sizes):
        raise _fail(f"split: attr sizes {given!r:.60} differ from the outputs' sizes {sizes}")
    if sum(sizes) != x[axis]:
        raise _fail(f"split: output sizes {sizes} do not add up to axis {axis} of {x}")


# type -> (inputs low, high, outputs low, high, check of the shapes); None: no upper bound.
_CONTRACT: dict[str, tuple[int, int | None, int, int | None, Callable]] = {
    "matmul": (2, 3, 1, 1, _matmul),
    "conv2d": (2, 3, 1, 1, _conv2d),
    **{t: (2, 2, 1, 1, _elementwise(t)) for t in ("add", "sub", "mul")},
    **{t: (1, 1, 1, 1, _elementwise(t)) for t in ("relu", "gelu", "sigmoid", "tanh")},
    "softmax": (1, 1, 1, 1, _softmax),
    "layernorm": (1, 3, 1, 1, _layernorm),
    "maxpool": (1, 1, 1, 1, _pool("maxpool")),
    "avgpool": (1, 1, 1, 1, _pool("avgpool")),
    "global_avgpool": (1, 1, 1, 1, _global_avgpool),
    "reshape": (1, 1, 1, 1, _reshape),
    "transpose": (1, 1, 1, 1, _transpose),
    "concat": (1, None, 1, 1, _concat),
    "split": (1, 1, 1, None, _split),
}

#: The op types with a shape contract (every type of the cost model but ``task``).
CHECKED_OP_TYPES: tuple[str, ...] = tuple(sorted(_CONTRACT))


def check_op(op_type: str, attrs: Mapping[str, Any], input_shapes: Sequence[Sequence[int]],
             output_shapes: Sequence[Sequence[int]]) -> None:
    """Raise GraphError unless the shapes and attributes fit the op type's contract.

    Parameters
    ----------
    op_type : str
        The op's type; ``task``, unknown types and fallbacks (attr ``fallback``) pass.
    attrs : mapping
        The op's attributes.
    input_shapes, output_shapes : sequences of shapes
        In the op's input and output order.

    Raises
    ------
    GraphError
        The first contradiction, in words (the caller adds the op's name).

    Examples
    --------
    >>> check_op("matmul", {}, [(2, 3), (3, 4)], [(2, 4)])
    >>> check_op("avgpool", {"kernel": 3, "stride": 3}, [(1, 4, 8, 8)], [(1, 4, 3, 3)])
    Traceback (most recent call last):
    ...
    planner.graph.ir.GraphError: avgpool computes shape (1, 4, 2, 2) but the output is declared (1, 4, 3, 3)
    >>> check_op("add", {}, [(2, 3)], [(2, 3)])
    Traceback (most recent call last):
    ...
    planner.graph.ir.GraphError: add takes 2 inputs, got 1
    """
    contract = _CONTRACT.get(op_type)
    if contract is None or attrs.get("fallback"):
        return
    low, high, out_low, out_high, check = contract
    _arity(op_type, len(input_shapes), low, high)
    _arity(op_type, len(output_shapes), out_low, out_high, "outputs")
    check(attrs, [tuple(s) for s in input_shapes], [tuple(s) for s in output_shapes])


def check_graph_op(op: Op, graph: Graph) -> None:
    """:func:`check_op` on an op of ``graph``; the GraphError names the op.

    Examples
    --------
    >>> from planner.graph.ir import Tensor
    >>> g = Graph([Tensor("x", (1, 4, 8, 8), kind="input"), Tensor("y", (1, 4, 3, 3), kind="output")],
    ...           [Op("p", "maxpool", ("x",), ("y",), {"kernel": 2, "stride": 2})])
    >>> check_graph_op(g.ops["p"], g)
    Traceback (most recent call last):
    ...
    planner.graph.ir.GraphError: op 'p': maxpool computes shape (1, 4, 4, 4) but the output is declared (1, 4, 3, 3)
    """
    if op.type not in _CONTRACT:
        return
    tensors = graph.tensors
    try:
        check_op(op.type, op.attrs, [tensors[t].shape for t in op.inputs], [tensors[t].shape for t in op.outputs])
    except GraphError as e:
        raise GraphError(f"op {op.name!r}: {e}", op=op.name) from None
