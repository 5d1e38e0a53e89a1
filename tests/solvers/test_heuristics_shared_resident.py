"""The heuristics count a weight or graph input several ops read once per device, as the exact
model, the pre-check and the validator do (solvers/scheduling/resident.py): HEFT, its first-fit
fallback, the placement LNS, the hierarchical LNS's memory check and re-planning's headroom."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from planner.reductions.scheduling import to_problem
from planner.spec import load_spec
from solvers.core import SolveOptions, Status
from solvers.scheduling import HeftScheduler, SchedulingProblem, validate_schedule
from solvers.scheduling.fallback import first_fit_placement
from solvers.scheduling.resident import ResidentLedger
from tests.solvers.test_shared_resident import shared_problems
from tests.sweeps import examples, random_sweep

FORK = Path(__file__).resolve().parents[1] / "data" / "specs" / "shared-input-fork.yaml"


def random_shared(rng: random.Random, n: int) -> tuple[list[int], list[tuple[int, tuple[int, ...]]]]:
    """Resident bytes of ``n`` ops (0-3 of their own) and one to three tensors of 1-9 bytes that
    two or more of them read, each reader's resident bytes counting it (the problems' rule)."""
    resident = [rng.randint(0, 3) for _ in range(n)]
    shared = []
    for _ in range(rng.randint(1, 3)):
        readers = tuple(sorted(rng.sample(range(n), rng.randint(2, n))))
        size = rng.randint(1, 9)
        shared.append((size, readers))
        for i in readers:
            resident[i] += size
    return resident, shared

def _fork() -> SchedulingProblem:
    problem, _ = to_problem(load_spec(FORK))
    return problem


def test_heft_plans_the_fork_of_five_readers_at_its_optimum():
    # Five readers of one 12-KiB input on two devices of 20 KiB: counted per reader, no device
    # held a second reader and HEFT found nothing ("some op has no admissible device"). Counted
    # once it puts four readers and the join on fast, one on slow: 5,000, the proven optimum.
    p = _fork()
    r = HeftScheduler().solve(p, SolveOptions())
    assert (r.status, r.objective) == (Status.FEASIBLE, 5000)
    assert validate_schedule(p, r.solution) == []
    assert sorted(r.solution.op_device).count(0) == 5  # four readers and the join on fast
    assert HeftScheduler().solve(replace(p, shared_resident=())).solution is None  # per reader


def test_first_fit_places_every_reader_where_the_input_is_held_once():
    p = replace(_fork(), device_memory_bytes=(14 * 1024, 14 * 1024))
    assert first_fit_placement(p) == (0,) * 6  # x's 12 KiB held once: every op fits the first device
    assert first_fit_placement(replace(p, shared_resident=())) is None


def test_the_ledger_counts_as_the_validators_rule_after_any_moves():
    rng = random.Random(7)
    for _ in range(30):
        n, nd = rng.randint(2, 7), rng.randint(1, 3)
        resident, shared = random_shared(rng, n)
        p = SchedulingProblem(((1,) * nd,) * n, (), (1,) * nd,
                              tuple(tuple(-1 if a == b else 0 for b in range(nd)) for a in range(nd)),
                              (), op_resident_bytes=tuple(resident),
                              shared_resident=tuple(shared))
        dev = [rng.randrange(nd) for _ in range(n)]
        ledger = ResidentLedger(p, dev)
        for _ in range(10):
            i, d = rng.randrange(n), rng.randrange(nd)
            if dev[i] != d:
                assert ledger.held[d] + ledger.added((i,), d) == p.device_resident_bytes(
                    d, [d if j == i else x for j, x in enumerate(dev)])
            ledger.remove((i,), dev[i])
            dev[i] = d
            ledger.add((i,), d)
            assert ledger.held == [p.device_resident_bytes(e, dev) for e in range(nd)]


_SETTINGS = settings(max_examples=examples(15, 200), deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@random_sweep
@_SETTINGS
@given(shared_problems())
def test_heft_with_shared_tensors_is_valid_and_plans_wherever_the_per_reader_count_did(p):
    h = HeftScheduler().solve(p)
    if h.solution is not None:
        assert validate_schedule(p, h.solution) == []
    if HeftScheduler().solve(replace(p, shared_resident=())).solution is not None:
        assert h.solution is not None
