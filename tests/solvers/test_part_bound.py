"""The part bound (solvers.scheduling.part_bound): the parts between any cut ops, with their
memory limits, never add up above the exhaustive optimum; the bound itself never passes it on
small random chains of fan-out blocks whose tensors shrink; a hand case where the parts see
both forced crossings."""

from __future__ import annotations

from itertools import combinations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import SchedulingProblem
from solvers.scheduling.cpsat.scheduler import _segment_floor
from solvers.scheduling.part_bound import _part_floor, _probe_part, _relax_parts, part_bound, part_cuts, part_problems
from solvers.scheduling.structure import cut_vertices
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.solvers.test_slot_sequencing import streamed_graphs
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1, time_limit_s=5)


@st.composite
def shrinking_chains(draw):
    """Two or three blocks between cut ops (a plain edge, or a fork with a residual edge around
    one op), up to 6 ops, on 2-3 identical limited devices with one link per pair; each block's
    edges cost one transfer, falling from block to block (so the parts have cuts); weights that
    need two or more devices."""
    blocks = draw(st.lists(st.booleans(), min_size=2, max_size=3))
    ops, edges, cost_of_edge = 1, [], []
    costs = sorted((draw(st.integers(0, 6)) for _ in blocks), reverse=True)
    for fork, cost in zip(blocks, costs):
        if fork and ops + 2 <= 6:
            a, mid, c = ops - 1, ops, ops + 1
            edges += [(a, mid, 0), (mid, c, 0), (a, c, 0)]
            cost_of_edge += [cost] * 3
            ops += 2
        elif ops + 1 <= 6:
            edges.append((ops - 1, ops, 0))
            cost_of_edge.append(cost)
            ops += 1
    limited = draw(st.integers(2, 3)) if ops <= 5 else 2
    durations = tuple((draw(st.integers(0, 4)),) * limited for _ in range(ops))
    link_of, k = [[-1] * limited for _ in range(limited)], 0
    for a in range(limited):
        for b in range(a + 1, limited):
            link_of[a][b] = link_of[b][a] = k
            k += 1
    resident = tuple(draw(st.integers(0, 4)) for _ in range(ops))
    cap = draw(st.integers(max(1, max(resident)), max(1, max(resident), sum(resident) - 1)))
    return SchedulingProblem(durations, tuple(edges), (1,) * limited, tuple(map(tuple, link_of)),
                             tuple((c,) * k for c in cost_of_edge), device_memory_bytes=(cap,) * limited,
                             op_resident_bytes=resident)


def _parts_optimum(p: SchedulingProblem, cuts) -> int:
    return sum(brute_force(sub) for sub, _ in part_problems(p, cuts))


@random_sweep
@settings(max_examples=examples(25, 300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(shrinking_chains())
def test_parts_never_add_up_above_the_optimum(p):
    opt = brute_force(p)
    if opt is None:
        return
    cuts = cut_vertices(p)
    for size in range(1, min(3, len(cuts)) + 1):
        for chosen in combinations(cuts, size):
            assert _parts_optimum(p, chosen) <= opt, chosen
    found, _ = part_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert found <= opt
    raised, _ = part_bound(p, _ONE, Budget.start(5, SCHEDULING), part_floor=_segment_floor(_ONE))
    assert found <= raised <= opt


def test_segment_proofs_raise_a_part_its_static_floor_misses():
    """a -> b -> c, then c fans out to d, e, f (3 cycles each, 4-cycle transfers) joining at g;
    weights 6, 6 and 1 for the rest on two 11-byte devices, so a and b cannot share one. The
    parts are [a], [a*, b] (forced across: 6 + 1 = 7) and [b*, c, ..., g], which fits one
    device: its static floor is 10, where the segment proofs see that sending a branch away
    costs more than running the three in turn (1 + 9 + 1 = 11). The optimum is 1 + 7 + 11 = 19.
    The sequenced relaxation sees the same on its own (one device's branches run in turn, the
    two devices stay apart as the whole problem's weights need both), so the part bound reaches
    19 either way."""
    links = ((-1, 0), (0, -1))
    edges = ((0, 1, 0), (1, 2, 0), (2, 3, 0), (2, 4, 0), (2, 5, 0), (3, 6, 0), (4, 6, 0), (5, 6, 0))
    p = SchedulingProblem(tuple((d, d) for d in (1, 1, 1, 3, 3, 3, 1)), edges, (1, 1), links,
                          ((6,), (5,)) + ((4,),) * 6, device_memory_bytes=(11, 11),
                          op_resident_bytes=(6, 6, 1, 1, 1, 1, 1))
    assert part_cuts(p) == (0, 1)
    assert brute_force(p) == 19
    fan = part_problems(p, part_cuts(p))[-1][0]
    assert (_part_floor(fan), _segment_floor(_ONE)(fan, Budget.start(5, SCHEDULING))) == (10, 11)
    plain, _ = part_bound(p, _ONE, Budget.start(5, SCHEDULING))
    raised, _ = part_bound(p, _ONE, Budget.start(5, SCHEDULING), part_floor=_segment_floor(_ONE))
    assert (plain, raised) == (19, 19)


def test_parts_see_every_forced_crossing():
    """a -> b -> c -> d -> e, 2 cycles each, weights 6, 6, 2, 6, 6 on four 10-byte devices (no
    two 6-byte ops share one). Tensors cost 9 out of a and b, 1 out of c and d: the drop is at b,
    so the parts are [a, b] and [b*, c, d, e]. The first must cross at 9 (2 + 9 + 2 = 13); in the
    second b* and c may share a device, d and e may not (0 + 2 + 1 + 2 + 1 + 2 = 8). The optimum
    a | b, c | d | e is 2 + 9 + 4 + 1 + 2 + 1 + 2 = 21 = 13 + 8."""
    nd = 4
    links = [[-1] * nd for _ in range(nd)]
    for k, (a, b) in enumerate(combinations(range(nd), 2)):
        links[a][b] = links[b][a] = k
    p = SchedulingProblem(((2,) * nd,) * 5, tuple((i, i + 1, 0) for i in range(4)), (1,) * nd,
                          tuple(map(tuple, links)), ((9,) * 6, (9,) * 6, (1,) * 6, (1,) * 6),
                          device_memory_bytes=(10,) * nd, op_resident_bytes=(6, 6, 2, 6, 6))
    assert part_cuts(p) == (1,)
    assert brute_force(p) == 21
    found, stats = part_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert found == 21 and stats["part_bound_parts"] == 2 and stats["part_bound_sequenced_parts"] == 2
    assert stats["part_bound_proven_parts"] == 0  # the sequencing settled both: no plain relaxation ran


def test_the_plain_relaxation_raises_the_parts_it_is_given():
    """_relax_parts (the fallback where a sequenced proof did not finish) on slot_sequencing's
    example (a feeds s and b, b feeds c, s and c feed d; s and c sit apart) given twice, the
    second in the order: its static floor 11 rises to the relaxation's 12 (the optimum is 14);
    the part left out keeps its floor."""
    p = SchedulingProblem(((0, 0), (4, 4), (4, 4), (3, 3), (4, 4)),
                          ((0, 1, 0), (0, 2, 0), (2, 3, 0), (1, 4, 0), (3, 4, 0)), (1, 1),
                          ((-1, 0), (0, -1)), ((3,), (3,), (0,), (3,), (3,)),
                          device_memory_bytes=(10, 10), op_resident_bytes=(0, 6, 0, 6, 0))
    values = [_part_floor(p), _part_floor(p)]
    assert values == [11, 11] and brute_force(p) == 14
    assert _relax_parts([p, p], values, _ONE, Budget.start(5, SCHEDULING), [1]) == 1
    assert values == [11, 12]


def test_part_bound_is_deterministic_and_keeps_its_floor():
    links = ((-1, 0), (0, -1))
    p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1), links,
                          ((5,), (5,), (2,)), device_memory_bytes=(12, 12), op_resident_bytes=(6,) * 4)
    first = part_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert first == part_bound(p, _ONE, Budget.start(5, SCHEDULING))
    assert first[0] == 10  # parts [0, 1] (4: fits one device) and [1*, 2, 3] (6: crosses at 2)
    assert part_bound(p, _ONE, Budget.start(5, SCHEDULING), floor=12)[0] == 12


def test_the_scheduler_stage_raises_the_bound_and_hands_on_what_is_left():
    """The leftover stage's part-bound step (CpSatScheduler._part_bound) on the hand case above:
    21 from a bound of 13, the part stats in the result's stats, and the units it did not use
    left for the leftover probes; a problem without part cuts costs nothing and adds nothing."""
    from solvers.scheduling.cpsat.scheduler import CpSatScheduler

    nd = 4
    links = [[-1] * nd for _ in range(nd)]
    for k, (a, b) in enumerate(combinations(range(nd), 2)):
        links[a][b] = links[b][a] = k
    p = SchedulingProblem(((2,) * nd,) * 5, tuple((i, i + 1, 0) for i in range(4)), (1,) * nd,
                          tuple(map(tuple, links)), ((9,) * 6, (9,) * 6, (1,) * 6, (1,) * 6),
                          device_memory_bytes=(10,) * nd, op_resident_bytes=(6, 6, 2, 6, 6))
    budget = Budget.start(5, SCHEDULING)
    stats: dict = {}
    bound, left = CpSatScheduler._part_bound(p, _ONE, budget, 13, 0.2, stats)
    assert bound == 21 and stats["part_bound"] == 21 and 0 < left < 0.2
    assert abs(left - (0.2 - stats["part_bound_units"])) < 1e-6
    flat = SchedulingProblem(((2,) * nd,) * 3, ((0, 1, 0), (1, 2, 0)), (1,) * nd, tuple(map(tuple, links)),
                             ((9,) * 6, (9,) * 6), device_memory_bytes=(10,) * nd, op_resident_bytes=(6, 6, 6))
    stats = {}
    assert CpSatScheduler._part_bound(flat, _ONE, budget, 13, 0.2, stats) == (13, 0.2) and stats == {}


def _linked_optimum(restricted: SchedulingProblem, total) -> int:
    from solvers.cpsat_support import run_cpsat
    from solvers.scheduling.slot_sequencing import sequenced_cut_model

    built = sequenced_cut_model(restricted, total=total, links=True)
    status, solver, _ = run_cpsat(built.model, _ONE)
    assert status.value == "OPTIMAL"
    return int(solver.value(built.makespan))


@random_sweep
@settings(max_examples=examples(30, 300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(streamed_graphs(), st.integers(0, 3))
def test_link_probes_never_pass_the_link_models_optimum(case, below):
    """_probe_part from the plain sequenced optimum (what the part bound starts from), or from
    a value ``below`` that, never proves more than the link model's own optimum (so never more
    than the exhaustive optimum); where its range closed it proved exactly that optimum, and
    every solution it records reaches its top no lower than the proven value."""
    from solvers.scheduling.forced import restrict_placements
    from solvers.scheduling.forced_cuts import memory_forces_cuts

    p, total = case
    opt = brute_force(p)
    if opt is None or not memory_forces_cuts(p):
        return
    restricted = restrict_placements(p)
    linked = _linked_optimum(restricted, total)
    plain = _plain_solution(restricted, total)
    found: list = []
    value, closed = _probe_part(restricted, max(0, plain[0] - below), _ONE, Budget.start(5, SCHEDULING), total,
                                plain[1], found)
    assert value <= linked <= opt
    assert not closed or value == linked
    assert all(top >= value for top, _ in found) and all(len(devices) == p.num_ops for _, devices in found)


def _plain_solution(restricted: SchedulingProblem, total) -> tuple[int, list[int]]:
    from solvers.cpsat_support import run_cpsat
    from solvers.scheduling.slot_sequencing import sequenced_cut_model

    status, solver, _ = run_cpsat(sequenced_cut_model(restricted, total=total).model, _ONE)
    assert status.value == "OPTIMAL"
    return round(solver.objective_value), list(solver.response_proto.solution)


def test_link_probes_prove_a_contended_links_optimum():
    """A fork a -> (s, b) -> d on three 12-byte devices on one bus: a and d (6 bytes each) sit
    together, s and b (7 each) on the other two, so both of a's tensors (5 cycles) cross the
    bus. The plain sequenced model lets them overlap (1 + 5 + 4 + 1 + 1 = 12); with the link
    terms one waits for the other (17). The probes from the plain optimum close on 17."""
    from solvers.scheduling.forced import restrict_placements

    p = SchedulingProblem(((1, 1, 1), (4, 4, 4), (4, 4, 4), (1, 1, 1)),
                          ((0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)), (1, 1, 1),
                          ((-1, 0, 0), (0, -1, 0), (0, 0, -1)), ((5,), (5,), (1,), (1,)),
                          device_memory_bytes=(12, 12, 12), op_resident_bytes=(6, 7, 7, 6), device_class=(0, 0, 0))
    restricted = restrict_placements(p)
    plain = _plain_solution(restricted, None)
    linked = _linked_optimum(restricted, None)
    value, closed = _probe_part(restricted, plain[0], _ONE, Budget.start(5, SCHEDULING), None, plain[1], None)
    assert (plain[0], linked, brute_force(p)) == (12, 17, 17)
    assert (value, closed) == (17, True)
