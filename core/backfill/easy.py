"""EASY backfilling (DESIGN.md §3.7; Lifka 1995, "The ANL/IBM SP scheduling system"; Mu'alem &
Feitelson 2001): one reservation, for the head of the policy-ordered queue."""

from __future__ import annotations

import bisect
import itertools
import math

from .base import BACKFILLS, Backfill

__all__ = ["Easy"]

#: running jobs summed first when looking for the shadow job (most heads fit after a few ends)
_PREFIX = 64


@BACKFILLS.register("easy")
class Easy(Backfill):
    """``easy``: jobs start in queue order while they fit; the first that does not is the head and
    gets the one reservation at the *shadow time*: walking running jobs by expected end (start +
    time limit; a job past it is taken to end at now + 1), the first at which enough nodes are
    free. ``extra`` = nodes free at the shadow time minus the head's. A later job starts now if it
    fits now and ends by the shadow time (by its limit), or else needs no more than ``extra``
    nodes (``extra`` then shrinks by its size)."""

    name = "easy"

    def select(self, now, queue, cluster):
        nodes, limit = self.jobs.nodes, self.jobs.time_limit
        q, started = queue, []
        free = cluster.free_nodes
        i, nq = 0, len(q)
        while i < nq and nodes[q[i]] <= free:
            started.append(q[i])
            free -= nodes[q[i]]
            i += 1
        if i >= nq or free == 0:
            return started
        head_n = nodes[q[i]]
        running = cluster.running
        run_nodes = getattr(cluster, "running_nodes", None)
        if run_nodes is None:  # a cluster that gives only the contract's `running`
            run_nodes = [nodes[j] for _, j in running]
        if started:  # the jobs started in order above run, as the scheduler sees it, to now + limit
            running, run_nodes = running[:], run_nodes[:]
            for j in started:
                entry = (now + limit[j], j)
                at = bisect.bisect_right(running, entry)
                running.insert(at, entry)
                run_nodes.insert(at, nodes[j])
        # walking running jobs by expected end, nodes freed up to each: the first at which the head
        # fits is the shadow job (a running sum of node counts, non-decreasing: one bisection; the
        # sum covers the first _PREFIX running jobs, all of them only when the head needs more)
        freed = list(itertools.accumulate(itertools.islice(run_nodes, _PREFIX)))
        if len(freed) < len(run_nodes) and freed[-1] < head_n - free:
            freed = list(itertools.accumulate(run_nodes))
        s = bisect.bisect_left(freed, head_n - free)
        if s >= len(freed):  # cannot happen: the head fits an empty machine (rejected otherwise)
            raise RuntimeError("EASY: head job can never fit")
        shadow = max(running[s][0], now + 1)
        # extra: nodes free at the shadow time (every job expected to end by it; a job past its
        # expected end counts as ending at now + 1 <= shadow) minus the head's
        last = bisect.bisect_right(running, (shadow, math.inf))
        if last > len(freed):  # jobs ending at the shadow time past the first sum
            freed = list(itertools.accumulate(run_nodes))
        extra = free - head_n + (freed[last - 1] if last else 0)
        room = shadow - now  # a later job whose limit is at most this ends by the shadow time
        for j in itertools.islice(q, i + 1, None):
            n = nodes[j]
            if n > free:
                continue
            if limit[j] <= room:
                started.append(j)
            elif n <= extra:
                started.append(j)
                extra -= n
            else:
                continue
            free -= n
            if free == 0:
                break
        return started
