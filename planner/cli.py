"""The ``plan`` command.

Exit codes: 0 solved (optimal, or feasible at the time limit) / verified; 1 infeasible
(the message says which constraint); 2 bad input (spec, flags, tampered output, an output
path that would replace something plan did not write); 3 internal error (a bug: the only
case that prints a traceback); 4 no plan found within the time limit (neither a bug nor a
proof of infeasibility: a longer limit may find one); 130 interrupted by Ctrl-C (SIGINT),
143 by SIGTERM. ``planner.errors`` defines them.

Every command body runs under :func:`planner.interrupts.handle_interrupts`, which stops
running CP-SAT searches at once on a signal; where outputs may go is
:mod:`planner.safe_output`'s job.

Test-only: with ``PLAN_TEST_SOLVES_FILE=PATH`` set, PATH holds "STARTED RUNNING", the
CP-SAT solves started and running so far, so the interrupt tests can signal during a
search (see also ``PLAN_TEST_PAUSE_WRITE`` in :mod:`planner.safe_output`).
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from planner.errors import EXIT_INTERNAL, PlannerError, SpecError
from planner.interrupts import handle_interrupts
from planner.reader import find_lines, read_text_file
from planner.safe_output import atomic_directory, check_directory_target, check_file_target, output_name

__all__ = ["app", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Plan ML models on accelerators: place, schedule, lower, verify.")
# Piped or redirected, a table is as wide as its content: never cut to 80 columns ("OPTI…").
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 100_000)
err = Console(stderr=True, soft_wrap=True)
_JSON_HELP = "Print the result as JSON on stdout; an error as {\"error\": ..., \"exit_code\": ...} there too."


class _Search(str, enum.Enum):
    """``plan solve --search`` (see solvers.budget)."""

    deterministic = "deterministic"
    until_limit = "until-limit"


def _guarded(fn: Callable[[], int | None], as_json: bool = False, solves: bool = False) -> None:
    """Run a command body, mapping errors to messages and stable exit codes (as JSON with ``--json``);
    ``solves``: the command runs solvers, so their environment is checked first."""
    _watch_solves_for_tests()
    with handle_interrupts(stop=_stop_running_solvers) as guard:
        try:
            code = _mapped(fn, as_json, solves)
        except KeyboardInterrupt as e:  # planner.interrupts.Interrupted, or Python's own
            written = guard.outputs if guard is not None else []
            if written:
                message = f"interrupted; {', '.join(map(str, written))} had been written in full before it"
            else:
                message = "interrupted; nothing was written"
            err.print(message, highlight=False, markup=False)
            code = getattr(e, "exit_code", 130)
            _print_json_error(message, code, as_json)
    raise typer.Exit(code)


def _print_json_error(message: str, code: int, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"error": message, "exit_code": code}), flush=True)


def _check_solver_environment() -> None:
    """A bad ``PLAN_NET_SLOWDOWN`` is the user's input: exit 2 before any work, not 3 mid-solve."""
    from solvers.net_env import slowdown_from_environment  # start-up time: no solver (nor OR-Tools) loaded

    try:
        slowdown_from_environment()
    except ValueError as e:
        raise PlannerError(str(e)) from None


def _mapped(fn: Callable[[], int | None], as_json: bool = False, solves: bool = False) -> int:
    """The body's exit code; user and internal errors printed and mapped to theirs."""
    try:
        if solves:
            _check_solver_environment()
        return fn() or 0
    except PlannerError as e:
        # The message may quote the user's text ("[/]" in a name): never read it as markup.
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, markup=True, soft_wrap=True)
        _print_json_error(str(e), e.exit_code, as_json)
        return e.exit_code
    except Exception as e:  # InternalError, or any exception nobody anticipated: a bug (exit 3)
        err.print(traceback.format_exc(), highlight=False, markup=False)
        err.print(f"[bold red]internal error (a bug in plan, please report it):[/] {type(e).__name__}: "
                  f"{escape(str(e))}", highlight=False, markup=True)
        _print_json_error(f"internal error (a bug in plan, please report it): {type(e).__name__}: {e}",
                          EXIT_INTERNAL, as_json)
        return EXIT_INTERNAL


def _stop_running_solvers() -> None:
    """Stop every CP-SAT search in progress (called from the interrupt watcher thread)."""
    support = sys.modules.get("solvers.cpsat_support")  # not (yet fully) loaded: nothing can be running
    stop = getattr(support, "stop_running_solvers", None)
    if stop is not None:
        stop()


def _watch_solves_for_tests() -> None:
    """The test-only ``PLAN_TEST_SOLVES_FILE`` of the module docstring (one watcher per process)."""
    path = os.environ.get("PLAN_TEST_SOLVES_FILE")
    if not path or _SOLVES_WATCHED:
        return
    _SOLVES_WATCHED.append(path)

    def watch() -> None:
        seen = None
        while True:
            counts_now = getattr(sys.modules.get("solvers.cpsat_support"), "solve_counts", None)
            counts = counts_now() if counts_now is not None else (0, 0)
            if counts != seen:
                Path(path + ".part").write_text(f"{counts[0]} {counts[1]}")
                os.replace(path + ".part", path)
                seen = counts
            time.sleep(0.005)

    threading.Thread(target=watch, name="plan-test-solves", daemon=True).start()


_SOLVES_WATCHED: list[str] = []


def _check_flags(time_limit: float | None = None, workers: int | None = None, seed: int | None = None,
                 *, max_seed: int | None = None) -> None:
    """Refuse flag values outside the spec's own limits (exit 2) before any work starts."""
    from planner.spec.limits import MAX_SEED, MAX_TIME_LIMIT_S, MAX_WORKERS  # start-up time

    if time_limit is not None and not (math.isfinite(time_limit) and 0 < time_limit <= MAX_TIME_LIMIT_S):
        raise SpecError(f"--time-limit: expected seconds, more than 0 and at most {MAX_TIME_LIMIT_S:,}, "
                        f"got {time_limit!r}")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise SpecError(f"--workers: expected an integer from 1 to {MAX_WORKERS}, got {workers}")
    top = MAX_SEED if max_seed is None else max_seed
    if seed is not None and not 0 <= seed <= top:
        raise SpecError(f"--seed: expected an integer from 0 to {top:,}, got {seed}")


# The live line's names of the pipeline's stages (planner.stage_timing.STAGES).
_PHASES = {"solve": "placement", "memory": "memory planning", "costing": "costing", "spec": "reading the spec"}


class _LiveLine:
    """A one-line live view of the phase, the incumbent, bound and gap, fed by the solver's callback.

    The line is re-rendered on every refresh, so the elapsed time ticks even while the
    solver finds nothing new. The phase is the pipeline's running stage (``clock.current``).
    When memory planning comes after placement the objective can still change, so no gap is
    shown: a placement proved optimal is not a plan proved optimal.
    """

    def __init__(self, console: Console, clock=None, time_limit_s: float | None = None,
                 later_stage_changes_objective: bool = False) -> None:
        self.start = time.perf_counter()
        self.point = None
        self.clock = clock
        self.time_limit_s = time_limit_s
        self.provisional = later_stage_changes_objective
        self.live = Live(self, console=console, refresh_per_second=4, transient=True)

    def __enter__(self) -> "_LiveLine":
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def __call__(self, point) -> None:
        self.point = point  # one reference swap: safe from the solver's thread

    def __rich__(self) -> Text:
        elapsed = time.perf_counter() - self.start
        limit = "" if self.time_limit_s is None else f" (limit {self.time_limit_s:g} s)"
        current = getattr(self.clock, "current", None) or "solve"
        head = f"{_PHASES.get(current, current):<15} {elapsed:.1f} s{limit}"
        p = self.point
        if p is None:
            return Text(head)
        bound = "-" if p.bound is None else f"{p.bound:,.0f}"
        found_by = "heuristic" if getattr(p, "source", None) == "heuristic" else "incumbent"  # before the search
        if self.provisional:
            gap = "gap after memory planning"
        else:
            gap = "gap -" if p.bound is None else \
                f"gap {100 * abs(p.objective - p.bound) / max(1, abs(p.objective)):.2f}%"
        return Text(f"{head}  {found_by} {p.objective:,.0f}  bound {bound}  {gap}")


def _in_units(plan, cycles) -> str:
    """An objective or bound in the user's units: a time for latency, inferences/s for throughput."""
    from planner.units import format_cycles_time, format_rate  # start-up time

    if cycles is None or plan.objective_kind not in ("latency", "throughput"):
        return "-"
    if plan.objective_kind == "throughput":
        return format_rate(plan.clock_hz / cycles if cycles else None)
    return format_cycles_time(cycles, plan.clock_hz)


def _summary_table(plan, rows) -> Table:
    table = Table(title=f"plan {plan.spec_name}: {plan.status}", title_justify="left")
    unit = {"latency": "latency", "throughput": "throughput"}.get(plan.objective_kind)
    for col in ("solver", "status", "objective", "bound", "gap", *([unit] if unit else [])):
        table.add_column(col, justify="right" if col not in ("solver", "status") else "left")
    from planner.plan import relative_gap  # start-up time
    from planner.report import format_gap  # start-up time

    for r in rows:
        table.add_row(str(r["solver"]), str(r["status"]),
                      "-" if r["objective"] is None else f"{r['objective']:,.0f}",
                      "-" if r["bound"] is None else f"{r['bound']:,.0f}",
                      format_gap(relative_gap(r["objective"], r["bound"])),
                      *([_in_units(plan, r["objective"] if r["objective"] is not None else r["bound"])]
                        if unit else []))
    return table


def _device_table(plan, hardware, peaks, graph) -> Table:
    from planner.report import device_rows, format_levels  # start-up time
    from planner.report.markdown import report_hardware  # start-up time

    table = Table(title="devices", title_justify="left")
    from planner.units import format_cycles_time  # start-up time

    for col in ("device", "profile", "streams", "ops", "busy cycles", "busy", "util", "memory: peak of capacity"):
        table.add_column(col, justify="left" if col in ("device", "profile", "memory: peak of capacity") else "right")
    for r in device_rows(plan, report_hardware(hardware), peaks, graph):
        table.add_row(r["device"], r["profile"], str(r["streams"]), r["ops"], f"{r['busy_cycles']:,}",
                      format_cycles_time(r["busy_cycles"], plan.clock_hz),
                      f"{100 * r['utilization']:.1f}%", format_levels(r["levels"]))
    return table


_OUTPUT_DIR_HELP = ("Output directory (default: out/<spec name>): a new or empty directory, or one that plan "
                    "wrote before (it is replaced whole); anything else needs --force.")
_FORCE_DIR_HELP = ("Replace an existing directory that plan did not write. Never a file, the spec's own "
                   "directory or its ancestors, the current directory or its ancestors, / or your home.")
_FORCE_FILE_HELP = "Replace an existing file (never a directory, a link or this command's input)."

# Options that several commands take with the same meaning (one definition, so their help cannot drift apart).
_OutputDir = Annotated[Optional[str], typer.Option("-o", "--output", metavar="DIR", help=_OUTPUT_DIR_HELP)]
_ForceDir = Annotated[bool, typer.Option("--force", help=_FORCE_DIR_HELP)]
_Workers = Annotated[Optional[int], typer.Option("--workers", help="Solver workers (overrides the spec).")]
_Seed = Annotated[Optional[int], typer.Option("--seed", help="Random seed (overrides the spec).")]
_Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
_SkipNumeric = Annotated[bool, typer.Option("--no-numeric", help="Skip the numeric replay.")]


@app.command()
def solve(
    spec: Path = typer.Argument(..., help="The YAML spec to plan."),
    output: _OutputDir = None,
    force: _ForceDir = False,
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Seconds for the solver (overrides the spec)."),
    workers: _Workers = None,
    seed: _Seed = None,
    search: Optional[_Search] = typer.Option(
        None, "--search", help="deterministic (default): the same spec, seed and workers give the same files; "
                               "until-limit: search until the time limit (never reproducible). Overrides the spec."),
    quiet: _Quiet = False,
    as_json: bool = typer.Option(False, "--json", help="Print the plan summary as JSON on stdout."),
    no_numeric: bool = typer.Option(False, "--no-numeric", help="Skip the numeric replay (by default it runs "
                                    "whenever the binaries hold at most 10^5 instructions and 10^10 "
                                    "multiply-accumulates)."),
    warm_start: Optional[Path] = typer.Option(None, "--warm-start", metavar="DIR",
                                              help="A previous plan directory as the starting point: its ops keep "
                                                   "their devices where they still can, new ops are placed by the "
                                                   "heuristic; never worse than that start."),
) -> None:
    """Solve a spec, lower it to binaries, replay them, verify the directory, and only then write it."""
    plan_with = after = None
    if warm_start is not None:  # the re-plan machinery only when asked: a refused -o answers before it loads
        from planner.replan.commands import warm_start_lines, warm_started  # start-up time

        plan_with, after = _deferred(lambda: warm_started(warm_start)), warm_start_lines
    _solve_and_write(spec, output, force, time_limit, workers, seed, search, quiet, as_json, no_numeric,
                     plan_with, after)


def _solve_and_write(spec, output, force, time_limit, workers, seed, search, quiet, as_json, no_numeric,
                     plan_with=None, after=None) -> None:
    """``plan solve``'s body; ``plan_with(loaded, **run_settings)`` replaces :func:`planner.pipeline.run`
    (``plan score``, ``plan replan``) and ``after(outcome)`` gives what that command adds: JSON fields
    and lines to print."""
    search_mode = search.value if search is not None else None

    def body() -> int:
        if output is not None:  # refuse a bad -o before any slow import or solve
            check_directory_target(output, force=force, inputs=[spec])
        _check_flags(time_limit, workers, seed)
        from planner.stage_timing import stage, timing  # start-up time

        with timing() as clock:
            with stage("spec"):
                loaded = _load_target(spec)
            # the solver stack only once the spec loaded (outside any stage: start-up time)
            from planner.fleet import FleetSpec  # start-up time
            from planner.output import baseline_rows, peak_memory_by_device, write_plan_dir  # start-up time
            from planner.pipeline import run  # start-up time

            fleet = isinstance(loaded, FleetSpec)
            target, inputs = _target_and_inputs(loaded, spec, output, fleet)
            check_directory_target(output if output is not None else target, force=force, inputs=inputs)
            live = None if (quiet or as_json or not err.is_terminal or fleet) else _LiveLine(
                err, clock, time_limit if time_limit is not None else loaded.time_limit_s,
                later_stage_changes_objective=loaded.memory.enabled)
            with live or contextlib.nullcontext():
                outcome = (plan_with or run)(loaded, time_limit_s=time_limit, workers=workers, seed=seed,
                                             progress=live, search=search_mode)
            if fleet:
                return _write_fleet(outcome, spec, target, force, inputs, quiet, as_json)
            verdict = write_plan_dir(outcome, loaded, target, numeric="off" if no_numeric else "default",
                                     force=force, inputs=[spec])
        plan = outcome.plan
        limit = plan.solver.get("time_limit_s") or loaded.time_limit_s
        reserve = plan.solver.get("post_solve_reserve_s", 0.0)
        if "replan" in plan.solver:  # the re-plan's whole limit, not its final schedule's share
            limit, reserve = plan.solver["replan"]["time_limit_s"], plan.solver["replan"]["fixed_costs_s"]
        overrun = clock.overrun(limit, solve_limit_s=limit - reserve)
        if as_json:
            summary = {k: v for k, v in plan.to_dict().items() if k not in ("ops", "transfers", "resources")}
            summary.update(output=str(target), wall_time_s=round(plan.wall_time_s, 3),
                           stages_s={k: round(v, 3) for k, v in clock.seconds.items()}, overrun=overrun,
                           simulated_makespan_cycles=verdict.simulation.makespan_cycles,
                           simulated_makespan_us=round(verdict.simulation.makespan_cycles * 1e6 / plan.clock_hz, 6),
                           numeric=verdict.numeric.claim)
            summary.update(after(outcome)[0] if after is not None else {})
            print(json.dumps(summary, indent=2))
        elif not quiet:
            out.print(_summary_table(plan, baseline_rows(outcome)))
            out.print(_device_table(plan, loaded.hardware, peak_memory_by_device(verdict.simulation), loaded.graph))
            from planner.units import format_cycles_time  # start-up time

            makespan = verdict.simulation.makespan_cycles
            out.print(f"verified by replay: makespan {makespan:,} cycles ({format_cycles_time(makespan, plan.clock_hz)})"
                      f"; every figure of "
                      f"the directory checked by the independent verifier in {verdict.seconds:.2f} s", highlight=False)
            out.print(verdict.numeric.summary(), highlight=False)
            out.print(f"wrote {target}/ in {clock.total_s:.1f} s ({clock.line()})", highlight=False)
            out.print(f"open {target / 'report.html'} to see the schedule and memory over time", highlight=False)
        if after is not None and not (quiet or as_json):
            out.print("\n".join(after(outcome)[1]), highlight=False)
        if overrun and not quiet:
            err.print(f"[yellow]warning:[/yellow] {overrun}", highlight=False)
        _warn_unless_reproducible(plan.solver)
        return 0

    _guarded(body, as_json, solves=True)


@app.command()
def score(
    spec: Path = typer.Argument(..., help="The YAML spec the placement is for."),
    placement: Path = typer.Option(..., "--placement", metavar="DIR_or_JSON",
                                   help='A plan directory, or a JSON file mapping every op to a device: '
                                        '{"model/op": "device0", ...}.'),
    output: _OutputDir = None,
    force: _ForceDir = False,
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Seconds for scheduling (overrides the spec)."),
    workers: _Workers = None,
    seed: _Seed = None,
    quiet: _Quiet = False,
    as_json: bool = typer.Option(False, "--json", help="Print the plan summary as JSON on stdout."),
    no_numeric: _SkipNumeric = False,
) -> None:
    """Evaluate a given placement without optimising it: schedule, lower, replay, verify, print its objective."""
    from planner.replan.commands import scored  # start-up time

    _solve_and_write(spec, output, force, time_limit, workers, seed, None, quiet, as_json, no_numeric,
                     _deferred(lambda: scored(placement)))


@app.command()
def replan(
    plan_dir: Path = typer.Argument(..., help="A directory written by `plan solve` (verified first)."),
    stats: Path = typer.Option(..., "--stats", metavar="FILE", help="Measured statistics: `plan simulate "
                               "--stats-out` JSON, or a Chrome/Perfetto trace such as trace.json."),
    spec: Path = typer.Option(..., "--spec", metavar="SPEC", help="The spec the plan was solved from (its graph "
                              "must be the directory's graph.json)."),
    output: Optional[str] = typer.Option(None, "-o", "--output", metavar="NEWDIR",
                                         help="Output directory (default: PLAN_DIR-replan); as plan solve's -o."),
    force: _ForceDir = False,
    min_gain: float = typer.Option(5.0, "--min-gain", metavar="PCT", help="Move nothing unless the predicted "
                                   "gain, net of migration, is at least PCT percent (hysteresis against noise)."),
    headroom: float = typer.Option(90.0, "--headroom", metavar="PCT", help="Moves may not fill a device's memory "
                                   "above PCT percent."),
    amortize_runs: int = typer.Option(100, "--amortize-runs", metavar="N", help="Migration cycles are charged "
                                      "over the next N runs."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Seconds for the re-solve "
                                               "(default: a tenth of the spec's limit)."),
    workers: _Workers = None,
    seed: _Seed = None,
    quiet: _Quiet = False,
    as_json: bool = typer.Option(False, "--json", help="Print the plan summary and what moved as JSON on stdout."),
    no_numeric: _SkipNumeric = False,
) -> None:
    """Re-place a plan from measured statistics: what moved, why, the predicted gain, and a verified plan."""
    from planner.replan.replan import replan_lines, replanned  # start-up time

    target = output if output is not None else str(plan_dir).rstrip("/") + "-replan"
    _solve_and_write(spec, target, force, time_limit, workers, seed, None, quiet, as_json, no_numeric,
                     _deferred(lambda: replanned(plan_dir, stats, spec, min_gain, headroom, amortize_runs)),
                     replan_lines)


def _deferred(make: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    """A ``plan_with`` built when first called, so its input errors are mapped like the command's own."""
    return lambda *args, **kwargs: make()(*args, **kwargs)


def _rows_table(title: str, rows: list[list[str]]) -> Table:
    """A rich table from rows whose first row is the header."""
    table = Table(title=title, title_justify="left")
    for col in rows[0] if rows else []:
        table.add_column(str(col))
    for r in rows[1:]:
        table.add_row(*[str(v) for v in r])
    return table


def _warn_unless_reproducible(solver: dict, where: str = "plan.json") -> None:
    """A warning on stderr when the run would not repeat byte for byte (even with --quiet)."""
    if solver.get("reproducible", True):
        return
    if solver.get("search") == "until-limit":
        why = "--search until-limit searched until the wall clock"
    else:
        from planner.report.markdown import net_stops_text  # start-up time (the report's words for it)
        why = (f"the wall-clock safety net stopped the search{net_stops_text(solver)} before its deterministic "
               "budget was spent (the machine was more than 3x slower than calibrated, or busy)")
    err.print(f"[yellow]warning:[/yellow] this plan is not reproducible: {why}; "
              f"{where} says solver.reproducible: false", highlight=False)


def _is_fleet_file(spec: Path) -> bool:
    """:func:`planner.fleet.is_fleet_spec` for a file, without importing the fleet planner (it
    loads the solvers and OR-Tools): a spec refused at once never pays for them."""
    try:  # the bounded reader, and no data built: the spec's own loader reads it again
        return ("fleet",) in find_lines(read_text_file(spec), [("fleet",)])
    except SpecError:
        return False  # unreadable or malformed: the spec loader says why


def _load_target(spec: Path):
    """:func:`planner.pipeline.load` of a spec file: a model spec through :mod:`planner.spec`
    alone, so bad YAML, a schema error or a missing file is refused before any solver loads."""
    if _is_fleet_file(spec):
        from planner.fleet import load_fleet_spec  # start-up time

        return load_fleet_spec(spec)
    from planner.spec import load_spec  # start-up time

    return load_spec(spec)


def _target_and_inputs(loaded, spec: Path, output: str | None, fleet: bool) -> tuple[Path, list[Path]]:
    """The output directory (``-o``, else out/<the spec's name>) and the files it must not replace:
    the spec, and a fleet's tenants' compiled plans."""
    if not fleet:
        return (Path("out") / output_name(loaded.name, "the spec name") if output is None else Path(output)), [spec]
    target = Path("out") / output_name(Path(spec).stem, "the spec file's name") if output is None else Path(output)
    return target, [spec, *(Path(spec).parent / t.plan for t in loaded.document.fleet.tenants if t.plan)]


def _write_fleet(result, spec, target, force, inputs, quiet, as_json) -> int:
    """Write a fleet's outputs (:func:`planner.fleet.write_fleet_outputs`) and print its summary."""
    from planner.fleet import fleet_summary_rows, write_fleet_outputs  # start-up time

    with atomic_directory(target, force=force, inputs=inputs) as tmp:
        write_fleet_outputs(result, tmp)
    rows = fleet_summary_rows(result)
    if as_json:
        print(json.dumps({"output": str(target), "rows": [dict(zip(rows[0], r)) for r in rows[1:]]}, indent=2))
    elif not quiet:
        out.print(_rows_table(f"fleet {Path(spec).stem}", rows))
        out.print(f"wrote {target}/", highlight=False)
    _warn_unless_reproducible(result.solver_summary, "allocation.json")
    return 0


@app.command()
def validate(spec: Path = typer.Argument(..., help="The YAML spec to check."),
             as_json: bool = typer.Option(False, "--json", help=_JSON_HELP)) -> None:
    """Check a spec (syntax, units, references, graph) without solving."""

    def body() -> int:
        if _is_fleet_file(spec):
            from planner.fleet import load_fleet_spec  # start-up time

            load_fleet_spec(spec)
            if as_json:
                print(json.dumps({"spec": str(spec), "valid": True, "kind": "fleet"}, indent=2))
            else:
                out.print(f"{spec}: valid fleet spec", highlight=False)
            return 0
        from planner.spec import load_spec  # start-up time

        s = load_spec(spec)
        if as_json:
            print(json.dumps({"spec": str(spec), "valid": True, "kind": "model", "ops": len(s.graph.ops),
                              "tensors": len(s.graph.tensors), "devices": len(s.hardware.devices),
                              "links": len(s.hardware.links), "objective": str(s.objective)}, indent=2))
            return 0
        out.print(f"{spec}: valid — {len(s.graph.ops)} ops, {len(s.graph.tensors)} tensors, "
                  f"{len(s.hardware.devices)} devices, {len(s.hardware.links)} links, objective {s.objective}",
                  highlight=False)
        return 0

    _guarded(body, as_json)


@app.command()
def simulate(
    plan_dir: Path = typer.Argument(..., help="A directory written by `plan solve`."),
    numeric: bool = typer.Option(False, "--numeric", help="Also execute the arithmetic on random inputs and "
                                 "compare every tensor with a plain numpy evaluation of graph.json (rtol 1e-5), "
                                 "whatever the number of instructions."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random inputs for --numeric, and of --noise."),
    slow: Optional[str] = typer.Option(None, "--slow", metavar="NAME=FACTOR,...",
                                       help="What-if replay: every op on a device (or transfer on a link) takes "
                                            "FACTOR x its cycles, e.g. tpu0=2,pcie=1.5."),
    noise: float = typer.Option(0.0, "--noise", metavar="PCT", help="What-if replay: per-op jitter, uniform in "
                                "±PCT percent, drawn from --seed and the op's name."),
    stats_out: Optional[str] = typer.Option(None, "--stats-out", metavar="FILE", help="Write the what-if "
                                            "replay's measured per-op and per-transfer cycles as JSON (a new file)."),
    trace_out: Optional[str] = typer.Option(None, "--trace-out", metavar="FILE", help="Write the what-if "
                                            "replay as a Chrome/Perfetto trace (a new file)."),
    force: bool = typer.Option(False, "--force", help=_FORCE_FILE_HELP),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Verify PLAN_DIR: replay its binaries and check every figure of its files against the replay.

    Exit 2 names the first disagreement (a tampered or malformed directory); with --numeric,
    numbers that differ from the reference although every file is as written exit 3 (a bug).
    With --slow, --noise, --stats-out or --trace-out it then replays the verified plan again on
    slower hardware (a what-if: not a check of the plan) and writes what that replay measured.
    """

    def body() -> int:
        _check_flags(seed=seed, max_seed=2**63 - 1)
        for target in (stats_out, trace_out):
            if target is not None:
                check_file_target(target, force=force, inputs=[plan_dir])
        from planner.verify import verify_plan_dir  # start-up time

        verdict = verify_plan_dir(plan_dir, numeric=numeric, seed=seed)
        what_if = None
        if slow is not None or noise or stats_out is not None or trace_out is not None:
            from planner.replan.commands_simulate import write_what_if  # start-up time

            what_if = write_what_if(verdict, slow, noise, seed, stats_out, trace_out, force)
        if as_json:
            print(json.dumps({**_verdict_summary(verdict), **({} if what_if is None else {"what_if": what_if})},
                             indent=2))
            return 0
        out.print(verdict.summary(), highlight=False)
        if verdict.numeric is not None:
            comparison = verdict.numeric.comparison
            out.print(verdict.numeric.summary() + ("" if comparison is None else
                      f"; {comparison.instructions:,} instructions at {comparison.instructions_per_s:,.0f}/s"),
                      highlight=False)
        if what_if is not None:
            out.print(f"what-if replay (not the plan's timing): makespan {what_if['makespan_cycles']:,} cycles, "
                      f"{what_if['change']:+.2%} against the plan" + "".join(f"; wrote {f}" for f in what_if["wrote"]),
                      highlight=False)
        return 0

    _guarded(body, as_json)


def _verdict_summary(verdict) -> dict[str, Any]:
    """``plan simulate --json``: what was verified, and the replay's figures."""
    plan = verdict.plan
    makespan = verdict.simulation.makespan_cycles
    summary = {"plan_dir": str(verdict.plan_dir), "verified": True, "objective_kind": plan.objective_kind,
               "objective": plan.objective, "makespan_cycles": makespan,
               "makespan_us": round(makespan * 1e6 / plan.clock_hz, 6), "instructions": verdict.instructions}
    if verdict.numeric is not None:
        summary["numeric"] = verdict.numeric.claim
    return summary


@app.command()
def schema(as_json: bool = typer.Option(False, "--json", help="Accepted for uniformity: the schema is JSON; "
                                        "errors come as JSON too.")) -> None:
    """Print the JSON Schema of every spec, model or fleet (for editors)."""

    def body() -> int:
        from planner.schema import plan_json_schema  # start-up time

        print(json.dumps(plan_json_schema(), indent=2))
        return 0

    _guarded(body, as_json)


@app.command("import")
def import_(
    source: Path = typer.Argument(..., help="An ONNX model, an STG task graph, a jsplib job shop or a "
                                            "dnn-partitioning JSON."),
    output: str = typer.Option(..., "-o", "--output", metavar="SPEC.yaml",
                               help="Where to write the spec YAML (a new file; see --force)."),
    force: bool = typer.Option(False, "--force", help=_FORCE_FILE_HELP),
    objective: Optional[str] = typer.Option(None, "--objective", help="dnn-partitioning only: latency, "
                                            "throughput or max-load (default: from the file's directory)."),
    contiguous: bool = typer.Option(False, "--contiguous", help="dnn-partitioning max-load: contiguous splits."),
    dim: Optional[list[str]] = typer.Option(None, "--dim", help="ONNX only: NAME=VALUE gives a symbolic "
                                            "dimension a value (repeatable), e.g. --dim N=1."),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Import a model or a public benchmark instance as a spec."""

    def body() -> int:
        check_file_target(output, force=force, inputs=[source])  # a refused -o answers before the slow imports
        from planner.importers import import_file, write_spec_yaml  # start-up time
        from planner.graph.onnx_read import parse_dim_options  # start-up time

        options: dict[str, Any] = {}
        if objective is not None or contiguous:
            if source.suffix.lower() != ".json":
                raise SpecError(f"{source}: --objective and --contiguous apply to dnn-partitioning JSON files only")
            if objective is not None and objective not in ("latency", "throughput", "max-load", "max_load"):
                raise SpecError(f"--objective: expected latency, throughput or max-load, got {objective!r}")
            options = {"objective": objective, "contiguous": contiguous}
        if dim:
            options["dims"] = parse_dim_options(dim)
        result = import_file(source, **options)
        header = [f"imported from {source.name} by plan import ({result.format})"]
        if result.notes:
            header += ["imported with approximations:", *(f"- {n}" for n in result.notes)]
        write_spec_yaml(result.spec, output, header=header, force=force, inputs=[source])
        if as_json:
            print(json.dumps({"output": str(output), "format": result.format, "notes": list(result.notes)},
                             indent=2))
            return 0
        if result.notes:
            out.print("imported with approximations:\n" + "\n".join(f"  {n}" for n in result.notes), highlight=False)
        out.print(f"wrote {output}", highlight=False)
        return 0

    _guarded(body, as_json)


@app.command()
def quote(
    spec: Path = typer.Argument(..., help="A fleet spec."),
    output: Optional[str] = typer.Option(None, "-o", "--output", metavar="FILE",
                                         help="JSON file for the quote (default: out/<spec file name>-quote.json; "
                                              "a new file, see --force)."),
    force: bool = typer.Option(False, "--force", help=_FORCE_FILE_HELP),
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Price each tenant per operation; write the quote as JSON (default out/<spec>-quote.json), say where."""

    def body() -> int:
        from planner.fleet import load_fleet_spec, quote as make_quote  # start-up time

        q = make_quote(load_fleet_spec(spec))
        target = (Path("out") / output_name(f"{spec.stem}-quote.json", "the spec file's name")
                  if output is None else output)
        q.write_quote_json(target, force=force, inputs=[spec])
        if as_json:
            print(json.dumps({"output": str(target), "quote": q.to_dict()}, indent=2))
            return 0
        out.print(_rows_table(f"quote {spec.stem}", q.quote_rows))
        out.print(f"wrote {target}", highlight=False)
        return 0

    _guarded(body, as_json, solves=True)


class _Backend(str, enum.Enum):
    """``plan sweep --backend`` (see planner.sweeps.backends)."""

    local = "local"
    ray = "ray"


@app.command()
def sweep(
    spec: Path = typer.Argument(..., help="The base model spec (YAML)."),
    sets: list[str] = typer.Option(..., "--set", metavar="PATH=V1,V2,...",
                                   help="A spec path and the values it takes, e.g. hardware.devices[0].count=2,4,8 "
                                        "or models[0].generator.batch=1,8 (repeatable: the cross product is swept)."),
    output: str = typer.Option(..., "-o", "--output", metavar="DIR",
                               help="The sweep directory: new, empty, or a sweep to resume (scenarios whose "
                                    "directories verify are not planned again). Nothing else is replaced."),
    jobs: int = typer.Option(max(1, (os.cpu_count() or 2) // 2), "--jobs", "-j",
                             help="Scenarios planned at once (processes, or the local Ray's CPUs)."),
    backend: _Backend = typer.Option(_Backend.local, "--backend",
                                     help="local: a process pool; ray: Ray tasks (pip install 'plan\\[ray]')."),
    address: Optional[str] = typer.Option(None, "--address", help="With --backend ray: an existing Ray "
                                          "cluster's address (default: start Ray on this machine)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Seconds per scenario (overrides the spec)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Solver workers per scenario (overrides the spec)."),
    seed: _Seed = None,
    no_numeric: bool = typer.Option(False, "--no-numeric", help="Skip the numeric replay of every scenario."),
    quiet: _Quiet = False,
    as_json: bool = typer.Option(False, "--json", help=_JSON_HELP),
) -> None:
    """Plan every combination of --set values; write one plan directory per scenario and one results table.

    Exit 0 when every scenario has a plan, 1 when one is infeasible, 4 when one found no plan
    within its time limit (its row says so; the others are written).
    """

    def body() -> int:
        _check_flags(time_limit, workers, seed)
        if not 1 <= jobs <= 1024:
            raise SpecError(f"--jobs: expected an integer from 1 to 1024, got {jobs}")
        if address is not None and backend is not _Backend.ray:
            raise SpecError("--address applies to --backend ray only")
        from planner.sweeps import sweep as run_sweep  # start-up time

        def progress(name: str, row: dict, reused: bool) -> None:
            if not (quiet or as_json):
                what = "done before, verified" if reused else row["status"]
                err.print(f"{name}: {what}" + ("" if row["objective"] is None else f", objective {row['objective']:,}"),
                          highlight=False, markup=False)

        result = run_sweep(spec, sets, output, jobs=jobs, backend=backend.value, address=address,
                           time_limit_s=time_limit, workers=workers, seed=seed,
                           numeric="off" if no_numeric else "default", on_scenario=progress)
        if as_json:
            print(json.dumps({"output": str(result.output), "files": [str(f) for f in result.files],
                              "reused": list(result.reused), "rows": list(result.rows)}, indent=2))
        elif not quiet:
            out.print(_sweep_table(result))
            out.print(f"wrote {result.output}/: {', '.join(f.name for f in result.files)} and "
                      f"{len(result.rows)} plan directories ({len(result.reused)} done before)", highlight=False)
        statuses = {r["status"] for r in result.rows}
        return 1 if "INFEASIBLE" in statuses else 4 if "NO_PLAN" in statuses else 0

    _guarded(body, as_json, solves=True)


def _sweep_table(result) -> Table:
    from planner.units import format_cycles_time, format_rate  # start-up time

    paths = list(result.columns[1:result.columns.index("status")])  # the varied spec paths
    if "makespan_us" not in result.columns:  # a fleet sweep
        return _fleet_sweep_table(result, paths)
    table = Table(title=f"sweep {result.output}", title_justify="left")
    for col in ("scenario", *paths, "status", "objective", "gap", "makespan", "throughput"):
        table.add_column(col, justify="left" if col in ("scenario", "status") else "right")
    for r in result.rows:
        makespan = None if r["makespan_us"] is None else format_cycles_time(r["makespan_us"], 10**6)
        table.add_row(r["scenario"], *(json.dumps(r[p]) if not isinstance(r[p], str) else r[p] for p in paths),
                      r["status"], "-" if r["objective"] is None else f"{r['objective']:,}",
                      "-" if r["gap"] is None else f"{100 * r['gap']:.2f}%", makespan or "-",
                      format_rate(r["throughput_per_s"]))
    return table


def _fleet_sweep_table(result, paths: list[str]) -> Table:
    peaks = [c for c in result.columns if c.startswith("peak_util.")]
    table = Table(title=f"sweep {result.output}", title_justify="left")
    for col in ("scenario", *paths, "status", "mode", "objective", "gap", "processors", "cost",
                *(f"peak {c.split('.', 1)[1]}" for c in peaks)):
        table.add_column(col, justify="left" if col in ("scenario", "status", "mode") else "right")
    for r in result.rows:
        table.add_row(r["scenario"], *(json.dumps(r[p]) if not isinstance(r[p], str) else r[p] for p in paths),
                      r["status"], r["mode"] or "-", "-" if r["objective"] is None else f"{r['objective']:,}",
                      "-" if r["gap"] is None else f"{100 * r['gap']:.2f}%",
                      "-" if r["processors_used"] is None else str(r["processors_used"]),
                      "none" if r["cost"] is None else f"{r['cost']:,}",
                      *("-" if r.get(c) is None else f"{100 * r[c]:.1f}%" for c in peaks))
    return table


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # start-up time

        print(f"plan {version('plan')}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                       help="Print plan's version and exit.")) -> None:
    """Plan ML models on accelerators: place, schedule, lower, verify."""


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``plan`` console script.

    With ``--json`` a usage error (an unknown option, a missing argument) is JSON on stdout too.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if "--json" not in args:
        return app(args=args, prog_name="plan")
    try:
        return app(args=args, prog_name="plan", standalone_mode=False)
    except typer.TyperException as e:  # a usage error: typer's click parses the command line
        e.show()
        code = getattr(e, "exit_code", 2)
        print(json.dumps({"error": e.format_message(), "exit_code": code}), flush=True)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
