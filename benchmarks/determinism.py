"""Determinism and time use of ``plan solve``: wall time used against the limit, idle and loaded,
and whether two runs give byte-identical output directories.

Each case runs ``plan solve`` in a subprocess, ``--repeat`` times per condition: ``idle`` (nothing
else started by this script; the machine may be shared, so the load average is recorded) and
``loaded`` (two CPU-bound processes spawned here run throughout). A row gives the wall time
used, the CPU time, the objective, ``solver.stopped_by`` from plan.json and whether every
output file of the repeats is byte-identical.

    python -m benchmarks.determinism                       # all cases, 30 s, idle and loaded
    python -m benchmarks.determinism --only demo --repeat 2 --conditions loaded
    python -m benchmarks.determinism --search until-limit  # the non-reproducible mode

Cases: the demo spec (259 ops); inception_v1 (201 ops) from the onnx package's light test
models, imported with ``plan import`` and put on the demo's hardware; resnet50 (230 ops) imported
the same way and put on the README's hardware (2 TPU v4 + 2 edge NPUs, all-to-all links: the
ResNet-50 case of the determinism issue); a 1,033-op transformer (``benchmarks.spine.large_spec``).
ONNX cases are left out when the onnx package is missing. ``--tree DIR`` runs ``plan solve``
from another checkout (e.g. an older commit unpacked with ``git archive``), for before/after
tables measured in one session.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._machine import machine_facts

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["cases", "run_plan_solve", "directory_digest", "cpu_hogs", "main"]


def _onnx_light(name: str) -> Path | None:
    try:
        import onnx
    except ImportError:
        return None
    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"
    return path if path.exists() else None


# The README's spec-reference hardware.
README_HARDWARE = {"clock": "1 GHz", "devices": [{"name": "big", "profile": "tpu-v4", "count": 2},
                                                 {"name": "small", "profile": "edge-npu", "count": 2}],
                   "topology": {"kind": "all-to-all", "bandwidth": "50 GB/s", "latency": "2 us"}}


def _imported(name: str, workdir: Path, hardware: dict | None = None) -> Path | None:
    """``plan import`` the onnx package's light model ``name``, then give it ``hardware``
    (default: the demo's)."""
    import yaml

    source = _onnx_light(name)
    if source is None:
        return None
    raw = workdir / f"{name}-import.yaml"
    subprocess.run([sys.executable, "-m", "planner.cli", "import", str(source), "-o", str(raw)],
                   check=True, capture_output=True, cwd=ROOT)
    spec = yaml.safe_load(raw.read_text())
    spec["hardware"] = hardware or yaml.safe_load((ROOT / "specs" / "demo.yaml").read_text())["hardware"]
    spec["name"] = name
    spec.pop("solver", None)
    out = workdir / f"{name}.yaml"
    out.write_text(yaml.safe_dump(spec, sort_keys=False))
    return out


def cases(workdir: Path) -> list[tuple[str, Path]]:
    """(name, spec path) of every available case, written under ``workdir`` where generated."""
    import yaml

    from benchmarks.spine import large_spec

    found = [("demo", ROOT / "specs" / "demo.yaml")]
    for name, hardware in (("inception_v1", None), ("resnet50", README_HARDWARE)):
        path = _imported(name, workdir, hardware)
        if path is not None:
            found.append((name, path))
    large = workdir / "large-1000.yaml"
    large.write_text(yaml.safe_dump(large_spec(), sort_keys=False))
    found.append(("large-1000", large))
    return found


def directory_digest(path: Path) -> str:
    """SHA-256 over every file's relative name and bytes, in sorted order.

    >>> d = Path(tempfile.mkdtemp()); _ = (d / "a").write_text("x")
    >>> directory_digest(d) == directory_digest(d)
    True
    """
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f.relative_to(path).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _spin(seconds: float) -> None:  # pragma: no cover - runs in a child process
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


class cpu_hogs:
    """Context manager: ``n`` CPU-bound processes for at most ``seconds`` (stopped on exit).

    >>> with cpu_hogs(1, 0.2) as procs:
    ...     len(procs)
    1
    """

    def __init__(self, n: int = 2, seconds: float = 600.0) -> None:
        self.n, self.seconds = n, seconds
        self.procs: list[multiprocessing.Process] = []

    def __enter__(self) -> list[multiprocessing.Process]:
        ctx = multiprocessing.get_context("spawn")
        self.procs = [ctx.Process(target=_spin, args=(self.seconds,), daemon=True) for _ in range(self.n)]
        for p in self.procs:
            p.start()
        return self.procs

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join(5)


def run_plan_solve(spec: Path, out: Path, time_limit: float, extra: list[str] = (), tree: Path = ROOT) -> dict:
    """Run ``plan solve`` (of the checkout ``tree``) once in a subprocess; wall and CPU seconds,
    exit code, plan.json facts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "planner.cli", "solve", str(spec), "-o", str(out),
                           "--time-limit", str(time_limit), "--quiet", *extra],
                          capture_output=True, text=True, cwd=tree)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = {"exit": proc.returncode, "wall_s": round(wall, 2),
           "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
           "stderr": proc.stderr.strip()[-400:]}
    plan_json = out / "plan.json"
    if proc.returncode == 0 and plan_json.exists():
        plan = json.loads(plan_json.read_text())
        solver = plan.get("solver", {})
        row.update(objective=plan.get("objective"), bound=plan.get("bound"), status=plan.get("status"),
                   stopped_by=solver.get("stopped_by"), reproducible=solver.get("reproducible"),
                   digest=directory_digest(out))
    return row


def _measure(name: str, spec: Path, args, condition: str, workdir: Path) -> dict:
    runs = []
    for k in range(args.repeat):
        out = workdir / f"{name}-{condition}-{k}"
        runs.append(run_plan_solve(spec, out, args.time_limit, [*args.extra, "--search", args.search]
                                   if args.search else list(args.extra), args.tree))
    digests = {r.get("digest") for r in runs}
    return {"case": name, "condition": condition, "time_limit_s": args.time_limit, "search": args.search,
            "tree": str(args.tree),
            "runs": runs, "identical": len(digests) == 1 and None not in digests,
            "load_average": machine_facts()["load_average"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="run only cases whose name contains this")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--conditions", default="idle,loaded", help="comma-separated: idle, loaded")
    ap.add_argument("--search", default=None, help="pass --search to plan solve (e.g. until-limit)")
    ap.add_argument("--extra", nargs="*", default=[], help="more plan solve flags")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose plan solve runs")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="plan-determinism-") as tmp:
        workdir = Path(tmp)
        selected = [c for c in cases(workdir) if not args.only or args.only in c[0]]
        print(f"{'case':<14}{'cond':<8}{'limit':>6}{'wall s':>16}{'cpu s':>14}{'objective':>22}  identical  stopped_by")
        for condition in args.conditions.split(","):
            for name, spec in selected:
                if condition == "loaded":
                    with cpu_hogs(2, seconds=args.repeat * (4 * args.time_limit + 120)):
                        row = _measure(name, spec, args, condition, workdir)
                else:
                    row = _measure(name, spec, args, condition, workdir)
                rows.append(row)
                runs = row["runs"]
                print(f"{name:<14}{condition:<8}{args.time_limit:>6g}"
                      f"{' / '.join(str(r['wall_s']) for r in runs):>16}"
                      f"{' / '.join(str(r['cpu_s']) for r in runs):>14}"
                      f"{' / '.join(str(r.get('objective')) for r in runs):>22}  {str(row['identical']):<9}  "
                      f"{' / '.join(str(r.get('stopped_by')) for r in runs)}", flush=True)
                for r in runs:
                    if r["exit"] != 0:
                        print(f"    exit {r['exit']}: {r['stderr']}")
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"determinism-{time.strftime('%Y%m%d-%H%M%S')}.json"
    target.write_text(json.dumps({"machine": machine_facts(), "rows": rows}, indent=2))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
