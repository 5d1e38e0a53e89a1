"""Tunables of the CP-SAT scheduler and the deterministic-time budget they imply.

One job: :class:`CpSatOptions` and how a configuration turns into a
:class:`~solvers.budget.Budget` (its calibration; the configuration of nested segment
solves).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from solvers.budget import Budget, Calibration, SCHEDULING
from solvers.core import SolveOptions

__all__ = ["CpSatOptions", "as_budget", "calibration", "forced_stage_shares", "inner_config"]


@dataclass(frozen=True, slots=True)
class CpSatOptions:
    """Tunables of :class:`CpSatScheduler` beyond :class:`~solvers.core.SolveOptions`.

    Examples
    --------
    >>> CpSatOptions().max_full_ops
    400
    """

    # Above this many ops the hint's placement is fixed and only sequencing is solved.
    max_full_ops: int = 400
    # Deterministic-time units granted per second of the time limit for one worker (two or
    # more get solvers.budget.PARALLEL_SPEEDUP times as much); None: the family's calibration,
    # solvers.budget.SCHEDULING. Raise it for more search per second of limit.
    dtime_per_second: float | None = None
    # Run CP-SAT's portfolio (LNS included) in deterministic batches, for any worker count.
    interleave_search: bool = True
    # LATENCY: share of the time budget spent proving bounds on segments between cut ops
    # (see segment_lower_bound); 0 turns it off.
    segment_bound_share: float = 0.4
    # ... on LATENCY problems whose weights need several devices, where the stages before the
    # main solve share the budget cumulatively (solvers.scheduling.cpsat.stage_budget: each
    # stage gets its share and what the earlier ones left, and the shares below add up to at
    # most 1 - main_share). Measured on the 8 dnn latency inputs at 60 s (3.36 units), the
    # segment bound charged 0.2 units at most there (BERT-L 6; the layer graphs 0.001 or less).
    forced_segment_bound_share: float = 0.06
    # ... and the least share of the budget the main solve keeps there (it gets what the stages
    # left, which the shares make at least this, less what a stage overran; elsewhere it keeps
    # at least a fifth). On the memory-forced dnn inputs it re-sequences the best start's
    # placement (too many elements for the full model) and gained 0.09 ms at most.
    main_share: float = 0.06
    # LATENCY: share of the time budget spent building a hint from per-segment solutions
    # (see segment_schedule); 0 turns it off.
    segment_schedule_share: float = 0.3
    # LATENCY problems whose weights need several devices: share of the time budget spent
    # refuting makespans of the forced-cut relaxation (see forced_cut_bound); 0 turns it off.
    forced_cut_share: float = 0.2
    # LATENCY problems whose weights need several devices: share of the time budget spent
    # proving what a device change at a clean cut op costs with link and stream contention
    # (pinned moves, see solvers.scheduling.pinned_moves), priced into the clean segment
    # runs; 0 turns it off. The stage proves only the moves the DP's path takes and stops when
    # that path is proved, so the share is spent only where moves are open (0.1 until session
    # 13: Inception-V3 needs about 1 unit, and its forced-cut probe takes part of the share
    # the stage resumes).
    pinned_move_share: float = 0.15
    # ... with the relaxation's window terms for stream and link contention (sound; off: at
    # the dnn benchmark's budget they refuted nothing more and cost wall time, docs/bounds.md).
    forced_cut_contention: bool = False
    # ... and share spent minimising that relaxation for a placement, which is then sequenced
    # by HEFT and replaces the hint when shorter (see solvers.scheduling.forced_start); 0 turns
    # it off. 0.05 (0.1 until session 13): the stages before the module re-solve overcommit the
    # budget on Inception-V3 layers (the re-solve got 0.86 of its 1.0 units), and the candidate
    # never wins there; the 0.17 units it gives back take the re-solve to 928.31 ms and the
    # stitched parts after it to 925.03 (was 931.75); GNMT, where it wins, is unchanged.
    # 0.04 since session 14 (the shares add up to the budget; it charges its HEFT passes after
    # its solve: 0.17-0.6 units on the dnn inputs, the overrun out of the main solve's share).
    forced_cut_start_share: float = 0.04
    # LATENCY problems whose weights need several devices: share of the time budget the
    # placement LNS (solvers.scheduling.placement_lns) may spend re-placing the best start's
    # ops, each trial sequenced by HEFT; its schedule replaces the hint when shorter; 0 turns
    # it off.
    placement_lns_share: float = 0.2
    # LATENCY problems whose weights need several devices: at most this share of the budget
    # turns the segment-run DP's runs into placements, sequenced by HEFT; the shortest
    # replaces the hint when shorter, before the placement LNS (solvers.scheduling.run_start;
    # it charges counted units, 0.03-0.05 on the dnn layer graphs: 0.02 of 3.36 units caps it at
    # 0.067, and what it leaves flows on); 0 turns it off.
    run_start_share: float = 0.02
    # ... and after it, at most this share (with what the segment-run start left) for the
    # traced-runs start (solvers.scheduling.traced_start: the bound's own runs realised; ResNet-50
    # layers 994.85 -> 947.19 ms with 0.05-0.10 units); 0 turns it off
    traced_start_share: float = 0.04
    # LATENCY problems whose weights need several devices and that the part bound cuts into
    # parts: at most this share of the budget for the stitched parts' start after the placement
    # LNS (solvers.scheduling.part_start; Inception-V3 layers 955.93 -> 954.23 ms with 0.235 units;
    # 0.07 until session 14, when the shares began to add up to the budget; 0.02 since the
    # traced-runs start took 0.04: on ResNet-50 operators it wins with what the module re-solve
    # leaves, 0.7-0.9 units)
    part_start_share: float = 0.02
    # LATENCY problems above max_full_ops whose weights need several devices: this share, with
    # what the start stages before it left, for the part re-solve (solvers.scheduling.part_resolve).
    # 0 by default: a share of its own came out of the leftover bound stage (ResNet-50
    # operators' part bound 373.11 -> 334.32 ms when it had 0.2)
    part_resolve_share: float = 0.0
    # LATENCY problems whose weights need several devices: share of the time budget spent
    # re-solving the best start's modules (the segments between clean cut ops) exactly with
    # CP-SAT, the rest of the plan fixed, after the placement LNS; a module's schedule is spliced
    # in only when the whole plan is shorter (solvers.scheduling.module_resolve); 0 turns it off.
    # 0.2 (0.3 until session 14, when the shares began to add up to the budget: the stages
    # before it leave it what they do not use, 0.1-0.2 more on Inception-V3 layers).
    module_resolve_share: float = 0.21
    # LATENCY problems whose weights need several devices, not proven optimal: share of what
    # the main solve left of the budget spent on the bound afterwards (more forced-cut probes,
    # or the pinned moves still open; see CpSatScheduler._leftover_bound); 0 turns it off.
    leftover_bound_share: float = 1.0
    # Of that leftover amount, kept from the part bound for realising its relaxations as parts of
    # the plan (solvers.scheduling.relaxed_parts_start; HEFT passes and CP-SAT with the placement
    # fixed): on ResNet-50 operators the part bound's link pass otherwise takes all that is left.
    relaxed_parts_share: float = 0.05
    # Segments with fewer ops than this keep their cheap bound and use HEFT.
    segment_min_ops: int = 4
    # segment_schedule solves windows of consecutive segments with at least this many ops.
    segment_window_ops: int = 24
    # Break symmetry among interchangeable devices of equal device_class.
    symmetry_breaking: bool = True
    # LATENCY: when the hint is within this relative distance of the lower bound, first
    # try "makespan = bound" as a feasibility problem (tight windows propagate far better
    # than an open objective); 0 turns it off.
    bound_probe_max_gap: float = 0.05
    # Share of the deterministic budget the bound probe may use.
    bound_probe_share: float = 0.25
    # LATENCY problems with a fixed placement and free transfers (P|prec|Cmax such as the
    # STG set, job shops; see listsearch.fixed_placement): op placements the list search
    # may spend per second of the time limit before CP-SAT starts from its schedule
    # (counted, not timed: ~5-15 us each on a busy core); 0 turns it off.
    list_search_work_per_second: int = 20_000
    # ... and at most this many in all.
    list_search_max_work: int = 200_000
    # Also run it when every device used has one stream (job shops). Off: there CP-SAT's
    # NoOverlap reasoning is strong and the search did not pay (ft10: 1,047 after 200,000
    # placements, 1.2 s, against the optimum 930 that CP-SAT proves).
    list_search_single_stream: bool = False


def forced_stage_shares(cfg: CpSatOptions) -> tuple[tuple[str, float], ...]:
    """The stages before the main solve on a LATENCY problem whose weights need several devices,
    in the order they run, with their shares of the budget (cumulative there: see
    :mod:`solvers.scheduling.cpsat.stage_budget`); the defaults add up to ``1 - main_share``.

    Examples
    --------
    >>> cfg = CpSatOptions()
    >>> round(sum(share for _, share in forced_stage_shares(cfg)) + cfg.main_share, 9) <= 1
    True
    """
    return (("segment_bound", cfg.forced_segment_bound_share), ("pinned_move_bound", cfg.pinned_move_share),
            ("forced_cut_bound", cfg.forced_cut_share), ("forced_cut_start", cfg.forced_cut_start_share),
            ("run_start", cfg.run_start_share), ("traced_start", cfg.traced_start_share),
            ("placement_lns", cfg.placement_lns_share), ("module_resolve", cfg.module_resolve_share),
            ("part_start", cfg.part_start_share), ("part_resolve", cfg.part_resolve_share))


def as_budget(budget: Budget | float, options: SolveOptions, cfg: CpSatOptions) -> Budget:
    """``budget`` itself, or a budget of that many units with the net of ``options``.

    Examples
    --------
    >>> as_budget(2.0, SolveOptions(), CpSatOptions()).total
    2.0
    """
    if isinstance(budget, Budget):
        return budget
    whole = Budget.of(options, calibration(cfg))
    return replace(whole, total=max(1e-3, float(budget)) if whole.deterministic else whole.total)


def calibration(cfg: CpSatOptions) -> Calibration:
    """The scheduling family's calibration, or the rate ``cfg`` sets.

    Examples
    --------
    >>> calibration(CpSatOptions()) is SCHEDULING, calibration(CpSatOptions(dtime_per_second=2.0)).units_per_second
    (True, 2.0)
    """
    if cfg.dtime_per_second is None:
        return SCHEDULING
    return Calibration("scheduling", cfg.dtime_per_second, per_worker=True)


def inner_config(cfg: CpSatOptions) -> CpSatOptions:
    """The configuration of the per-segment solves: no nested segment stages.

    Examples
    --------
    >>> inner = inner_config(CpSatOptions(max_full_ops=50))
    >>> inner.max_full_ops, inner.segment_bound_share, inner.segment_schedule_share
    (50, 0.0, 0.0)
    """
    return CpSatOptions(max_full_ops=cfg.max_full_ops, dtime_per_second=cfg.dtime_per_second,
                        symmetry_breaking=cfg.symmetry_breaking, interleave_search=cfg.interleave_search,
                        segment_bound_share=0.0, segment_schedule_share=0.0,
                        forced_cut_share=0.0, forced_cut_start_share=0.0, placement_lns_share=0.0, run_start_share=0.0,
                        part_start_share=0.0, traced_start_share=0.0, part_resolve_share=0.0,
                        module_resolve_share=0.0,
                        pinned_move_share=0.0, leftover_bound_share=0.0)
