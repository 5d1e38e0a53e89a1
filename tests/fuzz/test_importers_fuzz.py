"""The importer fuzzer (:mod:`tests.fuzz.importers`), briefly in the default suite.

``PLAN_FUZZ_EXAMPLES=N`` runs N inputs instead (every fourth imported spec is also solved),
and ``PLAN_FUZZ_REPORT=path.json`` appends the outcome counts (README, test section).
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx")

from tests.fuzz.cli_check import Tally  # noqa: E402
from tests.fuzz.importers import check_import, mutate_dnn, mutate_onnx, mutate_text, onnx_models, text_sources  # noqa: E402

LONG = int(os.environ.get("PLAN_FUZZ_EXAMPLES", "0"))
EXAMPLES = LONG or 60
MAX_SOLVES = 10**9 if LONG else 2


def test_fuzzed_imports_keep_the_cli_promise(tmp_path_factory):
    work = tmp_path_factory.mktemp("import-fuzz")
    tally = Tally("importers", keep_dir=work / "failures")
    sources = text_sources()
    imported: list[int] = []

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one_input(data):
        dims: list[str] = []
        if data.draw(st.integers(0, 2)) < 2 or not sources:
            payload = mutate_onnx(data.draw, data.draw(onnx_models()))
            ext = data.draw(st.sampled_from([".onnx"] * 5 + ["", ".json", ".stg"]))
            dims = data.draw(st.sampled_from([[], [], [], ["N=2"], ["batch=0"], ["x"]]))
        else:
            src = data.draw(st.sampled_from(sources))
            text = src.read_text()
            payload = mutate_dnn(data.draw, text) if src.suffix == ".json" else mutate_text(data.draw, text)
            ext = data.draw(st.sampled_from([src.suffix] * 5 + ["", ".md", ".json", ".stg", ".onnx"]))
        solve = len(imported) % 4 == 0 and len(imported) // 4 < MAX_SOLVES
        run = check_import(payload, "input" + ext, work, tally, dims=dims, solve=solve)
        if run.code == 0:
            imported.append(1)

    one_input()
    summary = tally.summary()
    if os.environ.get("PLAN_FUZZ_REPORT"):
        with open(os.environ["PLAN_FUZZ_REPORT"], "a") as f:
            f.write(json.dumps(summary) + "\n")
    assert tally.inputs == EXAMPLES
    assert summary["outcomes"].get("import: exit 0", 0) > 0 and summary["outcomes"].get("import: exit 2", 0) > 0
    tally.check()
