"""The graph structure the bounds rely on: linear-time cut ops against their definition,
segments, free-end pruning, forced placements and held weights."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.scheduling import SchedulingProblem, segment_problems
from solvers.scheduling.decomposition import prune_free_ends
from solvers.scheduling.forced import forced_allowed_devices, held_weights
from solvers.scheduling.structure import cut_vertices, segment_ranges, topological_order


@st.composite
def dags(draw):
    n = draw(st.integers(1, 14))
    perm = draw(st.permutations(range(n)))
    p_edge = draw(st.sampled_from([0.1, 0.3, 0.6]))
    edges = tuple((perm[u], perm[v], 0) for u in range(n) for v in range(u + 1, n)
                  if draw(st.floats(0, 1)) < p_edge)
    return SchedulingProblem(((1,),) * n, edges, (1,), ((-1,),), ((),) * len(edges))


def _reach(p: SchedulingProblem) -> list[set[int]]:
    succ: list[list[int]] = [[] for _ in range(p.num_ops)]
    for u, v, _ in p.edges:
        succ[u].append(v)
    out = []
    for s in range(p.num_ops):
        seen, stack = set(), [s]
        while stack:
            for v in succ[stack.pop()]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        out.append(seen)
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@given(dags())
def test_cut_vertices_match_their_definition(p):
    reach = _reach(p)
    n = p.num_ops
    expected = {c for c in range(n)
                if all(x == c or c in reach[x] or x in reach[c] for x in range(n))}
    cuts = cut_vertices(p)
    assert set(cuts) == expected
    pos = {op: k for k, op in enumerate(topological_order(p))}
    assert list(cuts) == sorted(cuts, key=pos.__getitem__)
    # segments: the ops strictly between consecutive cut ops are exactly the descendants of
    # the first that are ancestors of the second
    for (sub, ops), (_, _, source, sink) in zip(segment_problems(p), segment_ranges(p)):
        if source is not None and sink is not None:
            inner = {x for x in range(n) if x in reach[source] and sink in reach[x]}
            assert set(ops) == inner | {source, sink}
            assert sub.durations_cycles[0] == (0,)  # the source takes no time


def test_pruning_keeps_weights_with_their_group():
    # w (a weight source, no time) feeds c, is colocated with it, and hides the cut ops a, b
    p = SchedulingProblem(((1,), (1,), (1,), (0,), (0,)), ((0, 1, 0), (1, 2, 0), (3, 2, 0), (2, 4, 0)), (1,),
                          ((-1,),), ((),) * 4, op_resident_bytes=(0, 0, 1, 6, 3), colocation_groups=((2, 3),))
    q = prune_free_ends(p)
    assert q.num_ops == 3  # w and the zero-time sink are gone
    assert q.op_resident_bytes == (0, 0, 7)  # w's weights moved to c; the sink's had no home
    assert cut_vertices(q) == (0, 1, 2) and cut_vertices(p) == (2, 4)


def test_forced_placements_follow_links_and_colocation():
    # op 1 may run only on device 2; device 0 has no link to device 2, so op 0 (an edge into
    # op 1) may not use device 0; op 2 is colocated with op 0 and follows it.
    p = SchedulingProblem(((1, 1, 1), (-1, -1, 1), (1, 1, 1)), ((0, 1, 0),), (1, 1, 1),
                          ((-1, 0, -1), (0, -1, 1), (-1, 1, -1)), ((0, 0),), colocation_groups=((0, 2),))
    assert forced_allowed_devices(p) == ((1, 2), (2,), (1, 2))


def test_working_set_rules_out_a_device():
    # op 1 (2 cycles) needs its 4-byte output and its input from op 0 (3 bytes, whether
    # op 0 is beside it or sent) live at its start: 7 > 6 on device 0, so only device 1.
    p = SchedulingProblem(((1, 1), (2, 2)), ((0, 1, 3),), (1, 1), ((-1, 0), (0, -1)), ((1,),),
                          device_memory_bytes=(6, 8), op_output_bytes=(3, 4))
    assert forced_allowed_devices(p) == ((0, 1), (1,))


def test_held_weights_count_each_group_once():
    p = SchedulingProblem(((1,),) * 4, (), (1,), ((-1,),), (), op_resident_bytes=(1, 2, 4, 8),
                          colocation_groups=((0, 3), (3, 2)))
    assert held_weights(p, [3, 1, 0]) == [13, 2, 0]
