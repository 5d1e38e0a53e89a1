"""The resolved spec: what :func:`planner.spec.load_spec` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from planner.graph.ir import Graph
from planner.hardware import Hardware
from planner.spec.memory_options import MemoryOptions

__all__ = ["Spec", "MaxLoadOptions"]


@dataclass(frozen=True, slots=True)
class MaxLoadOptions:
    """The resolved ``objective: {kind: max-load, ...}`` options.

    Attributes
    ----------
    contiguous : bool
        Every device's forward ops must form a convex piece of the graph (the paper's DP).
    accelerator_kind : str or None
        The device kind whose instances are the accelerators (pay communication, memory capped),
        or None: CPUs only.
    cpu_kind : str or None
        The device kind whose instances are the CPUs (no communication), or None: no CPUs.

    Examples
    --------
    >>> MaxLoadOptions(False, "acc", "cpu")
    MaxLoadOptions(contiguous=False, accelerator_kind='acc', cpu_kind='cpu')
    """

    contiguous: bool
    accelerator_kind: str | None
    cpu_kind: str | None = None


@dataclass(frozen=True)
class Spec:
    """A validated, resolved spec: hardware, the merged graph and the constraints.

    Attributes
    ----------
    name : str
        The spec's name (its ``name:`` key, else the file stem, else ``"spec"``).
    source : Path or None
        The YAML file it came from (None for a dict).
    hardware : planner.hardware.Hardware
        Device instances (``<kind><i>``), links, the reference clock.
    graph : planner.graph.ir.Graph
        All models merged; op and tensor names are ``"<model>/<name>"``.
    objective : str
        ``"latency"``, ``"throughput"`` or ``"max-load"`` (``max_load`` is normalised).
    max_load : MaxLoadOptions or None
        With ``objective == "max-load"``: contiguity and which device kinds are the
        accelerators and the CPUs. None for the other objectives.
    allowed_devices : dict of str to tuple of str
        For pinned ops only: the device instances each may use (hardware order).
    colocation_groups : tuple of tuple of str
        Ops that must share one device (overlapping groups merged; topological order).
    gangs : tuple of tuple of str
        ``constraints.gang`` (with islands only): each gang's ops start on the same cycle,
        each on its own device of one island (graph order).
    time_limit_s, workers, seed, search
        Solver settings (defaults 30 s, 2 workers, seed 0, ``"deterministic"`` search).
    strategy, groups
        ``solver: {strategy, groups}``: which scheduler path runs (``auto``, ``flat`` or
        ``hierarchical``) and the hierarchical path's number of groups (None: its default).
    models : tuple of str
        Model names in spec order.
    document : SpecDocument or None
        The validated document (units already converted), for tools that echo the spec.
    device_cycles : mapping or None
        Timeline cycles of every op on every device kind (None where it cannot run), costed
        when the spec was loaded (:func:`planner.isa.cost.cycles_table`); None for a Spec built
        by hand, which the pipeline then costs itself.
    memory : planner.spec.memory_options.MemoryOptions
        The ``memory:`` section: ``enabled`` (``plan``), the fast level per device kind
        (``fast``; a single name is expanded to every kind), ``split``, ``split_factors``
        (sorted, with 1) and ``alignment_bytes``. Default: memory planning off.

    Examples
    --------
    >>> from planner.spec import load_spec
    >>> spec = load_spec({"version": 1, "hardware": {"devices": [{"name": "cpu", "profile": "generic"}]},
    ...                   "models": [{"name": "m", "generator": {"kind": "mlp", "layers": 2, "width": 8}}]})
    >>> spec.name, [d.name for d in spec.hardware.devices], list(spec.graph.ops)
    ('spec', ['cpu0'], ['m/fc0', 'm/act0', 'm/fc1'])
    >>> spec.memory.enabled, spec.memory.split_factors, spec.memory.alignment_bytes
    (False, (1, 2, 4), 64)
    """

    name: str
    source: Path | None
    hardware: Hardware
    graph: Graph
    objective: str = "latency"
    allowed_devices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    colocation_groups: tuple[tuple[str, ...], ...] = ()
    gangs: tuple[tuple[str, ...], ...] = ()
    time_limit_s: float = 30.0
    workers: int = 2
    seed: int = 0
    search: str = "deterministic"
    strategy: str = "auto"
    groups: int | None = None
    models: tuple[str, ...] = ()
    document: Any = field(default=None, repr=False, compare=False)
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    max_load: MaxLoadOptions | None = None
    device_cycles: Mapping[tuple[str, str], int | None] | None = field(default=None, repr=False, compare=False)

    @property
    def op_cycles(self) -> dict[str, dict[str, int]]:
        """Explicit device cycles per op and kind (only ops that give ``cycles:``)."""
        return {name: dict(op.cycles) for name, op in self.graph.ops.items() if op.cycles}
