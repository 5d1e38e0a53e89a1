"""Memory-planning benchmark: offsets (CP-SAT vs greedy-by-size vs first-fit vs the live
lower bound) and level assignment (CP-SAT vs greedy vs everything-in-HBM).

Run: ``python benchmarks/memory.py [--quick] [--time-limit S] [--workers N] [--levels-only]
[--case NAME ...]``. Prints a table and writes JSON (machine facts, date) to
``benchmarks/results/``. The level table gives the lower bound (for split problems, the
minimum over the expansions), each solver's makespan, CP-SAT's gap to its bound and what
stopped it (deterministic budget or the wall clock).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._machine import machine_facts  # noqa: E402
from solvers.core import SolveOptions  # noqa: E402
from solvers.memory import fast_offset_problem  # noqa: E402
from solvers.memory.levels import (  # noqa: E402
    AllSlowLevelSolver, CpSatLevelSolver, GreedyLevelSolver, LevelProblem, SplitGroup, expand_splits, level_metrics,
    makespan_lower_bound, split_factor_choices, validate_levels,
)
from solvers.memory.offsets import (  # noqa: E402
    CpSatOffsetSolver, FirstFitOffsetSolver, GreedyBySizeOffsetSolver, OffsetProblem, live_bytes_lower_bound,
    validate_offsets,
)

__all__ = ["random_offsets", "cnn_offsets", "transformer_offsets", "transformer_levels", "cnn_levels",
           "level_lower_bound", "main"]

KiB = 1024


# ------------------------------------------------------------------ offset instances ---

def random_offsets(n: int, seed: int) -> OffsetProblem:
    """n buffers, starts uniform over n/2 steps, lengths 1..24, sizes log-uniform 256 B..64 KiB."""
    rng = random.Random(seed)
    starts = [rng.randrange(max(1, n // 2)) for _ in range(n)]
    ends = [s + rng.randint(1, 24) for s in starts]
    sizes = [int(256 * 2 ** rng.uniform(0, 8)) for _ in range(n)]
    return OffsetProblem(tuple(sizes), tuple(starts), tuple(ends), 1 << 40, alignment_bytes=(64,) * n)


def cnn_offsets(n: int, seed: int) -> OffsetProblem:
    """ResNet-like lifetimes: per block conv1 -> conv2 -> add, the block input lives until the
    add (skip), im2col scratch lives one step; spatial size halves every few blocks."""
    rng = random.Random(seed)
    sizes, starts, ends = [], [], []
    step, act = 0, 64 * 56 * 56
    block = 0
    while len(sizes) < n:
        if block and block % 4 == 0:
            act //= 2
        x_start = step
        for _ in range(2):  # conv: scratch + output
            sizes.append(act * rng.choice((2, 3)) // 2)
            starts.append(step)
            ends.append(step + 1)
            sizes.append(act)
            starts.append(step)
            ends.append(step + 2)
            step += 1
        sizes.append(act)  # the block input, kept for the residual add
        starts.append(max(0, x_start - 1))
        ends.append(step + 1)
        step += 1
        block += 1
    k = n
    return OffsetProblem(tuple(sizes[:k]), tuple(starts[:k]), tuple(ends[:k]), 1 << 40, alignment_bytes=(64,) * k)


def transformer_offsets(n: int, seed: int, d: int = 512, seq: int = 128) -> OffsetProblem:
    """Transformer-layer lifetimes: q, k, v live until the attention output; scores and
    probabilities (seq x seq x heads) are short and large; the MLP hidden is 4x; the residual
    stream lives across the whole layer."""
    rng = random.Random(seed)
    heads = 8
    a, s, h = seq * d * 2, seq * seq * heads * 2, 4 * seq * d * 2
    sizes, starts, ends = [], [], []
    step = 0
    while len(sizes) < n:
        jitter = rng.choice((1, 1, 2))
        layer = [  # (size, start offset, length)
            (a, 0, 12),  # residual stream in
            (a, 1, 3), (a, 1, 4), (a, 1, 4),  # q, k, v
            (s, 2, 2), (s, 3, 2),  # scores, probs
            (a, 4, 2),  # attention out
            (a, 5, 3),  # residual after attention
            (a, 6, 2),  # layer norm
            (h, 7, 2), (h, 8, 2 * jitter),  # mlp hidden, activation
            (a, 9, 2),  # mlp out
        ]
        for size, off, length in layer:
            sizes.append(size)
            starts.append(step + off)
            ends.append(step + off + length)
        step += 10
    k = n
    return OffsetProblem(tuple(sizes[:k]), tuple(starts[:k]), tuple(ends[:k]), 1 << 40, alignment_bytes=(64,) * k)


# ------------------------------------------------------------------- level instances ---

def transformer_levels(layers: int, fast_kib: int, seed: int = 0) -> LevelProblem:
    """A decoder stack at small batch (memory-bound): per layer qkv, attention, out-proj,
    mlp-up, mlp-down, each reading its weight and the previous activation; the residual is
    re-read by the out-proj and the mlp-down. Fast: ``fast_kib`` at 64 B/cycle; slow and
    DMA 16 B/cycle (HBM), DMA latency 64 cycles."""
    rng = random.Random(seed)
    d, seq = 256, 16
    act = seq * d * 2
    sizes: list[int] = []
    names: list[str] = []

    def tensor(size: int, name: str) -> int:
        sizes.append(size)
        names.append(name)
        return len(sizes) - 1

    compute, reads, writes, op_names = [], [], [], []

    def op(name: str, c: int, rs, ws) -> None:
        compute.append(c)
        reads.append(tuple(rs))
        writes.append(tuple(ws))
        op_names.append(name)

    x = tensor(act, "x0")
    for layer in range(layers):
        wq = tensor(3 * d * d * 2 // 4, f"L{layer}.wqkv")  # int4-ish packed weights keep it small
        wo = tensor(d * d * 2 // 4, f"L{layer}.wo")
        w1 = tensor(4 * d * d * 2 // 4, f"L{layer}.w1")
        w2 = tensor(4 * d * d * 2 // 4, f"L{layer}.w2")
        qkv = tensor(3 * act, f"L{layer}.qkv")
        att = tensor(act, f"L{layer}.att")
        r1 = tensor(act, f"L{layer}.res1")
        hid = tensor(4 * act, f"L{layer}.hidden")
        out = tensor(act, f"L{layer}.out")
        mm = seq * d * d // 4096  # MACs / (a 64x64 MAC array): memory-bound at this batch
        jit = rng.uniform(0.8, 1.2)
        op(f"L{layer}.qkv", int(3 * mm * jit), (x, wq), (qkv,))
        op(f"L{layer}.attn", int(seq * seq * d // 32), (qkv,), (att,))
        op(f"L{layer}.proj", int(mm * jit), (att, wo, x), (r1,))
        op(f"L{layer}.up", int(4 * mm * jit), (r1, w1), (hid,))
        op(f"L{layer}.down", int(4 * mm * jit), (hid, w2, r1), (out,))
        x = out
    return LevelProblem(tuple(compute), tuple(reads), tuple(writes), tuple(sizes), (fast_kib * KiB, 1 << 34),
                        (64, 16), dma_bytes_per_cycle=16, dma_latency_cycles=64, live_out=(x,),
                        op_names=tuple(op_names), tensor_names=tuple(names))


def cnn_levels(blocks: int, fast_kib: int, seed: int = 0) -> LevelProblem:
    """A residual CNN: per block conv-a, conv-b, add, with the block input kept for the add;
    the first block's convs are a fast-only split group (its working set exceeds fast
    memory unless split). Fast: ``fast_kib`` at 64 B/cycle; slow and DMA 16 B/cycle."""
    rng = random.Random(seed)
    sizes, compute, reads, writes, splits = [], [], [], [], []

    def tensor(size: int) -> int:
        sizes.append(size)
        return len(sizes) - 1

    act = 48 * KiB
    x = tensor(act)
    for b in range(blocks):
        if b and b % 3 == 0:
            act //= 2
        wa, wb = tensor(9 * KiB), tensor(9 * KiB)
        ya, yb, z = tensor(act), tensor(act), tensor(act)
        c = int(act * rng.uniform(0.3, 0.6))
        first = len(compute)
        compute += [c, c, act // 64]
        reads += [(x, wa), (ya, wb), (yb, x)]
        writes += [(ya,), (yb,), (z,)]
        if b == 0:
            splits.append(SplitGroup(first, first + 1, (x, ya, yb), (1, 2, 4)))
        x = z
    fast_only = tuple(range(2)) if splits else ()
    return LevelProblem(tuple(compute), tuple(reads), tuple(writes), tuple(sizes), (fast_kib * KiB, 1 << 34),
                        (64, 16), dma_bytes_per_cycle=16, dma_latency_cycles=64, live_out=(x,),
                        fast_only_ops=fast_only, splits=tuple(splits))


# ----------------------------------------------------------------------------- runs ---

def run_offsets(sizes, time_limit: float, workers: int) -> list[dict]:
    rows = []
    for kind, gen in (("random", random_offsets), ("cnn", cnn_offsets), ("transformer", transformer_offsets)):
        for n in sizes:
            p = gen(n, seed=n)
            lb = live_bytes_lower_bound(p)
            row = {"family": "offsets", "instance": f"{kind}-{n}", "buffers": p.num_buffers, "lower_bound": lb}
            for solver in (GreedyBySizeOffsetSolver(), FirstFitOffsetSolver(), CpSatOffsetSolver()):
                r = solver.solve(p, SolveOptions(time_limit_s=time_limit, num_workers=workers))
                assert r.solution is not None and not validate_offsets(p, r.solution), solver.name
                row[solver.name] = {"peak": int(r.objective), "status": r.status.value, "time_s": r.wall_time_s,
                                    "bound": r.bound}
            row["cpsat_over_lb"] = row["cpsat"]["peak"] / lb
            row["greedy_over_lb"] = row["greedy-by-size"]["peak"] / lb
            rows.append(row)
    return rows


def run_levels(cases, time_limit: float, workers: int) -> list[dict]:
    rows = []
    for name, p in cases:
        row = {"family": "levels", "instance": name, "ops": p.num_ops, "tensors": p.num_tensors,
               "fast_bytes": p.capacity_bytes[0]}
        for solver in (AllSlowLevelSolver(), GreedyLevelSolver(), CpSatLevelSolver()):
            r = solver.solve(p, SolveOptions(time_limit_s=time_limit, num_workers=workers))
            entry = {"status": r.status.value, "time_s": r.wall_time_s,
                     "makespan": None if r.objective is None else int(r.objective), "bound": r.bound,
                     "gap": r.gap, "stopped_by": r.stats.get("stopped_by"),
                     "per_split": r.stats.get("per_split")}
            if r.solution is not None:
                errs = validate_levels(p, r.solution)
                assert not errs, (solver.name, errs[:3])
                m = level_metrics(p, r.solution)
                op, _ = fast_offset_problem(p, r.solution, alignment_bytes=64)
                o = CpSatOffsetSolver().solve(op, SolveOptions(time_limit_s=min(10.0, time_limit), num_workers=workers))
                entry.update(m.as_dict(), split_factors=list(r.solution.split_factors),
                             fast_live_lb=live_bytes_lower_bound(op),
                             fast_arena_peak=None if o.objective is None else int(o.objective))
            row[solver.name] = entry
        rows.append(row)
    return rows


def level_lower_bound(p: LevelProblem) -> int:
    """:func:`makespan_lower_bound`, minimised over the split expansions.

    Examples
    --------
    >>> level_lower_bound(transformer_levels(2, 48)), level_lower_bound(cnn_levels(4, 96))
    (56320, 184684)
    """
    if not p.splits:
        return makespan_lower_bound(p)
    return min(makespan_lower_bound(expand_splits(p, k)[0]) for k in split_factor_choices(p))


def _fmt(x) -> str:
    return "-" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def print_tables(off_rows, lvl_rows) -> None:
    if off_rows:
        print_offsets(off_rows)
    print_levels(lvl_rows)


def print_offsets(off_rows) -> None:
    print("\nOffsets (peak bytes; LB = max live bytes, alignment 64)")
    print(f"{'instance':<18}{'n':>5}{'LB':>12}{'greedy-size':>13}{'first-fit':>12}{'cp-sat':>12}"
          f"{'cp/LB':>8}{'gs/LB':>8}{'status':>10}{'t cp (s)':>10}")
    for r in off_rows:
        print(f"{r['instance']:<18}{r['buffers']:>5}{r['lower_bound']:>12}{r['greedy-by-size']['peak']:>13}"
              f"{r['first-fit']['peak']:>12}{r['cpsat']['peak']:>12}{r['cpsat_over_lb']:>8.4f}"
              f"{r['greedy_over_lb']:>8.4f}{r['cpsat']['status']:>10}{r['cpsat']['time_s']:>10.2f}")


def print_levels(lvl_rows) -> None:
    print("\nLevel assignment (makespan cycles; DMA hidden/total; fast peak vs arena)")
    print(f"{'instance':<22}{'ops':>5}{'tens':>6}{'LB':>9}{'all-HBM':>10}{'greedy':>10}{'cp-sat':>10}"
          f"{'bound':>10}{'gap':>7}{'status':>10}{'t (s)':>8}{'stop':>8}{'hidden/dma':>14}{'peak':>9}{'arena':>9}"
          f"{'k':>6}")
    for r in lvl_rows:
        c = r["cpsat"]
        gap = "-" if c.get("gap") is None else f"{100 * c['gap']:.2f}%"
        stop = {"deterministic_budget": "budget", "wall_time": "WALL", "wall_clock": "WALL", "time_limit": "limit", "finished": "done"}.get(
            c.get("stopped_by"), "-")
        print(f"{r['instance']:<22}{r['ops']:>5}{r['tensors']:>6}{_fmt(r.get('lower_bound')):>9}"
              f"{_fmt(r['all-in-hbm']['makespan']):>10}{_fmt(r['greedy']['makespan']):>10}{_fmt(c['makespan']):>10}"
              f"{_fmt(c.get('bound')):>10}{gap:>7}{c['status']:>10}{c['time_s']:>8.2f}{stop:>8}"
              f"{_fmt(c.get('dma_hidden_cycles')) + '/' + _fmt(c.get('dma_cycles')):>14}"
              f"{_fmt(c.get('fast_peak_bytes')):>9}{_fmt(c.get('fast_arena_peak')):>9}"
              f"{','.join(map(str, c.get('split_factors', []))) or '-':>6}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--time-limit", type=float, default=60.0, help="per-solve CP-SAT limit (s)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--levels-only", action="store_true", help="skip the offset instances")
    ap.add_argument("--case", action="append", default=[], help="level instance(s) to run (default: all)")
    args = ap.parse_args(argv)
    sizes = (50,) if args.quick else (50, 200, 500)
    cases = [("transformer-2L-48K", transformer_levels(2, 48)), ("cnn-4b-96K", cnn_levels(4, 96))]
    if not args.quick:
        cases += [("transformer-8L-64K", transformer_levels(8, 64)), ("cnn-12b-96K", cnn_levels(12, 96)),
                  ("transformer-50L-64K", transformer_levels(50, 64))]
    if args.case:
        unknown = set(args.case) - {name for name, _ in cases}
        if unknown:
            ap.error(f"unknown case(s) {sorted(unknown)}; known: {[name for name, _ in cases]}")
        cases = [(name, p) for name, p in cases if name in args.case]
    t0 = time.perf_counter()
    off_rows = [] if args.levels_only else run_offsets(sizes, args.time_limit, args.workers)
    lvl_rows = run_levels(cases, args.time_limit, args.workers)
    for (name, p), r in zip(cases, lvl_rows):
        r["lower_bound"] = level_lower_bound(p)
    print_tables(off_rows, lvl_rows)
    out = {
        "benchmark": "memory", "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_facts(),
        "settings": {"time_limit_s": args.time_limit, "workers": args.workers, "quick": args.quick,
                     "levels_only": args.levels_only, "cases": args.case},
        "total_time_s": time.perf_counter() - t0, "offsets": off_rows, "levels": lvl_rows,
    }
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    path = results / f"memory-{_dt.datetime.now(_dt.timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(out, indent=1, default=str))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
