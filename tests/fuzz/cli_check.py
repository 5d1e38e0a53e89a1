"""Running ``plan`` commands on fuzzed input and checking the CLI's promise on each run.

The promise (``README.md``, "Exit codes"): exit 0, 1, 2 or 4 with a message; never a
traceback, never exit 3 (a bug), never a hang, never an output left behind by a failed
command; the process stays under 1 GiB. :func:`run_plan` runs one command in-process
(``typer``'s runner: no interpreter start-up per input) with a wall-clock alarm and an
address-space cap, and classifies the run; :class:`Tally` counts outcomes, keeps the
failing inputs and checks the peak memory.

Used by :mod:`tests.fuzz.fleet` and :mod:`tests.fuzz.importers` (the trust-import fuzzers).
"""

from __future__ import annotations

import contextlib
import json
import resource
import shutil
import signal
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from typer.testing import CliRunner

__all__ = ["ALLOWED_EXITS", "RSS_LIMIT_BYTES", "Run", "Tally", "run_plan", "peak_rss_bytes"]

ALLOWED_EXITS = (0, 1, 2, 4)  # 4: no plan within the time limit
RSS_LIMIT_BYTES = 2**30
HANG_SECONDS = 60
_ADDRESS_HEADROOM = 3 * 2**30  # a run may map this much beyond the process's current size


class Hang(BaseException):
    """Raised by the alarm in a run that outlives :data:`HANG_SECONDS`."""


def peak_rss_bytes() -> int:
    """The process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextlib.contextmanager
def _guarded(seconds: float) -> Iterator[None]:
    """An alarm that raises :class:`Hang`, and a soft address-space cap, for one run."""
    def on_alarm(signum, frame):  # noqa: ARG001
        raise Hang()

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    cap = mapped + _ADDRESS_HEADROOM
    if hard == resource.RLIM_INFINITY or cap < hard:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))  # a blow-up becomes a MemoryError here
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@dataclass
class Run:
    """One command and what it did; ``failure`` is None when it kept the promise."""

    args: list[str]
    code: int | None
    output: str
    seconds: float
    failure: str | None = None

    @property
    def outcome(self) -> str:
        return self.failure or f"exit {self.code}"


def _json_is_strict(path: Path) -> bool:
    def refuse(token: str):
        raise ValueError(token)
    try:
        json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
        return True
    except (ValueError, OSError):
        return False


def run_plan(args: Sequence[str], outputs: Sequence[Path] = (), *, seconds: float = HANG_SECONDS) -> Run:
    """Run ``plan ARGS`` in-process and check the promise; ``outputs`` are the paths it may write.

    A failed command must leave none of ``outputs``; a JSON output must be strict JSON.
    """
    from planner.cli import app

    for p in outputs:  # a stale output would pass for a fresh one
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    t0 = time.perf_counter()
    try:
        with _guarded(seconds):
            result = CliRunner().invoke(app, list(args))
    except Hang:
        return Run(list(args), None, "", time.perf_counter() - t0, "hang")
    run = Run(list(args), result.exit_code, result.output, time.perf_counter() - t0)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        run.failure = f"traceback ({type(exc).__name__})"
        run.output += "\n" + "".join(traceback.format_exception(exc)[-4:])
    elif "Traceback" in result.output:
        run.failure = "traceback"
    elif result.exit_code == 3:
        run.failure = "exit 3"
    elif result.exit_code not in ALLOWED_EXITS:
        run.failure = f"exit {result.exit_code} (not allowed)"
    elif result.exit_code != 0 and not result.output.strip():
        run.failure = "no message"
    elif result.exit_code != 0 and any(p.exists() for p in outputs):
        run.failure = "output after failure"
    elif result.exit_code == 0 and any(p.suffix == ".json" and p.is_file() and not _json_is_strict(p)
                                       for p in outputs):
        run.failure = "non-strict JSON"
    return run


@dataclass
class Tally:
    """Outcome counts per command, failing runs (with their saved inputs) and the peak RSS."""

    name: str
    keep_dir: Path | None = None
    counts: Counter = field(default_factory=Counter)
    failures: list[tuple[str, Run, str]] = field(default_factory=list)
    inputs: int = 0
    rss_before: int = field(default_factory=peak_rss_bytes)

    def record(self, command: str, run: Run, source: Path | None = None) -> Run:
        self.counts[f"{command}: {run.outcome}"] += 1
        if run.failure is not None:
            kept = ""
            if source is not None and self.keep_dir is not None and source.exists():
                self.keep_dir.mkdir(parents=True, exist_ok=True)
                kept = str(self.keep_dir / f"{len(self.failures):04d}-{source.name}")
                if source.is_file():
                    shutil.copy(source, kept)
            self.failures.append((command, run, kept))
        return run

    def summary(self) -> dict:
        """Counts by outcome, the number of inputs and the peak RSS, as a JSON-ready dict."""
        return {"fuzzer": self.name, "inputs": self.inputs, "outcomes": dict(sorted(self.counts.items())),
                "failures": len(self.failures), "peak_rss_mib": round(peak_rss_bytes() / 2**20, 1)}

    def check(self) -> None:
        """Raise AssertionError listing the first failures, or when the fuzzing raised the peak RSS past 1 GiB."""
        lines = [f"{cmd}: {run.outcome} in {run.seconds:.1f} s: plan {' '.join(run.args)}"
                 f"{' (input kept at ' + kept + ')' if kept else ''}\n    {run.output.strip()[-1200:]}"
                 for cmd, run, kept in self.failures[:10]]
        assert not self.failures, f"{len(self.failures)} runs broke the CLI's promise:\n" + "\n".join(lines)
        peak = peak_rss_bytes()
        assert peak <= max(self.rss_before, RSS_LIMIT_BYTES), f"peak RSS {peak / 2**20:.0f} MiB > 1 GiB"
