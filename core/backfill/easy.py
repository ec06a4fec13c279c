"""EASY backfilling (DESIGN.md §3.7; Lifka 1995, "The ANL/IBM SP scheduling system"; Mu'alem &
Feitelson 2001): one reservation, for the head of the policy-ordered queue."""

from __future__ import annotations

import itertools

from .base import BACKFILLS, Backfill

__all__ = ["Easy"]


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
        if started:  # the jobs started in order above run, as the scheduler sees it, to now + limit
            running = sorted(running + [(now + limit[j], j) for j in started])
        shadow, avail = None, free
        for exp_end, j in running:
            avail += nodes[j]
            if avail >= head_n:
                shadow = max(exp_end, now + 1)
                break
        if shadow is None:  # cannot happen: the head fits an empty machine (rejected otherwise)
            raise RuntimeError("EASY: head job can never fit")
        extra = free - head_n
        for exp_end, j in running:
            if max(exp_end, now + 1) > shadow:
                break
            extra += nodes[j]
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
