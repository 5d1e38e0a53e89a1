"""The several-stream plan bound when splits may be offered (solvers.memory.levels.stream_bound,
"Splits"): never above the best plan over every order, stream assignment and split factor, and
hand-checked where a split is what lets the plan beat the unsplit bound.

The default run draws a few examples; a wider sweep:
``PLAN_TEST_BOUND_EXAMPLES=200 python -m pytest -q -p no:cacheprovider tests/solvers/memory/test_stream_bound_splits.py``.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions, Status
from solvers.memory.levels import CpSatLevelSolver, LevelProblem
from solvers.memory.levels.problem import SplitGroup
from solvers.memory.levels.stream_bound import split_view, stream_plan_floor, stream_plan_lower_bound
from tests.solvers.memory.strategies import level_problems
from tests.solvers.memory.test_stream_bound import _reordered, _topological_orders

EXAMPLES = int(os.environ.get("PLAN_TEST_BOUND_EXAMPLES", "0"))
OPTIONS = SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def best_split_plan(p: LevelProblem, ops, cut: tuple[int, ...], factors: tuple[int, ...],
                    num_streams: int) -> int | None:
    """The proven optimum over every order, stream assignment and factor of the group ``ops``
    (an op, or consecutive ops) run in portions over ``cut`` (CP-SAT, exact over the
    expansions), where the order keeps the group's ops consecutive on one stream (a split
    group's shape), else (and with no ``ops``) unsplit; None when one is not proven."""
    ops = (ops,) if isinstance(ops, int) else tuple(ops)
    best = None
    for order in _topological_orders(p):
        for streams in itertools.product(range(num_streams), repeat=p.num_ops):
            if streams[0] != 0:
                continue  # streams are interchangeable
            q = _reordered(p, order, streams)
            pos = [order.index(op) for op in ops]
            if pos and pos == list(range(pos[0], pos[0] + len(ops))) and len({streams[x] for x in pos}) == 1:
                q = replace(q, splits=(SplitGroup(pos[0], pos[-1], cut, factors),))
            r = CpSatLevelSolver().solve(q, OPTIONS)
            if r.status is Status.INFEASIBLE:
                continue
            if r.status is not Status.OPTIMAL:
                return None
            best = r.objective if best is None else min(best, r.objective)
    return best


def test_a_weight_too_big_whole_is_read_half_fast_in_portions_by_hand():
    # One op (compute 0) reads a 16-B input; fast memory (4 B/cycle) holds 8 B, slow 1 B/cycle,
    # the DMA engine 1 B/cycle. Whole, the input cannot be fast: 16 slow cycles. In halves, one
    # half may be prefetched (8 DMA cycles) while the other is read slow (8 op cycles), then the
    # fetched half is read fast (8/4 = 2): 10. The unsplit bound (16) would exceed that plan;
    # the split-aware one is 10, and 10 is the optimum.
    p = LevelProblem((0,), ((0,),), ((),), (16,), (8, 99), (4, 1))
    assert stream_plan_lower_bound(p, 2) == 16
    split = replace(p, splits=(SplitGroup(0, 0, (0,), (1, 2)),))
    assert stream_plan_lower_bound(split, 2) == 10
    assert best_split_plan(p, 0, (0,), (1, 2), 2) == 10


def test_a_split_group_cuts_what_it_writes_and_may_take_its_cheaper_portions():
    p = LevelProblem((4, 16), ((), (0,)), ((0,), (1,)), (8, 8), (16, 99), (4, 1),
                     splits=(SplitGroup(1, 1, (0, 1), (1, 2), portion_compute=((16,), (7,))),))
    v = split_view(p)
    assert v.ops == {1} and v.cut == {0, 1}
    assert v.compute_cycles == (4, 14)  # two 7-cycle portions
    assert not v.pipelined(0, 1, 0)  # op 0 runs whole: op 1 waits for all of tensor 0
    assert split_view(p, frozenset({0})).pipelined(0, 1, 0)  # both in portions: pipelined


@st.composite
def split_problems(draw):
    """Two or three ops, bandwidth shared or not; one of them may run in halves, over what it
    writes and some of what it reads."""
    p = draw(level_problems(min_ops=2, max_ops=3, max_tensors=3, max_latency=1, slow_capacity=10**9))
    p = replace(p, shared_bandwidth=draw(st.booleans()))
    writers = [i for i in range(p.num_ops) if p.writes[i]]
    op = draw(st.sampled_from(writers)) if writers else draw(st.integers(0, p.num_ops - 1))
    cut = tuple(sorted(set(p.writes[op]) | {t for t in p.reads[op] if draw(st.booleans())}))
    return p, op, cut


@st.composite
def pipelined_problems(draw):
    """Two or three ops where op ``a + 1`` reads what op ``a`` writes; both may run in halves
    as one group (portion by portion), over what they write and what they pass on."""
    p = draw(level_problems(min_ops=2, max_ops=3, max_tensors=3, max_latency=1, slow_capacity=10**9))
    p = replace(p, shared_bandwidth=draw(st.booleans()))
    pairs = [a for a in range(p.num_ops - 1) if set(p.writes[a]) & set(p.reads[a + 1])]
    if not pairs:
        return p, (), ()
    a = draw(st.sampled_from(pairs))
    cut = tuple(sorted(set(p.writes[a]) | set(p.writes[a + 1])
                       | {t for t in p.reads[a] if t not in p.writes[a] and draw(st.booleans())}))
    return p, (a, a + 1), cut


def assert_below_the_best_split_plan(p: LevelProblem, ops: tuple[int, ...], cut: tuple[int, ...], k: int) -> None:
    """The bound of ``p`` with the group ``ops`` over ``cut`` (and from the splittable sets
    alone, what the bridge passes for any order) never exceeds the best plan over every order,
    stream assignment and factor."""
    best = best_split_plan(p, ops, cut, (1, 2), k)
    if best is None:
        return
    grouped = replace(p, splits=(SplitGroup(ops[0], ops[-1], cut, (1, 2)),))
    assert stream_plan_floor(grouped, k) <= stream_plan_lower_bound(grouped, k) <= best
    assert stream_plan_lower_bound(p, k, splittable_ops=frozenset(ops), splittable_tensors=frozenset(cut)) <= best


@settings(max_examples=EXAMPLES or 6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pipelined_problems(), st.integers(1, 2))
def test_never_above_the_best_pipelined_group_over_every_order_and_stream(drawn, k):
    p, ops, cut = drawn
    if ops:
        assert_below_the_best_split_plan(p, ops, cut, k)


@settings(max_examples=EXAMPLES or 8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(split_problems(), st.integers(1, 2))
def test_never_above_the_best_split_plan_over_every_order_and_stream(drawn, k):
    p, op, cut = drawn
    if cut:
        assert_below_the_best_split_plan(p, (op,), cut, k)
