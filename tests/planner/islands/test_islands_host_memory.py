"""Host memory: the island split holds each island's weights and graph inputs within its ``host_memory``.

The chain of ``test_islands_route`` (A -> B -> C -> D, one device per island, throughput) with
B reading a 4,000-byte weight. Without limits the optimum is A, B on x and C, D on y (bottleneck
800, as computed there). With x's host memory 2 KiB, B cannot be on x; by hand:
  A on x, B, C, D on y     -> the cut A->B carries 4000 bytes = 4000 network cycles
  all on y                 -> load 500 + 400 * 3 = 1700
  A, B on y, C, D on x     -> loads 900 / 800, cut B->C 40 bytes = 40 cycles -> 900
  any other cut            -> a 4000-byte edge crosses -> at least 4000
so the unique optimum is A, B on y and C, D on x, bottleneck 900: host memory moves B (and A with it).
"""

import pytest

from planner.errors import InfeasibleError
from planner.islands import to_split_problem
from planner.pipeline import run
from planner.spec import load_spec
from solvers.islands import CpSatSplitSolver, SplitProblem, split_errors

from tests.cli_process import plan_in_process as plan
from tests.planner.islands.test_islands_route import CHAIN

WEIGHTED = (CHAIN.replace("        - {name: t3, shape: [1000], kind: activation}\n",
                          "        - {name: t3, shape: [1000], kind: activation}\n"
                          "        - {name: wB, shape: [1000], kind: weight}\n")
            .replace("inputs: [t1], outputs: [t2]", "inputs: [t1, wB], outputs: [t2]"))


def _spec(tmp_path, x_host: str | None, y_host: str | None = None):
    text = WEIGHTED
    if x_host:
        text = text.replace("{name: x, devices: [a]}", f"{{name: x, devices: [a], host_memory: {x_host}}}")
    if y_host:
        text = text.replace("{name: y, devices: [b]}", f"{{name: y, devices: [b], host_memory: {y_host}}}")
    file = tmp_path / "chain.yaml"
    file.write_text(text)
    return file


def test_without_a_binding_host_memory_the_split_is_unchanged(tmp_path):
    problem, _ = to_split_problem(load_spec(_spec(tmp_path, "1 MiB")))
    assert problem.host_items == ((4000, (1,)),) and problem.island_host_memory == (2**20, None)
    result = CpSatSplitSolver().solve(problem)
    assert result.status.value == "OPTIMAL" and result.solution.island_of == (0, 0, 1, 1)
    assert result.objective == 800


def test_host_memory_forces_the_weighted_portion_to_the_other_island(tmp_path):
    spec = load_spec(_spec(tmp_path, "2 KiB"))
    problem, _ = to_split_problem(spec)
    result = CpSatSplitSolver().solve(problem)
    assert result.status.value == "OPTIMAL"
    assert result.solution.island_of == (1, 1, 0, 0) and result.objective == 900
    assert split_errors(problem, (0, 0, 1, 1)) == [
        "island 0 holds 4000 bytes of host items, more than its host memory 2048"]
    outcome = run(spec)
    placed = {o.name: o.device for o in outcome.plan.ops}
    assert placed == {"m/A": "b0", "m/B": "b0", "m/C": "a0", "m/D": "a0"}
    assert outcome.plan.objective == 900 and outcome.simulation.makespan_cycles == outcome.plan.makespan_cycles


def test_a_weight_read_by_two_portions_on_one_island_is_held_once():
    # Three portions of 10 cycles, item 0 (6 bytes) read by portions 0 and 1, item 1 (6 bytes) by 2.
    # Bottleneck 10 needs two portions on island 0 (two lanes) and one on island 1 (one lane). Island 0
    # (host 7 bytes) holds item 0 once for both its readers, but not both items: {0, 1} on 0, {2} on 1
    # is the only split of bottleneck 10 (counted per portion, item 0 would be 12 bytes there).
    problem = SplitProblem(portion_work=((10, 10),) * 3, portion_memory=(0,) * 3, island_lanes=(2, 1),
                           island_memory=(99, 99), edges=(), network_cycles=(),
                           host_items=((6, (0, 1)), (6, (2,))), island_host_memory=(7, None))
    result = CpSatSplitSolver().solve(problem)
    assert result.status.value == "OPTIMAL" and result.solution.island_of == (0, 0, 1) and result.objective == 10
    assert problem.host_held((0, 0, 1), 0) == 6 and split_errors(problem, (0, 0, 0)) != []


def test_a_split_no_host_memory_allows_is_infeasible_and_says_where(tmp_path):
    file = _spec(tmp_path, "2 KiB", "3 KiB")
    with pytest.raises(InfeasibleError, match=r"island 'y' holds 3\.00 KiB \(hardware\.islands\[1\]\.host_memory\)"):
        run(load_spec(file))
    out = tmp_path / "out"
    proc = plan("solve", str(file), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and not out.exists()
    assert "no split of the workload fits the islands" in proc.stderr and "3.91 KiB" in proc.stderr


def _random_split_problem(seed: int) -> SplitProblem:
    """4-6 portions in a chain, 2-3 one-lane islands, 3-6 host items read by one or two portions each;
    island 0 and maybe others limited to between an even share and half of all items' bytes."""
    import random

    rng = random.Random(seed)
    portions, islands = rng.randint(4, 6), rng.randint(2, 3)
    work = tuple(tuple(rng.randint(1, 20) for _ in range(islands)) for _ in range(portions))
    edges = tuple((p, p + 1, rng.randint(0, 9)) for p in range(portions - 1))
    items = tuple((rng.randint(1, 10), tuple(sorted(rng.sample(range(portions), rng.randint(1, 2)))))
                  for _ in range(rng.randint(3, 6)))
    total = sum(size for size, _ in items)

    def limit() -> int:
        return rng.randint(total // islands - 3, total // 2 + 3)

    limits = tuple(limit() if k == 0 else rng.choice([None, limit()]) for k in range(islands))
    return SplitProblem(work, (0,) * portions, (1,) * islands, (1,) * islands, edges,
                        tuple(size // 3 for _, _, size in edges), host_items=items, island_host_memory=limits)


def _brute_force(problem: SplitProblem) -> tuple[int | None, int]:
    """The best bottleneck with host memory (None: no split fits) and without it."""
    import itertools

    from solvers.islands import split_loads

    splits = list(itertools.product(range(problem.num_islands), repeat=problem.num_portions))
    fits = [split_loads(problem, s)[0] for s in splits if not split_errors(problem, s)]
    return (min(fits) if fits else None), min(split_loads(problem, s)[0] for s in splits)


def test_the_random_problems_cover_infeasible_binding_and_free_host_memory():
    kinds = set()
    for seed in range(12):
        best, free = _brute_force(_random_split_problem(seed))
        kinds.add("infeasible" if best is None else "binding" if best > free else "free")
    assert kinds == {"infeasible", "binding", "free"}


@pytest.mark.parametrize("seed", range(12))
def test_the_split_with_host_memory_matches_brute_force_on_small_random_problems(seed):
    from solvers.core import SolveOptions

    problem = _random_split_problem(seed)
    best, _ = _brute_force(problem)
    result = CpSatSplitSolver().solve(problem, SolveOptions(time_limit_s=5))
    if best is None:
        assert result.status.value == "INFEASIBLE"
        return
    assert result.status.value == "OPTIMAL" and result.objective == best
    assert result.bound <= best and not split_errors(problem, result.solution.island_of)
