"""Contiguous splits: cut the topological order into blocks, one device each, by dynamic
programming, then sequence the placement with HEFT.

Notes
-----
On graphs whose weights exceed one device (the dnn-partitioning latency inputs: a model
spread over 2 GiB accelerators), HEFT places op by op and pays transfers it did not plan
for; the plans that win keep long stretches of the model on one device and cross between
devices where little data flows. This solver builds such plans directly:

* a *home pool* is a set of interchangeable devices (same durations and memory,
  :class:`~solvers.scheduling.path_bounds.DevicePools`); ops the pool cannot run stay on
  their fastest allowed device;
* the pool's ops, in topological order, are cut into at most ``|pool|`` contiguous blocks,
  block b on the pool's device b. A block must hold its weights (``op_resident_bytes`` of
  its ops, a weight or input several of them read once) in the device's memory and keep each colocation group whole. Its cost is its work
  on the pool plus the cheapest transfer of every edge entering it from an earlier block (the
  data it waits for); the dynamic program minimises the sum of block costs for every number
  of blocks, in ``O(blocks * L^2)`` over ``L`` positions (long orders are cut into at most
  ``max_positions`` chunks of consecutive ops, blocks starting only at chunk starts);
* the topological order is taken twice: as :func:`~solvers.scheduling.structure.topological_order`
  gives it, and with every *free source* (an op of zero duration everywhere and no
  predecessor, such as an operator graph's weight or constant node) moved to just before its
  first consumer (:func:`sources_at_first_use`). A plain topological order may list such
  sources long before their use (the dnn-partitioning operator graphs start with all of
  them), so the first block would hold every weight and each later block would wait for a
  transfer of its own weights; next to its consumer a source's weights fall into the block
  that uses them;
* *away blocks*: a pool whose memory holds every weight (the CPU cores; :func:`away_pools`)
  may take whole blocks of a limited home pool's order. :func:`best_away_splits` cuts the
  order into home blocks (at most ``|pool|``, one device each) and away blocks (cost: work on
  the away pool plus the entering transfers, no memory cap; never two in a row), the a-th
  away block on the away pool's device ``a mod |away|``. Where transfers dominate (the
  dnn-partitioning ResNet-50 layer graph: 191 ms activations between its early layers, 2 GiB
  accelerators) a stretch that would need several accelerators runs cheaper on one CPU core.
  These placements come after the home-only ones and replace them only when shorter;
* each block count's best split (also with the weights limited to 90% and 75% of the memory,
  leaving room for activation buffers) is sequenced by HEFT with the placement fixed
  (:func:`~solvers.scheduling.heft.heft_schedule`), checked by
  :func:`~solvers.scheduling.validate.validate_schedule` (memory with activations, links),
  and the best valid schedule over all pools and block counts is returned.

The block cost is a proxy (blocks overlap in time where the graph allows, transfers of one
link queue); the returned objective is the real makespan of the sequenced schedule, and
nothing here is a bound. Deterministic: no randomness and no clock in any decision.
"""

from __future__ import annotations

import time

import numpy as np

from solvers.core import Accepting, SolveOptions, SolveResult, Status, failure_result
from solvers.scheduling.heft import heft_schedule, upward_ranks
from solvers.scheduling.forced import colocation_closure
from solvers.scheduling.path_bounds import DevicePools
from solvers.scheduling.problem import Objective, SchedulingProblem, SchedulingSolution
from solvers.scheduling.structure import topological_order
from solvers.scheduling.validate import objective_value, validate_schedule

__all__ = ["ContiguousSplitScheduler", "block_costs", "best_splits", "best_away_splits", "away_pools",
           "contiguous_schedule", "sources_at_first_use"]


# The memory share a block's weights may fill: below 1, room for the activations the block
# also holds (the weights alone are what the dynamic program sees).
_FILLS = (1.0, 0.9, 0.75)


def _chunks(count: int, max_positions: int) -> list[int]:
    """Start index of each chunk of ``range(count)`` (at most ``max_positions`` chunks)."""
    size = max(1, -(-count // max_positions))
    return list(range(0, count, size))


def block_costs(problem: SchedulingProblem, pool: tuple[int, ...], ops: list[int],
                starts: list[int], fill: float = 1.0, linked: tuple[int, ...] | None = None) -> np.ndarray:
    """``C[i, j]``: the cost of one block made of chunks ``i .. j-1`` of ``ops`` (module Notes),
    ``inf`` where the block's weights exceed ``fill`` times the device's memory (a colocation
    group counts where its first op is) or the pool cannot run one of its ops. A transfer costs
    its cheapest link between the devices of ``linked`` (default ``pool``).

    Examples
    --------
    A chain a -> b -> c of 2-cycle ops with 5-cycle transfers, on two devices:

    >>> p = SchedulingProblem(((2, 2),) * 3, ((0, 1, 8), (1, 2, 8)), (1, 1), ((-1, 0), (0, -1)), ((5,), (5,)))
    >>> block_costs(p, (0, 1), [0, 1, 2], [0, 1, 2])[0].tolist()  # blocks starting at a
    [inf, 2.0, 4.0, 6.0]
    >>> float(block_costs(p, (0, 1), [0, 1, 2], [0, 1, 2])[2, 3])  # c alone waits for b's data
    7.0
    """
    n_chunks = len(starts)
    d = pool[0]
    pos = _chunk_positions(problem, ops, starts)  # a colocation group goes where its first op goes
    work = np.zeros(n_chunks)
    weight = np.zeros(n_chunks)
    unable = np.zeros(n_chunks)  # ops the pool cannot run
    for op in ops:
        if problem.durations_cycles[op][d] < 0:
            unable[pos[op]] += 1
        else:
            work[pos[op]] += problem.durations_cycles[op][d]
        weight[pos[op]] += problem.resident_bytes(op)
    linked = pool if linked is None else linked
    links = sorted({problem.link_of[a][b] for a in linked for b in linked if a != b and problem.link_of[a][b] >= 0})
    # an edge from chunk cu into chunk cv > cu is paid by every block [i, j) with cu < i <= cv < j
    enter = np.zeros((n_chunks + 1, n_chunks + 1))
    for e, (u, v, _) in enumerate(problem.edges):
        if u in pos and v in pos and pos[u] < pos[v]:
            cost = min((problem.transfer_cycles[e][x] for x in links), default=0)
            enter[pos[u] + 1, pos[v] + 1] += cost
            enter[pos[v] + 1, pos[v] + 1] -= cost
    enter = enter.cumsum(axis=0).cumsum(axis=1)
    pw, pm = np.concatenate([[0.0], work.cumsum()]), np.concatenate([[0.0], weight.cumsum()])
    cost = pw[None, :] - pw[:, None] + enter
    cap = problem.memory_bytes(d) * fill
    idx = np.arange(n_chunks + 1)
    pu = np.concatenate([[0.0], unable.cumsum()])
    bad = (idx[None, :] <= idx[:, None]) | (pu[None, :] - pu[:, None] > 0)
    if cap:
        held = pm[None, :] - pm[:, None]
        if problem.shared_resident:
            held = held - _shared_excess(problem, pos, n_chunks)
        bad |= held > cap
    cost[bad] = np.inf
    return cost


def _shared_excess(problem: SchedulingProblem, pos: dict[int, int], n_chunks: int) -> np.ndarray:
    """``E[i, j]``: the bytes the per-op weights of block ``[i, j)`` count more than once, a
    shared weight or input (``shared_resident``) with k >= 2 readers in the block counted
    ``(k - 1)`` times too many: the device holds it once, as lowering allocates it.

    Examples
    --------
    Ops 0 and 1 read one 5-byte weight; each op its own chunk:

    >>> p = SchedulingProblem(((1,),) * 3, (), (1,), ((-1,),), (), op_resident_bytes=(6, 6, 1),
    ...                       shared_resident=((5, (0, 1)),))
    >>> _shared_excess(p, {0: 0, 1: 1, 2: 2}, 3)[0].tolist()
    [0.0, 0.0, 5.0, 5.0]
    """
    excess = np.zeros((n_chunks + 1, n_chunks + 1))
    for b, readers in problem.shared_resident:
        inside = [pos[i] for i in readers if i in pos]
        if len(inside) > 1:
            count = np.concatenate([[0], np.bincount(inside, minlength=n_chunks).cumsum()])
            excess += b * np.maximum(0, count[None, :] - count[:, None] - 1)
    return excess


def best_splits(cost: np.ndarray, max_blocks: int) -> dict[int, list[int]]:
    """For each number of blocks 1..max_blocks, the chunk boundaries of the cheapest split of
    all chunks (only block counts with a finite split).

    Examples
    --------
    >>> inf = float("inf")
    >>> c = np.array([[inf, 1, 5, 9], [inf, inf, 1, 6], [inf, inf, inf, 1], [inf] * 4])
    >>> best_splits(c, 3)
    {1: [0, 3], 2: [0, 2, 3], 3: [0, 1, 2, 3]}
    """
    n = cost.shape[0] - 1
    f = np.full(n + 1, np.inf)
    f[0] = 0.0
    back: list[np.ndarray] = []
    out: dict[int, list[int]] = {}
    for m in range(1, max_blocks + 1):
        total = f[:, None] + cost  # total[i, j]: m-1 blocks up to i, then block [i, j)
        arg = total.argmin(axis=0)
        f = total[arg, np.arange(n + 1)]
        back.append(arg)
        if np.isfinite(f[n]):
            cuts, j = [n], n
            for level in range(m - 1, -1, -1):
                j = int(back[level][j])
                cuts.append(j)
            out[m] = cuts[::-1]
    return out


def _min_plus(f: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(g, arg)``: ``g[j] = min_i f[i] + cost[i, j]`` and the first ``i`` reaching it."""
    total = f[:, None] + cost
    arg = total.argmin(axis=0)
    return total[arg, np.arange(cost.shape[1])], arg


def best_away_splits(home: np.ndarray, away: np.ndarray, max_home: int) -> dict[int, tuple[list[int], list[bool]]]:
    """For each number of home blocks 0..max_home, the cheapest split of all chunks into home
    blocks (costs ``home``, one device each) and *away* blocks (costs ``away``, on a pool of
    unlimited memory) with at least one away block, never two away blocks in a row (one block
    of both is never dearer: it saves the transfers between them). Returns the chunk boundaries
    and, per block, whether it is away (only block counts with a finite split).

    Examples
    --------
    Three chunks; the first is cheap away, dear at home:

    >>> inf = float("inf")
    >>> home = np.array([[inf, 9, 9, 9], [inf, inf, 1, 2], [inf, inf, inf, 1], [inf] * 4])
    >>> away = np.array([[inf, 2, 8, 9], [inf, inf, 5, 9], [inf, inf, inf, 5], [inf] * 4])
    >>> best_away_splits(home, away, 2)
    {0: ([0, 3], [True]), 1: ([0, 1, 3], [True, False]), 2: ([0, 1, 2, 3], [True, False, False])}
    """
    n = home.shape[0] - 1
    empty = np.full(n + 1, np.inf)
    empty[0] = 0.0
    # states per home-block count m: "pure" (home blocks only), "home" (last block home, some
    # block away), "away" (last block away); each entry (values, arg, previous state per j)
    states: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, list[str]]] = {}

    def best_of(names: list[str], m: int) -> tuple[np.ndarray, list[str]]:
        rows = [states[(name, m)][0] if (name, m) in states else np.full(n + 1, np.inf) for name in names]
        pick = np.argmin(np.stack(rows), axis=0)  # the first on a tie
        return np.min(np.stack(rows), axis=0), [names[int(k)] for k in pick]

    states[("pure", 0)] = (empty, np.zeros(n + 1, dtype=np.int64), [])
    out: dict[int, tuple[list[int], list[bool]]] = {}
    for m in range(0, max_home + 1):
        if m > 0:
            g, arg = _min_plus(states[("pure", m - 1)][0], home)
            states[("pure", m)] = (g, arg, ["pure"] * (n + 1))
            prev, names = best_of(["home", "away"], m - 1)
            g, arg = _min_plus(prev, home)
            states[("home", m)] = (g, arg, [names[int(i)] for i in arg])
        prev, names = best_of(["pure", "home"], m)
        g, arg = _min_plus(prev, away)
        states[("away", m)] = (g, arg, [names[int(i)] for i in arg])
        value, last = best_of(["home", "away"], m)
        if np.isfinite(value[n]):
            out[m] = _walk_back(states, last[n], m, n)
    return out


def _walk_back(states: dict, state: str, m: int, j: int) -> tuple[list[int], list[bool]]:
    """The boundaries and away flags of :func:`best_away_splits`' split ending in ``state`` at ``j``."""
    cuts, away = [j], []
    while (state, m) != ("pure", 0):  # the empty prefix
        _, arg, previous = states[(state, m)]
        i = int(arg[j])
        away.append(state == "away")
        state, m, j = previous[j], m - (state != "away"), i
        cuts.append(j)
    return cuts[::-1], away[::-1]


def sources_at_first_use(problem: SchedulingProblem, order: tuple[int, ...]) -> tuple[int, ...]:
    """``order`` with every free source (zero duration on every device, no predecessor, a
    successor) moved to just before its first successor in ``order``.

    Still a topological order: a source has no predecessor, and every successor of it comes
    at or after the first one; the other ops keep their relative order.

    Examples
    --------
    Two weight sources w1, w2 listed first, feeding the second and third op of a chain a -> b -> c:

    >>> p = SchedulingProblem(((1,), (1,), (1,), (0,), (0,)), ((0, 1, 0), (1, 2, 0), (3, 1, 0), (4, 2, 0)),
    ...                       (1,), ((-1,),), ((),) * 4)
    >>> sources_at_first_use(p, (3, 4, 0, 1, 2))
    (0, 3, 1, 4, 2)
    """
    pos = {op: k for k, op in enumerate(order)}
    first_use: dict[int, int] = {}
    has_pred = [False] * problem.num_ops
    for u, v, _ in problem.edges:
        has_pred[v] = True
        if u not in first_use or pos[v] < pos[first_use[u]]:
            first_use[u] = v
    moved = {op for op in order if op in first_use and not has_pred[op]
             and all(x <= 0 for x in problem.durations_cycles[op])}
    before: dict[int, list[int]] = {}
    for op in order:
        if op in moved:
            before.setdefault(first_use[op], []).append(op)
    out: list[int] = []
    for op in order:
        if op not in moved:
            out += before.get(op, [])
            out.append(op)
    return tuple(out)


def _home_ops(problem: SchedulingProblem, pool: tuple[int, ...], order: tuple[int, ...]) -> list[int]:
    """The ops, in order, whose whole colocation group may run on the pool."""
    closure = colocation_closure(problem)
    return [op for op in order if all(problem.durations_cycles[j][pool[0]] >= 0 for j in closure[op])]


def _fastest_devices(problem: SchedulingProblem) -> tuple[int, ...]:
    """Each op's colocation group on the device fastest for the whole group (the first on a tie)."""
    closure = colocation_closure(problem)
    device = [-1] * problem.num_ops
    for op in range(problem.num_ops):
        rows = [problem.durations_cycles[j] for j in closure[op]]
        usable = [d for d in range(problem.num_devices) if all(r[d] >= 0 for r in rows)]
        device[op] = min(usable, key=lambda d: (sum(r[d] for r in rows), d), default=0)
    return tuple(device)


def _placement(problem: SchedulingProblem, pool: tuple[int, ...], ops: list[int], starts: list[int],
               cuts: list[int], fastest: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """Each block's ops on the pool's devices in order (a colocation group in the block of its
    first op); every other op's group on the device fastest for the whole group (``fastest``,
    :func:`_fastest_devices`, computed when not given)."""
    device = list(_fastest_devices(problem) if fastest is None else fastest)
    pos = _chunk_positions(problem, ops, starts)
    block = np.searchsorted(np.asarray(cuts), np.arange(len(starts)), side="right") - 1
    for op in ops:
        device[op] = pool[int(block[pos[op]])]
    return tuple(device)


def _chunk_positions(problem: SchedulingProblem, ops: list[int], starts: list[int]) -> dict[int, int]:
    """The chunk each op of ``ops`` counts in: its colocation group's first op's chunk."""
    chunk_of = np.zeros(len(ops), dtype=np.int64)
    for c, s in enumerate(starts):
        chunk_of[s:] = c
    at = {op: k for k, op in enumerate(ops)}
    closure = colocation_closure(problem)
    return {op: int(chunk_of[min(at[j] for j in closure[op])]) for op in ops}


def contiguous_schedule(problem: SchedulingProblem, max_positions: int = 1200) -> SchedulingSolution | None:
    """The best valid schedule over home pools and block counts (module Notes), or None.

    Examples
    --------
    Four 3-byte ops in a chain, devices holding 6 bytes: two blocks of two, one transfer.

    >>> p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,),) * 3, device_memory_bytes=(6, 6),
    ...                       op_resident_bytes=(3, 3, 3, 3))
    >>> s = contiguous_schedule(p)
    >>> s.op_device, s.makespan_cycles
    ((0, 0, 1, 1), 13)
    """
    plain = topological_order(problem)
    orders = dict.fromkeys((plain, sources_at_first_use(problem, plain)))  # one when they agree
    best = _BestPlacement(problem, upward_ranks(problem))
    fastest = _fastest_devices(problem)
    pools = DevicePools(problem).pools
    for order in orders:
        for pool in pools:
            ops = _home_ops(problem, pool, order)
            if not ops:
                continue
            starts = _chunks(len(ops), max_positions)
            for fill in _FILLS:
                for cuts in best_splits(block_costs(problem, pool, ops, starts, fill), len(pool)).values():
                    best.consider(_placement(problem, pool, ops, starts, cuts, fastest))
    for order in orders:  # then the splits with away blocks (module Notes), when shorter
        for placement in _away_placements(problem, order, max_positions, fastest, pools):
            best.consider(placement)
    return best.schedule


class _BestPlacement:
    """The shortest valid HEFT schedule over the placements considered, each sequenced once."""

    def __init__(self, problem: SchedulingProblem, ranks) -> None:
        self.problem, self.ranks = problem, ranks
        self.schedule: SchedulingSolution | None = None
        self.value = None
        self.tried: set[tuple[int, ...]] = set()

    def consider(self, placement: tuple[int, ...]) -> None:
        if placement in self.tried:
            return
        self.tried.add(placement)
        sol = heft_schedule(self.problem, placement, self.ranks)
        if sol is None or validate_schedule(self.problem, sol):
            return
        value = objective_value(self.problem, sol)
        if self.value is None or value < self.value:
            self.schedule, self.value = sol, value


def away_pools(problem: SchedulingProblem, pools: tuple[tuple[int, ...], ...] | None = None) -> list[tuple[int, ...]]:
    """The pools whose memory holds every weight of the problem (no limit, or a limit above
    the total), the pools an away block may use (of ``pools``, default the problem's
    :class:`~solvers.scheduling.path_bounds.DevicePools`).

    Examples
    --------
    Two 4-byte accelerators and two CPUs without a limit:

    >>> p = SchedulingProblem(((1, 1, 9, 9),), (), (1, 1, 1, 1), tuple(tuple(-1 if a == b else 0
    ...     for b in range(4)) for a in range(4)), (), device_memory_bytes=(4, 4, 0, 0),
    ...     op_resident_bytes=(6,))
    >>> away_pools(p)
    [(2, 3)]
    """
    total = problem.device_resident_bytes(0, (0,) * problem.num_ops)  # every weight, a shared one once
    pools = DevicePools(problem).pools if pools is None else pools
    return [pool for pool in pools if not 0 < problem.memory_bytes(pool[0]) < total]


def _away_placements(problem: SchedulingProblem, order: tuple[int, ...], max_positions: int,
                     fastest: tuple[int, ...] | None = None, pools: tuple[tuple[int, ...], ...] | None = None):
    """The placements of :func:`best_away_splits`' splits of ``order`` for every limited home
    pool and unlimited away pool, with every weight fill of :data:`_FILLS` (module Notes)."""
    pools = DevicePools(problem).pools if pools is None else pools
    away_of = away_pools(problem, pools)
    if not away_of or len(away_of) == len(pools):  # nothing to move away, or no limited home
        return
    fixed = _fastest_devices(problem) if fastest is None else fastest  # the ops outside a home pool
    for home in pools:
        if home in away_of:
            continue
        ops = _home_ops(problem, home, order)
        if not ops:
            continue
        starts = _chunks(len(ops), max_positions)
        for away in away_of:
            away_cost = block_costs(problem, away, ops, starts, 1.0, linked=home + away)
            for fill in _FILLS:
                home_cost = block_costs(problem, home, ops, starts, fill)
                for cuts, flags in best_away_splits(home_cost, away_cost, len(home)).values():
                    yield _away_placement(problem, fixed, (home, away), ops, starts, (cuts, flags))


def _away_placement(problem: SchedulingProblem, fixed: tuple[int, ...], pools: tuple[tuple[int, ...], ...],
                    ops: list[int], starts: list[int], split: tuple[list[int], list[bool]]) -> tuple[int, ...]:
    """``fixed`` with the ops of ``ops`` placed by ``split`` (boundaries, away flags): the b-th
    home block on the b-th device of the home pool, the a-th away block on device ``a mod
    |away|`` of the away pool (one device each: HEFT free among the pool's devices spread a
    block's ops and paid the transfers, ResNet-50 layers 1,216.5 ms against 1,063.5)."""
    home, away = pools
    cuts, flags = split
    device = list(fixed)
    pos = _chunk_positions(problem, ops, starts)
    block = np.searchsorted(np.asarray(cuts), np.arange(len(starts)), side="right") - 1
    index = np.cumsum(flags) - 1, np.cumsum([not f for f in flags]) - 1  # each block's rank among its kind
    for op in ops:
        b = int(block[pos[op]])
        device[op] = away[int(index[0][b]) % len(away)] if flags[b] else home[int(index[1][b])]
    return tuple(device)


class ContiguousSplitScheduler(Accepting):
    """Contiguous splits sequenced by HEFT (module Notes): FEASIBLE with ``bound=None``, or
    UNKNOWN when no split is valid. LATENCY only.

    Examples
    --------
    >>> p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
    ...                       ((-1, 0), (0, -1)), ((5,),) * 3, device_memory_bytes=(6, 6),
    ...                       op_resident_bytes=(3, 3, 3, 3))
    >>> r = ContiguousSplitScheduler().solve(p)
    >>> r.status.value, r.objective, r.bound
    ('FEASIBLE', 13, None)
    """

    name = "contiguous"
    problem_type = SchedulingProblem

    def __init__(self, max_positions: int = 1200) -> None:
        self.max_positions = max_positions

    def refusal(self, problem) -> str | None:
        why = Accepting.refusal(self, problem)
        if why is None and problem.objective is not Objective.LATENCY:
            why = "contiguous takes LATENCY problems only"
        return why

    def solve(self, problem: SchedulingProblem,
              options: SolveOptions = SolveOptions()) -> SolveResult[SchedulingSolution]:
        t0 = time.perf_counter()
        sol = contiguous_schedule(problem, self.max_positions)
        wall = time.perf_counter() - t0
        if sol is None:
            return failure_result(Status.UNKNOWN, self.name, wall, reason="no contiguous split is valid")
        return SolveResult(Status.FEASIBLE, objective_value(problem, sol), None, sol, wall, self.name, {})
