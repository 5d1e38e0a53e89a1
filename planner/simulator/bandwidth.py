"""Shared bandwidth in the replay: no level's bandwidth is over-subscribed (docs/memory.md).

A program with the header flag ``shared_bandwidth`` shares each level's bandwidth between its
ops and memory DMAs: a level has :data:`SHARE_UNITS` shares, and every record of positive
duration holds, for its whole span on the timeline, a constant number of shares of each level
it moves bytes in, recomputed here from the record alone (this module's own code, not the
solver's):

* a MATMUL/CONV/VECTOR, or a data-movement DMA on a compute stream, of device duration
  ``D``: ``ceil(SHARE_UNITS * c_l / D)`` of level l, where ``c_l = ceil(bytes_l * clk / bw_l)``
  are the cycles its roofline spends on the level's bytes (``level_bytes``, else
  ``fast_bytes`` and ``mem_bytes``);
* a memory DMA (on the DMA engine) from level a to level b, at its path's own rate (the
  header's DMA rates) or else ``rate = min(bw_a, bw_b)``: ``min(SHARE_UNITS, ceil(SHARE_UNITS
  * rate / bw_l))`` of each of the two;
* a SEND or RECV (a link transfer's end) over a link of bandwidth ``bw_link``:
  ``min(SHARE_UNITS, ceil(SHARE_UNITS * bw_link / bw_main))`` of the main level.

At every cycle the shares held of a level must not exceed :data:`SHARE_UNITS`. The replay
reports, per level that anything shared, the peak shares held, the cycles during which two or
more records held shares of it (``shared_cycles``) and those during which every share was held
(``full_cycles``): contention, where it happened, shows there.
"""

from __future__ import annotations

from typing import Any, Mapping

from planner.isa.cost import memory_cycles
from planner.isa.instructions import DMA_STREAM, Instruction, Opcode, Program, device_cycles

__all__ = ["SHARE_UNITS", "instruction_shares", "check_shared_bandwidth", "record_holdings"]

SHARE_UNITS = 1000  # a level's whole bandwidth, in shares (the level solver's unit too)
_ROOFLINE = frozenset({Opcode.MATMUL, Opcode.CONV, Opcode.VECTOR})


def _ceil_share(num: int, den: int) -> int:
    return min(SHARE_UNITS, -(-SHARE_UNITS * num // den)) if num > 0 and den > 0 else 0


def instruction_shares(ins: Instruction, p: Program) -> tuple[int, ...] | None:
    """The shares of each level ``ins`` holds (None: it holds none).

    Examples
    --------
    >>> from planner.isa.instructions import LevelInfo
    >>> p = Program("d0", "g", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("sram", 1 << 20, 4 * 10**9),
    ...             LevelInfo("dram", 1 << 30, 10**9)), 1, (), 1, (), (), fast_level=0, shared_bandwidth=True)
    >>> instruction_shares(Instruction(Opcode.DMA, DMA_STREAM, 0, 8, a=1, b=0, c=8), p)
    (250, 1000)
    >>> instruction_shares(Instruction(Opcode.VECTOR, 0, 0, 3, subop=1, a=3, b=1, mem_bytes=1), p)
    (0, 334)

    A DMA path with its own rate (here half the DRAM's) holds that rate's shares:

    >>> from dataclasses import replace
    >>> instruction_shares(Instruction(Opcode.DMA, DMA_STREAM, 0, 16, a=1, b=0, c=8),
    ...                    replace(p, dma_rates=((0, 1, 5 * 10**8),)))
    (125, 500)
    """
    if ins.duration_cycles <= 0:
        return None
    levels = p.levels
    if ins.opcode in (Opcode.SEND, Opcode.RECV):  # a link transfer's end: main memory at the link's rate
        link = next((lk for lk in p.links if lk.id == ins.a), None)
        if link is None or not 0 <= p.main_level < len(levels):
            return None
        shares = [0] * len(levels)
        shares[p.main_level] = _ceil_share(link.bandwidth_bytes_per_s, levels[p.main_level].bandwidth_bytes_per_s)
        return tuple(shares)
    if ins.opcode == Opcode.DMA and ins.stream == DMA_STREAM:
        rate = p.dma_rate(ins.a, ins.b) or min(levels[ins.a].bandwidth_bytes_per_s,
                                               levels[ins.b].bandwidth_bytes_per_s)
        shares = [0] * len(levels)
        for lv in {ins.a, ins.b}:
            shares[lv] = _ceil_share(rate, levels[lv].bandwidth_bytes_per_s)
        return tuple(shares)
    moves = ins.opcode in _ROOFLINE or (ins.opcode == Opcode.DMA and (ins.mem_bytes or ins.fast_bytes
                                                                      or any(ins.level_bytes)))
    if not moves:
        return None
    if ins.level_bytes:
        per_level = list(ins.level_bytes)
    else:
        per_level = [0] * len(levels)
        per_level[p.main_level] += ins.mem_bytes
        if ins.fast_bytes and p.fast_level >= 0:
            per_level[p.fast_level] += ins.fast_bytes
    duration = device_cycles(ins, p)
    clk = p.device_clock_hz
    return tuple(_ceil_share(memory_cycles(b, clk, lv.bandwidth_bytes_per_s), duration) if b else 0
                 for b, lv in zip(per_level, levels))


def check_shared_bandwidth(p: Program, v: list[str]) -> dict[str, dict[str, int]]:
    """Append a violation per level whose shares are ever over-subscribed; the figures per level.

    Examples
    --------
    A DMA from DRAM (all of it) while a VECTOR reads DRAM (a third of it):

    >>> from planner.isa.instructions import LevelInfo
    >>> dma = Instruction(Opcode.DMA, DMA_STREAM, 0, 8, a=1, b=0, c=8, op="prefetch:x@sram.0")
    >>> vec = Instruction(Opcode.VECTOR, 0, 2, 3, subop=1, a=3, b=1, mem_bytes=1, op="v")
    >>> p = Program("d0", "g", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("sram", 1 << 20, 4 * 10**9),
    ...             LevelInfo("dram", 1 << 30, 10**9)), 1, (), 1, (), (dma, vec), fast_level=0, shared_bandwidth=True)
    >>> v = []; figures = check_shared_bandwidth(p, v); v
    ['d0 dram: bandwidth over-subscribed: 1334 of 1000 shares at cycle 2 (prefetch:x@sram.0, v)']
    >>> figures["dram"]
    {'peak_shares': 1334, 'shared_cycles': 3, 'full_cycles': 8}
    """
    spans = []
    for ins in p.instructions:
        try:
            shares = instruction_shares(ins, p)
        except (ValueError, IndexError, KeyError):
            continue  # reported as an instruction that cannot be timed
        if shares is not None and any(shares):
            spans.append((ins.start_cycle, ins.end_cycle, shares, ins.op or ins.opcode.name))
    figures: dict[str, dict[str, int]] = {}
    for level, lv in enumerate(p.levels):
        mine = [(s, e, sh[level], name) for s, e, sh, name in spans if sh[level]]
        if not mine:
            continue
        events = sorted([(e, 0, -u, k) for k, (_s, e, u, _n) in enumerate(mine)]
                        + [(s, 1, u, k) for k, (s, _e, u, _n) in enumerate(mine)])
        load = holders = peak = shared = full = 0
        last = events[0][0]
        reported = False
        for when, is_start, delta, k in events:
            if holders >= 2:
                shared += when - last
            if load >= SHARE_UNITS:
                full += when - last
            last = when
            load += delta
            holders += 1 if is_start else -1
            peak = max(peak, load)
            if is_start and load > SHARE_UNITS and not reported:
                running = [n for s, e, _u, n in mine if s <= when < e]
                v.append(f"{p.device} {lv.name}: bandwidth over-subscribed: {load} of {SHARE_UNITS} shares at cycle "
                         f"{when} ({', '.join(running)})")
                reported = True
        figures[lv.name] = {"peak_shares": peak, "shared_cycles": shared, "full_cycles": full}
    return figures


def record_holdings(programs: Mapping[str, Program], simulation: Any) -> dict[tuple, tuple]:
    """What each op, memory DMA and link transfer of the shared-bandwidth programs holds, for the
    what-if replay (:mod:`planner.simulator.slowdown`): ``("op", name)``, ``("dma", k)`` (k
    indexing ``simulation.dmas``) or ``("tx", id)`` -> ``((device, shares per level), ...)``, one
    pair per device (a transfer's SEND and RECV on two); records holding nothing are left out.

    Examples
    --------
    >>> from planner.isa.instructions import LevelInfo
    >>> from planner.simulator.replay import DmaTiming, OpTiming, SimulationResult
    >>> dma = Instruction(Opcode.DMA, DMA_STREAM, 0, 8, a=1, b=0, c=8, op="prefetch:x@sram.0")
    >>> vec = Instruction(Opcode.VECTOR, 0, 8, 3, subop=1, a=3, b=1, mem_bytes=1, op="v")
    >>> p = Program("d0", "g", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("sram", 1 << 20, 4 * 10**9),
    ...             LevelInfo("dram", 1 << 30, 10**9)), 1, (), 1, (), (dma, vec), fast_level=0, shared_bandwidth=True)
    >>> sim = SimulationResult(11, {"v": OpTiming("d0", 0, 8, 11)}, {}, {}, 2,
    ...                        dmas=(DmaTiming("d0", "prefetch:x@sram.0", "prefetch", "x", "x@sram.0", "dram", "sram",
    ...                                        8, 0, 8),))
    >>> record_holdings({"d0": p}, sim)
    {('dma', 0): (('d0', (250, 1000)),), ('op', 'v'): (('d0', (0, 334)),)}
    """
    dma_index = {(d.device, d.op, d.start_cycle): k for k, d in enumerate(getattr(simulation, "dmas", ()))}
    out: dict[tuple, tuple] = {}
    for device, p in sorted(programs.items()):
        if not p.shared_bandwidth:
            continue
        for ins in p.instructions:
            shares = instruction_shares(ins, p)
            if shares is None or not any(shares):
                continue
            if ins.opcode == Opcode.DMA and ins.stream == DMA_STREAM:
                node = ("dma", dma_index.get((p.device, ins.op, ins.start_cycle)))
            elif ins.opcode in (Opcode.SEND, Opcode.RECV):
                node = ("tx", ins.c)
            else:
                node = ("op", ins.op)
            known = node[0] == "dma" and node[1] is not None or node[0] == "tx" and ins.c in simulation.transfers \
                or node[0] == "op" and ins.op in simulation.ops
            if known:
                out[node] = out.get(node, ()) + ((p.device, shares),)
    return out
