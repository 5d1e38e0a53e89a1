"""The documented input limits: every count, size and magnitude a spec may hold.

A limit exists so that a spec is refused with a message *before* it costs minutes or
gigabytes, and so that every integer the later stages compute fits where it goes
(CP-SAT's 64-bit arithmetic, the binary format's 64-bit fields). Each limit is chosen
so that a spec at the limit still loads within a few hundred MB, while real models fit:
the graph IR costs about 2 KB per op (Tensor and Op objects, networkx's adjacency), and a
spec's validated document about as much again, so 10^6 ops would need several GB before
any solver ran; 2^17 ops hold the Placement issue's target (10^5 ops) and the largest
public DNN graphs the planner reads (BERT-L training, 2,012 ops) with room to spare.
``benchmarks/spec_limits.py`` measures specs at the limits.

:data:`LIMITS` is the table ``docs/architecture.md`` shows ("Input limits"); a test
keeps the two equal. The reading limits (file size, nesting, values) are in
:mod:`planner.reader`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.reader import DEFAULT_READ_LIMITS

__all__ = [
    "Limit", "LIMITS", "limits_table",
    "MAX_NAME_LENGTH", "MAX_OP_NAME_LENGTH", "MAX_OPS", "MAX_TENSORS", "MAX_OP_REFERENCES", "MAX_OP_IO",
    "MAX_ATTRS_BYTES", "MAX_DEVICES",
    "MAX_STREAMS", "MAX_LINKS", "MAX_MEMORY_LEVELS", "MAX_RANK", "MAX_DIM", "MAX_TENSOR_ELEMENTS", "MAX_BYTES",
    "MAX_BANDWIDTH", "MAX_FREQUENCY", "MAX_CYCLES", "MAX_TIME_LIMIT_S", "MAX_WORKERS", "MAX_SEED",
    "MAX_DURATION_TABLE", "MAX_COST_TABLE", "MAX_TRANSFER_TABLE", "MAX_PATTERN_WORK", "MAX_SPLIT_FACTOR", "MAX_LIST",
]

MAX_NAME_LENGTH = 64            # spec, model, device, level and link names (they become file names)
MAX_OP_NAME_LENGTH = 256        # op and tensor names, before the "<model>/" prefix
MAX_OPS = 2**17                 # ops of all models together (131,072)
MAX_TENSORS = 2**18             # tensors of all models together
MAX_OP_REFERENCES = 2**19       # op inputs + outputs + after entries, all ops together
MAX_OP_IO = 4096                # inputs, outputs or after entries of one op (the binary counts them in 16 bits)
MAX_ATTRS_BYTES = 32 * 2**10    # one op's attributes as JSON (a string of the binary's string table)
MAX_DEVICES = 256               # device instances (count summed over kinds)
MAX_STREAMS = 64                # streams of one device
MAX_LINKS = 4096                # links, explicit and from the topology
MAX_MEMORY_LEVELS = 8           # memory levels of one device
MAX_RANK = 8                    # dimensions of a tensor shape
MAX_DIM = 2**31 - 1             # one dimension (also generator sizes: width, seq, image...)
MAX_TENSOR_ELEMENTS = 2**36     # elements of one tensor (68.7e9: 550 GB in fp64)
MAX_BYTES = 2**50               # any size: memory capacity, memory limit, alignment (1 PiB)
MAX_BANDWIDTH = 2**50           # bytes per second (1.1 PB/s)
MAX_FREQUENCY = 10**12          # hertz (1 THz): a clock
MAX_CYCLES = 2**40              # one op's or one transfer's duration, and a latency (1.1e12 cycles)
MAX_TIME_LIMIT_S = 10**6        # the solver's wall-clock limit (11.6 days)
MAX_WORKERS = 128               # solver worker threads
MAX_SEED = 2**31 - 1            # CP-SAT's random seed is a 32-bit integer
MAX_DURATION_TABLE = 2**24      # ops x devices: the scheduling problem's duration table
MAX_COST_TABLE = 2**21          # ops x device kinds: the cost model's table (each entry costed)
MAX_TRANSFER_TABLE = 2**23      # graph edges x links: the scheduling problem's transfer table
MAX_PATTERN_WORK = 2**24        # glob patterns (pins, colocation) x ops: fnmatch calls
MAX_SPLIT_FACTOR = 2**16        # one memory split factor
MAX_LIST = 64                   # split factors; memory levels and pins per entry are bounded above


@dataclass(frozen=True, slots=True)
class Limit:
    """One documented limit: what it bounds, its value and why.

    Examples
    --------
    >>> LIMITS[0].what, LIMITS[0].value
    ('spec file size', '16 MiB')
    """

    what: str
    value: str
    why: str


LIMITS: tuple[Limit, ...] = (
    Limit("spec file size", f"{DEFAULT_READ_LIMITS.max_bytes // 2**20} MiB",
          "read before parsing; an inline graph of 10^5 ops is about 11 MiB"),
    Limit("nesting depth", f"{DEFAULT_READ_LIMITS.max_depth}", "a spec needs about 8 levels"),
    Limit("values in one document", f"{DEFAULT_READ_LIMITS.max_values:,}",
          "scalars, mappings and sequences, every YAML alias counted at its expanded size"),
    Limit("name length", f"{MAX_NAME_LENGTH}", "spec, model, device, level and link names: letters, digits, "
          "'_', '.', '-', starting with a letter, digit or '_' (they become file names)"),
    Limit("op and tensor name length", f"{MAX_OP_NAME_LENGTH}", "before the model prefix; no control characters"),
    Limit("ops", f"{MAX_OPS:,}", "all models together; about 2 KB each in the graph IR"),
    Limit("tensors", f"{MAX_TENSORS:,}", "all models together"),
    Limit("op references", f"{MAX_OP_REFERENCES:,}", "inputs + outputs + after, all ops together"),
    Limit("inputs, outputs or after of one op", f"{MAX_OP_IO:,}", "each list"),
    Limit("one op's attributes", "32 KiB", "as JSON; each a finite number, a string, a boolean or a flat list"),
    Limit("device instances", f"{MAX_DEVICES}", "count summed over device kinds"),
    Limit("streams per device", f"{MAX_STREAMS}", ""),
    Limit("links", f"{MAX_LINKS:,}", "explicit and from the topology (all-to-all over n devices: n(n-1)/2)"),
    Limit("memory levels per device", f"{MAX_MEMORY_LEVELS}", ""),
    Limit("ops x devices", f"{MAX_DURATION_TABLE:,}", "the scheduling problem's table of durations"),
    Limit("ops x device kinds", f"{MAX_COST_TABLE:,}", "every op is costed on every kind when the spec loads"),
    Limit("graph edges x links", f"{MAX_TRANSFER_TABLE:,}", "the scheduling problem's table of transfer times"),
    Limit("op-name patterns x ops", f"{MAX_PATTERN_WORK:,}", "every glob in pins and colocation groups is "
          "matched against every op name"),
    Limit("shape rank", f"{MAX_RANK}", ""),
    Limit("one dimension", f"2^31 - 1", "also generator sizes (width, d_model, seq, image, batch...)"),
    Limit("tensor elements", "2^36", "one tensor (68.7e9 elements)"),
    Limit("sizes", "2^50 B (1 PiB)", "capacity, memory limit, alignment"),
    Limit("bandwidth", "2^50 B/s", "at least 1 B/s"),
    Limit("clock", "1 THz", "at least 1 Hz"),
    Limit("cycles", "2^40", "an op's explicit or modelled duration, a transfer, a latency"),
    Limit("time limit", f"{MAX_TIME_LIMIT_S:,} s", "finite and > 0 (spec and --time-limit)"),
    Limit("workers", f"{MAX_WORKERS}", ">= 1 (spec and --workers)"),
    Limit("seed", "2^31 - 1", ">= 0; CP-SAT's seed is a 32-bit integer (spec and --seed)"),
    Limit("split factor", f"{MAX_SPLIT_FACTOR:,}", f"at most {MAX_LIST} factors"),
)


def limits_table() -> str:
    """The limits as the Markdown table of ``docs/architecture.md``.

    Examples
    --------
    >>> limits_table().splitlines()[0]
    '| input | limit | notes |'
    """
    rows = ["| input | limit | notes |", "| --- | --- | --- |"]
    rows += [f"| {lim.what} | {lim.value} | {lim.why} |" for lim in LIMITS]
    return "\n".join(rows)
