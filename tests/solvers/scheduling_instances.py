"""Hand-checked scheduling instances (2-6 ops) with their optimum and the arithmetic.

Devices are 0, 1; "bus" means one link (index 0) joining them both ways.
"""

from __future__ import annotations

from dataclasses import dataclass

from solvers.scheduling import Objective, SchedulingProblem

BUS = ((-1, 0), (0, -1))


@dataclass(frozen=True)
class Instance:
    name: str
    problem: SchedulingProblem
    optimum: int


def _p(durations, edges=(), streams=(1, 1), link_of=BUS, transfer=None, **kw) -> SchedulingProblem:
    nl = 1 + max((x for row in link_of for x in row), default=-1)
    if transfer is None:
        transfer = tuple((0,) * nl for _ in edges)
    return SchedulingProblem(durations, edges, streams, link_of, transfer, **kw)


INSTANCES = [
    # chain a(2) -> b(3) -> c(4), transfers cost 10: everything on one device, 2 + 3 + 4 = 9
    # (equals the critical path, so any split only adds transfers).
    Instance("chain", _p(((2, 2), (3, 3), (4, 4)), ((0, 1, 8), (1, 2, 8)),
                         transfer=((10,), (10,))), 9),
    # fork-join a(1) -> {b(5), c(5)} -> d(1), transfer t = 1 per edge on one bus.
    # One device: 1 + 5 + 5 + 1 = 12. Split: a, b on 0; c, d on 1: a->c [1, 2), c [2, 7);
    # b [1, 6), b->d [6, 7), d [7, 8): 8 = 7 + t. Every other split adds a second transfer
    # on the path (7 + 2t) or keeps b, c together (12). min(12, 7 + 1) = 8.
    Instance("fork_join_cheap", _p(((1, 1), (5, 5), (5, 5), (1, 1)),
                                   ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)),
                                   transfer=((1,),) * 4), 8),
    # the same with t = 6: split gives 7 + 6 = 13 > 12, so one device wins: 12.
    Instance("fork_join_expensive", _p(((1, 1), (5, 5), (5, 5), (1, 1)),
                                       ((0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)),
                                       transfer=((6,),) * 4), 12),
    # a(2) pinned to device 0 -> b (3 on device 0, 1 on the fast device 1), transfer 5.
    # b on 1: 2 + 5 + 1 = 8; b co-located on 0: 2 + 3 = 5. The transfer makes co-location win: 5.
    Instance("transfer_favours_colocation", _p(((2, -1), (3, 1)), ((0, 1, 8),),
                                               transfer=((5,),)), 5),
    # one device, two streams, three independent 3-cycle ops: two share a stream, 3 + 3 = 6
    # (the work bound is only ceil(9 / 2) = 5).
    Instance("two_streams", _p(((3,), (3,), (3,)), streams=(2,), link_of=((-1,),)), 6),
    # a(4), b(4), c(1), d(1) independent on two devices; a and b must share a device:
    # that device runs 4 + 4 = 8 (c, d go to the other). Without the group it would be 5.
    Instance("colocation", _p(((4, 4), (4, 4), (1, 1), (1, 1)), colocation_groups=((0, 1),)), 8),
    # a(3) -> b(3), each with 6 resident bytes, 10 bytes per device: 12 > 10 forces a split.
    # a on one device [0, 3), transfer 2 [3, 5), b [5, 8): 8 (6 without the memory limit).
    Instance("memory_split", _p(((3, 3), (3, 3)), ((0, 1, 0),), transfer=((2,),),
                                device_memory_bytes=(10, 10), op_resident_bytes=(6, 6)), 8),
    # a(5) pinned to 1, b(2) pinned to 0, both feed c(2, either device), transfers 3.
    # c on 1: b ends 2, transfer [2, 5), a ends 5, c [5, 7) -> 7.
    # c on 0: a ends 5, transfer [5, 8), c [8, 10) -> 10. Optimum 7.
    Instance("pinned", _p(((-1, 5), (2, -1), (2, 2)), ((0, 2, 8), (1, 2, 8)),
                          transfer=((3,), (3,))), 7),
    # throughput: a(4) -> b(4) -> c(4), transfers 1, two devices: some device holds two ops,
    # so the max load is >= 8; {a, b} | {c} gives loads 8, 4 and link 1: optimum 8
    # (the LP bound is only 6).
    Instance("throughput", _p(((4, 4), (4, 4), (4, 4)), ((0, 1, 8), (1, 2, 8)),
                              transfer=((1,), (1,)), objective=Objective.THROUGHPUT), 8),
]

# No device can hold op 0's 20 resident bytes: infeasible.
INFEASIBLE = _p(((1, 1), (1, 1)), ((0, 1, 0),), transfer=((1,),),
                device_memory_bytes=(10, 10), op_resident_bytes=(20, 1))
