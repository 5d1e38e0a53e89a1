"""The cross-device bound of a linked N-level device, end to end (issue 14): never above the
best whole plan over every N-level plan of the linked device (every level of every access,
kept gap, trigger, release and DMA queue order, validated) combined with every plan of the
other device (main memory or each of its two-level plans), each re-timed together by
:func:`~planner.memory.mixed_assemble.assemble_mixed`. Until now the N-level part was checked
per op only (``test_n_level_linked.assert_any_level_bound``)."""

from __future__ import annotations

import copy
import itertools

import pytest

from planner.errors import InfeasibleError, UnsupportedError
from planner.memory.retime import RetimingDeadlock
from planner.memory.mixed_assemble import N_LEVELS, HierarchyLevels, assemble_mixed
from planner.pipeline import run
from planner.spec import load_spec
from solvers.memory.levels import validate_hierarchy
from tests.planner.memory.test_cross_device_deadlines import _device_plans
from tests.solvers.memory.test_hierarchy import _timed_plans

SPEC = "tests/data/specs/memdevices/four-level-linked.yaml"
MAX_PLANS = 20_000  # per device: above, not a brute force


def n_level_plans(problem) -> list:
    """Every valid N-level plan of ``problem`` (test_hierarchy's enumeration, every plan kept)."""
    real = [(t, j) for t in range(problem.num_tensors) for j, a in enumerate(problem.accesses(t))
            if problem.is_real(a)]
    plans = []
    for levels in itertools.product(range(problem.num_levels), repeat=len(real)):
        level = [[problem.home(t)] * len(problem.accesses(t)) for t in range(problem.num_tensors)]
        for (t, j), lv in zip(real, levels):
            level[t][j] = lv
        gaps = [(t, j) for t, j in real if j and problem.is_real(problem.accesses(t)[j - 1])
                and level[t][j] == level[t][j - 1] != problem.home(t)]
        for keep in itertools.product((False, True), repeat=len(gaps)):
            kept = [[False] * len(problem.accesses(t)) for t in range(problem.num_tensors)]
            for (t, j), k in zip(gaps, keep):
                kept[t][j] = k
            for s in _timed_plans(problem, tuple(map(tuple, level)), tuple(map(tuple, kept))):
                if validate_hierarchy(problem, s) == []:
                    plans.append(s)
                    assert len(plans) <= MAX_PLANS, "too many plans to enumerate: not a brute force"
    return plans


def best_whole_plan(spine, graph, hardware, candidates, alignment) -> int | None:
    """The shortest whole plan over every combination: an N-level plan (or main memory) for a
    device offered one, main memory or a two-level plan for the others."""
    names = sorted(candidates)
    per_device = []
    for d in names:
        if N_LEVELS in candidates[d]:
            hb = candidates[d][N_LEVELS].bridge
            per_device.append([None] + [HierarchyLevels(hb, s) for s in n_level_plans(hb.problem)])
        else:
            per_device.append([None] + _device_plans(candidates[d]["memory plan"].bridge, hardware, alignment))
    best = None
    for combo in itertools.product(*per_device):
        levels = {d: lv for d, lv in zip(names, combo) if lv is not None}
        try:
            plan, _ = assemble_mixed(spine, graph, hardware, levels, alignment)
        except (InfeasibleError, UnsupportedError, RetimingDeadlock):
            continue
        best = plan.makespan_cycles if best is None else min(best, plan.makespan_cycles)
    return best


def _three_level_spec(seed: int) -> dict:
    """A 3-op chain o0 (npu1) -> o1 (npu0) -> o2 (npu1); npu0 has three levels (sram, l2, dram)
    and npu1 two: the tensors cross the link both ways."""
    kinds = ["relu", "gelu", "relu"]
    rows = (16, 32, 64)[seed % 3]
    tensors = [{"name": "x", "shape": [rows, 64], "kind": "input"}]
    ops = []
    for i in range(3):
        tensors.append({"name": f"t{i}", "shape": [rows, 64], "kind": "output" if i == 2 else "activation"})
        ops.append({"name": f"o{i}", "type": kinds[(seed + i) % 3], "inputs": ["x" if i == 0 else f"t{i - 1}"],
                    "outputs": [f"t{i}"]})
    return {"version": 1, "name": f"linked-3level-{seed}",
            "hardware": {"devices": [
                {"name": "npu", "profile": "edge-npu", "memory": [
                    {"name": "sram", "capacity": "8 KiB", "bandwidth": "64 GB/s"},
                    {"name": "l2", "capacity": ("16 KiB", "24 KiB")[seed % 2], "bandwidth": "32 GB/s"},
                    {"name": "dram", "capacity": "1 MiB", "bandwidth": "16 GB/s"}], "main": "dram",
                 "dma_paths": [["sram", "l2"], ["l2", "dram"], ["sram", "dram"]]},
                {"name": "edge", "profile": "edge-npu"}],
                "topology": {"kind": "all-to-all", "bandwidth": "16 GB/s", "latency": "1 us"}},
            "models": [{"name": "m", "graph": {"tensors": tensors, "ops": ops}}],
            "objective": "latency",
            "constraints": {"pins": [{"ops": ["m/o1"], "device": "npu0"},
                                     {"ops": ["m/o0", "m/o2"], "device": "edge0"}]},
            "memory": {"plan": True, "fast": {"npu": "sram", "edge": "sram"}, "split": False},
            "solver": {"time_limit": "2 s", "workers": 1, "seed": 0}}


def assert_bound_below_the_best_whole_plan(spec, choices) -> int:
    outcome = run(spec)
    (args, chosen), = choices
    spine, graph, hardware, candidates, alignment = args[:5]
    assert any(N_LEVELS in c for c in candidates.values()), "no N-level candidate: nothing to check"
    best = best_whole_plan(spine, graph, hardware, candidates, alignment)
    assert best is not None
    assert chosen.bound_cycles <= best <= outcome.plan.makespan_cycles
    return best


def test_the_four_level_linked_bound_is_below_every_whole_plan(choices):
    # 16,608 against the best whole plan over every N-level plan of npu0 (19,952, the kept plan).
    best = assert_bound_below_the_best_whole_plan(load_spec(SPEC), choices)
    assert best == 19952


@pytest.mark.parametrize("seed", range(3))
def test_three_level_linked_bounds_are_below_every_whole_plan(choices, seed):
    assert_bound_below_the_best_whole_plan(load_spec(copy.deepcopy(_three_level_spec(seed))), choices)
