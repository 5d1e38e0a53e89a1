"""memory.json records the N-level re-solve's figures for a device whose kept plan is over every
level (``resolved_levels: all``; before, ``resolved_cycles`` stayed None there), and the verifier
checks them as the two-level ones: a lower bound above the plan it bounds is refused."""

from __future__ import annotations

import json
import shutil

import pytest

from planner.errors import VerificationError
from planner.output import write_plan_dir
from planner.pipeline import run
from planner.spec import load_spec
from planner.verify import verify_plan_dir
from tests.fuzz.plan_dirs import reseal

SPEC = "tests/data/specs/memdevices/four-level-homes.yaml"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    spec = load_spec(SPEC)
    out = tmp_path_factory.mktemp("homes") / "out"
    write_plan_dir(run(spec), spec, out)
    return out


def test_the_n_level_device_records_its_re_solve(written):
    # See the spec's header and test_n_level_homes: re-solved under x's arrival npu0 ends the
    # plan at 20,976 (proven: its bound), against 26,096 with everything at its home.
    npu = json.loads((written / "memory.json").read_text())["cross_device"]["npu0"]
    assert npu["plan"] == "n levels heads/tails"
    assert (npu["resolved_cycles"], npu["resolved_bound_cycles"], npu["resolved_main_cycles"]) == (20976, 20976, 26096)
    assert npu["resolved_levels"] == "all"
    edge = json.loads((written / "memory.json").read_text())["cross_device"]["edge0"]
    assert "resolved_levels" not in edge and edge["resolved_cycles"] is not None  # over two levels, as before
    assert "re-solved over every level with the other devices' waits and tails: 20,976 device cycles against " \
           "26,096 with everything at its home" in (written / "report.md").read_text()


@pytest.mark.parametrize("field, value, refused", [
    ("resolved_bound_cycles", 20977, "cross_device.npu0.resolved_bound_cycles"),
    ("n_level_cycles", None, "cross_device.npu0.resolved_levels")])
def test_the_verifier_refuses_a_bound_above_its_plan_and_an_unoffered_n_level_re_solve(written, tmp_path, field,
                                                                                        value, refused):
    out = tmp_path / "out"
    shutil.copytree(written, out)
    doc = json.loads((out / "memory.json").read_text())
    if value is None:
        del doc["cross_device"]["npu0"][field]
    else:
        doc["cross_device"]["npu0"][field] = value
    (out / "memory.json").write_text(json.dumps(doc, indent=2) + "\n")
    reseal(out)
    with pytest.raises(VerificationError, match=refused.replace(".", r"\.")):
        verify_plan_dir(out)
