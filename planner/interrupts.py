"""Ctrl-C and SIGTERM: stop the solvers at once, leave nothing behind, exit 130 or 143.

Why Python's default is not enough
----------------------------------
Python runs a signal handler only when the main thread executes bytecode. During a CP-SAT
search the main thread sits in C++ for up to the whole time limit, so a Ctrl-C would be
acted on only once the search had ended. CP-SAT can catch SIGINT itself (its parameter
``catch_sigint_signal``, on by default). Observed with OR-Tools 9.15: it then installs its
own C handler for SIGINT for the duration of the solve, which stops the search at the first
Ctrl-C (the solve returns normally with the best solution so far: the interrupt is
swallowed, the caller writes its output and exits 0), and on return resets SIGINT to the
system default instead of restoring the previous handler, so the next Ctrl-C kills the
process with no message and no clean-up. SIGTERM it leaves alone. Every CP-SAT solve
therefore runs with that parameter off (:func:`solvers.cpsat_support.solve_stoppable`).

How it works
------------
:func:`handle_interrupts` (the CLI wraps every command in it) installs, for SIGINT and
SIGTERM:

* a Python handler that raises :class:`Interrupted` (a ``KeyboardInterrupt`` carrying the
  signal number and the exit code 128 + signal) in the main thread;
* ``signal.set_wakeup_fd`` on a pipe: Python's C-level handler writes the signal number
  into the pipe the moment the signal arrives, whatever the main thread is doing;
* a daemon thread blocked on that pipe, which calls the ``stop`` function it was given
  (the CLI passes one that calls ``solvers.cpsat_support.stop_running_solvers``:
  ``stop_search()`` on every CP-SAT solve in progress) and calls it again every 50 ms
  afterwards, so a solve that was just starting when the signal came is stopped as well.

The stopped solve returns within milliseconds, the main thread runs bytecode again, and the
Python handler raises :class:`Interrupted` there; the ``with`` blocks of the output code
discard their temporaries on the way out. The output code's short critical sections
(creating a temporary and its marker, the renames of a commit, removing a temporary) run
under :func:`deferred_interrupts`: a signal there is noted and raised as soon as the
section ends, so none of these steps is cut in half.

A second signal while the first is being handled is ignored (the clean-up takes
milliseconds); a third ends the process at once with ``os._exit``, which may leave a
marked temporary that the next run writing into the same directory removes
(``planner.safe_output``). Outputs committed before the interrupt are listed in
:attr:`InterruptGuard.outputs`, so the CLI can say so.

With one worker CP-SAT runs the search, and so the solution callback, in the calling
thread: the handler may then raise inside the callback, and OR-Tools ends the search and
re-raises it from ``solve`` (observed with 9.15), which is just as good. Signal handlers can
only be installed from the main thread: elsewhere :func:`handle_interrupts` changes nothing
and Python's defaults apply. Before the CLI enters it (interpreter start-up and imports,
a fraction of a second, before anything is written) Python's defaults apply as well.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

__all__ = ["Interrupted", "InterruptGuard", "handle_interrupts", "deferred_interrupts", "note_output",
           "interrupt_received", "HANDLED_SIGNALS"]

_LOG = logging.getLogger(__name__)

#: The signals :func:`handle_interrupts` turns into :class:`Interrupted`.
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_RESTOP_INTERVAL_S = 0.05  # how often the watcher repeats ``stop`` after a signal


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when SIGINT or SIGTERM arrives; ``exit_code`` is 128 + signal.

    Examples
    --------
    >>> e = Interrupted(signal.SIGTERM)
    >>> e.exit_code, isinstance(e, KeyboardInterrupt)
    (143, True)
    """

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        self.exit_code = 128 + self.signum
        super().__init__(signal.Signals(self.signum).name)


class InterruptGuard:
    """The state of one :func:`handle_interrupts` block: signals seen, deferral depth, outputs.

    Examples
    --------
    >>> guard = InterruptGuard(stop=lambda: None)
    >>> guard.signum is None, guard.outputs
    (True, [])
    """

    def __init__(self, stop: Callable[[], object]) -> None:
        self.stop = stop
        self.signum: Optional[int] = None  # the first signal received
        self.count = 0  # signals received
        self.outputs: list[Path] = []  # outputs committed while the guard was active
        self._defer_depth = 0
        self._pending = False
        self._closed = threading.Event()

    def on_signal(self, signum: int, frame: object) -> None:
        """The Python-level handler (runs in the main thread)."""
        self.count += 1
        if self.count == 1:
            self.signum = signum
        if self.count >= 3:
            os._exit(128 + (self.signum or signum))
        if self.count > 1:
            return  # the first one is already being handled
        if self._defer_depth:
            self._pending = True
            return
        raise Interrupted(signum)

    def watch(self, read_fd: int) -> None:
        """The watcher thread: on the first byte from the wake-up pipe, keep stopping solvers."""
        try:
            while True:
                data = os.read(read_fd, 64)
                if not data:
                    return  # the write end was closed: the guard is gone
                if any(b in {int(s) for s in HANDLED_SIGNALS} for b in data):
                    break
            while not self._closed.is_set():
                try:
                    self.stop()
                except Exception:  # a failing stop must not end the watcher
                    _LOG.exception("stopping the solvers after a signal failed")
                self._closed.wait(_RESTOP_INTERVAL_S)
        finally:
            os.close(read_fd)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        self._defer_depth += 1
        try:
            yield
        finally:
            self._defer_depth -= 1
            if self._defer_depth == 0 and self._pending:
                self._pending = False
                raise Interrupted(self.signum or signal.SIGINT)


_ACTIVE: list[InterruptGuard] = []  # the installed guard (at most one: nested blocks reuse it)


@contextmanager
def handle_interrupts(stop: Callable[[], object] = lambda: None) -> Iterator[Optional[InterruptGuard]]:
    """Turn SIGINT and SIGTERM into :class:`Interrupted` and call ``stop`` from a thread at once.

    Re-entrant: an inner block reuses the outer block's guard. Yields ``None`` when called
    outside the main thread (nothing is installed then).

    Examples
    --------
    >>> with handle_interrupts() as guard:
    ...     try:
    ...         signal.raise_signal(signal.SIGTERM)
    ...     except Interrupted as e:
    ...         code = e.exit_code
    >>> code, guard.signum == signal.SIGTERM
    (143, True)
    """
    if _ACTIVE:
        yield _ACTIVE[-1]
        return
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    guard = InterruptGuard(stop)
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # set_wakeup_fd requires it
    previous = {s: signal.getsignal(s) for s in HANDLED_SIGNALS}
    old_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for s in HANDLED_SIGNALS:
        signal.signal(s, guard.on_signal)
    threading.Thread(target=guard.watch, args=(read_fd,), name="plan-interrupts", daemon=True).start()
    _ACTIVE.append(guard)
    try:
        yield guard
    finally:
        _ACTIVE.remove(guard)
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_wakeup)
        guard._closed.set()
        os.close(write_fd)  # the watcher sees end-of-file and exits


def deferred_interrupts():
    """A critical section: a signal inside it is raised when the section ends, not before.

    Without an active :func:`handle_interrupts` block it changes nothing.

    Examples
    --------
    >>> with handle_interrupts():
    ...     steps = []
    ...     try:
    ...         with deferred_interrupts():
    ...             signal.raise_signal(signal.SIGINT)
    ...             steps.append("finished the section")
    ...     except Interrupted:
    ...         steps.append("then interrupted")
    >>> steps
    ['finished the section', 'then interrupted']
    """
    if _ACTIVE and threading.current_thread() is threading.main_thread():
        return _ACTIVE[-1].deferred()
    return _nothing()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def note_output(path: Path) -> None:
    """Record an output committed under the active guard (the CLI names it if interrupted later).

    Examples
    --------
    >>> with handle_interrupts() as guard:
    ...     note_output(Path("out/demo"))
    ...     guard.outputs
    [PosixPath('out/demo')]
    """
    if _ACTIVE:
        _ACTIVE[-1].outputs.append(Path(path))


def interrupt_received() -> bool:
    """Whether the active guard has caught a signal (False without a guard).

    Examples
    --------
    >>> interrupt_received()
    False
    >>> with handle_interrupts() as guard:
    ...     guard.signum = 2
    ...     interrupt_received()
    True
    """
    return bool(_ACTIVE) and _ACTIVE[-1].signum is not None
