"""Split groups over N levels (issue 14): a tensor larger than every fast level staged in portions."""

from __future__ import annotations

import dataclasses

import pytest

from solvers.core import SolveOptions, Status
from solvers.memory.levels.hierarchy_bounds import hierarchy_lower_bound
from solvers.memory.levels.hierarchy_cpsat import CpSatHierarchySolver
from solvers.memory.levels.hierarchy_greedy import AllHomeHierarchySolver, GreedyHierarchySolver
from solvers.memory.levels.hierarchy_split import expand_hierarchy_splits, hierarchy_split_choices
from solvers.memory.levels.hierarchy_validate import validate_hierarchy
from solvers.memory.levels.problem import SplitGroup, TransferKind
from tests.solvers.memory.test_hierarchy import brute_force_makespan, three_levels

OPTIONS = SolveOptions(time_limit_s=10, num_workers=1, random_seed=0)


def host_input(factors=(1, 2)):
    """vmem 16 B (8 B/cycle), hbm main 64 B (4 B/cycle), host (1 B/cycle); paths vmem-hbm and
    hbm-host. One op (compute 0) reads x, 32 B homed in host memory: larger than vmem."""
    return three_levels(compute_cycles=(0,), reads=((0,),), writes=((),), tensor_bytes=(32,), tensor_home=(2,),
                        splits=(SplitGroup(0, 0, (0,), factors),))


def test_a_host_tensor_larger_than_vmem_is_staged_in_portions():
    # Whole, x cannot be in vmem (32 > 16): read at host, 32 cycles (fetched to hbm first:
    # 32 + 32/4 = 40). In two 16-B portions: op#0 reads x#0 at host [0, 16) while the DMA
    # engine moves x#1 host -> hbm [0, 16) (trigger: program start, release: op#1); op#1 reads
    # it at hbm, 16/4 = 4 cycles, [16, 20). Two hops to vmem would take 16 + 4 and then 2: 22.
    # Both portions fetched: 32 DMA cycles; both read at host: 32. So 20, proven.
    p = host_input()
    assert hierarchy_split_choices(p) == ((1,), (2,))
    r = CpSatHierarchySolver().solve(p, OPTIONS)
    assert (r.status, r.objective, r.bound, r.solution.split_factors) == (Status.OPTIMAL, 20, 20, (2,))
    s = r.solution
    assert validate_hierarchy(p, s) == []
    assert s.level == ((2, 2), (2, 1)) and s.op_start == (0, 16) and s.op_duration == (16, 4)
    assert [(m.kind, m.tensor, m.src_level, m.dst_level, m.trigger_op, m.release_op, m.start_cycle, m.end_cycle)
            for m in s.moves] == [(TransferKind.PREFETCH, 1, 2, 1, -1, 1, 0, 16)]
    whole, _ = expand_hierarchy_splits(p, (1,))
    halves, _ = expand_hierarchy_splits(p, (2,))
    assert brute_force_makespan(whole) == 32 and brute_force_makespan(halves) == 20
    assert AllHomeHierarchySolver().solve(p).objective == 32
    assert GreedyHierarchySolver().solve(p).objective >= 20


def test_the_validator_expands_before_it_checks():
    p = host_input()
    s = CpSatHierarchySolver().solve(p, OPTIONS).solution
    assert validate_hierarchy(p, dataclasses.replace(s, split_factors=())) == ["expected 1 split factors, got 0"]
    assert validate_hierarchy(p, dataclasses.replace(s, split_factors=(4,))) == [
        "factor 4 is not allowed for split group 0..0"]
    # The plan of the halves is not one of the whole: one op, one tensor.
    assert validate_hierarchy(p, dataclasses.replace(s, split_factors=(1,)))
    late = dataclasses.replace(s, moves=(dataclasses.replace(s.moves[0], start_cycle=1),))
    assert validate_hierarchy(p, late) == ["prefetch of tensor 1 hop 0 ends at 17 after op 1 starts at 16"]


def test_the_plan_bound_holds_for_split_plans():
    # Unsplit, x leaves host whole or not at all: 32. Split, half may leave while the other half
    # is read at host: the bound must allow 20 (the group's ops and tensors count as splittable).
    p = host_input()
    assert hierarchy_lower_bound(dataclasses.replace(p, splits=())) == 32
    assert 16 <= hierarchy_lower_bound(p) <= 20


def test_bad_split_groups_are_refused():
    with pytest.raises(ValueError, match="split"):
        host_input(factors=(0, 2))
