"""The segment-run DP traced back (solvers.scheduling.segment_runs.segment_run_trace) and the
start candidate built from its runs (solvers.scheduling.run_start): the trace attains the
bound's own value with runs the DP admits, its placements are valid schedules, and the CP-SAT
scheduler starts from it where it beats HEFT."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings

from solvers.budget import SCHEDULING, Budget
from solvers.core import SolveOptions
from solvers.scheduling import CpSatScheduler, SchedulingProblem
from solvers.scheduling.bounds import bound_segments, segment_floor, segment_problems
from solvers.scheduling.cpsat.options import CpSatOptions
from solvers.scheduling.forced import held_weights
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.path_bounds import DevicePools
from solvers.scheduling.run_start import SOURCE, pruned_ops, run_placement, run_start
from solvers.scheduling.segment_runs import segment_run_bound, segment_run_trace
from solvers.scheduling.structure import clean_cut_vertices, topological_order
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_segment_runs import _fork_join_chain, fork_chains
from tests.sweeps import examples, random_sweep

_SWEEP = settings(max_examples=examples(25, 300), deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _dear_late_edge() -> SchedulingProblem:
    """a(2) -> b(2) -> c(2), 5 weight bytes each, two 11-byte devices (two ops and their
    activations fit one); a -> b costs 1 to send, b -> c 9."""
    return SchedulingProblem(((2, 2),) * 3, ((0, 1, 1), (1, 2, 1)), (1, 1), ((-1, 0), (0, -1)), ((1,), (9,)),
                             device_memory_bytes=(11, 11), op_resident_bytes=(5, 5, 5))


def _check_trace(pruned: SchedulingProblem, segs, floors, cuts=None) -> None:
    traced = segment_run_trace(pruned, segs, floors, cuts)
    bound = segment_run_bound(pruned, segs, floors, cuts)
    if traced is None:
        assert bound == 0
        return
    value, runs, cut_ops = traced
    assert int(value) == bound
    # the runs cover the cut ops in order, one after the other
    assert runs[0].first == 0 and runs[-1].last == len(cut_ops) - 1
    assert all(a.last + 1 == b.first for a, b in zip(runs, runs[1:]))
    # each run holds (in the DP's rounded-down units) what it keeps: a run the DP admits
    pools = DevicePools(pruned)
    order = topological_order(pruned)
    held = dict(zip(order, held_weights(pruned, order)))
    total = sum(held.values())
    middles = [ops for _, ops in segs[1:len(cut_ops)]]
    for run in runs:
        cap = pools.capacity[run.pool]
        assert len(run.kept) == run.last - run.first
        units = held[cut_ops[run.first]] * 1024 // cap if 0 < cap < total else 0
        for k, mask in enumerate(run.kept):  # each step's kept weight and cut op, rounded down as the DP does
            inner = middles[run.first + k][1:-1]
            assert len(mask) == len(inner)
            weight = held[cut_ops[run.first + k + 1]] + sum(held[i] for i, keep in zip(inner, mask) if keep)
            units += weight * 1024 // cap if 0 < cap < total else 0
        assert units <= 1024


def test_the_trace_attains_the_bound_on_a_fork_join_chain():
    # 6 layers of 6 weight bytes on devices of 24 (test_segment_runs): the DP's 23 is
    # attained by its runs; their placement is a valid schedule, never below the optimum 27
    p = _fork_join_chain(6)
    pruned, segs = bound_segments(p)
    floors = [segment_floor(sub) for sub, _ in segs]
    value, runs, cut_ops = segment_run_trace(pruned, segs, floors)
    assert int(value) == segment_run_bound(pruned, segs, floors) == 23
    assert len(runs) == 2 and cut_ops == [0, 3, 6, 9, 12, 15, 18]
    _check_trace(pruned, segs, floors)
    placement = run_placement(p, segs, runs)
    assert placement is not None and len(set(placement)) == 2
    sol, stats = run_start(p, Budget.start(1, SCHEDULING))
    assert not validate_schedule(p, sol)
    assert objective_value(p, sol) >= 27 and stats["run_start_objective"] == objective_value(p, sol)


# Drawn by the full sweep: a fork whose branch x (1 byte) must leave the run's device (it holds
# 1 byte, the join's own), so the DP takes a split option; a trace that kept x fails here.
_SPLIT = SchedulingProblem(((0, -1), (0, -1), (1, -1), (0, -1), (0, 0), (1, -1)),
                           ((0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 5, 0), (2, 4, 0), (4, 5, 0)), (1, 1),
                           ((-1, 0), (0, -1)), ((0,),) * 6, device_memory_bytes=(1, 1),
                           op_resident_bytes=(0, 0, 0, 0, 1, 1))


@random_sweep
@_SWEEP
@given(fork_chains())
@example(_SPLIT)
def test_the_trace_attains_the_bound_with_admissible_runs(p):
    pruned, segs = bound_segments(p)
    if not segs:
        return
    _check_trace(pruned, segs, [segment_floor(sub) for sub, _ in segs])
    clean = clean_cut_vertices(pruned)
    if clean:
        clean_segs = segment_problems(pruned, clean)
        _check_trace(pruned, clean_segs, [segment_floor(sub) for sub, _ in clean_segs], clean)


@random_sweep
@_SWEEP
@given(fork_chains())
def test_the_start_is_valid_and_deterministic(p):
    first, stats = run_start(p, Budget.start(1, SCHEDULING))
    again, again_stats = run_start(p, Budget.start(1, SCHEDULING))
    assert first == again and stats == again_stats
    if first is not None:
        assert not validate_schedule(p, first)
        assert stats["run_start_objective"] == objective_value(p, first)


def test_the_scheduler_starts_from_the_runs_where_they_beat_heft():
    # HEFT keeps a and b together and sends b's dear output (15); the DP changes device after
    # the cheap edge (7, the optimum). Without the forced-cut start (which finds it too), the
    # runs' schedule is the start CP-SAT begins from, and the result is never worse.
    p = _dear_late_edge()
    assert heft_schedule(p).makespan_cycles == 15
    r = CpSatScheduler(CpSatOptions(forced_cut_start_share=0.0, placement_lns_share=0.0)).solve(
        p, SolveOptions(time_limit_s=5, num_workers=1))
    assert r.stats["start_candidates"] == {"heft": 15, SOURCE: 7}
    assert r.stats["hint_source"] == SOURCE and r.stats["hint_objective"] == 7
    assert (r.status.value, r.objective) == ("OPTIMAL", 7)
    off = CpSatScheduler(CpSatOptions(forced_cut_start_share=0.0, placement_lns_share=0.0, run_start_share=0.0)).solve(
        p, SolveOptions(time_limit_s=5, num_workers=1))
    assert SOURCE not in (off.stats.get("start_candidates") or {})


def test_pruned_ops_is_the_bound_s_problem_with_its_op_map():
    # weight sources (0 cycles, colocated with their layer) feed each layer of a chain; the
    # bound's segments drop them (their layers hold the weights), and the start places each
    # with its layer: two layers a device, one transfer
    layers = 4
    durations = ((2, 2),) * layers + ((0, 0),) * layers
    edges = tuple((j, j + 1, 1) for j in range(layers - 1)) + tuple((layers + j, j, 0) for j in range(layers))
    p = SchedulingProblem(durations, edges, (1, 1), ((-1, 0), (0, -1)), ((3,),) * len(edges),
                          device_memory_bytes=(10, 10), op_resident_bytes=(0,) * layers + (4,) * layers,
                          colocation_groups=tuple((j, layers + j) for j in range(layers)))
    pruned, ops = pruned_ops(p)
    assert pruned == bound_segments(p)[0] and ops == list(range(layers))
    sol, stats = run_start(p, Budget.start(1, SCHEDULING))
    assert not validate_schedule(p, sol)
    assert all(sol.op_device[layers + j] == sol.op_device[j] for j in range(layers))
    assert stats["run_start_objective"] == objective_value(p, sol) == 2 * layers + 3
