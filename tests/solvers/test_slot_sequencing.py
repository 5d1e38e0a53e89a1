"""The sequenced forced-cut relaxation (solvers.scheduling.slot_sequencing): its optimum never
passes the exhaustive optimum on small random graphs whose weights need several devices (one-
and two-stream devices, a pool of slow unlimited ones, devices kept apart for a larger problem's
weights) and never falls below the plain relaxation's; a hand case where it is exact and the
plain relaxation is not."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.core import SolveOptions
from solvers.cpsat_support import run_cpsat
from solvers.scheduling import SchedulingProblem
from solvers.scheduling.forced import restrict_placements
from solvers.scheduling.forced_cuts import forced_cut_model, memory_forces_cuts
from solvers.scheduling.slot_sequencing import sequenced_cut_model
from tests.solvers.test_forced_cuts import tight_graphs
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep

_ONE = SolveOptions(num_workers=1, time_limit_s=5)


def _optimum(built) -> int:
    status, solver, _ = run_cpsat(built.model, _ONE)
    assert status.value == "OPTIMAL"
    return int(solver.value(built.makespan))


def _pair_links(nd: int) -> tuple[tuple[int, ...], ...]:
    ids = [[-1] * nd for _ in range(nd)]
    for k, (a, b) in enumerate((a, b) for a in range(nd) for b in range(a + 1, nd)):
        ids[a][b] = ids[b][a] = k
    return tuple(map(tuple, ids))


@st.composite
def streamed_graphs(draw):
    """tight_graphs, each device class with one or two streams, one link for all or one per
    pair (classes marked), and a threshold for keeping devices apart: the problem's own
    weights, or more (as a part of a larger problem)."""
    p = draw(tight_graphs())
    limited = sum(1 for b in p.device_memory_bytes if b)
    fast, slow = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    streams = (fast,) * limited + (slow,) * (p.num_devices - limited)
    classes = (0,) * limited + (1,) * (p.num_devices - limited)
    if draw(st.booleans()):
        links = _pair_links(p.num_devices)
        width = 1 + max(max(row) for row in links)
        p = replace(p, link_of=links, transfer_cycles=tuple(row * width for row in p.transfer_cycles))
    weights = sum(p.op_resident_bytes)
    total = draw(st.sampled_from([None, weights + 1 + draw(st.integers(0, 8))]))
    return replace(p, device_streams=streams, device_class=classes), total


@random_sweep
@settings(max_examples=examples(60, 600), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(streamed_graphs())
def test_the_sequenced_optimum_lies_between_the_relaxation_and_the_optimum(case):
    p, total = case
    opt = brute_force(p)
    if opt is None or not memory_forces_cuts(p):
        return
    restricted = restrict_placements(p)
    sequenced = _optimum(sequenced_cut_model(restricted, total=total))
    linked = _optimum(sequenced_cut_model(restricted, total=total, links=True))
    assert _optimum(forced_cut_model(restricted)) <= sequenced <= linked <= opt


def test_a_device_runs_a_shortcut_and_a_branch_in_turn():
    """The module example: a feeds s and b, b feeds c for free, s and c feed d; s and c must
    sit apart. The plain relaxation overlaps s and b on one device (12); sequenced, the
    optimum 14 (one of s, c pays its transfer into d after running behind the other work)."""
    p = SchedulingProblem(((0, 0), (4, 4), (4, 4), (3, 3), (4, 4)),
                          ((0, 1, 0), (0, 2, 0), (2, 3, 0), (1, 4, 0), (3, 4, 0)), (1, 1),
                          ((-1, 0), (0, -1)), ((3,), (3,), (0,), (3,), (3,)),
                          device_memory_bytes=(10, 10), op_resident_bytes=(0, 6, 0, 6, 0))
    assert brute_force(p) == 14
    assert (_optimum(forced_cut_model(p)), _optimum(sequenced_cut_model(p))) == (12, 14)


def test_devices_kept_apart_for_the_whole_problem_see_a_part_that_fits_one():
    """Three 3-cycle branches between a fork and a join (1 cycle each), transfers of 4, on two
    devices that hold the part's weights together: pooled (the part's own threshold) the two
    devices are one slot with two streams and the branches overlap (1 + 3 + 3 + 1 = 8, two
    branches at once); kept apart (a larger problem's threshold) each device runs its
    branches in turn: all three on one, 11, against sending one away, 1 + 4 + 3 + 4 + 1 = 13.
    The optimum is 11."""
    edges = ((0, 1, 0), (0, 2, 0), (0, 3, 0), (1, 4, 0), (2, 4, 0), (3, 4, 0))
    p = SchedulingProblem(((1, 1), (3, 3), (3, 3), (3, 3), (1, 1)), edges, (1, 1), ((-1, 0), (0, -1)),
                          ((4,),) * 6, device_memory_bytes=(10, 10), op_resident_bytes=(1,) * 5)
    assert brute_force(p) == 11 and not memory_forces_cuts(p)
    pooled = _optimum(sequenced_cut_model(p))
    apart = _optimum(sequenced_cut_model(p, total=11))
    assert (pooled, apart) == (8, 11)


def _solution(built) -> list[int]:
    status, solver, _ = run_cpsat(built.model, _ONE)
    assert status.value == "OPTIMAL"
    return list(solver.response_proto.solution)


@random_sweep
@settings(max_examples=examples(30, 300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(streamed_graphs(), st.integers(0, 2 ** 16))
def test_a_hint_from_the_plain_model_moves_no_optimum(case, salt):
    """The link model hinted with the plain sequenced model's optimum (what the part bound
    does), or with a scrambled copy of it (a hint that fits nothing), has the unhinted link
    model's optimum, and that never passes the exhaustive optimum: a hint steers the search,
    never what it proves."""
    p, total = case
    opt = brute_force(p)
    if opt is None or not memory_forces_cuts(p):
        return
    restricted = restrict_placements(p)
    linked = _optimum(sequenced_cut_model(restricted, total=total, links=True))
    plain = _solution(sequenced_cut_model(restricted, total=total))
    scrambled = [(v + salt + k) % 3 for k, v in enumerate(plain)]
    hinted = [_optimum(sequenced_cut_model(restricted, total=total, links=True, hint=h)) for h in (plain, scrambled)]
    assert hinted == [linked, linked] and linked <= opt


def test_the_hint_lands_on_the_plain_models_variables():
    """The module example's plain optimum hinted on its link model sits on the variables of
    the same names: the link terms only add variables after the plain model's."""
    p = SchedulingProblem(((0, 0), (4, 4), (4, 4), (3, 3), (4, 4)),
                          ((0, 1, 0), (0, 2, 0), (2, 3, 0), (1, 4, 0), (3, 4, 0)), (1, 1),
                          ((-1, 0), (0, -1)), ((3,), (3,), (0,), (3,), (3,)),
                          device_memory_bytes=(10, 10), op_resident_bytes=(0, 6, 0, 6, 0))
    plain = sequenced_cut_model(p)
    values = _solution(plain)
    linked = sequenced_cut_model(p, links=True, hint=values).model.proto
    names = [plain.model.proto.variables[i].name for i in range(len(values))]
    assert list(linked.solution_hint.vars) == list(range(len(values)))
    assert [linked.variables[i].name for i in linked.solution_hint.vars] == names
    assert list(linked.solution_hint.values) == values
