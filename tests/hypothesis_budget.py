"""How many examples the property tests draw.

``TWINSWEEP_HYPOTHESIS_PROFILE`` selects the budget: unset or ``default`` is the CI budget (each
property test's own figure); ``nightly`` multiplies it by :data:`NIGHTLY_FACTOR` and draws fresh
examples on every run (hypothesis's CI profile, which ``CI=1`` selects, replays the same ones);
``mutation`` (tests/mutation_check.py) keeps the CI examples and skips shrinking a failure, e.g.

    TWINSWEEP_HYPOTHESIS_PROFILE=nightly python -m pytest -q tests/test_reference_scheduler.py

tests/conftest.py registers and loads the profile.
"""

from __future__ import annotations

import os

NIGHTLY_FACTOR = 25
PROFILES = ("default", "nightly", "mutation")


def hypothesis_profile() -> str:
    """The budget in force; raises ValueError for an unknown name (a typo must not run the CI budget)."""
    name = os.environ.get("TWINSWEEP_HYPOTHESIS_PROFILE", "").strip() or "default"
    if name not in PROFILES:
        raise ValueError(f"TWINSWEEP_HYPOTHESIS_PROFILE={name!r}: expected one of {', '.join(PROFILES)}")
    return name


def examples(n: int) -> int:
    """``n`` examples under the default budget, ``n * NIGHTLY_FACTOR`` under ``nightly``."""
    return n * NIGHTLY_FACTOR if hypothesis_profile() == "nightly" else n
