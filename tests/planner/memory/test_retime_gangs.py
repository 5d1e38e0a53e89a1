"""The memory re-timing's gangs (``constraints.gang``): each gang's activities start on one cycle,
every resource keeps its order, and a gang that cannot line up is a bug, named."""

import pytest

from planner.errors import InternalError
from planner.memory.retime import Activity, list_schedule


def test_a_gang_starts_when_its_last_member_can_and_the_orders_hold():
    # cpu: b (3) then a; gpu: y (5) then x; dma: d after b. a is ready at 3, x at 5: both start at 5.
    acts = [Activity("b", "cpu", 3), Activity("a", "cpu", 2), Activity("c", "cpu", 1, deps=("d",)),
            Activity("y", "gpu", 5), Activity("x", "gpu", 4), Activity("d", "dma", 2, deps=("b",))]
    sequences = {"cpu": ("b", "a", "c"), "gpu": ("y", "x")}
    alone = list_schedule(acts, sequences)
    assert (alone["a"], alone["x"]) == (3, 5)
    t = list_schedule(acts, sequences, gangs=(("a", "x"),))
    assert t == {"b": 0, "y": 0, "d": 3, "a": 5, "x": 5, "c": 7}


def test_a_member_waiting_on_a_dependency_holds_the_whole_gang():
    # x waits for p on a third resource (ends at 9): a, idle-ready since 0, waits with it.
    acts = [Activity("a", "cpu", 2), Activity("p", "tpu", 9), Activity("x", "gpu", 1, deps=("p",)),
            Activity("z", "cpu", 1)]
    t = list_schedule(acts, {"cpu": ("a", "z"), "gpu": ("x",), "tpu": ("p",)}, gangs=(("a", "x"),))
    assert (t["a"], t["x"], t["z"]) == (9, 9, 11)


def test_zero_cycle_members_start_together_before_their_successors():
    acts = [Activity("a", "cpu", 0), Activity("x", "gpu", 0), Activity("s", "cpu", 2, deps=("x",)),
            Activity("w", "gpu", 1), Activity("q", "tpu", 4)]
    t = list_schedule(acts, {"cpu": ("a", "s"), "gpu": ("w", "x"), "tpu": ("q",)}, gangs=(("a", "x"),))
    assert (t["w"], t["a"], t["x"], t["s"]) == (0, 1, 1, 1)


def test_a_gang_behind_a_wait_on_its_other_member_is_a_named_deadlock():
    # cpu runs z before a, but z needs x's result: x cannot start without a, a not before z.
    acts = [Activity("z", "cpu", 1, deps=("x",)), Activity("a", "cpu", 1), Activity("x", "gpu", 1)]
    with pytest.raises(InternalError, match=r"never became ready.*the gang a, x never started together"):
        list_schedule(acts, {"cpu": ("z", "a"), "gpu": ("x",)}, gangs=(("a", "x"),))
    assert list_schedule(acts, {"cpu": ("z", "a"), "gpu": ("x",)}) == {"x": 0, "z": 1, "a": 2}


@pytest.mark.parametrize("gang, message", [(("a", "b"), "share a resource"), (("a", "d"), "not a sequenced"),
                                           (("a", "nope"), "not a sequenced")])
def test_a_gang_the_callers_got_wrong_is_refused(gang, message):
    acts = [Activity("a", "cpu", 1), Activity("b", "cpu", 1), Activity("d", "dma", 1)]
    with pytest.raises(InternalError, match=message):
        list_schedule(acts, {"cpu": ("a", "b")}, gangs=(gang,))
