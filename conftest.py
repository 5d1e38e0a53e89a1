"""How ``python -m pytest`` runs: on two workers, and a test marked ``alone`` with no other beside it.

Workers: the suite runs on two pytest-xdist workers (both cores of the 2-core machine its time
target is for), each taking whole files (``--dist loadfile``: a module's fixtures are built once,
and a file's tests keep their order). ``-n N`` or ``--dist`` on the command line choose otherwise;
``-n 0``, ``-p no:xdist``, ``--pdb``, or an environment without pytest-xdist run it in one process.
The workers are set here, not in ``addopts``: with ``-n`` in ``addopts``, ``-p no:xdist`` and an
environment without the plugin would stop at "unrecognized arguments: -n".

Alone: a test marked ``alone`` (it loads the machine itself, so a test beside it would run on a
machine busier than its own limits allow for) runs while no other test of the run runs. Every
other test, doctests included (this file is at the root), holds a shared lock on one file of the
run from its set-up to its teardown; the ``alone`` test holds it exclusively.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

WORKERS = 2  # explicit, not "auto": the target machine has 2 cores, and a run is the same on any machine


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns numprocesses into workers
def pytest_cmdline_main(config: pytest.Config) -> None:
    option = config.option
    if "PYTEST_XDIST_WORKER" in os.environ or not hasattr(option, "numprocesses"):
        return  # a worker of a run, or xdist absent or disabled (-p no:xdist)
    if option.numprocesses is None and not option.usepdb:
        option.numprocesses = WORKERS
    if option.numprocesses and option.dist == "no":
        option.dist = "loadfile"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Hold the run's lock through the test's set-up (module fixtures too), call and teardown."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield  # one process: nothing runs beside a test
        return
    exclusive = item.get_closest_marker("alone") is not None
    # a worker's base temp is a directory in the run's base temp, where the controller made it
    with open(Path(item.config.option.basetemp).parent / "alone.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield  # closing the file releases the lock
