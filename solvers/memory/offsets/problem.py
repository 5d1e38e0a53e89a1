"""Offset assignment: problem and solution types.

Semantics (what :func:`solvers.memory.offsets.validate.validate_offsets` checks)
--------------------------------------------------------------------------------
* buffer ``i`` is live over the half-open step interval ``[start[i], end[i])`` of a fixed
  op order (``end`` exclusive, ``start < end``) and occupies the addresses
  ``[offset[i], offset[i] + size_bytes[i])``;
* ``offset[i]`` is a non-negative multiple of ``alignment_bytes[i]``;
* ``offset[i] + size_bytes[i] <= capacity_bytes``;
* two buffers whose live intervals intersect have disjoint address ranges
  (zero-size buffers occupy no address and conflict with nothing);
* objective: the peak, ``max(offset[i] + size_bytes[i])`` (0 when there is no buffer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["OffsetProblem", "OffsetSolution"]


@dataclass(frozen=True, slots=True)
class OffsetProblem:
    """Buffers with sizes and live intervals to be packed into one memory level.

    Examples
    --------
    Two buffers live at the same time and one after them:

    >>> p = OffsetProblem(size_bytes=(4, 2, 6), start=(0, 0, 1), end=(1, 1, 2), capacity_bytes=16)
    >>> p.num_buffers, p.alignment(0)
    (3, 1)
    >>> p.overlaps_in_time(0, 1), p.overlaps_in_time(0, 2)
    (True, False)
    """

    size_bytes: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    capacity_bytes: int
    alignment_bytes: tuple[int, ...] = ()  # empty = 1 for every buffer
    names: tuple[str, ...] = field(default=(), compare=False)  # for messages only

    def __post_init__(self) -> None:
        for name in ("size_bytes", "start", "end", "alignment_bytes"):
            object.__setattr__(self, name, tuple(int(x) for x in getattr(self, name)))
        n = len(self.size_bytes)
        if len(self.start) != n or len(self.end) != n:
            raise ValueError(f"start and end need {n} entries each")
        if self.alignment_bytes and len(self.alignment_bytes) != n:
            raise ValueError(f"alignment_bytes has {len(self.alignment_bytes)} entries, expected {n}")
        if self.capacity_bytes <= 0:
            raise ValueError(f"capacity_bytes must be > 0, got {self.capacity_bytes}")
        for i in range(n):
            if self.size_bytes[i] < 0:
                raise ValueError(f"buffer {self.name(i)} has a negative size")
            if not 0 <= self.start[i] < self.end[i]:
                raise ValueError(f"buffer {self.name(i)} needs 0 <= start < end, got "
                                 f"[{self.start[i]}, {self.end[i]})")
            if self.alignment(i) < 1:
                raise ValueError(f"buffer {self.name(i)} has alignment < 1")

    @property
    def num_buffers(self) -> int:
        return len(self.size_bytes)

    def name(self, i: int) -> str:
        return self.names[i] if i < len(self.names) else str(i)

    def alignment(self, i: int) -> int:
        return self.alignment_bytes[i] if self.alignment_bytes else 1

    def overlaps_in_time(self, i: int, j: int) -> bool:
        return self.start[i] < self.end[j] and self.start[j] < self.end[i]


@dataclass(frozen=True, slots=True)
class OffsetSolution:
    """An address per buffer.

    Examples
    --------
    >>> OffsetSolution(offsets=(0, 4, 0)).offsets
    (0, 4, 0)
    """

    offsets: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", tuple(int(x) for x in self.offsets))
