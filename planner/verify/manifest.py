"""The files of a plan directory and their sha256, as ``plan.json`` records them.

``plan.json`` ``files`` maps every other file ``plan solve`` wrote to the sha256 of its
bytes. :func:`read_manifest_files` reads each one (regular files only, with a size limit),
refuses a changed, missing or unexpected file, and returns the bytes, so later checks read
exactly what was hashed. Which files a directory must hold follows from the plan: the
fixed set of :data:`DIRECTORY_FILES`, ``memory.json`` exactly when memory planning ran,
and ``bin/<device>.bin`` and ``bin/<device>.lst`` for every device of the plan (and no
other binary). Files a user adds beside them (outside ``bin/``) are not the plan's and
are left alone.

Examples
--------
>>> expected_files(["d0"], memory_planning=False)
['allocation.json', 'bin/d0.bin', 'bin/d0.lst', 'graph.json', 'report.html', 'report.md', 'trace.json']
>>> sha256_hex(b"")[:16]
'e3b0c44298fc1c14'
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Mapping, Sequence

from planner.errors import VerificationError
from planner.verify.jsonfile import read_bytes

__all__ = ["DIRECTORY_FILES", "MAX_FILE_BYTES", "expected_files", "sha256_hex", "read_manifest_files"]

# Written by every `plan solve` besides plan.json and the binaries.
DIRECTORY_FILES = ("allocation.json", "graph.json", "report.html", "report.md", "trace.json")
# No file of a plan directory is larger (a binary of 10^6 instructions is 80 MB).
MAX_FILE_BYTES = 512 << 20


def sha256_hex(data: bytes) -> str:
    """The sha256 digest of ``data`` in hex, as ``plan.json`` records it.

    >>> len(sha256_hex(b"x"))
    64
    """
    return hashlib.sha256(data).hexdigest()


def expected_files(devices: Sequence[str], *, memory_planning: bool) -> list[str]:
    """The relative paths ``plan.json`` ``files`` must list, sorted.

    >>> expected_files(["a"], memory_planning=True)[-4:]
    ['memory.json', 'report.html', 'report.md', 'trace.json']
    """
    names = [*DIRECTORY_FILES, *(f"bin/{d}.{ext}" for d in devices for ext in ("bin", "lst"))]
    if memory_planning:
        names.append("memory.json")
    return sorted(names)


def _check_listing(recorded: Mapping[str, str], expected: list[str]) -> None:
    unexpected = sorted(set(recorded) - set(expected))
    if unexpected:
        raise VerificationError("plan.json", "files", detail=f"lists {unexpected[0]!r}, which is not a file of "
                                                              "this plan's directory")
    missing = sorted(set(expected) - set(recorded))
    if missing:
        raise VerificationError("plan.json", "files", detail=f"has no checksum for {missing[0]!r}")


def _check_bin_folder(folder: Path, devices: Sequence[str]) -> None:
    """No binary for a device the plan does not have (a missing one fails its checksum)."""
    if not folder.is_dir():
        raise VerificationError("bin", "", detail="missing: the directory holds no binaries")
    known = set(devices)
    strays = sorted(p.name for p in folder.iterdir() if p.suffix in (".bin", ".lst") and p.stem not in known)
    if strays:
        raise VerificationError(f"bin/{strays[0]}", "", detail=f"a file for a device the plan does not have "
                                                               f"(its devices: {', '.join(devices)})")


def read_manifest_files(plan_dir: Path, recorded: Mapping[str, str], devices: Sequence[str], *,
                        memory_planning: bool, max_bytes: int = MAX_FILE_BYTES) -> dict[str, bytes]:
    """Read every file ``plan.json`` lists, after checking the list itself; refuse any changed file.

    Parameters
    ----------
    plan_dir
        The plan directory.
    recorded
        ``plan.json`` ``files``: relative path -> sha256 hex.
    devices
        The plan's devices (one binary and one listing each).
    memory_planning
        Whether ``memory.json`` belongs to the plan.

    Returns
    -------
    dict
        Relative path -> the file's bytes (the bytes that were hashed).

    Raises
    ------
    VerificationError
        The list is not the plan's set of files; a file is missing, not regular, too large
        or differs from its checksum; ``bin/`` holds a file of another device; ``memory.json``
        is present though memory planning did not run.
    """
    _check_listing(recorded, expected_files(devices, memory_planning=memory_planning))
    if not memory_planning and (plan_dir / "memory.json").exists():
        raise VerificationError("memory.json", "", detail="present, but plan.json says memory planning did not "
                                                          "run for this plan (memory_planning: false)")
    _check_bin_folder(plan_dir / "bin", devices)
    contents: dict[str, bytes] = {}
    for name in sorted(recorded):
        data = read_bytes(plan_dir / name, name, max_bytes=max_bytes)
        digest = sha256_hex(data)
        if digest != recorded[name]:
            raise VerificationError(name, "sha256 checksum", expected=f"{recorded[name][:16]}... (plan.json files)",
                                    found=f"{digest[:16]}...",
                                    detail="the file changed after `plan solve` wrote it, or comes from another plan")
        contents[name] = data
    return contents
