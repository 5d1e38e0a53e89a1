"""The remaining heuristics count a weight or graph input several ops read once per device (or
island), as lowering allocates it and the validator counts it: the hierarchical grouper and its
coarse problem, the window model of the hierarchical LNS, the segment-run start, the contiguous
split and the island split; the part start, the part and module re-solves and the traced start's
spare and helper devices. Each test has a shared tensor where counting per reader refused a
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
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.module_resolve import Module, module_problem
from solvers.scheduling.part_resolve import resolve_problem
from solvers.scheduling.part_start import _later_weights, part_problem, restricted_schedule, stitched
from solvers.scheduling.problem import ScheduledTransfer
from solvers.scheduling.resident import ResidentLedger
from solvers.scheduling.run_start import run_placement
from solvers.scheduling.segment_runs import SegmentRun
from solvers.scheduling.traced_start import _spare, helper_device
from solvers.scheduling.validate import validate_schedule
from tests.solvers.test_heuristics_shared_resident import random_shared

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
        resident, shared = random_shared(rng, n)
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
        resident, shared = random_shared(rng, n)
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


def test_the_part_start_keeps_both_readers_of_its_first_part_on_one_device():
    # Chain 0 -> 1 -> 2 cut at op 1, all three read one 5-byte weight (6 bytes each), two 8-byte
    # devices. Held once, part [0, 1] fits on one device (7 bytes) and op 2 on the other; per
    # reader, part [0, 1] needs both devices (6 + 6) and op 2 then fits nowhere.
    p = _chain(3, 8)
    sub, ops, _ = part_problem(p, [0, 0, 1], [1], 0, -1, [0, 0])
    assert (ops, sub.shared_resident) == ([0, 1], ((5, (0, 1)),))
    sol = stitched(p, [0, 0, 1], [1], lambda k, sub, ops, edges: heft_schedule(sub))
    assert sol is not None and validate_schedule(p, sol) == []
    assert sorted(p.device_resident_bytes(d, sol.op_device) for d in range(2)) == [6, 7]
    assert stitched(replace(p, shared_resident=()), [0, 0, 1], [1],
                    lambda k, sub, ops, edges: heft_schedule(sub)) is None



def test_the_stitched_parts_leave_the_next_part_what_the_shared_weight_leaves_once():
    # Ops 0 and 1 read one 5-byte weight (6 bytes each), op 2 holds 2; two 9-byte devices, cut
    # at op 1. Part [0, 1] holds 7 bytes on device 0, so op 2 (2 bytes) follows there without
    # the 7-cycle transfer: makespan 6. Counted per reader, device 0 would be full (12).
    p = replace(_chain(3, 9), op_resident_bytes=(6, 6, 2), shared_resident=((5, (0, 1)),))
    sol = stitched(p, [0, 0, 1], [1], lambda k, sub, ops, edges: heft_schedule(sub))
    assert sol is not None and validate_schedule(p, sol) == []
    assert (sol.op_device, sol.makespan_cycles) == ((0, 0, 0), 6)

def test_the_part_start_restricts_and_reserves_the_incumbent_with_each_weight_once():
    # Chain of four cut at op 1, all on device 0 (9 bytes: 5 + 4 * 1). Part 1's ops 2 and 3 hold
    # 7 bytes there, not 12: the incumbent's restriction fits part 1 and part 0 keeps 7 free.
    p = _chain(4, 9)
    incumbent = SchedulingSolution((0,) * 4, (0,) * 4, (0, 2, 4, 6), (2,) * 4, ())
    assert validate_schedule(p, incumbent) == []
    assert _later_weights(p, [0, 0, 1, 1], [1], incumbent) == [[7, 0], [0, 0]]
    sub, ops, inside = part_problem(p, [0, 0, 1, 1], [1], 1, 0, [0, 0])
    assert (ops, sub.shared_resident, sub.op_resident_bytes) == ([1, 2, 3], ((5, (1, 2)),), (0, 6, 6))
    restricted = restricted_schedule(p, sub, ops, inside, incumbent, [0, 1], True)
    assert restricted is not None and restricted.op_start == (0, 0, 2)
    per_reader = replace(sub, shared_resident=())
    assert restricted_schedule(p, per_reader, ops, inside, incumbent, [0, 1], True) is None


def _shared_head(op3_bytes: int, memory: int) -> tuple[SchedulingProblem, SchedulingSolution]:
    """Chain 0 -> 1 -> 2 -> 3 on two ``memory``-byte devices; ops 0 and 1 read one 5-byte weight
    (6 bytes each), op 3 holds ``op3_bytes`` and takes 1 cycle on device 0, 5 on device 1. The
    schedule: ops 0-2 on device 0 (7 bytes), op 3 on device 1 after a 1-cycle transfer."""
    p = SchedulingProblem(((1, 1), (1, 1), (1, 1), (1, 5)), ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1), _TWO,
                          ((1,),) * 3, device_memory_bytes=(memory, memory), op_resident_bytes=(6, 6, 0, op3_bytes),
                          shared_resident=((5, (0, 1)),))
    sol = SchedulingSolution((0, 0, 0, 1), (0,) * 4, (0, 1, 2, 4), (1, 1, 1, 5), (ScheduledTransfer(2, 0, 3, 1),))
    assert validate_schedule(p, sol) == []
    return p, sol


def test_the_part_re_solve_leaves_the_room_the_shared_weight_leaves_once():
    # Part 1 is [2*, 3] (cut at op 2); part 0 holds 7 bytes on device 0 once, 12 per reader (full).
    p, sol = _shared_head(1, 8)
    sub, ops, _ = resolve_problem(p, sol, [0, 0, 0, 1], [2], 1)
    assert ops == [2, 3] and sub.memory_bytes(0) == 1 and sub.durations_cycles[1][0] == 1
    per_reader, _, _ = resolve_problem(replace(p, shared_resident=()), sol, [0, 0, 0, 1], [2], 1)
    assert per_reader.durations_cycles[1][0] < 0


def test_the_module_re_solve_leaves_the_room_the_shared_weight_leaves_once():
    # Module [2, 3] after the readers 0 and 1: device 0 has 10 - 7 = 3 bytes left for it, room
    # for op 3's 2 bytes; per reader 10 - 12 leaves one byte and op 3 may not go there.
    p, sol = _shared_head(2, 10)
    module = Module(source=2, sink=None, ops=(2, 3))
    sub, hint = module_problem(p, sol, module)
    assert sub.memory_bytes(0) == 2 and sub.durations_cycles[1][0] == 1 and hint.op_device == (0, 1)
    per_reader, _ = module_problem(replace(p, shared_resident=()), sol, module)
    assert per_reader.durations_cycles[1][0] < 0


def test_the_traced_start_sends_a_reader_to_the_helper_that_holds_its_weight():
    # Op 2 already runs on the 8-byte helper device 1 with the shared weight: op 1 adds 1 byte.
    p = _chain(3, 8)
    ledger = ResidentLedger(p, (-1, -1, 1))
    assert helper_device(p, [1], [1], ledger) == 1 and _spare(p, [1], [1], ledger) == 1
    per_reader = ResidentLedger(replace(p, shared_resident=()), (-1, -1, 1))
    assert _spare(p, [1], [1], per_reader) is None and helper_device(p, [1], [1], per_reader) is None
