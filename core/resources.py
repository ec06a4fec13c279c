"""The resource manager: the node pool and the registry of running jobs (DESIGN.md §3.8).

The scheduler decides *which* jobs start; the resource manager places them on nodes, keeps the
running jobs ordered by expected end (for backfill shadow times) and tracks busy nodes and DC
power. An external scheduler plugs in by calling :meth:`Cluster.start` from its ``schedule``.
"""

from __future__ import annotations

import bisect

import numpy as np
from typing import Callable, Sequence


class NodePool:
    """``n`` nodes numbered ``0..n-1``; placement takes the lowest-numbered free nodes.

    ``allocate(k)`` -> the k lowest free node ids (ascending; a list, or an int32 array on large
    machines); ``allocate_ids(ids)`` takes the given nodes (returns them, or None and takes nothing
    when any is busy, repeated or out of range); ``release(ids)`` frees what an allocation returned.
    Raises RuntimeError on over-allocation or on releasing a free node (a bug in the caller).

    Two representations of the free set, chosen by size (same results): up to
    :data:`BITSET_MAX_NODES` nodes a Python integer used as a bit set (the lowest free node is
    ``mask & -mask``: O(k) small big-integer operations); above it a numpy boolean array (one
    vectorised O(n) scan per allocation, whatever the job size, and compact int32 placements).
    """

    BITSET_MAX_NODES = 1024
    __slots__ = ("n", "free", "_mask", "_is_free", "allocate", "allocate_ids", "release")

    def __init__(self, n: int):
        self.n = int(n)
        self.free = self.n
        if self.n <= self.BITSET_MAX_NODES:
            self._mask = (1 << self.n) - 1
            self.allocate, self.allocate_ids, self.release = self._b_alloc, self._b_alloc_ids, self._b_release
        else:
            self._is_free = np.ones(self.n, dtype=bool)
            self.allocate, self.allocate_ids, self.release = self._a_alloc, self._a_alloc_ids, self._a_release

    # -- bit set ------------------------------------------------------------------------------------
    def _b_alloc(self, k: int) -> list[int]:
        if k > self.free:
            raise RuntimeError(f"allocate({k}) with only {self.free} free nodes")
        mask = self._mask
        out = []
        append = out.append
        for _ in range(k):
            low = mask & -mask
            append(low.bit_length() - 1)
            mask ^= low
        self._mask = mask
        self.free -= k
        return out

    def _b_alloc_ids(self, ids: Sequence[int]) -> list[int] | None:
        ids = [int(i) for i in ids]
        m = 0
        for i in ids:
            if not (0 <= i < self.n):
                return None
            m |= 1 << i
        if m.bit_count() != len(ids) or (self._mask & m) != m:
            return None
        self._mask ^= m
        self.free -= len(ids)
        return ids

    def _b_release(self, ids) -> None:
        m = 0
        for i in ids:
            m |= 1 << i
        if self._mask & m or m.bit_count() != len(ids):
            raise RuntimeError("release of a node that is already free")
        self._mask |= m
        self.free += len(ids)

    # -- numpy array --------------------------------------------------------------------------------
    def _a_alloc(self, k: int) -> np.ndarray:
        if k > self.free:
            raise RuntimeError(f"allocate({k}) with only {self.free} free nodes")
        ids = np.flatnonzero(self._is_free)[:k].astype(np.int32)
        self._is_free[ids] = False
        self.free -= k
        return ids

    def _a_alloc_ids(self, ids: Sequence[int]) -> np.ndarray | None:
        a = np.asarray(ids, dtype=np.int64)
        if a.size and (a.min() < 0 or a.max() >= self.n):
            return None
        if np.unique(a).size != a.size or not self._is_free[a].all():
            return None
        self._is_free[a] = False
        self.free -= int(a.size)
        return a.astype(np.int32)

    def _a_release(self, ids) -> None:
        if self._is_free[ids].any():
            raise RuntimeError("release of a node that is already free")
        self._is_free[ids] = True
        self.free += len(ids)


class Cluster:
    """What a scheduler sees and acts on during a pass.

    Attributes: ``total_nodes``, ``free_nodes`` (int), ``now`` (s). ``running`` is the list of
    ``(expected_end, job)`` of running jobs, ascending (expected end = start + time limit, as the
    scheduler knows it; never the real run time); ``changes`` counts every change to it (a
    scheduler that keeps state between passes compares it). ``start(job)`` starts a job now (the engine
    places it and schedules its end); the job must fit (``nodes[job] <= free_nodes``).
    """

    __slots__ = ("pool", "running", "now", "_start", "nodes", "changes")

    def __init__(self, pool: NodePool, nodes: Sequence[int], start_cb: Callable[[int], None]):
        self.pool = pool
        self.nodes = nodes
        self.running: list[tuple[int, int]] = []
        self.now = 0
        self.changes = 0  # count of add_running/remove_running calls: tells a scheduler the set changed
        self._start = start_cb

    @property
    def total_nodes(self) -> int:
        return self.pool.n

    @property
    def free_nodes(self) -> int:
        return self.pool.free

    def start(self, job: int) -> None:
        self._start(job)

    def add_running(self, expected_end: int, job: int) -> None:
        bisect.insort(self.running, (expected_end, job))
        self.changes += 1

    def remove_running(self, expected_end: int, job: int) -> None:
        i = bisect.bisect_left(self.running, (expected_end, job))
        if i >= len(self.running) or self.running[i] != (expected_end, job):
            raise RuntimeError(f"job {job} is not running")
        del self.running[i]
        self.changes += 1
