"""Typed models of the spec, version 1 (pydantic v2, unknown keys rejected).

These models check the *form* of a spec: keys, types, enums and units. Quantities are
converted to integers in base units as they are validated (``"16 GiB"`` becomes
``17179869184``), except durations that depend on the reference clock (link latencies),
which keep their text until :mod:`planner.spec.resolve` knows the clock. Cross-references
(device names in pins, tensor names in ops, profiles...) are checked by the resolver.

The JSON Schema (:func:`planner.spec.schema.spec_json_schema`) is generated from these
same models, so the schema and the validator cannot drift.
"""

from __future__ import annotations

import difflib
import json
import math
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)

from planner.graph.ir import DTYPE_BYTES, TENSOR_KINDS
from planner.isa.cost import DATA_MOVEMENT_OPS, MATRIX_OPS, VECTOR_OPS
from planner.spec.limits import (
    MAX_CYCLES,
    MAX_DEVICES,
    MAX_DIM,
    MAX_LINKS,
    MAX_LIST,
    MAX_MEMORY_LEVELS,
    MAX_NAME_LENGTH,
    MAX_ATTRS_BYTES,
    MAX_OP_IO,
    MAX_OP_NAME_LENGTH,
    MAX_OPS,
    MAX_RANK,
    MAX_SEED,
    MAX_SPLIT_FACTOR,
    MAX_STREAMS,
    MAX_TENSORS,
    MAX_WORKERS,
)
from planner.spec.units import (
    parse_bandwidth,
    parse_bytes,
    parse_duration_cycles,
    parse_frequency,
    parse_seconds,
)

__all__ = ["OP_TYPES", "OBJECTIVE_KINDS", "DEFAULT_SPLIT_FACTORS", "MemoryPlanSpec", "ObjectiveSpec",
           "SpecDocument", "normalize_objective"]

#: Op types the cost model understands (the contract in planner.graph.generators), and task.
#:
#: >>> "matmul" in OP_TYPES and "task" in OP_TYPES
#: True
OP_TYPES: tuple[str, ...] = (*MATRIX_OPS, *VECTOR_OPS, *DATA_MOVEMENT_OPS, "task")

_NUM = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
_SIZE_RE = r"(B|bytes?|[kKMGTP]B|[KMGTP]iB|[kMGT]bit)"


def _quantity(parser: Any, pattern: str, examples: list[str], description: str) -> Any:
    """An int field given as a unit string; the JSON Schema shows the string form."""
    return Annotated[
        int,
        BeforeValidator(parser),
        WithJsonSchema({"type": "string", "pattern": pattern, "description": description,
                        "examples": examples}),
    ]


def _check_duration(value: Any) -> Any:
    parse_duration_cycles(value, 1_000_000_000)
    return value


def _check_seconds(value: Any) -> float:
    return parse_seconds(value)


Size = _quantity(parse_bytes, rf"^\s*{_NUM}\s*{_SIZE_RE}\s*$", ["16 GiB", "512 MB", "4 KiB"],
                 "A size: B, KB/kB, MB, GB, TB (powers of 10) or KiB, MiB, GiB, TiB (powers of 2).")
Bandwidth = _quantity(parse_bandwidth, rf"^\s*{_NUM}\s*{_SIZE_RE}\s*/\s*(s|sec)\s*$",
                      ["900 GB/s", "50 GiB/s", "100 Gbit/s"], "A bandwidth: a size unit per second.")
Frequency = _quantity(parse_frequency, rf"^\s*{_NUM}\s*(Hz|kHz|MHz|GHz)\s*$",
                      ["1 GHz", "940 MHz"], "A frequency: Hz, kHz, MHz or GHz.")
Latency = Annotated[
    Union[Annotated[int, Field(strict=True)], str],
    AfterValidator(_check_duration),
    WithJsonSchema({
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": MAX_CYCLES, "description": "reference-clock cycles"},
            {"type": "string",
             "pattern": rf"^\s*{_NUM}\s*(ps|ns|us|µs|ms|s|cycles?)?\s*$"},
        ],
        "description": "A duration: ns, us, ms, s, or a whole number of reference cycles.",
        "examples": ["2 us", "500 ns", 300],
    }),
]
Seconds = Annotated[
    float,
    BeforeValidator(_check_seconds),
    WithJsonSchema({"type": "string", "pattern": rf"^\s*{_NUM}\s*(ps|ns|us|µs|ms|s)\s*$",
                    "description": "A wall-clock duration with a unit.", "examples": ["30 s", "500 ms"]}),
]
# Count and NonNegative are shared with the fleet models, whose fields set their own upper
# bounds; the spine's fields use the bounded types below (an Annotated bound here would
# override a field's own, tighter one).
Count = Annotated[int, Field(strict=True, ge=1)]
NonNegative = Annotated[int, Field(strict=True, ge=0)]
Cycles = Annotated[int, Field(strict=True, ge=0, le=MAX_CYCLES)]
#: Names that may become file names (spec, model, device, level, link): no ".", "..", "-x".
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_LENGTH, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")]
#: Op and tensor names (and pin patterns): printable text without control characters.
OpName = Annotated[str, Field(min_length=1, max_length=MAX_OP_NAME_LENGTH, pattern=r"^[^\x00-\x1f\x7f]+$")]
Dim = Annotated[int, Field(strict=True, ge=1, le=MAX_DIM)]
_ATTR_SCALARS = (bool, int, float, str)


def _check_attr_value(value: Any) -> Any:
    """An op attribute: a finite number, a string, a boolean, or a flat list of them."""
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and len(value) > MAX_OP_IO:
        raise ValueError(f"an attribute list may hold at most {MAX_OP_IO:,} values")
    for item in items:
        if not isinstance(item, _ATTR_SCALARS):
            raise ValueError(f"an attribute is a number, a string, a boolean or a list of them, got {item!r:.60}")
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"an attribute must be a finite number, got {item!r}")
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > 2**62:
            raise ValueError(f"an attribute integer must be within +-2^62, got {item:.3e}")
        if isinstance(item, str) and len(item) > MAX_OP_NAME_LENGTH:
            raise ValueError(f"an attribute string may hold at most {MAX_OP_NAME_LENGTH} characters")
    return value


def _check_attrs_size(attrs: dict[str, Any]) -> dict[str, Any]:
    """An op's attributes travel in the binary as one JSON string: at most 32 KiB."""
    size = len(json.dumps(attrs, sort_keys=True, separators=(",", ":")))
    if size > MAX_ATTRS_BYTES:
        raise ValueError(f"the op's attributes take {size:,} bytes as JSON; the limit is {MAX_ATTRS_BYTES:,}")
    return attrs


_ATTR_SCALAR_SCHEMAS = [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]
AttrValue = Annotated[
    Any,
    AfterValidator(_check_attr_value),
    WithJsonSchema({"anyOf": [*_ATTR_SCALAR_SCHEMAS, {"type": "array", "items": {"anyOf": _ATTR_SCALAR_SCHEMAS}}]}),
]
DType = Literal[tuple(DTYPE_BYTES)]  # type: ignore[valid-type]
TensorKind = Literal[tuple(TENSOR_KINDS)]  # type: ignore[valid-type]
OpType = Literal[OP_TYPES]  # type: ignore[valid-type]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class MemorySpec(_Model):
    """One memory level of a device (listed fastest first)."""

    name: Name = Field(description="Level name, e.g. hbm, sram.", examples=["hbm"])
    capacity: Size = Field(description="Capacity.")
    bandwidth: Bandwidth = Field(description="Bandwidth to the compute units.")


class DmaRateSpec(_Model):
    """A DMA path's own rate (either way), in place of the slower level's bandwidth."""

    between: list[Name] = Field(min_length=2, max_length=2, description="The two levels the path joins.",
                                examples=[["dram", "host"]])
    bandwidth: Bandwidth = Field(description="The rate a DMA moves bytes over this path.")


class DeviceSpec(_Model):
    """A device kind and how many instances of it (named ``<name>0``, ``<name>1``...)."""

    name: Name = Field(description="The device kind; instances are <name>0, <name>1, ...",
                       examples=["big", "npu"])
    profile: str = Field(description="Built-in ISA profile.",
                         examples=["tpu-v4", "tpu-v1", "edge-npu", "generic"])
    count: Annotated[int, Field(strict=True, ge=1, le=MAX_DEVICES)] = Field(1, description="Number of instances.")
    streams: Annotated[int, Field(strict=True, ge=1, le=MAX_STREAMS)] = Field(
        1, description="Execution lanes per instance (ops that may overlap).")
    clock: Optional[Frequency] = Field(None, description="Override of the profile's clock.")
    memory: Optional[list[MemorySpec]] = Field(
        None, min_length=1, max_length=MAX_MEMORY_LEVELS,
        description="Replaces the profile's memory levels (fastest first).")
    main: Optional[Name] = Field(
        None, description="The main memory level, where weights live (default: the profile's; with `memory` "
                          "given, the largest level).", examples=["hbm"])
    dma_paths: Optional[list[Annotated[list[Name], Field(min_length=2, max_length=2)]]] = Field(
        None, max_length=MAX_MEMORY_LEVELS * (MAX_MEMORY_LEVELS - 1) // 2,
        description="Pairs of levels a DMA can move bytes between, either way (default: the profile's; with "
                    "`memory` given, every pair).", examples=[[["vmem", "hbm"], ["hbm", "host"]]])
    dma_rates: Optional[list[DmaRateSpec]] = Field(
        None, max_length=MAX_MEMORY_LEVELS * (MAX_MEMORY_LEVELS - 1) // 2,
        description="DMA paths with their own rate (default: a DMA runs at the slower level's bandwidth).")


class LinkSpec(_Model):
    """An explicit link; it carries one transfer at a time."""

    name: Name = Field(description="Link name.", examples=["ici0"])
    between: list[Name] = Field(min_length=2, max_length=MAX_DEVICES,
                                description="Device instances it joins (two or more).",
                                examples=[["big0", "big1"]])
    bandwidth: Bandwidth = Field(description="Bandwidth.")
    latency: Latency = Field(0, description="Fixed latency of each transfer.")


class TopologySpec(_Model):
    """Links generated for all device instances."""

    kind: Literal["all-to-all", "ring", "bus"] = Field(
        description="all-to-all: one link per pair; ring: neighbours i, i+1 (mod n); "
                    "bus: one shared link joining all devices.")
    bandwidth: Bandwidth = Field(description="Bandwidth of each link.")
    latency: Latency = Field(0, description="Latency of each link.")


class IslandSpec(_Model):
    """An accelerator island: devices joined by their own fast links (and a host memory)."""

    name: Name = Field(description="Island name.", examples=["pod-a"])
    devices: list[Name] = Field(min_length=1, max_length=MAX_DEVICES,
                                description="Device instances or kinds (a kind: all its instances) in the island.",
                                examples=[["tpu"], ["gpu0", "gpu1"]])
    topology: Optional[TopologySpec] = Field(
        None, description="The island's fast links, generated over its devices (or hardware.links inside it).")
    host_memory: Optional[Size] = Field(
        None, description="Host memory of the island: it holds the weights and graph inputs of the portions the split puts there.")


class NetworkSpec(_Model):
    """The data-centre network between islands: one link shared by all cross-island traffic."""

    name: Name = Field("network", description="Link name of the network.")
    bandwidth: Bandwidth = Field(description="Bandwidth (shared: one cross-island transfer at a time).")
    latency: Latency = Field(0, description="Fixed latency of each cross-island transfer.")
    islands: Optional[list[Name]] = Field(None, min_length=1, max_length=MAX_DEVICES,
                                          description="The islands it joins (default: all).")


class HardwareSpec(_Model):
    """Devices, links and the plan's reference clock."""

    clock: Frequency = Field("1 GHz", validate_default=True, description="Reference clock of the plan's timeline "
                             "(cycles in plan.json are of this clock).")
    devices: list[DeviceSpec] = Field(min_length=1, max_length=MAX_DEVICES, description="Device kinds.")
    links: Optional[list[LinkSpec]] = Field(None, max_length=MAX_LINKS, description="Explicit links.")
    topology: Optional[TopologySpec] = Field(None, description="Generated links.")
    islands: Optional[list[IslandSpec]] = Field(
        None, min_length=1, max_length=MAX_DEVICES,
        description="Accelerator islands: every device in exactly one (none given: one island).")
    network: Optional[NetworkSpec] = Field(None, description="Data-centre links between the islands.")


class TensorSpec(_Model):
    """A tensor of an inline graph."""

    name: OpName = Field(description="Tensor name (prefixed with the model name).")
    shape: list[Dim] = Field(
        max_length=MAX_RANK, description="Dimensions (an empty list is a scalar).", examples=[[1, 512]])
    dtype: DType = Field("fp32", description="Element type.")
    kind: TensorKind = Field("activation", description="weight | input | activation | output.")


class OpSpec(_Model):
    """An op of an inline graph."""

    name: OpName = Field(description="Op name (prefixed with the model name).")
    type: OpType = Field(description="Op type; task is opaque and needs cycles.")
    inputs: list[OpName] = Field(default_factory=list, max_length=MAX_OP_IO, description="Tensors read.")
    outputs: list[OpName] = Field(default_factory=list, max_length=MAX_OP_IO, description="Tensors written.")
    attrs: Annotated[dict[str, AttrValue], Field(max_length=64), AfterValidator(_check_attrs_size)] = Field(
        default_factory=dict, description="Op attributes (stride, axis...): numbers, strings, booleans or "
        "lists of them.")
    cycles: dict[str, Cycles] = Field(
        default_factory=dict, description="Device cycles per device kind (overrides the cost model).",
        examples=[{"big": 100, "small": 400}])
    after: list[OpName] = Field(default_factory=list, max_length=MAX_OP_IO,
                                description="Ops of the same model this one follows without data.")


class GraphSpec(_Model):
    """An inline graph (tensors and ops) or an ONNX file."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["ops"]},
                                                           {"required": ["onnx"]}]})

    tensors: Optional[list[TensorSpec]] = Field(None, max_length=MAX_TENSORS,
                                                description="Tensors of an inline graph.")
    ops: Optional[list[OpSpec]] = Field(None, max_length=MAX_OPS, description="Ops of an inline graph.")
    onnx: Optional[str] = Field(None, description="An ONNX file, relative to the spec file.",
                                examples=["models/resnet18.onnx"])

    @model_validator(mode="after")
    def _one_source(self) -> "GraphSpec":
        if self.onnx is not None and (self.tensors is not None or self.ops is not None):
            raise ValueError("a graph is either inline (tensors, ops) or onnx, not both")
        if self.onnx is None and self.ops is None:
            raise ValueError("a graph needs ops (and tensors), or onnx: <file>")
        return self


class MlpGenerator(_Model):
    """Multilayer perceptron: matmuls with an activation between them (2·layers − 1 ops)."""

    kind: Literal["mlp"]
    layers: Dim = Field(3, description="Linear layers.")
    width: Dim = Field(512, description="Hidden size.")
    hidden: Optional[list[Dim]] = Field(None, description="Hidden sizes (overrides layers/width).")
    in_features: Optional[Dim] = Field(None, description="Input size (default: first hidden).")
    out_features: Optional[Dim] = Field(None, description="Output size (default: last hidden).")
    batch: Dim = Field(1, description="Batch size.")
    activation: Literal["relu", "gelu"] = Field("relu", description="Activation.")
    dtype: DType = Field("fp32", description="Element type.")


class TransformerGenerator(_Model):
    """Decoder blocks with per-head attention (layers·(11 + 4·heads) + 1 ops)."""

    kind: Literal["transformer"]
    layers: Dim = Field(2, description="Decoder blocks.")
    d_model: Dim = Field(512, description="Model width (divisible by heads).")
    heads: Dim = Field(8, description="Attention heads.")
    seq: Dim = Field(128, description="Sequence length.")
    batch: Dim = Field(1, description="Batch size.")
    d_ff: Optional[Dim] = Field(None, description="MLP width (default 4·d_model).")
    dtype: DType = Field("fp16", description="Element type.")


class ResnetGenerator(_Model):
    """ResNet-style CNN with residual blocks (6 + 5·sum(blocks) + stages − 1 ops)."""

    kind: Literal["resnet"]
    blocks: list[Dim] = Field([2, 2, 2, 2], min_length=1, description="Residual blocks per stage.")
    width: Dim = Field(64, description="Stem channels (doubled per stage).")
    image: Dim = Field(224, description="Input height and width.")
    in_channels: Dim = Field(3, description="Input channels.")
    classes: Dim = Field(1000, description="Classifier outputs.")
    batch: Dim = Field(1, description="Batch size.")
    dtype: DType = Field("fp32", description="Element type.")


Generator = Annotated[Union[MlpGenerator, TransformerGenerator, ResnetGenerator],
                      Field(discriminator="kind")]


class ModelSpec(_Model):
    """One model: a built-in generator or a graph."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["generator"]},
                                                           {"required": ["graph"]}]})

    name: Name = Field(description='Model name; its ops and tensors become "<name>/<op>".',
                       examples=["gpt"])
    generator: Optional[Generator] = Field(None, description="A built-in generator.")
    graph: Optional[GraphSpec] = Field(None, description="An inline graph or an ONNX file.")

    @model_validator(mode="after")
    def _one_source(self) -> "ModelSpec":
        if (self.generator is None) == (self.graph is None):
            raise ValueError("a model needs exactly one of generator or graph")
        return self


class PinSpec(_Model):
    """Restrict ops to a device instance or kind."""

    ops: Union[OpName, list[OpName]] = Field(
        description='Op names or fnmatch patterns on full names, e.g. "gpt/layer0/*".',
        examples=["gpt/layer0/*"])
    device: Name = Field(description="A device instance (big0) or kind (big).", examples=["big0"])


class MemoryLimitSpec(_Model):
    """Cap the main memory of an instance or of every instance of a kind."""

    device: Name = Field(description="A device instance or kind.", examples=["big0"])
    max: Size = Field(description="The cap.")


class ConstraintsSpec(_Model):
    """Placement constraints."""

    pins: list[PinSpec] = Field(default_factory=list, description="Restrict ops to devices; an op matched "
                                "by several pins may use only the devices they all allow.")
    colocate: list[Annotated[list[OpName], Field(min_length=2)]] = Field(
        default_factory=list, description="Groups of ops (names or patterns) that share one device.",
        examples=[[["gpt/layer0/attn_qkv", "gpt/layer0/attn_out"]]])
    memory_limits: list[MemoryLimitSpec] = Field(default_factory=list,
                                                 description="Caps on main memory (the tightest applies).")
    gang: list[Annotated[list[OpName], Field(min_length=1)]] = Field(
        default_factory=list, description="Gangs (with hardware.islands): groups of ops (names or patterns), the "
        "shards of one portion, that start on the same cycle, each on its own device of one island.",
        examples=[[["gpt/layer0/head*"]]])


class SolverSpec(_Model):
    """Solver settings (the command line may override them)."""

    time_limit: Seconds = Field("30 s", validate_default=True,
                                description="Time for the search (see `search`; lowering and replay come on top).")
    workers: Annotated[int, Field(strict=True, ge=1, le=MAX_WORKERS)] = Field(
        2, description="Parallel search workers.")
    seed: Annotated[int, Field(strict=True, ge=0, le=MAX_SEED)] = Field(
        0, description="Random seed (same seed and workers, same plan).")
    search: Literal["deterministic", "until-limit"] = Field(
        "deterministic",
        description="deterministic: the time limit becomes a fixed budget of deterministic work, so the same "
                    "spec, seed and workers give the same bytes on any machine (the wall clock is only a "
                    "safety net, at 3 x the limit + 5 s, and the result says when it fired); until-limit: "
                    "search until the wall clock (uses the whole limit, never byte-reproducible).")
    strategy: Literal["auto", "flat", "hierarchical"] = Field(
        "auto", description="auto: flat CP-SAT (with LNS) on small graphs, hierarchical grouping + "
        "placement + LNS on large ones; flat or hierarchical: always that one.")
    groups: Optional[Annotated[int, Field(strict=True, ge=1, le=MAX_OPS)]] = Field(
        None, description="Groups the hierarchical strategy coarsens the graph into (default: about "
        "ops / 8, between 8 per device and 160).")


#: Objective kinds, and the spellings accepted for them.
#:
#: >>> OBJECTIVE_KINDS
#: ('latency', 'throughput', 'max-load')
OBJECTIVE_KINDS: tuple[str, ...] = ("latency", "throughput", "max-load")
_OBJECTIVE_ALIASES = {"max_load": "max-load"}


class ObjectiveSpec(_Model):
    """What to minimise; the mapping form carries the max-load options.

    ``objective: max-load`` is short for ``objective: {kind: max-load}``. In the max-load
    objective (Tarnawski et al., NeurIPS 2020) devices of one kind are the accelerators and
    devices of the CPU kind (``cpu``; default: a kind named ``cpu``, if any) are the CPUs:
    an accelerator's load is its ops' cycles plus the transfer of every output crossing
    to or from it, a CPU's load its ops' cycles; the largest load is minimised.
    """

    model_config = ConfigDict(title="ObjectiveSpec")

    kind: Literal["latency", "throughput", "max-load", "max_load"] = Field(
        description="latency: minimise the makespan; throughput: minimise the busiest device's or "
                    "link's load (pipelined steady state); max-load: the paper's max-load partitioning "
                    "(max_load is accepted too).")
    contiguous: bool = Field(False, strict=True, description="max-load only: every device's ops form a "
                             "contiguous (convex) piece of the forward graph, as in the paper's DP.")
    cpu: Optional[Name] = Field(None, description="max-load only: the device kind in the CPU role (pays "
                                "no communication); default: the kind named cpu, if there is one.",
                                examples=["cpu"])

    @model_validator(mode="after")
    def _options_need_max_load(self) -> "ObjectiveSpec":
        if normalize_objective(self.kind) != "max-load":
            given = [k for k in ("contiguous", "cpu") if k in self.model_fields_set]
            if given:
                raise ValueError(f"{given[0]!r} applies to objective max-load only, not {self.kind}")
        return self


def normalize_objective(kind: str) -> str:
    """The canonical spelling of an objective kind.

    Examples
    --------
    >>> normalize_objective("max_load"), normalize_objective("latency")
    ('max-load', 'latency')
    """
    return _OBJECTIVE_ALIASES.get(kind, kind)


def _objective_form(value: Any) -> Any:
    """``objective: <kind>`` becomes ``{kind: <kind>}``; an unknown kind gets a did-you-mean."""
    if isinstance(value, str):
        if normalize_objective(value) not in OBJECTIVE_KINDS:
            close = difflib.get_close_matches(value, [*OBJECTIVE_KINDS, *_OBJECTIVE_ALIASES], n=1, cutoff=0.6)
            hint = f"; did you mean {normalize_objective(close[0])!r}?" if close else ""
            raise ValueError(f"expected 'latency', 'throughput' or 'max-load', got {value!r}{hint} "
                             "(or a mapping such as {kind: max-load, contiguous: true})")
        return {"kind": value}
    if value is not None and not isinstance(value, dict) and not isinstance(value, ObjectiveSpec):
        raise ValueError(f"expected an objective name (latency, throughput, max-load) or a mapping "
                         f"{{kind: max-load, contiguous: true}}, got {value!r}")
    return value


Objective = Annotated[
    ObjectiveSpec,
    BeforeValidator(_objective_form),
    WithJsonSchema({
        "anyOf": [{"type": "string", "enum": [*OBJECTIVE_KINDS, *_OBJECTIVE_ALIASES]},
                  ObjectiveSpec.model_json_schema()],
        "description": "latency | throughput | max-load, or a mapping {kind: max-load, contiguous: "
                       "true|false, cpu: <device kind>}.",
        "examples": ["latency", "max-load", {"kind": "max-load", "contiguous": True}],
        "default": "latency",
    }),
]


#: Split factors tried when the spec gives none (1, no split, is always tried).
DEFAULT_SPLIT_FACTORS: tuple[int, ...] = (1, 2, 4)


def _check_split_factor(value: int) -> int:
    if value < 1:
        raise ValueError(f"a split factor must be >= 1 (1 means the op is not split), got {value}")
    if value > MAX_SPLIT_FACTOR:
        raise ValueError(f"a split factor must be <= {MAX_SPLIT_FACTOR:,}, got {value:,}")
    return value


def _check_alignment(value: int) -> int:
    if value & (value - 1):
        below = 1 << (value.bit_length() - 1)
        raise ValueError(f"alignment must be a power of two number of bytes, got {value} B; "
                         f"nearest: {below} B or {2 * below} B")
    return value


def _check_fast(value: Any) -> Any:
    if value is not None and not isinstance(value, (str, dict)):
        raise ValueError(f"expected a level name (fast: vmem) or a mapping of device kinds to level "
                         f"names (fast: {{tpu: vmem, npu: sram}}), got {value!r}")
    return value


SplitFactor = Annotated[
    int,
    Field(strict=True),
    AfterValidator(_check_split_factor),
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_SPLIT_FACTOR}),
]


class MemoryPlanSpec(_Model):
    """Memory planning: which level is fast, whether ops may be split, buffer alignment.

    Without ``plan: true`` every tensor lives in its device's main memory; the other keys
    are still checked. See ``docs/memory.md``.
    """

    model_config = ConfigDict(title="MemoryPlanSpec")

    plan: bool = Field(False, strict=True, description="Plan memory levels: keep tensors in a fast "
                       "level, prefetch and evict them, split ops (default false: main memory only).")
    fast: Annotated[Optional[Union[Name, dict[Name, Name]]], BeforeValidator(_check_fast)] = Field(
        None, description="The fast level: one level name for every device kind, or a mapping "
                          "{device kind: level name}; default: each profile's fastest level. "
                          "The slow level is always the device's main memory.",
        examples=["vmem", {"tpu": "vmem", "npu": "sram"}])
    split: bool = Field(True, strict=True, description="May ops be split into portions along dim 0.")
    split_factors: list[SplitFactor] = Field(
        list(DEFAULT_SPLIT_FACTORS), max_length=MAX_LIST,
        description="Factors tried (1, no split, is always included); "
        "a factor must divide dim 0 of every tensor it splits.", examples=[[1, 2, 4]])
    alignment: Annotated[Size, AfterValidator(_check_alignment)] = Field(
        "64 B", validate_default=True, description="Every buffer address is a multiple of this "
        "(a power of two).", examples=["64 B", "4 KiB"])
    bandwidth: Literal["separate", "shared"] = Field(
        "separate", description="separate: an op has each level's full bandwidth whatever the DMAs move "
        "(default); shared: ops and DMAs contend for each level's bandwidth (docs/memory.md, \"Shared "
        "bandwidth\"), in the solver, the retiming and the simulator alike.", examples=["shared"])
    home: dict[OpName, Name] = Field(
        default_factory=dict, max_length=MAX_TENSORS,
        description="Per weight or graph input (its full name, \"<model>/<tensor>\"), the level holding its "
                    "persistent copy when it is not main memory: a level listed after main, e.g. host memory "
                    "for offloaded weights (default: main memory).",
        examples=[{"mlp/fc0/w": "host"}])


def _integer_version(value: Any) -> Any:
    """``version: true`` equals 1 in Python; the schema says integer, so a boolean is refused."""
    if isinstance(value, bool):
        raise ValueError(f"unsupported spec version {value!r} (a boolean); this planner reads version 1")
    return value


class SpecDocument(_Model):
    """A planning spec, version 1: hardware, models, objective, constraints, solver.

    Examples
    --------
    >>> doc = SpecDocument.model_validate({
    ...     "hardware": {"devices": [{"name": "npu", "profile": "edge-npu",
    ...                  "memory": [{"name": "sram", "capacity": "4 MiB", "bandwidth": "128 GB/s"}]}]},
    ...     "models": [{"name": "m", "generator": {"kind": "mlp"}}]})
    >>> doc.hardware.clock, doc.hardware.devices[0].memory[0].capacity, doc.solver.time_limit
    (1000000000, 4194304, 30.0)
    >>> doc.objective
    ObjectiveSpec(kind='latency', contiguous=False, cpu=None)
    """

    model_config = ConfigDict(title="plan spec (version 1)")

    version: Annotated[Literal[1], BeforeValidator(_integer_version)] = Field(1, description="Spec format version.")
    name: Optional[Name] = Field(None, description="Spec name (default: the file stem).")
    hardware: HardwareSpec = Field(description="Devices, links and the reference clock.")
    models: list[ModelSpec] = Field(min_length=1, max_length=MAX_OPS, description="The models to place and schedule.")
    objective: Objective = Field(
        "latency", validate_default=True,
        description="latency: minimise the makespan; throughput: minimise the busiest device's load "
                    "(pipelined steady state); max-load: the max-load partitioning of Tarnawski et al. "
                    "(NeurIPS 2020), optionally {kind: max-load, contiguous: true, cpu: <kind>}.")
    constraints: ConstraintsSpec = Field(default_factory=ConstraintsSpec,
                                         description="Pins, colocation groups and memory limits.")
    solver: SolverSpec = Field(default_factory=SolverSpec, description="Solver settings.")
    memory: MemoryPlanSpec = Field(default_factory=MemoryPlanSpec,
                                   description="Memory planning across each device's levels (optional).")
