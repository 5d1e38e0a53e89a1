"""What a cycle-time window's build costs (``WINDOW_ELEMENTS_PER_UNIT``, issue 14 item 2).

For two-branch instances of ``benchmarks/memory_plans.py`` (25, 81, 161 and 301 ops by default),
the several-stream device's level problem and the plan the windows start from are taken from
``plan solve``'s own call (every device sent to the windows first), then 12-op windows at four
places are built (:func:`~solvers.memory.levels.stream_time_windows.build_window_model`) and
presolved by CP-SAT (probing off, stopped after presolve). Per window: segments, pairs, CPU
seconds, and elements (segments + pairs + ops) per deterministic unit at the memory-levels
calibration (``MEMORY_LEVELS``), the rate :data:`WINDOW_ELEMENTS_PER_UNIT` should not exceed.

    python -m benchmarks.window_build [--layers 6 20 40 75]
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

__all__ = ["window_inputs", "measure", "main"]


class _Captured(Exception):
    """Carries the windows' inputs out of ``plan solve``."""


def window_inputs(layers: int):
    """(level problem, incumbent, alignment) of the two-branch instance with ``layers`` per branch."""
    import planner.memory.streams as streams
    from benchmarks import memory_plans

    def capture(problem, incumbent, options, budget, amount, alignment_bytes=1, **kw):
        raise _Captured(problem, incumbent, alignment_bytes)

    with mock.patch.object(streams, "solve_stream_time_windows", capture), \
            mock.patch.object(streams, "WINDOWS_FIRST_PAIRS", 0):
        try:
            memory_plans.run_one(f"two-branches-{4 * layers + 1}-ops", memory_plans.two_branch_spec(layers), None,
                                 False)
        except _Captured as got:
            return got.args
    raise RuntimeError("the windows were not called")


def measure(problem, incumbent, alignment_bytes: int, first_op: int) -> dict:
    """One 12-op window's build and presolve, in CPU seconds and elements per unit."""
    from ortools.sat.python import cp_model

    from solvers.budget import MEMORY_LEVELS
    from solvers.memory.levels.stream_time_windows import access_offsets, build_window_model

    offsets = access_offsets(problem, incumbent, alignment_bytes)
    t = time.process_time()
    model, _, info = build_window_model(problem, incumbent, range(first_op, min(problem.num_ops, first_op + 12)),
                                        alignment_bytes, offsets)
    build = time.process_time() - t
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.stop_after_presolve = True
    solver.parameters.cp_model_probing_level = 0
    t = time.process_time()
    solver.solve(model)
    presolve = time.process_time() - t
    elements = info["segments"] + info["pairs"] + problem.num_ops
    return {**info, "ops": problem.num_ops, "window": first_op, "elements": elements, "build_cpu_s": round(build, 3),
            "presolve_cpu_s": round(presolve, 3),
            "elements_per_unit": round(elements / ((build + presolve) * MEMORY_LEVELS.units_per_second))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[6, 20, 40, 75])
    args = ap.parse_args(argv)
    rates = []
    for layers in args.layers:
        problem, incumbent, alignment = window_inputs(layers)
        n = problem.num_ops
        for first in sorted({0, max(0, n // 3 - 6), max(0, 2 * n // 3 - 6), max(0, n - 12)}):
            row = measure(problem, incumbent, alignment, first)
            rates.append(row["elements_per_unit"])
            print(row, flush=True)
    print({"windows": len(rates), "elements_per_unit_min": min(rates),
           "elements_per_unit_median": statistics.median(rates), "elements_per_unit_max": max(rates)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
