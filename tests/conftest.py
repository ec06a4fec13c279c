"""Shared pytest helpers.

``data_path(rel)`` finds a real trace under the data folder (``$TWINSWEEP_DATA`` or
``../shared/data``): when it is missing the test is skipped locally, and fails in CI (``CI`` set
to a true value) so that a CI run never passes silently without its data.

``load_cached(rel)`` loads a trace once per test session (the big PWA logs take ~1 s each), for
every test module that needs the same workload. Treat the result as read-only.

In CI a test may skip only for a reason on an allow-list (tests/ci_policy.py, whose hooks this
file installs); the property tests' example budget follows ``TWINSWEEP_HYPOTHESIS_PROFILE``
(tests/hypothesis_budget.py: ``nightly`` draws 25 times more, fresh examples each run). The cache of
parsed traces is off for the whole suite (``TWINSWEEP_CACHE=off``; tests/test_workload_cache.py).
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from ci_policy import skip_or_fail
from ci_policy import pytest_make_collect_report, pytest_runtest_makereport, pytest_terminal_summary  # noqa: F401 - hooks
from hypothesis_budget import hypothesis_profile
from twinsweep.core.data import BUNDLED_DIR, DATA_ENV, data_dir

# nightly: fresh examples on every run, even under CI=1 (hypothesis's own "ci" profile replays
# the same ones); each property test sets its example count through hypothesis_budget.examples
# mutation (tests/mutation_check.py): the CI examples, a failure reported unshrunk (it only has to fail)
settings.register_profile("nightly", derandomize=False, database=None, deadline=None, print_blob=True)
settings.register_profile("mutation", derandomize=True, database=None, deadline=None,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
if hypothesis_profile() != "default":
    settings.load_profile(hypothesis_profile())

# the suite parses every trace itself: the user cache of parsed traces (core/loaders/_cache.py) is
# off, also for the subprocesses the tests start; tests/test_workload_cache.py turns it on per test
os.environ["TWINSWEEP_CACHE"] = "off"


def data_path(rel: str) -> Path:
    """Path of a data file relative to the data folder, else the copy shipped with the package
    (core/bundled/: the quickstart's three traces, byte-identical; the same rule as
    :func:`core.data.resolve_data_path`); skip (locally) or fail (CI) when neither has it."""
    p = data_dir() / rel
    if p.exists():
        return p
    bundled = BUNDLED_DIR / rel
    if bundled.is_file():
        return bundled
    skip_or_fail(f"test data {rel!r} not found under {data_dir()}; set {DATA_ENV} to the folder holding the traces"
                 + _fetch_hint(rel))


def _fetch_hint(rel: str) -> str:
    """``; or download it: twinsweep data fetch NAME`` when the fetch catalogue (core/fetch_catalogue.toml)
    lists the file, else ``""``."""
    from twinsweep.core.errors import UnknownNameError
    from twinsweep.core.fetch import find

    name = Path(rel).name
    try:
        find(name)
    except UnknownNameError:
        return ""
    return f"; or download it: `twinsweep data fetch {name}`"


#: Seconds each cached load took (rel -> s), for speed checks without loading twice.
LOAD_SECONDS: dict[str, float] = {}


@functools.lru_cache(maxsize=None)
def _load(rel: str, fmt: str | None):
    from twinsweep.core.loaders import load_workload

    t0 = time.perf_counter()
    wl = load_workload(data_path(rel), format=fmt)
    LOAD_SECONDS[rel] = time.perf_counter() - t0
    return wl


def load_cached(rel: str, fmt: str | None = None):
    """The Workload of ``rel`` (relative to the data folder), loaded once per session."""
    data_path(rel)  # skip/fail before touching the cache
    return _load(rel, fmt)


@pytest.fixture(name="data_path")
def data_path_fixture():
    """Fixture form of :func:`data_path`: ``def test_x(data_path): p = data_path("pwa-swf/…")``."""
    return data_path


@pytest.fixture(name="load_cached")
def load_cached_fixture():
    """Fixture form of :func:`load_cached`."""
    return load_cached
