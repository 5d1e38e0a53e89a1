"""The spec: YAML (or a dict) → validated typed document → resolved :class:`Spec`.

Glossary
--------
SpecDocument
    The typed form of the YAML (pydantic, unknown keys rejected, units converted).
Spec
    The resolved spec: :class:`~planner.hardware.Hardware`, the merged
    :class:`~planner.graph.ir.Graph`, pins as allowed devices, colocation groups, solver settings,
    and the ``memory:`` section as :class:`~planner.spec.memory_options.MemoryOptions` (``spec.memory``).
load_spec
    Read, validate and resolve; every problem is one SpecError with file, line and path.
spec_json_schema
    The JSON Schema generated from the same models (``plan schema``).
parse_bytes, parse_bandwidth, parse_frequency, parse_duration_cycles, parse_seconds
    Unit strings to integers in base units (bytes, bytes/s, Hz, cycles) or seconds.
reader
    Bounded YAML and JSON reading (size, nesting, expanded aliases) with lines on demand.
limits
    The documented input limits (``docs/architecture.md``, "Input limits"); ``sizes`` checks
    them before the work each one bounds.
"""

from planner.spec.loader import load_spec
from planner.spec.models import SpecDocument
from planner.spec.schema import spec_json_schema
from planner.spec.types import Spec
from planner.spec.units import (
    parse_bandwidth,
    parse_bytes,
    parse_duration_cycles,
    parse_frequency,
    parse_seconds,
)

__all__ = [
    "Spec",
    "SpecDocument",
    "load_spec",
    "spec_json_schema",
    "parse_bytes",
    "parse_bandwidth",
    "parse_frequency",
    "parse_duration_cycles",
    "parse_seconds",
]
