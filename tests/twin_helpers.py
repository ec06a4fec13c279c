"""Small builders shared by the engine tests: tiny traces written by hand."""

from __future__ import annotations

import pandas as pd

from twinsweep.core.engine import Engine, select_window
from twinsweep.core.system import System
from twinsweep.core.workload import coerce_jobs_frame


def frame(jobs):
    """jobs: list of dicts with submit, run, limit, nodes (+ optional start, priority, node_ids, user)."""
    rows = []
    for i, j in enumerate(jobs):
        start = j.get("start")
        rows.append({
            "job_id": str(i), "trace_index": i, "user": j.get("user", "u"), "account": j.get("account", "a"),
            "submit_time": j["submit"], "recorded_start_time": start,
            "recorded_end_time": None if start is None or j.get("run") is None else start + j["run"],
            "run_time": j.get("run"), "time_limit": j.get("limit"), "procs": j["nodes"], "nodes": j["nodes"],
            "cpu_util": float("nan"), "gpu_util": float("nan"), "avg_power_w": float("nan"),
            "energy_j": float("nan"), "priority": j.get("priority", float("nan")), "partition": j.get("partition"),
            "status": j.get("status", "completed"), "node_ids": j.get("node_ids"),
        })
    return coerce_jobs_frame(pd.DataFrame(rows))


def simulate_tiny(jobs, nodes=10, policy="fcfs", backfill="easy", kill=True, start=None, duration=None,
                  default_time_limit=None, queue_cancelled=False, **system_fields):
    """Run the engine on a hand-written trace; returns (jobs DataFrame, EngineResult).
    ``system_fields``: more :class:`System` fields (e.g. ``availability``)."""
    f = frame(jobs)
    system = System(name="tiny", title="tiny", nodes=nodes, default_time_limit=default_time_limit, **system_fields)
    win, t0, t1 = select_window(f, start, duration, policy == "replay", kill, default_time_limit,
                                queue_cancelled=queue_cancelled)
    eng = Engine(win, system, policy, backfill, kill, [100.0] * len(win), 10.0, t0, t1,
                 queue_cancelled=queue_cancelled)
    res = eng.run()
    return res.jobs, res


def schedule_of(jobs_out):
    """{job_id: (sim_start, sim_end)} with None for missing."""
    out = {}
    for _, r in jobs_out.iterrows():
        s = None if pd.isna(r.start_time) else int(r.start_time)
        e = None if pd.isna(r.end_time) else int(r.end_time)
        out[int(r.job_id)] = (s, e)
    return out


def write_swf_rows(path, rows, max_nodes=8, partitions=None, header=()):
    """Write an SWF file of hand-written jobs: rows of (job, submit, wait, run, procs[, user,
    group]) in s and processors; requested time is twice the run time, status 1; user and group
    default to 1. ``partitions``: each row's partition code (SWF field 16), else -1; ``header``:
    more header lines (e.g. ``"; Partition: 2 big"``). Returns ``path``."""
    lines = [f"; MaxNodes: {max_nodes}", f"; MaxProcs: {max_nodes}", *header]
    for i, (jid, sub, wait, run, procs, *ug) in enumerate(rows):
        user, group = ug or (1, 1)
        part = -1 if partitions is None else partitions[i]
        lines.append(f"{jid} {sub} {wait} {run} {procs} -1 -1 {procs} {run * 2} -1 1 {user} {group} -1 -1 {part} -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def bursty_traces(draw, cancels=False):
    """A hypothesis strategy body (wrap it with ``st.composite``): up to 25 jobs submitted in
    bursts, with long limits: many passes see submissions only, where a backfill variant may
    reuse its last pass. ``cancels``: some jobs are cancelled while queued (status cancelled, no
    run time, cancel time in ``start``)."""
    from hypothesis import strategies as st

    jobs = []
    for _ in range(draw(st.integers(1, 25))):
        run = draw(st.integers(0, 50))
        job = dict(submit=draw(st.sampled_from([0, 1, 2, 5, 10, 30, 31, 60, 90])), run=run,
                   limit=draw(st.one_of(st.none(), st.integers(1, 80))), nodes=draw(st.integers(1, 8)))
        if cancels and draw(st.integers(0, 5)) == 0:
            job.update(status="cancelled", run=None, limit=draw(st.integers(1, 80)),
                       start=job["submit"] + draw(st.integers(0, 40)))
        jobs.append(job)
    return jobs
