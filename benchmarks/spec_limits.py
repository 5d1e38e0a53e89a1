"""Input limits (issue 9): specs at the documented limits load, oversized ones are refused cheaply.

Each case runs ``plan validate`` in a child forked from this process (the planner already
imported, as in the fuzzer's harness) and records its exit code, wall time and peak RSS.
Targets: a spec at the limits loads within seconds and a few hundred MB; every oversized
or hostile input is refused (exit 2) with a peak RSS well under 1 GiB.

    python -m benchmarks.spec_limits
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent
HEADER = "version: 1\nhardware:\n  devices: [{name: c, profile: generic}]\n"


def _chain(ops: int) -> str:
    """An inline graph of ``ops`` relus in a chain, one flow mapping per line."""
    lines = [HEADER + "models:\n  - name: m\n    graph:\n      tensors:"]
    lines += [f"        - {{name: t{i}, shape: [1, 64]{', kind: input' if i == 0 else ''}}}" for i in range(ops + 1)]
    lines.append("      ops:")
    lines += [f"        - {{name: o{i}, type: relu, inputs: [t{i}], outputs: [t{i + 1}]}}" for i in range(ops)]
    return "\n".join(lines) + "\n"


def _bomb() -> str:
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(rows) + "\n"


def cases() -> list[tuple[str, str, bool]]:
    """(name, spec text, expected valid)."""
    from planner.spec.limits import MAX_OPS

    layers = (MAX_OPS - 1) // 15  # transformer with one head: 15 ops per layer
    return [
        (f"transformer generator, {layers * 15 + 1:,} ops (the op limit)",
         HEADER + f"models: [{{name: g, generator: {{kind: transformer, layers: {layers}, heads: 1, d_model: 8, "
                  "seq: 4, dtype: fp32}}]\n", True),
        ("inline chain, 10^5 ops (~11 MiB)", _chain(100_000), True),
        ("inline chain, 131,072 ops (the op limit, ~14.5 MiB)", _chain(131_072), True),
        ("generator, layers 10^9", HEADER + "models: [{name: g, generator: {kind: transformer, layers: 1000000000}}]\n",
         False),
        ("all-to-all over 256 devices", "version: 1\nhardware:\n  devices: [{name: c, profile: generic, count: 256}]\n"
         "  topology: {kind: all-to-all, bandwidth: 1 GB/s}\nmodels: [{name: m, generator: {kind: mlp}}]\n", False),
        ("billion laughs (10^10 values, 1 KB)", _bomb(), False),
        ("10^5 nested '['", "a: " + "[" * 100_000 + "]" * 100_000 + "\n", False),
        ("16 MiB + 1 byte", "#" * (16 * 2**20) + "\n", False),
        ("inline chain, 140,000 ops (over the op limit)", _chain(140_000), False),
        ("inline chain, 150,000 ops (over 16 MiB)", _chain(150_000), False),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None, help="JSON results path")
    args = parser.parse_args(argv)

    import planner.cli  # noqa: F401 - imported once; every case is a fork of this process
    from tests.fuzz.harness import run_plan

    rows = []
    work = Path(tempfile.mkdtemp(prefix="plan-spec-limits-"))
    try:
        for i, (name, text, valid) in enumerate(cases()):
            cwd = work / f"case{i}"
            cwd.mkdir()
            (cwd / "spec.yaml").write_text(text)
            run = run_plan(["validate", "spec.yaml"], cwd, timeout_s=300)
            ok = run.code == (0 if valid else 2) and "Traceback" not in run.stderr
            row = {"case": name, "bytes": len(text), "exit": run.code, "expected_exit": 0 if valid else 2,
                   "wall_s": round(run.wall_s, 2), "peak_rss_mib": round(run.peak_rss_bytes / 2**20),
                   "ok": ok, "message": (run.stdout or run.stderr).strip().splitlines()[-1][:160]}
            rows.append(row)
            print(f"{name:44} exit {run.code} ({'ok' if ok else 'UNEXPECTED'})  {run.wall_s:6.1f} s  "
                  f"{row['peak_rss_mib']:5} MiB  {row['message'][:90]}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    default = ROOT / "benchmarks" / "results" / f"spec-limits-{time.strftime('%Y-%m-%d')}.json"
    out = Path(args.out) if args.out else default
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine_facts(), "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
