"""Several compute streams: keep a level plan made for the by-address memory order when shorter.

The level solver plans a several-stream device under the point-axis memory order; the plan is
then timed by its fast offsets (an allocation waits only for the frees it overlaps in address,
docs/memory.md, "Several compute streams"). :func:`shorter_by_address` asks
:func:`~solvers.memory.levels.stream_offsets.plan_streams_by_address` for a plan (the
incumbent's or a greedy one's decisions, with offsets packed to keep the streams' pieces apart)
that is strictly shorter under that order, then the exact cycle-time model
(:func:`~solvers.memory.levels.stream_time.solve_stream_time`, warm-started by the best so far,
on devices small enough for it; above 5,000 segment pairs window search in cycle time,
:func:`~solvers.memory.levels.stream_time_windows.solve_stream_time_windows`, goes first, and
alone where the one model is not built) for a plan shorter still, packs the kept plan's offsets
tighter at the same makespan, and gives the figures the report and the verifier read for its
offsets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from solvers.budget import MEMORY_LEVELS, Budget
from solvers.core import SolveOptions
from solvers.memory.arena import fast_offset_problem
from solvers.memory.levels import (LevelSolution, fast_piece_events, fast_pieces, replay_levels, resolve_problem,
                                   validate_levels)
from solvers.memory.levels.stream_offsets import (greedy_by_size_conflict_offsets, pack_tighter, plan_streams_by_address,
                                                  replay_unless_deadlock, timed_by, unsplit)
from solvers.memory.levels.stream_time import segment_pairs, solve_stream_time, time_model_misfit, windows_fit
from solvers.memory.levels.stream_time_windows import solve_stream_time_windows
from solvers.memory.offsets import GreedyBySizeOffsetSolver, OffsetProblem, live_bytes_lower_bound

__all__ = ["STREAM_TIME_SHARE", "FIXED", "NOT_RUN", "shorter_by_address"]

# The cycle-time model's share of the device's memory budget (deterministic units of the
# memory-levels calibration; at least 0.1 s of it).
STREAM_TIME_SHARE = 0.2
# What the cycle-time model keeps fixed, so what its OPTIMAL and bound are about.
FIXED = "merged op order, streams, split factors, fast capacity after the reserve, alignment"
# The status recorded when the model was not built (its reason beside it).
NOT_RUN = "NOT RUN"
# What window search in cycle time keeps fixed besides (devices above the one model's size).
WINDOWS_FIXED = FIXED + ", and outside each window of the merged order the plan it starts from"
# Above this many segment pairs that may meet, window search in cycle time goes before the one
# model, with up to WINDOWS_FIRST_UNITS deterministic units; the one model gets the rest if at
# least ONE_MODEL_MIN_UNITS. Measured (2026-11-28, two 6-layer branches, 7,421 pairs): the one
# model alone at 0.2 units found nothing shorter than 114,969; windows at 0.2 units 101,287; at
# 1.0 unit windows 101,287 then the one model 100,371 OPTIMAL. memory-streams and
# memory-streams-split (4,560 pairs) stay below and keep the one model alone.
WINDOWS_FIRST_PAIRS = 5_000
WINDOWS_FIRST_UNITS = 0.25
ONE_MODEL_MIN_UNITS = 0.05


def shorter_by_address(bridge, solution: LevelSolution, offsets: tuple[int, ...], alignment_bytes: int,
                       fast_capacity_bytes: int, time_limit_s: float = 0.0, seed: int = 0,
                       search: str = "deterministic",
                       stops: list | None = None) -> tuple[LevelSolution, tuple[int, ...], dict[str, Any]] | None:
    """``(solution, its fast offsets, stats)`` of a several-stream plan strictly shorter under the
    by-address memory order than ``solution`` with ``offsets``, or None (one stream, shared
    bandwidth, or nothing shorter and no cycle-time model asked for).

    The stats replace the offset figures of ``solution`` (peak, live-bytes bound, greedy-by-size
    on the same buffers) and record both makespans (``by_address``) and, when the cycle-time
    model was asked for (``time_limit_s`` > 0), its figures (``by_address.time_model``: its status,
    plan and own bound, or ``NOT RUN`` and the reason). When nothing is shorter but the model was
    asked for, ``solution`` and ``offsets`` come back unchanged with only ``by_address`` in the
    stats, its kept makespan the level plan's: the model's OPTIMAL then proves the level plan
    shortest for the fixed order (:data:`FIXED`), and its bound says how far it may be otherwise.
    ``stops`` receives how the cycle-time model's budget ended when its wall-clock net fired
    (``"wall_clock"``: the run is then not reproducible, and says so).
    """
    problem = bridge.problem
    if problem.shared_bandwidth or not problem.multi_stream:
        return None
    found = plan_streams_by_address(problem, solution, offsets, alignment_bytes)
    expanded = resolve_problem(problem, solution)
    # The level plan's own offsets keep apart every two pieces that overlap on the point axis,
    # so their waits are a subset of the point-axis order it was timed by: no deadlock here.
    times = replay_levels(problem, solution, fast_offsets=offsets)
    before = times.makespan_cycles
    time_model = None
    misfit = time_model_misfit(expanded)
    if time_limit_s > 0 and (misfit is None or windows_fit(expanded)):
        incumbent = found if found is not None else timed_by(solution, times, tuple(offsets))
        timed, time_model = _solve_in_cycles(problem, expanded, incumbent, alignment_bytes, time_limit_s, seed,
                                             search, misfit, stops)
        if timed is not None and timed.makespan_cycles < incumbent.makespan_cycles:
            found = timed
            time_model["kept"] = True
    elif time_limit_s > 0:
        time_model = _not_run(misfit)
    if found is None or found.makespan_cycles >= before:
        if time_model is None:
            return None
        # Nothing kept: the level plan stays, with its figures; what the model found is recorded.
        return solution, offsets, {"by_address": {"level_plan_device_cycles": before,
                                                  "kept_device_cycles": before, "time_model": time_model}}
    found = _packed_tighter(problem, found, alignment_bytes)
    return found, found.fast_offsets, _stats(problem, found, alignment_bytes, fast_capacity_bytes, before, time_model)


def _packed_tighter(problem, found: LevelSolution, alignment_bytes: int) -> LevelSolution:
    """``found`` with its offsets packed into a lower footprint at the same makespan
    (:func:`~solvers.memory.levels.stream_offsets.pack_tighter`, on the split expansion), or as it is."""
    expanded = resolve_problem(problem, found)
    packed = pack_tighter(expanded, replace(found, split_factors=()), alignment_bytes)
    if packed is None:
        return found
    packed = replace(packed, split_factors=found.split_factors)
    errors = validate_levels(problem, packed)
    if errors:
        raise ValueError(f"the plan packed tighter does not validate: {errors[:3]}")
    return packed


def _not_run(reason: str) -> dict[str, Any]:
    """The figures of a cycle-time model that was not built, and why."""
    return {"status": NOT_RUN, "device_cycles": None, "model_bound_device_cycles": None, "dtime": 0.0,
            "fixed": FIXED, "reason": reason}


def _solve_in_cycles(problem, expanded, incumbent: LevelSolution, alignment_bytes: int, time_limit_s: float,
                     seed: int, search: str, misfit: str | None,
                     stops: list | None = None) -> tuple[LevelSolution | None, dict[str, Any]]:
    """The cycle-time model's plan (never longer than ``incumbent``) and its figures: status,
    makespan, the model's own bound, deterministic units, and the decisions it keeps fixed.

    Up to :data:`WINDOWS_FIRST_PAIRS` segment pairs, the one model (``misfit`` None) takes the
    whole budget. Above, window search (:func:`solve_stream_time_windows`) goes first, with up to
    :data:`WINDOWS_FIRST_UNITS`, and the one model, where it is built (``misfit`` None), gets what
    is left (at least :data:`ONE_MODEL_MIN_UNITS`), hinted and bounded by the windows' plan.
    A wall-clock net stop goes to ``stops``."""
    budget = Budget.start(max(0.1, STREAM_TIME_SHARE * time_limit_s), MEMORY_LEVELS, search=search)
    try:
        return _solve_in_cycles_within(problem, expanded, incumbent, alignment_bytes, seed, search, misfit, budget)
    finally:
        if stops is not None:
            stops.append(budget.stopped_by)


def _solve_in_cycles_within(problem, expanded, incumbent: LevelSolution, alignment_bytes: int, seed: int,
                            search: str, misfit: str | None,
                            budget: Budget) -> tuple[LevelSolution | None, dict[str, Any]]:
    """:func:`_solve_in_cycles` within ``budget``."""
    options = SolveOptions(num_workers=1, random_seed=seed, search=search)
    windows = None
    if misfit is not None or segment_pairs(expanded) > WINDOWS_FIRST_PAIRS:
        share = budget.left if misfit is not None else min(budget.left, budget.scale(WINDOWS_FIRST_UNITS))
        windows = _windows(problem, expanded, incumbent, alignment_bytes, options, budget, share)
        if windows.solution is not None:
            incumbent = windows.solution
    if misfit is None and (windows is None or budget.left >= budget.scale(ONE_MODEL_MIN_UNITS)):
        result = solve_stream_time(problem, options, budget, budget.left, incumbent, alignment_bytes)
        if result.solution is not None or windows is None or windows.solution is None:
            figures = {"status": result.status.value, "device_cycles": result.objective,
                       "model_bound_device_cycles": result.bound, "dtime": round(budget.used, 6), "fixed": FIXED}
            if windows is not None:
                figures["windows"] = _window_figures(windows, "first")
            return result.solution, figures
    figures = {"status": windows.status.value, "device_cycles": windows.objective,
               "model_bound_device_cycles": windows.bound if windows.solution is not None else None,
               "dtime": round(budget.used, 6), "fixed": WINDOWS_FIXED,
               "windows": _window_figures(windows, misfit or "first")}
    return windows.solution, figures


def _window_figures(result, why: str) -> dict[str, Any]:
    return {"solved": result.stats.get("windows", 0), "improved": result.stats.get("improved", 0), "why": why}


def _windows(problem, expanded, incumbent: LevelSolution, alignment_bytes: int, options: SolveOptions, budget: Budget,
             amount: float):
    """Window search in cycle time on the split expansion (the factors put back and checked)."""
    factors = incumbent.split_factors
    result = solve_stream_time_windows(expanded, replace(incumbent, split_factors=()), options, budget, amount,
                                       alignment_bytes)
    if result.solution is None:
        return result
    found = replace(result.solution, split_factors=factors)
    errors = validate_levels(problem, found)
    if errors:
        raise ValueError(f"window search's plan does not validate: {errors[:3]}")
    return replace(result, solution=found)


def _cycle_offset_problem(expanded, found: LevelSolution, alignment_bytes: int,
                          fast_capacity_bytes: int) -> OffsetProblem:
    """The fast pieces of ``found`` as buffers over the cycles they live (allocation to free)."""
    rows = []
    ends = [s + d for s, d in zip(found.op_start, found.op_duration)]
    for _, _, alloc, free, n in fast_piece_events(expanded, found):
        begin = found.op_start[alloc[1]] if alloc[0] == "op" else found.transfers[alloc[1]].start_cycle
        finish = ends[free[1]] if free[0] == "op" else found.transfers[free[1]].end_cycle
        rows.append((expanded.tensor_bytes[fast_pieces(expanded, found)[n][0]], begin, max(finish, begin + 1)))
    return OffsetProblem(tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows),
                         fast_capacity_bytes, alignment_bytes=(max(1, alignment_bytes),) * len(rows))


def _conflict_greedy_peak(expanded, found: LevelSolution, alignment_bytes: int) -> int | None:
    """Greedy-by-size's fast peak for a kept cycle-time plan (``expanded``: its split expansion),
    or None when that packing is no valid one for the plan's times.

    Greedy by size over the point-axis conflicts alone is no packing for such a plan (its
    pieces also meet in cycles), nor over its cycle lifetimes alone (that ignores the point
    overlaps the by-address order needs apart, and read below the live bound): it packs over
    :func:`~solvers.memory.levels.stream_offsets.greedy_by_size_conflict_offsets`' conflict
    graph (both axes, and pieces in opposite orders on the two), and counts only when the
    replay with those offsets deadlocks nowhere and ends no later than the plan."""
    flat = unsplit(found)
    offsets = greedy_by_size_conflict_offsets(expanded, flat, alignment_bytes)
    replayed = replay_unless_deadlock(expanded, flat, tuple(offsets))
    if replayed is None or replayed.makespan_cycles > found.makespan_cycles:
        return None
    return max((at + expanded.tensor_bytes[t] for at, (t, _, _) in zip(offsets, fast_pieces(expanded, flat))
                if expanded.tensor_bytes[t]), default=0)


def _stats(problem, found: LevelSolution, alignment_bytes: int, fast_capacity_bytes: int, before: int,
           time_model: dict[str, Any] | None) -> dict[str, Any]:
    expanded = resolve_problem(problem, found)
    sized = [(found.fast_offsets[n], expanded.tensor_bytes[t])
             for n, (t, _, _) in enumerate(fast_pieces(expanded, found)) if expanded.tensor_bytes[t]]
    off_problem, _ = fast_offset_problem(problem, found, alignment_bytes)
    off_problem = replace(off_problem, capacity_bytes=fast_capacity_bytes)
    lb = live_bytes_lower_bound(off_problem)
    if time_model is not None and time_model.get("kept"):
        # Its pieces overlap in cycles beyond the point axis: the bytes live at one cycle
        # bound its footprint too, and greedy-by-size packs over both axes' conflicts.
        lb = max(lb, live_bytes_lower_bound(_cycle_offset_problem(expanded, found, alignment_bytes,
                                                                  fast_capacity_bytes)))
        greedy_peak = _conflict_greedy_peak(expanded, found, alignment_bytes)
    else:
        greedy = GreedyBySizeOffsetSolver().solve(off_problem, SolveOptions())
        greedy_peak = greedy.objective if greedy.objective is not None else greedy.stats.get("peak_bytes")
    by_address = {"level_plan_device_cycles": before, "kept_device_cycles": found.makespan_cycles}
    if time_model is not None:
        by_address["time_model"] = time_model
    return {
        "fast_peak_bytes": max((at + size for at, size in sized), default=0),
        "fast_peak_bound_bytes": lb,
        "fast_live_lower_bound_bytes": lb,
        "fast_offsets_status": "FEASIBLE",
        "fast_offsets_stopped_by": "finished",
        "fast_offsets_dtime": None,
        "fast_peak_greedy_by_size_bytes": greedy_peak,
        "split_factors": list(found.split_factors),
        "by_address": by_address,
    }
