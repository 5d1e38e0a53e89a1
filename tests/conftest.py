"""Suite-wide settings.

Hypothesis: under CI (``CI`` set, as ``.ci/run`` runs) every property test is derandomized
(a fixed sequence of examples, no example database), so a CI run is a function of the
commit alone and never red by chance. Run ``python -m pytest --hypothesis-profile=explore``
(or any run without ``CI``) to explore new random examples; a failure found that way gets a
pinned regression test.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from solvers.net_env import NET_SLOWDOWN_ENV

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("ci" if os.environ.get("CI") else "explore")


@pytest.fixture
def wide_net(monkeypatch):
    """The wall-clock safety net at 100 x the limit (``PLAN_NET_SLOWDOWN``) for a test that
    asserts a run ended on its deterministic budget: that is about the budget, not the net,
    and the default net (3 x the limit + 5 s) fired on a machine loaded to 8-10 on 2 cores
    (test_a_deterministic_run_says_it_is_reproducible, twice in one day), which makes such a
    test a load test. The tests of the net itself keep the default."""
    monkeypatch.setenv(NET_SLOWDOWN_ENV, "100")
