"""planner.safe_output in-process: the cases a CLI run cannot reach at a chosen moment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from planner.safe_output import (MARKER, OutputTargetError, atomic_directory, atomic_file, check_directory_target,
                                 check_file_target, is_plan_output, output_name, remove_stale_temporaries)
from tests.cli_process import snapshot, temporaries


def write_plan_like(target: Path, **kwargs) -> None:
    with atomic_directory(target, **kwargs) as tmp:
        (tmp / "plan.json").write_text("{}")
        (tmp / "bin").mkdir()
        (tmp / "bin" / "d0.bin").write_bytes(b"\x01")


def test_the_marker_lists_exactly_the_files_written(tmp_path):
    write_plan_like(tmp_path / "p")
    marker = json.loads((tmp_path / "p" / MARKER).read_text())
    assert marker == {"tool": "plan", "format_version": 1, "files": ["bin/d0.bin", "plan.json"]}
    assert is_plan_output(tmp_path / "p")


@pytest.mark.parametrize("change", ["extra file", "extra dir", "link", "bad marker", "other tool", "no marker"])
def test_a_plan_directory_changed_by_the_user_is_no_longer_replaced(tmp_path, change):
    target = tmp_path / "p"
    write_plan_like(target)
    if change == "extra file":
        (target / "bin" / "notes.txt").write_text("mine")
    elif change == "extra dir":
        (target / "keep").mkdir()
    elif change == "link":
        os.symlink("/etc/hostname", target / "bin" / "host")
    elif change == "bad marker":
        (target / MARKER).write_text("{not json")
    elif change == "other tool":
        (target / MARKER).write_text(json.dumps({"tool": "other", "format_version": 1, "files": ["plan.json"]}))
    else:
        (target / MARKER).unlink()
    before = snapshot(tmp_path)
    assert not is_plan_output(target)
    with pytest.raises(OutputTargetError, match="plan did not write"):
        write_plan_like(target)
    assert snapshot(tmp_path) == before
    write_plan_like(target, force=True)  # unless forced
    assert is_plan_output(target) and temporaries(tmp_path) == []


def test_a_failing_write_leaves_everything_as_it_was(tmp_path):
    write_plan_like(tmp_path / "p")
    before = snapshot(tmp_path)
    for target in (tmp_path / "p", tmp_path / "new" / "deeper" / "p"):
        with pytest.raises(ZeroDivisionError):
            with atomic_directory(target) as tmp:
                (tmp / "plan.json").write_text("half")
                1 / 0
        assert snapshot(tmp_path) == before  # no temporary, no parent directories created


def test_an_os_error_while_writing_is_a_clear_error(tmp_path):
    with pytest.raises(OutputTargetError, match="cannot write .*nothing was written"):
        with atomic_directory(tmp_path / "p") as tmp:
            (tmp / ("x" * 300)).write_text("too long a name")
    assert list(tmp_path.iterdir()) == []


def test_a_target_that_changes_during_the_write_is_checked_again(tmp_path):
    target = tmp_path / "p"
    with pytest.raises(OutputTargetError, match="notes.txt"):
        with atomic_directory(target) as tmp:
            (tmp / "plan.json").write_text("{}")
            target.mkdir()
            (target / "notes.txt").write_text("the user was quicker")
    assert [p.name for p in tmp_path.iterdir()] == ["p"] and (target / "notes.txt").read_text()

    with pytest.raises(OutputTargetError, match="exists"):
        with atomic_file(tmp_path / "q.json") as tmp:
            tmp.write_text("{}")
            (tmp_path / "q.json").write_text("also quicker")
    assert (tmp_path / "q.json").read_text() == "also quicker" and temporaries(tmp_path) == []


def test_a_temporary_in_use_is_not_stale(tmp_path):
    with atomic_directory(tmp_path / "a") as live:
        (tmp_path / ".plan-tmp-0123456789abcdef").mkdir()
        (tmp_path / ".plan-tmp-0123456789abcdef" / MARKER).write_text(json.dumps({"tool": "plan",
                                                                                   "format_version": 1}))
        assert remove_stale_temporaries(tmp_path) == [tmp_path / ".plan-tmp-0123456789abcdef"]
        assert live.is_dir()  # locked by this writer
    assert [p.name for p in tmp_path.iterdir()] == ["a"]


def test_special_files_and_parents_that_are_files(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OutputTargetError, match="not a directory"):
        check_directory_target(tmp_path / "fifo", force=True)
    with pytest.raises(OutputTargetError, match="not a regular file"):
        check_file_target(tmp_path / "fifo", force=True)
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputTargetError, match="a parent of this path is a file"):
        check_directory_target(tmp_path / "f" / "out")


def test_a_directory_holding_any_input_is_never_replaced(tmp_path):
    write_plan_like(tmp_path / "p")  # e.g. a fleet tenant's `plan: p/plan.json`
    with pytest.raises(OutputTargetError, match="holds the input"):
        check_directory_target(tmp_path / "p", force=True, inputs=[tmp_path / "p" / "plan.json"])
    with pytest.raises(OutputTargetError, match="this command's input"):
        check_file_target(tmp_path / "p" / "plan.json", force=True, inputs=[tmp_path / "p" / "plan.json"])


@pytest.mark.parametrize("name, reason", [
    ("", "empty"), (".", "not a name of its own"), ("..", "not a name of its own"), ("a/b", "contains '/'"),
    ("a\0b", "NUL"), (".plan-tmp-x", "reserved"), ("é" * 128, "256 bytes long"),
])
def test_output_names(name, reason):
    with pytest.raises(OutputTargetError, match=reason):
        output_name(name, "the spec name")


def test_a_valid_output_name_is_kept():
    assert output_name("é" * 127, "the spec name") == "é" * 127  # 254 bytes
