"""Writing a lowered plan to disk: ``bin/<device>.bin``, ``bin/<device>.lst``, ``allocation.json``.

The caller chooses the directory (the CLI writes into a temporary directory and renames
it into place, so a failure leaves nothing half-written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner import json_text
from planner.isa.binary import encode, listing
from planner.isa.instructions import Program

__all__ = ["write_binaries", "write_allocation"]


def write_binaries(programs: dict[str, Program], directory: str | Path) -> list[Path]:
    """Write ``bin/<device>.bin`` and ``bin/<device>.lst`` under ``directory``.

    Returns the written paths in device order.

    Examples
    --------
    >>> import tempfile
    >>> from planner.isa.instructions import Instruction, LevelInfo, Opcode
    >>> p = Program("d0", "generic", 10**9, 10**9, 1, 1, 1, 0, (LevelInfo("mem", 1 << 20, 10**12),),
    ...             0, (), 1, (), (Instruction(Opcode.HALT, 0, 0, 0),))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     [f.name for f in write_binaries({"d0": p}, tmp)]
    ['d0.bin', 'd0.lst']
    """
    out = Path(directory) / "bin"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, program in programs.items():
        if "/" in name or name.startswith("."):
            raise ValueError(f"device name {name!r} cannot be a file name")
        b, lst = out / f"{name}.bin", out / f"{name}.lst"
        b.write_bytes(encode(program))
        lst.write_text(listing(program))
        written += [b, lst]
    return written


def write_allocation(document: dict[str, Any], directory: str | Path) -> Path:
    """Write ``allocation.json`` (from :func:`planner.lowering.allocation`) under ``directory``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     write_allocation({"devices": {}}, tmp).name
    'allocation.json'
    """
    path = Path(directory) / "allocation.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json_text.dumps(document, indent=2) + "\n")
    return path
