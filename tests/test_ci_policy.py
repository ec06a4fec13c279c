"""CI never skips silently (tests/ci_policy.py): an inner pytest run on a few skipping tests."""

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

INNER = {
    "conftest.py": "from ci_policy import pytest_make_collect_report, pytest_runtest_makereport, pytest_terminal_summary\n",
    "test_own_skip.py": "import pytest\n\ndef test_needs_frobnicator():\n    pytest.skip('no frobnicator here')\n",
    "test_allowed.py": ("import pytest\n\ndef test_fmu_elsewhere():\n"
                        "    pytest.skip('test FMU is built for linux64 only, not Plan9 mips')\n"),
    "test_fixture_skip.py": ("import pytest\n\n@pytest.fixture\ndef svc():\n    pytest.skip('service down')\n\n"
                             "def test_uses_service(svc):\n    pass\n"),
    "test_module_skip.py": "import pytest\nnumpy_x = pytest.importorskip('no_such_module_for_ci_policy')\n\ndef test_x():\n    pass\n",
    "test_helper.py": ("from ci_policy import skip_or_fail\n\ndef test_prerequisite():\n"
                       "    skip_or_fail('compiler missing')\n"),
    "test_fine.py": "import pytest\n\n@pytest.mark.xfail(reason='known')\ndef test_xfail():\n    assert False\n\ndef test_ok():\n    pass\n",
}


def _run(tmp_path, ci, skip_module=False):
    for name, text in INNER.items():
        if name != "test_module_skip.py" or skip_module:
            (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    if ci:
        env["CI"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_in_ci_only_allow_listed_skips_pass_and_are_printed(tmp_path):
    r = _run(tmp_path, ci=True)
    out = r.stdout
    assert r.returncode == 1, out
    for what in ("no frobnicator here", "service down", "compiler missing"):
        line = next(x for x in out.splitlines() if what in x and ("FAILED" in x or "ERROR" in x))
        assert "allow-list" in line or "compiler missing" in line, line
    assert "skips allowed in CI" in out
    assert "SKIPPED test_allowed.py::test_fmu_elsewhere: test FMU is built for linux64 only" in out
    assert "1 test(s) skipped for an allowed reason" in out
    assert "XFAIL" in out and "PASSED test_fine.py::test_ok" in out  # xfail is not a skip


def test_in_ci_a_module_skip_is_a_collection_error(tmp_path):
    r = _run(tmp_path, ci=True, skip_module=True)
    assert r.returncode != 0
    assert "ERROR test_module_skip.py - skipped in CI for a reason not on the allow-list" in r.stdout


def test_outside_ci_skips_stay_skips_and_their_reasons_are_listed_once(tmp_path):
    r = _run(tmp_path, ci=False, skip_module=True)
    assert r.returncode == 0, r.stdout
    assert "5 skipped" in r.stdout and "skips allowed in CI" not in r.stdout
    assert "5 test(s) skipped, for 5 reason(s)" in r.stdout  # the xfail is not one of them
    for what in ("no frobnicator here", "service down", "compiler missing", "no_such_module_for_ci_policy"):
        assert sum(what in x and " x " in x for x in r.stdout.splitlines()) == 1, (what, r.stdout)
