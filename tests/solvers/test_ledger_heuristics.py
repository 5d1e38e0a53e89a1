"""The remaining heuristics count a weight or graph input several ops read once per device (or
island), as lowering allocates it and the validator counts it: the hierarchical grouper and its
coarse problem, the window model of the hierarchical LNS, the segment-run start, the contiguous
split and the island split. Each test has a shared tensor where counting per reader refused a
placement that fits (checked against ``shared_resident=()``, the per-reader count)."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
from ortools.sat.python import cp_model

from solvers.core import SolveOptions, Status
from solvers.hierarchical.grouping import coarse_problem, coarsen
from solvers.hierarchical.state import GraphIndex, ScheduleState
from solvers.hierarchical.window import Neighbourhood, build_window
from solvers.islands import CpSatSplitSolver, SplitProblem, split_errors
from solvers.scheduling import SchedulingProblem, SchedulingSolution
from solvers.scheduling.bounds import segment_problems
from solvers.scheduling.contiguous import block_costs, contiguous_schedule
from solvers.scheduling.run_start import run_placement
from solvers.scheduling.segment_runs import SegmentRun
from solvers.scheduling.validate import validate_schedule

_TWO = ((-1, 0), (0, -1))


def _chain(n: int, memory: int, devices: int = 2) -> SchedulingProblem:
    """A chain of ``n`` 2-cycle ops that all read one 5-byte weight (6 bytes each: 1 of their
    own), 7-cycle transfers, ``devices`` devices of ``memory`` bytes."""
    links = tuple(tuple(-1 if a == b else 0 for b in range(devices)) for a in range(devices))
    return SchedulingProblem(((2,) * devices,) * n, tuple((i, i + 1, 1) for i in range(n - 1)), (1,) * devices,
                             links, ((7,) if devices > 1 else (),) * (n - 1), device_memory_bytes=(memory,) * devices,
                             op_resident_bytes=(6,) * n, shared_resident=((5, tuple(range(n))),))


def test_the_grouper_merges_two_readers_whose_weight_fits_once():
    # room = 0.5 * 14 = 7: the two readers hold 5 + 1 + 1 = 7 together, 12 per reader.
    p = _chain(2, 14)
    c = coarsen(p, 1)
    assert c.members == ((0, 1),) and c.problem.op_resident_bytes == (7,)
    assert coarsen(replace(p, shared_resident=()), 1).num_groups == 2


def test_the_coarse_problem_holds_each_shared_tensor_as_the_fine_placement_does():
    rng = random.Random(3)
    for _ in range(40):
        n, groups, nd = rng.randint(2, 7), rng.randint(1, 4), rng.randint(1, 3)
        resident = [rng.randint(0, 3) for _ in range(n)]
        shared = []
        for _ in range(rng.randint(1, 3)):
            readers = tuple(sorted(rng.sample(range(n), rng.randint(2, n))))
            size = rng.randint(1, 9)
            shared.append((size, readers))
            for i in readers:
                resident[i] += size
        links = tuple(tuple(-1 if a == b else 0 for b in range(nd)) for a in range(nd))
        p = SchedulingProblem(((1,) * nd,) * n, (), (1,) * nd, links, (), op_resident_bytes=tuple(resident),
                              shared_resident=tuple(shared))
        group_of = [rng.randrange(groups) for _ in range(n)]
        used = sorted(set(group_of))
        group_of = tuple(used.index(g) for g in group_of)
        coarse = coarse_problem(p, group_of, len(used))
        coarse_dev = [rng.randrange(nd) for _ in used]
        fine_dev = [coarse_dev[g] for g in group_of]
        assert [coarse.device_resident_bytes(d, coarse_dev) for d in range(nd)] == [
            p.device_resident_bytes(d, fine_dev) for d in range(nd)]


def test_the_window_moves_a_reader_next_to_the_other_one():
    # Ops 0 and 1 read one 5-byte weight; device 0 holds 7 bytes, op 1 takes 10 cycles on
    # device 1 and 4 on device 0. Held once, op 1 joins op 0 on device 0: makespan 8, not 10.
    p = SchedulingProblem(((4, 4), (4, 10)), (), (1, 1), _TWO, (), device_memory_bytes=(7, 100),
                          op_resident_bytes=(6, 6), shared_resident=((5, (0, 1)),))
    schedule = SchedulingSolution((0, 1), (0, 0), (0, 0), (4, 10), ())

    def window_makespan(problem: SchedulingProblem) -> int:
        state = ScheduleState(GraphIndex.of(problem), schedule)
        model, v = build_window(state, Neighbourhood((1,), 0, 5, (0, 1)))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(model) == cp_model.OPTIMAL
        return solver.value(v.makespan)

    assert window_makespan(p) == 8
    assert window_makespan(replace(p, shared_resident=())) == 10


def test_the_run_start_keeps_two_readers_on_one_device():
    # Runs {a, b} and {c} on two 8-byte devices: a and b hold 5 + 1 + 1 = 7 together.
    p = _chain(3, 8)
    runs = [SegmentRun(0, 0, 1, ((),)), SegmentRun(0, 2, 2, ())]
    assert run_placement(p, segment_problems(p), runs) == (0, 0, 1)
    per_reader = replace(p, shared_resident=())
    assert run_placement(per_reader, segment_problems(per_reader), runs) is None  # 12 > 8


def test_the_contiguous_split_fits_every_reader_in_one_block():
    # Two devices of 8 bytes: one holds the three readers (5 + 3 * 1), one block, makespan 6.
    # Per reader (6 bytes each) every block holds one op: three blocks, two devices, no split.
    p = _chain(3, 8)
    assert np.isfinite(block_costs(p, (0, 1), [0, 1, 2], [0, 1, 2])[0, 3])
    assert not np.isfinite(block_costs(replace(p, shared_resident=()), (0, 1), [0, 1, 2], [0, 1, 2])[0, 2])
    s = contiguous_schedule(p)
    assert s is not None and validate_schedule(p, s) == [] and s.makespan_cycles == 6
    assert contiguous_schedule(replace(p, shared_resident=())) is None


def test_block_weights_match_the_device_count_on_random_blocks():
    rng = random.Random(11)
    for _ in range(40):
        n = rng.randint(2, 7)
        resident = [rng.randint(0, 3) for _ in range(n)]
        shared = []
        for _ in range(rng.randint(1, 3)):
            readers = tuple(sorted(rng.sample(range(n), rng.randint(2, n))))
            size = rng.randint(1, 9)
            shared.append((size, readers))
            for i in readers:
                resident[i] += size
        cap = rng.randint(max(resident), sum(resident))
        p = SchedulingProblem(((1,),) * n, (), (1,), ((-1,),), (), device_memory_bytes=(cap,),
                              op_resident_bytes=tuple(resident), shared_resident=tuple(shared))
        cost = block_costs(p, (0,), list(range(n)), list(range(n)))
        for i in range(n):
            for j in range(i + 1, n + 1):
                held = p.device_resident_bytes(0, [0 if i <= k < j else -1 for k in range(n)])
                assert np.isfinite(cost[i, j]) == (held <= cap), (i, j, held, cap)


def test_the_island_split_holds_a_shared_weight_once_per_island():
    # Portions 0 and 1 read one 5-byte weight (6 bytes each); island 0 (fast) holds 7 bytes.
    p = SplitProblem(portion_work=((2, 10), (2, 10)), portion_memory=(6, 6), island_lanes=(2, 2),
                     island_memory=(7, 100), edges=(), network_cycles=(), shared_memory=((5, (0, 1)),))
    assert split_errors(p, (0, 0)) == []
    assert split_errors(replace(p, shared_memory=()), (0, 0)) == ["island 0 holds 12 bytes, more than its 7"]
    r = CpSatSplitSolver().solve(p, SolveOptions(time_limit_s=5, num_workers=1, random_seed=0))
    assert (r.status, r.objective, r.solution.island_of) == (Status.OPTIMAL, 2, (0, 0))
    per_reader = CpSatSplitSolver().solve(replace(p, shared_memory=()), SolveOptions(time_limit_s=5, num_workers=1))
    assert per_reader.objective == 5  # one portion on island 1: 10 cycles over 2 lanes
