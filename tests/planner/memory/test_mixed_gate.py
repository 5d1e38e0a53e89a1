"""shared_bandwidth.mixed_gate refuses an N-level problem that does not share under sharing: a
bug upstream (one switch covers a spec), said as one (InternalError, exit 3), not an AttributeError."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from planner.errors import EXIT_INTERNAL, InternalError
from planner.memory.shared_bandwidth import mixed_gate
from solvers.memory.levels import HierarchyProblem, HierarchySolution


def _gate(shared: bool):
    # An unplanned device e sends to the N-level device n, whose one op holds its main level.
    p = HierarchyProblem((1,), ((0,),), ((),), (8,), (16, 64, 1024), (8, 4, 1), 1, ((0, 1), (1, 2)),
                         shared_bandwidth=shared)
    s = HierarchySolution(((1, 1),), ((False, False),), (), (5,), (2,))
    dev = NS(profile=NS(clock_hz=10**9, main_memory=NS(bandwidth_bytes_per_s=4 * 10**9)))
    xfer = NS(src_device="e", dst_device="n", link="l", duration_cycles=5, src_op="a", dst_op="b")
    return mixed_gate({}, {}, {"n": (p, s, ("op:b",), (), ())}, [xfer], {"l": 2 * 10**9}, {}, NS(device=lambda d: dev))


def test_a_sharing_n_level_device_is_gated():
    assert ("n", 1, 500) in _gate(True).shares["xfer:0"]


def test_an_n_level_device_that_does_not_share_is_refused_as_a_bug():
    with pytest.raises(InternalError, match="device n's N-level problem does not share bandwidth") as caught:
        _gate(False)
    assert caught.value.exit_code == EXIT_INTERNAL
