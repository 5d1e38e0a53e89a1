"""Lowering: a plan becomes one timed ISA program per device, binaries and allocation.json.

Glossary
--------
program        one device's instructions (:class:`planner.isa.Program`), timed on the
               plan's reference clock exactly as the plan schedules them.
buffer         a tensor (or a received copy) in a device's main memory, with ALLOC/FREE
               at the ends of the lifetime the scheduler's memory model uses.
transfer id    a transfer's index in :func:`transfer_order`; SEND and RECV share it.
allocation     ``allocation.json``: devices, reserved (peak) memory per level, op
               placement, transfers and the determined resources.
"""

from planner.lowering.lower import ALLOCATION_FORMAT_VERSION, allocation, lower, peak_memory, transfer_order
from planner.lowering.outputs import write_allocation, write_binaries

__all__ = ["lower", "allocation", "peak_memory", "transfer_order", "write_binaries", "write_allocation",
           "ALLOCATION_FORMAT_VERSION"]
