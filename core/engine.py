"""The engine: one simulation run over a prepared window (DESIGN.md §3), in four named pieces.

1. :mod:`core.jobprep` — the window's jobs: which jobs the window keeps (:func:`select_window`),
   effective time limits, rejections, how long each occupies its nodes;
2. :mod:`core.calendar` — the node availability calendar (drains and holds);
3. :mod:`core.kernel` — the event kernel: ends, submissions, cancellations, timers, passes, in
   DESIGN.md §3.2 order;
4. :mod:`core.outcome` — each job's outcome and the output tables.

:class:`Engine` wires them together with the scheduler (:mod:`core.scheduler`), which sees the
jobs only through a :class:`~twinsweep.core.jobview.JobView` and acts only through a
:class:`~twinsweep.core.resources.Cluster`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import pandas as pd

from .calendar import Calendar
from .jobprep import effective_time_limit, prepare_jobs, select_window
from .jobview import JobView, SchedulerContext
from .kernel import Kernel
from .outcome import job_outcomes, jobs_table, steps_table
from .resources import Cluster, NodePool
from .scheduler import make_scheduler
from .system import System, run_setting
from .workload import RUNNING_WHEN_RECORDED

__all__ = ["Engine", "EngineResult", "select_window", "effective_time_limit"]


@dataclasses.dataclass
class EngineResult:
    """See docs/architecture.md, "Engine output"."""

    jobs: pd.DataFrame
    steps: pd.DataFrame
    t_start: int
    t_end: int
    counts: dict


class Engine:
    """One simulation run over a prepared window (see :func:`select_window`).

    Args:
        frame: the window's jobs (Workload columns + ``prepopulated`` + ``replay_start``).
        system: the machine (node count, default time limit, kill grace, scheduling cycle,
            availability calendar, ``queue_cancelled``).
        policy, backfill: scheduler names; ``replay`` replays recorded starts and never kills;
            ``external`` hands the decisions to an external scheduler (``scheduler``).
        kill: end jobs at their time limit (reschedule mode only).
        node_power_w: per-job DC power per node (W), aligned with ``frame`` rows.
        idle_power_w: DC power of an idle node (W).
        t0, t1: window (t1 None = until every job ends).
        options: policy and backfill options (validated: :func:`core.scheduler.validate_scheduler`).
        accounts: an accounts table collected in an earlier run, for the policy
            (:class:`core.jobview.SchedulerContext`), or None.
        progress: optional callback ``progress(sim_time)`` called every ~10k events.
        scheduler: the external scheduler of ``policy = "external"``: a command line (process
            transport) or ``inproc:MODULE:NAME`` (:mod:`core.external`), or an object speaking
            the protocol (docs/protocol.md); None otherwise.
        queue_cancelled: jobs cancelled while queued in the log stay queued until their cancel
            time (None: the run option ``queue_cancelled``, else the system's); see
            :func:`core.jobprep.cancel_times`. The window frame must come from :func:`select_window`
            with the same setting.
        honor_eligible: a job enters the queue at its ``eligible_time`` when the frame gives one
            after its submit time (None: the run option ``honor_eligible``, else the system's);
            see :func:`core.jobprep.prepare_jobs`.
    """

    def __init__(self, frame, system: System, policy: str, backfill: str, kill: bool,
                 node_power_w, idle_power_w: float, t0: int, t1: int | None,
                 options: dict | None = None, progress: Callable[[int], None] | None = None,
                 accounts=None, scheduler=None, queue_cancelled: bool | None = None,
                 honor_eligible: bool | None = None, seed: int = 0):
        self.frame = frame
        self.system = system
        self.replay = policy == "replay"
        self.kill = kill and not self.replay
        self.policy, self.backfill = policy, backfill
        self.node_power = [float(x) for x in node_power_w]
        self.idle_w = float(idle_power_w)
        self.t0, self.t1 = t0, t1
        self.options = options or {}
        self.accounts = accounts
        self.progress = progress
        self.scheduler = scheduler
        self.seed = int(seed)
        if queue_cancelled is None:
            queue_cancelled = run_setting("queue_cancelled", self.options, system)
        self.queue_cancelled = bool(queue_cancelled) and not self.replay
        if honor_eligible is None:
            honor_eligible = run_setting("honor_eligible", self.options, system)
        self.honor_eligible = bool(honor_eligible) and not self.replay

    def run(self) -> EngineResult:
        """Simulate the window.

        With a node availability calendar (``system.availability``) the nodes of each period are
        drained and held (:mod:`core.calendar`); ``counts`` gains ``availability_periods`` and
        ``availability_down_node_s``. Replay ignores the calendar; a usage-following policy
        (fair share) counts no held node as anyone's usage. With a scheduling cycle
        (``system.scheduling_cycle_s`` = N > 0), passes run only at multiples of N s since the
        trace epoch (:class:`core.kernel.Kernel`). With ``queue_cancelled``, jobs cancelled while
        queued leave the queue at their cancel time with status ``cancelled`` (``counts`` gains
        ``cancelled``). With ``honor_eligible``, ``counts`` gains ``eligible_later`` (jobs queued
        at an eligible time after their submit time).
        """
        f = self.frame
        J = prepare_jobs(f, self.system, self.kill, self.replay, self.t0, self.queue_cancelled, self.honor_eligible)
        n = J.n
        N = self.system.nodes
        periods = () if self.replay else getattr(self.system, "availability", ())
        cal = Calendar(periods, self.t0, first_hold=n)
        nodes_all, limit_all = J.nodes + cal.hold_nodes, J.limit + cal.hold_limits
        # what the scheduler may know (DESIGN.md §3.3): requests, limits, submit times, owners;
        # never run times or recorded starts (replay alone gets those, apart from the view)
        view = JobView(
            submit=J.queue_time, nodes=nodes_all, time_limit=limit_all, trace_index=J.trace_index,
            priority=f["priority"].astype("float64").tolist(), user=f["user"].tolist(),
            account=f["account"].tolist(), partition=f["partition"].tolist(), job_id=f["job_id"].tolist(),
            source=str(f.attrs.get("source", "")), time_limit_imputed=J.imputed,
        )
        context = SchedulerContext(system_nodes=N, accounts=self.accounts, source=view.source,
                                   default_time_limit=self.system.default_time_limit or None, kill=self.kill,
                                   seed=self.seed)
        sched = make_scheduler(self.policy, self.backfill, view, self.options, context,
                               recorded_start=J.rstart if self.replay else None,
                               recorded_zero=[d == 0 for d in J.dur] if self.replay else None,
                               recorded_nodes=J.rec_nodes if self.replay else None,
                               external=self.scheduler)
        if cal:
            cal.listener = sched if hasattr(sched, "nodes_down") else None
        J.nodes, J.limit = nodes_all, limit_all
        pool = NodePool(N)
        cluster = Cluster(pool, view.nodes, view.time_limit)
        cycle = 0 if self.replay else int(getattr(self.system, "scheduling_cycle_s", 0) or 0)
        try:
            k = Kernel(J, sched, cluster, pool, cal, self.node_power, self.idle_w, self.t0, self.t1, cycle=cycle,
                       replay=self.replay, progress=self.progress).run()
            t_end = self.t1 if self.t1 is not None else (k.steps_t[-1] if k.steps_t else self.t0)
            if hasattr(sched, "finish"):
                sched.finish(t_end)
        finally:
            if hasattr(sched, "close"):
                sched.close()
        for j, why in getattr(sched, "rejected", {}).items():  # an external scheduler's rejections
            J.status[j], J.reason[j] = "rejected", why
        status, reason = job_outcomes(J, k, self.t1, recorded_running=(f["status"] == "running").tolist(),
                                      running_reason=RUNNING_WHEN_RECORDED)

        counts = k.counts
        st = dict(getattr(sched, "stats", {}))
        counts["placement_fallbacks"] += st.pop("placement_fallbacks", 0)
        counts.update(st)
        if cal:
            counts.update(cal.counts(t_end))
        if self.queue_cancelled:
            counts["cancelled"] = sum(1 for s in status if s == "cancelled")
        if self.honor_eligible:  # jobs queued at a later eligible time than their submit
            counts["eligible_later"] = sum(1 for a, b in zip(J.queue_time, J.submit) if a > b)
        counts.setdefault("replay_delayed", 0)
        counts.setdefault("reservation_delays", 0)
        jobs = jobs_table(f, J, k, status, reason, self.node_power, self.t1)
        return EngineResult(jobs=jobs, steps=steps_table(k), t_start=self.t0, t_end=int(t_end), counts=counts)
