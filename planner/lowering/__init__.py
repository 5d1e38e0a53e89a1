"""Lowering: a plan (and its memory plan) becomes one timed ISA program per device, binaries and allocation.json.

Glossary
--------
program        one device's instructions (:class:`planner.isa.Program`), timed on the
               plan's reference clock exactly as the plan schedules them.
buffer         a tensor (or a portion, a fast copy, a received copy) in one memory level of a
               device, with ALLOC/FREE at the ends of its lifetime and its address in ``d``.
address        a buffer's byte offset in its level: from the memory plan; for devices
               without one, lowering leaves the program unaddressed and the address pass
               (:mod:`planner.memory.address_pass`, after lowering) packs it.
received copy  one buffer per tensor of a cross-device transfer, ``"<tensor>@<src device>-><op>"``
               (a control edge: one zero-byte ``"after:<op>@<src device>-><op>"``).
instance       an op of a memory-planned device, or one portion ``"<op>#<p>"`` of a split op.
kernel         what a compute instruction computes (op type, attributes, operand shapes and
               buffers), for the simulator's numeric mode; ops with arithmetic meaning only.
transfer id    a transfer's index in :func:`transfer_order`; SEND and RECV share it.
record order   the order of the records that start on one cycle: their execution order
               (docs/isa.md); :func:`order_records` makes it follow their dependencies.
allocation     ``allocation.json``: devices, reserved (peak) memory per level, every buffer
               with its address and lifetime, op placement, transfers and the determined
               resources.
"""

from planner.lowering.kernels import attrs_json, has_kernel, make_kernel, portion_cost, portion_shape
from planner.lowering.lower import (
    ALLOCATION_FORMAT_VERSION,
    allocation,
    base_op,
    lower,
    peak_memory,
    transfer_order,
)
from planner.lowering.order import BufferSpan, order_records
from planner.lowering.outputs import write_allocation, write_binaries

__all__ = ["lower", "allocation", "peak_memory", "transfer_order", "base_op", "write_binaries",
           "write_allocation", "ALLOCATION_FORMAT_VERSION",
           "attrs_json", "has_kernel", "make_kernel", "portion_shape", "portion_cost",
           "order_records", "BufferSpan"]
