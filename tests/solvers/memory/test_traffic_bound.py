"""The N-level forced-traffic bound under shared bandwidth: hand-checked cases where it is strictly
above the unshared relaxation, and soundness against brute force (every level, gap, move, queue
order and interleaving), against every op order, and against the best split.

The default run draws a few examples per property; a wider sweep of the same properties:
``PLAN_TEST_BOUND_EXAMPLES=200 python -m pytest -q -p no:cacheprovider tests/solvers/memory/test_traffic_bound.py``.
"""

from __future__ import annotations

import dataclasses
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import Status
from solvers.memory.levels.hierarchy_bounds import hierarchy_lower_bound
from solvers.memory.levels.hierarchy_cpsat import CpSatHierarchySolver
from solvers.memory.levels.problem import SplitGroup
from solvers.memory.levels.traffic_bound import route_traffic, shared_traffic_lower_bound
from tests.solvers.memory.test_hierarchy import four_level_problems, four_levels, hierarchy_problems, three_levels
from tests.solvers.memory.test_hierarchy_bandwidth import shared_brute_force
from tests.solvers.memory.test_hierarchy_bounds import OPTIONS, best_over_orders, host_heavy_problems, split_host_inputs

EXAMPLES = int(os.environ.get("PLAN_TEST_BOUND_EXAMPLES", "0"))


def examples(default: int) -> settings:
    return settings(max_examples=EXAMPLES or default, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def shared(p):
    return dataclasses.replace(p, shared_bandwidth=True)


def test_host_weights_carry_their_bytes_over_host_either_way_by_hand():
    # Two ops (compute 1) each read a 16-B weight homed in host (1 B/cycle; hbm 4, vmem 16).
    # Unshared: one weight read at host (16 op cycles) while the other crosses host -> hbm on the
    # DMA engine (16), then 16/16 = 1 op cycle: the unshared relaxation's 17. This model knows the
    # fetched weight is read where the route ends: at hbm (16/4 = 4 op cycles: 16 + 4) or at vmem
    # (a second hop of 16/4 = 4 DMA cycles: 16 + 4), so 20 without sharing (the optimum there).
    # Shared, host moves 16 B for each weight whichever way (read in place: 16 cycles of all of
    # host; fetched: the host hop, 16 cycles holding all of host): 32, the brute-force optimum.
    p = three_levels(compute_cycles=(1, 1), reads=((0,), (1,)), writes=((), ()), tensor_bytes=(16, 16),
                     tensor_home=(2, 2), capacity_bytes=(64, 64, 1024), bandwidth_bytes_per_cycle=(16, 4, 1))
    assert hierarchy_lower_bound(p) == 17
    assert hierarchy_lower_bound(shared(p)) == 17  # the unshared relaxation does not see sharing
    assert shared_traffic_lower_bound(p) == 20  # unshared: no level rows
    assert shared_traffic_lower_bound(shared(p)) == 32
    assert shared_brute_force(shared(p)) == 32


def test_every_hop_of_a_route_loads_both_of_its_levels_by_hand():
    # A 16-B host tensor to vmem: host -> hbm 16 cycles (1 B/cycle: all of host, 1/4 of hbm),
    # hbm -> vmem 4 cycles plus latency 1 (4 B/cycle: all of hbm, 1/4 of vmem).
    p = three_levels(compute_cycles=(0,), reads=((0,),), writes=((),), tensor_bytes=(16,), tensor_home=(2,),
                     dma_latency_cycles=1, capacity_bytes=(16, 64, 1024), bandwidth_bytes_per_cycle=(16, 4, 1))
    assert route_traffic(p, 0, 2, 0) == (17 + 5, (5 * 250, 17 * 250 + 5 * 1000, 17 * 1000))


def test_a_fast_only_reader_loads_hbm_with_both_hops_of_its_route_by_hand():
    # Op 0 (fast-only, compute 0) reads a 16-B host weight in vmem: the route host -> hbm -> vmem
    # is forced. hbm carries the host hop's quarter (16 cycles x 250 shares) and the vmem hop's
    # whole (4 x 1000); op 1 reads a 64-B hbm tensor (16 cycles of all of hbm): 4000 + 4000 +
    # 16000 share-cycles, so 24 cycles of hbm (host 16, the DMA engine 20). The unshared
    # relaxation: op times 1 + 16, the first hop 16: 17. The optimum (either order) is 37: op 1
    # cannot run beside either hop on hbm (1000 + 250 > 1000 shares): 16 + 4 + 1 + 16.
    p = three_levels(compute_cycles=(0, 0), reads=((0,), (1,)), writes=((), ()), tensor_bytes=(16, 64),
                     tensor_home=(2, 1), capacity_bytes=(16, 128, 1024), bandwidth_bytes_per_cycle=(16, 4, 1),
                     fast_only_ops=(0,), shared_bandwidth=True)
    assert hierarchy_lower_bound(p) == 17
    assert shared_traffic_lower_bound(p) == 24
    r = CpSatHierarchySolver().solve(p, OPTIONS)
    assert r.status is Status.OPTIMAL and r.objective == 37


@examples(6)
@given(hierarchy_problems())
def test_never_above_the_shared_brute_force_optimum_on_three_levels(p):
    p = shared(p)
    brute = shared_brute_force(p)
    if brute is not None:
        assert shared_traffic_lower_bound(p) <= brute


@examples(3)
@given(st.data())
def test_never_above_the_shared_optimum_of_any_order_on_four_levels(data):
    # Computed once on the drawn order; every valid order's proven optimum must be at least it.
    p = shared(data.draw(st.one_of(four_level_problems(max_ops=3, max_tensors=3), host_heavy_problems())))
    bound = shared_traffic_lower_bound(p)
    best = best_over_orders(p)
    if best is not None:
        assert bound <= best


@examples(6)
@given(st.data())
def test_never_above_the_best_split_plan_under_sharing(data):
    # The split group's op and tensors are offered whole or in portions; the bound of the split
    # problem (its group counts as splittable) never exceeds the best plan over the factors.
    if data.draw(st.booleans()):
        split = shared(data.draw(split_host_inputs()))
    else:
        p = shared(data.draw(st.one_of(four_level_problems(max_ops=3, max_tensors=3), host_heavy_problems())))
        op = data.draw(st.integers(0, p.num_ops - 1))
        cut = set(p.writes[op]) | {t for t in p.reads[op] if data.draw(st.booleans())}
        if not cut:
            return
        split = dataclasses.replace(p, splits=(SplitGroup(op, op, tuple(sorted(cut)), (1, 2)),))
    r = CpSatHierarchySolver().solve(split, OPTIONS)
    if r.status is Status.OPTIMAL:
        assert shared_traffic_lower_bound(split) <= r.objective


def test_host_heavy_chains_are_bounded_by_host_traffic():
    # Four host weights of 16 B (1 B/cycle) read by a chain of compute-2 ops: host carries 64 B,
    # so 64 cycles at least, where the unshared relaxation gives 16 + 16 + 16 + 2 + ... below it.
    p = four_levels(compute_cycles=(2, 2, 2, 2), reads=((0,), (1,), (2,), (3,)), writes=((), (), (), ()),
                    tensor_bytes=(16, 16, 16, 16), tensor_home=(3, 3, 3, 3), shared_bandwidth=True)
    assert hierarchy_lower_bound(p) < 64 <= shared_traffic_lower_bound(p)
