"""The resource manager: the node pool and the registry of running jobs (DESIGN.md §3.8).

The scheduler decides *which* jobs start; the resource manager places them on nodes, keeps the
running jobs ordered by expected end (for backfill shadow times) and tracks busy nodes and DC
power. An external scheduler plugs in by calling :meth:`Cluster.start` from its ``schedule``.
"""

from __future__ import annotations

import bisect
import heapq
from typing import Callable, Iterable, Sequence


class NodePool:
    """``n`` nodes numbered ``0..n-1``; placement takes the lowest-numbered free nodes.

    ``allocate(k)`` -> list of k node ids (ascending); ``allocate_ids(ids)`` takes given nodes
    (returns False and takes nothing when any is busy or out of range); ``release(ids)``.
    Raises RuntimeError on over-allocation (a bug in the caller: the scheduler must check fit).
    Cost: O(k log n) per allocation (a heap of free ids with lazy deletion).
    """

    __slots__ = ("n", "free", "_is_free", "_heap")

    def __init__(self, n: int):
        self.n = int(n)
        self.free = self.n
        self._is_free = [True] * self.n
        self._heap = list(range(self.n))  # already a heap

    def allocate(self, k: int) -> list[int]:
        if k > self.free:
            raise RuntimeError(f"allocate({k}) with only {self.free} free nodes")
        out = []
        heap, is_free = self._heap, self._is_free
        while len(out) < k:
            i = heapq.heappop(heap)
            if is_free[i]:
                is_free[i] = False
                out.append(i)
        self.free -= k
        return out

    def allocate_ids(self, ids: Sequence[int]) -> bool:
        is_free = self._is_free
        if len(set(ids)) != len(ids) or any(not (0 <= i < self.n) or not is_free[i] for i in ids):
            return False
        for i in ids:
            is_free[i] = False
        self.free -= len(ids)
        return True

    def release(self, ids: Iterable[int]) -> None:
        heap, is_free = self._heap, self._is_free
        k = 0
        for i in ids:
            if is_free[i]:
                raise RuntimeError(f"release of free node {i}")
            is_free[i] = True
            heapq.heappush(heap, i)
            k += 1
        self.free += k
        if len(heap) > 4 * self.n + 64:  # compact stale entries
            self._heap = [i for i in range(self.n) if is_free[i]]


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
