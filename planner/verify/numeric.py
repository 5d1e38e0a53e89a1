"""The numeric replay as the verifier runs it: when, and what ``plan.json`` and the report say.

``plan solve`` runs the numeric replay (:mod:`planner.verify.compare`: the binaries'
arithmetic on random inputs against a numpy evaluation of graph.json) by default whenever
it is cheap: at most :data:`NUMERIC_DEFAULT_MAX_INSTRUCTIONS` instructions and
:data:`NUMERIC_DEFAULT_MAX_MACS` multiply-accumulates (the MATMULs' ``a·b·c·d``) in all binaries.
Its outcome is one of

``equal``         every compared tensor equals the reference within ``rtol``;
``too-large``     skipped by default: more instructions or multiply-accumulates than the
                  limits (``plan simulate --numeric`` runs it anyway);
``no-semantics``  the graph has ops numeric mode cannot evaluate (``task``, the ONNX
                  importer's stand-ins such as ``LRN``); the plan is verified by timing only;
``off``           ``--no-numeric``.

A replay that differs from the reference is never an outcome: it raises
:class:`~planner.errors.InternalError` (the files are the ones ``plan solve`` wrote, their
checksums said so, so the difference is a bug).

Examples
--------
>>> describe({"status": "too-large", "instructions": 250000, "limit": 100000})
'numeric replay: skipped: 250,000 instructions > 10^5; run `plan simulate --numeric` on the directory'
>>> describe({"status": "equal", "instructions": 90, "tensors": 12, "graph_outputs": 1, "rtol": 1e-05,
...           "dtypes": ["fp32"]})
'numeric replay: 12 tensors equal to the reference (fp32, rtol 1e-05)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from planner.errors import InternalError, VerificationError
from planner.graph.ir import GraphError
from planner.isa.instructions import Opcode
from planner.verify.compare import RTOL, compare_numeric_programs, ops_without_numeric_semantics

__all__ = ["NUMERIC_DEFAULT_MAX_INSTRUCTIONS", "NUMERIC_DEFAULT_MAX_MACS", "NumericOutcome", "binary_macs",
           "run_numeric", "describe", "check_numeric_claim"]

# The numeric replay runs at about 5e4 instructions per second end to end (README,
# Performance): the default check costs at most a few seconds of per-instruction overhead...
NUMERIC_DEFAULT_MAX_INSTRUCTIONS = 100_000
# ...and its arithmetic (the binaries' and the reference's, in float64 on one BLAS thread) about
# 3e8 multiply-accumulates per second on a busy 2-core machine (benchmarks/verify.py: the demo's
# 2.5e9 in 7.6 s, a 1,979-op transformer's 1.9e10 in 48 s at load 7): at most ~30 s there.
NUMERIC_DEFAULT_MAX_MACS = 10**10


def _power_of_ten(n: int) -> str:
    text = str(n)
    return f"10^{len(text) - 1}" if text.strip("0") == "1" else f"{n:,}"


def describe(claim: Mapping[str, Any]) -> str:
    """The one line the terminal and the report give for a numeric outcome (``plan.json`` ``numeric``).

    >>> describe({"status": "off", "instructions": 5})
    'numeric replay: off (--no-numeric); the plan was verified by timing only'
    >>> describe({"status": "no-semantics", "instructions": 5, "ops_without_semantics": {"LRN": ["a", "b"]}})
    'numeric replay: not run: ops without numeric semantics were only timed: LRN (2: a, b)'
    """
    status = claim["status"]
    if status == "equal":
        dtypes = ", ".join(claim.get("dtypes") or ["fp32"])
        return (f"numeric replay: {claim['tensors']} tensors equal to the reference "
                f"({dtypes}, rtol {claim.get('rtol', 1e-5):g})")
    if status == "too-large":
        limit = claim.get("limit") or NUMERIC_DEFAULT_MAX_INSTRUCTIONS
        if claim["instructions"] > limit:
            size = f"{claim['instructions']:,} instructions > {_power_of_ten(limit)}"
        else:
            size = (f"{claim.get('macs', 0):.2e} multiply-accumulates > "
                    f"{_power_of_ten(claim.get('mac_limit') or NUMERIC_DEFAULT_MAX_MACS)}")
        return f"numeric replay: skipped: {size}; run `plan simulate --numeric` on the directory"
    if status == "no-semantics":
        kinds = claim.get("ops_without_semantics") or {}
        parts = [f"{kind} ({len(ops)}: {', '.join(ops[:3])}{', ...' if len(ops) > 3 else ''})"
                 for kind, ops in kinds.items()]
        return "numeric replay: not run: ops without numeric semantics were only timed: " + "; ".join(parts)
    return "numeric replay: off (--no-numeric); the plan was verified by timing only"


@dataclass(frozen=True)
class NumericOutcome:
    """What one numeric replay found: ``claim`` as ``plan.json`` records it, and the comparison."""

    claim: dict[str, Any]
    comparison: Any = None  # planner.verify.compare.NumericComparison when it ran

    def summary(self) -> str:
        return describe(self.claim)


def _float_dtypes(graph: Any) -> list[str]:
    return sorted({t.dtype for t in graph.tensors.values()})


def binary_macs(programs: Mapping[str, Any]) -> int:
    """Multiply-accumulates of the binaries' MATMULs (``a·b·c·d``: rows, K, N, weight sets).

    Examples
    --------
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode, Program
    >>> p = Program("d0", "g", 1, 1, 1, 1, 1, 0, (LevelInfo("m", 8, 1),), 0, (), 1, (),
    ...             (Instruction(Opcode.MATMUL, 0, 0, 9, op="mm", a=2, b=3, c=4, d=1),))
    >>> binary_macs({"d0": p})
    24
    """
    return sum(ins.a * ins.b * ins.c * ins.d for p in programs.values() for ins in p.instructions
               if ins.opcode in (Opcode.MATMUL, Opcode.CONV))


def run_numeric(programs: Mapping[str, Any], graph: Any, *, mode: str, seed: int = 0,
                limit: int | None = None, mac_limit: int | None = None) -> NumericOutcome:
    """Run (or skip) the numeric replay of decoded ``programs`` against ``graph``.

    Parameters
    ----------
    mode
        ``"default"`` (run when at most ``limit`` instructions and ``mac_limit``
        multiply-accumulates: :data:`NUMERIC_DEFAULT_MAX_INSTRUCTIONS` and
        :data:`NUMERIC_DEFAULT_MAX_MACS` unless given), ``"on"`` (always) or ``"off"``.

    Raises
    ------
    InternalError
        The replay's numbers differ from the reference.
    VerificationError
        graph.json declares an output shape its op does not compute (the reference cannot
        evaluate it).
    """
    limit = NUMERIC_DEFAULT_MAX_INSTRUCTIONS if limit is None else limit
    mac_limit = NUMERIC_DEFAULT_MAX_MACS if mac_limit is None else mac_limit
    instructions = sum(len(p.instructions) for p in programs.values())
    macs = binary_macs(programs)
    if mode == "off":
        return NumericOutcome({"status": "off", "instructions": instructions})
    unsupported = ops_without_numeric_semantics(graph)
    if unsupported:
        return NumericOutcome({"status": "no-semantics", "instructions": instructions,
                               "ops_without_semantics": unsupported})
    if mode == "default" and (instructions > limit or macs > mac_limit):
        return NumericOutcome({"status": "too-large", "instructions": instructions, "limit": limit, "macs": macs,
                               "mac_limit": mac_limit})
    try:
        comparison = compare_numeric_programs(programs, graph, seed)
    except GraphError as e:  # shapes the cost model accepted but the op does not compute
        raise VerificationError("graph.json", "", detail=(
            f"{e}: the graph declares shapes its ops do not compute, so the numeric replay cannot check the "
            "plan (`plan solve --no-numeric` plans it without)")) from None
    if not comparison.ok:
        raise InternalError("the numeric replay of the binaries disagrees with the reference evaluation of "
                            "graph.json:\n  " + "\n  ".join(comparison.failures()[:10]))
    return NumericOutcome({"status": "equal", "instructions": instructions, "tensors": len(comparison.checks),
                           "graph_outputs": sum(c.graph_output for c in comparison.checks), "rtol": RTOL,
                           "dtypes": _float_dtypes(graph)}, comparison)


def check_numeric_claim(claim: Any, programs: Mapping[str, Any], graph: Any, ran: NumericOutcome | None) -> None:
    """Refuse a ``plan.json`` ``numeric`` claim the directory contradicts.

    Without a numeric run (``ran`` None) only what needs no arithmetic is checked: the
    instruction count, the limit a skip names, the ops without semantics. With one, its
    figures must be the claim's (a claim of ``equal`` with other tensor counts, or a claim
    of anything else where the replay ran and found them equal, is refused).
    """
    instructions = sum(len(p.instructions) for p in programs.values())
    if claim.instructions != instructions:
        raise VerificationError("plan.json", "numeric.instructions", expected=f"{instructions} (the binaries)",
                                found=str(claim.instructions))
    unsupported = ops_without_numeric_semantics(graph)
    if (claim.status == "no-semantics") != bool(unsupported) and claim.status != "off":
        raise VerificationError("plan.json", "numeric.status", expected="no-semantics" if unsupported else
                                "not no-semantics (every op of graph.json has numeric semantics)", found=claim.status)
    if claim.status == "no-semantics" and claim.ops_without_semantics != unsupported:
        raise VerificationError("plan.json", "numeric.ops_without_semantics", expected=str(unsupported),
                                found=str(claim.ops_without_semantics))
    if claim.status == "too-large":
        macs = binary_macs(programs)
        if claim.macs != macs:
            raise VerificationError("plan.json", "numeric.macs", expected=f"{macs} (the binaries' MATMULs)",
                                    found=str(claim.macs))
        if not (instructions > claim.limit or macs > claim.mac_limit):
            raise VerificationError("plan.json", "numeric.limit", expected=f"a limit below the {instructions} "
                                    f"instructions or the {macs} multiply-accumulates",
                                    found=f"{claim.limit} and {claim.mac_limit}")
    if ran is not None and claim.status == "equal" and ran.claim.get("status") == "equal":
        for key in ("tensors", "graph_outputs", "rtol", "dtypes"):
            if getattr(claim, key) != ran.claim[key]:
                raise VerificationError("plan.json", f"numeric.{key}", expected=f"{ran.claim[key]} (the numeric "
                                        "replay)", found=str(getattr(claim, key)))
