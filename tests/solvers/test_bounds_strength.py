"""Hand-made instances where each new bound is strictly stronger than the previous
``lower_bound`` (critical path, total work, fractional load, and the plain sum of the
segments' cheap bounds), with every value worked out in the comments and the optimum
checked by exhaustive search.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from solvers.scheduling import (Objective, SchedulingProblem, critical_path_bound, fractional_load_bound,
                                lower_bound, lower_bounds, memory_path_bound, placement_path_bound,
                                restrict_placements, segment_problems, work_bound)
from solvers.scheduling.decomposition import chain_segment_bound
from solvers.scheduling.linear_relaxation import lp_bound
from tests.solvers.test_scheduling_bruteforce import brute_force

TWO = ((-1, 0), (0, -1))  # two devices, one link


def previous_lower_bound(p: SchedulingProblem) -> int:
    """What ``lower_bound`` computed before these bounds existed (LATENCY)."""
    def cheap(q: SchedulingProblem) -> int:
        return max(critical_path_bound(q), work_bound(q), fractional_load_bound(q))

    return max(cheap(p), sum(cheap(sub) for sub, _ in segment_problems(p)))


def test_forced_placement_by_memory():
    # One op: 1 cycle on device 0, 10 on device 1; its 6 bytes of weights fit only on
    # device 1 (memory 4 and 8). Before: every bound ignored memory, so 1 (its fastest time).
    # Forced: device 0 is ruled out, so every bound sees 10, the optimum.
    p = SchedulingProblem(((1, 10),), (), (1, 1), TWO, (), device_memory_bytes=(4, 8), op_resident_bytes=(6,))
    assert previous_lower_bound(p) == 1
    assert restrict_placements(p).durations_cycles == ((-1, 10),)
    assert critical_path_bound(restrict_placements(p)) == lower_bound(p) == brute_force(p) == 10


def test_placement_path_charges_the_transfers_a_path_must_make():
    # a -> b -> c; a and c take 1 cycle on device 0 and 9 on device 1, b the other way
    # round; transfers take 3. Before: the critical path is 1 + 1 + 1 = 3 (each pair of ops
    # *could* share a device, so no transfer is charged); work ceil(3 / 2) = 2; fractional
    # load 2; the segments [a], [a*, b], [b*, c] 1 + 1 + 1 = 3. The placement-aware path:
    # b on device 1 costs 1 + 3 + 1 + 3 + 1 = 9, on device 0 1 + 9 + 1 = 11; so 9, the optimum.
    p = SchedulingProblem(((1, 9), (9, 1), (1, 9)), ((0, 1, 8), (1, 2, 8)), (1, 1), TWO, ((3,), (3,)))
    assert previous_lower_bound(p) == 3
    assert placement_path_bound(p) == brute_force(p) == 9


def test_memory_path_pays_for_the_crossings_memory_forces():
    # A chain of three ops with 5 bytes of weights each, 1 cycle on device 0 or 10 on device
    # 1, 2-cycle transfers, both devices holding 10 bytes. Before: 1 + 1 + 1 = 3 (critical
    # path and segments; fractional load: moving x of the work costs 10x on device 1,
    # max(3 - x, 10x) = 30/11, so 3). Two ops fit on device 0, the third runs on device 1
    # after a transfer: 1 + 1 + 2 + 10 = 14 (or one op on device 1 in the middle:
    # 1 + 2 + 10 + 2 + 1 = 16), the optimum.
    p = SchedulingProblem(((1, 10),) * 3, ((0, 1, 0), (1, 2, 0)), (1, 1), TWO, ((2,), (2,)),
                          device_memory_bytes=(10, 10), op_resident_bytes=(5, 5, 5))
    assert previous_lower_bound(p) == 3
    assert placement_path_bound(p) == 3  # without memory the path stays on device 0
    assert memory_path_bound(p) == brute_force(p) == 14


def test_lp_couples_each_op_to_its_own_share():
    # Two independent ops: a takes 3 cycles on device 0 or 2 on device 1, b 4 or 1.
    # Before: critical path max(2, 1) = 2, work ceil(3 / 2) = 2, fractional load 1.8 -> 2
    # (b on device 1, a split 3/5 : 2/5). The LP also bounds each op's completion by its own
    # share-weighted duration: with f = a's share on device 0 and g = b's, T >= 2 + f (a),
    # T >= 3 - 2f - g (device 1), T >= 3f + 4g (device 0), T >= 1 + 3g (b); the best is
    # f = 0.2, g = 0.4, T = 2.2, so 3. The optimum: a on 0 and b on 1 (or both on 1), 3.
    p = SchedulingProblem(((3, 2), (4, 1)), (), (1, 1), TWO, ())
    assert previous_lower_bound(p) == 2
    assert lp_bound(p) == brute_force(p) == 3


def test_lp_sees_memory_under_throughput():
    # THROUGHPUT: two ops, 1 cycle on device 0 or 4 on device 1, 5 bytes of weights each,
    # device 0 holds 5. Before: largest op 1; fractional load with s = f_a + f_b on device 0,
    # T >= max(s, 4 (2 - s)), s = 8/5, T = 1.6, so 2. With memory the LP keeps at most one
    # op's worth on device 0 (5 f_a + 5 f_b <= 5), so device 1 carries 4 (2 - s) >= 4: T = 4,
    # the optimum (one op on each device).
    p = SchedulingProblem(((1, 4), (1, 4)), (), (1, 1), TWO, (), objective=Objective.THROUGHPUT,
                          device_memory_bytes=(5, 0), op_resident_bytes=(5, 5))
    before = max(max(min(x for x in r if x >= 0) for r in p.durations_cycles), fractional_load_bound(p))
    assert before == 2
    assert lp_bound(p) == brute_force(p) == 4


def test_segment_chain_keeps_a_cut_op_on_one_device():
    # a -> {b, c} -> d; a takes 2 cycles on device 0 or 1 on device 1, b runs only on
    # device 0 (2), c only on device 1 (5), d 4 on either; a's transfers take 2, b's and c's 3.
    # Before: critical path a, c, d on device 1 = 1 + 5 + 4 = 10 (b's branch 1 + 2 + 2 + ...
    # shorter); work ceil(12 / 2) = 6; segments [a] 1 + [a*, b, c, d] 9 = 10.
    # Placement-aware path: b ends at 4 at best (after a on device 0 at 2), c at 6 (after a on
    # device 1 at 1); d on device 1 starts after b's transfer, 4 + 3 = 7, and ends at 11 (on
    # device 0: after c's transfer, 6 + 3 + 4 = 13). So 11: b's and c's inputs may come from
    # a on different devices. The chain puts a on one device: on device 1, d ends at
    # 1 + max(2 + 2 + 3, 5) + 4 = 12 on device 1 (13 on device 0); on device 0, at
    # 2 + max(2 + 3, 2 + 5) + 4 = 13 at best. So 12, the optimum.
    p = SchedulingProblem(((2, 1), (2, -1), (-1, 5), (4, 4)), ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)),
                          (1, 1), TWO, ((2,), (2,), (3,), (3,)))
    assert previous_lower_bound(p) == 10
    assert placement_path_bound(p) == 11
    assert lp_bound(p) == 11
    segs = segment_problems(p)
    floors = [lower_bound(sub, segments=False) for sub, _ in segs]
    assert chain_segment_bound(p, segs, floors) == brute_force(p) == 12
    assert lower_bounds(p)["segment_chain"] == lower_bound(p) == 12


@pytest.mark.parametrize("objective", [Objective.LATENCY, Objective.THROUGHPUT])
def test_lower_bound_is_the_best_part(objective):
    p = replace(SchedulingProblem(((2, 1), (2, -1), (-1, 5), (4, 4)),
                                  ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)), (1, 1), TWO,
                                  ((2,), (2,), (3,), (3,))), objective=objective)
    assert lower_bound(p) == max(lower_bounds(p).values())
    assert lower_bound(p) <= brute_force(p)
