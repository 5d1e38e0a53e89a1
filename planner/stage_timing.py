"""Wall time per stage of a run, and the share of the time limit kept for the stages after the solve.

``plan solve --time-limit S`` must finish everything (solve, lowering, replay, verification,
writing) in about ``1.25 x S``. Two pieces serve that:

* :func:`post_solve_reserve_s`: the part of ``S`` the solve leaves to the stages after it,
  estimated from the graph alone (its op count, and the multiply-accumulates the numeric
  replay will execute), so under ``search: deterministic`` the solve's budget (and so the
  plan) still depends only on the spec, the seed and the workers;
* :class:`StageClock`, :func:`timing` and :func:`stage`: the measured wall time of each
  stage, for the terminal, ``--json`` and the benchmarks. A stage nested in another (the
  replays memory planning runs, the costing inside spec loading) is counted in its own
  stage only, so the stages add up to the run's wall time.

The measured seconds never go into the plan directory: its files are byte-identical for
the same spec, seed and workers, and a wall time is not.

Examples
--------
>>> with timing() as clock:
...     with stage("solve"):
...         with stage("lowering"):
...             pass
>>> sorted(clock.seconds)
['lowering', 'solve']
>>> post_solve_reserve_s(10_000, 0, 60.0)
6.24
>>> post_solve_reserve_s(55, 3 * 10**8, 0.5)  # short later stages, a limit under RESERVE_FREE_S: no reserve
0.0
"""

from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

__all__ = ["STAGES", "StageClock", "timing", "stage", "post_solve_reserve_s", "RESERVE_S_PER_OP",
           "RESERVE_FULL_RATE_OPS", "RESERVE_S_PER_OP_BEYOND", "RESERVE_S_PER_MAC", "RESERVE_MAX_SHARE",
           "RESERVE_FREE_S", "RESERVE_FREE_NEED_S", "OVERRUN_FACTOR"]

# The stages of `plan solve`, in the order they run (a run may skip some).
STAGES = ("spec", "costing", "solve", "memory", "lowering", "replay", "numeric", "writing", "verify")

# Post-solve seconds per op (lowering, replay, writing and verifying the directory). The first
# RESERVE_FULL_RATE_OPS ops of a graph count RESERVE_S_PER_OP each, the rate measured on the
# loaded machine of 2026-11-23 (about 1 ms of CPU per op then); every op beyond them counts
# RESERVE_S_PER_OP_BEYOND, the rate measured on 2026-11-28 (CPU seconds of those stages with the
# numeric replay off, transformers on the demo's hardware, load 8: 259 ops 0.137 s, 990 ops
# 0.518 s, 3,011 ops 1.677 s, 9,977 ops 5.596 s, i.e. 0.52-0.56 ms per op). The first rate is
# kept for small graphs, where it over-predicts by at most 0.7 s, so that their solve budgets,
# and the plans of every shipped spec (at most 259 ops), stay exactly as they were.
RESERVE_S_PER_OP = 1.2e-3
RESERVE_FULL_RATE_OPS = 1_000
RESERVE_S_PER_OP_BEYOND = 0.56e-3
# The numeric replay's seconds per multiply-accumulate (fp16 matmuls in numpy): a 1,000-op
# transformer's 9.6e9 MACs took 6.4 s of CPU on the same machine.
RESERVE_S_PER_MAC = 0.7e-9
# The solve always keeps at least half of the limit (RESERVE_MAX_SHARE): a huge graph with a small
# limit overruns and the run says which stage did, rather than leaving the solver nothing. When
# the stages after the solve are predicted to be short (at most RESERVE_FREE_NEED_S), the solve
# also keeps the first RESERVE_FREE_S seconds: a limit of a few seconds is then for a small graph,
# whose later stages take far less than the slack the solve's wall-clock safety net already has
# (solvers.budget: 3 x the limit + 5 s), and its search budget stays as it was. A larger graph
# gets its reserve whatever the limit: a 10,000-op graph's later stages take about 5.6 s of CPU,
# so at a 10-s limit a solve that kept all 10 s could not end the run within OVERRUN_FACTOR x S.
RESERVE_MAX_SHARE = 0.5
RESERVE_FREE_S = 10.0
RESERVE_FREE_NEED_S = 1.0
# A run that takes more than this many times its limit names the stage that overran most.
OVERRUN_FACTOR = 1.25


def post_solve_reserve_s(num_ops: int, numeric_macs: int, time_limit_s: float) -> float:
    """The seconds of the time limit kept for the stages after the solve.

    ``need = RESERVE_S_PER_OP * min(num_ops, RESERVE_FULL_RATE_OPS) + RESERVE_S_PER_OP_BEYOND *
    (the ops beyond them) + RESERVE_S_PER_MAC * numeric_macs``; the reserve is ``min(need,
    RESERVE_MAX_SHARE * (time_limit_s - free))`` (never negative), where ``free`` is
    ``RESERVE_FREE_S`` when ``need <= RESERVE_FREE_NEED_S`` and 0 otherwise; rounded to the
    millisecond so it prints and compares exactly.
    ``numeric_macs`` are the graph's multiply-accumulates when the numeric replay runs by
    default (0 when it is skipped as too large). A function of the spec alone.

    Examples
    --------
    >>> post_solve_reserve_s(259, 0, 30.0)  # 259 ops, no numeric replay: a third of a second
    0.311
    >>> post_solve_reserve_s(990, 9_646_899_200, 60.0)  # 1,000 ops and their numeric replay
    7.941
    >>> post_solve_reserve_s(10_000, 0, 10.0)  # 6.24 s predicted: capped at half of a 10-s limit
    5.0
    >>> post_solve_reserve_s(10_000, 0, 60.0)
    6.24
    >>> post_solve_reserve_s(100_000, 0, 60.0)  # capped: the solve keeps half
    30.0
    """
    need = (RESERVE_S_PER_OP * min(num_ops, RESERVE_FULL_RATE_OPS)
            + RESERVE_S_PER_OP_BEYOND * max(0, num_ops - RESERVE_FULL_RATE_OPS) + RESERVE_S_PER_MAC * numeric_macs)
    free = RESERVE_FREE_S if need <= RESERVE_FREE_NEED_S else 0.0
    return round(min(need, RESERVE_MAX_SHARE * max(0.0, time_limit_s - free)), 3)


@dataclass
class StageClock:
    """Seconds spent in each stage (exclusive of the stages nested in it), in first-run order.

    Examples
    --------
    >>> clock = StageClock({"solve": 10.0, "lowering": 2.0, "verify": 1.0})
    >>> clock.total_s
    13.0
    >>> clock.overrun(10.0, solve_limit_s=9.0)
    'the run took 13.0 s, 1.30 x the time limit of 10 s; the solve took 10.0 s of its 9 s'
    >>> clock.overrun(20.0, solve_limit_s=18.0) is None
    True
    """

    seconds: dict[str, float] = field(default_factory=dict)
    current: str | None = None  # the innermost stage running now (read by the live line's thread)

    @property
    def total_s(self) -> float:
        return sum(self.seconds.values())

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def line(self) -> str:
        """``stages: spec 0.4 s, solve 9.8 s, ...; total 11.2 s``."""
        parts = ", ".join(f"{name} {s:.1f} s" for name, s in self.seconds.items())
        return f"stages: {parts}; total {self.total_s:.1f} s"

    def overrun(self, time_limit_s: float, *, solve_limit_s: float) -> str | None:
        """Why the run took more than :data:`OVERRUN_FACTOR` x its limit, or None when it did not.

        The solve is held to its own share (``solve_limit_s``); otherwise the stage that
        took longest after the solve is named.
        """
        total = self.total_s
        if total <= OVERRUN_FACTOR * time_limit_s:
            return None
        head = f"the run took {total:.1f} s, {total / time_limit_s:.2f} x the time limit of {time_limit_s:g} s"
        solve = self.seconds.get("solve", 0.0) + self.seconds.get("memory", 0.0)
        if solve > solve_limit_s:
            return f"{head}; the solve took {solve:.1f} s of its {solve_limit_s:g} s"
        after = {k: v for k, v in self.seconds.items() if k not in ("solve", "memory")}
        worst = max(after, key=after.get)
        return (f"{head}; {worst} took {after[worst]:.1f} s, more than the {time_limit_s - solve_limit_s:g} s "
                "kept for the stages after the solve")


_ACTIVE: contextvars.ContextVar[list | None] = contextvars.ContextVar("plan_stage_stack", default=None)


@contextmanager
def timing() -> Iterator[StageClock]:
    """Record the :func:`stage` blocks run inside, into the clock it yields."""
    clock = StageClock()
    token = _ACTIVE.set([clock])
    try:
        yield clock
    finally:
        _ACTIVE.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Count the block's wall time to stage ``name`` of the active :func:`timing` (none: a no-op).

    While the block runs, the clock's ``current`` names it (the live line shows it).

    Examples
    --------
    >>> with timing() as clock:
    ...     with stage("solve"):
    ...         running = clock.current
    >>> running, clock.current
    ('solve', None)
    """
    stack = _ACTIVE.get()
    if stack is None:
        yield
        return
    frame = [0.0]  # seconds of the stages nested in this one
    stack.append(frame)
    outer, stack[0].current = stack[0].current, name
    start = time.perf_counter()
    try:
        yield
    finally:
        spent = time.perf_counter() - start
        stack[0].current = outer
        stack.pop()
        stack[0].add(name, spent - frame[0])
        if len(stack) > 1:
            stack[-1][0] += spent
