"""The REINFORCE placement baseline: gradients, learning, determinism, validity, fallback, caps."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from solvers.core import SolveOptions, Status
from solvers.learned import (Decision, GroupPlacePolicy, PlacementDecoder, ReinforceOptions,
                             ReinforceScheduler, op_features, serial_upper_bound, train_policy)
from solvers.scheduling import HeftScheduler, SchedulingProblem, heft_schedule, validate_schedule
from tests.solvers.scheduling_instances import INSTANCES

FAST = ReinforceOptions(episodes=48, batch_size=8)


def chain_with_fast_device(length: int = 8) -> SchedulingProblem:
    """A chain of ``length`` ops; device 1 runs each in 2 cycles, device 0 in 4; every transfer
    costs 10. Optimum 2 * length: everything on device 1 (the critical path with the fastest
    durations, which the lower bound also proves); any split adds a 10-cycle transfer."""
    return SchedulingProblem(((4, 2),) * length, tuple((i, i + 1, 8) for i in range(length - 1)),
                             (1, 1), ((-1, 0), (0, -1)), ((10,),) * (length - 1))


def surrogate(policy: GroupPlacePolicy, x: np.ndarray, decisions, advantages, beta: float) -> float:
    out = policy.forward(x)
    value = np.mean([a * policy.log_prob(out, d) for d, a in zip(decisions, advantages)])
    return float(value + beta * policy.entropy(out))


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    problem = chain_with_fast_device(5)
    x = op_features(problem)
    policy = GroupPlacePolicy.initial(x.shape[1], 3, 2, 4, rng)
    for key in policy.params:  # away from the symmetric start, so every term matters
        policy.params[key] += rng.normal(0.0, 0.5, policy.params[key].shape)
    out = policy.forward(x)
    decisions = [policy.sample(out, rng) for _ in range(4)]
    advantages = np.array([0.7, -1.2, 0.3, 0.9])
    grads = policy.gradients(x, out, decisions, advantages, entropy_weight=0.3)
    eps = 1e-6
    for key, param in policy.params.items():
        numeric = np.zeros_like(param)
        for idx in np.ndindex(param.shape):
            old = param[idx]
            param[idx] = old + eps
            up = surrogate(policy, x, decisions, advantages, 0.3)
            param[idx] = old - eps
            down = surrogate(policy, x, decisions, advantages, 0.3)
            param[idx] = old
            numeric[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grads[key], numeric, rtol=1e-4, atol=1e-7, err_msg=key)


@pytest.mark.usefixtures("wide_net")
def test_training_improves_on_the_untrained_policy_and_reaches_the_optimum():
    problem = chain_with_fast_device(8)
    opts = ReinforceOptions(episodes=320, batch_size=16, entropy_weight=0.0)
    run = train_policy(problem, opts, SolveOptions(random_seed=1), bound=0)  # bound 0: no early stop
    untrained_median = run.batch_medians[0]
    assert run.stopped_by == "deterministic_budget"
    assert run.mode_objective == 16 < untrained_median
    assert run.batch_medians[-1] < untrained_median
    assert run.best_objective == 16


@pytest.mark.usefixtures("wide_net")
def test_same_seed_same_placement_and_stats():
    problem = chain_with_fast_device(8)
    solver = ReinforceScheduler(ReinforceOptions(episodes=40, batch_size=8))
    a, b = (solver.solve(problem, SolveOptions(random_seed=5)) for _ in range(2))
    assert a.solution == b.solution
    assert {k: v for k, v in a.stats.items() if k != "training_wall_s"} == \
           {k: v for k, v in b.stats.items() if k != "training_wall_s"}
    assert a.stats["reproducible"] is True


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda i: i.name)
def test_result_validates_and_respects_the_optimum(inst):
    r = ReinforceScheduler(FAST).solve(inst.problem, SolveOptions(random_seed=0))
    assert r.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert validate_schedule(inst.problem, r.solution) == []
    assert r.bound <= inst.optimum <= r.objective
    assert r.solver_name == "reinforce"


def test_memory_split_never_worse_than_the_fallback():
    inst = next(i for i in INSTANCES if i.name == "memory_split")
    r = ReinforceScheduler(FAST).solve(inst.problem, SolveOptions(random_seed=0))
    heft = HeftScheduler().solve(inst.problem)
    assert r.stats["infeasible_samples"] > 0  # both ops on one device overflow it: penalised
    assert validate_schedule(inst.problem, r.solution) == []
    assert r.objective <= heft.objective


def test_no_feasible_sample_falls_back_to_heft():
    # One group: every sample puts all four ops on one device, which holds only two (6 + 6 of
    # 12 bytes); no sample fits, so the result is HEFT's schedule.
    problem = SchedulingProblem(((3, 3),) * 4, ((0, 1, 0), (2, 3, 0)), (1, 1), ((-1, 0), (0, -1)),
                                ((2,), (2,)), device_memory_bytes=(12, 12), op_resident_bytes=(6,) * 4)
    r = ReinforceScheduler(ReinforceOptions(episodes=16, batch_size=8, num_groups=1)).solve(problem)
    heft = HeftScheduler().solve(problem)
    assert r.stats["fallback"] == "heft"
    assert r.stats["infeasible_samples"] == 16
    assert r.solution == heft.solution and r.objective == heft.objective
    assert validate_schedule(problem, r.solution) == []


def test_time_limit_caps_training_and_says_so():
    problem = chain_with_fast_device(8)
    r = ReinforceScheduler(ReinforceOptions(episodes=10_000)).solve(problem, SolveOptions(time_limit_s=1e-9))
    assert r.stats["stopped_by"] == "wall_clock" and r.stats["reproducible"] is False
    assert r.stats["episodes"] < 10_000
    assert validate_schedule(problem, r.solution) == []


def test_until_limit_trains_until_the_time_limit():
    problem = chain_with_fast_device(4)
    run = train_policy(problem, ReinforceOptions(episodes=8, batch_size=4),
                       SolveOptions(time_limit_s=0.3, search="until-limit"), bound=0)
    assert run.stopped_by == "time_limit"
    assert run.episodes > 8  # the episode count is not the budget in until-limit search


def test_decoder_keeps_colocation_groups_and_allowed_devices():
    problem = SchedulingProblem(((1, 1), (-1, 1), (1, 1)), (), (1, 1), ((-1, 0), (0, -1)), (),
                                colocation_groups=((0, 2),))
    decoder = PlacementDecoder(problem)
    # ops 0, 1, 2 in groups 0, 0, 1; group 0 on device 0, group 1 on device 1
    placement = decoder.decode(Decision(np.array([0, 0, 1]), np.array([0, 1])), np.log(np.full((2, 2), 0.5)))
    assert placement == (0, 1, 0)  # op 1 may not run on 0; op 2 follows its colocation leader, op 0
    assert heft_schedule(problem, placement) is not None


def test_serial_upper_bound_exceeds_every_list_schedule():
    for inst in INSTANCES:
        sol = heft_schedule(inst.problem)
        if sol is not None:
            assert sol.makespan_cycles <= serial_upper_bound(inst.problem)


def test_throughput_objective_is_the_reward():
    inst = next(i for i in INSTANCES if i.name == "throughput")
    r = ReinforceScheduler(FAST).solve(inst.problem, SolveOptions(random_seed=2))
    assert r.objective == 8  # max load; the makespan of the same placement is larger
    assert r.solution.makespan_cycles > r.objective


def test_options_are_checked():
    with pytest.raises(ValueError, match="infeasible_penalty"):
        ReinforceOptions(infeasible_penalty=0.5)
    with pytest.raises(ValueError, match="baseline_decay"):
        replace(FAST, baseline_decay=1.0)
