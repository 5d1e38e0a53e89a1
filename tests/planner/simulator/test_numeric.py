"""Numeric mode: the bytes the binaries move and the kernels they run give numpy's numbers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.errors import SpecError, UnsupportedError
from planner.isa.binary import encode
from planner.isa.instructions import Instruction, Opcode
from planner.simulator import simulate_numeric, simulate_numeric_programs, simulate_programs

from tests.planner.simulator.programs import (
    DRAM,
    alloc,
    chain,
    free,
    halt,
    matmul,
    op,
    prefetch_compute_evict,
    program,
    reference_chain,
    relu,
    split_portions,
    two_devices,
)

RNG = np.random.default_rng(7)
X = RNG.standard_normal((16, 4)).astype(np.float32)
W = RNG.standard_normal((4, 4)).astype(np.float32)


def matmul_f32(a, b):
    """The kernels' policy: float64 accumulation, one rounding to fp32."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def test_prefetch_compute_evict_captures_the_product():
    binaries = {"d0": encode(prefetch_compute_evict())}
    r = simulate_numeric(binaries, {"x": X, "w": W})
    # Captured: the whole-tensor dram buffers x, w (at HALT) and y (at its FREE); not the sram copies.
    assert sorted(r.values) == ["w", "x", "y"]
    np.testing.assert_array_equal(r.values["y"], matmul_f32(X, W))
    assert r.values["y"].dtype == np.float32 and r.values["y"].shape == (16, 4)
    np.testing.assert_array_equal(r.values["x"], X)
    assert r.instructions == 16 and r.wall_seconds > 0


def test_eviction_too_early_copies_poison():
    # The eviction moved to [50, 124), before the mm writes y@sram.0 (at 74): it copies the
    # poison the sram holds there, and y is captured as NaN. The replay flags it too.
    p = prefetch_compute_evict()
    early = dataclasses.replace(p, instructions=tuple(sorted(
        (dataclasses.replace(i, start_cycle=50) if i.op == "evict:y" and i.opcode == Opcode.DMA else
         dataclasses.replace(i, start_cycle=50, stream=0xFFFE) if i.opcode == Opcode.ALLOC and i.a == 4 else i
         for i in p.instructions), key=lambda i: (i.opcode == Opcode.HALT, i.start_cycle))))
    assert not simulate_programs({"d0": early}).valid
    r = simulate_numeric_programs({"d0": early}, {"x": X, "w": W})
    assert np.isnan(r.values["y"]).all()


def test_split_portions_equal_the_unsplit_matmul():
    expected = matmul_f32(X, W)
    for portions in (False, True):  # the relu reads y whole, or as its two views concatenated
        r = simulate_numeric({"d0": encode(split_portions(relu_reads_portions=portions))}, {"x": X, "w": W})
        np.testing.assert_array_equal(r.values["y"], expected)
        np.testing.assert_array_equal(r.values["z"], np.maximum(expected, 0))
        assert "y#0" not in r.values  # views are not captured


def test_unwritten_memory_reads_as_nan():
    p = program([
        alloc(0, 0, DRAM, 64, 0), alloc(0, 1, DRAM, 64, 64),
        relu(0, 32, "r", 16, (0,), (1,), mem=128),
        free(32, 0, DRAM, 64, 0), free(32, 1, DRAM, 64, 64), halt(32)],
        ("x", "y"), [op("r", "relu", [((4, 4), (0,))], [((4, 4), (1,))])], fast_level=-1)
    r = simulate_numeric_programs({"d0": p}, {})
    assert r.values["x"].shape == (4, 4) and np.isnan(r.values["x"]).all()
    assert np.isnan(r.values["y"]).all()  # relu(NaN) is NaN: the poison propagates


def test_recv_copies_across_devices():
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    r = simulate_numeric({k: encode(p) for k, p in two_devices().items()}, {"x": x})
    np.testing.assert_array_equal(r.values["z"], np.maximum(x, 0))  # relu(relu(x))
    np.testing.assert_array_equal(r.values["y"], np.maximum(x, 0))
    assert "y@d0->r2" not in r.values  # a received copy is not a whole-tensor buffer


def test_recv_before_its_send_in_the_order_still_gets_the_bytes():
    # Rename the devices so the receiver sorts first: the RECV (same cycles as the SEND) runs first.
    progs = two_devices()
    a = dataclasses.replace(progs["d1"], device="a1", instructions=tuple(
        dataclasses.replace(i, peer="d0") if i.peer else i for i in progs["d1"].instructions))
    b = dataclasses.replace(progs["d0"], instructions=tuple(
        dataclasses.replace(i, peer="a1") if i.peer else i for i in progs["d0"].instructions))
    x = np.arange(16, dtype=np.float32).reshape(4, 4) - 8
    r = simulate_numeric_programs({"a1": a, "d0": b}, {"x": x})
    np.testing.assert_array_equal(r.values["z"], np.maximum(x, 0))


def test_unaddressed_programs_get_disjoint_buffers():
    # The old lowering: every d = 0. Numeric mode lays the buffers out one after the other.
    p = prefetch_compute_evict()
    flat = dataclasses.replace(p, addressed=False, instructions=tuple(
        dataclasses.replace(i, d=0) if i.opcode in (Opcode.ALLOC, Opcode.FREE) else i for i in p.instructions))
    r = simulate_numeric_programs({"d0": flat}, {"x": X, "w": W})
    np.testing.assert_array_equal(r.values["y"], matmul_f32(X, W))


def test_errors_name_the_op_or_the_buffer():
    p = prefetch_compute_evict()
    with pytest.raises(UnsupportedError, match=r"numeric mode cannot run op 'mm' \(MATMUL on d0\)"):
        simulate_numeric_programs({"d0": dataclasses.replace(p, kernels=())}, {"x": X, "w": W})
    with pytest.raises(SpecError, match="no input value for preloaded buffer 'w' on d0"):
        simulate_numeric_programs({"d0": p}, {"x": X})
    with pytest.raises(SpecError, match=r"input 'x' has shape \(8, 4\), buffer 'x' on d0 holds fp32\[16, 4\]"):
        simulate_numeric_programs({"d0": p}, {"x": X[:8], "w": W})
    # A task (no kernel) in a graph program: refused before anything runs.
    t = program([Instruction(Opcode.TASK, 0, 0, 3, op="t", a=3), halt(3)], (), fast_level=-1)
    with pytest.raises(UnsupportedError, match="'t'"):
        simulate_numeric_programs({"d0": t}, {})


def test_a_chain_of_small_kernels():
    n = 40
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    r = simulate_numeric_programs({"d0": chain(n)}, {"x": x})
    np.testing.assert_array_equal(r.values[f"t{n - 1}"], reference_chain(x, n))
    np.testing.assert_array_equal(r.values["t0"], np.maximum(x, 0))  # captured at its FREE, before reuse
    assert r.instructions == len(chain(n).instructions)


def test_matmul_without_a_fast_level_in_a_mixed_device_set():
    # One matmul on its own device next to the two-device relu pipeline: values are per tensor name.
    mm = program([
        alloc(0, 0, DRAM, 256, 0, pre=True), alloc(0, 1, DRAM, 64, 256, pre=True), alloc(0, 2, DRAM, 256, 320),
        matmul(0, 144, "mm", 16, (0, 1), (2,), mem=576), halt(144)],
        ("a", "b", "c"), [op("mm", "matmul", [((16, 4), (0,)), ((4, 4), (1,))], [((16, 4), (2,))])],
        device="m0", fast_level=-1)
    progs = dict(two_devices(), m0=mm)
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    r = simulate_numeric_programs(progs, {"a": X, "b": W, "x": x})
    np.testing.assert_array_equal(r.values["c"], matmul_f32(X, W))
    assert simulate_programs(progs).valid
