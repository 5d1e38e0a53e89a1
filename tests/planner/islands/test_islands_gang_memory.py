"""Gangs with memory planning (issue 13): the memory re-timing starts every gang's shards on one
cycle, the plan's record says which, the replayed binaries agree, the numbers replay equal, and
the same spec gives the same bytes twice."""

import filecmp
import sys
from pathlib import Path

import pytest

from planner.errors import InternalError
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.spec import load_spec
from solvers.budget import NET_SLOWDOWN_ENV

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory) -> Path:
    """specs/islands.yaml (two gangs of attention-score shards) smaller, under latency, memory-planned."""
    text = (ROOT / "specs" / "islands.yaml").read_text()
    for old, new in (("objective: throughput", "objective: latency\nmemory: {plan: true}"),
                     ("layers: 4, d_model: 512", "layers: 3, d_model: 256"), ("seq: 128", "seq: 64")):
        assert old in text
        text = text.replace(old, new)
    file = tmp_path_factory.mktemp("gangmem") / "islands-memory.yaml"
    file.write_text(text)
    return file


# A 2-s run's solves get 0.2-0.4 s shares, whose default net (3 x share + 5 s) a loaded machine
# reaches: 6-19 s each at load 16 (6 busy processes). The same-bytes checks need the budgets, not
# the net, to end them, so they widen the net (a net stop would say reproducible: false).
WIDE_NET = "200"


@pytest.fixture(scope="module")
def planned(spec_file):
    spec = load_spec(spec_file)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(NET_SLOWDOWN_ENV, WIDE_NET)
        return spec, run(spec, time_limit_s=2, workers=1)


def test_memory_planned_gangs_start_on_one_cycle_in_the_replayed_binaries(planned, tmp_path):
    spec, outcome = planned
    assert len(spec.gangs) == 2 and spec.memory.enabled
    assert outcome.memory_choice == "memory plan"  # the re-timed plan, not the gang-aligned schedule
    replayed = outcome.simulation.ops
    record = outcome.plan.solver["islands"]["gangs"]
    assert [g["ops"] for g in record] == [list(g) for g in spec.gangs]
    starts = {o.name: o.start_cycle for o in outcome.plan.ops}
    for gang, claim in zip(spec.gangs, record):
        assert {replayed[op].start_cycle for op in gang} == {claim["start_cycle"]} == {starts[op] for op in gang}
        assert len({replayed[op].device for op in gang}) == len(gang)
    assert outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles
    verdict = write_plan_dir(outcome, spec, tmp_path / "plan", numeric="on")  # verified again from the files
    assert verdict.numeric.claim["status"] == "equal" and verdict.numeric.claim["tensors"] > 0
    assert verdict.numeric.comparison.ok
    report = (tmp_path / "plan" / "report.md").read_text()
    assert f"- {', '.join(spec.gangs[0])}: cycle {record[0]['start_cycle']}" in report


def test_memory_planning_without_the_gangs_would_start_the_shards_apart(planned, monkeypatch):
    # The same run with the memory re-timing told of no gang: the replay catches the split start.
    spec, _ = planned
    module = sys.modules["planner.memory.assemble"]
    schedule = module.list_schedule
    monkeypatch.setattr(module, "list_schedule", lambda acts, sequences, gate=None, gangs=(): schedule(
        acts, sequences, gate))
    with pytest.raises(InternalError, match="the replayed binaries start gang"):
        run(spec, time_limit_s=2, workers=1)


def test_memory_planned_gangs_give_the_same_bytes_twice(planned, tmp_path, monkeypatch):
    spec, outcome = planned
    monkeypatch.setenv(NET_SLOWDOWN_ENV, WIDE_NET)
    assert outcome.plan.solver["reproducible"] is True
    write_plan_dir(outcome, spec, tmp_path / "one", numeric="off")
    write_plan_dir(run(spec, time_limit_s=2, workers=1), spec, tmp_path / "two", numeric="off")
    compared = filecmp.dircmp(tmp_path / "one", tmp_path / "two")
    assert not compared.diff_files and not compared.left_only and not compared.right_only
    assert (tmp_path / "one" / "plan.json").read_bytes() == (tmp_path / "two" / "plan.json").read_bytes()


def test_plan_score_of_a_memory_planned_gang_spec_records_the_re_timed_starts(planned):
    # plan score schedules the given placement, aligns the gangs, memory-plans: the record is the final plan's.
    from planner.instances import base_op_name
    from planner.replan.commands import score_placement

    spec, outcome = planned
    placement = {base_op_name(o.name): o.device for o in outcome.plan.ops}
    scored = score_placement(spec, placement, time_limit_s=2, workers=1)
    assert scored.memory_choice == "memory plan"
    record = scored.plan.solver["gangs"]
    assert [g["ops"] for g in record] == [list(g) for g in spec.gangs]
    for gang, claim in zip(spec.gangs, record):
        assert {scored.simulation.ops[op].start_cycle for op in gang} == {claim["start_cycle"]}


# Two ResNets, one per device of island pod-a (pinned: no transfers), on 4 MiB of SRAM: memory
# planning splits the gang's convolutions into portions, and the gang lines up their first.
SPLIT_SPEC = """version: 1
name: gang-split
hardware:
  devices:
    - {name: npu, profile: edge-npu, count: 4}
  islands:
    - {name: pod-a, devices: [npu0, npu1], topology: {kind: all-to-all, bandwidth: 100 GB/s, latency: 200 ns}}
    - {name: pod-b, devices: [npu2, npu3], topology: {kind: all-to-all, bandwidth: 100 GB/s, latency: 200 ns}}
  network: {name: dcn, bandwidth: 25 GB/s, latency: 5 us}
models:
  - name: a
    generator: {kind: resnet, blocks: [1], width: 32, image: 224, in_channels: 1, classes: 10, batch: 4, dtype: fp32}
  - name: b
    generator: {kind: resnet, blocks: [1], width: 16, image: 224, in_channels: 1, classes: 10, batch: 4, dtype: fp32}
objective: latency
memory: {plan: true, split_factors: [1, 2, 4]}
solver: {time_limit: 3 s, workers: 1, seed: 0}
constraints:
  pins:
    - {ops: "a/*", device: npu0}
    - {ops: "b/*", device: npu1}
  gang:
    - ["a/stage0/block0/conv2", "b/stage0/block0/conv2"]
"""


def test_a_split_gang_shard_starts_with_its_first_portion(tmp_path):
    file = tmp_path / "split.yaml"
    file.write_text(SPLIT_SPEC)
    spec = load_spec(file)
    outcome = run(spec)
    gang = spec.gangs[0]
    firsts = [f"{op}#0" for op in gang]
    starts = {o.name: o.start_cycle for o in outcome.plan.ops}
    assert all(name in starts for name in firsts) and not any(op in starts for op in gang)  # split
    # Told of no gang, the re-timing started them on cycles 101,386 and 129,234 (measured when written).
    assert {outcome.simulation.ops[name].start_cycle for name in firsts} == {starts[firsts[0]]}
    assert outcome.plan.solver["islands"]["gangs"] == [{"ops": list(gang), "start_cycle": starts[firsts[0]]}]
    write_plan_dir(outcome, spec, tmp_path / "plan", numeric="off")  # verified again from the files
