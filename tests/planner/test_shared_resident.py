"""A graph input several ops read is counted once per device that holds it (the scheduler's
pre-check, the placement model and the validator), as lowering allocates it: the fork spec
was refused before (60 KiB counted against 40 KiB) and now plans, replays and verifies."""

from __future__ import annotations

from planner.isa.instructions import Opcode
from planner.pipeline import run
from planner.reductions.scheduling import resident_bytes, to_problem
from planner.spec import load_spec

SPEC = "tests/data/specs/shared-input-fork.yaml"


def test_the_reduction_records_the_shared_input_once_with_its_readers():
    spec = load_spec(SPEC)
    problem, reduction = to_problem(spec)
    readers = tuple(sorted(reduction.op_names.index(f"f/r{c}") for c in "abcde"))
    assert problem.shared_resident == ((12288, readers),)
    assert all(problem.resident_bytes(i) == 12288 for i in readers)  # each reader reads all of x
    everything_on_fast = (0,) * problem.num_ops
    assert problem.device_resident_bytes(0, everything_on_fast) == 12288  # not 5 * 12 KiB
    assert resident_bytes(spec.graph, "f/join") == 0


def test_the_fork_plans_at_its_optimum_and_lowering_allocates_x_once_per_device():
    # See the spec's header: 5000 cycles, x on both devices, 18 and 13 KiB at the peaks.
    outcome = run(load_spec(SPEC))
    assert (outcome.result.status.value, outcome.plan.objective, outcome.plan.bound) == ("OPTIMAL", 5000, 5000)
    devices = {o.name: o.device for o in outcome.plan.ops}
    assert sorted(devices.values()).count("slow0") == 1 and devices["f/join"] == "fast0"
    for name, program in outcome.programs.items():
        allocated = [program.buffers[i.a] for i in program.instructions if i.opcode is Opcode.ALLOC]
        assert allocated.count("f/x") == 1, (name, allocated)
    assert outcome.simulation.valid
    assert outcome.simulation.peak_bytes == {"fast0": {"mem": 18 * 1024}, "slow0": {"mem": 13 * 1024}}
    assert all(peak["mem"] <= 20 * 1024 for peak in outcome.simulation.peak_bytes.values())
