"""Record order within a cycle (docs/isa.md, "Record order").

Lowering lists the records that start on one cycle in dependency order; the timing replay
rejects an order that breaks a dependency (a zero-duration op before the writer of what it
reads, a FREE before a zero-duration read); numeric mode runs the same order.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from planner.isa import Opcode, encode
from planner.verify.compare import compare_numeric
from planner.pipeline import run
from planner.simulator import simulate, simulate_programs
from planner.spec import load_spec

EXAMPLES = int(os.environ.get("RECORD_ORDER_EXAMPLES", 15))

# concat (a copy, 61 cycles) -> reshape (zero duration) -> relu, on one edge NPU.
MINIMAL = {
    "version": 1, "name": "minimal",
    "hardware": {"devices": [{"name": "npu", "profile": "edge-npu"}]},
    "models": [{"name": "m", "graph": {
        "tensors": [{"name": "a", "shape": [1, 64], "dtype": "fp32", "kind": "input"},
                    {"name": "b", "shape": [1, 64], "dtype": "fp32", "kind": "input"},
                    {"name": "c", "shape": [1, 128], "dtype": "fp32"},
                    {"name": "r", "shape": [2, 64], "dtype": "fp32"},
                    {"name": "y", "shape": [2, 64], "dtype": "fp32", "kind": "output"}],
        "ops": [{"name": "cat", "type": "concat", "inputs": ["a", "b"], "outputs": ["c"], "attrs": {"axis": 1}},
                {"name": "rs", "type": "reshape", "inputs": ["c"], "outputs": ["r"], "attrs": {"shape": [2, 64]}},
                {"name": "act", "type": "relu", "inputs": ["r"], "outputs": ["y"]}]}}],
    "solver": {"time_limit": "5 s", "workers": 1, "seed": 0},
}


def _name(program, ins) -> str:
    if ins.opcode in (Opcode.ALLOC, Opcode.FREE):
        return program.buffers[ins.a]
    return ins.op or str(ins.a)


def _records_at(program, cycle: int) -> list[tuple[str, str]]:
    return [(i.opcode.name, _name(program, i)) for i in program.instructions
            if i.start_cycle == cycle and i.opcode != Opcode.HALT]


def _reordered(program, cycle: int, order: list[tuple[str, str]]):
    """``program`` with the records of ``cycle`` listed in ``order`` (names as _records_at gives)."""
    at = {(i.opcode.name, _name(program, i)): i for i in program.instructions if i.start_cycle == cycle}
    out, done = [], False
    for ins in program.instructions:
        if ins.start_cycle != cycle or ins.opcode == Opcode.HALT:
            out.append(ins)
        elif not done:
            out += [at[key] for key in order]
            done = True
    return dataclasses.replace(program, instructions=tuple(out))


@pytest.fixture(scope="module")
def minimal():
    outcome = run(MINIMAL)
    program = outcome.programs["npu0"]
    cycle = next(i.start_cycle for i in program.instructions if i.op == "m/rs" and i.opcode == Opcode.DMA)
    return outcome, program, cycle


def test_minimal_case_is_lowered_in_dependency_order(minimal):
    outcome, program, cycle = minimal
    # Records #0-#3: ALLOC a, b, c and the concat. The reshape (zero duration) starts when the
    # concat ends (61): after r's ALLOC,
    # before c's FREE; y, allocated after that FREE, reuses c's bytes.
    assert cycle == 61
    assert _records_at(program, cycle) == [("ALLOC", "m/r"), ("DMA", "m/rs"), ("FREE", "m/c"),
                                           ("ALLOC", "m/y"), ("VECTOR", "m/act")]
    address = {program.buffers[i.a]: i.d for i in program.instructions if i.opcode == Opcode.ALLOC}
    assert address["m/y"] == address["m/c"] != address["m/r"]
    assert outcome.simulation.valid
    report = compare_numeric(outcome.binaries, load_spec(MINIMAL).graph, seed=3)
    assert report.ok, report.failures()


@pytest.mark.parametrize("order, violation", [
    # relu before the reshape that writes its input
    ([("ALLOC", "m/r"), ("FREE", "m/c"), ("ALLOC", "m/y"), ("VECTOR", "m/act"), ("DMA", "m/rs")],
     "npu0#7 VECTOR (m/act): dependency violation: reads buffer 1 (m/r) at 61 before npu0#8 DMA (m/rs) "
     "writes it, later in the record order of that cycle"),
    # c freed before the reshape reads it
    ([("ALLOC", "m/r"), ("FREE", "m/c"), ("DMA", "m/rs"), ("ALLOC", "m/y"), ("VECTOR", "m/act")],
     "npu0#6 DMA (m/rs): reads buffer 0 (m/c) until 61, but it is freed at 61 by record #5, earlier in "
     "the record order"),
    # r allocated after the reshape writes it
    ([("DMA", "m/rs"), ("ALLOC", "m/r"), ("FREE", "m/c"), ("ALLOC", "m/y"), ("VECTOR", "m/act")],
     "npu0#4 DMA (m/rs): writes buffer 1 (m/r) at 61 before it is allocated (later in the record order)"),
    # y allocated in c's bytes while c is still live
    ([("ALLOC", "m/r"), ("ALLOC", "m/y"), ("DMA", "m/rs"), ("FREE", "m/c"), ("VECTOR", "m/act")],
     "npu0: buffers 0 (m/c) at [0, 512) and 2 (m/y) at [0, 512) of level lpddr overlap at cycle 61"),
])
def test_a_hand_reordered_cycle_is_rejected_with_the_broken_dependency(minimal, order, violation):
    _, program, cycle = minimal
    bad = _reordered(program, cycle, order)
    assert _records_at(bad, cycle) == order
    result = simulate({"npu0": encode(bad)})
    assert violation in result.violations, result.violations


def test_the_order_lowering_used_to_emit_is_rejected_and_computes_nan(minimal):
    """Before record order meant anything, the cycle read: FREE c, ALLOC y (in c's bytes),
    ALLOC r, relu, reshape. The timing replay accepted it; numeric mode computed NaN."""
    outcome, program, cycle = minimal
    old = _reordered(program, cycle, [("FREE", "m/c"), ("ALLOC", "m/y"), ("ALLOC", "m/r"), ("VECTOR", "m/act"),
                                      ("DMA", "m/rs")])
    assert not simulate({"npu0": encode(old)}).valid
    report = compare_numeric({"npu0": encode(old)}, load_spec(MINIMAL).graph, seed=3)
    assert not report.ok and "m/y" in " ".join(report.failures())


def test_onnx_squeezenet_on_the_demo_hardware_computes_the_reference():
    """The ONNX squeezenet shipped in the onnx package (concat -> reshape -> conv in every fire
    module) on specs/demo.yaml's four devices: replayed and numerically equal."""
    onnx = pytest.importorskip("onnx")
    from planner.importers.onnx import import_onnx_to_spec

    import yaml

    model = Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"
    spec = import_onnx_to_spec(model)
    demo = yaml.safe_load((Path(__file__).resolve().parents[3] / "specs/demo.yaml").read_text())
    spec = {**spec, "hardware": demo["hardware"], "solver": {"time_limit": "5 s", "workers": 1, "seed": 0}}
    outcome = run(spec)
    assert outcome.simulation.valid
    assert len({o.device for o in outcome.plan.ops}) > 1  # transfers between devices too
    report = compare_numeric(outcome.binaries, load_spec(spec).graph, seed=0)
    assert report.ok, report.failures()


# --- Random graphs with zero-duration ops -------------------------------------------------

_SHAPES = [(4, 16), (16, 4), (8, 8), (2, 32), (64,), (8, 16), (16, 8), (4, 32), (128,), (4, 8), (8, 4), (32,)]


@st.composite
def zero_duration_specs(draw):
    """A small graph mixing data movement (reshape: zero cycles; transpose, concat, split:
    copies), vector ops with explicit zero cycles and ordinary ops, on one or two edge NPUs
    (one or two streams), with or without memory planning."""
    tensors = [{"name": "x", "shape": [4, 16], "dtype": "fp32", "kind": "input"}]
    pool = [("x", (4, 16))]
    ops = []
    for i in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(["reshape", "reshape", "transpose", "concat", "split", "relu", "relu0",
                                     "add", "add0", "matmul"]))
        src, shape = draw(st.sampled_from(pool))
        op = {"name": f"o{i}", "type": kind.rstrip("0"), "inputs": [src]}
        outs = [shape]
        if kind == "reshape":
            targets = [s for s in _SHAPES if s != shape and _size(s) == _size(shape)]
            outs = [draw(st.sampled_from(targets))] if targets else [(_size(shape),)]
            op["attrs"] = {"shape": list(outs[0])}
        elif kind == "transpose":
            if len(shape) != 2:
                op["type"], op["attrs"] = "reshape", {"shape": [shape[0] // 2, 2]}
                outs = [(shape[0] // 2, 2)]
            else:
                op["attrs"], outs = {"perm": [1, 0]}, [(shape[1], shape[0])]
        elif kind == "concat":
            same = [n for n, s in pool if s == shape]
            op["inputs"].append(draw(st.sampled_from(same)))
            axis = draw(st.integers(0, len(shape) - 1))
            op["attrs"] = {"axis": axis}
            outs = [tuple(d * 2 if k == axis else d for k, d in enumerate(shape))]
        elif kind == "split":
            axis = draw(st.sampled_from([k for k, d in enumerate(shape) if d % 2 == 0]))
            op["attrs"] = {"axis": axis}
            half = tuple(d // 2 if k == axis else d for k, d in enumerate(shape))
            outs = [half, half]
        elif kind.startswith("add"):
            op["inputs"].append(draw(st.sampled_from([n for n, s in pool if s == shape])))
        elif kind == "matmul":
            if len(shape) != 2:
                op["type"], outs = "relu", [shape]
            else:
                tensors.append({"name": f"w{i}", "shape": [shape[1], shape[1]], "dtype": "fp32", "kind": "weight"})
                op["inputs"].append(f"w{i}")
        if kind.endswith("0"):
            op["cycles"] = {"npu": 0}  # a vector op of zero duration, with its arithmetic
        op["outputs"] = [f"t{i}" if len(outs) == 1 else f"t{i}_{k}" for k in range(len(outs))]
        for name, out in zip(op["outputs"], outs):
            tensors.append({"name": name, "shape": list(out), "dtype": "fp32"})
            pool.append((name, out))
        ops.append(op)
    consumed = {t for op in ops for t in op["inputs"]}
    for t in tensors[1:]:
        if t["name"] not in consumed and t.get("kind") != "weight":
            t["kind"] = "output"
    devices, streams = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    spec = {
        "version": 1, "name": "zero-duration",
        "hardware": {"devices": [{"name": "npu", "profile": "edge-npu", "count": devices, "streams": streams,
                                  "memory": [{"name": "sram", "capacity": "8 KiB", "bandwidth": "128 GB/s"},
                                             {"name": "lpddr", "capacity": "1 GiB", "bandwidth": "17 GB/s"}]}]},
        "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
        "solver": {"time_limit": "2 s", "workers": 1, "seed": 0},
    }
    if devices > 1:
        spec["hardware"]["topology"] = {"kind": "all-to-all", "bandwidth": "8 GB/s", "latency": "100 ns"}
    if draw(st.booleans()):
        spec["memory"] = {"plan": True, "split": draw(st.booleans()), "split_factors": [1, 2]}
    return spec


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _candidates(spec, outcome):
    """Every plan the run lowered and replayed: the binaries kept and, with memory planning,
    the memory plan and the greedy baseline (each lowered again here)."""
    from planner.lower_and_replay import replay

    yield "kept", outcome.binaries, outcome.simulation
    memory = outcome.memory
    if memory is not None:
        replayed = replay(memory.plan, spec, memory.memory)
        yield "memory plan", replayed.binaries, replayed.simulation
        if memory.greedy_plan is not None:
            replayed = replay(memory.greedy_plan, spec, memory.greedy_memory)
            yield "greedy", replayed.binaries, replayed.simulation


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zero_duration_specs())
def test_random_graphs_with_zero_duration_ops_replay_valid_and_compute_the_reference(spec):
    loaded = load_spec(spec)
    outcome = run(loaded)
    for name, binaries, simulation in _candidates(loaded, outcome):
        assert simulation.valid, (name, simulation.violations)
        report = compare_numeric(binaries, loaded.graph, seed=1)
        assert report.ok, (name, report.failures())


# --- Reordering the records of one cycle ---------------------------------------------------


def _touches(program) -> list[tuple[set, set]]:
    """Per record: (what it changes, what it only reads), as tokens an independent reading of
    the ISA gives: the bytes of each buffer ((level, byte) ranges from the ALLOCs, so a view
    and its parent, or two buffers sharing an address, meet), the buffer itself (zero-byte
    buffers have no bytes), semaphores, and the op a SIGNAL or WAIT names."""
    where = {i.a: (i.b, i.d, i.d + i.c) for i in program.instructions if i.opcode == Opcode.ALLOC}

    def tokens(buf: int) -> set:
        level, lo, hi = where.get(buf, (-1, 0, 0))
        return {("buffer", buf)} | {("byte", level, x) for x in range(lo, hi)}

    out = []
    for ins in program.instructions:
        changes, reads = set(), set()
        if ins.opcode in (Opcode.ALLOC, Opcode.FREE):
            changes |= tokens(ins.a)
        elif ins.opcode == Opcode.SIGNAL:
            changes.add(("semaphore", ins.a))
        elif ins.opcode == Opcode.WAIT:
            reads.add(("semaphore", ins.a))
        elif ins.op and ins.opcode not in (Opcode.SEND, Opcode.RECV, Opcode.HALT):
            changes.add(("op", ins.op))  # the record that runs the op
        if ins.opcode in (Opcode.SIGNAL, Opcode.WAIT) and ins.op:
            reads.add(("op", ins.op))
        for b in ins.writes:
            changes |= tokens(b)
        for b in ins.reads:
            reads |= tokens(b)
        out.append((changes, reads))
    return out


def _conflicting(touch, i: int, j: int) -> bool:
    (ci, ri), (cj, rj) = touch[i], touch[j]
    return bool(ci & (cj | rj) or cj & ri)


def _groups(program) -> list[list[int]]:
    """Record indices of each cycle with at least two records (HALT stays last)."""
    by_cycle: dict[int, list[int]] = {}
    for k, ins in enumerate(program.instructions):
        if ins.opcode != Opcode.HALT:
            by_cycle.setdefault(ins.start_cycle, []).append(k)
    return [g for _, g in sorted(by_cycle.items()) if len(g) > 1]


def _keeps_every_conflict(touch, group: list[int], order: list[int]) -> bool:
    position = {k: n for n, k in enumerate(order)}
    return all(position[a] < position[b] for x, a in enumerate(group) for b in group[x + 1:]
               if _conflicting(touch, a, b))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zero_duration_specs(), st.data())
def test_a_reordered_cycle_is_rejected_exactly_when_it_breaks_a_dependency(spec, data):
    """The timing replay accepts a reordering of one cycle's records exactly when every pair
    of conflicting records (one changes what the other touches) keeps its order; an accepted
    reordering computes the reference numbers too."""
    from planner.lower_and_replay import replay

    loaded = load_spec(spec)
    outcome = run(loaded)
    programs = outcome.programs
    if outcome.memory is not None and data.draw(st.booleans(), label="memory plan's binaries"):
        programs = replay(outcome.memory.plan, loaded, outcome.memory.memory).programs
    candidates = [(d, g) for d in sorted(programs) for g in _groups(programs[d])]
    if not candidates:
        return
    for _ in range(3):
        device, group = data.draw(st.sampled_from(candidates), label="cycle")
        program = programs[device]
        touch = _touches(program)
        if data.draw(st.booleans(), label="keep the conflicts"):
            order, left = [], list(group)  # a random linear extension of the conflict order
            while left:
                free = [k for k in left if not any(_conflicting(touch, j, k) for j in left if j < k)]
                order.append(free[data.draw(st.integers(0, len(free) - 1))])
                left.remove(order[-1])
        else:
            order = data.draw(st.permutations(group), label="order")
        instructions = list(program.instructions)
        instructions[group[0]:group[-1] + 1] = [program.instructions[k] for k in order]
        reordered = {**programs, device: dataclasses.replace(program, instructions=tuple(instructions))}
        expected = _keeps_every_conflict(touch, group, order)
        event("order keeps every conflict" if expected else "order breaks a conflict")
        result = simulate_programs(reordered)
        assert result.valid == expected, (device, [(program.instructions[k].opcode.name, k) for k in order],
                                          result.violations)
        if expected:
            report = compare_numeric({d: encode(p) for d, p in reordered.items()}, loaded.graph, seed=1)
            assert report.ok, report.failures()
