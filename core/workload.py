"""The Workload: one row per job, DESIGN.md §2 column names and units.

Columns of :attr:`Workload.jobs` (a ``pandas.DataFrame``, row order = trace order):

===================  ==========  ==========================================================
column               dtype       meaning
===================  ==========  ==========================================================
job_id               object str  job identifier as in the source
trace_index          int64       0-based position of the job line in its source file order
user, account        object str  user / account (SWF: field 12 user, field 13 group); None if unknown
submit_time          int64       seconds since the trace epoch (``Workload.epoch``, UTC)
recorded_start_time  Int64       recorded start (s since epoch), <NA> if unknown / never ran
recorded_end_time    Int64       recorded end, <NA> if unknown
run_time             Int64       recorded run time (s), <NA> if the job never ran / unknown
time_limit           Int64       requested walltime (s), <NA> if absent
procs                Int64       processors in the source (allocated, else requested), <NA> if absent
nodes                Int64       whole nodes, <NA> if unknown
cpu_util             float64     0..1, NaN if unknown
gpu_util             float64     0..1, NaN if unknown
avg_power_w          float64     average power of the job over all its nodes (W), NaN if unknown
energy_j             float64     recorded energy (J), NaN if unknown
priority             float64     trace priority, NaN if absent
partition            object str  partition / queue, None if absent
status               object str  completed | failed | cancelled | running | unknown
node_ids             object      recorded placement: list[int] of 0-based node indexes, or None
===================  ==========  ==========================================================

The epoch is the Unix time (UTC) of time 0; ``checksum`` is the sha256 of the uncompressed
source bytes, so that a run's identity changes when its input does.

Jobs still running when the trace was recorded. An accounting dump (``sacct``, a site's job
database export) is a snapshot: a job that had started but not ended when it was taken has a
recorded start and no end. Such a job held its nodes until the dump and beyond, so it is not a job
that never ran. Every loader's Workload goes through :func:`mark_running_at_dump`
(:func:`core.loaders.load_workload` calls it): unless the source lists only ended jobs
(``finished_only``: an SWF archive log, whose records are written when a job ends — there a start
without a run time is a run time nobody recorded, e.g. SDSC-SP2's 5,671 cancelled jobs), a job
with a recorded start, no recorded end, and either status ``running`` or no run time and no final
status (completed, failed, cancelled) gets status ``running`` and, when the loader gave no run
time (sacct's ``Elapsed``), ``run_time = dump_time − recorded_start_time`` (a lower bound of its
real run time). ``dump_time`` is the format's explicit recording time when it has one (sacct: a
``# dump_time:`` comment line), else :func:`latest_time`, the latest time stamp in the trace.
The engine then lets such a job hold its nodes for that long and reports it as ``running``
(reason: still running when the trace was recorded), never as ``completed``.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from .errors import ConfigError

import numpy as np
import pandas as pd

#: Column name -> pandas dtype of the Workload table (DESIGN.md §2).
WORKLOAD_COLUMNS: dict[str, str] = {
    "job_id": "object",
    "trace_index": "int64",
    "user": "object",
    "account": "object",
    "submit_time": "int64",
    "recorded_start_time": "Int64",
    "recorded_end_time": "Int64",
    "run_time": "Int64",
    "time_limit": "Int64",
    "procs": "Int64",
    "nodes": "Int64",
    "cpu_util": "float64",
    "gpu_util": "float64",
    "avg_power_w": "float64",
    "energy_j": "float64",
    "priority": "float64",
    "partition": "object",
    "status": "object",
    "node_ids": "object",
}

#: Allowed values of the ``status`` column (``running``: still running when the trace was recorded).
JOB_STATUSES = ("completed", "failed", "cancelled", "running", "unknown")

#: ``reason`` of a run's job that was still running when its trace was recorded (core/engine.py).
RUNNING_WHEN_RECORDED = "still running when the trace was recorded; end unknown"


@dataclasses.dataclass
class Workload:
    """A loaded trace.

    Attributes:
        jobs: DataFrame with :data:`WORKLOAD_COLUMNS` (extra columns allowed), in trace order.
        epoch: Unix time (s, UTC) of the trace's time 0.
        checksum: ``"sha256:<hex>"`` of the uncompressed source bytes.
        source: path of the source file.
        format: loader name (``swf``, ``swf-theta``, ``swf-metacentrum`` …).
        header: metadata from the source header (e.g. SWF ``MaxNodes``, ``UnixStartTime``,
            ``TimeZoneString``), str -> str/int.
        procs_unit: ``"cores"`` when ``procs`` counts processors, ``"nodes"`` when it counts nodes.
        skipped_lines: malformed lines skipped in lenient mode (list of ``(line_no, reason)``).
        provenance: short citation text of the data source (archive, donor), for reports.
        traces: optional per-job sample traces (job_id -> dict), see DESIGN.md §2.
        dump_time: when the trace was recorded (s since the epoch): the end of what it can know.
            Set by :func:`mark_running_at_dump` (a loader may set the format's explicit recording
            time before); None for ``finished_only`` sources.
        finished_only: the source lists only jobs that had ended when it was written (SWF
            archives); no job is taken as still running (module docstring).
        timezone: the IANA zone the loader read local wall-clock times in (e.g. ``Europe/Rome``),
            None when the format's times are not local wall-clock times (SWF: offsets from
            ``UnixStartTime``). Part of the run identity (:attr:`identity`).
        warnings: one-line warnings about the trace's content (e.g. ``End − Start`` differing
            from the recorded elapsed time), shown by ``twinsweep run`` and the sweep.
    """

    jobs: pd.DataFrame
    epoch: int
    checksum: str
    source: str
    format: str
    header: dict[str, Any] = dataclasses.field(default_factory=dict)
    procs_unit: str = "cores"
    skipped_lines: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    provenance: str = ""
    traces: dict[str, Any] = dataclasses.field(default_factory=dict)
    dump_time: int | None = None
    finished_only: bool = False
    timezone: str | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def identity(self) -> str:
        """What a run key covers of the trace: :attr:`checksum`, plus ``|tz=<zone>`` when the
        loader read local times in a zone (the same bytes read in another zone are other times)."""
        return self.checksum if not self.timezone else f"{self.checksum}|tz={self.timezone}"

    def __len__(self) -> int:
        return len(self.jobs)

    def with_nodes(self, cores_per_node: int) -> "Workload":
        """Return a copy whose ``nodes`` = ceil(procs / cores_per_node) (whole nodes).

        When ``procs_unit == "nodes"`` the procs column already counts nodes and is copied.
        Rows with procs <NA> or <= 0 keep nodes = procs (they are rejected at submit).
        Raises ConfigError when cores_per_node < 1.
        """
        if int(cores_per_node) < 1:
            raise ConfigError(f"cores_per_node must be >= 1, got {cores_per_node}")
        # a shallow copy: only the ``nodes`` column is replaced (a whole-column assignment never
        # writes into the shared arrays), and every later step (perturbation, window selection)
        # builds new columns or frames; copying the whole trace per run cost ~1-2 ms (KTH-SP2)
        jobs = self.jobs.copy(deep=False)
        procs = jobs["procs"]
        if self.procs_unit == "nodes" or cores_per_node == 1:
            jobs["nodes"] = procs.astype("Int64")
        else:
            p = procs.astype("float64").to_numpy(na_value=np.nan)
            n = np.where(p > 0, np.ceil(p / cores_per_node), p)
            jobs["nodes"] = pd.array(np.where(np.isnan(n), pd.NA, n), dtype="Int64") if np.isnan(n).any() \
                else pd.array(n.astype("int64"), dtype="Int64")
        return dataclasses.replace(self, jobs=jobs)


def empty_jobs_frame() -> pd.DataFrame:
    """An empty jobs table with the Workload schema (for tests and builders)."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in WORKLOAD_COLUMNS.items()})


def coerce_jobs_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with every Workload column present and cast to its dtype.

    Missing columns are added as all-missing. Raises ConfigError naming the column when a cast fails,
    or when the table names its recorded times ``start_time`` / ``end_time`` (the run outputs'
    names for the simulated times) instead of ``recorded_start_time`` / ``recorded_end_time``.
    """
    for legacy in ("start_time", "end_time"):  # the recorded times are named recorded_* (DESIGN.md §2)
        if legacy in df.columns and f"recorded_{legacy}" not in df.columns:
            raise ConfigError(f"jobs table has a column {legacy!r}: a workload's recorded times are named "
                              f"'recorded_{legacy}' (in run outputs {legacy!r} is the simulated time); rename it")
    out = df.copy()
    n = len(out)
    for col, dtype in WORKLOAD_COLUMNS.items():
        if col not in out.columns:
            if dtype in ("int64",):
                if col == "trace_index":
                    out[col] = np.arange(n, dtype="int64")
                    continue
                raise ConfigError(f"jobs table lacks required column {col!r}")
            out[col] = pd.Series([None] * n, dtype=dtype if dtype != "object" else "object", index=out.index)
        try:
            out[col] = out[col].astype(dtype)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"jobs column {col!r} cannot be cast to {dtype}: {exc}") from exc
    return out


#: (column, lowest valid value, what the column is) of :func:`jobs_problems`' range checks; a
#: missing value (<NA> / NaN) is always valid. Units as in the module docstring.
_RANGES: tuple[tuple[str, float, str], ...] = (
    ("run_time", 0, "a run time (s)"),
    ("time_limit", 0, "a time limit (s)"),
    ("energy_j", 0, "an energy (J)"),
    ("avg_power_w", 0, "a power (W)"),
    ("cpu_util", 0, "a utilisation (0..1)"),
    ("gpu_util", 0, "a utilisation (0..1)"),
)


def jobs_problems(jobs: pd.DataFrame, most: int = 3) -> tuple[int, list[str]]:
    """Values no job can have, in a jobs table with the Workload schema (after
    :func:`coerce_jobs_frame`): ``(count, first)`` = how many jobs have one, and up to ``most``
    one-line descriptions naming the job (``job_id``, 0-based ``trace_index``), the column and the
    value. Checked: negative ``run_time``, ``time_limit``, ``energy_j``, ``avg_power_w``,
    ``cpu_util``, ``gpu_util`` (:data:`_RANGES`); ``recorded_end_time`` before
    ``recorded_start_time``; a ``status`` not in :data:`JOB_STATUSES`. Missing values are valid.
    A built-in loader never produces these (its own line checks reject them first); the check
    catches a plug-in loader's or a hand-built table's (:func:`core.loaders.load_workload`)."""
    bad = np.zeros(len(jobs), dtype=bool)
    why: dict[int, str] = {}

    def mark(mask: np.ndarray, text) -> None:
        for i in np.flatnonzero(mask & ~bad)[:most]:
            why.setdefault(int(i), text(int(i)))
        bad[:] |= mask

    for col, low, what in _RANGES:
        if col in jobs.columns:
            v = jobs[col].astype("float64").to_numpy(na_value=np.nan)
            mark(v < low, lambda i, c=col, v=v, w=what: f"{c} = {v[i]:g} (not {w}; missing is <NA>)")
    if {"recorded_start_time", "recorded_end_time"} <= set(jobs.columns):
        st = jobs["recorded_start_time"].astype("float64").to_numpy(na_value=np.nan)
        en = jobs["recorded_end_time"].astype("float64").to_numpy(na_value=np.nan)
        mark(en < st, lambda i: f"recorded_end_time {en[i]:.0f} s is before recorded_start_time {st[i]:.0f} s")
    if "status" in jobs.columns:
        status = jobs["status"]
        mark(~status.isin(JOB_STATUSES).to_numpy(),
             lambda i: f"status {status.iloc[i]!r} (valid: {', '.join(JOB_STATUSES)})")
    ids = jobs["job_id"].astype(str).to_numpy() if "job_id" in jobs.columns else np.arange(len(jobs)).astype(str)
    pos = jobs["trace_index"].to_numpy() if "trace_index" in jobs.columns else np.arange(len(jobs))
    first = [f"job {ids[i]} (trace_index {pos[i]}): {why[i]}" for i in sorted(why)[:most]]
    return int(bad.sum()), first


def latest_time(jobs: pd.DataFrame) -> int | None:
    """The latest time stamp of a jobs table (s since the epoch): the maximum of ``submit_time``,
    ``recorded_start_time``, ``recorded_end_time`` and ``recorded_start_time + run_time``; None
    for an empty table. The recording time of a dump that states none (:func:`mark_running_at_dump`)."""
    if not len(jobs):
        return None
    cols = [jobs["submit_time"].to_numpy(dtype="float64")]
    start = jobs["recorded_start_time"].astype("float64").to_numpy()
    cols.append(start)
    cols.append(jobs["recorded_end_time"].astype("float64").to_numpy())
    cols.append(start + jobs["run_time"].astype("float64").to_numpy())
    m = float(np.nanmax(np.vstack(cols)))
    return int(m) if np.isfinite(m) else None


def mark_running_at_dump(wl: "Workload") -> "Workload":
    """Mark the jobs of ``wl`` that were still running when the trace was recorded (module
    docstring): status ``running``, run time ``dump_time − recorded_start_time`` where the loader
    gave none (clipped at 0). Sets ``wl.dump_time`` (the loader's, else :func:`latest_time`) unless
    ``wl.finished_only``; counts the jobs in ``header["running_when_recorded"]``. Returns ``wl``
    (its jobs table replaced by a copy when a row changes)."""
    if wl.finished_only:
        return wl
    jobs = wl.jobs
    if wl.dump_time is None:
        wl.dump_time = latest_time(jobs)
    if wl.dump_time is None:
        return wl
    start = jobs["recorded_start_time"]
    status = jobs["status"].astype("object")
    final = status.isin(("completed", "failed", "cancelled")).to_numpy()
    run_known = jobs["run_time"].notna().to_numpy()
    open_ = (start.notna() & jobs["recorded_end_time"].isna()).to_numpy() & (
        (status == "running").to_numpy() | (~run_known & ~final))
    wl.header["running_when_recorded"] = int(open_.sum())
    if not open_.any():
        return wl
    jobs = jobs.copy()
    s = start.astype("float64").to_numpy()
    run = jobs["run_time"].astype("float64").to_numpy(copy=True)
    fill = open_ & ~run_known
    run[fill] = np.maximum(0.0, float(wl.dump_time) - s[fill])
    jobs["run_time"] = pd.arrays.IntegerArray(np.rint(np.nan_to_num(run)).astype("int64"), np.isnan(run))
    st = status.to_numpy(copy=True)
    st[open_] = "running"
    jobs["status"] = pd.Series(st, index=jobs.index, dtype="object")
    wl.jobs = jobs
    return wl
