"""The replay's fast path (planner/simulator/screen.py) against the record-by-record replay.

The screen may only say "valid" when the record-by-record replay finds no violation, and then
its result must be the same, field for field. Valid programs (hand-made memory plans with
views, DMAs, semaphores and transfers; a lowered transformer) must take the fast path, and
every corrupted binary (planted violations, then random field mutations) must either be
refused by both decoders with the same message, or be replayed by ``simulate`` exactly as the
record-by-record replay does.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random
import struct

import pytest

from planner.errors import BinaryFormatError
from planner.isa.binary import HEADER, RECORD, decode, decode_tables, encode
from planner.simulator import simulate, simulate_dir, simulate_programs
from planner.simulator.screen import screened_replay

from tests.planner.simulator.programs import prefetch_compute_evict, split_portions, two_devices

_FIELDS = ("opcode", "subop", "stream", "op", "start", "duration", "a", "b", "c", "d", "mem", "fast", "list",
           "reads", "writes")


def _encoded(programs) -> dict[str, bytes]:
    return {name: encode(p) for name, p in programs.items()}


@functools.lru_cache(maxsize=1)
def _lowered_transformer() -> dict[str, bytes]:
    """A one-layer transformer on the demo's hardware, scheduled by HEFT, lowered and addressed."""
    from benchmarks.replay import heft_binaries, transformer_spec
    from planner.spec import load_spec

    return heft_binaries(load_spec(transformer_spec(1)))


VALID = {
    "prefetch-compute-evict": lambda: _encoded({"d0": prefetch_compute_evict()}),
    "split-portions": lambda: _encoded({"d0": split_portions()}),
    "portions-read-whole": lambda: _encoded({"d0": split_portions(relu_reads_portions=True)}),
    "two-devices": lambda: _encoded(two_devices()),
    "lowered-transformer": _lowered_transformer,
}


def _slow(binaries: dict[str, bytes]):
    return simulate_programs({name: decode(data, name=name) for name, data in sorted(binaries.items())})


def _screened(binaries: dict[str, bytes]):
    return screened_replay({name: decode_tables(data, name=name) for name, data in sorted(binaries.items())})


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_binaries_take_the_fast_path_with_the_same_result(name):
    binaries = VALID[name]()
    slow = _slow(binaries)
    assert slow.valid and slow.instruction_count > 0
    assert _screened(binaries) is not None, "a valid program fell back to the record-by-record replay"
    fast = simulate(binaries)  # the screened result, then
    assert fast == slow
    assert fast.to_dict() == slow.to_dict()  # the same order of ops, transfers and DMAs too


def test_simulate_dir_takes_the_same_path(tmp_path):
    (tmp_path / "bin").mkdir()
    for name, data in _encoded(two_devices()).items():
        (tmp_path / "bin" / f"{name}.bin").write_bytes(data)
    assert simulate_dir(tmp_path) == _slow(_encoded(two_devices()))


def _replace(p, edit):
    return dataclasses.replace(p, instructions=tuple(edit(list(p.instructions))))


def _retimed(name, **fields):
    return lambda ins: [dataclasses.replace(i, **fields) if i.op == name else i for i in ins]


# One planted violation of each class; the record-by-record replay names it, simulate() must too.
PLANTED = {
    "overlapping buffers": ({"d0": prefetch_compute_evict(y_fast_addr=128)}, "overlap at cycle"),
    "beyond the level's capacity": ({"d0": prefetch_compute_evict(y_fast_addr=800)}, "capacity of 1024 bytes"),
    "view outside its parent": ({"d0": split_portions(y1_addr=500)}, "lies outside every live allocation"),
    "a dependency violated": ({"d0": split_portions(mm1_start=100)}, "dependency violation"),
    "a wrong timing": ({"d0": prefetch_compute_evict(mm_dur=26)}, "duration mismatch"),
    "a race": ({"d0": prefetch_compute_evict(evict_start=90)}, "while d0#"),
    "wrong roofline bytes": ({"d0": prefetch_compute_evict(mm_fast=0, mm_mem=576, mm_dur=144)}, "roofline bytes"),
    "a late transfer": ({**two_devices(), "d1": _replace(two_devices()["d1"], _retimed("r2", start_cycle=20))},
                        "before its SEND"),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_violations_are_refused_with_the_record_by_record_messages(name):
    programs, text = PLANTED[name]
    binaries = _encoded(programs)
    assert _screened(binaries) is None
    result = simulate(binaries)
    assert result == _slow(binaries)
    assert any(text in v for v in result.violations), result.violations


def _mutated(data: bytes, rng: random.Random) -> bytes:
    """``data`` with one field of one record, or one buffer-list entry or dimension, changed (a
    neighbour's value, +-1, or 0), checksum fixed."""
    if rng.random() < 0.25:
        return _table_mutated(data, rng)
    n = HEADER.unpack_from(data)[17]
    r, other = rng.randrange(n), rng.randrange(n)
    at = len(data) - (n - r) * RECORD.size
    values = list(RECORD.unpack_from(data, at))
    k = rng.randrange(len(_FIELDS))
    choice = rng.randrange(3)
    if choice == 0:
        values[k] = RECORD.unpack_from(data, len(data) - (n - other) * RECORD.size)[k]
    elif choice == 1:
        values[k] = max(0, values[k] + rng.choice((-1, 1)))
    else:
        values[k] = 0
    out = bytearray(data)
    try:
        RECORD.pack_into(out, at, *values)
    except Exception:  # a value out of the field's range: keep the original
        return data
    out[HEADER.size - 32:HEADER.size] = hashlib.sha256(bytes(out[:HEADER.size - 32]) + bytes(out[HEADER.size:])).digest()
    return bytes(out)


@pytest.mark.parametrize("name", sorted(VALID))
def test_random_corruptions_never_pass_the_screen_unless_the_replay_passes_them(name):
    rng = random.Random(11)
    binaries = VALID[name]()
    invalid = 0
    mutants = 60 if name == "lowered-transformer" else 150  # its replays take longer (3,000 records)
    for _ in range(mutants):
        victim = rng.choice(sorted(binaries))
        mutant = dict(binaries, **{victim: _mutated(binaries[victim], rng)})
        try:
            programs = {k: decode(v, name=k) for k, v in sorted(mutant.items())}
        except BinaryFormatError as e:
            with pytest.raises(BinaryFormatError) as fast_error:
                simulate(mutant)
            assert str(fast_error.value) == str(e)
            continue
        slow = simulate_programs(programs)
        assert _screened(mutant) is None or slow.valid, slow.violations[:3]
        assert simulate(mutant) == slow  # the screened result when the screen passed it
        invalid += not slow.valid
    assert invalid >= mutants // 6  # the mutations do break rules: the comparison above is not vacuous


def _table_mutated(data: bytes, rng: random.Random) -> bytes:
    """``data`` with one buffer-list entry (u32) or one operand dimension (u64) changed."""
    h = HEADER.unpack_from(data)
    levels, links, string_bytes, buffers, lists, kernels, operands, dims = (h[13], h[15], h[19], h[20], h[21], h[24],
                                                                           h[25], h[26])
    at_lists = HEADER.size + 24 * levels + 24 * links + string_bytes + 4 * buffers
    at_dims = at_lists + 4 * lists + 20 * kernels + 16 * operands
    table = [(at_lists, lists, "<I")] if lists else []
    table += [(at_dims, dims, "<Q")] if dims else []
    if not table:
        return data
    start, count, fmt = rng.choice(table)
    width = struct.calcsize(fmt)
    k = rng.randrange(count)
    value = struct.unpack_from(fmt, data, start + width * k)[0]
    value = rng.choice((0, value + 1, max(0, value - 1), struct.unpack_from(fmt, data, start + width * rng.randrange(count))[0]))
    out = bytearray(data)
    struct.pack_into(fmt, out, start + width * k, value)
    out[HEADER.size - 32:HEADER.size] = hashlib.sha256(bytes(out[:HEADER.size - 32]) + bytes(out[HEADER.size:])).digest()
    return bytes(out)
