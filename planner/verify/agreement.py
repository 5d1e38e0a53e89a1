"""Does the replay of the binaries agree with the plan? The one implementation of that check.

:func:`compare_with_plan` lists every difference between a
:class:`~planner.simulator.SimulationResult` and a :class:`~planner.plan.Plan`: the
replay's violations, then every op (device, stream, start, end), every transfer (the
producer and consumer it joins, devices, link, bytes, start, end) and the makespan, and
anything the binaries run that the plan does not list. ``plan solve`` calls it on the
plan it just lowered (through :func:`planner.lower_and_replay.verify`: a difference is our bug),
and :func:`planner.verify.verify_plan_dir` on the plan a directory holds (a difference
is a tampered directory).

Examples
--------
>>> from planner.plan import Plan, PlacedOp
>>> from planner.simulator import OpTiming, SimulationResult
>>> plan = Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9, (PlacedOp("t", "d0", 0, 1, 5),), ())
>>> r = SimulationResult(5, {"t": OpTiming("d0", 0, 0, 5)}, {}, {}, 2)
>>> [str(d) for d in compare_with_plan(r, plan)]
["plan.json: ops[0] 't': expected d0 stream 0 [0, 5) (the binaries), found d0 stream 0 [1, 6)"]
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from planner.errors import VerificationError

__all__ = ["Disagreement", "compare_with_plan"]


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One difference: in ``file`` at ``field``, the checked value ``found`` where ``expected``.

    ``expected`` is what the binaries (or the file checked against) say.

    Examples
    --------
    >>> str(Disagreement("plan.json", "makespan_cycles", "5", "4"))
    'plan.json: makespan_cycles: expected 5, found 4'
    >>> Disagreement("plan.json", "makespan_cycles", "5", "4").error().exit_code
    2
    """

    file: str
    field: str
    expected: str | None = None
    found: str | None = None
    detail: str | None = None

    def error(self) -> VerificationError:
        """This difference as the error ``plan simulate`` reports."""
        return VerificationError(self.file, self.field, expected=self.expected, found=self.found,
                                 detail=self.detail)

    def __str__(self) -> str:
        return str(self.error())


def _span(device: str, stream: int, start: int, end: int) -> str:
    return f"{device} stream {stream} [{start}, {end})"


def _compare_ops(result: Any, plan: Any, out: list[Disagreement]) -> None:
    counts = Counter(o.name for o in plan.ops)
    for i, o in enumerate(plan.ops):
        where = f"ops[{i}] {o.name!r}"
        if counts[o.name] > 1:
            out.append(Disagreement("plan.json", where, detail=f"listed {counts[o.name]} times"))
            continue
        got = result.ops.get(o.name)
        if got is None:
            out.append(Disagreement("plan.json", where, detail="no binary runs this op"))
            continue
        want = _span(got.device, got.stream, got.start_cycle, got.end_cycle)
        claimed = _span(o.device, o.stream, o.start_cycle, o.end_cycle)
        if want != claimed:
            out.append(Disagreement("plan.json", where, f"{want} (the binaries)", claimed))
    extra = sorted(set(result.ops) - set(counts))
    if extra:
        out.append(Disagreement("plan.json", "ops", detail=f"the binaries run {len(extra)} op(s) the plan does "
                                                           f"not list: {', '.join(map(repr, extra[:5]))}"))


def _transfer_fields(t: Any) -> str:
    return (f"{t.src_device}->{t.dst_device} on {t.link!r}, {t.size_bytes} bytes, "
            f"[{t.start_cycle}, {t.end_cycle})")


def _compare_transfers(result: Any, plan: Any, out: list[Disagreement]) -> None:
    replayed: dict[tuple[str, str], Any] = {}
    for t in result.transfers.values():
        key = (t.src_op, t.dst_op)
        if key in replayed:
            out.append(Disagreement("bin", f"transfer {t.src_op}->{t.dst_op}",
                                    detail="the binaries send it twice"))
        replayed[key] = t
    counts = Counter((t.src_op, t.dst_op) for t in plan.transfers)
    for i, t in enumerate(plan.transfers):
        key = (t.src_op, t.dst_op)
        where = f"transfers[{i}] {t.src_op}->{t.dst_op}"
        if counts[key] > 1:
            out.append(Disagreement("plan.json", where, detail=f"listed {counts[key]} times"))
            continue
        got = replayed.get(key)
        if got is None:
            out.append(Disagreement("plan.json", where, detail="no SEND/RECV pair in the binaries joins these ops"))
        elif _transfer_fields(got) != _transfer_fields(t):
            out.append(Disagreement("plan.json", where, f"{_transfer_fields(got)} (the binaries)",
                                    _transfer_fields(t)))
    extra = sorted(set(replayed) - set(counts))
    if extra:
        shown = ", ".join(f"{a}->{b}" for a, b in extra[:5])
        out.append(Disagreement("plan.json", "transfers", detail=f"the binaries make {len(extra)} transfer(s) the "
                                                                 f"plan does not list: {shown}"))


def compare_with_plan(result: Any, plan: Any) -> list[Disagreement]:
    """Every difference between a replay and a plan, in the order a reader checks them; empty if none.

    Parameters
    ----------
    result
        A :class:`~planner.simulator.SimulationResult` (its ``violations``, ``ops``,
        ``transfers`` and ``makespan_cycles``).
    plan
        A :class:`~planner.plan.Plan` (its ``ops``, ``transfers`` and ``makespan_cycles``).

    Returns
    -------
    list of Disagreement
        Replay violations first (file ``bin``), then ops, transfers and the makespan
        (file ``plan.json``, field path as in the file).

    Examples
    --------
    >>> from planner.plan import Plan
    >>> from planner.simulator import SimulationResult
    >>> r = SimulationResult(7, {}, {}, {}, 1)
    >>> [str(d) for d in compare_with_plan(r, Plan("s", "latency", "OPTIMAL", 5, 5, 0.0, 5, 10**9, (), ()))]
    ['plan.json: makespan_cycles: expected 7 (the binaries end there), found 5']
    """
    out = [Disagreement("bin", "replay", detail=v) for v in getattr(result, "violations", ()) or ()]
    _compare_ops(result, plan, out)
    _compare_transfers(result, plan, out)
    if result.makespan_cycles != plan.makespan_cycles:
        out.append(Disagreement("plan.json", "makespan_cycles", f"{result.makespan_cycles} (the binaries end there)",
                                str(plan.makespan_cycles)))
    return out
