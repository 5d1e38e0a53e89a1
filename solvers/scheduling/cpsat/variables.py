"""Variables of the CP-SAT scheduling model (see :mod:`solvers.scheduling.cpsat.model`).

One job: create the start/end, placement and op-interval variables and keep their
handles (:class:`SchedulingVars`), with the literal helpers every constraint family uses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from solvers.scheduling.cpsat.extraction import extract_solution
from solvers.scheduling.problem import SchedulingProblem, SchedulingSolution

__all__ = ["SchedulingVars", "create_variables", "literal_and", "enforce_if"]

TRUE = True  # a literal known to be true (single allowed device)




@dataclass
class SchedulingVars:
    """Handles of the model's variables, with queries and :meth:`extract`.

    Examples
    --------
    >>> p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
    >>> v = create_variables(cp_model.CpModel(), p, horizon=20)
    >>> sorted(v.allowed[0]), v.horizon
    ([0, 1], 20)
    """

    problem: SchedulingProblem
    horizon: int
    allowed: list[tuple[int, ...]]
    start: list[Any] = field(default_factory=list)
    end: list[Any] = field(default_factory=list)
    x: dict[tuple[int, int], Any] = field(default_factory=dict)
    op_iv: dict[tuple[int, int], Any] = field(default_factory=dict)
    ts: dict[int, Any] = field(default_factory=dict)
    y: dict[tuple[int, int, int], Any] = field(default_factory=dict)
    z: dict[tuple[int, int], Any] = field(default_factory=dict)
    t_iv: dict[tuple[int, int], Any] = field(default_factory=dict)
    bend: dict[int, Any] = field(default_factory=dict)
    recv: dict[tuple[int, int], Any] = field(default_factory=dict)
    used: dict[tuple[int, int], Any] = field(default_factory=dict)
    # (index into problem.shared_resident, device) -> "the device holds that tensor"
    held: dict[tuple[int, int], Any] = field(default_factory=dict)
    sym_classes: list[tuple[int, ...]] = field(default_factory=list)
    objective: Any = None

    def lit(self, i: int, d: int):
        """The literal "op i on device d" (Python True/False when fixed)."""
        if d not in self.allowed[i]:
            return False
        return self.x[i, d]

    def value_of(self, solver: cp_model.CpSolver, lit) -> bool:
        if isinstance(lit, bool):
            return lit
        return bool(solver.boolean_value(lit))

    def device_of(self, solver: cp_model.CpSolver, i: int) -> int:
        for d in self.allowed[i]:
            if self.value_of(solver, self.x[i, d]):
                return d
        raise AssertionError(f"op {i} has no device in the solution")  # pragma: no cover

    def extract(self, solver: cp_model.CpSolver) -> SchedulingSolution:
        """The solver's solution as a :class:`SchedulingSolution` (streams by colouring)."""
        return extract_solution(self, solver)


def literal_and(model: cp_model.CpModel, a, b, name: str):
    """A literal equal to ``a and b`` (Python bools folded).

    Examples
    --------
    >>> m = cp_model.CpModel(); a = m.new_bool_var("a")
    >>> literal_and(m, a, True, "y") is a, literal_and(m, a, False, "y")
    (True, False)
    """
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    y = model.new_bool_var(name)
    model.add_bool_and([a, b]).only_enforce_if(y)
    model.add_bool_or([a.Not(), b.Not(), y])
    return y


def enforce_if(ct, *lits) -> None:
    """Enforce constraint ``ct`` only if every literal in ``lits`` holds (Python True dropped).

    Examples
    --------
    >>> m = cp_model.CpModel(); x = m.new_int_var(0, 5, "x"); b = m.new_bool_var("b")
    >>> enforce_if(m.add(x >= 3), b, True)
    """
    real = [lit for lit in lits if lit is not True]
    if real:
        ct.only_enforce_if(real)


def create_variables(model: cp_model.CpModel, problem: SchedulingProblem, horizon: int,
                     placement: tuple[int, ...] | None = None) -> SchedulingVars:
    """Start/end, placement literals and op intervals (``placement`` fixes every op's device).

    Examples
    --------
    >>> p = SchedulingProblem(((4, -1), (3, 3)), (), (1, 1), ((-1, 0), (0, -1)), ())
    >>> v = create_variables(cp_model.CpModel(), p, 10)
    >>> v.lit(0, 0), v.lit(0, 1)
    (True, False)
    """
    n = problem.num_ops
    allowed = [((placement[i],) if placement is not None else problem.allowed_devices(i))
               for i in range(n)]
    v = SchedulingVars(problem, horizon, allowed)
    for i in range(n):
        s = model.new_int_var(0, horizon, f"start_{i}")
        e = model.new_int_var(0, horizon, f"end_{i}")
        v.start.append(s)
        v.end.append(e)
        if len(allowed[i]) == 1:
            d = allowed[i][0]
            v.x[i, d] = TRUE
            v.op_iv[i, d] = model.new_fixed_size_interval_var(s, problem.durations_cycles[i][d],
                                                              f"op_{i}_{d}")
            model.add(e == s + problem.durations_cycles[i][d])
            continue
        for d in allowed[i]:
            x = model.new_bool_var(f"x_{i}_{d}")
            v.x[i, d] = x
            v.op_iv[i, d] = model.new_optional_fixed_size_interval_var(
                s, problem.durations_cycles[i][d], x, f"op_{i}_{d}")
        model.add(e == s + sum(problem.durations_cycles[i][d] * v.x[i, d] for d in allowed[i]))
    return v


# ----------------------------------------------------------------------------- families
