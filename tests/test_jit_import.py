"""core._jit: numba imported for the twin's compiled passes without loading scipy.linalg, and with
numba's BLAS support intact afterwards (issue 14: a cold worker's start-up)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from twinsweep.core import _jit


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_compiled_pass_loads_without_scipy_linalg_and_blas_still_works():
    # a fresh process: the profile pass runs (compiled or loaded from numba's cache) and
    # scipy.linalg is not imported; numba still reports a BLAS, and np.dot compiled afterwards
    # imports scipy then and gives the right number (numba's own ensure_blas was restored)
    got = _run(
        "import sys, numpy as np\n"
        "from twinsweep.core import _nodearray\n"
        "free = np.ones(8, dtype=np.bool_)\n"
        "ids = _nodearray.take_lowest(free, 3, 0)\n"
        "import numba.np.arraymath as am, numba.np.linalg as la\n"
        "print(ids.tolist(), int(free.sum()), 'scipy.linalg' in sys.modules, am._HAVE_BLAS,\n"
        "      la.ensure_blas.__module__)\n"
        "import numba\n"
        "f = numba.njit(lambda a, b: np.dot(a, b))\n"
        "print(f(np.arange(3.0), np.arange(3.0)), 'scipy.linalg' in sys.modules)\n")
    first, second = got.splitlines()[-2:]
    assert first == "[0, 1, 2] 5 False True numba.np.linalg"
    assert second == "5.0 True"


def test_probe_answers_as_the_import_would(monkeypatch):
    # scipy is a dependency: its cython_blas is on disk, the probe returns
    assert importlib.util.find_spec("scipy.linalg.cython_blas") is not None
    _jit._cython_blas_on_disk()
    # no scipy at all: ImportError, as numba's own probe raises
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a))
    with pytest.raises(ImportError, match="scipy"):
        _jit._cython_blas_on_disk()


def test_probe_without_cython_blas_raises(monkeypatch, tmp_path):
    # a scipy whose linalg folder has no cython_blas module: ImportError
    (tmp_path / "linalg").mkdir()
    (tmp_path / "linalg" / "cython_lapack.so").write_bytes(b"")
    spec = importlib.util.spec_from_loader("scipy", loader=None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec)
    with pytest.raises(ImportError):
        _jit._cython_blas_on_disk()
    (tmp_path / "linalg" / "cython_blas.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    _jit._cython_blas_on_disk()
