"""Contiguous splits with away blocks (solvers.scheduling.contiguous): blocks of the order may
run on a pool of unlimited memory (the CPU cores) instead of an accelerator of their own."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import solvers.scheduling.contiguous as contiguous
from solvers.scheduling.contiguous import away_pools, best_away_splits, contiguous_schedule
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.problem import SchedulingProblem
from solvers.scheduling.validate import objective_value, validate_schedule


def _cpu_first_chain() -> SchedulingProblem:
    """A chain a -> b -> c -> d of 5-byte ops on one 10-byte accelerator (device 0, 1 cycle per
    op) and one CPU without a memory limit (device 1: a and b 2 cycles, c and d 5); transfers
    a -> b 9, b -> c 1, c -> d 9 cycles."""
    return SchedulingProblem(((1, 2), (1, 2), (1, 5), (1, 5)), ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
                             ((-1, 0), (0, -1)), ((9,), (1,), (9,)), device_memory_bytes=(10, 0),
                             op_resident_bytes=(5, 5, 5, 5))


def test_a_cpu_block_wins_where_no_accelerator_split_fits():
    # The accelerator holds two of the four ops, so every split on it alone is invalid. Hand-checked
    # optimum 7: a, b on the CPU (2 + 2), the 1-cycle transfer b -> c, c, d on the accelerator (1 + 1).
    # The other orders cost more: c, d on the CPU 2 + 1 + 10 = 13; all on the CPU 14; HEFT (a, b on
    # the accelerator, memory then sends c and d to the CPU) 13.
    p = _cpu_first_chain()
    s = contiguous_schedule(p)
    assert s is not None and not validate_schedule(p, s)
    assert s.op_device == (1, 1, 0, 0)
    assert objective_value(p, s) == 7
    assert objective_value(p, heft_schedule(p)) == 13


def test_without_away_blocks_only_the_cpu_alone_fits(monkeypatch):
    # the accelerator alone cannot hold the chain; the CPU pool as a home of its own runs it all (14)
    monkeypatch.setattr(contiguous, "_away_placements", lambda problem, order, max_positions, fastest=None, pools=None: iter(()))
    p = _cpu_first_chain()
    s = contiguous_schedule(p)
    assert s.op_device == (1, 1, 1, 1) and objective_value(p, s) == 14


def test_away_pools_are_the_unlimited_ones():
    assert away_pools(_cpu_first_chain()) == [(1,)]


def _brute_force(home: np.ndarray, away: np.ndarray, m: int) -> float:
    """The cheapest split with m home blocks, at least one away block, no two away blocks in a row."""
    n = home.shape[0] - 1
    best = np.inf
    for k in range(1, n + 1):
        for inner in itertools.combinations(range(1, n), k - 1):
            cuts = (0, *inner, n)
            for flags in itertools.product((False, True), repeat=k):
                if sum(not f for f in flags) != m or not any(flags):
                    continue
                if any(a and b for a, b in zip(flags, flags[1:])):
                    continue
                best = min(best, sum((away if f else home)[cuts[b], cuts[b + 1]] for b, f in enumerate(flags)))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_away_dynamic_program_matches_brute_force(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 6)

    def costs() -> np.ndarray:
        c = np.full((n + 1, n + 1), np.inf)
        for i in range(n):
            for j in range(i + 1, n + 1):
                if rng.random() < 0.85:
                    c[i, j] = rng.randint(0, 20)
        return c

    home, away = costs(), costs()
    max_home = rng.randint(0, 4)
    got = best_away_splits(home, away, max_home)
    for m in range(max_home + 1):
        want = _brute_force(home, away, m)
        if not np.isfinite(want):
            assert m not in got
            continue
        cuts, flags = got[m]
        assert cuts[0] == 0 and cuts[-1] == n and all(a < b for a, b in zip(cuts, cuts[1:]))
        assert sum(not f for f in flags) == m and any(flags)
        assert not any(a and b for a, b in zip(flags, flags[1:]))
        assert sum((away if f else home)[cuts[b], cuts[b + 1]] for b, f in enumerate(flags)) == want


def _random_cpu_problem(seed: int) -> SchedulingProblem:
    """A random DAG of 5-9 ops on two accelerators that hold a third of the weights each and
    two slower CPUs without a limit; one link per device pair."""
    rng = random.Random(seed)
    n = rng.randint(5, 9)
    edges = sorted({(u, v, rng.randint(0, 4)) for _ in range(2 * n) for u, v in [sorted(rng.sample(range(n), 2))]})
    edges = sorted({(u, v): (u, v, b) for u, v, b in edges}.values())
    durations = tuple((a, a, c, c) for a, c in ((rng.randint(1, 4), rng.randint(2, 12)) for _ in range(n)))
    weights = tuple(rng.randint(1, 5) for _ in range(n))
    cap = max(max(weights), sum(weights) // 3)
    link = tuple(tuple(-1 if a == b else [0, 1, 2, 3, 4, 5][min(a, b) * (7 - min(a, b)) // 2 + abs(a - b) - 1]
                       for b in range(4)) for a in range(4))
    return SchedulingProblem(durations, tuple(edges), (1, 1, 1, 1), link,
                             tuple((rng.randint(0, 6),) * 6 for _ in edges), device_memory_bytes=(cap, cap, 0, 0),
                             op_resident_bytes=weights)


@pytest.mark.parametrize("seed", range(25))
def test_away_splits_are_valid_deterministic_and_never_worse(seed, monkeypatch):
    p = _random_cpu_problem(seed)
    s = contiguous_schedule(p)
    assert s is not None and not validate_schedule(p, s)
    assert contiguous_schedule(p) == s  # deterministic
    for placement in contiguous._away_placements(p, tuple(range(p.num_ops)), 1200):
        assert all(p.durations_cycles[i][d] >= 0 for i, d in enumerate(placement))
    monkeypatch.setattr(contiguous, "_away_placements", lambda problem, order, max_positions, fastest=None, pools=None: iter(()))
    without = contiguous_schedule(p)
    assert without is None or objective_value(p, s) <= objective_value(p, without)


def test_cpsat_proves_the_cpu_block_split_optimal():
    # the split is a valid hint and CP-SAT proves nothing shorter exists (the hand-checked 7)
    from solvers.core import SolveOptions
    from solvers.scheduling import CpSatScheduler

    p = _cpu_first_chain()
    r = CpSatScheduler().solve(p, SolveOptions(time_limit_s=5, num_workers=1, hint=contiguous_schedule(p)))
    assert (r.status.value, r.objective, r.bound) == ("OPTIMAL", 7, 7)


@pytest.mark.parametrize("seed", range(10))
def test_the_default_start_is_never_worse_than_heft(seed):
    from solvers.hierarchical.strategy import _better_start

    p = _random_cpu_problem(seed)
    heft = heft_schedule(p)
    start, label = _better_start(p, heft, "heft", 0.0)
    assert not validate_schedule(p, start)
    assert objective_value(p, start) <= objective_value(p, heft)
    assert label in ("heft", "contiguous split")
