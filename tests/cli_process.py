"""Run the real ``plan`` command in a child process (the tests of outputs and interrupts), or the
same command in this process when the child itself is not what a test checks."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
_SCRIPT = Path(sys.executable).with_name("plan")
PLAN = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "planner.cli"]
TIMEOUT_S = 240  # generous: the machine is shared


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAN_TEST_")}
    env.update(extra)
    env["COLUMNS"] = "200"  # rich wraps messages at the terminal width otherwise
    return env


def plan(*args: str, cwd: Path, umask: int | None = None, **env: str) -> subprocess.CompletedProcess:
    """Run ``plan ARGS`` in ``cwd`` to completion."""
    command = [*PLAN, *args]
    if umask is not None:
        command = ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *command]
    return subprocess.run(command, cwd=cwd, env=child_env(**env), capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def plan_in_process(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``plan ARGS`` run by the command's own typer app in this process, in ``cwd`` (``env`` set
    for the run): the same exit code, stdout and stderr as :func:`plan`, without a new
    interpreter importing the planner and OR-Tools (0.6-1 CPU-s a run). For the tests of what a
    command refuses, writes or prints; the tests of the process itself (signals, the umask,
    the console script, several runs at once) use :func:`plan` or :func:`start_plan`. An
    exception that escapes the command is printed into stderr, as a child would print it."""
    from typer.testing import CliRunner

    from planner.cli import app

    with contextlib.chdir(cwd):
        result = CliRunner().invoke(app, list(args), prog_name="plan", env={**env, "COLUMNS": "200"})
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess([*PLAN, *args], result.exit_code, result.stdout, stderr)


_STARTED: list[subprocess.Popen] = []


def start_plan(*args: str, cwd: Path, **env: str) -> subprocess.Popen:
    """Start ``plan ARGS`` in ``cwd`` without waiting (see :func:`kill_leftovers`)."""
    return start([*PLAN, *args], cwd=cwd, **env)


def start(command: list[str], cwd: Path, **env: str) -> subprocess.Popen:
    child = subprocess.Popen(command, cwd=cwd, env=child_env(**env), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    _STARTED.append(child)
    return child


def kill_leftovers() -> None:
    """Kill the children a failed test left running (a paused writer waits for minutes)."""
    while _STARTED:
        child = _STARTED.pop()
        if child.poll() is None:
            child.kill()
            child.communicate()


def wait_for(condition: Callable[[], bool], child: subprocess.Popen, what: str) -> None:
    """Poll ``condition`` until it holds; fail if the child ends first or after a long timeout."""
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if child.poll() is not None:
            out, err = child.communicate()
            raise AssertionError(f"plan ended (exit {child.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            child.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a directory), to compare before and after."""
    return {p.relative_to(root).as_posix(): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def temporaries(root: Path) -> list[str]:
    """Anything under ``root`` that looks like a temporary of plan (current or former naming)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.name.startswith(".plan-tmp") or p.name.startswith(".plan-old") or ".tmp-" in p.name
                  or ".old-" in p.name)
