"""Resident bytes per device as a heuristic places and moves ops, each shared tensor once.

``op_resident_bytes`` counts every weight and graph input an op reads in full; a tensor several
ops read (``SchedulingProblem.shared_resident``) is held once per device that runs a reader,
as lowering allocates it and as the validator, the exact model and the pre-check count it
(:meth:`~solvers.scheduling.problem.SchedulingProblem.device_resident_bytes`). A
:class:`ResidentLedger` keeps that count incrementally for HEFT, its first-fit fallback, the
placement LNS, the segment-run start, the part start's stitching and the traced and joint-path
starts' spare and helper devices (the hierarchical LNS and its window model, list search's
screen, re-planning's caps, the part start's restriction and reserved room and the part and
module re-solves' rooms count with ``device_resident_bytes`` directly; the grouper's coarse
problem keeps each shared tensor once per group and as a shared tensor of the groups; the
contiguous split subtracts a block's repeats), so none refuses a device for bytes it already
holds. Max-load's ``PlacementProblem`` and the island split carry their own
``shared_resident`` / ``shared_memory`` (once per accelerator, once per island); the part and
module sub-problems carry theirs restricted to their ops (:func:`restricted_shared`). With no
shared tensor it counts exactly ``op_resident_bytes``, as they did. Still per reader, on the
safe side: a sub-problem's reader of a tensor that ops outside it already hold on a device
counts it again there (the stitched ledger and the validator of the whole count it once).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from solvers.scheduling.problem import SchedulingProblem

__all__ = ["ResidentLedger", "restricted_shared"]


class ResidentLedger:
    """Per device, the resident bytes its ops hold (:attr:`held`), a shared tensor once.

    Examples
    --------
    Ops 0 and 1 read one 5-byte input and hold 1 byte of their own each:

    >>> p = SchedulingProblem(((1, 1), (1, 1)), (), (1, 1), ((-1, 0), (0, -1)), (),
    ...                       op_resident_bytes=(6, 6), shared_resident=((5, (0, 1)),))
    >>> ledger = ResidentLedger(p)
    >>> ledger.added((0,), 0), ledger.added((0, 1), 0)
    (6, 7)
    >>> ledger.add((0,), 0); ledger.added((1,), 0), ledger.added((1,), 1)
    (1, 6)
    >>> ledger.add((1,), 0); ledger.held, ledger.removed((0,), 0)
    ([7, 0], 1)
    >>> ledger.remove((0,), 0); ledger.held
    [6, 0]
    """

    def __init__(self, problem: SchedulingProblem, op_device: Sequence[int] | None = None) -> None:
        self.problem = problem
        self.held = [0] * len(problem.device_streams)
        self._bytes = [b for b, _ in problem.shared_resident]
        self._shared: dict[int, list[int]] = {}
        for t, (_, readers) in enumerate(problem.shared_resident):
            for i in readers:
                self._shared.setdefault(i, []).append(t)
        self._own = [problem.resident_bytes(i) - sum(self._bytes[t] for t in self._shared.get(i, ()))
                     for i in range(problem.num_ops)]
        self._readers: dict[tuple[int, int], int] = {}  # (shared tensor, device) -> readers there
        for i, d in enumerate(op_device or ()):
            if d >= 0:
                self.add((i,), d)

    def _tensors(self, ops: Iterable[int]) -> dict[int, int]:
        """The shared tensors ``ops`` read, each with how many of ``ops`` read it."""
        out: dict[int, int] = {}
        for i in ops:
            for t in self._shared.get(i, ()):
                out[t] = out.get(t, 0) + 1
        return out

    def added(self, ops: Iterable[int], device: int) -> int:
        """The resident bytes placing ``ops`` (not yet on ``device``) on ``device`` adds."""
        ops = tuple(ops)
        return sum(self._own[i] for i in ops) + sum(
            self._bytes[t] for t in self._tensors(ops) if not self._readers.get((t, device)))

    def removed(self, ops: Iterable[int], device: int) -> int:
        """The resident bytes taking ``ops`` (all on ``device``) off ``device`` frees."""
        ops = tuple(ops)
        return sum(self._own[i] for i in ops) + sum(
            self._bytes[t] for t, k in self._tensors(ops).items() if self._readers.get((t, device), 0) == k)

    def add(self, ops: Iterable[int], device: int) -> None:
        """Count ``ops`` on ``device``."""
        ops = tuple(ops)
        self.held[device] += self.added(ops, device)
        for t, k in self._tensors(ops).items():
            self._readers[t, device] = self._readers.get((t, device), 0) + k

    def remove(self, ops: Iterable[int], device: int) -> None:
        """Take ``ops`` (all counted on ``device``) off it."""
        ops = tuple(ops)
        self.held[device] -= self.removed(ops, device)
        for t, k in self._tensors(ops).items():
            self._readers[t, device] -= k


def restricted_shared(problem: SchedulingProblem, ops: Sequence[int],
                      weightless: Iterable[int] = ()) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """``problem.shared_resident`` for the sub-problem of ``ops`` (reader ``ops[j]`` becomes
    ``j``): each tensor with two or more readers among ``ops``, leaving out the local indices
    ``weightless`` (ops the sub-problem gives no resident bytes).

    Examples
    --------
    >>> p = SchedulingProblem(((1,),) * 4, (), (1,), ((-1,),), (), op_resident_bytes=(6, 6, 6, 6),
    ...                       shared_resident=((5, (0, 1, 3)), (2, (0, 2))))
    >>> restricted_shared(p, [3, 1, 2]), restricted_shared(p, [3, 1, 2], weightless=(0,))
    (((5, (0, 1)),), ())
    """
    local = {o: j for j, o in enumerate(ops)}
    skip = set(weightless)
    out = []
    for b, readers in problem.shared_resident:
        mine = tuple(sorted(local[i] for i in readers if i in local and local[i] not in skip))
        if len(mine) >= 2:
            out.append((b, mine))
    return tuple(out)
