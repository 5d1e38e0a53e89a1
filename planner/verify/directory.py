"""Verify a plan directory: every claim of its files against the replay of its binaries.

:func:`verify_plan_dir` reads only the directory's files and checks, in this order (the
first disagreement is refused, naming the file, the field, what was expected and what
was found):

1. ``plan.json``: its size, encoding, nesting and numbers (:mod:`planner.verify.jsonfile`)
   and its shape (:class:`~planner.verify.documents.PlanDocument`, format version 2);
2. the files it lists with their sha256 (:mod:`planner.verify.manifest`): the plan's
   set exactly, each unchanged (a file edited or copied from another plan is refused);
3. the binaries: one per device, each decoding cleanly, headers matching the devices
   (profile, streams), the links (id, name, bandwidth, latency) and the reference clock;
4. the replay: no violation, and every op and transfer of ``plan.json`` as replayed,
   nothing extra, the same makespan (:func:`planner.verify.agreement.compare_with_plan`);
5. ``graph.json``: every graph op placed (once, or as the portions of a split), every
   transfer carrying its edge's tensors and bytes, every cross-device edge a transfer,
   every kernel of the binaries computing its graph op;
6. the objective recomputed from the replay, bound, gap and status
   (:mod:`planner.verify.claims`);
7. ``memory.json`` (when memory planning ran) and ``allocation.json`` against the binaries;
8. the listings and ``trace.json``: byte for byte what the verified plan renders;
9. ``plan.json`` ``numeric`` (and, with ``numeric=True``, the numeric replay itself);
10. the seal of ``plan.json``: a figure no replay recomputes (a seed, a baseline) edited;
11. ``report.html``: byte for byte the page :func:`planner.report.html.render_html` draws from
    the verified ``plan.json``, ``allocation.json`` and ``memory.json`` (its sha256 in
    ``files`` already refused an edited page at step 2; the redraw refuses a page of other
    figures sealed by hand);
12. ``report.md``: byte for byte the report :mod:`planner.verify.report` draws from the
    verified ``plan.json``, ``memory.json``, ``graph.json``, the binaries' headers and this
    replay's figures (likewise: an edited report resealed by hand is refused).

Nothing here imports the solve stage (``solvers``, ``planner.pipeline``,
``planner.memory``, OR-Tools): a test imports this module in a fresh interpreter and
checks ``sys.modules``.

Examples
--------
>>> verify_plan_dir("/nonexistent")
Traceback (most recent call last):
...
planner.errors.VerificationError: plan.json: missing: is /nonexistent a directory `plan solve` wrote?
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from planner.collector import collector_paused
from planner.errors import BinaryFormatError, VerificationError
from planner.graph.ir import GraphError
from planner.graph.serialize import graph_from_dict
from planner.instances import base_op_name
from planner.isa.binary import decode, listing
from planner.plan import Plan, seal_of
from planner.report.html import render_html
from planner.report.trace import trace_json
from planner.simulator import simulate
from planner.stage_timing import post_solve_reserve_s
from planner.verify.agreement import compare_with_plan
from planner.verify.allocation import check_allocation_document
from planner.verify.binaries import check_unused_fields, program_facts
from planner.verify.claims import (check_baselines, check_bound_and_gap, check_kernels_against_graph,
                                   check_transfers_against_graph, recompute_objective)
from planner.verify.documents import AllocationDocument, MemoryDocument, PlanDocument, RunBudget, validate_document
from planner.verify.jsonfile import MAX_JSON_BYTES, parse_json, read_bytes
from planner.verify.manifest import MAX_FILE_BYTES, read_manifest_files
from planner.verify.memory import check_memory_document
from planner.verify import numeric as numeric_replay  # its limit read at each check, as plan solve reads it
from planner.verify.numeric import NumericOutcome, check_numeric_claim, run_numeric
from planner.verify.report import check_report
from planner.verify.resources import check_resources

__all__ = ["Verdict", "verify_plan_dir", "numeric_replay_dir"]


@dataclass(frozen=True)
class Verdict:
    """A verified plan directory: what was checked and what the replay found."""

    plan_dir: Path
    plan: Plan
    document: PlanDocument
    simulation: Any  # planner.simulator.SimulationResult
    programs: Mapping[str, Any]
    numeric: NumericOutcome | None
    seconds: float

    @property
    def instructions(self) -> int:
        return self.simulation.instruction_count

    def summary(self) -> str:
        """One line for the terminal."""
        files = "plan.json, memory.json, allocation.json" if self.document.memory_planning else \
            "plan.json, allocation.json"
        return (f"verified: makespan {self.simulation.makespan_cycles:,} cycles, objective {self.plan.objective:,} "
                f"({self.plan.objective_kind}); {self.instructions:,} instructions replayed; {files}, "
                f"graph.json, trace.json and the listings agree with the binaries")


def _read_plan_json(plan_dir: Path) -> dict[str, Any]:
    path = plan_dir / "plan.json"
    if not path.exists() and not path.is_symlink():
        raise VerificationError("plan.json", "", detail=f"missing: is {plan_dir} a directory `plan solve` wrote?")
    raw = parse_json(read_bytes(path, "plan.json", max_bytes=MAX_JSON_BYTES), "plan.json")
    if not isinstance(raw, dict):
        raise VerificationError("plan.json", "", detail=f"expected an object, found {type(raw).__name__}")
    if raw.get("format_version") == 1:
        raise VerificationError("plan.json", "format_version", detail="format 1 was written before plans recorded "
                                "the checksums a verification needs; re-run `plan solve` to write format 2")
    return raw


class _LastParsed:
    """A parse of bytes, and the value it gave for the last bytes it parsed under each label.

    ``plan solve`` reads its temporary directory twice in one process: the numeric replay
    reads graph.json and the binaries, then the verifier reads the same files again. Parsing
    is a function of the bytes alone, so the same bytes (compared whole) get the value their
    first parse gave (a graph or a program: neither is changed by anything that reads it)
    instead of 10^4 ops parsed again. Only the last bytes per label are kept.

    Examples
    --------
    >>> calls = []
    >>> parse = _LastParsed(lambda data, label: calls.append(label) or len(data))
    >>> parse(b"abc", "f"), parse(b"abc", "f"), parse(b"abcd", "f"), len(calls)
    (3, 3, 4, 2)
    """

    def __init__(self, parse: Any) -> None:
        self._parse = parse
        self._last: dict[str, tuple[bytes, Any]] = {}

    def __call__(self, data: bytes, label: str) -> Any:
        last = self._last.get(label)
        if last is not None and last[0] == data:
            return last[1]
        value = self._parse(data, label)
        self._last[label] = (data, value)
        return value


_decode_binary = _LastParsed(lambda data, label: decode(data, name=label))
# allocation.json and memory.json: the checks of the document, of trace.json and of
# report.html each read them (a 10k-op plan's allocation.json is 14 MB); one parse serves all.
_parse_document = _LastParsed(parse_json)


def _decode(files: Mapping[str, bytes], devices: list[str]) -> dict[str, Any]:
    programs = {}
    for name in devices:
        label = f"bin/{name}.bin"
        try:
            program = _decode_binary(files[label], label)
        except (ValueError, IndexError, KeyError, OverflowError) as e:  # a table the header describes wrongly
            raise VerificationError(label, "", detail=f"malformed binary ({e})") from None
        if program.device != name:
            raise VerificationError(label, "device", expected=repr(name), found=repr(program.device))
        check_unused_fields(program, label)
        programs[name] = program
    return programs


def _check_headers(doc: PlanDocument, programs: Mapping[str, Any]) -> None:
    """Each binary's header against plan.json's devices, links and clock."""
    if len({d.name for d in doc.devices}) != len(doc.devices) or len({l.name for l in doc.links}) != len(doc.links):
        raise VerificationError("plan.json", "devices/links", detail="a name is listed twice")
    for d in doc.devices:
        p = programs[d.name]
        label = f"bin/{d.name}.bin"
        for field, want, got in (("profile", d.profile, p.profile), ("streams", d.streams, p.num_streams),
                                 ("reference clock", doc.clock_hz, p.reference_clock_hz)):
            if want != got:
                raise VerificationError(label, field, expected=f"{want!r} (plan.json)", found=repr(got))
        for link in p.links:
            want = doc.links[link.id] if link.id < len(doc.links) else None
            got = (link.name, link.bandwidth_bytes_per_s, link.latency_cycles)
            if want is None or (want.name, want.bandwidth_bytes_per_s, want.latency_cycles) != got:
                raise VerificationError(label, f"link {link.id}", found=str(got), expected=str(
                    None if want is None else (want.name, want.bandwidth_bytes_per_s, want.latency_cycles))
                    + " (plan.json links)")
    for i, link in enumerate(doc.links):  # a binary lists exactly the links its device is an end of
        knowing = sorted(name for name, p in programs.items() if any(l.id == i for l in p.links))
        if sorted(link.devices) != knowing or len(set(link.devices)) != len(link.devices):
            raise VerificationError("plan.json", f"links[{i}].devices", expected=f"{knowing} (the binaries that "
                                    f"know link {link.name!r})", found=str(list(link.devices)))


_parse_graph = _LastParsed(lambda data, label: graph_from_dict(parse_json(data, label)))


def _read_graph(data: bytes) -> Any:
    try:
        return _parse_graph(data, "graph.json")
    except VerificationError:
        raise
    except (BinaryFormatError, GraphError, ValueError, KeyError, TypeError) as e:
        raise VerificationError("graph.json", "", detail=f"not a valid graph ({e})") from None


def _base_ops(plan: Plan, graph: Any, memory_planning: bool) -> dict[str, str]:
    """Plan op (or op instance ``"op#p"``) -> graph op; every graph op placed."""
    base: dict[str, str] = {}
    for i, o in enumerate(plan.ops):
        graph_op = base_op_name(o.name, graph.ops)
        if graph_op in graph.ops and (memory_planning or graph_op == o.name):
            base[o.name] = graph_op
        else:
            raise VerificationError("plan.json", f"ops[{i}] {o.name!r}", detail="graph.json has no such op")
    unplaced = sorted(set(graph.ops) - set(base.values()))
    if unplaced:
        raise VerificationError("plan.json", "ops", detail=f"graph.json op {unplaced[0]!r} is not placed")
    return base


def _check_plan_against_replay(doc: PlanDocument, plan: Plan, programs: Mapping[str, Any],
                               files: Mapping[str, bytes]) -> Any:
    try:  # from the bytes: the replay's fast path screens their columns (the programs are decoded already)
        simulation = simulate({name: files[f"bin/{name}.bin"] for name in programs})
    except (IndexError, KeyError, ValueError) as e:  # a well-formed binary naming a table entry it lacks
        raise VerificationError("bin", "", detail=f"the binaries cannot be replayed ({type(e).__name__}: {e})") from None
    problems = compare_with_plan(simulation, plan)
    if problems:
        raise problems[0].error()
    return simulation


def _check_renderings(files: Mapping[str, bytes], plan: Plan, doc: PlanDocument, programs: Mapping[str, Any]) -> None:
    """The listings and trace.json are what the verified plan and binaries render."""
    for name, program in programs.items():
        if files[f"bin/{name}.lst"] != listing(program).encode("utf-8"):
            raise VerificationError(f"bin/{name}.lst", "", detail=f"not the listing of bin/{name}.bin")
    memory = _parse_document(files["memory.json"], "memory.json") if doc.memory_planning else None
    rendered = trace_json(plan, [d.name for d in doc.devices], [l.name for l in doc.links], programs=programs,
                          allocation=_parse_document(files["allocation.json"], "allocation.json"),
                          memory=memory).encode("utf-8")
    if files["trace.json"] != rendered:
        raise VerificationError("trace.json", "", detail="not the trace of the verified plan")


def _check_page(raw: Mapping[str, Any], files: Mapping[str, bytes], memory_planning: bool) -> None:
    """report.html is the page the verified plan.json, allocation.json and memory.json draw."""
    memory = _parse_document(files["memory.json"], "memory.json") if memory_planning else None
    page = render_html(raw, _parse_document(files["allocation.json"], "allocation.json"), memory).encode("utf-8")
    if files["report.html"] != page:
        raise VerificationError("report.html", "", detail="not the page the verified plan.json, allocation.json "
                                                          "and memory.json draw")


def _check_files(doc: PlanDocument, plan: Plan, files: Mapping[str, bytes], programs: Mapping[str, Any],
                 simulation: Any, graph: Any, base: Mapping[str, str]) -> None:
    """memory.json, allocation.json, the listings and trace.json."""
    facts = {name: program_facts(p, f"bin/{name}.bin") for name, p in programs.items()}
    memory = None
    if doc.memory_planning:
        memory = validate_document(MemoryDocument, _parse_document(files["memory.json"], "memory.json"),
                                   "memory.json")
        check_memory_document(memory, doc, programs, facts, simulation, graph, base)
    elif any(p.fast_level >= 0 for p in programs.values()):
        raise VerificationError("plan.json", "memory_planning", expected="true (a binary has a fast level)",
                                found="false")
    check_baselines(doc, memory)
    alloc = validate_document(AllocationDocument, _parse_document(files["allocation.json"], "allocation.json"),
                              "allocation.json")
    check_allocation_document(alloc, doc, programs, facts, simulation, graph, base)
    _check_renderings(files, plan, doc, programs)


def _check_claims(doc: PlanDocument, plan: Plan, programs: Mapping[str, Any], simulation: Any, graph: Any,
                  base: Mapping[str, str]) -> None:
    device_of = {base[name]: t.device for name, t in simulation.ops.items()}
    check_transfers_against_graph(plan.transfers, graph, base, device_of)
    check_kernels_against_graph(programs, graph, base)
    objective = recompute_objective(doc, simulation, graph, base)
    if objective != doc.objective:
        raise VerificationError("plan.json", "objective", expected=f"{objective} ({doc.objective_kind} recomputed "
                                "from the replay)", found=str(doc.objective))
    check_bound_and_gap(doc.status, doc.objective, doc.bound, doc.gap)
    check_resources(doc.resources, graph, "plan.json")
    _check_run_budget(doc, graph)


def _check_run_budget(doc: PlanDocument, graph: Any) -> None:
    """``solver.post_solve_reserve_s``, when present, is the split :mod:`planner.stage_timing` makes."""
    if "post_solve_reserve_s" not in doc.solver:
        return  # a run without the split (max-load plans)
    budget = validate_document(RunBudget, doc.solver, "plan.json solver")
    macs = sum(op["macs"] for op in doc.resources["ops"].values())
    want = post_solve_reserve_s(len(graph.ops), macs if macs <= numeric_replay.NUMERIC_DEFAULT_MAX_MACS else 0,
                                budget.time_limit_s)
    if budget.post_solve_reserve_s != want:
        raise VerificationError("plan.json", "solver.post_solve_reserve_s", expected=f"{want} (for "
                                f"{len(graph.ops)} ops and a limit of {budget.time_limit_s:g} s)",
                                found=str(budget.post_solve_reserve_s))


@collector_paused()  # many small objects, no cycles (planner.collector)
def verify_plan_dir(path: str | Path, *, numeric: bool = False, seed: int = 0) -> Verdict:
    """Check every claim of a plan directory against the replay of its binaries.

    Parameters
    ----------
    path
        A directory ``plan solve`` wrote.
    numeric
        Also run the numeric replay (whatever its size) and compare it with ``plan.json``'s claim.
    seed
        Seed of the numeric replay's random inputs.

    Returns
    -------
    Verdict

    Raises
    ------
    VerificationError
        The first disagreement (file, field, expected, found), or a malformed file.
    BinaryFormatError
        A binary that does not decode (bad magic, version, checksum, truncation).
    InternalError
        With ``numeric``: the replay's numbers differ from the reference although every
        file is as written (a bug).
    """
    start = time.perf_counter()
    plan_dir = Path(path)
    raw = _read_plan_json(plan_dir)
    doc = validate_document(PlanDocument, raw, "plan.json")
    devices = [d.name for d in doc.devices]
    files = read_manifest_files(plan_dir, doc.files, devices, memory_planning=doc.memory_planning)
    programs = _decode(files, devices)
    _check_headers(doc, programs)
    plan = Plan.from_dict(doc.model_dump())
    simulation = _check_plan_against_replay(doc, plan, programs, files)
    graph = _read_graph(files["graph.json"])
    base = _base_ops(plan, graph, doc.memory_planning)
    _check_claims(doc, plan, programs, simulation, graph, base)
    _check_files(doc, plan, files, programs, simulation, graph, base)
    ran = run_numeric(programs, graph, mode="on", seed=seed) if numeric else None
    check_numeric_claim(doc.numeric, programs, graph, ran)
    if raw.get("seal") != seal_of(raw):
        raise VerificationError("plan.json", "seal", expected=f"{seal_of(raw)[:16]}... (the document's sha256)",
                                found=f"{str(raw.get('seal'))[:16]}...", detail="a field was edited after `plan "
                                "solve` wrote it")
    _check_page(raw, files, doc.memory_planning)
    memory = _parse_document(files["memory.json"], "memory.json") if doc.memory_planning else None
    check_report(raw, doc, plan, files, programs, simulation, graph, base, memory)
    return Verdict(plan_dir, plan, doc, simulation, programs, ran, time.perf_counter() - start)


def numeric_replay_dir(path: str | Path, devices: list[str], *, mode: str, seed: int = 0) -> NumericOutcome:
    """The numeric replay of a directory's binaries against its graph.json, before plan.json exists.

    ``plan solve`` runs it on the temporary directory it writes (the report says what it
    found), then :func:`verify_plan_dir` checks the finished directory.

    Raises
    ------
    InternalError
        The replay's numbers differ from the reference.
    """
    plan_dir = Path(path)
    graph = _read_graph(read_bytes(plan_dir / "graph.json", "graph.json", max_bytes=MAX_JSON_BYTES))
    programs = {d: _decode_binary(read_bytes(plan_dir / "bin" / f"{d}.bin", f"bin/{d}.bin",
                                             max_bytes=MAX_FILE_BYTES), f"bin/{d}.bin") for d in devices}
    return run_numeric(programs, graph, mode=mode, seed=seed)
