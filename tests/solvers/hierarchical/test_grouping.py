"""The grouper: no cycle, every op in one group, colocation, pins and memory respected."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.dag import kahn_order
from solvers.hierarchical import coarsen, merged_colocation_groups
from solvers.scheduling import SchedulingProblem
from tests.solvers.hierarchical.random_problems import problems


def _check(p: SchedulingProblem, target: int) -> None:
    c = coarsen(p, target)
    kahn_order(c.num_groups, c.problem.edges)  # raises on a cycle
    assert sorted(i for m in c.members for i in m) == list(range(p.num_ops))
    assert all(c.group_of[i] == g for g, m in enumerate(c.members) for i in m)
    for g, members in enumerate(c.members):
        # pins: a group's members allow exactly the same devices, which the coarse op allows
        patterns = {tuple(x >= 0 for x in p.durations_cycles[i]) for i in members}
        assert len(patterns) == 1 or any(i in grp for grp in merged_colocation_groups(p) for i in members)
        assert c.problem.allowed_devices(g) == tuple(
            d for d in range(p.num_devices) if all(p.durations_cycles[i][d] >= 0 for i in members))
        for d in c.problem.allowed_devices(g):
            assert c.problem.durations_cycles[g][d] == sum(p.durations_cycles[i][d] for i in members)
        # memory: a group of several ops holds weights within half the largest allowed memory,
        # unless it is exactly a colocation group (contracted first: it shares a device anyway)
        caps = [p.memory_bytes(d) for d in c.problem.allowed_devices(g)]
        if len(members) > 1 and caps and min(caps) > 0 and members not in merged_colocation_groups(p):
            assert sum(p.resident_bytes(i) for i in members) <= max(caps) // 2
    # colocation: one group, or groups tied by a coarse colocation group
    for grp in merged_colocation_groups(p):
        groups = {c.group_of[i] for i in grp}
        assert len(groups) == 1 or any(groups <= set(cg) for cg in c.problem.colocation_groups)
    # the coarse edges carry every edge between groups, bytes and transfer cycles summed
    assert sum(b for *_, b in c.problem.edges) == sum(
        b for u, v, b in p.edges if c.group_of[u] != c.group_of[v])
    for link in range(p.num_links):
        assert sum(r[link] for r in c.problem.transfer_cycles) == sum(
            p.transfer_cycles[e][link] for e, (u, v, _) in enumerate(p.edges) if c.group_of[u] != c.group_of[v])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_ops=40, memory=True, colocation=True), st.integers(1, 20))
def test_coarsening_keeps_a_dag_and_every_constraint(p, target):
    _check(p, target)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 120), st.integers(1, 30))
def test_dense_random_dags_never_get_a_cycle(seed, n, target):
    import random

    rng = random.Random(seed)
    # dense, with long edges: many chances for two contractions to close a cycle together
    edges = [(u, v, rng.randint(0, 99)) for v in range(n) for u in range(v) if rng.random() < 0.15]
    p = SchedulingProblem(((1, 1),) * n, edges, (1, 1), ((-1, 0), (0, -1)), ((1,),) * len(edges))
    c = coarsen(p, target)
    kahn_order(c.num_groups, c.problem.edges)
    assert c.num_groups <= target  # same-level groups may always merge, connected or not


def test_a_non_convex_colocation_group_becomes_a_coarse_colocation_group():
    # a -> b -> c with a and c colocated: {a, c} is not convex (b sits between them)
    p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 8), (1, 2, 8)), (1, 1), ((-1, 0), (0, -1)),
                          ((1,), (1,)), colocation_groups=((0, 2),))
    c = coarsen(p, 3)
    assert c.num_groups == 3 and c.problem.colocation_groups == ((0, 2),)


def test_ops_with_different_pins_are_never_merged():
    # a chain whose middle op is pinned to device 1: it stays a group of its own
    p = SchedulingProblem(((1, 1), (-1, 1), (1, 1)), ((0, 1, 8), (1, 2, 8)), (1, 1),
                          ((-1, 0), (0, -1)), ((1,), (1,)))
    c = coarsen(p, 1)
    assert c.members == ((0,), (1,), (2,))


def test_weights_that_would_not_fit_half_a_device_stay_apart():
    p = SchedulingProblem(((1, 1),) * 3, ((0, 1, 8), (1, 2, 8)), (1, 1), ((-1, 0), (0, -1)),
                          ((1,), (1,)), device_memory_bytes=(100, 100), op_resident_bytes=(30, 30, 30))
    c = coarsen(p, 1)
    assert [sum(p.resident_bytes(i) for i in m) for m in c.members] == [30, 30, 30] or \
        max(sum(p.resident_bytes(i) for i in m) for m in c.members) <= 50
