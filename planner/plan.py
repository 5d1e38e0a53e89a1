"""The plan: a solved schedule in the user's names, and its ``plan.json`` form.

A :class:`Plan` is what the Python API returns and what ``plan.json`` holds. It is built
by the bridge (:mod:`planner.pipeline`) from a solver result and consumed by lowering,
the report and the CLI.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["PlacedOp", "PlacedTransfer", "Plan", "PLAN_FORMAT_VERSION"]

PLAN_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class PlacedOp:
    """Where and when one op runs (cycles of the plan's reference clock)."""

    name: str
    device: str
    stream: int
    start_cycle: int
    duration_cycles: int

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles


@dataclass(frozen=True, slots=True)
class PlacedTransfer:
    """The tensors of one producer→consumer pair moving between devices over a link."""

    src_op: str
    dst_op: str
    tensors: tuple[str, ...]
    size_bytes: int
    src_device: str
    dst_device: str
    link: str
    start_cycle: int
    duration_cycles: int

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.duration_cycles


@dataclass(frozen=True, slots=True)
class Plan:
    """A verified (or to-be-verified) schedule with its optimality evidence.

    ``objective`` is in the unit of ``objective_kind`` (cycles for both latency and
    throughput); ``bound`` is a proven lower bound on it; ``gap`` is relative.
    ``heuristic_objective`` is the baseline's objective computed in the same run.
    """

    spec_name: str
    objective_kind: str
    status: str
    objective: int
    bound: int | None
    gap: float | None
    makespan_cycles: int
    clock_hz: int
    ops: tuple[PlacedOp, ...]
    transfers: tuple[PlacedTransfer, ...]
    heuristic_objective: int | None = None
    wall_time_s: float = 0.0
    solver: dict[str, Any] = field(default_factory=dict)  # name, workers, seed, time limit
    resources: dict[str, Any] = field(default_factory=dict)  # determined per op/device/model

    def op(self, name: str) -> PlacedOp:
        for o in self.ops:
            if o.name == name:
                return o
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """The ``plan.json`` document (wall time excluded so equal inputs give equal bytes)."""
        d = {
            "format_version": PLAN_FORMAT_VERSION,
            "spec": self.spec_name,
            "objective_kind": self.objective_kind,
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "makespan_cycles": self.makespan_cycles,
            "clock_hz": self.clock_hz,
            "heuristic_objective": self.heuristic_objective,
            "solver": self.solver,
            "ops": [asdict(o) for o in self.ops],
            "transfers": [dict(asdict(t), tensors=list(t.tensors)) for t in self.transfers],
            "resources": self.resources,
        }
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Plan":
        return cls(
            spec_name=d["spec"], objective_kind=d["objective_kind"], status=d["status"],
            objective=d["objective"], bound=d["bound"], gap=d["gap"],
            makespan_cycles=d["makespan_cycles"], clock_hz=d["clock_hz"],
            ops=tuple(PlacedOp(**o) for o in d["ops"]),
            transfers=tuple(PlacedTransfer(**dict(t, tensors=tuple(t["tensors"]))) for t in d["transfers"]),
            heuristic_objective=d.get("heuristic_objective"), solver=d.get("solver", {}),
            resources=d.get("resources", {}),
        )
