"""The basic queue orders of DESIGN.md §3.6: ``fcfs``, ``sjf``, ``ljf``, ``priority``."""

from __future__ import annotations

import math

from ..errors import ConfigError
from .base import POLICIES, Policy

__all__ = ["FCFS", "SJF", "LJF", "TracePriority"]


@POLICIES.register("fcfs")
class FCFS(Policy):
    """First come, first served: submit time ascending."""

    name = "fcfs"

    def key(self, job):
        return self.jobs.submit[job]


@POLICIES.register("sjf")
class SJF(Policy):
    """Shortest job first by *requested* time limit, ascending (DESIGN.md §3.6): the effective
    limit, never the run time, which no scheduler knows before the job ends."""

    name = "sjf"

    def key(self, job):
        return self.jobs.time_limit[job]


@POLICIES.register("ljf")
class LJF(Policy):
    """Largest job first: nodes requested, descending."""

    name = "ljf"

    def key(self, job):
        return -self.jobs.nodes[job]


@POLICIES.register("priority")
class TracePriority(Policy):
    """The trace's priority column, descending; jobs without one after all others.

    Raises ConfigError when the trace has no priority at all (naming the trace)."""

    name = "priority"

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        if not any(not math.isnan(p) for p in jobs.priority):
            raise ConfigError(
                f"policy 'priority' needs the workload column 'priority', which is empty in "
                f"{jobs.source or 'this trace'}; choose fcfs, sjf or ljf"
            )

    def key(self, job):
        p = self.jobs.priority[job]
        return math.inf if math.isnan(p) else -p
