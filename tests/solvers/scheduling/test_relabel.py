"""Renaming interchangeable devices in a schedule (symmetry.relabel_solution), as the segment
glue does to share one window solve among the devices of a class."""

from __future__ import annotations

import random

import pytest

from solvers.scheduling import SchedulingProblem, validate_schedule
from solvers.scheduling.cpsat.symmetry import interchangeable_classes, relabel_solution
from solvers.scheduling.heft import heft_schedule
from tests.sweeps import examples, random_sweep


def interchangeable_problem(rng: random.Random) -> tuple[SchedulingProblem, list[tuple[int, ...]]]:
    """A random DAG on two classes of interchangeable devices (2-3 and 1-2 devices), every
    ordered pair of devices with its own link, costs depending on the devices' classes only."""
    sizes = (rng.randint(2, 3), rng.randint(1, 2))
    cls = tuple(c for c, size in enumerate(sizes) for _ in range(size))
    nd = len(cls)
    classes = [tuple(d for d in range(nd) if cls[d] == c) for c in range(2)]
    pairs = [(a, b) for a in range(nd) for b in range(nd) if a != b]
    link_of = tuple(tuple(-1 if a == b else pairs.index((a, b)) for b in range(nd)) for a in range(nd))
    n = rng.randint(4, 8)
    per_class = [(rng.randint(1, 9), rng.choice((-1, rng.randint(1, 9)))) for _ in range(n)]
    durations = tuple(tuple(per_class[i][cls[d]] for d in range(nd)) for i in range(n))
    edges = tuple((u, v, 8) for v in range(1, n) for u in range(v) if u == v - 1 or rng.random() < 0.3)
    cost = [{(x, y): rng.randint(1, 6) for x in range(2) for y in range(2)} for _ in edges]
    transfer = tuple(tuple(cost[e][cls[a], cls[b]] for a, b in pairs) for e in range(len(edges)))
    streams = (rng.randint(1, 2),) * sizes[0] + (rng.randint(1, 2),) * sizes[1]
    return SchedulingProblem(durations, edges, streams, link_of, transfer, device_class=cls), classes


def pinned(p: SchedulingProblem, op: int, device: int) -> SchedulingProblem:
    rows = list(p.durations_cycles)
    rows[op] = tuple(0 if d == device else -1 for d in range(p.num_devices))
    return SchedulingProblem(tuple(rows), p.edges, p.device_streams, p.link_of, p.transfer_cycles,
                             device_class=p.device_class)


@random_sweep
@pytest.mark.parametrize("seed", range(examples(30, 600)))
def test_a_schedule_renamed_among_interchangeable_devices_solves_the_renamed_problem(seed):
    rng = random.Random(seed)
    p, classes = interchangeable_problem(rng)
    assert interchangeable_classes(p) == [devs for devs in classes if len(devs) > 1]  # as generated
    # every device of the classes permuted at once: the problem is the same
    perm = {}
    for devs in classes:
        shuffled = list(devs)
        rng.shuffle(shuffled)
        perm.update(zip(devs, shuffled))
    sol = heft_schedule(p)
    renamed = relabel_solution(p, sol, perm)
    assert validate_schedule(p, renamed) == [] and renamed.makespan_cycles == sol.makespan_cycles
    assert renamed.op_device == tuple(perm[d] for d in sol.op_device)
    # the op 0 pinned at a, renamed by swapping a and b: a schedule of op 0 pinned at b
    a, b = rng.sample(classes[0], 2)
    at_a = heft_schedule(pinned(p, 0, a))
    at_b = relabel_solution(p, at_a, {a: b, b: a})
    assert validate_schedule(pinned(p, 0, b), at_b) == [] and at_b.makespan_cycles == at_a.makespan_cycles
    assert at_b.op_device[0] == b


def test_a_permutation_without_a_link_renaming_is_refused():
    # devices 0 and 1 linked, device 2 alone: swapping 1 and 2 maps a link onto no link
    p = SchedulingProblem(((1, 1, 1),), (), (1, 1, 1), ((-1, 0, -1), (1, -1, -1), (-1, -1, -1)), ())
    sol = heft_schedule(p)
    assert relabel_solution(p, sol, {1: 2, 2: 1}) is None
    assert relabel_solution(p, sol, {0: 1, 1: 0}) is not None
