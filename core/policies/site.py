"""Queue orders of real sites (issue 15: a site's queue order as a documented policy option).

``queue_class``: the queue is ordered by a declared rank of each job's class (its partition: the
queue it was submitted to, in Slurm's sense), highest class first, then first come, first served
(the scheduler's ``(submit_time, trace_index)`` tie-break, DESIGN.md §3.6). Batch systems with
prioritised classes — LoadLeveler classes, NQS queues, Slurm partition ``PriorityTier`` — order
this way before any other factor. Example: the SDSC SP2 log's header lists its queues
interactive, express, high, normal, low, standby (SWF field 15, codes 0..5); its recorded mean
waits rise in that order (express 0.3 h, high 4.8 h, normal 7.9 h, low 10.5 h).

Options: ``order`` — the classes, highest first, separated by spaces or commas (codes or names as
they appear in the job's partition); a class not listed ranks after every listed one (and jobs
without a class with them). ``order = ""`` ranks every class alike (plain FCFS).
"""

from __future__ import annotations

import dataclasses
import re

from .base import POLICIES, Policy, PolicyOptions

__all__ = ["QueueClass", "QueueClassOptions"]


@dataclasses.dataclass(frozen=True)
class QueueClassOptions(PolicyOptions):
    """order: classes highest first (space- or comma-separated); unlisted classes rank last."""

    order: str = ""

    def notes(self) -> list[str]:
        """No ``order``: every class ranks last alike, so the queue is in submit order (as ``fcfs``)."""
        if self.order.strip():
            return []
        return ["policy 'queue_class' without an order option ranks every class alike: the queue is in submit "
                "order, as fcfs (the site's order is in its system file's [site] table, docs/validation.md)"]


@POLICIES.register("queue_class")
class QueueClass(Policy):
    """Class rank (the declared ``order`` of the job's partition), then FCFS (see the module docstring)."""

    name = "queue_class"
    Options = QueueClassOptions

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        names = [x for x in re.split(r"[\s,]+", self.options.order.strip()) if x]
        self._rank = {c: i for i, c in enumerate(dict.fromkeys(names))}
        self._last = len(self._rank)

    def key(self, job):
        c = self.jobs.partition[job]
        return self._rank.get(None if c is None else str(c), self._last)
