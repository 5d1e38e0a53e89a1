"""Job-shop instances in the jsplib text format → ordinary specs.

Format: lines starting with ``#`` are comments; then ``n m`` (jobs, machines); then one
line per job of ``machine duration`` pairs in processing order, machines numbered from 0.

Modelling: one device per machine, of kind ``m<k>`` (profile ``generic``, count 1, one
stream; ``k`` zero-padded to the width of the largest machine number, so that a kind such
as ``m10`` never collides with instance ``0`` of kind ``m1``). Operation ``o`` of job ``j`` is the op ``j<j>_o<o>`` of type ``task`` with
``cycles: {m<k>: d}`` for its own machine only (a ``task`` may run only on the kinds it
names). A job's chain is a list of control dependencies (``after:``): zero-byte edges.
The machines are joined all-to-all by zero-latency links, so a hop between machines
takes zero cycles, and a zero-cycle transfer occupies no link time (the scheduling
problem's contract), so hops never serialize. The makespan is then the job-shop makespan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.importers._spec import format_error, spec_name
from planner.importers.stg import MAX_TASK_CYCLES, parse_int_line
from planner.input_files import read_input_text

__all__ = ["MAX_MACHINES", "MAX_OPERATIONS", "JobShop", "parse_jobshop", "read_jobshop", "jobshop_to_spec",
           "import_jobshop"]

#: At most this many machines (each is a device of the spec; the public instances have 20).
MAX_MACHINES = 1024
#: At most this many operations over all jobs (the public instances have up to 2,000).
MAX_OPERATIONS = 100_000


@dataclass(frozen=True, slots=True)
class JobShop:
    """``jobs[j]`` is the list of ``(machine, duration)`` of job j, in order.

    Examples
    --------
    >>> js = parse_jobshop("# tiny\\n2 2\\n0 3 1 2\\n1 2 0 4\\n")
    >>> js.num_jobs, js.num_machines, js.jobs[1]
    (2, 2, ((1, 2), (0, 4)))
    >>> js.lower_bound()  # machine 0 carries 3 + 4; each job is 5 or 6 long
    7
    """

    num_jobs: int
    num_machines: int
    jobs: tuple[tuple[tuple[int, int], ...], ...]

    def lower_bound(self) -> int:
        """``max(longest job, busiest machine)``."""
        load = [0] * self.num_machines
        for job in self.jobs:
            for m, d in job:
                load[m] += d
        longest = max((sum(d for _, d in job) for job in self.jobs), default=0)
        return max(longest, max(load, default=0))


def parse_jobshop(text: str, path: Path | str | None = None) -> JobShop:
    """Parse jsplib text; a malformed file raises :class:`~planner.errors.SpecError` with its line.

    Examples
    --------
    >>> parse_jobshop("1 2\\n0 3 2 4\\n")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 2: machine 2 is out of range 0..1
    >>> parse_jobshop("2 1\\n0 3\\n")
    Traceback (most recent call last):
    ...
    planner.errors.SpecError: line 2: expected 2 job lines after 'n m', found 1
    """
    rows: list[tuple[int, list[int], str]] = []
    for k, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        rows.append((k, parse_int_line(s, "'jobs machines' or 'machine duration' pairs", path, k), s))
        if len(rows) > MAX_OPERATIONS + 1:
            raise format_error(f"more than {MAX_OPERATIONS:,} jobs; at most that many are imported", path, k)
    if not rows:
        raise format_error("empty file: expected 'n m' (jobs, machines)", path, 1)
    k0, head, raw0 = rows[0]
    if len(head) != 2 or head[0] < 1 or head[1] < 1:
        raise format_error(f"expected 'n m' (positive numbers of jobs and machines), got {raw0[:80]!r}", path, k0)
    n, m = head
    if m > MAX_MACHINES or n > MAX_OPERATIONS:
        raise format_error(f"{n:,} jobs on {m:,} machines; at most {MAX_OPERATIONS:,} jobs and "
                           f"{MAX_MACHINES:,} machines are imported", path, k0)
    body = rows[1:]
    if len(body) != n:
        last = body[-1][0] if body else k0
        raise format_error(f"expected {n} job lines after 'n m', found {len(body)}", path, last)
    jobs = []
    operations = 0
    for k, nums, raw in body:
        operations += len(nums) // 2
        if operations > MAX_OPERATIONS:
            raise format_error(f"more than {MAX_OPERATIONS:,} operations; at most that many are imported", path, k)
        if len(nums) % 2 or not nums:
            raise format_error(f"expected 'machine duration' pairs, got {len(nums)} numbers", path, k)
        job = []
        for a in range(0, len(nums), 2):
            mach, dur = nums[a], nums[a + 1]
            if not 0 <= mach < m:
                raise format_error(f"machine {mach} is out of range 0..{m - 1}", path, k)
            if dur < 0:
                raise format_error(f"negative duration {dur}", path, k)
            if dur > MAX_TASK_CYCLES:
                raise format_error(f"duration {dur:,} is above the limit of {MAX_TASK_CYCLES:,} cycles", path, k)
            job.append((mach, dur))
        jobs.append(tuple(job))
    return JobShop(n, m, tuple(jobs))


def read_jobshop(path: Path | str) -> JobShop:
    """Read and parse a jsplib instance file.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "j"; _ = p.write_text("1 1\\n0 5\\n")
    ...     read_jobshop(p).jobs
    (((0, 5),),)
    """
    path = Path(path)
    return parse_jobshop(read_input_text(path), path)


def jobshop_to_spec(js: JobShop, name: str = "jobshop") -> dict[str, Any]:
    """The spec dict of a job shop: one device per machine, job chains as ``after:``.

    Examples
    --------
    >>> spec = jobshop_to_spec(parse_jobshop("2 2\\n0 3 1 2\\n1 2 0 4\\n"), "tiny")
    >>> [d["name"] for d in spec["hardware"]["devices"]]
    ['m0', 'm1']
    >>> spec["hardware"]["topology"]
    {'kind': 'all-to-all', 'bandwidth': '1 TiB/s', 'latency': 0}
    >>> spec["models"][0]["graph"]["ops"][1]
    {'name': 'j0_o1', 'type': 'task', 'cycles': {'m1': 2}, 'after': ['j0_o0']}
    >>> [d["name"] for d in jobshop_to_spec(parse_jobshop("1 11\\n10 1\\n"))["hardware"]["devices"]][9:]
    ['m09', 'm10']
    """
    width = len(str(js.num_machines - 1))
    kind = [f"m{k:0{width}d}" for k in range(js.num_machines)]
    devices = [{"name": kind[k], "profile": "generic", "count": 1} for k in range(js.num_machines)]
    ops: list[dict[str, Any]] = []
    for j, job in enumerate(js.jobs):
        for o, (mach, dur) in enumerate(job):
            op: dict[str, Any] = {"name": f"j{j}_o{o}", "type": "task", "cycles": {kind[mach]: dur}}
            if o:
                op["after"] = [f"j{j}_o{o - 1}"]
            ops.append(op)
    hardware: dict[str, Any] = {"devices": devices}
    if js.num_machines > 1:
        # Zero latency: a hop is a zero-byte edge, so it takes 0 cycles and no link time.
        hardware["topology"] = {"kind": "all-to-all", "bandwidth": "1 TiB/s", "latency": 0}
    return {
        "version": 1,
        "name": name,
        "hardware": hardware,
        "models": [{"name": name, "graph": {"tensors": [], "ops": ops}}],
        "objective": "latency",
    }


def import_jobshop(path: Path | str) -> dict[str, Any]:
    """Read a jsplib file and return its spec dict (name = file name).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "ft00"; _ = p.write_text("1 1\\n0 5\\n")
    ...     import_jobshop(p)["name"]
    'ft00'
    """
    path = Path(path)
    return jobshop_to_spec(read_jobshop(path), name=spec_name(path))
