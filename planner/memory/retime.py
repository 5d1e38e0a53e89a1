"""Re-time a plan after memory planning: a non-delay list schedule over fixed orders.

Activities have fixed durations and dependencies; each runs on one resource. A
*sequence* resource runs its activities in the given order (a device's compute stream);
a *dispatch* resource runs, whenever it is free, the ready activity with the smallest
priority (a DMA engine in the level solver's queue order, a link in the spine's order).
Every activity starts at the earliest event time at which its resource is free and all
its dependencies have ended, so the result is deterministic and, because every
allocation event of a memory plan sits at an op boundary, the level plan's capacity
proof holds for any timing this produces.

A *gang* (``constraints.gang``: shards that start on one cycle) is a set of activities on
distinct sequence resources that start together: only when each is its resource's next
activity, its resource is free and its dependencies have ended, all of them at once. The
others wait, idle, for the last to be ready; the orders are kept, so the capacity proof
still holds. The spine's schedule already starts each gang together
(:func:`planner.islands.gang.retime`), so in its orders no member's resource has, ahead of
the member, an activity that waits on another member (that would be a cycle through the
gang: the spine's starts would put a member strictly after the gang's one cycle); such a
deadlock is a bug and raises InternalError naming the gang.

Examples
--------
>>> acts = [Activity("a", "cpu", 3), Activity("b", "cpu", 2), Activity("d", "dma", 4, deps=("a",)),
...         Activity("c", "cpu", 1, deps=("d",))]
>>> t = list_schedule(acts, sequences={"cpu": ("a", "b", "c")})
>>> t["a"], t["b"], t["d"], t["c"]
(0, 3, 3, 7)

A gang {a, x}: x waits on its own resource until a, behind b, can start with it.

>>> acts = [Activity("b", "cpu", 3), Activity("a", "cpu", 2), Activity("x", "gpu", 4)]
>>> t = list_schedule(acts, sequences={"cpu": ("b", "a"), "gpu": ("x",)}, gangs=(("a", "x"),))
>>> t["b"], t["a"], t["x"]
(0, 3, 3)
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from planner.errors import InternalError

__all__ = ["Activity", "list_schedule"]


@dataclass(frozen=True, slots=True)
class Activity:
    """Something that takes ``duration`` cycles on ``resource`` after its ``deps`` end.

    ``priority`` orders a dispatch resource's ready activities (smaller first).

    Examples
    --------
    >>> Activity("x", "link0", 5, priority=2).duration
    5
    """

    name: str
    resource: str
    duration: int
    deps: tuple[str, ...] = ()
    priority: int = 0


class RetimingDeadlock(InternalError):
    """The fixed orders wait on each other in a cycle. Per-device memory plans of a plan with
    transfers can do that together (a sent tensor copied to main memory only after an op that
    waits for data coming back from its receiver): the cross-device choice drops such a
    combination. Anywhere else it is a bug (exit 3)."""


def list_schedule(activities: Iterable[Activity], sequences: Mapping[str, tuple[str, ...]],
                  gate=None, gangs: Sequence[Sequence[str]] = ()) -> dict[str, int]:
    """Start cycle of every activity (see the module docstring).

    ``sequences`` gives the fixed order of each sequence resource; every other resource
    dispatches. A ``gate`` (shared bandwidth: :class:`planner.memory.shared_bandwidth.BandwidthGate`)
    must ``admit(activity, now)`` each start and is told of it (``start``) and of each ``finish``.
    Each of ``gangs`` (activity names, each in a different sequence) starts on one cycle.
    Raises :class:`RetimingDeadlock` on a dependency cycle (nothing can start).
    """
    acts = {a.name: a for a in activities}
    for a in acts.values():
        for d in a.deps:
            if d not in acts:
                raise InternalError(f"retiming: activity {a.name!r} depends on unknown {d!r}")
    start = _ListSchedule(acts, sequences, gate, gangs).run()
    missing = sorted(set(acts) - set(start))
    if missing:
        stuck = [g for g in gangs if any(m not in start for m in g)]
        gang = f"; the gang {', '.join(stuck[0])} never started together" if stuck else ""
        raise RetimingDeadlock(f"retiming deadlocked: {len(missing)} activities never became ready, "
                               f"e.g. {missing[:5]}{gang}")
    return start


class _ListSchedule:
    """The event loop of :func:`list_schedule`: at each event time, start whatever can start
    (resources in name order), then finish what ends now, until nothing changes."""

    def __init__(self, acts: Mapping[str, Activity], sequences: Mapping[str, tuple[str, ...]], gate,
                 gangs: Sequence[Sequence[str]]) -> None:
        self.acts, self.sequences, self.gate, self.gangs = acts, sequences, gate, gangs
        self.gang_of = _gang_index(acts, sequences, gangs)
        self.resources = sorted({a.resource for a in acts.values()})
        self.heads = {r: 0 for r in sequences}
        self.pending: dict[str, list[Activity]] = {}
        for a in sorted(acts.values(), key=lambda a: (a.priority, a.name)):
            if a.resource not in sequences:
                self.pending.setdefault(a.resource, []).append(a)
        self.free_at = {r: 0 for r in self.resources}
        self.start: dict[str, int] = {}
        self.finished: set[str] = set()
        self.events: list[tuple[int, str]] = []
        self.now = 0

    def run(self) -> dict[str, int]:
        """Every activity's start (those of a deadlock missing)."""
        events = self.events
        while True:
            progressed = True
            while progressed:
                progressed = self._start_what_can()
                if events and events[0][0] == self.now:
                    self._finish_now()
                    progressed = True
            if not events:
                return self.start
            self.now = events[0][0]
            self._finish_now()

    def _start_what_can(self) -> bool:
        """One pass over the free resources; whether anything started."""
        progressed = False
        for r in self.resources:
            if self.free_at[r] > self.now:
                continue
            chosen = self._pick(r)
            for a in chosen:
                self._begin(a)
            if chosen:
                progressed = True
                if any(a.duration == 0 for a in chosen):
                    break  # let the zero-length activity finish before anything else starts
        return progressed

    def _pick(self, r: str) -> list[Activity]:
        """What starts on ``r`` now: its next in order (with its gang, when every member can), or
        the first ready activity of its queue; nothing if that one is not ready or admitted."""
        if r in self.sequences:
            seq = self.sequences[r]
            if self.heads[r] >= len(seq):
                return []
            head = self.acts[seq[self.heads[r]]]
            if head.name in self.gang_of:
                members = [self.acts[m] for m in self.gangs[self.gang_of[head.name]]]
                return members if all(self._can_start(m) for m in members) else []
            return [head] if self._ready(head) and self._admits(head) else []
        queue = self.pending.get(r, [])
        for k, a in enumerate(queue):
            if self._ready(a):
                return [queue.pop(k)] if self._admits(a) else []
        return []

    def _ready(self, a: Activity) -> bool:
        return all(d in self.finished for d in a.deps)

    def _admits(self, a: Activity) -> bool:
        return self.gate is None or self.gate.admit(a, self.now)

    def _can_start(self, a: Activity) -> bool:
        """``a`` (a sequence's) is its resource's next, the resource is free, ``a`` is ready and admitted."""
        seq, head = self.sequences[a.resource], self.heads[a.resource]
        return (head < len(seq) and seq[head] == a.name and self.free_at[a.resource] <= self.now
                and self._ready(a) and self._admits(a))

    def _begin(self, a: Activity) -> None:
        """Start ``a`` now (a sequence's next, or already taken off its queue)."""
        if a.resource in self.sequences:
            self.heads[a.resource] += 1
        if self.gate is not None:
            self.gate.start(a, self.now)
        self.start[a.name] = self.now
        self.free_at[a.resource] = self.now + a.duration
        heapq.heappush(self.events, (self.now + a.duration, a.name))

    def _finish_now(self) -> None:
        while self.events and self.events[0][0] == self.now:
            name = heapq.heappop(self.events)[1]
            self.finished.add(name)
            if self.gate is not None:
                self.gate.finish(name)


def _gang_index(acts: Mapping[str, Activity], sequences: Mapping[str, tuple[str, ...]],
                gangs: Sequence[Sequence[str]]) -> dict[str, int]:
    """Activity name -> its gang's index; every member a known activity of a sequence, one per resource."""
    gang_of: dict[str, int] = {}
    for k, gang in enumerate(gangs):
        resources = []
        for name in gang:
            if name not in acts or acts[name].resource not in sequences or name in gang_of:
                raise InternalError(f"retiming: gang member {name!r} is not a sequenced activity of one gang")
            gang_of[name] = k
            resources.append(acts[name].resource)
        if len(set(resources)) < len(resources):
            raise InternalError(f"retiming: two members of the gang {', '.join(gang)} share a resource")
    return gang_of
