"""The segment glue: repeated windows solved once, and the hierarchical path starting from it."""

from __future__ import annotations

from solvers.core import SolveOptions
from solvers.hierarchical import StrategyOptions, StrategyScheduler
from solvers.scheduling import CpSatOptions, CpSatScheduler, SchedulingProblem, validate_schedule
from solvers.scheduling.bounds import segment_problems
from solvers.scheduling.cpsat.options import as_budget, inner_config
from dataclasses import replace

import solvers.scheduling.cpsat.segments as segments
from solvers.core import Status
from solvers.scheduling.cpsat.segments import (PROBE_UNITS_PER_OP, _class_solve, _pin_source, _relabelled, _windows,
                                               probes_afforded, segment_schedule)

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
    # at 20 s (and at 4 s, where even both shares cannot buy the unit) the placer keeps its
    # share (and runs unless the glued plan already meets the proven bound)
    for limit in (20, 4):
        kept = StrategyScheduler(cfg).solve(p, SolveOptions(time_limit_s=limit, num_workers=1))
        stages = kept.stats["strategy_stages"]
        assert stages["charged"]["grouping_s"] is not None
        assert stages["placer"].get("skipped") in (None, "the incumbent meets the proven bound")


def lock_in_blocks(blocks: int) -> SchedulingProblem:
    """``blocks`` copies of: cut op -> x -> the next cut op, on a device A and a device B (not
    interchangeable), every transfer 2 cycles. x takes 10 on A, 30 on B; a cut op 5 on A, 2 on
    B. A window pinned at A is shortest ending on B (10 + 2 + 2 = 14 < 15), but one pinned at B
    then takes 2 + 10 + 2 + 2 = 16 where staying on A takes 15: the greedy chain locks in at B
    (15 + 16 x 5 = 95 for six blocks; the optimum is 1 + 15 + 15 x 4 + 14 = 90)."""
    durations, edges = [(1, 1)], []
    for b in range(blocks):
        durations += [(10, 30), (5, 2)]
        edges += [(2 * b, 2 * b + 1, 8), (2 * b + 1, 2 * b + 2, 8)]
    return SchedulingProblem(tuple(durations), tuple(edges), (1, 1), ((-1, 0), (1, -1)),
                             ((2, 2),) * len(edges), device_class=(0, 1))


def test_the_glue_steers_a_chain_that_locks_in_to_the_cheapest_steady_state():
    p = lock_in_blocks(6)
    cfg = CpSatOptions(segment_window_ops=3, segment_min_ops=2)
    each, once = {}, {}
    plain = segment_schedule(p, ONE, 5.0, cfg, each)  # no reuse: the greedy chain alone
    glued = segment_schedule(p, ONE, 5.0, cfg, once, reuse=True)
    assert plain.makespan_cycles == once["plain_objective"] == 95
    assert validate_schedule(p, glued) == [] and glued.makespan_cycles == 90
    assert once["steady_periods"] == {"(0,)": 15, "(1,)": 16} and once["returned"] == "steered"
    assert [glued.op_device[2 * b + 2] for b in range(6)] == [0, 0, 0, 0, 0, 1]


def test_the_glue_keeps_the_plain_chain_when_steering_does_not_help():
    p = repeated_blocks(6)  # two devices without classes: the plain chain is optimal
    once = {}
    glued = segment_schedule(p, ONE, 5.0, CpSatOptions(segment_window_ops=4, segment_min_ops=2), once, reuse=True)
    assert glued.makespan_cycles == once["plain_objective"] == 1 + 9 * 6 and "returned" not in once


def three_of_a_class(blocks: int) -> SchedulingProblem:
    """:func:`repeated_blocks` on three devices of one class, all linked (optimum 1 + 7 x blocks:
    the three parallel ops on three devices)."""
    base = repeated_blocks(blocks)
    pairs = [(a, b) for a in range(3) for b in range(3) if a != b]
    link_of = tuple(tuple(-1 if a == b else pairs.index((a, b)) for b in range(3)) for a in range(3))
    durations = tuple(row + row[:1] for row in base.durations_cycles)
    return SchedulingProblem(durations, base.edges, (1, 1, 1), link_of, ((1,) * 6,) * len(base.edges),
                             device_class=(0, 0, 0))


def test_windows_pinned_in_one_interchangeable_class_share_one_solve():
    p = three_of_a_class(6)
    cfg = CpSatOptions(segment_window_ops=4, segment_min_ops=2)
    once = {}
    glued = segment_schedule(p, ONE, 5.0, cfg, once, reuse=True)
    assert validate_schedule(p, glued) == [] and glued.makespan_cycles == 1 + 7 * 6
    assert once["windows_solved"] == 2  # the first window, the middle ones' first probe is optimal
    # the middle window's solution pinned at device 0, renamed for a source on 1 or 2
    sub = _windows(p, segment_problems(p), 4)[1][0]
    canonical, solves = _class_solve(inner_config(cfg), sub, (0, 1, 2), ONE, as_budget(5.0, ONE, cfg), 5.0, 1)
    assert solves == 1 and canonical.op_device[0] == 0 and canonical.makespan_cycles == 7
    for pin in (1, 2):
        renamed = _relabelled(sub, canonical, (0, 1, 2), pin)
        assert validate_schedule(_pin_source(sub, pin), renamed) == [] and renamed.makespan_cycles == 7


def test_a_window_probes_only_as_many_pins_as_its_share_affords(monkeypatch):
    """The probes' solves are reported FEASIBLE (not proven) so only the share stops them: a
    share worth one probe buys exactly one, pinned at the chain's own pin; one worth three,
    three (the class has three devices), each from the best so far."""
    p = three_of_a_class(6)
    cfg = CpSatOptions(segment_window_ops=4, segment_min_ops=2)
    sub = _windows(p, segment_problems(p), 4)[1][0]
    real, pins = segments._hinted_solve, []

    def unproven(cfg, problem, options, budget, amount, stage, hint):
        pins.append(next(d for d, c in enumerate(problem.durations_cycles[0]) if c >= 0))
        return replace(real(cfg, problem, options, budget, amount, stage, hint), status=Status.FEASIBLE)

    monkeypatch.setattr(segments, "_hinted_solve", unproven)
    one = PROBE_UNITS_PER_OP * sub.num_ops * 1.9
    assert probes_afforded(one, sub.num_ops, 3) == 1
    best, solves = _class_solve(inner_config(cfg), sub, (0, 1, 2), ONE, as_budget(5.0, ONE, cfg), one, 1, first=2)
    assert solves == 1 and pins == [2] and best.op_device[0] == 0 and best.makespan_cycles == 7
    pins.clear()
    three = PROBE_UNITS_PER_OP * sub.num_ops * 3.5
    _, solves = _class_solve(inner_config(cfg), sub, (0, 1, 2), ONE, as_budget(5.0, ONE, cfg), three, 1, first=1)
    assert solves == 3 and pins == [1, 0, 2]
