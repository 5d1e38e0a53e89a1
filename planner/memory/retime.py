"""Re-time a plan after memory planning: a non-delay list schedule over fixed orders.

Activities have fixed durations and dependencies; each runs on one resource. A
*sequence* resource runs its activities in the given order (a device's compute stream);
a *dispatch* resource runs, whenever it is free, the ready activity with the smallest
priority (a DMA engine in the level solver's queue order, a link in the spine's order).
Every activity starts at the earliest event time at which its resource is free and all
its dependencies have ended, so the result is deterministic and, because every
allocation event of a memory plan sits at an op boundary, the level plan's capacity
proof holds for any timing this produces.

Examples
--------
>>> acts = [Activity("a", "cpu", 3), Activity("b", "cpu", 2), Activity("d", "dma", 4, deps=("a",)),
...         Activity("c", "cpu", 1, deps=("d",))]
>>> t = list_schedule(acts, sequences={"cpu": ("a", "b", "c")})
>>> t["a"], t["b"], t["d"], t["c"]
(0, 3, 3, 7)
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterable, Mapping

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
                  gate=None) -> dict[str, int]:
    """Start cycle of every activity (see the module docstring).

    ``sequences`` gives the fixed order of each sequence resource; every other resource
    dispatches. A ``gate`` (shared bandwidth: :class:`planner.memory.shared_bandwidth.BandwidthGate`)
    must ``admit(activity, now)`` each start and is told of it (``start``) and of each ``finish``.
    Raises InternalError on a dependency cycle (nothing can start).
    """
    acts = {a.name: a for a in activities}
    for a in acts.values():
        for d in a.deps:
            if d not in acts:
                raise InternalError(f"retiming: activity {a.name!r} depends on unknown {d!r}")
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
        raise InternalError(f"retiming deadlocked: {len(missing)} activities never became ready, "
                            f"e.g. {missing[:5]}")
    return start
