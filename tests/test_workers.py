"""The root conftest.py's run settings: ``python -m pytest`` runs on two xdist workers, a test
marked ``alone`` runs with no test beside it on the other worker, and ``-p no:xdist`` still
runs everything in one process. Each run is a small suite of its own, in a child pytest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# every test appends (name, worker, start, end) with the system-wide monotonic clock
_RECORD = """
import json, os, time
import pytest

def record(name, seconds):
    start = time.monotonic()
    time.sleep(seconds)
    with open(os.environ["RECORD"], "a") as f:
        f.write(json.dumps([name, os.environ.get("PYTEST_XDIST_WORKER"), start, time.monotonic()]) + "\\n")
"""
_BESIDE = "from record import record\n\ndef test_beside_0():\n    record('beside', 0.2)\n" + "".join(
    f"\ndef test_beside_{k}():\n    record('beside', 0.2)\n" for k in range(1, 8))
_ALONE = "import pytest\nfrom record import record\n\n@pytest.mark.alone\ndef test_alone():\n    record('alone', 1.0)\n"


def _run(tmp_path: Path, *args: str) -> list[list]:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    alone: runs with no other test beside it\n")
    (tmp_path / "record.py").write_text(_RECORD)
    (tmp_path / "test_beside.py").write_text(_BESIDE)
    (tmp_path / "test_zz_alone.py").write_text(_ALONE)  # collected last: the beside tests are running by then
    record = tmp_path / "record.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAN_TEST_"))}
    env.update(RECORD=str(record), PYTHONPATH=str(tmp_path))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    return [json.loads(line) for line in record.read_text().splitlines()]


def test_two_workers_and_nothing_beside_an_alone_test(tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is in the test extra: pip install -e '.[test]'")
    rows = _run(tmp_path)
    assert {worker for _, worker, _, _ in rows} == {"gw0", "gw1"}  # both files ran, each on its own worker
    (alone,) = [(start, end) for name, _, start, end in rows if name == "alone"]
    beside = [(start, end) for name, _, start, end in rows if name == "beside"]
    assert len(beside) == 8
    overlapping = [(s, e) for s, e in beside if s < alone[1] and alone[0] < e]
    assert not overlapping, f"the alone test ran {alone}; beside it: {overlapping}"


def test_without_xdist_one_process_runs_every_test(tmp_path):
    rows = _run(tmp_path, "-p", "no:xdist")
    assert len(rows) == 9 and {worker for _, worker, _, _ in rows} == {None}
