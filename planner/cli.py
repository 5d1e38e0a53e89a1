"""The ``plan`` command.

Exit codes: 0 solved (optimal, or feasible at the time limit) / verified; 1 infeasible
(the message says which constraint); 2 bad input (spec, flags, tampered output);
3 internal error (a bug: the only case that prints a traceback); 4 no plan found within
the time limit (neither a bug nor a proof of infeasibility: a longer limit may find one);
130 interrupted. ``planner.errors`` defines them.
"""

from __future__ import annotations

import json
import math
import sys
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

from planner.errors import EXIT_INTERNAL, InternalError, PlannerError, SpecError

__all__ = ["app", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Plan ML models on accelerators: place, schedule, lower, verify.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _guarded(fn: Callable[[], int | None]) -> None:
    """Run a command body, mapping errors to messages and stable exit codes."""
    try:
        code = fn() or 0
    except PlannerError as e:
        # The message may quote the user's text ("[/]" in a name): never read it as markup.
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, markup=True, soft_wrap=True)
        raise typer.Exit(e.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted; nothing was written")
        raise typer.Exit(130)
    except Exception as e:  # InternalError, or any exception nobody anticipated: a bug (exit 3)
        err.print(traceback.format_exc(), highlight=False, markup=False)
        err.print(f"[bold red]internal error (a bug in plan, please report it):[/] {type(e).__name__}: "
                  f"{escape(str(e))}", highlight=False, markup=True)
        raise typer.Exit(EXIT_INTERNAL)
    raise typer.Exit(code)


def _check_flags(time_limit: float | None = None, workers: int | None = None, seed: int | None = None,
                 *, max_seed: int | None = None) -> None:
    """Refuse flag values outside the spec's own limits (exit 2) before any work starts."""
    from planner.spec.limits import MAX_SEED, MAX_TIME_LIMIT_S, MAX_WORKERS

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
        return Text(f"solving  incumbent {p.objective:,.0f}  bound {bound}  gap {gap}  {elapsed}")


def _summary_table(plan, rows) -> Table:
    table = Table(title=f"plan {plan.spec_name}: {plan.status}", title_justify="left")
    for col in ("solver", "status", "objective", "bound", "gap"):
        table.add_column(col, justify="right" if col not in ("solver", "status") else "left")
    from planner.report import format_gap
    from solvers.core import relative_gap

    for r in rows:
        table.add_row(str(r["solver"]), str(r["status"]),
                      "-" if r["objective"] is None else f"{r['objective']:,.0f}",
                      "-" if r["bound"] is None else f"{r['bound']:,.0f}",
                      format_gap(relative_gap(r["objective"], r["bound"])))
    return table


def _device_table(plan, hardware, peaks) -> Table:
    from planner.report import device_rows, format_bytes

    table = Table(title="devices", title_justify="left")
    for col in ("device", "profile", "streams", "ops", "busy cycles", "util", "peak mem", "capacity"):
        table.add_column(col, justify="left" if col in ("device", "profile") else "right")
    for r in device_rows(plan, hardware, peaks):
        table.add_row(r["device"], r["profile"], str(r["streams"]), str(r["ops"]), f"{r['busy_cycles']:,}",
                      f"{100 * r['utilization']:.1f}%", format_bytes(r["peak_memory_bytes"]),
                      format_bytes(r["memory_capacity_bytes"]))
    return table


@app.command()
def solve(
    spec: Path = typer.Argument(..., help="The YAML spec to plan."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Output directory (default: out/<spec name>)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Seconds for the solver (overrides the spec)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Solver workers (overrides the spec)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed (overrides the spec)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan summary as JSON on stdout."),
) -> None:
    """Solve a spec, lower it to binaries, replay them, and write the plan directory."""

    def body() -> int:
        from planner.fleet import is_fleet_spec

        _check_flags(time_limit, workers, seed)
        if is_fleet_spec(spec):
            return _solve_fleet(spec, output, time_limit, workers, seed, quiet, as_json)
        from planner.output import baseline_rows, peak_memory_by_device, write_plan_dir
        from planner.pipeline import run
        from planner.spec import load_spec

        loaded = load_spec(spec)
        target = output or Path("out") / loaded.name
        live = None if (quiet or as_json or not err.is_terminal) else _LiveLine(err)
        if live:
            with live:
                outcome = run(loaded, time_limit_s=time_limit, workers=workers, seed=seed, progress=live)
        else:
            outcome = run(loaded, time_limit_s=time_limit, workers=workers, seed=seed)
        write_plan_dir(outcome, loaded, target)
        plan = outcome.plan
        if as_json:
            summary = {k: v for k, v in plan.to_dict().items() if k not in ("ops", "transfers", "resources")}
            summary.update(output=str(target), wall_time_s=round(plan.wall_time_s, 3),
                           simulated_makespan_cycles=outcome.simulation.makespan_cycles)
            print(json.dumps(summary, indent=2))
        elif not quiet:
            out.print(_summary_table(plan, baseline_rows(outcome)))
            out.print(_device_table(plan, loaded.hardware, peak_memory_by_device(outcome.simulation)))
            out.print(f"verified by replay: makespan {outcome.simulation.makespan_cycles:,} cycles; "
                      f"wrote {target}/ in {plan.wall_time_s:.1f} s", highlight=False)
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


def _solve_fleet(spec, output, time_limit, workers, seed, quiet, as_json) -> int:
    from planner.fleet import fleet_summary_rows, load_fleet_spec, solve_fleet, write_fleet_outputs
    from planner.output import atomic_directory

    fleet = load_fleet_spec(spec)
    result = solve_fleet(fleet, time_limit_s=time_limit, workers=workers, seed=seed)
    target = output or Path("out") / Path(spec).stem
    with atomic_directory(target) as tmp:
        write_fleet_outputs(result, tmp)
    rows = fleet_summary_rows(result)
    if as_json:
        print(json.dumps({"output": str(target), "rows": [dict(zip(rows[0], r)) for r in rows[1:]]}, indent=2))
    elif not quiet:
        out.print(_rows_table(f"fleet {Path(spec).stem}", rows))
        out.print(f"wrote {target}/", highlight=False)
    return 0


@app.command()
def validate(spec: Path = typer.Argument(..., help="The YAML spec to check.")) -> None:
    """Check a spec (syntax, units, references, graph) without solving."""

    def body() -> int:
        from planner.fleet import is_fleet_spec

        if is_fleet_spec(spec):
            from planner.fleet import load_fleet_spec

            load_fleet_spec(spec)
            out.print(f"{spec}: valid fleet spec", highlight=False)
            return 0
        from planner.spec import load_spec

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
                                 "compare every tensor with a plain numpy evaluation of graph.json (fp32, rtol 1e-5)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random inputs for --numeric."),
) -> None:
    """Replay the binaries in PLAN_DIR independently and check them against plan.json."""

    def body() -> int:
        from planner.errors import BinaryFormatError
        from planner.pipeline import verify

        _check_flags(seed=seed, max_seed=2**63 - 1)
        from planner.plan import Plan
        from planner.simulator import simulate_dir

        plan_file = plan_dir / "plan.json"
        if not plan_file.is_file():
            raise BinaryFormatError(f"{plan_file}: no plan.json here; is {plan_dir} a `plan solve` output?")
        try:
            plan = Plan.from_dict(json.loads(plan_file.read_text()))
        except (ValueError, KeyError, TypeError) as e:
            raise BinaryFormatError(f"{plan_file}: not a valid plan ({e})") from None
        sim = simulate_dir(plan_dir)
        try:
            verify(plan, sim)
        except InternalError as e:
            raise BinaryFormatError(f"{plan_dir}: the binaries do not match plan.json: {e}") from None
        out.print(f"verified: makespan {sim.makespan_cycles:,} cycles "
                  f"({getattr(sim, 'instruction_count', '?')} instructions replayed)", highlight=False)
        if numeric:
            from planner.numeric.compare import compare_plan_dir

            report = compare_plan_dir(plan_dir, seed=seed)
            out.print(f"numeric: {report.summary()}", highlight=False)
            if not report.ok:
                raise InternalError("the numeric replay disagrees with the reference evaluation:\n  "
                                    + "\n  ".join(report.failures()[:10]))
        return 0

    _guarded(body)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the spec (for editors)."""

    def body() -> int:
        from planner.spec import spec_json_schema

        print(json.dumps(spec_json_schema(), indent=2))
        return 0

    _guarded(body)


@app.command("import")
def import_(
    source: Path = typer.Argument(..., help="An ONNX model, an STG task graph, a jsplib job shop or a "
                                            "dnn-partitioning JSON."),
    output: Path = typer.Option(..., "-o", "--output", help="Where to write the spec YAML."),
    objective: Optional[str] = typer.Option(None, "--objective", help="dnn-partitioning only: latency, "
                                            "throughput or max-load (default: from the file's directory)."),
    contiguous: bool = typer.Option(False, "--contiguous", help="dnn-partitioning max-load: contiguous splits."),
) -> None:
    """Import a model or a public benchmark instance as a spec."""

    def body() -> int:
        from planner.errors import SpecError
        from planner.importers import import_model, write_spec_yaml

        options = {}
        if objective is not None or contiguous:
            if source.suffix.lower() != ".json":
                raise SpecError(f"{source}: --objective and --contiguous apply to dnn-partitioning JSON files only")
            if objective is not None and objective not in ("latency", "throughput", "max-load", "max_load"):
                raise SpecError(f"--objective: expected latency, throughput or max-load, got {objective!r}")
            options = {"objective": objective, "contiguous": contiguous}
        spec_dict = import_model(source, **options)
        write_spec_yaml(spec_dict, output)
        out.print(f"wrote {output}", highlight=False)
        return 0

    _guarded(body)


@app.command()
def quote(
    spec: Path = typer.Argument(..., help="A fleet spec."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="JSON file for the quote."),
) -> None:
    """Price each tenant per operation from the determined counts."""

    def body() -> int:
        from planner.fleet import load_fleet_spec, quote as make_quote

        q = make_quote(load_fleet_spec(spec))
        out.print(_rows_table(f"quote {spec.stem}", q.quote_rows))
        target = output or Path("out") / f"{spec.stem}-quote.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        q.write_quote_json(target)
        out.print(f"wrote {target}", highlight=False)
        return 0

    _guarded(body)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``plan`` console script."""
    return app(args=argv, prog_name="plan")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
