"""The event-driven engine (DESIGN.md §3): the clock jumps from event to event.

At each timestamp it applies all job ends, then all submissions (in trace order), then scheduler
wake-ups, then one scheduling pass; zero-length jobs started by a pass are released after it and
another pass runs at the same second, until none starts. Cost grows with the number of events,
not with the simulated horizon.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from typing import Callable

import numpy as np
import pandas as pd

from .resources import Cluster, NodePool
from .jobview import JobView, SchedulerContext
from .scheduler import make_scheduler
from .system import System
from .workload import RUNNING_WHEN_RECORDED


@dataclasses.dataclass
class EngineResult:
    """See docs/architecture.md, "Engine output"."""

    jobs: pd.DataFrame
    steps: pd.DataFrame
    t_start: int
    t_end: int
    counts: dict


def _int_or_none(a: pd.Series) -> list:
    return [None if v is pd.NA else int(v) for v in a.astype("Int64").tolist()]


def effective_time_limit(time_limit, run_time, default_time_limit: int | None):
    """The time limit the scheduler uses (DESIGN.md §3.3), vectorised.

    Args: ``time_limit`` (requested walltime, s) and ``run_time`` (s): float arrays of one shape,
    NaN where missing; ``default_time_limit``: the system's (s), None or 0 for none.
    Returns ``(limit, imputed)``: float64 array (NaN only where neither a usable limit, a default
    nor a run time exists) and bool array. A requested limit that is missing or <= 0 is imputed:
    the system's default when it has one, else the job's own run time.
    """
    tl = np.asarray(time_limit, dtype="float64")
    imputed = ~(tl > 0)
    fallback = float(default_time_limit) if default_time_limit else np.asarray(run_time, dtype="float64")
    return np.where(imputed, fallback, tl), imputed


def select_window(jobs: pd.DataFrame, start: int | None, duration: int | None, replay: bool, kill: bool,
                  default_time_limit: int | None = None, kill_grace_s: int = 0):
    """Split a workload into the jobs a window keeps (DESIGN.md §3.9).

    Returns ``(frame, t0, t1)``: ``frame`` is the kept jobs in trace order with an extra bool column
    ``prepopulated`` (running at the window start, placed at their recorded start) and int column
    ``replay_start`` (recorded start, or the submit time when the trace has none).
    ``t1`` is None for an open window (run until every job ends). A job counts as running at the
    window start when its occupancy in this run (run time, or with kill on the run time cut at
    its effective limit plus ``kill_grace_s``: :func:`effective_time_limit` with the system's
    ``default_time_limit``) from its recorded start reaches past ``start``.
    """
    submit = jobs["submit_time"].to_numpy(dtype="int64")
    rec_start = jobs["recorded_start_time"].astype("float64").to_numpy()
    run = jobs["run_time"].astype("float64").to_numpy()
    rstart = np.where(np.isnan(rec_start), submit, rec_start)
    rstart = np.maximum(rstart, submit)  # a recorded start before submit is a trace error
    ran = ~np.isnan(run)
    if start is None:
        t0 = int(submit.min()) if len(submit) else 0
        t1 = None if duration is None else t0 + int(duration)
    else:
        t0 = int(start)
        t1 = None if duration is None else t0 + int(duration)
    # duration the job would occupy if it ran from its recorded start
    if replay or not kill:
        occ = run
    else:
        tl, _ = effective_time_limit(jobs["time_limit"].astype("float64").to_numpy(), run, default_time_limit)
        occ = np.minimum(run, tl + kill_grace_s)
    rend = rstart + np.where(ran, occ, 0)
    keep = np.ones(len(jobs), dtype=bool)
    pre = np.zeros(len(jobs), dtype=bool)
    if start is not None or t1 is not None:
        before = submit < t0
        pre = before & ran & (rstart < t0) & (rend > t0)
        ended = before & ~pre & ((rstart < t0) | ~ran)
        keep = ~ended
        if t1 is not None:
            keep &= submit < t1
    frame = jobs.loc[keep].copy()
    frame["prepopulated"] = pre[keep]
    frame["replay_start"] = rstart[keep].astype("int64")
    return frame, t0, t1


class Engine:
    """One simulation run over a prepared window (see :func:`select_window`).

    Args:
        frame: the window's jobs (Workload columns + ``prepopulated`` + ``replay_start``).
        system: the machine (node count).
        policy, backfill: scheduler names; ``replay`` replays recorded starts and never kills.
        kill: end jobs at their time limit (reschedule mode only).
        node_power_w: per-job DC power per node (W), aligned with ``frame`` rows.
        idle_power_w: DC power of an idle node (W).
        t0, t1: window (t1 None = until every job ends).
        options: policy and backfill options (validated: :func:`core.scheduler.validate_scheduler`).
        accounts: an accounts table collected in an earlier run, for the policy
            (:class:`core.jobview.SchedulerContext`), or None.
        progress: optional callback ``progress(sim_time)`` called every ~10k events.
    """

    def __init__(self, frame, system: System, policy: str, backfill: str, kill: bool,
                 node_power_w, idle_power_w: float, t0: int, t1: int | None,
                 options: dict | None = None, progress: Callable[[int], None] | None = None,
                 accounts=None):
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

    def run(self) -> EngineResult:
        """Simulate the window. With a node availability calendar (``system.availability``,
        periods ``(start, end, nodes_down)``), each period *drains* its nodes: from its start,
        every node that is free (at once, else as running jobs end) is taken out of service,
        before any scheduling pass, until ``nodes_down`` are out; all come back at its end.
        Schedulers see a held node as a running one-node job whose expected end is the period's
        end, so EASY's shadow time and conservative reservations count on its return; a period
        is seen from its start on (as a drain is), not before. Held nodes are not busy in the
        timeline and draw idle power; ``counts`` gains ``availability_periods`` and
        ``availability_down_node_s``. Replay ignores the calendar. Raises ConfigError for a
        calendar with a usage-following (dynamic) policy.

        With a scheduling cycle (``system.scheduling_cycle_s`` = N > 0), passes run only at
        multiples of N s since the trace epoch, as a batch system's scheduler wakes up every N
        s: ends and submissions between them are applied at their own second and the queue waits
        for the next multiple (the engine wakes itself up there when the queue is not empty)."""
        f = self.frame
        n = len(f)
        N = self.system.nodes
        submit = f["submit_time"].astype("int64").tolist()
        run = _int_or_none(f["run_time"])
        nodes_raw = _int_or_none(f["nodes"])
        trace_index = f["trace_index"].astype("int64").tolist()
        prepop = f["prepopulated"].tolist()
        rstart = f["replay_start"].astype("int64").tolist()
        default_tl = self.system.default_time_limit
        grace = int(getattr(self.system, "kill_grace_s", 0) or 0)  # s past the limit before the kill

        # effective time limit (DESIGN.md §3.3; 0 for a job that never ran) and rejection (§3.5)
        lim, imp = effective_time_limit(f["time_limit"].astype("float64").to_numpy(),
                                        f["run_time"].astype("float64").to_numpy(), default_tl)
        limit = [0 if math.isnan(x) else int(x) for x in lim.tolist()]
        imputed = imp.tolist()
        reason, status = [None] * n, [None] * n
        for j in range(n):
            if run[j] is None:
                status[j] = "not_run"
                reason[j] = "never ran in the trace (no run time recorded)"
            elif nodes_raw[j] is None or nodes_raw[j] <= 0:
                status[j] = "rejected"
                reason[j] = f"asks for {nodes_raw[j] if nodes_raw[j] is not None else 'no'} nodes (<= 0 or unknown)"
            elif nodes_raw[j] > N:
                status[j] = "rejected"
                reason[j] = f"asks for {nodes_raw[j]} nodes; the system has {N}"
        nodes = [x if x is not None else 0 for x in nodes_raw]
        # actual occupancy once started
        dur = [0] * n
        for j in range(n):
            if run[j] is not None:
                dur[j] = min(run[j], limit[j] + grace) if self.kill else run[j]

        # node availability calendar (System.availability): each period gets one 1-node hold per
        # node down, appended after the n jobs so that schedulers see held nodes as running
        # "jobs" that give their node back at the period end (their expected end)
        cal = [p for p in getattr(self.system, "availability", ()) if p[1] > self.t0 and not self.replay]
        hold_base: list[int] = []
        if cal:
            for (_a, b, k) in cal:
                hold_base.append(len(nodes))
                nodes.extend([1] * k)
                limit.extend([0] * k)
        start_unknown = f["recorded_start_time"].isna().tolist()
        rec_nodes = f["node_ids"].tolist() if "node_ids" in f.columns else [None] * n
        # what the scheduler may know (DESIGN.md §3.3): requests, limits, submit times, owners;
        # never run times or recorded starts (replay alone gets those, apart from the view)
        view = JobView(
            submit=submit, nodes=nodes, time_limit=limit, trace_index=trace_index,
            priority=f["priority"].astype("float64").tolist(), user=f["user"].tolist(),
            account=f["account"].tolist(), partition=f["partition"].tolist(), job_id=f["job_id"].tolist(),
            source=str(self.frame.attrs.get("source", "")),
        )
        context = SchedulerContext(system_nodes=N, accounts=self.accounts, source=view.source)
        sched = make_scheduler(self.policy, self.backfill, view, self.options, context,
                               recorded_start=rstart if self.replay else None,
                               recorded_zero=[d == 0 for d in dur] if self.replay else None)
        if cal and getattr(getattr(sched, "policy", None), "dynamic", False):
            from .errors import ConfigError

            raise ConfigError(f"policy {self.policy!r} follows usage during the run (fair share / accounts) and "
                              "cannot run with a node availability calendar yet; use fcfs, sjf, ljf or priority")

        pool = NodePool(N)
        sim_start = [None] * n
        sim_end = [None] * n
        placed = [None] * n
        end_heap: list[tuple[int, int, int]] = []
        timers: list[int] = []
        zero_started: list[int] = []
        counts = {"placement_fallbacks": 0, "replay_start_imputed": 0}
        busy_power = 0.0  # Σ over busy nodes of (job node power − idle power)
        npow = self.node_power
        idle_w = self.idle_w
        running_count = 0
        t_now = self.t0

        def place(j: int):
            ids = rec_nodes[j]
            if (self.replay or prepop[j]) and ids is not None:
                if len(ids) == nodes[j]:
                    got = pool.allocate_ids(ids)
                    if got is not None:
                        return got
                counts["placement_fallbacks"] += 1
            return pool.allocate(nodes[j])

        cluster: Cluster

        def start(j: int, when: int | None = None) -> None:
            nonlocal busy_power, running_count
            s = t_now if when is None else when
            if nodes[j] > pool.free:
                raise RuntimeError(f"scheduler started job {j} ({nodes[j]} nodes) with {pool.free} free")
            placed[j] = place(j)
            sim_start[j] = s
            e = s + dur[j]
            sim_end[j] = e
            busy_power += nodes[j] * (npow[j] - idle_w)
            running_count += 1
            if e <= t_now:  # zero-length at the current second
                zero_started.append(j)
                cluster.add_running(s + limit[j], j)
            else:
                heapq.heappush(end_heap, (e, trace_index[j], j))
                cluster.add_running(s + limit[j], j)

        cluster = Cluster(pool, nodes, start)

        def finish(j: int) -> None:
            nonlocal busy_power, running_count
            pool.release(placed[j])
            cluster.remove_running(sim_start[j] + limit[j], j)
            busy_power -= nodes[j] * (npow[j] - idle_w)
            running_count -= 1

        # prepopulation: running at the window start, placed at their recorded start
        order_pre = sorted((j for j in range(n) if prepop[j] and status[j] is None),
                           key=lambda j: (rstart[j], trace_index[j]))
        for j in order_pre:
            if nodes[j] <= pool.free:
                start(j, rstart[j])
            else:  # cannot place: it will be queued like a job submitted before the window
                prepop[j] = False
        # submission order: (submit_time, trace_index); prepopulated jobs are not submitted again
        subs = sorted((j for j in range(n) if not (prepop[j] and sim_start[j] is not None)),
                      key=lambda j: (max(submit[j], self.t0), trace_index[j]))
        sub_time = [max(submit[j], self.t0) for j in range(n)]

        timers.append(self.t0)  # an event at the window start records its state
        # availability calendar: periods start / end as timer events; a starting period drains
        # its nodes (takes each as soon as it is free, before any pass); an ending one frees them
        cal_events: list[tuple[int, int, int]] = []  # (time, 0 end | 1 start, period)
        pending = [0] * len(cal)
        held: list[list[tuple[int, int]]] = [[] for _ in cal]  # per period: (hold index, time taken)
        n_held = 0
        held_node_s = 0  # node-seconds held down
        for pi, (a, b, k) in enumerate(cal):
            cal_events.append((max(a, self.t0), 1, pi))
            cal_events.append((b, 0, pi))
            timers.append(max(a, self.t0))
            timers.append(b)
        cal_events.sort()
        heapq.heapify(timers)
        ce = 0
        cycle = 0 if self.replay else int(getattr(self.system, "scheduling_cycle_s", 0) or 0)  # passes every `cycle` s
        next_wake = -1

        draining: list[int] = []  # periods still waiting for nodes

        def drain() -> None:
            nonlocal n_held
            for pi in draining:
                while pending[pi] and pool.free:
                    h = hold_base[pi] + len(held[pi])
                    placed[h] = pool.allocate(1)
                    held[pi].append((h, t_now))
                    cluster.add_running(cal[pi][1], h)
                    pending[pi] -= 1
                    n_held += 1
            if draining and not all(pending[pi] for pi in draining):
                draining[:] = [pi for pi in draining if pending[pi]]

        placed.extend([None] * (len(nodes) - n))
        steps_t: list[int] = []
        steps_busy: list[int] = []
        steps_pow: list[float] = []
        steps_q: list[int] = []
        steps_r: list[int] = []
        t1 = self.t1
        p = 0
        ns = len(subs)
        events = 0
        base_idle = N * idle_w
        while True:
            cand = []
            if p < ns:
                cand.append(sub_time[subs[p]])
            if end_heap:
                cand.append(end_heap[0][0])
            if timers:
                cand.append(timers[0])
            if not cand:
                break
            t = min(cand)
            if t1 is not None and t >= t1:
                break
            if cal and events and p >= ns and not end_heap and not sched.queued():
                break  # only availability periods are left: nothing to schedule any more
            t_now = t
            cluster.now = t
            # 1. ends
            while end_heap and end_heap[0][0] == t:
                _, _, j = heapq.heappop(end_heap)
                finish(j)
            # 2. submissions, in trace order
            while p < ns and sub_time[subs[p]] == t:
                j = subs[p]
                p += 1
                if status[j] is not None:  # rejected or never ran: not queued
                    continue
                if self.replay and start_unknown[j]:
                    counts["replay_start_imputed"] += 1
                wake = sched.submit(j, t)
                if wake is not None:
                    heapq.heappush(timers, wake)
            # 3. scheduler wake-ups, availability periods ending / starting
            while timers and timers[0] == t:
                heapq.heappop(timers)
            while ce < len(cal_events) and cal_events[ce][0] == t:
                _, kind, pi = cal_events[ce]
                ce += 1
                if kind == 0:
                    a, b, _k = cal[pi]
                    for h, taken in held[pi]:
                        pool.release(placed[h])
                        cluster.remove_running(b, h)
                        placed[h] = None
                        held_node_s += b - taken
                    n_held -= len(held[pi])
                    held[pi] = []
                    pending[pi] = 0
                    if pi in draining:
                        draining.remove(pi)
                else:
                    pending[pi] = cal[pi][2]
                    draining.append(pi)
            if draining:
                drain()
            # 4. passes (with a scheduling cycle only at its multiples; the next one is woken up)
            if cycle and t % cycle:
                nxt = t - t % cycle + cycle
                if nxt != next_wake and sched.queued():
                    heapq.heappush(timers, nxt)
                    next_wake = nxt
            else:
                while True:
                    sched.schedule(t, cluster)
                    if not zero_started:
                        break
                    zs = zero_started[:]
                    zero_started.clear()
                    for j in zs:
                        finish(j)
                    if draining:
                        drain()
            events += 1
            if self.progress is not None and events % 10000 == 0:
                self.progress(t)
            busy = N - pool.free - n_held
            pw = base_idle + busy_power
            q = sched.queued()
            if steps_t and steps_t[-1] == t:
                steps_busy[-1], steps_pow[-1], steps_q[-1], steps_r[-1] = busy, pw, q, running_count
            else:
                steps_t.append(t)
                steps_busy.append(busy)
                steps_pow.append(pw)
                steps_q.append(q)
                steps_r.append(running_count)

        t_end = t1 if t1 is not None else (steps_t[-1] if steps_t else self.t0)
        # outcomes (a job still running when its trace was recorded never "completes": core/workload.py)
        recorded_running = (f["status"] == "running").tolist()
        out_status = [None] * n
        for j in range(n):
            if status[j] is not None:
                out_status[j] = status[j]
            elif sim_start[j] is None:
                out_status[j] = "queued"
            elif t1 is not None and sim_end[j] > t1:
                out_status[j] = "running"
            elif self.kill and run[j] > limit[j] + grace:
                out_status[j] = "timeout"
                reason[j] = (f"killed at its time limit ({limit[j]} s; recorded run time {run[j]} s)" if not grace else
                             f"killed {grace} s past its time limit ({limit[j]} s; recorded run time {run[j]} s)")
            elif recorded_running[j]:
                out_status[j] = "running"
                reason[j] = RUNNING_WHEN_RECORDED
            else:
                out_status[j] = "completed"

        counts.update(getattr(sched, "stats", {}))
        if cal:
            end_t = t_end
            for pi in range(len(cal)):  # periods still holding nodes at the end count up to it
                held_node_s += sum(max(0, min(cal[pi][1], end_t) - taken) for _h, taken in held[pi])
            counts["availability_periods"] = len(cal)
            counts["availability_down_node_s"] = int(held_node_s)
        counts.setdefault("replay_delayed", 0)
        counts.setdefault("reservation_delays", 0)

        jobs = f.drop(columns=["replay_start"]).copy()
        jobs["trace_status"] = jobs["status"]
        jobs["status"] = out_status
        jobs["reason"] = reason
        jobs["prepopulated"] = [bool(prepop[j] and sim_start[j] is not None) for j in range(n)]
        jobs["time_limit"] = pd.array(limit[:n], dtype="Int64")
        jobs["time_limit_imputed"] = imputed
        jobs["start_time"] = pd.array(sim_start, dtype="Int64")
        end_out = [sim_end[j] if out_status[j] in ("completed", "timeout") else None for j in range(n)]
        jobs["end_time"] = pd.array(end_out, dtype="Int64")
        jobs["wait_time"] = pd.array([None if sim_start[j] is None else sim_start[j] - submit[j] for j in range(n)],
                                     dtype="Int64")
        jobs["node_power_w"] = np.asarray(npow, dtype="float64")
        energy, avgp = [], []
        for j in range(n):
            if sim_start[j] is None:
                energy.append(math.nan)
                avgp.append(math.nan)
                continue
            e = sim_end[j] if t1 is None else min(sim_end[j], t1)
            energy.append(npow[j] * nodes[j] * (e - sim_start[j]))
            avgp.append(npow[j] * nodes[j])
        jobs["energy_j"] = energy
        jobs["avg_power_w"] = avgp
        jobs["node_ids"] = [placed[j] for j in range(n)]
        jobs = jobs.reset_index(drop=True)

        steps = pd.DataFrame({
            "time": np.asarray(steps_t, dtype="int64"),
            "busy_nodes": np.asarray(steps_busy, dtype="int64"),
            "it_power_w": np.asarray(steps_pow, dtype="float64"),
            "queued_jobs": np.asarray(steps_q, dtype="int64"),
            "running_jobs": np.asarray(steps_r, dtype="int64"),
        })
        return EngineResult(jobs=jobs, steps=steps, t_start=self.t0, t_end=int(t_end), counts=counts)

