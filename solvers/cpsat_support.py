"""CP-SAT plumbing shared by every formulation: status map, progress recording, a runner,
and the registry of running solves that Ctrl-C stops.

Each family's ``solve`` maps CP-SAT's status through :data:`STATUS_MAP`, records
improvements with :class:`ProgressRecorder` (it only records: callbacks are slow), and
may use :func:`run_cpsat` to set time limit, workers, seed and logging in one place.

Every CP-SAT solve in ``solvers/`` and ``planner/`` runs through :func:`solve_stoppable`
(a test checks it). It switches off CP-SAT's own SIGINT catching
(``catch_sigint_signal``): left on, OR-Tools replaces the process's SIGINT handler for
the duration of the solve, turns the first Ctrl-C into a normal, early return (so the
caller goes on and writes its output) and afterwards resets SIGINT to the system default
instead of restoring the previous handler, so the next Ctrl-C kills the process without
any clean-up. Instead, the solve is registered while it runs, and
:func:`stop_running_solvers` (called by ``planner.interrupts`` from a thread as soon as a
signal arrives) calls ``stop_search()`` on every registered solver.

:class:`WallNet` is the wall-clock safety net of deterministic budgets (``solvers.budget``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ortools.sat.python import cp_model

from solvers.core import ProgressPoint, SolveOptions, Status

__all__ = ["STATUS_MAP", "ProgressRecorder", "WallNet", "run_cpsat", "solve_stoppable", "stop_running_solvers",
           "solve_counts", "interval_if", "integer_objective_bound"]

_LOG = logging.getLogger(__name__)

STATUS_MAP = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
    cp_model.UNKNOWN: Status.UNKNOWN,
    cp_model.MODEL_INVALID: Status.MODEL_INVALID,
}


class ProgressRecorder(cp_model.CpSolverSolutionCallback):
    """Records (time, objective, bound) at each improving solution and forwards it; nothing else.

    Examples
    --------
    >>> seen = []
    >>> m = cp_model.CpModel(); x = m.new_int_var(0, 3, "x"); m.minimize(x)
    >>> rec = ProgressRecorder(time.perf_counter(), seen.append)
    >>> _ = cp_model.CpSolver().solve(m, rec)
    >>> rec.points[-1].objective, len(seen) == len(rec.points)
    (0.0, True)
    """

    def __init__(self, t0: float, progress=None) -> None:
        super().__init__()
        self._t0 = t0
        self._sink = progress
        self.points: list[ProgressPoint] = []

    def on_solution_callback(self) -> None:
        p = ProgressPoint(time.perf_counter() - self._t0, self.objective_value, self.best_objective_bound)
        self.points.append(p)
        if self._sink is not None:
            self._sink(p)


class WallNet:
    """A wall-clock safety net: stops a CP-SAT search from a timer after ``seconds``.

    CP-SAT's own ``max_time_in_seconds`` cannot serve: it stops early by the longest gap it
    measured between two checks of the limit, which a busy machine stretches to seconds, and
    nothing in the response says which limit stopped the search. A timer that calls
    ``stop_search`` knows: :attr:`fired` is True exactly when the net stopped a search.

    Examples
    --------
    >>> m = cp_model.CpModel(); x = m.new_int_var(0, 5, "x"); m.minimize(x)
    >>> net = WallNet(60.0); solver = cp_model.CpSolver()
    >>> with net.watch(solver):
    ...     _ = solver.solve(m)
    >>> net.fired, solver.value(x)
    (False, 0)
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = max(0.0, seconds)
        self.fired = False

    @contextmanager
    def watch(self, solver: cp_model.CpSolver) -> Iterator[None]:
        """Arm the net for the solve run inside the ``with`` block."""
        def stop() -> None:
            self.fired = True
            solver.stop_search()

        timer = threading.Timer(self.seconds, stop)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()


BOUND_TOLERANCE = 1e-6
"""How far CP-SAT's float objective bound may sit from the integer it stands for."""


def integer_objective_bound(solver: cp_model.CpSolver) -> int:
    """The proven lower bound of a minimised objective with integer values: CP-SAT reports it
    as a float, which on a scaled objective can read 6.999999999999999 for 7. Truncating that
    (``int``) gives 6: still sound, but one below a proof of optimality, so a solve that proved
    its optimum reported FEASIBLE. Rounding up after taking off :data:`BOUND_TOLERANCE` gives 7,
    and stays sound when the float sits a hair above the integer (7.0000000001 gives 7, not 8).

    >>> class Solved:  # what a finished solve answers
    ...     best_objective_bound = 6.999999999999999
    >>> integer_objective_bound(Solved()), int(Solved.best_objective_bound)
    (7, 6)
    """
    return math.ceil(solver.best_objective_bound - BOUND_TOLERANCE)


def run_cpsat(model: cp_model.CpModel, options: SolveOptions, time_limit_s: float | None = None,
              *, net: WallNet | None = None, callback: cp_model.CpSolverSolutionCallback | None = None,
              **params: Any) -> tuple[Status, cp_model.CpSolver, tuple[ProgressPoint, ...]]:
    """Solve ``model`` with the shared settings; return (status, solver, progress).

    The one place that makes a ``CpSolver`` (a test checks it): time limit, workers, seed,
    ``params``, logging, then :func:`solve_stoppable`. Solvers with a deterministic budget
    call it through :meth:`solvers.budget.Budget.run_cpsat`. ``net``, when given, stops the
    search after its seconds of wall time (see :class:`WallNet`). ``callback`` replaces the
    progress recorder (the progress returned is then empty), for a caller that collects
    every solution itself.

    Examples
    --------
    >>> m = cp_model.CpModel(); x = m.new_int_var(0, 5, "x"); m.minimize(-x)
    >>> status, solver, _ = run_cpsat(m, SolveOptions(time_limit_s=1))
    >>> status.value, solver.value(x)
    ('OPTIMAL', 5)
    """
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s if time_limit_s is not None
                                                  else options.time_limit_s)
    solver.parameters.num_workers = options.num_workers
    solver.parameters.random_seed = options.random_seed
    for key, value in params.items():
        setattr(solver.parameters, key, value)
    if options.log is not None:
        solver.parameters.log_search_progress = True
        solver.log_callback = options.log
    recorder = ProgressRecorder(time.perf_counter(), options.progress)
    watch = callback if callback is not None else recorder
    if net is None:
        code = solve_stoppable(solver, model, watch)
    else:
        with net.watch(solver):
            code = solve_stoppable(solver, model, watch)
    status = STATUS_MAP.get(code, Status.UNKNOWN)
    _LOG.debug("cp-sat %s in %.3fs", solver.status_name(code), solver.wall_time)
    return status, solver, tuple(recorder.points)


_RUNNING: set[cp_model.CpSolver] = set()  # solves in progress, for stop_running_solvers
_RUNNING_LOCK = threading.Lock()
_STARTED = [0]  # solves started in this process (a list: updated under the lock)


def solve_stoppable(solver: cp_model.CpSolver, model: cp_model.CpModel,
                    callback: cp_model.CpSolverSolutionCallback | None = None) -> Any:
    """``solver.solve(model, callback)`` with CP-SAT's own SIGINT catching off, registered
    while it runs so that :func:`stop_running_solvers` can stop it.

    Examples
    --------
    >>> m = cp_model.CpModel(); x = m.new_int_var(0, 5, "x"); m.maximize(x)
    >>> solver = cp_model.CpSolver()
    >>> solve_stoppable(solver, m) == cp_model.OPTIMAL, solver.parameters.catch_sigint_signal
    (True, False)
    """
    solver.parameters.catch_sigint_signal = False
    with _RUNNING_LOCK:
        _RUNNING.add(solver)
        _STARTED[0] += 1
    try:
        return solver.solve(model, callback)
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(solver)


def stop_running_solvers() -> int:
    """Ask every solve now running in :func:`solve_stoppable` to stop; return how many.

    Safe from any thread: ``CpSolver.stop_search`` is asynchronous and the solve returns
    its best solution so far within milliseconds.

    Examples
    --------
    >>> stop_running_solvers()   # nothing is running
    0
    """
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for solver in running:
        solver.stop_search()
    return len(running)


def solve_counts() -> tuple[int, int]:
    """(solves started in this process, solves running now) through :func:`solve_stoppable`.

    Examples
    --------
    >>> started, running = solve_counts()
    >>> m = cp_model.CpModel(); _ = m.new_int_var(0, 1, "x")
    >>> _ = solve_stoppable(cp_model.CpSolver(), m)
    >>> solve_counts() == (started + 1, running)
    True
    """
    with _RUNNING_LOCK:
        return _STARTED[0], len(_RUNNING)


def interval_if(model: cp_model.CpModel, start, size, end, present, name: str):
    """An interval present if ``present`` holds: a plain one when ``present`` is a true constant
    (``True`` or ``1``), an optional one otherwise; fixed-size when ``size`` is an int (``end``
    is then ``start + size`` and may be None), else ``[start, end)`` of length ``size``.

    Examples
    --------
    Two intervals starting together, one always there and one present iff ``b``: they cannot
    both be, so ``b`` is false.

    >>> m = cp_model.CpModel(); s = m.new_int_var(0, 9, "s"); b = m.new_bool_var("b")
    >>> _ = m.add_no_overlap([interval_if(m, s, 3, None, True, "i"), interval_if(m, s, 3, None, b, "j")])
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> solver.solve(m) == cp_model.OPTIMAL, solver.boolean_value(b)
    (True, False)
    """
    if isinstance(present, int) and present:
        if isinstance(size, int):
            return model.new_fixed_size_interval_var(start, size, name)
        return model.new_interval_var(start, size, end, name)
    if isinstance(size, int):
        return model.new_optional_fixed_size_interval_var(start, size, present, name)
    return model.new_optional_interval_var(start, size, end, present, name)
