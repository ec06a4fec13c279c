"""Backfill variants without reservations (DESIGN.md §3.7): ``none`` and ``firstfit``."""

from __future__ import annotations

from .base import BACKFILLS, Backfill

__all__ = ["NoBackfill", "FirstFit"]


@BACKFILLS.register("none")
class NoBackfill(Backfill):
    """``none``: start jobs in queue order while the next one fits; stop at the first that does
    not (strict queue order)."""

    name = "none"

    def select(self, now, queue, cluster):
        nodes, started = self.jobs.nodes, []
        free = cluster.free_nodes
        for j in queue:
            if nodes[j] > free:
                break
            started.append(j)
            free -= nodes[j]
        return started


@BACKFILLS.register("firstfit")
class FirstFit(Backfill):
    """``firstfit``: start every queued job that fits, in queue order; no reservation (large jobs
    may starve)."""

    name = "firstfit"

    def select(self, now, queue, cluster):
        nodes, started = self.jobs.nodes, []
        free = cluster.free_nodes
        for j in queue:
            if free == 0:
                break
            if nodes[j] <= free:
                started.append(j)
                free -= nodes[j]
        return started
