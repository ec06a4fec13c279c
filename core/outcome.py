"""Assembling a run's outputs from what the event kernel did (docs/architecture.md, "Engine output").

:func:`job_outcomes` decides each job's simulated ``status`` and ``reason`` (one rule per
outcome, in order); :func:`jobs_table` builds ``EngineResult.jobs`` and :func:`steps_table`
``EngineResult.steps``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .jobprep import WindowJobs
from .kernel import KernelResult

__all__ = ["job_outcomes", "jobs_table", "steps_table", "ENDED"]

#: Simulated statuses of jobs that ended in the window (their ``end_time`` is set).
ENDED = ("completed", "timeout", "cancelled")


def job_outcomes(J: WindowJobs, k: KernelResult, t1: int | None, recorded_running=None,
                 running_reason: str | None = None) -> tuple[list, list]:
    """``(status, reason)`` per job, in order of the rules (``recorded_running``: per job, the trace
    recorded it still running, e.g. an sacct dump taken while it ran; ``running_reason`` its reason):

    1. decided before the run (``not_run``, ``rejected``: :func:`core.jobprep.prepare_jobs`);
    2. ``cancelled``: left the queue at its recorded cancel time (option ``queue_cancelled``);
    3. ``queued``: never started;
    4. ``running``: started, ends after the window end ``t1``;
    5. a job cancelled in the log that the twin started earlier: ``timeout`` when the kill came
       before its cancel time, else ``cancelled`` (its user cancels it at the recorded time);
    6. ``timeout``: killed at its limit (+ kill grace) because its run time is longer;
    7. ``running``: still running when its trace was recorded (it never "completes": its run time
       is only how long it had run then; core/workload.py);
    8. ``completed``.
    """
    n = J.n
    status, reason = list(J.status), list(J.reason)
    run, limit, grace, kill, cancel_at = J.run, J.limit, J.grace, J.kill, J.cancel_at
    start, end, cancelled = k.start, k.end, k.cancelled
    for j in range(n):
        if status[j] is not None:
            continue
        if cancelled[j] is not None:
            status[j] = "cancelled"
            reason[j] = f"cancelled while queued at t = {cancelled[j]} s (the log's cancel time)"
        elif start[j] is None:
            status[j] = "queued"
        elif t1 is not None and end[j] > t1:
            status[j] = "running"
        elif cancel_at[j] >= 0:
            if end[j] < cancel_at[j]:
                status[j] = "timeout"
                reason[j] = (f"killed at its time limit ({limit[j]} s{f' + {grace} s grace' if grace else ''}) before "
                             f"its cancellation in the log at t = {cancel_at[j]} s")
            else:
                status[j] = "cancelled"
                reason[j] = (f"started before its cancellation in the log (it never ran there); cancelled while "
                             f"running at t = {cancel_at[j]} s")
        elif kill and run[j] > limit[j] + grace:
            status[j] = "timeout"
            reason[j] = (f"killed at its time limit ({limit[j]} s; recorded run time {run[j]} s)" if not grace else
                         f"killed {grace} s past its time limit ({limit[j]} s; recorded run time {run[j]} s)")
        elif recorded_running is not None and recorded_running[j]:
            status[j] = "running"
            reason[j] = running_reason
        else:
            status[j] = "completed"
    return status, reason


def _nullable_int(values: np.ndarray, mask: np.ndarray) -> pd.arrays.IntegerArray:
    """An ``Int64`` array of int64 ``values`` with ``mask`` (True: missing; the value there is 0)."""
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)


def _ints_and_none(values: list) -> tuple[np.ndarray, np.ndarray]:
    """``(values, missing)`` of a list of ints (seconds, < 2**53) and Nones: int64 values (0 where
    None) and the bool mask of the Nones, through one C-level float64 conversion (None -> NaN)."""
    f = np.array(values, dtype=np.float64)
    missing = np.isnan(f)
    return np.where(missing, 0.0, f).astype(np.int64), missing


def jobs_table(frame: pd.DataFrame, J: WindowJobs, k: KernelResult, status: list, reason: list,
               node_power_w, t1: int | None) -> pd.DataFrame:
    """``EngineResult.jobs``: ``frame``'s Workload columns in trace order (``replay_start``
    dropped) with ``trace_status``, ``status``, ``reason``, ``prepopulated``, the effective
    ``time_limit`` and ``time_limit_imputed``, simulated ``start_time`` / ``end_time`` (Int64 s; the
    end only for jobs that ended in the window), ``wait_time`` (Int64 s), ``node_power_w``,
    ``energy_j`` = node power × nodes × simulated duration (up to ``t1``),
    ``avg_power_w`` = node power × nodes (NaN for jobs never started) and ``node_ids``."""
    n = J.n
    npow = np.asarray(node_power_w, dtype="float64")
    s_arr, not_started = _ints_and_none(k.start[:n])
    started = ~not_started
    e_arr, _ = _ints_and_none(k.end[:n])  # an end is set exactly when a start is
    st = np.asarray(status, dtype=object)
    ended = np.zeros(n, dtype=bool)
    for name in ENDED:
        ended |= st == name
    cols = {
        "trace_status": frame["status"],  # a Series of the frame's index: aligned as is
        "status": status,
        "reason": reason,
        "prepopulated": np.asarray(J.prepop[:n], dtype=bool) & started,
        "time_limit": pd.array(np.asarray(J.limit[:n], dtype=np.int64), dtype="Int64"),
        "time_limit_imputed": J.imputed,
        "start_time": _nullable_int(s_arr, not_started),
        "end_time": _nullable_int(e_arr, ~ended | not_started),  # cancelled in the queue: no end
        "wait_time": _nullable_int(s_arr - np.asarray(J.submit[:n], dtype=np.int64), not_started),
        "node_power_w": npow,
    }
    if t1 is not None:  # a job running at the window end counts up to it
        e_arr = np.minimum(e_arr, t1)
    per_job_w = npow * np.asarray(J.nodes[:n], dtype=np.int64)
    cols["energy_j"] = np.where(started, per_job_w * (e_arr - s_arr), np.nan)
    cols["avg_power_w"] = np.where(started, per_job_w, np.nan)
    placed = np.empty(n, dtype=object)  # one object per job (a list of equal-length arrays is no 2-D array here)
    for j, ids in enumerate(k.placed[:n]):
        placed[j] = ids
    cols["node_ids"] = placed
    # the frame's columns, then these (a column of the frame with one of these names is replaced
    # where it stands); index 0..n-1 (as reset_index(drop=True)). One DataFrame built from the
    # frame's Series (their dtypes kept) and these, not one insertion per column.
    out = {c: frame[c] for c in frame.columns if c != "replay_start"}
    out.update(cols)
    jobs = pd.DataFrame(out, index=frame.index, copy=False)
    jobs.index = pd.RangeIndex(n)
    return jobs


def steps_table(k: KernelResult) -> pd.DataFrame:
    """``EngineResult.steps``: one row per timestamp (``time``, ``busy_nodes``, ``it_power_w``,
    ``queued_jobs``, ``running_jobs``)."""
    return pd.DataFrame({
        "time": np.asarray(k.steps_t, dtype="int64"),
        "busy_nodes": np.asarray(k.steps_busy, dtype="int64"),
        "it_power_w": np.asarray(k.steps_pow, dtype="float64"),
        "queued_jobs": np.asarray(k.steps_q, dtype="int64"),
        "running_jobs": np.asarray(k.steps_r, dtype="int64"),
    })
