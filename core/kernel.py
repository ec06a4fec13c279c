"""The event kernel: the engine's clock jumps from event to event (DESIGN.md §3.2).

In the spirit of SimPy's core (an event heap keyed ``(time, priority, id)``), with the event
sources kept apart because most are known in advance: job ends (a heap keyed ``(end,
trace_index, job)``), submissions (sorted once by ``(time, trace_index)``), cancellations of
queued jobs (sorted once), and timers (a heap: the window start, scheduler wake-ups, the
availability calendar's period starts and ends). At each timestamp the kernel applies, in this
order (the priority of each kind):

1. all job ends;
2. all submissions, in trace order;
3. cancellations of jobs still queued (the ``queue_cancelled`` option);
4. timers: scheduler wake-ups, availability periods ending then starting, and the drain of free
   nodes;
5. one scheduling pass (with a scheduling cycle only at its multiples, see :class:`Kernel`);
   zero-length jobs started by it are released after it and another pass runs at the same
   second, until none starts.

Then it records the system state (one step row per timestamp). Cost grows with the number of
events, not with the simulated horizon.
"""

from __future__ import annotations

import dataclasses
import heapq
from typing import Callable

import numpy as np

from .calendar import Calendar
from .jobprep import WindowJobs
from .resources import Cluster, NodePool

__all__ = ["Kernel", "KernelResult"]


@dataclasses.dataclass
class KernelResult:
    """What a run did, per job (lists of length n): ``start``, ``end`` (simulated s or None),
    ``placed`` (node ids or None), ``cancelled`` (the time a queued job left the queue by its
    cancellation, or None); the step rows (``steps_*``: time, busy nodes, DC power W, queued and
    running jobs; one row per timestamp); ``counts`` (``placement_fallbacks``,
    ``replay_start_imputed``)."""

    start: list
    end: list
    placed: list
    cancelled: list
    steps_t: list
    steps_busy: list
    steps_pow: list
    steps_q: list
    steps_r: list
    counts: dict


class Kernel:
    """One run of the event loop over prepared jobs.

    Args:
        jobs: the window's jobs (:func:`core.jobprep.prepare_jobs`).
        sched: the scheduler (contract: :mod:`core.scheduler`): ``submit``, ``schedule``,
            ``queued``, and ``cancel`` when jobs can be cancelled; optional ``job_ended(job, now)``
            (told of every end before the next pass) and ``job_prepopulated(job, start)``.
        cluster, pool: the scheduler's :class:`~twinsweep.core.resources.Cluster` and its node pool.
        calendar: the availability calendar (:class:`core.calendar.Calendar`), or None.
        node_power_w: per-job DC power per node (W); idle_w: DC power of an idle node (W).
        t0, t1: the window (t1 None: until every job ends).
        cycle: scheduling cycle (s; 0 = a pass at every timestamp with events). With N > 0,
            passes run only at multiples of N s since the trace epoch; events between them are
            applied at their own second and the kernel wakes itself at the next multiple when
            the queue is not empty.
        replay: a replay run (jobs without a recorded start are counted in ``replay_start_imputed``).
        progress: optional ``progress(sim_time)`` called every 10,000 timestamps.
    """

    def __init__(self, jobs: WindowJobs, sched, cluster: Cluster, pool: NodePool, calendar: Calendar | None,
                 node_power_w, idle_w: float, t0: int, t1: int | None, cycle: int = 0,
                 replay: bool = False, progress: Callable[[int], None] | None = None):
        self.replay = replay
        self.jobs, self.sched, self.cluster, self.pool = jobs, sched, cluster, pool
        self.calendar = calendar if calendar else None
        self.node_power = node_power_w
        self.idle_w = float(idle_w)
        self.t0, self.t1 = t0, t1
        self.cycle = int(cycle)
        self.progress = progress

    def run(self) -> KernelResult:
        J = self.jobs
        n = J.n
        sched, cluster, pool, cal = self.sched, self.cluster, self.pool, self.calendar
        N = pool.n
        nodes, limit, dur, trace_index = J.nodes, J.limit, J.dur, J.trace_index
        status, sub_time, rstart, prepop = J.status, J.sub_time, J.rstart, J.prepop
        cancel_at = J.cancel_at
        kill, grace = J.kill, J.grace
        npow, idle_w = self.node_power, self.idle_w
        sim_start: list = [None] * n
        sim_end: list = [None] * n
        placed: list = [None] * n
        cancelled: list = [None] * n
        end_heap: list[tuple[int, int, int]] = []
        timers: list[int] = []
        zero_started: list[int] = []
        counts = {"placement_fallbacks": 0, "replay_start_imputed": 0}
        busy_power = 0.0  # Σ over busy nodes of (job node power − idle power)
        running_count = 0
        ended_cb = getattr(sched, "job_ended", None)
        prepop_cb = getattr(sched, "job_prepopulated", None)
        canc = sorted((cancel_at[j], trace_index[j], j) for j in range(n) if cancel_at[j] >= 0 and status[j] is None)
        has_cancel = bool(canc)

        pop_started = cluster.pop_started

        def apply_starts(s: int, t: int) -> None:
            """The starts the scheduler made through the cluster, at ``s`` (s), now ``t``."""
            nonlocal busy_power, running_count
            for j, ids in pop_started():
                placed[j] = ids
                sim_start[j] = s
                if has_cancel and cancel_at[j] >= 0:  # it runs until its user cancels it (or the kill)
                    e = min(cancel_at[j], s + limit[j] + grace) if kill else cancel_at[j]
                else:
                    e = s + dur[j]
                sim_end[j] = e
                busy_power += nodes[j] * (npow[j] - idle_w)
                running_count += 1
                if e <= t:  # zero-length at the current second
                    zero_started.append(j)
                else:
                    heapq.heappush(end_heap, (e, trace_index[j], j))

        release, remove_running = pool.release, cluster.remove_running

        def finish(j: int, t: int) -> None:
            nonlocal busy_power, running_count
            release(placed[j])
            remove_running(sim_start[j] + limit[j], j)
            busy_power -= nodes[j] * (npow[j] - idle_w)
            running_count -= 1
            if ended_cb is not None:
                ended_cb(j, t)

        # prepopulation: running at the window start, placed at their recorded start
        rec_nodes = J.rec_nodes
        order_pre = sorted((j for j in range(n) if prepop[j] and status[j] is None),
                           key=lambda j: (rstart[j], trace_index[j]))
        pre_started: list[int] = []  # placed at their recorded start: not submitted again
        for j in order_pre:
            if nodes[j] <= pool.free:
                cluster.now = rstart[j]
                self._place(j, rec_nodes[j], counts)
                apply_starts(rstart[j], self.t0)
                pre_started.append(j)
                if prepop_cb is not None:
                    prepop_cb(j, rstart[j])
            else:  # cannot place: it will be queued like a job submitted before the window
                prepop[j] = False
        # submission order: (submit_time, trace_index); prepopulated jobs are not submitted again
        # (one stable numpy sort by both keys: the order of sorted() by the (time, index) pairs)
        sub_t = np.asarray(sub_time, dtype=np.int64)
        order = np.lexsort((np.asarray(trace_index, dtype=np.int64), sub_t))
        if pre_started:
            keep = np.ones(n, dtype=bool)
            keep[pre_started] = False
            order = order[keep[order]]
        subs = order.tolist()
        timers.append(self.t0)  # an event at the window start records its state
        if cal is not None:
            timers.extend(cal.times)
        heapq.heapify(timers)
        cycle = self.cycle
        next_wake = -1
        replay = self.replay
        start_unknown = J.start_unknown

        steps_t: list[int] = []
        steps_busy: list[int] = []
        steps_pow: list[float] = []
        steps_q: list[int] = []
        steps_r: list[int] = []
        progress = self.progress
        held = 0  # nodes the calendar holds (not busy)
        t1 = self.t1
        p = ci = 0
        ns, nc = len(subs), len(canc)
        events = 0
        base_idle = N * idle_w
        never = float("inf")  # the next time of an event source that has none left
        sub_at = sub_t[order].tolist() + [never]  # submission times, in submission order
        stop = never if t1 is None else t1
        schedule, queued, heappop, heappush = sched.schedule, sched.queued, heapq.heappop, heapq.heappush
        while True:
            # the next event: the earliest of the next submission, end, timer and cancellation
            t = sub_at[p]
            if end_heap and end_heap[0][0] < t:
                t = end_heap[0][0]
            if timers and timers[0] < t:
                t = timers[0]
            if has_cancel:
                while ci < nc and sim_start[canc[ci][2]] is not None:  # started: it leaves by its end
                    ci += 1
                if ci < nc and canc[ci][0] < t:
                    t = canc[ci][0]
            if t >= stop:  # the window's end, or no event left (t is inf)
                break
            if cal is not None and events and p >= ns and not end_heap and not queued():
                break  # only availability periods are left: nothing to schedule any more
            cluster.now = t
            # 1. ends
            while end_heap and end_heap[0][0] == t:
                _, _, j = heappop(end_heap)
                finish(j, t)
            # 2. submissions, in trace order
            while sub_at[p] == t:
                j = subs[p]
                p += 1
                if status[j] is not None:  # rejected or never ran: not queued
                    continue
                if replay and start_unknown[j]:
                    counts["replay_start_imputed"] += 1
                wake = sched.submit(j, t)
                if wake is not None:
                    heappush(timers, wake)
            # 3. cancellations of queued jobs
            while ci < nc and canc[ci][0] == t:
                j = canc[ci][2]
                ci += 1
                if sim_start[j] is None and sched.cancel(j, t):
                    cancelled[j] = t
            # 4. timers: scheduler wake-ups, availability periods ending / starting, the drain
            while timers and timers[0] == t:
                heappop(timers)
            if cal is not None:
                cal.apply(t, pool, cluster)
                if cal.draining:
                    cal.drain(t, pool, cluster)
            # 5. passes (with a scheduling cycle only at its multiples; the next one is woken up)
            if cycle and t % cycle:
                nxt = t - t % cycle + cycle
                if nxt != next_wake and queued():
                    heappush(timers, nxt)
                    next_wake = nxt
            else:
                while True:
                    wake = schedule(t, cluster)
                    if wake is not None:
                        heappush(timers, wake)
                    apply_starts(t, t)
                    if not zero_started:
                        break
                    zs = zero_started[:]
                    zero_started.clear()
                    for j in zs:
                        finish(j, t)
                    if cal is not None and cal.draining:
                        cal.drain(t, pool, cluster)
            events += 1
            if progress is not None and events % 10000 == 0:
                progress(t)
            if cal is not None:
                held = cal.held
            busy = N - pool.free - held
            pw = base_idle + busy_power
            q = queued()
            if steps_t and steps_t[-1] == t:
                steps_busy[-1], steps_pow[-1], steps_q[-1], steps_r[-1] = busy, pw, q, running_count
            else:
                steps_t.append(t)
                steps_busy.append(busy)
                steps_pow.append(pw)
                steps_q.append(q)
                steps_r.append(running_count)
        return KernelResult(start=sim_start, end=sim_end, placed=placed, cancelled=cancelled, steps_t=steps_t,
                            steps_busy=steps_busy, steps_pow=steps_pow, steps_q=steps_q, steps_r=steps_r,
                            counts=counts)

    def _place(self, j: int, ids, counts: dict) -> None:
        """Start prepopulated job ``j`` on its recorded nodes ``ids`` when they are free (else on
        the lowest free nodes, counted in ``placement_fallbacks``)."""
        if ids is not None:
            if self.cluster.try_start(j, ids):
                return
            counts["placement_fallbacks"] += 1
        self.cluster.start(j)
