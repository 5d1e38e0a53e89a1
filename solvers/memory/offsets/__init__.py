"""Offset assignment: an address for every buffer of one memory level.

Glossary
--------
buffer     bytes that live over a half-open interval ``[start, end)`` of steps of a fixed
           op order, index ``0..num_buffers-1``.
offset     the buffer's first address in its level (a multiple of its alignment).
peak       the highest end address, ``max(offset + size)``: the arena the level needs.
live LB    max over steps of the live bytes (alignment-rounded): no plan beats it.
fragmentation  ``(peak - LB) / peak``.

Solvers: :class:`CpSatOffsetSolver` (exact, ``NoOverlap2D``),
:class:`GreedyBySizeOffsetSolver` (TFLite's arena planner), :class:`FirstFitOffsetSolver`.
"""

from solvers.memory.offsets.cpsat import CpSatOffsetSolver, OffsetVars, add_no_overlap, add_peak, build_offset_model
from solvers.memory.offsets.greedy import FirstFitOffsetSolver, GreedyBySizeOffsetSolver, place_in_order
from solvers.memory.offsets.problem import OffsetProblem, OffsetSolution
from solvers.memory.offsets.validate import fragmentation, live_bytes_lower_bound, peak_bytes, validate_offsets

__all__ = [
    "OffsetProblem", "OffsetSolution",
    "validate_offsets", "peak_bytes", "live_bytes_lower_bound", "fragmentation",
    "place_in_order", "GreedyBySizeOffsetSolver", "FirstFitOffsetSolver",
    "CpSatOffsetSolver", "OffsetVars", "build_offset_model", "add_no_overlap", "add_peak",
]
