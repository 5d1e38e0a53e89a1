"""The sent-tensor deadline rule is one function for two levels and N (heads_tails.
sent_deadline_violations); deadline_violations and hierarchy_deadline_violations only gather
when each copy is ready and when each fetch starts."""

from __future__ import annotations

from solvers.memory.levels import LevelProblem, LevelSolution, Transfer, TransferKind
from solvers.memory.levels import heads_tails, hierarchy_heads_tails
from solvers.memory.levels.heads_tails import HeadsTails, SentDeadline, sent_deadline_violations
from solvers.memory.levels.hierarchy import HierarchyProblem, HierarchySolution, Move

P = LevelProblem((4, 2), ((), (0, 1)), ((0,), ()), (8, 4), (16, 99), (4, 1), live_out=(0,))
# Op 1 and the fetches of tensor 1 wait for tensor 0's copy (ready at 8) plus 5: from cycle 13.
HT = HeadsTails(deadlines=(SentDeadline(0, op=1, lag_cycles=5), SentDeadline(0, received=1, lag_cycles=5)))


def test_the_rule_allows_exactly_the_ready_cycle_plus_the_lag():
    assert sent_deadline_violations(P, HT, (8, 0), (0, 13), {1: [13]}, "in slow memory", "a prefetch") == []
    assert sent_deadline_violations(P, HT, (8, 0), (0, 12), {1: [12, 20]}, "at home", "a fetch") == [
        "op 1 starts at 12, before sent tensor 0 is at home at 8 + lag 5",
        "a fetch of tensor 1 starts at 12, before sent tensor 0 is at home at 8 + lag 5"]
    # a deadline on an op leaves fetches alone
    only_op = HeadsTails(deadlines=HT.deadlines[:1])
    assert sent_deadline_violations(P, only_op, (8, 0), (0, 13), {1: [0]}, "at home", "a fetch") == []


def test_both_validators_apply_the_one_rule(monkeypatch):
    calls = []

    def recording(problem, ht, ready_at, op_start, fetch_starts, where, fetch):
        calls.append((where, fetch, tuple(ready_at), tuple(op_start), {k: list(v) for k, v in fetch_starts.items()}))
        return sent_deadline_violations(problem, ht, ready_at, op_start, fetch_starts, where, fetch)

    monkeypatch.setattr(heads_tails, "sent_deadline_violations", recording)
    monkeypatch.setattr(hierarchy_heads_tails, "sent_deadline_violations", recording)
    # Two levels: tensor 0 written slow (ready at 8), tensor 1 prefetched from 0 to 4, op 1 at 8.
    early = Transfer(TransferKind.PREFETCH, 1, 1, -1, 1, 0, 4)
    two = LevelSolution(((False, False, False), (False, True)), ((False,) * 3, (False, False)), (early,), (0, 8),
                        (8, 4))
    assert heads_tails.deadline_violations(P, two, HT) == [
        "op 1 starts at 8, before sent tensor 0 is in slow memory at 8 + lag 5",
        "a prefetch of tensor 1 starts at 0, before sent tensor 0 is in slow memory at 8 + lag 5"]
    # The same over N levels (level 1 is home): the fetch's first hop from 0 to 4.
    hp = HierarchyProblem((4, 2), ((), (0, 1)), ((0,), ()), (8, 4), (16, 99), (4, 1), 1, ((0, 1),),
                          live_out=(0,))
    hop = Move(TransferKind.PREFETCH, tensor=1, gap=1, hop=0, src_level=1, dst_level=0, trigger_op=-1, release_op=1,
               start_cycle=0, duration_cycles=4)
    hs = HierarchySolution(((1, 1, 1), (1, 0)), ((False,) * 3, (False, False)), (hop,), (0, 8), (8, 4))
    assert hierarchy_heads_tails.hierarchy_deadline_violations(hp, hs, HT) == [
        "op 1 starts at 8, before sent tensor 0 is at home at 8 + lag 5",
        "a fetch of tensor 1 starts at 0, before sent tensor 0 is at home at 8 + lag 5"]
    assert [c[:2] for c in calls] == [("in slow memory", "a prefetch"), ("at home", "a fetch")]
    assert calls[0][2:] == calls[1][2:]  # the same times gathered by both
