"""numba's ``njit`` for the twin's compiled passes, imported without loading scipy.linalg.

The first compiled call of a process (a cache load too) builds numba's CPU target, which imports
``numba.np.arraymath``; that module asks at import whether a BLAS is available
(``_HAVE_BLAS = _check_blas()``, numba 0.59-0.68, ``numba/np/arraymath.py``) by *importing*
``scipy.linalg.cython_blas``, and so all of ``scipy.linalg``: 0.15-0.35 s CPU in every fresh
worker process (measured on this project's 2-core host), for passes that use no BLAS at all
(:mod:`core._profile`, :mod:`core._nodearray`: integer loops).

So before that import, :func:`_import_arraymath_with_lazy_blas_probe` answers numba's question by
finding ``cython_blas`` on disk instead (the same answer, as the module is there exactly when the
import would succeed, without running it). Only that probe is replaced, only while
``numba.np.arraymath`` imports; numba's ``ensure_blas`` is restored at once, so code that later
compiles ``np.dot`` or ``np.linalg`` still imports scipy and checks its LAPACK integer width
as numba does. When numba's layout differs (another version) or arraymath is already imported,
nothing is changed: the import is plain. ``bench/bench_overhead.py backends`` shows the effect
on a cold Ray actor (issue 14).
"""

from __future__ import annotations

import importlib.util
import os
import sys


def _cython_blas_on_disk() -> None:
    """Stand-in for ``numba.np.linalg.ensure_blas`` while arraymath imports: returns when scipy's
    ``linalg/cython_blas`` extension module is installed, raises ImportError (as numba's probe
    does) when it is not. Reads the directory listing only; imports nothing."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("scipy 0.16+ is required for linear algebra")
    for root in spec.submodule_search_locations:
        linalg = os.path.join(root, "linalg")
        try:
            names = os.listdir(linalg)
        except OSError:
            continue
        if any(n.startswith("cython_blas.") for n in names):
            return
    raise ImportError("scipy 0.16+ is required for linear algebra")


def _import_arraymath_with_lazy_blas_probe() -> None:
    """Import ``numba.np.arraymath`` with :func:`_cython_blas_on_disk` as its BLAS probe (see the
    module docstring); a plain import when numba's layout is not the expected one."""
    if "numba.np.arraymath" in sys.modules:
        return
    try:
        import numba.np.linalg as linalg
    except ImportError:
        return
    original = getattr(linalg, "ensure_blas", None)
    if original is None:
        return
    linalg.ensure_blas = _cython_blas_on_disk
    try:
        import numba.np.arraymath  # noqa: F401 - its import-time probe is the point
    finally:
        linalg.ensure_blas = original


_import_arraymath_with_lazy_blas_probe()

from numba import njit  # noqa: E402 - after the probe's import

__all__ = ["njit"]
