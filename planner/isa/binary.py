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
"""

from __future__ import annotations

import hashlib
import struct

from planner.errors import BinaryFormatError
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

__all__ = ["MAGIC", "FORMAT_VERSION", "HEADER", "RECORD", "KERNEL", "OPERAND", "FLAG_ADDRESSED",
           "encode", "decode", "listing"]

MAGIC = b"PLANISA\x00"
FORMAT_VERSION = 2
NONE = 0xFFFFFFFF  # "no op" in a record's op field
FLAG_ADDRESSED = 1  # header flags bit 0: ALLOC/FREE d are real addresses (Program.addressed)

# magic, version, header size, record size, flags, device clock, reference clock,
# mxu rows, mxu cols, vector lanes, dma latency, profile name, device name,
# levels, main level, links, streams, records, strings, string bytes, buffers,
# buffer-list entries, fast level (-1: none), reserved, kernels, operands, dims,
# reserved, body bytes, sha256.
HEADER = struct.Struct("<8sHHHHQQIIIIIIHHHHIIIIIhHIIIIQ32s")
_CHECKSUM_AT = HEADER.size - 32
LEVEL = struct.Struct("<IIQQ")  # name, reserved, capacity bytes, bandwidth bytes/s
LINK = struct.Struct("<IIQQ")  # link id, name, bandwidth bytes/s, latency cycles
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
    body = (levels + links + string_bytes + buffers + b"".join(_U32.pack(b) for b in lists)
            + bytes(kernels) + bytes(operands) + b"".join(_U64.pack(x) for x in dims) + bytes(records))
    header = HEADER.pack(
        MAGIC, FORMAT_VERSION, HEADER.size, RECORD.size, FLAG_ADDRESSED if program.addressed else 0,
        program.device_clock_hz, program.reference_clock_hz,
        program.mxu_rows, program.mxu_cols, program.vector_lanes, program.dma_latency_cycles,
        profile_idx, device_idx,
        len(program.levels), program.main_level, len(program.links), program.num_streams,
        len(program.instructions), len(strings.items), len(string_bytes), len(program.buffers),
        len(lists), program.fast_level, 0, len(program.kernels), n_operands, len(dims), 0,
        len(body), bytes(32))
    digest = hashlib.sha256(header[:_CHECKSUM_AT] + body).digest()
    return header[:_CHECKSUM_AT] + digest + body


def _fail(what: str, name: str) -> BinaryFormatError:
    return BinaryFormatError(f"{name}: {what}")


def decode(data: bytes, *, name: str = "binary") -> Program:
    """Parse and verify a binary; ``name`` labels error messages (e.g. the file path).

    The sections are read in file order: the header (:func:`_header`), the level, link and
    string tables (:func:`_strings`), the buffer lists, kernels and operands
    (:func:`_kernels`), then the records (:func:`_records`).

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
    (_, version, header_size, record_size, flags, dev_clock, ref_clock, rows, cols, lanes, dma_lat,
     profile_idx, device_idx, n_levels, main_level, n_links, n_streams, n_records, n_strings,
     string_bytes, n_buffers, n_lists, fast_level, _reserved, n_kernels, n_operands, n_dims, _reserved2,
     body_bytes, checksum) = _header(data, name)
    body = data[HEADER.size:]
    pos = 0
    raw_levels = []
    for _ in range(n_levels):
        raw_levels.append(LEVEL.unpack_from(body, pos))
        pos += LEVEL.size
    raw_links = []
    for _ in range(n_links):
        raw_links.append(LINK.unpack_from(body, pos))
        pos += LINK.size
    strings, pos = _strings(body, pos, string_bytes, n_strings, name)

    def s(i: int, what: str) -> str:
        if not 0 <= i < len(strings):
            raise _fail(f"{what} names string {i}, table has {len(strings)}", name)
        return strings[i]

    buffers = tuple(s(_U32.unpack_from(body, pos + 4 * i)[0], f"buffer {i}") for i in range(n_buffers))
    pos += 4 * n_buffers
    lists = list(struct.unpack_from(f"<{n_lists}I", body, pos))
    pos += 4 * n_lists
    if any(bid >= n_buffers for bid in lists):
        raise _fail(f"buffer lists name a buffer id out of range ({n_buffers} buffers)", name)
    kernels, pos = _kernels(body, pos, (n_kernels, n_operands, n_dims, n_lists), lists, s, name)
    instructions = _records(body[pos:], strings, lists, s, {lk[0] for lk in raw_links},
                            n_buffers, n_levels, name)
    if not 0 <= main_level < n_levels:
        raise _fail(f"main level {main_level} out of range ({n_levels} levels)", name)
    if not -1 <= fast_level < n_levels:
        raise _fail(f"fast level {fast_level} out of range ({n_levels} levels)", name)
    return Program(
        device=s(device_idx, "device name"), profile=s(profile_idx, "profile name"),
        device_clock_hz=dev_clock, reference_clock_hz=ref_clock, mxu_rows=rows, mxu_cols=cols,
        vector_lanes=lanes, dma_latency_cycles=dma_lat,
        levels=tuple(LevelInfo(s(n, "level"), cap, bw) for n, _, cap, bw in raw_levels),
        main_level=main_level,
        links=tuple(LinkInfo(i, s(n, "link"), bw, lat) for i, n, bw, lat in raw_links),
        num_streams=n_streams, buffers=buffers, instructions=tuple(instructions),
        fast_level=fast_level, kernels=tuple(kernels), addressed=bool(flags & FLAG_ADDRESSED))


def _header(data: bytes, name: str) -> tuple:
    """The header's fields, once magic, version, sizes, checksum and flags are checked."""
    if len(data) < len(MAGIC) or data[:len(MAGIC)] != MAGIC:
        raise _fail(f"bad magic {data[:len(MAGIC)]!r} (expected {MAGIC!r}): not a plan ISA binary", name)
    if len(data) >= 10:
        (version,) = _U16.unpack_from(data, 8)
        if version != FORMAT_VERSION:
            raise _fail(f"format version {version} is not supported (this planner reads version "
                        f"{FORMAT_VERSION}; re-lower the plan)", name)
    if len(data) < HEADER.size:
        raise _fail(f"truncated: {len(data)} bytes, the header alone needs {HEADER.size}", name)
    fields = HEADER.unpack_from(data)
    (_, version, header_size, record_size, flags, dev_clock, ref_clock, rows, cols, lanes, dma_lat,
     profile_idx, device_idx, n_levels, main_level, n_links, n_streams, n_records, n_strings,
     string_bytes, n_buffers, n_lists, fast_level, _reserved, n_kernels, n_operands, n_dims, _reserved2,
     body_bytes, checksum) = fields
    if header_size != HEADER.size or record_size != RECORD.size:
        raise _fail(f"header/record size {header_size}/{record_size} != {HEADER.size}/{RECORD.size}", name)
    if len(data) < HEADER.size + body_bytes:
        raise _fail(f"truncated: {len(data)} bytes, the header announces {HEADER.size + body_bytes}", name)
    if len(data) > HEADER.size + body_bytes:
        raise _fail(f"{len(data) - HEADER.size - body_bytes} trailing bytes after the announced end", name)
    if hashlib.sha256(data[:_CHECKSUM_AT] + data[HEADER.size:]).digest() != checksum:
        raise _fail("checksum mismatch: the file is corrupted or was modified after encoding", name)
    expected = (n_levels * LEVEL.size + n_links * LINK.size + string_bytes + 4 * n_buffers
                + 4 * n_lists + n_kernels * KERNEL.size + n_operands * OPERAND.size + 8 * n_dims
                + n_records * RECORD.size)
    if expected != body_bytes:
        raise _fail(f"section sizes add up to {expected} bytes, body has {body_bytes}", name)
    if flags & ~FLAG_ADDRESSED:
        raise _fail(f"unknown header flags {flags:#x}", name)
    return fields


def _strings(body: bytes, pos: int, string_bytes: int, n_strings: int, name: str) -> tuple[list[str], int]:
    """The string table at ``pos`` and the position after it."""
    strings: list[str] = []
    end = pos + string_bytes
    try:
        while pos < end:
            (n,) = _U16.unpack_from(body, pos)
            if pos + 2 + n > end:
                raise _fail("string table overruns its section", name)
            strings.append(body[pos + 2:pos + 2 + n].decode("utf-8"))
            pos += 2 + n
    except UnicodeDecodeError as e:
        raise _fail(f"string table is not UTF-8 ({e})", name) from None
    if len(strings) != n_strings:
        raise _fail(f"string table holds {len(strings)} strings, header says {n_strings}", name)
    return strings, pos


def _kernels(body: bytes, pos: int, counts: tuple[int, int, int, int], lists: list[int], s, name: str
             ) -> tuple[list[Kernel], int]:
    """The kernel, operand and dimension tables at ``pos`` (``counts``: kernels, operands,
    dims, list entries) as kernels, and the position after them."""
    n_kernels, n_operands, n_dims, n_lists = counts
    raw_kernels = [KERNEL.unpack_from(body, pos + KERNEL.size * i) for i in range(n_kernels)]
    pos += KERNEL.size * n_kernels
    raw_operands = [OPERAND.unpack_from(body, pos + OPERAND.size * i) for i in range(n_operands)]
    pos += OPERAND.size * n_operands
    dims = struct.unpack_from(f"<{n_dims}Q", body, pos)
    pos += 8 * n_dims
    operands: list[Operand] = []
    for j, (dtype_idx, dim0, list0, n_dim, n_buf) in enumerate(raw_operands):
        dtype = s(dtype_idx, f"operand {j} dtype")
        if dtype not in DTYPE_BYTES:
            raise _fail(f"operand {j}: unknown dtype {dtype!r}", name)
        if dim0 + n_dim > n_dims or list0 + n_buf > n_lists:
            raise _fail(f"operand {j}: dims or buffers out of range", name)
        operands.append(Operand(dims[dim0:dim0 + n_dim], dtype, tuple(lists[list0:list0 + n_buf])))
    kernels = []
    for j, (op_idx, type_idx, attrs_idx, first, n_in, n_out) in enumerate(raw_kernels):
        if first + n_in + n_out > n_operands:
            raise _fail(f"kernel {j}: operands [{first}, {first + n_in + n_out}) out of range", name)
        kernels.append(Kernel(s(op_idx, f"kernel {j} op"), s(type_idx, f"kernel {j} type"),
                              s(attrs_idx, f"kernel {j} attrs"), tuple(operands[first:first + n_in]),
                              tuple(operands[first + n_in:first + n_in + n_out])))
    return kernels, pos


def _records(records: bytes, strings: list[str], lists: list[int], s, link_ids: set[int], n_buffers: int,
             n_levels: int, name: str) -> list[Instruction]:
    """The instruction records, each checked against the tables (the hot loop of decoding)."""
    codes = Opcode._value2member_map_
    n_str, n_list = len(strings), len(lists)
    alloc_free = (int(Opcode.ALLOC), int(Opcode.FREE))
    vector, dma, send_recv = int(Opcode.VECTOR), int(Opcode.DMA), (int(Opcode.SEND), int(Opcode.RECV))
    instructions: list[Instruction] = []
    append = instructions.append
    for r, (opcode, subop, stream, op_idx, start, dur, a, b, c, d, mem, fast, off, nr, nw) in enumerate(
            RECORD.iter_unpack(records)):
        code = codes.get(opcode)
        if code is None:
            raise _fail(f"record {r}: unknown opcode {opcode}", name)
        if off + nr + nw > n_list:
            raise _fail(f"record {r}: buffer list [{off}, {off + nr + nw}) out of range", name)
        reads = tuple(lists[off:off + nr]) if nr else ()
        writes = tuple(lists[off + nr:off + nr + nw]) if nw else ()
        peer = ""
        if opcode in alloc_free:
            if a >= n_buffers or b >= n_levels:
                raise _fail(f"record {r}: {code.name} names buffer {a} / level {b} out of range", name)
        elif opcode == vector:
            if subop not in VectorOp._value2member_map_:
                raise _fail(f"record {r}: unknown vector subop {subop}", name)
        elif opcode == dma:
            if a >= n_levels or b >= n_levels:
                raise _fail(f"record {r}: DMA names a level out of range", name)
        elif opcode in send_recv:
            peer, d = s(d, f"record {r} peer"), 0
            if a not in link_ids:
                raise _fail(f"record {r}: {code.name} on link {a}, which the link table lacks", name)
        op = "" if op_idx == NONE else strings[op_idx] if op_idx < n_str else s(op_idx, f"record {r} op")
        append(Instruction(code, stream, start, dur, op, subop, a, b, c, d, mem, reads, writes, peer, fast))
    return instructions


def _operands(ins: Instruction, program: Program) -> str:
    op = ins.opcode
    lv = program.levels
    fast = f" fast={ins.fast_bytes}B" if ins.fast_bytes else ""
    if op in (Opcode.MATMUL, Opcode.CONV):
        return f"T={ins.a} K={ins.b} N={ins.c} sets={ins.d} mem={ins.mem_bytes}B{fast}"
    if op == Opcode.VECTOR:
        return f"{VectorOp(ins.subop).op_type} elements={ins.a} window={ins.b} mem={ins.mem_bytes}B{fast}"
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
        f"; plan ISA v{FORMAT_VERSION} program for device {program.device} (profile {program.profile})",
        f"; clocks: device {program.device_clock_hz} Hz, reference {program.reference_clock_hz} Hz; "
        f"streams {program.num_streams}; mxu {program.mxu_rows}x{program.mxu_cols}, "
        f"{program.vector_lanes} lanes, dma latency {program.dma_latency_cycles}"
        + ("; addressed" if program.addressed else ""),
    ]
    for i, lv in enumerate(program.levels):
        main = " (main)" if i == program.main_level else ""
        main += " (fast)" if i == program.fast_level else ""
        lines.append(f"; level {i} {lv.name}: {lv.capacity_bytes} B, {lv.bandwidth_bytes_per_s} B/s{main}")
    for lk in program.links:
        lines.append(f"; link {lk.id} {lk.name}: {lk.bandwidth_bytes_per_s} B/s, latency {lk.latency_cycles}")
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
