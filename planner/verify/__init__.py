"""The independent verifier of plan directories (used by ``plan solve`` and ``plan simulate``).

It reads only a directory's files and checks every claim against the replay of its
binaries; nothing here imports the solve stage (``solvers``, ``planner.pipeline``,
``planner.memory`` or OR-Tools). ``docs/architecture.md`` ("The verifier") has the list.

Glossary
--------
claim          a figure a file states: an op's start, a transfer's link, the objective, a
               buffer's address, a DMA's trigger op, a level's peak...
replay         :func:`planner.simulator.simulate` on the binaries (their fast path): the
               ground truth every claim is checked against.
disagreement   a claim the replay (or another file) contradicts: the file, the field, what
               was expected and what was found (:class:`Disagreement`); the first one is
               refused with a :class:`~planner.errors.VerificationError` (exit 2).
manifest       ``plan.json`` ``files``: the sha256 of every other file of the directory.
seal           ``plan.json`` ``seal``: the sha256 of plan.json itself in canonical form.
numeric replay the binaries' arithmetic against a numpy evaluation of graph.json
               (:mod:`planner.verify.numeric`).

Examples
--------
>>> from planner.verify import verify_plan_dir, NUMERIC_DEFAULT_MAX_INSTRUCTIONS
>>> NUMERIC_DEFAULT_MAX_INSTRUCTIONS
100000
"""

from planner.verify.agreement import Disagreement, compare_with_plan
from planner.verify.directory import Verdict, numeric_replay_dir, verify_plan_dir
from planner.verify.jsonfile import parse_json, read_json
from planner.verify.numeric import (NUMERIC_DEFAULT_MAX_INSTRUCTIONS, NUMERIC_DEFAULT_MAX_MACS, NumericOutcome,
                                    describe, run_numeric)

__all__ = ["Disagreement", "compare_with_plan", "Verdict", "verify_plan_dir", "numeric_replay_dir", "parse_json", "read_json",
           "NUMERIC_DEFAULT_MAX_INSTRUCTIONS", "NUMERIC_DEFAULT_MAX_MACS", "NumericOutcome", "describe", "run_numeric"]
