"""plan: a declarative, constraint-solving planner for ML models on accelerators.

Python API for capacity-planning scripts and notebooks::

    import planner
    plan = planner.solve("specs/demo.yaml", time_limit_s=10)
    print(plan.status, plan.objective, plan.bound, plan.gap)   # or just `plan` in a notebook
    planner.write(plan, "out/demo")       # the verified directory `plan solve` writes
    same = planner.read("out/demo")       # verified again, as `plan simulate` does
    ops = plan.to_frame()                 # a pandas DataFrame (the `notebook` extra)

    # what-if scenarios: every combination, one verified plan directory each, one table
    result = planner.sweep("specs/mlp.yaml", {"models[0].generator.batch": [1, 8]}, "out/sweep", jobs=2)

Glossary
--------
spec        the YAML description of hardware, models, objective, constraints, solver.
graph       the dataflow IR: ops are nodes, tensors flow on edges (:mod:`planner.graph`).
profile     a device type of the simulated deterministic ISA (:mod:`planner.isa`).
cycle       one tick of the plan's reference clock (``hardware.clock``, default 1 GHz).
plan        a placement and schedule with its optimality evidence (:class:`planner.plan.Plan`).
binary      a per-device program for the ISA (:mod:`planner.isa.binary`), replayed by the simulator.
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from pathlib import Path
from typing import Any

__all__ = ["load_spec", "solve", "write", "read", "sweep", "Plan", "UnverifiedPlanWarning"]

# What write(plan, ...) needs beside a plan, kept exactly as long as the plan object lives (keyed by
# its id, dropped by a finalizer when it is collected): the run behind a plan solve() returned (its
# outcome without the plan, so the entry does not keep the plan alive, and its spec), whose binaries
# the plan was verified with; or the directory read() verified it in.
_origins: dict[int, tuple[str, Any]] = {}


def _remember(plan: Any, kind: str, origin: Any) -> None:
    _origins[id(plan)] = (kind, origin)
    weakref.finalize(plan, _origins.pop, id(plan), None)


class UnverifiedPlanWarning(UserWarning):
    """:func:`read` returned a plan without verifying its directory (``verify=False``)."""


def load_spec(source: Any):
    """Load and validate a spec from a YAML path or a dict (see :mod:`planner.spec`)."""
    from planner.spec import load_spec as _load  # start-up time: `import planner` stays light

    return _load(source)


def solve(spec: Any, *, time_limit_s: float | None = None, workers: int | None = None,
          seed: int | None = None, search: str | None = None):
    """Plan a spec (path, dict or loaded spec) and return the verified :class:`Plan`.

    The plan is returned only after the simulator replayed its binaries and agreed with it.
    ``search="deterministic"`` (the spec's default) gives the same plan for the same spec,
    seed and workers; ``"until-limit"`` searches until the wall clock (never reproducible).
    ``plan.solver["reproducible"]`` says which one you got. A fleet spec has no single plan:
    :func:`planner.pipeline.run` returns its :class:`~planner.fleet.FleetResult`.
    """
    from planner.errors import SpecError  # start-up time: `import planner` stays light
    from planner.pipeline import load, route_name, run  # start-up time: `import planner` stays light

    if search is not None and search not in ("deterministic", "until-limit"):
        raise ValueError(f"search must be 'deterministic' or 'until-limit', got {search!r}")
    spec = load(spec)
    if route_name(spec) == "fleet":
        raise SpecError("a fleet spec has no single plan: planner.pipeline.run(spec) returns its FleetResult",
                        file=None if spec.source is None else str(spec.source))
    outcome = run(spec, time_limit_s=time_limit_s, workers=workers, seed=seed, search=search)
    _remember(outcome.plan, "run", (dataclasses.replace(outcome, plan=None), spec))  # write() needs both
    return outcome.plan


def write(source: Any, directory: str | Path, *, spec: Any = None, force: bool = False,
          numeric: str = "default") -> Path:
    """Write a plan's verified directory (plan.json, binaries, report.md, report.html, trace.json, ...).

    ``source`` is a :class:`Plan` returned by :func:`solve` (its run is kept while the plan
    lives), the ``Outcome`` of :func:`planner.pipeline.run`
    (with the loaded ``spec`` it ran), or a :class:`Plan` returned by :func:`read` (its
    verified directory is copied). The directory
    is verified as ``plan simulate`` would before it is put in place, exactly as ``plan solve``
    writes it; ``force`` replaces a directory that is not a previous output.

    Returns the directory. Raises :class:`ValueError` for a plan whose run is not kept, and
    :class:`planner.errors.PlannerError` subclasses for a refused target.

    Examples
    --------
    >>> import tempfile, planner
    >>> plan = planner.solve("specs/taskgraph.yaml", time_limit_s=5, workers=1)
    >>> out = planner.write(plan, Path(tempfile.mkdtemp()) / "taskgraph")
    >>> sorted(p.name for p in out.glob("report.*"))
    ['report.html', 'report.md']
    >>> planner.read(out).objective == plan.objective
    True
    """
    from planner.output import write_plan_dir  # start-up time: `import planner` stays light

    target = Path(directory)
    if hasattr(source, "binaries") and hasattr(source, "plan"):  # an Outcome of planner.pipeline.run
        if spec is None:
            raise ValueError("planner.write: an Outcome is written with the spec it ran: write(outcome, dir, spec=spec)")
        write_plan_dir(source, load_spec(spec) if isinstance(spec, (str, Path, dict)) else spec, target,
                       numeric=numeric, force=force)
        return target
    kind, origin = _origins.get(id(source), (None, None))
    if kind == "run":
        outcome, run_spec = origin
        write_plan_dir(dataclasses.replace(outcome, plan=source), run_spec, target, numeric=numeric, force=force)
        return target
    if kind == "read":
        return _copy_verified(origin, target, force=force)
    raise ValueError("planner.write: this plan's binaries are not kept (write takes a plan returned by "
                     "planner.solve or planner.read, or the Outcome of planner.pipeline.run); solve again "
                     "and write the plan it returns")


def _copy_verified(origin: Path, target: Path, *, force: bool) -> Path:
    """Copy a verified plan directory's files (re-verified in place before they replace ``target``)."""
    import json  # start-up time: `import planner` stays light
    import shutil  # start-up time

    from planner.safe_output import atomic_directory  # start-up time
    from planner.verify import verify_plan_dir  # start-up time

    files = json.loads((origin / "plan.json").read_text())["files"]
    with atomic_directory(target, force=force) as tmp:
        for name in ["plan.json", *files]:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin / name, tmp / name)
        verify_plan_dir(tmp)  # report.html is among the files, checked and redrawn
    return target


def read(directory: str | Path, *, verify: bool = True, numeric: bool = False):
    """The :class:`Plan` of a directory ``plan solve`` (or :func:`write`) wrote, verified as ``plan simulate`` does.

    With ``verify=True`` (the default) every claim of the directory is checked against the
    replay of its binaries first (``numeric=True`` adds the numeric replay), and a directory
    that fails raises :class:`planner.errors.VerificationError` naming the file and field.
    With ``verify=False`` plan.json is read as it is and an :class:`UnverifiedPlanWarning` says so.

    Examples
    --------
    >>> import planner
    >>> planner.read("/nonexistent")
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: plan.json: missing: is /nonexistent a directory `plan solve` wrote?
    """
    directory = Path(directory)
    if verify:
        from planner.verify import verify_plan_dir  # start-up time: `import planner` stays light

        plan = verify_plan_dir(directory, numeric=numeric).plan
        _remember(plan, "read", directory)
        return plan
    import json  # start-up time

    from planner.plan import Plan as _Plan  # start-up time

    warnings.warn(f"{directory}: plan read WITHOUT verification (verify=False); `plan simulate {directory}` or "
                  "planner.read(directory) checks it against its binaries", UnverifiedPlanWarning, stacklevel=2)
    return _Plan.from_dict(json.loads((directory / "plan.json").read_text()))


def __getattr__(name: str):
    if name == "sweep":  # planner.sweep(spec, sets, output, ...): the function of planner.sweeps
        from planner.sweeps import sweep  # start-up time: `import planner` stays light

        return sweep
    if name == "Plan":
        from planner.plan import Plan  # start-up time: `import planner` stays light

        return Plan
    raise AttributeError(name)
