"""The spec's ``memory:`` options, resolved (what the memory planner is asked to do).

Examples
--------
>>> MemoryOptions().enabled, MemoryOptions().alignment_bytes
(False, 64)
>>> MemoryOptions(enabled=True, fast={"tpu-v4": "vmem"}).fast_level("tpu-v4")
'vmem'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["MemoryOptions"]


@dataclass(frozen=True)
class MemoryOptions:
    """``enabled``: plan memory levels (issue 3); otherwise everything lives in main memory.

    ``fast`` maps a device kind to the name of its fast level; a kind not listed uses its
    profile's fastest level (index 0). The slow level is always the device's main memory.
    A device whose fast level is its main level (one level only) is not memory-planned.
    ``split``: whether ops may be split into portions; ``split_factors``: the factors tried
    (each must divide dimension 0 of every split tensor). ``alignment_bytes``: every
    buffer address is a multiple of it. ``home`` maps a weight or graph input to the level
    holding its persistent copy when that is not main memory (a level listed after main,
    e.g. host memory for an offloaded weight); every other tensor's home is main memory.
    ``shared_bandwidth``: ops and DMAs contend for each level's bandwidth (``bandwidth: shared``).
    """

    enabled: bool = False
    fast: Mapping[str, str] = field(default_factory=dict)
    split: bool = True
    split_factors: tuple[int, ...] = (1, 2, 4)
    alignment_bytes: int = 64
    home: Mapping[str, str] = field(default_factory=dict)
    # ``memory.bandwidth: shared``: ops and DMAs contend for each level's bandwidth on
    # memory-planned devices (docs/memory.md, "Shared bandwidth"); False: "separate", as before.
    shared_bandwidth: bool = False

    def home_level(self, tensor: str, main: str) -> str:
        """The level name holding ``tensor``'s persistent copy (``main`` unless ``home`` names one).

        Examples
        --------
        >>> MemoryOptions(home={"m/w": "host"}).home_level("m/w", "hbm"), MemoryOptions().home_level("m/w", "hbm")
        ('host', 'hbm')
        """
        return self.home.get(tensor, main)

    def fast_level(self, kind: str) -> str | None:
        """The fast level named for ``kind``, or None (use the profile's fastest)."""
        return self.fast.get(kind)
