"""Resolved hardware: what the spec's `hardware` section becomes after validation.

Everything is in base units and integers: bytes, bytes per second, hertz, cycles of the
plan's reference clock (``Hardware.clock_hz``). Nothing past the spec stage sees a unit
string.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MemoryLevel", "Profile", "Device", "Link", "Island", "Hardware", "ceil_div"]


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling of a / b for non-negative a and positive b.

    >>> ceil_div(7, 2), ceil_div(6, 2), ceil_div(0, 5)
    (4, 3, 0)
    """
    return -(-a // b)


@dataclass(frozen=True, slots=True)
class MemoryLevel:
    """One level of a device's memory hierarchy (fastest first in a profile)."""

    name: str
    capacity_bytes: int
    bandwidth_bytes_per_s: int

    def __post_init__(self) -> None:
        if self.capacity_bytes <= 0:
            raise ValueError(f"memory level {self.name!r}: capacity must be > 0")
        if self.bandwidth_bytes_per_s <= 0:
            raise ValueError(f"memory level {self.name!r}: bandwidth must be > 0")


@dataclass(frozen=True, slots=True)
class Profile:
    """Parameters of one device type on the simulated deterministic ISA.

    ``mxu_rows x mxu_cols`` is the systolic matrix unit; ``vector_lanes`` elements per
    cycle for vector ops; ``memory`` lists levels fastest first; ``dma_latency_cycles`` is
    the fixed start-up cost of a DMA (device cycles).

    ``main_level`` names the level where weights and activations live in the spine's model
    (empty: the largest level); a hierarchy with host memory below its device memory names
    the device memory here. ``dma_paths`` lists the pairs of levels a DMA can move bytes
    between (either direction, at the slower level's bandwidth); empty: every pair.
    ``dma_rates`` gives some paths their own rate, ``(a, b, bytes/s)`` either way (a DMA
    engine's path, e.g. PCIe to host memory, need not run at the slower level's bandwidth).

    Examples
    --------
    >>> levels = (MemoryLevel("sram", 1 << 20, 10**11), MemoryLevel("dram", 1 << 30, 10**10),
    ...           MemoryLevel("host", 1 << 34, 10**9))
    >>> p = Profile("p", 10**9, 8, 8, 8, levels, main_level="dram", dma_paths=(("sram", "dram"), ("dram", "host")))
    >>> p.main_memory.name, p.has_dma_path("dram", "sram"), p.has_dma_path("sram", "host")
    ('dram', True, False)
    >>> Profile("p", 10**9, 8, 8, 8, levels).main_memory.name
    'host'
    >>> q = Profile("p", 10**9, 8, 8, 8, levels, dma_rates=(("dram", "host", 2 * 10**9),))
    >>> q.dma_bandwidth("host", "dram"), q.dma_bandwidth("sram", "dram")
    (2000000000, 10000000000)
    >>> Profile("p", 10**9, 8, 8, 8, levels, dma_paths=(("sram", "l2"),))
    Traceback (most recent call last):
    ...
    ValueError: profile 'p': DMA path sram-l2 names a level it lacks (its levels: sram, dram, host)
    """

    name: str
    clock_hz: int
    mxu_rows: int
    mxu_cols: int
    vector_lanes: int
    memory: tuple[MemoryLevel, ...]
    dma_latency_cycles: int = 0
    description: str = ""
    main_level: str = ""
    dma_paths: tuple[tuple[str, str], ...] = ()
    dma_rates: tuple[tuple[str, str, int], ...] = ()  # (a, b, bytes/s): a path's own rate, either way

    def __post_init__(self) -> None:
        names = [m.name for m in self.memory]
        for a, b, rate in self.dma_rates:
            if not self.has_dma_path(a, b) or a not in names or b not in names or a == b or rate <= 0:
                raise ValueError(f"profile {self.name!r}: DMA rate {a}-{b} {rate} B/s needs a DMA path between two "
                                 f"of its levels and a positive rate")
        if self.main_level and self.main_level not in names:
            raise ValueError(f"profile {self.name!r}: main level {self.main_level!r} is not one of its levels "
                             f"({', '.join(names)})")
        for a, b in self.dma_paths:
            if a not in names or b not in names or a == b:
                raise ValueError(f"profile {self.name!r}: DMA path {a}-{b} names a level it lacks "
                                 f"(its levels: {', '.join(names)})" if a != b else
                                 f"profile {self.name!r}: DMA path {a}-{b} joins a level to itself")

    def level(self, name: str) -> MemoryLevel:
        for m in self.memory:
            if m.name == name:
                return m
        raise KeyError(name)

    def has_dma_path(self, a: str, b: str) -> bool:
        """Whether a DMA can move bytes between levels ``a`` and ``b`` (either direction)."""
        return not self.dma_paths or (a, b) in self.dma_paths or (b, a) in self.dma_paths

    def dma_bandwidth(self, a: str, b: str) -> int:
        """Bytes/s of a DMA between levels ``a`` and ``b``: the path's rate if given, else the slower level's."""
        for x, y, rate in self.dma_rates:
            if {x, y} == {a, b}:
                return rate
        return min(self.level(a).bandwidth_bytes_per_s, self.level(b).bandwidth_bytes_per_s)

    @property
    def main_memory(self) -> MemoryLevel:
        """The main level: ``main_level`` if named, else the largest level."""
        if self.main_level:
            return self.level(self.main_level)
        return max(self.memory, key=lambda m: (m.capacity_bytes, -self.memory.index(m)))


@dataclass(frozen=True, slots=True)
class Device:
    """One device instance, e.g. ``tpu0`` of kind ``tpu``."""

    name: str
    kind: str
    profile: Profile
    streams: int = 1
    # Enforced cap on main memory (a spec memory limit may lower the profile's capacity).
    memory_limit_bytes: int | None = None

    @property
    def memory_capacity_bytes(self) -> int:
        cap = self.profile.main_memory.capacity_bytes
        return min(cap, self.memory_limit_bytes) if self.memory_limit_bytes else cap


@dataclass(frozen=True, slots=True)
class Link:
    """A transfer engine joining two or more devices; it carries one transfer at a time."""

    name: str
    devices: tuple[str, ...]
    bandwidth_bytes_per_s: int
    latency_cycles: int  # reference-clock cycles

    def transfer_cycles(self, size_bytes: int, clock_hz: int) -> int:
        """Latency plus bytes over bandwidth, in reference cycles (rounded up).

        >>> Link("l", ("a", "b"), 1_000_000_000, 10).transfer_cycles(100, 1_000_000_000)
        110
        """
        return self.latency_cycles + ceil_div(size_bytes * clock_hz, self.bandwidth_bytes_per_s)


@dataclass(frozen=True, slots=True)
class Island:
    """An accelerator island: device instances joined by their own fast links.

    ``network`` names the data-centre link that joins it to the other islands (None: a
    lone island); ``host_memory_bytes`` is the spec's ``host_memory`` (None: not given).

    >>> Island("pod-a", ("tpu0", "tpu1"), "network").devices
    ('tpu0', 'tpu1')
    """

    name: str
    devices: tuple[str, ...]
    network: str | None = None
    host_memory_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Hardware:
    """All devices and links, and the reference clock of the plan's timeline.

    ``islands`` is empty unless the spec gives ``hardware.islands`` (then every device is
    in exactly one, and the network is the last link, joining them all).
    """

    devices: tuple[Device, ...]
    links: tuple[Link, ...]
    clock_hz: int = 1_000_000_000
    islands: tuple[Island, ...] = ()

    def device(self, name: str) -> Device:
        for d in self.devices:
            if d.name == name:
                return d
        raise KeyError(name)

    def link_between(self, a: str, b: str) -> Link | None:
        """The first link (in spec order) joining devices a and b, or None."""
        for link in self.links:
            if a in link.devices and b in link.devices:
                return link
        return None

    def to_timeline_cycles(self, device_cycles: int, device: Device) -> int:
        """Convert a device's own cycles to reference cycles, rounding up.

        >>> dev = Device("d0", "d", Profile("p", 500_000_000, 1, 1, 1, (MemoryLevel("m", 1, 1),)))
        >>> Hardware((dev,), ()).to_timeline_cycles(3, dev)  # 3 cycles at 500 MHz = 6 ns
        6
        """
        return ceil_div(device_cycles * self.clock_hz, device.profile.clock_hz)
