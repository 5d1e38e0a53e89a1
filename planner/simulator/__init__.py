"""Simulator: an independent replay of the per-device binaries.

Glossary
--------
replay       decode every ``.bin``, re-time every instruction from the ISA formulas and the
             header, and walk the programs event by event (:func:`simulate`).
violation    one broken rule (overlap, early read, link conflict, memory over capacity,
             address overlap, duration mismatch...); an empty list means the binaries are valid.
strict       raise :class:`SimulationError` (an ``InternalError``) on any violation.
memory DMA   a ``DMA`` on the device's DMA engine (prefetch, eviction): timed and checked
             like compute, reported in ``SimulationResult.dmas``, not an op of the plan.
numeric mode execute the binaries' bytes: kernels with numpy, DMAs and transfers as copies,
             whole tensors captured when freed (:func:`simulate_numeric`).
"""

from planner.simulator.numeric import NumericResult, simulate_numeric, simulate_numeric_programs
from planner.simulator.replay import (
    DmaTiming,
    OpTiming,
    SimulationError,
    SimulationResult,
    TransferTiming,
    simulate,
    simulate_dir,
    simulate_programs,
)

__all__ = ["OpTiming", "TransferTiming", "DmaTiming", "SimulationResult", "SimulationError", "simulate",
           "simulate_programs", "simulate_dir", "NumericResult", "simulate_numeric",
           "simulate_numeric_programs"]
