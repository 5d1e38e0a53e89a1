"""Ctrl-C (SIGINT) and SIGTERM end `plan solve` with exit 130/143 and leave nothing behind.

The real `plan` command runs in a child process; each signal is sent at a moment the
child reports through a test-only hook (no sleeps that guess how fast the machine is):
``PLAN_TEST_SOLVES_FILE`` (CP-SAT solves started and running) for the search, and
``PLAN_TEST_PAUSE_WRITE`` (a file created when the writer reaches a stage) for the write.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_process import SPECS, TIMEOUT_S, kill_leftovers, plan, snapshot, start, start_plan, temporaries, wait_for

MESSAGE = "interrupted; nothing was written"
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.fixture(scope="module")
def previous_plan(tmp_path_factory) -> Path:
    """The directory `plan solve specs/mlp.yaml` writes, made once: a test that needs a previous
    plan at its target copies it there (its marker and bytes are what a solve there writes)."""
    root = tmp_path_factory.mktemp("previous")
    result = plan("solve", str(SPECS / "mlp.yaml"), "-o", "mlp", "-q", cwd=root)
    assert result.returncode == 0, result.stderr
    return root / "mlp"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    for name in ("mlp.yaml", "demo.yaml"):
        shutil.copy(SPECS / name, tmp_path / "specs" / name)
    yield tmp_path
    kill_leftovers()


def solves(path: Path) -> tuple[int, int]:
    """(started, running) CP-SAT solves reported by the child, (0, 0) before the first report."""
    try:
        started, running = path.read_text().split()
    except (FileNotFoundError, ValueError):
        return 0, 0
    return int(started), int(running)


def finish(child: subprocess.Popen) -> tuple[int, str, str]:
    out, err = child.communicate(timeout=TIMEOUT_S)
    return child.returncode, out, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_the_cpsat_search(work, previous_plan, sig):
    # A previous plan directory at the target must survive untouched.
    shutil.copytree(previous_plan, work / "out" / "demo")
    before = snapshot(work / "out")
    report = work / "solves.txt"
    # demo does not reach optimality in 60 s, so the search is still running when the signal comes
    child = start_plan("solve", "specs/demo.yaml", "-o", "out/demo", "--time-limit", "60", "-q", cwd=work,
                       PLAN_TEST_SOLVES_FILE=str(report))
    wait_for(lambda: solves(report)[1] >= 1, child, "a CP-SAT search")
    sent = time.monotonic()
    child.send_signal(sig)
    code, out, err = finish(child)
    assert (code, err.strip(), out) == (EXIT[sig], MESSAGE, ""), err
    # Stopped at once, not at the time limit: CP-SAT's own Ctrl-C catching used to swallow it.
    assert time.monotonic() - sent < 30
    assert snapshot(work / "out") == before and temporaries(work) == []


def test_sigint_during_a_later_search_in_the_same_process(work):
    # The CLI run twice in one Python process: CP-SAT's own handling used to reset SIGINT to
    # the system default after the first solve, so the second Ctrl-C killed the process silently.
    done, report = work / "first-done", work / "solves.txt"
    driver = (f"import pathlib, sys\nfrom planner.cli import main\n"
              f"try:\n    main(['solve', 'specs/mlp.yaml', '-o', 'first', '-q'])\n"
              f"except SystemExit as e:\n    assert e.code == 0, e.code\n"
              f"pathlib.Path({str(done)!r}).write_text('ok')\n"
              f"main(['solve', 'specs/demo.yaml', '-o', 'second', '--time-limit', '60', '-q'])\n")
    child = start([sys.executable, "-c", driver], cwd=work, PLAN_TEST_SOLVES_FILE=str(report))
    wait_for(lambda: done.exists(), child, "the first run")
    first_started = solves(report)[0]
    wait_for(lambda: solves(report)[0] > first_started and solves(report)[1] >= 1, child, "the second search")
    child.send_signal(signal.SIGINT)
    code, out, err = finish(child)
    assert (code, err.strip()) == (130, MESSAGE), err
    assert (work / "first" / "plan.json").is_file() and not (work / "second").exists()
    assert temporaries(work) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_while_writing_leaves_nothing(work, sig):
    ready = work / "ready"
    child = start_plan("solve", "specs/mlp.yaml", "-q", cwd=work, PLAN_TEST_PAUSE_WRITE=f"before-commit:{ready}")
    wait_for(ready.exists, child, "the writer")
    assert [p.name for p in (work / "out").iterdir()][0].startswith(".plan-tmp-")  # really mid-write
    child.send_signal(sig)
    code, out, err = finish(child)
    assert (code, err.strip()) == (EXIT[sig], MESSAGE), err
    assert not (work / "out").exists()  # nor the parent it had created
    assert temporaries(work) == []


def test_sigint_while_writing_keeps_the_previous_plan(work, previous_plan):
    shutil.copytree(previous_plan, work / "out" / "mlp")
    before = snapshot(work / "out")
    ready = work / "ready"
    child = start_plan("solve", "specs/mlp.yaml", "--seed", "7", "-q", cwd=work,
                       PLAN_TEST_PAUSE_WRITE=f"before-commit:{ready}")
    wait_for(ready.exists, child, "the writer")
    child.send_signal(signal.SIGINT)
    code, out, err = finish(child)
    assert (code, err.strip()) == (130, MESSAGE), err
    assert snapshot(work / "out") == before and temporaries(work) == []


def test_signal_during_the_commit_finishes_it_and_says_so(work, previous_plan):
    # Between moving the previous directory aside and renaming the new one into place the
    # signal is held back: the commit completes, and the message says the output is there.
    shutil.copytree(previous_plan, work / "out" / "mlp")
    ready = work / "ready"
    child = start_plan("solve", "specs/mlp.yaml", "--seed", "7", "-q", cwd=work,
                       PLAN_TEST_PAUSE_WRITE=f"mid-commit:{ready}")
    wait_for(ready.exists, child, "the commit")
    assert not (work / "out" / "mlp").exists()  # really mid-commit: the old one is aside
    child.send_signal(signal.SIGTERM)
    code, out, err = finish(child)
    assert code == 143 and err.strip() == "interrupted; out/mlp had been written in full before it", err
    plan_dir = work / "out" / "mlp"
    assert json.loads((plan_dir / "plan.json").read_text())["solver"]["seed"] == 7
    marker = json.loads((plan_dir / ".plan-output").read_text())
    assert sorted(marker["files"]) == sorted(p.relative_to(plan_dir).as_posix() for p in plan_dir.rglob("*")
                                             if p.is_file() and p.name != ".plan-output")
    assert temporaries(work) == []


def test_a_killed_writer_leaves_a_temporary_that_the_next_run_removes(work):
    ready = work / "ready"
    child = start_plan("solve", "specs/mlp.yaml", "-q", cwd=work, PLAN_TEST_PAUSE_WRITE=f"before-commit:{ready}")
    wait_for(ready.exists, child, "the writer")
    child.kill()  # SIGKILL: no clean-up possible
    child.communicate(timeout=TIMEOUT_S)
    left = temporaries(work)
    assert len(left) == 1 and left[0].startswith("out/.plan-tmp-")
    result = plan("solve", "specs/mlp.yaml", "-q", cwd=work)
    assert result.returncode == 0, result.stderr
    assert temporaries(work) == [] and sorted(p.name for p in (work / "out").iterdir()) == ["mlp"]


def test_a_running_writer_keeps_its_temporary(work):
    # Another run writing into the same directory at the same time: its temporary is in use
    # (locked), so it is not "stale", and it commits normally afterwards.
    ready = work / "ready"
    child = start_plan("solve", "specs/mlp.yaml", "-o", "out/a", "-q", cwd=work,
                       PLAN_TEST_PAUSE_WRITE=f"before-commit:{ready}")
    wait_for(ready.exists, child, "the writer")
    (live,) = (work / "out").iterdir()
    result = plan("solve", "specs/mlp.yaml", "-o", "out/b", "-q", cwd=work)
    assert result.returncode == 0, result.stderr
    assert live.is_dir() and (live / "plan.json").is_file()
    child.send_signal(signal.SIGINT)
    assert finish(child)[0] == 130
    assert sorted(p.name for p in (work / "out").iterdir()) == ["b"] and temporaries(work) == []
