"""Checks of the layout rules in docs/architecture.md ("Layers") and shared/STYLE.md."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLVER_FILES = sorted((ROOT / "solvers").rglob("*.py"))
LIBRARY_FILES = sorted([*SOLVER_FILES, *(ROOT / "planner").rglob("*.py")])


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The file's syntax tree, parsed once for all the checks below (they only read it): six
    parses of every library file cost seconds."""
    return ast.parse(path.read_text())


@pytest.fixture(scope="module", autouse=True)
def _free_the_parsed_trees():
    """The trees of every library file take about 100 MB: held for this module only."""
    yield
    parsed.cache_clear()


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", SOLVER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_solvers_import_nothing_from_the_planner(path):
    assert not imported_modules(path) & {"planner", "networkx", "yaml"}


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_library_code_does_not_print(path):
    if path.name == "cli.py":
        return
    calls = [n for n in ast.walk(parsed(path))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]
    assert not calls, f"print() at line {calls[0].lineno}"


@pytest.mark.parametrize("path", [p for p in LIBRARY_FILES if p.name != "__main__.py"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_declares_its_public_names(path):
    tree = parsed(path)
    if not tree.body:
        return
    assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
               for n in tree.body), "no __all__"


def test_only_the_bridge_imports_both_packages():
    both = [p.relative_to(ROOT) for p in (ROOT / "planner").rglob("*.py")
            if "solvers" in imported_modules(p)]
    # The bridge: the driver, its stage types and strategies
    allowed = {"pipeline.py", "stages.py", "clock_stops.py", "scheduling.py", "max_load.py", "cli.py"}
    assert all(p.name in allowed or p.parts[1] in ("fleet", "importers", "islands", "memory", "reductions", "replan")
               for p in both), both


_SOLVE_STAGE = ("solvers", "ortools", "planner.pipeline", "planner.stages", "planner.clock_stops", "planner.reductions",
                "planner.scheduling", "planner.memory", "planner.max_load", "planner.lower_and_replay", "planner.lowering")


@pytest.fixture(scope="module")
def memory_plan_dir(tmp_path_factory):
    """A memory-planned plan directory (memory.json too), written by `plan solve`."""
    from typer.testing import CliRunner

    from planner.cli import app

    out = tmp_path_factory.mktemp("arch") / "plan"
    result = CliRunner().invoke(app, ["solve", str(ROOT / "specs" / "memory-mlp.yaml"), "-o", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def test_the_verifier_imports_nothing_from_the_solve_stage(memory_plan_dir):
    # `plan simulate --numeric` end to end in a fresh interpreter: every module it loaded,
    # lazily imported ones included, must come from outside the solve stage.
    import subprocess
    import sys

    code = ("import sys\n"
            "from planner.cli import main\n"
            "try:\n"
            f"    main(['simulate', {str(memory_plan_dir)!r}, '--numeric'])\n"
            "except SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "print(' '.join(sorted(sys.modules)))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    loaded = run.stdout.splitlines()[-1].split()
    assert "planner.verify.directory" in loaded and "planner.verify.compare" in loaded
    forbidden = sorted(m for m in loaded if m.startswith(_SOLVE_STAGE))
    assert not forbidden, forbidden


# ---------------------------------------------------------------------------- layers and cycles
# Every import of every module (function-local ones included), read from the source.


@dataclass(frozen=True)
class Import:
    module: str        # the importing module, "planner.spec.resolve"
    line: int
    target: str        # the imported module of ours ("planner.units"), or the outside top-level name
    names: tuple[str, ...]  # names taken by ``from ... import``
    local: bool        # inside a function
    text: str          # the source line


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in LIBRARY_FILES}


def _ours(name: str) -> str:
    """The module of ours a dotted name lives in (``planner.units.format_bytes`` -> ``planner.units``)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    source = path.read_text()
    lines = source.splitlines()
    tree = parsed(path)
    local = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            pairs = [(_ours(a.name), ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            pairs = [(_ours(f"{base}.{a.name}"), (a.name,)) for a in node.names]
        else:
            continue
        for target, names in pairs:
            found.append(Import(module, node.lineno, target, names, id(node) in local, lines[node.lineno - 1]))
    return found


IMPORTS = [i for m in sorted(MODULES) for i in _imports_of(m)]

# The layers, lowest first: a module imports only from its own layer or lower ones. Each
# entry: name, module prefixes (the longest matching prefix decides). Why this order is in
# docs/architecture.md ("Layers").
LAYERS = (
    ("solvers", ("solvers",)),
    ("base", ("planner.errors", "planner.hardware", "planner.instances", "planner.interrupts", "planner.safe_output",
              "planner.units", "planner.reader", "planner.input_files", "planner.stage_timing", "planner.charts",
              "planner.json_text", "planner.collector")),
    ("graph", ("planner.graph",)),
    ("isa", ("planner.isa",)),
    ("spec", ("planner.spec",)),
    ("importers", ("planner.importers",)),
    ("solve", ("planner.plan", "planner.memory", "planner.fleet.spec", "planner.fleet.resolve", "planner.schema")),
    ("lowering", ("planner.lowering",)),
    ("numeric", ("planner.numeric",)),
    ("simulator", ("planner.simulator",)),
    ("report", ("planner.report",)),
    ("verify", ("planner.verify",)),
    ("driver", ("planner.pipeline", "planner.stages", "planner.clock_stops", "planner.reductions", "planner.scheduling",
                "planner.max_load", "planner.lower_and_replay", "planner.fleet", "planner.islands", "planner.replan")),
    ("output", ("planner.output",)),
    ("sweep", ("planner.sweeps",)),
    ("cli", ("planner.cli", "planner")),
)


def layer_of(module: str) -> int:
    # "planner" names the package's own __init__ only, so a new top-level module must be placed
    matches = [(len(prefix), rank) for rank, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or (prefix != "planner" and module.startswith(prefix + "."))]
    assert matches, f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return max(matches)[1]


# Imports that still point up a layer, each with the helper fixing it (shrinks to empty).
LAYER_EXCEPTIONS: set[tuple[str, str]] = set()


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_the_layer_order_reads_as_the_pipeline():
    order = ["solvers.core", "planner.units", "planner.graph.ir", "planner.isa.cost", "planner.spec.resolve",
             "planner.importers", "planner.memory.addresses", "planner.lowering.lower", "planner.numeric.kernels",
             "planner.simulator.replay", "planner.report.trace", "planner.verify.compare", "planner.pipeline",
             "planner.output", "planner.cli"]
    assert [layer_of(m) for m in order] == sorted(layer_of(m) for m in order)
    assert layer_of("planner.spec.resolve") < layer_of("planner.importers")
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("planner.somewhere_new")


def test_no_module_imports_a_later_layer():
    upward = sorted({(i.module, i.target) for i in IMPORTS
                     if i.target in MODULES and layer_of(i.target) > layer_of(i.module)} - LAYER_EXCEPTIONS)
    described = [f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})" for a, b in upward]
    assert not described, "\n".join(described)


def _module_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    graph.add_edges_from((i.module, i.target) for i in IMPORTS if i.target in MODULES and i.target != i.module)
    return graph


def test_lowering_never_solves():
    # Issue 10: lowering gets addresses as data (a memory plan's) or leaves them to the address pass
    # (planner.memory.address_pass) after it; nothing it imports, even indirectly, runs a solver.
    graph = _module_graph()
    lowering = [m for m in MODULES if m.startswith("planner.lowering")]
    reached = set(lowering).union(*(nx.descendants(graph, m) for m in lowering))
    solving = sorted(m for m in reached if m.startswith("solvers.")
                     or m in ("planner.memory.addresses", "planner.memory.address_pass"))
    assert lowering and not solving, solving


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


# Import cycles still to break, each with the helper breaking it (shrinks to empty).
MODULE_CYCLE_EXCEPTIONS: list[set[str]] = [
    # arch-solvers: none left (cpsat <-> listsearch broken by solvers.scheduling.streams)
]
PACKAGE_CYCLE_EXCEPTIONS: list[set[str]] = []


def _cycles(graph: nx.DiGraph, allowed: list[set[str]]) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1 and c not in allowed]


def test_no_import_cycle_between_modules():
    assert not _cycles(_module_graph(), MODULE_CYCLE_EXCEPTIONS)


def test_no_import_cycle_between_packages():
    packages = nx.DiGraph((_package(a), _package(b)) for a, b in _module_graph().edges
                          if _package(a) != _package(b))
    assert not _cycles(packages, PACKAGE_CYCLE_EXCEPTIONS)


def test_the_cycle_checks_see_a_cycle():
    graph = nx.DiGraph([("planner.a", "planner.b"), ("planner.b", "planner.a"), ("planner.b", "planner.c")])
    assert _cycles(graph, []) == [["planner.a", "planner.b"]]
    assert _cycles(graph, [{"planner.a", "planner.b"}]) == []


# ---------------------------------------------------------------------------- private names

# Private names still imported across modules, each with the helper fixing it (shrinks to empty).
# arch-solvers: none left (bounds.reach_sets and bounds.subproblem are public)
PRIVATE_EXCEPTIONS: set[tuple[str, str]] = set()


def test_no_private_name_is_imported_across_modules():
    private = sorted({(i.module, f"{i.target}.{name}") for i in IMPORTS for name in i.names
                      if name.startswith("_") and not name.startswith("__")} - PRIVATE_EXCEPTIONS)
    assert not private, private


# ---------------------------------------------------------------------------- function-local imports

# An import inside a function hides a dependency from the reader and from the checks above;
# it is allowed only where a comment on its line gives one of these reasons.
LOCAL_IMPORT_REASONS = ("optional dependency", "start-up time")

# Function-local imports without a reason still to fix, each with the owning helper (shrinks to empty).
LOCAL_IMPORT_EXCEPTIONS: set[tuple[str, str]] = set()


def test_function_local_imports_say_why():
    unexplained = sorted({(i.module, i.target) for i in IMPORTS
                          if i.local and not any(r in i.text.partition("#")[2] for r in LOCAL_IMPORT_REASONS)}
                         - LOCAL_IMPORT_EXCEPTIONS)
    assert not unexplained, unexplained


def test_the_exception_lists_name_only_what_is_still_there():
    layers = {(i.module, i.target) for i in IMPORTS}
    private = {(i.module, f"{i.target}.{n}") for i in IMPORTS for n in i.names}
    local = {(i.module, i.target) for i in IMPORTS if i.local}
    cycles = [set(c) for c in nx.strongly_connected_components(_module_graph())]
    assert LAYER_EXCEPTIONS <= layers, LAYER_EXCEPTIONS - layers
    assert PRIVATE_EXCEPTIONS <= private, PRIVATE_EXCEPTIONS - private
    assert LOCAL_IMPORT_EXCEPTIONS <= local, LOCAL_IMPORT_EXCEPTIONS - local
    assert all(c in cycles for c in MODULE_CYCLE_EXCEPTIONS), MODULE_CYCLE_EXCEPTIONS


# ---------------------------------------------------------------------------- long functions

MAX_FUNCTION_LINES = 80
# A longer function is split by job, or says why it is one in its docstring, in a line that
# starts with this.
LONG_FUNCTION_REASON = "One function because"


def _functions(module: str):
    """(qualified name, lines, docstring) of every function and method of ``module``."""
    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child.end_lineno - child.lineno + 1, ast.get_docstring(child) or ""
                yield from walk(child, name + ".")
    yield from walk(parsed(MODULES[module]), "")


# Long functions still to split, each with the owning helper (shrinks to empty).
LONG_FUNCTION_EXCEPTIONS: set[str] = set()


def test_long_functions_are_split_or_say_why():
    long = sorted(f"{m}.{name} ({lines} lines)" for m in MODULES for name, lines, doc in _functions(m)
                  if lines > MAX_FUNCTION_LINES and f"{m}.{name}" not in LONG_FUNCTION_EXCEPTIONS
                  and not any(line.strip().startswith(LONG_FUNCTION_REASON) for line in doc.splitlines()))
    assert not long, long


def test_the_long_function_exceptions_are_still_long():
    lengths = {f"{m}.{name}": lines for m in MODULES for name, lines, _ in _functions(m)}
    assert all(lengths.get(f, 0) > MAX_FUNCTION_LINES for f in LONG_FUNCTION_EXCEPTIONS), \
        [f for f in LONG_FUNCTION_EXCEPTIONS if lengths.get(f, 0) <= MAX_FUNCTION_LINES]
