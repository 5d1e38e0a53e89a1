"""Where a command may write, and writing there without ever losing a user's file.

Directory outputs (``plan solve -o DIR``)
    are written whole into a temporary directory beside the target and renamed into place
    when complete. The target may be: nothing yet; an empty directory; a directory this tool
    wrote, recognised by its marker file :data:`MARKER` (JSON: tool, format version and the
    list of files written), provided it holds no other file; or, with ``force``, any other
    directory. A replaced directory is first moved aside, removed only once the new one is
    in place, and moved back if the rename fails.
File outputs (``plan import -o FILE``, ``plan quote -o FILE``)
    are written to a temporary file beside the target and linked into place; an existing
    file is replaced only with ``force``.
Never, even with ``force``
    a path that is not a directory (for a directory output) or not a regular file (for a
    file output), a symbolic link, a command's own input or a directory holding one (the
    spec's directory and its ancestors), the current directory or one of its ancestors,
    ``/``, the home directory or one of its ancestors.
Names
    ``.``, ``..``, an empty path, a NUL byte, a path component longer than the file
    system's NAME_MAX (255 bytes) or a path longer than PATH_MAX are refused with a clear
    error, as are names starting with ``.plan-``, reserved for temporaries.
Modes
    directories and files get the usual 0777/0666 less the user's umask.
Temporaries
    are named ``.plan-tmp-<hex>`` (being written) and ``.plan-old-<hex>`` (a replaced
    directory on its way out). A temporary directory carries the marker from its first
    instant, and its writer holds an exclusive ``flock`` on the marker until it is done.
    An interrupt removes the temporaries (``planner.interrupts``); one left by a killed
    process (SIGKILL, power loss) is removed by the next run writing into the same
    directory: only an entry matching the name pattern, holding a valid marker, that
    nobody has locked. A temporary *file* of a killed process cannot carry a marker and is
    left alone.

Test-only hook: ``PLAN_TEST_PAUSE_WRITE=STAGE:READY_FILE`` makes the writer create
``READY_FILE`` and wait (up to 300 s, or until a signal) at ``STAGE``: ``before-commit``
(all files written into the temporary) or ``mid-commit`` (the previous directory moved
aside, the new one not yet renamed into place). The interrupt tests use it to send a
signal at a known moment; it has no other use.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Union

from planner.errors import PlannerError
from planner.interrupts import deferred_interrupts, interrupt_received, note_output

try:  # POSIX; elsewhere every temporary counts as in use and is never removed by others
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

__all__ = ["MARKER", "OutputTargetError", "check_directory_target", "check_file_target", "output_name",
           "atomic_directory", "atomic_file", "remove_stale_temporaries", "is_plan_output"]

_LOG = logging.getLogger(__name__)

#: The marker file in every directory this tool writes.
MARKER = ".plan-output"
_MARKER_TOOL = "plan"
_MARKER_VERSION = 1
_MARKER_MAX_BYTES = 1 << 20
_RESERVED_PREFIX = ".plan-"
_TEMPORARY = re.compile(r"\.plan-(tmp|old)-[0-9a-f]{16}")
_LONGEST_TEMPORARY = len(".plan-tmp-") + 16
_TEST_PAUSE_ENV = "PLAN_TEST_PAUSE_WRITE"
_TEST_PAUSE_MAX_S = 300.0

PathArg = Union[str, "os.PathLike[str]"]


class OutputTargetError(PlannerError):
    """An output path the command may not write (exit code 2); nothing was written.

    Examples
    --------
    >>> OutputTargetError("x").exit_code
    2
    """


def output_name(name: str, what: str) -> str:
    """``name`` if it can serve as one file or directory name (for a default output path).

    Examples
    --------
    >>> output_name("demo", "the spec name")
    'demo'
    >>> output_name("a/b", "the spec name")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planner.safe_output.OutputTargetError: the spec name 'a/b' cannot be used as a file name (it contains '/')...
    """
    reason = _bad_name(name)
    if reason is None and "/" in name:
        reason = "it contains '/'"
    if reason is not None:
        shown = name if len(name) <= 60 else name[:40] + f"... ({len(name)} characters)"
        raise OutputTargetError(f"{what} {shown!r} cannot be used as a file name ({reason}); pass -o PATH")
    return name


def _bad_name(name: str) -> str | None:
    if name in ("", ".", ".."):
        return "it is empty" if not name else f"'{name}' is not a name of its own but an existing directory"
    if "\0" in name:
        return "it contains a NUL byte"
    if name.startswith(_RESERVED_PREFIX):
        return f"names starting with {_RESERVED_PREFIX!r} are reserved for plan's temporaries"
    if len(os.fsencode(name)) > 255:
        return f"it is {len(os.fsencode(name))} bytes long; a file name has at most 255"
    return None


def _resolve(target: PathArg) -> Path:
    """The absolute target path (symbolic links resolved in its parent, not in its name)."""
    raw = os.fspath(target)
    if raw == "":
        raise OutputTargetError("the output path is empty")
    if "\0" in raw:
        raise OutputTargetError(f"{raw!r}: the output path contains a NUL byte")
    path = Path(raw)
    if path.name in ("", ".", ".."):
        raise OutputTargetError(f"{raw}: not a name plan can write to (it names an existing directory "
                                f"such as '.', '..' or '/'); give a new name, e.g. {Path(raw) / 'plan'}")
    reason = _bad_name(path.name)
    if reason is not None:
        raise OutputTargetError(f"{raw}: {reason}")
    resolved = Path(os.path.realpath(path.parent)) / path.name
    _check_lengths(raw, resolved)
    return resolved


def _check_lengths(raw: str, resolved: Path) -> None:
    existing = next(p for p in (resolved, *resolved.parents) if os.path.exists(p))
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
        path_max = os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for part in resolved.parts[1:]:
        if len(os.fsencode(part)) > name_max:
            raise OutputTargetError(f"{raw}: the path component {part[:40]!r}... is {len(os.fsencode(part))} "
                                    f"bytes long; this file system allows {name_max}")
    longest = len(os.fsencode(str(resolved.parent))) + 1 + max(len(os.fsencode(resolved.name)),
                                                               _LONGEST_TEMPORARY)
    if longest >= path_max:
        raise OutputTargetError(f"{raw[:60]}...: the path is {longest} bytes long; this system allows "
                                f"{path_max - 1}")


def _protected(resolved: Path, inputs: Iterable[PathArg]) -> str | None:
    """Why ``resolved`` must never be replaced (even with force), or None."""
    def holds(p: Path) -> bool:
        return resolved == p or resolved in p.parents

    for given in inputs:
        inp = Path(os.path.realpath(given))
        if holds(inp):
            return (f"it is the input {given}" if resolved == inp
                    else f"it holds the input {given}")
    try:
        if holds(Path(os.path.realpath(os.getcwd()))):
            return "it is the current directory or holds it"
    except OSError:  # the current directory was removed
        pass
    if resolved == Path(resolved.anchor):
        return "it is the root directory"
    try:
        if holds(Path(os.path.realpath(Path.home()))):
            return "it is your home directory or holds it"
    except (RuntimeError, KeyError, OSError):  # no home directory known
        pass
    return None


def _lstat_or_none(raw: str, resolved: Path) -> os.stat_result | None:
    """``os.lstat`` of an output target; None when nothing is there yet, OutputTargetError
    (naming ``raw``, the path as given) when it cannot be examined."""
    try:
        return os.lstat(resolved)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise OutputTargetError(f"{raw}: a parent of this path is a file, not a directory") from None
    except OSError as e:
        raise OutputTargetError(f"{raw}: {e.strerror}") from None


def check_directory_target(target: PathArg, *, force: bool = False, inputs: Iterable[PathArg] = ()) -> Path:
    """Check that a directory output may be written at ``target``; return its absolute path.

    Raises :class:`OutputTargetError` (the module docstring has the rules).

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> check_directory_target(root / "new") == root / "new"
    True
    >>> _ = (root / "mine").mkdir(); _ = (root / "mine" / "notes.txt").write_text("keep me")
    >>> check_directory_target(root / "mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planner.safe_output.OutputTargetError: ...mine holds files plan did not write (notes.txt); choose ...
    """
    raw = os.fspath(target)
    resolved = _resolve(target)
    st = _lstat_or_none(raw, resolved)
    if st is None:
        return resolved
    if stat.S_ISLNK(st.st_mode):
        raise OutputTargetError(f"{raw} is a symbolic link; plan never replaces one (give the directory it "
                                f"points to, or another path)")
    if not stat.S_ISDIR(st.st_mode):
        raise OutputTargetError(f"{raw} exists and is not a directory; plan never replaces a file with a "
                                f"directory (choose another path)")
    why = _protected(resolved, inputs)
    if why is not None:
        raise OutputTargetError(f"{raw}: plan never replaces this directory ({why}); choose another path")
    foreign = _foreign_entries(resolved)
    if foreign and not force:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise OutputTargetError(f"{raw} holds files plan did not write ({shown}); choose another path, or "
                                f"pass --force to replace the whole directory")
    return resolved


def check_file_target(target: PathArg, *, force: bool = False, inputs: Iterable[PathArg] = ()) -> Path:
    """Check that a file output may be written at ``target``; return its absolute path.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); _ = (root / "spec.yaml").write_text("mine")
    >>> check_file_target(root / "spec.yaml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planner.safe_output.OutputTargetError: ...spec.yaml exists; pass --force to replace it
    >>> check_file_target(root / "spec.yaml", force=True) == root / "spec.yaml"
    True
    """
    raw = os.fspath(target)
    resolved = _resolve(target)
    st = _lstat_or_none(raw, resolved)
    if st is None:
        return resolved
    if stat.S_ISLNK(st.st_mode):
        raise OutputTargetError(f"{raw} is a symbolic link; plan never replaces one (choose another path)")
    if stat.S_ISDIR(st.st_mode):
        raise OutputTargetError(f"{raw} is a directory; give a file name")
    if not stat.S_ISREG(st.st_mode):
        raise OutputTargetError(f"{raw} exists and is not a regular file; plan never replaces it")
    if any(os.path.realpath(i) == str(resolved) for i in inputs):
        raise OutputTargetError(f"{raw} is this command's input; plan never replaces it (choose another path)")
    if not force:
        raise OutputTargetError(f"{raw} exists; pass --force to replace it")
    return resolved


def is_plan_output(directory: PathArg) -> bool:
    """Whether ``directory`` is an output of this tool holding nothing else.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> with atomic_directory(root / "out") as tmp:
    ...     _ = (tmp / "plan.json").write_text("{}")
    >>> is_plan_output(root / "out"), is_plan_output(root)
    (True, False)
    """
    return _read_marker(Path(directory)) is not None and not _foreign_entries(Path(directory))


def _read_marker(directory: Path) -> dict | None:
    """The directory's marker if it is a valid one of this tool."""
    path = directory / MARKER
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _MARKER_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        marker = json.loads(data) if len(data) <= _MARKER_MAX_BYTES else None
    except (ValueError, RecursionError):
        return None
    if (isinstance(marker, dict) and marker.get("tool") == _MARKER_TOOL
            and type(marker.get("format_version")) is int):
        return marker
    return None


def _foreign_entries(directory: Path) -> list[str]:
    """Entries of an existing directory that this tool did not write (all of them without a marker)."""
    marker = _read_marker(directory)
    files = marker.get("files") if marker is not None else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        try:
            return sorted(e.name for e in _scandir(directory))[:6]
        except OSError as e:
            return [f"an unreadable directory ({e.strerror})"]
    known = set(files) | {MARKER}
    dirs = {p.as_posix() for f in files for p in Path(f).parents}  # "." included
    foreign: list[str] = []
    pending = [Path(".")]
    while pending and len(foreign) < 6:
        rel = pending.pop()
        try:
            entries = _scandir(directory / rel)
        except OSError as e:
            foreign.append(f"{rel.as_posix()} (unreadable: {e.strerror})")
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            name = (rel / entry.name).as_posix()
            if entry.is_dir(follow_symlinks=False) and name in dirs:
                pending.append(rel / entry.name)
            elif entry.is_symlink() or entry.is_dir(follow_symlinks=False) or name not in known:
                foreign.append(name)
    return foreign


def _scandir(directory: Path) -> list[os.DirEntry]:
    with os.scandir(directory) as entries:
        return list(entries)


def _marker_text(files: list[str] | None = None) -> bytes:
    marker: dict = {"tool": _MARKER_TOOL, "format_version": _MARKER_VERSION}
    if files is not None:
        marker["files"] = files
    return (json.dumps(marker, indent=1) + "\n").encode()


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing ancestors; return those created, deepest last."""
    missing = [p for p in (directory, *directory.parents) if not os.path.lexists(p)][::-1]
    created = []
    for path in missing:
        try:
            os.mkdir(path, 0o777)
        except FileExistsError:
            continue
        except OSError as e:
            _remove_empty(created)
            raise OutputTargetError(f"cannot create the directory {path}: {e.strerror}") from None
        created.append(path)
    return created


def _remove_empty(created: list[Path]) -> None:
    for path in reversed(created):
        try:
            os.rmdir(path)
        except OSError:
            return


def _new_temporary_dir(parent: Path, kind: str) -> tuple[Path, int]:
    """A new, marked, locked temporary directory in ``parent``: (path, locked marker fd)."""
    while True:
        path = parent / f".plan-{kind}-{secrets.token_hex(8)}"
        try:
            os.mkdir(path, 0o777)
            break
        except FileExistsError:
            continue
        except OSError as e:
            raise OutputTargetError(f"cannot create a directory in {parent}: {e.strerror}") from None
    try:
        fd = os.open(path / MARKER, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        os.rmdir(path)
        raise OutputTargetError(f"cannot write in {parent}: {e.strerror}") from None
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, _marker_text())
    return path, fd


def _try_lock(directory: Path) -> int | None:
    """Open and exclusively lock the marker of ``directory``; None if absent, invalid or in use."""
    if fcntl is None or _read_marker(directory) is None:
        return None
    try:
        fd = os.open(directory / MARKER, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _remove_marked(directory: Path) -> None:
    """Remove a marked directory, the marker last: a removal cut short stays recognisable."""
    for entry in _scandir(directory):
        if entry.name == MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    os.unlink(directory / MARKER)
    os.rmdir(directory)


def _discard(directory: Path, fd: int) -> None:
    """Remove a temporary directory whose marker ``fd`` we hold locked; never raises."""
    try:
        _remove_marked(directory)
    except OSError as e:
        _LOG.warning("could not remove the temporary directory %s: %s", directory, e)
    finally:
        os.close(fd)


def remove_stale_temporaries(parent: PathArg) -> list[Path]:
    """Remove the temporaries of this tool that a killed run left in ``parent``; return them.

    Only directories whose name matches ``.plan-(tmp|old)-<16 hex>``, holding a valid
    marker that no running process has locked.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / ".plan-tmp-0123456789abcdef").mkdir()   # no marker: not ours, kept
    >>> remove_stale_temporaries(root), sorted(p.name for p in root.iterdir())
    ([], ['.plan-tmp-0123456789abcdef'])
    """
    removed = []
    try:
        entries = _scandir(Path(parent))
    except OSError:
        return removed
    for entry in entries:
        if not _TEMPORARY.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        fd = _try_lock(path)
        if fd is None:
            continue
        with deferred_interrupts():
            _discard(path, fd)
        removed.append(path)
    return removed


@contextmanager
def atomic_directory(target: PathArg, *, force: bool = False, inputs: Iterable[PathArg] = ()) -> Iterator[Path]:
    """Yield a fresh temporary directory that replaces ``target`` when the block succeeds.

    ``target`` is checked by :func:`check_directory_target` before and again just before
    the commit. On any exception or interrupt the temporary is removed and ``target`` is
    left as it was; OS errors while writing become :class:`OutputTargetError`.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> with atomic_directory(root / "out") as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> sorted(p.name for p in (root / "out").iterdir())
    ['.plan-output', 'a.txt']
    >>> with atomic_directory(root / "out") as tmp:   # a previous output: replaced
    ...     _ = (tmp / "b.txt").write_text("y")
    >>> sorted(p.name for p in (root / "out").iterdir()), sorted(p.name for p in root.iterdir())
    (['.plan-output', 'b.txt'], ['out'])
    """
    inputs = tuple(inputs)
    resolved = check_directory_target(target, force=force, inputs=inputs)
    created: list[Path] = []
    tmp, lock, committed = None, -1, False
    try:  # every step that creates something is a critical section inside this try
        with deferred_interrupts():
            created += _make_parents(resolved.parent)
        remove_stale_temporaries(resolved.parent)
        with deferred_interrupts():
            tmp, lock = _new_temporary_dir(resolved.parent, "tmp")
        try:
            yield tmp
        except OSError as e:
            raise _write_error(target, e) from None
        _pause_for_tests("before-commit")
        with deferred_interrupts():
            old = _commit_directory(tmp, lock, target, force, inputs)
            committed = True
            note_output(Path(target))
            if old is not None:
                _remove_previous(old)
    finally:
        with deferred_interrupts():
            if not committed and tmp is not None:
                _discard(tmp, lock)
            elif lock >= 0:
                os.close(lock)
            if not committed:
                _remove_empty(created)


def _commit_directory(tmp: Path, lock: int, target: PathArg, force: bool, inputs: tuple) -> Path | None:
    """Record the manifest, re-check ``target``, swap the temporary in; return where the old one went."""
    files = sorted((Path(root) / name).relative_to(tmp).as_posix()
                   for root, _, names in os.walk(tmp) for name in names)
    os.ftruncate(lock, 0)
    os.pwrite(lock, _marker_text([f for f in files if f != MARKER]), 0)
    resolved = check_directory_target(target, force=force, inputs=inputs)  # it may have changed meanwhile
    old = None
    try:
        if os.path.lexists(resolved):
            old = resolved.parent / f".plan-old-{secrets.token_hex(8)}"
            os.rename(resolved, old)
        _pause_for_tests("mid-commit")
        os.rename(tmp, resolved)
    except OSError as e:
        if old is not None:
            os.rename(old, resolved)
        raise _write_error(target, e) from None
    return old


def _remove_previous(old: Path) -> None:
    """Remove a replaced directory (now at ``old``), marking it first if it has no marker."""
    fd = _try_lock(old)
    if fd is None:  # an empty or forced directory: mark it so a removal cut short is finished later
        try:
            fd = os.open(old / MARKER, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
            os.write(fd, _marker_text())
        except OSError as e:
            _LOG.warning("could not remove the replaced directory, now at %s: %s", old, e)
            return
    _discard(old, fd)


@contextmanager
def atomic_file(target: PathArg, *, force: bool = False, inputs: Iterable[PathArg] = ()) -> Iterator[Path]:
    """Yield a temporary file path that becomes ``target`` when the block succeeds.

    Without ``force`` an existing ``target`` is never replaced, even one created while the
    block ran (the file is linked into place, which fails if the name exists).

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> with atomic_file(root / "q.json") as tmp:
    ...     _ = tmp.write_text("{}")
    >>> (root / "q.json").read_text(), sorted(p.name for p in root.iterdir())
    ('{}', ['q.json'])
    """
    inputs = tuple(inputs)
    resolved = check_file_target(target, force=force, inputs=inputs)
    created: list[Path] = []
    tmp, committed = None, False
    try:  # as in atomic_directory
        with deferred_interrupts():
            created += _make_parents(resolved.parent)
        with deferred_interrupts():
            tmp = _new_temporary_file(resolved.parent)
        try:
            yield tmp
        except OSError as e:
            raise _write_error(target, e) from None
        _pause_for_tests("before-commit")
        with deferred_interrupts():
            check_file_target(target, force=force, inputs=inputs)
            _link_into_place(tmp, resolved, target, force)
            committed = True
            note_output(Path(target))
    finally:
        if not committed:
            with deferred_interrupts():
                if tmp is not None:
                    _unlink_quietly(tmp)
                _remove_empty(created)


def _new_temporary_file(parent: Path) -> Path:
    while True:
        path = parent / f".plan-tmp-{secrets.token_hex(8)}"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return path
        except FileExistsError:
            continue
        except OSError as e:
            raise OutputTargetError(f"cannot create a file in {parent}: {e.strerror}") from None


def _link_into_place(tmp: Path, resolved: Path, target: PathArg, force: bool) -> None:
    try:
        if force:
            os.replace(tmp, resolved)
            return
        try:
            os.link(tmp, resolved)
        except FileExistsError:
            raise OutputTargetError(f"{os.fspath(target)} exists; pass --force to replace it") from None
        except OSError:  # no hard links on this file system: check, then rename
            if os.path.lexists(resolved):
                raise OutputTargetError(f"{os.fspath(target)} exists; pass --force to replace it") from None
            os.rename(tmp, resolved)
            return
        _unlink_quietly(tmp)
    except OSError as e:
        raise _write_error(target, e) from None


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _write_error(target: PathArg, e: OSError) -> OutputTargetError:
    where = f" ({e.filename})" if e.filename else ""
    return OutputTargetError(f"cannot write {os.fspath(target)}: {e.strerror or e}{where}; nothing was written")


def _pause_for_tests(stage: str) -> None:
    """The test-only pause of the module docstring (``PLAN_TEST_PAUSE_WRITE``)."""
    setting = os.environ.get(_TEST_PAUSE_ENV, "")
    wanted, _, ready_file = setting.partition(":")
    if wanted != stage:
        return
    if ready_file:
        Path(ready_file).write_text(stage)
    deadline = time.monotonic() + _TEST_PAUSE_MAX_S
    while time.monotonic() < deadline and not interrupt_received():
        time.sleep(0.01)
