"""EASY backfilling (DESIGN.md §3.7; Lifka 1995, "The ANL/IBM SP scheduling system"; Mu'alem &
Feitelson 2001): one reservation, for the head of the policy-ordered queue."""

from __future__ import annotations

import itertools

from ._newcomers import Newcomers
from .base import BACKFILLS, Backfill

__all__ = ["Easy"]


@BACKFILLS.register("easy")
class Easy(Backfill):
    """``easy``: jobs start in queue order while they fit; the first that does not is the head and
    gets the one reservation at the *shadow time*: walking running jobs by expected end (start +
    time limit; a job past it is taken to end at now + 1), the first at which enough nodes are
    free. ``extra`` = nodes free at the shadow time minus the head's. A later job starts now if it
    fits now and ends by the shadow time (by its limit), or else needs no more than ``extra``
    nodes (``extra`` then shrinks by its size).

    Between two passes that only saw submissions (no end, no availability change, static queue
    order, every newcomer behind every old job, the shadow time still ahead), the head, its
    shadow time, the free nodes and ``extra`` are those the last pass left, and every old job
    refused then is refused again (``free`` and ``extra`` are no larger, the room before the
    shadow time is smaller): the pass decides the newcomers only, with the same result as a
    full pass (``reuse_pass``; tests compare both). ``reused`` counts such passes.
    """

    name = "easy"

    #: decide only the newcomers where that is exact (tests turn it off to compare with a full pass)
    reuse_pass = True

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        self._since = Newcomers()
        self._kept = None  # (free, extra, shadow) after the last pass, when it left a blocked head
        self.reused = 0

    def on_remove(self, job, now):
        """A queued job left (cancelled): the next pass is a full one."""
        self._kept = None

    def select(self, now, queue, cluster):
        q = queue
        kept = self._kept
        if kept is not None and kept[2] > now and kept[0] == cluster.free_nodes and self.reuse_pass \
                and self.static_queue:
            k = self._since.first_new(q, cluster)
            if k is not None:
                self.reused += 1
                free, extra, shadow = kept
                started: list[int] = []
                free, extra = self._backfill(q, k, started, free, extra, shadow - now)
                self._done(q, started, cluster, free, extra, shadow)
                return started
        nodes, limit = self.jobs.nodes, self.jobs.time_limit
        started = []
        free = cluster.free_nodes
        i, nq = 0, len(q)
        while i < nq and nodes[q[i]] <= free:
            started.append(q[i])
            free -= nodes[q[i]]
            i += 1
        if i >= nq or free == 0:
            self._kept = None
            return started
        head_n = nodes[q[i]]
        running = cluster.running
        if started:  # the jobs started in order above run, as the scheduler sees it, to now + limit
            running = sorted(running + [(now + limit[j], j) for j in started])
        # one walk: the shadow time (the first expected end at which the head fits), then the
        # entries after it that end by it too (a job past its limit counts as ending at now + 1)
        now1 = now + 1
        avail, k, shadow = free, 0, None
        for exp_end, j in running:
            avail += nodes[j]
            k += 1
            if avail >= head_n:
                shadow = exp_end if exp_end > now1 else now1
                break
        if shadow is None:  # cannot happen: the head fits an empty machine (rejected otherwise)
            raise RuntimeError("EASY: head job can never fit")
        extra = avail - head_n  # every entry up to the shadow's ends by it (sorted, clamped alike)
        for exp_end, j in itertools.islice(running, k, None):
            if exp_end > shadow:  # clamped at now + 1 <= shadow: the same test
                break
            extra += nodes[j]
        free, extra = self._backfill(q, i + 1, started, free, extra, shadow - now)
        self._done(q, started, cluster, free, extra, shadow)
        return started

    def _backfill(self, q, first, started, free, extra, room):
        """The backfill scan of ``q[first:]``: appends the jobs that start to ``started``; returns
        the free nodes and ``extra`` left. ``room``: shadow time - now (s); a job whose limit is at
        most this ends by the shadow time."""
        nodes, limit = self.jobs.nodes, self.jobs.time_limit
        if free == 0:
            return free, extra
        for j in itertools.islice(q, first, None):
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
        return free, extra

    def _done(self, q, started, cluster, free, extra, shadow):
        """After a pass that left a blocked head: what the next pass may reuse."""
        self._kept = (free, extra, shadow)
        self._since.record(q, started, cluster)
