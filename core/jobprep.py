"""Preparing a window's jobs for the engine (DESIGN.md §3.3–3.5, §3.9): which jobs a window keeps,
their effective time limits, who is rejected or never ran, and how long each occupies its nodes.

:func:`select_window` splits a workload into the window's jobs; :func:`prepare_jobs` turns that
frame into :class:`WindowJobs`, plain per-job lists the event kernel (:mod:`core.kernel`) reads.
Nothing here schedules: the scheduler later sees only the requests (:class:`core.jobview.JobView`),
never the occupancy computed here.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from .system import System

__all__ = ["effective_time_limit", "select_window", "cancel_times", "WindowJobs", "prepare_jobs"]


def _int_or_none(a: pd.Series) -> tuple[list, np.ndarray, np.ndarray]:
    """``(values, missing, zeroed)``: the column as a list of ints with None where missing, the
    bool mask of the missing entries and an int64 array with 0 there (one C-level conversion; a
    Python step only per missing entry)."""
    v = a.astype("Int64")
    missing = v.isna().to_numpy()
    zeroed = v.to_numpy(dtype="int64", na_value=0)
    out = zeroed.tolist()
    for i in np.flatnonzero(missing).tolist():
        out[i] = None
    return out, missing, zeroed


def _ints_nan_zero(x: np.ndarray) -> np.ndarray:
    """A float array as int64 (truncated toward zero, as ``int``), NaN as 0; a non-finite value
    other than NaN raises OverflowError as ``int(inf)`` does."""
    nan = np.isnan(x)
    if np.isinf(x).any():
        raise OverflowError("cannot convert float infinity to integer")
    return np.where(nan, 0.0, x).astype(np.int64)


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


def cancel_times(jobs: pd.DataFrame) -> np.ndarray:
    """When each job was cancelled while still queued, per the log (float64 s, NaN: it was not).

    A job was cancelled in the queue when its trace ``status`` is ``cancelled`` and it has no
    ``run_time`` (it never ran). Its cancel time is its ``recorded_end_time`` (when the job left
    the system: Slurm's ``End`` of a job cancelled while pending), else its
    ``recorded_start_time`` (SWF logs give only the wait until the cancellation, field 3, which
    the SWF loaders turn into ``submit + wait`` as ``recorded_start_time``); NaN when neither is
    known or the time lies before the submit time. See docs/architecture.md, "Workload notes".
    """
    status = jobs["status"].to_numpy(dtype=object)
    never_ran = jobs["run_time"].isna().to_numpy()
    end = jobs["recorded_end_time"].astype("float64").to_numpy()
    start = jobs["recorded_start_time"].astype("float64").to_numpy()
    t = np.where(np.isnan(end), start, end)
    ok = (status == "cancelled") & never_ran & (t >= jobs["submit_time"].to_numpy(dtype="float64"))
    return np.where(ok, t, np.nan)


def select_window(jobs: pd.DataFrame, start: int | None, duration: int | None, replay: bool, kill: bool,
                  default_time_limit: int | None = None, kill_grace_s: int = 0, queue_cancelled: bool = False):
    """Split a workload into the jobs a window keeps (DESIGN.md §3.9).

    Returns ``(frame, t0, t1)``: ``frame`` is the kept jobs in trace order with an extra bool column
    ``prepopulated`` (running at the window start, placed at their recorded start) and int column
    ``replay_start`` (recorded start, or the submit time when the trace has none).
    ``t1`` is None for an open window (run until every job ends). A job counts as running at the
    window start when its occupancy in this run (run time, or with kill on the run time cut at
    its effective limit plus ``kill_grace_s``: :func:`effective_time_limit` with the system's
    ``default_time_limit``) from its recorded start reaches past ``start``. With
    ``queue_cancelled`` (reschedule modes), a job cancelled while queued (:func:`cancel_times`)
    that was submitted before the window and cancelled after its start is kept: it is queued at
    the window start.
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
        if queue_cancelled and not replay:
            ended &= ~(cancel_times(jobs) > t0)  # still queued at the window start (NaN compares False)
        keep = ~ended
        if t1 is not None:
            keep &= submit < t1
    frame = jobs.loc[keep].copy()
    frame["prepopulated"] = pre[keep]
    frame["replay_start"] = rstart[keep].astype("int64")
    return frame, t0, t1


@dataclasses.dataclass
class WindowJobs:
    """A window's jobs as the engine uses them: per-job lists, index = row of the window frame.

    Attributes (lists of length n unless said):
        n: jobs in the window.
        submit: submit time (int s); ``queue_time``: when it enters the queue (its submit time, or
            with ``honor_eligible`` its later ``eligible_time``; the time a scheduler sees as the
            job's submit, so FCFS orders it and a priority's age counts from it, as Slurm's age
            factor counts from eligibility); ``sub_time``: when the engine submits it
            (max(queue_time, t0)).
        run: recorded run time (int s or None: never ran).
        nodes: nodes requested (0 when unknown); the availability calendar appends its holds.
        limit: effective time limit (int s, DESIGN.md §3.3; 0 for a job that never ran); the
            calendar appends its holds' (0).
        imputed: bool, the limit was imputed (no usable request).
        dur: how long the job occupies its nodes once started (int s: its run time, cut at
            ``limit + kill grace`` with kill on) — engine-private, never shown to a scheduler.
        status, reason: ``not_run`` / ``rejected`` (with a reason) for jobs that are never queued,
            else None (decided by the run).
        cancel_at: the recorded cancel time of a job cancelled while queued (int s), else -1;
            only with the ``queue_cancelled`` option (such jobs are otherwise ``not_run``).
        trace_index, prepop (bool: running at the window start), rstart (recorded start or submit
        time, int s), start_unknown (bool: no recorded start), rec_nodes (recorded placement or None).
        kill, grace: kill at the limit (bool) and the kill grace (s).
    """

    n: int
    submit: list
    queue_time: list
    sub_time: list
    run: list
    nodes: list
    limit: list
    imputed: list
    dur: list
    status: list
    reason: list
    cancel_at: list
    trace_index: list
    prepop: list
    rstart: list
    start_unknown: list
    rec_nodes: list
    kill: bool
    grace: int


def prepare_jobs(f: pd.DataFrame, system: System, kill: bool, replay: bool, t0: int,
                 queue_cancelled: bool = False, honor_eligible: bool = False) -> WindowJobs:
    """The window frame (:func:`select_window`) as :class:`WindowJobs`.

    Effective limits (:func:`effective_time_limit` with ``system.default_time_limit``);
    rejections at submit (DESIGN.md §3.5: <= 0, unknown or more nodes than ``system.nodes``);
    jobs without a run time are ``not_run`` — except, with ``queue_cancelled`` (not in replay),
    jobs cancelled while queued (:func:`cancel_times`) that have a usable time limit: they are
    queued and leave the queue at their cancel time. ``kill`` is ignored in replay.

    With ``honor_eligible`` (not in replay) a job whose ``eligible_time`` (a trace column, s;
    Slurm's ``Eligible``) lies after its submit time enters the queue then (``queue_time``): it was
    held (a user or administrator hold, a dependency, a ``--begin`` time) and no scheduler could
    start it before. Its wait still counts from its submit time. A job cancelled in the queue
    before it became eligible is ``not_run`` (it never was a candidate). The eligible time is a
    recorded input, not the twin's: a dependency's parent may end earlier or later in the twin.
    """
    n = len(f)
    N = system.nodes
    kill = kill and not replay
    submit_a = f["submit_time"].astype("int64").to_numpy()
    submit = submit_a.tolist()
    run, run_missing, run_v = _int_or_none(f["run_time"])
    nodes_raw, nodes_missing, nodes_v = _int_or_none(f["nodes"])
    grace = int(getattr(system, "kill_grace_s", 0) or 0)  # s past the limit before the kill
    lim, imp = effective_time_limit(f["time_limit"].astype("float64").to_numpy(),
                                    f["run_time"].astype("float64").to_numpy(), system.default_time_limit)
    limit_a = _ints_nan_zero(lim)
    limit = limit_a.tolist()
    cancel_at = [-1] * n
    if queue_cancelled and not replay:
        ct = cancel_times(f)
        cancel_at = np.where(np.isnan(ct), -1, _ints_nan_zero(ct)).tolist()
    reason, status = [None] * n, [None] * n
    queue_a = submit_a
    if honor_eligible and not replay and "eligible_time" in f.columns:
        elig = f["eligible_time"].astype("float64").to_numpy(na_value=np.nan)
        later = ~np.isnan(elig) & (elig > submit_a)
        if later.any():
            queue_a = np.where(later, elig, submit_a).astype(np.int64)
            ca = np.asarray(cancel_at)
            for j in np.flatnonzero(later & (ca >= 0) & (ca <= queue_a)).tolist():  # never a candidate
                status[j] = "not_run"
                reason[j] = f"cancelled at t = {cancel_at[j]} s, before it became eligible (t = {int(queue_a[j])} s)"
                cancel_at[j] = -1
    # the rules below, tried only for the jobs that any of them can concern
    maybe = run_missing | nodes_missing | (nodes_v <= 0) | (nodes_v > N)
    pool = getattr(system, "pool_name", None)  # one pool of a partitioned machine (core.partitions)
    holder = f"partition {pool!r}" if pool else "the system"
    for j in np.flatnonzero(maybe).tolist():
        if status[j] is not None:
            continue
        if run[j] is None and cancel_at[j] < 0:
            status[j] = "not_run"
            reason[j] = "never ran in the trace (no run time recorded)"
        elif nodes_raw[j] is None or nodes_raw[j] <= 0:
            status[j] = "rejected"
            reason[j] = f"asks for {nodes_raw[j] if nodes_raw[j] is not None else 'no'} nodes (<= 0 or unknown)"
        elif nodes_raw[j] > N:
            status[j] = "rejected"
            reason[j] = f"asks for {nodes_raw[j]} nodes; {holder} has {N}"
        elif run[j] is None and limit[j] <= 0:  # cancelled in the queue, no limit to plan with
            status[j] = "not_run"
            reason[j] = ("cancelled while queued in the trace and has no time limit (none requested, no system "
                         "default): a scheduler cannot plan it")
            cancel_at[j] = -1
    nodes = nodes_v.tolist()  # 0 when unknown
    # actual occupancy once started (a job cancelled while queued: set when it starts)
    if kill:
        occ = np.minimum(run_v, limit_a + grace)
    else:
        occ = run_v
    dur = np.where(run_missing, 0, occ).tolist()
    return WindowJobs(
        n=n, submit=submit, queue_time=queue_a.tolist() if queue_a is not submit_a else submit,
        sub_time=np.maximum(queue_a, t0).tolist(), run=run, nodes=nodes, limit=limit,
        imputed=imp.tolist(), dur=dur, status=status, reason=reason, cancel_at=cancel_at,
        trace_index=f["trace_index"].astype("int64").tolist(), prepop=f["prepopulated"].tolist(),
        rstart=f["replay_start"].astype("int64").tolist(), start_unknown=f["recorded_start_time"].isna().tolist(),
        rec_nodes=f["node_ids"].tolist() if "node_ids" in f.columns else [None] * n, kill=kill, grace=grace,
    )
