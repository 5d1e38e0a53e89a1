"""Loading and resolving good specs: hardware, links, graph merging, pins, colocation."""

import dataclasses
import sys
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.spec import Spec, load_spec

ROOT = Path(__file__).resolve().parents[2]
# Fleet specs (a top-level `fleet:` key) have their own loader: planner.fleet.
SPECS = sorted(p for p in (ROOT / "specs").glob("*.yaml") if not p.name.startswith("fleet"))


def spec_dict(**overrides):
    base = {
        "version": 1,
        "hardware": {"devices": [{"name": "cpu", "profile": "generic"}]},
        "models": [{"name": "m", "generator": {"kind": "mlp", "layers": 2, "width": 8}}],
    }
    base.update(overrides)
    return base


def devices(*kinds, topology=None, links=None, clock=None):
    hw = {"devices": [dict(k) for k in kinds]}
    if topology:
        hw["topology"] = topology
    if links:
        hw["links"] = links
    if clock:
        hw["clock"] = clock
    return hw


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_shipped_specs_load(path):
    spec = load_spec(path)
    assert isinstance(spec, Spec) and spec.name == path.stem and spec.source == path
    assert len(spec.graph) > 0


def test_shipped_spec_set():
    assert {p.stem for p in SPECS} >= {"demo", "mlp", "cnn", "taskgraph", "throughput", "pinned"}


def test_demo():
    spec = load_spec(ROOT / "specs" / "demo.yaml")
    assert len(spec.graph.ops) == 6 * (11 + 4 * 8) + 1 == 259
    assert [(d.name, d.kind, d.profile.name) for d in spec.hardware.devices] == [
        ("big0", "big", "tpu-v4"), ("big1", "big", "tpu-v4"),
        ("small0", "small", "edge-npu"), ("small1", "small", "edge-npu")]
    assert len(spec.hardware.links) == 6                     # 4 choose 2
    link = spec.hardware.link_between("big1", "small0")
    assert link.name == "pcie_b1_s0"
    assert (link.bandwidth_bytes_per_s, link.latency_cycles) == (16 * 10**9, 1000)   # 1 us at 1 GHz
    ici = spec.hardware.link_between("big0", "big1")
    assert (ici.name, ici.bandwidth_bytes_per_s, ici.latency_cycles) == ("ici", 300 * 10**9, 200)
    assert (spec.objective, spec.time_limit_s, spec.workers, spec.seed) == ("latency", 30.0, 2, 0)
    assert spec.models == ("gpt",)


def test_pinned_spec():
    spec = load_spec(ROOT / "specs" / "pinned.yaml")
    assert spec.allowed_devices["gpt/layer0/head0/scores"] == ("small0",)
    assert spec.allowed_devices["gpt/layer0/head1/softmax"] == ("small1",)
    assert spec.allowed_devices["gpt/ln_f"] == ("big0",)      # a kind with one instance
    assert "gpt/layer0/ln1" not in spec.allowed_devices        # only pinned ops appear
    assert spec.colocation_groups == (("gpt/layer0/attn_qkv", "gpt/layer0/attn_out"),)
    caps = {d.name: d.memory_capacity_bytes for d in spec.hardware.devices}
    assert caps == {"big0": 32 * 2**30, "small0": 64 * 2**20, "small1": 64 * 2**20}


def test_taskgraph_spec():
    spec = load_spec(ROOT / "specs" / "taskgraph.yaml")
    assert list(spec.graph.ops) == ["tg/a", "tg/b", "tg/c", "tg/d"]
    assert spec.op_cycles["tg/b"] == {"fast": 3000, "slow": 4000}
    assert spec.graph.edge_bytes("tg/a", "tg/c") == 100
    link = spec.hardware.links[0]
    # the hand-checked transfer in the spec's comment: 100 + ceil(100 * 1e9 / 1e9) = 200
    assert link.transfer_cycles(100, spec.hardware.clock_hz) == 200


def test_profile_overrides_and_streams():
    spec = load_spec(spec_dict(hardware=devices(
        {"name": "acc", "profile": "tpu-v4", "count": 1, "streams": 3, "clock": "500 MHz",
         "memory": [{"name": "sram", "capacity": "8 MiB", "bandwidth": "1 TB/s"},
                    {"name": "dram", "capacity": "2 GiB", "bandwidth": "100 GB/s"}]})))
    dev = spec.hardware.devices[0]
    assert dev.streams == 3
    assert dev.profile.clock_hz == 500_000_000 and dev.profile.mxu_rows == 128   # the rest is tpu-v4
    assert [(m.name, m.capacity_bytes, m.bandwidth_bytes_per_s) for m in dev.profile.memory] == [
        ("sram", 8 * 2**20, 10**12), ("dram", 2 * 2**30, 100 * 10**9)]
    assert dev.memory_capacity_bytes == 2 * 2**30


def test_reference_clock_converts_latencies():
    spec = load_spec(spec_dict(hardware=devices(
        {"name": "a", "profile": "generic", "count": 2}, clock="500 MHz",
        links=[{"name": "l", "between": ["a0", "a1"], "bandwidth": "1 GB/s", "latency": "3 ns"}])))
    assert spec.hardware.clock_hz == 500_000_000
    assert spec.hardware.links[0].latency_cycles == 2        # 1.5 cycles, rounded up


@pytest.mark.parametrize("kind, count, expected", [
    ("all-to-all", 3, [("link_n0_n1", ("n0", "n1")), ("link_n0_n2", ("n0", "n2")), ("link_n1_n2", ("n1", "n2"))]),
    ("ring", 4, [("link_n0_n1", ("n0", "n1")), ("link_n1_n2", ("n1", "n2")), ("link_n2_n3", ("n2", "n3")),
                 ("link_n3_n0", ("n3", "n0"))]),
    ("ring", 2, [("link_n0_n1", ("n0", "n1"))]),             # no duplicate link back
    ("bus", 3, [("bus", ("n0", "n1", "n2"))]),
    ("all-to-all", 1, []),                                   # one device needs no links
])
def test_topologies(kind, count, expected):
    spec = load_spec(spec_dict(hardware=devices(
        {"name": "n", "profile": "generic", "count": count},
        topology={"kind": kind, "bandwidth": "2 GB/s", "latency": 7})))
    assert [(l.name, l.devices) for l in spec.hardware.links] == expected
    assert all((l.bandwidth_bytes_per_s, l.latency_cycles) == (2 * 10**9, 7) for l in spec.hardware.links)


def test_explicit_links_come_first_and_must_connect_all_devices():
    hw = devices({"name": "n", "profile": "generic", "count": 3},
                 links=[{"name": "fast", "between": ["n0", "n1"], "bandwidth": "100 GB/s"}],
                 topology={"kind": "bus", "bandwidth": "1 GB/s"})
    spec = load_spec(spec_dict(hardware=hw))
    assert [l.name for l in spec.hardware.links] == ["fast", "bus"]
    assert spec.hardware.link_between("n0", "n1").name == "fast"
    assert spec.hardware.links[0].latency_cycles == 0
    del hw["topology"]
    with pytest.raises(SpecError) as info:
        load_spec(spec_dict(hardware=hw))
    assert info.value.path == "hardware.links"
    assert "devices n0 and n2 cannot exchange data: no chain of links joins them" in info.value.message
    hw["links"].append({"name": "slow", "between": ["n1", "n2"], "bandwidth": "1 GB/s"})
    spec = load_spec(spec_dict(hardware=hw))     # n0 and n2 are not adjacent, but connected
    assert spec.hardware.link_between("n0", "n2") is None


def test_memory_limits_by_kind_and_instance():
    spec = load_spec(spec_dict(
        hardware=devices({"name": "n", "profile": "edge-npu", "count": 2},
                         topology={"kind": "bus", "bandwidth": "1 GB/s"}),
        constraints={"memory_limits": [{"device": "n", "max": "1 GiB"}, {"device": "n1", "max": "256 MiB"},
                                       {"device": "n0", "max": "2 GiB"}]}))
    assert [d.memory_limit_bytes for d in spec.hardware.devices] == [2**30, 256 * 2**20]   # the tightest wins
    assert [d.memory_capacity_bytes for d in spec.hardware.devices] == [2**30, 256 * 2**20]


def test_pins_by_kind_instance_and_overlap():
    spec = load_spec(spec_dict(
        hardware=devices({"name": "big", "profile": "tpu-v4", "count": 2},
                         {"name": "small", "profile": "edge-npu", "count": 2},
                         topology={"kind": "all-to-all", "bandwidth": "1 GB/s"}),
        models=[{"name": "m", "generator": {"kind": "mlp", "layers": 3, "width": 8}}],
        constraints={"pins": [{"ops": "m/*", "device": "big"},
                              {"ops": ["m/fc1", "m/act1"], "device": "big1"},
                              {"ops": "m/fc[2]", "device": "big0"}]}))
    assert spec.allowed_devices == {"m/fc0": ("big0", "big1"), "m/act0": ("big0", "big1"),
                                    "m/fc1": ("big1",), "m/act1": ("big1",), "m/fc2": ("big0",)}
    assert list(spec.allowed_devices) == list(spec.graph.topological_order())


def test_colocation_patterns_merge_and_order():
    spec = load_spec(spec_dict(
        models=[{"name": "m", "generator": {"kind": "mlp", "layers": 4, "width": 8}}],
        constraints={"colocate": [["m/act2", "m/fc3"], ["m/fc0", "m/act0"], ["m/fc3", "m/fc2"],
                                  ["m/fc1", "m/fc1"]]}))
    # [act2, fc3] and [fc3, fc2] share fc3: merged, in topological order; [fc1, fc1] is no group
    assert spec.colocation_groups == (("m/fc0", "m/act0"), ("m/fc2", "m/act2", "m/fc3"))
    spec = load_spec(spec_dict(constraints={"colocate": [["m/*", "m/fc0"]]}))
    assert spec.colocation_groups == (("m/fc0", "m/act0", "m/fc1"),)


def test_colocation_against_pins():
    hw = devices({"name": "n", "profile": "generic", "count": 2}, topology={"kind": "bus", "bandwidth": "1 GB/s"})
    with pytest.raises(SpecError) as info:
        load_spec(spec_dict(hardware=hw, constraints={
            "pins": [{"ops": "m/fc0", "device": "n0"}, {"ops": "m/fc1", "device": "n1"}],
            "colocate": [["m/fc0", "m/fc1"]]}))
    assert info.value.path == "constraints.colocate[0]" and "pins leave none in common" in info.value.message


def test_inline_graph_and_models_merged():
    spec = load_spec(spec_dict(
        hardware=devices({"name": "big", "profile": "tpu-v4"}, {"name": "cpu", "profile": "generic"},
                         topology={"kind": "bus", "bandwidth": "1 GB/s"}),
        models=[
            {"name": "tiny", "graph": {
                "tensors": [{"name": "x", "shape": [1, 16], "kind": "input"},
                            {"name": "w", "shape": [16, 16], "dtype": "fp16", "kind": "weight"},
                            {"name": "y", "shape": [1, 16], "kind": "output"}],
                "ops": [{"name": "fc", "type": "matmul", "inputs": ["x", "w"], "outputs": ["y"],
                         "attrs": {"note": 1}},
                        {"name": "t2", "type": "task", "inputs": ["y"], "cycles": {"big": 100}, "after": ["fc"]}]}},
            {"name": "m", "generator": {"kind": "mlp", "layers": 1, "width": 4}},
        ]))
    g = spec.graph
    assert list(g.ops) == ["tiny/fc", "tiny/t2", "m/fc0"]
    fc, t2 = g.ops["tiny/fc"], g.ops["tiny/t2"]
    assert (fc.inputs, fc.outputs, fc.model, dict(fc.attrs)) == (("tiny/x", "tiny/w"), ("tiny/y",), "tiny", {"note": 1})
    assert (t2.after, dict(t2.cycles), t2.model) == (("tiny/fc",), {"big": 100}, "tiny")
    assert g.tensors["tiny/w"].size_bytes == 16 * 16 * 2 and g.tensors["tiny/w"].kind == "weight"
    assert spec.op_cycles == {"tiny/t2": {"big": 100}}
    assert spec.models == ("tiny", "m")


def test_defaults_and_names(tmp_path):
    spec = load_spec(spec_dict())
    assert (spec.name, spec.source, spec.objective) == ("spec", None, "latency")
    assert (spec.time_limit_s, spec.workers, spec.seed) == (30.0, 2, 0)
    assert spec.hardware.clock_hz == 10**9 and spec.hardware.links == ()
    assert spec.allowed_devices == {} and spec.colocation_groups == ()
    file = tmp_path / "my-net.yaml"
    file.write_text("version: 1\nhardware: {devices: [{name: c, profile: generic}]}\n"
                    "models: [{name: m, generator: {kind: mlp}}]\n"
                    "objective: throughput\nsolver: {time_limit: 1500 ms, workers: 1, seed: 7}\n")
    spec = load_spec(str(file))
    assert (spec.name, spec.source, spec.objective) == ("my-net", file, "throughput")
    assert (spec.time_limit_s, spec.workers, spec.seed) == (1.5, 1, 7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "x"


def test_deterministic():
    a = load_spec(ROOT / "specs" / "pinned.yaml")
    b = load_spec(ROOT / "specs" / "pinned.yaml")
    assert a.graph.topological_order() == b.graph.topological_order()
    assert a.hardware == b.hardware and a.allowed_devices == b.allowed_devices
    assert list(a.allowed_devices) == list(b.allowed_devices)


def _tiny_onnx(path: Path) -> None:
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])])
    helper.onnx.save(helper.make_model(g), path)


def test_onnx_graph_relative_to_spec(tmp_path):
    pytest.importorskip("onnx")
    (tmp_path / "models").mkdir()
    _tiny_onnx(tmp_path / "models" / "r.onnx")
    file = tmp_path / "s.yaml"
    file.write_text("version: 1\nhardware: {devices: [{name: c, profile: generic}]}\n"
                    "models: [{name: net, graph: {onnx: models/r.onnx}}]\n")
    spec = load_spec(file)
    assert [(o.type, o.model, o.inputs, o.outputs) for o in spec.graph.ops.values()] == [
        ("relu", "net", ("net/x",), ("net/y",))]
    # a dict resolves relative paths against base_dir
    spec2 = load_spec({"version": 1, "hardware": {"devices": [{"name": "c", "profile": "generic"}]},
                       "models": [{"name": "net", "graph": {"onnx": "models/r.onnx"}}]}, base_dir=tmp_path)
    assert list(spec2.graph.ops) == list(spec.graph.ops)


def test_onnx_import_unavailable(tmp_path, monkeypatch):
    (tmp_path / "r.onnx").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "onnx", None)   # the optional package: import now raises ImportError
    with pytest.raises(SpecError) as info:
        load_spec({"version": 1, "hardware": {"devices": [{"name": "c", "profile": "generic"}]},
                   "models": [{"name": "net", "graph": {"onnx": "r.onnx"}}]}, base_dir=tmp_path)
    assert info.value.path == "models[0].graph.onnx"
    assert "ONNX import is not available" in info.value.message
