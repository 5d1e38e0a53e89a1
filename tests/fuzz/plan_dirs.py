"""Tampered plan directories: a structure-aware mutator (hypothesis) and the invariant of `plan simulate`.

Each example copies a directory `plan solve` wrote and changes it one way: a field of
plan.json, memory.json, allocation.json or graph.json deleted, duplicated, retyped or
replaced (null, strings, huge numbers, deep nesting, another field's value); bytes of any
file truncated, flipped or made non-UTF-8; an instruction of a binary changed and the binary
re-encoded (a well-formed binary that says something else); report.html's text edited (a figure, a
name, a bar) and resealed, and report.md's (the objective, a bound, a gap, a peak, a memory or route
section's figure, a line dropped or added) likewise (only their redraws from the verified files can
refuse them); a file deleted,
added, replaced by a directory, a symbolic link or a FIFO, or swapped in from another plan; plan.json re-serialized (key
order, indentation: the same document). Half the JSON edits, and every binary edit, are *resealed*: the
adversary also recomputes the sha256 of every file and plan.json's seal, so only the
semantic checks can catch them.

Invariant of ``plan simulate DIR``: no traceback, no hang (60 s), exit 0 or 2, a message
on exit 2, and

* exit 0 exactly when the directory is equivalent to the one `plan solve` wrote (the
  same bytes for every file but plan.json, the same canonical JSON for plan.json, nothing
  added under ``bin/``);
* a resealed edit exits 0 only when it changed a figure no replay recomputes
  (:data:`UNVERIFIABLE`: kept honest by the seal alone).

Run ``python -m tests.fuzz.plan_dirs --examples 1000`` for a long run (it prints the
counts); the default test suite runs a short one (tests/fuzz/test_plan_dirs.py).
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import os
import re
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
HANG_S = 60

__all__ = ["build_bases", "reseal", "canonical", "equivalent", "run_simulate", "Case", "mutate", "check",
           "UNVERIFIABLE"]

# Figures of the files no replay, graph or other file recomputes: the seal alone keeps them
# honest, so a resealed edit of one is accepted. fnmatch patterns over "<file>:<json path>", list
# indices written ".N".
UNVERIFIABLE = (
    "plan.json:spec", "allocation.json:spec",  # the spec's name (allocation.json must agree with plan.json)
    "plan.json:solver", "plan.json:solver.*",  # settings and the solver's own figures
    "plan.json:heuristic_objective",  # the baseline's objective: another plan's, not in the directory
    "plan.json:baselines.N.status", "plan.json:baselines.N.bound",  # other runs' (kept consistent, not redone)
    "plan.json:status",  # OPTIMAL needs bound == objective; FEASIBLE with a closed gap is weaker but true
    "plan.json:bound", "plan.json:gap",  # a proof no replay redoes: bound <= objective and the gap formula are checked
    "plan.json:resources.devices*",  # determined before running; the graph-derived parts are checked
    "plan.json:wall_time_s",
    "plan.json:numeric.*",  # what the numeric replay found: `plan simulate --numeric` checks it, not the default
    # memory.json stats: the solvers' figures in their own models, which the verifier does not rebuild
    # (the level model needs the spec's hardware and the schedule before memory planning; neither is
    # in the directory). Checked: the capacity and footprint (the binary), the level makespan, bound
    # and gap against each other (verify.memory.check_level_claims), by_address against itself.
    "memory.json:devices.*.stats.level_solver", "memory.json:devices.*.stats.level_status",  # the solve's words
    "memory.json:devices.*.stats.level_stopped_by",
    "memory.json:devices.*.stats.greedy_*",  # the greedy level plan's figures: another plan, not in the directory
    "memory.json:devices.*.stats.all_*_makespan_device_cycles",  # everything in main (or at home), in the model
    "memory.json:devices.*.stats.fast_live_lower_bound_bytes",  # bounds of the offset problem (rounded sizes)
    "memory.json:devices.*.stats.fast_peak_bound_bytes", "memory.json:devices.*.stats.fast_offsets_*",
    "memory.json:devices.*.stats.fast_peak_greedy_by_size_bytes",  # greedy-by-size's packing, not kept
    "memory.json:devices.*.stats.split_factors", "memory.json:devices.*.stats.reserve_bytes",  # the model's inputs
    "memory.json:devices.*.stats.by_address*", "memory.json:devices.*.stats.stream_plan_*",  # several streams
    "memory.json:devices.*.stats.plan_bound_device_cycles", "memory.json:devices.*.stats.levels*",  # N levels
    "memory.json:devices.*.stats.homes*",
    "memory.json:devices.*.stats.heads_tails_*",  # a cross-device re-solve's: only bound <= objective checked
    # (the level makespan is checked through its gap: where a solve gave no bound, the seal alone keeps it)
    "memory.json:skipped.*",  # why a device was not memory-planned (prose)
    # other plans' replayed makespans: those plans (the schedule before memory planning, the greedy
    # level plan) are not in the directory to replay; the chosen one is checked (the replay's, the least)
    "memory.json:baselines.*",
    "graph.json:ops.N.model", "graph.json:ops.N.cycles*", "graph.json:tensors.N.kind",
    "graph.json:ops.N.attrs*",  # of ops without kernels (tasks); kernels' attributes are checked
)

MAX_LOAD_SPEC: dict[str, Any] = {
    "version": 1, "name": "chain",
    "hardware": {"devices": [{"name": "acc", "profile": "generic", "count": 2}],
                 "topology": {"kind": "all-to-all", "bandwidth": "1 GB/s"}},
    "models": [{"name": "m", "graph": {
        "tensors": [{"name": "a", "shape": [10], "dtype": "uint8"}],
        "ops": [{"name": "x", "type": "task", "outputs": ["a"], "cycles": {"acc": 30}},
                {"name": "y", "type": "task", "inputs": ["a"], "cycles": {"acc": 30}}]}}],
    "objective": "max-load", "solver": {"time_limit": "5 s", "workers": 1}}


def _spec_dict(name: str) -> Any:
    import yaml

    return yaml.safe_load((ROOT / "specs" / f"{name}.yaml").read_text())


def _solve(spec: Any, out: Path) -> Path:
    import yaml
    from typer.testing import CliRunner

    from planner.cli import app

    spec_path = out.parent / f"{out.name}.yaml"
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = CliRunner().invoke(app, ["solve", str(spec_path), "-o", str(out), "--quiet", "--time-limit", "5",
                                      "--workers", "1"])
    assert result.exit_code == 0, result.output
    return out


def build_bases(root: Path) -> dict[str, tuple[Path, Path]]:
    """Plan directories to tamper with, each with another plan of the same shape to swap files from.

    ``taskgraph``: two devices and transfers; ``memory``: a memory plan (memory.json);
    ``max-load``: the max-load objective.
    """
    memory = _spec_dict("memory-mlp")
    other_memory = json.loads(json.dumps(memory))
    other_memory["models"][0]["generator"]["batch"] = 8
    task = _spec_dict("taskgraph")
    other_task = json.loads(json.dumps(task))
    other_task["hardware"]["links"][0]["latency"] = "50 cycles"
    other_max = json.loads(json.dumps(MAX_LOAD_SPEC))
    other_max["hardware"]["topology"]["bandwidth"] = "2 GB/s"
    pairs = {"taskgraph": (task, other_task), "memory": (memory, other_memory), "max-load": (MAX_LOAD_SPEC, other_max)}
    return {name: (_solve(a, root / name), _solve(b, root / f"{name}-other")) for name, (a, b) in pairs.items()}


def canonical(data: bytes) -> str | None:
    """plan.json's canonical JSON (sorted keys, no spaces), or None if it is not clean JSON."""
    from planner.errors import VerificationError
    from planner.verify import parse_json

    try:
        return json.dumps(parse_json(data, "plan.json"), sort_keys=True, separators=(",", ":"))
    except VerificationError:
        return None


def _files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def equivalent(original: Path, tampered: Path) -> bool:
    """Whether ``tampered`` holds the plan `plan solve` wrote in ``original`` (see the module notes).

    The plan's files are plan.json and the files it lists; others (a user's notes, an output
    marker) are not the plan's, except that nothing may be added under ``bin/``.
    """
    old, new = _files(original), _files(tampered)
    plan_files = {"plan.json", *json.loads((original / "plan.json").read_text())["files"]}
    for name in plan_files:
        path, other = old[name], new.get(name)
        if other is None or other.is_symlink() or not other.is_file():
            return False
        if name == "plan.json":
            if canonical(other.read_bytes()) != canonical(path.read_bytes()):
                return False
        elif other.read_bytes() != path.read_bytes():
            return False
    return not any(n.startswith("bin/") and n not in old for n in new)


def reseal(plan_dir: Path) -> None:
    """What an adversary does after an edit: recompute every listed file's sha256 and plan.json's seal."""
    from planner.plan import seal_of
    from planner.verify.manifest import sha256_hex

    path = plan_dir / "plan.json"
    try:
        doc = json.loads(path.read_text())
    except (ValueError, OSError, RecursionError):
        return
    if not isinstance(doc, dict):
        return
    files = doc.get("files")
    if isinstance(files, dict):
        for name in list(files):
            f = plan_dir / str(name)
            if f.is_file() and not f.is_symlink():
                files[name] = sha256_hex(f.read_bytes())
    try:
        doc["seal"] = seal_of(doc)
    except (TypeError, ValueError):
        return
    path.write_text(json.dumps(doc, indent=2) + "\n")


@dataclass
class Case:
    """One tampering: what was done, and, for a resealed JSON edit, the field it touched."""

    kind: str
    detail: str
    resealed_field: str | None = None


def run_simulate(plan_dir: Path) -> tuple[int, str, BaseException | None]:
    """``plan simulate DIR`` in-process: (exit code, output, unexpected exception); a hang raises TimeoutError."""
    from typer.testing import CliRunner

    from planner.cli import app

    def alarm(signum, frame):
        raise TimeoutError(f"plan simulate ran past {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_S)
    try:
        result = CliRunner().invoke(app, ["simulate", str(plan_dir)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    exc = result.exception if result.exception is not None and not isinstance(result.exception, SystemExit) else None
    if isinstance(exc, TimeoutError):
        raise exc
    return result.exit_code, result.output, exc


# --- mutations -------------------------------------------------------------------------------------------------

_JSON_FILES = ("plan.json", "memory.json", "allocation.json", "graph.json")


def _paths(value: Any, prefix: str = "") -> list[tuple[str, list]]:
    """Every (printable path, key list) in a JSON value, the root included."""
    out = [(prefix, [])]
    todo = [(value, prefix, [])]
    while todo:
        item, text, keys = todo.pop()
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for k, v in children:
            t = f"{text}[{k}]" if isinstance(k, int) else (f"{text}.{k}" if text else str(k))
            out.append((t, keys + [k]))
            todo.append((v, t, keys + [k]))
    return out


def _replacement(data: st.DataObject, current: Any, donor: list[Any]) -> Any:
    choices = [None, "x", "", True, -1, 0, 10**30, 1.5, 1e308, [], {}, "9" * 40]
    if isinstance(current, bool):
        choices.append(not current)
    elif isinstance(current, int):
        choices += [current + 1, current - 1, current * 2, current // 2, current + 100]
    elif isinstance(current, float):
        choices += [current + 1e-12, current * 2, 0, 0.0]
    elif isinstance(current, str):
        choices += [current + "x", current.upper(), "bogus"]
    if donor:
        choices.append(data.draw(st.sampled_from(donor), label="donor"))
    return data.draw(st.sampled_from(choices), label="value")


def _json_edit(data: st.DataObject, plan_dir: Path, name: str, resealed: bool) -> Case:
    path = plan_dir / name
    doc = json.loads(path.read_text())
    paths = _paths(doc)
    text, keys = data.draw(st.sampled_from(paths[1:]), label="field")
    parent = doc
    for k in keys[:-1]:
        parent = parent[k]
    last = keys[-1]
    op = data.draw(st.sampled_from(["delete", "replace", "duplicate", "nest"]), label="op")
    if op == "delete":
        del parent[last]
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(last, json.loads(json.dumps(parent[last])))
    elif op == "nest":
        parent[last] = "__NEST__"
    else:
        donor = [v for _, ks in paths[1:40] for v in [_get(doc, ks)] if not isinstance(v, (dict, list))]
        parent[last] = _replacement(data, parent[last], donor)
    raw = json.dumps(doc, indent=2) + "\n"
    if op == "nest":  # deeper than a plan file ever nests, or than Python's own parser goes
        depth = data.draw(st.sampled_from([40, 5000]), label="depth")
        raw = raw.replace('"__NEST__"', "[" * depth + "]" * depth, 1)
    elif op == "duplicate" and isinstance(parent, dict):  # a key given twice: only as text
        key = json.dumps(str(last))
        raw = raw.replace(f"{key}:", f"{key}: {json.dumps(parent[last])}, {key}:", 1)
    path.write_text(raw)
    if resealed:
        reseal(plan_dir)
    return Case(f"json-{op}{'-resealed' if resealed else ''}:{name}", text, f"{name}:{text}" if resealed else None)


def _get(doc: Any, keys: list) -> Any:
    for k in keys:
        doc = doc[k]
    return doc


def _byte_edit(data: st.DataObject, plan_dir: Path) -> Case:
    files = sorted(_files(plan_dir))
    name = data.draw(st.sampled_from(files), label="file")
    path = plan_dir / name
    raw = bytearray(path.read_bytes())
    op = data.draw(st.sampled_from(["truncate", "flip", "append", "non-utf8", "empty", "huge"]), label="op")
    if op == "truncate" and raw:
        raw = raw[:data.draw(st.integers(0, len(raw) - 1), label="at")]
    elif op == "flip" and raw:
        i = data.draw(st.integers(0, len(raw) - 1), label="at")
        raw[i] ^= data.draw(st.integers(1, 255), label="mask")
    elif op == "append":
        raw += data.draw(st.sampled_from([b"\x00", b" ", b"\n", b"{}", b"garbage"]), label="tail")
    elif op == "non-utf8":
        raw[len(raw) // 2:len(raw) // 2] = b"\xff\xfe"
    elif op == "empty":
        raw = bytearray()
    elif op == "huge":
        path.write_bytes(b"")
        with open(path, "r+b") as f:  # sparse: past every size limit without the disk space
            f.truncate((1 << 30) + 1)
        return Case("bytes-huge", name)
    path.write_bytes(bytes(raw))
    return Case(f"bytes-{op}", name)


def _file_op(data: st.DataObject, plan_dir: Path, other: Path) -> Case:
    files = sorted(_files(plan_dir))
    name = data.draw(st.sampled_from(files), label="file")
    path = plan_dir / name
    op = data.draw(st.sampled_from(["delete", "swap", "directory", "symlink", "fifo", "add-bin", "add-note",
                                    "reformat"]), label="op")
    if op == "delete":
        path.unlink()
    elif op == "swap":
        donor = other / name
        if not donor.is_file():
            return Case("file-swap-none", name)
        shutil.copyfile(donor, path)
    elif op == "directory":
        path.unlink()
        path.mkdir()
    elif op == "symlink":
        path.unlink()
        target = data.draw(st.sampled_from(["/dev/zero", str(other / name), "/nonexistent"]), label="target")
        os.symlink(target, path)
    elif op == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif op == "add-bin":
        shutil.copyfile(next((plan_dir / "bin").glob("*.bin")), plan_dir / "bin" / "stray0.bin")
        return Case("file-add-bin", "bin/stray0.bin")
    elif op == "add-note":
        (plan_dir / "notes.txt").write_text("mine\n")
        return Case("file-add-note", "notes.txt")
    else:  # the same plan.json document, other key order and indentation
        doc = json.loads((plan_dir / "plan.json").read_text())
        (plan_dir / "plan.json").write_text(json.dumps(dict(reversed(list(doc.items()))), indent=None))
        return Case("file-reformat", "plan.json")
    return Case(f"file-{op}", name)


def _binary_edit(data: st.DataObject, plan_dir: Path) -> Case:
    """A binary decoded, one instruction field changed, re-encoded and resealed: a well-formed file
    that says something else (only the replay and the semantic checks can refuse it)."""
    import dataclasses

    from planner.isa.binary import decode, encode

    path = data.draw(st.sampled_from(sorted((plan_dir / "bin").glob("*.bin"))), label="binary")
    program = decode(path.read_bytes())
    i = data.draw(st.integers(0, len(program.instructions) - 1), label="instruction")
    ins = program.instructions[i]
    field = data.draw(st.sampled_from(["start_cycle", "duration_cycles", "stream", "a", "b", "c", "d", "op",
                                       "reads", "writes", "mem_bytes", "fast_bytes", "peer"]), label="field")
    old = getattr(ins, field)
    if isinstance(old, str):
        new = data.draw(st.sampled_from(["", "x", old + "#9", "bogus"]), label="value")
    elif isinstance(old, tuple):
        new = data.draw(st.sampled_from([(), old + (0,), old + (10**6,), old[:-1]]), label="value")
    else:
        new = data.draw(st.sampled_from([old + 1, max(0, old - 1), 0, 2**31, 65535, 2**40]), label="value")
    try:
        edited = dataclasses.replace(program, instructions=(*program.instructions[:i],
                                                            dataclasses.replace(ins, **{field: new}),
                                                            *program.instructions[i + 1:]))
        path.write_bytes(encode(edited))
    except (ValueError, OverflowError, TypeError, KeyError, IndexError, Exception) as e:  # not encodable
        return Case("binary-unencodable", f"{path.name} #{i} {field}={new!r}: {type(e).__name__}")
    reseal(plan_dir)
    return Case("binary-resealed", f"{path.name} #{i} {ins.opcode.name}.{field}={new!r}")


_HTML_EDITS = (("OPTIMAL", "FEASIBLE"), ("</h1>", " (edited)</h1>"), ('class="bar op"', 'class="bar"'),
               ("<title>plan", "<title>plan!"), ("%", "%%"), ("1", "7"))


def _html_edit(data: st.DataObject, plan_dir: Path) -> Case:
    """report.html edited like a person would (a status, a figure, a bar, a title) and resealed."""
    path = plan_dir / "report.html"
    page = path.read_text(encoding="utf-8")
    present = [(a, b) for a, b in _HTML_EDITS if a in page]
    old, new = data.draw(st.sampled_from(present), label="edit")
    at = data.draw(st.integers(0, page.count(old) - 1), label="occurrence")
    start = -1
    for _ in range(at + 1):
        start = page.index(old, start + 1)
    path.write_text(page[:start] + new + page[start + len(old):], encoding="utf-8")
    reseal(plan_dir)
    return Case("html-resealed", f"{old!r} -> {new!r} #{at}")


_REPORT_LINE_EDITS = ("bump", "drop", "duplicate", "blank", "append")


def _report_edit(data: st.DataObject, plan_dir: Path) -> Case:
    """report.md edited like a person would and resealed: a number on a line changed (a figure of the
    objective, bound, gap, a device's peak, a memory or route section), a word swapped, a line dropped,
    repeated, blanked or added."""
    path = plan_dir / "report.md"
    lines = path.read_text(encoding="utf-8").split("\n")
    numbered = [i for i, line in enumerate(lines) if re.search(r"\d", line)]
    op = data.draw(st.sampled_from(_REPORT_LINE_EDITS + ("word",)), label="op")
    i = data.draw(st.sampled_from(numbered if op == "bump" else range(len(lines))), label="line")
    if op == "bump":
        numbers = list(re.finditer(r"\d+", lines[i]))
        m = numbers[data.draw(st.integers(0, len(numbers) - 1), label="number")]
        value = int(m.group()) + data.draw(st.sampled_from([1, -1, 9, 1000]), label="delta")
        new = str(value if value >= 0 else 1)
        lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
    elif op == "drop":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "blank":
        lines[i] = "" if lines[i] else " "
    elif op == "append":
        lines.insert(i, "- checked by hand: the plan is optimal.")
    else:
        old, new = data.draw(st.sampled_from([("OPTIMAL", "FEASIBLE"), ("FEASIBLE", "OPTIMAL"), ("cycles", "us"),
                                              ("memory plan", "main memory"), ("|", "¦")]), label="word")
        if old not in lines[i]:
            lines[i] += " " + new
        else:
            lines[i] = lines[i].replace(old, new, 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    reseal(plan_dir)
    return Case(f"report-{op}-resealed", f"line {i + 1}")


def mutate(data: st.DataObject, plan_dir: Path, other: Path) -> Case:
    """Apply one drawn tampering to ``plan_dir`` (``other``: a plan to swap files from)."""
    family = data.draw(st.sampled_from(["json", "json", "json-resealed", "json-resealed", "bytes", "file",
                                        "binary", "html", "report"]), label="family")
    if family == "binary":
        return _binary_edit(data, plan_dir)
    if family == "html":
        return _html_edit(data, plan_dir)
    if family == "report":
        return _report_edit(data, plan_dir)
    if family.startswith("json"):
        present = [n for n in _JSON_FILES if (plan_dir / n).is_file()]
        return _json_edit(data, plan_dir, data.draw(st.sampled_from(present), label="file"), family != "json")
    if family == "bytes":
        return _byte_edit(data, plan_dir)
    return _file_op(data, plan_dir, other)


def _unverifiable(field: str, original: Path) -> bool:
    field = re.sub(r"\[\d+\]", ".N", field)
    return any(fnmatch.fnmatchcase(field, pattern) for pattern in UNVERIFIABLE) or _other_plans_figure(field, original)


def _other_plans_figure(field: str, original: Path) -> bool:
    """memory.json's figures of a plan other than the chosen one: like its baseline, the seal alone keeps
    them (that plan is not in the directory to replay); the chosen plan's figures are checked, and must
    all be there."""
    if not field.startswith("memory.json:figures.") or not (original / "memory.json").is_file():
        return False
    chosen = "memory.json:figures." + json.loads((original / "memory.json").read_text())["choice"]
    return field != chosen and not field.startswith(chosen + ".")


def check(original: Path, tampered: Path, case: Case) -> str:
    """Run ``plan simulate`` on ``tampered`` and assert the invariant; returns the outcome's class."""
    same = equivalent(original, tampered)
    code, output, exc = run_simulate(tampered)
    assert exc is None, f"{case}: {type(exc).__name__}: {exc}"
    assert "Traceback" not in output, f"{case}: traceback\n{output}"
    assert code in (0, 2), f"{case}: exit {code}\n{output}"
    if code == 2:
        assert output.startswith("error: ") and len(output.strip()) > len("error: "), f"{case}: {output!r}"
        assert not same, f"{case}: an equivalent directory was refused: {output}"
        return "refused"
    if same:
        return "equivalent, accepted"
    assert case.resealed_field is not None and _unverifiable(case.resealed_field, original), \
        f"{case}: a tampered directory was accepted"
    return "resealed unverifiable figure, accepted"


def fuzz(bases: dict[str, tuple[Path, Path]], examples: int, seed: int | None = None,
         on_result: Callable[[str, Case, str], None] | None = None) -> None:
    """Run ``examples`` tampered directories per base directory through :func:`check`."""
    scratch = Path(tempfile.mkdtemp(prefix="plan-fuzz-"))

    @settings(max_examples=examples, deadline=None, database=None, derandomize=seed is not None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data(), base=st.sampled_from(sorted(bases)))
    def one(data, base):
        original, other = bases[base]
        tampered = scratch / "case"
        if tampered.exists():
            shutil.rmtree(tampered)
        shutil.copytree(original, tampered, symlinks=True)
        case = mutate(data, tampered, other)
        outcome = check(original, tampered, case)
        if on_result is not None:
            on_result(base, case, outcome)

    try:
        one()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000, help="tampered directories to check")
    args = parser.parse_args(argv)
    counts: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    unverifiable: collections.Counter = collections.Counter()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="plan-fuzz-bases-") as root:
        bases = build_bases(Path(root))

        def record(base: str, case: Case, outcome: str) -> None:
            counts[outcome] += 1
            kinds[(case.kind.split(":")[0], outcome)] += 1
            if outcome.startswith("resealed"):
                unverifiable[case.resealed_field or "?"] += 1

        fuzz(bases, args.examples, on_result=record)
    total = sum(counts.values())
    print(f"{total} tampered directories in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{n} {k}" for k, n in counts.most_common()) + "; 0 tracebacks, 0 hangs, 0 exits 3")
    for (kind, outcome), n in sorted(kinds.items()):
        print(f"  {kind:28s} {outcome:40s} {n}")
    if unverifiable:
        print("resealed edits accepted (figures only the seal protects): "
              + ", ".join(f"{f} ({n})" for f, n in sorted(unverifiable.items())))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
