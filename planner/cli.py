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
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from planner.errors import EXIT_INTERNAL, PlannerError, SpecError
from planner.interrupts import handle_interrupts
from planner.safe_output import atomic_directory, check_directory_target, check_file_target, output_name

__all__ = ["app", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Plan ML models on accelerators: place, schedule, lower, verify.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


class _Search(str, enum.Enum):
    """``plan solve --search`` (see solvers.budget)."""

    deterministic = "deterministic"
    until_limit = "until-limit"


def _guarded(fn: Callable[[], int | None]) -> None:
    """Run a command body, mapping errors to messages and stable exit codes."""
    _watch_solves_for_tests()
    with handle_interrupts(stop=_stop_running_solvers) as guard:
        try:
            code = _mapped(fn)
        except KeyboardInterrupt as e:  # planner.interrupts.Interrupted, or Python's own
            written = guard.outputs if guard is not None else []
            if written:
                err.print(f"interrupted; {', '.join(map(str, written))} had been written in full before it",
                          highlight=False, markup=False)
            else:
                err.print("interrupted; nothing was written", highlight=False, markup=False)
            code = getattr(e, "exit_code", 130)
    raise typer.Exit(code)


def _mapped(fn: Callable[[], int | None]) -> int:
    """The body's exit code; user and internal errors printed and mapped to theirs."""
    try:
        return fn() or 0
    except PlannerError as e:
        # The message may quote the user's text ("[/]" in a name): never read it as markup.
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, markup=True, soft_wrap=True)
        return e.exit_code
    except Exception as e:  # InternalError, or any exception nobody anticipated: a bug (exit 3)
        err.print(traceback.format_exc(), highlight=False, markup=False)
        err.print(f"[bold red]internal error (a bug in plan, please report it):[/] {type(e).__name__}: "
                  f"{escape(str(e))}", highlight=False, markup=True)
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


class _LiveLine:
    """A one-line live view of the incumbent, bound and gap, fed by the solver's callback.

    The line is re-rendered on every refresh, so the elapsed time ticks even while the
    solver finds nothing new.
    """

    def __init__(self, console: Console) -> None:
        self.start = time.perf_counter()
        self.point = None
        self.live = Live(self, console=console, refresh_per_second=4, transient=True)

    def __enter__(self) -> "_LiveLine":
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def __call__(self, point) -> None:
        self.point = point  # one reference swap: safe from the solver's thread

    def __rich__(self) -> Text:
        elapsed = f"{time.perf_counter() - self.start:.1f} s"
        p = self.point
        if p is None:
            return Text(f"solving  {elapsed}")
        bound = "-" if p.bound is None else f"{p.bound:,.0f}"
        gap = "-" if p.bound is None else f"{100 * abs(p.objective - p.bound) / max(1, abs(p.objective)):.2f}%"
        found_by = "heuristic" if p.source == "heuristic" else "incumbent"  # the heuristic's, before the search
        return Text(f"solving  {found_by} {p.objective:,.0f}  bound {bound}  gap {gap}  {elapsed}")


def _summary_table(plan, rows) -> Table:
    table = Table(title=f"plan {plan.spec_name}: {plan.status}", title_justify="left")
    for col in ("solver", "status", "objective", "bound", "gap"):
        table.add_column(col, justify="right" if col not in ("solver", "status") else "left")
    from planner.plan import relative_gap  # start-up time
    from planner.report import format_gap  # start-up time

    for r in rows:
        table.add_row(str(r["solver"]), str(r["status"]),
                      "-" if r["objective"] is None else f"{r['objective']:,.0f}",
                      "-" if r["bound"] is None else f"{r['bound']:,.0f}",
                      format_gap(relative_gap(r["objective"], r["bound"])))
    return table


def _device_table(plan, hardware, peaks, graph) -> Table:
    from planner.report import device_rows, format_levels  # start-up time

    table = Table(title="devices", title_justify="left")
    for col in ("device", "profile", "streams", "ops", "busy cycles", "util", "memory: peak of capacity"):
        table.add_column(col, justify="left" if col in ("device", "profile", "memory: peak of capacity") else "right")
    for r in device_rows(plan, hardware, peaks, graph):
        table.add_row(r["device"], r["profile"], str(r["streams"]), r["ops"], f"{r['busy_cycles']:,}",
                      f"{100 * r['utilization']:.1f}%", format_levels(r["levels"]))
    return table


_OUTPUT_DIR_HELP = ("Output directory (default: out/<spec name>): a new or empty directory, or one that plan "
                    "wrote before (it is replaced whole); anything else needs --force.")
_FORCE_DIR_HELP = ("Replace an existing directory that plan did not write. Never a file, the spec's own "
                   "directory or its ancestors, the current directory or its ancestors, / or your home.")
_FORCE_FILE_HELP = "Replace an existing file (never a directory, a link or this command's input)."


@app.command()
def solve(
    spec: Path = typer.Argument(..., help="The YAML spec to plan."),
    output: Optional[str] = typer.Option(None, "-o", "--output", metavar="DIR", help=_OUTPUT_DIR_HELP),
    force: bool = typer.Option(False, "--force", help=_FORCE_DIR_HELP),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Seconds for the solver (overrides the spec)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Solver workers (overrides the spec)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed (overrides the spec)."),
    search: Optional[_Search] = typer.Option(
        None, "--search", help="deterministic (default): the same spec, seed and workers give the same files; "
                               "until-limit: search until the time limit (never reproducible). Overrides the spec."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan summary as JSON on stdout."),
    no_numeric: bool = typer.Option(False, "--no-numeric", help="Skip the numeric replay (by default it runs "
                                    "whenever the binaries hold at most 10^5 instructions and 10^10 "
                                    "multiply-accumulates)."),
) -> None:
    """Solve a spec, lower it to binaries, replay them, verify the directory, and only then write it."""
    search_mode = search.value if search is not None else None

    def body() -> int:
        if output is not None:  # refuse a bad -o before any slow import or solve
            check_directory_target(output, force=force, inputs=[spec])
        _check_flags(time_limit, workers, seed)
        from planner.fleet import FleetSpec  # start-up time
        from planner.output import baseline_rows, peak_memory_by_device, write_plan_dir  # start-up time
        from planner.pipeline import load, run  # start-up time
        from planner.stage_timing import stage, timing  # start-up time

        with timing() as clock:
            with stage("spec"):
                loaded = load(spec)
            fleet = isinstance(loaded, FleetSpec)
            target, inputs = _target_and_inputs(loaded, spec, output, fleet)
            check_directory_target(output if output is not None else target, force=force, inputs=inputs)
            live = None if (quiet or as_json or not err.is_terminal or fleet) else _LiveLine(err)
            with live or contextlib.nullcontext():
                outcome = run(loaded, time_limit_s=time_limit, workers=workers, seed=seed, progress=live,
                              search=search_mode)
            if fleet:
                return _write_fleet(outcome, spec, target, force, inputs, quiet, as_json)
            verdict = write_plan_dir(outcome, loaded, target, numeric="off" if no_numeric else "default",
                                     force=force, inputs=[spec])
        plan = outcome.plan
        limit = plan.solver.get("time_limit_s") or loaded.time_limit_s
        overrun = clock.overrun(limit, solve_limit_s=limit - plan.solver.get("post_solve_reserve_s", 0.0))
        if as_json:
            summary = {k: v for k, v in plan.to_dict().items() if k not in ("ops", "transfers", "resources")}
            summary.update(output=str(target), wall_time_s=round(plan.wall_time_s, 3),
                           stages_s={k: round(v, 3) for k, v in clock.seconds.items()}, overrun=overrun,
                           simulated_makespan_cycles=verdict.simulation.makespan_cycles,
                           numeric=verdict.numeric.claim)
            print(json.dumps(summary, indent=2))
        elif not quiet:
            out.print(_summary_table(plan, baseline_rows(outcome)))
            out.print(_device_table(plan, loaded.hardware, peak_memory_by_device(verdict.simulation), loaded.graph))
            out.print(f"verified by replay: makespan {verdict.simulation.makespan_cycles:,} cycles; every figure of "
                      f"the directory checked by the independent verifier in {verdict.seconds:.2f} s", highlight=False)
            out.print(verdict.numeric.summary(), highlight=False)
            out.print(f"wrote {target}/ in {clock.total_s:.1f} s ({clock.line()})", highlight=False)
        if overrun and not quiet:
            err.print(f"[yellow]warning:[/yellow] {overrun}", highlight=False)
        _warn_unless_reproducible(plan.solver)
        return 0

    _guarded(body)


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
        why = ("the wall-clock safety net stopped the search before its deterministic budget was spent "
               "(the machine was more than 3x slower than calibrated, or busy)")
    err.print(f"[yellow]warning:[/yellow] this plan is not reproducible: {why}; "
              f"{where} says solver.reproducible: false", highlight=False)


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
def validate(spec: Path = typer.Argument(..., help="The YAML spec to check.")) -> None:
    """Check a spec (syntax, units, references, graph) without solving."""

    def body() -> int:
        from planner.fleet import is_fleet_spec  # start-up time

        if is_fleet_spec(spec):
            from planner.fleet import load_fleet_spec  # start-up time

            load_fleet_spec(spec)
            out.print(f"{spec}: valid fleet spec", highlight=False)
            return 0
        from planner.spec import load_spec  # start-up time

        s = load_spec(spec)
        out.print(f"{spec}: valid — {len(s.graph.ops)} ops, {len(s.graph.tensors)} tensors, "
                  f"{len(s.hardware.devices)} devices, {len(s.hardware.links)} links, objective {s.objective}",
                  highlight=False)
        return 0

    _guarded(body)


@app.command()
def simulate(
    plan_dir: Path = typer.Argument(..., help="A directory written by `plan solve`."),
    numeric: bool = typer.Option(False, "--numeric", help="Also execute the arithmetic on random inputs and "
                                 "compare every tensor with a plain numpy evaluation of graph.json (rtol 1e-5), "
                                 "whatever the number of instructions."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random inputs for --numeric."),
) -> None:
    """Verify PLAN_DIR: replay its binaries and check every figure of its files against the replay.

    Exit 2 names the first disagreement (a tampered or malformed directory); with --numeric,
    numbers that differ from the reference although every file is as written exit 3 (a bug).
    """

    def body() -> int:
        _check_flags(seed=seed, max_seed=2**63 - 1)
        from planner.verify import verify_plan_dir  # start-up time

        verdict = verify_plan_dir(plan_dir, numeric=numeric, seed=seed)
        out.print(verdict.summary(), highlight=False)
        if verdict.numeric is not None:
            comparison = verdict.numeric.comparison
            out.print(verdict.numeric.summary() + ("" if comparison is None else
                      f"; {comparison.instructions:,} instructions at {comparison.instructions_per_s:,.0f}/s"),
                      highlight=False)
        return 0

    _guarded(body)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the spec (for editors)."""

    def body() -> int:
        from planner.spec import spec_json_schema  # start-up time

        print(json.dumps(spec_json_schema(), indent=2))
        return 0

    _guarded(body)


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
) -> None:
    """Import a model or a public benchmark instance as a spec."""

    def body() -> int:
        from planner.importers import import_file, write_spec_yaml  # start-up time
        from planner.graph.onnx_read import parse_dim_options  # start-up time

        check_file_target(output, force=force, inputs=[source])
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
        if result.notes:
            out.print("imported with approximations:\n" + "\n".join(f"  {n}" for n in result.notes), highlight=False)
        out.print(f"wrote {output}", highlight=False)
        return 0

    _guarded(body)


@app.command()
def quote(
    spec: Path = typer.Argument(..., help="A fleet spec."),
    output: Optional[str] = typer.Option(None, "-o", "--output", metavar="FILE",
                                         help="JSON file for the quote (default: out/<spec file name>-quote.json; "
                                              "a new file, see --force)."),
    force: bool = typer.Option(False, "--force", help=_FORCE_FILE_HELP),
) -> None:
    """Price each tenant per operation from the determined counts; write them as JSON."""

    def body() -> int:
        from planner.fleet import load_fleet_spec, quote as make_quote  # start-up time

        q = make_quote(load_fleet_spec(spec))
        target = (Path("out") / output_name(f"{spec.stem}-quote.json", "the spec file's name")
                  if output is None else output)
        q.write_quote_json(target, force=force, inputs=[spec])
        out.print(_rows_table(f"quote {spec.stem}", q.quote_rows))
        out.print(f"wrote {target}", highlight=False)
        return 0

    _guarded(body)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``plan`` console script."""
    return app(args=argv, prog_name="plan")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
