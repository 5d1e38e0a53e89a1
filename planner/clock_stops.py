"""What plan.json's ``solver`` record says when a clock stopped one of a run's solves.

A deterministic run repeats byte for byte unless the wall-clock safety net stopped a solve
(``stopped_by: wall_clock``); an until-limit run never does (``time_limit``). Two places learn
of such a stop after the run's record is written: the islands route (its split, per-island
and global solves, :mod:`planner.islands.route`) and the memory plans' address searches
(:func:`planner.memory.addresses.collecting_net_stops`, read by
:meth:`planner.pipeline.Route.plan`). Both amend the record here, one way: ``stopped_by`` becomes
the most serious word, ``reproducible`` false, and the solves the net stopped are appended
to ``net_stops`` (report.md and the terminal name them).

Examples
--------
>>> run = {"search": "deterministic", "stopped_by": "finished", "reproducible": True}
>>> with_clock_stops(run, [("addresses d0/hbm", "wall_clock")])
{'search': 'deterministic', 'stopped_by': 'wall_clock', 'reproducible': False, 'net_stops': ['addresses d0/hbm']}
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from solvers.budget import combine_stops

__all__ = ["CLOCK_STOPS", "with_clock_stops"]

# The stop words of a clock, not of a budget or a proof: a run with one of them does not repeat.
CLOCK_STOPS = ("wall_clock", "time_limit")


def with_clock_stops(solver: Mapping[str, Any], stops: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """``solver`` (a plan's record) amended for the clock stops among ``stops`` ((name, ``stopped_by``)
    of each solve that steered the plan or a figure of plan.json): ``stopped_by`` the most
    serious of its own and theirs (:func:`~solvers.budget.combine_stops`), ``reproducible:
    false``, and the names the wall-clock net stopped appended to ``net_stops``, each name once
    (a memory plan and its baselines each pack the same device and level: on memory-mlp, three
    searches all named ``addresses tpu0/ddr3``, which the report listed three times). Without a
    clock stop, the record as it is. Keys keep their places; new ones go last.

    A record without ``search`` stays without it. No route writes one (every route's record is
    :func:`~solvers.budget.run_summary`'s: the latency/throughput and max-load strategies', the
    memory reduction's, and the islands route's, which is its global schedule's), so only a
    hand-made plan has none, and the stops cannot tell its search: an until-limit run's
    address searches stop on the deterministic budgets' net too. The islands route used to
    write ``search: deterministic`` then, the pipeline nothing.

    Examples
    --------
    >>> run = {"search": "deterministic", "stopped_by": "deterministic_budget", "reproducible": True}
    >>> with_clock_stops(run, [("one problem (no split)", "wall_clock"), ("islands split", "optimal")])
    {'search': 'deterministic', 'stopped_by': 'wall_clock', 'reproducible': False, \
'net_stops': ['one problem (no split)']}
    >>> with_clock_stops(run, [("island a (round 1)", "deterministic_budget")]) == run
    True
    >>> with_clock_stops({"net_stops": ["islands split"]}, [("addresses d0/hbm", "wall_clock")] * 2)
    {'net_stops': ['islands split', 'addresses d0/hbm'], 'stopped_by': 'wall_clock', 'reproducible': False}
    >>> with_clock_stops({"search": "until-limit"}, [("island a (round 1)", "time_limit")])
    {'search': 'until-limit', 'stopped_by': 'time_limit', 'reproducible': False}
    """
    clocks = [(name, stop) for name, stop in stops if stop in CLOCK_STOPS]
    if not clocks:
        return dict(solver)
    record = {**solver, "stopped_by": combine_stops([solver.get("stopped_by"), *(stop for _, stop in clocks)]),
              "reproducible": False}
    netted = [name for name, stop in clocks if stop == "wall_clock"]
    if netted:
        record["net_stops"] = list(dict.fromkeys([*solver.get("net_stops", []), *netted]))
    return record
