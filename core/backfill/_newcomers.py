"""Which queued jobs arrived since a backfill variant's last pass, when nothing else changed.

A variant that keeps its last pass's result (conservative's profile, EASY's reservation) may
reuse it when, between two passes, the queue only gained submissions and the machine did not
change: no job ended, no availability hold came or went, and every new job sits behind every
old one (static queue order). Then only the newcomers need a decision. Starts happen only in
passes, so :attr:`Cluster.changes` after a pass's own starts tells whether anything else
happened since.
"""

from __future__ import annotations

__all__ = ["Newcomers"]


class Newcomers:
    """The bookkeeping of one variant: :meth:`record` after each pass, :meth:`first_new` before
    the next, :meth:`forget` when a queued job leaves without starting (a cancellation).

    ``kept``: jobs the last pass left queued (-1: nothing recorded), ``tail``: the last of them
    in queue order, ``changes``: :attr:`Cluster.changes` after the last pass's starts."""

    __slots__ = ("kept", "tail", "changes")

    def __init__(self):
        self.kept, self.tail, self.changes = -1, -1, -1

    def forget(self) -> None:
        self.kept = -1

    def record(self, queue, started, cluster) -> None:
        """After a pass over ``queue`` that starts ``started`` (in queue order) on ``cluster``."""
        # Cluster.changes after this pass's starts (each start adds one running entry): any later
        # change (an end, a node availability period taking or returning nodes) forbids the reuse
        self.changes = cluster.changes + len(started)
        self.kept = len(queue) - len(started)
        if self.kept:
            self.tail = queue[-1] if not started or started[-1] != queue[-1] else _last_not_in(queue, set(started))

    def first_new(self, queue, cluster) -> int | None:
        """The index in ``queue`` of the first job submitted since the last pass (the jobs before
        it are exactly the ones that pass left queued, in the same order; ``len(queue)`` when no
        job is new), or None when the machine changed, the queue lost a job or a newcomer sits
        ahead of an old job."""
        m = self.kept
        if m < 0 or self.changes != cluster.changes:
            return None
        if m == 0 or (len(queue) >= m and queue[m - 1] == self.tail):
            return m
        return None


def _last_not_in(q, gone: set) -> int:
    for j in reversed(q):
        if j not in gone:
            return j
    raise RuntimeError("no job left in the queue")
