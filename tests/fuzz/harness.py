"""Run the real ``plan`` command on fuzzed input and judge the outcome.

Each run is a child process forked from the fuzzer (the planner already imported, so a
run costs milliseconds, not a Python start-up), with its own working directory, its
stdout and stderr in files, an address-space limit (``resource.setrlimit``) as a safety
net for the machine, and a wall-clock timeout after which it is killed. The parent reads
the exit code, the peak RSS (``wait4``'s rusage), the output and what the run left in its
directory, and classifies the run (:func:`judge`).

The invariant (issue 9): exit 0, 1, 2 or 4 with a message; never a traceback, never exit
3, never a hang, never a crash, peak RSS at most 1 GiB, and nothing written after a
non-zero exit. Shared by every fuzzer in this package.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["Run", "Verdict", "OK_CODES", "RSS_LIMIT_BYTES", "run_plan", "run_many", "judge", "written_files",
           "last_line", "fresh_dir"]

OK_CODES = (0, 1, 2, 4)
RSS_LIMIT_BYTES = 1 << 30          # the invariant: peak RSS of a run
ADDRESS_SPACE_BYTES = 6 << 30      # the safety net: a runaway child fails here instead of swapping
_POLL_S = 0.01


@dataclass
class Run:
    """One ``plan`` invocation and what it did."""

    argv: tuple[str, ...]
    cwd: Path
    code: int | None = None          # exit code; None when killed by a signal
    signal: int | None = None
    timed_out: bool = False
    wall_s: float = 0.0
    peak_rss_bytes: int = 0
    stdout: str = ""
    stderr: str = ""


@dataclass
class Verdict:
    """The class of a run: ``ok`` ... or a violation of the invariant."""

    kind: str                        # ok, infeasible, bad-input, no-solution, or a violation
    detail: str = ""
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def _child(argv: Sequence[str], cwd: Path, out: Path, err: Path) -> None:
    """In the forked child: run the CLI in-process and exit with its code (never returns)."""
    code = 99
    try:
        os.chdir(cwd)
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd, path in ((1, out), (2, err)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
        os.environ["_TYPER_STANDARD_TRACEBACK"] = "1"
        os.environ["COLUMNS"] = "200"
        from planner.cli import main

        try:
            main(list(argv))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 98)
    except BaseException:  # noqa: BLE001 - anything escaping the CLI is itself a finding
        import traceback

        traceback.print_exc()
        code = 97
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _start(argv: Sequence[str], cwd: Path) -> tuple[int, Run, Path, Path]:
    run = Run(tuple(argv), cwd)
    out, err = cwd.parent / f"{cwd.name}.stdout", cwd.parent / f"{cwd.name}.stderr"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(argv, cwd, out, err)
    return pid, run, out, err


def _finish(run: Run, status: int, usage, out: Path, err: Path, started: float) -> Run:
    run.wall_s = time.perf_counter() - started
    run.peak_rss_bytes = usage.ru_maxrss * 1024
    if os.WIFEXITED(status):
        run.code = os.WEXITSTATUS(status)
    else:
        run.signal = os.WTERMSIG(status)
    run.stdout = out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""
    run.stderr = err.read_text(encoding="utf-8", errors="replace") if err.exists() else ""
    return run


def run_plan(argv: Sequence[str], cwd: Path, timeout_s: float = 60.0) -> Run:
    """Run ``plan ARGV`` in a forked child in ``cwd``; kill it after ``timeout_s``."""
    return run_many([(argv, cwd)], timeout_s=timeout_s, jobs=1)[0]


def run_many(jobs_in: Iterable[tuple[Sequence[str], Path]], *, timeout_s: float = 60.0, jobs: int = 1) -> list[Run]:
    """Run several invocations, at most ``jobs`` at a time; results in input order."""
    pending = list(enumerate(jobs_in))
    results: list[Run | None] = [None] * len(pending)
    running: dict[int, tuple[int, Run, Path, Path, float]] = {}
    while pending or running:
        while pending and len(running) < max(1, jobs):
            index, (argv, cwd) = pending.pop(0)
            pid, run, out, err = _start(argv, cwd)
            running[pid] = (index, run, out, err, time.perf_counter())
        for pid, (index, run, out, err, started) in list(running.items()):
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done == 0 and time.perf_counter() - started > timeout_s:
                run.timed_out = True
                os.kill(pid, signal.SIGKILL)
                done, status, usage = os.wait4(pid, 0)
            if done:
                results[index] = _finish(run, status, usage, out, err, started)
                del running[pid]
        if running:
            time.sleep(_POLL_S)
    return [r for r in results if r is not None]


def written_files(cwd: Path, inputs: Iterable[str]) -> list[str]:
    """What a run left in its directory besides its own input files (relative paths)."""
    keep = set(inputs)
    return sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*") if str(p.relative_to(cwd)) not in keep)


def judge(run: Run, *, written: Sequence[str] = (), rss_limit: int = RSS_LIMIT_BYTES) -> Verdict:
    """Classify a run and list its violations of the invariant (module docstring).

    Examples
    --------
    >>> judge(Run(("validate", "s.yaml"), Path("."), code=2, stderr="error: s.yaml:3: bad")).kind
    'bad-input'
    >>> v = judge(Run(("validate", "s.yaml"), Path("."), code=3, stderr="Traceback ...\\nKeyError: 'x'"))
    >>> v.kind, v.violations
    ('internal', ['exit 3 (a bug)', 'traceback'])
    """
    violations = []
    names = {0: "ok", 1: "infeasible", 2: "bad-input", 3: "internal", 4: "no-solution"}
    if run.timed_out:
        kind = "hang"
        violations.append(f"no exit within {run.wall_s:.0f} s")
    elif run.signal is not None:
        kind = "crash"
        violations.append(f"killed by signal {run.signal}")
    else:
        kind = names.get(run.code, f"exit-{run.code}")
        if run.code not in OK_CODES:
            violations.append(f"exit {run.code}" + (" (a bug)" if run.code == 3 else ""))
    if "Traceback" in run.stderr or "Traceback" in run.stdout:
        violations.append("traceback")
        if "MemoryError" in run.stderr:
            kind = "memory"
        elif "RecursionError" in run.stderr:
            kind = "recursion"
    if run.code not in (None, 0) and not run.stderr.strip():
        violations.append("no message")
    if run.code not in (None, 0) and written:
        violations.append(f"wrote {', '.join(written[:3])} after exit {run.code}")
    if run.code not in (None, 0) and run.stdout.strip():
        violations.append(f"printed to stdout after exit {run.code}")
    if run.peak_rss_bytes > rss_limit:
        violations.append(f"peak RSS {run.peak_rss_bytes / 2**20:.0f} MiB")
    return Verdict(kind, last_line(run.stderr), violations)


def last_line(text: str) -> str:
    """The last non-empty line (an error message, or a traceback's exception)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def fresh_dir(root: Path, name: str) -> Path:
    """A new empty directory under ``root`` for one run."""
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))
