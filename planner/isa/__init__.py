"""The simulated deterministic ISA: profiles, cost model, instructions, binary format.

Glossary
--------
profile        a device type's parameters (clock, ``R x C`` systolic array, vector lanes,
               memory levels fastest first, DMA start-up): :mod:`planner.isa.profiles`.
op cost        exact integer device cycles, MACs, FLOPs and bytes of one op on one
               profile (:func:`op_cost`); the roofline takes the max of compute and
               main-memory cycles.
resources      per-op, per-device and per-model work and storage determined before any
               solve (:func:`determine_resources`).
instruction    one timed ISA instruction (stream, start, duration in reference cycles;
               op; buffers read and written): :class:`Instruction`, :class:`Opcode`.
program        one device's instructions plus the header data needed to re-time them.
binary         the checksummed little-endian encoding of a program (:func:`encode`,
               :func:`decode`) and its text listing (:func:`listing`).
"""

from planner.isa.binary import FORMAT_VERSION, MAGIC, decode, encode, listing
from planner.isa.cost import (
    DATA_MOVEMENT_OPS,
    MATRIX_OPS,
    UNITS,
    VECTOR_OPS,
    OpCost,
    cached_op_cost,
    dma_cycles,
    memory_cycles,
    op_cost,
    op_duration_cycles,
    systolic_cycles,
    vector_cycles,
)
from planner.isa.instructions import (
    ALLOC_PRELOADED,
    ALLOC_VIEW,
    DMA_STREAM,
    Kernel,
    Operand,
    COMPUTE_OPCODES,
    TRANSFER_STREAM,
    Instruction,
    LevelInfo,
    LinkInfo,
    Opcode,
    Program,
    VectorOp,
    device_cycles,
    expected_duration_cycles,
)
from planner.isa.profiles import PROFILES, get_profile
from planner.isa.resources import (
    DeviceResources,
    ModelResources,
    OpResources,
    Resources,
    determine_resources,
)

__all__ = [
    "PROFILES", "get_profile",
    "OpCost", "op_cost", "cached_op_cost", "op_duration_cycles", "systolic_cycles", "vector_cycles",
    "memory_cycles", "dma_cycles", "VECTOR_OPS", "MATRIX_OPS", "DATA_MOVEMENT_OPS", "UNITS",
    "Opcode", "VectorOp", "Instruction", "LevelInfo", "LinkInfo", "Program", "device_cycles",
    "expected_duration_cycles", "TRANSFER_STREAM", "ALLOC_PRELOADED", "ALLOC_VIEW", "DMA_STREAM", "Kernel", "Operand", "COMPUTE_OPCODES",
    "MAGIC", "FORMAT_VERSION", "encode", "decode", "listing",
    "OpResources", "DeviceResources", "ModelResources", "Resources", "determine_resources",
]
