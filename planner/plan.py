"""The plan: a solved schedule in the user's names, and its ``plan.json`` form.

A :class:`Plan` is what the Python API returns and what ``plan.json`` holds. It is built
by a reduction's inverse (:mod:`planner.reductions`) from a solver result and consumed by lowering,
the report and the CLI.

``plan.json`` (format version 2) is :meth:`Plan.to_dict` plus what a verifier needs to check
the directory without the spec (:func:`plan_document`): the devices and links, whether
memory planning ran, the numeric replay's result, the sha256 of every other file the
directory holds, and a ``seal``: the sha256 of the document itself in canonical form, so an
edit to a figure no replay can recompute (a seed, a baseline) is refused too.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field, fields
from html import escape
from typing import Any, Mapping

from planner import json_text
from planner.charts import NOTEBOOK_STYLE, gantt_section, summary_cards
from planner.instances import base_op_name

__all__ = ["PlacedOp", "PlacedTransfer", "Plan", "PlanStatus", "PLAN_FORMAT_VERSION", "PLAN_STATUSES", "relative_gap",
           "plan_document", "seal_of"]

PLAN_FORMAT_VERSION = 2


class PlanStatus(enum.StrEnum):
    """A plan's status: it has a solution, proved optimal or feasible with a bound.

    The plan-level subset of :class:`solvers.core.Status` (the verifier needs nothing from
    ``solvers``); a ``str``, so ``plan.json`` and every comparison see the same text as before.

    Examples
    --------
    >>> PlanStatus("OPTIMAL") is PlanStatus.OPTIMAL, PlanStatus.FEASIBLE == "FEASIBLE"
    (True, True)
    >>> import json; json.dumps({"status": PlanStatus.OPTIMAL})
    '{"status": "OPTIMAL"}'
    """

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"


# A written plan has a solution: the solver proved it optimal, or it is feasible with a bound.
PLAN_STATUSES = tuple(s.value for s in PlanStatus)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """``|objective - bound| / max(1, |objective|)``, or None when either is unknown.

    The one definition of a plan's gap: the same formula as ``solvers.core.relative_gap``
    (a test holds them equal), restated here so that the verifier needs nothing from
    ``solvers``. For a positive objective it is ``(objective - bound) / objective``.

    Examples
    --------
    >>> relative_gap(110, 100)
    0.09090909090909091
    >>> relative_gap(0, 0), relative_gap(100, None)
    (0.0, None)
    """
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(1.0, abs(objective))


def seal_of(document: Mapping[str, Any]) -> str:
    """The sha256 of a plan document in canonical JSON (sorted keys, no spaces), ``seal`` left out.

    Key order and whitespace do not change it; any value does.

    Examples
    --------
    >>> seal_of({"a": 1, "b": [2]}) == seal_of({"b": [2], "a": 1, "seal": "x"})
    True
    >>> seal_of({"a": 1}) == seal_of({"a": 2})
    False
    """
    body = {k: v for k, v in document.items() if k != "seal"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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


# plan.json's fields of an op and a transfer, in order: Plan.to_dict builds their dicts directly
# (as dataclasses.asdict would, without its deep copy of each scalar, 10^4 times per plan).
_OP_FIELDS = tuple(f.name for f in fields(PlacedOp))
_TRANSFER_FIELDS = tuple(f.name for f in fields(PlacedTransfer))


@dataclass(frozen=True, slots=True, weakref_slot=True)  # planner.write keeps a plan's run while it lives
class Plan:
    """A verified (or to-be-verified) schedule with its optimality evidence.

    ``objective`` is in the unit of ``objective_kind`` (cycles for both latency and
    throughput); ``bound`` is a proven lower bound on it; ``gap`` is relative.
    ``heuristic_objective`` is the baseline's objective computed in the same run.
    """

    spec_name: str
    objective_kind: str
    status: PlanStatus  # a PlanStatus or its text (turned into a PlanStatus)
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", PlanStatus(self.status))  # ValueError: not a plan's status

    def __repr__(self) -> str:
        """One line: spec, status, objective, bound, gap, ops and devices (``to_dict`` has everything).

        >>> Plan("demo", "latency", "FEASIBLE", 1200, 1000, 1 / 6, 1200, 10**9, (PlacedOp("a", "d0", 0, 0, 5),), ())
        <Plan 'demo' FEASIBLE: latency 1,200 cycles, bound 1,000, gap 16.67%, 1 op on 1 device>
        """
        bound = "-" if self.bound is None else f"{self.bound:,}"
        gap = "-" if self.gap is None else f"{100 * self.gap:.2f}%"
        ops, devices = len(self.ops), len(self._device_entries())
        return (f"<Plan {self.spec_name!r} {self.status}: {self.objective_kind} {self.objective:,} cycles, "
                f"bound {bound}, gap {gap}, {ops:,} op{'s' * (ops != 1)} on {devices} "
                f"device{'s' * (devices != 1)}>")

    def _device_entries(self) -> list[dict[str, str]]:
        """The devices the ops run on, in order of first use, with their kind when the resources say it."""
        kinds = {name: info.get("kind", "") for name, info in (self.resources.get("devices") or {}).items()}
        names = list(dict.fromkeys(o.device for o in self.ops))
        return [{"name": n, "kind": kinds.get(n, "")} for n in names]

    def _repr_html_(self) -> str:
        """The notebook display: the headline figures and a small Gantt chart (one row per stream and link)."""
        doc = self.to_dict()
        doc.update(devices=self._device_entries(), links=[{"name": n} for n in
                                                          dict.fromkeys(t.link for t in self.transfers)])
        return (f'<div class="plan-nb"><style>{NOTEBOOK_STYLE}</style><b>{escape(self.spec_name)}</b> · {self.status}'
                f"{summary_cards(doc)}{gantt_section(doc, width=760)}</div>")

    def to_frame(self):
        """The ops as a :class:`pandas.DataFrame`, one row each (needs pandas: ``pip install 'plan[notebook]'``).

        Columns: ``name``, ``device``, ``stream``, ``start_cycle``, ``duration_cycles``,
        ``end_cycle``, ``start_us`` and ``duration_us`` (of the reference clock), and, when the
        plan has its resources, the ``graph_op`` (the op a split instance belongs to), its
        ``model`` and ``macs``.

        Examples
        --------
        >>> p = Plan("s", "latency", "OPTIMAL", 7, 7, 0.0, 7, 10**9, (PlacedOp("a", "d0", 0, 2, 5),), ())
        >>> p.to_frame()[["name", "device", "start_cycle", "end_cycle", "duration_us"]].to_dict("records")
        [{'name': 'a', 'device': 'd0', 'start_cycle': 2, 'end_cycle': 7, 'duration_us': 0.005}]
        """
        try:
            import pandas  # optional dependency: the `notebook` extra
        except ImportError:
            raise ImportError("Plan.to_frame needs pandas, which is not installed: pip install 'plan[notebook]' "
                              "(or pip install pandas)") from None
        ops = self.resources.get("ops") or {}
        rows = []
        for o in self.ops:
            row = {"name": o.name, "device": o.device, "stream": o.stream, "start_cycle": o.start_cycle,
                   "duration_cycles": o.duration_cycles, "end_cycle": o.end_cycle,
                   "start_us": o.start_cycle * 1e6 / self.clock_hz, "duration_us": o.duration_cycles * 1e6 / self.clock_hz}
            graph_op = base_op_name(o.name, ops)
            if graph_op in ops:
                row.update(graph_op=graph_op, model=ops[graph_op]["model"], macs=ops[graph_op]["macs"])
            rows.append(row)
        return pandas.DataFrame(rows)

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
            "ops": [{f: getattr(o, f) for f in _OP_FIELDS} for o in self.ops],
            "transfers": [{f: list(t.tensors) if f == "tensors" else getattr(t, f) for f in _TRANSFER_FIELDS}
                          for t in self.transfers],
            "resources": self.resources,
        }
        return d

    def to_json(self) -> str:
        return json_text.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Plan":
        """The plan of a ``plan.json`` document (the fields of :meth:`to_dict`; others ignored)."""
        return cls(
            spec_name=d["spec"], objective_kind=d["objective_kind"], status=d["status"],
            objective=d["objective"], bound=d["bound"], gap=d["gap"],
            makespan_cycles=d["makespan_cycles"], clock_hz=d["clock_hz"],
            ops=tuple(PlacedOp(**o) for o in d["ops"]),
            transfers=tuple(PlacedTransfer(**dict(t, tensors=tuple(t["tensors"]))) for t in d["transfers"]),
            heuristic_objective=d.get("heuristic_objective"), solver=d.get("solver", {}),
            resources=d.get("resources", {}),
        )


def plan_document(plan: Plan, *, devices: list[dict[str, Any]], links: list[dict[str, Any]],
                  memory_planning: bool, numeric: Mapping[str, Any], files: Mapping[str, str],
                  baselines: list[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The sealed ``plan.json`` document of a plan directory (format version 2).

    Parameters
    ----------
    plan
        The verified plan (:meth:`Plan.to_dict` gives the schedule and the claims).
    devices
        Every device of the hardware, in its order: ``name``, ``kind``, ``profile``, ``streams``.
    links
        Every link, in its order (a link's id in the binaries is its index): ``name``,
        ``devices``, ``bandwidth_bytes_per_s``, ``latency_cycles``.
    memory_planning
        Whether memory planning ran (then ``memory.json`` must be present and match).
    numeric
        The numeric replay's result as the report shows it (``status`` and its figures).
    files
        Relative path -> sha256 hex digest of every other file of the directory.
    baselines
        The report's baseline rows (``solver``, ``status``, ``objective``, ``bound``), the
        planner's own result first.

    Examples
    --------
    >>> p = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9, (PlacedOp("t", "d0", 0, 0, 5),), ())
    >>> doc = plan_document(p, devices=[{"name": "d0", "kind": "d", "profile": "generic", "streams": 1}],
    ...                     links=[], memory_planning=False, numeric={"status": "off"}, files={})
    >>> doc["format_version"], doc["seal"] == seal_of(doc)
    (2, True)
    """
    doc = plan.to_dict()
    doc.update(devices=list(devices), links=list(links), memory_planning=bool(memory_planning),
               numeric=dict(numeric), baselines=[dict(row) for row in baselines], files=dict(sorted(files.items())))
    doc["seal"] = seal_of(doc)
    return doc
