"""Simulator: an independent replay of the per-device binaries.

Glossary
--------
replay       decode every ``.bin``, re-time every instruction from the ISA formulas and the
             header, and walk the programs event by event (:func:`simulate`).
violation    one broken rule (overlap, early read, link conflict, memory over capacity,
             duration mismatch...); an empty list means the binaries are valid.
strict       raise :class:`SimulationError` (an ``InternalError``) on any violation.
"""

from planner.simulator.replay import (
    OpTiming,
    SimulationError,
    SimulationResult,
    TransferTiming,
    compare_with_plan,
    simulate,
    simulate_dir,
    simulate_programs,
)

__all__ = ["OpTiming", "TransferTiming", "SimulationResult", "SimulationError", "simulate",
           "simulate_programs", "simulate_dir", "compare_with_plan"]
