"""Never lose a user's file: where `plan solve`, `plan import` and `plan quote` may write.

Every case that writes runs the real `plan` command in a child process; a refused target of
`plan solve` or `plan quote` runs the same command in this process
(:func:`tests.cli_process.plan_in_process`: the same exit code and messages, without a new
interpreter's imports for a run that ends before any solve). A refused target must give
exit 2, a message naming the path, no traceback, and leave the directory tree exactly as
it was (compared byte for byte), with no temporaries.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.cli_process import SPECS, plan, plan_in_process, snapshot, temporaries


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working directory with the small MLP spec in specs/ and a directory of the user's files."""
    (tmp_path / "specs").mkdir()
    shutil.copy(SPECS / "mlp.yaml", tmp_path / "specs" / "mlp.yaml")
    (tmp_path / "mine" / "sub").mkdir(parents=True)
    (tmp_path / "mine" / "notes.txt").write_text("my notes\n")
    (tmp_path / "mine" / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return tmp_path


def assert_refused(result, tree_before, root: Path, *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "error:" in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
    assert snapshot(root) == tree_before
    assert temporaries(root) == []


@pytest.mark.parametrize("target, force, words", [
    ("mine", False, ["mine", "notes.txt", "--force"]),  # a directory of the user's files
    ("specs/mlp.yaml", False, ["not a directory"]),  # a regular file (the spec itself)
    ("specs/mlp.yaml", True, ["not a directory"]),  # ... even with --force
    ("specs", False, ["holds the input"]),  # the spec's own directory
    ("specs", True, ["holds the input"]),  # ... even with --force
    (".", True, ["not a name"]),
    ("..", True, ["not a name"]),
    ("", False, ["empty"]),
    ("mine/../..", True, ["not a name"]),
    ("/", True, ["not a name"]),
], ids=["user-dir", "file", "file-force", "spec-dir", "spec-dir-force", "dot", "dotdot", "empty", "up",
        "root"])
def test_solve_refuses_what_it_did_not_write(work, target, force, words):
    before = snapshot(work)
    result = plan_in_process("solve", "specs/mlp.yaml", "-o", target, *(["--force"] if force else []), "-q", cwd=work)
    assert_refused(result, before, work, *words)


def test_solve_never_replaces_the_current_directory_or_an_ancestor(work):
    before = snapshot(work)
    result = plan_in_process("solve", "../specs/mlp.yaml", "-o", "../mine", "--force", "-q", cwd=work / "mine")
    assert_refused(result, before, work, "current directory")
    result = plan_in_process("solve", "../../specs/mlp.yaml", "-o", "../../mine", "--force", "-q",
                             cwd=work / "mine" / "sub")
    assert_refused(result, before, work, "current directory")


def test_solve_never_replaces_the_home_directory(work):
    (work / "home").mkdir()
    before = snapshot(work)
    result = plan_in_process("solve", "specs/mlp.yaml", "-o", "home", "--force", "-q", cwd=work,
                             HOME=str(work / "home"))
    assert_refused(result, before, work, "home directory")


@pytest.mark.parametrize("name", ['"."', '".."', '"' + "x" * 300 + '"'], ids=["dot", "dotdot", "300-chars"])
def test_default_target_is_safe_whatever_the_spec_name(work, name):
    # `name: "."` used to write out/. itself: every file in ./out was lost.
    spec = (work / "specs" / "mlp.yaml").read_text().replace("name: mlp", f"name: {name}")
    (work / "specs" / "odd.yaml").write_text(spec)
    (work / "out" / "other").mkdir(parents=True)
    (work / "out" / "other" / "keep.txt").write_text("keep")
    before = snapshot(work)
    result = plan_in_process("solve", "specs/odd.yaml", "-q", cwd=work)
    assert_refused(result, before, work, "name")


def test_over_long_names_are_refused(work):
    before = snapshot(work)
    result = plan_in_process("solve", "specs/mlp.yaml", "-o", "x" * 300, "-q", cwd=work)
    assert_refused(result, before, work, "300 bytes")
    deep = "/".join(["d" * 250] * 20)  # 5,019 bytes: over PATH_MAX
    result = plan_in_process("solve", "specs/mlp.yaml", "-o", deep, "-q", cwd=work)
    assert_refused(result, before, work, "this system allows")


def test_symbolic_link_is_refused(work):
    os.symlink("mine", work / "link")
    before = snapshot(work)
    result = plan_in_process("solve", "specs/mlp.yaml", "-o", "link", "--force", "-q", cwd=work)
    assert_refused(result, before, work, "symbolic link")


@pytest.mark.parametrize("umask, dir_mode, file_mode", [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)])
def test_outputs_follow_the_umask(work, umask, dir_mode, file_mode):
    result = plan("solve", "specs/mlp.yaml", "-q", cwd=work, umask=umask)
    assert result.returncode == 0, result.stderr
    out = work / "out"
    entries = [out, *out.rglob("*")]
    assert {stat.S_IMODE(p.stat().st_mode) for p in entries if p.is_dir()} == {dir_mode}
    assert {stat.S_IMODE(p.stat().st_mode) for p in entries if p.is_file()} == {file_mode}
    assert (out / "mlp" / "plan.json").is_file() and temporaries(work) == []


def test_force_replaces_a_directory_plan_did_not_write(work):
    result = plan("solve", "specs/mlp.yaml", "-o", "mine", "--force", "-q", cwd=work)
    assert result.returncode == 0, result.stderr
    names = sorted(p.relative_to(work / "mine").as_posix() for p in (work / "mine").rglob("*"))
    assert "notes.txt" not in names and "sub/data.csv" not in names and "plan.json" in names
    assert temporaries(work) == []


def test_a_previous_plan_directory_is_replaced_whole_and_only_if_unchanged(work):
    assert plan("solve", "specs/mlp.yaml", "-o", "plans/mlp", "--seed", "3", "-q", cwd=work).returncode == 0
    first = json.loads((work / "plans/mlp/plan.json").read_text())
    assert first["solver"]["seed"] == 3
    marker = json.loads((work / "plans/mlp/.plan-output").read_text())
    assert marker["tool"] == "plan" and "plan.json" in marker["files"]

    result = plan("solve", "specs/mlp.yaml", "-o", "plans/mlp", "--seed", "4", "-q", cwd=work)
    assert result.returncode == 0, result.stderr
    assert json.loads((work / "plans/mlp/plan.json").read_text())["solver"]["seed"] == 4
    assert sorted(p.name for p in (work / "plans").iterdir()) == ["mlp"]  # nothing moved aside or left over

    (work / "plans/mlp/bin/my-notes.txt").write_text("added by the user")  # now it holds a user's file
    before = snapshot(work)
    result = plan_in_process("solve", "specs/mlp.yaml", "-o", "plans/mlp", "-q", cwd=work)
    assert_refused(result, before, work, "bin/my-notes.txt", "--force")


def test_stale_temporaries_are_removed_and_nothing_else(work):
    out = work / "out"
    out.mkdir()
    marker = json.dumps({"tool": "plan", "format_version": 1})
    for name in (".plan-tmp-0123456789abcdef", ".plan-old-fedcba9876543210"):  # left by a killed run
        (out / name / "bin").mkdir(parents=True)
        (out / name / ".plan-output").write_text(marker)
        (out / name / "bin" / "x.bin").write_bytes(b"x")
    (out / ".plan-tmp-00000000000000aa").mkdir()  # the name but no marker
    (out / ".plan-tmp-00000000000000aa" / "keep").write_text("keep")
    (out / ".plan-tmp-00000000000000bb").write_text("a file of that name")
    (out / ".plan-tmp-user").mkdir()  # a marker but not the name pattern
    (out / ".plan-tmp-user" / ".plan-output").write_text(marker)
    (out / ".plan-tmp-00000000000000cc").mkdir()  # the name and a marker of another tool
    (out / ".plan-tmp-00000000000000cc" / ".plan-output").write_text(json.dumps({"tool": "other"}))
    result = plan("solve", "specs/mlp.yaml", "-q", cwd=work)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        ".plan-tmp-00000000000000aa", ".plan-tmp-00000000000000bb", ".plan-tmp-00000000000000cc",
        ".plan-tmp-user", "mlp"]
    assert (out / ".plan-tmp-00000000000000aa" / "keep").read_text() == "keep"


def test_fleet_solve_follows_the_same_rules(work):
    shutil.copy(SPECS / "fleet-colocation.yaml", work / "specs")
    before = snapshot(work)
    result = plan_in_process("solve", "specs/fleet-colocation.yaml", "-o", "mine", "-q", cwd=work)
    assert_refused(result, before, work, "notes.txt")
    for _ in range(2):  # the second run replaces the first one's directory
        result = plan("solve", "specs/fleet-colocation.yaml", "-q", cwd=work)
        assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (work / "out").iterdir()) == ["fleet-colocation"]
    assert (work / "out/fleet-colocation/allocation.json").is_file() and temporaries(work) == []


def test_import_never_overwrites_a_file_without_force(work):
    source = work / "ft.txt"
    source.write_text("# two jobs\n2 1\n0 3\n0 4\n")
    (work / "spec.yaml").write_text("my own spec\n")
    before = snapshot(work)
    result = plan("import", "ft.txt", "-o", "spec.yaml", cwd=work)
    assert_refused(result, before, work, "spec.yaml exists", "--force")
    result = plan("import", "ft.txt", "-o", "ft.txt", "--force", cwd=work)
    assert_refused(result, before, work, "input")
    result = plan("import", "ft.txt", "-o", "mine", "--force", cwd=work)
    assert_refused(result, before, work, "is a directory")

    result = plan("import", "ft.txt", "-o", "spec.yaml", "--force", cwd=work)
    assert result.returncode == 0 and "wrote spec.yaml" in result.stdout, result.stderr
    assert "j0_o0" in (work / "spec.yaml").read_text()
    result = plan("import", "ft.txt", "-o", "new/dir/s.yaml", cwd=work)
    assert result.returncode == 0 and (work / "new/dir/s.yaml").is_file(), result.stderr
    assert temporaries(work) == []


def test_quote_says_where_it_writes_and_never_overwrites_without_force(work):
    shutil.copy(SPECS / "fleet-variants.yaml", work / "specs")
    result = plan("quote", "specs/fleet-variants.yaml", cwd=work)
    assert result.returncode == 0, result.stderr
    assert "wrote out/fleet-variants-quote.json" in result.stdout
    assert json.loads((work / "out/fleet-variants-quote.json").read_text())
    before = snapshot(work)
    result = plan_in_process("quote", "specs/fleet-variants.yaml", cwd=work)
    assert_refused(result, before, work, "fleet-variants-quote.json exists", "--force")
    result = plan_in_process("quote", "specs/fleet-variants.yaml", "-o", "specs/fleet-variants.yaml", "--force",
                             cwd=work)
    assert_refused(result, before, work, "input")
    result = plan("quote", "specs/fleet-variants.yaml", "--force", cwd=work)
    assert result.returncode == 0 and temporaries(work) == [], result.stderr
