"""What a scheduler may know about jobs and the run (DESIGN.md §3.3, no clairvoyance).

:class:`JobView` is the only job data a policy or backfill variant receives. It holds what a real
batch scheduler knows once a job is submitted — its request (nodes), effective time limit, submit
time, user / account / partition, trace priority and position — and nothing measured while or
after the job ran: no run time, no recorded start or end, no energy or power, no utilisation, no
recorded placement. Those names are absent and reading one raises
:class:`~twinsweep.core.errors.ClairvoyanceError`, so a plug-in cannot schedule with hindsight by
accident or on purpose (a model the policy trains itself is its own prediction and is allowed).

:class:`SchedulerContext` carries the run facts a scheduler may use besides the queue (system
size, an accounts table collected in an *earlier* run), as explicit data instead of hidden
entries in the options dict.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from .errors import ClairvoyanceError

#: Per-job fields a scheduler may read: JobView attribute -> jobs.parquet / Workload column.
VISIBLE_FIELDS: dict[str, str] = {
    "job_id": "job_id",
    "submit": "submit_time",
    "nodes": "nodes",
    "time_limit": "time_limit",
    "trace_index": "trace_index",
    "priority": "priority",
    "user": "user",
    "account": "account",
    "partition": "partition",
    "time_limit_imputed": "time_limit_imputed",
}

#: Names a scheduler must never read (measured during or after the run, DESIGN.md §3.3), as
#: attributes of JobView or columns of :meth:`JobView.table`; reading one raises ClairvoyanceError.
HIDDEN_FIELDS = frozenset({
    "run_time", "runtime", "duration", "recorded_start", "recorded_start_time", "recorded_end",
    "recorded_end_time", "start_time", "end_time", "wait_time", "energy_j", "avg_power_w",
    "node_power_w", "cpu_util", "gpu_util", "node_ids", "status", "trace_status", "recorded_zero",
    "frame",
})


class JobView:
    """The jobs of a run as a scheduler may see them; job ``j`` is index ``j`` of every list.

    Attributes (lists of length n = jobs in the run):
        job_id: str, as in the trace.
        submit: int, submit time (s since the trace epoch).
        nodes: int, nodes requested (0 for a job that is rejected and never queued).
        time_limit: int, effective time limit (s; requested walltime or the imputed one,
            DESIGN.md §3.3).
        time_limit_imputed: bool, the job requested no usable limit and ``time_limit`` was
            imputed: the system's default (``SchedulerContext.default_time_limit``) when it has
            one, else **the job's own run time** — the one place a run time reaches a scheduler,
            which DESIGN.md §3.3 allows so that such jobs can be planned at all. A policy that
            must not use it can test this flag (and the run's stats count such jobs).
        ``nodes`` and ``time_limit`` continue past the n jobs with the engine's availability
        holds (one node each, limit 0: a node that is down shows as a running "job" that gives it
        back at the period end, its expected end in ``cluster.running``); ``len(view)`` is n.
        trace_index: int, 0-based position in the source file (the last tie-breaker, §3.6).
        priority: float, the trace's priority (NaN = none).
        user, account, partition: str or None.
        source: the trace's name, for messages.

    Raises ClairvoyanceError when a hidden field (:data:`HIDDEN_FIELDS`: run time, recorded
    start/end, energy, ...) is read, and AttributeError for any other unknown attribute. The view
    is read-only: attributes cannot be set after construction.
    """

    __slots__ = ("job_id", "submit", "nodes", "time_limit", "trace_index", "priority", "user",
                 "account", "partition", "time_limit_imputed", "source", "_frozen")

    def __init__(self, submit: Sequence[int], nodes: Sequence[int], time_limit: Sequence[int],
                 trace_index: Sequence[int], priority: Sequence[float], user: Sequence[Any],
                 account: Sequence[Any], partition: Sequence[Any] | None = None,
                 job_id: Sequence[Any] | None = None, source: str = "",
                 time_limit_imputed: Sequence[bool] | None = None):
        n = len(submit)
        for name, col in (("trace_index", trace_index), ("priority", priority), ("user", user),
                          ("account", account)):
            if len(col) != n:
                raise ValueError(f"JobView: {name} has {len(col)} entries, submit has {n}")
        if len(nodes) != len(time_limit) or len(nodes) < n:
            raise ValueError(f"JobView: nodes ({len(nodes)}) and time_limit ({len(time_limit)}) need one "
                             f"entry per job ({n}) plus one per availability hold")
        s = object.__setattr__
        s(self, "submit", list(submit))
        s(self, "nodes", list(nodes))
        s(self, "time_limit", list(time_limit))
        s(self, "trace_index", list(trace_index))
        s(self, "priority", list(priority))
        s(self, "user", list(user))
        s(self, "account", list(account))
        s(self, "partition", list(partition) if partition is not None else [None] * n)
        s(self, "job_id", [str(x) for x in job_id] if job_id is not None else [str(i) for i in range(n)])
        imputed = [bool(x) for x in time_limit_imputed] if time_limit_imputed is not None else [False] * n
        if len(imputed) != n:
            raise ValueError(f"JobView: time_limit_imputed has {len(imputed)} entries, submit has {n}")
        s(self, "time_limit_imputed", imputed)
        s(self, "source", str(source))
        s(self, "_frozen", True)

    def __len__(self) -> int:
        return len(self.submit)

    def __getattr__(self, name: str):  # only called for names that are not slots
        if name in HIDDEN_FIELDS:
            raise ClairvoyanceError(
                f"a scheduler cannot read {name!r}: it is not known when jobs are scheduled (DESIGN.md "
                f"§3.3, no clairvoyance); it may read {', '.join(VISIBLE_FIELDS)} (time_limit is the "
                "request a real scheduler sees)")
        raise AttributeError(f"JobView has no attribute {name!r}; it holds {', '.join(VISIBLE_FIELDS)}")

    def __setattr__(self, name, value):
        raise AttributeError(f"JobView is read-only (tried to set {name!r})")

    def table(self):
        """The view as a new pandas DataFrame (one row per job, index = job number) with the
        :data:`VISIBLE_FIELDS` columns under their jobs.parquet names (``submit_time``, ``nodes``,
        ``time_limit``, ...): features for plug-in policies. Never holds a hidden field."""
        import pandas as pd

        n = len(self)
        return pd.DataFrame({col: getattr(self, attr)[:n] for attr, col in VISIBLE_FIELDS.items()})


@dataclasses.dataclass(frozen=True)
class SchedulerContext:
    """Run facts a scheduler may use besides the queue.

    Attributes:
        system_nodes: nodes of the machine (int > 0).
        accounts: an :class:`core.accounts.Accounts` table collected in an earlier run (the run
            option ``accounts_in``, loaded once by :func:`core.run.simulate`), or None.
        source: the trace's name, for messages.
        default_time_limit: the system's default time limit (s) given to jobs that request none,
            or None (then such jobs get their own run time: ``JobView.time_limit_imputed``).
        kill: jobs are killed at their time limit (plus the system's kill grace).
        seed: the run's seed (``RunConfig.seed``, a sweep's seed axis; 0 = the recorded trace). A
            policy or backfill variant that randomises draws every number from a generator seeded
            with it (e.g. ``numpy.random.default_rng(context.seed)``), so that one config gives one
            schedule and the seeds of a study give independent draws (DESIGN.md §3.10; docs/plugins.md,
            "What else a policy may know").
    """

    system_nodes: int
    accounts: Any = None
    source: str = ""
    default_time_limit: int | None = None
    kill: bool = True
    seed: int = 0
