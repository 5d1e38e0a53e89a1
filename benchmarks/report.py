"""How long report.html and trace.json take to draw, and how large they get, as plans grow (issue 12).

For each size, a synthetic plan document: ``ops`` ops of 1-40 cycles packed back to back on
4 devices of 2 streams, a transfer for every 8th op over one of 2 links, and a buffer per op
in one of 2 memory levels (``allocation.json``), so every chart of the page has ``ops``-sized
input. Medians of ``--repeat`` runs of :func:`planner.report.html.render_html` and of
:func:`planner.report.trace.trace_json` (the same documents as a :class:`planner.plan.Plan`),
CPU and wall time, with the page's size and its number of drawn bars (bars narrower than a
pixel are merged, so the page's size is bounded by its width, not by the plan). The inputs are
deterministic (a fixed seed), so the sizes are the same on any machine; the times are this
machine's, printed with ``uptime``'s load.

Run: ``python -m benchmarks.report [--ops 1000,10000,100000] [--repeat 3]``.

Results (2026-11-23, 18:03 UTC, the 2-core machine shared with five other sessions and a fuzz
run: load average 7.6-8.3, so wall times are 5-20x CPU times; medians of 3):

======  ===================  =======  =====  ====================  ========
ops     html CPU / wall s    html KB  bars   trace CPU / wall s    trace MB
======  ===================  =======  =====  ====================  ========
1,000   0.01 / 0.36          327      1,116  0.04 / 0.71           0.6
10,000  0.10 / 2.29          1,383    6,214  0.41 / 5.47           6.4
======  ===================  =======  =====  ====================  ========

The page's bars are bounded by its width (8 rows of about 880 pixels here), not by the plan:
most of the 10,000 ops are a pixel or wider and drawn alone, the rest merged. trace.json has
every event (Perfetto does its own aggregation), so it grows with the plan.

Examples
--------
>>> doc, allocation = synthetic_plan(16)
>>> len(doc["ops"]), len(doc["transfers"]), len(allocation["devices"]["d0"]["buffers"])
(16, 2, 4)
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python benchmarks/report.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import median_times
from planner.plan import Plan
from planner.report.html import render_html
from planner.report.trace import trace_json

DEVICES, STREAMS, LINKS = 4, 2, 2


def synthetic_plan(ops: int, seed: int = 0) -> tuple[dict, dict]:
    """A plan.json-shaped document and its allocation.json of ``ops`` ops (deterministic in ``seed``)."""
    rng = random.Random(seed)
    ends = {(d, s): 0 for d in range(DEVICES) for s in range(STREAMS)}
    placed, transfers, buffers = [], [], {f"d{d}": [] for d in range(DEVICES)}
    for i in range(ops):
        d, s = i % DEVICES, (i // DEVICES) % STREAMS
        start, duration = ends[(d, s)], rng.randint(1, 40)
        ends[(d, s)] = start + duration
        placed.append({"name": f"m/op{i}", "device": f"d{d}", "stream": s, "start_cycle": start,
                       "duration_cycles": duration})
        buffers[f"d{d}"].append({"name": f"t{i}", "level": ("sram", "hbm")[i % 2], "size_bytes": rng.randint(1, 64) << 10,
                                 "start_cycle": start, "end_cycle": start + 3 * duration, "view": False})
        if i % 8 == 7:
            transfers.append({"src_op": placed[i - 1]["name"], "dst_op": placed[i]["name"], "tensors": [f"t{i - 1}"],
                              "size_bytes": 4096, "src_device": f"d{(i - 1) % DEVICES}", "dst_device": f"d{d}",
                              "link": f"l{i % LINKS}", "start_cycle": start, "duration_cycles": 10})
    makespan = max(max(ends.values()), max((t["start_cycle"] + 10 for t in transfers), default=0))
    doc = {"spec": "synthetic", "objective_kind": "latency", "status": "FEASIBLE", "objective": makespan,
           "bound": makespan - 1, "gap": 1 / makespan, "makespan_cycles": makespan, "clock_hz": 10**9,
           "heuristic_objective": makespan, "solver": {}, "resources": {},
           "baselines": [{"solver": "s", "status": "FEASIBLE", "objective": makespan, "bound": None}],
           "devices": [{"name": f"d{d}", "kind": "k", "profile": "p", "streams": STREAMS} for d in range(DEVICES)],
           "links": [{"name": f"l{k}"} for k in range(LINKS)], "ops": placed, "transfers": transfers}
    allocation = {"devices": {name: {"memory": {"sram": {"capacity_bytes": 64 << 20},
                                                "hbm": {"capacity_bytes": 16 << 30}}, "buffers": bufs}
                              for name, bufs in buffers.items()}}
    return doc, allocation


def measure(ops: int, repeat: int) -> dict:
    doc, allocation = synthetic_plan(ops)
    plan = Plan.from_dict(doc)
    names = [d["name"] for d in doc["devices"]]
    links = [l["name"] for l in doc["links"]]
    html_wall, html_cpu, page = median_times(lambda: render_html(doc, allocation), repeat)
    trace_wall, trace_cpu, trace = median_times(lambda: trace_json(plan, names, links, allocation=allocation), repeat)
    return {"ops": ops, "html_cpu_s": html_cpu, "html_wall_s": html_wall, "html_bytes": len(page.encode()),
            "html_bars": page.count('<rect class="bar '), "trace_cpu_s": trace_cpu, "trace_wall_s": trace_wall,
            "trace_bytes": len(trace.encode())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'ops':>8} {'html CPU/wall s':>16} {'html KB':>8} {'bars':>6} {'trace CPU/wall s':>17} {'trace MB':>9}")
    for ops in (int(x) for x in args.ops.split(",")):
        r = measure(ops, args.repeat)
        print(f"{ops:>8,} {r['html_cpu_s']:>7.2f} / {r['html_wall_s']:<6.2f} {r['html_bytes'] / 1e3:>8.0f} "
              f"{r['html_bars']:>6,} {r['trace_cpu_s']:>8.2f} / {r['trace_wall_s']:<6.2f} {r['trace_bytes'] / 1e6:>9.1f}")
    print(f"load average {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
