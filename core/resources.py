"""The resource manager: the node pool and the registry of running jobs (DESIGN.md §3.8).

The scheduler decides *which* jobs start; the resource manager places them on nodes, keeps the
running jobs ordered by expected end (for backfill shadow times) and tracks busy nodes and DC
power. A scheduler acts only through :meth:`Cluster.start`; the engine applies what it started.
"""

from __future__ import annotations

import bisect

import numpy as np
from typing import Sequence


class NodePool:
    """``n`` nodes numbered ``0..n-1``; placement takes the lowest-numbered free nodes.

    ``allocate(k)`` -> the k lowest free node ids (ascending; a list, or an int32 array on large
    machines); ``allocate_ids(ids)`` takes the given nodes (returns them, or None and takes nothing
    when any is busy, repeated or out of range); ``release(ids)`` frees what an allocation returned.
    Raises RuntimeError on over-allocation or on releasing a free node (a bug in the caller).

    Two representations of the free set, chosen by size (same results): up to
    :data:`BITSET_MAX_NODES` nodes a Python integer used as a bit set, walked by *runs* of
    consecutive free nodes, lowest first (``low = mask & -mask`` is a run's first node and
    ``(mask + low) & mask`` the mask without that run: the carry clears it), so taking k nodes
    costs a few small big-integer operations per run of free nodes, not per node; above it a
    numpy boolean array (one vectorised O(n) scan per allocation, whatever the job size, and
    compact int32 placements): the compiled loops of :mod:`core._nodearray` stop at the k-th free node,
    from a remembered index at or below the lowest free one.
    """

    BITSET_MAX_NODES = 1024
    __slots__ = ("n", "free", "_mask", "_is_free", "_lowest", "_take", "_give", "allocate", "allocate_ids", "release")

    def free_ranges(self) -> list[tuple[int, int]]:
        """The free nodes as ascending inclusive ranges ``[(first, last), ...]``."""
        if self.n <= self.BITSET_MAX_NODES:
            out = []
            mask = self._mask
            while mask:
                low = mask & -mask
                above = (mask + low) & mask
                out.append((low.bit_length() - 1, (mask ^ above).bit_length() - 1))
                mask = above
            return out
        d = np.diff(np.concatenate(([0], self._is_free.astype(np.int8), [0])))
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1) - 1
        return [(int(a), int(b)) for a, b in zip(starts, ends)]

    def __init__(self, n: int):
        self.n = int(n)
        self.free = self.n
        if self.n <= self.BITSET_MAX_NODES:
            self._mask = (1 << self.n) - 1
            self.allocate, self.allocate_ids, self.release = self._b_alloc, self._b_alloc_ids, self._b_release
        else:
            from ._nodearray import give_back, take_lowest  # numba: only machines this large pay its import

            self._is_free = np.ones(self.n, dtype=bool)
            self._lowest = 0  # at or below the lowest free node
            self._take, self._give = take_lowest, give_back
            self.allocate, self.allocate_ids, self.release = self._a_alloc, self._a_alloc_ids, self._a_release

    # -- bit set ------------------------------------------------------------------------------------
    def _b_alloc(self, k: int) -> list[int]:
        if k > self.free:
            raise RuntimeError(f"allocate({k}) with only {self.free} free nodes")
        mask = self._mask
        self.free -= k
        if k == 1:
            low = mask & -mask
            self._mask = mask ^ low
            return [low.bit_length() - 1]
        out: list[int] = []
        while k:
            low = mask & -mask
            first = low.bit_length() - 1
            above = (mask + low) & mask  # the mask without its lowest run of free nodes
            run = (mask ^ above).bit_length() - first
            if run >= k:
                out.extend(range(first, first + k))
                mask ^= ((1 << k) - 1) << first
                break
            out.extend(range(first, first + run))
            mask = above
            k -= run
        self._mask = mask
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
        if len(ids) > 2 and ids[-1] - ids[0] == len(ids) - 1 and ids == list(range(ids[0], ids[-1] + 1)):
            m = ((1 << len(ids)) - 1) << ids[0]  # one run of consecutive nodes (list compare in C)
        else:
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
        ids = self._take(self._is_free, k, self._lowest)
        self.free -= k
        if k:
            self._lowest = int(ids[-1]) + 1  # every free node below it was taken
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
        lo = self._give(self._is_free, np.asarray(ids, dtype=np.int32))
        if lo < 0:
            raise RuntimeError("release of a node that is already free")
        self.free += len(ids)
        if lo < self._lowest:
            self._lowest = lo


class Cluster:
    """What a scheduler sees and acts on during a pass (the resource manager's side of the contract).

    Attributes: ``total_nodes``, ``free_nodes`` (int), ``now`` (s). ``running`` is the list of
    ``(expected_end, job)`` of running jobs, ascending (expected end = start + time limit, as the
    scheduler knows it; never the real run time; availability holds appear as one-node "jobs"
    numbered past the window's jobs, ending when their period ends); ``changes`` counts every
    change to it (a scheduler that keeps state between passes compares it).

    :meth:`start` starts a job now: it checks the fit, takes the nodes from the node pool, records
    the expected end and queues the start; the engine applies the queued starts after the call
    that made them (real end, power, events: :meth:`pop_started`). No clairvoyance by
    construction (DESIGN.md §3.3): a Cluster holds the node pool, the requests and the time
    limits (what the :class:`~twinsweep.core.jobview.JobView` shows) and nothing else — no run
    time, recorded start or end is reachable from it, through attributes or closures.

    Args: ``pool`` (the :class:`NodePool`), ``nodes`` and ``time_limit`` (per job: nodes
    requested, effective time limit in s; the JobView's lists, holds included).
    """

    __slots__ = ("_pool", "_nodes", "_limit", "running", "now", "changes", "_started")

    def __init__(self, pool: NodePool, nodes: Sequence[int], time_limit: Sequence[int]):
        self._pool = pool
        self._nodes = nodes
        self._limit = time_limit
        self.running: list[tuple[int, int]] = []
        self.now = 0
        self.changes = 0  # count of changes to `running`: tells a scheduler the set changed
        self._started: list[tuple[int, object]] = []  # (job, node ids) started since the engine's last look

    @property
    def total_nodes(self) -> int:
        return self._pool.n

    @property
    def free_nodes(self) -> int:
        return self._pool.free

    def free_node_ranges(self) -> list[tuple[int, int]]:
        """The free nodes as ascending inclusive ranges ``[(first, last), ...]``."""
        return self._pool.free_ranges()

    def start(self, job: int, nodes: Sequence[int] | None = None) -> None:
        """Start ``job`` now, on the lowest-numbered free nodes, or on exactly ``nodes`` (ids).

        Raises RuntimeError when the job does not fit (``nodes[job] > free_nodes``: a bug in the
        scheduler), ValueError when ``nodes`` is not ``nodes[job]`` distinct free node ids.
        """
        if nodes is not None:
            if not self.try_start(job, nodes):
                raise ValueError(f"job {job} needs {self._nodes[job]} node(s); cannot start it on {list(nodes)!r} "
                                 f"(not that many distinct, existing, free nodes)")
            return
        k = self._nodes[job]
        pool = self._pool
        if k > pool.free:
            raise RuntimeError(f"scheduler started job {job} ({k} nodes) with {pool.free} free")
        self._started.append((job, pool.allocate(k)))
        bisect.insort(self.running, (self.now + self._limit[job], job))
        self.changes += 1

    def try_start(self, job: int, nodes: Sequence[int]) -> bool:
        """Start ``job`` now on exactly the node ids ``nodes`` when they are ``nodes[job]``
        distinct free nodes, and return True; else change nothing and return False."""
        if len(nodes) != self._nodes[job]:
            return False
        ids = self._pool.allocate_ids(nodes)
        if ids is None:
            return False
        self._started.append((job, ids))
        bisect.insort(self.running, (self.now + self._limit[job], job))
        self.changes += 1
        return True

    def pop_started(self) -> list[tuple[int, object]]:
        """Engine side: the ``(job, node ids)`` started since the last call, in start order."""
        out = self._started
        if out:
            self._started = []
        return out

    def add_running(self, expected_end: int, job: int) -> None:
        """Engine side: a running entry that is not a start (an availability hold)."""
        bisect.insort(self.running, (expected_end, job))
        self.changes += 1

    def add_running_many(self, entries: Sequence[tuple[int, int]]) -> None:
        """Engine side: :meth:`add_running` of every ``(expected_end, job)`` of ``entries`` at once
        (an availability period's holds taken in one drain): one merge instead of one insertion
        each, so that taking k nodes costs O(k + running), not O(k x running)."""
        if entries:
            self.running.extend(entries)
            self.running.sort()
            self.changes += len(entries)

    def remove_running_many(self, entries: Sequence[tuple[int, int]]) -> None:
        """Engine side: :meth:`remove_running` of every ``(expected_end, job)`` of ``entries`` at
        once, in one pass over ``running``. Raises RuntimeError naming a job that is not running
        (and changes nothing)."""
        gone = set(entries)
        if not gone:
            return
        kept = [e for e in self.running if e not in gone]
        if len(self.running) - len(kept) != len(gone):
            missing = sorted(gone - set(self.running))
            raise RuntimeError(f"job {missing[0][1]} is not running")
        self.running[:] = kept
        self.changes += len(gone)

    def remove_running(self, expected_end: int, job: int) -> None:
        """Engine side: a running entry leaves (a job ended, a hold gave its node back)."""
        i = bisect.bisect_left(self.running, (expected_end, job))
        if i >= len(self.running) or self.running[i] != (expected_end, job):
            raise RuntimeError(f"job {job} is not running")
        del self.running[i]
        self.changes += 1
