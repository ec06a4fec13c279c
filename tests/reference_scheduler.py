"""An independent reference scheduler, written from DESIGN.md §3 alone (no code shared with core/).

It is simple and slow on purpose: the clock visits every event timestamp, the queue is re-sorted
at every pass, node placement scans a list of booleans, and conservative backfilling books its
reservations in a per-second array of free nodes. Nothing here imports ``twinsweep``: it reads
plain job records and returns plain outcomes, so that a test can compare the engine with it job by
job (tests/test_reference_scheduler.py).

Semantics implemented (DESIGN.md §3, with the project's documented choices where §3 is silent,
README "Scheduling semantics"):

* Time is integer seconds; a job holds its nodes on ``[start, end)``.
* At one timestamp: all ends, then all submissions in trace order, then one pass; a job that
  starts and ends in the same second holds its nodes until the pass that started it is over, then
  they are released and another pass runs at that second (until no zero-length job starts).
* Effective time limit (§3.3): the requested limit when it is > 0; else the system's
  ``default_time_limit`` when it has one (> 0); else the job's own run time (0 when it never ran);
  such jobs are "imputed".
* Reschedule mode ends a job at ``start + min(run, limit)`` with kill on, ``start + run`` with
  kill off; status ``timeout`` when killed (``run > limit``), else ``completed``.
* A job asking for <= 0 nodes or more than the machine has is ``rejected`` at submit, never
  queued; a job without a run time (never ran in the trace) is ``not_run``, never queued.
* Queue order (§3.6): ``fcfs`` submit time, ``sjf`` effective limit ascending, ``ljf`` nodes
  descending, ``priority`` the trace's priority descending (missing last); ties by
  ``(submit_time, trace_index)``.
* Backfill (§3.7): ``none``, ``firstfit``, ``easy`` (one reservation, for the head of the
  policy-ordered queue: shadow time and extra nodes from running jobs' expected ends
  ``start + limit``; an expected end not after now — a job past its limit with kill off, or a
  zero-length job started in this very pass — counts as ``now + 1``), ``conservative`` (every
  queued job, in queue order, gets the earliest slot holding its nodes for ``max(limit, 1)``
  seconds in a profile rebuilt at every pass; a job whose slot is now starts). A reservation
  "moves later" when a queued job's slot at a pass is in the future and later than its slot at
  the previous pass; those moves are counted (``reservation_delays``).
* Placement (§3.8): the lowest-numbered free nodes, jobs of one pass placed in queue order.
* Window (§3.9) ``[t0, t0 + duration)`` (``t0`` = the first submission when no start is given;
  open end without a duration). A job's recorded start is its submit time when unknown, and never
  earlier than its submit time. Jobs submitted at or after the window end are dropped. A job
  submitted before ``t0`` that started before ``t0`` is *prepopulated* (placed at its recorded
  start, in recorded-start order) when it would still hold its nodes at ``t0`` in this run
  (recorded start + its occupancy, which is ``min(run, limit)`` with kill on, ``run`` with kill
  off, is after ``t0``), and dropped otherwise; one that never ran is dropped; one that had not
  started at ``t0`` is submitted at ``t0``. A prepopulated job that finds no room is queued at
  ``t0`` instead. Events at or after the window end are not processed: a job started but not
  ended by then is ``running``, one never started is ``queued``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

POLICIES = ("fcfs", "sjf", "ljf", "priority")
BACKFILLS = ("none", "firstfit", "easy", "conservative")


@dataclasses.dataclass(frozen=True)
class Job:
    """One trace record. ``run``: recorded run time (s), None if the job never ran; ``limit``:
    requested walltime (s), None or <= 0 when unusable; ``nodes``: may be 0 or exceed the
    machine; ``recorded_start``: the trace's start (s) or None; ``priority``: None = absent.
    The job's trace index is its position in the list handed to :func:`simulate`."""

    submit: int
    run: Optional[int]
    limit: Optional[int]
    nodes: int
    recorded_start: Optional[int] = None
    priority: Optional[float] = None


@dataclasses.dataclass
class Outcome:
    """What happened to one job of the window (``kept``: in the window at all)."""

    kept: bool = False
    status: Optional[str] = None  # completed | timeout | rejected | not_run | queued | running
    start: Optional[int] = None
    end: Optional[int] = None  # only for completed / timeout (jobs.parquet's convention)
    held_until: Optional[int] = None  # end of the occupancy, also for running jobs
    limit: int = 0  # effective time limit (s)
    imputed: bool = False
    prepopulated: bool = False
    node_ids: Optional[tuple] = None


@dataclasses.dataclass
class PassRecord:
    """One scheduling pass: its time, the jobs it started (queue order), and for EASY the head,
    its shadow time, the first expected end among the running jobs it walked (``first_end``) and
    the jobs started in queue order before the head was found."""

    time: int
    started: list
    head: Optional[int] = None
    shadow: Optional[int] = None
    first_end: Optional[int] = None
    in_order: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Result:
    jobs: list  # Outcome per input job (index = trace index)
    t0: int
    t_end: int  # window end, or the last event's time for an open window
    passes: list  # PassRecord per pass, in order
    first_reservation: dict  # conservative: job -> its reservation at its first pass
    delays: dict  # conservative: job -> how many times its reservation moved later
    reservation_delays: int


def effective_limit(job: Job, default_time_limit: Optional[int]) -> tuple[int, bool]:
    """(limit, imputed) per DESIGN.md §3.3."""
    if job.limit is not None and job.limit > 0:
        return job.limit, False
    if default_time_limit:
        return default_time_limit, True
    return (job.run if job.run is not None else 0), True


def simulate(jobs: list, nodes: int, policy: str = "fcfs", backfill: str = "easy", kill: bool = True,
             default_time_limit: Optional[int] = None, start: Optional[int] = None,
             duration: Optional[int] = None) -> Result:
    """Schedule ``jobs`` (list of :class:`Job`, trace order) on ``nodes`` nodes; see the module
    docstring for the semantics. Raises ValueError for an unknown policy or backfill."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    if backfill not in BACKFILLS:
        raise ValueError(f"unknown backfill {backfill!r}")
    n = len(jobs)
    out = [Outcome() for _ in range(n)]
    for i, j in enumerate(jobs):
        out[i].limit, out[i].imputed = effective_limit(j, default_time_limit)

    def occupancy(i):  # seconds the job holds its nodes once started
        r = jobs[i].run
        return min(r, out[i].limit) if kill else r

    # -- the window --------------------------------------------------------------------------
    t0 = start if start is not None else min(j.submit for j in jobs)
    t1 = None if duration is None else t0 + duration
    rec_start = [max(j.recorded_start if j.recorded_start is not None else j.submit, j.submit) for j in jobs]
    submit_at = {}  # job -> the second it is submitted in this run
    prepop = []
    for i, j in enumerate(jobs):
        if t1 is not None and j.submit >= t1:
            continue  # after the window
        if j.submit >= t0:
            submit_at[i] = j.submit
        elif j.run is None:
            continue  # never ran, from before the window: not part of it
        elif rec_start[i] >= t0:
            submit_at[i] = t0  # waiting at the window start
        elif rec_start[i] + occupancy(i) > t0:
            prepop.append(i)  # running at the window start
        else:
            continue  # ended before the window
        out[i].kept = True

    # -- state -----------------------------------------------------------------------------------
    free_node = [True] * nodes
    running = {}  # job -> end of its occupancy
    queue = []  # job numbers (unordered; sorted at each pass)
    passes = []
    first_res, delays, prev_res = {}, {}, {}

    def free_count():
        return sum(free_node)

    def place(i, when):
        need = jobs[i].nodes
        ids = []
        for k in range(nodes):
            if len(ids) == need:
                break
            if free_node[k]:
                ids.append(k)
        assert len(ids) == need, "placing a job that does not fit"
        for k in ids:
            free_node[k] = False
        o = out[i]
        o.node_ids, o.start = tuple(ids), when
        o.held_until = when + occupancy(i)
        running[i] = o.held_until

    def release(i):
        for k in out[i].node_ids:
            free_node[k] = True
        del running[i]

    def is_rejected(i):
        return jobs[i].nodes <= 0 or jobs[i].nodes > nodes

    # prepopulation, in recorded-start order (rejected jobs are rejected at the window start instead)
    for i in sorted(prepop, key=lambda i: (rec_start[i], i)):
        if not is_rejected(i) and jobs[i].nodes <= free_count():
            place(i, rec_start[i])
            out[i].prepopulated = True
        else:
            submit_at[i] = t0

    # -- ordering --------------------------------------------------------------------------------
    def key(i):
        j = jobs[i]
        if policy == "fcfs":
            k = j.submit
        elif policy == "sjf":
            k = out[i].limit
        elif policy == "ljf":
            k = -j.nodes
        else:
            k = math.inf if j.priority is None or math.isnan(j.priority) else -j.priority
        return (k, j.submit, i)

    def expected_end(i, now):  # as the scheduler sees it: start + limit, never before now + 1
        return max(out[i].start + out[i].limit, now + 1)

    # -- one pass per backfill variant -----------------------------------------------------------
    def pass_none(now, q, rec):
        for i in q:
            if jobs[i].nodes > free_count():
                break
            place(i, now)
            rec.started.append(i)

    def pass_firstfit(now, q, rec):
        for i in q:
            if jobs[i].nodes <= free_count():
                place(i, now)
                rec.started.append(i)

    def pass_easy(now, q, rec):
        k = 0
        while k < len(q) and jobs[q[k]].nodes <= free_count():
            place(q[k], now)
            rec.started.append(q[k])
            rec.in_order.append(q[k])
            k += 1
        if k == len(q):
            return
        head = q[k]
        need = jobs[head].nodes
        ends = sorted((expected_end(i, now), jobs[i].nodes) for i in running)
        avail = free_count()
        shadow = None
        for e, m in ends:
            avail += m
            if avail >= need:
                shadow = e
                break
        assert shadow is not None, "the head fits an empty machine"
        extra = free_count() + sum(m for e, m in ends if e <= shadow) - need
        rec.head, rec.shadow, rec.first_end = head, shadow, ends[0][0]
        for i in q[k + 1:]:
            m = jobs[i].nodes
            if m > free_count():
                continue
            if now + out[i].limit <= shadow:
                pass
            elif m <= extra:
                extra -= m
            else:
                continue
            place(i, now)
            rec.started.append(i)

    def pass_conservative(now, q, rec):
        span = max([expected_end(i, now) - now for i in running] + [0])
        span += sum(max(out[i].limit, 1) for i in q) + 2
        free = [nodes] * span  # free[s]: nodes free during second now + s
        for i in running:
            for s in range(expected_end(i, now) - now):
                free[s] -= jobs[i].nodes
        starts = []
        for i in q:
            m, d = jobs[i].nodes, max(out[i].limit, 1)
            s = 0
            while any(free[x] < m for x in range(s, s + d)):
                s += 1
            for x in range(s, s + d):
                free[x] -= m
            t = now + s
            if i not in first_res:
                first_res[i] = t
            if t > now and i in prev_res and t > prev_res[i]:
                delays[i] = delays.get(i, 0) + 1
            prev_res[i] = t
            if t == now:
                starts.append(i)
        for i in starts:
            place(i, now)
            rec.started.append(i)

    passes_by_name = {"none": pass_none, "firstfit": pass_firstfit, "easy": pass_easy,
                      "conservative": pass_conservative}
    do_pass = passes_by_name[backfill]

    # -- the clock -------------------------------------------------------------------------------
    pending = sorted(submit_at, key=lambda i: (submit_at[i], i))
    p = 0
    now = t0
    last_event = t0
    while True:
        cand = [submit_at[pending[p]]] if p < len(pending) else []
        cand += list(running.values())  # every running job ends after now
        if not cand:
            break
        t = min(cand)
        if t1 is not None and t >= t1:
            break
        now = last_event = t
        for i in sorted(i for i, e in running.items() if e == t):  # 1. ends
            release(i)
        while p < len(pending) and submit_at[pending[p]] == t:  # 2. submissions, trace order
            i = pending[p]
            p += 1
            if jobs[i].run is None:
                out[i].status = "not_run"
            elif is_rejected(i):
                out[i].status = "rejected"
            else:
                queue.append(i)
        while True:  # 3. passes (again after zero-length jobs are released)
            q = sorted(queue, key=key)
            rec = PassRecord(time=t, started=[])
            do_pass(t, q, rec)
            passes.append(rec)
            for i in rec.started:
                queue.remove(i)
            zero = [i for i in rec.started if out[i].held_until == t]
            for i in zero:
                release(i)
            if not zero:
                break

    t_end = t1 if t1 is not None else last_event
    for i, o in enumerate(out):
        if not o.kept or o.status is not None:
            continue
        if o.start is None:
            o.status = "queued"
        elif t1 is not None and o.held_until > t1:
            o.status = "running"
        else:
            o.status = "timeout" if kill and jobs[i].run > o.limit else "completed"
            o.end = o.held_until
    return Result(jobs=out, t0=t0, t_end=t_end, passes=passes, first_reservation=first_res,
                  delays=delays, reservation_delays=sum(delays.values()))


# -- the guarantees, read off a schedule ---------------------------------------------------------

def easy_head_spells(result: Result) -> list:
    """Each spell during which one job is the EASY head, as ``(job, first pass index, shadow at
    that pass, jumped, started)``. ``jumped``: after the spell began, a job ahead of it in queue
    order started or became head (a newcomer the policy put in front of it: impossible under
    fcfs), which voids EASY's promise to it. ``started``: the spell ended with the job starting
    (in queue order); False for a spell still open when the run ends."""
    spells = []
    cur = None  # [job, first pass index, shadow, jumped]
    for k, rec in enumerate(result.passes):
        if cur is not None:
            job = cur[0]
            if rec.head == job:
                cur[3] = cur[3] or bool(rec.in_order)  # jobs ahead of it started
                continue
            started = job in rec.in_order
            # not started: another job is head now, ahead of it in queue order
            spells.append((job, cur[1], cur[2], cur[3] or not started, started))
            cur = None
        if rec.head is not None:
            cur = [rec.head, k, rec.shadow, False]
    if cur is not None:
        spells.append((cur[0], cur[1], cur[2], cur[3], False))
    return spells
