"""Shared bandwidth (issue 14, item 4): ops and DMAs contend for each level's bandwidth.

With :attr:`~solvers.memory.levels.problem.LevelProblem.shared_bandwidth` set, each level's
bandwidth is a cumulative resource of :data:`SHARE_UNITS` shares. Every instruction of
positive duration holds a constant number of shares of each level for its whole duration,
and starts only when they are free:

* an op of duration ``D = max(compute, cf + cs)`` with ``cf = ceil(FB/bw_f)`` and
  ``cs = ceil(SB/bw_s)`` (its roofline) holds ``ceil(SHARE_UNITS * c_l / D)`` shares of
  level l: the fraction of its time the roofline spends moving level l's bytes at full
  rate, rounded up, so over ``D`` cycles it moves at least its bytes. A memory-bound op
  reading one level holds all of it; a compute-bound op a part;
* a DMA at ``rate`` (the slower level's, by default) holds ``min(SHARE_UNITS,
  ceil(SHARE_UNITS * rate / bw_l))`` shares of both levels (the slow level's all of them),
  latency included.

Durations do not change: contention only delays starts. Integers throughout (rates are exact
Fractions), so the solver, the planner's retiming and the simulator (each with its own code)
compute the same shares.

The replay (:func:`replay_shared`) is a list schedule: the instructions of positive duration
start in one fixed order (the solution's own start times; ops before DMAs on ties), each at
the earliest time, not before the previous one's start, at which its dependencies have ended,
its engine is free and its shares fit; zero-duration ones hold nothing and start as soon as
their dependencies allow. (A solution whose times contradict its dependencies, e.g. a draft
without times, has an instruction placed out of that order when the order's next one waits
on it.) Every instruction placed before one started no later than it, so the
load ahead of a start only falls; and a solution valid under sharing is re-timed never later
(each instruction's interval overlaps, at or after its own start, only what it overlapped in
the solution).
"""

from __future__ import annotations

from fractions import Fraction

from ortools.sat.python import cp_model

from solvers.dag import WaitDeadlock, list_starts
from solvers.memory.levels.problem import LevelProblem, LevelSolution, TransferKind, ceil_div, cycles_for_bytes

__all__ = ["SHARE_UNITS", "share_of_cycles", "dma_share", "op_shares", "dma_shares", "bandwidth_spans",
           "check_bandwidth", "replay_shared", "instruction_shares", "list_schedule_shared",
           "slow_traffic_lower_bound", "add_bandwidth", "add_op_share_interval"]

SHARE_UNITS = 1000  # a level's whole bandwidth, in shares
# Up to this many accesses an op's shares are a table over its sums of fast bytes; above, products.
_MAX_TABLE_ACCESSES = 16


def share_of_cycles(level_cycles: int, duration_cycles: int) -> int:
    """Shares an instruction of ``duration_cycles`` holds to move ``level_cycles`` of bytes at full rate.

    Examples
    --------
    >>> share_of_cycles(4, 4), share_of_cycles(1, 3), share_of_cycles(0, 5), share_of_cycles(0, 0)
    (1000, 334, 0, 0)
    """
    if duration_cycles <= 0 or level_cycles <= 0:
        return 0
    return min(SHARE_UNITS, ceil_div(SHARE_UNITS * level_cycles, duration_cycles))


def dma_share(rate: Fraction, level_rate: Fraction) -> int:
    """Shares of a level a DMA at ``rate`` holds (all of it when the level is no faster).

    Examples
    --------
    >>> dma_share(Fraction(8000, 7), Fraction(32000, 7)), dma_share(Fraction(1), Fraction(1))
    (250, 1000)
    """
    if rate <= 0:
        return 0
    q = Fraction(rate) * SHARE_UNITS / Fraction(level_rate)
    return min(SHARE_UNITS, -(-q.numerator // q.denominator))


def op_shares(problem: LevelProblem, op: int, fast_bytes: int, slow_bytes: int) -> tuple[int, int]:
    """``(fast, slow)`` shares op ``op`` holds with these bytes in each level.

    Examples
    --------
    Compute 3 cycles, 4 fast bytes at 4 B/cycle (1 cycle): a third of the fast level:

    >>> p = LevelProblem((3,), ((0,),), ((),), (4,), (8, 99), (4, 1), shared_bandwidth=True)
    >>> op_shares(p, 0, 4, 0), op_shares(p, 0, 0, 4)
    ((334, 0), (0, 1000))
    """
    bf, bs = problem.bandwidth_bytes_per_cycle
    cf, cs = cycles_for_bytes(fast_bytes, bf), cycles_for_bytes(slow_bytes, bs)
    d = max(problem.compute_cycles[op], cf + cs)
    return share_of_cycles(cf, d), share_of_cycles(cs, d)


def dma_shares(problem: LevelProblem) -> tuple[int, int]:
    """``(fast, slow)`` shares every DMA holds.

    Examples
    --------
    >>> dma_shares(LevelProblem((1,), ((),), ((),), (), (8, 99), (4, 1)))
    (250, 1000)
    """
    rate = problem.dma_rate
    return tuple(dma_share(rate, bw) for bw in problem.bandwidth_bytes_per_cycle)


def _op_bytes(problem: LevelProblem, in_fast) -> tuple[list[int], list[int]]:
    fb = [0] * problem.num_ops
    sb = [0] * problem.num_ops
    for t in range(problem.num_tensors):
        for j, a in enumerate(problem.accesses(t)):
            if problem.is_real(a):
                (fb if in_fast[t][j] else sb)[a] += problem.tensor_bytes[t]
    return fb, sb


def bandwidth_spans(problem: LevelProblem, solution: LevelSolution) -> list[tuple[int, int, int, int, str]]:
    """``(start, end, fast shares, slow shares, what)`` of every instruction of positive duration.

    Examples
    --------
    >>> from solvers.memory.levels.problem import Transfer
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1), shared_bandwidth=True)
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> bandwidth_spans(p, LevelSolution(((False, True),), ((False, False),), (pf,), (8,), (4,)))
    [(0, 8, 250, 1000, 'prefetch of tensor 0'), (8, 12, 500, 0, 'op 0')]
    """
    fb, sb = _op_bytes(problem, solution.in_fast)
    spans = [(s, s + d, *op_shares(problem, i, fb[i], sb[i]), f"op {problem.op_name(i)}")
             for i, (s, d) in enumerate(zip(solution.op_start, solution.op_duration)) if d > 0]
    uf, us = dma_shares(problem)
    spans += [(tr.start_cycle, tr.end_cycle, uf, us, f"{tr.kind.value} of tensor {problem.tensor_name(tr.tensor)}")
              for tr in solution.transfers if tr.duration_cycles > 0]
    return sorted(spans)


def check_bandwidth(problem: LevelProblem, solution: LevelSolution) -> list[str]:
    """Every cycle at which the instructions running hold more than a level's shares.

    Examples
    --------
    A prefetch (all of the slow level) running while op 0 reads the slow level:

    >>> from solvers.memory.levels.problem import Transfer
    >>> p = LevelProblem((8, 4), ((), (0,)), ((1,), ()), (8, 8), (64, 99), (4, 1), shared_bandwidth=True)
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 1, 0, 8)
    >>> s = LevelSolution(((False, True), (False,)), ((False, False), (False,)), (pf,), (0, 8), (8, 4))
    >>> check_bandwidth(p, s)
    ['slow level bandwidth: 2000 of 1000 shares at cycle 0 (op 0, prefetch of tensor 0)']
    """
    errs: list[str] = []
    spans = bandwidth_spans(problem, solution)
    for level, name in ((2, "fast"), (3, "slow")):
        events = sorted([(sp[1], -sp[level], k) for k, sp in enumerate(spans)]
                        + [(sp[0], sp[level], k) for k, sp in enumerate(spans)])
        load = 0
        for when, delta, k in events:
            load += delta
            if delta > 0 and load > SHARE_UNITS:
                running = [sp[4] for sp in spans if sp[0] <= when < sp[1] and sp[level]]
                errs.append(f"{name} level bandwidth: {load} of {SHARE_UNITS} shares at cycle {when} "
                            f"({', '.join(running)})")
                break
    return errs


class _Placed:
    """The shares held over time by what the replay has placed, all started by ``last_start``
    (shares are a tuple with one entry per level: two here, N in the hierarchy's replay)."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int, tuple[int, ...]]] = []  # (start, end, shares per level)
        self.last_start = 0

    def earliest_fit(self, ready: int, shares: tuple[int, ...]) -> int:
        """The first time ``>= max(ready, last_start)`` at which ``shares`` are free on every
        level (the load only falls after ``last_start``, so checking the start suffices)."""
        t = max(ready, self.last_start)
        for when in sorted({t, *(e for _s, e, _u in self.spans if e > t)}):
            held = [sum(u[lv] for s, e, u in self.spans if s <= when < e) for lv in range(len(shares))]
            if all(h + x <= SHARE_UNITS for h, x in zip(held, shares)):
                return when
        raise AssertionError("shares never free")  # unreachable: every span ends

    def place(self, start: int, duration: int, shares: tuple[int, ...]) -> None:
        self.last_start = start
        self.spans = [sp for sp in self.spans if sp[1] > start]  # ended ones no longer matter
        self.spans.append((start, start + duration, tuple(shares)))


def replay_shared(problem: LevelProblem, solution: LevelSolution,
                  durations: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """Op and DMA starts under shared bandwidth (see the module docstring), for an unsplit problem.

    Raises ValueError if the waits deadlock.

    Examples
    --------
    Op 0 reads 8 slow bytes at 1 B/cycle (8 cycles, all of the slow level); the prefetch
    for op 1, triggered at the start, must wait for it (separately it would run alongside):

    >>> from solvers.memory.levels.problem import Transfer
    >>> p = LevelProblem((8, 4), ((1,), (0,)), ((), ()), (8, 8), (64, 99), (4, 1), shared_bandwidth=True)
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 1, 0, 8)
    >>> s = LevelSolution(((False, True), (False, False)), ((False, False), (False, False)), (pf,), (0, 8), (8, 4))
    >>> replay_shared(p, s, (8, 4))
    ([0, 16], [8])
    """
    n, queue = problem.num_ops, solution.transfers
    releases: list[list[int]] = [[] for _ in range(n + 1)]
    for q, tr in enumerate(queue):
        releases[min(tr.release_op, n)].append(q)
    evict_q = {tr.tensor: q for q, tr in enumerate(queue) if tr.kind is TransferKind.EVICT}
    fb, sb = _op_bytes(problem, solution.in_fast)
    uf_dma, us_dma = dma_shares(problem)
    order = sorted([(solution.op_start[i], 0, i) for i in range(n) if durations[i] > 0]
                   + [(tr.start_cycle, 1, q) for q, tr in enumerate(queue) if tr.duration_cycles > 0])
    head = 0
    done: set[tuple[int, int]] = set()  # (kind, index) of the positive instructions placed
    placed = _Placed()
    op_start, op_end = [0] * n, [0] * n
    tr_start, tr_end = [0] * len(queue), [0] * len(queue)
    oi = qi = 0
    clock_op = clock_dma = 0
    while oi < n or qi < len(queue):
        while head < len(order) and order[head][1:] in done:
            head += 1
        turn = order[head][1:] if head < len(order) else None
        ready_op = ready_dma = None
        if oi < n and all(q < qi for q in releases[oi]):
            ready_op = max([clock_op] + [tr_end[q] for q in releases[oi]])
        if qi < len(queue):
            tr = queue[qi]
            ev = evict_q.get(tr.tensor) if tr.kind is TransferKind.PREFETCH else None
            if tr.trigger_op < oi and (ev is None or ev < qi):
                ready_dma = max(clock_dma, op_end[tr.trigger_op] if tr.trigger_op >= 0 else 0,
                                tr_end[ev] if ev is not None else 0)
        # zero-duration instructions hold nothing: at once; the others in the order, unless the
        # order's head waits on them (times inconsistent with the dependencies, e.g. a draft)
        op_now = ready_op is not None and (durations[oi] == 0 or turn == (0, oi))
        dma_now = ready_dma is not None and (queue[qi].duration_cycles == 0 or turn == (1, qi))
        if not (op_now or dma_now):
            op_now = ready_op is not None
            dma_now = not op_now and ready_dma is not None
        if op_now:
            s = ready_op
            if durations[oi]:
                uf, us = op_shares(problem, oi, fb[oi], sb[oi])
                s = placed.earliest_fit(ready_op, (uf, us))
                placed.place(s, durations[oi], (uf, us))
                done.add((0, oi))
            op_start[oi], op_end[oi] = s, s + durations[oi]
            clock_op = op_end[oi]
            oi += 1
        elif dma_now:
            d = queue[qi].duration_cycles
            s = ready_dma
            if d:
                s = placed.earliest_fit(ready_dma, (uf_dma, us_dma))
                placed.place(s, d, (uf_dma, us_dma))
                done.add((1, qi))
            tr_start[qi], tr_end[qi] = s, s + d
            clock_dma = tr_end[qi]
            qi += 1
        else:
            raise WaitDeadlock(f"deadlock: op {oi} and DMA {qi} wait on each other")
    return op_start, tr_start


def instruction_shares(problem: LevelProblem, solution: LevelSolution) -> dict[tuple[str, int], tuple[int, int]]:
    """``(fast, slow)`` shares of every op (``("op", i)``) and DMA (``("dma", q)``) of the solution.

    Examples
    --------
    >>> from solvers.memory.levels.problem import Transfer
    >>> p = LevelProblem((4,), ((0,),), ((),), (8,), (8, 99), (4, 1), shared_bandwidth=True)
    >>> pf = Transfer(TransferKind.PREFETCH, 0, 1, -1, 0, 0, 8)
    >>> instruction_shares(p, LevelSolution(((False, True),), ((False, False),), (pf,), (8,), (4,)))
    {('op', 0): (500, 0), ('dma', 0): (250, 1000)}
    """
    fb, sb = _op_bytes(problem, solution.in_fast)
    shares = {("op", i): op_shares(problem, i, fb[i], sb[i]) for i in range(problem.num_ops)}
    dma = dma_shares(problem)
    shares.update({("dma", q): dma for q in range(len(solution.transfers))})
    return shares


def list_schedule_shared(deps: dict, length: dict, shares: dict, priority: dict,
                         floor: dict | None = None) -> dict:
    """Starts over a dependency DAG under shared bandwidth (several streams, or heads): the list
    schedule of :func:`solvers.dag.list_starts`, gated by the shares.

    ``deps``: key -> the keys it waits for (their ends); ``length``: key -> cycles; ``shares``:
    key -> ``(fast, slow)`` shares it holds while it runs (or one per level of a hierarchy);
    ``priority``: key -> a sortable rank (the solution's start order); ``floor``: key -> its earliest start (heads). Of the keys
    whose dependencies are placed, the lowest priority goes next: one of positive length at the
    earliest time, not before the previous positive one's start, at which its dependencies
    have ended and its shares fit (so positive ones start in the order placed, and the load
    ahead of a start only falls: checking the start suffices); one of zero length holds
    nothing and starts as soon as its dependencies allow. The engines (a stream's previous op,
    the DMA queue's previous DMA) are dependencies. A solution valid under sharing is re-timed
    never later: in its start order every key's dependencies come first, and what runs at its
    own start in the re-timing also ran then in the solution. ValueError on a cycle.

    Examples
    --------
    Two ops on two streams, each holding 600 slow shares, cannot overlap; a third with 400 can:

    >>> deps = {"a": set(), "b": set(), "c": set()}
    >>> sh = {"a": (0, 600), "b": (0, 600), "c": (0, 400)}
    >>> list_schedule_shared(deps, {"a": 5, "b": 3, "c": 2}, sh, {"a": 0, "b": 1, "c": 2})
    {'a': 0, 'b': 5, 'c': 5}
    """
    placed = _Placed()

    def fit(k, t: int) -> int:
        if length[k] > 0:
            t = placed.earliest_fit(t, shares[k])
            placed.place(t, length[k], shares[k])
        return t

    return list_starts(deps, length, floor, priority, fit)


def slow_traffic_lower_bound(problem: LevelProblem) -> int:
    """A lower bound on the makespan under shared bandwidth: the slow level's forced traffic.

    Over a plan of makespan T the slow level gives at most ``SHARE_UNITS * T`` share-cycles.
    An op holding ``u = ceil(SHARE_UNITS * cs / dur)`` slow shares for ``dur`` cycles uses at
    least ``SHARE_UNITS * cs >= SHARE_UNITS * SB / bw_s``, so each slow access of a tensor of b
    bytes uses ``SHARE_UNITS * b / bw_s`` at least; a DMA of it uses exactly its slow shares
    times its cycles. Two uses per tensor are forced: an input's first read (from the slow
    level, or from a prefetch: access 0 is virtual, nothing can be kept) and a live-out
    tensor's producer's write (to the slow level, or to the fast one and then an eviction). So
    ``T >= sum over those tensors of min(b / bw_s, dma share-cycles / SHARE_UNITS)``, rounded
    up; every term is a different access or DMA.

    Examples
    --------
    An input of 4 B and a weight of 8 B, each read once, slow 1 B/cycle: 4 + 8 = 12 cycles:

    >>> p = LevelProblem((4, 4, 2), ((0,), (), (1,)), ((), (), ()), (4, 8), (64, 99), (4, 1),
    ...                  shared_bandwidth=True)
    >>> slow_traffic_lower_bound(p)
    12
    """
    bs = problem.bandwidth_bytes_per_cycle[1]
    dma_slow = dma_shares(problem)[1]
    total = Fraction(0)
    for t in range(problem.num_tensors):
        acc = problem.accesses(t)
        b = problem.tensor_bytes[t]
        forced = (acc[0] == -1 and len(acc) > 1 and problem.is_real(acc[1])) or (
            problem.is_real(acc[0]) and acc[-1] == problem.num_ops)
        if forced and b:
            total += min(Fraction(b) / bs, Fraction(dma_slow * problem.dma_cycles(t), SHARE_UNITS))
    return -(-total.numerator // total.denominator)


def add_op_share_interval(model, v, i: int, shares, intervals: list[list], demands: list[list]) -> None:
    """Op ``i``'s interval (``v.start``/``v.dur``, a variable end under ``v.horizon`` when the
    duration is one) with its ``shares`` per level (ints or model expressions), appended to
    each level's ``intervals``/``demands`` where the share is not a constant 0. The level
    models' Cumulatives (two levels here, N in ``hierarchy_bandwidth``) share it."""
    if all(isinstance(u, int) and u == 0 for u in shares):
        return
    if isinstance(v.dur[i], int):
        iv = model.new_fixed_size_interval_var(v.start[i], v.dur[i], f"bw_op_{i}")
    else:
        end = model.new_int_var(0, v.horizon, f"bw_end_{i}")
        model.add(end == v.start[i] + v.dur[i])
        iv = model.new_interval_var(v.start[i], v.dur[i], end, f"bw_op_{i}")
    for level, u in enumerate(shares):
        if not (isinstance(u, int) and u == 0):
            intervals[level].append(iv)
            demands[level].append(u)


def add_bandwidth(model: cp_model.CpModel, problem: LevelProblem, v) -> None:
    """One ``Cumulative`` per level over the op and DMA intervals, demands = shares.

    An op's shares depend on its fast bytes ``FB``: a table over the sums its accesses can
    reach links ``FB`` to its two shares. ``v`` is the model's
    :class:`~solvers.memory.levels.cpsat.LevelVars` (its ``dma_intervals`` from
    :func:`~solvers.memory.levels.cpsat.add_transfers`).

    Examples
    --------
    The hand-checked case of :func:`replay_shared`, solved: prefetching for op 1 now waits
    for op 0, so reading slow (8 + 8) is as good as prefetching (8 + 8 + 4 > 16):

    >>> from solvers.memory.levels.cpsat import build_level_model
    >>> p = LevelProblem((8, 4), ((1,), (0,)), ((), ()), (8, 8), (64, 99), (4, 1), shared_bandwidth=True)
    >>> model, v = build_level_model(p)
    >>> solver = cp_model.CpSolver(); solver.parameters.num_workers = 1
    >>> _ = solver.solve(model); solver.value(v.makespan)
    16
    """
    intervals = [[], []]
    demands = [[], []]
    rows = problem.op_accesses()
    bf, bs = problem.bandwidth_bytes_per_cycle
    for i, row in enumerate(rows):
        if v.cf[i] is None:  # every access fixed: constant shares
            fixed_fb = sum(problem.tensor_bytes[t] for t, j in row if v.fast[t, j])
            total = sum(problem.tensor_bytes[t] for t, _ in row)
            shares = op_shares(problem, i, fixed_fb, total - fixed_fb)
        else:
            shares = _op_share_vars(model, problem, v, i, row)
        add_op_share_interval(model, v, i, shares, intervals, demands)
    for level, u in enumerate(dma_shares(problem)):
        if u:
            intervals[level] += v.dma_intervals
            demands[level] += [u] * len(v.dma_intervals)
    _add_link_holds(v, intervals, demands)
    for level in range(2):
        if intervals[level]:
            model.add_cumulative(intervals[level], demands[level], SHARE_UNITS)


def _add_link_holds(v, intervals: list[list], demands: list[list]) -> None:
    """Link transfers' ends on the device (heads and tails' :mod:`~solvers.memory.levels.link_holds`,
    ``v.hold_intervals`` when present): each holds its shares of the slow level."""
    for interval, shares in getattr(v, "hold_intervals", ()):
        intervals[1].append(interval)
        demands[1].append(shares)


def _op_share_vars(model: cp_model.CpModel, problem: LevelProblem, v, i: int, row) -> tuple:
    """Op i's (fast, slow) shares as variables tied to its fast bytes by a table."""
    sizes = [problem.tensor_bytes[t] for t, _ in row]
    total = sum(sizes)
    fb_expr = sum(problem.tensor_bytes[t] * v.fast[t, j] for t, j in row)
    if not total:
        return 0, 0
    if len(sizes) > _MAX_TABLE_ACCESSES:  # too many sums to list: share * dur = ceil form
        return _op_share_products(model, v, i)
    sums = {0}
    for b in sizes:
        sums |= {x + b for x in sums}
    table = sorted({(fb, *op_shares(problem, i, fb, total - fb)) for fb in sums})
    fb = model.new_int_var(0, total, f"fast_bytes_{i}")
    model.add(fb == fb_expr)
    uf = model.new_int_var(min(r[1] for r in table), max(r[1] for r in table), f"fast_share_{i}")
    us = model.new_int_var(min(r[2] for r in table), max(r[2] for r in table), f"slow_share_{i}")
    model.add_allowed_assignments([fb, uf, us], table)
    return uf, us


def _op_share_products(model: cp_model.CpModel, v, i: int) -> tuple:
    """Op i's shares as ``u = ceil(SHARE_UNITS * c / dur)`` through ``u * dur`` products (an op with
    too many accesses for a table): ``u*dur >= U*c`` and ``u*dur <= U*c + dur - 1``, so ``u`` is the
    ceiling (0 when ``c`` is; ``dur >= 1`` whenever the op moves a byte)."""
    domain = model.proto.variables[v.dur[i].index].domain
    longest = domain[len(domain) - 1]
    out = []
    for level, c in enumerate((v.cf[i], v.cs[i])):
        u = model.new_int_var(0, SHARE_UNITS, f"{('fast', 'slow')[level]}_share_{i}")
        product = model.new_int_var(0, SHARE_UNITS * max(1, longest), f"share_dur_{level}_{i}")
        model.add_multiplication_equality(product, [u, v.dur[i]])
        model.add(product >= SHARE_UNITS * c)
        model.add(product <= SHARE_UNITS * c + v.dur[i] - 1)
        out.append(u)
    return tuple(out)
