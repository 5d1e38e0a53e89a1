"""The validator on planted violations (one per rule), the objective, and the bounds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solvers.scheduling import (Objective, ScheduledTransfer, SchedulingProblem,
                                SchedulingSolution, critical_path_bound, fractional_load_bound,
                                lower_bound, objective_value, validate_schedule, work_bound)

BUS = ((-1, 0), (0, -1))
# a(4) -> b(3), 64 bytes, transfer 5 on the bus; c(2) independent, colocated with a.
P = SchedulingProblem(((4, 4), (3, 3), (2, 2)), ((0, 1, 64),), (1, 2), BUS, ((5,),),
                      colocation_groups=((0, 2),), op_names=("a", "b", "c"))
# a on 0 [0, 4), transfer [4, 9), b on 1 [9, 12), c on 0 [4, 6)
GOOD = SchedulingSolution((0, 1, 0), (0, 0, 0), (0, 9, 4), (4, 3, 2), (ScheduledTransfer(0, 0, 4, 5),))


def test_good_solution_is_valid():
    assert validate_schedule(P, GOOD) == []
    assert objective_value(P, GOOD) == 12
    assert objective_value(replace(P, objective=Objective.THROUGHPUT), GOOD) == 6  # device 0: 4 + 2


def _msgs(sol, problem=P):
    return " | ".join(validate_schedule(problem, sol))


def test_forbidden_device():
    p = replace(P, durations_cycles=((4, 4), (3, -1), (2, 2)))
    assert "may not run on device 1" in _msgs(GOOD, p)


def test_wrong_duration():
    assert "duration 2 != 3" in _msgs(replace(GOOD, op_duration=(4, 2, 2)))


def test_stream_out_of_range():
    assert "stream 1 not in [0, 1)" in _msgs(replace(GOOD, op_stream=(0, 0, 1)))


def test_stream_overlap():
    assert "ops a and c overlap on device 0 stream 0" in _msgs(replace(GOOD, op_start=(0, 9, 3)))


def test_two_streams_may_overlap():
    sol = SchedulingSolution((1, 1, 1), (0, 0, 1), (0, 4, 0), (4, 3, 2), ())
    assert validate_schedule(P, sol) == []


def test_precedence_same_device():
    sol = SchedulingSolution((1, 1, 1), (0, 1, 0), (0, 3, 4), (4, 3, 2), ())
    assert "op b starts at 3 before a ends at 4" in _msgs(sol)


def test_missing_transfer():
    assert "needs exactly one transfer, got 0" in _msgs(replace(GOOD, transfers=()))


def test_duplicate_transfer():
    t = GOOD.transfers[0]
    assert "got 2" in _msgs(replace(GOOD, transfers=(t, t)))


def test_transfer_on_same_device_edge():
    sol = SchedulingSolution((0, 0, 0), (0, 0, 0), (0, 9, 4), (4, 3, 2), GOOD.transfers)
    assert "both ops on device 0 but 1 transfer(s)" in _msgs(sol)


def test_wrong_link():
    p = replace(P, link_of=((-1, 1), (0, -1)), transfer_cycles=((5, 5),))
    assert "expected link 1" in _msgs(GOOD, p)


def test_wrong_transfer_duration():
    sol = replace(GOOD, transfers=(ScheduledTransfer(0, 0, 4, 4),))
    assert "transfer duration 4 != 5" in _msgs(sol)


def test_transfer_before_producer_ends():
    sol = replace(GOOD, transfers=(ScheduledTransfer(0, 0, 3, 5),), op_start=(0, 8, 4))
    assert "transfer starts at 3 before a ends at 4" in _msgs(sol)


def test_consumer_before_transfer_ends():
    assert "op b starts at 8 before its transfer ends at 9" in _msgs(replace(GOOD, op_start=(0, 8, 4)))


def test_link_overlap():
    p = SchedulingProblem(((1, -1), (1, -1), (-1, 1), (-1, 1)), ((0, 2, 8), (1, 3, 8)), (2, 2), BUS,
                          ((5,), (5,)))
    sol = SchedulingSolution((0, 0, 1, 1), (0, 1, 0, 1), (0, 0, 6, 8), (1, 1, 1, 1),
                             (ScheduledTransfer(0, 0, 1, 5), ScheduledTransfer(1, 0, 3, 5)))
    assert "overlap on link 0" in _msgs(sol, p)


def test_forbidden_split():
    p = replace(P, link_of=((-1, -1), (-1, -1)), transfer_cycles=((),))
    assert "cannot exchange data (link_of is -1)" in _msgs(replace(GOOD, transfers=()), p)


def test_colocation_violated():
    sol = SchedulingSolution((0, 1, 1), (0, 0, 1), (0, 9, 0), (4, 3, 2), GOOD.transfers)
    assert "colocation group [a, c] spans devices [0, 1]" in _msgs(sol)


def test_memory_resident():
    p = replace(P, device_memory_bytes=(5, 100), op_resident_bytes=(3, 0, 3))
    assert "resident bytes 6 exceed memory 5" in _msgs(GOOD, p)


def test_memory_activation_over_time():
    # a's output (10 B) lives on device 0 [0, 9) (until its transfer ends); c writes 10 B at 4
    p = replace(P, device_memory_bytes=(15, 100), op_output_bytes=(10, 0, 10))
    assert "20 bytes live at cycle 4" in _msgs(GOOD, p)
    # with c after the transfer, the two buffers never coexist
    late = replace(GOOD, op_start=(0, 9, 9))
    assert validate_schedule(p, late) == []


def test_memory_received_copy():
    # the 64-byte copy lives on device 1 over [4, 12)
    p = replace(P, device_memory_bytes=(0, 63))
    assert "64 bytes live at cycle 4" in _msgs(GOOD, p)
    assert validate_schedule(replace(P, device_memory_bytes=(0, 64)), GOOD) == []


def test_unknown_device():
    assert "unknown device 2" in _msgs(replace(GOOD, op_device=(0, 2, 0)))


@pytest.mark.parametrize("objective", list(Objective))
def test_bounds_on_example(objective):
    p = replace(P, objective=objective)
    # critical path 4 + 3 (a and b can share a device) = 7; work ceil(9 / 3) = 3
    assert critical_path_bound(p) == 7 and work_bound(p) == 3
    # LP: latency T with 4+3+2 = 9 work over capacities 1 + 2 -> 3; throughput 9 / 2 -> 5
    assert fractional_load_bound(p) == (3 if objective is Objective.LATENCY else 5)
    assert lower_bound(p) == (7 if objective is Objective.LATENCY else 5)
