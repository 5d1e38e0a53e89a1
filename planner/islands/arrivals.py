"""Arrival (release) times and tails for one island's latency solve.

An island's part of the graph reads tensors other islands produce. Solved alone (the tensor
an input at cycle 0, :func:`planner.islands.route.island_spec`), the island would plan as if
that data were there from the start, and would not know which of its outputs other islands
wait for. :func:`arrivals_from_plan` reads both from a global schedule of the whole graph (a
previous round's): an op's **release** is the cycle its last cross-island input arrived
(the network transfer's end), and a producer's **tail** is the cross-island transfer plus the
longest chain of ops and transfers after the consumer, as placed in that schedule (no
waiting, so no slack of that schedule is counted).

:class:`solvers.scheduling.SchedulingProblem` has no release times or tails, so
:func:`with_arrivals` models them with what it has: a virtual device (one stream per virtual
op, so they never wait for each other) joined to every island device by a zero-cycle link;
a release is a virtual op of that many cycles before the op (a zero-byte edge), a tail one
after the producer. Under the latency objective the island's makespan then counts both. The
virtual ops are not the island's: :func:`island_ops` drops them from the plan.

Examples
--------
>>> from solvers.scheduling import SchedulingProblem
>>> from planner.reductions.scheduling import Reduction
>>> p = SchedulingProblem(((4,), (3,)), ((0, 1, 8),), (1,), ((-1,),), ((),))
>>> r = Reduction(("a", "b"), ("d0",), (), (("a", "b", ("t",), 8),), 1, "latency")
>>> q, s = with_arrivals(p, r, Arrivals(release={"a": 10}, tail={"b": 5}))
>>> s.op_names, s.device_names, q.durations_cycles, q.edges
(('a', 'b', '<release a>', '<tail b>'), ('d0', '<arrivals>'), ((4, -1), (3, -1), (-1, 10), (-1, 5)), ((0, 1, 8), (2, 0, 0), (1, 3, 0)))
>>> q.device_streams, q.link_of, q.transfer_cycles
((1, 2), ((-1, 0), (0, -1)), ((0,), (0,), (0,)))
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from planner.graph.ir import Graph
from planner.plan import Plan
from planner.reductions.scheduling import Reduction
from solvers.scheduling import SchedulingProblem
from solvers.scheduling.problem import FORBIDDEN

__all__ = ["Arrivals", "arrivals_from_plan", "with_arrivals", "island_ops", "VIRTUAL_DEVICE"]

#: The virtual device's name (angle brackets: no spec name has them).
VIRTUAL_DEVICE = "<arrivals>"
_VIRTUAL_LINK = "<arrivals link>"


@dataclass(frozen=True)
class Arrivals:
    """Per op of one island: ``release`` (the cycle its last cross-island input arrives) and
    ``tail`` (cycles that must follow its end elsewhere, for outputs other islands wait on)."""

    release: Mapping[str, int] = field(default_factory=dict)
    tail: Mapping[str, int] = field(default_factory=dict)

    def restricted(self, ops: Iterable[str]) -> "Arrivals":
        """The part for one island's ops (positive values only, in the ops' order)."""
        ops = list(ops)
        return Arrivals({op: self.release[op] for op in ops if self.release.get(op, 0) > 0},
                        {op: self.tail[op] for op in ops if self.tail.get(op, 0) > 0})

    def __bool__(self) -> bool:
        return bool(self.release or self.tail)


def arrivals_from_plan(graph: Graph, plan: Plan, island_of_op: Mapping[str, int]) -> Arrivals:
    """Releases and tails of every op with a cross-island input or output, from a global schedule.

    Examples
    --------
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.plan import PlacedOp, PlacedTransfer, Plan
    >>> g = Graph([Tensor("x", (1,)), Tensor("y", (1,))],
    ...           [Op("a", "task", (), ("x",)), Op("b", "task", ("x",), ("y",)), Op("c", "task", ("y",), ())])
    >>> plan = Plan("s", "latency", "FEASIBLE", 30, None, None, 30, 1,
    ...             (PlacedOp("a", "d0", 0, 0, 10), PlacedOp("b", "d1", 0, 14, 6), PlacedOp("c", "d1", 0, 20, 10)),
    ...             (PlacedTransfer("a", "b", ("x",), 4, "d0", "d1", "net", 10, 4),))
    >>> arrivals_from_plan(g, plan, {"a": 0, "b": 1, "c": 1})
    Arrivals(release={'b': 14}, tail={'a': 20})
    """
    placed = {o.name: o for o in plan.ops}
    moved = {(t.src_op, t.dst_op): t for t in plan.transfers}
    after = _chain_after(graph, placed, moved)
    release: dict[str, int] = {}
    tail: dict[str, int] = {}
    for src, dst, _ in graph.op_edges():
        if island_of_op[src] == island_of_op[dst]:
            continue
        transfer = moved.get((src, dst))
        arrives = transfer.end_cycle if transfer else placed[src].end_cycle
        release[dst] = max(release.get(dst, 0), arrives)
        carried = transfer.duration_cycles if transfer else 0
        tail[src] = max(tail.get(src, 0), carried + after[dst])
    order = {op: k for k, op in enumerate(graph.topological_order())}
    return Arrivals(dict(sorted(release.items(), key=lambda kv: order[kv[0]])),
                    dict(sorted(tail.items(), key=lambda kv: order[kv[0]])))


def _chain_after(graph: Graph, placed, moved) -> dict[str, int]:
    """Each op's own duration plus the longest chain of ops and transfers after it, as placed."""
    after: dict[str, int] = {}
    for op in reversed(graph.topological_order()):
        follow = 0
        for succ in graph.dag.successors(op):
            transfer = moved.get((op, succ))
            follow = max(follow, (transfer.duration_cycles if transfer else 0) + after[succ])
        after[op] = placed[op].duration_cycles + follow
    return after


def with_arrivals(problem: SchedulingProblem, reduction: Reduction,
                  arrivals: Arrivals) -> tuple[SchedulingProblem, Reduction]:
    """``problem`` with a virtual op per release (before its op) and per tail (after its op) on
    a virtual device (module docstring), and the reduction that names them."""
    index = {name: i for i, name in enumerate(reduction.op_names)}
    n, devices, links = problem.num_ops, problem.num_devices, problem.num_links
    virtual = [(f"<release {op}>", cycles, (n + k, index[op])) for k, (op, cycles) in enumerate(arrivals.release.items())]
    base = n + len(virtual)
    virtual += [(f"<tail {op}>", cycles, (index[op], base + k)) for k, (op, cycles) in enumerate(arrivals.tail.items())]
    durations = tuple(row + (FORBIDDEN,) for row in problem.durations_cycles)
    durations += tuple((FORBIDDEN,) * devices + (cycles,) for _, cycles, _ in virtual)
    link_of = tuple(row + (links,) for row in problem.link_of) + ((links,) * devices + (FORBIDDEN,),)
    edges = problem.edges + tuple((u, v, 0) for _, _, (u, v) in virtual)
    transfer = tuple(row + (0,) for row in problem.transfer_cycles) + ((0,) * (links + 1),) * len(virtual)
    classes = problem.device_class + (max(problem.device_class, default=-1) + 1,) if problem.device_class else ()

    def padded(values: tuple[int, ...], extra: int) -> tuple[int, ...]:
        return values + (0,) * extra if values else ()

    grown = replace(problem, durations_cycles=durations, edges=edges,
                    device_streams=problem.device_streams + (max(1, len(virtual)),), link_of=link_of,
                    transfer_cycles=transfer, device_memory_bytes=padded(problem.device_memory_bytes, 1),
                    op_resident_bytes=padded(problem.op_resident_bytes, len(virtual)),
                    op_output_bytes=padded(problem.op_output_bytes, len(virtual)), device_class=classes,
                    op_names=reduction.op_names + tuple(name for name, _, _ in virtual))
    names = [name for name, _, _ in virtual]
    edge_meta = reduction.edges + tuple((grown.op_names[u], grown.op_names[v], (), 0) for _, _, (u, v) in virtual)
    return grown, replace(reduction, op_names=reduction.op_names + tuple(names),
                          device_names=reduction.device_names + (VIRTUAL_DEVICE,),
                          link_names=reduction.link_names + (_VIRTUAL_LINK,), edges=edge_meta)


def island_ops(plan: Plan) -> Plan:
    """The plan without the virtual ops and transfers of :func:`with_arrivals`."""
    return replace(plan, ops=tuple(o for o in plan.ops if o.device != VIRTUAL_DEVICE),
                   transfers=tuple(t for t in plan.transfers if VIRTUAL_DEVICE not in (t.src_device, t.dst_device)))
