"""The segment glue: repeated windows solved once, and the hierarchical path starting from it."""

from __future__ import annotations

from solvers.core import SolveOptions
from solvers.hierarchical import StrategyOptions, StrategyScheduler
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem, validate_schedule
from solvers.scheduling.cpsat.segments import segment_schedule

ONE = SolveOptions(time_limit_s=600, num_workers=1)  # the deterministic budgets end these runs


def repeated_blocks(blocks: int) -> SchedulingProblem:
    """``blocks`` copies of: cut op (1 cycle) -> three parallel 4-cycle ops -> the next cut op,
    on two identical devices, every transfer 1 cycle. Per block the best is two ops on one
    device and one on the other (1 + 4 + 1 = 6 <= 8), so the optimum is 1 + 9 x blocks."""
    durations, edges = [(1, 1)], []
    for b in range(blocks):
        cut = 4 * b
        for k in (1, 2, 3):
            durations.append((4, 4))
            edges += [(cut, cut + k, 8), (cut + k, cut + 4, 8)]
        durations.append((1, 1))
    return SchedulingProblem(tuple(durations), tuple(edges), (1, 1), ((-1, 0), (0, -1)), ((1,),) * len(edges))


def test_repeated_windows_are_solved_once_with_the_same_schedule():
    p = repeated_blocks(6)
    cfg = CpSatOptions(segment_window_ops=4, segment_min_ops=2)
    each, once = {}, {}
    plain = segment_schedule(p, ONE, 5.0, cfg, each)
    reused = segment_schedule(p, ONE, 5.0, cfg, once, reuse=True)
    assert validate_schedule(p, reused) == []
    assert plain.makespan_cycles == reused.makespan_cycles == 1 + 9 * 6
    assert each["windows"] == once["windows"] == 6
    assert each["windows_solved"] == 6 and once["windows_solved"] <= 2  # the first window has no pinned source


def test_the_glue_meets_the_proven_optimum():
    p = repeated_blocks(5)
    flat = CpSatScheduler().solve(p, SolveOptions(time_limit_s=20, num_workers=1))
    assert flat.status.value == "OPTIMAL" and flat.objective == 46
    glued = segment_schedule(p, ONE, 5.0, CpSatOptions(segment_window_ops=4, segment_min_ops=2), reuse=True)
    assert glued.makespan_cycles == flat.objective


def test_the_hierarchical_path_starts_from_the_glue():
    p = repeated_blocks(8)
    cfg = StrategyOptions(strategy="hierarchical", cpsat=CpSatOptions(segment_window_ops=4, segment_min_ops=2))
    r = StrategyScheduler(cfg).solve(p, SolveOptions(time_limit_s=20, num_workers=1))
    stage = r.stats["strategy_stages"]["segments"]
    assert stage["objective"] == 1 + 9 * 8 and stage["windows"] == 8 and stage["windows_solved"] <= 2
    assert r.objective <= stage["objective"] and validate_schedule(p, r.solution) == []
    off = StrategyScheduler(StrategyOptions(strategy="hierarchical", segment_share=0.0)).solve(
        p, SolveOptions(time_limit_s=20, num_workers=1))
    assert "segments" not in off.stats["strategy_stages"]


def test_the_placer_gives_its_share_to_the_glue_when_the_unit_needs_it():
    # At 8 s the glue's 1 unit needs 0.625 of the search (0.2 units per second): more than its
    # 0.4, within 0.4 + the placer's 0.3, so the placer is skipped and the glue gets the unit.
    p = repeated_blocks(8)
    cfg = StrategyOptions(strategy="hierarchical", cpsat=CpSatOptions(segment_window_ops=4, segment_min_ops=2))
    r = StrategyScheduler(cfg).solve(p, SolveOptions(time_limit_s=8, num_workers=1))
    stages = r.stats["strategy_stages"]
    assert "segment glue" in stages["placer"]["skipped"]
    assert stages["segments"]["objective"] == 1 + 9 * 8 and validate_schedule(p, r.solution) == []
    # at 20 s (and at 4 s, where even both shares cannot buy the unit) the placer runs
    for limit in (20, 4):
        kept = StrategyScheduler(cfg).solve(p, SolveOptions(time_limit_s=limit, num_workers=1))
        assert "skipped" not in kept.stats["strategy_stages"]["placer"]
