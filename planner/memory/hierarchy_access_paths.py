"""The cross-device bound's paths through an op of an N-level device, with every level of its accesses.

:mod:`planner.memory.access_paths` bounds each op of a two-level planned device by the least
over its fast/slow choices of ``start + roofline + tail``, and carries each op's least end
forward. This module gives it the same choices for a device offered an N-level plan
(``HierarchyBridge``), one per level of each access, and adds what an N-level plan cannot
avoid before the op starts under ``bandwidth: shared``.

Notes
-----
For an op ``i`` of an N-level device (not split, at most :data:`MAX_ASSIGNMENTS` level
assignments), every plan either keeps the device in main memory or gives each access of ``i``
one level (a fast-only op: level 0), the bytes at each level fitting its full capacity. A copy
away from a tensor's home only comes from the producer writing there or from a fetch along
``route(home, l)`` (:mod:`solvers.memory.levels.hierarchy`), so, in plan cycles:

* a graph input or weight read at ``l != home`` was fetched after cycle 0: ``i`` starts after
  the route's hops (their cycles summed); a received copy read at ``l != home`` likewise after
  its transfer's end;
* a sent tensor written at ``l != home`` is evicted along ``route(l, home)`` before its
  transfer starts; a graph output before the end;
* under ``bandwidth: shared`` (docs/memory.md, "Shared bandwidth"), every level gives
  :data:`~solvers.memory.levels.bandwidth.SHARE_UNITS` shares a cycle, a transfer delivering to
  ``i`` holds the link's share of the main level for its duration (the simulator's RECV), and
  each hop of those fetches holds its :func:`~solvers.memory.levels.hierarchy_bandwidth.hop_shares`
  of both its levels for its cycles. All of them end before ``i`` starts, each after its head
  (cycle 0 plus the route's earlier hops, or the transfer's least start or end). Per level they
  are jobs of a one-machine problem two ways, each a relaxation of every plan's timeline
  (contention only delays): as share-cycles at ``SHARE_UNITS`` a cycle, and, for a set of uses
  of which no two fit the level together (each pair's shares above ``SHARE_UNITS``), as whole
  durations one at a time. Jackson's preemptive schedule (heads, no tails) bounds both, so
  ``i`` starts no earlier than the largest of them.

Each option is the option of some plan, so the least over them holds in every plan.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from solvers.memory.levels.bandwidth import SHARE_UNITS, dma_share
from solvers.memory.levels.heads_tails import one_machine_lower_bound
from solvers.memory.levels.hierarchy_bandwidth import hop_shares

__all__ = ["MAX_ASSIGNMENTS", "Use", "AccessOption", "level_options", "shares_floor"]

MAX_ASSIGNMENTS = 4096  # level assignments enumerated per op; above, the op keeps its relaxed duration


@dataclass(frozen=True)
class Use:
    """A hold of ``shares`` of level ``level`` for ``cycles`` plan cycles that ends before the op
    starts. Its head: ``delay`` after cycle 0 (``anchor`` None), or after the transfer node
    ``anchor``'s least end (``after_end``) or least start."""

    level: int
    anchor: str | None
    after_end: bool
    delay: int
    shares: int
    cycles: int

    def head(self, finish: Mapping[str, int], duration: Mapping[str, int]) -> int:
        if self.anchor is None:
            return self.delay
        return finish[self.anchor] - (0 if self.after_end else duration[self.anchor]) + self.delay


@dataclass(frozen=True)
class AccessOption:
    """One choice at an op: its roofline (plan cycles), the prefetch it waits for per arriving
    transfer node and from cycle 0, its evictions per departing transfer node and before the
    end, and the bandwidth uses that end before it starts (shared bandwidth only)."""

    cycles: int
    prefetch: Mapping[str, int]
    inputs: int
    evictions: Mapping[str, int]
    output_evictions: int
    uses: tuple[Use, ...] = ()


def level_options(op: str, hbridge, arrivals: Mapping[str, tuple[str, list[int]]],
                  departures: Mapping[str, tuple[str, list[int]]], conv, transfers: Sequence,
                  link_rates: Mapping[str, int]) -> list[AccessOption] | None:
    """Every level assignment of ``op``'s accesses on ``hbridge``'s device (module Notes), or
    None: split, or more than :data:`MAX_ASSIGNMENTS` assignments. ``arrivals``/``departures``
    as :func:`planner.memory.access_paths._link_ends` gives them (tensor indices are the
    bridge's), ``conv`` turns device cycles into plan cycles (rounding up), ``transfers`` the
    plan's (``xfer:<k>`` is the k-th) and ``link_rates`` each link's bytes per second."""
    problem = hbridge.problem
    i = hbridge.ops.index(op)
    if any(g.first_op <= i <= g.last_op for g in problem.splits):
        return None
    accesses = [(t, j) for t, j in problem.op_accesses()[i] if problem.tensor_bytes[t]]
    every = tuple(range(problem.num_levels))  # the levels are connected: each has a route to main
    allowed = [(0,) if i in problem.fast_only_ops else every for _ in accesses]
    count = 1
    for a in allowed:
        count *= len(a)
    if count > MAX_ASSIGNMENTS:
        return None
    capacity = hbridge.full_capacity_bytes or problem.capacity_bytes
    capacity = [max(c, f) for c, f in zip(problem.capacity_bytes, capacity)]
    received = {u: x for x, us in arrivals.values() for u in us}
    fixed = _transfer_uses(hbridge, arrivals, transfers, link_rates) if problem.shared_bandwidth else ()
    options = []
    for levels in itertools.product(*allowed):
        load: dict[int, int] = {}
        for (t, _), lv in zip(accesses, levels):
            load[lv] = load.get(lv, 0) + problem.tensor_bytes[t]
        if any(b > capacity[lv] for lv, b in load.items()):
            continue
        options.append(_option(problem, i, dict(zip(accesses, levels)), load, received, arrivals, departures,
                               conv, fixed))
    return options


def _route_cycles(problem, t: int, src: int, dst: int) -> int:
    route = problem.route(src, dst)
    return sum(problem.hop_cycles(t, a, b) for a, b in zip(route, route[1:]))


def _option(problem, i: int, level_of: Mapping[tuple[int, int], int], load: Mapping[int, int],
            received: Mapping[int, str], arrivals, departures, conv, fixed: tuple[Use, ...]) -> AccessOption:
    """One assignment's option: its roofline, the fetches before it, the evictions after it."""
    away = {(t, lv) for (t, _), lv in level_of.items() if lv != problem.home(t)}
    fetched = {(t, lv) for t, lv in away if not problem.is_real(problem.accesses(t)[0])}
    written = {t: lv for (t, j), lv in level_of.items() if j == 0 and lv != problem.home(t)}

    def fetch(t: int, lv: int) -> int:
        return conv(_route_cycles(problem, t, problem.home(t), lv))

    def evict(ts) -> int:
        return max((conv(_route_cycles(problem, t, written[t], problem.home(t))) for t in ts if t in written),
                   default=0)

    prefetch = {x: max((fetch(t, lv) for t, lv in fetched if t in us), default=0) for x, us in arrivals.values()}
    inputs = max((fetch(t, lv) for t, lv in fetched if t not in received), default=0)
    outputs = [t for t in written if t in problem.live_out]
    uses = fixed + tuple(u for t, lv in sorted(fetched) for u in _fetch_uses(problem, t, lv, received.get(t), conv)) \
        if problem.shared_bandwidth else ()
    return AccessOption(conv(problem.op_cycles(i, dict(load))), prefetch, inputs,
                        {x: evict(us) for x, us in departures.values()}, evict(outputs), uses)


def _fetch_uses(problem, t: int, lv: int, anchor: str | None, conv) -> list[Use]:
    """Each hop of ``t``'s fetch from home to ``lv``: its shares of both its levels, after the
    hops before it (from cycle 0, or from the end of the transfer ``anchor`` that delivers it)."""
    route = problem.route(problem.home(t), lv)
    uses, delay = [], 0
    for a, b in zip(route, route[1:]):
        cycles = conv(problem.hop_cycles(t, a, b))
        uses += [Use(level, anchor, True, delay, s, cycles) for level, s in enumerate(hop_shares(problem, a, b)) if s]
        delay += cycles
    return uses


def _transfer_uses(hbridge, arrivals, transfers: Sequence, link_rates: Mapping[str, int]) -> tuple[Use, ...]:
    """Each transfer delivering to the op: the link's share of the main level (a DMA at the
    link's rate, the simulator's RECV) for the transfer's duration, from its least start."""
    problem, dev = hbridge.problem, hbridge.device
    main = problem.main_level
    uses = []
    for x in sorted({x for x, _ in arrivals.values()}):
        t = transfers[int(x.split(":")[1])]
        share = dma_share(Fraction(link_rates[t.link], dev.profile.clock_hz), problem.bandwidth_bytes_per_cycle[main])
        if share and t.duration_cycles > 0:
            uses.append(Use(main, x, False, 0, share, t.duration_cycles))
    return tuple(uses)


def shares_floor(uses: Sequence[Use], finish: Mapping[str, int], duration: Mapping[str, int]) -> int:
    """The least start of an op after ``uses`` (module Notes): per level, Jackson's preemptive
    one-machine bound over their share-cycles at :data:`SHARE_UNITS` a cycle, and over the whole
    durations of each set of them no two of which fit the level together; the largest.

    Examples
    --------
    A transfer holding all of the level from cycle 3,856 for 3,048 cycles and a hop holding
    half of it from cycle 0 for 4,146: as share-cycles they end at 3,856 + 3,048 = 6,904, but
    they cannot overlap, so the hop runs before and after the transfer: 7,194.

    >>> shares_floor([Use(0, "x", False, 0, 1000, 3048), Use(0, None, False, 0, 500, 4146)],
    ...              {"x": 6904}, {"x": 3048})
    7194
    """
    by_level: dict[int, list[tuple[int, int, int]]] = {}
    for u in uses:
        by_level.setdefault(u.level, []).append((u.head(finish, duration), u.shares, u.cycles))
    best = 0
    for rows in by_level.values():
        fluid = [(h * SHARE_UNITS, s * c, 0) for h, s, c in rows]
        best = max(best, -(-one_machine_lower_bound(fluid) // SHARE_UNITS))
        for clique in _cliques(rows):
            best = max(best, one_machine_lower_bound([(h, c, 0) for h, _, c in clique]))
    return best


def _cliques(rows: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Sets of uses no two of which fit one level together: those above half of it, each with
    at most one of the others whose shares leave too little beside the smallest of them."""
    big = [r for r in rows if 2 * r[1] > SHARE_UNITS]
    if not big:
        return []
    least = min(s for _, s, _ in big)
    return [big] + [big + [r] for r in rows if 2 * r[1] <= SHARE_UNITS and r[1] + least > SHARE_UNITS]
