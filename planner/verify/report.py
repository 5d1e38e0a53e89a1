"""report.md redrawn from the verified directory: the bytes ``plan solve`` wrote, or refused.

``plan solve`` writes report.md from its live results (the spec's hardware, its own replay,
the routes' sections); :func:`check_report` draws it again from what the verifier has
checked, with :func:`planner.report.markdown.render_report`, and refuses any other bytes:

* the plan, its baselines and the numeric replay's claim: ``plan.json``;
* each device's kind, profile and streams: ``plan.json`` ``devices``; its levels, main level
  and capacities: its binary's header (the replay checked every peak against them);
* the replay's figures (makespan, instructions, peak bytes per level, shared bandwidth):
  the verifier's own replay of the binaries;
* the memory section: ``memory.json``; the route sections (max-load, islands, warm start,
  given placement, re-placement): ``plan.json`` ``solver`` (:mod:`planner.report.sections`);
* op counts (split ops counted once): ``graph.json``.

So a report cannot claim another objective, bound, gap, peak or memory figure than the
directory it sits in; the figures no replay recomputes (a baseline's, the islands' split, a
re-placement's predictions) are the sealed ``plan.json``'s, as the report prints them.

Examples
--------
>>> from types import SimpleNamespace as NS
>>> capacities_of({"d0": NS(levels=(NS(name="sram", capacity_bytes=8), NS(name="dram", capacity_bytes=64)))})
{'d0': {'sram': 8, 'dram': 64}}
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from planner.errors import VerificationError
from planner.plan import Plan
from planner.report.markdown import DeviceFacts, LinkFacts, ReportHardware, render_report
from planner.report.memory import render_memory_section
from planner.report.sections import route_sections
from planner.verify.documents import PlanDocument, ReportRecords, validate_document
from planner.verify.numeric import describe

__all__ = ["capacities_of", "check_report", "first_difference", "redraw_report"]


def capacities_of(programs: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Per device, each level's capacity as its binary's header records it, in the header's order."""
    return {name: {lv.name: lv.capacity_bytes for lv in p.levels} for name, p in programs.items()}


def _main_level(program: Any) -> str:
    return program.levels[program.main_level].name


def _hardware(doc: PlanDocument, programs: Mapping[str, Any]) -> ReportHardware:
    capacities = capacities_of(programs)
    devices = tuple(DeviceFacts(d.name, d.kind, d.profile, d.streams, _main_level(programs[d.name]),
                                capacities[d.name]) for d in doc.devices)
    return ReportHardware(devices, tuple(LinkFacts(l.name, tuple(l.devices)) for l in doc.links))


def _check_gangs(records: ReportRecords, plan: Plan, base: Mapping[str, str]) -> None:
    """The islands section's gangs start where the replay starts each of their ops (a split op: its first
    instance), as ``planner.islands.gang.replayed_gang_record`` recorded them."""
    if records.islands is None:
        return
    first: dict[str, int] = {}
    for o in plan.ops:  # the replay's ops exactly (checked before)
        op = base[o.name]
        first[op] = min(first.get(op, o.start_cycle), o.start_cycle)
    for i, gang in enumerate(records.islands.gangs):
        starts = [first.get(op) for op in gang.ops]
        if any(start != gang.start_cycle for start in starts):
            raise VerificationError("plan.json", f"solver.islands.gangs[{i}].start_cycle", expected=f"{starts} (each "
                                    "op's first start in the replay, all equal)", found=str(gang.start_cycle))


def _check_records(raw: Mapping[str, Any], plan: Plan, base: Mapping[str, str]) -> None:
    """The solver records the route sections draw: typed, there when the route needs them, and the
    gangs as replayed."""
    records = validate_document(ReportRecords, raw["solver"], "plan.json solver")
    _check_gangs(records, plan, base)
    if raw["objective_kind"] == "max-load" and (records.contiguous is None or records.baselines is None):
        raise VerificationError("plan.json", "solver.contiguous/baselines", detail="a max-load plan records both "
                                "(report.md draws them)")
    if records.placement == "given" and records.placement_source is None:
        raise VerificationError("plan.json", "solver.placement_source", detail="a given placement names its source "
                                "(report.md draws it); a directory written before it was recorded: re-run `plan "
                                "score`")


def redraw_report(raw: Mapping[str, Any], doc: PlanDocument, plan: Plan, programs: Mapping[str, Any],
                  simulation: Any, graph: Any, base: Mapping[str, str], memory: Mapping[str, Any] | None) -> str:
    """report.md's text from the verified plan.json (``raw`` as parsed, ``doc`` as validated), the decoded
    binaries, the verifier's replay, graph.json (``base``: plan op -> graph op) and memory.json (None
    without memory planning)."""
    _check_records(raw, plan, base)
    capacities = capacities_of(programs)
    with _unreadable("memory.json", "its memory section"):
        sections = [] if memory is None else [render_memory_section(memory, capacities)]
    with _unreadable("plan.json", "it"):
        sections += route_sections(raw, {name: caps[_main_level(programs[name])] for name, caps in capacities.items()})
        replay = {"makespan_cycles": simulation.makespan_cycles, "instructions": simulation.instruction_count,
                  "memory": doc.memory_planning, "numeric": describe(raw["numeric"]),
                  "bandwidth": simulation.bandwidth}
        return render_report(plan, _hardware(doc, programs), baselines=raw["baselines"],
                             peak_bytes=simulation.peak_bytes, replay=replay, sections=sections, graph=graph)


@contextmanager
def _unreadable(label: str, what: str) -> Iterator[None]:
    """A record report.md draws that only the seal keeps (memory.json's solver figures, another memory
    plan's figures, plan.json ``solver``), edited into a shape the drawing cannot read: bad input, named.

    ``plan solve`` verifies its own directory and turns any refusal into an internal error, so an
    honest record the drawing cannot read still ends in exit 3, never here.
    """
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, StopIteration, ZeroDivisionError) as e:
        raise VerificationError(label, "", detail=f"report.md's drawing of {what} cannot read it "
                                                  f"({type(e).__name__}: {e})") from None


def check_report(raw: Mapping[str, Any], doc: PlanDocument, plan: Plan, files: Mapping[str, bytes],
                 programs: Mapping[str, Any], simulation: Any, graph: Any, base: Mapping[str, str],
                 memory: Mapping[str, Any] | None) -> None:
    """Refuse a report.md other than the one the verified directory draws (see the module notes)."""
    drawn = redraw_report(raw, doc, plan, programs, simulation, graph, base, memory).encode("utf-8")
    if files["report.md"] != drawn:
        line, want, got = first_difference(files["report.md"], drawn)
        raise VerificationError("report.md", f"line {line}", expected=f"{want} (drawn from the verified plan.json, "
                                "memory.json, graph.json and replay)", found=got)


def first_difference(found: bytes, drawn: bytes) -> tuple[int, str, str]:
    """The first line that differs (1-based), as drawn and as found, each shortened to 100 characters.

    >>> first_difference(b"a\\nb\\n", b"a\\nc\\n")
    (2, "'c'", "'b'")
    >>> first_difference(b"a", b"a\\nb")
    (2, "'b'", 'the end of the file')
    """
    ours, theirs = drawn.split(b"\n"), found.split(b"\n")
    for i in range(max(len(ours), len(theirs))):
        a = ours[i] if i < len(ours) else None
        b = theirs[i] if i < len(theirs) else None
        if a != b:
            return i + 1, _shown(a), _shown(b)
    return len(ours), "", ""


def _shown(line: bytes | None) -> str:
    if line is None:
        return "the end of the file"
    text = repr(line.decode("utf-8", errors="replace"))
    return text if len(text) <= 100 else text[:97] + "..."

