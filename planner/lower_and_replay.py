"""The lower stage: a solved plan → per-device programs → binaries → simulator replay, verified.

Every plan the planner writes goes through :func:`replay`: lowering
(:mod:`planner.lowering`, which never solves), the address pass
(:mod:`planner.memory.address_pass`: addresses for the devices without a memory plan,
packed over the record order lowering fixed), encoding (:mod:`planner.isa.binary`), the simulator's replay of
the binaries alone (:mod:`planner.simulator`), and :func:`verify`, which refuses a replay
that disagrees with the plan. :func:`lower_stage` adds what is written beside the binaries
(listings and ``allocation.json``). Each piece is timed as its stage ("lowering", "replay":
:func:`planner.stage_timing.stage`).

Examples
--------
>>> from planner.pipeline import run
>>> from planner.spec import load_spec
>>> spec = load_spec("specs/taskgraph.yaml")
>>> outcome = run(spec, time_limit_s=2, workers=1)
>>> replay(outcome.plan, spec).simulation.makespan_cycles == outcome.plan.makespan_cycles
True
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planner.collector import collector_paused
from planner.errors import InternalError
from planner.isa.binary import encode, listing
from planner.lowering import allocation, lower
from planner.memory.address_pass import address_programs
from planner.plan import Plan
from planner.simulator import simulate
from planner.spec import Spec
from planner.stage_timing import stage
from planner.stages import Lowered
from planner.verify import compare_with_plan

__all__ = ["verify", "replay", "lower_stage"]


def verify(plan: Plan, simulation: Any) -> None:
    """Raise InternalError unless the simulator's replay agrees with the plan exactly.

    The check is :func:`planner.verify.compare_with_plan`, the one the directory verifier
    runs on plan.json: here a difference is a bug of ours, there a tampered directory.
    """
    problems = compare_with_plan(simulation, plan)
    if problems:
        raise InternalError("the simulator's replay disagrees with the plan:\n  "
                            + "\n  ".join(str(p) for p in problems[:20]))


@collector_paused()  # many small objects, no cycles (planner.collector)
def replay(plan: Plan, spec: Spec, memory_plan: Any = None, every_device_shares: bool = False) -> Lowered:
    """Lower ``plan`` (with ``memory_plan`` on its devices), give it addresses, encode and replay
    it; verify the replay. Under ``memory.bandwidth: shared`` the memory-planned programs share
    each level's bandwidth, and with ``every_device_shares`` (a plan the memory stage timed under
    the shares, :mod:`planner.reductions.memory`) every program shares its main memory too.

    Raises :class:`~planner.errors.InfeasibleError` when the address pass cannot pack a
    level of a device without a memory plan (fragmentation).
    """
    with stage("lowering"):
        programs = address_programs(lower(plan, spec.graph, spec.hardware, memory_plan=memory_plan),
                                    spec.memory.alignment_bytes)
        if spec.memory.shared_bandwidth:  # the switch reaches the simulator through the header flag only
            programs = {n: replace(p, shared_bandwidth=True)
                        if p.fast_level >= 0 or every_device_shares and 0 <= p.main_level < len(p.levels) else p
                        for n, p in programs.items()}
        binaries = {name: encode(p) for name, p in sorted(programs.items())}
    with stage("replay"):
        simulation = simulate(binaries)
        verify(plan, simulation)
    return Lowered(programs, binaries, simulation)


@collector_paused()
def lower_stage(plan: Plan, spec: Spec, memory_plan: Any = None,
                replayed: Lowered | None = None) -> tuple[Lowered, dict[str, str], dict[str, Any]]:
    """The plan's verified binaries, their listings and its ``allocation.json`` document.

    ``replayed`` is a replay of this plan already made (memory planning replays the plan it
    chooses; lowering ignores the status and bound set afterwards, so those binaries are
    this plan's); it is verified against ``plan`` again.
    """
    lowered = replayed or replay(plan, spec, memory_plan)
    verify(plan, lowered.simulation)
    with stage("lowering"):
        listings = {name: listing(p) for name, p in sorted(lowered.programs.items())}
        return lowered, listings, allocation(plan, spec.graph, spec.hardware, lowered.programs)
