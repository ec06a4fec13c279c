"""``fdata``: F-DATA, the Fugaku workload dataset (monthly parquet files ``YY_MM.parquet``).

Source: F. Antici, A. Bartolini, J. Domke, Z. Kiziltan, K. Yamamoto, "F-DATA: A Fugaku Workload
Dataset for Job-centric Predictive Modelling in HPC Systems", Scientific Data 2025 (arXiv 2024);
Zenodo record 11467483 (one parquet per month, March 2021 – April 2024). Column list as published
(``docs/feature_list.csv`` of the release, 45 columns): jid, usr, jnam, cnumr, cnumat, cnumut,
nnumr, adt, qdt, schedsdt, deldt, ec, elpl, sdt, edt, nnuma, idle_time_ave, nnumu, perf1…perf6,
mszl, pri, econ, avgpcon, minpcon, maxpcon, msza, mmszu, uctmut, sctmut, usctmut, jobenv_req,
freq_req, freq_alloc, flops, mbwidth, opint, pclass, embedding, ``exit state``, duration.
**No node list** (jobs are placed by the twin).

Mapping
    ==============  =============================================================================
    job_id          jid;  user ← usr; account ← usr (F-DATA has no account/group column)
    submit_time     adt (accept date); start ← sdt, end ← edt (date-time strings in the release;
                    their zone is not documented: naive values are read as Asia/Tokyo — Japan
                    has no DST, so durations are unaffected; a requested zone, the system
                    file's ``timezone`` or ``$TWINSWEEP_TZ`` overrides)
    run_time        edt − sdt when both are known, else ``duration`` (s); jobs whose edt − sdt
                    differs from ``duration`` are counted (``header["elapsed_mismatch"]``, a warning)
    time_limit      elpl (s; "elapse limit", RAPS fugaku.py reads it as seconds)
    nodes           nnuma (allocated) when > 0, else nnumr (requested); ``procs`` = nodes
    cpus            cnumr (requested cores, extra column)
    priority        pri
    status          ``exit state``: completed → completed; failed/abort/error → failed;
                    cancel*/reject*/deleted → cancelled; else unknown
    avg_power_w     avgpcon — the job's average power over **all** its nodes (W); two
                    independent third-party readings of the release agree on "whole job";
                    not stated in the material available here. minpcon/maxpcon kept.
    energy_j        econ. Its unit is reported as J by some readers and Wh by others; the loader
                    decides per file from the median of econ / (avgpcon × duration) over jobs that
                    have both: ≈ 1 → J, ≈ 1/3600 → Wh (× 3600); otherwise econ is left as is and
                    ``header["econ_unit"] = "unknown"``.
    cpu_util        perf1 / (perf1 + perf6), the proxy ExaDigiT/RAPS fugaku.py uses ("total ops /
                    total + idle ops"); NaN where unavailable
    ==============  =============================================================================
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import TraceFormatError
from ..workload import Workload
from ._facility import BadRows, check_elapsed, int_or_na, job_times_checked, resolve_timezone, jobs_frame, parquet_columns, \
    read_parquet_bytes, str_or_none
from ._registry import TraceText, register_loader
from ._swfcore import obj_array

PROVENANCE = ("F-DATA Fugaku workload dataset (Antici, Bartolini, Domke, Kiziltan, Yamamoto; RIKEN R-CCS), "
              "Zenodo 10.5281/zenodo.11467483")
DEFAULT_TZ = "Asia/Tokyo"
_REQUIRED = {"adt", "sdt", "edt", "nnumr", "elpl"}


def detect_fdata(trace: TraceText) -> float:
    """Score 3 for a parquet file with F-DATA's adt/sdt/edt/nnumr/elpl columns."""
    return 3.0 if _REQUIRED <= parquet_columns(trace) else 0.0


def fdata_status(v) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "unknown"
    s = str(v).strip().lower()
    if s in ("completed", "complete", "normal", "0"):
        return "completed"
    if s.startswith(("fail", "abort", "error", "abnormal", "timeout")):
        return "failed"
    if s.startswith(("cancel", "reject", "delete", "hold")):
        return "cancelled"
    return "unknown"


def load_fdata(trace: TraceText, lenient: bool = False) -> Workload:
    """Load one F-DATA monthly parquet file (see the module docstring)."""
    df = read_parquet_bytes(trace)
    missing = sorted(_REQUIRED - set(df.columns))
    if missing:
        raise TraceFormatError(trace.path, None, f"not an F-DATA file: missing column(s) {missing}")
    n = len(df)
    tz, tz_where = resolve_timezone(trace, None, DEFAULT_TZ)
    skipped: list[tuple[int, str]] = []
    jids = str_or_none(df["jid"].tolist()) if "jid" in df.columns else None  # once: a Python loop over every row
    bad = BadRows(trace.path, n, None, jids)
    sub_abs, st_abs, en_abs = job_times_checked(df, "adt", "sdt", "edt", tz, bad)
    keep = bad.resolve(lenient, skipped)
    epoch = int(np.floor(sub_abs[keep].min())) if keep.any() else 0

    def num(c):
        return pd.to_numeric(df[c], errors="coerce").to_numpy(dtype="float64", na_value=np.nan) \
            if c in df.columns else np.full(n, np.nan)

    start = np.rint(st_abs - epoch)
    end = np.rint(en_abs - epoch)
    dur = num("duration") if "duration" in df.columns else num("elp")
    run = np.where(np.isfinite(start) & np.isfinite(end), end - start, np.where(np.isfinite(start), dur, np.nan))
    run = np.where(run < 0, np.nan, run)
    ids = jids if jids is not None else obj_array([str(i) for i in range(n)])
    n_mismatch, mismatch_msg = check_elapsed(trace.path, ids[keep], start[keep], end[keep], dur[keep], tz, tz_where)
    nnuma, nnumr = num("nnuma"), num("nnumr")
    nodes = np.where(nnuma > 0, nnuma, nnumr)
    nodes = np.where(nodes > 0, nodes, np.nan)
    avg = num("avgpcon")
    avg = np.where((avg >= 0) & (avg < 1e12), avg, np.nan)  # corrupt values (negative / absurd) -> missing
    econ = num("econ")
    econ_unit = "unknown"
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = econ / (avg * dur)
    ok = np.isfinite(ratio) & (ratio > 0)
    energy = np.full(n, np.nan)
    if ok.any():
        med = float(np.median(ratio[ok]))
        if 0.5 < med < 2.0:
            econ_unit, energy = "J", econ
        elif 0.5 / 3600 < med < 2.0 / 3600:
            econ_unit, energy = "Wh", econ * 3600.0
    if econ_unit == "unknown":
        energy = np.where(np.isfinite(avg) & np.isfinite(run), avg * run, np.nan)
    p1, p6 = num("perf1"), num("perf6")
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu_util = np.where((p1 + p6) > 0, p1 / (p1 + p6), np.nan)
    users = str_or_none(df["usr"].tolist()) if "usr" in df.columns else np.empty(n, dtype=object)
    cols = {
        "job_id": ids,
        "user": users,
        "account": users.copy(),
        "submit_time": np.where(keep, np.rint(sub_abs - epoch), 0).astype(np.int64),
        "recorded_start_time": int_or_na(start),
        "recorded_end_time": int_or_na(end),
        "run_time": int_or_na(run),
        "time_limit": int_or_na(np.where(num("elpl") > 0, num("elpl"), np.nan)),
        "procs": int_or_na(nodes),
        "nodes": int_or_na(nodes),
        "cpu_util": np.clip(cpu_util, 0.0, 1.0),
        "gpu_util": np.full(n, np.nan),
        "avg_power_w": avg,
        "energy_j": energy,
        "priority": num("pri"),
        "partition": None,
        "status": obj_array([fdata_status(v) for v in (df["exit state"] if "exit state" in df.columns else [None] * n)]),
        "node_ids": None,
        "cpus": int_or_na(num("cnumr")),
        "nodes_requested": int_or_na(nnumr),
        "min_power_w": num("minpcon"),
        "max_power_w": num("maxpcon"),
        "econ": econ,
        "job_name": str_or_none(df["jnam"].tolist()) if "jnam" in df.columns else np.empty(n, dtype=object),
        "exit_code": int_or_na(num("ec")),
    }
    jobs = jobs_frame(cols)
    if not keep.all():
        jobs = jobs.loc[keep].reset_index(drop=True)
        jobs["trace_index"] = np.arange(len(jobs), dtype=np.int64)
    return Workload(
        jobs=jobs, epoch=epoch, checksum=trace.checksum, source=trace.path, format="fdata",
        header={"econ_unit": econ_unit, "timezone": tz, "timezone_source": tz_where, "elapsed_mismatch": n_mismatch},
        procs_unit="nodes", skipped_lines=skipped, provenance=PROVENANCE, timezone=tz,
        warnings=[mismatch_msg] if mismatch_msg else [],
    )


register_loader("fdata", detect_fdata, load_fdata)
