"""The solver registry: complete, unambiguous, and ``accepts`` agrees with ``solve``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import solvers
from solvers import registry
from solvers.colocation import ColocationObjective, ColocationProblem, VariantProblem
from solvers.islands import SplitProblem
from solvers.core import SolveOptions
from solvers.memory.levels import HierarchyProblem, LevelProblem
from solvers.memory.offsets import OffsetProblem
from solvers.placement import PlacementProblem
from solvers.scheduling import SchedulingProblem


def _solver_classes() -> set[type]:
    """Every public class defined under ``solvers`` with a ``name`` and a ``solve``."""
    found = set()
    for info in pkgutil.walk_packages(solvers.__path__, "solvers."):
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            if (inspect.isclass(value) and value.__module__ == module.__name__ and not attr.startswith("_")
                    and callable(getattr(value, "solve", None)) and hasattr(value, "name")):
                found.add(value)
    return found


def test_every_solver_class_under_solvers_is_registered():
    classes = _solver_classes()
    assert len(classes) >= 15  # the walk sees the package (15 solvers when the registry was made)
    registered = {type(registry.get(n)) for n in registry.names()}
    missing = sorted(c.__qualname__ for c in classes - registered)
    assert not missing, f"not in solvers.registry.SOLVERS: {missing}"


def test_each_solver_is_registered_once_under_a_qualified_name():
    kinds = [registry._kind(registry.get(n)) for n in registry.names()]
    assert len(kinds) == len(set(kinds))
    for name in registry.names():
        family, _, backend = name.rpartition(".")
        assert family in registry.families() and backend
        # the family is the package (or module) the solver (a portfolio's exact solver) lives in
        solver = registry.get(name)
        module = type(getattr(solver, "exact", solver)).__module__
        assert f"{module}.".startswith(f"solvers.{family}."), (name, module)
        assert registry.qualified_name(solver) == name


def test_short_names_are_ambiguous_qualified_names_are_not():
    short = [registry.get(n).name for n in registry.names()]
    assert short.count("cpsat") >= 4  # why the registry keys are qualified
    assert len(set(registry.names())) == len(registry.SOLVERS)


def test_unknown_names_raise_with_the_choices():
    with pytest.raises(KeyError, match="registered"):
        registry.get("scheduling.nope")
    with pytest.raises(KeyError, match="families"):
        registry.names("nope")


# Small feasible problems of every family; each solver either accepts one and solves it, or
# refuses it before any search.
_SCHED_ONE_DEVICE = SchedulingProblem(((2,), (3,), (3,), (2,), (3,)),
                                      ((0, 1, 0), (0, 2, 0), (0, 3, 0), (1, 4, 0)), (2,), ((-1,),), ((),) * 4)
_SCHED_TWO_DEVICES = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, 0), (0, -1)), ((5,),))
_COLOC = ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)))
_COLOC_BALANCE = ColocationProblem(((100_000, 100),), (2,), (((20_000, 30),), ((80_000, 10),)),
                                   objective=ColocationObjective.MIN_MAX_UTILIZATION)
SAMPLES = {
    "scheduling, one device": _SCHED_ONE_DEVICE,
    "scheduling, two devices": _SCHED_TWO_DEVICES,
    "placement": PlacementProblem((3, 3, 3, 3), (30, 30, 30, 30), (1, 1, 1, 0), ((0, 1), (1, 2), (2, 3)), 2, 0),
    "colocation, min cost": _COLOC,
    "colocation, balance": _COLOC_BALANCE,
    "variants": VariantProblem(100, 9000, None, (20, 50), (9500, 8500), (10, 5), (10, 3)),
    "memory levels": LevelProblem((3, 1), ((), (0,)), ((0,), ()), (8,), (8, 99), (4, 1)),
    "memory hierarchy": HierarchyProblem((4,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)),
                                         tensor_home=(2,)),
    "islands split": SplitProblem(((3, 4), (2, None)), (1, 1), (1, 1), (8, 8), ((0, 1, 5),), (5,)),
    "memory offsets": OffsetProblem(size_bytes=(4, 3, 2, 3), start=(1, 2, 2, 1), end=(2, 3, 3, 4),
                                    capacity_bytes=16),
}
# What refuses what (by problem type or shape); everything else of the right type accepts.
REFUSED = {
    ("scheduling.listsearch", "scheduling, two devices"),
    ("colocation.milp", "colocation, balance"),
}


@pytest.mark.parametrize("sample", sorted(SAMPLES))
@pytest.mark.parametrize("name", registry.names())
def test_accepts_agrees_with_solve(name, sample):
    solver, problem = registry.get(name), SAMPLES[sample]
    accepted = solver.accepts(problem)
    assert accepted == (solver.refusal(problem) is None)
    if not isinstance(problem, solver.problem_type):
        assert not accepted and type(problem).__name__ in solver.refusal(problem)
        return
    assert accepted == ((name, sample) not in REFUSED)
    try:
        result = solver.solve(problem, SolveOptions(time_limit_s=2))
    except ValueError:
        assert not accepted, f"{name} accepts {sample} but raises"
        return
    # every sample is feasible: a solver that accepts it finds a solution, one that refuses it
    # does not (it could only have said so by a failure status)
    assert result.status.has_solution == accepted, (name, sample, result.status, result.stats)


def test_accepting_lists_the_solvers_of_the_problem_family():
    # the same SchedulingProblem, solved at scale, and by the REINFORCE baseline
    others = registry.names("hierarchical") + registry.names("learned")
    assert registry.accepting(_SCHED_ONE_DEVICE) == others + registry.names("scheduling")
    assert registry.accepting(_SCHED_TWO_DEVICES) == others + ("scheduling.contiguous", "scheduling.cpsat",
                                                               "scheduling.heft", "scheduling.portfolio")
    assert registry.accepting(_COLOC_BALANCE) == ("colocation.cpsat", "colocation.ffd")
    assert registry.accepting(object()) == ()
