"""CP-SAT reports objectives and bounds as floats; the solvers read the integers they stand for.

CP-SAT's presolve may rescale an objective, so an integer optimum can read 1.9999999999999996:
truncating it (``int``) is one too low. These draws were found by searching random instances for
a non-integral ``ObjectiveValue``.
"""

import solvers.budget
from solvers.budget import NET_SLOWDOWN_ENV
from solvers.colocation.variants import CpSatVariantSolver, VariantProblem
from solvers.core import SolveOptions, Status
from solvers.islands.split import CpSatSplitSolver, SplitProblem

OPTIONS = SolveOptions(time_limit_s=5, num_workers=1, random_seed=0)


def test_the_split_reads_its_bottleneck_as_an_integer_and_proves_it():
    # One portion, 7 cycles on island 0 and 2 on island 1 (one lane each): the bottleneck is 2, on
    # island 1. CP-SAT reads it as 1.9999999999999996; truncated, the bound said 1 (FEASIBLE, gap
    # 50%) and the second phase (cross bytes under bottleneck <= 1) was infeasible.
    p = SplitProblem(((7, 2),), (0,), (1, 1), (1000, 1000), (), ())
    r = CpSatSplitSolver().solve(p, OPTIONS)
    assert (r.status, r.objective, r.bound) == (Status.OPTIMAL, 2, 2)
    assert r.solution.island_of == (1,) and r.stats["cross_bytes_optimal"] is True


def test_the_variant_mix_reports_an_integer_bound():
    # The docstring's mix: 3 big (cost 10) and 1 small (cost 3), 33, proven.
    p = VariantProblem(100, 9000, None, (20, 50), (9500, 8500), (10, 5), (10, 3))
    r = CpSatVariantSolver().solve(p, OPTIONS)
    assert (r.status, r.objective, r.bound) == (Status.OPTIMAL, 33, 33) and type(r.bound) is int


def test_the_splits_wall_clock_net_widens_with_plan_net_slowdown_and_is_reported(monkeypatch):
    # The net is PLAN_NET_SLOWDOWN x the limit + 5 s (was 1 x the limit per phase, unreported):
    # with the constant pushed into the past it fires, and the stats say so.
    p = SplitProblem(((7, 2),), (0,), (1, 1), (1000, 1000), (), ())
    monkeypatch.setenv(NET_SLOWDOWN_ENV, "20")
    assert CpSatSplitSolver().solve(p, OPTIONS).stats["stopped_by"] == "optimal"
    # The constant is scaled by 20/3 at that factor: -(20 x limit + 1) s in all, a deadline 1 s ago.
    monkeypatch.setattr(solvers.budget, "NET_CONSTANT_S", -(20 * OPTIONS.time_limit_s + 1.0) * 3 / 20)
    assert CpSatSplitSolver().solve(p, OPTIONS).stats["stopped_by"] == "wall_clock"
