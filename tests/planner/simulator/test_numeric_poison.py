"""Numeric mode skips the poison fill only where nothing can have written: reused bytes still read as NaN."""

from __future__ import annotations

import numpy as np

from planner.simulator import simulate_numeric_programs
from planner.simulator.numeric import _pristine_allocs, _scan

from tests.planner.simulator.programs import DRAM, alloc, free, halt, op, program, relu


def reuse_program():
    # x (preloaded, bytes 0-63) -> y = relu(x) at 64-127; y freed; z reuses 64-127 unwritten,
    # w (128-191, never used before) = relu(z).
    return program([
        alloc(0, 0, DRAM, 64, 0, pre=True), alloc(0, 1, DRAM, 64, 64),
        relu(0, 32, "r", 16, (0,), (1,), mem=128),
        free(32, 1, DRAM, 64, 64),
        alloc(33, 2, DRAM, 64, 64), alloc(33, 3, DRAM, 64, 128),
        relu(33, 32, "r2", 16, (2,), (3,), mem=128),
        free(65, 2, DRAM, 64, 64), free(65, 3, DRAM, 64, 128), free(65, 0, DRAM, 64, 0), halt(65)],
        ("x", "y", "z", "w"),
        [op("r", "relu", [((4, 4), (0,))], [((4, 4), (1,))]),
         op("r2", "relu", [((4, 4), (2,))], [((4, 4), (3,))])], fast_level=-1)


def test_reused_bytes_are_poisoned_again():
    x = np.arange(-8, 8, dtype=np.float32).reshape(4, 4)
    r = simulate_numeric_programs({"d0": reuse_program()}, {"x": x})
    np.testing.assert_array_equal(r.values["y"], np.maximum(x, 0))
    assert np.isnan(r.values["z"]).all()  # y's bytes, poisoned again by z's ALLOC
    assert np.isnan(r.values["w"]).all()  # relu(NaN)


def test_only_first_touches_are_pristine():
    p = reuse_program()
    # Program indices: 0 x, 1 y (disjoint, first): pristine; 4 z reuses y's bytes: not; 5 w: pristine.
    assert _pristine_allocs(_scan(p)) == {0, 1, 5}
