"""Every solver under one qualified name, so any of them can be picked, listed or compared.

A qualified name is ``<family>.<backend>``: the family is the problem's package under
``solvers`` (``scheduling``, ``placement``, ``colocation``, ``colocation.variants``,
``memory.levels``, ``memory.offsets``, ``islands``), the backend what the solver does (``heft``,
``cpsat``, ``greedy``, ...). Short names alone are ambiguous ("cpsat" is five solvers), so
the registry never uses them; each solver keeps its short ``name``, the one results and
output files carry.

:func:`get` builds a fresh solver, :func:`names` lists a family, :func:`accepting` says
which solvers can take a problem before any of them runs (``Solver.accepts``), and
:func:`qualified_name` maps a solver back to its key. In the manner of networkx's
pluggable ``flow_func`` and SAGA's scheduler table.

Examples
--------
>>> names("scheduling")
('scheduling.contiguous', 'scheduling.cpsat', 'scheduling.heft', 'scheduling.listsearch', 'scheduling.portfolio')
>>> get("placement.greedy").name
'greedy'
>>> from solvers.scheduling import SchedulingProblem
>>> two_devices = SchedulingProblem(((3, 3),), (), (1, 1), ((-1, 0), (0, -1)), ())
>>> accepting(two_devices)  # doctest: +NORMALIZE_WHITESPACE
('hierarchical.lns', 'hierarchical.placer', 'hierarchical.strategy', 'learned.reinforce',
 'scheduling.contiguous', 'scheduling.cpsat', 'scheduling.heft', 'scheduling.portfolio')
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from solvers.colocation.cpsat import CpSatColocationSolver
from solvers.colocation.greedy import FirstFitDecreasingSolver
from solvers.colocation.milp import ColumnGenerationColocationSolver
from solvers.colocation.variants import CpSatVariantSolver
from solvers.core import Solver
from solvers.hierarchical import HierarchicalScheduler, LnsScheduler, StrategyScheduler
from solvers.islands import CpSatSplitSolver
from solvers.learned.reinforce import ReinforceScheduler
from solvers.memory.levels.cpsat import CpSatLevelSolver
from solvers.memory.levels.greedy import AllSlowLevelSolver, GreedyLevelSolver
from solvers.memory.levels.hierarchy_cpsat import CpSatHierarchySolver
from solvers.memory.levels.hierarchy_greedy import AllHomeHierarchySolver, GreedyHierarchySolver
from solvers.memory.offsets.cpsat import CpSatOffsetSolver
from solvers.memory.offsets.greedy import FirstFitOffsetSolver, GreedyBySizeOffsetSolver
from solvers.placement.cpsat import CpSatPlacementSolver
from solvers.placement.greedy import GreedyPlacementSolver
from solvers.portfolio import Portfolio
from solvers.scheduling.contiguous import ContiguousSplitScheduler
from solvers.scheduling.cpsat.scheduler import CpSatScheduler
from solvers.scheduling.heft import HeftScheduler
from solvers.scheduling.listsearch import ListSearchScheduler

__all__ = ["SOLVERS", "get", "names", "families", "accepting", "qualified_name"]


def _portfolio(heuristic: Callable[[], Solver], exact: Callable[..., Solver], **settings: Any) -> Portfolio:
    return Portfolio(heuristic(), exact(**settings))  # settings go to the exact solver


# Qualified name -> solver factory (called with no arguments for its defaults). A
# ``<family>.portfolio`` is the family's heuristic, then its exact solver warm-started from it.
SOLVERS: dict[str, Callable[..., Solver]] = {
    "scheduling.heft": HeftScheduler,
    "scheduling.listsearch": ListSearchScheduler,
    "scheduling.contiguous": ContiguousSplitScheduler,  # memory-feasible contiguous splits, sequenced by HEFT
    "scheduling.cpsat": CpSatScheduler,
    "scheduling.portfolio": partial(_portfolio, HeftScheduler, CpSatScheduler),
    "hierarchical.lns": LnsScheduler,
    "hierarchical.placer": HierarchicalScheduler,
    "hierarchical.strategy": StrategyScheduler,
    "learned.reinforce": ReinforceScheduler,  # the REINFORCE baseline (a benchmark column, not a default)
    "placement.greedy": GreedyPlacementSolver,
    "placement.cpsat": CpSatPlacementSolver,
    "placement.portfolio": partial(_portfolio, GreedyPlacementSolver, CpSatPlacementSolver),
    "colocation.ffd": FirstFitDecreasingSolver,
    "colocation.cpsat": CpSatColocationSolver,
    "colocation.milp": ColumnGenerationColocationSolver,
    "colocation.variants.cpsat": CpSatVariantSolver,
    "memory.levels.allslow": AllSlowLevelSolver,
    "memory.levels.greedy": GreedyLevelSolver,
    "memory.levels.cpsat": CpSatLevelSolver,
    # N levels (HierarchyProblem; issue 14): everything at home, Belady per level, exact CP-SAT
    "memory.levels.hierarchy_allhome": AllHomeHierarchySolver,
    "memory.levels.hierarchy_greedy": GreedyHierarchySolver,
    "memory.levels.hierarchy_cpsat": CpSatHierarchySolver,
    "memory.offsets.greedy": GreedyBySizeOffsetSolver,
    "memory.offsets.firstfit": FirstFitOffsetSolver,
    "memory.offsets.cpsat": CpSatOffsetSolver,
    "islands.cpsat": CpSatSplitSolver,  # portions to accelerator islands (planner.islands)
}


def get(name: str, **settings: Any) -> Solver:
    """A new solver registered as ``name``, built with ``settings`` (its constructor's
    keyword arguments; none for the defaults).

    Raises
    ------
    KeyError
        ``name`` is not registered (the message lists the names).

    Examples
    --------
    >>> get("memory.offsets.cpsat").name
    'cpsat'
    >>> get("colocation.cpsat", local_search_share=0.0).local_search_share
    0.0
    >>> get("cpsat")
    Traceback (most recent call last):
    ...
    KeyError: "no solver 'cpsat'; registered: colocation.cpsat, colocation.ffd, ..."
    """
    try:
        factory = SOLVERS[name]
    except KeyError:
        shown = ", ".join(sorted(SOLVERS)[:2])
        raise KeyError(f"no solver {name!r}; registered: {shown}, ...") from None
    return factory(**settings)


def _family(name: str) -> str:
    return name.rsplit(".", 1)[0]


def families() -> tuple[str, ...]:
    """The families, sorted.

    Examples
    --------
    >>> families()[:2]
    ('colocation', 'colocation.variants')
    """
    return tuple(sorted({_family(n) for n in SOLVERS}))


def names(family: str | None = None) -> tuple[str, ...]:
    """The qualified names, sorted; only ``family``'s (exactly that family) when given.

    Examples
    --------
    >>> names("memory.offsets")
    ('memory.offsets.cpsat', 'memory.offsets.firstfit', 'memory.offsets.greedy')
    >>> len(names()) == len(SOLVERS)
    True
    """
    if family is not None and family not in families():
        raise KeyError(f"no solver family {family!r}; families: {', '.join(families())}")
    return tuple(sorted(n for n in SOLVERS if family is None or _family(n) == family))


def accepting(problem: Any) -> tuple[str, ...]:
    """The qualified names of the solvers whose ``accepts(problem)`` holds, sorted.

    Examples
    --------
    >>> from solvers.memory.offsets import OffsetProblem
    >>> accepting(OffsetProblem(size_bytes=(4,), start=(0,), end=(1,), capacity_bytes=8))
    ('memory.offsets.cpsat', 'memory.offsets.firstfit', 'memory.offsets.greedy')
    """
    return tuple(n for n in names() if get(n).accepts(problem))


def qualified_name(solver: Solver) -> str:
    """The registry key of ``solver`` (of its class; of its two solvers' for a portfolio).

    Examples
    --------
    >>> qualified_name(get("scheduling.heft"))
    'scheduling.heft'
    >>> qualified_name(Portfolio(GreedyPlacementSolver(), CpSatPlacementSolver()))
    'placement.portfolio'
    """
    for name in SOLVERS:
        if _kind(get(name)) == _kind(solver):
            return name
    raise KeyError(f"{type(solver).__name__} is not registered")


def _kind(solver: Solver) -> tuple[type, ...]:
    if isinstance(solver, Portfolio):
        return (Portfolio, type(solver.heuristic), type(solver.exact))
    return (type(solver),)
