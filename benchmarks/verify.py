"""What the verifier costs per solve: ``verify_plan_dir`` and the numeric replay on plan directories.

Solves each instance once with ``planner.pipeline.run`` (numeric replay off, so the solve's own
cost is not mixed in), writes its directory with ``planner.output.write_plan_dir``, then times
``planner.verify.verify_plan_dir`` (median of ``--repeat`` runs) and, below the default limit,
the numeric replay (``verify_plan_dir(numeric=True)`` minus the timing-only median).

Run: ``python -m benchmarks.verify [--repeat 5] [--time-limit 20] [--large]``; JSON lands in
``benchmarks/results/verify-<date>.json``. ``--large`` adds a 9,977-op transformer (the demo's
hardware, 232 layers; its solve alone takes about the time limit plus a minute).

Examples
--------
>>> [name for name, _ in instances()][:2]
['demo', 'memory-cnn']
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import REPO, print_table, write_results

__all__ = ["instances", "measure", "main"]


def transformer_2000() -> dict[str, Any]:
    """The demo's hardware with a 46-layer decoder: 46 * (11 + 4 * 8) + 1 = 1,979 ops."""
    import yaml

    spec = yaml.safe_load((REPO / "specs" / "demo.yaml").read_text())
    spec["name"] = "transformer-1979"
    spec["models"][0]["generator"]["layers"] = 46
    return spec


def transformer_10000() -> dict[str, Any]:
    """The demo's hardware with a 232-layer decoder: 232 * (11 + 4 * 8) + 1 = 9,977 ops."""
    spec = transformer_2000()
    spec["name"] = "transformer-9977"
    spec["models"][0]["generator"]["layers"] = 232
    return spec


def instances(large: bool = False) -> list[tuple[str, Any]]:
    return [("demo", REPO / "specs" / "demo.yaml"), ("memory-cnn", REPO / "specs" / "memory-cnn.yaml"),
            ("transformer-1979", transformer_2000()), *([("transformer-9977", transformer_10000())] if large else [])]


def measure(name: str, source: Any, time_limit: float, repeat: int, root: Path) -> dict[str, Any]:
    from planner.output import write_plan_dir
    from planner.pipeline import run
    from planner.spec import load_spec
    from planner.verify import NUMERIC_DEFAULT_MAX_INSTRUCTIONS, verify_plan_dir

    spec = load_spec(source)
    t0 = time.perf_counter()
    outcome = run(spec, time_limit_s=time_limit, workers=2, seed=0)
    solve_s = time.perf_counter() - t0
    out = root / name
    t0 = time.perf_counter()
    verdict = write_plan_dir(outcome, spec, out, numeric="off")
    write_s = time.perf_counter() - t0
    timings = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        verify_plan_dir(out)
        timings.append(time.perf_counter() - t0)
    verify_s = statistics.median(timings)
    numeric_s = None
    if verdict.instructions <= NUMERIC_DEFAULT_MAX_INSTRUCTIONS:
        t0 = time.perf_counter()
        numeric = verify_plan_dir(out, numeric=True).numeric
        numeric_s = time.perf_counter() - t0 - verify_s
        numeric_status = numeric.claim["status"]
    else:
        numeric_status = "too-large"
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"instance": name, "ops": len(outcome.plan.ops), "devices": len(spec.hardware.devices),
            "instructions": verdict.instructions, "directory_bytes": size, "solve_s": round(solve_s, 2),
            "write_and_verify_s": round(write_s, 3), "verify_median_s": round(verify_s, 3),
            "verify_runs_s": [round(t, 3) for t in timings], "numeric_s": None if numeric_s is None else
            round(numeric_s, 3), "numeric": numeric_status,
            "verify_share_of_solve": round(verify_s / solve_s, 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="verifier runs per instance (median reported)")
    parser.add_argument("--time-limit", type=float, default=20.0, help="solver seconds per instance")
    parser.add_argument("--large", action="store_true", help="also the 9,977-op transformer")
    parser.add_argument("--out", default=None, help="results JSON (default benchmarks/results/verify-<date>.json)")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="plan-verify-bench-") as root:
        for name, source in instances(args.large):
            rows.append(measure(name, source, args.time_limit, args.repeat, Path(root)))
    print_table("verifier cost per plan directory", ["instance", "ops", "instructions", "MB", "solve s",
                                                      "verify s (median)", "numeric s", "verify / solve"],
                [[r["instance"], r["ops"], r["instructions"], round(r["directory_bytes"] / 1e6, 2), r["solve_s"],
                  r["verify_median_s"], r["numeric_s"], r["verify_share_of_solve"]] for r in rows])
    path = write_results("verify", rows, {"instances": len(rows)}, args, args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
