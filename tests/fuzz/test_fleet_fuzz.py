"""The fleet fuzzer (:mod:`tests.fuzz.fleet`), briefly in the default suite.

``PLAN_FUZZ_EXAMPLES=N`` runs N specs instead (every valid one is also solved), and
``PLAN_FUZZ_REPORT=path.json`` writes the outcome counts; both are in the README's test section.
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz.cli_check import Tally
from tests.fuzz.fleet import check_fleet_spec, dump, fleet_documents, make_plan_files, mutations, text_mutations

LONG = int(os.environ.get("PLAN_FUZZ_EXAMPLES", "0"))
EXAMPLES = LONG or 60
SOLVES = EXAMPLES if LONG else 3  # the default run solves only the first few valid specs (each up to 2 s)


def test_fuzzed_fleet_specs_keep_the_cli_promise(tmp_path_factory):
    work = tmp_path_factory.mktemp("fleet-fuzz")
    plan_files = make_plan_files(work / "plans")
    tally = Tally("fleet", keep_dir=work / "failures")
    solved = []

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one_spec(data):
        doc = data.draw(fleet_documents(plan_files))
        mutations(data.draw, doc)
        text = text_mutations(data.draw, dump(doc))
        check_fleet_spec(text, work, tally, solve=len(solved) < SOLVES)
        if tally.counts.get("solve: exit 0", 0) + tally.counts.get("solve: exit 1", 0) > len(solved):
            solved.append(1)

    one_spec()
    summary = tally.summary()
    if os.environ.get("PLAN_FUZZ_REPORT"):
        with open(os.environ["PLAN_FUZZ_REPORT"], "a") as f:
            f.write(json.dumps(summary) + "\n")
    assert tally.inputs == EXAMPLES
    assert summary["outcomes"].get("validate: exit 0", 0) > 0  # the fuzzer reaches valid specs too
    tally.check()
