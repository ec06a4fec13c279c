"""``pm100`` (Marconi100) and ``adastra`` (Adastra MI250): job tables with per-job power arrays.

Sources
    * PM100: F. Antici et al., "PM100: A Job Power Consumption Dataset of a Large-scale
      Production HPC System", SC-W '23 (Sustainable Supercomputing workshop), 2023;
      ``job_table.parquet``, Zenodo record 10127767 (the version ExaDigiT/RAPS reads); schema:
      github.com/francescoantici/PM100-data ``documentation/job_features.md``.
    * Adastra MI250: ``AdastaJobsMI250_15days.parquet``, Zenodo record 14007065 (Antici et al.,
      CINES Adastra); "same family" as PM100, read here exactly as ExaDigiT/RAPS
      ``raps/dataloaders/adastraMI250.py`` reads it.

Columns used (Slurm job-table fields, PM100 ``job_features.md``)
    ==========================  ==============================================================
    job_id                      job id (anonymised) → ``job_id``
    user_id, group_id, account  → ``user``, ``account`` (account, else group_id)
    submit_time, start_time,    timestamps → seconds since the epoch (= earliest submit); tz-aware
    end_time, eligible_time     values keep their offset, naive ones are local times of the zone
                                :func:`core.loaders._facility.resolve_timezone` gives (requested,
                                the system file's ``timezone``, ``$TWINSWEEP_TZ``, else UTC); a
                                value that is not a time, a missing submit time or an end before the
                                start is an error naming the row and job (``lenient``: skipped)
    run_time                    s; the run time is ``end − start`` when both are known, else this;
                                jobs whose end − start differs from it are counted
                                (``header["elapsed_mismatch"]``, one warning)
    time_limit                  PM100: **minutes** ("Maximum run time in minutes or INFINITE");
                                Adastra: **seconds** (RAPS adastraMI250.py: "in seconds"; not
                                verified against the dataset's own documentation). INFINITE /
                                NO_VAL (≥ 2^32 − 2, or text) → missing
    num_nodes_alloc             → ``nodes`` (= ``procs``, ``procs_unit = "nodes"``); else
                                num_nodes_req
    num_cores_alloc / num_cpus_alloc, num_gpus_alloc → extra ``cpus``, ``gpus``
    nodes                       allocated nodes: a list of node ids (ints are 0-based node
                                indexes as in the M100 telemetry), or names / a string such as
                                ``"[12, 13]"``; names are ranked in natural order
    job_state                   Slurm state → ``status`` (``job_state`` kept)
    priority, partition, qos    → ``priority``, ``partition``, ``qos``
    node_power_consumption      array: the job's node power (W, **summed over its nodes**,
                                PM100 extract_data.py sums per time stamp) every 20 s (PM100)
    cpu_power_consumption,      arrays: the CPU and memory part of it (same sampling)
    mem_power_consumption
    ==========================  ==============================================================

Power: ``avg_power_w`` = mean of ``node_power_consumption`` (the job over all its nodes),
``energy_j`` = that mean × run time; the per-node trace ``node_power_consumption / nodes``
goes to ``Workload.traces[job_id] = {"period", "node_power_w", "cpu_power_w", "gpu_power_w",
"mem_power_w"}`` (per node), so a run uses the recorded power (:func:`core.power.apply_power_traces`).
GPU power = node − CPU − memory (Adastra per the issue; PM100 the same, as RAPS does, less the
NICs and NVMe of the system file). Extra columns ``cpu_power_w``, ``gpu_power_w``,
``mem_power_w`` hold the job means (W, all nodes); ``cpu_util`` / ``gpu_util`` come from them
with the named system's idle/max device power (``marconi100`` / ``adastra-mi250``), clipped to
[0, 1].

Sampling period: PM100 20 s (its paper; ``extract_data.py`` rounds to 20 s frames). The Adastra
period is not stated in the material available here; its samples are taken to span the
recorded run evenly (period = round(run time / samples), at least 1 s) and
``header["trace_period"] = "run_time/samples"`` says so.
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pandas as pd

from ..errors import TraceFormatError
from ..system import load_system
from ..workload import Workload
from ._facility import (
    BadRows, check_elapsed, int_or_na, job_times_checked, jobs_frame, parquet_columns, read_parquet_bytes,
    status_from_slurm, str_or_none, resolve_timezone, util_from_power,
)
from ._registry import TraceText, register_loader
from ._swfcore import obj_array
from .nodelist import NodeIndex, expand_hostlist, natural_key

PM100_PROVENANCE = ("PM100 (Marconi100, CINECA) job power dataset: Antici et al., SC-W 2023; "
                    "Zenodo 10.5281/zenodo.10127767")
ADASTRA_PROVENANCE = ("Adastra MI250 (CINES) 15-day job power dataset, Zenodo record 14007065 "
                      "(as read by ExaDigiT/RAPS)")

PM100_PERIOD_S = 20
_REQUIRED = {"job_id", "submit_time", "start_time", "end_time", "node_power_consumption"}
_SLURM_INFINITE = 4294967294  # INFINITE (0xFFFFFFFE); NO_VAL = 0xFFFFFFFF


def _score(trace: TraceText) -> set[str]:
    cols = parquet_columns(trace)
    if not cols or not _REQUIRED <= cols:
        return set()
    if not ({"num_nodes_alloc", "num_nodes_req", "nodes"} & cols):
        return set()
    return cols


def _is_adastra_name(name: str) -> bool:
    return bool(re.search(r"adast|mi250", name, re.I))


def detect_pm100(trace: TraceText) -> float:
    """Score 2 for a parquet job table with PM100's columns (job/submit/start/end times and the
    ``node_power_consumption`` arrays)."""
    return 2.0 if _score(trace) else 0.0


def detect_adastra(trace: TraceText) -> float:
    """Score 2.5 (beats ``pm100``) for the same table when the file name names Adastra/MI250."""
    return 2.5 if _score(trace) and _is_adastra_name(trace.name) else 0.0


def _node_list(v) -> list:
    if v is None:
        return []
    if isinstance(v, float) and np.isnan(v):
        return []
    if isinstance(v, (list, tuple, np.ndarray)):
        return list(v)
    s = str(v).strip()
    if not s:
        return []
    if s.startswith("["):
        try:
            return list(ast.literal_eval(s))
        except (ValueError, SyntaxError):
            pass
    return expand_hostlist(s)


def _time_limit(values, minutes: bool) -> np.ndarray:
    out = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    out = np.where((out >= _SLURM_INFINITE) | (out <= 0), np.nan, out)
    return out * 60.0 if minutes else out


def _load(trace: TraceText, lenient: bool, fmt: str) -> Workload:
    adastra = fmt == "adastra"
    df = read_parquet_bytes(trace)
    missing = sorted(_REQUIRED - set(df.columns))
    if missing:
        raise TraceFormatError(trace.path, None, f"not a {fmt} job table: missing column(s) {missing}")
    n = len(df)
    tz, tz_where = resolve_timezone(trace, None, None)
    skipped: list[tuple[int, str]] = []
    ids = str_or_none(df["job_id"].tolist())  # once: a Python loop over every row
    bad = BadRows(trace.path, n, None, ids)
    submit_abs, start_abs, end_abs, elig_abs = job_times_checked(df, "submit_time", "start_time", "end_time", tz, bad,
                                                                 ("eligible_time",))
    keep = bad.resolve(lenient, skipped)
    epoch = int(np.floor(submit_abs[keep].min())) if keep.any() else 0
    submit = np.rint(submit_abs - epoch)
    start = np.rint(start_abs - epoch)
    end = np.rint(end_abs - epoch)
    rt_col = pd.to_numeric(df["run_time"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan) \
        if "run_time" in df.columns else np.full(n, np.nan)
    run = np.where(np.isfinite(start) & np.isfinite(end), end - start, np.where(np.isfinite(start), rt_col, np.nan))
    run = np.where(run < 0, np.nan, run)
    n_mismatch, mismatch_msg = check_elapsed(trace.path, np.asarray(df["job_id"].astype(str))[keep], start[keep],
                                             end[keep], rt_col[keep], tz, tz_where)
    nodes_col = "num_nodes_alloc" if "num_nodes_alloc" in df.columns else "num_nodes_req"
    raw_nodes = [_node_list(v) for v in (df["nodes"] if "nodes" in df.columns else [None] * n)]
    if nodes_col in df.columns:
        nodes = pd.to_numeric(df[nodes_col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    else:
        nodes = np.array([len(x) if x else np.nan for x in raw_nodes], dtype="float64")
    nodes = np.where(nodes > 0, nodes, np.where([bool(x) for x in raw_nodes], [len(x) for x in raw_nodes], nodes))
    names = sorted({str(x) for lst in raw_nodes for x in lst if not isinstance(x, (int, np.integer))}, key=natural_key)
    index = NodeIndex(names) if names else None
    node_ids = []
    for lst in raw_nodes:
        if not lst:
            node_ids.append(None)
        elif all(isinstance(x, (int, np.integer)) for x in lst):
            node_ids.append(sorted(int(x) for x in lst))
        else:
            node_ids.append(sorted(int(x) if isinstance(x, (int, np.integer)) else index(str(x)) for x in lst))
    tl = _time_limit(df["time_limit"], minutes=not adastra) if "time_limit" in df.columns else np.full(n, np.nan)
    # power arrays
    sysname = "adastra-mi250" if adastra else "marconi100"
    system = load_system(sysname)
    pw = system.power
    nic_nvme = pw.nic_w + pw.storage_w
    traces: dict = {}
    mean_node = np.full(n, np.nan)
    mean_cpu = np.full(n, np.nan)
    mean_mem = np.full(n, np.nan)
    mean_gpu = np.full(n, np.nan)
    cpu_col = df["cpu_power_consumption"] if "cpu_power_consumption" in df.columns else [None] * n
    mem_col = df["mem_power_consumption"] if "mem_power_consumption" in df.columns else [None] * n
    for i, (npw, cpw, mpw) in enumerate(zip(df["node_power_consumption"], cpu_col, mem_col)):
        a = _arr(npw)
        if a is None or not np.isfinite(a).any():
            continue
        nn = nodes[i] if np.isfinite(nodes[i]) and nodes[i] > 0 else np.nan
        c = _arr(cpw)
        m = _arr(mpw)
        mean_node[i] = float(np.nanmean(a))
        L = len(a)
        if c is not None and m is not None:
            L = min(L, len(c), len(m))
        tr = {}
        if np.isfinite(nn):
            if adastra:
                period = max(1, int(round(run[i] / len(a)))) if np.isfinite(run[i]) and run[i] > 0 else 1
            else:
                period = PM100_PERIOD_S
            tr = {"period": period, "node_power_w": a / nn}
        if c is not None and m is not None and L > 0:
            g = a[:L] - c[:L] - m[:L]
            if not adastra and np.isfinite(nn):
                g = g - nn * nic_nvme  # PM100: less the NICs and NVMe of the node model (as RAPS)
            mean_cpu[i] = float(np.nanmean(c[:L]))
            mean_mem[i] = float(np.nanmean(m[:L]))
            mean_gpu[i] = float(np.nanmean(g))
            if tr:
                tr["cpu_power_w"] = c[:L] / nn
                tr["mem_power_w"] = m[:L] / nn
                tr["gpu_power_w"] = g / nn
        if tr and ids[i] is not None:
            traces[ids[i]] = tr
    with np.errstate(invalid="ignore", divide="ignore"):
        cpu_util = util_from_power(mean_cpu / nodes, system.cpus_per_node, pw.cpu_idle_w, pw.cpu_max_w)
        gpu_util = util_from_power(mean_gpu / nodes, system.gpus_per_node, pw.gpu_idle_w, pw.gpu_max_w)
    energy = np.where(np.isfinite(run), mean_node * run, np.nan)
    user = str_or_none(df["user_id"].tolist()) if "user_id" in df.columns else np.empty(n, dtype=object)
    if "account" in df.columns:
        account = str_or_none(df["account"].tolist())
    elif "group_id" in df.columns:
        account = str_or_none(df["group_id"].tolist())
    else:
        account = np.empty(n, dtype=object)
    state = str_or_none(df["job_state"].tolist()) if "job_state" in df.columns else np.empty(n, dtype=object)

    def opt_num(c):
        return pd.to_numeric(df[c], errors="coerce").to_numpy(dtype="float64", na_value=np.nan) \
            if c in df.columns else np.full(n, np.nan)

    cpus = opt_num("num_cores_alloc") if "num_cores_alloc" in df.columns else opt_num("num_cpus_alloc")
    cols = {
        "job_id": ids,
        "user": user,
        "account": account,
        "submit_time": np.where(np.isfinite(submit), submit, 0).astype(np.int64),
        "recorded_start_time": int_or_na(start),
        "recorded_end_time": int_or_na(end),
        "run_time": int_or_na(run),
        "time_limit": int_or_na(tl),
        "procs": int_or_na(nodes),
        "nodes": int_or_na(nodes),
        "cpu_util": cpu_util,
        "gpu_util": gpu_util,
        "avg_power_w": mean_node,
        "energy_j": energy,
        "priority": opt_num("priority"),
        "partition": str_or_none(df["partition"].tolist()) if "partition" in df.columns else None,
        "status": obj_array([status_from_slurm(s) for s in state]),
        "node_ids": obj_array(node_ids),
        "cpus": int_or_na(cpus),
        "gpus": int_or_na(opt_num("num_gpus_alloc")),
        "qos": str_or_none(df["qos"].tolist()) if "qos" in df.columns else np.empty(n, dtype=object),
        "job_state": state,
        "eligible_time": int_or_na(np.rint(elig_abs - epoch)),
        "cpu_power_w": mean_cpu,
        "gpu_power_w": mean_gpu,
        "mem_power_w": mean_mem,
    }
    jobs = jobs_frame(cols)
    if not keep.all():
        jobs = jobs.loc[keep].reset_index(drop=True)
        jobs["trace_index"] = np.arange(len(jobs), dtype=np.int64)
    header = {"trace_period": "run_time/samples" if adastra else PM100_PERIOD_S, "power_system": sysname,
              "node_names": names, "timezone": tz, "timezone_source": tz_where, "elapsed_mismatch": n_mismatch}
    return Workload(
        jobs=jobs, epoch=epoch, checksum=trace.checksum, source=trace.path, format=fmt, header=header,
        procs_unit="nodes", skipped_lines=skipped,
        provenance=ADASTRA_PROVENANCE if adastra else PM100_PROVENANCE, traces=traces,
        timezone=tz, warnings=[mismatch_msg] if mismatch_msg else [],
    )


def _arr(v) -> np.ndarray | None:
    if v is None:
        return None
    if isinstance(v, float) and np.isnan(v):
        return None
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return None
    a = np.asarray(v, dtype="float64").ravel()
    return a if a.size else None


def load_pm100(trace: TraceText, lenient: bool = False) -> Workload:
    """Load a PM100 ``job_table.parquet`` (see the module docstring)."""
    return _load(trace, lenient, "pm100")


def load_adastra(trace: TraceText, lenient: bool = False) -> Workload:
    """Load the Adastra MI250 job table (see the module docstring)."""
    return _load(trace, lenient, "adastra")


register_loader("pm100", detect_pm100, load_pm100)
register_loader("adastra", detect_adastra, load_adastra)
