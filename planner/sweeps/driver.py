"""``planner.sweep``: plan every scenario of a grid and write one table of their results.

The sweep directory holds ``sweep.json`` (the base spec's sha256 and the solver options, so a
resumed sweep is the same sweep), one plan directory per scenario, ``results.csv``,
``results.jsonl`` (and ``results.parquet`` with pyarrow) and one ``objective-<parameter>.svg``
per varied parameter. A fleet spec (a top-level ``fleet:``) sweeps the same way, each scenario a
fleet directory (:mod:`planner.sweeps.fleet_jobs`) and the table the fleet's columns. It may be a
new or empty directory, or one that ``plan sweep`` wrote before, which resumes: scenarios whose
directories verify are not planned again. Nothing else is ever replaced (the rules of
:mod:`planner.safe_output`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from planner.errors import SpecError
from planner.reader import read_text_file, read_yaml
from planner.safe_output import OutputTargetError, atomic_file, check_directory_target, is_plan_output
from planner.spec import load_spec
from planner.sweeps.backends import run_jobs
from planner.sweeps.fleet_jobs import check_fleet_scenario, priced
from planner.sweeps.grid import Scenario, Variation, parse_set, scenarios
from planner.sweeps.jobs import ScenarioJob
from planner.sweeps.plot import objective_svg
from planner.sweeps.table import csv_text, jsonl_text, parquet_available, table_columns, write_parquet

__all__ = ["SweepResult", "sweep"]

_SWEEP_FILE = "sweep.json"
_RESULT_FILES = re.compile(r"(sweep\.json|results\.(csv|jsonl|parquet)|objective-[^/]+\.svg|\.plan-(tmp|old)-.*)")


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: its rows in grid order, the table's columns, and where it wrote."""

    output: Path
    rows: tuple[dict[str, Any], ...]
    columns: tuple[str, ...]
    files: tuple[Path, ...]
    reused: tuple[str, ...]  # scenarios found done (verified) and not planned again

    @property
    def all_planned(self) -> bool:
        return all(r["error"] is None for r in self.rows)


def _variations(sets: Sequence[str] | Mapping[str, Sequence[Any]]) -> list[Variation]:
    if isinstance(sets, Mapping):
        return [Variation(path=str(p), steps=parse_set(f"{p}=0").steps, values=tuple(v)) for p, v in sets.items()]
    return [parse_set(s) for s in sets]


def _read_base(spec: str | Path) -> tuple[dict[str, Any], str]:
    text = read_text_file(spec)
    document = read_yaml(text, file=str(spec))
    if not isinstance(document, dict):
        raise SpecError(f"{spec}: expected a mapping at the top of the spec")
    return document, hashlib.sha256(text.encode()).hexdigest()


def _validated(spec: Path, grid: Sequence[Scenario], fleet: bool) -> None:
    """Every scenario loads and validates, before anything runs (the first bad one is the error)."""
    for s in grid:
        try:
            if fleet:
                check_fleet_scenario(s.spec, spec.parent)
            else:
                load_spec(dict(s.spec), base_dir=spec.parent)
        except SpecError as e:
            values = ", ".join(f"{p}={v!r}" for p, v in s.values)
            raise SpecError(f"{spec}: scenario {s.name} ({values}): {e}") from None


def _claim_directory(output: Path, spec: Path, record: dict[str, Any]) -> None:
    """Refuse an output directory that is neither new, empty, nor this same sweep; write sweep.json."""
    check_directory_target(output, force=True, inputs=[spec])  # names, links, protected directories
    existing = output / _SWEEP_FILE
    if output.is_dir():
        foreign = [e.name for e in sorted(os.scandir(output), key=lambda e: e.name)
                   if not (_RESULT_FILES.fullmatch(e.name) and e.is_file(follow_symlinks=False))
                   and not (e.is_dir(follow_symlinks=False) and is_plan_output(e.path))]
        if foreign or (any(output.iterdir()) and not existing.is_file()):
            shown = ", ".join(foreign[:5]) or "no sweep.json"
            raise OutputTargetError(f"{output} holds files plan sweep did not write ({shown}); choose another "
                                    f"directory")
    if existing.is_file():
        try:
            before = json.loads(existing.read_text())
        except ValueError:
            raise OutputTargetError(f"{existing} is not a sweep.json plan wrote; choose another directory") from None
        changed = [k for k in record if before.get(k) != record[k]]
        if changed:
            raise SpecError(f"{output} holds a sweep with other {' and '.join(changed)}; resume it with the "
                            f"same spec and options, or choose another directory")
        return
    with atomic_file(existing) as tmp:
        tmp.write_text(json.dumps(record, indent=2) + "\n")


def _write_results(output: Path, rows: list[dict[str, Any]], variations: Sequence[Variation],
                   fleet: bool) -> list[Path]:
    paths = [v.path for v in variations]
    columns = table_columns(rows, paths, fleet)
    files = {output / "results.csv": csv_text(rows, columns), output / "results.jsonl": jsonl_text(rows, columns)}
    for i, v in enumerate(variations):
        slug = re.sub(r"[^A-Za-z0-9.+\-]+", "_", v.path).strip("_")
        files[output / f"objective-{slug}.svg"] = objective_svg(rows, v.path, v.values, paths)
    for path, text in files.items():
        with atomic_file(path, force=True) as tmp:  # ours: the directory was claimed as this sweep's
            tmp.write_text(text)
    written = list(files)
    if parquet_available():
        with atomic_file(output / "results.parquet", force=True) as tmp:
            write_parquet(rows, columns, tmp)
        written.append(output / "results.parquet")
    return written


def sweep(spec: str | Path, sets: Sequence[str] | Mapping[str, Sequence[Any]], output: str | Path, *,
          jobs: int = 1, backend: str = "local", address: str | None = None, time_limit_s: float | None = None,
          workers: int | None = None, seed: int | None = None, search: str | None = None,
          numeric: str = "default",
          on_scenario: Callable[[str, dict[str, Any], bool], None] | None = None) -> SweepResult:
    """Plan the cross product of ``sets`` over the spec at ``spec``; write every scenario and the table.

    Parameters
    ----------
    spec : str or Path
        The base spec (YAML): a model spec, or a fleet spec.
    sets : sequence of str, or mapping
        ``"PATH=V1,V2"`` texts as on the command line, or ``{path: [values]}``.
    output : str or Path
        The sweep directory (new, empty, or a sweep to resume).
    jobs : int
        Scenarios planned at once (``backend="local"``: processes; ``"ray"``: the local Ray's CPUs).
    backend : {"local", "ray"}
        Where scenarios run; ``address`` joins an existing Ray cluster.
    on_scenario : callable, optional
        Called as ``on_scenario(name, row, reused)`` when each scenario is done.

    Returns
    -------
    SweepResult

    Examples
    --------
    >>> import tempfile, planner
    >>> out = Path(tempfile.mkdtemp()) / "sweep"
    >>> result = planner.sweep("specs/mlp.yaml", {"models[0].generator.layers": [1, 2]}, out,
    ...                        time_limit_s=2)  # doctest: +SKIP
    >>> [r["scenario"] for r in result.rows]  # doctest: +SKIP
    ['layers-1', 'layers-2']
    """
    spec = Path(spec)
    output = Path(output)
    variations = _variations(sets)
    base, sha = _read_base(spec)
    fleet = "fleet" in base  # planner.fleet.is_fleet_data's test
    grid = scenarios(base, variations)
    _validated(spec, grid, fleet)
    record = {"tool": "plan sweep", "format_version": 1, "spec_sha256": sha,
              "options": {"time_limit_s": time_limit_s, "workers": workers, "seed": seed, "search": search,
                          "numeric": numeric}}
    _claim_directory(output, spec, record)
    todo = [ScenarioJob(name=s.name, values=s.values, spec=s.spec, base_dir=str(spec.parent.resolve()),
                        target=str(output / s.name), inputs=(str(spec),), time_limit_s=time_limit_s,
                        workers=workers, seed=seed, search=search, numeric=numeric, fleet=fleet,
                        priced=fleet and priced(s.spec)) for s in grid]
    rows, done_before = {}, set()
    for job, (row, reused) in run_jobs(todo, backend=backend, processes=jobs, address=address):
        rows[job.name] = row
        if reused:
            done_before.add(job.name)
        if on_scenario is not None:
            on_scenario(job.name, row, reused)
    ordered = [rows[s.name] for s in grid]
    reused_names = [s.name for s in grid if s.name in done_before]
    files = _write_results(output, ordered, variations, fleet)
    columns = table_columns(ordered, [v.path for v in variations], fleet)
    return SweepResult(output=output, rows=tuple(ordered), columns=tuple(columns), files=tuple(files),
                       reused=tuple(reused_names))
