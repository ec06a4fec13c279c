"""CI never skips silently (a pytest plugin, loaded by tests/conftest.py).

In CI (the ``CI`` environment variable set to a true value, as ``.ci/run`` does) a test may skip
only for a reason on :data:`CI_SKIP_ALLOWED`; any other skip — a test's own ``pytest.skip``, a
fixture's, a module's ``importorskip`` — is turned into a failure naming the reason, so that a
missing dependency, data folder, compiler or service fails the run instead of shrinking it. The
end of every CI run prints the allow-list and each skip it let through. Outside CI no skip fails:
a developer's machine may lack Slurm, the traces or a compiler and still run the rest; the end of
the run lists each skip reason once, with its count.

Helpers for tests: :func:`in_ci`, and :func:`skip_or_fail` (skip locally, fail in CI: for
prerequisites that CI must have).
"""

from __future__ import annotations

import os
import re

import pytest

#: Skips allowed in CI: regular expression on the skip message -> why it is acceptable. Keep it
#: short; every entry is printed at the end of a CI run.
CI_SKIP_ALLOWED: dict[str, str] = {
    r"test FMU is built for linux64 only": "FMI 2.0 binaries of the test FMU exist for linux64 (x86_64) "
                                           "only; another CI platform cannot load them",
}

_SEEN: list[tuple[str, str, str]] = []  # (test id, skip message, allow-list reason) in this run


def in_ci() -> bool:
    """True when ``CI`` is set to 1/true/yes/on (any case)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")


def skip_or_fail(msg: str) -> None:
    """Skip the calling test with ``msg`` outside CI; fail it in CI. Never returns."""
    if in_ci():
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def allowed_reason(message: str) -> str | None:
    """The allow-list's reason for a skip message, or None when it is not allowed in CI."""
    for pattern, why in CI_SKIP_ALLOWED.items():
        if re.search(pattern, message):
            return why
    return None


def _skip_message(report) -> str:
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        msg = str(lr[2])
    else:
        msg = str(lr)
    return msg[len("Skipped: "):] if msg.startswith("Skipped: ") else msg


def _police(report) -> None:
    if not (in_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    msg = _skip_message(report)
    why = allowed_reason(msg)
    if why is None:
        report.outcome = "failed"
        report.longrepr = (f"skipped in CI for a reason not on the allow-list (tests/ci_policy.py "
                           f"CI_SKIP_ALLOWED): {msg}")
    else:
        _SEEN.append((report.nodeid, msg, why))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _police(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _police(outcome.get_result())


def pytest_terminal_summary(terminalreporter):
    if not in_ci():
        _local_skip_summary(terminalreporter)
        return
    tr = terminalreporter
    tr.section("skips allowed in CI (tests/ci_policy.py)")
    for pattern, why in CI_SKIP_ALLOWED.items():
        tr.write_line(f"allowed: /{pattern}/ — {why}")
    if _SEEN:
        for nodeid, msg, _ in _SEEN:
            tr.write_line(f"SKIPPED {nodeid}: {msg}")
    tr.write_line(f"{len(_SEEN)} test(s) skipped for an allowed reason; any other skip fails in CI")


def _local_skip_summary(tr) -> None:
    """Outside CI: the reasons of this run's skips, each once with its count (``pytest -q`` shows
    only how many were skipped; ``-rs`` lists every test), so that a first run on a machine without
    the traces, Slurm or Chromium says what it left out and how to have it."""
    reports = [r for r in tr.stats.get("skipped", []) if not hasattr(r, "wasxfail")]
    if not reports:
        return
    counts: dict[str, int] = {}
    for r in reports:
        msg = _skip_message(r)
        counts[msg] = counts.get(msg, 0) + 1
    tr.section(f"{len(reports)} test(s) skipped, for {len(counts)} reason(s)")
    for msg, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        tr.write_line(f"{n:5d} x {msg}")
