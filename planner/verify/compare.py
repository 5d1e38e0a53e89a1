"""The numerical proof: run the binaries' arithmetic and compare with the reference.

The simulator's numeric mode executes the lowered binaries on random inputs (a byte
array per memory level; every instruction computes or copies at its addresses); the
reference evaluates the original graph with plain numpy. Every tensor the binaries hold
whole in main memory is compared, graph outputs first: ``|got - want| <= atol + rtol *
|want|`` elementwise (fp32: rtol 1e-5, atol 1e-6 scaled by the reference's magnitude).

Examples
--------
>>> r = NumericComparison([TensorCheck("y", (2,), 0.0, 0.0, True, True)], 10, 0.001)
>>> r.ok, r.summary()
(True, '1 tensors (1 graph outputs) equal the reference within rtol 1e-05; 10 instructions replayed at 10,000 instructions/s')
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from threadpoolctl import threadpool_limits

from planner.errors import UnsupportedError
from planner.graph.ir import Graph
from planner.isa.binary import decode
from planner.numeric.kernels import SUPPORTED_OP_TYPES, numpy_dtype, prepare_op
from planner.numeric.reference import evaluate, random_inputs
from planner.simulator.numeric import simulate_numeric_programs

__all__ = ["TensorCheck", "NumericComparison", "compare_numeric", "compare_numeric_programs",
           "ops_without_numeric_semantics", "RTOL"]

RTOL = 1e-5


@dataclass(frozen=True)
class TensorCheck:
    """One tensor's comparison."""

    tensor: str
    shape: tuple[int, ...]
    max_abs_error: float
    max_rel_error: float
    ok: bool
    graph_output: bool


@dataclass(frozen=True)
class NumericComparison:
    """Every compared tensor, and the replay's speed."""

    checks: list[TensorCheck]
    instructions: int
    wall_s: float  # the numeric replay: preparing and executing the decoded programs
    missing_outputs: tuple[str, ...] = ()
    decode_s: float = 0.0  # decoding and verifying the binaries (shared with the timing replay)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks) and not self.missing_outputs

    @property
    def instructions_per_s(self) -> float:
        return self.instructions / self.wall_s if self.wall_s > 0 else float("inf")

    def summary(self) -> str:
        outputs = sum(c.graph_output for c in self.checks)
        verdict = ("equal the reference" if self.ok else
                   f"{sum(not c.ok for c in self.checks)} differ from the reference")
        return (f"{len(self.checks)} tensors ({outputs} graph outputs) {verdict} within rtol {RTOL:g}; "
                f"{self.instructions:,} instructions replayed at {self.instructions_per_s:,.0f} instructions/s"
                + (f" (decoding the binaries took {self.decode_s:.3f} s)" if self.decode_s else ""))

    def failures(self) -> list[str]:
        out = [f"graph output {t!r} was never held whole in main memory" for t in self.missing_outputs]
        out += [f"{c.tensor} {c.shape}: max abs error {c.max_abs_error:.3g}, max rel error {c.max_rel_error:.3g}"
                for c in self.checks if not c.ok]
        return out


class _Scratch:
    """Float64 and boolean work arrays reused from tensor to tensor, grown to the largest.

    A fresh array per step and tensor costs more than the arithmetic: each new large array
    is new memory the kernel zeroes page by page on first touch (about two thirds of the
    comparison's time on the demo's 448 tensors).
    """

    def __init__(self) -> None:
        self._floats = np.empty((3, 0), np.float64)
        self._flags = np.empty(0, bool)

    def arrays(self, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Three float64 arrays and one boolean array of ``shape`` (views of the work arrays)."""
        size = math.prod(shape)
        if size > self._flags.size:
            self._floats, self._flags = np.empty((3, size), np.float64), np.empty(size, bool)
        a, b, c = (row[:size].reshape(shape) for row in self._floats)
        return a, b, c, self._flags[:size].reshape(shape)


def _check(name: str, got: np.ndarray, want: np.ndarray, output: bool, scratch: _Scratch | None = None) -> TensorCheck:
    """``|got - want| <= atol + RTOL |want|`` everywhere, both finite, and the largest errors.

    In float64, in place in ``scratch``'s work arrays (``|want|`` once, not three times). A
    NaN or an infinity in either array shows in the maxima (``|want|``'s, or the
    difference's, which any non-finite ``got`` makes non-finite), so their finiteness is the check's.
    """
    want = np.asarray(want)
    shape = tuple(want.shape)
    if not want.size:
        return TensorCheck(name, shape, 0.0, 0.0, True, output)
    diff, bound, magnitude, flags = (scratch or _Scratch()).arrays(shape)
    np.copyto(bound, want)  # widen (exact)
    np.copyto(diff, np.asarray(got).reshape(shape))
    np.abs(bound, out=magnitude)
    np.subtract(diff, bound, out=diff)
    np.abs(diff, out=diff)
    largest, max_abs = float(magnitude.max()), float(diff.max())
    atol = 1e-6 * max(1.0, largest)
    finite = math.isfinite(largest) and math.isfinite(max_abs)
    np.multiply(RTOL, magnitude, out=bound)
    bound += atol
    ok = finite and bool(np.less_equal(diff, bound, out=flags).all())
    np.maximum(magnitude, 1e-30, out=bound)
    np.divide(diff, bound, out=bound)
    return TensorCheck(name, shape, max_abs, float(bound.max()), ok, output)


def ops_without_numeric_semantics(graph: Graph) -> dict[str, list[str]]:
    """The ops numeric mode cannot evaluate, by kind: ``task``, unknown types, the ONNX
    importer's stand-ins (by their ONNX op, e.g. ``LRN``) and operands of dtypes other than
    fp16/32/64 (``"dtype int8"``).

    A plan whose graph has any is verified by timing only (its numbers cannot be checked).

    Examples
    --------
    >>> from planner.graph.ir import Op, Tensor
    >>> g = Graph([Tensor("x", (4,)), Tensor("y", (4,))],
    ...           [Op("r", "relu", ("x",), ("y",)), Op("t", "task", ("y",), (), cycles={"g": 3})])
    >>> ops_without_numeric_semantics(g)
    {'task': ['t']}
    """
    out: dict[str, list[str]] = {}
    for name in graph.topological_order():
        op = graph.ops[name]
        outputs = [graph.tensors[t] for t in op.outputs]
        kind = None
        if op.attrs.get("fallback"):
            kind = str(op.attrs.get("onnx_op", op.type))
        elif op.type not in SUPPORTED_OP_TYPES:
            kind = op.type
        for t in (*op.inputs, *op.outputs):
            try:
                numpy_dtype(graph.tensors[t].dtype)
            except UnsupportedError:
                kind = kind or f"dtype {graph.tensors[t].dtype}"
        if kind is None:
            try:
                prepare_op(op.type, op.attrs, [t.shape for t in outputs], [t.dtype for t in outputs])
            except UnsupportedError:
                kind = op.type
        if kind is not None:
            out.setdefault(kind, []).append(name)
    return dict(sorted(out.items()))


def compare_numeric_programs(programs: Mapping[str, Any], graph: Graph, seed: int = 0,
                             decode_s: float = 0.0) -> NumericComparison:
    """:func:`compare_numeric` on already decoded programs (``device -> Program``).

    Raises
    ------
    UnsupportedError
        An op or dtype without numeric semantics (see :func:`ops_without_numeric_semantics`).
    """
    inputs = random_inputs(graph, seed)
    with threadpool_limits(limits=1, user_api="blas"):  # small ops: threads cost more than they give
        want = evaluate(graph, inputs)
    result = simulate_numeric_programs(programs, inputs)
    outputs = {t for t, x in graph.tensors.items() if x.kind == "output"}
    scratch = _Scratch()
    checks = [_check(name, result.values[name], want[name], name in outputs, scratch)
              for name in sorted(result.values, key=lambda n: (n not in outputs, n)) if name in want]
    missing = tuple(sorted(outputs - set(result.values)))
    return NumericComparison(checks, result.instructions, result.wall_seconds, missing, decode_s)


def compare_numeric(binaries: Mapping[str, bytes], graph: Graph, seed: int = 0) -> NumericComparison:
    """Replay ``binaries`` numerically on ``random_inputs(graph, seed)`` and compare.

    Raises
    ------
    UnsupportedError
        An op or dtype without numeric semantics (e.g. ``task`` graphs).
    """
    t0 = time.perf_counter()
    programs = {name: decode(data, name=name) for name, data in sorted(binaries.items())}
    return compare_numeric_programs(programs, graph, seed, time.perf_counter() - t0)
