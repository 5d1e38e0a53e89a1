"""Suite-wide settings.

Hypothesis: under CI (``CI`` set, as ``.ci/run`` runs) every property test is derandomized
(a fixed sequence of examples, no example database), so a CI run is a function of the
commit alone and never red by chance. Run ``python -m pytest --hypothesis-profile=explore``
(or any run without ``CI``) to explore new random examples; a failure found that way gets a
pinned regression test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("ci" if os.environ.get("CI") else "explore")
