"""Co-location solvers: hand-checked optima, conformance, bounds, brute force, variants."""

from __future__ import annotations

import itertools
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from solvers.colocation import (
    BASIS_POINTS,
    ColocationObjective,
    ColocationProblem,
    ColocationSolution,
    ColumnGenerationColocationSolver,
    CpSatColocationSolver,
    CpSatVariantSolver,
    FirstFitDecreasingSolver,
    VariantProblem,
    bin_completion,
    build_colocation_model,
    canonicalize,
    colocation_objective,
    cost_lower_bound,
    explain_infeasibility,
    max_utilization_lower_bound,
    pattern_lower_bound,
    validate_colocation,
    validate_variants,
)
from solvers.colocation.instances import triplet_instance
from solvers.core import SolveOptions, Status

MIN_COST = ColocationObjective.MIN_COST
BALANCE = ColocationObjective.MIN_MAX_UTILIZATION


def opts(**kw) -> SolveOptions:
    return SolveOptions(**{"time_limit_s": 5.0, "num_workers": 1, "random_seed": 0, **kw})


def one_dim(cap: int, count: int, sizes: list[int], **kw) -> ColocationProblem:
    return ColocationProblem(((cap,),), (count,), tuple(((s,),) for s in sizes), **kw)


# (name, problem, optimum) -- the arithmetic is in the comments.
INSTANCES = [
    # The issue's example: 20 000 + 80 000 = 100 000 ops <= 100 000; 30 + 10 = 40 GB <= 100 GB:
    # one processor.
    ("issue", ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),))), 1),
    # 5+5 | 4+3+3 | 4+3+3 = three full bins (volume 30/10 = 3). First-fit decreasing opens a
    # fourth: 5,5 | 4,4 | 3,3,3 | 3.
    ("ffd-loses", one_dim(10, 5, [5, 5, 4, 4, 3, 3, 3, 3]), 3),
    # Two dimensions that conflict: (6,1)+(1,6) = (7,7) fits, (6,1)+(6,1) = (12,2) does not:
    # two bins.
    ("2d", ColocationProblem(((10, 10),), (4,), (((6, 1),), ((1, 6),), ((6, 1),), ((1, 6),))), 2),
    # Mixed pools: A holds one 9 (cost 1 each, two of them), B holds two (cost 3): B + A = 4
    # beats A + A + B = 5; first fit opening cheap bins first pays 5.
    ("mixed", ColocationProblem(((10,), (20,)), (2, 1), tuple(((9,), (9,)) for _ in range(3)),
                                class_cost=(1, 3)), 4),
    # Grouped identical items: six copies of 4 in bins of 10 pair up: three bins.
    ("grouped", ColocationProblem(((10,),), (6,), (((4,),),), multiplicity=(6,)), 3),
    # A type allowed only on class 1 (class 0's demand is None): 6 + 6 > 10, so two class-1 bins.
    ("forbidden", ColocationProblem(((100,), (10,)), (1, 3), ((None, (6,)),), multiplicity=(2,)), 2),
]

BALANCE_INSTANCES = [
    # Two bins of 10; items 6, 5, 4, 3 (sum 18): {6,3} and {5,4} = 9 each, the average: 90%.
    ("even", one_dim(10, 2, [6, 5, 4, 3], objective=BALANCE), 9000),
    # The issue's pair spread on two processors: the larger alone is 80 000 / 100 000 = 80%.
    ("issue-spread", ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)),
                                       objective=BALANCE), 8000),
    # Same items, at most one processor (budget): 100% ops.
    ("issue-budget", ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)),
                                       objective=BALANCE, cost_budget=1), 10_000),
]

EXACT = [CpSatColocationSolver(), ColumnGenerationColocationSolver()]


@pytest.mark.parametrize("name,problem,optimum", INSTANCES, ids=[i[0] for i in INSTANCES])
@pytest.mark.parametrize("solver", EXACT, ids=lambda s: s.name)
def test_exact_solvers_hit_hand_checked_optima(solver, name, problem, optimum):
    r = solver.solve(problem, opts())
    assert r.status is Status.OPTIMAL
    assert r.objective == optimum == r.bound
    assert validate_colocation(problem, r.solution) == []
    assert colocation_objective(problem, r.solution) == optimum


@pytest.mark.parametrize("name,problem,optimum", INSTANCES + BALANCE_INSTANCES,
                         ids=[i[0] for i in INSTANCES + BALANCE_INSTANCES])
def test_ffd_is_feasible_and_never_better_than_optimum(name, problem, optimum):
    r = FirstFitDecreasingSolver().solve(problem, opts())
    assert r.status is Status.FEASIBLE and r.bound is None
    assert validate_colocation(problem, r.solution) == []
    assert r.objective >= optimum


def test_ffd_loses_where_expected():
    # The comments above: FFD uses 4 bins on "ffd-loses" and pays 5 on "mixed".
    assert FirstFitDecreasingSolver().solve(INSTANCES[1][1]).objective == 4
    assert FirstFitDecreasingSolver().solve(INSTANCES[3][1]).objective == 5


@pytest.mark.parametrize("name,problem,optimum", BALANCE_INSTANCES, ids=[i[0] for i in BALANCE_INSTANCES])
def test_balance_optima(name, problem, optimum):
    r = CpSatColocationSolver().solve(problem, opts())
    assert r.status is Status.OPTIMAL and r.objective == optimum
    assert validate_colocation(problem, r.solution) == []


def test_issue_example_is_colocated():
    problem = INSTANCES[0][1]
    for solver in (*EXACT, FirstFitDecreasingSolver()):
        r = solver.solve(problem, opts())
        assert r.solution.bin_of_item[0] == r.solution.bin_of_item[1]


def test_bounds():
    # Volume: 30 / 10 = 3; items above half (none of 5: 5 is not > 5).
    assert cost_lower_bound(INSTANCES[1][1]) == 3
    # Half bound: three items of 6 > 5 in bins of 10 need three bins though volume is 18/10 -> 2.
    assert cost_lower_bound(one_dim(10, 3, [6, 6, 6])) == 3
    # Mixed classes: total 27 needs A + B (10 + 20 = 30, cost 4) -- A + A = 20 < 27.
    assert cost_lower_bound(INSTANCES[3][1]) == 4
    # Balance: the largest item alone is 6/10 = 60%; the average 18/20 = 90% dominates.
    assert max_utilization_lower_bound(BALANCE_INSTANCES[0][1]) == 9000


def test_pattern_bound_is_valid_and_tight_on_pairs():
    # Seven items of 4/10, two per bin: LP = 3.5, the bound's ceiling is the optimum 4.
    p = ColocationProblem(((10,),), (7,), (((4,),),), multiplicity=(7,))
    bound, patterns = pattern_lower_bound(p, deadline_s=time.perf_counter() + 5)
    assert bound == pytest.approx(3.5, abs=1e-5)
    assert any(dict(pt.counts).get(0) == 2 for pt in patterns)


def test_infeasible_is_explained():
    # Three items of 8 on two bins of 10: 24 > 20 in dimension 0.
    p = ColocationProblem(((10, 10),), (2,), (((8, 1),), ((8, 1),), ((8, 1),)))
    shortfalls = explain_infeasibility(p)
    assert [(s.classes, s.dim, s.demand, s.capacity, s.missing) for s in shortfalls] == [((0,), 0, 24, 20, 4)]
    for solver in (*EXACT, FirstFitDecreasingSolver()):
        assert solver.solve(p, opts()).status is Status.INFEASIBLE


def test_infeasible_without_counting_argument_is_not_claimed_by_ffd():
    # Two bins of 10, items 6, 6, 4, 4... fits (6+4, 6+4); items 6,6,6 in two bins: volume
    # 18 <= 20 but no two 6s share a bin. CP-SAT proves it; FFD cannot (UNKNOWN).
    p = one_dim(10, 2, [6, 6, 6])
    assert explain_infeasibility(p) == []
    assert FirstFitDecreasingSolver().solve(p).status is Status.UNKNOWN
    assert CpSatColocationSolver().solve(p, opts()).status is Status.INFEASIBLE


def test_hint_from_ffd_is_feasible_in_the_model():
    problem = INSTANCES[1][1]
    ffd = FirstFitDecreasingSolver().solve(problem).solution
    model, v = build_colocation_model(problem)
    v.hint(model, canonicalize(problem, ffd))
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 5
    assert solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert solver.objective_value == 4  # FFD's four bins


def test_symmetry_breaking_excludes_only_relabellings():
    # Pinning the largest item to a second bin is infeasible (it must open bin 0) ...
    problem = one_dim(10, 3, [6, 5, 4])
    model, v = build_colocation_model(problem)
    assert (0, 1) not in v.x
    # ... but forcing items 0 and 1 apart stays feasible (bins 0 and 1).
    model.add(v.x[0, 0] + v.x[1, 0] <= 1)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    assert solver.objective_value == 2  # 6+4 | 5


@pytest.mark.parametrize("solver", EXACT, ids=lambda s: s.name)
def test_triplets_proven_optimal(solver):
    p = triplet_instance(30, seed=3)
    r = solver.solve(p, opts())
    assert r.status is Status.OPTIMAL and r.objective == 10
    assert validate_colocation(p, r.solution) == []


def test_triplets_cp_sat_model_alone():
    # Without bin completion the CP-SAT model itself proves n/3 on a small instance.
    p = triplet_instance(15, seed=1)
    r = CpSatColocationSolver(bin_completion_share=0.0).solve(p, opts())
    assert r.status is Status.OPTIMAL and r.objective == 5


def test_bin_completion_finds_exact_packings():
    p = triplet_instance(60, seed=2)
    sol = bin_completion(p, 20, deadline_s=time.perf_counter() + 5)
    assert sol is not None and validate_colocation(p, sol) == [] and len(sol.used_bins()) == 20


def brute_force(problem: ColocationProblem) -> int | None:
    best = None
    for assign in itertools.product(range(problem.num_bins), repeat=problem.num_items):
        sol = ColocationSolution(assign)
        if not validate_colocation(problem, sol):
            value = colocation_objective(problem, sol)
            best = value if best is None else min(best, value)
    return best


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 10), st.integers(0, 10)), min_size=1, max_size=5),
       st.integers(1, 2), st.sampled_from([MIN_COST, BALANCE]))
def test_cp_sat_equals_brute_force(sizes, extra, objective):
    p = ColocationProblem(((10, 10), (14, 8)), (2, extra), tuple((s, s) for s in sizes),
                          class_cost=(1, 2), objective=objective)
    expected = brute_force(p)
    r = CpSatColocationSolver().solve(p, opts())
    if expected is None:
        assert r.status is Status.INFEASIBLE
        return
    assert r.status is Status.OPTIMAL and r.objective == expected
    assert validate_colocation(p, r.solution) == []
    if objective is MIN_COST:
        # Column generation is exact only when its bound meets its packing; both stay valid.
        g = ColumnGenerationColocationSolver().solve(p, opts(time_limit_s=2.0))
        assert validate_colocation(p, g.solution) == []
        assert g.bound <= expected <= g.objective
        assert (g.status is Status.OPTIMAL) == (g.bound == g.objective)
        assert cost_lower_bound(p) <= expected
    else:
        assert max_utilization_lower_bound(p) <= expected


# --- variants ---------------------------------------------------------------------------
def variants(deadline_ns=None, precision=9000, with_medium=False):
    # big: 95%, 20 rps, cost 10; small: 85%, 50 rps, cost 3; medium: 90%, 30 rps, cost 5,
    # latency 30 (the others 10 and 5).
    caps, prec, lat, cost = [20, 50], [9500, 8500], [10, 5], [10, 3]
    if with_medium:
        caps, prec, lat, cost = caps + [30], prec + [9000], lat + [30], cost + [5]
    return VariantProblem(100, precision, deadline_ns, tuple(caps), tuple(prec), tuple(lat), tuple(cost))


def test_variants_cheapest_mix():
    # 0.95 x + 0.85 (100 - x) >= 90 => x >= 50 rps on big => 3 big (60 rps) + 1 small: 33.
    # Two big serve only 40 < 50; all big needs 5 (50).
    r = CpSatVariantSolver().solve(variants(), opts())
    assert r.status is Status.OPTIMAL and r.objective == 33 and r.solution.instances == (3, 1)
    assert validate_variants(variants(), r.solution) == []


def test_variants_medium_is_cheaper_unless_too_slow():
    # Medium alone: 4 x 30 >= 100 rps at exactly 90%, cost 20 < 33.
    r = CpSatVariantSolver().solve(variants(with_medium=True), opts())
    assert r.objective == 20 and r.solution.instances == (0, 0, 4)
    # A 20 ns deadline excludes medium (30 ns): back to 33.
    r = CpSatVariantSolver().solve(variants(deadline_ns=20, with_medium=True), opts())
    assert r.objective == 33 and r.solution.instances[2] == 0


def test_variants_infeasible_precision():
    # 96% is above every variant's precision.
    assert CpSatVariantSolver().solve(variants(precision=9600), opts()).status is Status.INFEASIBLE


def test_problem_validation():
    with pytest.raises(ValueError, match="may run on no class"):
        ColocationProblem(((10,),), (1,), ((None,),))
    with pytest.raises(ValueError, match="capacity"):
        ColocationProblem(((0,),), (1,), (((1,),),))
    with pytest.raises(ValueError, match="rate_rps"):
        VariantProblem(0, 0, None, (1,), (1,), (1,), (1,))
    assert BASIS_POINTS == 10_000


def test_improve_balance_keeps_feasibility_and_never_worsens():
    from solvers.colocation.greedy import improve_balance

    rng = random.Random(5)
    p = ColocationProblem(((100, 100),), (6,), tuple(((rng.randint(5, 40), rng.randint(5, 40)),) for _ in range(18)),
                          objective=BALANCE)
    g = FirstFitDecreasingSolver().solve(p)
    better = improve_balance(p, g.solution, deadline_s=time.perf_counter() + 5)
    assert validate_colocation(p, better) == []
    assert max_utilization_lower_bound(p) <= colocation_objective(p, better) <= g.objective
    # Restricted to the bins already used (a cost budget), items never move elsewhere.
    packed = FirstFitDecreasingSolver().solve(ColocationProblem(p.capacity, p.class_count, p.demand)).solution
    tight = improve_balance(p, packed, deadline_s=time.perf_counter() + 5, bins=list(packed.used_bins()))
    assert set(tight.used_bins()) <= set(packed.used_bins()) and validate_colocation(p, tight) == []
    assert colocation_objective(p, tight) <= colocation_objective(p, packed)
