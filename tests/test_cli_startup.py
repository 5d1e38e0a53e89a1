"""A spec refused at once (bad YAML, a schema error, a missing file) is refused before the
solver stack loads: no OR-Tools, pandas or networkx in the process (about 0.8 CPU-s saved per
refusal, measured in mends13's report). One child process runs every refusal and reports
what it loaded after each."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.cli_process import ROOT, child_env

HEAVY = ("ortools", "pandas", "networkx")

_CHILD = """
import json, sys
from planner.cli import main
seen = {}
for args in json.loads(sys.argv[1]):
    try:
        main(args)
    except SystemExit as e:
        seen[args[1]] = [e.code, sorted(m for m in sys.modules if m.split(".")[0] in %r)]
print(json.dumps(seen))
""" % (HEAVY,)


def test_refusals_never_load_the_solver_stack(tmp_path):
    bad = ROOT / "tests" / "data" / "specs" / "bad"
    runs = [["solve", str(bad / "malformed_yaml.yaml"), "-o", str(tmp_path / "a"), "--quiet"],
            ["solve", str(bad / "unknown_key.yaml"), "-o", str(tmp_path / "b"), "--quiet"],
            ["solve", str(tmp_path / "missing.yaml"), "-o", str(tmp_path / "c"), "--quiet"],
            ["validate", str(bad / "wrong_unit.yaml")]]
    child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(runs)], cwd=ROOT, env=child_env(),
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout.splitlines()[-1])
    assert seen == {args[1]: [2, []] for args in runs}, seen
    assert not any((tmp_path / name).exists() for name in "abc")
