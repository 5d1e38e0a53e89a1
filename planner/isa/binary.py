"""The binary format of a program (``bin/<device>.bin``) and its listing (``.lst``).

Little-endian, fixed-width records; a sha256 checksum in the header covers every byte
of the file except the checksum itself, so a flipped bit anywhere is refused. The byte
layout is in ``docs/isa.md``; :data:`HEADER` and :data:`RECORD` are the structs.

Layout (format version 2)
-------------------------
header (144 bytes) | levels | links | strings | buffers | buffer lists | kernels | operands |
dims | records (80 bytes each)

Version 2 added: the instruction's ``fast_bytes``, the header's fast level and ``addressed``
flag, and the kernel tables (what each compute instruction computes, for numeric mode).
Version 1 binaries are refused with a clear :class:`~planner.errors.BinaryFormatError`
(re-lower the plan to get version 2).

Version 3 (issue 14, memory plans over more than two levels) appends a *level-bytes table*
after the records: per instruction with :attr:`~planner.isa.instructions.Instruction.level_bytes`,
in record order, a :data:`LEVEL_ROW` (record index, reserved) and one u64 per level; the
header's second reserved field counts its rows. A program without level bytes is written
as version 2, byte for byte as before, so two-level plans keep their binaries; both
versions are read.

Header flag bit 1 (:data:`FLAG_SHARED_BANDWIDTH`, ``memory.bandwidth: shared``): the program's
ops and memory DMAs share each level's bandwidth, and the simulator checks it (no version
change: a program without it is written byte for byte as before).

Header flag bit 2 (:data:`FLAG_DMA_RATES`, a profile's ``dma_rates``): a *DMA-rate table*
follows the level-bytes table, one :data:`DMA_RATE` row per DMA path with its own rate
(level a < level b, reserved, bytes/s; sorted), and the header's first reserved field counts
its rows; the simulator times a memory DMA between those levels at that rate. A program
without such paths is written byte for byte as before.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Callable, NamedTuple

import numpy as np

from planner.errors import BinaryFormatError, InternalError
from planner.graph.ir import DTYPE_BYTES
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    DMA_STREAM,
    TRANSFER_STREAM,
    Instruction,
    Kernel,
    LevelInfo,
    LinkInfo,
    Opcode,
    Operand,
    Program,
    VectorOp,
)

__all__ = ["MAGIC", "FORMAT_VERSION", "READ_VERSIONS", "LEVEL_ROW", "format_version", "HEADER", "RECORD", "KERNEL", "OPERAND", "FLAG_ADDRESSED", "FLAG_SHARED_BANDWIDTH",
           "FLAG_DMA_RATES", "DMA_RATE",
           "RECORD_DTYPE", "KERNEL_DTYPE", "OPERAND_DTYPE", "Tables", "encode", "decode", "decode_tables",
           "listing"]

MAGIC = b"PLANISA\x00"
FORMAT_VERSION = 3  # the newest version written (only when a program has level bytes)
READ_VERSIONS = (2, 3)  # versions decoded (version 2 is version 3 without a level-bytes table)
NONE = 0xFFFFFFFF  # "no op" in a record's op field
FLAG_ADDRESSED = 1  # header flags bit 0: ALLOC/FREE d are real addresses (Program.addressed)
FLAG_SHARED_BANDWIDTH = 2  # bit 1: ops and DMAs share each level's bandwidth (Program.shared_bandwidth)
FLAG_DMA_RATES = 4  # bit 2: a DMA-rate table follows the level-bytes table (Program.dma_rates)
_KNOWN_FLAGS = FLAG_ADDRESSED | FLAG_SHARED_BANDWIDTH | FLAG_DMA_RATES

# magic, version, header size, record size, flags, device clock, reference clock,
# mxu rows, mxu cols, vector lanes, dma latency, profile name, device name,
# levels, main level, links, streams, records, strings, string bytes, buffers,
# buffer-list entries, fast level (-1: none), reserved, kernels, operands, dims,
# reserved, body bytes, sha256.
HEADER = struct.Struct("<8sHHHHQQIIIIIIHHHHIIIIIhHIIIIQ32s")
_CHECKSUM_AT = HEADER.size - 32
LEVEL = struct.Struct("<IIQQ")  # name, reserved, capacity bytes, bandwidth bytes/s
LINK = struct.Struct("<IIQQ")  # link id, name, bandwidth bytes/s, latency cycles
LEVEL_ROW = struct.Struct("<II")  # record index, reserved; then one u64 of bytes per level (version 3)
DMA_RATE = struct.Struct("<HHIQ")  # level a, level b (a < b), reserved, bytes/s (flag FLAG_DMA_RATES)
# opcode, subop, stream, op, start, duration, a, b, c, d, mem_bytes, fast_bytes,
# list offset, reads, writes.
RECORD = struct.Struct("<BBHIQQQQQQQQIHH")
# op name, type, attrs JSON (string indices), first operand, inputs, outputs.
KERNEL = struct.Struct("<IIIIHH")
# dtype (string index), first dim, first buffer-list entry, dims, buffers.
OPERAND = struct.Struct("<IIIHH")
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")
_U64 = struct.Struct("<Q")


class _Strings:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, s: str) -> int:
        if s not in self.index:
            self.index[s] = len(self.items)
            self.items.append(s)
        return self.index[s]

    def pack(self) -> bytes:
        out = bytearray()
        for s in self.items:
            b = s.encode("utf-8")
            if len(b) > 0xFFFF:
                raise ValueError(f"string too long for the string table: {s[:40]!r}...")
            out += _U16.pack(len(b)) + b
        return bytes(out)


def format_version(program: Program) -> int:
    """The format version ``program`` is written in: 3 when an instruction has level bytes, else 2.

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),), 0, (), 1, (),
    ...             (Instruction(Opcode.HALT, 0, 0, 0),))
    >>> format_version(p)
    2
    """
    return 3 if any(ins.level_bytes for ins in program.instructions) else 2


def _level_table(program: Program) -> tuple[bytes, int]:
    """The version-3 level-bytes table and its row count (empty for a version-2 program)."""
    rows = bytearray()
    count = 0
    n = len(program.levels)
    for r, ins in enumerate(program.instructions):
        if ins.level_bytes:
            if len(ins.level_bytes) != n:
                raise ValueError(f"instruction {r} ({ins.opcode.name}) gives bytes for {len(ins.level_bytes)} "
                                 f"levels, the program has {n}")
            rows += LEVEL_ROW.pack(r, 0) + b"".join(_U64.pack(x) for x in ins.level_bytes)
            count += 1
    return bytes(rows), count


def encode(program: Program) -> bytes:
    """The bytes of ``program``: header, tables and fixed-width records.

    Deterministic: the same program always gives the same bytes (strings are numbered in
    order of first use, kernels and records keep the program's order).

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),),
    ...             0, (), 1, (), (Instruction(Opcode.TASK, 0, 0, 5, op="t", a=5),
    ...                            Instruction(Opcode.HALT, 0, 5, 0)))
    >>> data = encode(p)
    >>> data[:8], len(data), decode(data) == p
    (b'PLANISA\\x00', 349, True)
    """
    strings = _Strings()
    profile_idx, device_idx = strings(program.profile), strings(program.device)
    levels = b"".join(LEVEL.pack(strings(lv.name), 0, lv.capacity_bytes, lv.bandwidth_bytes_per_s)
                      for lv in program.levels)
    links = b"".join(LINK.pack(lk.id, strings(lk.name), lk.bandwidth_bytes_per_s, lk.latency_cycles)
                     for lk in program.links)
    buffers = b"".join(_U32.pack(strings(name)) for name in program.buffers)
    lists: list[int] = []
    records = bytearray()
    for ins in program.instructions:
        op_idx = strings(ins.op) if ins.op else NONE
        d = ins.d
        if ins.opcode in (Opcode.SEND, Opcode.RECV):
            d = strings(ins.peer)
        elif ins.peer:
            raise ValueError(f"{ins.opcode.name} has a peer")
        offset = len(lists)
        lists.extend(ins.reads)
        lists.extend(ins.writes)
        if len(ins.reads) > 0xFFFF or len(ins.writes) > 0xFFFF:
            raise ValueError("too many buffers on one instruction")
        records += RECORD.pack(int(ins.opcode), ins.subop, ins.stream, op_idx, ins.start_cycle,
                               ins.duration_cycles, ins.a, ins.b, ins.c, d, ins.mem_bytes, ins.fast_bytes,
                               offset, len(ins.reads), len(ins.writes))
    kernels = bytearray()
    operands = bytearray()
    dims: list[int] = []
    n_operands = 0
    for k in program.kernels:
        if len(k.inputs) > 0xFFFF or len(k.outputs) > 0xFFFF:
            raise ValueError(f"kernel {k.op!r}: too many operands")
        kernels += KERNEL.pack(strings(k.op), strings(k.type), strings(k.attrs_json), n_operands,
                               len(k.inputs), len(k.outputs))
        for o in k.inputs + k.outputs:
            if len(o.shape) > 0xFFFF or len(o.buffers) > 0xFFFF:
                raise ValueError(f"kernel {k.op!r}: operand with too many dims or buffers")
            operands += OPERAND.pack(strings(o.dtype), len(dims), len(lists), len(o.shape), len(o.buffers))
            dims.extend(o.shape)
            lists.extend(o.buffers)
            n_operands += 1
    string_bytes = strings.pack()
    level_rows, n_level_rows = _level_table(program)
    body = (levels + links + string_bytes + buffers + b"".join(_U32.pack(b) for b in lists)
            + bytes(kernels) + bytes(operands) + b"".join(_U64.pack(x) for x in dims) + bytes(records) + level_rows
            + b"".join(DMA_RATE.pack(a, b, 0, rate) for a, b, rate in program.dma_rates))
    header = HEADER.pack(
        MAGIC, format_version(program), HEADER.size, RECORD.size,
        (FLAG_ADDRESSED if program.addressed else 0) | (FLAG_SHARED_BANDWIDTH if program.shared_bandwidth else 0)
        | (FLAG_DMA_RATES if program.dma_rates else 0),
        program.device_clock_hz, program.reference_clock_hz,
        program.mxu_rows, program.mxu_cols, program.vector_lanes, program.dma_latency_cycles,
        profile_idx, device_idx,
        len(program.levels), program.main_level, len(program.links), program.num_streams,
        len(program.instructions), len(strings.items), len(string_bytes), len(program.buffers),
        len(lists), program.fast_level, len(program.dma_rates), len(program.kernels), n_operands, len(dims),
        n_level_rows,
        len(body), bytes(32))
    digest = hashlib.sha256(header[:_CHECKSUM_AT] + body).digest()
    return header[:_CHECKSUM_AT] + digest + body


def _fail(what: str, name: str) -> BinaryFormatError:
    return BinaryFormatError(f"{name}: {what}")


class _Header(NamedTuple):
    """The fields of :data:`HEADER`, in order."""

    magic: bytes
    version: int
    header_size: int
    record_size: int
    flags: int
    dev_clock: int
    ref_clock: int
    rows: int
    cols: int
    lanes: int
    dma_lat: int
    profile_idx: int
    device_idx: int
    n_levels: int
    main_level: int
    n_links: int
    n_streams: int
    n_records: int
    n_strings: int
    string_bytes: int
    n_buffers: int
    n_lists: int
    fast_level: int
    n_dma_rates: int  # flag FLAG_DMA_RATES: rows of the DMA-rate table (else reserved)
    n_kernels: int
    n_operands: int
    n_dims: int
    n_level_rows: int  # version 3: rows of the level-bytes table (version 2: reserved)
    body_bytes: int
    checksum: bytes


def decode(data: bytes, *, name: str = "binary") -> Program:
    """Parse and verify a binary; ``name`` labels error messages (e.g. the file path).

    Raises
    ------
    BinaryFormatError
        Bad magic, unsupported version, truncated or oversized data, checksum mismatch,
        or a table index out of range.

    Examples
    --------
    >>> decode(b"ELF\\x7f" + bytes(200))
    Traceback (most recent call last):
    ...
    planner.errors.BinaryFormatError: binary: bad magic b'ELF\\x7f\\x00\\x00\\x00\\x00' (expected b'PLANISA\\x00'): not a plan ISA binary
    """
    data = bytes(data)
    h = _check_header(data, name)
    body = data[HEADER.size:]
    raw_levels = [LEVEL.unpack_from(body, k * LEVEL.size) for k in range(h.n_levels)]
    pos = h.n_levels * LEVEL.size
    raw_links = [LINK.unpack_from(body, pos + k * LINK.size) for k in range(h.n_links)]
    pos += h.n_links * LINK.size
    strings = _read_strings(body, pos, h, name)
    pos += h.string_bytes

    def s(i: int, what: str) -> str:
        if not 0 <= i < len(strings):
            raise _fail(f"{what} names string {i}, table has {len(strings)}", name)
        return strings[i]

    buffer_names = np.frombuffer(body, dtype="<u4", count=h.n_buffers, offset=pos).tolist()
    if h.n_buffers and max(buffer_names) >= len(strings):
        first = next(i for i, x in enumerate(buffer_names) if x >= len(strings))
        s(buffer_names[first], f"buffer {first}")  # raises, naming the first buffer without a name
    buffers = tuple(strings[x] for x in buffer_names)
    pos += 4 * h.n_buffers
    lists = np.frombuffer(body, dtype="<u4", count=h.n_lists, offset=pos).tolist()
    pos += 4 * h.n_lists
    if h.n_lists and max(lists) >= h.n_buffers:
        raise _fail(f"buffer lists name a buffer id out of range ({h.n_buffers} buffers)", name)
    kernels = _read_kernels(body, pos, h, s, strings, lists, name)
    pos += h.n_kernels * KERNEL.size + h.n_operands * OPERAND.size + 8 * h.n_dims
    instructions = _instructions(body[pos:pos + h.n_records * RECORD.size], h.n_records, strings, lists,
                                 h.n_buffers, h.n_levels, {lk[0] for lk in raw_links}, name)
    rows, table = _level_rows(body, pos + h.n_records * RECORD.size, h, name)
    set_level_bytes = Instruction.level_bytes.__set__
    for r, row in zip(rows.tolist(), table.tolist()):
        set_level_bytes(instructions[r], tuple(row))
    rates = _dma_rates(body, pos + h.n_records * RECORD.size, h, name)
    return _program(h, strings, raw_levels, raw_links, buffers, instructions, kernels, name, rates)


def _program(h: _Header, strings: list[str], raw_levels: list[tuple], raw_links: list[tuple], buffers: tuple[str, ...],
             instructions: list[Instruction], kernels: list[Kernel], name: str,
             dma_rates: tuple[tuple[int, int, int], ...] = ()) -> Program:
    """The program the header and tables describe (levels checked, names looked up)."""

    def s(i: int, what: str) -> str:
        if not 0 <= i < len(strings):
            raise _fail(f"{what} names string {i}, table has {len(strings)}", name)
        return strings[i]

    if not 0 <= h.main_level < h.n_levels:
        raise _fail(f"main level {h.main_level} out of range ({h.n_levels} levels)", name)
    if not -1 <= h.fast_level < h.n_levels:
        raise _fail(f"fast level {h.fast_level} out of range ({h.n_levels} levels)", name)
    return Program(
        device=s(h.device_idx, "device name"), profile=s(h.profile_idx, "profile name"),
        device_clock_hz=h.dev_clock, reference_clock_hz=h.ref_clock, mxu_rows=h.rows, mxu_cols=h.cols,
        vector_lanes=h.lanes, dma_latency_cycles=h.dma_lat,
        levels=tuple(LevelInfo(s(n, "level"), cap, bw) for n, _, cap, bw in raw_levels),
        main_level=h.main_level,
        links=tuple(LinkInfo(i, s(n, "link"), bw, lat) for i, n, bw, lat in raw_links),
        num_streams=h.n_streams, buffers=buffers, instructions=tuple(instructions),
        fast_level=h.fast_level, kernels=tuple(kernels), addressed=bool(h.flags & FLAG_ADDRESSED),
        shared_bandwidth=bool(h.flags & FLAG_SHARED_BANDWIDTH), dma_rates=dma_rates)


def _dma_rate_count(h: _Header) -> int:
    """Rows of the DMA-rate table (none without :data:`FLAG_DMA_RATES`, whatever the reserved field holds)."""
    return h.n_dma_rates if h.flags & FLAG_DMA_RATES else 0


def _dma_rates(body: bytes, records_end: int, h: _Header, name: str) -> tuple[tuple[int, int, int], ...]:
    """The DMA-rate table after the level-bytes table (which starts at ``records_end``): each row
    two levels in range, a < b, reserved 0, a positive rate; rows sorted, each path once."""
    n = _dma_rate_count(h)
    if h.flags & FLAG_DMA_RATES and n == 0:
        raise _fail("DMA-rate flag without a DMA-rate table", name)
    pos = records_end + _level_row_count(h) * (LEVEL_ROW.size + 8 * h.n_levels)
    raw = [DMA_RATE.unpack_from(body, pos + k * DMA_RATE.size) for k in range(n)]
    rates = tuple((a, b, rate) for a, b, _, rate in raw)
    if any(not 0 <= a < b < h.n_levels or reserved or rate <= 0 for a, b, reserved, rate in raw) \
            or list(rates) != sorted(set(rates)) or len({(a, b) for a, b, _ in rates}) != n:
        raise _fail(f"DMA-rate table: each row joins two of the {h.n_levels} levels a < b once, sorted, "
                    "reserved 0, at a positive rate", name)
    return rates


def _level_row_count(h: _Header) -> int:
    """Rows of the level-bytes table (version 2 has none, whatever its reserved field holds)."""
    return h.n_level_rows if h.version >= 3 else 0


def _level_rows(body: bytes, pos: int, h: _Header, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The level-bytes table at ``pos``: record indices (strictly increasing, in range) and a
    ``rows x levels`` int64 array of bytes (each below 2**62)."""
    n = _level_row_count(h)
    width = LEVEL_ROW.size + 8 * h.n_levels
    raw = np.frombuffer(body, dtype=np.uint8, count=n * width, offset=pos).reshape(n, width)
    head = raw[:, :LEVEL_ROW.size].copy().view("<u4").reshape(n, 2)
    table = raw[:, LEVEL_ROW.size:].copy().view("<u8").reshape(n, h.n_levels)
    rows = head[:, 0].astype(np.int64)
    if n and ((rows >= h.n_records).any() or (np.diff(rows) <= 0).any() or head[:, 1].any()):
        raise _fail("level-bytes table: record indices must increase and name records, reserved fields be 0", name)
    if h.version >= 3 and n == 0:
        raise _fail("format version 3 without a level-bytes table (write version 2)", name)
    if n and int(table.max()) >= 1 << 62:
        raise _fail("level-bytes table: a byte count is out of range", name)
    return rows, table.astype(np.int64)


class Tables(NamedTuple):
    """A binary's tables as numpy arrays, for a replay that works on columns (no per-record objects).

    ``program`` has every header field, level, link and buffer name, and no instructions or
    kernels: those are ``records`` (:data:`RECORD_DTYPE`; a SEND/RECV's ``d`` is its peer's
    string index), ``kernels`` (:data:`KERNEL_DTYPE`), ``operands`` (:data:`OPERAND_DTYPE`),
    ``dims`` and ``lists`` (the buffer-list entries). Every index is checked as :func:`decode`
    checks it.
    """

    program: Program
    strings: list[str]
    records: np.ndarray
    lists: np.ndarray
    kernels: np.ndarray
    operands: np.ndarray
    dims: np.ndarray
    level_rows: np.ndarray = np.zeros(0, dtype=np.int64)  # version 3: records with level bytes, increasing
    level_bytes: np.ndarray = np.zeros((0, 0), dtype=np.int64)  # per level row, bytes per level


def decode_tables(data: bytes, *, name: str = "binary") -> Tables:
    """Parse and verify a binary like :func:`decode` (same errors), into :class:`Tables`.

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),),
    ...             0, (), 1, (), (Instruction(Opcode.TASK, 0, 0, 5, op="t", a=5),
    ...                            Instruction(Opcode.HALT, 0, 5, 0)))
    >>> t = decode_tables(encode(p))
    >>> t.records["opcode"].tolist(), t.strings[t.records["op"][0]], t.program.instructions
    ([11, 12], 't', ())
    """
    data = bytes(data)
    h = _check_header(data, name)
    body = data[HEADER.size:]
    pos = h.n_levels * LEVEL.size + h.n_links * LINK.size
    strings = _read_strings(body, pos, h, name)
    pos += h.string_bytes
    n_strings = len(strings)
    buffer_names = np.frombuffer(body, dtype="<u4", count=h.n_buffers, offset=pos)
    pos += 4 * h.n_buffers
    lists = np.frombuffer(body, dtype="<u4", count=h.n_lists, offset=pos)
    pos += 4 * h.n_lists
    kernels = np.frombuffer(body, dtype=KERNEL_DTYPE, count=h.n_kernels, offset=pos)
    pos += KERNEL.size * h.n_kernels
    operands = np.frombuffer(body, dtype=OPERAND_DTYPE, count=h.n_operands, offset=pos)
    pos += OPERAND.size * h.n_operands
    dims = np.frombuffer(body, dtype="<u8", count=h.n_dims, offset=pos)
    pos += 8 * h.n_dims
    records = np.frombuffer(body, dtype=RECORD_DTYPE, count=h.n_records, offset=pos)
    level_rows, level_bytes = _level_rows(body, pos + RECORD.size * h.n_records, h, name)
    dtype_ok = np.array([s in DTYPE_BYTES for s in strings], dtype=bool)
    link_ids = {LINK.unpack_from(body, h.n_levels * LEVEL.size + k * LINK.size)[0] for k in range(h.n_links)}
    ok = (not h.n_buffers or int(buffer_names.max()) < n_strings) and (not h.n_lists or int(lists.max()) < h.n_buffers)
    ok = ok and _kernels_ok(kernels, operands, h, n_strings, dtype_ok)
    ok = ok and _first_bad_record(records, n_strings, h.n_lists, h.n_buffers, h.n_levels, link_ids) is None
    ok = ok and 0 <= h.main_level < h.n_levels and -1 <= h.fast_level < h.n_levels
    ok = ok and max(h.device_idx, h.profile_idx) < n_strings
    ok = ok and all(n < n_strings for lk in range(h.n_links)
                    for n in [LINK.unpack_from(body, h.n_levels * LEVEL.size + lk * LINK.size)[1]])
    ok = ok and all(LEVEL.unpack_from(body, k * LEVEL.size)[0] < n_strings for k in range(h.n_levels))
    if not ok:
        decode(data, name=name)  # raises the error the record-by-record decoder gives
        raise InternalError(f"{name}: decode accepts what decode_tables refuses")  # a bug in one of them
    raw_levels = [LEVEL.unpack_from(body, k * LEVEL.size) for k in range(h.n_levels)]
    raw_links = [LINK.unpack_from(body, h.n_levels * LEVEL.size + k * LINK.size) for k in range(h.n_links)]
    names = buffer_names.tolist()
    rates = _dma_rates(body, pos + RECORD.size * h.n_records, h, name)
    shell = _program(h, strings, raw_levels, raw_links, tuple(strings[x] for x in names), [], [], name, rates)
    return Tables(shell, strings, records, lists, kernels, operands, dims, level_rows, level_bytes)


def _kernels_ok(kernels: np.ndarray, operands: np.ndarray, h: _Header, n_strings: int, dtype_ok: np.ndarray) -> bool:
    """Whether :func:`_read_kernels` accepts the kernel and operand tables (checked all at once)."""
    if len(operands):
        dtype = operands["dtype"].astype(np.int64)
        if int(dtype.max()) >= n_strings or not dtype_ok[dtype].all():
            return False
        if (operands["dim0"].astype(np.int64) + operands["dims"] > h.n_dims).any():
            return False
        if (operands["list0"].astype(np.int64) + operands["buffers"] > h.n_lists).any():
            return False
    if len(kernels):
        if (kernels["first"].astype(np.int64) + kernels["inputs"] + kernels["outputs"] > h.n_operands).any():
            return False
        if max(int(kernels[f].max()) for f in ("op", "type", "attrs")) >= n_strings:
            return False
    return True


def _check_header(data: bytes, name: str) -> _Header:
    """The header, once the magic, version, sizes, checksum, section sizes and flags are checked."""
    if len(data) < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise _fail(f"bad magic {data[:len(MAGIC)]!r} (expected {MAGIC!r}): not a plan ISA binary", name)
    if len(data) >= 10:
        (version,) = _U16.unpack_from(data, 8)
        if version not in READ_VERSIONS:
            raise _fail(f"format version {version} is not supported (this planner reads versions "
                        f"{' and '.join(map(str, READ_VERSIONS))}; re-lower the plan)", name)
    if len(data) < HEADER.size:
        raise _fail(f"truncated: {len(data)} bytes, the header alone needs {HEADER.size}", name)
    h = _Header(*HEADER.unpack_from(data))
    if h.header_size != HEADER.size or h.record_size != RECORD.size:
        raise _fail(f"header/record size {h.header_size}/{h.record_size} != {HEADER.size}/{RECORD.size}", name)
    if len(data) < HEADER.size + h.body_bytes:
        raise _fail(f"truncated: {len(data)} bytes, the header announces {HEADER.size + h.body_bytes}", name)
    if len(data) > HEADER.size + h.body_bytes:
        raise _fail(f"{len(data) - HEADER.size - h.body_bytes} trailing bytes after the announced end", name)
    if hashlib.sha256(data[:_CHECKSUM_AT] + data[HEADER.size:]).digest() != h.checksum:
        raise _fail("checksum mismatch: the file is corrupted or was modified after encoding", name)
    expected = (h.n_levels * LEVEL.size + h.n_links * LINK.size + h.string_bytes + 4 * h.n_buffers
                + 4 * h.n_lists + h.n_kernels * KERNEL.size + h.n_operands * OPERAND.size + 8 * h.n_dims
                + h.n_records * RECORD.size + _level_row_count(h) * (LEVEL_ROW.size + 8 * h.n_levels)
                + _dma_rate_count(h) * DMA_RATE.size)
    if expected != h.body_bytes:
        raise _fail(f"section sizes add up to {expected} bytes, body has {h.body_bytes}", name)
    if h.flags & ~_KNOWN_FLAGS:
        raise _fail(f"unknown header flags {h.flags:#x}", name)
    return h


def _read_strings(body: bytes, pos: int, h: _Header, name: str) -> list[str]:
    """The string table at ``pos``: u16-length-prefixed UTF-8, exactly as many as the header says."""
    strings: list[str] = []
    end = pos + h.string_bytes
    try:
        while pos < end:
            n = body[pos] | body[pos + 1] << 8 if pos + 1 < end else end  # the u16 length (a lone byte overruns)
            if pos + 2 + n > end:
                raise _fail("string table overruns its section", name)
            strings.append(body[pos + 2:pos + 2 + n].decode("utf-8"))
            pos += 2 + n
    except UnicodeDecodeError as e:
        raise _fail(f"string table is not UTF-8 ({e})", name) from None
    if len(strings) != h.n_strings:
        raise _fail(f"string table holds {len(strings)} strings, header says {h.n_strings}", name)
    return strings


def _read_kernels(body: bytes, pos: int, h: _Header, s: Callable[[int, str], str], strings: list[str],
                  lists: list[int], name: str) -> list[Kernel]:
    """The kernel, operand and dims tables at ``pos``, as kernels (every index checked: all at
    once with numpy, then record by record only to name the first bad entry)."""
    table = np.frombuffer(body, dtype=KERNEL_DTYPE, count=h.n_kernels, offset=pos)
    raw_kernels = list(zip(*(table[f].tolist() for f in KERNEL_DTYPE.names)))
    pos += KERNEL.size * h.n_kernels
    table_ops = np.frombuffer(body, dtype=OPERAND_DTYPE, count=h.n_operands, offset=pos)
    raw_operands = list(zip(*(table_ops[f].tolist() for f in OPERAND_DTYPE.names)))
    pos += OPERAND.size * h.n_operands
    dims = tuple(np.frombuffer(body, dtype="<u8", count=h.n_dims, offset=pos).tolist())
    if _kernels_ok(table, table_ops, h, len(strings), np.array([x in DTYPE_BYTES for x in strings], dtype=bool)):
        return _built_kernels(raw_kernels, raw_operands, dims, strings, lists)
    operands: list[Operand] = []
    for j, (dtype_idx, dim0, list0, n_dim, n_buf) in enumerate(raw_operands):
        dtype = s(dtype_idx, f"operand {j} dtype")
        if dtype not in DTYPE_BYTES:
            raise _fail(f"operand {j}: unknown dtype {dtype!r}", name)
        if dim0 + n_dim > h.n_dims or list0 + n_buf > h.n_lists:
            raise _fail(f"operand {j}: dims or buffers out of range", name)
        operands.append(Operand(dims[dim0:dim0 + n_dim], dtype, tuple(lists[list0:list0 + n_buf])))
    kernels = []
    for j, (op_idx, type_idx, attrs_idx, first, n_in, n_out) in enumerate(raw_kernels):
        if first + n_in + n_out > h.n_operands:
            raise _fail(f"kernel {j}: operands [{first}, {first + n_in + n_out}) out of range", name)
        kernels.append(Kernel(s(op_idx, f"kernel {j} op"), s(type_idx, f"kernel {j} type"),
                              s(attrs_idx, f"kernel {j} attrs"), tuple(operands[first:first + n_in]),
                              tuple(operands[first + n_in:first + n_in + n_out])))
    return kernels


def _built_kernels(raw_kernels: list[tuple], raw_operands: list[tuple], dims: tuple[int, ...], strings: list[str],
                   lists: list[int]) -> list[Kernel]:
    """Kernels from tables :func:`_kernels_ok` accepted, built without ``__init__`` (its
    conversions hold by construction: plain ints and tuples)."""
    new_operand, new_kernel = _builder(Operand), _builder(Kernel)
    operands = [new_operand(dims[dim0:dim0 + n_dim], strings[dtype_idx], tuple(lists[list0:list0 + n_buf]))
                for dtype_idx, dim0, list0, n_dim, n_buf in raw_operands]
    return [new_kernel(strings[op_idx], strings[type_idx], strings[attrs_idx], tuple(operands[first:first + n_in]),
                       tuple(operands[first + n_in:first + n_in + n_out]))
            for op_idx, type_idx, attrs_idx, first, n_in, n_out in raw_kernels]


def _builder(cls):
    """``build(*fields) -> cls`` for a frozen, slotted dataclass, without ``__init__``."""
    setters = [getattr(cls, f).__set__ for f in cls.__dataclass_fields__]
    new = object.__new__

    def build(*values):
        obj = new(cls)
        for set_field, value in zip(setters, values):
            set_field(obj, value)
        return obj

    return build


KERNEL_DTYPE = np.dtype([("op", "<u4"), ("type", "<u4"), ("attrs", "<u4"), ("first", "<u4"), ("inputs", "<u2"),
                          ("outputs", "<u2")])
OPERAND_DTYPE = np.dtype([("dtype", "<u4"), ("dim0", "<u4"), ("list0", "<u4"), ("dims", "<u2"),
                           ("buffers", "<u2")])
assert (KERNEL_DTYPE.itemsize, OPERAND_DTYPE.itemsize) == (KERNEL.size, OPERAND.size)


# The records as numpy sees them: the fields of RECORD, in order (80 bytes, no padding).
RECORD_DTYPE = np.dtype([("opcode", "<u1"), ("subop", "<u1"), ("stream", "<u2"), ("op", "<u4"),
                          ("start", "<u8"), ("duration", "<u8"), ("a", "<u8"), ("b", "<u8"), ("c", "<u8"),
                          ("d", "<u8"), ("mem", "<u8"), ("fast", "<u8"), ("list", "<u4"), ("reads", "<u2"),
                          ("writes", "<u2")])
assert RECORD_DTYPE.itemsize == RECORD.size
_OPCODES = np.array(sorted(int(c) for c in Opcode), dtype=np.int64)
_VECTOR_SUBOPS = np.array(sorted(int(v) for v in VectorOp), dtype=np.int64)


def _record_error(r: int, rec: tuple, strings: list[str], n_lists: int, n_buffers: int, n_levels: int,
                  link_ids: set[int], name: str) -> BinaryFormatError | None:
    """What is wrong with record ``r`` (its RECORD fields), checked in the format's order; None if nothing."""
    opcode, subop, _stream, op_idx, _start, _dur, a, b, _c, d, _mem, _fast, off, nr, nw = rec
    code = Opcode._value2member_map_.get(opcode)
    if code is None:
        return _fail(f"record {r}: unknown opcode {opcode}", name)
    if off + nr + nw > n_lists:
        return _fail(f"record {r}: buffer list [{off}, {off + nr + nw}) out of range", name)
    if code in (Opcode.ALLOC, Opcode.FREE):
        if a >= n_buffers or b >= n_levels:
            return _fail(f"record {r}: {code.name} names buffer {a} / level {b} out of range", name)
    elif code == Opcode.VECTOR:
        if subop not in VectorOp._value2member_map_:
            return _fail(f"record {r}: unknown vector subop {subop}", name)
    elif code == Opcode.DMA:
        if a >= n_levels or b >= n_levels:
            return _fail(f"record {r}: DMA names a level out of range", name)
    elif code in (Opcode.SEND, Opcode.RECV):
        if d >= len(strings):
            return _fail(f"record {r} peer names string {d}, table has {len(strings)}", name)
        if a not in link_ids:
            return _fail(f"record {r}: {code.name} on link {a}, which the link table lacks", name)
    if op_idx != NONE and op_idx >= len(strings):
        return _fail(f"record {r} op names string {op_idx}, table has {len(strings)}", name)
    return None


def _first_bad_record(rec: np.ndarray, n_strings: int, n_lists: int, n_buffers: int, n_levels: int,
                      link_ids: set[int]) -> int | None:
    """The first record :func:`_record_error` refuses, found with numpy over all records at once."""
    code = rec["opcode"].astype(np.int64)
    a, b, d = rec["a"], rec["b"], rec["d"]
    bad = ~np.isin(code, _OPCODES)
    bad |= rec["list"].astype(np.int64) + rec["reads"] + rec["writes"] > n_lists
    alloc_free = (code == int(Opcode.ALLOC)) | (code == int(Opcode.FREE))
    bad |= alloc_free & ((a >= n_buffers) | (b >= n_levels))
    bad |= (code == int(Opcode.VECTOR)) & ~np.isin(rec["subop"].astype(np.int64), _VECTOR_SUBOPS)
    bad |= (code == int(Opcode.DMA)) & ((a >= n_levels) | (b >= n_levels))
    send_recv = (code == int(Opcode.SEND)) | (code == int(Opcode.RECV))
    known_link = np.isin(a, np.array(sorted(link_ids), dtype=np.uint64))
    bad |= send_recv & ((d >= n_strings) | ~known_link)
    bad |= (rec["op"] != NONE) & (rec["op"] >= n_strings)
    first = np.flatnonzero(bad)
    return int(first[0]) if len(first) else None


def _instruction_builder():
    """``build(*fields) -> Instruction`` without ``__init__``, twice as fast for the 10^5 records of a
    large plan. Only for decoded records: ``__post_init__``'s conversions and checks hold by
    construction there (an :class:`Opcode`, tuples, unsigned fields)."""
    s = [getattr(Instruction, f).__set__ for f in Instruction.__dataclass_fields__]
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15 = s
    new = object.__new__

    def build(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14):
        i = new(Instruction)
        s0(i, v0), s1(i, v1), s2(i, v2), s3(i, v3), s4(i, v4), s5(i, v5), s6(i, v6), s7(i, v7)
        s8(i, v8), s9(i, v9), s10(i, v10), s11(i, v11), s12(i, v12), s13(i, v13), s14(i, v14), s15(i, ())
        return i

    return build


def _instructions(records: bytes, n_records: int, strings: list[str], lists: list[int], n_buffers: int,
                  n_levels: int, link_ids: set[int], name: str) -> list[Instruction]:
    """The instructions of the records section: validated by numpy in one pass, then built.

    A refused binary gets the message of its first bad record, as a record-by-record
    check would give it.
    """
    rec = np.frombuffer(records, dtype=RECORD_DTYPE, count=n_records)
    bad = _first_bad_record(rec, len(strings), len(lists), n_buffers, n_levels, link_ids)
    if bad is not None:
        raise _record_error(bad, RECORD.unpack_from(records, bad * RECORD.size), strings, len(lists),
                            n_buffers, n_levels, link_ids, name)
    codes = Opcode._value2member_map_
    peer_codes = (Opcode.SEND, Opcode.RECV)
    out = []
    append = out.append
    build = _instruction_builder()
    columns = [rec[f].tolist() for f in RECORD_DTYPE.names]
    for opcode, subop, stream, op_idx, start, dur, a, b, c, d, mem, fast, off, nr, nw in zip(*columns):
        code = codes[opcode]
        peer = ""
        if code in peer_codes:
            peer, d = strings[d], 0
        append(build(code, stream, start, dur, "" if op_idx == NONE else strings[op_idx], subop, a, b, c, d, mem,
                     tuple(lists[off:off + nr]) if nr else (), tuple(lists[off + nr:off + nr + nw]) if nw else (),
                     peer, fast))
    return out


def _operands(ins: Instruction, program: Program) -> str:
    op = ins.opcode
    lv = program.levels
    fast = f" fast={ins.fast_bytes}B" if ins.fast_bytes else ""
    levels = (" levels=" + ",".join(f"{lv[k].name}:{b}B" for k, b in enumerate(ins.level_bytes) if b)
              if ins.level_bytes else "")
    if op in (Opcode.MATMUL, Opcode.CONV):
        return f"T={ins.a} K={ins.b} N={ins.c} sets={ins.d} mem={ins.mem_bytes}B{fast}{levels}"
    if op == Opcode.VECTOR:
        return f"{VectorOp(ins.subop).op_type} elements={ins.a} window={ins.b} mem={ins.mem_bytes}B{fast}{levels}"
    if op == Opcode.DMA:
        return f"{lv[ins.a].name}->{lv[ins.b].name} bytes={ins.c}"
    if op in (Opcode.SEND, Opcode.RECV):
        arrow = "to" if op == Opcode.SEND else "from"
        return f"{arrow}={ins.peer} link={program.link(ins.a).name} bytes={ins.b} xfer={ins.c}"
    if op in (Opcode.SIGNAL, Opcode.WAIT):
        return f"sem={ins.a}"
    if op in (Opcode.ALLOC, Opcode.FREE):
        flags = " preloaded" if op == Opcode.ALLOC and ins.subop & ALLOC_PRELOADED else ""
        flags += " view" if ins.subop & ALLOC_VIEW else ""
        addr = f" addr={ins.d}" if program.addressed else ""
        return f"buf={ins.a}:{program.buffers[ins.a]} {lv[ins.b].name} bytes={ins.c}{flags}{addr}"
    if op == Opcode.TASK:
        return f"cycles={ins.a}"
    return ""


def _operand_text(o: Operand, program: Program) -> str:
    names = "+".join(program.buffers[b] for b in o.buffers)
    return f"{names}[{'x'.join(map(str, o.shape))} {o.dtype}]"


def _kernel_line(k: Kernel, program: Program) -> str:
    ins = ", ".join(_operand_text(o, program) for o in k.inputs)
    outs = ", ".join(_operand_text(o, program) for o in k.outputs)
    attrs = "" if k.attrs_json in ("", "{}") else f" {k.attrs_json}"
    return f"; kernel {k.op}: {k.type}{attrs} ({ins}) -> ({outs})"


_STREAM_NAMES = {TRANSFER_STREAM: "xfer", DMA_STREAM: "dma"}


def listing(program: Program) -> str:
    """A human-readable listing (``.lst``) of a program, one instruction per line.

    A comment header gives the device, clocks, levels (main and fast marked), links and one
    line per kernel (``; kernel <op>: <type> <attrs> (inputs) -> (outputs)``, each operand as
    ``buffer+buffer[shape dtype]``); then one line per instruction: start, duration, stream
    (``xfer`` = transfer engine, ``dma`` = DMA engine), opcode, operands (``fast=`` when an
    instruction moves fast-level bytes; ALLOC/FREE flags ``preloaded``/``view`` and, in an
    addressed program, ``addr=``), op, and buffers read -> written.

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),),
    ...             0, (), 1, (), (Instruction(Opcode.TASK, 0, 0, 5, op="t", a=5),
    ...                            Instruction(Opcode.HALT, 0, 5, 0)))
    >>> print(listing(p).splitlines()[-1])
             5          0      0  HALT
    """
    lines = [
        f"; plan ISA v{format_version(program)} program for device {program.device} (profile {program.profile})",
        f"; clocks: device {program.device_clock_hz} Hz, reference {program.reference_clock_hz} Hz; "
        f"streams {program.num_streams}; mxu {program.mxu_rows}x{program.mxu_cols}, "
        f"{program.vector_lanes} lanes, dma latency {program.dma_latency_cycles}"
        + ("; addressed" if program.addressed else "") + ("; shared bandwidth" if program.shared_bandwidth else ""),
    ]
    for i, lv in enumerate(program.levels):
        main = " (main)" if i == program.main_level else ""
        main += " (fast)" if i == program.fast_level else ""
        lines.append(f"; level {i} {lv.name}: {lv.capacity_bytes} B, {lv.bandwidth_bytes_per_s} B/s{main}")
    for lk in program.links:
        lines.append(f"; link {lk.id} {lk.name}: {lk.bandwidth_bytes_per_s} B/s, latency {lk.latency_cycles}")
    for a, b, rate in program.dma_rates:
        lines.append(f"; dma path {program.levels[a].name}-{program.levels[b].name}: {rate} B/s")
    for k in program.kernels:
        lines.append(_kernel_line(k, program))
    lines.append(f"; {'start':>8} {'duration':>10} {'stream':>6}  {'opcode':<7} operands | op | reads -> writes")
    for ins in program.instructions:
        stream = _STREAM_NAMES.get(ins.stream, str(ins.stream))
        text = f"{ins.start_cycle:>10} {ins.duration_cycles:>10} {stream:>6}  {ins.opcode.name:<7}"
        extra = _operands(ins, program)
        if extra:
            text += f" {extra}"
        if ins.op:
            text += f" | {ins.op}"
        if ins.reads or ins.writes:
            text += f" | {list(ins.reads)} -> {list(ins.writes)}"
        lines.append(text.rstrip())
    return "\n".join(lines) + "\n"
