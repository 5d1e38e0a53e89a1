"""One constraint family at a time: build it, fix variables, assert feasible or infeasible."""

from __future__ import annotations

import pytest
from ortools.sat.python import cp_model

from solvers.core import SolveOptions, Status
from solvers.scheduling import (CpSatScheduler, SchedulingProblem, SchedulingSolution,
                                add_colocation, add_devices, add_hint, add_links, add_memory,
                                add_placement, add_precedence, add_symmetry_breaking, build,
                                create_variables, heft_schedule, interchangeable_classes,
                                validate_schedule)

BUS = ((-1, 0), (0, -1))


def _status(model: cp_model.CpModel) -> int:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = 5
    return solver.solve(model)


def _fix(model, lit, value: bool) -> None:
    if lit is True or lit is False:
        assert lit == value
        return
    model.add(lit == int(value))


FEASIBLE = (cp_model.OPTIMAL, cp_model.FEASIBLE)


def _model(p, horizon=30):
    model = cp_model.CpModel()
    v = create_variables(model, p, horizon)
    add_placement(model, p, v)
    return model, v


@pytest.mark.parametrize("streams, feasible", [(1, False), (2, True)])
def test_devices_streams(streams, feasible):
    # two 4-cycle ops on one device, both forced to start at 0: needs two streams
    p = SchedulingProblem(((4,), (4,)), (), (streams,), ((-1,),), ())
    model, v = _model(p)
    add_devices(model, p, v)
    model.add(v.start[0] == 0)
    model.add(v.start[1] == 0)
    assert (_status(model) in FEASIBLE) == feasible


@pytest.mark.parametrize("start_b, feasible", [(8, False), (9, True)])
def test_precedence_transfer(start_b, feasible):
    # a(4) on device 0, b on device 1, transfer 5: b may start at 4 + 5 = 9 at the earliest
    p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), BUS, ((5,),))
    model, v = _model(p)
    add_precedence(model, p, v)
    _fix(model, v.x[0, 0], True)
    _fix(model, v.x[1, 1], True)
    model.add(v.start[0] == 0)
    model.add(v.start[1] == start_b)
    assert (_status(model) in FEASIBLE) == feasible


def test_precedence_same_device_needs_no_transfer():
    p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), BUS, ((5,),))
    model, v = _model(p)
    add_precedence(model, p, v)
    _fix(model, v.x[0, 0], True)
    _fix(model, v.x[1, 0], True)
    model.add(v.start[0] == 0)
    model.add(v.start[1] == 4)
    assert _status(model) in FEASIBLE


def test_forbidden_link_pair():
    # link_of is -1 between the devices: a on 0 and b on 1 is infeasible
    p = SchedulingProblem(((4, 4), (3, 3)), ((0, 1, 64),), (1, 1), ((-1, -1), (-1, -1)), ((),))
    model, v = _model(p)
    add_precedence(model, p, v)
    _fix(model, v.x[0, 0], True)
    _fix(model, v.x[1, 1], True)
    assert _status(model) == cp_model.INFEASIBLE


@pytest.mark.parametrize("second, feasible", [(2, False), (5, True)])
def test_links_no_overlap(second, feasible):
    # two edges a->c, b->c across one bus, 5 cycles each; the second transfer starts at `second`
    p = SchedulingProblem(((1, -1), (1, -1), (-1, 1)), ((0, 2, 8), (1, 2, 8)), (2, 1), BUS,
                          ((5,), (5,)))
    model, v = _model(p)
    add_precedence(model, p, v)
    add_links(model, p, v)
    model.add(v.ts[0] == 0 + 1)
    model.add(v.ts[1] == second + 1)
    assert (_status(model) in FEASIBLE) == feasible


def test_zero_length_transfers_do_not_serialize():
    # job-shop style: zero-cycle transfers on one link may coincide
    p = SchedulingProblem(((1, -1), (1, -1), (-1, 1), (-1, 1)), ((0, 2, 0), (1, 3, 0)), (2, 2), BUS,
                          ((0,), (0,)))
    model, v = _model(p)
    add_precedence(model, p, v)
    add_links(model, p, v)
    for i in range(4):
        model.add(v.start[i] == (0 if i < 2 else 1))
    model.add(v.ts[0] == 1)
    model.add(v.ts[1] == 1)
    assert _status(model) in FEASIBLE


def test_colocation():
    p = SchedulingProblem(((4, 4), (3, 3)), (), (1, 1), BUS, (), colocation_groups=((0, 1),))
    model, v = _model(p)
    add_colocation(model, p, v)
    _fix(model, v.x[0, 0], True)
    _fix(model, v.x[1, 1], True)
    assert _status(model) == cp_model.INFEASIBLE


@pytest.mark.parametrize("same_device, feasible", [(True, False), (False, True)])
def test_memory_resident(same_device, feasible):
    # 6 + 6 resident bytes on a 10-byte device do not fit
    p = SchedulingProblem(((3, 3), (3, 3)), (), (1, 1), BUS, (), device_memory_bytes=(10, 10),
                          op_resident_bytes=(6, 6))
    model, v = _model(p)
    add_memory(model, p, v)
    _fix(model, v.x[0, 0], True)
    _fix(model, v.x[1, 0 if same_device else 1], True)
    assert (_status(model) in FEASIBLE) == feasible


@pytest.mark.parametrize("start_b, feasible", [(0, False), (2, False), (3, True)])
def test_memory_activation_lifetimes(start_b, feasible):
    # one device, two streams; a(3) and b(3) each write a 6-byte output, 10 bytes of memory:
    # their buffers [start, end) may not overlap, so b starts at a's end (3) or later
    p = SchedulingProblem(((3,), (3,)), (), (2,), ((-1,),), (), device_memory_bytes=(10,),
                          op_output_bytes=(6, 6))
    model, v = _model(p)
    add_devices(model, p, v)
    add_memory(model, p, v)
    model.add(v.start[0] == 0)
    model.add(v.start[1] == start_b)
    assert (_status(model) in FEASIBLE) == feasible


@pytest.mark.parametrize("start_c, feasible", [(4, False), (5, True)])
def test_memory_buffer_lives_until_last_consumer(start_c, feasible):
    # a(1) -> b(4) and a -> c(1), one device, two streams, 10 bytes; a's output (6 bytes)
    # lives until b ends at 5; c's output (6 bytes) may only appear after that
    p = SchedulingProblem(((1,), (4,), (1,)), ((0, 1, 6),), (2,), ((-1,),), ((),),
                          device_memory_bytes=(10,), op_output_bytes=(6, 0, 6))
    model, v = _model(p)
    add_devices(model, p, v)
    add_precedence(model, p, v)
    add_memory(model, p, v)
    model.add(v.start[0] == 0)
    model.add(v.start[1] == 1)
    model.add(v.start[2] == start_c)
    assert (_status(model) in FEASIBLE) == feasible


@pytest.mark.parametrize("start_b, feasible", [(6, False), (7, True)])
def test_memory_received_copy(start_b, feasible):
    # a(1) on device 0 -> b(2) on device 1, transfer 1 cycle carrying 6 bytes; z(6) on
    # device 1 writes 6 bytes, live [0, 6); device 1 holds 10. The received copy lives
    # [transfer start, end of b): a transfer at 5 overlaps z's buffer on [5, 6) (12 > 10);
    # at 6 it does not. b starts right after the transfer (6 or 7), so only memory decides.
    p = SchedulingProblem(((1, -1), (-1, 2), (-1, 6)), ((0, 1, 6),), (1, 2), BUS, ((1,),),
                          device_memory_bytes=(0, 10), op_output_bytes=(0, 0, 6))
    model, v = _model(p)
    add_devices(model, p, v)
    add_precedence(model, p, v)
    add_memory(model, p, v)
    model.add(v.start[0] == 0)
    model.add(v.start[2] == 0)  # z's buffer [0, 6)
    model.add(v.ts[0] == 6 if feasible else v.ts[0] == 5)
    model.add(v.start[1] == start_b)
    assert (_status(model) in FEASIBLE) == feasible


def test_symmetry_breaking_first_op_on_first_device():
    p = SchedulingProblem(((4, 4), (4, 4)), (), (1, 1), BUS, (), device_class=(0, 0))
    model, v = _model(p)
    v.sym_classes = interchangeable_classes(p)
    assert v.sym_classes == [(0, 1)]
    add_symmetry_breaking(model, p, v)
    _fix(model, v.x[0, 1], True)
    assert _status(model) == cp_model.INFEASIBLE


def test_symmetry_not_assumed_for_pinned_devices():
    # equal class ids but op 0 may only run on device 1: not interchangeable
    p = SchedulingProblem(((-1, 4), (4, 4)), (), (1, 1), BUS, (), device_class=(0, 0))
    assert interchangeable_classes(p) == []


def test_hint_is_complete_and_feasible():
    """Fixing every variable to the HEFT hint is feasible and reproduces the hint."""
    p = SchedulingProblem(((1, 1), (5, 5), (5, 5), (1, 1)),
                          ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)), (1, 1), BUS,
                          ((1,),) * 4, device_memory_bytes=(20, 20), op_output_bytes=(4, 4, 4, 4))
    hint = heft_schedule(p)
    assert validate_schedule(p, hint) == []
    model, v = build(p, horizon=hint.makespan_cycles, symmetry_breaking=False)
    add_hint(model, p, v, hint)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 5
    solver.parameters.fix_variables_to_their_hinted_value = True
    assert solver.solve(model) in FEASIBLE
    got = v.extract(solver)
    assert got.op_device == hint.op_device and got.op_start == hint.op_start
    assert got.transfers == hint.transfers


def test_activation_memory_end_to_end():
    # a(3), b(3) independent on one two-stream device, 6-byte outputs, 10 bytes:
    # they cannot overlap, so 3 + 3 = 6 (3 without the limit).
    p = SchedulingProblem(((3,), (3,)), (), (2,), ((-1,),), (), device_memory_bytes=(10,),
                          op_output_bytes=(6, 6))
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5))
    assert r.status is Status.OPTIMAL and r.objective == 6
    assert validate_schedule(p, r.solution) == []
