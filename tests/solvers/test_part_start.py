"""The part start (solvers.scheduling.part_start): stitched parts are valid schedules, never
below the exhaustive optimum, and the same twice; the incumbent's windows are kept where they
fit; the parts' split of a hand case."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from solvers.budget import SCHEDULING, Budget
from solvers.scheduling import SchedulingProblem
from solvers.scheduling.heft import heft_schedule
from solvers.scheduling.part_start import MODES, original_parts, part_start
from solvers.scheduling.validate import objective_value, validate_schedule
from tests.solvers.test_part_bound import shrinking_chains
from tests.solvers.test_scheduling_bruteforce import brute_force
from tests.sweeps import examples, random_sweep


@random_sweep
@settings(max_examples=examples(10, 150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(shrinking_chains())
def test_stitched_parts_are_valid_and_deterministic(p):
    opt = brute_force(p)
    for incumbent in (None, heft_schedule(p)):
        first, stats = part_start(p, incumbent, Budget.start(1, SCHEDULING), modes=MODES)
        again, _ = part_start(p, incumbent, Budget.start(1, SCHEDULING), modes=MODES)
        assert first == again
        if first is None:
            continue
        assert validate_schedule(p, first) == []
        assert opt is not None and objective_value(p, first) >= opt
        tried = [stats[f"part_start_{mode}"]["objective"] for mode in ("keep", "free") if f"part_start_{mode}" in stats]
        assert stats["part_start_objective"] == objective_value(p, first) == min(t for t in tried if t is not None)


def test_the_incumbent_window_is_kept_where_it_fits():
    """a -> b -> c -> d (2 cycles each, 6 bytes) on two 12-byte devices, tensors 5, 5, 2: the
    optimum 13 keeps a, b on one device and c, d on the other. From that incumbent both parts
    take its windows (4, and 5 + 2 + 2 = 9) and stitch back to 13."""
    p = SchedulingProblem(((2, 2),) * 4, ((0, 1, 0), (1, 2, 0), (2, 3, 0)), (1, 1),
                          ((-1, 0), (0, -1)), ((5,), (5,), (2,)), device_memory_bytes=(12, 12),
                          op_resident_bytes=(6, 6, 6, 6))
    assert original_parts(p, [1]) == [0, 0, 1, 1]
    incumbent = heft_schedule(p, (0, 0, 1, 1))
    assert objective_value(p, incumbent) == 13 == brute_force(p)
    found, stats = part_start(p, incumbent, Budget.start(1, SCHEDULING), modes=MODES)
    assert objective_value(p, found) == 13
    windows = stats["part_start_keep"]["windows"]
    assert [sorted(w) for w in windows] == [["heft", "incumbent"]] * 2 and windows[1]["incumbent"] == 9
    assert stats["part_start_free"]["objective"] == 13
