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


def list_schedule(activities: Iterable[Activity], sequences: Mapping[str, tuple[str, ...]],
                  gate=None, gangs: Sequence[Sequence[str]] = ()) -> dict[str, int]:
    """Start cycle of every activity (see the module docstring).

    ``sequences`` gives the fixed order of each sequence resource; every other resource
    dispatches. A ``gate`` (shared bandwidth: :class:`planner.memory.shared_bandwidth.BandwidthGate`)
    must ``admit(activity, now)`` each start and is told of it (``start``) and of each ``finish``.
    Each of ``gangs`` (activity names, each in a different sequence) starts on one cycle.
    Raises InternalError on a dependency cycle (nothing can start).
    """
    acts = {a.name: a for a in activities}
    for a in acts.values():
        for d in a.deps:
            if d not in acts:
                raise InternalError(f"retiming: activity {a.name!r} depends on unknown {d!r}")
    gang_of = _gang_index(acts, sequences, gangs)
    resources = sorted({a.resource for a in acts.values()})
    heads = {r: 0 for r in sequences}
    pending: dict[str, list[Activity]] = {}
    for a in sorted(acts.values(), key=lambda a: (a.priority, a.name)):
        if a.resource not in sequences:
            pending.setdefault(a.resource, []).append(a)
    free_at = {r: 0 for r in resources}
    start: dict[str, int] = {}
    finished: set[str] = set()
    events: list[tuple[int, str]] = []
    now = 0

    def ready(a: Activity) -> bool:
        return all(d in finished for d in a.deps)

    def finish(name: str) -> None:
        finished.add(name)
        if gate is not None:
            gate.finish(name)

    def can_start(a: Activity) -> bool:
        """``a`` (a sequence's) is its resource's next, the resource is free, ``a`` is ready and admitted."""
        seq = sequences[a.resource]
        return (heads[a.resource] < len(seq) and seq[heads[a.resource]] == a.name and free_at[a.resource] <= now
                and ready(a) and (gate is None or gate.admit(a, now)))

    def begin(a: Activity) -> None:
        """Start ``a``, its resource's next, now."""
        heads[a.resource] += 1
        if gate is not None:
            gate.start(a, now)
        start[a.name] = now
        free_at[a.resource] = now + a.duration
        heapq.heappush(events, (now + a.duration, a.name))

    while True:
        progressed = True
        while progressed:
            progressed = False
            for r in resources:
                if free_at[r] > now:
                    continue
                chosen = None
                if r in sequences:
                    seq = sequences[r]
                    head = acts[seq[heads[r]]] if heads[r] < len(seq) else None
                    if head is not None and head.name in gang_of:
                        members = [acts[m] for m in gangs[gang_of[head.name]]]
                        if all(can_start(m) for m in members):
                            for m in members:
                                begin(m)
                            progressed = True
                            if any(m.duration == 0 for m in members):
                                break  # as below: let it finish before anything else starts
                        continue
                    if head is not None and ready(head) and (gate is None or gate.admit(head, now)):
                        chosen = head
                        heads[r] += 1
                else:
                    queue = pending.get(r, [])
                    for k, a in enumerate(queue):
                        if ready(a):
                            chosen = queue.pop(k) if gate is None or gate.admit(a, now) else None
                            break
                if chosen is None:
                    continue
                if gate is not None:
                    gate.start(chosen, now)
                start[chosen.name] = now
                free_at[r] = now + chosen.duration
                heapq.heappush(events, (now + chosen.duration, chosen.name))
                progressed = True
                if chosen.duration == 0:
                    break  # let the zero-length activity finish before anything else starts
            if events and events[0][0] == now:
                while events and events[0][0] == now:
                    finish(heapq.heappop(events)[1])
                progressed = True
        if not events:
            break
        now = events[0][0]
        while events and events[0][0] == now:
            finish(heapq.heappop(events)[1])
    missing = sorted(set(acts) - set(start))
    if missing:
        stuck = [g for g in gangs if any(m not in start for m in g)]
        gang = f"; the gang {', '.join(stuck[0])} never started together" if stuck else ""
        raise InternalError(f"retiming deadlocked: {len(missing)} activities never became ready, "
                            f"e.g. {missing[:5]}{gang}")
    return start


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
