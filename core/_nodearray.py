"""Compiled allocation and release on the node pool's free-node array (large machines).

:class:`core.resources.NodePool` above :data:`~core.resources.NodePool.BITSET_MAX_NODES` nodes keeps
its free set as a numpy boolean array. A vectorised allocation (``flatnonzero(free)[:k]``, then a
fancy-indexed write) scans and copies the whole array at every start: ~14 µs per start and release
on CEA-Curie's 5,832 nodes, a third of that trace's run. These loops stop at the k-th free node
and touch only the nodes they take or give back (~3 µs with the call). Compiled with numba, as
:mod:`core._profile` is (integer work only: ``NUMBA_DISABLE_JIT=1`` runs the same code
interpreted, with the same results). Imported only by pools of more than
:data:`~core.resources.NodePool.BITSET_MAX_NODES` nodes.
"""

from __future__ import annotations

import numpy as np
from ._jit import njit

__all__ = ["take_lowest", "give_back"]


@njit(cache=True, nogil=True)
def take_lowest(is_free, k, lowest):
    """The ``k`` lowest free node ids (int32 array, ascending), marked busy in ``is_free``.

    ``is_free``: bool array (one per node, True = free), changed in place; ``lowest``: an index at
    or below the lowest free node (the scan starts there). The caller checks that ``k`` nodes are
    free (else this reads past the array: IndexError under ``NUMBA_DISABLE_JIT``, undefined
    compiled)."""
    out = np.empty(k, np.int32)
    c = 0
    i = lowest
    while c < k:
        if is_free[i]:
            is_free[i] = False
            out[c] = i
            c += 1
        i += 1
    return out


@njit(cache=True, nogil=True)
def give_back(is_free, ids):
    """Mark the node ids ``ids`` (int array) free in ``is_free``; returns the lowest of them, or
    -1 (and changes nothing) when one is free already (or repeated)."""
    for i in ids:
        if is_free[i]:
            return -1
    lo = len(is_free)
    for i in ids:
        if is_free[i]:  # repeated in ids: every one was busy before, so undo by marking them all busy
            for u in ids:
                is_free[u] = False
            return -1
        is_free[i] = True
        if i < lo:
            lo = i
    return lo
