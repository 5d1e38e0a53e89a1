"""Importers on small hand-made files, malformed ones included (errors name the line)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from planner.errors import SpecError
from planner.importers import import_model, write_spec_yaml
from planner.importers.dnn_partitioning import (CYCLES_PER_MS, dnn_to_spec, max_load, read_dnn_json,
                                                read_expert_split)
from planner.importers.jobshop import jobshop_to_spec, read_jobshop
from planner.importers.stg import read_stg, stg_to_spec

DATA = Path(__file__).resolve().parent.parent / "data" / "importers"


# ----------------------------------------------------------------------------- STG

def test_stg_parse_and_bounds():
    g = read_stg(DATA / "tiny.stg")
    assert g.num_tasks == 4
    assert g.costs == (0, 3, 2, 4, 1, 0)
    assert g.preds[4] == (2, 3)
    # critical path 1 -> 3 -> 4 = 3 + 4 + 1 = 8; total work 3 + 2 + 4 + 1 = 10
    assert g.critical_path() == 8 and g.total_work() == 10
    assert g.lower_bound(1) == 10 and g.lower_bound(2) == 8
    assert any("critical path" in n for n in g.notes)


def test_stg_spec_drops_zero_cost_dummies_and_keeps_precedence():
    spec = stg_to_spec(read_stg(DATA / "tiny.stg"), 2, name="tiny")
    ops = spec["models"][0]["graph"]["ops"]
    assert [o["name"] for o in ops] == ["t1", "t2", "t3", "t4"]
    assert ops[3] == {"name": "t4", "type": "task", "cycles": {"proc": 1}, "after": ["t2", "t3"]}
    assert "after" not in ops[0]  # its only predecessor was the dummy entry task
    assert spec["hardware"]["devices"] == [{"name": "proc", "profile": "generic", "count": 1, "streams": 2}]


def test_stg_spec_loads_and_has_one_device_with_p_streams():
    load_spec = pytest.importorskip("planner.spec").load_spec
    from planner.reductions.scheduling import to_problem

    problem, _ = to_problem(load_spec(stg_to_spec(read_stg(DATA / "tiny.stg"), 3, name="tiny")))
    assert problem.device_streams == (3,)
    assert sorted(r[0] for r in problem.durations_cycles) == [1, 2, 3, 4]
    assert all(b == 0 for _, _, b in problem.edges)  # control edges carry no bytes


@pytest.mark.parametrize("name, line, words", [
    ("bad_count.stg", 5, "expected 5 task lines"),  # the last line of the file
    ("bad_pred.stg", 4, "predecessor 5 is not an earlier task"),
])
def test_stg_malformed_names_the_line(name, line, words):
    with pytest.raises(SpecError) as e:
        read_stg(DATA / name)
    assert e.value.line == line
    assert words in str(e.value)
    assert f"{name}:{line}:" in str(e.value)


def test_stg_non_integer_token():
    from planner.importers.stg import parse_stg

    with pytest.raises(SpecError, match=r"line 2: expected integers"):
        parse_stg("1\n0 zero 0\n1 1 1 0\n2 0 1 1\n")


# ----------------------------------------------------------------------------- job shop

def test_jobshop_parse_and_spec():
    js = read_jobshop(DATA / "tiny.jsp")
    assert js.jobs == (((0, 3), (1, 2)), ((1, 2), (0, 4)))
    # machine 0 carries 3 + 4 = 7; the jobs are 5 and 6 long
    assert js.lower_bound() == 7
    spec = jobshop_to_spec(js, "tiny")
    ops = spec["models"][0]["graph"]["ops"]
    assert [o["cycles"] for o in ops] == [{"m0": 3}, {"m1": 2}, {"m1": 2}, {"m0": 4}]
    assert ops[3]["after"] == ["j1_o0"]
    assert spec["hardware"]["topology"]["latency"] == 0


def test_jobshop_spec_reduces_to_pinned_ops_and_free_hops():
    load_spec = pytest.importorskip("planner.spec").load_spec
    from planner.reductions.scheduling import to_problem

    problem, red = to_problem(load_spec(jobshop_to_spec(read_jobshop(DATA / "tiny.jsp"), "tiny")))
    assert len(red.device_names) == 2
    for row in problem.durations_cycles:  # each op allowed on exactly its machine
        assert sum(1 for x in row if x >= 0) == 1
    assert all(all(c == 0 for c in row) for row in problem.transfer_cycles)


def test_jobshop_with_eleven_machines_has_no_name_clash():
    load_spec = pytest.importorskip("planner.spec").load_spec
    from planner.importers.jobshop import parse_jobshop
    from planner.reductions.scheduling import to_problem

    js = parse_jobshop("1 11\n" + " ".join(f"{k} 1" for k in range(11)) + "\n")
    problem, red = to_problem(load_spec(jobshop_to_spec(js, "wide")))
    assert len(red.device_names) == 11 and len(set(red.device_names)) == 11


@pytest.mark.parametrize("name, line, words", [
    ("bad_machine.jsp", 4, "machine 2 is out of range 0..1"),
    ("bad_odd.jsp", 3, "expected 'machine duration' pairs"),
])
def test_jobshop_malformed_names_the_line(name, line, words):
    with pytest.raises(SpecError) as e:
        read_jobshop(DATA / name)
    assert e.value.line == line and words in str(e.value)


# ----------------------------------------------------------------------------- dnn-partitioning

def test_dnn_parse_spec_and_max_load():
    w = read_dnn_json(DATA / "tiny_dnn.json")
    assert (w.max_fpgas, w.max_cpus, w.max_size_per_fpga) == (2, 1, 100.0)
    assert w.color_classes() == ((1, 2),)
    assert [n.out_cost for n in w.nodes] == [0.25, 0.5, 0.125, 0.0]
    spec = dnn_to_spec(w, "tiny")
    ops = spec["models"][0]["graph"]["ops"]
    assert ops[0]["cycles"] == {"acc": 2 * CYCLES_PER_MS, "cpu": 10 * CYCLES_PER_MS}
    assert ops[3]["cycles"] == {"cpu": CYCLES_PER_MS // 2}  # not supported on an accelerator
    assert spec["constraints"]["colocate"] == [["tiny/n2", "tiny/n3"]]
    tensors = {t["name"]: t for t in spec["models"][0]["graph"]["tensors"]}
    assert tensors["n1_w"]["shape"] == [60] and tensors["n1_w"]["kind"] == "weight"
    assert tensors["n2_out"]["shape"] == [500]  # 0.5 ms = 500 us = 500 bytes at 1 MB/s
    assert spec["hardware"]["topology"]["bandwidth"] == "1 MB/s"
    # acc0 {1}: 2 + 0.25 (out); acc1 {2, 3}: 2 + 1 + 0.25 (in) + 0.125 (3 -> cpu); cpu {4}: 0.5
    assert max_load(w, (0, 1, 1, 2)) == 3.375
    split = read_expert_split(DATA / "tiny_expert.json", w)
    assert split == (0, 1, 1, 2)


def test_dnn_spec_loads():
    load_spec = pytest.importorskip("planner.spec").load_spec
    from planner.reductions.scheduling import to_problem

    problem, red = to_problem(load_spec(dnn_to_spec(read_dnn_json(DATA / "tiny_dnn.json"), "tiny")))
    assert len(red.device_names) == 3
    assert problem.colocation_groups and len(problem.colocation_groups[0]) == 2


@pytest.mark.parametrize("name, line, words", [
    ("bad_dnn_missing.json", 7, "node 2: missing key 'cpuLatency'"),
    ("bad_dnn_syntax.json", 5, "invalid JSON"),
    ("bad_dnn_cost.json", 9, "node 1 has two different outgoing costs"),
])
def test_dnn_malformed_names_the_line(name, line, words):
    with pytest.raises(SpecError) as e:
        read_dnn_json(DATA / name)
    assert e.value.line == line, str(e.value)
    assert words in str(e.value)


# ----------------------------------------------------------------------------- dispatch and YAML

@pytest.mark.parametrize("name, first_op", [
    ("tiny.stg", "t1"), ("tiny.jsp", "j0_o0"), ("tiny_dnn.json", "n1"),
])
def test_import_model_dispatch_and_yaml_round_trip(tmp_path, name, first_op):
    spec = import_model(DATA / name)
    assert spec["models"][0]["graph"]["ops"][0]["name"] == first_op
    out = write_spec_yaml(spec, tmp_path / "s.yaml")
    assert yaml.safe_load(out.read_text()) == spec


def test_import_model_rejects_foreign_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    with pytest.raises(SpecError, match="not a dnn-partitioning workload"):
        import_model(p)
