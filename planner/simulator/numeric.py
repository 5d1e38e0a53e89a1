"""Numeric mode: replay the binaries' bytes and compute every kernel with numpy.

Where :func:`planner.simulator.replay.simulate` checks *when* things happen, this module
checks *what* the binaries compute: it gives every (device, memory level) one byte array
and executes the instructions of all devices in the record order's points on it. A plan that moves
the wrong bytes (a prefetch too late, an eviction to the wrong place, a portion written
at the wrong address) shows up as wrong values or as NaN. ``docs/memory.md`` is the
reference.

Semantics
---------
memory          one ``uint8`` array per (device, level), sized by the level's used extent
                (the largest ``address + bytes`` of its buffers, not the capacity). In a
                program that is not ``addressed`` (every ``d = 0``), buffers get disjoint
                synthetic addresses in buffer-id order (no reuse, no views).
ALLOC           of a non-preloaded, non-view buffer fills it with poison bytes ``0xFF``
                (a NaN in every float format, -1 in integers), so reading unwritten data
                shows; a preloaded non-view buffer gets ``inputs[name]`` (missing or of the
                wrong size: :class:`~planner.errors.SpecError` naming the buffer); a view
                aliases its parent's bytes (it is an address range) and is left as is.
order           the record order of ``docs/isa.md``: (cycle, phase, device (sorted
                names), record index); a RECV of positive duration acts at its end cycle
                in phase 0 (before the records that start at that cycle), every other
                instruction at its start cycle in phase 1. Each acts at once there.
compute         runs its kernel (:func:`planner.numeric.kernels.evaluate_op`): an operand
                held in ``k`` buffers is the first ``size/k`` bytes of each, concatenated
                along dimension 0; outputs are split the same way. A compute instruction
                without a kernel raises :class:`~planner.errors.UnsupportedError` naming
                the op, before anything runs.
DMA             (memory DMA on the DMA engine) copies its ``c`` bytes from the start of
                its source buffer to the start of its destination.
SEND / RECV     the RECV writes the bytes its SEND read (the SEND's buffers concatenated)
                into its buffers, in order, as one byte stream (up to the shorter length).
capture         the value of every main-level, non-view buffer whose name has neither
                ``@`` nor ``#`` (a whole tensor) is copied when it is freed; one still
                live at HALT is returned as a read-only view of the final memory. A
                buffer that nothing writes whole, and some of whose views nothing writes
                (portions a memory plan keeps in a fast level all their life), does not
                hold its tensor and is not captured.
                Its dtype and shape come from the kernels that use it, else through the
                DMAs and transfers that copy it, else from its views (portions in address
                order), else from ``inputs``; a buffer none of these describe is captured
                as raw ``uint8`` bytes.

Numeric mode assumes binaries that the replay accepts; run :func:`~planner.simulator.simulate`
first (for a valid program, acting at the start in this order equals any interleaving the
replay allows: no write overlaps a read of the same bytes). An instruction naming a buffer
that is never allocated, or an operand that does not fit its buffers, raises
:class:`~planner.simulator.SimulationError`.

Speed: every view, copy and kernel call is prepared once (one pass over each program
collects what the preparation needs); the loop then calls one prepared step per effective
instruction. An ALLOC whose bytes no earlier ALLOC covered gets no step: the arena starts
poisoned, so its fill would change nothing.
"""

from __future__ import annotations

import bisect
import gc
import json
import logging
import math
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Mapping

import numpy as np
from threadpoolctl import ThreadpoolController

from planner.errors import SpecError, UnsupportedError
from planner.isa.binary import decode
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    COMPUTE_OPCODES,
    DMA_STREAM,
    Opcode,
    Program,
)
from planner.numeric.kernels import numpy_dtype, prepare_into, prepare_op
from planner.simulator.replay import SimulationError, view_parents

__all__ = ["POISON_BYTE", "NumericResult", "simulate_numeric", "simulate_numeric_programs"]

logger = logging.getLogger(__name__)

POISON_BYTE = 0xFF  # what an ALLOC writes: NaN in fp16/fp32/fp64/bf16, -1 in integers

_Layout = tuple[str, tuple[int, ...]]  # (IR dtype, shape)
_Key = tuple[str, int]  # (device, buffer id)


@dataclass(frozen=True)
class NumericResult:
    """What numeric mode computed: the captured whole-tensor values and how fast it ran.

    ``values`` maps a buffer name (a tensor name) to its value when freed (or at HALT);
    ``instructions`` counts every instruction of every binary; ``wall_seconds`` covers
    decoding, preparing and executing.

    Examples
    --------
    >>> r = NumericResult({}, 200, 0.001)
    >>> round(r.instructions_per_second)
    200000
    """

    values: dict[str, np.ndarray]
    instructions: int
    wall_seconds: float

    @property
    def instructions_per_second(self) -> float:
        return self.instructions / self.wall_seconds if self.wall_seconds > 0 else math.inf


class _Buffer:
    """A buffer of one program as numeric mode sees it."""

    __slots__ = ("device", "id", "name", "level", "size", "address", "preloaded", "view", "bytes")

    def __init__(self, device: str, bid: int, name: str, level: int, size: int, address: int,
                 preloaded: bool, view: bool) -> None:
        self.device, self.id, self.name = device, bid, name
        self.level, self.size, self.address = level, size, address
        self.preloaded, self.view = preloaded, view
        self.bytes: np.ndarray = np.empty(0, np.uint8)  # its uint8 slice of the arena


_DTYPES: dict[str, np.dtype] = {}


def _np_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of an IR dtype (:func:`planner.numeric.kernels.numpy_dtype`, cached)."""
    dt = _DTYPES.get(dtype)
    if dt is None:
        dt = _DTYPES[dtype] = numpy_dtype(dtype)
    return dt


def _typed(raw: np.ndarray, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """``raw`` (uint8, at least the value's bytes) viewed as ``dtype[shape]``."""
    dt = _np_dtype(dtype)
    n = math.prod(shape) * dt.itemsize
    return raw[:n].view(dt).reshape(shape)


class _Scan:
    """What one pass over a program's instructions collects for numeric mode."""

    __slots__ = ("buffers", "effective", "allocs", "freed", "written", "edges", "sends", "recvs")

    def __init__(self) -> None:
        self.buffers: dict[int, _Buffer] = {}  # every allocated buffer, with its address
        self.effective: list[tuple[int, Any]] = []  # (program index, instruction) of those that act
        self.allocs: list[tuple[int, int, int, int]] = []  # (start, duration, program index, buffer) of ALLOCs
        self.freed: set[int] = set()
        self.written: set[int] = set()  # buffers some instruction writes or the host preloads
        self.edges: list[tuple[int, int]] = []  # (source, destination) of the memory DMAs
        self.sends: dict[int, tuple[int, ...]] = {}  # transfer id -> buffers sent
        self.recvs: dict[int, tuple[int, ...]] = {}  # transfer id -> buffers received into


def _scan(p: Program) -> _Scan:
    """One pass over ``p``: its buffers (synthetic addresses when not addressed), the
    instructions that act, and what :func:`_infer_layouts` needs."""
    out = _Scan()
    bufs, effective, freed, edges, allocs = out.buffers, out.effective, out.freed, out.edges, out.allocs
    written = out.written
    next_free = [0] * len(p.levels)
    # Plain ints: comparing with an enum member looked up per instruction costs more.
    alloc_, free_, dma_, send_, recv_ = (int(Opcode.ALLOC), int(Opcode.FREE), int(Opcode.DMA), int(Opcode.SEND),
                                         int(Opcode.RECV))
    bookkeeping = (int(Opcode.SIGNAL), int(Opcode.WAIT))
    addressed, names = p.addressed, p.buffers
    for i, ins in enumerate(p.instructions):
        code = ins.opcode
        if code in bookkeeping:
            continue
        effective.append((i, ins))
        if code == alloc_:
            allocs.append((ins.start_cycle, ins.duration_cycles, i, ins.a))
            if ins.a in bufs:
                continue
            view = bool(ins.subop & ALLOC_VIEW)
            address = ins.d
            if not addressed:
                if view:
                    raise UnsupportedError(f"numeric mode: view {names[ins.a]!r} on {p.device} needs an "
                                           f"addressed program (its address says where it lies)")
                address = next_free[ins.b]
                next_free[ins.b] += ins.c
            bufs[ins.a] = _Buffer(p.device, ins.a, names[ins.a], ins.b, ins.c, address,
                                  bool(ins.subop & ALLOC_PRELOADED), view)
            if ins.subop & ALLOC_PRELOADED:
                written.add(ins.a)
            continue
        if code == free_:
            freed.add(ins.a)
            continue
        written.update(ins.writes)
        if code == dma_:
            if ins.stream == DMA_STREAM and len(ins.reads) == len(ins.writes) == 1:
                edges.append((ins.reads[0], ins.writes[0]))
        elif code == send_:
            out.sends[ins.c] = ins.reads
        elif code == recv_:
            out.recvs[ins.c] = ins.writes
    return out


def _pristine_allocs(scan: _Scan) -> set[int]:
    """Program indices of the ALLOCs whose bytes no earlier ALLOC (in record order) covered:
    nothing can have written them since the arena was made poisoned, so their fill is a no-op.

    Every write goes to an allocated buffer after its ALLOC (the replay checks that), so a
    range that no earlier ALLOC of any buffer or view of the level overlaps is untouched.
    """
    bufs = scan.buffers
    events = sorted(scan.allocs)  # (start, duration, index): the timeline's (start, end, index) order
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    out: set[int] = set()
    for _, _, i, bid in events:
        buf = bufs[bid]
        lo, hi = buf.address, buf.address + buf.size
        if hi <= lo:
            continue
        ss, es = starts.setdefault(buf.level, []), ends.setdefault(buf.level, [])
        # ss/es: the sorted, disjoint, non-adjacent ranges that earlier ALLOCs covered.
        k = bisect.bisect_right(ss, lo) - 1
        if k >= 0 and es[k] >= hi:  # inside one covered range (the common case once memory is reused)
            continue
        if not ((k >= 0 and es[k] > lo) or (k + 1 < len(ss) and ss[k + 1] < hi)):
            out.add(i)
        # Merge [lo, hi) into the covered ranges.
        first = k if k >= 0 and es[k] >= lo else k + 1
        last = bisect.bisect_left(ss, hi + 1) - 1  # the last range starting at or before hi
        if first <= last:
            lo, hi = min(lo, ss[first]), max(hi, es[last])
        ss[first:last + 1] = [lo]
        es[first:last + 1] = [hi]
    return out


def _buffers(p: Program) -> dict[int, _Buffer]:
    """Every allocated buffer of ``p`` with its address (synthetic when not addressed)."""
    return _scan(p).buffers


def _infer_layouts(programs: Mapping[str, Program], buffers: Mapping[_Key, _Buffer],
                   parents: Mapping[_Key, _Key], inputs: Mapping[str, np.ndarray],
                   scans: Mapping[str, _Scan] | None = None) -> dict[_Key, _Layout]:
    """(dtype, shape) of each buffer: kernel operands, then copies (DMAs, single-buffer
    transfers), then a parent from its portion views, then ``inputs``."""
    layouts: dict[_Key, _Layout] = {}
    edges: dict[_Key, list[_Key]] = {}
    sends: dict[int, tuple[str, tuple[int, ...]]] = {}
    recvs: dict[int, tuple[str, tuple[int, ...]]] = {}
    for dev, p in programs.items():
        for k in p.kernels:
            for o in k.inputs + k.outputs:
                parts = len(o.buffers)
                if not parts or (parts > 1 and (not o.shape or o.shape[0] % parts)):
                    continue
                shape = o.shape if parts == 1 else (o.shape[0] // parts,) + o.shape[1:]
                for b in o.buffers:
                    layouts.setdefault((dev, b), (o.dtype, shape))
        scan = scans[dev] if scans is not None else _scan(p)
        for a, b in scan.edges:
            src, dst = (dev, a), (dev, b)
            edges.setdefault(src, []).append(dst)
            edges.setdefault(dst, []).append(src)
        for tid, reads in scan.sends.items():
            sends[tid] = (dev, reads)
        for tid, writes in scan.recvs.items():
            recvs[tid] = (dev, writes)
    for tid in sorted(set(sends) & set(recvs)):
        (sd, sb), (rd, rb) = sends[tid], recvs[tid]
        if len(sb) == len(rb) == 1:
            edges.setdefault((sd, sb[0]), []).append((rd, rb[0]))
            edges.setdefault((rd, rb[0]), []).append((sd, sb[0]))

    def spread() -> None:
        todo = sorted(k for k in layouts if k in edges)
        while todo:
            key = todo.pop()
            for other in edges.get(key, ()):
                if other not in layouts and other in buffers:
                    layouts[other] = layouts[key]
                    todo.append(other)

    spread()
    views: dict[_Key, list[_Key]] = {}
    for view, parent in sorted(parents.items()):
        views.setdefault(parent, []).append(view)
    for parent in sorted(views):
        if parent in layouts:
            continue
        parts = sorted(views[parent], key=lambda k: buffers[k].address)
        if any(v not in layouts for v in parts):
            continue
        dtypes = {layouts[v][0] for v in parts}
        tails = {layouts[v][1][1:] for v in parts}
        if len(dtypes) != 1 or len(tails) != 1 or any(not layouts[v][1] for v in parts):
            continue
        dtype, tail = dtypes.pop(), tails.pop()
        try:
            item = _np_dtype(dtype).itemsize
        except UnsupportedError:
            continue
        at = buffers[parent].address
        for v in parts:
            if buffers[v].address != at:
                break
            at += math.prod(layouts[v][1]) * item
        else:
            layouts[parent] = (dtype, (sum(layouts[v][1][0] for v in parts),) + tail)
    spread()
    for key, buf in buffers.items():
        if key not in layouts and buf.preloaded and buf.name in inputs:
            value = np.asarray(inputs[buf.name])
            for dtype in ("fp32", "fp16", "fp64"):
                if value.dtype == _np_dtype(dtype):
                    layouts[key] = (dtype, tuple(value.shape))
    return layouts


class _Views:
    """Typed numpy views of buffers, made once per (buffer, dtype, shape)."""

    def __init__(self) -> None:
        self.cache: dict[tuple[int, str, tuple[int, ...]], np.ndarray] = {}
        self.attrs: dict[str, Any] = {}
        self.prepared: dict[tuple, Callable[[Any], list[np.ndarray]]] = {}

    def of(self, buf: _Buffer, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        """``buf``'s first bytes as ``dtype[shape]`` (the caller checked that they fit)."""
        key = (id(buf), dtype, shape)
        view = self.cache.get(key)
        if view is None:
            view = self.cache[key] = np.ndarray(shape, _np_dtype(dtype), buf.bytes)
        return view

    def whole(self, operands: Any, buffers: Mapping[int, _Buffer]) -> list[np.ndarray] | None:
        """The views of operands that are each one whole buffer that holds them, else None
        (then :meth:`operand` makes the views or reports what is wrong)."""
        out = []
        cache = self.cache
        for o in operands:
            bids = o.buffers
            if len(bids) != 1:
                return None
            buf = buffers.get(bids[0])
            if buf is None:
                return None
            shape = o.shape
            key = (id(buf), o.dtype, shape)
            view = cache.get(key)
            if view is None:
                dt = _DTYPES.get(o.dtype)
                if dt is None:
                    return None
                if math.prod(shape) * dt.itemsize > buf.size:
                    return None
                view = cache[key] = np.ndarray(shape, dt, buf.bytes)
            out.append(view)
        return out

    def operand(self, o: Any, buffers: Mapping[int, _Buffer], where: str) -> list[np.ndarray]:
        """The views of the buffers holding one operand (one per portion, equal rows each)."""
        if len(o.buffers) == 1:  # fast path: a whole operand whose view was checked and made before
            buf = buffers.get(o.buffers[0])
            if buf is not None:
                view = self.cache.get((id(buf), o.dtype, o.shape))
                if view is not None:
                    return [view]
        parts = len(o.buffers)
        if parts == 0:
            raise SimulationError(f"numeric mode: {where} has an operand in no buffer")
        if parts > 1 and (not o.shape or o.shape[0] % parts):
            raise SimulationError(f"numeric mode: {where}: shape {o.shape} does not split in {parts} portions")
        shape = o.shape if parts == 1 else (o.shape[0] // parts,) + o.shape[1:]
        out = []
        for b in o.buffers:
            buf = buffers.get(b)
            if buf is None:
                raise SimulationError(f"numeric mode: {where} uses buffer {b}, which is never allocated")
            need = math.prod(shape) * _np_dtype(o.dtype).itemsize
            if need > buf.size:
                raise SimulationError(f"numeric mode: {where}: buffer {buf.name!r} holds {buf.size} bytes, "
                                      f"its part of the operand needs {need}")
            out.append(self.of(buf, o.dtype, shape))
        return out

    def kernel_step(self, kernel: Any, buffers: Mapping[int, _Buffer], where: str) -> Callable[[], None]:
        """The step that runs ``kernel`` on its buffers' current bytes (the op checked once here)."""
        attrs = self.attrs.get(kernel.attrs_json)
        if attrs is None:
            attrs = self.attrs[kernel.attrs_json] = json.loads(kernel.attrs_json) if kernel.attrs_json else {}
        whole = self.whole(kernel.inputs, buffers)
        if whole is not None:
            outputs = self.whole(kernel.outputs, buffers)
            if outputs is not None:
                # The common case, whole operands: the kernel writes straight into the output views.
                return prepare_into(kernel.type, attrs, whole, outputs)
        ins = [self.operand(o, buffers, where) for o in kernel.inputs]
        outs = [self.operand(o, buffers, where) for o in kernel.outputs]
        key = (kernel.type, kernel.attrs_json, tuple((o.shape, o.dtype) for o in kernel.outputs))
        compute = self.prepared.get(key)
        if compute is None:  # ops of one type, attributes and output shapes share one checked kernel
            compute = self.prepared[key] = prepare_op(kernel.type, attrs, [o.shape for o in kernel.outputs],
                                                      [o.dtype for o in kernel.outputs])

        def run() -> None:
            values = [v[0] if len(v) == 1 else np.concatenate(v) for v in ins]
            for views, r in zip(outs, compute(values)):
                if len(views) == 1:
                    views[0][...] = r
                else:
                    for t, part in zip(views, np.split(r, len(views))):
                        t[...] = part

        return run


def _store(values: dict[str, np.ndarray], name: str, view: np.ndarray) -> None:
    values[name] = view.copy()


def _stream_into(targets: list[np.ndarray], payload: np.ndarray) -> None:
    at = 0
    for t in targets:
        n = min(t.size, payload.size - at)
        if n <= 0:
            break
        t[:n] = payload[at:at + n]
        at += n


def simulate_numeric_programs(programs: Mapping[str, Program], inputs: Mapping[str, np.ndarray]) -> NumericResult:
    """Numeric mode on decoded programs (see :func:`simulate_numeric`; ``wall_seconds``
    then excludes decoding).

    Examples
    --------
    >>> import numpy as np
    >>> from planner.isa.instructions import (ALLOC_PRELOADED, Instruction, Kernel, LevelInfo, Opcode,
    ...                                       Operand, Program)
    >>> ins = (Instruction(Opcode.ALLOC, 0, 0, 0, subop=ALLOC_PRELOADED, a=0, c=16, d=0),
    ...        Instruction(Opcode.ALLOC, 0, 0, 0, a=1, c=16, d=64),
    ...        Instruction(Opcode.VECTOR, 0, 0, 1, op="r", subop=3, a=4, b=1, mem_bytes=32,
    ...                    reads=(0,), writes=(1,)),
    ...        Instruction(Opcode.FREE, 0, 1, 0, a=1, c=16, d=64), Instruction(Opcode.HALT, 0, 1, 0))
    >>> k = Kernel("r", "relu", "{}", (Operand((4,), "fp32", (0,)),), (Operand((4,), "fp32", (1,)),))
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),), 0,
    ...             (), 1, ("x", "y"), ins, kernels=(k,), addressed=True)
    >>> r = simulate_numeric_programs({"d0": p}, {"x": np.array([-1, 2, -3, 4], np.float32)})
    >>> r.values["y"], r.instructions
    (array([0., 2., 0., 4.], dtype=float32), 5)
    """
    return _run(programs, inputs, time.perf_counter())


def _run(programs: Mapping[str, Program], inputs: Mapping[str, np.ndarray], t0: float) -> NumericResult:
    # Kernels are small: a multi-threaded BLAS spends more on waking threads than on the
    # arithmetic (100x slower on a busy 2-core machine), so replay on one BLAS thread.
    # The replay allocates many small, short-lived objects (views, closures) and no cycles:
    # the cyclic garbage collector would only rescan them (measured: 1.3-2x slower, and erratic).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with _blas_controller().limit(limits=1, user_api="blas"):
            return _run_single_threaded(programs, inputs, t0)
    finally:
        if collecting:
            gc.enable()


_CONTROLLER: list[Any] = []


def _blas_controller() -> Any:
    """One threadpoolctl controller per process: inspecting the loaded libraries costs ~1 ms."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def _run_single_threaded(programs: Mapping[str, Program], inputs: Mapping[str, np.ndarray],
                         t0: float) -> NumericResult:
    """Scan the programs, lay their buffers out in poisoned arenas, check the host's inputs,
    build one step per effective record, then run the steps in order."""
    devices = sorted(programs)
    scans = {dev: _scan(programs[dev]) for dev in devices}
    buffers = {(dev, bid): buf for dev in devices for bid, buf in scans[dev].buffers.items()}
    parents = _view_parents(programs, scans)
    layouts = _infer_layouts(programs, buffers, parents, inputs, scans)
    for dev in devices:
        _place_in_arenas(programs[dev], scans[dev].buffers)
    steps, values, count = _Steps(programs, scans, layouts, _preloads(buffers, inputs, layouts), parents).build()
    t1 = time.perf_counter()
    with np.errstate(all="ignore"):
        for step in steps:
            step()
    wall = time.perf_counter() - t0
    logger.info("numeric mode: %d instructions (%d steps) in %.3f s (%.3f s executing)", count, len(steps),
                wall, wall - (t1 - t0))
    return NumericResult(dict(sorted(values.items())), count, wall)


def _view_parents(programs: Mapping[str, Program], scans: Mapping[str, _Scan]) -> dict[_Key, _Key]:
    """Each view's parent buffer, across devices (only addressed programs have views)."""
    parents: dict[_Key, _Key] = {}
    for dev, scan in scans.items():
        p = programs[dev]
        if p.addressed and any(b.view for b in scan.buffers.values()):
            parents.update({(dev, v): (dev, par) for v, par in view_parents(p).items()})
    return parents


def _partly_written(scans: Mapping[str, _Scan], parents: Mapping[_Key, _Key]) -> set[_Key]:
    """Buffers nothing writes whole, only some of their views: a memory plan can keep some
    portions of a tensor in a fast level for their whole life, so the tensor's buffer in main
    memory never holds those portions, and its bytes are not the tensor's value."""
    views: dict[_Key, list[_Key]] = {}
    for view, parent in parents.items():
        views.setdefault(parent, []).append(view)
    return {parent for parent, parts in views.items()
            if parent[1] not in scans[parent[0]].written
            and any(v[1] not in scans[v[0]].written for v in parts)}


def _place_in_arenas(p: Program, bufs: Mapping[int, _Buffer]) -> None:
    """One arena per level of ``p``, sized by its used extent and poisoned; each buffer's bytes a slice of it."""
    extent = [0] * len(p.levels)
    for buf in bufs.values():
        extent[buf.level] = max(extent[buf.level], buf.address + buf.size)
    arenas = [np.full(n, POISON_BYTE, np.uint8) for n in extent]
    for buf in bufs.values():
        buf.bytes = arenas[buf.level][buf.address:buf.address + buf.size]


def _preloads(buffers: Mapping[_Key, _Buffer], inputs: Mapping[str, np.ndarray],
              layouts: Mapping[_Key, _Layout]) -> dict[_Key, np.ndarray]:
    """The raw bytes the host fills each preloaded buffer with, validated before anything runs."""
    preload: dict[_Key, np.ndarray] = {}
    for key in sorted(buffers):
        buf = buffers[key]
        if not buf.preloaded or buf.view:
            continue
        if buf.name not in inputs:
            raise SpecError(f"numeric mode: no input value for preloaded buffer {buf.name!r} on {buf.device}")
        value = np.asarray(inputs[buf.name])
        layout = layouts.get(key)
        if layout is not None:
            dtype, shape = layout
            value = value.astype(_np_dtype(dtype), copy=False)
            if value.size != math.prod(shape):
                raise SpecError(f"numeric mode: input {buf.name!r} has shape {tuple(value.shape)}, buffer "
                                f"{buf.name!r} on {buf.device} holds {dtype}{list(shape)}")
        raw = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        if raw.size > buf.size:
            raise SpecError(f"numeric mode: input {buf.name!r} has {raw.size} bytes, buffer {buf.name!r} on "
                            f"{buf.device} holds {buf.size}")
        preload[key] = raw
    return preload


# Plain ints: comparing with Opcode members looked up on the enum class costs more.
_ALLOC, _FREE, _HALT, _DMA, _SEND, _RECV = (int(Opcode.ALLOC), int(Opcode.FREE), int(Opcode.HALT), int(Opcode.DMA),
                                            int(Opcode.SEND), int(Opcode.RECV))
_COMPUTE = frozenset(int(c) for c in COMPUTE_OPCODES)


class _Steps:
    """The replay's steps, one per record that acts, in the order the records act; and the
    values the steps capture (graph tensors in main memory, at their FREE or the HALT)."""

    def __init__(self, programs: Mapping[str, Program], scans: Mapping[str, _Scan],
                 layouts: Mapping[_Key, _Layout], preload: Mapping[_Key, np.ndarray],
                 parents: Mapping[_Key, _Key]) -> None:
        self.programs, self.scans, self.layouts, self.preload = programs, scans, layouts, preload
        self.partial = _partly_written(scans, parents)
        self.devices = sorted(programs)
        self.values: dict[str, np.ndarray] = {}
        self.views = _Views()
        self.pending: dict[int, np.ndarray] = {}  # transfer id -> bytes sent, until received
        self.send_parts: dict[int, list[np.ndarray]] = {}
        for dev in self.devices:
            bufs = scans[dev].buffers
            for tid, reads in scans[dev].sends.items():
                self.send_parts[tid] = [bufs[b].bytes for b in reads if b in bufs]  # else: the replay reports it

    def build(self) -> tuple[list[Callable[[], None]], dict[str, np.ndarray], int]:
        """(steps in order, the dictionary they capture values into, instructions counted).

        Instructions without an effect (SIGNAL, WAIT, ALLOC of a view or of untouched bytes,
        FREE of an uncaptured buffer) are counted, not stepped.
        """
        pristine = {(d, i) for d, dev in enumerate(self.devices) for i in _pristine_allocs(self.scans[dev])}
        keyed: list[tuple[int, int, int, int, Callable[[], None]]] = []
        count = 0
        for d, dev in enumerate(self.devices):
            p = self.programs[dev]
            bufs = self.scans[dev].buffers
            kernels = {k.op: k for k in p.kernels}
            count += len(p.instructions)
            for i, ins in self.scans[dev].effective:  # SIGNAL and WAIT have no effect here
                code = ins.opcode
                if code == _ALLOC:
                    step = self._alloc(bufs[ins.a], dev, ins, (d, i) in pristine)
                elif code in _COMPUTE and not (code == _DMA and ins.stream == DMA_STREAM):  # not a memory DMA
                    step = self._compute(kernels.get(ins.op), bufs, dev, ins)
                else:
                    step = self._other(p, bufs, dev, ins)
                if step is None:
                    continue
                if code == _RECV and ins.duration_cycles > 0:  # its bytes arrive at its end, before that cycle's
                    keyed.append((ins.end_cycle, 0, d, i, step))  # records
                else:  # everything else acts at its place in the record order of its start cycle
                    keyed.append((ins.start_cycle, 1, d, i, step))
        keyed.sort()  # (cycle, phase, device, index) is unique: the steps themselves are never compared
        return [k[4] for k in keyed], self.values, count

    def _alloc(self, buf: _Buffer, dev: str, ins: Any, pristine: bool) -> Callable[[], None] | None:
        """An ALLOC poisons its bytes (the host's input for a preloaded buffer); none for a view
        or bytes nothing wrote since the arena was poisoned."""
        if buf.view:
            return None
        raw = buf.bytes
        if buf.preloaded:
            def load(raw: np.ndarray = raw, data: np.ndarray = self.preload[(dev, ins.a)]) -> None:
                raw[:data.size] = data
                raw[data.size:] = POISON_BYTE

            return load
        if pristine:
            return None
        return partial(raw.fill, POISON_BYTE)

    def _compute(self, kernel: Any, bufs: Mapping[int, _Buffer], dev: str, ins: Any) -> Callable[[], None]:
        if kernel is None:
            raise UnsupportedError(f"numeric mode cannot run op {ins.op!r} ({ins.opcode.name} on {dev}): its "
                                   f"binary has no kernel for it (task ops have no arithmetic meaning)")
        return self.views.kernel_step(kernel, bufs, f"op {ins.op!r} on {dev}")

    def _other(self, p: Program, bufs: Mapping[int, _Buffer], dev: str, ins: Any) -> Callable[[], None] | None:
        """FREE and HALT capture values; a memory DMA copies; SEND and RECV move a transfer's bytes."""
        code = ins.opcode
        if code == _FREE:
            buf = bufs.get(ins.a)
            if buf is None or not _captured(p, buf) or (dev, ins.a) in self.partial:
                return None
            return self._capturer(buf, self.layouts.get((dev, ins.a)))
        if code == _HALT:
            freed = self.scans[dev].freed
            halt = [self._capturer(bufs[b], self.layouts.get((dev, b)), at_halt=True) for b in sorted(bufs)
                    if b not in freed and _captured(p, bufs[b]) and (dev, b) not in self.partial]

            def capture_all() -> None:
                for capture in halt:
                    capture()

            return capture_all
        if code == _DMA and ins.stream == DMA_STREAM:
            if len(ins.reads) != 1 or len(ins.writes) != 1:
                raise SimulationError(f"numeric mode: DMA {ins.op!r} on {dev} must read one buffer and write one")
            src = _buffer(bufs, ins.reads[0], dev, ins).bytes[:ins.c]
            dst = _buffer(bufs, ins.writes[0], dev, ins).bytes[:ins.c]
            n = min(src.size, dst.size)
            return partial(np.copyto, dst[:n], src[:n])
        if code == _SEND:
            def send(tid: int = ins.c) -> None:
                self.pending[tid] = self._payload(tid)

            return send
        if code == _RECV:
            def receive(tid: int = ins.c,
                        targets: list[np.ndarray] = [_buffer(bufs, b, dev, ins).bytes for b in ins.writes]) -> None:
                payload = self.pending.pop(tid, None)
                # None: a zero-duration transfer (no bytes) whose SEND's device sorts later.
                _stream_into(targets, self._payload(tid) if payload is None else payload)

            return receive
        return None

    def _payload(self, tid: int) -> np.ndarray:
        parts = self.send_parts.get(tid, [])
        return np.concatenate(parts) if parts else np.empty(0, np.uint8)

    def _capturer(self, buf: _Buffer, layout: _Layout | None, *, at_halt: bool = False) -> Callable[[], None]:
        """A step that stores ``buf``'s value (typed by its layout when numpy can hold it)."""
        view = buf.bytes
        if layout is not None:
            try:
                if math.prod(layout[1]) * _np_dtype(layout[0]).itemsize <= view.size:
                    view = self.views.of(buf, layout[0], layout[1])
            except UnsupportedError:
                pass  # a dtype numpy cannot hold: keep the raw bytes
        if at_halt:  # nothing writes this device's memory after its HALT: a read-only view will do
            view = view.view()
            view.flags.writeable = False
            return partial(self.values.__setitem__, buf.name, view)
        return partial(_store, self.values, buf.name, view)


def _captured(p: Program, buf: _Buffer) -> bool:
    """Whether ``buf`` holds a graph tensor whole in main memory (not a copy, portion or view)."""
    return buf.level == p.main_level and not buf.view and "@" not in buf.name and "#" not in buf.name


def _buffer(bufs: Mapping[int, _Buffer], bid: int, dev: str, ins: Any) -> _Buffer:
    buf = bufs.get(bid)
    if buf is None:
        raise SimulationError(f"numeric mode: {ins.opcode.name} {ins.op!r} on {dev} uses buffer {bid}, "
                              f"which is never allocated")
    return buf


def simulate_numeric(binaries: Mapping[str, bytes], inputs: Mapping[str, np.ndarray]) -> NumericResult:
    """Decode one binary per device and replay their numbers (see the module docstring).

    Parameters
    ----------
    binaries
        The ``.bin`` contents keyed by device name.
    inputs
        A value for every preloaded buffer (weights and graph inputs, by tensor name),
        e.g. :func:`planner.numeric.reference.random_inputs`.

    Returns
    -------
    NumericResult
        ``values``: every whole-tensor buffer of a main level, by name.

    Raises
    ------
    BinaryFormatError
        A malformed binary.
    UnsupportedError
        A compute instruction without a kernel, or a dtype numeric mode cannot compute.
    SpecError
        A preloaded buffer without a value in ``inputs``, or with one of the wrong size.

    Examples
    --------
    >>> import numpy as np
    >>> from planner.isa.binary import encode
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),), 0,
    ...             (), 1, (), (Instruction(Opcode.TASK, 0, 0, 5, op="t", a=5), Instruction(Opcode.HALT, 0, 5, 0)))
    >>> simulate_numeric({"d0": encode(p)}, {})
    Traceback (most recent call last):
    ...
    planner.errors.UnsupportedError: numeric mode cannot run op 't' (TASK on d0): its binary has no kernel for it (task ops have no arithmetic meaning)
    """
    t0 = time.perf_counter()
    programs = {name: decode(data, name=name) for name, data in sorted(binaries.items())}
    return _run(programs, inputs, t0)
