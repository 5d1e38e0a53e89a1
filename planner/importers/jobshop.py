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

from planner.importers._spec import format_error

__all__ = ["JobShop", "parse_jobshop", "read_jobshop", "jobshop_to_spec", "import_jobshop"]


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
        try:
            rows.append((k, [int(x) for x in s.split()], s))
        except ValueError:
            raise format_error(f"expected integers, got {s!r}", path, k) from None
    if not rows:
        raise format_error("empty file: expected 'n m' (jobs, machines)", path, 1)
    k0, head, raw0 = rows[0]
    if len(head) != 2 or head[0] < 1 or head[1] < 1:
        raise format_error(f"expected 'n m' (positive numbers of jobs and machines), got {raw0!r}", path, k0)
    n, m = head
    body = rows[1:]
    if len(body) != n:
        last = body[-1][0] if body else k0
        raise format_error(f"expected {n} job lines after 'n m', found {len(body)}", path, last)
    jobs = []
    for k, nums, raw in body:
        if len(nums) % 2 or not nums:
            raise format_error(f"expected 'machine duration' pairs, got {len(nums)} numbers", path, k)
        job = []
        for a in range(0, len(nums), 2):
            mach, dur = nums[a], nums[a + 1]
            if not 0 <= mach < m:
                raise format_error(f"machine {mach} is out of range 0..{m - 1}", path, k)
            if dur < 0:
                raise format_error(f"negative duration {dur}", path, k)
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
    return parse_jobshop(path.read_text(), path)


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
    return jobshop_to_spec(read_jobshop(path), name=path.stem)
