"""plan: a declarative, constraint-solving planner for ML models on accelerators.

Python API for capacity-planning scripts::

    import planner
    from planner import load_spec, solve
    plan = solve(load_spec("specs/demo.yaml"), time_limit_s=10)
    print(plan.status, plan.objective, plan.bound, plan.gap)

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

from typing import Any

__all__ = ["load_spec", "solve", "sweep", "Plan"]


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
    return run(spec, time_limit_s=time_limit_s, workers=workers, seed=seed, search=search).plan


def __getattr__(name: str):
    if name == "sweep":  # the package planner.sweep, callable as planner.sweep(spec, sets, output, ...)
        import planner.sweep  # start-up time: `import planner` stays light

        return planner.sweep
    if name == "Plan":
        from planner.plan import Plan  # start-up time: `import planner` stays light

        return Plan
    raise AttributeError(name)
