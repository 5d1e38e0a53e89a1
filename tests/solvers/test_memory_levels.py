"""Level assignment: hand-checked optima, per-constraint checks, conformance, brute force."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from solvers.core import SolveOptions, Status
from solvers.memory import fast_offset_problem
from solvers.memory.levels import (
    AllSlowLevelSolver, CpSatLevelSolver, GreedyLevelSolver, LevelProblem, LevelSolution, SplitGroup, Transfer,
    TransferKind, build_level_model, expand_splits, level_metrics, makespan_lower_bound, plan_greedy,
    replay_levels, required_transfers, retime, validate_levels,
)
from solvers.memory.offsets import CpSatOffsetSolver, live_bytes_lower_bound, validate_offsets
from tests.solvers.memory.strategies import level_problems

BIG = 10**6


@pytest.fixture
def default_options() -> SolveOptions:
    return SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


# A 3-op chain. Fast: 100 B at 10 B/cycle; slow 1 B/cycle; the DMA engine 10 B/cycle.
# Op 0 (compute 50) reads input X (90 B) and writes A (20 B); op 1 (compute 30) touches
# nothing; op 2 (compute 1) reads A.
# * X from slow would cost op 0 90 cycles, so X is prefetched first (9 cycles, exposed:
#   nothing runs before op 0). Then X + A = 110 B > 100 at op 0: A cannot be written fast,
#   so A spills: op 0 writes it to slow (20 cycles, under op 0's 50 of compute:
#   max(50, 90/10 + 20/1) = 50).
# * A's prefetch (2 cycles) is triggered by op 0 and hides under op 1; op 2 reads A fast:
#   max(1, 20/10) = 2. Makespan 9 + 50 + 30 + 2 = 91.
# * Reading A from slow instead: op 2 = max(1, 20) = 20 -> 109. All in HBM:
#   max(50, 90 + 20) + 30 + max(1, 20) = 160.
SPILL = LevelProblem(compute_cycles=(50, 30, 1), reads=((0,), (), (1,)), writes=((1,), (), ()),
                     tensor_bytes=(90, 20), capacity_bytes=(100, BIG), bandwidth_bytes_per_cycle=(10, 1),
                     dma_bytes_per_cycle=10, tensor_names=("X", "A"))

# The prefetch of weight W (40 B, read by op 3) must be triggered by op 1, a third op.
# Fast 100 B at 10 B/cycle, slow and DMA 1 B/cycle (W's DMA: 40 cycles).
# Op 0 (40) writes X (70 B) read by op 1 (40), which writes Y (20 B) read by op 2 (40).
# * trigger -1 or 0: W would be in fast at op 0 (X 70 + W 40 = 110) or in the gap after
#   it (X kept 70 + W 40 = 110): over capacity.
# * trigger 1: gap after op 1 holds Y 20 + W 40, op 2 holds Y 20 + W 40: fits; the DMA
#   [80, 120) hides under op 2 [80, 120). Op 3 = max(5, 40/10) = 5 -> makespan 125, which
#   is the lower bound 40 + 40 + 40 + 5 (each op at max(compute, bytes/10)).
# * trigger 2: the DMA runs [120, 160) exposed -> 165. W read from slow: op 3 = 40 -> 160.
THIRD_OP = LevelProblem(compute_cycles=(40, 40, 40, 5), reads=((), (1,), (2,), (0,)),
                        writes=((1,), (2,), (), ()), tensor_bytes=(40, 70, 20), capacity_bytes=(100, BIG),
                        bandwidth_bytes_per_cycle=(10, 1), tensor_names=("W", "X", "Y"))

# Split: one fast-only op (compute 100) reads X (60 B, split) and W (20 B, whole), writes
# Y (60 B, split, live-out). Fast 100 B at 10 B/cycle; slow and DMA 1 B/cycle.
# * k=1: 60 + 20 + 60 = 140 B > 100 at the op: infeasible.
# * k=2: portions P0, P1 (compute 50 each) hold X_p 30 + W 20 + Y_p 30 = 80 B.
#   X0 and W are prefetched before P0 (30 + 20 = 50 cycles, exposed) -> P0 [50, 100).
#   X1 cannot come in during P0 (80 + 30 > 100), and Y0 cannot stay during P1 (80 + 30),
#   so after P0 the engine evicts Y0 (30) and prefetches X1 (30): P1 [160, 210); then Y1
#   is evicted (30): makespan 240. In the gap before P1: W 20 + Y0 30 + X1 30 = 80 B.
SPLIT = LevelProblem(compute_cycles=(100,), reads=((0, 1),), writes=((2,),), tensor_bytes=(60, 20, 60),
                     capacity_bytes=(100, BIG), bandwidth_bytes_per_cycle=(10, 1), live_out=(2,),
                     fast_only_ops=(0,), splits=(SplitGroup(0, 0, (0, 2), (1, 2)),),
                     tensor_names=("X", "W", "Y"))

# Eviction hidden under the next op: op 0 (compute 10) writes Y (20 B, live-out); op 1
# (compute 30) touches nothing. Writing Y fast costs 20/10 = 2 <= 10, then the 20-cycle
# eviction [10, 30) runs under op 1 [10, 40), released at the plan's end: makespan 40.
# Writing Y to slow: op 0 = max(10, 20) = 20 -> 50.
EVICT = LevelProblem(compute_cycles=(10, 30), reads=((), ()), writes=((0,), ()), tensor_bytes=(20,),
                     capacity_bytes=(100, BIG), bandwidth_bytes_per_cycle=(10, 1), live_out=(0,))

INSTANCES = {"spill": (SPILL, 91), "third_op": (THIRD_OP, 125), "split": (SPLIT, 240), "evict": (EVICT, 40)}
SOLVERS = [CpSatLevelSolver(), GreedyLevelSolver(), AllSlowLevelSolver()]


def _transfer(solution: LevelSolution, tensor: int, kind: TransferKind) -> Transfer:
    (tr,) = [t for t in solution.transfers if t.tensor == tensor and t.kind is kind]
    return tr


def test_spill_forced_by_capacity_and_prefetch_hidden_under_the_middle_op(default_options):
    r = CpSatLevelSolver().solve(SPILL, default_options)
    assert r.status is Status.OPTIMAL and r.objective == 91
    s = r.solution
    assert s.in_fast == ((False, True), (False, True))  # X prefetched; A written slow, read fast
    a = _transfer(s, 1, TransferKind.PREFETCH)
    assert (a.trigger_op, a.start_cycle, a.end_cycle) == (0, 59, 61)
    assert (s.op_start, s.op_duration) == ((9, 59, 89), (50, 30, 2))
    m = level_metrics(SPILL, s)
    assert (m.dma_hidden_cycles, m.dma_exposed_cycles) == (2, 9)  # A hidden, X exposed
    assert m.bytes_moved == {(1, 0): 110, (0, 1): 0}
    assert m.fast_peak_bytes == 90


def test_prefetch_triggered_by_a_third_op(default_options):
    r = CpSatLevelSolver().solve(THIRD_OP, default_options)
    assert r.status is Status.OPTIMAL and r.objective == 125 == makespan_lower_bound(THIRD_OP)
    w = _transfer(r.solution, 0, TransferKind.PREFETCH)
    assert (w.trigger_op, w.release_op, w.start_cycle) == (1, 3, 80)
    assert level_metrics(THIRD_OP, r.solution).dma_exposed_cycles == 0


@pytest.mark.parametrize("trigger, expected", [(-1, cp_model.INFEASIBLE), (0, cp_model.INFEASIBLE),
                                               (1, cp_model.OPTIMAL), (2, cp_model.OPTIMAL)])
def test_trigger_choice_against_capacity(trigger, expected):
    # Per-constraint check: W read fast, X written fast and kept to op 1 (as in the
    # optimum), W's trigger fixed; only triggers >= 1 fit.
    model, v = build_level_model(THIRD_OP)
    model.add(v.fast[0, 1] == 1)
    model.add(v.kept[1, 1] == 1)
    model.add(v.trigger[0, 1] == trigger + 1)  # the variable is the offset from a_0 = -1
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    assert status == expected
    if status == cp_model.OPTIMAL:
        assert solver.value(v.makespan) == {1: 125, 2: 165}[trigger]


def test_split_k2_optimal_and_k1_infeasible(default_options):
    r = CpSatLevelSolver().solve(SPLIT, default_options)
    assert r.status is Status.OPTIMAL and r.objective == 240
    assert r.solution.split_factors == (2,)
    per = {tuple(x["factors"]): x["status"] for x in r.stats["per_split"]}
    assert per == {(1,): "INFEASIBLE", (2,): "OPTIMAL"}
    expanded, _ = expand_splits(SPLIT, (2,))
    assert expanded.tensor_bytes == (30, 30, 20, 30, 30)
    assert r.solution.op_start == (50, 160)
    assert validate_levels(SPLIT, r.solution) == []
    # k=1 alone: proven infeasible.
    only1 = LevelProblem(**{**{f: getattr(SPLIT, f) for f in ("compute_cycles", "reads", "writes", "tensor_bytes",
                                                             "capacity_bytes", "bandwidth_bytes_per_cycle",
                                                             "live_out", "fast_only_ops")},
                            "splits": (SplitGroup(0, 0, (0, 2), (1,)),)})
    assert CpSatLevelSolver().solve(only1, default_options).status is Status.INFEASIBLE


def test_eviction_hidden_and_released_at_the_end(default_options):
    r = CpSatLevelSolver().solve(EVICT, default_options)
    assert r.objective == 40
    y = _transfer(r.solution, 0, TransferKind.EVICT)
    assert (y.trigger_op, y.release_op, y.start_cycle) == (0, 2, 10)
    m = level_metrics(EVICT, r.solution)
    assert m.bytes_moved[(0, 1)] == 20 and m.dma_hidden_cycles == 20


@pytest.mark.parametrize("solver", SOLVERS, ids=lambda s: s.name)
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_conformance(solver, name, default_options):
    p, opt = INSTANCES[name]
    r = solver.solve(p, default_options)
    if solver.name == "all-in-hbm" and p.fast_only_ops:
        assert r.status is Status.UNKNOWN and r.solution is None
        return
    assert r.status.has_solution
    assert validate_levels(p, r.solution) == []
    assert r.objective == r.solution.makespan_cycles == replay_levels(p, r.solution).makespan_cycles
    assert r.objective >= opt
    if r.bound is not None:
        assert r.bound <= r.objective
    if solver.name == "cpsat":
        assert r.status is Status.OPTIMAL and r.objective == opt and r.gap == pytest.approx(0)


def test_all_in_hbm_values():
    # spill: 160 (see SPILL); third_op: max(40, 70/1) + max(40, 90) + max(40, 20) + max(5, 40)
    # = 70 + 90 + 40 + 40 = 240; evict: max(10, 20) + 30 = 50.
    assert AllSlowLevelSolver().solve(SPILL).objective == 160
    assert AllSlowLevelSolver().solve(THIRD_OP).objective == 240
    assert AllSlowLevelSolver().solve(EVICT).objective == 50


def test_greedy_hint_is_feasible_in_the_model():
    for p in (SPILL, THIRD_OP, EVICT):
        hint = plan_greedy(p)
        model, v = build_level_model(p, hint.makespan_cycles, 0, hint)
        solver = cp_model.CpSolver()
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.num_workers = 1
        assert solver.solve(model) == cp_model.OPTIMAL
        assert retime(p, v.extract(solver)).makespan_cycles == hint.makespan_cycles


def test_validator_catches_planted_errors():
    good = CpSatLevelSolver().solve(SPILL, SolveOptions(time_limit_s=5)).solution
    assert validate_levels(SPILL, good) == []
    # Op 2 starts before A's prefetch ends.
    early = LevelSolution(good.in_fast, good.kept, good.transfers, (9, 59, 60), good.op_duration)
    assert any("after op 2 starts at 60" in e for e in validate_levels(SPILL, early))
    # Two DMAs at once on the one engine.
    x, a = good.transfers
    clash = LevelSolution(good.in_fast, good.kept,
                          (x, Transfer(a.kind, a.tensor, a.gap, -1, a.release_op, 5, a.duration_cycles)),
                          good.op_start, good.op_duration)
    assert any("DMAs overlap" in e for e in validate_levels(SPILL, clash))
    # Writing A fast at op 0 too: 90 + 20 > 100 (the transfers no longer match either).
    over = LevelSolution(((False, True), (True, True)), ((False, False), (False, True)), (x,),
                         good.op_start, (50, 30, 2))
    errors = validate_levels(SPILL, over)
    assert any("fast memory holds 110 > 100 bytes during op 0" in e for e in errors)
    # A missing prefetch.
    nopf = LevelSolution(good.in_fast, good.kept, (x,), good.op_start, good.op_duration)
    assert "missing ['prefetch 1 gap 1']" in validate_levels(SPILL, nopf)[0]
    # Wrong duration.
    slow = LevelSolution(good.in_fast, good.kept, good.transfers, good.op_start, (50, 30, 1))
    assert any("lasts 1, expected 2" in e for e in validate_levels(SPILL, slow))


def test_fast_buffers_get_offsets_at_the_level_peak(default_options):
    r = CpSatLevelSolver().solve(THIRD_OP, default_options)
    op, tensors = fast_offset_problem(THIRD_OP, r.solution)
    assert live_bytes_lower_bound(op) == level_metrics(THIRD_OP, r.solution).fast_peak_bytes == 90
    o = CpSatOffsetSolver().solve(op, default_options)
    assert o.status is Status.OPTIMAL and validate_offsets(op, o.solution) == [] and o.objective == 90


# ---------------------------------------------------------------- brute force ---------

def level_drafts(p: LevelProblem):
    """Every residency, kept gap, trigger, release and DMA queue order, as a solution with
    zero times (to be re-timed)."""
    accesses = [(t, j) for t in range(p.num_tensors) for j, a in enumerate(p.accesses(t)) if p.is_real(a)]
    for bits in itertools.product((False, True), repeat=len(accesses)):
        fast = dict(zip(accesses, bits))
        if any(not fast[t, j] for t, j in accesses if p.accesses(t)[j] in p.fast_only_ops):
            continue
        gaps = [(t, j) for t, j in accesses if j and fast[t, j] and fast.get((t, j - 1), False)]
        for kbits in itertools.product((False, True), repeat=len(gaps)):
            kept_set = {g for g, b in zip(gaps, kbits) if b}
            in_fast = tuple(tuple(fast.get((t, j), False) for j in range(len(p.accesses(t))))
                            for t in range(p.num_tensors))
            kept = tuple(tuple((t, j) in kept_set for j in range(len(p.accesses(t)))) for t in range(p.num_tensors))
            need = required_transfers(p, in_fast, kept)
            ranges = []
            for kind, t, j in need:
                acc = p.accesses(t)
                if kind is TransferKind.PREFETCH:
                    ranges.append([(k, acc[j]) for k in range(acc[j - 1], acc[j])])
                else:
                    ranges.append([(acc[j - 1], r) for r in range(acc[j - 1] + 1, acc[j] + 1)])
            for choice in itertools.product(*ranges):
                trs = [Transfer(kind, t, j, k, r, 0, p.dma_cycles(t)) for (kind, t, j), (k, r) in zip(need, choice)]
                for order in itertools.permutations(trs):
                    yield LevelSolution(in_fast, kept, order, (0,) * p.num_ops, (0,) * p.num_ops)


def brute_force(p: LevelProblem) -> int | None:
    """Min over every residency, trigger, release and DMA queue order of the replayed makespan."""
    best = None
    for draft in level_drafts(p):
        try:
            s = retime(p, draft)
        except ValueError:
            continue
        if validate_levels(p, s):
            continue
        if best is None or s.makespan_cycles < best:
            best = s.makespan_cycles
    return best


def tiny_problems():
    return level_problems(slow_capacity=BIG)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_problems())
def test_cpsat_equals_brute_force(p):
    expected = brute_force(p)
    r = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=10))
    if expected is None:
        assert r.status is Status.INFEASIBLE
        return
    assert r.status is Status.OPTIMAL
    assert validate_levels(p, r.solution) == []
    assert r.objective == expected == replay_levels(p, r.solution).makespan_cycles
    g = GreedyLevelSolver().solve(p)
    if g.solution is not None:
        assert validate_levels(p, g.solution) == [] and g.objective >= expected


# ------------------------------------------------------------ options and determinism ---

def chain(n_layers: int, fast: int) -> LevelProblem:
    """Layers reading a weight (24 B) and the previous activation (16 B); memory-bound."""
    compute, reads, writes, sizes = [], [], [], [16]
    x = 0
    for _ in range(n_layers):
        sizes += [24, 16]
        w, y = len(sizes) - 2, len(sizes) - 1
        compute.append(3)
        reads.append((x, w))
        writes.append((y,))
        x = y
    return LevelProblem(tuple(compute), tuple(reads), tuple(writes), tuple(sizes), (fast, BIG), (8, 2),
                        dma_latency_cycles=1, live_out=(x,))


def test_same_seed_same_plan():
    p = chain(6, 64)
    a = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=5, random_seed=3))
    b = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=5, random_seed=3))
    assert a.solution == b.solution and a.objective == b.objective


def test_cpsat_never_worse_than_greedy_and_beats_all_in_hbm():
    p = chain(6, 64)
    r = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=5))
    g = GreedyLevelSolver().solve(p)
    h = AllSlowLevelSolver().solve(p)
    assert validate_levels(p, r.solution) == []
    assert r.objective <= g.objective and r.objective < h.objective


def test_window_restriction_never_claims_a_false_optimum():
    # With a 1-op trigger window the model is a restriction: a result above the problem's
    # lower bound must not be reported OPTIMAL, and the bound reported is that lower bound.
    p = chain(6, 64)
    exact = CpSatLevelSolver(prefetch_window_ops=None).solve(p, SolveOptions(time_limit_s=5))
    narrow = CpSatLevelSolver(prefetch_window_ops=1).solve(p, SolveOptions(time_limit_s=5))
    assert exact.status is Status.OPTIMAL
    assert validate_levels(p, narrow.solution) == []
    assert narrow.objective >= exact.objective
    if narrow.objective > makespan_lower_bound(p):
        assert narrow.status is Status.FEASIBLE and narrow.bound == makespan_lower_bound(p)


def test_hint_is_used_and_never_lost(default_options):
    # A valid hint (here the optimum itself) comes back at least as good, split or not.
    for p in (SPILL, SPLIT):
        best = CpSatLevelSolver().solve(p, default_options).solution
        again = CpSatLevelSolver().solve(p, SolveOptions(time_limit_s=0.05, hint=best))
        assert again.solution is not None and again.objective <= best.makespan_cycles


def test_greedy_never_holds_an_eviction_into_the_gap_a_prefetch_lands_in():
    # Found by hypothesis: op 0 writes t0 (3 B, to slow) and t1 (2 B, fast, live-out); op 2
    # reads t0. Fast memory holds 4 B. t1's eviction may not be held until op 2: t0's
    # prefetch must land in the gap before op 2, and 3 + 2 > 4.
    from fractions import Fraction

    p = LevelProblem(compute_cycles=(0, 0, 0), reads=((), (), (0,)), writes=((0, 1), (), ()),
                     tensor_bytes=(3, 2), capacity_bytes=(4, 1_000_000),
                     bandwidth_bytes_per_cycle=(Fraction(4), Fraction(1)), dma_bytes_per_cycle=Fraction(1),
                     live_out=(1,), fast_only_ops=(1, 2))
    g = GreedyLevelSolver().solve(p, SolveOptions(time_limit_s=5))
    assert g.status is Status.FEASIBLE
    assert validate_levels(p, g.solution) == []
    evict = next(t for t in g.solution.transfers if t.tensor == 1)
    assert evict.release_op == 1  # released by op 1, before t0 arrives
