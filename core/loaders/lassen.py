"""Lassen (LLNL) job data: the LAST CSVs (``lassen-last``) and the RAPS snapshot (``lassen-raps``).

``lassen-last`` — LLNL LAST "Lassen-Supercomputer-Job-Dataset" (github.com/LLNL/LAST; T. Patki et
al., "Monitoring Large Scale Supercomputers: A Case Study with the Lassen Supercomputer", IEEE
CLUSTER 2021; CC-BY-4.0). Pass the allocation history CSV (``final_csm_allocation_history_hashed.csv``
or ``final_csm_allocation_history.csv``); the per-node history
(``final_csm_allocation_node_history.csv``) is read from the same folder when present. Column
meanings are the IBM CSM database's (github.com/IBM/CAST ``docs/source/csm/csmdb/csm_db_appendix.rst``):

allocation history (one row per allocation = job)
    allocation_id, primary_job_id (the LSF job id → ``job_id``), secondary_job_id, num_nodes
    (→ ``nodes`` = ``procs``), num_processors, num_gpus (always 0 per the LAST README),
    hashed_user_id (→ ``user``), hashed_user_group_id (→ ``account``; LAST has no account column),
    job_submit_time / begin_time / end_time ("timestamp without time zone" → local times),
    exit_status (0 → completed, other → failed, missing → unknown), queue (→ ``partition``),
    time_limit ("the time limit requested or imposed on the job"; seconds, as ExaDigiT/RAPS reads
    it — the CSM documentation gives no unit).
per-node history (one row per allocation × node)
    node_name (hostnames; node indexes = natural-order rank among all names in the file),
    energy ("the total energy used by the node in joules during the allocation"),
    gpu_energy ("… across all GPUs in the node in joules"), cpu_usage ("the cpu usage in
    nanoseconds"), gpu_usage (µs), ib_tx/ib_rx (octets), memory_usage_max (bytes).

Derived: ``avg_power_w`` = Σ node energy / run time (recorded power, all nodes; energies ≤ 0 are
missing), ``energy_j`` = Σ node energy; ``gpu_util`` from the mean GPU power per node
(Σ gpu_energy / nodes / run time) with the ``lassen`` system's 4 × (idle, max) GPU power;
``cpu_util`` = Σ cpu_usage / 1e9 / (nodes × run time × 44 cores) clipped to [0, 1] (the CSM
value is cgroup CPU time; 44 = 2 × 22 POWER9 cores per node; SMT makes values > 1 possible, hence
the clip — an assumption, not a documented normalisation). Times: naive local times read as
America/Los_Angeles (LLNL's zone; the dataset does not state it; a requested zone, the system
file's ``timezone`` or ``$TWINSWEEP_TZ`` overrides: :func:`core.loaders._facility.resolve_timezone`).

``lassen-raps`` — the 2-hour Lassen window that a third party extracted with ExaDigiT/RAPS from
LAST (``lassen-last-raps-snapshot/``: ``lassen_jobs_2019-08-22_2h_with_traces.parquet`` or the
``…_summary.csv``; see its PROVENANCE.md). Times are seconds since RAPS's telemetry start (the
earliest LAST ``begin_time``); the window 2019-08-22T00:00Z starts at t = 31,497,370 s, so the
epoch is 1,534,934,630 (2018-08-22T10:43:50Z), derived from that pair. ``scheduled_nodes`` are
RAPS-internal indexes (up to 827 for 792 nodes): each distinct index gets its ascending rank
(778 distinct → 0..777), which keeps the recorded placement collision-free. ``account_hash`` is
RAPS's ``account`` = LAST ``hashed_user_id`` → ``user`` and ``account``. ``cpu_util_mean`` (0..2
sockets) / 2 → ``cpu_util``; ``gpu_util_mean`` (0..4 GPUs) / 4 → ``gpu_util``; the constant 20 s
``cpu_trace``/``gpu_trace`` go to ``Workload.traces`` as utilisation traces.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import TraceFormatError
from ..system import load_system
from ..workload import Workload
from ._facility import (
    BadRows, int_or_na, job_times_checked, jobs_frame, numbers_checked, parquet_columns, read_csv_rows,
    read_parquet_bytes, resolve_timezone, str_or_none, util_from_power,
)
from ._registry import TraceText, read_trace, register_loader
from ._swfcore import obj_array
from .nodelist import NodeIndex, natural_key

LAST_PROVENANCE = ("LLNL LAST Lassen job dataset (Patki et al., IEEE CLUSTER 2021; github.com/LLNL/LAST, "
                   "CC-BY-4.0)")
RAPS_PROVENANCE = ("Lassen 2-hour window (2019-08-22) extracted by ExaDigiT/RAPS from LLNL LAST (Patki et al., "
                   "IEEE CLUSTER 2021; CC-BY-4.0), snapshot from ZzZTripleZzZ/RAPS_SC26")
#: Unix time of t = 0 of the RAPS snapshot: 2019-08-22T00:00:00Z (1,566,432,000) − 31,497,370 s.
RAPS_SNAPSHOT_EPOCH = 1566432000 - 31497370
RAPS_WINDOW_START = 31497370
LAST_TZ = "America/Los_Angeles"
CORES_PER_NODE = 44
_ALLOC_COLS = {"allocation_id", "primary_job_id", "num_nodes", "begin_time", "end_time", "job_submit_time",
               "time_limit"}
_NODE_FILES = ("final_csm_allocation_node_history.csv", "final_csm_allocation_node_history_hashed.csv")
_RAPS_COLS = {"job_id", "nodes_required", "scheduled_nodes", "submit_time_s", "start_time_s", "end_time_s"}


def _csv_header(trace: TraceText) -> list[str]:
    head = trace.data[:8192].decode("utf-8", "replace").splitlines()
    return [c.strip().strip('"') for c in head[0].split(",")] if head else []


def detect_last(trace: TraceText) -> float:
    """Score 3 for a CSV whose header has the CSM allocation-history columns."""
    return 3.0 if _ALLOC_COLS <= set(_csv_header(trace)) else 0.0


def detect_raps(trace: TraceText) -> float:
    """Score 3 for the RAPS Lassen snapshot (parquet or summary CSV)."""
    cols = parquet_columns(trace) or set(_csv_header(trace))
    return 3.0 if _RAPS_COLS <= cols else 0.0


def node_history_path(alloc_path: str) -> Path | None:
    """The per-node history CSV beside an allocation history file, or None."""
    d = Path(alloc_path).parent
    for name in _NODE_FILES:
        for cand in (d / name, d / (name + ".gz")):
            if cand.exists():
                return cand
    return None


def load_last(trace: TraceText, lenient: bool = False) -> Workload:
    """Load LAST's allocation history (+ per-node history beside it); see the module docstring."""
    skipped: list[tuple[int, str]] = []
    alloc, lines = read_csv_rows(trace, lenient, skipped, low_memory=False)
    missing = sorted(_ALLOC_COLS - set(alloc.columns))
    if missing:
        raise TraceFormatError(trace.path, 1, f"not a LAST allocation history: missing column(s) {missing}",
                               skippable=False)
    tz, tz_where = resolve_timezone(trace, None, LAST_TZ)
    bad = BadRows(trace.path, len(alloc), lines, str_or_none(alloc["primary_job_id"].tolist()))
    sub_abs, st_abs, en_abs = job_times_checked(alloc, "job_submit_time", "begin_time", "end_time", tz, bad)
    nodes, bn = numbers_checked(alloc["num_nodes"])
    bad.add(bn | (np.isfinite(nodes) & ((nodes < 1) | (nodes != np.floor(nodes)))),
            lambda i: f"num_nodes '{alloc['num_nodes'].iloc[i]}' is not a whole number of nodes >= 1")
    tl, bt = numbers_checked(alloc["time_limit"])
    bad.add(bt | (tl < 0), lambda i: f"time_limit '{alloc['time_limit'].iloc[i]}' is not a number of seconds >= 0")
    keep = bad.resolve(lenient, skipped)
    if not keep.all():
        alloc = alloc.loc[keep].reset_index(drop=True)
        sub_abs, st_abs, en_abs, nodes, tl = (a[keep] for a in (sub_abs, st_abs, en_abs, nodes, tl))
    n = len(alloc)
    epoch = int(np.floor(sub_abs.min())) if n else 0
    start = np.rint(st_abs - epoch)
    end = np.rint(en_abs - epoch)
    run = np.where(np.isfinite(start) & np.isfinite(end) & (end >= start), end - start, np.nan)
    checksum = trace.checksum
    npath = node_history_path(trace.path)
    node_ids = [None] * n
    energy = np.full(n, np.nan)
    gpu_e = np.full(n, np.nan)
    cpu_ns = np.full(n, np.nan)
    names: list[str] = []
    if npath is not None:
        nt = read_trace(npath)
        checksum = "sha256:" + hashlib.sha256((trace.checksum + nt.checksum).encode()).hexdigest()
        nd = pd.read_csv(io.BytesIO(nt.data), low_memory=False)
        if not {"allocation_id", "node_name"} <= set(nd.columns):
            raise TraceFormatError(str(npath), 1, "per-node history needs allocation_id and node_name columns")
        names = sorted(set(nd["node_name"].astype(str)), key=natural_key)
        idx = NodeIndex(names)
        nd["_nid"] = [idx(x) for x in nd["node_name"].astype(str)]
        pos = {a: i for i, a in enumerate(alloc["allocation_id"].tolist())}
        for col, target in (("energy", energy), ("gpu_energy", gpu_e), ("cpu_usage", cpu_ns)):
            if col in nd.columns:
                v = pd.to_numeric(nd[col], errors="coerce")
                v = v.where(v > 0)
                s = v.groupby(nd["allocation_id"]).sum(min_count=1)
                for a, val in s.items():
                    i = pos.get(a)
                    if i is not None:
                        target[i] = val
        for a, grp in nd.groupby("allocation_id")["_nid"]:
            i = pos.get(a)
            if i is not None:
                node_ids[i] = sorted(int(x) for x in grp)
    system = load_system("lassen")
    pw = system.power
    with np.errstate(divide="ignore", invalid="ignore"):
        avg = np.where(run > 0, energy / run, np.nan)
        gpu_node_w = np.where((run > 0) & (nodes > 0), gpu_e / nodes / run, np.nan)
        cpu_util = np.clip(np.where((run > 0) & (nodes > 0), cpu_ns / 1e9 / (nodes * run * CORES_PER_NODE), np.nan),
                           0.0, 1.0)
    gpu_util = util_from_power(gpu_node_w, system.gpus_per_node, pw.gpu_idle_w, pw.gpu_max_w)
    ex = pd.to_numeric(alloc["exit_status"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan) \
        if "exit_status" in alloc.columns else np.full(n, np.nan)
    status = np.where(np.isnan(ex), "unknown", np.where(ex == 0, "completed", "failed")).astype(object)

    def col(c):
        return str_or_none(alloc[c].tolist()) if c in alloc.columns else np.empty(n, dtype=object)

    cols = {
        "job_id": col("primary_job_id"),
        "user": col("hashed_user_id"),
        "account": col("hashed_user_group_id"),
        "submit_time": np.rint(sub_abs - epoch).astype(np.int64),
        "recorded_start_time": int_or_na(start),
        "recorded_end_time": int_or_na(end),
        "run_time": int_or_na(run),
        "time_limit": int_or_na(tl),
        "procs": int_or_na(nodes),
        "nodes": int_or_na(nodes),
        "cpu_util": cpu_util,
        "gpu_util": gpu_util,
        "avg_power_w": avg,
        "energy_j": energy,
        "partition": col("queue"),
        "status": status,
        "node_ids": obj_array(node_ids),
        "allocation_id": col("allocation_id"),
        "gpu_energy_j": gpu_e,
        "cpu_usage_s": cpu_ns / 1e9,
    }
    jobs = jobs_frame(cols)
    header = {"timezone": tz, "timezone_source": tz_where, "node_history": str(npath) if npath else None, "node_names": names}
    return Workload(jobs=jobs, epoch=epoch, checksum=checksum, source=trace.path, format="lassen-last",
                    header=header, procs_unit="nodes", skipped_lines=skipped, provenance=LAST_PROVENANCE,
                    timezone=tz)


def _parse_nodes(v) -> list[int]:
    """RAPS ``scheduled_nodes``: a list (parquet) or space/comma-separated text (CSV) of node indexes
    >= 0; [] when missing. Raises ValueError for another value."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return []
    items = list(v) if isinstance(v, (list, tuple, np.ndarray)) else str(v).replace(",", " ").split()
    out = []
    for x in items:
        try:
            k = int(x)
        except (TypeError, ValueError):
            raise ValueError(f"scheduled_nodes: {x!r} is not a node index") from None
        if k < 0 or k != float(x):
            raise ValueError(f"scheduled_nodes: {x!r} is not a node index >= 0")
        out.append(k)
    return out


def load_raps(trace: TraceText, lenient: bool = False) -> Workload:
    """Load the RAPS Lassen snapshot (parquet with traces, or the summary CSV).

    Row checks (a TraceFormatError naming the CSV line, or the parquet row, of the first bad row;
    under ``lenient`` every bad row is skipped and listed in ``Workload.skipped_lines``): a CSV row
    with another field count than the header (a file cut mid-row); ``submit_time_s`` missing;
    a time, ``nodes_required``, ``time_limit_s`` or ``wall_time_s`` that is not a number;
    ``nodes_required`` not a whole number >= 1; ``end_time_s`` before ``start_time_s``; a negative
    ``wall_time_s`` or ``time_limit_s``; a ``scheduled_nodes`` entry that is not an index >= 0.
    """
    skipped: list[tuple[int, str]] = []
    if parquet_columns(trace):
        df = read_parquet_bytes(trace)
        lines = None
    else:
        df, lines = read_csv_rows(trace, lenient, skipped,
                                  dtype={"scheduled_nodes": str, "account_hash": str, "name_hash": str})
    missing = sorted(_RAPS_COLS - set(df.columns))
    if missing:
        raise TraceFormatError(trace.path, None, f"not a RAPS Lassen snapshot: missing column(s) {missing}",
                               skippable=False)
    ids = str_or_none(df["job_id"].tolist())
    bad = BadRows(trace.path, len(df), lines, ids)
    bad.add(np.array([i is None for i in ids], dtype=bool), lambda i: "job_id is missing")
    vals: dict[str, np.ndarray] = {}
    for c in ("submit_time_s", "start_time_s", "end_time_s", "nodes_required", "time_limit_s", "wall_time_s"):
        if c in df.columns:
            vals[c], b = numbers_checked(df[c])
            bad.add(b, lambda i, c=c: f"{c} '{df[c].iloc[i]}' is not a number")
        else:
            vals[c] = np.full(len(df), np.nan)
    bad.add(~np.isfinite(vals["submit_time_s"]), lambda i: "submit_time_s is missing")
    nr = vals["nodes_required"]
    bad.add(~np.isfinite(nr) | (nr < 1) | (nr != np.floor(nr)),
            lambda i: f"nodes_required '{df['nodes_required'].iloc[i]}' is not a whole number of nodes >= 1")
    st, en = vals["start_time_s"], vals["end_time_s"]
    bad.add(en < st, lambda i: f"end_time_s {en[i]:.0f} is before start_time_s {st[i]:.0f}")
    for c, what in (("wall_time_s", "run time"), ("time_limit_s", "time limit")):
        bad.add(vals[c] < 0, lambda i, c=c, w=what: f"{c} {vals[c][i]:g} is not a {w} (s >= 0)")
    raw = []
    for i, v in enumerate(df["scheduled_nodes"]):
        try:
            raw.append(_parse_nodes(v))
        except ValueError as exc:
            bad.add(np.arange(len(df)) == i, lambda _i, e=str(exc): e)
            raw.append([])
    keep = bad.resolve(lenient, skipped)
    if not keep.all():
        df = df.loc[keep].reset_index(drop=True)
        ids = ids[keep]
        raw = [r for r, k in zip(raw, keep) if k]
    n = len(df)
    distinct = sorted({x for lst in raw for x in lst})
    rank = {x: i for i, x in enumerate(distinct)}
    node_ids = [sorted(rank[x] for x in lst) if lst else None for lst in raw]

    def num(c):
        return numbers_checked(df[c])[0] if c in df.columns else np.full(n, np.nan)

    submit, start, end = num("submit_time_s"), num("start_time_s"), num("end_time_s")
    run = num("wall_time_s")
    run = np.where(np.isfinite(run), run, end - start)
    nodes = num("nodes_required")
    cpu = np.clip(num("cpu_util_mean") / 2.0, 0.0, 1.0)
    gpu = np.clip(num("gpu_util_mean") / 4.0, 0.0, 1.0)
    traces = {}
    if "cpu_trace" in df.columns and "gpu_trace" in df.columns:
        period = int(np.nanmax(num("trace_quanta_s"))) if "trace_quanta_s" in df.columns else 20
        for i, (c, g) in enumerate(zip(df["cpu_trace"], df["gpu_trace"])):
            if c is None or g is None or ids[i] is None:
                continue
            ca = np.clip(np.asarray(c, dtype="float64") / 2.0, 0.0, 1.0)
            ga = np.clip(np.asarray(g, dtype="float64") / 4.0, 0.0, 1.0)
            if ca.size and ga.size:
                L = min(ca.size, ga.size)
                traces[ids[i]] = {"period": period, "cpu_util": ca[:L], "gpu_util": ga[:L]}
    acct = str_or_none(df["account_hash"].tolist()) if "account_hash" in df.columns else np.empty(n, dtype=object)
    cols = {
        "job_id": ids,
        "user": acct,
        "account": acct.copy(),
        "submit_time": np.rint(submit).astype(np.int64),
        "recorded_start_time": int_or_na(np.rint(start)),
        "recorded_end_time": int_or_na(np.rint(end)),
        "run_time": int_or_na(np.rint(run)),
        "time_limit": int_or_na(num("time_limit_s")),
        "procs": int_or_na(nodes),
        "nodes": int_or_na(nodes),
        "cpu_util": cpu,
        "gpu_util": gpu,
        "status": obj_array(["unknown"] * n),
        "node_ids": obj_array(node_ids),
        "job_name": str_or_none(df["name_hash"].tolist()) if "name_hash" in df.columns else np.empty(n, dtype=object),
        "raps_nodes": obj_array([lst or None for lst in raw]),
        "net_tx_bytes": num("net_tx_mean"),
        "net_rx_bytes": num("net_rx_mean"),
    }
    header = {"raps_window_start": RAPS_WINDOW_START, "raps_window_duration": 7200,
              "node_index_map": "ascending rank of RAPS scheduled_nodes indexes", "distinct_nodes": len(distinct)}
    return Workload(jobs=jobs_frame(cols), epoch=RAPS_SNAPSHOT_EPOCH, checksum=trace.checksum, source=trace.path,
                    format="lassen-raps", header=header, procs_unit="nodes", provenance=RAPS_PROVENANCE,
                    traces=traces, skipped_lines=skipped)


register_loader("lassen-last", detect_last, load_last)
register_loader("lassen-raps", detect_raps, load_raps)
