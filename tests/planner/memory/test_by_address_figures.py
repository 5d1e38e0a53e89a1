"""memory.json's several-stream figures (``stats.by_address``): what the verifier accepts and
refuses, and the report's line for a cycle-time model whose plan was not kept
(planner/verify/memory.py, planner/report/memory.py; docs/memory.md, "Several compute streams")."""

from __future__ import annotations

import pytest

from planner.errors import VerificationError
from planner.memory.streams import FIXED
from planner.report.memory import _streams_lines
from planner.verify.memory import _check_by_address


def _figures(level=100, kept=90, status="OPTIMAL", cycles=90, bound=90, model_kept=False, **extra):
    model = {"status": status, "device_cycles": cycles, "model_bound_device_cycles": bound, "dtime": 0.1,
             "fixed": FIXED, **extra}
    if model_kept:
        model["kept"] = True
    return {"level_plan_device_cycles": level, "kept_device_cycles": kept, "time_model": model}


@pytest.mark.parametrize("fig", [
    _figures(),  # a by-address candidate kept (90 < 100), proven optimal for the order by the model
    _figures(kept=80, cycles=80, bound=80, model_kept=True),  # the model's own plan kept
    _figures(level=90, status="FEASIBLE", bound=70),  # nothing kept; the model's bound below
    _figures(level=90, status="UNKNOWN", cycles=None, bound=None),  # no plan within the budget
    _figures(level=90, status="NOT RUN", cycles=None, bound=None, reason="31626 segment pairs"),
    {"level_plan_device_cycles": 100, "kept_device_cycles": 90},  # no model asked for
])
def test_consistent_figures_are_accepted(fig):
    _check_by_address("npu0", fig)


@pytest.mark.parametrize("fig, field", [
    (_figures(kept=110, cycles=110, bound=110), "kept_device_cycles"),  # longer than the level plan
    (_figures(cycles=85, bound=85), "time_model.device_cycles"),  # not the kept plan's
    (_figures(bound=95), "time_model.model_bound_device_cycles"),  # above its plan
    (_figures(bound=80), "time_model.model_bound_device_cycles"),  # OPTIMAL with a gap
    (_figures(status="FEASIBLE"), "time_model.model_bound_device_cycles"),  # closed gap but FEASIBLE
    (_figures(level=90, model_kept=True), "time_model.kept"),  # kept, not shorter
    (_figures(status="NOT RUN", cycles=None, bound=None), "time_model"),  # no reason
    (_figures(status="UNKNOWN"), "time_model.device_cycles"),  # a plan without a solution status
    (_figures(status="DONE"), "time_model.status"),
])
def test_inconsistent_figures_are_refused(fig, field):
    with pytest.raises(VerificationError, match=f"by_address.{field}"):
        _check_by_address("npu0", fig)


def test_the_report_says_what_the_model_found_when_its_plan_is_not_kept():
    assert _streams_lines({"by_address": _figures(level=90, status="FEASIBLE", bound=70)}) == [
        "- Several streams: the cycle-time model (offsets in the model) found nothing shorter than the kept "
        f"plan's 90 device cycles (FEASIBLE; its bound 70 for the fixed {FIXED})."]
    lines = _streams_lines({"by_address": _figures()})  # a candidate kept, then proven by the model
    assert lines[0].startswith("- Several streams: kept a plan made for the memory order by address")
    assert lines[1] == ("- Several streams: the cycle-time model (offsets in the model) proves the kept plan's 90 "
                        f"device cycles OPTIMAL for the fixed {FIXED}.")
    not_run = _figures(level=90, status="NOT RUN", cycles=None, bound=None, reason="31626 segment pairs")
    assert _streams_lines({"by_address": not_run}) == [
        "- Several streams: the cycle-time model (offsets in the model) did not run: 31626 segment pairs."]
