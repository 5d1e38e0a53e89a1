"""The fast replay and decoder (issue 11, Build 4) report every violation class, with the same messages.

The replay now indexes each program once (records by opcode, event keys), recomputes each
distinct instruction's duration once, and the decoder checks all records with numpy before
building them. Each test plants one violation in a small hand-made program, among many
identical valid instructions, so a shortcut (a cached duration, a skipped record, a vector
check that misses a field) would hide it.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from planner.errors import BinaryFormatError
from planner.isa.binary import HEADER, RECORD, decode, encode
from planner.isa.instructions import TRANSFER_STREAM, Instruction, LevelInfo, LinkInfo, Opcode, Program
from planner.simulator import simulate_programs

LEVEL = LevelInfo("mem", 4096, 10**12)


def program(instrs, *, buffers=(), links=(), name="d0", streams=1) -> Program:
    end = max((i.end_cycle for i in instrs), default=0)
    return Program(name, "generic", 10**9, 10**9, 1, 1, 1, 0, (LEVEL,), 0, tuple(links), streams,
                   tuple(buffers), tuple(instrs) + (Instruction(Opcode.HALT, 0, end, 0),))


def tasks(n: int, cycles: int = 5) -> list[Instruction]:
    """``n`` identical TASKs of ``cycles`` cycles back to back on stream 0 (ops t0, t1, ...)."""
    return [Instruction(Opcode.TASK, 0, k * cycles, cycles, op=f"t{k}", a=cycles) for k in range(n)]


def test_a_repeated_instruction_with_a_wrong_duration_is_caught_after_valid_copies():
    instrs = tasks(50)
    instrs[37] = dataclasses.replace(instrs[37], duration_cycles=4)  # same operands as the 49 others
    instrs[38:] = [dataclasses.replace(i, start_cycle=i.start_cycle - 1) for i in instrs[38:]]
    violations = simulate_programs({"d0": program(instrs)}).violations
    assert violations == ("d0#37 TASK (t37): duration mismatch: encoded 4 cycles, the ISA formulas give 5",)


def test_an_untimeable_instruction_is_reported_each_time():
    bad = [Instruction(Opcode.VECTOR, 0, 10 * k, 10, op=f"v{k}", subop=99, a=4) for k in range(2)]
    violations = simulate_programs({"d0": program(bad)}).violations
    assert [v.split(":")[0] for v in violations] == ["d0#0 VECTOR (v0)", "d0#1 VECTOR (v1)"]
    assert all("cannot be timed" in v for v in violations)


def test_records_out_of_order_are_each_named():
    instrs = tasks(6)
    instrs[2], instrs[4] = instrs[4], instrs[2]  # starts 0, 5, 20, 15, 10, 25
    violations = simulate_programs({"d0": program(instrs)}).violations
    assert [v for v in violations if "out of order" in v] == [
        "d0#3 TASK (t3) starts at 15, before the previous record's 20: records out of order",
        "d0#4 TASK (t2) starts at 10, before the previous record's 15: records out of order"]


def _alloc(t, buf, size=64, pre=False):
    return Instruction(Opcode.ALLOC, 0, t, 0, subop=1 if pre else 0, a=buf, b=0, c=size)


def test_a_read_in_the_same_cycle_before_its_write_in_record_order():
    # w takes zero cycles at cycle 5: what it writes is ready at its point in the record order,
    # so r, which also starts at 5, must be listed after it.
    w = Instruction(Opcode.TASK, 0, 5, 0, op="w", a=0, writes=(1,))
    r = Instruction(Opcode.TASK, 0, 5, 5, op="r", a=5, reads=(1,), writes=(0,))
    head = [_alloc(0, 0), _alloc(0, 1)]
    assert simulate_programs({"d0": program(head + [w, r], buffers=("x", "y"))}).valid
    violations = simulate_programs({"d0": program(head + [r, w], buffers=("x", "y"))}).violations
    assert violations == ("d0#2 TASK (r): dependency violation: reads buffer 1 (y) at 5 before d0#3 TASK (w) "
                          "writes it, later in the record order of that cycle",
                          "d0#3 TASK (w) writes y [0, 64) at 5 while d0#2 TASK (r) reads y [0, 64) during [5, 10)")


def test_a_dependency_violation_in_time():
    w = Instruction(Opcode.TASK, 0, 0, 5, op="w", a=5, writes=(1,))
    r = Instruction(Opcode.TASK, 1, 3, 5, op="r", a=5, reads=(1,), writes=(0,))
    violations = simulate_programs({"d0": program([_alloc(0, 0), _alloc(0, 1), w, r], buffers=("x", "y"),
                                                  streams=2)}).violations
    assert violations == ("d0#3 TASK (r): dependency violation: reads buffer 1 (y) at 3, before it is ready at 5",
                          "d0#2 TASK (w) writes y [0, 64) during [0, 5) while d0#3 TASK (r) reads y [0, 64) "
                          "during [3, 8)")


def test_a_read_of_a_buffer_nothing_writes_and_a_use_after_free():
    instrs = [_alloc(0, 0), _alloc(0, 1),
              Instruction(Opcode.TASK, 0, 0, 5, op="r", a=5, reads=(1,), writes=(0,)),
              Instruction(Opcode.FREE, 0, 3, 0, a=0, b=0, c=64)]
    instrs.sort(key=lambda i: i.start_cycle)
    violations = simulate_programs({"d0": program(instrs, buffers=("x", "y"))}).violations
    assert "d0#2 TASK (r): reads buffer 1 (y), which nothing writes" in violations
    assert "d0#2 TASK (r): writes buffer 0 (x) until 5, but it is freed at 3" in violations


def test_a_memory_overflow_among_many_allocations():
    instrs = [_alloc(k, k, size=1024, pre=True) for k in range(5)]  # 5 KiB live in a 4 KiB level
    violations = simulate_programs({"d0": program(instrs, buffers=[f"b{k}" for k in range(5)])}).violations
    assert violations == ("d0: memory level mem holds 5120 bytes at cycle 4, over its capacity of 4096",)


def test_a_wait_on_a_semaphore_signalled_later():
    instrs = [Instruction(Opcode.TASK, 0, 0, 5, op="t0", a=5),
              Instruction(Opcode.WAIT, 0, 5, 0, a=7),
              Instruction(Opcode.SIGNAL, 0, 5, 0, op="t0", a=7),
              Instruction(Opcode.TASK, 0, 5, 5, op="t1", a=5)]
    violations = simulate_programs({"d0": program(instrs)}).violations
    assert violations == ("d0#1 WAIT: dependency violation: waits at 5 on semaphore 7, signalled only by "
                          "record #2, later in the record order",)


def test_a_link_conflict_between_two_binaries():
    link = LinkInfo(0, "l0", 10**9, 0)  # 1 byte per cycle

    def xfer(code, t, tid, peer):
        return Instruction(code, TRANSFER_STREAM, t, 100, op=f"x{tid}", a=0, b=100, c=tid, peer=peer)

    d0 = program([xfer(Opcode.SEND, 0, 0, "d1"), xfer(Opcode.SEND, 50, 1, "d1")], links=(link,))
    d1 = program([xfer(Opcode.RECV, 0, 0, "d0"), xfer(Opcode.RECV, 50, 1, "d0")], links=(link,), name="d1")
    violations = simulate_programs({"d0": d0, "d1": d1}).violations
    assert "link l0: transfer 1 starts at 50 while transfer 0 holds the link until 100" in violations
    assert "d0 transfer engine" not in " ".join(violations)  # SEND/RECV are not compute: no stream overlap


def test_an_op_run_twice_is_reported_once_per_extra_run():
    instrs = tasks(3)
    instrs[2] = dataclasses.replace(instrs[2], op="t0")
    violations = simulate_programs({"d0": program(instrs)}).violations
    assert violations == ("d0#2 TASK (t0): op 't0' runs twice (also on d0)",)


# The decoder: numpy finds the first bad record; its message is the record-by-record one.

def _with_record(data: bytes, r: int, **fields) -> bytes:
    """The binary with record ``r``'s fields changed and the checksum recomputed."""
    import hashlib

    names = ("opcode", "subop", "stream", "op", "start", "duration", "a", "b", "c", "d", "mem", "fast", "list",
             "reads", "writes")
    n_records = HEADER.unpack_from(data)[17]
    at = len(data) - (n_records - r) * RECORD.size
    values = dict(zip(names, RECORD.unpack_from(data, at)))
    values.update(fields)
    out = bytearray(data)
    RECORD.pack_into(out, at, *values.values())
    digest = hashlib.sha256(bytes(out[:HEADER.size - 32]) + bytes(out[HEADER.size:])).digest()
    out[HEADER.size - 32:HEADER.size] = digest
    return bytes(out)


@pytest.mark.parametrize("fields, message", [
    ({"opcode": 200}, "record 3: unknown opcode 200"),
    ({"list": 10**6}, "record 3: buffer list [1000000, 1000000) out of range"),
    ({"op": 10**6}, "record 3 op names string 1000000, table has"),
    ({"opcode": int(Opcode.ALLOC), "a": 99}, "record 3: ALLOC names buffer 99 / level 0 out of range"),
    ({"opcode": int(Opcode.VECTOR), "subop": 99}, "record 3: unknown vector subop 99"),
    ({"opcode": int(Opcode.DMA), "b": 5}, "record 3: DMA names a level out of range"),
    ({"opcode": int(Opcode.SEND), "d": 0, "a": 9}, "record 3: SEND on link 9, which the link table lacks"),
    ({"opcode": int(Opcode.RECV), "d": 10**6}, "record 3 peer names string 1000000, table has"),
])
def test_the_decoder_names_the_first_bad_record(fields, message):
    data = encode(program(tasks(8)))
    assert decode(data) == program(tasks(8))
    bad = _with_record(_with_record(data, 6, opcode=201), 3, **fields)  # record 6 is bad too, later
    with pytest.raises(BinaryFormatError, match=re.escape(message)):
        decode(bad)
