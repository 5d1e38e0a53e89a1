"""The plan as a Chrome Trace Event file (opens in Perfetto and chrome://tracing).

One process per device, with a thread per stream and one for its DMA engine (memory
prefetches and evictions), and counter tracks of the bytes in use per memory level; one
process ``links`` with a thread per link. Flow arrows follow each tensor from its producer
op through its transfer to its consumer op, and from a DMA's trigger op through the DMA to
the op it releases. Each op's args give its model, MACs, bytes per memory level and the
index of its instruction in its device's binary. Times in microseconds of the plan's
reference clock; the same plan and files always give the same bytes (the verifier renders
it from the verified plan directory and compares).
"""

from __future__ import annotations

from typing import Any, Mapping

from planner import json_text
from planner.instances import base_op_name
from planner.isa.instructions import COMPUTE_OPCODES, DMA_STREAM
from planner.plan import Plan

__all__ = ["trace_events", "trace_document", "trace_json", "DMA_TID"]

DMA_TID = 1000  # the DMA engine's thread in its device's process (after any stream)


def _us(cycles: int, clock_hz: int) -> float:
    return cycles * 1_000_000 / clock_hz


def _metadata(plan: Plan, device_names: list[str], link_names: list[str],
              dmas: Mapping[str, list[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Process and thread names (and their order) for every track."""
    events: list[dict[str, Any]] = []
    streams: dict[str, set[int]] = {name: set() for name in device_names}
    for op in plan.ops:
        streams[op.device].add(op.stream)
    for pid, name in enumerate(device_names, start=1):
        events += [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
                   {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
        for s in sorted(streams[name]):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": s, "args": {"name": f"stream {s}"}})
        if dmas.get(name):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": DMA_TID,
                           "args": {"name": "DMA engine"}})
    if link_names:
        pid = len(device_names) + 1
        events += [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "links"}},
                   {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
        for i, name in enumerate(link_names):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": i, "args": {"name": name}})
    return events


def _instruction_index(programs: Mapping[str, Any]) -> dict[str, int]:
    """Op (instance) name -> the index of its compute instruction in its device's binary."""
    index: dict[str, int] = {}
    for program in programs.values():
        for i, ins in enumerate(program.instructions):
            if ins.opcode in COMPUTE_OPCODES and ins.stream != DMA_STREAM and ins.op:
                index.setdefault(ins.op, i)
    return index


def _op_bytes(plan: Plan, programs: Mapping[str, Any], memory: Mapping[str, Any] | None) -> dict[str, dict[str, int]]:
    """Op (instance) name -> bytes it reads and writes per memory level.

    From memory.json's accesses where the device is memory-planned, else everything the op
    reads and writes is in its device's main level.
    """
    out: dict[str, dict[str, int]] = {}
    for device, dp in sorted(((memory or {}).get("devices") or {}).items()):
        for access in dp.get("accesses", ()):
            out[access["instance"]] = {dp["fast_level"]: access["fast_bytes"], dp["slow_level"]: access["slow_bytes"]}
            for level, moved in (access.get("level_bytes") or {}).items():  # a plan over every level
                if moved and level not in (dp["fast_level"], dp["slow_level"]):
                    out[access["instance"]][level] = moved
    ops = plan.resources.get("ops") or {}
    for op in plan.ops:
        program, info = programs.get(op.device), ops.get(base_op_name(op.name))
        if op.name not in out and program is not None and info is not None:
            out[op.name] = {program.levels[program.main_level].name: info["bytes_read"] + info["bytes_written"]}
    return out


def _op_events(plan: Plan, pid_of: Mapping[str, int], programs: Mapping[str, Any],
               memory: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    resources = plan.resources.get("ops") or {}
    index, per_level = _instruction_index(programs), _op_bytes(plan, programs, memory)
    events = []
    for op in sorted(plan.ops, key=lambda o: (o.start_cycle, o.device, o.stream, o.name)):
        args: dict[str, Any] = {"start_cycle": op.start_cycle, "duration_cycles": op.duration_cycles}
        info = resources.get(base_op_name(op.name))
        if info is not None and base_op_name(op.name) == op.name:
            args.update(model=info["model"], macs=info["macs"], flops=info["flops"])
        elif info is not None:  # a portion of a split op: the figures are the whole op's
            args.update(model=info["model"], graph_op=base_op_name(op.name), graph_op_macs=info["macs"],
                        graph_op_flops=info["flops"])
        if op.name in per_level:
            args["bytes_by_level"] = per_level[op.name]
        if op.name in index:
            args["instruction_index"] = index[op.name]
        events.append({"ph": "X", "name": op.name, "cat": "op", "pid": pid_of[op.device], "tid": op.stream,
                       "ts": _us(op.start_cycle, plan.clock_hz), "dur": _us(op.duration_cycles, plan.clock_hz),
                       "args": args})
    return events


def _transfer_events(plan: Plan, links_pid: int, link_names: list[str]) -> list[dict[str, Any]]:
    link_tid = {name: i for i, name in enumerate(link_names)}
    return [{"ph": "X", "name": f"{t.src_op} -> {t.dst_op}", "cat": "transfer", "pid": links_pid,
             "tid": link_tid[t.link], "ts": _us(t.start_cycle, plan.clock_hz),
             "dur": _us(t.duration_cycles, plan.clock_hz),
             "args": {"bytes": t.size_bytes, "from": t.src_device, "to": t.dst_device, "tensors": list(t.tensors),
                      "start_cycle": t.start_cycle, "duration_cycles": t.duration_cycles}}
            for t in plan.transfers if t.duration_cycles > 0]


def _dma_events(plan: Plan, pid_of: Mapping[str, int], dmas: Mapping[str, list[Mapping[str, Any]]]):
    return [{"ph": "X", "name": f"{t['kind']} {t['tensor']}", "cat": "dma", "pid": pid_of[device], "tid": DMA_TID,
             "ts": _us(t["start_cycle"], plan.clock_hz), "dur": _us(t["end_cycle"] - t["start_cycle"], plan.clock_hz),
             "args": {"kind": t["kind"], "tensor": t["tensor"], "bytes": t["size_bytes"], "from": t["src_buffer"],
                      "to": t["dst_buffer"], "start_cycle": t["start_cycle"], "end_cycle": t["end_cycle"]}}
            for device, transfers in dmas.items() for t in transfers]


def _counter_events(plan: Plan, pid_of: Mapping[str, int], allocation: Mapping[str, Any] | None):
    """Per device and level, the bytes allocated (views not counted) at each change, from allocation.json."""
    events = []
    for device, info in sorted(((allocation or {}).get("devices") or {}).items()):
        for level in info.get("memory") or {}:
            delta: dict[int, int] = {}
            for b in info.get("buffers") or ():
                if b["level"] == level and not b.get("view"):
                    delta[b["start_cycle"]] = delta.get(b["start_cycle"], 0) + b["size_bytes"]
                    delta[b["end_cycle"]] = delta.get(b["end_cycle"], 0) - b["size_bytes"]
            live = 0
            for cycle in sorted(delta):
                live += delta[cycle]
                events.append({"ph": "C", "name": f"{level} in use (bytes)", "pid": pid_of[device], "tid": 0,
                               "ts": _us(cycle, plan.clock_hz), "args": {"bytes": live}})
    return events


def _flow(flow_id: int, name: str, steps: list[tuple[int, int, float]]) -> list[dict[str, Any]]:
    """A flow through the slices at ``(pid, tid, ts)``: start, steps, finish (bound to its enclosing slice)."""
    out = []
    for i, (pid, tid, ts) in enumerate(steps):
        ph = "s" if i == 0 else "f" if i == len(steps) - 1 else "t"
        event = {"ph": ph, "id": flow_id, "name": name, "cat": "flow", "pid": pid, "tid": tid, "ts": ts}
        if ph == "f":
            event["bp"] = "e"
        out.append(event)
    return out


def _flow_events(plan: Plan, pid_of: Mapping[str, int], links_pid: int, link_names: list[str],
                 dmas: Mapping[str, list[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Producer op -> transfer -> consumer op, and trigger op -> DMA -> released op."""
    ops = {o.name: o for o in plan.ops}
    link_tid = {name: i for i, name in enumerate(link_names)}
    events: list[dict[str, Any]] = []

    def at(name: str) -> tuple[int, int, float]:
        o = ops[name]
        return pid_of[o.device], o.stream, _us(o.start_cycle, plan.clock_hz)

    for t in plan.transfers:
        if t.src_op in ops and t.dst_op in ops:
            middle = [(links_pid, link_tid[t.link], _us(t.start_cycle, plan.clock_hz))] if t.duration_cycles else []
            events += _flow(len(events) + 1, "tensor", [at(t.src_op), *middle, at(t.dst_op)])
    for device, transfers in dmas.items():
        for t in transfers:
            if t["trigger_op"] in ops and t["release_op"] in ops:
                events += _flow(len(events) + 1, "dma", [at(t["trigger_op"]),
                                                         (pid_of[device], DMA_TID, _us(t["start_cycle"], plan.clock_hz)),
                                                         at(t["release_op"])])
    return events


def trace_events(plan: Plan, device_names: list[str], link_names: list[str], *,
                 programs: Mapping[str, Any] | None = None, allocation: Mapping[str, Any] | None = None, memory: Mapping[str, Any] | None = None):
    """Metadata naming the tracks, then complete events (ops, transfers, DMAs), memory counters and flows.

    ``programs`` (device -> decoded binary) gives the instruction indices and main levels,
    ``allocation`` (allocation.json) the memory counters, ``memory`` (memory.json) the DMAs
    and the bytes per level of memory-planned ops; each may be left out.

    Examples
    --------
    >>> from planner.plan import PlacedOp
    >>> p = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 1_000_000_000,
    ...          (PlacedOp("a", "d0", 0, 0, 5),), ())
    >>> [e["ph"] for e in trace_events(p, ["d0"], [])]
    ['M', 'M', 'M', 'X']
    >>> trace_events(p, ["d0"], [])[-1]["dur"]
    0.005
    """
    pid_of = {name: i + 1 for i, name in enumerate(device_names)}
    links_pid = len(device_names) + 1
    programs = programs or {}
    dmas = {name: list(dp.get("transfers", ())) for name, dp in sorted(((memory or {}).get("devices") or {}).items())}
    return [*_metadata(plan, device_names, link_names, dmas), *_op_events(plan, pid_of, programs, memory),
            *_transfer_events(plan, links_pid, link_names), *_dma_events(plan, pid_of, dmas),
            *_counter_events(plan, pid_of, allocation), *_flow_events(plan, pid_of, links_pid, link_names, dmas)]


def trace_document(plan: Plan, device_names: list[str], link_names: list[str], **files: Any) -> dict[str, Any]:
    """``{"traceEvents": [...], "displayTimeUnit": "ns"}`` (``files``: as :func:`trace_events` takes them)."""
    return {"traceEvents": trace_events(plan, device_names, link_names, **files), "displayTimeUnit": "ns"}


def trace_json(plan: Plan, device_names: list[str], link_names: list[str], **files: Any) -> str:
    """``trace.json``'s text: the same plan and files always give the same bytes (the verifier renders it
    from the verified plan directory and compares).

    Examples
    --------
    >>> p = Plan("s", "latency", "OPTIMAL", 0, 0, 0.0, 0, 10**9, (), ())
    >>> trace_json(p, ["d0"], []).splitlines()[0]
    '{'
    """
    return json_text.dumps(trace_document(plan, device_names, link_names, **files), indent=2) + "\n"
