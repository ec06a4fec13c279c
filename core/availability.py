"""Node availability calendars inferred from a log (issue 15 item 2; docs/validation.md).

A calendar is a tuple of ``(start, end, nodes_down)`` periods (s from the trace epoch,
``[start, end)``), the form of ``System.availability`` that the engine honours
(:meth:`core.engine.Engine.run`). The estimators, with their constants declared here once for
every trace (no per-trace tuning):

- :func:`block_down_nodes` — the *queue-evidence* estimator, for a **fitting window** only (it
  reads the queue listing: which jobs waited when, with what request, i.e. which job started
  when): in each block of :data:`BLOCK_S`, of the nodes the log never had busy in it, the fewest
  that must have been down for the queue's *would-be starters* not to fit (the head, or a job
  behind it that delays no reservation; :func:`first_starters`), when that shortage shows at
  most of the block's looks (:data:`MAJORITY`). Jobs the log shows waiting for a reason of
  their own — overtaken by a later job that asked for at least their nodes and limit
  (:func:`held_from`) — and jobs younger than a scheduler pass (:data:`SCHED_LATENCY_S`) are no
  evidence.
- :func:`telemetry_calendar` — the *informed* estimator of any window, from machine-state
  **telemetry** only: the busy-node count and the queued-job count over time (aggregates; no
  per-job start, end or wait). In a block where jobs were queued at most of its 5-min samples
  (:func:`pressure`), a share of the nodes the log never had busy in the block is taken as down;
  the share is fitted on the fitting window (:func:`fit_idle_share`: the queue-evidence
  estimator's nodes down over the idle nodes of the same pressured blocks). Blocks are stacked
  into contiguous periods (:func:`layered_calendar`) so that a held node's expected end is the
  end of its run. :func:`telemetry_machine` adds what the same telemetry shows above the
  nominal size: in a block where the log held more nodes busy than the machine has (time
  sharing, or a larger machine than its header says), the block's :data:`TIME_SHARED_QUANTILE`
  busy count as its usable node slots.
- :func:`blind_constant` — one constant number of unusable nodes, fitted on the fitting window
  only: the median over its blocks of :func:`block_down_nodes`; applied to the whole trace
  (:func:`constant_calendar`).

Inputs are *schedules* as in :mod:`core.fidelity` (``start_time``, ``end_time``, ``nodes``,
``submit_time``, and ``time_limit`` when known); :func:`telemetry_counts` reduces one to the two
count series, which is all :func:`telemetry_calendar` and :func:`telemetry_machine` read.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

#: Block length of the estimators (s): 6 h. Declared once for every trace (chosen among 3, 6, 12 and
#: 24 h on KTH-SP2 and SDSC-SP2: 6 h was the only one within 25 % on the mean wait of both).
BLOCK_S = 21600


def _step(times_plus, times_minus, weights_plus, weights_minus):
    """Step function (change times, value from each time on) of Σ +w at t⁺ and −w at t⁻."""
    t = np.concatenate([times_plus, times_minus])
    w = np.concatenate([weights_plus, -weights_minus])
    order = np.argsort(t, kind="stable")
    t, w = t[order], w[order]
    ut, idx = np.unique(t, return_index=True)
    sums = np.add.reduceat(w, idx) if len(w) else w
    return ut, np.cumsum(sums)


def busy_and_queued(schedule: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Recorded busy nodes and queued jobs as step functions.

    Returns ``(t_busy, busy, t_queue, queued)``: change times (int64 s, ascending) and the value
    from each of them on. A job is busy on ``[start, end)`` with its nodes and queued on
    ``[submit, start)``. Jobs without a start or an end (never ran) are not counted.
    """
    s = schedule["start_time"].astype("Int64")
    e = schedule["end_time"].astype("Int64")
    ok = (s.notna() & e.notna() & schedule["nodes"].notna()).to_numpy()
    st = s.to_numpy(dtype="float64", na_value=np.nan)[ok].astype(np.int64)
    en = e.to_numpy(dtype="float64", na_value=np.nan)[ok].astype(np.int64)
    n = schedule["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=0)[ok].astype(np.int64)
    sub = schedule["submit_time"].to_numpy(dtype="int64")[ok]
    tb, busy = _step(st, en, n, n)
    ones = np.ones(len(st), dtype=np.int64)
    tq, queued = _step(np.minimum(sub, st), st, ones, ones)
    return tb, busy, tq, queued


def over_capacity(schedule: pd.DataFrame, nodes: int) -> tuple[int, int, int]:
    """How far a schedule's jobs that fit a machine of ``nodes`` nodes (``0 < nodes <= machine``)
    hold more than ``nodes`` busy at once: ``(periods, seconds, peak)`` — the number of maximal
    intervals above ``nodes``, their total length (s) and the largest busy-node count (0 for an
    empty schedule). Reads what :func:`busy_and_queued` reads. Used for a replay that must
    follow a log larger than its machine (:func:`core.run.replay_oversubscription`) and for
    ``twinsweep validate``'s warning about such a log."""
    n = schedule["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)
    t, busy, _, _ = busy_and_queued(schedule.loc[(n > 0) & (n <= nodes)])
    above = busy > nodes
    periods = int(np.sum(above[1:] & ~above[:-1]) + (1 if len(above) and above[0] else 0))
    secs = int(np.sum(np.diff(t)[above[:-1]])) if len(t) > 1 else 0
    return periods, secs, int(busy.max()) if len(busy) else 0


def _block_extremes(t: np.ndarray, v: np.ndarray, edges: np.ndarray, fn) -> np.ndarray:
    """``fn`` (np.maximum or np.minimum) of a step function over each ``[edges[i], edges[i+1])``."""
    out = np.empty(len(edges) - 1, dtype=np.int64)
    for i in range(len(edges) - 1):
        a, b = edges[i], edges[i + 1]
        k0 = np.searchsorted(t, a, side="right") - 1  # value in force at a
        k1 = np.searchsorted(t, b, side="left")  # changes before b
        vals = v[max(k0, 0):k1] if k1 > max(k0, 0) else v[max(k0, 0):max(k0, 0) + 1]
        if k0 < 0:
            vals = np.concatenate([[0], v[0:k1]])
        out[i] = int(fn.reduce(vals)) if len(vals) else 0
    return out


#: Grid (s) on which :func:`block_down_nodes` looks at the recorded queue: 5 min.
QUEUE_GRID_S = 300
#: A job queued for less than this (s) may only be waiting for the scheduler's next pass, not for
#: nodes: 5 min, above the pass intervals of batch systems (Slurm's defaults: ``sched_interval`` 60 s,
#: ``bf_interval`` 30 s) and equal to the queue grid, so a job's first look is never evidence.
SCHED_LATENCY_S = 300


#: Share of a block's looks with a waiting job that must show a shortage (a positive bound) for
#: the block to count any node down: a simple majority, 1/2 (a shortage is a state of the machine,
#: not one moment; the share is 0.69-0.96 in the blocks of the hand-made downtime of
#: tests/test_validate.py, median 0.39 over the blocks KTH-SP2 would otherwise count).
MAJORITY = 0.5


def _ran_mask(schedule: pd.DataFrame) -> np.ndarray:
    """bool per row of ``schedule``: the job ran (a start, an end and nodes)."""
    s = schedule["start_time"].astype("Int64")
    return (s.notna() & schedule["end_time"].notna() & schedule["nodes"].notna()).to_numpy()


def _ran(schedule: pd.DataFrame):
    """Arrays of the jobs that ran (a start, an end and nodes): submit (clipped to the start),
    start, nodes, time limit (float64; ``-inf`` when the schedule has none or it is missing)."""
    s = schedule["start_time"].astype("Int64")
    ok = _ran_mask(schedule)
    st = s.to_numpy(dtype="float64", na_value=np.nan)[ok].astype(np.int64)
    sub = np.minimum(schedule["submit_time"].to_numpy(dtype="int64")[ok], st)
    n = schedule["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=0)[ok].astype(np.int64)
    if "time_limit" in schedule.columns:
        lim = schedule["time_limit"].astype("float64").to_numpy(na_value=np.nan)[ok]
        lim = np.where(np.isnan(lim), -np.inf, lim)
    else:
        lim = np.full(len(st), -np.inf)
    return sub, st, n, lim


def held_from(sub: np.ndarray, st: np.ndarray, n: np.ndarray, lim: np.ndarray) -> np.ndarray:
    """For each job, the first time (s) the recorded queue shows it held for a reason of its own,
    ``inf`` when never: the first start of a job submitted *after* it (and started before it)
    that asks for at least as many nodes and at least as long a time limit (``-inf`` limits:
    unknown, compared as equal). Under FCFS order with EASY or conservative backfilling, with or
    without clock rules that cap limits, such a job starting proves there was room for this one
    too (it fits wherever the later one fits and delays nothing the later one does not), so its
    wait — at least from then on; :func:`first_starters` drops all of it, as the hold may have
    begun before the overtaking shows it — is not a shortage of nodes: a user or system hold, a
    dependency, a per-user or per-queue run limit, a class or fair-share order. Arrays of one length (jobs that ran); float64 result.
    Cost: for each job, a vectorised look at the jobs submitted while it waited."""
    order = np.argsort(sub, kind="stable")
    so, sto, no, lo = sub[order], st[order], n[order], lim[order]
    out_o = np.full(len(so), np.inf)
    # jobs submitted strictly after job i and before its start
    lo_idx = np.searchsorted(so, so, side="right")
    hi_idx = np.searchsorted(so, sto, side="left")
    for i in np.nonzero(hi_idx > lo_idx)[0].tolist():
        a, b = lo_idx[i], hi_idx[i]
        m = (no[a:b] >= no[i]) & (lo[a:b] >= lo[i]) & (sto[a:b] < sto[i])
        if m.any():
            out_o[i] = sto[a:b][m].min()
    out = np.empty(len(so))
    out[order] = out_o
    return out


def held_jobs(schedule: pd.DataFrame) -> np.ndarray:
    """bool per row of ``schedule``: the job ran and the recorded queue shows it held for a
    reason of its own at some point of its wait (:func:`held_from` is finite: a job submitted
    after it, asking for at least its nodes and its time limit, started before it). Such a
    job's wait is not all a shortage of nodes (a user or system hold, a dependency, a per-user
    or per-queue limit, a class or fair-share order), so a twin of the machine and its queue
    policy is not expected to reproduce it; ``twinsweep validate`` reports the twin's wait
    figures for these jobs and for the others apart (:func:`core.fidelity.wait_split`). Reads
    ``submit_time``, ``start_time``, ``end_time``, ``nodes`` and ``time_limit`` when present
    (the queue listing: which job started when)."""
    ok = _ran_mask(schedule)
    out = np.zeros(len(schedule), dtype=bool)
    out[ok] = np.isfinite(held_from(*_ran(schedule)))
    return out


def first_starters(schedule: pd.DataFrame, grid: np.ndarray, max_limit=None,
                   latency_s: int = SCHED_LATENCY_S) -> np.ndarray:
    """At each time ``t`` of ``grid`` (ascending, s), the fewest nodes asked for by a job of the
    recorded queue that a FCFS scheduler with EASY or conservative backfilling would have started
    at ``t`` had it had the nodes: ``inf`` when there is none. The queue at ``t`` is the jobs
    submitted at least ``latency_s`` (:data:`SCHED_LATENCY_S`) before ``t`` and not yet started
    (jobs that never ran are not counted; a younger job may be waiting for the scheduler's next
    pass), less those held for a reason of their own (ever overtaken, :func:`held_from`), in
    submit order. A would-be starter is
    - the *head* (the first job): when it fits in the free nodes it starts;
    - a job behind it whose time limit ends before the recorded start of every job ahead of it
      (``t + limit <= min start``): it delays no reservation (an earlier job's reservation is
      never before its actual start), so a backfill pass starts it when it fits. A job with no
      known limit is never counted here; nor is a job behind that only EASY's drain keeps back.
    With ``max_limit(t)`` (a site's clock rules, :meth:`core.backfill.windows.ClockRules.max_limit`:
    the longest time limit, s, a job may have to start at ``t``; the schedule then needs
    ``time_limit``), only jobs the rules let start at ``t`` are in the queue (a job with no known
    limit always is). Returns a float64 array of len(grid).
    Reads ``submit_time``, ``start_time``, ``end_time``, ``nodes`` and ``time_limit`` (when
    present) of the schedule, i.e. the queue listing over time; a queue visited every grid point
    (cost O(grid × queue length) after :func:`held_from`)."""
    sub, st, n, lim = _ran(schedule)
    # a job ever overtaken waited for a reason of its own: none of its wait is evidence (the
    # hold may have begun before the first overtaking shows it)
    gone = np.where(np.isfinite(held_from(sub, st, n, lim)), sub, st)
    order = np.argsort(sub, kind="stable")
    seen = sub + int(latency_s)  # a job is looked at from then on
    end_by = np.where(np.isfinite(lim), lim, np.inf)  # unknown limit: never "ends in time"
    out = np.full(len(grid), np.inf)
    q: list[int] = []
    p = 0
    for g, t in enumerate(grid.tolist()):
        while p < len(order) and seen[order[p]] <= t:
            q.append(int(order[p]))
            p += 1
        q = [j for j in q if gone[j] > t]
        if not q:
            continue
        qa = np.fromiter(q, dtype=np.int64, count=len(q))
        if max_limit is not None:
            lq = lim[qa]
            qa = qa[np.where(np.isfinite(lq), lq, 0.0) <= max_limit(t)]
            if not len(qa):
                continue
        ahead = np.minimum.accumulate(st[qa])  # earliest recorded start among a job and those ahead
        ok = np.empty(len(qa), dtype=bool)
        ok[0] = True
        ok[1:] = t + end_by[qa[1:]] <= ahead[:-1]
        out[g] = n[qa[ok]].min()
    return out


def block_down_nodes(schedule: pd.DataFrame, nodes: int, t0: int, t1: int,
                     block_s: int = BLOCK_S, max_limit=None, grid_s: int = QUEUE_GRID_S,
                     latency_s: int = SCHED_LATENCY_S) -> tuple[np.ndarray, np.ndarray]:
    """Nodes inferred unusable per block of ``[t0, t1)``: the *fewest* of the nodes the log never
    used in the block (``idle = nodes − max busy``) that must have been down for the recorded
    queue not to start its would-be starters. At each look ``t`` (every ``grid_s``,
    :data:`QUEUE_GRID_S`), let ``w(t)`` be the fewest nodes a would-be starter asked for
    (:func:`first_starters`: the head, or a job behind it that delays no reservation; left out:
    jobs ever overtaken by a later, at-least-as-large job — a hold, a dependency, a run limit —
    and jobs queued for less than ``latency_s``, :data:`SCHED_LATENCY_S`). Had fewer than
    ``idle − w(t) + 1`` of the idle nodes been down, that job would have fit and started: the
    look's bound. A block counts ``idle − min w + 1`` (the largest bound: one count for the block
    consistent with every look) when the bound is positive at more than :data:`MAJORITY` of the
    looks at which a job waited — a shortage is a state of the machine, not one moment — else 0.
    A head wider than the idle nodes with only jobs behind it that could delay it (EASY's drain
    for a wide job) or an empty queue bounds nothing. With ``max_limit`` (a site's clock rules,
    :meth:`core.backfill.windows.ClockRules.max_limit`) only jobs the rules let start count.
    Reads ``time_limit`` when the schedule has it (holds and reservations compare limits). Never
    negative (a log busier than the machine's size gives 0). Returns ``(edges, down)``: block
    edges (int64, len = blocks + 1) and int64 counts. Raises ValueError on an empty window."""
    if t1 <= t0:
        raise ValueError(f"window [{t0}, {t1}) is empty")
    edges = np.append(np.arange(t0, t1, block_s, dtype=np.int64), np.int64(t1))
    tb, busy, _tq, _queued = busy_and_queued(schedule)
    idle = idle_nodes(tb, busy, nodes, edges)
    grid = np.arange(t0, t1, grid_s, dtype=np.int64)
    blk = np.searchsorted(edges, grid, side="right") - 1
    look = idle[blk] > 0  # a block without idle nodes infers nothing: its queue is not visited
    grid, blk = grid[look], blk[look]
    # of the nodes never used in the block, at least idle - w + 1 were down at a look where a
    # would-be starter of w nodes waited (with idle - w + 1 down it would not fit)
    bound = idle[blk] - first_starters(schedule, grid, max_limit, latency_s) + 1  # -inf: empty queue
    need = np.full(len(edges) - 1, -np.inf)
    np.maximum.at(need, blk, bound)
    # a shortage is a state of the machine: it must show at most of the looks at which a job
    # waited, not at a few (a job the held test missed, a moment of a drain)
    waited = np.bincount(blk, weights=np.isfinite(bound), minlength=len(need))
    short = np.bincount(blk, weights=bound > 0, minlength=len(need))
    need[short <= MAJORITY * waited] = 0
    down = np.clip(need, 0, idle)
    return edges, down.astype(np.int64)


def layered_calendar(edges: np.ndarray, down: np.ndarray, nodes: int) -> tuple[tuple[int, int, int], ...]:
    """A step function of nodes down (``down[i]`` on ``[edges[i], edges[i+1])``) as *stacked*
    periods: level ``k`` (the k-th node down) is one period over each maximal contiguous run of
    blocks with ``down >= k``, and levels with the same run are merged into one period of that
    many nodes. A node is thus held from the start to the end of its contiguous run, never
    "returned" at an inner block edge: the engine's schedulers count on a held node at its
    period's end (EASY's shadow time), so a run cut into back-to-back blocks would promise nodes
    back every block (issue 15 audit: +19 % -> -36 % on KTH informed from the cut alone). Counts
    are clipped to ``[0, nodes]`` (``nodes``: a full outage). Returns periods ``(start, end, nodes_down)`` sorted by
    (start, end); their sum at any time equals the step function (clipped). Raises ValueError
    when ``len(edges) != len(down) + 1``."""
    down = np.clip(np.asarray(down, dtype=np.int64), 0, max(0, nodes))
    edges = np.asarray(edges, dtype=np.int64)
    if len(edges) != len(down) + 1:
        raise ValueError(f"layered_calendar: {len(edges)} edges for {len(down)} blocks (need blocks + 1)")
    out: dict[tuple[int, int], int] = {}
    # a stack of open runs: (level from, level to, start index); classic histogram decomposition
    stack: list[list[int]] = []  # [start_block, level_low, level_high]
    prev = 0
    for i, d in enumerate(list(down) + [0]):
        d = int(d)
        if d < prev:  # close the levels above d
            while stack and stack[-1][2] > d:
                s0, lo, hi = stack.pop()
                top_lo = max(lo, d)
                key = (int(edges[s0]), int(edges[i]))
                out[key] = out.get(key, 0) + (hi - top_lo)
                if lo < d:  # part of that run continues below: it started at s0 as well
                    stack.append([s0, lo, d])
        elif d > prev:
            stack.append([i, prev, d])
        prev = d
    return tuple(sorted((a, b, k) for (a, b), k in out.items() if k > 0))


def queue_calendar(schedule: pd.DataFrame, nodes: int, t0: int, t1: int,
                   block_s: int = BLOCK_S, max_limit=None, grid_s: int = QUEUE_GRID_S,
                   latency_s: int = SCHED_LATENCY_S) -> tuple[tuple[int, int, int], ...]:
    """The queue-evidence calendar of ``[t0, t1)`` (:func:`block_down_nodes`) as stacked periods
    (:func:`layered_calendar`). It reads the queue listing (which job waited when), so it is for a
    fitting window, or for inspecting a log; the informed mode uses :func:`telemetry_calendar`."""
    edges, down = block_down_nodes(schedule, nodes, t0, t1, block_s, max_limit, grid_s, latency_s)
    return layered_calendar(edges, np.where(down >= nodes, 0, down), nodes)  # none where nothing ran


def telemetry_counts(schedule: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The machine-state telemetry of a recorded schedule: ``(t_busy, busy, t_queue, queued)``,
    the busy-node count and the queued-job count as step functions (:func:`busy_and_queued`).
    Aggregates only: two schedules whose jobs trade starts without changing either count give the
    same arrays, so whatever reads only these cannot tell which job started when."""
    return busy_and_queued(schedule)


def _at(t: np.ndarray, v: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Value of the step function ``(t, v)`` at each time of ``grid`` (0 before its first change)."""
    k = np.searchsorted(t, grid, side="right") - 1
    return np.where(k >= 0, v[np.maximum(k, 0)], 0) if len(t) else np.zeros(len(grid), dtype=np.int64)


def pressure(t_queue: np.ndarray, queued: np.ndarray, edges: np.ndarray, grid_s: int = QUEUE_GRID_S) -> np.ndarray:
    """Per block ``[edges[i], edges[i+1])``: True when the queued-job count is positive at more
    than :data:`MAJORITY` of its looks (every ``grid_s`` from the block's start) — jobs waited
    through most of it, a state of the machine rather than a moment. Returns a bool array."""
    grid = np.arange(edges[0], edges[-1], grid_s, dtype=np.int64)
    blk = np.searchsorted(edges, grid, side="right") - 1
    looks = np.bincount(blk, minlength=len(edges) - 1)
    waiting = np.bincount(blk, weights=_at(t_queue, queued, grid) > 0, minlength=len(edges) - 1)
    return waiting > MAJORITY * np.maximum(looks, 1)


def idle_nodes(t_busy: np.ndarray, busy: np.ndarray, nodes: int, edges: np.ndarray) -> np.ndarray:
    """Per block: the nodes the log never had busy in it, ``nodes − max busy`` (never negative)."""
    return np.maximum(0, nodes - _block_extremes(t_busy, busy, edges, np.maximum))


def fit_idle_share(schedule: pd.DataFrame, nodes: int, fit0: int, fit1: int, block_s: int = BLOCK_S,
                   max_limit=None, grid_s: int = QUEUE_GRID_S, latency_s: int = SCHED_LATENCY_S) -> dict:
    """The share of idle nodes that were down in pressured blocks, fitted on ``[fit0, fit1)``
    only: Σ nodes down by queue evidence (:func:`block_down_nodes`) over Σ idle nodes
    (:func:`idle_nodes`), both over the fitting window's pressured blocks (:func:`pressure`),
    clipped to [0, 1]; 1 when the fitting window has no pressured block with idle nodes (no
    evidence: idle nodes under a standing queue are taken as down). Reads only what was recorded
    before ``fit1`` (:func:`censor_at`). Returns ``{"share", "down_node_blocks",
    "idle_node_blocks", "pressured_blocks", "blocks"}``. Raises ValueError on an empty window."""
    sched = censor_at(schedule, fit1)
    edges, down = block_down_nodes(sched, nodes, fit0, fit1, block_s, max_limit, grid_s, latency_s)
    tb, busy, tq, queued = telemetry_counts(sched)
    hot = pressure(tq, queued, edges, grid_s)
    idle = idle_nodes(tb, busy, nodes, edges)
    num, den = int(down[hot].sum()), int(idle[hot].sum())
    share = min(1.0, num / den) if den else 1.0
    return {"share": share, "down_node_blocks": num, "idle_node_blocks": den,
            "pressured_blocks": int(hot.sum()), "blocks": int(len(down))}


def telemetry_calendar(counts: tuple, nodes: int, t0: int, t1: int, share: float,
                       block_s: int = BLOCK_S, grid_s: int = QUEUE_GRID_S) -> tuple[tuple[int, int, int], ...]:
    """The informed calendar of ``[t0, t1)`` from telemetry only (``counts``: :func:`telemetry_counts`):
    in each block of ``block_s`` that is pressured (:func:`pressure`), ``round(share × idle)``
    nodes down (``idle``: :func:`idle_nodes`; ``share``: :func:`fit_idle_share`), 0 elsewhere; all
    ``nodes`` in a pressured block in which the machine ran nothing at all (a full outage, which
    the busy and queued counts together show: jobs waited through most of the block and none
    ran). Stacked into contiguous periods (:func:`layered_calendar`). Until 2026-12-07 such a
    block counted no node down ("telemetry cannot tell down from idle"), and a maintenance window
    of the whole machine went unseen. A finer rule — every stretch of 5 min or more with jobs
    waiting on an empty machine taken as an outage — was probed and not kept: on the PWA logs
    those stretches are mostly queues of held jobs (SDSC-Paragon informed +43 % -> +102 %, KTH
    -2 % -> +14 %). The calendar of :func:`telemetry_machine` without node slots above ``nodes``.
    Raises ValueError on an empty window or a share outside [0, 1]."""
    return layered_calendar(*_telemetry_down(counts, nodes, t0, t1, share, block_s, grid_s), nodes)


def _telemetry_down(counts: tuple, nodes: int, t0: int, t1: int, share: float, block_s: int,
                    grid_s: int) -> tuple[np.ndarray, np.ndarray]:
    """Blocks of ``[t0, t1)`` (edges) and the nodes :func:`telemetry_calendar` takes down in each."""
    if t1 <= t0:
        raise ValueError(f"window [{t0}, {t1}) is empty")
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share of idle nodes down must be in [0, 1], got {share!r}")
    tb, busy, tq, queued = counts
    edges = np.append(np.arange(t0, t1, block_s, dtype=np.int64), np.int64(t1))
    idle = idle_nodes(tb, busy, nodes, edges)
    hot = pressure(tq, queued, edges, grid_s)
    down = np.where(hot, np.floor(share * idle + 0.5), 0).astype(np.int64)
    # the queue stood on a machine that ran nothing the whole block: it (or its scheduler) was out
    return edges, np.where(hot & (idle >= nodes), nodes, down)


@dataclasses.dataclass(frozen=True)
class InformedMachine:
    """What :func:`telemetry_machine` infers: ``slots`` (the machine's node slots: the largest
    block capacity, at least the nominal nodes), ``calendar`` (periods ``(start, end, down)`` on
    those slots), ``down_periods`` (periods of the calendar at the nominal size, i.e. of nodes
    taken down: :func:`telemetry_calendar`'s), ``down_frac`` (node-time down below the nominal
    nodes over nodes × span, in [0, 1)) and ``added_ratio`` (node-time added above the nominal
    nodes over nodes × span: 0 when no block exceeds the machine, above 1 when the machine held
    more than twice its nodes on average)."""

    slots: int
    calendar: tuple
    down_periods: int
    down_frac: float
    added_ratio: float


def telemetry_machine(counts: tuple, nodes: int, t0: int, t1: int, share: float, block_s: int = BLOCK_S,
                      grid_s: int = QUEUE_GRID_S, quantile: float | None = None) -> InformedMachine:
    """The informed machine of ``[t0, t1)`` from telemetry only: :func:`telemetry_calendar`, plus
    node slots above ``nodes`` where the recorded busy count shows them.

    In each block of ``block_s`` (the calendar's), the usable capacity is the time-weighted
    ``quantile`` (default :data:`TIME_SHARED_QUANTILE`) of the recorded busy count over the block
    (:func:`step_quantile`), rounded up, when that exceeds ``nodes`` — the machine then held more
    jobs at once than its nominal size, as a time-shared (non-dedicated, gang-scheduled) machine
    or one larger than its log's header says does — and else ``nodes`` less the calendar's nodes
    down in the block. The same telemetry as the calendar (busy-node counts), read the other way;
    a block above the nominal size is never pressured-and-idle, so the two never meet in one block.
    ``counts`` should count only jobs that fit ``nodes`` (a wider job, which the twin rejects,
    would size the machine: :func:`telemetry_counts` of such a schedule). The twin's pool is the
    largest block's capacity; a block is weighed by its own length (a last block shorter than
    ``block_s`` is more sensitive to a short peak).
    Returns an :class:`InformedMachine`, whose calendar is :func:`telemetry_calendar`'s own when
    no block exceeds ``nodes``. Raises ValueError as :func:`telemetry_calendar`."""
    q = TIME_SHARED_QUANTILE if quantile is None else quantile
    edges, down = _telemetry_down(counts, nodes, t0, t1, share, block_s, grid_s)
    tb, busy = counts[0], counts[1]
    top = np.array([np.ceil(step_quantile(tb, busy, int(a), int(b), q)) for a, b in zip(edges[:-1], edges[1:])],
                   dtype=np.int64)
    cap = np.where(top > nodes, top, nodes - down)
    slots = int(max(nodes, cap.max(initial=nodes)))
    dur = np.diff(edges).astype(np.float64)
    span = float(nodes) * float(t1 - t0)
    below = np.maximum(0, nodes - cap)
    nominal = layered_calendar(edges, below, nodes)  # the calendar itself when no block adds slots
    return InformedMachine(slots=slots, calendar=nominal if slots == nodes else layered_calendar(edges, slots - cap, slots),
                           down_periods=len(nominal),
                           down_frac=float(np.sum(below * dur) / span),
                           added_ratio=float(np.sum(np.maximum(0, cap - nodes) * dur) / span))


def step_quantile(t: np.ndarray, v: np.ndarray, a: int, b: int, quantile: float) -> float:
    """Time-weighted ``quantile`` of the step function ``(t, v)`` (change times ``t`` ascending,
    value ``v[i]`` from ``t[i]`` on; 0 before ``t[0]``) over ``[a, b)``: the least value held, together with every smaller one,
    for at least that share of the window. Raises ValueError on an empty window or a quantile
    outside (0, 1]."""
    if b <= a:
        raise ValueError(f"window [{a}, {b}) is empty")
    if not 0.0 < quantile <= 1.0:
        raise ValueError(f"quantile must be in (0, 1], got {quantile!r}")
    inside = slice(np.searchsorted(t, a, side="right"), np.searchsorted(t, b, side="left"))  # a < t < b: t ascends
    tt = np.concatenate(([a], t[inside], [b])).astype(np.int64)
    vv = np.concatenate((_at(t, v, np.array([a], dtype=np.int64)), v[inside]))
    order = np.argsort(vv, kind="stable")
    cum = np.cumsum(np.diff(tt)[order])
    k = int(np.searchsorted(cum, quantile * cum[-1], side="left"))
    return float(vv[order][min(k, len(vv) - 1)])


def censor_at(schedule: pd.DataFrame, t1: int) -> pd.DataFrame:
    """The schedule as it was known at ``t1``: jobs submitted from ``t1`` on are dropped, and a job
    started at or after ``t1`` is "still queued at ``t1``" (start = end = ``t1``: it occupies
    nothing before ``t1`` and is overtaken by no one before it). What the estimators compute over
    a window ending at ``t1`` then reads no start recorded at or after ``t1`` (:func:`held_from`
    and :func:`first_starters` otherwise compare the starts of later jobs). Returns a new frame."""
    sched = schedule.loc[schedule["submit_time"].to_numpy(dtype="int64") < t1].copy()
    st = sched["start_time"].astype("Int64")
    late = (st >= t1).fillna(False).to_numpy()
    if late.any():
        sched["start_time"] = st.mask(late, int(t1))
        sched["end_time"] = sched["end_time"].astype("Int64").mask(late, int(t1))
    return sched


def blind_constant(schedule: pd.DataFrame, nodes: int, fit0: int, fit1: int,
                   block_s: int = BLOCK_S, max_limit=None, grid_s: int = QUEUE_GRID_S,
                   latency_s: int = SCHED_LATENCY_S) -> tuple[int, int]:
    """Nodes to take out of service for the whole trace, fitted on ``[fit0, fit1)`` only: the
    median (rounded down) over the fitting window's blocks of :func:`block_down_nodes`, clipped so
    that the largest job of the trace that fits the machine still fits (a constant hold would
    otherwise keep such a job queued for ever; requests are blind inputs). Only starts recorded
    before ``fit1`` are read (:func:`censor_at`): blind mode must not change when the starts of the
    reported window do. Returns ``(clipped, median)``."""
    _, down = block_down_nodes(censor_at(schedule, fit1), nodes, fit0, fit1, block_s, max_limit, grid_s, latency_s)
    med = int(np.floor(np.median(down))) if len(down) else 0
    n = schedule["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=0)
    fits = n <= nodes
    largest = int(n[fits].max()) if fits.any() else 0
    return max(0, min(med, nodes - largest)), med


#: Time-shared machines (:func:`time_shared_slots`): the quantile of the fitting window's recorded
#: concurrent node use taken as the machine's capacity. 0.99: the most it held at once apart from
#: the top 1 % of the time (the LANL CM-5 log's maximum, 17.4 × its 1,024 nodes, is a handful of
#: seconds). Declared once, for every log whose site table says ``time_shared = true``.
TIME_SHARED_QUANTILE = 0.99


def time_shared_slots(schedule: pd.DataFrame, nodes: int, fit0: int, fit1: int,
                      quantile: float = TIME_SHARED_QUANTILE) -> int:
    """Node slots of a time-shared (non-dedicated, gang-scheduled) machine, fitted on ``[fit0, fit1)``
    only: the time-weighted ``quantile`` of the recorded busy-node count over that window
    (:func:`busy_and_queued`: jobs busy on ``[start, end)`` with their nodes), rounded up, and
    never fewer than ``nodes``. A space-shared twin on that many slots runs as many jobs at once as
    the time-shared machine held, each for its recorded run time (which already includes its
    share of the processors). Only starts recorded before ``fit1`` are read (:func:`censor_at`).
    Returns ``nodes`` when the window holds no running job. Raises ValueError on an empty window
    or a quantile outside (0, 1]."""
    tb, busy, _, _ = busy_and_queued(censor_at(schedule, fit1))
    return max(int(nodes), int(np.ceil(step_quantile(tb, busy, fit0, fit1, quantile))))


def constant_calendar(nodes_down: int, t0: int, t1: int) -> tuple[tuple[int, int, int], ...]:
    """One period ``[t0, t1)`` with ``nodes_down`` nodes down (empty when 0)."""
    return ((int(t0), int(t1), int(nodes_down)),) if nodes_down > 0 else ()
