"""Standard Task Graph Set (Kasahara lab) files → ordinary specs.

Format (``randNNNN.stg``): the first non-comment line is ``n``, the number of real tasks;
then ``n + 2`` lines ``id cost n_pred pred...`` in topological order, where task ``0``
and task ``n + 1`` are zero-cost dummy entry and exit tasks. Lines starting with ``#``
are generator notes (the trailing block carries e.g. ``# CP Length : 55``).

The problem is P|prec|Cmax: identical processors, no communication. The spec has one
device kind ``proc`` (profile ``generic``, 1 GHz, so one device cycle is one timeline
cycle) with ``count: 1`` and ``streams: p``: a single device cannot send anything to
itself, so there is no communication by construction. Each task becomes an op of type
``task`` with ``cycles: {proc: cost}`` and its predecessors as control dependencies
(``after:``), so no tensors are needed.

Dummy tasks: the entry task ``0`` and the exit task ``n + 1`` are **dropped** when their
cost is 0. They only connect to sources and sinks, so no precedence between real tasks
is lost, and they would add nothing to the makespan. Any other zero-cost task is kept
with ``cycles: {proc: 0}`` (its precedence may matter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.importers._spec import format_error, spec_name
from planner.input_files import read_input_text

__all__ = ["MAX_TASKS", "MAX_TASK_CYCLES", "StgGraph", "parse_stg", "read_stg", "stg_to_spec", "import_stg",
           "parse_int_line"]

#: At most this many tasks (the public set goes to 5,000; the planner's solvers are measured to 1,000).
MAX_TASKS = 100_000
#: A task costs at most this many cycles (1,000 s at the 1 GHz reference clock).
MAX_TASK_CYCLES = 10**12
_INT = re.compile(r"[+-]?\d+")


@dataclass(frozen=True, slots=True)
class StgGraph:
    """A parsed STG file: ``costs[i]`` and ``preds[i]`` for ids ``0..n+1`` (dummies included).

    Examples
    --------
    >>> g = parse_stg("2\\n0 0 0\\n1 3 1 0\\n2 4 1 1\\n3 0 1 2\\n")
    >>> g.num_tasks, g.costs, g.preds[2]
    (2, (0, 3, 4, 0), (1,))
    >>> g.critical_path(), g.total_work()
    (7, 7)
    """

    num_tasks: int
    costs: tuple[int, ...]
    preds: tuple[tuple[int, ...], ...]
    notes: tuple[str, ...] = ()

    def critical_path(self) -> int:
        """Length of the longest cost-weighted path (a lower bound on any makespan)."""
        finish: list[int] = []
        for i, c in enumerate(self.costs):
            finish.append(c + max((finish[p] for p in self.preds[i]), default=0))
        return max(finish, default=0)

    def total_work(self) -> int:
        return sum(self.costs)

    def lower_bound(self, processors: int) -> int:
        """``max(critical path, ceil(total work / p))``.

        >>> parse_stg("2\\n0 0 0\\n1 3 1 0\\n2 4 1 0\\n3 0 2 1 2\\n").lower_bound(1)
        7
        """
        return max(self.critical_path(), -(-self.total_work() // processors))


def parse_stg(text: str, path: Path | str | None = None) -> StgGraph:
    """Parse STG text; a malformed file raises :class:`~planner.errors.SpecError` with its line.

    Examples
    --------
    >>> parse_stg("1\\n0 0 0\\n1 5 1 0\\n")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 3: expected 3 task lines (ids 0..2) after the task count, found 2
    >>> parse_stg("1\\n0 0 0\\n1 x 1 0\\n2 0 1 1\\n")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 3: expected integers 'id cost n_pred pred...', got '1 x 1 0'
    """
    rows: list[tuple[int, list[int], str]] = []  # (line number, integers, raw)
    notes: list[str] = []
    for k, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        if s.startswith("#"):
            notes.append(s.lstrip("#").strip())
            continue
        rows.append((k, parse_int_line(s, "'id cost n_pred pred...'", path, k), s))
        if len(rows) > MAX_TASKS + 3:
            raise format_error(f"more than {MAX_TASKS:,} tasks; at most that many are imported", path, k)
    if not rows:
        raise format_error("empty file: expected the number of tasks on the first line", path, 1)
    first_line, first, _ = rows[0]
    if len(first) != 1 or first[0] < 0:
        raise format_error("the first line must hold one non-negative integer, the number of tasks",
                           path, first_line)
    n = first[0]
    if n > MAX_TASKS:
        raise format_error(f"{n:,} tasks; at most {MAX_TASKS:,} are imported", path, first_line)
    body = rows[1:]
    if len(body) != n + 2:
        last = body[-1][0] if body else first_line
        raise format_error(f"expected {n + 2} task lines (ids 0..{n + 1}) after the task count, "
                           f"found {len(body)}", path, last)
    costs: list[int] = []
    preds: list[tuple[int, ...]] = []
    for expected_id, (k, nums, raw) in enumerate(body):
        if len(nums) < 3:
            raise format_error(f"expected 'id cost n_pred pred...', got {raw[:80]!r}", path, k)
        tid, cost, npred, plist = nums[0], nums[1], nums[2], nums[3:]
        if tid != expected_id:
            raise format_error(f"expected task id {expected_id}, got {tid}", path, k)
        if cost < 0:
            raise format_error(f"task {tid} has a negative cost {cost}", path, k)
        if cost > MAX_TASK_CYCLES:
            raise format_error(f"task {tid} costs {cost:,}; at most {MAX_TASK_CYCLES:,} cycles", path, k)
        if npred != len(plist):
            raise format_error(f"task {tid} declares {npred} predecessors but lists {len(plist)}", path, k)
        if len(set(plist)) != len(plist):
            raise format_error(f"task {tid} lists a predecessor twice: {plist}", path, k)
        for p in plist:
            if not 0 <= p < tid:
                raise format_error(f"task {tid}: predecessor {p} is not an earlier task id "
                                   "(ids must be in topological order)", path, k)
        costs.append(cost)
        preds.append(tuple(plist))
    return StgGraph(n, tuple(costs), tuple(preds), tuple(notes))


def parse_int_line(s: str, what: str, path: Path | str | None, line: int) -> list[int]:
    """The integers of one line of a text format; anything else (or a number of more than
    18 digits) names the line.

    Examples
    --------
    >>> parse_int_line("1 5 1 0", "'id cost'", None, 3)
    [1, 5, 1, 0]
    >>> parse_int_line("1 " + "9" * 30, "'id cost'", "a.stg", 3)
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: a.stg:3: the number 999999999999999999999999999999 is too large (more than 18 digits)
    """
    out = []
    for token in s.split():
        if not _INT.fullmatch(token):
            shown = s if len(s) <= 80 else s[:77] + "..."
            raise format_error(f"expected integers {what}, got {shown!r}", path, line)
        if len(token.lstrip("+-")) > 18:
            raise format_error(f"the number {token if len(token) <= 40 else token[:37] + '...'} is too large "
                               "(more than 18 digits)", path, line)
        out.append(int(token))
    return out


def read_stg(path: Path | str) -> StgGraph:
    """Read and parse an ``.stg`` file.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "t.stg"; _ = p.write_text("1\\n0 0 0\\n1 5 1 0\\n2 0 1 1\\n")
    ...     read_stg(p).costs
    (0, 5, 0)
    """
    path = Path(path)
    return parse_stg(read_input_text(path), path)


def stg_to_spec(graph: StgGraph, processors: int, name: str = "stg",
                time_limit_s: float | None = None) -> dict[str, Any]:
    """The spec dict of one STG instance on ``processors`` identical processors.

    Examples
    --------
    >>> g = parse_stg("2\\n0 0 0\\n1 3 1 0\\n2 4 1 1\\n3 0 1 2\\n")
    >>> spec = stg_to_spec(g, 2, name="tiny")
    >>> spec["hardware"]["devices"]
    [{'name': 'proc', 'profile': 'generic', 'count': 1, 'streams': 2}]
    >>> spec["models"][0]["graph"]["ops"][1]
    {'name': 't2', 'type': 'task', 'cycles': {'proc': 4}, 'after': ['t1']}
    """
    if processors < 1:
        raise ValueError(f"processors must be >= 1, got {processors}")
    n = graph.num_tasks
    drop = {i for i in (0, n + 1) if graph.costs[i] == 0}
    ops: list[dict[str, Any]] = []
    for i, cost in enumerate(graph.costs):
        if i in drop:
            continue
        op: dict[str, Any] = {"name": f"t{i}", "type": "task", "cycles": {"proc": cost}}
        after = [f"t{p}" for p in graph.preds[i] if p not in drop]
        if after:
            op["after"] = after
        ops.append(op)
    spec: dict[str, Any] = {
        "version": 1,
        "name": name,
        "hardware": {"devices": [{"name": "proc", "profile": "generic", "count": 1, "streams": processors}]},
        "models": [{"name": name, "graph": {"tensors": [], "ops": ops}}],
        "objective": "latency",
    }
    if time_limit_s is not None:
        spec["solver"] = {"time_limit": f"{time_limit_s:g} s"}
    return spec


def import_stg(path: Path | str, processors: int = 4) -> dict[str, Any]:
    """Read an ``.stg`` file and return its spec dict (name = file stem).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "t.stg"; _ = p.write_text("1\\n0 0 0\\n1 5 1 0\\n2 0 1 1\\n")
    ...     [o["name"] for o in import_stg(p, 2)["models"][0]["graph"]["ops"]]
    ['t1']
    """
    path = Path(path)
    return stg_to_spec(read_stg(path), processors, name=spec_name(path))
