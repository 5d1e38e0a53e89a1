"""The replay's fast path: every rule of :mod:`planner.simulator.replay` screened at once, with
numpy over the binaries' columns, without one Python object per record.

One-sided by design: :func:`screened_replay` either shows that the record-by-record replay
(:func:`planner.simulator.replay.simulate_programs`) would find no violation, and returns the
result it would return, or returns ``None``; the caller then runs the record-by-record replay,
which names every violation. Verdicts and messages are therefore the record-by-record
replay's by construction; only the valid binaries' path is fast. A screen may be stricter than
its rule (an unusual but valid program then takes the slow path), never looser.

How each rule is screened (``N`` records, keys ``(cycle * 2 + phase) * (N + 1) + index``: the
record order's event keys as one int64):

* shape, streams, durations: column comparisons; durations recomputed once per distinct
  operand tuple (``np.unique``) with the ISA formulas;
* ALLOC/FREE pairing, peak bytes and capacity: a cumulative sum per level in record order;
  address overlaps and view parents: a sweep over the ALLOC and FREE records alone;
* buffers: liveness per access; readiness: each read has an earlier write of the same
  buffer or of the allocation it is a view of; races: per root allocation, writes sorted by
  start with the running maximum of their ends (a candidate overlap is then checked exactly,
  bytes and instruction included);
* kernels: operand buffer sets compared as sorted ``(kernel, buffer, direction)`` keys,
  portion sizes and roofline bytes per kernel (with level bytes, format version 3: a
  ``kernels x levels`` sum of operand buffer sizes against the level-bytes rows);
* level bytes: opcodes, and the main and fast entries against ``mem_bytes``/``fast_bytes``, as
  columns;
* semaphores and anchors: sorted keys and ``searchsorted``;
* transfers and links: one pass over the SEND and RECV records of all binaries.

Op names are compared by string index, so a binary whose string table repeats a string takes
the slow path. The screen knows the rules of binary format version :data:`SCREENED_FORMAT`; a
newer format (new fields, new rules) takes the slow path until the screen learns it.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Mapping, NamedTuple

import numpy as np

from planner.graph.ir import DTYPE_BYTES
from planner.isa.binary import FORMAT_VERSION, NONE, Tables
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    COMPUTE_OPCODES,
    DMA_STREAM,
    TRANSFER_STREAM,
    Instruction,
    Opcode,
    Program,
    expected_duration_cycles,
)

__all__ = ["SCREENED_FORMAT", "Screened", "screened_replay", "coverage_end"]

SCREENED_FORMAT = 3  # the binary format whose rules the screen knows (planner.isa.binary.FORMAT_VERSION)

_LIMIT = 1 << 62  # fields and keys stay below this, so int64 arithmetic cannot overflow
_NEVER = np.iinfo(np.int64).max  # the free key of a buffer never freed
_BOOKKEEPING = np.array(sorted(int(c) for c in (Opcode.ALLOC, Opcode.FREE, Opcode.SIGNAL, Opcode.WAIT,
                                                 Opcode.HALT)))
_COMPUTE = np.array(sorted(int(c) for c in COMPUTE_OPCODES))
_ROOFLINE = np.array(sorted(int(c) for c in (Opcode.MATMUL, Opcode.CONV, Opcode.VECTOR)))
_ALLOC, _FREE, _HALT, _DMA, _SEND, _RECV, _SIGNAL, _WAIT = (
    int(Opcode.ALLOC), int(Opcode.FREE), int(Opcode.HALT), int(Opcode.DMA), int(Opcode.SEND), int(Opcode.RECV),
    int(Opcode.SIGNAL), int(Opcode.WAIT))


class _Columns(NamedTuple):
    """A program's records as int64 columns, with the event keys of each record."""

    code: np.ndarray
    subop: np.ndarray
    stream: np.ndarray
    op: np.ndarray  # string index, NONE for no op
    start: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    mem: np.ndarray
    fast: np.ndarray
    off: np.ndarray
    nr: np.ndarray
    nw: np.ndarray
    skey: np.ndarray  # start key: (start, 1, i)
    ekey: np.ndarray  # end key: (end, 0, i) for a positive duration, else the start key


class _Buffers(NamedTuple):
    """Per buffer id (allocated ones): level, size, address, flags and ALLOC/FREE keys."""

    allocated: np.ndarray
    level: np.ndarray
    size: np.ndarray
    address: np.ndarray
    preloaded: np.ndarray
    view: np.ndarray
    akey: np.ndarray
    fkey: np.ndarray


class _Accesses(NamedTuple):
    """Every (record, buffer) a record reads or writes, in record order."""

    owner: np.ndarray
    buffer: np.ndarray
    write: np.ndarray


class Screened(NamedTuple):
    """The replay's result for binaries the screen shows valid, as plain tuples in the fields'
    order of :class:`~planner.simulator.replay.SimulationResult`'s types (which the replay builds).

    Examples
    --------
    >>> Screened(5, [("t", "d0", 0, 0, 5)], [], {"d0": {"mem": 0}}, 2, ("d0",), []).ops[0][0]
    't'
    """

    makespan_cycles: int
    ops: list[tuple[str, str, int, int, int]]  # (op, device, stream, start, end) in record order
    transfers: list[tuple]  # (id, src device, dst device, link, bytes, start, end, src op, dst op), by id
    peak_bytes: dict[str, dict[str, int]]
    instruction_count: int
    devices: tuple[str, ...]
    dmas: list[tuple]  # (device, op, kind, src buffer, dst buffer, src level, dst level, bytes, start, end)


class _Found(NamedTuple):
    """What a screened program contributes to the result."""

    peaks: dict[str, int]
    ops: list[tuple[str, str, int, int, int]]
    dmas: list[tuple]
    transfers: list[tuple]  # (opcode, transfer id, link, bytes, start, end, peer, op) of each SEND and RECV
    end: int


def screened_replay(tables: Mapping[str, Tables]) -> Screened | None:
    """The record-by-record replay's result for ``tables`` (device name -> decoded tables) when it
    would find no violation; ``None`` when it might find one (run it, then).

    Examples
    --------
    >>> from planner.isa.binary import decode_tables, encode
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),),
    ...             0, (), 1, (), (Instruction(Opcode.TASK, 0, 0, 5, op="t", a=5),
    ...                            Instruction(Opcode.HALT, 0, 5, 0)))
    >>> screened_replay({"d0": decode_tables(encode(p))}).ops
    [('t', 'd0', 0, 0, 5)]
    >>> from dataclasses import replace
    >>> wrong = replace(p, instructions=(replace(p.instructions[0], duration_cycles=4), p.instructions[1]))
    >>> screened_replay({"d0": decode_tables(encode(wrong))}) is None
    True
    """
    if FORMAT_VERSION != SCREENED_FORMAT:
        return None
    names = sorted(tables)
    found: dict[str, _Found] = {}
    for name in names:
        t = tables[name]
        if t.program.device != name or t.program.shared_bandwidth:  # shared bandwidth: the full replay checks it
            return None
        one = _screen_program(t)
        if one is None:
            return None
        found[name] = one
    return _assemble(tables, names, found)


def _screen_program(t: Tables) -> _Found | None:
    """Every per-program rule on one binary's tables; what it contributes to the result, or None."""
    p = t.program
    if len(set(t.strings)) != len(t.strings):
        return None  # op names are compared by string index
    x = _columns(t.records)
    if x is None or not _shape_ok(p, x) or not _level_bytes_ok(t, x) or not _durations_ok(p, x, _level_matrix(t)):
        return None
    bufs = _allocations(p, x)
    if bufs is None:
        return None
    peaks = _peaks(p, x, bufs)
    parents = _address_sweep(p, x, bufs) if p.addressed else {}
    if peaks is None or parents is None:
        return None
    acc = _accesses(t, x)
    if not _buffers_ok(p, x, bufs, acc, parents) or not _kernels_ok(t, x, bufs, acc):
        return None
    if not _memory_dmas_ok(t, x, bufs) or not _semaphores_ok(x):
        return None
    return _timings(t, x, peaks)


def _columns(rec: np.ndarray) -> _Columns | None:
    """The records as int64 columns; None when a field or key could overflow int64."""
    n = len(rec)
    if n == 0:
        return None
    big = [rec[f] for f in ("start", "duration", "a", "b", "c", "d", "mem", "fast")]
    if any(int(col.max()) >= _LIMIT for col in big):
        return None
    start, dur, a, b, c, d, mem, fast = (col.astype(np.int64) for col in big)
    end = start + dur
    width = n + 1
    if (int(end.max()) * 2 + 2) * width >= _LIMIT:
        return None
    index = np.arange(n, dtype=np.int64)
    skey = (start * 2 + 1) * width + index
    ekey = np.where(dur > 0, (end * 2) * width + index, skey)
    return _Columns(rec["opcode"].astype(np.int64), rec["subop"].astype(np.int64), rec["stream"].astype(np.int64),
                    rec["op"].astype(np.int64), start, dur, end, a, b, c, d, mem, fast,
                    rec["list"].astype(np.int64), rec["reads"].astype(np.int64), rec["writes"].astype(np.int64),
                    skey, ekey)


def _shape_ok(p: Program, x: _Columns) -> bool:
    """One HALT, last, at or after every end; records sorted by start; streams; compute overlaps."""
    code, stream = x.code, x.stream
    if code[-1] != _HALT or int(np.count_nonzero(code == _HALT)) != 1:
        return False
    if len(code) > 1 and int(x.start[-1]) < int(x.end[:-1].max()):
        return False
    if (np.diff(x.start) < 0).any():
        return False
    book = np.isin(code, _BOOKKEEPING)
    engine = (stream == TRANSFER_STREAM) | (stream == DMA_STREAM)
    if (x.dur[book] != 0).any() or (book & (stream >= p.num_streams) & ~engine).any():
        return False
    xfer = (code == _SEND) | (code == _RECV)
    if (xfer & (stream != TRANSFER_STREAM)).any():
        return False
    other = ~book & ~xfer
    if (other & (stream == DMA_STREAM) & (code != _DMA)).any():
        return False
    if (other & (stream != DMA_STREAM) & (stream >= p.num_streams)).any():
        return False
    timed = np.flatnonzero(np.isin(code, _COMPUTE) & (x.dur > 0))
    order = timed[np.lexsort((timed, x.end[timed], x.start[timed], stream[timed]))]
    same = stream[order[1:]] == stream[order[:-1]]
    return not (same & (x.start[order[1:]] < x.end[order[:-1]])).any()


def _level_matrix(t: Tables) -> tuple[np.ndarray, np.ndarray] | None:
    """``records x levels`` level bytes (zero rows without) and which records have a row, or
    None for a version-2 binary."""
    if not len(t.level_rows):
        return None
    matrix = np.zeros((len(t.records), len(t.program.levels)), dtype=np.int64)
    matrix[t.level_rows] = t.level_bytes
    has = np.zeros(len(t.records), dtype=bool)
    has[t.level_rows] = True
    return matrix, has


def _level_bytes_ok(t: Tables, x: _Columns) -> bool:
    """Level bytes only on roofline records and compute-stream DMAs, their main and fast entries
    equal to ``mem``/``fast`` (the replay's ``_check_level_bytes``)."""
    if not len(t.level_rows):
        return True
    p, rows, lb = t.program, t.level_rows, t.level_bytes
    code = x.code[rows]
    if not (np.isin(code, _ROOFLINE) | ((code == _DMA) & (x.stream[rows] != DMA_STREAM))).all():
        return False
    if lb.shape[1] != len(p.levels) or (x.mem[rows] != lb[:, p.main_level]).any():
        return False
    fast = lb[:, p.fast_level] if p.fast_level >= 0 else np.zeros(len(rows), dtype=np.int64)
    return bool((x.fast[rows] == fast).all())


def _durations_ok(p: Program, x: _Columns, levels: tuple[np.ndarray, np.ndarray] | None = None) -> bool:
    """Every timed record's duration as the ISA formulas give it, once per distinct operand tuple
    (level bytes, ``levels``, part of the tuple: a flag column, then one column per level)."""
    timed = np.flatnonzero(~np.isin(x.code, _BOOKKEEPING))
    if not len(timed):
        return True
    xfer = (x.code == _SEND) | (x.code == _RECV)
    # SEND/RECV: c is the transfer id and d the peer, neither of which times it.
    columns = [x.code, x.subop, x.a, x.b, np.where(xfer, 0, x.c), np.where(xfer, 0, x.d), x.mem, x.fast]
    if levels is not None:
        matrix, has = levels
        if int(matrix.max(initial=0)) >= _LIMIT:
            return False
        columns += [has.astype(np.int64), *matrix.T]
    table = np.ascontiguousarray(np.stack(columns, axis=1)[timed])
    # Rows as opaque 64-byte keys: np.unique sorts them as bytes, 5x faster than along axis 0.
    _, first, inverse = np.unique(table.view(np.dtype((np.void, table.shape[1] * 8))).ravel(), return_index=True,
                                  return_inverse=True)
    rows = table[first]
    expected = np.empty(len(rows), dtype=np.int64)
    for k, (code, subop, a, b, c, d, mem, fast, *level) in enumerate(rows.tolist()):
        level_bytes = tuple(level[1:]) if level and level[0] else ()
        ins = Instruction(Opcode(code), 0, 0, 0, subop=subop, a=a, b=b, c=c, d=d, mem_bytes=mem, fast_bytes=fast,
                          level_bytes=level_bytes)
        try:
            cycles = expected_duration_cycles(ins, p)
        except (ValueError, IndexError, KeyError):
            return False
        if cycles >= _LIMIT:
            return False
        expected[k] = cycles
    return bool((expected[inverse.reshape(-1)] == x.dur[timed]).all())


def _allocations(p: Program, x: _Columns) -> _Buffers | None:
    """Each buffer allocated at most once, freed at most once and after, by a matching FREE."""
    n_buf = len(p.buffers)
    ai, fi = np.flatnonzero(x.code == _ALLOC), np.flatnonzero(x.code == _FREE)
    ab, fb = x.a[ai], x.a[fi]
    if len(np.unique(ab)) != len(ab) or len(np.unique(fb)) != len(fb):
        return None
    row = np.full(n_buf, -1, dtype=np.int64)
    row[ab] = ai
    ar = row[fb]
    if (ar < 0).any() or (fi < ar).any() or (x.start[fi] < x.start[ar]).any():
        return None
    view = (x.subop & ALLOC_VIEW) != 0
    if (x.b[ar] != x.b[fi]).any() or (x.c[ar] != x.c[fi]).any() or (x.d[ar] != x.d[fi]).any():
        return None
    if (view[ar] != view[fi]).any():
        return None
    allocated = row >= 0
    at = np.where(allocated, row, 0)
    fkey = np.full(n_buf, _NEVER, dtype=np.int64)
    fkey[fb] = x.skey[fi]
    return _Buffers(allocated, x.b[at], np.where(allocated, x.c[at], 0), x.d[at],
                    allocated & ((x.subop[at] & ALLOC_PRELOADED) != 0), allocated & view[at],
                    np.where(allocated, x.skey[at], _NEVER), fkey)


def _peaks(p: Program, x: _Columns, bufs: _Buffers) -> dict[str, int] | None:
    """Peak live non-view bytes per level (record order); None when a level overflows."""
    records = np.flatnonzero((x.code == _ALLOC) | (x.code == _FREE))
    records = records[~bufs.view[x.a[records]]]
    sizes = bufs.size[x.a[records]]
    delta = np.where(x.code[records] == _ALLOC, sizes, -sizes)
    levels = bufs.level[x.a[records]]
    peak = [0] * len(p.levels)
    if len(sizes) and int(sizes.max()) * len(sizes) >= _LIMIT:
        return None
    for level, lv in enumerate(p.levels):
        live = np.cumsum(delta[levels == level])
        if len(live):
            peak[level] = max(0, int(live.max()))
            if peak[level] > lv.capacity_bytes:
                return None
    return {lv.name: peak[i] for i, lv in enumerate(p.levels)}


def _address_sweep(p: Program, x: _Columns, bufs: _Buffers) -> dict[int, int] | None:
    """In an addressed program: buffers end within their level, live non-view buffers of a level
    never overlap, each view lies inside one live allocation for its whole life. Returns each
    view's parent, or None."""
    ids = np.flatnonzero(bufs.allocated)
    capacity = np.array([min(lv.capacity_bytes, _LIMIT) for lv in p.levels], dtype=np.int64)
    if len(ids) and (bufs.address[ids] + bufs.size[ids] > capacity[bufs.level[ids]]).any():
        return None
    if not bufs.view.any():
        disjoint = _disjoint_in_time_or_space(p, x, bufs)
        if disjoint is not None:
            return {} if disjoint else None
    records = np.flatnonzero((x.code == _ALLOC) | (x.code == _FREE))
    b = x.a[records]
    keep = ~bufs.view[b] & (bufs.size[b] > 0) | bufs.view[b] & (x.code[records] == _ALLOC)
    records, b = records[keep], b[keep]
    kinds = np.where(bufs.view[b], 2, (x.code[records] == _ALLOC).astype(np.int64))  # 0 free, 1 alloc, 2 view
    starts: dict[int, list[int]] = defaultdict(list)  # level -> sorted addresses of live buffers (disjoint)
    spans: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)  # level -> address -> (end, buffer)
    parents: dict[int, int] = {}
    level_of, address, size, fkey = bufs.level.tolist(), bufs.address.tolist(), bufs.size.tolist(), bufs.fkey.tolist()
    for kind, buf in zip(kinds.tolist(), b.tolist()):
        level, lo = level_of[buf], address[buf]
        hi = lo + size[buf]
        live, span = starts[level], spans[level]
        if kind == 1:
            j = bisect.bisect_left(live, lo)
            if (j and span[live[j - 1]][0] > lo) or (j < len(live) and live[j] < hi):
                return None
            live.insert(j, lo)
            span[lo] = (hi, buf)
        elif kind == 0:
            del live[bisect.bisect_left(live, lo)]
            del span[lo]
        else:
            j = bisect.bisect_right(live, lo) - 1
            if j < 0 or span[live[j]][0] < hi:
                return None
            parent = span[live[j]][1]
            if fkey[buf] > fkey[parent]:
                return None
            parents[buf] = parent
    return parents


def _disjoint_in_time_or_space(p: Program, x: _Columns, bufs: _Buffers) -> bool | None:
    """Whether no two buffers of a level that are live at once overlap in address: the level's
    address range is cut at every buffer's start and end, and the buffers covering each piece
    must live one after another. None when the pieces are too many (then the sweep decides)."""
    ids = np.flatnonzero(bufs.allocated & (bufs.size > 0))
    # Each buffer's life in record indices: from its ALLOC to its FREE (past the end when never freed).
    born = np.zeros(len(bufs.size), dtype=np.int64)
    dies = np.full(len(bufs.size), len(x.code), dtype=np.int64)
    alloc, free = np.flatnonzero(x.code == _ALLOC), np.flatnonzero(x.code == _FREE)
    born[x.a[alloc]], dies[x.a[free]] = alloc, free
    budget = 16 * len(ids) + 100_000
    for level in range(len(p.levels)):
        mine = ids[bufs.level[ids] == level]
        lo, hi = bufs.address[mine], bufs.address[mine] + bufs.size[mine]
        cuts = np.unique(np.concatenate([lo, hi]))
        first, counts = np.searchsorted(cuts, lo), np.searchsorted(cuts, hi) - np.searchsorted(cuts, lo)
        total = int(counts.sum())
        budget -= total
        if budget < 0:
            return None
        if not total:
            continue
        owner = np.repeat(mine, counts)
        piece = np.repeat(first, counts) + np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        order = np.lexsort((born[owner], piece))
        piece, owner = piece[order], owner[order]
        same = piece[1:] == piece[:-1]
        if (same & (born[owner[1:]] < dies[owner[:-1]])).any():
            return False
    return True


def _accesses(t: Tables, x: _Columns) -> _Accesses:
    """Each record's reads then writes, expanded from the buffer lists in one pass."""
    owner = np.flatnonzero(x.nr + x.nw)
    counts = x.nr[owner] + x.nw[owner]
    rows = np.repeat(owner, counts)
    within = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    buffer = t.lists[x.off[rows] + within].astype(np.int64)
    return _Accesses(rows, buffer, within >= x.nr[rows])


def _buffers_ok(p: Program, x: _Columns, bufs: _Buffers, acc: _Accesses, parents: dict[int, int]) -> bool:
    """Liveness of every access, readiness of every read, no write racing another access."""
    b, owner = acc.buffer, acc.owner
    start, end = x.skey[owner], x.ekey[owner]
    if not bufs.allocated[b].all() or (bufs.akey[b] > start).any() or (bufs.fkey[b] < end).any():
        return False
    root = np.arange(len(p.buffers), dtype=np.int64)
    if parents:
        root[list(parents)] = list(parents.values())
    # Readiness: a write of the same buffer, or of the allocation it is a view of, ended before.
    first_written = np.where(bufs.preloaded, bufs.akey, _NEVER)
    np.minimum.at(first_written, b[acc.write], end[acc.write])
    reads = ~acc.write
    rb, rs = b[reads], start[reads]
    unsure = np.flatnonzero(~((first_written[rb] < rs) | (first_written[root[rb]] < rs)))
    if len(unsure) and not _covered(bufs, acc, root, p.addressed, rb[unsure], rs[unsure], end):
        return False
    return _races_ok(x, bufs, acc, root, p.addressed)


def _covered(bufs: _Buffers, acc: _Accesses, root: np.ndarray, addressed: bool, rb: np.ndarray, rs: np.ndarray,
             end: np.ndarray) -> bool:
    """The record-by-record readiness rule for these reads (buffers ``rb`` at start keys ``rs``):
    the writes of the read's root allocation that ended before it cover every byte it reads
    (a buffer written in portions through its views, say)."""
    lo_of = bufs.address if addressed else np.zeros_like(bufs.address)
    writes: dict[int, list[tuple[int, int, int]]] = defaultdict(list)  # root -> (end key, lo, hi)
    wanted = set(root[rb].tolist())
    for b in np.flatnonzero(bufs.preloaded).tolist():
        if int(root[b]) in wanted:
            writes[int(root[b])].append((int(bufs.akey[b]), int(lo_of[b]), int(lo_of[b] + bufs.size[b])))
    w = np.flatnonzero(acc.write)
    for b, e in zip(acc.buffer[w].tolist(), end[w].tolist()):
        if int(root[b]) in wanted:
            writes[int(root[b])].append((e, int(lo_of[b]), int(lo_of[b] + bufs.size[b])))
    for b, start in zip(rb.tolist(), rs.tolist()):
        lo, hi = int(lo_of[b]), int(lo_of[b] + bufs.size[b])
        before = sorted(wr for wr in writes.get(int(root[b]), ()) if wr[0] < start and
                        (wr[1] < hi and lo < wr[2] or (lo == hi and wr[1] <= lo <= wr[2])))
        if coverage_end(lo, hi, before) is None:
            return False
    return True


def _races_ok(x: _Columns, bufs: _Buffers, acc: _Accesses, root: np.ndarray, addressed: bool) -> bool:
    """No write overlaps in time another write or a read of the same root allocation: screened per
    root (writes sorted by start, running maximum of their ends), candidates checked exactly."""
    if not len(acc.owner):
        return True
    start, end = x.skey[acc.owner], x.ekey[acc.owner]
    keys = np.unique(np.concatenate([start, end]))
    width = len(keys) + 1
    r = root[acc.buffer]
    s = r * width + np.searchsorted(keys, start)
    e = r * width + np.searchsorted(keys, end)
    w = np.flatnonzero(acc.write)
    order = w[np.argsort(s[w], kind="stable")]
    ws, reach = s[order], np.maximum.accumulate(e[order]) if len(order) else e[order]
    suspects = set(r[order[1:]][ws[1:] < reach[:-1]].tolist())
    rd = np.flatnonzero(~acc.write)
    at = np.searchsorted(ws, e[rd], side="left") - 1
    hit = at >= 0
    hit[hit] = reach[at[hit]] > s[rd][hit]
    suspects.update(r[rd][hit].tolist())
    return all(_root_race_free(x, bufs, acc, root, addressed, q) for q in sorted(suspects))


def _root_race_free(x: _Columns, bufs: _Buffers, acc: _Accesses, root: np.ndarray, addressed: bool, q: int) -> bool:
    """The record-by-record race rule on root allocation ``q``: bytes and instructions compared.

    Spans as the record-by-record replay gives them: addresses in an addressed program (a view
    and its root share the address space), else ``[0, size)`` of the buffer itself.
    """
    mine = np.flatnonzero(root[acc.buffer] == q)
    b = acc.buffer[mine]
    lo = bufs.address[b] if addressed else np.zeros_like(b)
    hi = lo + bufs.size[b]
    owner = acc.owner[mine]
    items = list(zip(x.skey[owner].tolist(), x.ekey[owner].tolist(), lo.tolist(), hi.tolist(), owner.tolist(),
                     acc.write[mine].tolist()))
    writes = [it for it in items if it[5]]
    reads = [it for it in items if not it[5]]
    for k, (ws0, we0, lo0, hi0, i0, _) in enumerate(writes):
        for s1, e1, lo1, hi1, i1, _w in writes[k + 1:] + reads:
            if i1 != i0 and s1 < we0 and ws0 < e1 and lo1 < hi0 and lo0 < hi1:
                return False
    return True


def _kernels_ok(t: Tables, x: _Columns, bufs: _Buffers, acc: _Accesses) -> bool:
    """Each kernel names one compute record whose reads (control tokens aside) and writes are its
    operand buffers, each large enough for its portion; roofline bytes with a memory plan."""
    p, kernels, operands = t.program, t.kernels, t.operands
    n_k = len(kernels)
    if not n_k:
        return True
    memory_dma = (x.code == _DMA) & (x.stream == DMA_STREAM)
    compute = np.flatnonzero(np.isin(x.code, _COMPUTE) & ~memory_dma & (x.op != NONE))
    kop = kernels["op"].astype(np.int64)
    if len(np.unique(kop)) != n_k or len(np.unique(x.op[compute])) != len(compute):
        return False
    by_op = np.argsort(x.op[compute])
    at = np.searchsorted(x.op[compute], kop, sorter=by_op)
    if (at >= len(compute)).any():
        return False
    record = compute[by_op[at]]
    if (x.op[record] != kop).any():
        return False
    n_in, n_out = kernels["inputs"].astype(np.int64), kernels["outputs"].astype(np.int64)
    counts = n_in + n_out
    if (kernels["first"].astype(np.int64) != np.cumsum(counts) - counts).any():
        return False  # operands not laid out kernel after kernel, as the encoder writes them
    total = int(counts.sum())
    kernel_of = np.repeat(np.arange(n_k, dtype=np.int64), counts)
    output = (np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)) >= n_in[kernel_of]
    ops = operands[:total]
    need = _portion_bytes(t, ops)
    if need is None:
        return False
    parts = ops["buffers"].astype(np.int64)
    owner = np.repeat(np.arange(total, dtype=np.int64), parts)
    within = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(parts) - parts, parts)
    ob = t.lists[ops["list0"].astype(np.int64)[owner] + within].astype(np.int64)
    if not bufs.allocated[ob].all() or (bufs.size[ob] < need[owner]).any():
        return False
    token = np.array([name.startswith("after:") for name in p.buffers], dtype=bool) & bufs.allocated & (bufs.size == 0)
    if token[ob].any():
        return False
    n_buf = max(len(p.buffers), 1)
    ko = kernel_of[owner]
    kernel_keys = np.unique((ko * n_buf + ob) * 2 + output[owner])
    k_of_record = np.full(len(x.code), -1, dtype=np.int64)
    k_of_record[record] = np.arange(n_k, dtype=np.int64)
    kr = k_of_record[acc.owner]
    mine = (kr >= 0) & ~(token[acc.buffer] & ~acc.write)
    record_keys = np.unique((kr[mine] * n_buf + acc.buffer[mine]) * 2 + acc.write[mine])
    if not np.array_equal(kernel_keys, record_keys):
        return False
    levels = _level_matrix(t)
    if p.fast_level < 0 and levels is None:
        return True
    return _roofline_ok(p, x, bufs, record, ko, ob, levels)


def _portion_bytes(t: Tables, ops: np.ndarray) -> np.ndarray | None:
    """Each operand's bytes per buffer (``size // parts``); None when dims are not laid out in order,
    a split is uneven, or a size is out of int64's range."""
    n_dims = ops["dims"].astype(np.int64)
    if (ops["dim0"].astype(np.int64) != np.cumsum(n_dims) - n_dims).any():
        return None
    dims = np.asarray(t.dims[:int(n_dims.sum())])
    if len(dims) and int(dims.max()) >= _LIMIT:
        return None
    dims = dims.astype(np.int64)
    shaped = n_dims > 0
    heads = (np.cumsum(n_dims) - n_dims)[shaped]
    size = np.ones(len(ops), dtype=np.int64)
    if len(heads):
        if float(np.multiply.reduceat(dims.astype(np.float64), heads).max()) >= 2.0 ** 52:
            return None
        size[shaped] = np.multiply.reduceat(dims, heads)
    item = np.array([DTYPE_BYTES.get(s, 0) for s in t.strings], dtype=np.int64)
    size *= item[ops["dtype"].astype(np.int64)]
    parts = ops["buffers"].astype(np.int64)
    split = shaped & (parts > 1)
    if split.any() and (dims[heads[split[shaped]]] % parts[split]).any():
        return None
    return size // np.maximum(parts, 1)


def _roofline_ok(p: Program, x: _Columns, bufs: _Buffers, record: np.ndarray, ko: np.ndarray,
                 ob: np.ndarray, levels: tuple[np.ndarray, np.ndarray] | None = None) -> bool:
    """A MATMUL/VECTOR's fast and main bytes are its distinct operand buffers' sizes per level;
    with level bytes (``levels``, records x levels), every level's entry likewise."""
    roof = np.isin(x.code[record], _ROOFLINE)
    pairs = np.unique(ko * max(len(p.buffers), 1) + ob)
    k, b = pairs // max(len(p.buffers), 1), pairs % max(len(p.buffers), 1)
    keep = roof[k]
    k, b = k[keep], b[keep]
    level = bufs.level[b]
    has_levels = np.zeros(len(record), dtype=bool) if levels is None else levels[1][record]
    if levels is not None:
        matrix = levels[0]
        if ((level < 0) | (level >= matrix.shape[1])).any():
            return False
        sums = np.zeros((len(record), matrix.shape[1]), dtype=np.int64)
        np.add.at(sums, (k, level), bufs.size[b])
        mine = roof & has_levels
        if not np.array_equal(sums[mine], matrix[record[mine]]):
            return False
        if p.fast_level < 0:
            return True
    fast_level = level == p.fast_level
    main_level = ~fast_level & (level == p.main_level)
    if (~fast_level & ~main_level & ~has_levels[k]).any():
        return False
    fast = np.zeros(len(record), dtype=np.int64)
    main = np.zeros(len(record), dtype=np.int64)
    np.add.at(fast, k[fast_level], bufs.size[b[fast_level]])
    np.add.at(main, k[main_level], bufs.size[b[main_level]])
    rr = record[roof]
    return bool((x.fast[rr] == fast[roof]).all() and (x.mem[rr] == main[roof]).all())


def _memory_dmas_ok(t: Tables, x: _Columns, bufs: _Buffers) -> bool:
    """A memory DMA copies one buffer into one, between the levels it names, the smaller size."""
    dma = np.flatnonzero((x.code == _DMA) & (x.stream == DMA_STREAM))
    if not len(dma):
        return True
    if ((x.nr[dma] != 1) | (x.nw[dma] != 1)).any():
        return False
    src, dst = t.lists[x.off[dma]].astype(np.int64), t.lists[x.off[dma] + 1].astype(np.int64)
    if not (bufs.allocated[src].all() and bufs.allocated[dst].all()):
        return False
    same_levels = (x.a[dma] == bufs.level[src]) & (x.b[dma] == bufs.level[dst])
    return bool(same_levels.all() and (x.c[dma] == np.minimum(bufs.size[src], bufs.size[dst])).all())


def _semaphores_ok(x: _Columns) -> bool:
    """One SIGNAL per semaphore, each WAIT after it; a SIGNAL naming an op after the record running
    it ends, a WAIT naming one before such a record starts."""
    sig, wait = np.flatnonzero(x.code == _SIGNAL), np.flatnonzero(x.code == _WAIT)
    sem = x.a[sig]
    if len(np.unique(sem)) != len(sem):
        return False
    order = np.argsort(sem)
    at = np.searchsorted(sem, x.a[wait], sorter=order)
    if len(wait):
        if (at >= len(sig)).any() or (sem[order[np.minimum(at, len(sig) - 1)]] != x.a[wait]).any():
            return False
        if (x.skey[sig[order[at]]] > x.skey[wait]).any():
            return False
    runs = np.flatnonzero(np.isin(x.code, _COMPUTE) & (x.op != NONE))
    width = len(x.code) + 1
    run_keys = x.op[runs] * width + runs  # sorted by op, then record order (runs are in record order)
    by = np.argsort(run_keys, kind="stable")
    run_keys, runs = run_keys[by], runs[by]
    for anchors, signal in ((sig, True), (wait, False)):
        anchors = anchors[x.op[anchors] != NONE]
        if not len(anchors):
            continue
        keys = x.op[anchors] * width + anchors
        j = np.searchsorted(run_keys, keys) - (1 if signal else 0)
        if ((j < 0) | (j >= len(runs))).any():
            return False
        r = runs[j]
        if (x.op[r] != x.op[anchors]).any():
            return False
        if signal and (x.ekey[r] > x.skey[anchors]).any():
            return False
    return True


def _timings(t: Tables, x: _Columns, peaks: dict[str, int]) -> _Found:
    """The ops' timings, the memory DMAs and the SEND/RECV records, in record order."""
    p, strings = t.program, t.strings
    dev = p.device
    memory_dma = (x.code == _DMA) & (x.stream == DMA_STREAM)
    compute = np.flatnonzero(np.isin(x.code, _COMPUTE) & ~memory_dma & (x.op != NONE))
    ops = [(strings[o], dev, s, a, e) for o, s, a, e in
           zip(x.op[compute].tolist(), x.stream[compute].tolist(), x.start[compute].tolist(),
               x.end[compute].tolist())]
    dmas = []
    lv = p.levels
    for i in np.flatnonzero(memory_dma).tolist():
        op = strings[int(x.op[i])] if x.op[i] != NONE else ""
        src, dst = p.buffers[int(t.lists[x.off[i]])], p.buffers[int(t.lists[x.off[i] + 1])]
        dmas.append((dev, op, op.split(":", 1)[0], src, dst, lv[int(x.a[i])].name, lv[int(x.b[i])].name,
                     int(x.c[i]), int(x.start[i]), int(x.end[i])))
    xfer = np.flatnonzero((x.code == _SEND) | (x.code == _RECV))
    transfers = [(code, tid, link, size, start, end, strings[peer], op) for code, tid, link, size, start, end, peer, op
                 in zip(*(col[xfer].tolist() for col in (x.code, x.c, x.a, x.b, x.start, x.end, x.d, x.op)))]
    named = [(code, tid, link, size, start, end, peer, strings[op] if op != NONE else "")
             for code, tid, link, size, start, end, peer, op in transfers]
    return _Found(peaks, ops, dmas, named, int(x.end.max()))


def _assemble(tables: Mapping[str, Tables], names: list[str], found: Mapping[str, _Found]) -> Screened | None:
    """Ops run once across devices, links agree, transfers match and hold their link alone."""
    seen: set[str] = set()
    for name in names:
        for op, *_ in found[name].ops:
            if op in seen:
                return None
            seen.add(op)
    links: dict[int, tuple[str, int, int]] = {}
    for name in names:
        for lk in tables[name].program.links:
            params = (lk.name, lk.bandwidth_bytes_per_s, lk.latency_cycles)
            if links.setdefault(lk.id, params) != params:
                return None
    transfers = _matched_transfers(tables, names, found, links)
    if transfers is None:
        return None
    count = sum(len(tables[name].records) for name in names)
    dmas = sorted((d for name in names for d in found[name].dmas), key=lambda d: (d[0], d[8], d[1]))
    makespan = max((found[name].end for name in names), default=0)
    return Screened(makespan, [op for name in names for op in found[name].ops], transfers,
                    {name: found[name].peaks for name in names}, count, tuple(names), dmas)


def _matched_transfers(tables: Mapping[str, Tables], names: list[str], found: Mapping[str, _Found],
                       links: Mapping[int, tuple[str, int, int]]) -> list[tuple] | None:
    """Each transfer's one SEND and one RECV (link, bytes, crossed peers, RECV not before SEND),
    and no two transfers holding one link at once; None otherwise."""
    sends: dict[int, tuple] = {}
    recvs: dict[int, tuple] = {}
    for name in names:
        for code, tid, *rest in found[name].transfers:
            side = sends if code == _SEND else recvs
            if tid in side or rest[4] not in tables:
                return None
            side[tid] = (name, *rest)
    if sends.keys() != recvs.keys():
        return None
    transfers = []
    occupancy: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for tid in sorted(sends):
        sd, link, size, s_start, s_end, s_peer, s_op = sends[tid]
        rd, r_link, r_size, r_start, r_end, r_peer, r_op = recvs[tid]
        if (link, size) != (r_link, r_size) or s_peer != rd or r_peer != sd or r_start < s_start:
            return None
        start, end = min(s_start, r_start), max(s_end, r_end)
        occupancy[link].append((start, end, tid))
        transfers.append((tid, sd, rd, links.get(link, ("?",))[0], size, start, end, s_op, r_op))
    for link in occupancy:
        spans = sorted(span for span in occupancy[link] if span[1] > span[0])
        if any(s1 < e0 for (_s0, e0, _t0), (s1, _e1, _t1) in zip(spans, spans[1:])):
            return None
    return transfers


def coverage_end(lo: int, hi: int, writes: list[tuple[int, int, int]]) -> int | None:
    """The earliest cycle by which ``writes`` ((end, lo, hi), sorted by end) cover ``[lo, hi)``.

    Examples
    --------
    >>> coverage_end(0, 8, [(3, 0, 4), (5, 2, 6), (9, 4, 8)])
    9
    >>> coverage_end(0, 8, [(3, 0, 4)]) is None
    True
    """
    if lo >= hi:
        return writes[0][0] if writes else None
    got: list[tuple[int, int]] = []
    for end, wlo, whi in writes:
        got.append((max(lo, wlo), min(hi, whi)))
        got.sort()
        reach = lo
        for a, b in got:
            if a > reach:
                break
            reach = max(reach, b)
        if reach >= hi:
            return end
    return None
