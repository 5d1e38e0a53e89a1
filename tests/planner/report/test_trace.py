"""trace.json against the Chrome Trace Event format, and its tracks, counters, flows and args against the files.

The format checks follow the Trace Event Format document (the JSON Object Format): an object
with a ``traceEvents`` array and an optional ``displayTimeUnit`` of "ms" or "ns"; every event
has a one-letter ``ph``, integer ``pid`` and ``tid``; complete events (``X``) a ``ts`` and a
``dur`` in microseconds; counter events (``C``) numeric ``args`` (one series per key);
metadata (``M``) one of the named kinds with its argument; flow events (``s``/``t``/``f``)
an ``id``, ``cat`` and ``name`` shared by one start and one finish, steps in time order,
each inside a slice of its thread (``bp: "e"``: the finish binds to its enclosing slice).
"""

from __future__ import annotations

import json
from collections import defaultdict
from numbers import Real
from pathlib import Path

from planner.isa.binary import decode
from planner.plan import PlacedOp, PlacedTransfer, Plan
from planner.report.trace import DMA_TID, trace_document

METADATA = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
            "thread_sort_index": "sort_index"}


def check_trace_format(doc: dict) -> None:
    """Raise AssertionError where ``doc`` breaks the Trace Event Format."""
    assert set(doc) <= {"traceEvents", "displayTimeUnit", "otherData"} and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    named = set()
    slices = defaultdict(list)
    flows = defaultdict(list)
    for e in doc["traceEvents"]:
        assert isinstance(e["ph"], str) and len(e["ph"]) == 1, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str), e
        if e["ph"] == "M":
            assert e["name"] in METADATA and METADATA[e["name"]] in e["args"], e
            named.add((e["pid"], e["tid"] if e["name"].startswith("thread") else None))
        elif e["ph"] == "X":
            assert isinstance(e["ts"], Real) and isinstance(e["dur"], Real) and e["dur"] >= 0 and e["ts"] >= 0, e
            slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
        elif e["ph"] == "C":
            assert isinstance(e["ts"], Real) and e["args"], e
            assert all(isinstance(v, Real) and not isinstance(v, bool) for v in e["args"].values()), e
        elif e["ph"] in "stf":
            assert isinstance(e["id"], int) and isinstance(e["cat"], str) and isinstance(e["ts"], Real), e
            flows[(e["id"], e["cat"], e["name"])].append(e)
        else:
            raise AssertionError(f"phase {e['ph']!r} is not written by the planner: {e}")
    for pid, tid in slices:  # every track with slices is named: its process and its thread
        assert (pid, None) in named and (pid, tid) in named, (pid, tid)
    for key, steps in flows.items():
        phases = [s["ph"] for s in steps]
        assert phases[0] == "s" and phases[-1] == "f" and set(phases[1:-1]) <= {"t"}, (key, phases)
        assert phases.count("s") == phases.count("f") == 1, key
        assert [s["ts"] for s in steps] == sorted(s["ts"] for s in steps), key
        assert steps[-1].get("bp") == "e", key
        for s in steps:  # each step binds to a slice of its thread that encloses it
            assert any(a <= s["ts"] <= b for a, b in slices[(s["pid"], s["tid"])]), (key, s)


def _plan() -> Plan:
    ops = (PlacedOp("a", "d0", 0, 0, 10), PlacedOp("b", "d1", 0, 30, 5), PlacedOp("c", "d0", 1, 10, 4))
    transfers = (PlacedTransfer("a", "b", ("t",), 64, "d0", "d1", "l0", 10, 20),
                 PlacedTransfer("a", "c", ("t",), 64, "d0", "d0", "l0", 10, 0))
    return Plan("s", "latency", "OPTIMAL", 35, 35, 0.0, 35, 2 * 10**9, ops, transfers)


def test_a_hand_built_plan_gives_a_well_formed_trace_in_microseconds():
    doc = trace_document(_plan(), ["d0", "d1"], ["l0"])
    check_trace_format(doc)
    ops = {e["name"]: e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "op"}
    assert (ops["b"]["ts"], ops["b"]["dur"]) == (0.015, 0.0025)  # 30 and 5 cycles of a 2 GHz clock, in µs
    flows = [(e["id"], e["ph"], e["pid"], e["tid"]) for e in doc["traceEvents"] if e.get("cat") == "flow"]
    # a -> (link l0) -> b, and a -> c directly (a zero-time transfer on one device has no slice)
    assert [(ph, pid, tid) for _, ph, pid, tid in flows] == [("s", 1, 0), ("t", 3, 0), ("f", 2, 0),
                                                               ("s", 1, 0), ("f", 1, 1)]


def test_the_format_check_refuses_broken_traces():
    doc = trace_document(_plan(), ["d0", "d1"], ["l0"])
    for breaking in (lambda e: e.update(id=99) if e["ph"] == "f" else None,  # a flow that never finishes
                     lambda e: e.update(tid=7) if e["ph"] == "X" else None,  # a thread with no name
                     lambda e: e.update(ts=-1.0) if e["ph"] == "X" else None):
        broken = json.loads(json.dumps(doc))
        for e in broken["traceEvents"]:
            breaking(e)
        try:
            check_trace_format(broken)
        except AssertionError:
            continue
        raise AssertionError("a broken trace passed the format check")


def test_the_written_trace_has_dma_tracks_memory_counters_flows_and_op_args(memory_plan_dir: Path):
    trace = json.loads((memory_plan_dir / "trace.json").read_text())
    check_trace_format(trace)
    plan = json.loads((memory_plan_dir / "plan.json").read_text())
    memory = json.loads((memory_plan_dir / "memory.json").read_text())
    events = trace["traceEvents"]
    pid = {e["args"]["name"]: e["pid"] for e in events if e["name"] == "process_name"}
    dmas = [(t["start_cycle"], t["end_cycle"], device) for device, dp in memory["devices"].items()
            for t in dp["transfers"]]
    assert dmas, "memory-mlp moves tensors with DMAs"
    drawn = [(e["args"]["start_cycle"], e["args"]["end_cycle"], e["pid"]) for e in events
             if e["ph"] == "X" and e["cat"] == "dma" and e["tid"] == DMA_TID]
    assert sorted(drawn) == sorted((a, b, pid[d]) for a, b, d in dmas)
    for device, per_plan in memory["figures"][memory["choice"]].items():
        for level, peak in per_plan["peak_live_bytes"].items():
            series = [e["args"]["bytes"] for e in events if e["ph"] == "C" and e["pid"] == pid[device]
                      and e["name"] == f"{level} in use (bytes)"]
            assert max(series) == peak and series[-1] == 0, (device, level)  # the replay's peak; all freed
    programs = {d["name"]: decode((memory_plan_dir / "bin" / f"{d['name']}.bin").read_bytes())
                for d in plan["devices"]}
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    assert len(ops) == len(plan["ops"])
    clock = plan["clock_hz"]
    for e in ops:
        device = next(o["device"] for o in plan["ops"] if o["name"] == e["name"])
        assert programs[device].instructions[e["args"]["instruction_index"]].op == e["name"]
        assert round(e["ts"] * clock / 1e6) == e["args"]["start_cycle"]
        base = e["args"].get("graph_op", e["name"])
        assert e["args"].get("macs", e["args"].get("graph_op_macs")) == plan["resources"]["ops"][base]["macs"]
        assert sum(e["args"]["bytes_by_level"].values()) > 0 or plan["resources"]["ops"][base]["bytes_read"] == 0
    dma_flows = {e["id"] for e in events if e.get("cat") == "flow" and e["name"] == "dma"}
    assert len(dma_flows) == sum(1 for dp in memory["devices"].values() for t in dp["transfers"]
                                 if t["trigger_op"] and t["release_op"])
