"""The CP-SAT scheduler: joint placement and scheduling of a dataflow graph, exact for small
and mid-size graphs.

One job: :class:`CpSatScheduler`, the sequence of stages around the model of
:mod:`solvers.scheduling.cpsat.model` (hint, list search, segment bound and schedule, bound
probe, main solve) and how they share one budget.

Notes
-----
**Large graphs (decomposition).** Above ``CpSatOptions.max_full_ops`` ops (default 400)
the placement of the hint (HEFT's, or ``options.hint``) is fixed and CP-SAT solves only
the sequencing (every ``x`` is constant, so the model is a job shop with transfers). Its
solution is never worse than the hint (the hint is a feasible, hinted solution of the
restricted model). Its proven bound is for the restricted model only, so the result
reports only ``lower_bound(problem)`` as the bound.

**Bounds.** ``lower_bound(problem)`` (critical path, total work, fractional load,
placement- and memory-aware paths, the LP relaxation, the segment chain: see
:mod:`solvers.scheduling.bounds`) is a constraint on the objective. For LATENCY,
:func:`segment_lower_bound` then spends up to ``segment_bound_share`` of the budget proving
bounds with CP-SAT on the segments between cut ops (layers), one proof per group of
same-shape segments, joined by the segment chain (and, where the main span dropped side
sources, the end of the first cut ops they feed, proved on their prefixes:
:mod:`solvers.scheduling.side_ends`). The result's bound is ``max(that, CP-SAT's
best bound)``; in the sequencing-only mode CP-SAT's own bound is for the restricted model
and is not used. When the weights need several devices,
:func:`~solvers.scheduling.forced_cuts.forced_cut_bound` then spends up to
``forced_cut_share`` of the budget refuting makespans of the forced-cut relaxation (every
memory-feasible placement with the transfers of the edges it cuts, without contention).
Before that, on the same problems, :func:`~solvers.scheduling.pinned_moves.pinned_move_bound`
spends up to ``pinned_move_share`` proving what a device change at a clean cut op costs with
link and stream contention (:mod:`solvers.scheduling.pinned_moves`), priced into the clean
segment runs. When moves are still open after it and the first forced-cut probe (1/32 above
the bound) is neither refuted nor answered, the probes give up and the rest of their share
resumes the open pinned moves (the proofs are kept in a memo, so none is proved twice).

**Stage budget.** On LATENCY problems whose weights need several devices the stages before the
main solve (:func:`~solvers.scheduling.cpsat.options.forced_stage_shares`) add up to at most
``1 - main_share`` of the budget: the bound stages (segment bound, pinned moves, forced cuts) get
their shares, and what they leave stays for the main solve and the leftover bound after it (on
ResNet-50 layers the move arrivals there raise the bound 873.08 -> 903.54 ms); the start stages
(forced-cut start, segment runs, placement LNS, module re-solve, stitched parts) share theirs
cumulatively (:mod:`solvers.scheduling.cpsat.stage_budget`): each gets its share and what the
earlier ones left, an overrun comes out of the main solve's share, and the main solve gets what
is left (``stats["stage_budget"]`` is ``"cumulative"``; ``stats["stages"]`` has each stage's
units). Elsewhere a stage gets its share of the whole budget or what is left, and the main solve
at least a fifth.

**Leftover bound.** The main solve on these graphs often fixes the hint's placement and ends
long before its share (ResNet-50 operators: it used 0.0002 units and left 1.02 of 3.36).
After it, on the same memory-forced problems when the result is not proven,
``leftover_bound_share`` of what is left goes to more forced-cut probes from the bound (when
the first probes refuted something; their first step 1/128 above it) or to the pinned moves
still open or whose weight options are (``stats["leftover_bound"]``, :meth:`CpSatScheduler._leftover_bound`). Each is one
of the sound bounds above, so the result's bound stays a bound; the plan is not touched.
Where the probes refuted nothing, once the pinned moves are settled (before the probes, or
after the moves resumed there) the moves' sink-side weight options come first
(:mod:`solvers.scheduling.move_arrivals`, ``stats["move_arrival_*"]``).

**Forced-cut start (a start candidate).** Right after that bound, up to
``forced_cut_start_share`` of the budget minimises the same relaxation from the hint's placement,
and every placement it and the bound's probes produced is sequenced by HEFT on the true problem
(:func:`~solvers.scheduling.forced_start.forced_cut_start`). The shortest replaces the hint
only when shorter, so it never makes the result worse; ``stats["start_candidates"]`` has the
objective of each start by source and ``stats["hint_source"]`` the one the main solve began
from (``"forced-cut relaxation"`` when it won). Measured (``benchmarks/dnn.py --objective
latency --time-limit 60``, 2 busy cores): with ``--search deterministic`` (load 6-12) it won on
GNMT (206.9 -> 200.7 ms, then proven optimal), Inception-V3 layers (1,224.6 -> 1,221.7) and
BERT-L 3, tied on BERT-L 6; with until-limit search (load 5-6) also Inception-V3 (1,207.2, CP-SAT
then 1,171.9) and BERT-L 6. On BERT-L 12 and the ResNet-50 graphs it lost to the contiguous split.

**Segment-run start (a start candidate).** Then, on the same memory-forced LATENCY problems,
:func:`~solvers.scheduling.run_start.run_start` (at most ``run_start_share`` of the budget, in
counted units) traces the segment-run DP back (the bound's own runs of cut ops on one device,
their device changes priced by the pinned moves proved so far), turns each trace into
placements and sequences them with HEFT; the shortest replaces the hint only when shorter
(``stats["start_candidates"]["segment runs"]``, ``stats["run_start_*"]``). Measured on the dnn
layer graphs it does not win: its placements sequence to 1,470 ms on ResNet-50 layers and 1,701
ms on Inception-V3 (the bound's 808 and 803 price a run of CPU ops as if it spread over the CPU
pool, and the ops between runs without contention), far above the contiguous split's LNS
(about 1,000); it costs 0.02-0.05 units there (benchmarks/dnn.py).

**Traced-runs start (a start candidate).** Right after it, with at most ``traced_start_share``
of the budget (and what the segment-run start left) (:mod:`solvers.scheduling.traced_start`): the same DP with the pinned moves and
both sides' weight options (the bound's own runs, and runs whose weight cells are charged at
their upper edges), traced back, each change's interior split by its pinned move's three-role
model within the room the runs leave, sequenced by HEFT and, where that is near the incumbent,
by CP-SAT with the placement fixed; the shortest replaces the hint only when shorter, before the
placement LNS and the module re-solve (``stats["traced_start_*"]``). ResNet-50 layers: 947.19
ms in 0.10 units, where the stages after it had stalled at 994.85; on Inception-V3 it loses
(1,365.6) and stops after its first realisation (0.04 units).

**Joint-cell path start (a start candidate).** Right before the traced runs, within their
allowance (the traced runs get what it leaves): the joint-cell DP's own path
(:mod:`solvers.scheduling.joint_path_start`, the joint cells proved by the arrival stage right
after the pinned moves), each change's interior within the cell the path charged and the bytes
its runs leave, sequenced by HEFT and CP-SAT with the placement fixed; the shortest replaces the
hint only when shorter, and where it meets the bound nothing after it runs and the main solve
returns it as OPTIMAL. ResNet-50 layers: 930.263 ms = the bound (was 947.185) in 0.017 units.

**Placement LNS (a start candidate).** Then, on the same memory-forced LATENCY problems, up to
``placement_lns_share`` of the budget goes to :func:`~solvers.scheduling.placement_lns.placement_lns`
from the best start so far (the caller's warm start, HEFT's or the forced-cut candidate): it
re-places windows of the order, the blocks on both sides of a critical transfer and fork
branches, sequences each trial with HEFT (counted HEFT passes, no clock), and its schedule
replaces the hint only when shorter (``stats["start_candidates"]["placement LNS"]``,
``stats["placement_lns"]``). It reaches placements no contiguous split has (a branch or a stretch
of the model on another device and back). Measured (``benchmarks/dnn.py --objective latency
--time-limit 60 --search deterministic``, load 9-13 on 2 cores): Inception-V3 1,132.1 -> 994.6 ms,
ResNet-50 layers 1,033.2 -> 1,003.2 (CP-SAT then sequences the LNS's placement), BERT-L 12
657.4 -> 655.8 (gap 4.80%), ResNet-50 operators 458.2 -> 447.8; see the benchmark module. Its
trials are sequenced by the upward ranks of their own placement (:class:`~solvers.scheduling.heft.PlacedRanks`),
not HEFT's device averages, and a trial stops once it cannot end by the incumbent (so about twice
as many fit the share): Inception-V3 994.6 -> 966.3 (gap 16.85%), ResNet-50 layers 1,003.2 ->
999.8, ResNet-50 operators 447.8 -> 447.5, BERT-L 3 224.12 -> 224.04, the rest unchanged (same
benchmark, load 9-14). Once it stalls it sweeps *routes*: the receivers of a critical transfer
that queues behind another on one link move to a third device, so the two leave over two links
(placement_lns, **Routes**; see benchmarks/dnn.py for what it gained).

**Module re-solve (a start candidate).** Then, on the same problems, up to
``module_resolve_share`` of the budget goes to
:func:`~solvers.scheduling.module_resolve.module_resolve` from the best start so far: each
module between two clean cut ops (short ones merged, the head and tail included) is solved by
CP-SAT over placement and sequencing with the rest of the plan fixed (its entry and exit on
their devices, the memory the rest leaves), in passes of growing per-module units over the
modules not yet proved; a module's schedule is spliced in only when the whole plan is shorter
and valid (``stats["start_candidates"]["module re-solve"]``, ``stats["module_resolve"]``). The
LNS sequences each trial with HEFT and moves windows of the order, so a module's best split over
several devices is a joint move it rarely draws: on Inception-V3 its 955.93-ms plan pays about
37 ms over the exact module minima (docs/bounds.md, session 12); see benchmarks/dnn.py for what
the stage gained.

**Part re-solve (a start candidate).** Then, on the same problems when they have more than
``max_full_ops`` ops (the main solve would only re-sequence the placement it gets),
``part_resolve_share`` of the budget (0 by default) and what the start stages before it left go to
:func:`~solvers.scheduling.part_resolve.part_resolve`: each part between the part bound's cut
ops (a CNN's stages), the ones the stitched parts did not shorten first, then largest gap to its
floor first, searched by a nested scheduler (one
worker, no hint; the forced-cut bound, its start and the placement LNS) in the room the
incumbent's other parts leave, spliced in only when the whole plan is shorter and valid
(``stats["part_resolve_*"]``). The LNS on the whole graph stays in the incumbent's
neighbourhood; a part searched afresh does not (ResNet-50 operators: see the module).

**Never worse than the hint.** ``objective <= hint objective`` is a constraint and the
hint is complete; if CP-SAT returns nothing (or nothing better) in time, the hint is
returned as FEASIBLE with the proven bound, and ``stats["returned"]`` says so.

**Determinism.** The search budget is deterministic time, not wall time: one
:class:`solvers.budget.Budget` of :data:`solvers.budget.SCHEDULING` x ``time_limit_s`` (x
:data:`~solvers.budget.PARALLEL_SPEEDUP` for several workers), fixed up front and split
between segment proofs, segment windows, the bound probe and the main solve by the
deterministic time each actually charged (never by elapsed wall time; nested solves get child
budgets). The wall clock is only a safety net (3 x the limit + 5 s, a timer that stops the
search, so ``stats["stopped_by"] == "wall_clock"`` says exactly when it fired and the run may
not repeat). Interleaved search checks the limit between batches, so a solve may overshoot
its share (the demo's repeated-layer proof used 4.3 units of a 0.6 share); the overshoot is
deterministic too, and the main solve always gets at least a fifth of the budget.
``interleave_search`` is always on in deterministic search: CP-SAT then runs its portfolio
(LNS and LP workers included) in deterministic batches for any ``num_workers``, which
OR-Tools documents as the way to make multi-worker search reproducible (plain parallel
search is not: see google/or-tools issues #2159, #4783). It also helps with one worker:
plain single-worker search is one strategy without LNS and found no improvement on a 218-op
model where the interleaved portfolio did. ``options.search == "until-limit"`` gives every
stage its share of the wall clock instead (several workers then run CP-SAT's plain parallel
portfolio); never reproducible. Presolve probing is switched off
(``cp_model_probing_level = 0``): it took 10 s of wall time for 0.9 dtime on a 218-op model.

**Bound probe (LATENCY).** When the hint is within ``bound_probe_max_gap`` of the lower
bound, the model is first solved with ``makespan == bound`` for ``bound_probe_share`` of
the deterministic budget: a schedule found there is optimal; a proof of infeasibility
raises the bound by one cycle; neither leaves everything as it was. On the STG set (one
device, p streams) this closes most instances whose optimum equals max(critical path,
ceil(work / p)) that the open search misses, at a small cost elsewhere.

**List search first (fixed placement, LATENCY).** When every op has one allowed device and
transfers cost nothing (:func:`~solvers.scheduling.listsearch.fixed_placement`: P|prec|Cmax
on one multi-stream device, job shops), :func:`~solvers.scheduling.listsearch.list_search`
(serial SGS with double justification, a seeded local search over priority lists) runs
before any CP-SAT solve, for ``list_search_work_per_second`` op placements per second of
the time limit (at most ``list_search_max_work``; counted, so deterministic), stopping at
the lower bound; its schedule replaces the hint when shorter. It runs only when some device
has several streams (cumulative resources, where CP-SAT is weakest), unless
``list_search_single_stream``. On the STG set it reaches the
static lower bound on 1,338 of 1,440 instances in milliseconds, where CP-SAT's open search
from HEFT, at 0.05 dtime per second, ended 1-2 cycles above the optimum on 16 tight
packings (no idle cycle allowed at the bound), and the bound probe's share (0.06 dtime at
5 s) was too small to find them: CP-SAT's cumulative search from the fixed bound did not
find some of them in 10 s of 2 workers either. Through the planner (5 s, 2 workers) all
1,440 then match the published optimum or bounds, 99.3 % proven, 0.12 s on average and at
most 4.2 s (CP-SAT's batches overshooting their 0.25 dtime on one instance), identical
in two runs.

**Segments (layered graphs, LATENCY).** Before the main solve, two decompositions along
the cut ops (see :mod:`solvers.scheduling.bounds`): :func:`segment_lower_bound` proves one
bound per group of same-shape segments (a repeated layer is proved once, on its
element-wise floor), and :func:`segment_schedule` solves windows of consecutive segments
(closed at cut ops no edge jumps over) one after the other, each with its source pinned
where the previous window put it, glues them in time and re-times the whole, giving the
hint when it beats HEFT. Inner solves get child budgets (their share of what is left, the
same net), so they stay reproducible.

**Measured** (2 busy cores, OR-Tools 9.15, scripts not in the repo): STG 50-task
instances (rand0000/1/2/5 on 2, 4, 8 processors, one device with p streams) all proven
at the published optimum, in at most 1.1 s; job shop (one device per machine, pinned
ops, zero-cycle links) ft06 = 55 proven at once, ft10 = 930 proven in 18-30 s with one
worker; a 1,000-op random DAG on 4 devices returns a valid plan in 42-52 s of a 60-s
budget (sequencing mode; HEFT's plan, 1.7 % above the bound, was not improved); a 218-op transformer-like DAG on 2+2 devices
(3x speed ratio, all-to-all links) ends at 972,675 vs. a proven 949,290 (gap 2.4 %) in
21-23 s of a 30-s budget on 2 workers, identically on repeated runs (HEFT: 980,614; the
critical path alone: 847,916; without the segment bound the gap stayed at ~9 %).
Wall-time-derived budgets reached 1.3 % but did not repeat.

References
----------
.. [1] L. Perron, F. Didier, "CP-SAT", Google OR-Tools, https://developers.google.com/optimization
.. [2] D. Krupke, "The CP-SAT Primer", https://d-krupke.github.io/cpsat-primer/
"""
from __future__ import annotations

import time
from dataclasses import replace

from solvers.budget import Budget
from solvers.core import Accepting, SolveOptions, SolveResult, Status
from solvers.scheduling.cpsat.options import CpSatOptions, calibration
from solvers.scheduling.cpsat.search import SOLVER_NAME, solve
from solvers.scheduling.cpsat.stage_budget import StageShares
from solvers.scheduling.cpsat.segments import segment_lower_bound, segment_schedule
from solvers.scheduling.forced_cuts import forced_cut_bound, memory_forces_cuts
from solvers.scheduling.forced_start import SOURCE as FORCED_CUT_SOURCE
from solvers.scheduling.joint_cells import joint_cell_bound
from solvers.scheduling.joint_path_start import SOURCE as JOINT_PATH_SOURCE
from solvers.scheduling.joint_path_start import joint_path_start
from solvers.scheduling.move_arrivals import ARRIVAL_SHARE, ARRIVAL_STAGE_SHARE, move_arrival_bound
from solvers.scheduling.pinned_moves import pinned_move_bound
from solvers.scheduling.forced_start import forced_cut_start
from solvers.scheduling.module_resolve import SOURCE as MODULE_RESOLVE_SOURCE
from solvers.scheduling.module_resolve import module_resolve
from solvers.scheduling.part_bound import LEFTOVER_SHARE as PART_BOUND_SHARE
from solvers.scheduling.part_bound import part_bound
from solvers.scheduling.part_resolve import SOURCE as PART_RESOLVE_SOURCE
from solvers.scheduling.part_resolve import part_resolve
from solvers.scheduling.part_start import SOURCE as PART_START_SOURCE
from solvers.scheduling.part_start import part_start
from solvers.scheduling.placement_lns import SOURCE as PLACEMENT_LNS_SOURCE
from solvers.scheduling.placement_lns import placement_lns
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.relaxed_parts_start import relaxed_parts_start
from solvers.scheduling.run_start import SOURCE as RUN_START_SOURCE
from solvers.scheduling.run_start import run_start
from solvers.scheduling.traced_start import SOURCE as TRACED_START_SOURCE
from solvers.scheduling.traced_start import traced_start
from solvers.scheduling.validate import objective_value

__all__ = ["CpSatScheduler"]

# The leftover stage runs only when the main solve left at least this many units (less proves
# nothing on the graphs it is for: one forced-cut probe there takes 0.05-0.2 units).
_LEFTOVER_MIN_UNITS = 0.05

# The leftover probes resume from a floor the first ones pushed as far as they could: their
# first probe asks for 1/128 above it, not the first stage's 1/32 (ResNet-50 operators, 1.0
# unit from 334.46 ms: 337.07 at 1/32, 340.34 at 1/128 and at 1/512).
_RESUMED_STEP = 128


def _open_moves(stats: dict) -> bool:
    """Whether the pinned-move stage left some move unsettled (not proved to its optimum)."""
    return stats.get("pinned_moves", 0) > stats.get("pinned_moves_settled", 0)


def _open_weights(stats: dict) -> bool:
    """Whether the pinned-move stage left some settled move without its weight options
    (:mod:`~solvers.scheduling.move_weights`)."""
    return stats.get("move_weights", 0) > stats.get("move_weights_done", 0)


def _segment_floor(options: SolveOptions):
    """The part bound's ``part_floor``: CP-SAT's segment proofs on a part, on one worker."""
    one = replace(options, num_workers=1)
    return lambda part, budget: segment_lower_bound(part, one, budget)[0]


def _offered(problem: SchedulingProblem, stats: dict, hint: SchedulingSolution | None, hint_source: str,
             found: SchedulingSolution | None, source: str) -> tuple[SchedulingSolution | None, str]:
    """A start stage's schedule ``found`` offered against the best start so far: its objective
    goes to ``stats["start_candidates"]`` under ``source``; (found, source) when it is strictly
    shorter than ``hint`` (or there is none), else (hint, hint source)."""
    hint_obj = objective_value(problem, hint) if hint is not None else None
    found_obj = objective_value(problem, found) if found is not None else None
    stats.setdefault("start_candidates", {hint_source: hint_obj})[source] = found_obj
    if found_obj is not None and (hint_obj is None or found_obj < hint_obj):
        stats.update(hint_source=source, hint_objective=found_obj)
        return found, source
    return hint, hint_source


def _memo_start(start, name: str, source: str, problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                amount: float, hint: SchedulingSolution | None, hint_source: str, stats: dict,
                memo: dict) -> tuple[SchedulingSolution | None, str]:
    """A start realised from the pinned moves' proofs in ``memo`` (``start``: the traced runs'
    or the joint-cell path's, called as ``start(problem, budget, memo, options, incumbent)``)
    within ``amount``, charged as ``name``: (hint, hint source), its schedule only when shorter
    than ``hint`` (``source``); unchanged where it does not apply."""
    child = budget.child(amount)
    found, start_stats = start(problem, child, memo, options,
                               objective_value(problem, hint) if hint is not None else None)
    if not start_stats:
        return hint, hint_source
    budget.absorb(child, name)
    stats.update(start_stats)
    return _offered(problem, stats, hint, hint_source, found, source)


class CpSatScheduler(Accepting):
    """Joint placement and scheduling with CP-SAT (see the module Notes).

    Parameters
    ----------
    config : CpSatOptions, optional

    Examples
    --------
    Splitting a fork across two devices pays off when the transfer is cheap:

    >>> p = SchedulingProblem(((1, 1), (5, 5), (5, 5)), ((0, 1, 8), (0, 2, 8)),
    ...                       (1, 1), ((-1, 0), (0, -1)), ((1,), (1,)))
    >>> r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5))
    >>> r.status.value, r.objective, r.bound
    ('OPTIMAL', 7, 7)
    """

    name = SOLVER_NAME
    problem_type = SchedulingProblem

    def __init__(self, config: CpSatOptions = CpSatOptions()) -> None:
        self.config = config

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        return self._solve(problem, options)

    def _solve(self, problem: SchedulingProblem, options: SolveOptions,
               budget: Budget | None = None) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        # the budget is fixed up front (never derived from elapsed wall time; see solvers.budget)
        if budget is None:
            budget = Budget.of(options, calibration(self.config), t0)
        memo: dict = {}  # the pinned moves' proofs, resumed by the leftover stage

        def stages(problem, options, budget, hint, hint_source, bound, stats):
            return self._segment_stages(problem, options, budget, hint, hint_source, bound, stats, memo)

        result = solve(problem, options, budget, self.config, t0, stages)
        return self._leftover_bound(problem, options, budget, result, memo)

    def _segment_stages(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                        hint: SchedulingSolution | None, hint_source: str, bound: int, stats: dict,
                        memo: dict | None = None):
        """The segment bound and the segment schedule (LATENCY, before the probe): (hint, hint
        source, bound); ``stats`` receives their figures, ``memo`` the pinned moves' proofs."""
        cfg = self.config
        hint_obj = objective_value(problem, hint) if hint is not None else None
        split = memory_forces_cuts(problem)
        forced = problem.objective is Objective.LATENCY and split
        shares = StageShares(budget)  # the bound stages: their own shares, what they leave stays
        if forced:
            stats["stage_budget"] = "cumulative"

        def settled() -> bool:
            return hint is not None and hint_obj <= bound

        bound = self._first_bounds(problem, options, budget, shares, hint_obj, bound, stats, memo, forced)
        amount = shares.allowance(cfg.forced_cut_share)
        seeds: list[tuple[int, ...]] = []
        if cfg.forced_cut_share > 0 and split and not settled():
            bound = self._forced_cut_stage(problem, options, budget, amount, hint, bound, stats, memo, seeds)
        # the start stages share theirs cumulatively (stage_budget); what the bound stages left
        # stays for the main solve and the leftover bound after it
        shares = StageShares(budget, cumulative=forced)
        amount = shares.allowance(cfg.forced_cut_start_share)
        if cfg.forced_cut_share > 0 and cfg.forced_cut_start_share > 0 and split and not settled():
            hint, hint_source = self._forced_cut_start(problem, options, budget, amount, hint, hint_source,
                                                       tuple(seeds), stats)
            hint_obj = objective_value(problem, hint) if hint is not None else None
        amount = shares.allowance(cfg.run_start_share)
        if cfg.run_start_share > 0 and forced and not settled():
            hint, hint_source = self._run_start(problem, budget, amount, hint, hint_source, stats, memo)
            hint_obj = objective_value(problem, hint) if hint is not None else None
            if cfg.traced_start_share > 0 and memo is not None and not settled():
                # the joint-cell path first (it may meet the bound: then nothing after it runs);
                # the traced runs get what it left of their share
                hint, hint_source = self._joint_path_start(problem, options, budget,
                                                           shares.allowance(cfg.traced_start_share),
                                                           hint, hint_source, stats, memo)
                hint_obj = objective_value(problem, hint) if hint is not None else None
            if cfg.traced_start_share > 0 and memo is not None and not settled():
                hint, hint_source = self._traced_start(problem, options, budget, shares.allowance(0.0),
                                                       hint, hint_source, stats, memo)
                hint_obj = objective_value(problem, hint) if hint is not None else None
        amount = shares.allowance(cfg.placement_lns_share)
        if cfg.placement_lns_share > 0 and hint is not None and split and not settled():
            hint, hint_source = self._placement_lns(problem, options, budget, amount, hint, hint_source, stats)
            hint_obj = objective_value(problem, hint)
        # module re-solves first: from the placement LNS's plan they reach Inception-V3 931.75 ms at
        # 60 s, from the stitched parts' (954.23) only 939.59; the parts stay a candidate after them
        amount = shares.allowance(cfg.module_resolve_share)
        if cfg.module_resolve_share > 0 and hint is not None and split and not settled():
            hint, hint_source = self._module_resolve(problem, options, budget, amount, hint, hint_source, stats)
            hint_obj = objective_value(problem, hint)
        amount = shares.allowance(cfg.part_start_share)
        before_parts = hint  # the part re-solve tries first the parts the stitched parts did not shorten
        if cfg.part_start_share > 0 and hint is not None and split and not settled():
            hint, hint_source = self._part_start(problem, options, budget, amount, hint, hint_source, stats)
            hint_obj = objective_value(problem, hint)
        # the part re-solve: its share (0 by default) and what the start stages before it left
        if problem.num_ops > cfg.max_full_ops and hint is not None and split and not settled():
            hint, hint_source = self._part_resolve(problem, options, budget, shares.allowance(cfg.part_resolve_share),
                                                   hint, hint_source, stats, before_parts)
            hint_obj = objective_value(problem, hint)
        if (hint_source == "heft" and cfg.segment_schedule_share > 0
                and problem.objective is Objective.LATENCY and not settled()):
            child = budget.child(shares.allowance(0.0 if forced else cfg.segment_schedule_share))
            glued = segment_schedule(problem, options, child, cfg)
            budget.absorb(child, "segment_schedule")
            if glued is not None and (hint is None or objective_value(problem, glued) < hint_obj):
                hint, hint_source = glued, "segments"
                hint_obj = objective_value(problem, hint)
                stats.update(hint_source=hint_source, hint_objective=hint_obj)
        return hint, hint_source, bound

    def _forced_cut_stage(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                          hint: SchedulingSolution | None, bound: int, stats: dict, memo: dict | None,
                          seeds: list) -> int:
        """The forced-cut bound with ``amount`` units (``seeds`` receives its placements for the
        forced-cut start); what its probes leave where they refute nothing goes to the open pinned
        moves, and the settled moves' arrival stage follows. The bound."""
        child = budget.child(amount)
        unsettled = memo is not None and _open_moves(stats)
        cut, cut_stats = forced_cut_bound(problem, options, child, floor=bound, hint=hint, found=seeds,
                                          contention=self.config.forced_cut_contention, give_up=unsettled)
        bound = max(bound, cut)
        stats.update(cut_stats, lower_bound=bound)
        if unsettled and not cut_stats.get("forced_cut_refuted") and child.left > 0:
            # the probes refute nothing here: what they leave goes to the open pinned moves
            moved, move_stats = pinned_move_bound(problem, options, child, memo)
            bound = max(bound, moved)
            stats.update(move_stats, lower_bound=bound, pinned_moves_resumed="forced_cut_share")
        budget.absorb(child, "forced_cut_bound")
        if unsettled:
            bound = self._settled_move_stage(problem, options, budget, bound, stats, memo)
        return bound

    def _first_bounds(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, shares: StageShares,
                      hint_obj: int | None, bound: int, stats: dict, memo: dict | None, forced: bool) -> int:
        """The segment bound and, where memory forces cuts, the pinned moves, each with its share
        of ``shares`` unless the hint (of objective ``hint_obj``) meets the bound: the bound."""
        cfg = self.config
        seg_share = cfg.forced_segment_bound_share if forced else cfg.segment_bound_share
        amount = shares.allowance(seg_share)
        if (seg_share > 0 and problem.objective is Objective.LATENCY
                and not (hint_obj is not None and hint_obj <= bound)):
            child = budget.child(amount)
            seg, seg_stats = segment_lower_bound(problem, options, child, cfg)
            budget.absorb(child, "segment_bound")
            bound = max(bound, seg)
            stats.update(seg_stats, lower_bound=bound)
        amount = shares.allowance(cfg.pinned_move_share)
        if (cfg.pinned_move_share > 0 and memory_forces_cuts(problem)
                and not (hint_obj is not None and hint_obj <= bound)):
            child = budget.child(amount)
            moved, move_stats = pinned_move_bound(problem, options, child, memo)
            budget.absorb(child, "pinned_move_bound")
            bound = max(bound, moved)
            stats.update(move_stats, lower_bound=bound)
            bound = self._settled_move_stage(problem, options, budget, bound, stats, memo)
        return bound

    def _leftover_bound(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                        result: SolveResult[SchedulingSolution], memo: dict) -> SolveResult[SchedulingSolution]:
        """What the main solve left of the budget (``leftover_bound_share`` of it), spent on the
        bound where memory forces cuts and the result is not proven: more forced-cut probes
        from the bound when they refuted something before, else the open pinned moves
        (resumed from ``memo``). The result with the larger bound and the stage's figures."""
        cfg = self.config
        if (cfg.leftover_bound_share <= 0 or result.status is not Status.FEASIBLE or result.solution is None
                or result.bound is None or not memory_forces_cuts(problem) or budget.wall_expired()):
            return result
        amount = cfg.leftover_bound_share * budget.left
        if amount < _LEFTOVER_MIN_UNITS * (1 if budget.deterministic else 1 / budget.rate):
            return result
        stats = dict(result.stats)
        bound = int(result.bound)
        if stats.get("forced_cut_refuted"):
            relaxed: dict = {}
            kept = cfg.relaxed_parts_share * amount  # the part bound's link pass takes all it is given
            bound, amount = self._part_bound(problem, options, budget, bound, amount - kept, stats, relaxed)
            result, amount = self._relaxed_parts(problem, options, budget, result, relaxed, amount + kept, stats)
        if not (_open_moves(stats) or _open_weights(stats)):  # whatever the probes did (the bound must not
            # depend on the start offered, which the probes see)
            bound, amount = self._arrival_bound(problem, options, budget, bound, amount, stats, memo)
        child = budget.child(amount)
        if stats.get("forced_cut_refuted") or not (_open_moves(stats) or _open_weights(stats)):
            found, part = forced_cut_bound(problem, options, child, floor=bound, hint=result.solution,
                                           contention=cfg.forced_cut_contention, first_step=_RESUMED_STEP)
            kind = "forced_cut_bound"
        else:
            found, part = pinned_move_bound(problem, options, child, memo)
            kind = "pinned_move_bound"
        budget.absorb(child, "leftover_bound")
        if kind == "pinned_move_bound":  # the moves settled here: their arrivals get what the proofs left
            bound = self._arrival_bound(problem, options, budget, bound, amount - child.used, stats, memo)[0]
        bound = min(max(bound, found), int(result.objective))
        stats.update(budget.stats(), lower_bound=max(stats.get("lower_bound", 0), bound),
                     leftover_bound={"stage": kind, "units": round(child.used, 6), "bound": found,
                                     **{k: v for k, v in part.items() if k != kind}})
        status = Status.OPTIMAL if bound >= result.objective else result.status
        return replace(result, status=status, bound=bound, stats=stats)

    @staticmethod
    def _arrival_bound(problem: SchedulingProblem, options: SolveOptions, budget: Budget, bound: int,
                       amount: float, stats: dict, memo: dict) -> tuple[int, float]:
        """The pinned moves with both sides' weight options
        (:mod:`solvers.scheduling.move_arrivals`) with ``ARRIVAL_SHARE`` of ``amount``, once the
        moves are settled: (the larger bound, what is left of ``amount``). Uses nothing where
        no settled move enters a memory-limited pool."""
        if amount <= 0 or budget.wall_expired():
            return bound, amount
        child = budget.child(ARRIVAL_SHARE * amount)
        found, arrival_stats = move_arrival_bound(problem, options, child, memo)
        if not arrival_stats:
            return bound, amount
        joint, joint_stats = joint_cell_bound(problem, options, child, memo)
        budget.absorb(child, "move_arrival_bound")
        stats.update({**arrival_stats, **joint_stats},
                     move_arrival_units=round(stats.get("move_arrival_units", 0.0) + child.used, 6))
        return max(bound, found, joint), max(0.0, amount - child.used)

    def _settled_move_stage(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, bound: int,
                            stats: dict, memo: dict | None) -> int:
        """Once the pinned moves and their weight options are settled, the moves' sink-side
        options and joint cells (:meth:`_arrival_bound`) with ``ARRIVAL_STAGE_SHARE`` of the
        budget, right after the moves: the bound then never depends on the start offered (the
        leftover stage, which runs only when the main solve leaves units, resumes what this one
        did not finish). The larger bound."""
        if memo is None or _open_moves(stats) or _open_weights(stats) or "move_arrival_bound" in stats:
            return bound
        found, _ = self._arrival_bound(problem, options, budget, bound, ARRIVAL_STAGE_SHARE * budget.total, stats,
                                       memo)
        if found > bound:
            stats.update(lower_bound=found)
        return found

    @staticmethod
    def _part_bound(problem: SchedulingProblem, options: SolveOptions, budget: Budget, bound: int,
                    amount: float, stats: dict, relaxed: dict | None = None) -> tuple[int, float]:
        """The part bound (:mod:`solvers.scheduling.part_bound`) with ``PART_BOUND_SHARE`` of the
        leftover ``amount``, run where the forced-cut probes refuted something (the cuts matter):
        (the larger bound, what is left of ``amount`` for the leftover stage). Uses nothing where
        no part cut applies, so the leftover stage is then unchanged."""
        child = budget.child(PART_BOUND_SHARE * amount)
        found, part_stats = part_bound(problem, options, child, floor=bound, part_floor=_segment_floor(options),
                                       relaxed=relaxed)
        if part_stats:
            budget.absorb(child, "part_bound")
            stats.update(part_stats, part_bound_units=round(child.used, 6))
        return max(bound, found), max(0.0, amount - child.used)

    @staticmethod
    def _relaxed_parts(problem: SchedulingProblem, options: SolveOptions, budget: Budget,
                       result: SolveResult[SchedulingSolution], relaxed: dict, amount: float,
                       stats: dict) -> tuple[SolveResult[SchedulingSolution], float]:
        """The part bound's relaxation solutions (``relaxed``) realised as parts of the plan
        (:mod:`solvers.scheduling.relaxed_parts_start`) within ``amount``, on one worker: (the
        result with the shorter valid plan, what is left of ``amount``). The plan is only ever
        replaced by a shorter valid one, so the bound after it stays a bound."""
        if not relaxed or amount <= 0 or budget.wall_expired():
            return result, amount
        child = budget.child(amount)
        found, part_stats = relaxed_parts_start(problem, result.solution, relaxed, replace(options, num_workers=1),
                                                child)
        if not part_stats:
            return result, amount
        budget.absorb(child, "relaxed_parts")
        stats.update(part_stats)
        value = objective_value(problem, found)
        if value < result.objective:
            result = replace(result, solution=found, objective=value)
        return result, max(0.0, amount - child.used)

    def _forced_cut_start(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                          hint: SchedulingSolution | None, hint_source: str, seeds: tuple[tuple[int, ...], ...],
                          stats: dict) -> tuple[SchedulingSolution | None, str]:
        """The forced-cut relaxation's placement, sequenced, as a start candidate: (hint, hint
        source), the candidate only when shorter than ``hint``; ``stats["start_candidates"]``
        gets every candidate's objective by source."""
        child = budget.child(amount)
        candidate, cand_stats = forced_cut_start(problem, options, child, hint, seeds)
        budget.absorb(child, "forced_cut_start")
        stats.update(cand_stats)
        hint_obj = objective_value(problem, hint) if hint is not None else None
        cand_obj = objective_value(problem, candidate) if candidate is not None else None
        stats["start_candidates"] = {hint_source: hint_obj, FORCED_CUT_SOURCE: cand_obj}
        if cand_obj is not None and (hint_obj is None or cand_obj < hint_obj):
            stats.update(hint_source=FORCED_CUT_SOURCE, hint_objective=cand_obj)
            return candidate, FORCED_CUT_SOURCE
        return hint, hint_source

    def _run_start(self, problem: SchedulingProblem, budget: Budget, amount: float, hint: SchedulingSolution | None,
                   hint_source: str, stats: dict, memo: dict | None) -> tuple[SchedulingSolution | None, str]:
        """The segment-run DP's placements, sequenced, as a start candidate (the pinned moves'
        proofs in ``memo`` price its device changes): (hint, hint source), the candidate only
        when shorter than ``hint``; ``stats["start_candidates"]`` gets its objective."""
        child = budget.child(amount)
        found, run_stats = run_start(problem, child, memo)
        budget.absorb(child, "run_start")
        stats.update(run_stats)
        return _offered(problem, stats, hint, hint_source, found, RUN_START_SOURCE)

    @staticmethod
    def _joint_path_start(problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                          hint: SchedulingSolution | None, hint_source: str, stats: dict,
                          memo: dict) -> tuple[SchedulingSolution | None, str]:
        """The joint-cell DP's path realised and scheduled (:mod:`solvers.scheduling.joint_path_start`,
        within ``amount``: the traced-runs start's allowance) as a start candidate: (hint, hint
        source), the candidate only when shorter than ``hint``."""
        return _memo_start(joint_path_start, "joint_path_start", JOINT_PATH_SOURCE, problem, options, budget,
                           amount, hint, hint_source, stats, memo)

    @staticmethod
    def _traced_start(problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                      hint: SchedulingSolution | None, hint_source: str, stats: dict,
                      memo: dict) -> tuple[SchedulingSolution | None, str]:
        """The bound's own runs with their weight options, realised and scheduled
        (:mod:`solvers.scheduling.traced_start`, ``amount``: ``traced_start_share`` in the stage shares), as a start
        candidate: (hint, hint source), the candidate only when shorter than ``hint``."""
        return _memo_start(traced_start, "traced_start", TRACED_START_SOURCE, problem, options, budget, amount,
                           hint, hint_source, stats, memo)

    def _placement_lns(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                       hint: SchedulingSolution, hint_source: str, stats: dict) -> tuple[SchedulingSolution, str]:
        """The placement LNS from the best start so far, as a start candidate: (hint, hint
        source), its schedule only when shorter than ``hint``; ``stats["start_candidates"]``
        gets its objective, ``stats["placement_lns"]`` what it did."""
        child = budget.child(amount)
        found, lns_stats = placement_lns(problem, hint, child, seed=options.random_seed)
        budget.absorb(child, "placement_lns")
        offered = _offered(problem, stats, hint, hint_source, found, PLACEMENT_LNS_SOURCE)
        stats["placement_lns"] = lns_stats
        return offered

    def _part_start(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                    hint: SchedulingSolution, hint_source: str, stats: dict) -> tuple[SchedulingSolution, str]:
        """The stitched parts from the best start so far (:mod:`solvers.scheduling.part_start`),
        as a start candidate: (hint, hint source), its schedule only when shorter than ``hint``;
        ``stats["start_candidates"]`` gets its objective where parts apply, ``stats`` its figures."""
        child = budget.child(amount)
        found, part_stats = part_start(problem, hint, child, seed=options.random_seed)
        if not part_stats:
            return hint, hint_source
        budget.absorb(child, "part_start")
        stats.update(part_stats)
        return _offered(problem, stats, hint, hint_source, found, PART_START_SOURCE)

    def _part_resolve(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                      hint: SchedulingSolution, hint_source: str, stats: dict,
                      earlier: SchedulingSolution | None = None) -> tuple[SchedulingSolution, str]:
        """The part re-solve (:mod:`solvers.scheduling.part_resolve`) from the best start so far,
        where the main solve would only re-sequence (above ``max_full_ops``): each part searched
        by this scheduler on one worker without a hint, with only the forced-cut bound, its start
        and the placement LNS before the main solve (part_resolve.PART_UNITS), the parts the plan
        ``earlier`` (before the stitched parts) spends as much on first. (hint, hint source), its
        schedule only when shorter."""
        nested = CpSatScheduler(replace(self.config, leftover_bound_share=0.0, part_start_share=0.0,
                                        segment_bound_share=0.0, pinned_move_share=0.0, run_start_share=0.0,
                                        segment_schedule_share=0.0))
        one = replace(options, num_workers=1, hint=None, progress=None)
        child = budget.child(amount)
        found, part_stats = part_resolve(problem, hint, child, lambda sub, b: nested._solve(sub, one, b).solution,
                                         earlier, one)
        if not part_stats:
            return hint, hint_source
        budget.absorb(child, "part_resolve")
        stats.update(part_stats, part_resolve_units=round(child.used, 6))
        return _offered(problem, stats, hint, hint_source, found, PART_RESOLVE_SOURCE)

    def _module_resolve(self, problem: SchedulingProblem, options: SolveOptions, budget: Budget, amount: float,
                        hint: SchedulingSolution, hint_source: str, stats: dict) -> tuple[SchedulingSolution, str]:
        """The module re-solve from the best start so far, as a start candidate: (hint, hint
        source), its schedule only when shorter than ``hint``; ``stats["start_candidates"]``
        gets its objective, ``stats["module_resolve"]`` what it did."""
        child = budget.child(amount)
        found, module_stats = module_resolve(problem, hint, child, options)
        budget.absorb(child, "module_resolve")
        offered = _offered(problem, stats, hint, hint_source, found, MODULE_RESOLVE_SOURCE)
        stats["module_resolve"] = dict(module_stats, units=round(child.used, 6))
        return offered
