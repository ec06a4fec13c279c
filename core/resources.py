"""The resource manager: the node pool and the registry of running jobs (DESIGN.md §3.8).

The scheduler decides *which* jobs start; the resource manager places them on nodes, keeps the
running jobs ordered by expected end (for backfill shadow times) and tracks busy nodes and DC
power. An external scheduler plugs in by calling :meth:`Cluster.start` from its ``schedule``.
"""

from __future__ import annotations

import bisect
from typing import Callable, Iterable, Sequence


class NodePool:
    """``n`` nodes numbered ``0..n-1``; placement takes the lowest-numbered free nodes.

    ``allocate(k)`` -> (k node ids ascending, their bit mask); ``allocate_ids(ids)`` takes given
    nodes (mask, or None when any is busy, repeated or out of range); ``release(mask)``.
    Raises RuntimeError on over-allocation or on releasing a free node (a bug in the caller).
    The free set is a Python integer used as a bit set (bit i set = node i free): taking the
    lowest free node is ``mask & -mask``, so an allocation costs O(k) big-integer operations.
    """

    __slots__ = ("n", "free", "_mask")

    def __init__(self, n: int):
        self.n = int(n)
        self.free = self.n
        self._mask = (1 << self.n) - 1

    def allocate(self, k: int) -> tuple[list[int], int]:
        """Take the k lowest-numbered free nodes: returns (ids ascending, bit mask of the ids)."""
        if k > self.free:
            raise RuntimeError(f"allocate({k}) with only {self.free} free nodes")
        mask = self._mask
        out = []
        append = out.append
        taken = 0
        for _ in range(k):
            low = mask & -mask
            append(low.bit_length() - 1)
            mask ^= low
            taken |= low
        self._mask = mask
        self.free -= k
        return out, taken

    def allocate_ids(self, ids: Sequence[int]) -> int | None:
        """Take exactly these nodes: returns their bit mask, or None (nothing taken) when any is
        busy, repeated or out of range."""
        m = 0
        for i in ids:
            if not (0 <= i < self.n):
                return None
            m |= 1 << i
        if m.bit_count() != len(ids) or (self._mask & m) != m:
            return None
        self._mask ^= m
        self.free -= len(ids)
        return m

    def release(self, mask: int) -> None:
        """Free the nodes of an allocation, given its bit mask."""
        if self._mask & mask:
            raise RuntimeError("release of a node that is already free")
        self._mask |= mask
        self.free += mask.bit_count()


class Cluster:
    """What a scheduler sees and acts on during a pass.

    Attributes: ``total_nodes``, ``free_nodes`` (int), ``now`` (s). ``running`` is the list of
    ``(expected_end, job)`` of running jobs, ascending (expected end = start + time limit, as the
    scheduler knows it; never the real run time). ``start(job)`` starts a job now (the engine
    places it and schedules its end); the job must fit (``nodes[job] <= free_nodes``).
    """

    __slots__ = ("pool", "running", "now", "_start", "nodes")

    def __init__(self, pool: NodePool, nodes: Sequence[int], start_cb: Callable[[int], None]):
        self.pool = pool
        self.nodes = nodes
        self.running: list[tuple[int, int]] = []
        self.now = 0
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

    def remove_running(self, expected_end: int, job: int) -> None:
        i = bisect.bisect_left(self.running, (expected_end, job))
        if i >= len(self.running) or self.running[i] != (expected_end, job):
            raise RuntimeError(f"job {job} is not running")
        del self.running[i]
