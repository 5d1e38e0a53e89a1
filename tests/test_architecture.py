"""Checks of the layout rules in docs/architecture.md and shared/STYLE.md."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLVER_FILES = sorted((ROOT / "solvers").rglob("*.py"))
LIBRARY_FILES = sorted([*SOLVER_FILES, *(ROOT / "planner").rglob("*.py")])


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
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
    calls = [n for n in ast.walk(ast.parse(path.read_text()))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]
    assert not calls, f"print() at line {calls[0].lineno}"


@pytest.mark.parametrize("path", [p for p in LIBRARY_FILES if p.name != "__main__.py"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_declares_its_public_names(path):
    tree = ast.parse(path.read_text())
    if not tree.body:
        return
    assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
               for n in tree.body), "no __all__"


def test_only_the_bridge_imports_both_packages():
    both = [p.relative_to(ROOT) for p in (ROOT / "planner").rglob("*.py")
            if "solvers" in imported_modules(p)]
    # The bridge: the driver, its stage types and strategies; addresses.py: lowering packs buffers
    allowed = {"pipeline.py", "stages.py", "scheduling.py", "max_load.py", "cli.py", "addresses.py"}
    assert all(p.name in allowed or p.parts[1] in ("fleet", "importers", "memory", "reductions") for p in both), both


_SOLVE_STAGE = ("solvers", "ortools", "planner.pipeline", "planner.stages", "planner.reductions", "planner.scheduling",
                "planner.memory", "planner.max_load", "planner.lower_and_replay", "planner.lowering")


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
    assert "planner.verify.directory" in loaded and "planner.numeric.compare" in loaded
    forbidden = sorted(m for m in loaded if m.startswith(_SOLVE_STAGE))
    assert not forbidden, forbidden
