"""Property: any valid plan of a random DAG lowers to binaries that replay exactly as planned."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Device, Hardware, Link
from planner.isa import encode, get_profile
from planner.lowering import lower
from planner.memory.address_pass import address_programs
from planner.plan import PlacedOp, PlacedTransfer, Plan
from planner.simulator import simulate
from planner.verify import compare_with_plan

GEN = get_profile("generic")
HW = Hardware((Device("d0", "g", GEN, streams=2), Device("d1", "g", GEN, streams=2)),
              (Link("l0", ("d0", "d1"), 10**9, 3),))


def lowered(plan, graph, hw, **kwargs):
    """What the pipeline replays: the lowered programs after the address pass."""
    return address_programs(lower(plan, graph, hw, **kwargs))


@st.composite
def scheduled_dags(draw):
    """A random DAG (n <= 6) and a list schedule of it: valid by construction."""
    n = draw(st.integers(1, 6))
    tensors, ops = [], []
    for i in range(n):
        preds = sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else []
        size = draw(st.integers(1, 64))
        tensors.append(Tensor(f"t{i}", (size,)))
        ops.append(Op(f"o{i}", "task", tuple(f"t{p}" for p in preds), (f"t{i}",),
                      cycles={"g": draw(st.integers(0, 5))}))
    graph = Graph(tensors, ops)
    stream_free = {(d, s): 0 for d in ("d0", "d1") for s in (0, 1)}
    link_free = 0
    placed, transfers = {}, []
    for name in graph.topological_order():
        op = graph.ops[name]
        dev = draw(st.sampled_from(["d0", "d1"]))
        stream = draw(st.integers(0, 1))
        ready = 0
        for pred in sorted(graph.dag.predecessors(name)):
            p = placed[pred]
            if p.device == dev:
                ready = max(ready, p.end_cycle)
            else:
                size = graph.edge_bytes(pred, name)
                start = max(p.end_cycle, link_free) + draw(st.integers(0, 2))
                dur = HW.links[0].transfer_cycles(size, HW.clock_hz)
                transfers.append(PlacedTransfer(pred, name, tuple(graph.dag[pred][name]["tensors"]), size,
                                                p.device, dev, "l0", start, dur))
                link_free = start + dur
                ready = max(ready, start + dur)
        start = max(ready, stream_free[(dev, stream)]) + draw(st.integers(0, 2))
        placed[name] = PlacedOp(name, dev, stream, start, op.cycles["g"])
        stream_free[(dev, stream)] = placed[name].end_cycle
    ends = [o.end_cycle for o in placed.values()] + [t.end_cycle for t in transfers]
    plan = Plan("prop", "latency", "FEASIBLE", max(ends), None, None, max(ends), HW.clock_hz,
                tuple(placed.values()), tuple(transfers))
    return plan, graph


@settings(max_examples=60, deadline=None)
@given(scheduled_dags())
def test_valid_plans_replay_exactly(case):
    plan, graph = case
    result = simulate({name: encode(p) for name, p in lowered(plan, graph, HW).items()})
    assert result.violations == ()
    assert compare_with_plan(result, plan) == []
    assert result.makespan_cycles == plan.makespan_cycles
