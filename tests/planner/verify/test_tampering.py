"""Every tampering issue 9 lists, and more, refused by `plan simulate` with the first disagreement named.

Each edit is tried twice where it makes sense: as is (the seal or a checksum may catch it),
and *resealed*, as an adversary who recomputes every sha256 and plan.json's seal would
leave it, so that only the semantic check can refuse it; the message must then name that
check (file, field, expected vs found).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import VerificationError
from planner.verify import verify_plan_dir
from tests.fuzz.plan_dirs import MAX_LOAD_SPEC, _solve, _spec_dict, reseal

runner = CliRunner()


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    root = tmp_path_factory.mktemp("plans")
    memory_other = _spec_dict("memory-mlp")
    memory_other["models"][0]["generator"]["batch"] = 8
    return {"taskgraph": _solve(_spec_dict("taskgraph"), root / "taskgraph"),
            "memory": _solve(_spec_dict("memory-mlp"), root / "memory"),
            "memory-other": _solve(memory_other, root / "memory-other"),
            "throughput": _solve(_spec_dict("throughput"), root / "throughput"),
            "max-load": _solve(MAX_LOAD_SPEC, root / "max-load")}


def copy(plans, name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    shutil.copytree(plans[name], out)
    return out


def edit(plan_dir: Path, file: str, change, *, resealed: bool = False) -> None:
    path = plan_dir / file
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    if resealed:
        reseal(plan_dir)


def refused(plan_dir: Path, *fragments: str) -> str:
    """`plan simulate` exits 2 with one clean message holding every fragment."""
    result = runner.invoke(app, ["simulate", str(plan_dir)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output, result.output
    for fragment in fragments:
        assert fragment in result.output, result.output
    return result.output


def test_untampered_directories_verify(plans):
    for name, plan_dir in plans.items():
        result = runner.invoke(app, ["simulate", str(plan_dir)])
        assert result.exit_code == 0, (name, result.output)
        assert result.output.startswith("verified: makespan"), result.output


# --- the tamperings of issue 9 --------------------------------------------------------------------------------


@pytest.mark.parametrize("resealed", [False, True])
def test_transfer_moved_100_cycles_onto_a_bogus_link(plans, tmp_path, resealed):
    d = copy(plans, "taskgraph", tmp_path)

    def change(doc):
        doc["transfers"][0].update(link="bogus", start_cycle=doc["transfers"][0]["start_cycle"] + 100)

    edit(d, "plan.json", change, resealed=resealed)
    refused(d, "plan.json: transfers[0] tg/a->tg/b: expected fast0->slow0 on 'wire', 100 bytes, [1000, 1200) "
               "(the binaries), found fast0->slow0 on 'bogus', 100 bytes, [1100, 1300)")


@pytest.mark.parametrize("resealed", [False, True])
def test_transfers_emptied(plans, tmp_path, resealed):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "plan.json", lambda doc: doc.update(transfers=[]), resealed=resealed)
    refused(d, "plan.json: transfers: the binaries make 2 transfer(s) the plan does not list: tg/a->tg/b, tg/b->tg/d")


@pytest.mark.parametrize("base, kind", [("taskgraph", "latency"), ("throughput", "throughput"),
                                        ("max-load", "max-load")])
@pytest.mark.parametrize("resealed", [False, True])
def test_objective_halved(plans, tmp_path, base, kind, resealed):
    d = copy(plans, base, tmp_path)
    objective = json.loads((plans[base] / "plan.json").read_text())["objective"]
    edit(d, "plan.json", lambda doc: doc.update(objective=objective // 2), resealed=resealed)
    refused(d, f"plan.json: objective: expected {objective} ({kind} recomputed from the replay), "
               f"found {objective // 2}")


@pytest.mark.parametrize("resealed", [False, True])
def test_max_load_loads_edited(plans, tmp_path, resealed):
    d = copy(plans, "max-load", tmp_path)
    edit(d, "plan.json", lambda doc: doc["solver"]["loads"].update(acc0=1), resealed=resealed)
    refused(d, "plan.json: solver.loads.acc0: expected 40 (recomputed from the replay and graph.json), found 1")


@pytest.mark.parametrize("field, value, message", [
    ("status", "OPTIMAL", "plan.json: bound: expected 639693 (an OPTIMAL plan's bound is its objective), found 639689"),
    ("bound", 639694, "plan.json: bound: expected at most the objective 639693, found 639694"),
    ("gap", 0.5, "plan.json: gap: expected 6.2529994856907925e-06 ((objective - bound) / objective), found 0.5"),
    ("gap", None, "plan.json: gap: expected 6.2529994856907925e-06 ((objective - bound) / objective), found None"),
    ("status", "SOLVED", "plan.json: status: input should be 'OPTIMAL' or 'FEASIBLE' (found 'SOLVED')"),
])
@pytest.mark.parametrize("resealed", [False, True])
def test_status_bound_gap_edited(plans, tmp_path, field, value, message, resealed):
    d = copy(plans, "memory", tmp_path)
    edit(d, "plan.json", lambda doc: doc.update({field: value}), resealed=resealed)
    refused(d, message)


def test_a_gap_edited_with_its_bound_is_refused_by_the_seal(plans, tmp_path):
    d = copy(plans, "memory", tmp_path)
    def change(doc):
        doc.update(bound=600000, gap=(639693 - 600000) / 639693)
        for row in doc["baselines"]:
            if row["bound"] is not None:
                row["bound"] = 600000

    edit(d, "plan.json", change)
    # Consistent with each other and below the objective: a proof no replay can redo, so the
    # seal is what refuses it (resealed, it would pass: see tests/fuzz/plan_dirs.py UNVERIFIABLE).
    with pytest.raises(VerificationError, match="plan.json: seal"):
        verify_plan_dir(d)


def test_optimal_edited_to_feasible_is_refused_by_the_seal(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "plan.json", lambda doc: (doc.update(status="FEASIBLE"), doc["baselines"][0].update(status="FEASIBLE")))
    # A weaker claim that is still true (the gap is closed): only the seal refuses it.
    refused(d, "plan.json: seal: expected", "a field was edited after `plan solve` wrote it")


def test_memory_json_deleted(plans, tmp_path):
    d = copy(plans, "memory", tmp_path)
    (d / "memory.json").unlink()
    refused(d, "memory.json: missing")
    # ...and plan.json edited to say memory planning never ran: the binaries have a fast level.
    edit(d, "plan.json", lambda doc: (doc.update(memory_planning=False), doc["files"].pop("memory.json")),
         resealed=True)
    refused(d, "plan.json: memory_planning: expected true (a binary has a fast level), found false")


def test_memory_json_copied_from_another_plan(plans, tmp_path):
    d = copy(plans, "memory", tmp_path)
    shutil.copyfile(plans["memory-other"] / "memory.json", d / "memory.json")
    refused(d, "memory.json: sha256 checksum: expected", "comes from another plan")
    reseal(d)  # the adversary updates the checksum: the buffers no longer match the binary's
    refused(d, "memory.json: ")


def test_memory_json_present_though_planning_did_not_run(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    shutil.copyfile(plans["memory"] / "memory.json", d / "memory.json")
    refused(d, "memory.json: present, but plan.json says memory planning did not run")


@pytest.mark.parametrize("value, message", [
    ("x", "plan.json: ops[0].start_cycle: input should be a valid integer (found 'x')"),
    (None, "plan.json: ops[0].start_cycle: input should be a valid integer (found None)"),
    (True, "plan.json: ops[0].start_cycle: input should be a valid integer (found True)"),
    (-5, "plan.json: ops[0].start_cycle: input should be greater than or equal to 0 (found -5)"),
    (10**30, "plan.json: not valid JSON: an integer of 31 digits (at most 24)"),
    (10**20, "plan.json: ops[0].start_cycle: input should be less than 9223372036854775808"),
    (1.5, "plan.json: ops[0].start_cycle: input should be a valid integer (found 1.5)"),
])
def test_start_cycle_of_the_wrong_type(plans, tmp_path, value, message):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "plan.json", lambda doc: doc["ops"][0].update(start_cycle=value))
    refused(d, message)


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "plan.json: not valid JSON: nested too deeply"),
    ('{"a": ' + "[" * 40 + "]" * 40 + "}", "plan.json: not valid JSON: nested 41 levels deep (at most 32)"),
    ('{"format_version": 2, "objective": 1e999}', "plan.json: not valid JSON: 1e999 overflows a float"),
    ('{"format_version": 2, "gap": NaN}', "plan.json: not valid JSON: NaN is not a number JSON allows"),
    ('{"a": 1, "a": 1}', "plan.json: not valid JSON: key 'a' appears twice in one object"),
    ('{"a": ' + "9" * 5000 + "}", "plan.json: not valid JSON: an integer of 5000 digits"),
    ("[1, 2]", "plan.json: expected an object, found list"),
    ('{"format_version": 1}', "plan.json: format_version: format 1 was written before plans recorded the checksums"),
    ('{"format_version": 2', "plan.json: not valid JSON: Expecting ',' delimiter (line 1, column 21)"),
])
def test_malformed_plan_json(plans, tmp_path, text, message):
    d = copy(plans, "taskgraph", tmp_path)
    (d / "plan.json").write_text(text)
    refused(d, message)


def test_plan_json_not_utf8_or_huge_or_special(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    (d / "plan.json").write_bytes(b'{"spec": "\xff"}')
    refused(d, "plan.json: not UTF-8 text (byte 10)")
    with open(d / "plan.json", "r+b") as f:
        f.truncate((256 << 20) + 1)  # sparse: no disk space, no memory
    refused(d, "plan.json: 268,435,457 bytes, more than the 268,435,456 a plan file may have")
    (d / "plan.json").unlink()
    (d / "plan.json").symlink_to("/dev/zero")
    refused(d, "plan.json: is a symbolic link, not a regular file")


@pytest.mark.parametrize("resealed", [False, True])
def test_edited_graph_json(plans, tmp_path, resealed):
    d = copy(plans, "memory", tmp_path)

    def change(doc):
        relu = next(op for op in doc["ops"] if op["type"] == "relu")
        relu["type"] = "gelu"

    edit(d, "graph.json", change, resealed=resealed)
    if resealed:
        refused(d, "graph.json: ops 'mlp/act0': expected relu {} (the kernel in bin/tpu0.bin), found gelu {}")
    else:
        refused(d, "graph.json: sha256 checksum")


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc["tensors"][0].update(shape=[1, 2, 3]), "graph.json: not a valid graph (graph data: op "),
    # the last op writes the graph's output: the graph itself is refused, before any comparison with plan.json
    (lambda doc: doc["ops"].pop(), "graph.json: not a valid graph (graph data: tensor 'mlp/y' is an output of the "
                                   "graph, but no op produces it"),
    (lambda doc: doc["ops"].pop(0), "plan.json: ops["),  # an op inside the graph: plan.json places one the graph lacks
    (lambda doc: doc.update(version=9), "graph.json: not a valid graph (graph data: unsupported version 9"),
    (lambda doc: doc.update(version=True), "graph.json: not a valid graph (graph data: unsupported version True"),
    (lambda doc: doc["ops"][1].update(inputs=["nope"]), "graph.json: not a valid graph"),
    (lambda doc: doc["ops"][1].update(inputs=[doc["ops"][2]["outputs"][0]]), "graph.json: not a valid graph"),
])
def test_resealed_graph_json_edits(plans, tmp_path, change, message):
    d = copy(plans, "memory", tmp_path)
    edit(d, "graph.json", change, resealed=True)
    refused(d, message)


# --- more tamperings ------------------------------------------------------------------------------------------


def test_op_moved_or_added_or_removed(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "plan.json", lambda doc: doc["ops"][0].update(device="slow0"), resealed=True)
    refused(d, "plan.json: ops[0] 'tg/a': expected fast0 stream 0 [0, 1000) (the binaries), found slow0 stream 0")
    d = copy(plans, "taskgraph", tmp_path / "2")
    edit(d, "plan.json", lambda doc: doc["ops"].pop(), resealed=True)
    refused(d, "plan.json: ops: the binaries run 1 op(s) the plan does not list")
    d = copy(plans, "taskgraph", tmp_path / "3")
    edit(d, "plan.json", lambda doc: doc["ops"].append(dict(doc["ops"][0], name="tg/z")), resealed=True)
    refused(d, "plan.json: ops[4] 'tg/z': no binary runs this op")


def test_binaries_deleted_added_or_swapped(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    (d / "bin" / "slow0.bin").unlink()
    refused(d, "bin/slow0.bin: missing")
    d = copy(plans, "taskgraph", tmp_path / "2")
    shutil.copyfile(d / "bin" / "slow0.bin", d / "bin" / "slow1.bin")
    refused(d, "bin/slow1.bin: a file for a device the plan does not have")
    d = copy(plans, "taskgraph", tmp_path / "3")
    shutil.copyfile(d / "bin" / "slow0.bin", d / "bin" / "fast0.bin")
    reseal(d)
    refused(d, "bin/fast0.bin: device: expected 'fast0', found 'slow0'")


def test_seed_edited(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "plan.json", lambda doc: doc["solver"].update(seed=7))
    refused(d, "plan.json: seal")


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc["devices"]["tpu0"]["buffers"][0].update(address=64),
     "memory.json: devices.tpu0.buffers[0] 'mlp/fc0/w': expected level, address, bytes"),
    (lambda doc: doc["devices"]["tpu0"]["transfers"][0].update(trigger_op="mlp/fc0"),
     "memory.json: devices.tpu0.transfers[0] 'prefetch:mlp/fc1/w@onchip.0'.trigger_op: expected '' (the op the DMA "
     "waits on), found 'mlp/fc0'"),
    (lambda doc: doc["devices"]["tpu0"]["transfers"][0].update(start_cycle=1),
     "memory.json: devices.tpu0.transfers[0] 'prefetch:mlp/fc1/w@onchip.0': expected source, destination"),
    (lambda doc: doc["devices"]["tpu0"]["transfers"].pop(), "memory.json: devices.tpu0.transfers: the DMAs differ"),
    (lambda doc: doc["devices"]["tpu0"]["accesses"][0].update(fast_bytes=1),
     "memory.json: devices.tpu0.accesses[0] 'mlp/fc0'.fast_bytes/slow_bytes"),
    (lambda doc: doc["devices"]["tpu0"]["stats"].update(fast_peak_bytes=1),
     "memory.json: devices.tpu0.stats.fast_peak_bytes"),
    (lambda doc: doc.update(choice="all in main memory"), "memory.json: baselines.all in main memory: expected"),
    (lambda doc: doc["baselines"].update({"memory plan": 5}), "memory.json: baselines.memory plan: expected 639693"),
    # found by the plan-directory fuzzer: the chosen plan's figures deleted (the page does not draw them)
    (lambda doc: doc["figures"].pop("memory plan"), "memory.json: figures.memory plan: missing"),
    (lambda doc: doc["figures"]["memory plan"].pop("tpu0"), "memory.json: figures.memory plan.tpu0: missing"),
    # the level solve's figures against each other (makespan = bound 447782, gap 0.0)
    (lambda doc: doc["devices"]["tpu0"]["stats"].update(level_gap=0.25),
     "memory.json: devices.tpu0.stats.level_gap: expected 0.0 ((makespan - bound) / makespan), found 0.25"),
    (lambda doc: doc["devices"]["tpu0"]["stats"].update(level_gap=0),
     "memory.json: devices.tpu0.stats.level_gap: expected 0.0 ((makespan - bound) / makespan), found 0"),
    (lambda doc: doc["devices"]["tpu0"]["stats"].pop("level_gap"), "memory.json: devices.tpu0.stats.level_gap: "
                                                                   "expected the level solve's gap"),
    (lambda doc: doc["devices"]["tpu0"]["stats"].update(level_makespan_device_cycles=400000),
     "memory.json: devices.tpu0.stats.level_bound_device_cycles: expected an integer bound at most"),
    (lambda doc: doc["devices"]["tpu0"]["stats"].update(level_bound_device_cycles=447000),
     "memory.json: devices.tpu0.stats.level_gap: expected 0.0017"),
])
def test_resealed_memory_json_edits(plans, tmp_path, change, message):
    d = copy(plans, "memory", tmp_path)
    edit(d, "memory.json", change, resealed=True)
    refused(d, message)


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc["devices"]["fast0"]["buffers"][0].update(address=64), "allocation.json: devices.fast0.buffers[0]"),
    (lambda doc: doc["devices"]["fast0"].update(ops=1), "allocation.json: devices.fast0.ops: expected 3"),
    (lambda doc: doc["devices"]["fast0"]["memory"]["mem"].update(reserved_bytes=1), "allocation.json: devices.fast0.memory"),
    (lambda doc: doc["transfers"][0].update(link="bogus"), "allocation.json: transfers[0]"),
    (lambda doc: doc["ops"]["tg/a"].update(end_cycle=5), "allocation.json: ops.tg/a"),
    (lambda doc: doc["resources"]["devices"]["fast0"].update(busy_cycles=5),
     "allocation.json: resources.devices.fast0.busy_cycles: expected 5000"),
])
def test_resealed_allocation_json_edits(plans, tmp_path, change, message):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "allocation.json", change, resealed=True)
    refused(d, message)


def test_resealed_trace_listing_and_numeric_claim_edits(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "trace.json", lambda doc: doc["traceEvents"].pop(), resealed=True)
    refused(d, "trace.json: not the trace of the verified plan")
    d = copy(plans, "taskgraph", tmp_path / "2")
    (d / "bin" / "fast0.lst").write_text((d / "bin" / "fast0.lst").read_text().replace("TASK", "MATMUL", 1))
    reseal(d)
    refused(d, "bin/fast0.lst: not the listing of bin/fast0.bin")
    d = copy(plans, "memory", tmp_path / "3")
    edit(d, "plan.json", lambda doc: doc["numeric"].update(tensors=99), resealed=True)
    result = runner.invoke(app, ["simulate", str(d), "--numeric"])
    assert result.exit_code == 2 and "plan.json: numeric.tensors: expected 6 (the numeric replay), found 99" \
        in result.output, result.output
    d = copy(plans, "memory", tmp_path / "4")
    edit(d, "plan.json", lambda doc: doc["numeric"].update(status="off"), resealed=False)
    refused(d, "plan.json: seal")


def test_files_list_edited(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "plan.json", lambda doc: doc["files"].update({"../../etc/passwd": "0" * 64}))
    refused(d, "plan.json: files: lists '../../etc/passwd', which is not a file of this plan's directory")
    d = copy(plans, "taskgraph", tmp_path / "2")
    edit(d, "plan.json", lambda doc: doc["files"].pop("trace.json"))
    refused(d, "plan.json: files: has no checksum for 'trace.json'")


def test_a_users_own_file_beside_the_plan_is_left_alone(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    (d / "notes.txt").write_text("mine")
    doc = json.loads((d / "plan.json").read_text())
    (d / "plan.json").write_text(json.dumps(doc))  # re-serialized: the same document
    assert verify_plan_dir(d).plan.objective == doc["objective"]


@pytest.mark.parametrize("value, message", [
    (1.5, "plan.json: solver.post_solve_reserve_s: expected 0.0 (for 4 ops"),
    (-1.0, "plan.json solver"),
    ("1", "plan.json solver"),
])
def test_resealed_post_solve_reserve_edits(plans, tmp_path, value, message):
    # The time limit's split (planner.stage_timing) is recomputed from graph.json and the resources.
    d = copy(plans, "taskgraph", tmp_path)
    assert json.loads((d / "plan.json").read_text())["solver"]["post_solve_reserve_s"] == 0.0
    edit(d, "plan.json", lambda doc: doc["solver"].update(post_solve_reserve_s=value), resealed=True)
    refused(d, message)


@pytest.mark.parametrize("base", ["taskgraph", "memory"])
def test_an_edited_report_html_is_refused(plans, tmp_path, base):
    d = copy(plans, base, tmp_path)
    page = (d / "report.html").read_text()
    assert page.count("</h1>") == 1
    (d / "report.html").write_text(page.replace("</h1>", " (checked by hand)</h1>"))
    refused(d, "report.html: sha256 checksum", "the file changed after `plan solve` wrote it")
    reseal(d)  # the checksum recomputed too: only the redraw from the verified files can tell
    refused(d, "report.html: not the page the verified plan.json, allocation.json and memory.json draw")
    d = copy(plans, base, tmp_path / "deleted")
    (d / "report.html").unlink()
    refused(d, "report.html")


def test_a_resealed_figure_only_the_seal_kept_is_refused_by_the_page_it_draws(plans, tmp_path):
    # plan.json's spec name is a figure no replay recomputes; allocation.json agrees with it, so
    # before report.html was sealed a resealed rename of both was accepted. The page draws the name.
    d = copy(plans, "taskgraph", tmp_path)
    edit(d, "allocation.json", lambda doc: doc.update(spec="renamed"))
    edit(d, "plan.json", lambda doc: doc.update(spec="renamed"), resealed=True)
    refused(d, "report.html: not the page the verified plan.json")


def test_an_edit_after_a_verification_in_the_same_process_is_refused(plans, tmp_path):
    # The verifier keeps its last parse of graph.json, the binaries and allocation.json (plan solve
    # reads them twice): an edited file has other bytes, so it is parsed and refused again.
    d = copy(plans, "memory", tmp_path)
    verify_plan_dir(d)
    edit(d, "graph.json", lambda doc: next(op for op in doc["ops"] if op["type"] == "relu").update(type="gelu"),
         resealed=True)
    with pytest.raises(VerificationError, match="graph.json: ops 'mlp/act0': expected relu"):
        verify_plan_dir(d)
    t = copy(plans, "taskgraph", tmp_path)
    verify_plan_dir(t)
    edit(t, "allocation.json", lambda doc: doc["devices"]["fast0"].update(ops=1), resealed=True)
    with pytest.raises(VerificationError, match="allocation.json: devices.fast0.ops: expected 3"):
        verify_plan_dir(t)
    verify_plan_dir(plans["taskgraph"])  # the unedited directory still verifies


# --- report.md: redrawn from the verified directory -----------------------------------------------------------


def _bump_in_report(plan_dir: Path, prefix: str, pattern: str) -> int:
    """Add 1 to the number ``pattern``'s group matches on report.md's first line starting with ``prefix``
    where it matches (as a person editing a figure would); returns that line's number."""
    path = plan_dir / "report.md"
    lines = path.read_text().split("\n")
    i = next(k for k, line in enumerate(lines) if line.startswith(prefix) and re.search(pattern, line))
    match = re.search(pattern, lines[i])
    start, end = match.span(1)
    lines[i] = lines[i][:start] + str(int(match.group(1)) + 1) + lines[i][end:]
    path.write_text("\n".join(lines))
    return i + 1


@pytest.mark.parametrize("base, prefix, pattern", [
    ("taskgraph", "| objective |", r"(\d+)"),
    ("memory", "| gap |", r"(\d+)\.\d\d%"),
    ("taskgraph", "| fast0 |", r"mem (\d+) B of"),  # a device's replayed peak
    ("memory", "| peak live bytes, ", r"\| (\d+)\.\d\d MiB"),  # the memory section's figures
    ("memory", "- ", r"(\d+) DMAs"),
    ("memory", "- ", r"numeric replay: (\d+) tensors"),
    ("max-load", "| acc0 | accelerator |", r"(\d+) \| [\d.]+% \|$"),  # the max-load section's load
    ("max-load", "| one accelerator |", r"(\d+)"),
])
def test_a_resealed_report_md_figure_is_refused(plans, tmp_path, base, prefix, pattern):
    d = copy(plans, base, tmp_path)
    line = _bump_in_report(d, prefix, pattern)
    refused(d, "report.md: sha256 checksum")
    reseal(d)  # only the redraw from the verified files can tell now
    message = refused(d, f"report.md: line {line}: expected", "drawn from the verified plan.json")
    assert message.count(prefix) == 2, message  # the line as drawn and as found


def test_report_md_deleted_or_cut_short(plans, tmp_path):
    d = copy(plans, "taskgraph", tmp_path)
    text = (d / "report.md").read_text()
    (d / "report.md").write_text(text[:text.index("## Devices")].rstrip("\n"))
    reseal(d)
    refused(d, "report.md: line", "found the end of the file")
    (d / "report.md").unlink()
    refused(d, "report.md")


def test_a_resealed_route_record_is_refused_by_the_report_it_draws(plans, tmp_path):
    # solver.contiguous is a setting only the seal keeps; before report.md was redrawn a resealed
    # edit was accepted, though the report states it.
    d = copy(plans, "max-load", tmp_path)
    edit(d, "plan.json", lambda doc: doc["solver"].update(contiguous=True), resealed=True)
    refused(d, "report.md: line", "contiguous: no", "contiguous: yes")


def test_the_greedy_max_load_report_md_draws_is_the_heuristic_row(plans, tmp_path):
    # solver.baselines' greedy split was the one max-load baseline no row was compared with.
    greedy = "greedy (linear split + local search)"
    d = copy(plans, "max-load", tmp_path)
    edit(d, "plan.json", lambda doc: doc["solver"]["baselines"].update({greedy: 39}), resealed=True)
    refused(d, f"plan.json: baselines[1] '{greedy}'", "found 40")


@pytest.mark.parametrize("change, message", [
    (lambda s: s.update(replan={"reason": 5}), "plan.json solver: replan.reason"),
    (lambda s: s.pop("contiguous"), "plan.json: solver.contiguous/baselines"),
    (lambda s: s.update(warm_start={"ops": 2}), "plan.json solver: warm_start.ops_placed"),
    (lambda s: s.update(placement="given"), "plan.json: solver.placement_source"),
    (lambda s: s.update(name=["cpsat"]), "plan.json solver: name"),
])
def test_a_malformed_route_record_is_refused_by_name(plans, tmp_path, change, message):
    d = copy(plans, "max-load", tmp_path)
    edit(d, "plan.json", lambda doc: change(doc["solver"]), resealed=True)
    refused(d, message)


def test_score_warm_start_and_replan_directories_verify(plans, tmp_path):
    spec = tmp_path / "taskgraph.yaml"
    spec.write_text(yaml.safe_dump(_spec_dict("taskgraph")))
    source = plans["taskgraph"]
    fast = ["--quiet", "--time-limit", "2", "--workers", "1"]
    for args in (["score", str(spec), "--placement", str(source), "-o", str(tmp_path / "score")],
                 ["solve", str(spec), "--warm-start", str(source), "-o", str(tmp_path / "warm")]):
        result = runner.invoke(app, [*args, *fast])
        assert result.exit_code == 0, result.output
    stats = tmp_path / "stats.json"
    assert runner.invoke(app, ["simulate", str(source), "--slow", "fast0=2", "--stats-out", str(stats)]).exit_code == 0
    result = runner.invoke(app, ["replan", str(source), "--stats", str(stats), "--spec", str(spec), "-o",
                                 str(tmp_path / "replan"), "--min-gain", "0"])
    assert result.exit_code == 0, result.output
    heads = {"score": "## Placement given", "warm": "## Warm start", "replan": "## Re-placement"}
    for name, head in heads.items():
        assert head in (tmp_path / name / "report.md").read_text()
        assert runner.invoke(app, ["simulate", str(tmp_path / name)]).exit_code == 0
    report = (tmp_path / "score" / "report.md").read_text()
    assert f"placed every op as {source.name} says" in report
    # A given placement's source is drawn from plan.json: without it (a directory of an older plan
    # score, or the field deleted and resealed) the report cannot be redrawn, and is refused.
    edit(tmp_path / "score", "plan.json", lambda doc: doc["solver"].pop("placement_source"), resealed=True)
    refused(tmp_path / "score", "solver.placement_source", "re-run `plan score`")
    edit(tmp_path / "replan", "plan.json", lambda doc: doc["solver"]["replan"].update(predicted_new_cycles=1),
         resealed=True)
    refused(tmp_path / "replan", "report.md: line", "re-placed 1 cycles")


def test_gangs_the_islands_section_draws_start_where_the_replay_starts_them():
    from planner.plan import PlacedOp, Plan
    from planner.verify.documents import ReportRecords
    from planner.verify.report import _check_gangs

    ops = (PlacedOp("a#0", "d0", 0, 10, 5), PlacedOp("a#1", "d0", 0, 15, 5), PlacedOp("b", "d1", 0, 10, 5))
    plan = Plan("s", "latency", "FEASIBLE", 20, None, None, 20, 10**9, ops, ())
    base = {"a#0": "a", "a#1": "a", "b": "b"}

    def records(start: int) -> ReportRecords:
        split = {"solver": "s", "status": "OPTIMAL", "bottleneck_cycles": 1, "bound": 1, "portions": []}
        other = {"status": "FEASIBLE", "objective": 1, "bound": 1}
        return ReportRecords.model_validate({"islands": {
            "split": split, "cross_bytes": 0, "network_cycles": 0, "islands": [], "one_problem": other,
            "one_island": None, "gangs": [{"ops": ["a", "b"], "start_cycle": start}]}})

    _check_gangs(records(10), plan, base)  # a split op starts with its first instance
    with pytest.raises(VerificationError, match=r"solver.islands.gangs\[0\].start_cycle: expected \[10, 10\]"):
        _check_gangs(records(11), plan, base)
