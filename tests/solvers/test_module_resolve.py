"""The module re-solve (solvers.scheduling.module_resolve): a restriction spliced back is the
schedule itself, the search never returns worse than its start, is valid and deterministic,
finds a hand-checked better placement beside the module's heavy pinned exit op, and is wired
into the CP-SAT scheduler as a start candidate."""

from __future__ import annotations

import random

import pytest

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatScheduler, SchedulingProblem
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.module_resolve import (SOURCE, Module, ModuleResolveOptions, module_problem, module_resolve,
                                              modules, splice)
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.sweeps import examples, random_sweep


def _budget(units: float = 0.2) -> Budget:
    # ``units`` of a 10-s budget: the wall-clock net stays the 10-s solve's (35 s), far from a
    # busy machine's few seconds here, so the result repeats
    return Budget.start(10.0, SCHEDULING).child(units)


def _fork_with_a_heavy_tail() -> SchedulingProblem:
    """head -> (b1 -> c1 | b2 -> c2) -> join -> tail (ops 0..6 = head, b1, c1, b2, c2, join,
    tail) on two fast devices that hold 6 bytes each and a slow one (3 times as long) without a
    limit; 1-cycle transfers. Every op weighs one byte, the tail 5; head, join and tail take 1
    cycle, the branch ops 2."""
    fast = (1, 2, 2, 2, 2, 1, 1)
    edges = ((0, 1, 0), (1, 2, 0), (0, 3, 0), (3, 4, 0), (2, 5, 0), (4, 5, 0), (5, 6, 0))
    link = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    return SchedulingProblem(tuple((f, f, 3 * f) for f in fast), edges, (1, 1, 1), link, ((1, 1, 1),) * len(edges),
                             device_memory_bytes=(6, 6, 0), op_resident_bytes=(1, 1, 1, 1, 1, 1, 5))


def test_it_finds_the_hand_checked_placement_beside_the_modules_heavy_pinned_exit_op():
    # Hand-checked. The seven ops are one module (fewer than 12 ops: the segments merge), its
    # exit op the tail, pinned where the start has it: device 1, where its 5 bytes leave one byte
    # of the 6 for the rest of the module (the limit is the tail's, not that of an op outside).
    # Start: head .. join on device 0: head 0-1, the four branch ops 1-9, join 9-10, transfer
    # 10-11, tail 11-12: 12. One byte of room: no branch moves to device 1 whole, and the slow
    # device takes 6 cycles per branch op (a branch there ends at 14 at best). One branch op on
    # device 1 is the optimum: e.g. b2 there 2-4 (transfer 1-2), back 4-5, while device 0 runs
    # b1 1-3, c1 3-5, c2 5-7, join 7-8 (the four branch ops need 8 cycles of fast device, one
    # of them on device 1 at most, so device 0 is busy 1 + 6 + 1 at least): 8, tail 9-10.
    p = _fork_with_a_heavy_tail()
    start = heft_schedule(p, (0, 0, 0, 0, 0, 0, 1))
    assert objective_value(p, start) == 12
    [module] = modules(p, ModuleResolveOptions().max_ops)
    assert module == Module(source=None, sink=6, ops=(0, 1, 2, 3, 4, 5, 6))
    local, _ = module_problem(p, start, module)
    assert local.durations_cycles[6] == (-1, 1, -1) and local.device_memory_bytes == (6, 6, 0)
    best, stats = module_resolve(p, start, _budget())
    assert not validate_schedule(p, best)
    assert objective_value(p, best) == 10
    assert sorted(best.op_device[1:5]) == [0, 0, 0, 1] and best.op_device[6] == 1
    assert stats["accepted"] == 1 and stats["start_objective"] == 12 and stats["objective"] == 10


def _stacked_modules(seed: int) -> SchedulingProblem:
    """Random stacked modules: 2-4 forks into 2-3 branches of 1-3 ops each and their joins, on
    two fast devices that hold about half of the weights each and a slow one without a limit;
    one link per device pair, random transfer times and buffer sizes."""
    rng = random.Random(seed)
    durations, weights, outputs, edges = [(1, 1, 3)], [1], [rng.randint(0, 3)], []
    join = 0
    for _ in range(rng.randint(2, 4)):
        ends = []
        for _ in range(rng.randint(2, 3)):
            prev = join
            for _ in range(rng.randint(1, 3)):
                a = rng.randint(1, 5)
                durations.append((a, a, rng.randint(2, 4) * a))
                weights.append(rng.randint(1, 4))
                outputs.append(rng.randint(0, 3))
                edges.append((prev, len(durations) - 1, rng.randint(0, 3)))
                prev = len(durations) - 1
            ends.append(prev)
        durations.append((1, 1, 3))
        weights.append(1)
        outputs.append(rng.randint(0, 3))
        join = len(durations) - 1
        edges += [(e, join, rng.randint(0, 3)) for e in ends]
    cap = max(max(weights) + 6, sum(weights) // 2)
    link = ((-1, 0, 1), (0, -1, 2), (1, 2, -1))
    return SchedulingProblem(tuple(durations), tuple(edges), (1, 1, 1), link,
                             tuple((rng.randint(0, 3),) * 3 for _ in edges), device_memory_bytes=(cap, cap, 0),
                             op_resident_bytes=tuple(weights), op_output_bytes=tuple(outputs),
                             device_class=(0, 0, 1))


@pytest.mark.parametrize("seed", range(6))
def test_a_restriction_spliced_back_is_the_schedule_itself(seed):
    p = _stacked_modules(seed)
    sol = heft_schedule(p)
    assert modules(p, 40)
    for m in modules(p, 40):
        built = module_problem(p, sol, m)
        assert built is not None  # the room the rest leaves always holds the incumbent's module
        sub, hint = built
        assert not validate_schedule(sub, hint)
        assert splice(p, sol, m, hint) == sol


_SMALL = ModuleResolveOptions(module_units=0.005)  # small modules: short solves


@random_sweep
@pytest.mark.parametrize("seed", range(examples(2, 40)))
def test_never_worse_than_its_start_valid_and_deterministic(seed):
    p = _stacked_modules(seed)
    for start in (heft_schedule(p),):
        best, stats = module_resolve(p, start, _budget(0.02), cfg=_SMALL)
        assert not validate_schedule(p, best)
        assert objective_value(p, best) <= objective_value(p, start)
        assert stats["objective"] == objective_value(p, best)
        again, again_stats = module_resolve(p, start, _budget(0.02), cfg=_SMALL)
        assert again == best and again_stats == stats


def test_the_scheduler_reports_the_re_solve_as_a_start_candidate():
    # every other start stage off: the hint (12) goes to the module re-solve, which finds 10
    p = _fork_with_a_heavy_tail()
    start = heft_schedule(p, (0, 0, 0, 0, 0, 0, 1))
    quiet = dict(segment_bound_share=0.0, segment_schedule_share=0.0, forced_cut_share=0.0, bound_probe_share=0.0,
                 run_start_share=0.0, placement_lns_share=0.0, pinned_move_share=0.0, leftover_bound_share=0.0)
    r = CpSatScheduler(CpSatOptions(**quiet)).solve(p, SolveOptions(time_limit_s=5, num_workers=1, hint=start))
    assert r.stats["start_candidates"] == {"options": 12, SOURCE: 10}
    assert r.stats["hint_source"] == SOURCE and r.stats["module_resolve"]["accepted"] == 1
    assert r.objective <= 10
    off = CpSatScheduler(CpSatOptions(**quiet, module_resolve_share=0.0))
    assert "module_resolve" not in off.solve(p, SolveOptions(time_limit_s=5, num_workers=1, hint=start)).stats
