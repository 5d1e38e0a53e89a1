"""``plan replan``: re-place a plan from monitored statistics, warm-started from the plan itself.

1. **Re-estimate** each device's speed from the statistics (:mod:`planner.replan.stats`): per
   device and op type, the median of measured / planned cycles (the median, so a few noisy
   or odd ops do not move the estimate); a device and type without a measurement takes the
   device's median, else 1. Links likewise, from the measured transfers.
2. **Predict** with the spec's scheduling problem re-timed by those ratios: the current
   placement's schedule (the heuristic's, with every op pinned), then the placement
   re-optimised by the exact scheduler, started from the better of the current one and the
   heuristic's (never worse than the current one), in ``time_limit_s`` (default a tenth of the
   spec's limit, fixed costs included). The **memory-headroom guard** caps every device at
   ``headroom`` of its capacity in that solve (a device already fuller keeps its capacity).
3. **Decide**: each moved op costs its migration (its weights over the link from its old
   device to its new one, :func:`migration_cycles`), charged once over ``amortize_runs``
   runs against the objective; the moves happen only when the predicted gain, net of that
   charge, is at least ``min_gain`` of the current prediction (hysteresis: noise moves nothing).
   Before that, moves the gain does not need are put back (:mod:`planner.replan.churn`: the
   re-placement keeps at least ``keep_gain`` of its predicted gain, each revert verified).
4. **Plan** the chosen placement at the spec's own (ISA) costs: ``plan score``'s path, so the
   directory is verified as always (its schedule: the plan's own when nothing moved, no churn;
   else the re-placement's re-timed at the spec's costs, see :func:`replan`); plan.json
   ``solver.replan`` and report.md say what moved, why and the predicted gain.

Examples
--------
>>> ReplanSettings().min_gain, ReplanSettings().headroom
(0.05, 0.9)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from planner.errors import InternalError, SpecError
from planner.graph.serialize import graph_to_dict
from planner.reader import read_json, read_text_file
from planner.reductions.scheduling import resident_bytes, to_problem
from planner.replan.churn import ceiling, fewer_moves
from planner.replan.commands import check_route, score_placement
from planner.replan.max_load import measured_loads, relieve
from planner.pipeline import route_name
from planner.reductions.max_load import to_placement_problem
from planner.replan.kept import KeptSchedule, at_spec_costs, plan_schedule
from planner.instances import base_op_name
from planner.replan.placement import placement_of
from planner.replan.stats import measured_links, measured_ops
from planner.scheduling import PlacementStart, best_of_heuristic_and_exact, pin_devices, solver_choice
from planner.spec import Spec
from planner.stage_timing import RESERVE_S_PER_OP, stage
from planner.stages import Outcome, RunSettings
from planner.verify import verify_plan_dir
from solvers.core import SolveResult
from solvers.placement import PlacementSolution, validate_placement
from solvers.scheduling import SchedulingProblem, validate_schedule
from solvers.scheduling.bounds import lower_bound

__all__ = ["ReplanSettings", "Move", "Decision", "speed_ratios", "migration_cycles", "decide", "decide_max_load",
           "fixed_costs_s",
           "replan", "replanned", "replan_lines"]


@dataclass(frozen=True)
class ReplanSettings:
    """``plan replan``'s knobs: ``min_gain`` and ``headroom`` are fractions (0.05 = 5%)."""

    min_gain: float = 0.05
    headroom: float = 0.9
    amortize_runs: int = 100
    time_limit_s: float | None = None
    # The share of a re-placement's predicted gain that must stay when its moves are put back
    # (planner.replan.churn: fewer moves for at most 5% of the gain; 1.0: only reverts that cost nothing).
    keep_gain: float = 0.95
    # The exact re-solve is skipped when the best of the current placement and the heuristic is
    # within this fraction of the current prediction above a proven lower bound (and what is left
    # could not lift the gain over min_gain): it has no more worth having to gain.
    settle_gap: float = 0.02


@dataclass(frozen=True)
class Move:
    """One op moved: from where to where, why, and what moving its weights costs."""

    op: str
    from_device: str
    to_device: str
    migration_bytes: int
    migration_cycles: int
    why: str


@dataclass(frozen=True)
class Decision:
    """What replan decided: the speed ratios it estimated, both predictions, the moves and the placement."""

    ratios: Mapping[str, Mapping[str, float]]
    link_ratios: Mapping[str, float]
    current_cycles: int
    candidate_cycles: int
    migration_cycles: int
    gain: float
    moves: tuple[Move, ...]
    placement: Mapping[str, str]
    reason: str
    # The whole re-plan's limit and the part of it kept for its fixed costs (:func:`fixed_costs_s`).
    time_limit_s: float = 0.0
    fixed_costs_s: float = 0.0
    # Ops the move-back pass put back on their devices (planner.replan.churn), not counted in ``moves``.
    moved_back: int = 0
    # What the exact re-solve did: "skipped" (nothing worth having left) or how it stopped, with the
    # lower bound at the measured speeds and the room left (_replaced).
    exact: Mapping[str, Any] = field(default_factory=dict)
    # The re-placement's schedule at the measured speeds (None when nothing moved).
    solution: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """plan.json ``solver.replan`` and ``--json``'s ``replan``."""
        return {"time_limit_s": self.time_limit_s, "fixed_costs_s": self.fixed_costs_s,
                "ratios": {d: dict(r) for d, r in self.ratios.items()}, "link_ratios": dict(self.link_ratios),
                "predicted_current_cycles": self.current_cycles, "predicted_new_cycles": self.candidate_cycles,
                "migration_cycles": self.migration_cycles, "predicted_gain": round(self.gain, 6),
                "moved": [vars(m) for m in self.moves], "moved_back": self.moved_back,
                "exact": dict(self.exact), "reason": self.reason}


def speed_ratios(spec: Spec, planned: Mapping[str, tuple[str, int]],
                 measured: Mapping[str, tuple[str, int]]) -> dict[str, dict[str, float]]:
    """Device -> op type -> median of measured / planned cycles (``"*"``: the device's median).

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> spec = load_spec("specs/taskgraph.yaml")
    >>> speed_ratios(spec, {"tg/a": ("fast0", 1000), "tg/b": ("slow0", 4000)},
    ...              {"tg/a": ("fast0", 2000), "tg/b": ("slow0", 4100)})
    {'fast0': {'task': 2.0, '*': 2.0}, 'slow0': {'task': 1.025, '*': 1.025}}
    """
    samples: dict[str, dict[str, list[float]]] = {}
    for name, (device, cycles) in sorted(planned.items()):
        if name not in measured or cycles <= 0:
            continue
        kind = spec.graph.ops[base_op_name(name)].type
        samples.setdefault(device, {}).setdefault(kind, []).append(measured[name][1] / cycles)
    ratios: dict[str, dict[str, float]] = {}
    for device, by_kind in samples.items():
        ratios[device] = {kind: statistics.median(v) for kind, v in sorted(by_kind.items())}
        ratios[device]["*"] = statistics.median([x for v in by_kind.values() for x in v])
    return ratios


def migration_cycles(spec: Spec, op: str, from_device: str, to_device: str) -> tuple[int, int]:
    """(bytes, cycles) to move ``op``'s weights and inputs it keeps resident from one device to another
    (over the link between them; no link: the sum over any two-hop route is not modelled, so 2^62)."""
    size = resident_bytes(spec.graph, op)
    link = spec.hardware.link_between(from_device, to_device)
    if link is None:
        return size, 2**62
    return size, link.transfer_cycles(size, spec.hardware.clock_hz) if size else 0


def _check_spec(spec: Spec, plan_dir: Path, spec_source: str) -> None:
    """``--spec`` must be the spec the directory was planned from: its graph equals graph.json."""
    path = plan_dir / "graph.json"
    if read_json(read_text_file(path, what="graph.json"), str(path)) != graph_to_dict(spec.graph):
        raise SpecError(f"--spec {spec_source}: its graph is not {plan_dir}'s graph.json (ops, tensors or edges "
                        "differ): give the spec the plan was solved from")


def _check_stats(doc: Any, plan_doc: Mapping[str, Any], planned: Mapping[str, tuple[str, int]],
                 measured: Mapping[str, tuple[str, int]], source: str) -> None:
    """Refuse statistics of another plan: another graph, or ops that are not this plan's, or elsewhere."""
    sha = doc.get("graph_sha256") if isinstance(doc, dict) else None
    if sha is not None and sha != plan_doc["files"]["graph.json"]:
        raise SpecError(f"{source}: these are statistics of another plan (graph_sha256 {str(sha)[:12]}... is not "
                        f"the plan's graph.json {plan_doc['files']['graph.json'][:12]}...)")
    for name, (device, _) in sorted(measured.items()):
        if name not in planned:
            raise SpecError(f"{source}: these are statistics of another plan (op {name!r} is not in it)")
        if planned[name][0] != device:
            raise SpecError(f"{source}: these are statistics of another plan (op {name!r} ran on {device!r}, "
                            f"the plan has it on {planned[name][0]!r})")
    if not measured:
        raise SpecError(f"{source}: no op was measured")


def _retimed(problem: SchedulingProblem, reduction: Any, spec: Spec, ratios: Mapping[str, Mapping[str, float]],
             link_ratios: Mapping[str, float], headroom: float, current: tuple[int, ...]) -> SchedulingProblem:
    """The scheduling problem at the measured speeds, each device capped at ``headroom`` of its memory."""
    devices = reduction.device_names
    rows = []
    for name, row in zip(reduction.op_names, problem.durations_cycles):
        kind = spec.graph.ops[name].type
        rows.append(tuple(c if c < 0 else round(c * ratios.get(devices[d], {}).get(
            kind, ratios.get(devices[d], {}).get("*", 1.0))) for d, c in enumerate(row)))
    factors = [link_ratios.get(link, 1.0) for link in reduction.link_names]
    transfers = tuple(tuple(round(c * f) for c, f in zip(row, factors)) for row in problem.transfer_cycles)
    resident = [problem.device_resident_bytes(d, current) for d in range(len(devices))]  # shared once
    caps = tuple(cap if cap <= 0 or resident[d] > headroom * cap else int(headroom * cap)
                 for d, cap in enumerate(problem.device_memory_bytes))
    return replace(problem, durations_cycles=tuple(rows), transfer_cycles=transfers, device_memory_bytes=caps)


def _why(ratios: Mapping[str, Mapping[str, float]], spec: Spec, op: str, a: str, b: str) -> str:
    kind = spec.graph.ops[op].type
    ra, rb = (ratios.get(d, {}).get(kind, ratios.get(d, {}).get("*", 1.0)) for d in (a, b))
    return f"{kind} ops measured {ra:.2f}x their planned cycles on {a}, {rb:.2f}x on {b}"


def _link_ratios(doc: Any) -> dict[str, float]:
    return {link: statistics.median(m / p for p, m in pairs if p > 0)
            for link, pairs in sorted(measured_links(doc).items()) if any(p > 0 for p, _ in pairs)}


def _net_gain(before: int, after: int, moves: tuple[Move, ...], settings: ReplanSettings) -> tuple[int, float]:
    """(the moves' migration cycles, the predicted gain net of migration as a share of ``before``):
    the one rule both routes decide by (latency/throughput makespans, max-load largest loads)."""
    migration = sum(m.migration_cycles for m in moves)
    return migration, (before - after - migration / settings.amortize_runs) / max(before, 1)


def _moves(spec: Spec, current: Mapping[str, str], new: Mapping[str, str],
           ratios: Mapping[str, Mapping[str, float]]) -> tuple[Move, ...]:
    moves = []
    for op in spec.graph.topological_order():
        if current[op] != new[op]:
            size, cycles = migration_cycles(spec, op, current[op], new[op])
            moves.append(Move(op, current[op], new[op], size, cycles, _why(ratios, spec, op, current[op], new[op])))
    return tuple(moves)


def decide(spec: Spec, current: Mapping[str, str], ratios: Mapping[str, Mapping[str, float]],
           link_ratios: Mapping[str, float], settings: ReplanSettings, run: RunSettings,
           built: tuple[SchedulingProblem, Any] | None = None) -> Decision:
    """Predict the current placement and a re-optimised one at the measured speeds; keep the
    current one unless the net predicted gain reaches ``settings.min_gain`` (module docstring).

    The current placement's prediction is the heuristic's schedule of it (HEFT with every op
    pinned: :class:`~planner.scheduling.PlacementStart`, no solve); the re-placement is the exact
    scheduler's, in ``run.time_limit_s``, started from the better of that schedule and the
    heuristic's own placement, and never worse than either. A gain from re-ordering alone moves
    nothing (no op moves); when ops move, the re-placement's better ordering counts in its gain,
    which ``min_gain`` covers (on the shipped specs the exact scheduler gains under 1% over the
    heuristic on a fixed placement). ``built`` is ``to_problem(spec)`` when the caller has it.
    """
    problem, reduction = built or to_problem(spec)
    start = PlacementStart.of(reduction, current)
    scaled = _retimed(problem, reduction, spec, ratios, link_ratios, settings.headroom, start.device_of)
    gang_ops = {op for gang in spec.gangs for op in gang}
    if gang_ops:  # a gang's shards stay where they are (one island, one per device): the others may move
        scaled = pin_devices(scaled, tuple(d if name in gang_ops else -1
                                           for name, d in zip(reduction.op_names, start.device_of)))
    solvers = solver_choice(spec)
    now = start.solve(scaled, run.solve_options())  # the heuristic's schedule of the current placement
    if now.status.has_solution and validate_schedule(scaled, now.solution):
        raise InternalError(f"{now.solver_name} returned an invalid schedule at the measured speeds")
    if not now.status.has_solution:
        return Decision(ratios, link_ratios, 0, 0, 0, 0.0, (), dict(current),
                        "kept: the current placement has no schedule within the memory headroom at the measured speeds")
    best, exact = _replaced(scaled, now, run.solve_options(), solvers, settings)
    moved_back = 0
    if best is not now:
        weights = {i: scaled.resident_bytes(i) for i in range(scaled.num_ops)}
        best, moved_back = fewer_moves(scaled, start.device_of, best,
                                       _move_back_limit(spec, reduction, current, now, best, settings), weights)
    new = {name: reduction.device_names[d] for name, d in zip(reduction.op_names, best.solution.op_device)}
    moves = _moves(spec, current, new, ratios)
    migration, gain = _net_gain(now.objective, best.objective, moves, settings)
    if not moves:
        reason = "kept: no other placement is predicted faster at the measured speeds"
    elif gain < settings.min_gain:
        reason = (f"kept: the best re-placement is predicted {gain:.2%} better net of migration, below the "
                  f"minimum gain {settings.min_gain:.0%}")
    else:
        reason = (f"moved {len(moves)} op{'s' * (len(moves) != 1)}: predicted {gain:.2%} better net of migration "
                  f"(at least {settings.min_gain:.0%} asked)"
                  + (f"; {moved_back} other moves put back, keeping at least {settings.keep_gain:.0%} of the "
                     "predicted gain" if moved_back else ""))
    if gain < settings.min_gain:
        moves, new = (), dict(current)
    return Decision(ratios, link_ratios, int(now.objective), int(best.objective), migration, gain, moves, new, reason,
                    moved_back=moved_back if moves else 0, exact=exact, solution=best.solution if moves else None)


def _move_back_limit(spec: Spec, reduction: Any, current: Mapping[str, str], now: SolveResult, best: SolveResult,
                     settings: ReplanSettings) -> int:
    """The largest prediction the move-back pass may leave: :func:`planner.replan.churn.ceiling`,
    and, when the re-placement clears ``min_gain``, no more than keeps it clear (net of its own
    migration, which reverts only lower): putting moves back never turns a move into a keep."""
    limit = ceiling(int(now.objective), int(best.objective), settings.keep_gain)
    new = {name: reduction.device_names[d] for name, d in zip(reduction.op_names, best.solution.op_device)}
    migration = sum(m.migration_cycles for m in _moves(spec, current, new, {}))
    clear = math.floor(now.objective * (1 - settings.min_gain) - migration / settings.amortize_runs)
    if clear >= best.objective:
        limit = min(limit, clear)
    return max(limit, int(best.objective))


def _replaced(scaled: SchedulingProblem, now: SolveResult, options: Any, solvers: tuple[Any, Any],
              settings: ReplanSettings) -> tuple[SolveResult, dict[str, Any]]:
    """The best placement at the measured speeds: the exact scheduler warm-started from the better
    of the current placement's schedule and the heuristic's own (a slowed device can make a far
    placement the better start), never worse than the current one; and what the exact phase did.

    The exact phase runs only when it has something to gain (:func:`_exact_worthwhile`): the
    better of the two candidates is more than ``settings.settle_gap`` above a proven lower bound
    of the measured-speed problem, or what is left could carry the gain over ``min_gain``."""
    heuristic = solvers[0].solve(scaled, options)
    if heuristic.status.has_solution and validate_schedule(scaled, heuristic.solution):
        raise InternalError(f"{heuristic.solver_name} returned an invalid schedule at the measured speeds")
    better = heuristic if heuristic.status.has_solution and heuristic.objective < now.objective else now
    bound = lower_bound(scaled, lp=False)
    room = (better.objective - bound) / max(now.objective, 1)
    if not _exact_worthwhile(now.objective, better.objective, room, settings):
        return better, {"exact": "skipped", "lower_bound": int(bound), "room": round(room, 6)}
    _, best = best_of_heuristic_and_exact(scaled, options, solvers, PlacementStart(tuple(better.solution.op_device)))
    found = [r for r in (best, heuristic) if r.status.has_solution and r.objective < now.objective]
    return (min(found, key=lambda r: r.objective) if found else now), {
        "exact": best.stats.get("stopped_by", "ran"), "lower_bound": int(max(bound, best.bound or 0)),
        "room": round(room, 6)}


def _exact_worthwhile(now: float, better: float, room: float, settings: ReplanSettings) -> bool:
    """Whether the exact re-solve may change what the re-plan does: at least ``settle_gap`` of the
    current prediction is left between the best candidate and the lower bound, or the gain so far
    is below ``min_gain`` and what is left could lift it over (migration aside).

    >>> s = ReplanSettings()
    >>> _exact_worthwhile(100, 70, 0.01, s), _exact_worthwhile(100, 70, 0.03, s), _exact_worthwhile(100, 97, 0.01, s)
    (False, True, False)
    >>> _exact_worthwhile(100, 97, 0.019, s)  # 3% so far, up to 1.9% more: 4.9% cannot reach 5%
    False
    >>> _exact_worthwhile(100, 96, 0.019, s)  # 4% so far, up to 1.9% more: it could reach 5%
    True
    """
    gain = (now - better) / max(now, 1)
    return room >= settings.settle_gap or gain < settings.min_gain <= gain + room


def _with_decision(decision: Decision, outcome: Outcome) -> Outcome:
    plan = replace(outcome.plan, solver={**outcome.plan.solver, "replan": decision.to_dict()})
    return replace(outcome, plan=plan)


def fixed_costs_s(spec: Spec, time_limit_s: float) -> float:
    """The part of a re-plan's ``time_limit_s`` kept for its work besides the solves: verifying the
    input directory, and lowering, replaying, writing and verifying the new one (each about
    :data:`planner.stage_timing.RESERVE_S_PER_OP` per op), at most half the limit. A function of
    the spec's size alone, so the solves' deterministic budgets stay deterministic.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> fixed_costs_s(load_spec("specs/demo.yaml"), 3.0)  # 259 ops: 2 x 1.2 ms each
    0.622
    """
    return round(min(2 * RESERVE_S_PER_OP * len(spec.graph.ops), time_limit_s / 2), 3)


def replan(spec: Spec, plan_dir: Path, stats_path: Path, settings: ReplanSettings = ReplanSettings(), *,
           spec_source: str = "SPEC", time_limit_s: float | None = None, workers: int | None = None,
           seed: int | None = None, search: str | None = None, progress: Any = None) -> Outcome:
    """Re-place ``plan_dir``'s plan from the statistics at ``stats_path``: the verified outcome, with
    ``plan.solver["replan"]`` (:meth:`Decision.to_dict`) saying what moved, why and the predicted gain.

    ``time_limit_s`` (default: the spec's limit / 10) is the whole re-plan's: its fixed costs
    (:func:`fixed_costs_s`) first, then of the rest two thirds to re-place (:func:`decide`) and
    a third to schedule the chosen placement at the spec's costs. That last solve runs only when
    neither of these is a valid schedule (it is skipped otherwise,
    :class:`planner.replan.kept.KeptSchedule`, with a bound computed for this spec): when nothing
    moves, the plan's own schedule; when ops move, the re-placement's schedule re-timed at the
    spec's costs (:func:`planner.replan.kept.at_spec_costs`).

    Raises
    ------
    SpecError
        ``spec`` is not the directory's, statistics of another plan, a malformed stats file,
        or a spec whose objective is not latency or throughput.
    VerificationError
        ``plan_dir`` does not verify.
    """
    check_route(spec, "plan replan")
    with stage("verify"):  # the input directory's verification, timed as the verify stage
        verdict = verify_plan_dir(plan_dir)
    _check_spec(spec, Path(plan_dir), spec_source)
    planned = {o.name: (o.device, o.duration_cycles) for o in verdict.plan.ops}
    doc = read_json(read_text_file(stats_path, what="statistics"), str(stats_path))
    measured = measured_ops(doc, str(stats_path), verdict.plan.clock_hz)
    _check_stats(doc, verdict.document.model_dump(), planned, measured, str(stats_path))
    limit = time_limit_s or settings.time_limit_s or spec.time_limit_s / 10
    fixed_s = fixed_costs_s(spec, limit)
    solves_s = limit - fixed_s
    if route_name(spec) == "max-load":
        return _replan_max_load(spec, verdict, planned, measured, doc, settings, limit, fixed_s, solves_s,
                                workers=workers, seed=seed, search=search, progress=progress, source=str(plan_dir))
    with stage("solve"):  # the predictions are the re-plan's solve, with the final schedule below
        built = to_problem(spec)
        run = RunSettings.of(spec, solves_s * 2 / 3, workers, seed, search, progress)
        current = placement_of((o.name, o.device) for o in verdict.plan.ops)
        decision = decide(spec, current, speed_ratios(spec, planned, measured), _link_ratios(doc), settings, run,
                          built)
        decision = replace(decision, time_limit_s=limit, fixed_costs_s=fixed_s)
        kept = (at_spec_costs(decision.solution, built[0]) if decision.moves
                else plan_schedule(verdict.plan, *built))
    exact = None if kept is None else KeptSchedule(kept, "re-timed" if decision.moves else "kept")
    outcome = score_placement(spec, decision.placement, time_limit_s=solves_s / 3, workers=workers, seed=seed,
                              search=search, progress=progress, source=str(plan_dir), built=built, exact=exact)
    return _with_decision(decision, outcome)


def decide_max_load(spec: Spec, current: Mapping[str, str], ratios: Mapping[str, Mapping[str, float]],
                    settings: ReplanSettings) -> Decision:
    """:func:`decide` for a max-load plan: the predictions are the current placement's and the
    re-placement's largest loads at the measured speeds (:mod:`planner.replan.max_load`); the
    same migration charge and minimum gain decide."""
    problem, reduction = to_placement_problem(spec)
    index = {name: d for d, name in enumerate(reduction.device_names)}
    now = tuple(index[current[op]] for op in reduction.op_names)
    guarded = replace(problem, memory_bytes=int(settings.headroom * problem.memory_bytes))
    if problem.memory_bytes and not validate_placement(guarded, PlacementSolution(now)):
        problem = guarded  # the memory-headroom guard, unless the current placement is fuller already
    new = relieve(problem, reduction, spec, ratios, now)
    now_load = max(measured_loads(problem, reduction, spec, ratios, now))
    new_load = max(measured_loads(problem, reduction, spec, ratios, new))
    placement = {op: reduction.device_names[d] for op, d in zip(reduction.op_names, new)}
    moves = _moves(spec, current, placement, ratios)
    migration, gain = _net_gain(now_load, new_load, moves, settings)
    if not moves:
        reason = "kept: no other placement is predicted to carry a smaller largest load at the measured speeds"
    elif gain < settings.min_gain:
        reason = (f"kept: the best re-placement's largest load is predicted {gain:.2%} smaller net of migration, "
                  f"below the minimum gain {settings.min_gain:.0%}")
    else:
        reason = (f"moved {len(moves)} op{'s' * (len(moves) != 1)}: largest load predicted {gain:.2%} smaller net "
                  f"of migration (at least {settings.min_gain:.0%} asked)")
    if gain < settings.min_gain:
        moves, placement = (), dict(current)
    return Decision(ratios, {}, now_load, new_load, migration, gain, moves, placement, reason)


def _replan_max_load(spec: Spec, verdict: Any, planned: Mapping[str, tuple[str, int]],
                     measured: Mapping[str, tuple[str, int]], doc: Any, settings: ReplanSettings, limit: float,
                     fixed_s: float, solves_s: float, *, source: str, **run: Any) -> Outcome:
    """:func:`replan` of a max-load plan: :func:`decide_max_load`, then the chosen placement planned
    as ``plan score`` plans a given one (its loads, one sample scheduled, lowered and replayed)."""
    with stage("solve"):
        current = placement_of((o.name, o.device) for o in verdict.plan.ops)
        decision = decide_max_load(spec, current, speed_ratios(spec, planned, measured), settings)
        decision = replace(decision, time_limit_s=limit, fixed_costs_s=fixed_s)
    outcome = score_placement(spec, decision.placement, time_limit_s=solves_s, source=source, **run)
    return _with_decision(decision, outcome)


def replanned(plan_dir: Path, stats: Path, spec_path: Path, min_gain_pct: float, headroom_pct: float,
              amortize_runs: int) -> Callable[..., Outcome]:
    """``plan replan``: :func:`planner.replan.replan.replan` with the command's flags checked.

    Raises
    ------
    SpecError
        A percentage or a run count out of range.
    """
    if not 0 <= min_gain_pct < 100:
        raise SpecError(f"--min-gain: expected a percentage from 0 to below 100, got {min_gain_pct!r}")
    if not 0 < headroom_pct <= 100:
        raise SpecError(f"--headroom: expected a percentage above 0 and at most 100, got {headroom_pct!r}")
    if amortize_runs < 1:
        raise SpecError(f"--amortize-runs: expected an integer >= 1, got {amortize_runs}")
    settings = ReplanSettings(min_gain_pct / 100, headroom_pct / 100, amortize_runs)

    def plan_with(spec: Spec, *, time_limit_s: float | None = None, **run: Any) -> Outcome:
        if not isinstance(spec, Spec):
            raise SpecError("plan replan re-places a model spec's plan, not a fleet spec's")
        return replan(spec, Path(plan_dir), Path(stats), settings, spec_source=str(spec_path),
                      time_limit_s=time_limit_s, **run)
    return plan_with


def replan_lines(outcome: Outcome) -> tuple[dict[str, Any], list[str]]:
    """What ``plan replan`` adds: the decision as JSON, and a line per move."""
    decision = outcome.plan.solver["replan"]
    lines = [f"re-placement: {decision['reason']}; predicted {decision['predicted_current_cycles']:,} -> "
             f"{decision['predicted_new_cycles']:,} cycles at the measured speeds"]
    lines += [f"  moved {m['op']}: {m['from_device']} -> {m['to_device']} ({m['why']}; migration "
              f"{m['migration_bytes']:,} bytes, {m['migration_cycles']:,} cycles)" for m in decision["moved"]]
    return {"replan": decision}, lines
