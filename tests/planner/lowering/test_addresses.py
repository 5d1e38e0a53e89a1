"""Addresses without a memory plan: aligned, packed per level, never overlapping while live.

Lowering leaves these programs unaddressed; the address pass
(:func:`planner.memory.address_pass.address_programs`) packs them, so the plans here go through both.
"""

from __future__ import annotations

import time

import pytest

from planner.errors import InfeasibleError
from planner.graph.ir import Graph, Op, Tensor
from planner.hardware import Device, Hardware
from planner.isa import Opcode, get_profile
from planner.lowering import allocation, lower
from planner.memory.address_pass import address_programs
from planner.memory import addresses
from planner.memory.addresses import OFFSET_CPSAT_DETERMINISTIC_TIME, Lifetime, assign_addresses, offset_budget
from planner.plan import PlacedOp
from solvers.budget import NET_SLOWDOWN_ENV, Budget
from solvers.memory.offsets import GreedyBySizeOffsetSolver, OffsetProblem
from tests.planner.lowering.checks import address_violations
from tests.planner.test_lowering import make_plan, tpu_case, two_device_case, two_stream_case

# A fragmentation trap (found by search, checked by hand), in 64-byte units, capacity 4 units.
# Steps (cycles / 10) and the buffers live there:
#   0: b0(2) b1(2)        -> b1 takes one half, {0,1} or {2,3}
#   1: b1 b2(1) b3(1)     -> b2 takes the other half
#   2: b1 b2 b4(1)        -> b4 the slot of b2's half that b2 leaves
#   3: b2 b4 b5(1) b6(1)  -> b5, b6 take b1's old half
#   4: b4 b6 b7(2)        -> b7 needs the two free slots, one per half, to touch: b6 at 0 or 3
#                            and b4 at the other end, so b7 sits in the middle [1, 3)
#   5: b6 b7 b8(1)
#   6: b7 b9(2)           -> b9 needs two adjacent slots, but b7 holds the middle: no packing
# At most 4 units (256 B) are live at every step, yet no placement fits 256 B.
TRAP_SIZES = (2, 2, 1, 1, 1, 1, 1, 2, 1, 2)
TRAP_START = (0, 0, 1, 1, 2, 3, 3, 4, 5, 6)
TRAP_END = (1, 3, 4, 2, 5, 4, 6, 7, 6, 7)


def trap(scale: int = 10) -> list[Lifetime]:
    return [Lifetime(f"b{i}", 64 * s, scale * a, scale * e)
            for i, (s, a, e) in enumerate(zip(TRAP_SIZES, TRAP_START, TRAP_END))]


def overlapping(buffers: list[Lifetime], addresses, i: int, j: int) -> bool:
    a, b = buffers[i], buffers[j]
    in_time = (a.start_cycle < b.end_cycle and b.start_cycle < a.end_cycle) or (
        a.start_cycle == a.end_cycle and b.start_cycle <= a.start_cycle < max(b.end_cycle, b.start_cycle + 1)) or (
        b.start_cycle == b.end_cycle and a.start_cycle <= b.start_cycle < max(a.end_cycle, a.start_cycle + 1))
    return in_time and addresses[i] < addresses[j] + b.size_bytes and addresses[j] < addresses[i] + a.size_bytes


def test_empty_lifetimes_conflict_with_what_lives_at_that_cycle_only():
    # a [0,10); z and z2 allocated and freed at 10; b [10,20). Greedy-by-size (equal sizes:
    # by start, then index): a at 0; z at 0 (a is freed at 10, before z arrives); b conflicts
    # with z -> 64; z2 with z and b -> 128.
    bufs = [Lifetime("a", 64, 0, 10), Lifetime("z", 64, 10, 10), Lifetime("b", 64, 10, 20),
            Lifetime("z2", 64, 10, 10)]
    assert assign_addresses(bufs, 1024) == (0, 0, 64, 128)


def test_sizes_are_rounded_up_to_the_alignment():
    bufs = [Lifetime("x", 100, 0, 5), Lifetime("y", 1, 0, 5)]
    assert assign_addresses(bufs, 1024, 64) == (0, 128)  # 100 B take 128
    assert assign_addresses(bufs, 1024, 1) == (0, 100)
    assert assign_addresses(bufs, 1024, 256) == (0, 256)
    with pytest.raises(ValueError, match="alignment"):
        assign_addresses(bufs, 1024, 0)


def test_cpsat_packs_what_greedy_cannot():
    # solvers/memory/offsets/cpsat.py's example in 64 B units: greedy-by-size needs 9 units,
    # the optimum is the live bound 8 (3 + 3 + 2 at the second step). Capacity 8 units.
    sizes, start, end = (4, 3, 2, 3), (1, 2, 2, 1), (2, 3, 3, 4)
    bufs = [Lifetime(f"b{i}", 64 * s, 10 * a, 10 * e) for i, (s, a, e) in enumerate(zip(sizes, start, end))]
    greedy = GreedyBySizeOffsetSolver().solve(OffsetProblem(sizes, start, end, 8))
    assert greedy.solution is None and greedy.stats["peak_bytes"] == 9
    addresses = assign_addresses(bufs, 512)
    assert all(a % 64 == 0 and a + b.size_bytes <= 512 for a, b in zip(addresses, bufs))
    assert not any(overlapping(bufs, addresses, i, j) for i in range(4) for j in range(i))
    assert assign_addresses(bufs, 512) == addresses  # deterministic


def test_fragmentation_is_infeasible_with_the_busiest_cycle_named():
    bufs = trap()
    problem = OffsetProblem(TRAP_SIZES, TRAP_START, TRAP_END, 4)
    assert GreedyBySizeOffsetSolver().solve(problem).solution is None  # greedy fails...
    with pytest.raises(InfeasibleError) as err:
        assign_addresses(bufs, 256, 64, device="d0", level="mem")  # ...and CP-SAT proves it
    msg = str(err.value)
    assert msg == ("device d0: the buffers of memory level 'mem' (capacity 256 B) do not fit at 64-byte-aligned "
                   "addresses, although at most 256 B are live at once (cycle 0: 2 buffers; the biggest: "
                   "b0 128 B live [0, 10), b1 128 B live [0, 30)): buffers live at the same time cannot share "
                   "addresses, and the free space is fragmented between buffers that live at different times; "
                   "no placement fits (proven by CP-SAT); the best packing found (greedy-by-size) needs 320 B. "
                   "Raise the device's memory limit to leave room for fragmentation, or lower the memory use.")
    # One more unit is enough (b7 in the middle, b9 above it).
    addresses = assign_addresses(bufs, 320)
    assert not any(overlapping(bufs, addresses, i, j) for i in range(len(bufs)) for j in range(i))
    assert max(a + b.size_bytes for a, b in zip(addresses, bufs)) <= 320


def trap_plan():
    """The trap as a plan: buffer i is the output of task p_i, read by task c_i that ends at its
    end; every op on its own stream of one generic device capped at 256 B."""
    tensors, ops, placed = [], [], []
    for i, (s, a, e) in enumerate(zip(TRAP_SIZES, TRAP_START, TRAP_END)):
        tensors.append(Tensor(f"b{i}", (16 * s,)))  # 16 fp32 = 64 B per unit
        ops += [Op(f"p{i}", "task", (), (f"b{i}",), cycles={"g": 1}),
                Op(f"c{i}", "task", (f"b{i}",), (), cycles={"g": 1})]
        placed += [PlacedOp(f"p{i}", "d0", 2 * i, 10 * a, 1), PlacedOp(f"c{i}", "d0", 2 * i + 1, 10 * e - 1, 1)]
    hw = Hardware((Device("d0", "g", get_profile("generic"), streams=20, memory_limit_bytes=256),), ())
    return make_plan(placed), Graph(tensors, ops), hw


def lower_and_address(plan, graph, hw, alignment_bytes: int = 64):
    return address_programs(lower(plan, graph, hw), alignment_bytes)


def test_the_address_pass_reports_fragmentation():
    plan, graph, hw = trap_plan()
    programs = lower(plan, graph, hw)  # lowering itself never solves, so it cannot fail here
    with pytest.raises(InfeasibleError, match=r"device d0: the buffers of memory level 'mem' \(capacity 256 B\)"
                                              r".*at most 256 B are live at once.*\(proven by CP-SAT\)"):
        address_programs(programs)


def test_hand_checked_addresses_of_the_two_device_case():
    # d0: ta [0,16), tb [4,36), the received tc [22,36): 1000 B -> 1024 each; w 400 B -> 448 for
    # the whole run. Greedy-by-size: ta 0; tb (live with ta) 1024; tc (ta is gone) 0; w, live
    # with all three, above tb: 2048.
    plan, graph, hw = two_device_case()
    programs = lower_and_address(plan, graph, hw)
    doc = allocation(plan, graph, hw, programs)
    rows = {b["name"]: (b["address"], b["size_bytes"], b["start_cycle"], b["end_cycle"])
            for b in doc["devices"]["d0"]["buffers"]}
    assert rows == {"ta": (0, 1000, 0, 16), "tb": (1024, 1000, 4, 36), "tc@d1->d": (0, 1000, 22, 36),
                    "w": (2048, 400, 0, 36)}
    assert doc["format_version"] == 2 and doc["devices"]["d0"]["fast_level"] is None
    assert all(p.addressed for p in programs.values())
    frees = [i for i in programs["d0"].instructions if i.opcode == Opcode.FREE]
    allocs = {i.a: i.d for i in programs["d0"].instructions if i.opcode == Opcode.ALLOC}
    assert all(i.d == allocs[i.a] for i in frees)  # FREE names the address it releases


def test_alignment_can_make_a_tight_limit_infeasible():
    # d0 peaks at 2400 B live (test_lowering); rounded to 64 B that is 1024 + 1024 + 448 = 2496.
    plan, graph, hw = two_device_case(memory_limit=2400)
    with pytest.raises(InfeasibleError,
                       match=r"at cycle 4, 3 buffers are live, holding 2.44 KiB \(2496 B\) .* more than the capacity"):
        lower_and_address(plan, graph, hw)
    # Byte alignment: ta 0, tb 1000, tc 0, w above tb at 2000: exactly 2400.
    programs = lower_and_address(plan, graph, hw, alignment_bytes=1)
    assert address_violations(programs["d0"], 1) == []
    assert {programs["d0"].buffers[i.a]: i.d for i in programs["d0"].instructions
            if i.opcode == Opcode.ALLOC} == {"ta": 0, "tb": 1000, "tc@d1->d": 0, "w": 2000}


@pytest.mark.parametrize("case", [two_device_case, two_stream_case, tpu_case, trap_plan])
def test_hand_made_plans_get_valid_addresses(case):
    plan, graph, hw = case()
    if case is trap_plan:
        hw = Hardware((Device("d0", "g", get_profile("generic"), streams=20, memory_limit_bytes=320),), ())
    for program in lower_and_address(plan, graph, hw).values():
        assert address_violations(program) == []


def test_shipped_specs_get_valid_addresses(cnn_outcome, mlp_outcome):
    for outcome in (cnn_outcome, mlp_outcome):
        for program in outcome.programs.values():
            assert program.addressed
            assert address_violations(program) == []
            allocs = [i for i in program.instructions if i.opcode == Opcode.ALLOC]
            assert len(allocs) == len(program.buffers)


def test_the_offset_search_net_is_the_budgets_and_widens_with_plan_net_slowdown(monkeypatch):
    # 2 units at MEMORY_OFFSETS' 0.01 per second: a 200-s limit, so the net is slowdown x 200 + 5 s,
    # the 5 s x 20/3 at 20 (it was a fixed 120 s, which a busy machine reaches before 2 units of
    # NoOverlap2D).
    monkeypatch.setenv(NET_SLOWDOWN_ENV, "20")
    budget = offset_budget()
    assert budget.total == OFFSET_CPSAT_DETERMINISTIC_TIME == 2.0
    assert 4032 < budget.wall_deadline - time.perf_counter() <= 4000 + 100 / 3
    monkeypatch.setenv(NET_SLOWDOWN_ENV, "3")
    assert 600 < offset_budget().wall_deadline - time.perf_counter() <= 605


def test_a_search_stopped_by_the_net_says_so(monkeypatch, caplog):
    # The cpsat-packs case with a net already past: CP-SAT still returns its first packing (valid),
    # and the log says the wall clock, not the budget, stopped it.
    fired = lambda: Budget(OFFSET_CPSAT_DETERMINISTIC_TIME, time.perf_counter() - 1.0)  # noqa: E731
    monkeypatch.setattr(addresses, "offset_budget", fired)
    sizes, start, end = (4, 3, 2, 3), (1, 2, 2, 1), (2, 3, 3, 4)
    bufs = [Lifetime(f"b{i}", 64 * s, 10 * a, 10 * e) for i, (s, a, e) in enumerate(zip(sizes, start, end))]
    with caplog.at_level("WARNING", logger="planner.memory.addresses"):
        placed = assign_addresses(bufs, 512, device="d0", level="mem")
    assert not any(overlapping(bufs, placed, i, j) for i in range(4) for j in range(i))
    assert [r.getMessage() for r in caplog.records] == [
        "device d0, level mem: the address search stopped on the wall-clock safety net, not its deterministic "
        "budget: these addresses may differ on a less busy machine (raise PLAN_NET_SLOWDOWN)"]
