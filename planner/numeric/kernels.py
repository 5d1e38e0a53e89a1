"""The arithmetic of every op type: one numpy kernel per type the cost model knows.

:func:`evaluate_op` is the single definition of what an op computes. The reference
evaluation (:func:`planner.numeric.reference.evaluate`) and the simulator's numeric mode
(``docs/memory.md``) both call it, so a plan's replay and the reference agree by
construction wherever the plan moves the right bytes.

Semantics (attrs are the names the generators and the ONNX importer emit)
--------------------------------------------------------------------------
matmul          ``A[..., M, K] @ B[K, N]`` or ``B[batch..., K, N]`` (numpy ``matmul``);
                an optional third input (a bias) is added with broadcasting.
conv2d          ``x[N, C, H, W] * w[F, C/groups, KH, KW] -> [N, F, OH, OW]``, a
                cross-correlation (as in ONNX and PyTorch); attrs ``stride``,
                ``padding`` (zeros, both sides) and ``groups``; an optional third input
                ``b[F]`` is added per filter. ``OH = (H + 2*padding - KH) // stride + 1``.
add, sub, mul   elementwise with numpy broadcasting.
relu, sigmoid,  elementwise; ``gelu`` is the tanh form
tanh, gelu      ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (``docs/isa.md``).
softmax         over attr ``axis`` (default -1), max-subtracted.
layernorm       inputs ``x[, gamma[, beta]]``; normalises over the axes from attr
                ``axis`` (default -1) to the last (ONNX ``LayerNormalization``), biased
                variance, ``(x - mean) / sqrt(var + epsilon) * gamma + beta``, attr
                ``epsilon`` (default ``1e-5``).
maxpool,        ``x[N, C, H, W]``, attrs ``kernel``, ``stride`` (default 1), ``padding``
avgpool         (default 0, must be ``< kernel``); padded cells never count: a max
                ignores them and an average divides by the number of real cells
                (``count_include_pad = False``, the ONNX default).
global_avgpool  mean over every axis after the first two, kept as size-1 axes.
reshape         to the output shape (attr ``shape`` is informational).
transpose       attr ``perm`` (default: reversed axes).
concat          along attr ``axis`` (default 0).
split           along attr ``axis`` (default 0) into the output shapes (attr ``sizes``
                must agree when given).

``stride``, ``padding`` and ``kernel`` are an int or a list of one or two ints ``(h, w)``.

Dtype policy
------------
Tensors of dtype ``fp32``, ``fp16`` and ``fp64`` are supported (:data:`NUMPY_DTYPES`);
anything else (``bf16``, ``fp8``, integers, ``bool``) raises
:class:`~planner.errors.UnsupportedError`. Every kernel computes in float64 and rounds
once to the output dtype. Why not float32: a float32 matmul on a slice of the rows does
not give the same bits as the whole matmul (BLAS picks other kernels and summation
orders), and near-cancelling sums then differ by more than the ``rtol = 1e-5`` with which
the simulator's numeric mode compares a split plan against the reference. With float64
accumulation the differences sit ~1e-16 below the float32 rounding, so the rounded
results are (almost always bit-) identical whatever the blocking. Results are fresh,
C-contiguous arrays that share no memory with the inputs.

Errors
------
``task`` ops, unknown op types, ops the ONNX importer only costed (``attrs["fallback"]``)
and unsupported dtypes raise :class:`~planner.errors.UnsupportedError`; operands whose
count or shapes contradict the op type raise :class:`~planner.graph.ir.GraphError` from
:func:`planner.graph.shapes.check_op`, the one shape contract the spec loader and the cost
model check too.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from planner.errors import UnsupportedError
from planner.graph.ir import GraphError
from planner.graph.shapes import check_op, normalized_axis, window_pair

__all__ = ["NUMPY_DTYPES", "SUPPORTED_OP_TYPES", "numpy_dtype", "evaluate_op", "prepare_op", "prepare_into"]

#: IR dtype -> numpy dtype, for the dtypes numeric mode supports.
NUMPY_DTYPES: Mapping[str, type] = {"fp32": np.float32, "fp16": np.float16, "fp64": np.float64}

_ACC = np.float64  # every kernel computes in this type (see the module's dtype policy)
# Ops whose every output element is one IEEE operation (add, sub, mul) or an exact selection
# or copy of an input (relu, max pooling, data movement): float32 in, float32 out is exact.
_EXACT_IN_FP32 = frozenset({"add", "sub", "mul", "relu", "maxpool", "reshape", "transpose", "concat", "split"})
_GELU_C = math.sqrt(2.0 / math.pi)


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of an IR dtype, or :class:`UnsupportedError` naming it.

    Examples
    --------
    >>> numpy_dtype("fp16")
    dtype('float16')
    >>> numpy_dtype("bf16")
    Traceback (most recent call last):
    ...
    planner.errors.UnsupportedError: numeric mode cannot evaluate dtype 'bf16' (supported: fp16, fp32, fp64)
    """
    if dtype not in NUMPY_DTYPES:
        raise UnsupportedError(f"numeric mode cannot evaluate dtype {dtype!r} "
                               f"(supported: {', '.join(sorted(NUMPY_DTYPES))})")
    return np.dtype(NUMPY_DTYPES[dtype])


# --------------------------------------------------------------------------- helpers

# Operands are checked against the op type's contract (planner.graph.shapes.check_op, the
# check the spec loader and the cost model run too) before any kernel runs, so the kernels
# below compute without re-checking.
_pair = window_pair
_axis = normalized_axis


def _check_shape(op_type: str, result: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if result.shape != shape:  # a kernel bug: check_op already agreed on the shape
        raise GraphError(f"{op_type} computes shape {result.shape} but the output is declared "
                         f"{shape}")
    return result


# --------------------------------------------------------------------------- kernels
# Each kernel takes (attrs, float64 inputs, output shapes) and returns float64 results.

Kernel = Callable[[Mapping[str, Any], list[np.ndarray], list[tuple[int, ...]]], list[np.ndarray]]


def _matmul(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    a, b = xs[0], xs[1]
    if b.ndim == 2:  # one weight matrix for every batch element: a single 2-D product
        y = (a.reshape(-1, a.shape[-1]) @ b).reshape(*a.shape[:-1], b.shape[-1])
    else:
        y = np.matmul(a, b)
    if len(xs) == 3:
        y = y + xs[2]
    return [y]


def _conv2d(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    x, w = xs[0], xs[1]
    groups = int(attrs.get("groups", 1))
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    sh, sw = _pair(attrs, "stride", 1)
    ph, pw = _pair(attrs, "padding", 0)
    oh, ow = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    # im2col: windows [N, C, OH, OW, KH, KW] -> per group rows (N*OH*OW) x cols (C/g*KH*KW).
    win = sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :oh, :ow]
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
    cols = cols.reshape(groups, n * oh * ow, cg * kh * kw)
    wm = w.reshape(groups, f // groups, cg * kh * kw)
    # One 2-D BLAS product per group (numpy's batched matmul is far slower here).
    y = np.stack([cols[g] @ wm[g].T for g in range(groups)])  # [g, N*OH*OW, F/g]
    y = y.reshape(groups, n, oh, ow, f // groups).transpose(1, 0, 4, 2, 3).reshape(n, f, oh, ow)
    if len(xs) == 3:
        y = y + xs[2].reshape(1, f, 1, 1)
    return [y]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], name: str) -> Kernel:
    def kernel(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
        return [fn(xs[0], xs[1])]
    return kernel


def _unary(fn: Callable[[np.ndarray], np.ndarray], name: str) -> Kernel:
    def kernel(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
        return [fn(xs[0])]
    return kernel


def _gelu(x: np.ndarray) -> np.ndarray:
    # The cube as two products: numpy's float power x ** 3 calls pow() per element, about
    # six times slower than multiplying (the tanh form's one costly step besides tanh).
    return 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * (x * x * x))))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive argument only: no overflow warnings for large |x|.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softmax(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    x = xs[0]
    axis = _axis("softmax", attrs, x.ndim, -1)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return [e / np.sum(e, axis=axis, keepdims=True)]


def _layernorm(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    x = xs[0]
    axis = _axis("layernorm", attrs, x.ndim, -1)
    eps = float(attrs.get("epsilon", 1e-5))
    axes = tuple(range(axis, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    y = centred / np.sqrt(var + eps)
    if len(xs) > 1:
        y = y * xs[1]
    if len(xs) > 2:
        y = y + xs[2]
    return [y]


def _pool(op_type: str) -> Kernel:
    def kernel(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
        x = xs[0]
        kh, kw = _pair(attrs, "kernel", 1)
        sh, sw = _pair(attrs, "stride", 1)
        ph, pw = _pair(attrs, "padding", 0)
        h, wd = x.shape[2:]
        oh, ow = (h + 2 * ph - kh) // sh + 1, (wd + 2 * pw - kw) // sw + 1
        pad = ((0, 0), (0, 0), (ph, ph), (pw, pw))

        def windows(a: np.ndarray) -> np.ndarray:
            return sliding_window_view(a, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw][:, :, :oh, :ow]

        if op_type == "maxpool":
            return [_max_over_windows(np.pad(x, pad, constant_values=-np.inf), kh, kw, sh, sw, oh, ow)]
        total = windows(np.pad(x, pad)).sum(axis=(4, 5))
        # count_include_pad=False: divide by the real cells of each window (padding < kernel,
        # so every window holds at least one).
        count = windows(np.pad(np.ones((1, 1, h, wd)), pad)).sum(axis=(4, 5))
        return [total / count]
    return kernel


def _max_over_windows(padded: np.ndarray, kh: int, kw: int, sh: int, sw: int, oh: int, ow: int) -> np.ndarray:
    """``max`` over every ``kh x kw`` window (strides ``sh``, ``sw``) of the last two axes: the
    same values as ``sliding_window_view(...).max(axis=(4, 5))``, as the element-wise maximum of the
    ``kh * kw`` shifted slices (a reduction over a strided six-axis view took a third of a
    branchy 10^4-op graph's numeric replay).

    >>> a = np.arange(16.0).reshape(1, 1, 4, 4)
    >>> _max_over_windows(a, 2, 2, 2, 2, 2, 2)[0, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
    """
    out = None
    for i in range(kh):
        for j in range(kw):
            part = padded[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            out = part.copy() if out is None else np.maximum(out, part, out=out)
    return out


def _global_avgpool(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    x = xs[0]
    return [np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True)]


def _reshape(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    return [xs[0].reshape(outs[0])]


def _transpose(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    x = xs[0]
    perm = [int(p) for p in attrs.get("perm", range(x.ndim - 1, -1, -1))]
    return [np.transpose(x, perm)]


def _concat(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    axis = _axis("concat", attrs, xs[0].ndim, 0)
    return [np.concatenate(xs, axis=axis)]


def _split(attrs: Mapping[str, Any], xs: list[np.ndarray], outs: list[tuple[int, ...]]) -> list[np.ndarray]:
    x = xs[0]
    axis = _axis("split", attrs, x.ndim, 0)
    sizes = [s[axis] for s in outs]
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


_KERNELS: dict[str, Kernel] = {
    "matmul": _matmul,
    "conv2d": _conv2d,
    "add": _binary(np.add, "add"),
    "sub": _binary(np.subtract, "sub"),
    "mul": _binary(np.multiply, "mul"),
    "relu": _unary(lambda x: np.maximum(x, 0.0), "relu"),
    "gelu": _unary(_gelu, "gelu"),
    "sigmoid": _unary(_sigmoid, "sigmoid"),
    "tanh": _unary(np.tanh, "tanh"),
    "softmax": _softmax,
    "layernorm": _layernorm,
    "maxpool": _pool("maxpool"),
    "avgpool": _pool("avgpool"),
    "global_avgpool": _global_avgpool,
    "reshape": _reshape,
    "transpose": _transpose,
    "concat": _concat,
    "split": _split,
}

#: Op types :func:`evaluate_op` computes (every type of :mod:`planner.isa.cost` but ``task``).
SUPPORTED_OP_TYPES: tuple[str, ...] = tuple(sorted(_KERNELS))


def evaluate_op(op_type: str, attrs: Mapping[str, Any], inputs: Sequence[np.ndarray],
                output_shapes: Sequence[tuple[int, ...]], output_dtypes: Sequence[str]) -> list[np.ndarray]:
    """The values one op computes from its input values.

    Parameters
    ----------
    op_type : str
        The op's type (``Op.type``); see the module docstring for each type's semantics.
    attrs : mapping
        The op's attributes (``Op.attrs``): ints or lists of ints as the IR holds them.
    inputs : sequence of numpy.ndarray
        The input values, in ``Op.inputs`` order (any float dtype; read as float64).
    output_shapes : sequence of tuple of int
        The declared shape of each output, in ``Op.outputs`` order.
    output_dtypes : sequence of str
        The IR dtype of each output (``"fp32"``, ``"fp16"`` or ``"fp64"``).

    Returns
    -------
    list of numpy.ndarray
        One fresh C-contiguous array per output, of its shape and dtype, computed in
        float64 and rounded once.

    Raises
    ------
    UnsupportedError
        ``task`` and unknown op types, ops the ONNX importer only costed (attr
        ``fallback``), and dtypes other than fp32/fp16/fp64 (inputs or outputs).
    GraphError
        Inputs or outputs whose number or shapes contradict the op type.

    Examples
    --------
    A matmul with a bias, ``[[1, 2], [3, 4]] @ [[5, 6], [7, 8]] + [10, 20]``:

    >>> import numpy as np
    >>> a = np.array([[1, 2], [3, 4]], np.float32)
    >>> b = np.array([[5, 6], [7, 8]], np.float32)
    >>> evaluate_op("matmul", {}, [a, b, np.array([10, 20], np.float32)], [(2, 2)], ["fp32"])[0]
    array([[29., 42.],
           [53., 70.]], dtype=float32)
    >>> evaluate_op("softmax", {"axis": -1}, [np.zeros((1, 4), np.float32)], [(1, 4)], ["fp32"])[0]
    array([[0.25, 0.25, 0.25, 0.25]], dtype=float32)
    >>> [y.tolist() for y in evaluate_op("split", {"axis": 0, "sizes": [1, 2]},
    ...                                  [np.arange(3.0)], [(1,), (2,)], ["fp64", "fp64"])]
    [[0.0], [1.0, 2.0]]
    >>> evaluate_op("task", {}, [], [], [])
    Traceback (most recent call last):
    ...
    planner.errors.UnsupportedError: numeric mode cannot evaluate op type 'task': it has no arithmetic meaning
    """
    run = prepare_op(op_type, attrs, output_shapes, output_dtypes)
    with np.errstate(all="ignore"):  # inf/NaN propagate as values; the caller checks finiteness
        return run(inputs)


def prepare_op(op_type: str, attrs: Mapping[str, Any], output_shapes: Sequence[tuple[int, ...]],
               output_dtypes: Sequence[str]) -> Callable[[Sequence[np.ndarray]], list[np.ndarray]]:
    """:func:`evaluate_op` with the op fixed: checks the op once, returns ``inputs -> outputs``.

    For callers that run one op many times (the simulator's numeric mode). The returned
    function does not set ``np.errstate``; wrap the calls in it to silence inf/NaN warnings.

    Examples
    --------
    >>> import numpy as np
    >>> relu = prepare_op("relu", {}, [(3,)], ["fp32"])
    >>> relu([np.array([-1, 0, 2], np.float32)])[0]
    array([0., 0., 2.], dtype=float32)
    """
    if op_type == "task":
        raise UnsupportedError("numeric mode cannot evaluate op type 'task': it has no arithmetic meaning")
    kernel = _KERNELS.get(op_type)
    if kernel is None:
        raise UnsupportedError(f"numeric mode cannot evaluate op type {op_type!r}: unknown op type "
                               f"(known: {', '.join(SUPPORTED_OP_TYPES)})")
    if attrs.get("fallback"):
        raise UnsupportedError(
            f"numeric mode cannot evaluate op type {op_type!r} imported as a stand-in for ONNX op "
            f"{attrs.get('onnx_op', '?')!r}: the importer only costs it, its arithmetic is unknown")
    shapes = [tuple(int(d) for d in s) for s in output_shapes]
    if len(shapes) != len(output_dtypes):
        raise GraphError(f"{op_type}: {len(shapes)} output shapes but {len(output_dtypes)} output dtypes")
    dtypes = [numpy_dtype(d) for d in output_dtypes]
    pairs = list(zip(shapes, dtypes))
    supported = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
    fp32 = np.dtype(np.float32)
    # One correctly rounded operation (or none) per element: computing in float32 gives the
    # same bits as float64 rounded once, so fp32-only operands skip the widening.
    exact_in_fp32 = op_type in _EXACT_IN_FP32 and all(d == fp32 for d in dtypes)

    def run(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        xs = []
        narrow = exact_in_fp32
        for x in inputs:
            x = np.asarray(x)
            if x.dtype not in supported:
                raise UnsupportedError(f"numeric mode cannot evaluate {op_type} on an input of numpy dtype "
                                       f"{x.dtype} (supported: fp16, fp32, fp64)")
            narrow = narrow and x.dtype == fp32
            xs.append(x)
        check_op(op_type, attrs, [x.shape for x in xs], shapes)
        if not narrow:
            xs = [x.astype(_ACC, copy=False) for x in xs]
        results = kernel(attrs, xs, shapes)
        if len(results) != len(pairs):
            raise GraphError(f"{op_type} computes {len(results)} outputs but {len(pairs)} are declared")
        return [np.ascontiguousarray(_check_shape(op_type, r, shape).astype(d))
                for r, (shape, d) in zip(results, pairs)]

    return run


_FP32 = np.dtype(np.float32)
_SUPPORTED = frozenset(np.dtype(t) for t in NUMPY_DTYPES.values())


def _fast_into(op_type: str, attrs: Mapping[str, Any], xs: Sequence[np.ndarray],
               ts: Sequence[np.ndarray]) -> Callable[[], None] | None:
    """A cheaper step for the common tiny kernels on fp32 operands, or None.

    Only where the shapes were checked here and the result has the bits the general path
    gives: the same numpy operations in the same order (float64 where it widens), written
    through a cast-on-assignment (the same rounding as ``astype``).

    One function because it is one dispatch over op types, each branch a few lines that
    must match the general kernel it shortcuts; split, the branches would only be renamed.
    """
    if len(ts) != 1 or any(x.dtype != _FP32 for x in xs) or ts[0].dtype != _FP32:
        return None
    t = ts[0]
    if op_type in ("add", "sub", "mul") and len(xs) == 2:
        try:
            if np.broadcast_shapes(xs[0].shape, xs[1].shape) != t.shape:
                return None
        except ValueError:
            return None
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op_type]
        a, b = xs
        def binary() -> None:  # fp32 in, fp32 out: one IEEE operation per element (exact)
            fn(a, b, out=t)
        return binary
    if op_type == "relu" and len(xs) == 1 and xs[0].shape == t.shape:
        x = xs[0]
        def relu() -> None:
            np.maximum(x, 0.0, out=t)
        return relu
    if op_type == "matmul" and len(xs) in (2, 3):
        a, b = xs[0], xs[1]
        if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2] or t.shape != a.shape[:-1] + b.shape[-1:]:
            return None
        if len(xs) == 3 and xs[2].ndim > 1:
            return None
        acc = _ACC
        if b.ndim == 2:  # as _matmul: one 2-D product
            a2, t2 = a.reshape(-1, a.shape[-1]), t.reshape(-1, b.shape[-1])
            if len(xs) == 2:
                def mm() -> None:
                    t2[...] = a2.astype(acc) @ b.astype(acc)
                return mm
            c = xs[2]
            if c.ndim == 1 and c.shape[0] != b.shape[-1]:
                return None

            def mm_bias() -> None:
                t2[...] = a2.astype(acc) @ b.astype(acc) + c.astype(acc)
            return mm_bias
        if b.shape[:-2] != a.shape[:-2] or len(xs) == 3:
            return None

        def bmm() -> None:
            t[...] = np.matmul(a.astype(acc), b.astype(acc))
        return bmm
    if op_type == "transpose" and len(xs) == 1:
        x = xs[0]
        perm = [int(p) for p in attrs.get("perm", range(x.ndim - 1, -1, -1))]
        if sorted(perm) != list(range(x.ndim)) or tuple(x.shape[p] for p in perm) != t.shape:
            return None
        xt = np.transpose(x, perm)  # a fixed strided view of the input's bytes
        return lambda: t.__setitem__(Ellipsis, xt)
    if op_type == "reshape" and len(xs) == 1 and xs[0].size == t.size:
        xr = xs[0].reshape(t.shape)
        return lambda: t.__setitem__(Ellipsis, xr)
    if op_type == "concat" and xs and all(x.ndim == t.ndim >= 1 for x in xs):
        axis = int(attrs.get("axis", 0))
        if not -t.ndim <= axis < t.ndim:
            return None
        axis %= t.ndim
        if any(x.shape[:axis] + x.shape[axis + 1:] != t.shape[:axis] + t.shape[axis + 1:] for x in xs) \
                or sum(x.shape[axis] for x in xs) != t.shape[axis]:
            return None
        parts = _pieces(t, [x.shape[axis] for x in xs], axis)  # fixed views of the output's bytes
        pairs = list(zip(parts, xs))
        def concat() -> None:  # an exact copy
            for part, x in pairs:
                part[...] = x
        return concat
    if op_type == "softmax" and len(xs) == 1 and xs[0].shape == t.shape:
        return _softmax_into(attrs, xs[0], t)
    if op_type == "gelu" and len(xs) == 1 and xs[0].shape == t.shape:
        return _gelu_into(xs[0], t)
    if op_type == "layernorm" and 1 <= len(xs) <= 3 and xs[0].shape == t.shape:
        return _layernorm_into(attrs, xs, t)
    return None


def _pieces(a: np.ndarray, sizes: Sequence[int], axis: int) -> list[np.ndarray]:
    """Views of ``a`` cut along ``axis`` into consecutive pieces of ``sizes``."""
    out, at = [], 0
    for n in sizes:
        index = [slice(None)] * a.ndim
        index[axis] = slice(at, at + n)
        out.append(a[tuple(index)])
        at += n
    return out


def _split_into(attrs: Mapping[str, Any], xs: Sequence[np.ndarray],
                ts: Sequence[np.ndarray]) -> Callable[[], None] | None:
    """split of one fp32 input into fp32 outputs whose shapes were checked here: exact copies."""
    if len(xs) != 1 or xs[0].dtype != _FP32 or any(t.dtype != _FP32 for t in ts) or not ts:
        return None
    x = xs[0]
    if x.ndim == 0 or any(t.ndim != x.ndim for t in ts):
        return None
    axis = int(attrs.get("axis", 0))
    if not -x.ndim <= axis < x.ndim:
        return None
    axis %= x.ndim
    sizes = [t.shape[axis] for t in ts]
    given = attrs.get("sizes")
    if (given is not None and [int(v) for v in given] != sizes) or sum(sizes) != x.shape[axis]:
        return None
    rest = x.shape[:axis] + x.shape[axis + 1:]
    if any(t.shape[:axis] + t.shape[axis + 1:] != rest for t in ts):
        return None
    pairs = list(zip(ts, _pieces(x, sizes, axis)))  # fixed views of the input's bytes
    def split() -> None:
        for t, part in pairs:
            t[...] = part
    return split


def _reduced(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _softmax_into(attrs: Mapping[str, Any], x: np.ndarray, t: np.ndarray) -> Callable[[], None] | None:
    """_softmax in float64 scratch arrays: the same numpy operations in the same order."""
    if x.ndim == 0:
        return None
    axis = int(attrs.get("axis", -1))
    if not -x.ndim <= axis < x.ndim:
        return None
    axis %= x.ndim
    e = np.empty(x.shape, _ACC)
    m = np.empty(_reduced(x.shape, (axis,)), _ACC)
    maximum, add, subtract, exp, divide, copyto = (np.maximum.reduce, np.add.reduce, np.subtract, np.exp,
                                                   np.divide, np.copyto)

    def softmax() -> None:
        copyto(e, x)  # widen (exact)
        maximum(e, axis=axis, keepdims=True, out=m)
        subtract(e, m, out=e)
        exp(e, out=e)
        add(e, axis=axis, keepdims=True, out=m)
        divide(e, m, out=t)  # the float64 quotient, rounded once on the way out
    return softmax


def _gelu_into(x: np.ndarray, t: np.ndarray) -> Callable[[], None]:
    """_gelu in float64 scratch arrays: ``0.5 x (1 + tanh(c (x + 0.044715 (x x) x)))``, same order."""
    a, b = np.empty(x.shape, _ACC), np.empty(x.shape, _ACC)
    c = _GELU_C
    multiply, add, tanh, copyto = np.multiply, np.add, np.tanh, np.copyto

    def gelu() -> None:
        copyto(a, x)  # widen (exact)
        multiply(a, a, out=b)
        multiply(b, a, out=b)
        multiply(0.044715, b, out=b)
        add(a, b, out=b)
        multiply(c, b, out=b)
        tanh(b, out=b)
        add(1.0, b, out=b)
        multiply(0.5, a, out=a)
        multiply(a, b, out=t)
    return gelu


def _layernorm_into(attrs: Mapping[str, Any], xs: Sequence[np.ndarray],
                    t: np.ndarray) -> Callable[[], None] | None:
    """_layernorm in float64 scratch arrays: the same numpy operations in the same order."""
    x = xs[0]
    if x.ndim == 0:
        return None
    axis = int(attrs.get("axis", -1))
    if not -x.ndim <= axis < x.ndim:
        return None
    axis %= x.ndim
    axes = tuple(range(axis, x.ndim))
    for p in xs[1:]:
        if p.ndim > len(axes) or p.shape != x.shape[x.ndim - p.ndim:]:
            return None  # the general path raises
    eps = float(attrs.get("epsilon", 1e-5))
    count = math.prod(x.shape[axis:])  # what np.mean divides by
    a, centred = np.empty(x.shape, _ACC), np.empty(x.shape, _ACC)
    m = np.empty(_reduced(x.shape, axes), _ACC)
    gamma = xs[1] if len(xs) > 1 else None
    beta = xs[2] if len(xs) > 2 else None
    total, subtract, multiply, divide, add, sqrt, copyto = (np.add.reduce, np.subtract, np.multiply,
                                                            np.divide, np.add, np.sqrt, np.copyto)

    def layernorm() -> None:
        copyto(a, x)  # widen (exact)
        total(a, axis=axes, keepdims=True, out=m)  # np.mean: the sum, then / count
        divide(m, count, out=m)
        subtract(a, m, out=centred)
        multiply(centred, centred, out=a)
        total(a, axis=axes, keepdims=True, out=m)
        divide(m, count, out=m)
        add(m, eps, out=m)
        sqrt(m, out=m)
        if gamma is None and beta is None:
            divide(centred, m, out=t)
            return
        divide(centred, m, out=centred)
        if beta is None:
            multiply(centred, gamma, out=t)  # gamma widens inside the ufunc (exact)
            return
        multiply(centred, gamma, out=centred)
        add(centred, beta, out=t)
    return layernorm


def prepare_into(op_type: str, attrs: Mapping[str, Any], inputs: Sequence[np.ndarray],
                 outputs: Sequence[np.ndarray],
                 compute: Callable[[Sequence[np.ndarray]], list[np.ndarray]] | None = None) -> Callable[[], None]:
    """:func:`prepare_op` with the operands fixed too: a no-argument function that evaluates
    the op on the current values of ``inputs`` and writes the results into ``outputs``.

    ``inputs`` and ``outputs`` are arrays whose shapes and dtypes never change (views of a
    simulated memory); each call writes exactly what :func:`evaluate_op` returns (same bits).
    ``compute`` is ``prepare_op`` for this op and these outputs when the caller has it
    (cached). Operands that contradict the op's shape contract raise GraphError here; the other
    errors (:func:`evaluate_op`'s) are raised here or by the first call.

    Examples
    --------
    >>> import numpy as np
    >>> x, y = np.array([[1.0, -2.0]], np.float32), np.zeros((1, 2), np.float32)
    >>> step = prepare_into("relu", {}, [x], [y])
    >>> step(); y
    array([[1., 0.]], dtype=float32)
    >>> x[0, 1] = 5.0; step(); y
    array([[1., 5.]], dtype=float32)
    """
    xs, ts = list(inputs), list(outputs)
    kernel = _KERNELS.get(op_type)
    if (kernel is None or attrs.get("fallback") or any(x.dtype not in _SUPPORTED for x in xs)
            or any(t.dtype not in _SUPPORTED for t in ts)):
        if compute is None:  # raises what evaluate_op raises (here, before anything runs), else below
            compute = prepare_op(op_type, attrs, [t.shape for t in ts], [_ir_dtype(t.dtype) for t in ts])
        checking = compute

        def checked() -> None:
            for t, r in zip(ts, checking(xs)):
                t[...] = r
        return checked
    check_op(op_type, attrs, [x.shape for x in xs], [t.shape for t in ts])
    fast = _split_into(attrs, xs, ts) if op_type == "split" else _fast_into(op_type, attrs, xs, ts)
    if fast is not None:
        return fast
    shapes = [t.shape for t in ts]
    widen = not (op_type in _EXACT_IN_FP32 and all(x.dtype == _FP32 for x in xs + ts))
    acc = _ACC
    def run() -> None:  # prepare_op's run with the input dtype checks done above
        results = kernel(attrs, [x.astype(acc, copy=False) for x in xs] if widen else xs, shapes)
        if len(results) != len(ts):
            raise GraphError(f"{op_type} computes {len(results)} outputs but {len(ts)} are declared")
        for t, r in zip(ts, results):
            if r.shape != t.shape:
                raise GraphError(f"{op_type} computes shape {r.shape} but the output is declared {t.shape}")
            t[...] = r

    return run


def _ir_dtype(dt: np.dtype) -> str:
    for name, t in NUMPY_DTYPES.items():
        if np.dtype(t) == dt:
            return name
    raise UnsupportedError(f"numeric mode cannot evaluate numpy dtype {dt} (supported: fp16, fp32, fp64)")
