"""Shared bandwidth in the retiming: the level plans' ops and DMAs wait for their shares.

With ``memory.bandwidth: shared`` (docs/memory.md, "Shared bandwidth"), every op instance and
DMA of positive duration on a memory-planned device holds a constant share of the fast and of
the main level (:mod:`solvers.memory.levels.bandwidth`: ``SHARE_UNITS`` per level) for its
whole duration. The list schedule (:func:`~planner.memory.retime.list_schedule`) asks this
gate before starting one: it starts only when it is the next of its device in the level
solution's start order (ops before DMAs on ties) and its shares fit beside those running.
This is the level solver's replay (:func:`~solvers.memory.levels.bandwidth.replay_shared`)
as events: what runs at ``now`` started no later, so the load ahead only falls, and checking
``now`` suffices. In a plan with transfers the order is not enforced (only the shares): the
level solutions' times know nothing of the waits for other devices, and following them could
deadlock; the gate then only refuses while shares are held, which always ends. The simulator checks the same shares with its own code.
Link transfers (activities ``xfer:<k>``) hold their main-memory share on each shared end
(:func:`transfer_share`), never in an order, except on a device whose level plan placed them:
a plan re-solved under heads and tails with its link transfers' ends as link holds
(:class:`~planner.memory.cross_device.HeldLevels`, :mod:`solvers.memory.levels.link_holds`) knows the waits for the other
devices, so its order (ops, DMAs and its transfers, by the solution's starts) is enforced like
a plan without transfers: the re-timing then follows the level plan's choice of which goes
first when a transfer's shares do not fit beside an op or DMA. Should those orders wait on
each other across devices, the re-timing deadlocks and that combination is dropped.

A device without a memory plan shares too (:func:`unplanned_shares`): each of its ops holds
``ceil(SHARE_UNITS * memory cycles / cycles)`` of its main memory (its roofline reads and writes
main memory only), and a transfer's end there the link's share, never in an order. So
everything in main memory, the baseline a memory plan must beat, is timed under the same rule
(ops on several streams of the device take turns where their shares do not fit), and so is a
device the cross-device choice leaves in main memory.

Examples
--------
Two activities of one device, each holding 600 shares of the main level: the second waits.

>>> from planner.memory.retime import Activity, list_schedule
>>> gate = BandwidthGate({"op:a": (("d", 1, 600),), "dma:d:0": (("d", 1, 600),)}, {"d": ("op:a", "dma:d:0")})
>>> list_schedule([Activity("op:a", "compute", 5), Activity("dma:d:0", "dma", 3)], {"compute": ("op:a",)}, gate)
{'op:a': 0, 'dma:d:0': 5}
"""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Sequence

from planner.errors import InternalError
from planner.isa.cost import cached_op_cost
from planner.memory.retime import Activity
from solvers.memory.levels import HierarchyProblem, HierarchySolution, LevelProblem, LevelSolution, op_level_bytes
from solvers.memory.levels.bandwidth import SHARE_UNITS, dma_share, dma_shares, op_shares, share_of_cycles
from solvers.memory.levels.hierarchy_bandwidth import hierarchy_op_shares, hop_shares

__all__ = ["BandwidthGate", "device_bandwidth", "transfer_share", "transfer_key", "unplanned_shares", "main_memory_share",
           "bandwidth_gate", "hierarchy_gate", "mixed_gate", "n_level_transfer_share"]

_Share = tuple[str, int, int]  # (device, level index: 0 fast, 1 main (N levels: the problem's), shares)


class BandwidthGate:
    """Admits an activity when it is its device's next in order and its shares fit.

    ``shares``: activity name -> the shares it holds; ``orders``: device -> its activities of
    positive duration, in start order. Activities in neither are not gated. ``in_order=False``:
    the order is not enforced, only the shares (a plan with transfers: the level solutions'
    times ignore the waits for other devices, so their order could contradict them).
    """

    def __init__(self, shares: Mapping[str, tuple[_Share, ...]], orders: Mapping[str, tuple[str, ...]],
                 in_order: bool = True, ordered: frozenset[str] = frozenset()) -> None:
        self.in_order = in_order
        self.ordered = frozenset(ordered)  # devices whose order holds even without in_order (link holds)
        self.shares = dict(shares)
        self.orders = {d: tuple(o) for d, o in orders.items()}
        self.devices_of: dict[str, list[str]] = {}  # a transfer may be in the orders of both its ends
        for d, o in self.orders.items():
            for name in o:
                self.devices_of.setdefault(name, []).append(d)
        self.heads = {d: 0 for d in self.orders}
        self.load: dict[tuple[str, int], int] = {}
        self.running: set[str] = set()

    def admit(self, a: Activity, now: int) -> bool:
        for d in self.devices_of.get(a.name, ()):
            if self.in_order or d in self.ordered:
                order, head = self.orders[d], self.heads[d]
                if head >= len(order) or order[head] != a.name:
                    return False
        return all(self.load.get((dev, level), 0) + u <= SHARE_UNITS for dev, level, u in self.shares.get(a.name, ()))

    def start(self, a: Activity, now: int) -> None:
        for d in self.devices_of.get(a.name, ()):
            self.heads[d] += 1
        if a.name not in self.shares:
            return
        self.running.add(a.name)
        for dev, level, u in self.shares[a.name]:
            self.load[dev, level] = self.load.get((dev, level), 0) + u

    def finish(self, name: str) -> None:
        if name in self.running:
            self.running.discard(name)
            for dev, level, u in self.shares.get(name, ()):
                self.load[dev, level] -= u


def device_bandwidth(device: str, problem: LevelProblem, solution: LevelSolution, op_names: tuple[str, ...],
                     dma_names: tuple[str, ...]) -> tuple[dict[str, tuple[_Share, ...]], tuple[str, ...]]:
    """One device's shares per activity and its order, from its expanded level problem and
    solution (``op_names[i]``, ``dma_names[q]``: the activities of op i and of the q-th DMA).

    Examples
    --------
    >>> from solvers.memory.levels import Transfer, TransferKind
    >>> p = LevelProblem((4, 2), ((0,), (1,)), ((), ()), (4, 8), (64, 99), (4, 1), shared_bandwidth=True)
    >>> s = LevelSolution(((False, False), (False, True)), ((False, False), (False, False)),
    ...                   (Transfer(TransferKind.PREFETCH, 1, 1, -1, 1, 4, 8),), (0, 12), (4, 2))
    >>> device_bandwidth("d", p, s, ("op:a", "op:b"), ("dma:d:0",))
    ({'op:a': (('d', 1, 1000),), 'op:b': (('d', 0, 1000),), 'dma:d:0': (('d', 0, 250), ('d', 1, 1000))}, ('op:a', 'dma:d:0', 'op:b'))
    """
    fb = [0] * problem.num_ops
    sb = [0] * problem.num_ops
    for t in range(problem.num_tensors):
        for j, a in enumerate(problem.accesses(t)):
            if problem.is_real(a):
                if solution.in_fast[t][j]:
                    fb[a] += problem.tensor_bytes[t]
                else:
                    sb[a] += problem.tensor_bytes[t]
    shares: dict[str, tuple[_Share, ...]] = {}
    keyed = []
    for i, name in enumerate(op_names):
        shares[name] = tuple((device, level, u) for level, u in enumerate(op_shares(problem, i, fb[i], sb[i])) if u)
        if solution.op_duration[i] > 0:
            keyed.append(((solution.op_start[i], 0, i), name))
    dma = tuple((device, level, u) for level, u in enumerate(dma_shares(problem)) if u)
    for q, (name, tr) in enumerate(zip(dma_names, solution.transfers)):
        shares[name] = dma
        if tr.duration_cycles > 0:
            keyed.append(((tr.start_cycle, 1, q), name))
    return shares, tuple(name for _, name in sorted(keyed))


def transfer_share(link_bytes_per_s: int, levels) -> int:
    """Main-memory shares one end of a link transfer holds on a shared device (``levels``: its
    :class:`~planner.memory.assemble.DeviceLevels`): a DMA's at the link's rate.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> from fractions import Fraction
    >>> lv = NS(expanded=NS(bandwidth_bytes_per_cycle=(Fraction(128), Fraction(17))),
    ...         bridge=NS(device=NS(profile=NS(clock_hz=10**9))))
    >>> transfer_share(8 * 10**9, lv), transfer_share(50 * 10**9, lv)
    (471, 1000)
    """
    clock = levels.bridge.device.profile.clock_hz
    return dma_share(Fraction(link_bytes_per_s, clock), levels.expanded.bandwidth_bytes_per_cycle[1])


def unplanned_shares(plan, graph, hardware, planned) -> dict[str, tuple[_Share, ...]]:
    """The main-memory shares of every op of a device without a memory plan (not in
    ``planned``), by activity ``op:<name>`` (level index 1, main memory, as a planned device's):
    ``ceil(SHARE_UNITS * c / D)`` with ``D`` the op's device cycles and ``c`` those its
    roofline spends on main memory's bytes (the simulator's rule for the record: a matrix or
    vector op's ``mem_bytes``; an op with explicit cycles or a copy holds none).

    Examples
    --------
    A relu reading and writing 1 KiB of a 16 B/cycle main memory is memory-bound (128 cycles):
    all of it.

    >>> from types import SimpleNamespace as NS
    >>> from planner.graph.ir import Graph, Op, Tensor
    >>> from planner.hardware import Device, Hardware
    >>> from planner.isa.profiles import get_profile
    >>> g = Graph([Tensor("x", (256,), kind="input"), Tensor("y", (256,), kind="output")],
    ...           [Op("r", "relu", ("x",), ("y",))])
    >>> dev = Device("npu0", "npu", get_profile("edge-npu"))
    >>> plan = NS(ops=(NS(name="r", device="npu0"),))
    >>> unplanned_shares(plan, g, Hardware((dev,), ()), set())
    {'op:r': (('npu0', 1, 1000),)}
    """
    shares: dict[str, tuple[_Share, ...]] = {}
    for o in plan.ops:
        if o.device in planned:
            continue
        device = hardware.device(o.device)
        u = main_memory_share(cached_op_cost(graph.ops[o.name], graph, device.profile, device.kind))
        if u:
            shares[f"op:{o.name}"] = ((o.device, 1, u),)
    return shares


def main_memory_share(cost) -> int:
    """The main-memory shares an op of this ISA cost holds with everything in main memory (the
    simulator's rule for the record): ``ceil(SHARE_UNITS * memory cycles / cycles)`` for a
    matrix or vector op; an op with explicit cycles or a copy holds none."""
    if cost.explicit or cost.unit not in ("matrix", "vector"):
        return 0
    return share_of_cycles(cost.memory_cycles, cost.cycles)


def _unplanned_transfer_share(link_bytes_per_s: int, device) -> int:
    """A transfer end's main-memory shares on a device without a memory plan (as :func:`transfer_share`)."""
    clock = device.profile.clock_hz
    return dma_share(Fraction(link_bytes_per_s, clock),
                     Fraction(device.profile.main_memory.bandwidth_bytes_per_s, clock))


def bandwidth_gate(levels: Mapping, instances: Mapping[str, tuple[str, ...]],
                   in_order: bool = True, transfers: Sequence = (),
                   links: Mapping[str, int] | None = None, unplanned: Mapping[str, tuple[_Share, ...]] | None = None,
                   hardware=None) -> BandwidthGate | None:
    """The gate over every device whose level problem shares bandwidth (None: none does).

    ``levels``: device -> :class:`~planner.memory.assemble.DeviceLevels`; ``instances``: device
    -> its op instances in order (activities ``op:<instance>``; DMAs are ``dma:<device>:<q>``);
    ``in_order``: see :class:`BandwidthGate`. ``transfers`` (the plan's, in the retiming's order:
    activities ``xfer:<k>``) with ``links`` (link name -> bytes per second): each end on a shared
    device holds its main memory's :func:`transfer_share` (never in an order). ``unplanned``
    (:func:`unplanned_shares`; None: devices without a memory plan do not share) with
    ``hardware``: those devices' ops hold their main-memory shares, and a transfer's end there
    too, never in an order.

    Examples
    --------
    >>> bandwidth_gate({}, {}) is None
    True
    """
    shares: dict[str, tuple[_Share, ...]] = {}
    orders: dict[str, tuple[str, ...]] = {}
    for d, lv in levels.items():
        if lv.expanded.shared_bandwidth:
            dma_names = tuple(f"dma:{d}:{q}" for q in range(len(lv.solution.transfers)))
            s, orders[d] = device_bandwidth(d, lv.expanded, lv.solution, tuple(f"op:{i}" for i in instances[d]),
                                            dma_names)
            shares.update(s)
    if unplanned is not None:
        shares.update(unplanned)

    def end_share(d: str, link: str) -> int | None:
        if d in orders:
            return transfer_share(links[link], levels[d])
        if unplanned is not None and d not in levels:
            return _unplanned_transfer_share(links[link], hardware.device(d))
        return None

    for k, t in enumerate(transfers):
        ends = tuple((d, 1, u) for d in (t.src_device, t.dst_device) if t.duration_cycles > 0
                     for u in (end_share(d, t.link),) if u)
        if ends:
            shares[f"xfer:{k}"] = ends
    ordered = _with_link_orders(levels, instances, orders, transfers)
    return BandwidthGate(shares, orders, in_order, ordered) if orders or unplanned is not None else None


def transfer_key(transfer) -> str:
    """A plan transfer's name across re-timings (its index may differ): ``src op->dst op@link``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> transfer_key(NS(src_op="a", dst_op="b", link="l0"))
    'a->b@l0'
    """
    return f"{transfer.src_op}->{transfer.dst_op}@{transfer.link}"


def _with_link_orders(levels: Mapping, instances: Mapping[str, tuple[str, ...]], orders: dict[str, tuple[str, ...]],
                      transfers: Sequence) -> frozenset[str]:
    """The devices whose level plan placed its link transfers (``link_order``:
    :class:`~planner.memory.cross_device.HeldLevels`), in place:
    each transfer of positive duration joins the device's order at its planned start, after the
    ops and DMAs starting then (the level replay's rank), and those orders are enforced. A plan
    solved with other transfers than ``transfers`` keeps the shares only."""
    ordered = set()
    for d, lv in levels.items():
        held = dict(getattr(lv, "link_order", ()))
        if not held or d not in orders:
            continue
        mine = {transfer_key(t): k for k, t in enumerate(transfers)
                if d in (t.src_device, t.dst_device) and t.duration_cycles > 0}
        if not set(mine) <= set(held):
            continue
        s = lv.solution
        keyed = [((s.op_start[i], 0, i), f"op:{name}") for i, name in enumerate(instances[d]) if s.op_duration[i] > 0]
        keyed += [((tr.start_cycle, 1, q), f"dma:{d}:{q}") for q, tr in enumerate(s.transfers) if tr.duration_cycles > 0]
        rank = {key: n for n, key in enumerate(held)}
        keyed += [((held[key], 2, rank[key]), f"xfer:{k}") for key, k in mine.items()]
        orders[d] = tuple(name for _, name in sorted(keyed))
        ordered.add(d)
    return frozenset(ordered)


def hierarchy_gate(device: str, problem: HierarchyProblem, solution: HierarchySolution, op_names: tuple[str, ...],
                   dma_names: tuple[str, ...], in_order: bool = True) -> BandwidthGate | None:
    """The gate of one device planned over N levels (None: its problem does not share): each op
    (``op_names[i]``) and hop (``dma_names[q]``, the q-th of ``solution.moves``) holds its
    shares of every level (:mod:`~solvers.memory.levels.hierarchy_bandwidth`), in the
    solution's start order (ops before hops on ties), as the N-level replay places them.

    Examples
    --------
    >>> from solvers.memory.levels import Move, TransferKind
    >>> p = HierarchyProblem((1, 1), ((0,), (1,)), ((), ()), (8, 8), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), tensor_home=(2, 2), shared_bandwidth=True)
    >>> hop = Move(TransferKind.PREFETCH, 1, 1, 0, 2, 1, -1, 1, 8, 8)
    >>> s = HierarchySolution(((2, 2), (2, 1)), ((False, False), (False, False)), (hop,), (0, 16), (8, 2))
    >>> g = hierarchy_gate("d", p, s, ("op:a", "op:b"), ("dma:0",))
    >>> g.shares["dma:0"], g.orders["d"]
    ((('d', 1, 250), ('d', 2, 1000)), ('op:a', 'dma:0', 'op:b'))
    """
    if not problem.shared_bandwidth:
        return None
    rows = op_level_bytes(problem, solution.level)
    shares: dict[str, tuple[_Share, ...]] = {}
    keyed = []
    for i, name in enumerate(op_names):
        shares[name] = tuple((device, lv, u) for lv, u in enumerate(hierarchy_op_shares(problem, i, rows[i])) if u)
        if solution.op_duration[i] > 0:
            keyed.append(((solution.op_start[i], 0, i), name))
    for q, (name, m) in enumerate(zip(dma_names, solution.moves)):
        shares[name] = tuple((device, lv, u) for lv, u in enumerate(hop_shares(problem, m.src_level, m.dst_level))
                             if u)
        if m.duration_cycles > 0:
            keyed.append(((m.start_cycle, 1, q), name))
    return BandwidthGate(shares, {device: tuple(name for _, name in sorted(keyed))}, in_order)


# One switch (``bandwidth: shared``) covers a spec, so every N-level problem of a plan gated
# under sharing shares too; one that does not is a bug upstream, not a case to gate.
_NOT_SHARED = ("the joint bandwidth gate was asked for under bandwidth: shared, but device {device}'s N-level "
               "problem does not share bandwidth: its ops and hops would hold no shares and its transfer ends "
               "shares of a level it does not share (one switch covers the spec, so this is a bug upstream)")


def mixed_gate(two_level: Mapping, instances: Mapping[str, tuple[str, ...]], n_level: Mapping[str, tuple],
               transfers: Sequence, links: Mapping[str, int], unplanned: Mapping[str, tuple[_Share, ...]],
               hardware) -> BandwidthGate:
    """The joint gate of a whole plan whose devices mix N-level, two-level and unplanned ones
    under ``bandwidth: shared`` (:func:`~planner.memory.mixed_assemble.assemble_mixed`).

    ``two_level`` and ``instances`` as :func:`bandwidth_gate`'s ``levels`` and ``instances``;
    ``n_level``: device -> ``(problem, solution, op names, hop names, link order)`` of its
    expanded N-level problem and solution (:func:`hierarchy_gate`'s arguments) and, for a plan
    re-solved with its transfers as link holds, each transfer's planned start by
    :func:`transfer_key` (else empty); ``unplanned``: the shares of the devices with neither
    (:func:`unplanned_shares`). Every op instance and hop of an N-level device holds its shares
    of each of its levels; a link transfer's end there holds its :func:`dma_share` of the
    problem's main level (at the link's rate, as the simulator's SEND and RECV). With transfers
    no device's order is enforced (only the shares, as :func:`bandwidth_gate` with ``in_order``
    False), except a held plan's (two-level or N-level), whose order with its transfers in it
    holds: the re-timing then follows its choice of which goes first when shares do not fit.
    Without transfers every device keeps its level plan's order. An N-level problem that does
    not share raises :class:`~planner.errors.InternalError` (one switch covers a spec).

    Examples
    --------
    A transfer from an unplanned device ``e`` into an N-level device ``n`` whose op holds all of
    its main level (index 1); the link runs at half of either main memory's rate:

    >>> from types import SimpleNamespace as NS
    >>> from solvers.memory.levels import Move, TransferKind
    >>> p = HierarchyProblem((1,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1,
    ...                      ((0, 1), (1, 2)), shared_bandwidth=True)
    >>> s = HierarchySolution(((1, 1),), ((False, False),), (), (5,), (2,))
    >>> dev = NS(profile=NS(clock_hz=10**9, main_memory=NS(bandwidth_bytes_per_s=4 * 10**9)))
    >>> xfer = NS(src_device="e", dst_device="n", link="l", duration_cycles=5, src_op="a", dst_op="b")
    >>> g = mixed_gate({}, {}, {"n": (p, s, ("op:b",), (), ())}, [xfer], {"l": 2 * 10**9}, {},
    ...                NS(device=lambda d: dev))
    >>> g.shares["op:b"], g.shares["xfer:0"], g.in_order, g.ordered
    ((('n', 1, 1000),), (('e', 1, 500), ('n', 1, 500)), False, frozenset())

    Re-solved with the transfer held before its op (planned start 0), the order holds:

    >>> held = mixed_gate({}, {}, {"n": (p, s, ("op:b",), (), (("a->b@l", 0),))}, [xfer], {"l": 2 * 10**9}, {},
    ...                   NS(device=lambda d: dev))
    >>> held.orders["n"], held.ordered
    (('xfer:0', 'op:b'), frozenset({'n'}))
    """
    in_order = not transfers
    base = bandwidth_gate(two_level, instances, in_order, transfers, links, unplanned, hardware)
    shares = dict(base.shares) if base is not None else {}
    orders = dict(base.orders) if base is not None else {}
    ordered = base.ordered if base is not None else frozenset()
    ordered = set(ordered)
    for d, (problem, solution, op_names, hop_names, link_order) in n_level.items():
        own = hierarchy_gate(d, problem, solution, op_names, hop_names, in_order)
        if own is None:
            raise InternalError(_NOT_SHARED.format(device=d))
        shares.update(own.shares)
        orders.update(own.orders)
        held = _held_order(d, solution, op_names, hop_names, link_order, transfers)
        if held is not None:
            orders[d] = held
            ordered.add(d)
    for k, t in enumerate(transfers):
        if t.duration_cycles <= 0:
            continue
        rows = [row for row in shares.get(f"xfer:{k}", ()) if row[0] not in n_level]
        for d in (t.src_device, t.dst_device):
            if d in n_level:
                u = n_level_transfer_share(links[t.link], n_level[d][0], hardware.device(d))
                rows += [(d, n_level[d][0].main_level, u)] if u else []
        if rows:
            shares[f"xfer:{k}"] = tuple(rows)
    return BandwidthGate(shares, orders, in_order, frozenset(ordered))


def _held_order(device: str, solution: HierarchySolution, op_names: Sequence[str], hop_names: Sequence[str],
                link_order: Sequence[tuple[str, int]], transfers: Sequence) -> tuple[str, ...] | None:
    """An N-level device's order with its transfers in it (ops, hops, then transfers on ties, by
    the solution's starts and ``link_order``), or None: not a held plan, or one solved with other
    transfers than ``transfers``."""
    held = dict(link_order)
    mine = {transfer_key(t): k for k, t in enumerate(transfers)
            if device in (t.src_device, t.dst_device) and t.duration_cycles > 0}
    if not held or not set(mine) <= set(held):
        return None
    keyed = [((s, 0, i), name) for i, (name, s, d) in enumerate(zip(op_names, solution.op_start, solution.op_duration))
             if d > 0]
    keyed += [((m.start_cycle, 1, q), name) for q, (name, m) in enumerate(zip(hop_names, solution.moves))
              if m.duration_cycles > 0]
    rank = {key: n for n, key in enumerate(held)}
    keyed += [((held[key], 2, rank[key]), f"xfer:{k}") for key, k in mine.items()]
    return tuple(name for _, name in sorted(keyed))


def n_level_transfer_share(link_bytes_per_s: int, problem: HierarchyProblem, device) -> int:
    """A transfer end's shares of an N-level device's main level (as :func:`transfer_share`)."""
    rate = Fraction(link_bytes_per_s, device.profile.clock_hz)
    return dma_share(rate, problem.bandwidth_bytes_per_cycle[problem.main_level])
