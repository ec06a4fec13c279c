"""The queue-policy contract (DESIGN.md §3.6) and the registry of policies.

A policy orders the queue: :meth:`Policy.key` maps a job to a sort key, lower first; the
scheduler breaks ties by ``(submit_time, trace_index)``. It reads only a
:class:`~twinsweep.core.jobview.JobView` (no clairvoyance: run times and recorded starts are
absent) and a :class:`~twinsweep.core.jobview.SchedulerContext`, and declares its options as a
frozen dataclass (:class:`~twinsweep.core.options.PluginOptions`) checked before the run.

Modelled on Optuna's ``BaseSampler`` and Ray Tune's ``Searcher``: one required method, optional
hooks that are documented no-ops in the base class, and one registry with the valid names in
every error. A plug-in is a subclass registered in :data:`POLICIES` (``POLICIES.register("name",
MyPolicy)``), installed through the ``twinsweep.policies`` entry-point group, or named
``"module:Class"`` (docs/plugins.md, "Add a policy").
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import numbers
from typing import Any, ClassVar, Mapping, Sequence

from ..jobview import JobView, SchedulerContext
from ..options import PluginOptions, RunOptions, parse_options
from ..registry import Registry, check_plugin_class

__all__ = ["Policy", "PolicyOptions", "POLICIES", "key_problem"]


@dataclasses.dataclass(frozen=True)
class PolicyOptions(RunOptions):
    """Options of a policy without options of its own (the run options only)."""


class Policy(abc.ABC):
    """Queue order. Subclass it, implement :meth:`key`, register it in :data:`POLICIES`.

    Args:
        jobs: the run's jobs as a scheduler may see them (index = job number).
        options: a validated ``Options`` instance, or a dict checked against ``Options`` here
            (ConfigError naming a bad option and the valid ones).
        context: system size and accounts table (None: a context with no accounts and
            ``system_nodes`` = the largest request).

    Class attributes:
        name: the registered name (set by :data:`POLICIES` at registration when empty).
        Options: the options model (a frozen dataclass subclassing :class:`PolicyOptions`).
        dynamic: True when the key depends on time or state (then the queue is re-sorted at
            every pass with :meth:`key_at`).

    Hooks, called by the scheduler (no-ops here; override what you need):
        :meth:`observe` at the start of every pass (even with an empty queue; every job end is
        followed by a pass), :meth:`on_start` with the jobs a pass started, :meth:`on_remove`
        when a queued job leaves the queue without starting (cancelled by its user, the run
        option ``queue_cancelled``).
    """

    name: ClassVar[str] = ""
    Options: ClassVar[type[PolicyOptions]] = PolicyOptions
    dynamic: bool = False

    def __init__(self, jobs: JobView, options: PluginOptions | Mapping[str, Any] | None = None,
                 context: SchedulerContext | None = None):
        if not isinstance(jobs, JobView):
            raise TypeError(f"policy {self.name!r}: jobs must be a JobView, got {type(jobs).__name__}")
        if options is None or isinstance(options, Mapping):
            options = parse_options("policy", self.name or type(self).__name__, self.Options, options or {})
        elif not isinstance(options, self.Options):
            raise TypeError(f"policy {self.name!r}: options must be a dict or {self.Options.__name__}, "
                            f"got {type(options).__name__}")
        if context is None:
            context = SchedulerContext(system_nodes=max(jobs.nodes, default=1) or 1, source=jobs.source)
        self.jobs = jobs
        self.options = options
        self.context = context

    @abc.abstractmethod
    def key(self, job: int) -> float:
        """Sort key of queued ``job`` (lower runs first); ties go to (submit_time, trace_index).

        A real number: an int or a float (numpy's too; ``±inf`` is allowed), never NaN or None,
        so that every two keys compare (:func:`key_problem`; the scheduler raises
        :class:`~twinsweep.core.errors.PluginError` naming the policy, the job and the key
        otherwise)."""

    def key_at(self, job: int, now: int) -> float:
        """Sort key at time ``now`` (s) for a dynamic policy; the static :meth:`key` by default."""
        return self.key(job)

    def observe(self, now: int, cluster) -> None:
        """Hook: the start of a pass at ``now``. ``cluster`` exposes ``free_nodes``,
        ``total_nodes`` and ``running`` ((expected_end, job) ascending; a running job started at
        expected_end − time_limit). No-op by default."""

    def on_start(self, jobs: Sequence[int], now: int) -> None:
        """Hook: the jobs a pass started at ``now``, in start order. No-op by default."""

    def on_remove(self, job: int, now: int) -> None:
        """Hook: queued ``job`` left the queue at ``now`` without starting (cancelled). No-op
        by default."""


def key_problem(key: Any) -> str | None:
    """Why ``key`` cannot be a policy's sort key (:meth:`Policy.key`), or None when it can: a real
    number (``numbers.Real``: int, float, numpy's numbers; ``±inf`` allowed) that is not NaN.
    NaN compares false with everything (the queue order would be undefined), None and other types
    do not compare with numbers (a raw TypeError deep in a sort)."""
    if isinstance(key, numbers.Real):
        return "NaN (it compares false with every key: the queue order would be undefined)" if key != key else None
    if key is None:
        return "None, not a number"
    return f"a {type(key).__name__}, not a real number"


#: RunOptions, not only PolicyOptions: a policy may take the run-level options model as it is.
_check_policy = functools.partial(check_plugin_class, kind="policy", base=Policy, options_base=RunOptions,
                                  public_base="twinsweep.core.policies.Policy",
                                  public_options="twinsweep.core.policies.PolicyOptions", implement="key")


#: Every queue policy: built-ins (registered when :mod:`core.policies` is imported) and plug-ins
#: (entry-point group ``twinsweep.policies``, or a ``"module:Class"`` name).
POLICIES: Registry[type[Policy]] = Registry("policy", "twinsweep.policies", check=_check_policy)
