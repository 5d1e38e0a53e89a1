"""The numeric comparison of one tensor (planner.verify.compare._check) against its plain definition.

The check reads ``|want|`` once and takes finiteness from the maxima; these tests hold it to
the definition (``|got - want| <= atol + rtol |want|`` elementwise, both arrays finite, and
the largest absolute and relative errors) on random arrays with NaNs, infinities and
overflowing differences, in each float dtype.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.verify.compare import RTOL, TensorCheck, _check, _Scratch

# NaNs and infinities on purpose: numpy's warnings about them are expected on both sides.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def by_definition(name, got, want, output):
    got = np.asarray(got, dtype=np.float64).reshape(want.shape)
    want = np.asarray(want, dtype=np.float64)
    diff = np.abs(got - want)
    atol = 1e-6 * max(1.0, float(np.max(np.abs(want)))) if want.size else 0.0
    finite = bool(np.all(np.isfinite(got)) and np.all(np.isfinite(want)))
    ok = finite and bool(np.all(diff <= atol + RTOL * np.abs(want)))
    rel = float(np.max(diff / np.maximum(np.abs(want), 1e-30))) if want.size else 0.0
    return TensorCheck(name, tuple(want.shape), float(np.max(diff)) if want.size else 0.0, rel, ok, output)


def same(a: TensorCheck, b: TensorCheck) -> bool:
    def eq(x, y):
        return x == y or (np.isnan(x) and np.isnan(y))
    return (a.tensor, a.shape, a.ok, a.graph_output) == (b.tensor, b.shape, b.ok, b.graph_output) and \
        eq(a.max_abs_error, b.max_abs_error) and eq(a.max_rel_error, b.max_rel_error)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("seed", range(8))
def test_check_equals_its_definition(dtype, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in rng.integers(1, 6, size=rng.integers(1, 4)))
    want = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)).astype(dtype)
    cases = [want.copy(), want * (1 + 1e-7), want + 1e-3, np.zeros(shape, dtype)]
    bad = want.copy().reshape(-1)
    bad[rng.integers(bad.size)] = rng.choice([np.nan, np.inf, -np.inf])
    cases.append(bad.reshape(shape))
    for got in cases:
        for w in (want, cases[-1]):  # non-finite values on either side
            got_flat = np.asarray(got).reshape(-1)  # a flat got is reshaped to want's shape
            assert same(_check("t", got_flat, w, seed % 2 == 0), by_definition("t", got_flat, w, seed % 2 == 0))


def test_one_scratch_serves_tensors_of_every_size_in_turn():
    # compare_numeric_programs passes one _Scratch to every tensor's check: larger, then
    # smaller, then larger again, what an earlier tensor left in it must not matter.
    rng = np.random.default_rng(7)
    scratch = _Scratch()
    for size in (5, 300, 2, 300, 1000, 1, 64):
        want = rng.standard_normal((size,)).astype(np.float32)
        for got in (want, want + 1e-2, np.where(rng.random(size) < 0.5, np.nan, want)):
            assert same(_check("t", got, want, False, scratch), by_definition("t", got, want, False))


def test_check_of_overflowing_differences_and_empty_tensors():
    want = np.array([1e308, -1.0])
    got = np.array([-1e308, -1.0])  # the difference overflows to inf: not ok, either way
    assert same(_check("t", got, want, True), by_definition("t", got, want, True))
    assert not _check("t", got, want, True).ok
    empty = np.zeros((0, 3), np.float32)
    assert _check("e", empty, empty, False) == by_definition("e", empty, empty, False) == \
        TensorCheck("e", (0, 3), 0.0, 0.0, True, False)
    assert _check("y", want, want, True).ok
