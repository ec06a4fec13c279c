"""The backfill contract (DESIGN.md §3.7) and the registry of backfill variants.

A backfill variant decides, at each scheduling pass, which queued jobs start now. It is given the
queue in policy order, the running jobs' *expected* ends (start + time limit: what a scheduler
knows, never the real end) and the free nodes, and returns the jobs to start, in start order
(placement takes the lowest free nodes in that order). The scheduler starts them and removes
them from the queue. It reads jobs through a :class:`~twinsweep.core.jobview.JobView` (no run
times) and declares its options as a frozen dataclass checked before the run.

A plug-in is a :class:`Backfill` subclass registered in :data:`BACKFILLS`, installed through the
``twinsweep.backfill`` entry-point group, or named ``"module:Class"`` (docs/plugins.md, "Add a
backfill variant").
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from typing import Any, ClassVar, Mapping, Sequence

from ..jobview import JobView, SchedulerContext
from ..options import PluginOptions, parse_options
from ..registry import Registry, check_plugin_class

__all__ = ["Backfill", "BackfillOptions", "BACKFILLS"]


@dataclasses.dataclass(frozen=True)
class BackfillOptions(PluginOptions):
    """Options of a backfill variant without options."""


class Backfill(abc.ABC):
    """A backfill variant. Subclass it, implement :meth:`select`, register it in :data:`BACKFILLS`.

    Args:
        jobs: the run's jobs as a scheduler may see them (index = job number).
        options: a validated ``Options`` instance, or a dict checked against ``Options`` here
            (ConfigError naming a bad option and the valid ones).
        context: system size (and accounts), or None.

    Class attributes: ``name`` (the registered name, set at registration when empty),
    ``Options`` (a frozen dataclass subclassing :class:`BackfillOptions`).

    Hooks (no-ops here): :meth:`on_remove`, called when a queued job leaves the queue without
    starting (cancelled by its user, run option ``queue_cancelled``); a variant that keeps state
    between passes drops what it kept about that job. :meth:`next_wake`, called after each pass
    that had a queue: a variant whose decisions change with the clock alone (not only at job
    ends and submissions, e.g. the ``windows`` variant's synchronization points) returns the
    next time it could start a job it refuses now, and the engine runs a pass then.

    Instance attributes: ``static_queue`` (set by the scheduler: True when the queue order of
    queued jobs never changes between passes, i.e. the policy is not dynamic; a variant may then
    keep state between passes), ``stats`` (dict str -> int of counters reported in the run's
    stats, e.g. ``reservation_delays``).
    """

    name: ClassVar[str] = ""
    Options: ClassVar[type[BackfillOptions]] = BackfillOptions

    def __init__(self, jobs: JobView, options: PluginOptions | Mapping[str, Any] | None = None,
                 context: SchedulerContext | None = None):
        if not isinstance(jobs, JobView):
            raise TypeError(f"backfill {self.name!r}: jobs must be a JobView, got {type(jobs).__name__}")
        if options is None or isinstance(options, Mapping):
            options = parse_options("backfill", self.name or type(self).__name__, self.Options, options or {})
        elif not isinstance(options, self.Options):
            raise TypeError(f"backfill {self.name!r}: options must be a dict or {self.Options.__name__}")
        self.jobs = jobs
        self.options = options
        self.context = context if context is not None else SchedulerContext(
            system_nodes=max(jobs.nodes, default=1) or 1, source=jobs.source)
        self.static_queue = True
        self.stats: dict[str, int] = {}

    @abc.abstractmethod
    def select(self, now: int, queue: Sequence[int], cluster) -> list[int]:
        """The jobs of ``queue`` to start at ``now`` (s), in start order.

        Args:
            now: the pass's time (s).
            queue: queued jobs in policy order (do not modify it).
            cluster: read-only here: ``free_nodes`` (int), ``total_nodes`` (int) and ``running``
                (list of ``(expected_end, job)`` ascending; expected end = start + time limit, s).
        Returns: a list of distinct queued jobs whose nodes fit together in ``free_nodes``; the
        scheduler raises RuntimeError otherwise.
        """

    def next_wake(self, now: int, queue: Sequence[int], cluster) -> int | None:
        """Hook: the earliest time (s, an int > ``now``) at which this variant could start a job
        of ``queue`` that it refuses at ``now`` for a reason other than a running job ending (a
        rule of the clock, say), or None (default: the variant's decisions change only at events,
        job ends and submissions, which run a pass anyway).

        Called by the scheduler right after :meth:`select` at the same ``now``, with the queue
        left after its starts (same ``cluster``: its ``free_nodes`` already count them). The
        engine adds the time as a timer (core/kernel.py: a pass at that second, with a
        scheduling cycle at its next multiple), so a job starts at the synchronisation point
        itself instead of at the next event. A wake-up that starts nothing costs one pass; a
        time <= ``now`` is a bug in the variant (RuntimeError from the scheduler). Free nodes
        only grow at job ends (events), so a variant need not wake for a job that does not fit
        in ``cluster.free_nodes``.
        """
        return None

    def on_remove(self, job: int, now: int) -> None:
        """Hook: queued ``job`` left the queue at ``now`` without starting (cancelled); between
        two passes the queue may lose jobs this way as well as gain submissions. No-op by default."""


_check_backfill = functools.partial(check_plugin_class, kind="backfill", base=Backfill, options_base=PluginOptions,
                                    public_base="twinsweep.core.backfill.Backfill",
                                    public_options="twinsweep.core.backfill.BackfillOptions", implement="select")


#: Every backfill variant: built-ins (registered when :mod:`core.backfill` is imported) and
#: plug-ins (entry-point group ``twinsweep.backfill``, or a ``"module:Class"`` name).
BACKFILLS: Registry[type[Backfill]] = Registry("backfill", "twinsweep.backfill", check=_check_backfill)
