"""The shapes of a plan directory's JSON files, as typed models (pydantic, strict).

Each file is read with :func:`planner.verify.jsonfile.read_json` and then validated
here before any field is used: every key known (``extra="forbid"``), every type exact
(no string where an integer is meant, no ``true`` for ``1``), every integer in
``[0, 2^63)`` (or ``-1`` where a field means "none"), every float finite. The first
problem becomes a :class:`~planner.errors.VerificationError` naming the file and the
field path (``ops[3].start_cycle``).

Examples
--------
>>> validate_document(MemoryBuffer, {"name": "x"}, "memory.json")
Traceback (most recent call last):
...
planner.errors.VerificationError: memory.json: tensor: a required field is missing
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.errors import VerificationError

__all__ = [
    "StrictModel",
    "PlanDocument",
    "PlacedOpEntry",
    "TransferEntry",
    "DeviceEntry",
    "LinkEntry",
    "NumericClaim",
    "MemoryDocument",
    "DeviceMemoryEntry",
    "MemoryBuffer",
    "MemoryDma",
    "MemoryAccess",
    "MemoryFigures",
    "BaselineRow",
    "AllocationDocument",
    "MaxLoadClaims",
    "RunBudget",
    "ReportRecords",
    "validate_document",
]

Count = Annotated[int, Field(ge=0, lt=1 << 63)]
Positive = Annotated[int, Field(ge=1, lt=1 << 63)]
Portion = Annotated[int, Field(ge=-1, lt=1 << 31)]  # -1: the whole tensor / not split
Name = Annotated[str, Field(min_length=1, max_length=4096)]
Text = Annotated[str, Field(max_length=4096)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class StrictModel(BaseModel):
    """A model of a plan file's object: every key known, every type exact, floats finite, frozen.

    Examples
    --------
    >>> class Pair(StrictModel):
    ...     a: int
    >>> Pair.model_validate({"a": 1}).a
    1
    """

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class PlacedOpEntry(StrictModel):
    """``plan.json`` ``ops[i]``."""

    name: Name
    device: Name
    stream: Count
    start_cycle: Count
    duration_cycles: Count


class TransferEntry(StrictModel):
    """``plan.json`` ``transfers[i]``."""

    src_op: Name
    dst_op: Name
    tensors: list[Name]
    size_bytes: Count
    src_device: Name
    dst_device: Name
    link: Name
    start_cycle: Count
    duration_cycles: Count


class DeviceEntry(StrictModel):
    """``plan.json`` ``devices[i]``: a device of the hardware (a binary each)."""

    name: Name
    kind: Name
    profile: Name
    streams: Positive


class LinkEntry(StrictModel):
    """``plan.json`` ``links[i]``; ``i`` is the link's id in the binaries."""

    name: Name
    devices: list[Name]
    bandwidth_bytes_per_s: Positive
    latency_cycles: Count


class NumericClaim(StrictModel):
    """``plan.json`` ``numeric``: what the numeric replay found when ``plan solve`` wrote the plan.

    ``status``: ``equal`` (``tensors`` tensors, ``graph_outputs`` of them outputs, equal to
    the reference within ``rtol``), ``too-large`` (``instructions`` above ``limit`` or ``macs``
    above ``mac_limit``),
    ``no-semantics`` (ops that have no numeric semantics, by type in ``ops_without_semantics``),
    or ``off`` (``--no-numeric``).
    """

    status: Literal["equal", "too-large", "no-semantics", "off"]
    instructions: Count
    tensors: Count = 0
    graph_outputs: Count = 0
    rtol: Annotated[float, Field(gt=0, lt=1)] = 1e-5
    limit: Count = 0
    macs: Count = 0
    mac_limit: Count = 0
    ops_without_semantics: dict[Name, list[Name]] = {}
    dtypes: list[Name] = []


class BaselineRow(StrictModel):
    """``plan.json`` ``baselines[i]``: a row of the report's baselines table (the planner's first)."""

    solver: Name
    status: Text
    objective: Optional[Count]
    bound: Optional[Count]


class PlanDocument(StrictModel):
    """``plan.json``, format version 2 (see :func:`planner.plan.plan_document`)."""

    format_version: Literal[2]
    spec: Text
    objective_kind: Literal["latency", "throughput", "max-load"]
    status: Literal["OPTIMAL", "FEASIBLE"]
    objective: Count
    bound: Optional[Count]
    gap: Optional[Annotated[float, Field(ge=0)]]
    makespan_cycles: Count
    clock_hz: Positive
    heuristic_objective: Optional[Count]
    solver: dict[Name, Any]
    ops: list[PlacedOpEntry]
    transfers: list[TransferEntry]
    resources: dict[Name, Any]
    devices: list[DeviceEntry]
    links: list[LinkEntry]
    memory_planning: bool
    numeric: NumericClaim
    baselines: list[BaselineRow]
    files: dict[Name, Sha256]
    seal: Sha256


class MaxLoadClaims(BaseModel):
    """The part of ``plan.json`` ``solver`` a max-load plan's objective rests on (other keys are free)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    accelerators: list[Name]
    cpus: list[Name]
    loads: dict[Name, Count]


class RunBudget(BaseModel):
    """The part of ``plan.json`` ``solver`` that splits the time limit (other keys are free): the
    limit, and the seconds of it kept for the stages after the solve (:mod:`planner.stage_timing`)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    time_limit_s: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    post_solve_reserve_s: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Lenient(BaseModel):
    """A record report.md draws from: the fields it draws typed exactly, other keys free."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _IslandPortion(_Lenient):
    island: Name


class _IslandSplit(_Lenient):
    solver: Text
    status: Text
    bottleneck_cycles: Count
    bound: Optional[Count]
    portions: list[_IslandPortion]


class _IslandSolve(_Lenient):
    name: Name
    devices: list[Name]
    ops: Count
    host_memory_bytes: Optional[Count]
    status: Text
    objective: Optional[Count]
    bound_given_split: Optional[Count]


class _OtherPlan(_Lenient):
    status: Text
    objective: Optional[Count]
    bound: Optional[Count]


class _Gang(_Lenient):
    ops: list[Name]
    start_cycle: Count


class IslandsRecord(_Lenient):
    """``plan.json`` ``solver.islands``: the split, each island's solve and the comparisons (report.md draws it)."""

    split: _IslandSplit
    cross_bytes: Count
    network_cycles: Count
    islands: list[_IslandSolve]
    one_problem: _OtherPlan
    one_island: Optional[_OtherPlan]
    arrival_rounds: Optional[list[Count]] = None
    gangs: list[_Gang] = []


class WarmStartRecord(_Lenient):
    """``plan.json`` ``solver.warm_start``: how much of a previous placement the solve started from."""

    ops_placed: Count
    ops: Count
    objective: Optional[Count]


class _Move(_Lenient):
    op: Name
    from_device: Name
    to_device: Name
    migration_bytes: Count
    migration_cycles: Count
    why: Text


class ReplanRecord(_Lenient):
    """``plan.json`` ``solver.replan``: the re-placement's decision as report.md draws it."""

    reason: Text
    predicted_current_cycles: Count
    predicted_new_cycles: Count
    migration_cycles: Count
    ratios: dict[Name, dict[Name, Annotated[float, Field(ge=0, allow_inf_nan=False)]]]
    moved: list[_Move]


class ReportRecords(_Lenient):
    """The parts of ``plan.json`` ``solver`` report.md draws (:mod:`planner.report.sections`), typed so that a
    resealed edit is refused by name instead of breaking the redraw; each is absent or None when the route
    did not record it."""

    name: Optional[Text] = None
    contiguous: Optional[bool] = None
    baselines: Optional[dict[Name, Optional[Count]]] = None
    islands: Optional[IslandsRecord] = None
    warm_start: Optional[WarmStartRecord] = None
    placement: Optional[Text] = None
    placement_source: Optional[Text] = None
    replan: Optional[ReplanRecord] = None


class MemoryBuffer(StrictModel):
    """``memory.json`` ``devices[d].buffers[i]``."""

    name: Name
    tensor: Text  # "" for the zero-byte buffer of a control edge
    portion: Portion
    level: Name
    address: Count
    size_bytes: Count
    start_cycle: Count
    end_cycle: Count
    preloaded: bool
    view_of: Text


class MemoryDma(StrictModel):
    """``memory.json`` ``devices[d].transfers[i]``: a DMA between levels."""

    kind: Literal["prefetch", "evict"]
    tensor: Name
    portion: Portion
    src_buffer: Name
    dst_buffer: Name
    size_bytes: Count
    trigger_op: Text
    release_op: Text
    start_cycle: Count
    end_cycle: Count


class MemoryAccess(StrictModel):
    """``memory.json`` ``devices[d].accesses[i]``: the buffers one op instance reads and writes."""

    instance: Name
    op: Name
    portion: Portion
    factor: Positive
    inputs: list[list[Name]]
    outputs: list[list[Name]]
    fast_bytes: Count
    slow_bytes: Count
    level_bytes: Optional[dict[Name, Count]] = None  # a plan over more than two levels: bytes per level


class DeviceMemoryEntry(StrictModel):
    """``memory.json`` ``devices[d]``."""

    device: Name
    fast_level: Name
    slow_level: Name
    order: list[Name]
    accesses: list[MemoryAccess]
    buffers: list[MemoryBuffer]
    transfers: list[MemoryDma]
    split_factors: dict[Name, Positive]
    stats: dict[Name, Any]


class MemoryFigures(StrictModel):
    """``memory.json`` ``figures[plan][device]``: one plan's figures on one device, as the report shows them."""

    peak_live_bytes: dict[Name, Count]
    fast_footprint_bytes: Count
    dma_bytes: dict[Name, Count]
    op_bytes: dict[Name, Count]
    dma_count: Count
    dma_cycles: Count
    dma_hidden_cycles: Count


class CrossDeviceEntry(StrictModel):
    """``memory.json`` ``cross_device[d]``: which plan the memory plan uses on a device of a
    multi-device plan, and why (``planner.memory.cross_device.DeviceExplanation``)."""

    plan: Name
    own_memory_cycles: Optional[Count]
    own_main_cycles: Optional[Count]
    alone_makespan: Optional[Count]
    main_makespan: Count
    slack_cycles: Count
    resolved_cycles: Optional[Count] = None
    resolved_bound_cycles: Optional[Count] = None
    resolved_main_cycles: Optional[Count] = None
    resolved_levels: Optional[Literal["all"]] = None  # the re-solve was over every level (main: all at home)
    n_level_cycles: Optional[Count] = None  # offered an N-level plan: its own makespan over every level


class CrossDeviceBound(StrictModel):
    """``memory.json`` ``cross_device_bound``: a lower bound on every memory plan of the spine's
    placement and orders (``planner.memory.cross_device.bound_entry``), and the written plan's gap to it."""

    bound_cycles: Count
    path_bound_cycles: Count
    shared_bound_cycles: Optional[Count] = None  # only under bandwidth: shared (main memory's share-cycles)
    spine_bound_cycles: Optional[Count]
    makespan_cycles: Count
    gap: Annotated[float, Field(ge=0)]


class MemoryDocument(StrictModel):
    """``memory.json``, format version 2."""

    format_version: Literal[2]
    choice: Name
    devices: dict[Name, DeviceMemoryEntry]
    skipped: dict[Name, Text]
    baselines: dict[Name, Count]
    figures: dict[Name, dict[Name, MemoryFigures]]
    cross_device: Optional[dict[Name, CrossDeviceEntry]] = None  # only for plans with link transfers
    cross_device_bound: Optional[CrossDeviceBound] = None  # likewise


class _AllocLevel(StrictModel):
    capacity_bytes: Count
    reserved_bytes: Count


class _AllocBuffer(StrictModel):
    name: Name
    level: Name
    address: Count
    size_bytes: Count
    start_cycle: Count
    end_cycle: Optional[Count]
    preloaded: bool
    view: bool


class _AllocDevice(StrictModel):
    kind: Name
    profile: Name
    clock_hz: Positive
    streams: Positive
    streams_used: list[Count]
    ops: Count
    instructions: Count
    end_cycle: Count
    fast_level: Optional[Name]
    memory: dict[Name, _AllocLevel]
    buffers: list[_AllocBuffer]


class _AllocOp(StrictModel):
    device: Name
    stream: Count
    start_cycle: Count
    end_cycle: Count
    instances: Optional[list[Name]] = None


class _AllocTransfer(StrictModel):
    id: Count
    src_op: Name
    dst_op: Name
    src_device: Name
    dst_device: Name
    link: Name
    size_bytes: Count
    start_cycle: Count
    end_cycle: Count


class AllocationDocument(StrictModel):
    """``allocation.json``, format version 2 (:func:`planner.lowering.allocation`)."""

    format_version: Literal[2]
    spec: Text
    clock_hz: Positive
    devices: dict[Name, _AllocDevice]
    ops: dict[Name, _AllocOp]
    transfers: list[_AllocTransfer]
    resources: dict[Name, Any]


M = TypeVar("M", bound=BaseModel)


def _field_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(error: dict[str, Any]) -> str:
    kind, msg = error.get("type", ""), error.get("msg", "")
    if kind == "missing":
        return "a required field is missing"
    if kind == "extra_forbidden":
        return "a field this file never has"
    found = repr(error.get("input"))
    found = found if len(found) <= 80 else found[:77] + "..."
    return f"{msg[0].lower() + msg[1:] if msg else kind} (found {found})"


def validate_document(model: type[M], data: Any, label: str) -> M:
    """``data`` as ``model``, or a :class:`VerificationError` naming the first bad field.

    Examples
    --------
    >>> validate_document(PlacedOpEntry, {"name": "a", "device": "d0", "stream": 0, "start_cycle": "x",
    ...                                   "duration_cycles": 5}, "plan.json").duration_cycles
    Traceback (most recent call last):
    ...
    planner.errors.VerificationError: plan.json: start_cycle: input should be a valid integer (found 'x')
    """
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise VerificationError(label, _field_path(tuple(first.get("loc", ()))), detail=_message(first)) from None
