"""Backtest of the twin against a log's recorded schedule: ``twinsweep validate`` (DESIGN.md §7, issue 15).

:func:`validate` reschedules a trace under the site's policy and compares the result with the
recorded schedule (:mod:`core.fidelity`), by *mode*, each saying what recorded information it used:

- ``blind``: the twin's input holds no recorded start, end or placement at all (they are removed
  from the workload before the run), so only submit times, requests (nodes, time limit) and run
  times reach it; the whole trace is simulated from its first submit and the figures are taken
  over the reported window (default: the second half of the trace's submit span; the fitting
  window, the first half, is where its one model constant is fitted: a number of nodes out of
  service throughout, :func:`core.availability.blind_constant`).

A calendar given in the system file (``[[system.availability]]``) is known machine state: every
mode then uses it and nothing is estimated.
- ``informed``: as blind, on a machine with a node availability calendar inferred from the
  recorded busy-node and queued-job counts over time (:func:`core.availability.telemetry_calendar`),
  as node-state telemetry would give them, with one share fitted on the fitting window's queue
  (:func:`core.availability.fit_idle_share`), and node slots above the nominal size in the blocks
  where the busy count shows the machine held more (:func:`core.availability.telemetry_machine`:
  time sharing, or a machine larger than its header); no per-job start or wait of the reported
  window is read (two logs whose jobs trade starts without changing either count validate alike).
- ``restart`` (``restart=P`` seconds): the reported window is cut into periods of ``P``; each
  period is simulated, on the informed machine, from the recorded state at its start (jobs running in the log at that
  moment placed on their recorded start, jobs submitted and not yet started in the log queued;
  DESIGN.md §3.9) and each job is judged in the period it was submitted in. This mode reads the
  recorded starts *before* each restart point, by design.

Beside each mode's figures: the **noise floor** (the same figures between the twin and itself
with run times perturbed by 1 % log-normal noise, :data:`NOISE_SIGMA`, over several seeds: below
it a difference means nothing) and, for the blind twin, the **policy sensitivity** (every built-in
policy × backfill variant against the log; the site's policy should be among the closest).

The **kill grace** (``System.kill_grace_s``) is fitted on the fitting window when the system
file gives none (:func:`fit_kill_grace`). The **ranking stability** of every policy × backfill
over the busiest weeks, blind against informed and against perturbed seeds, is
:mod:`sweep.ranking_stability` (``windows``).

What is checked and said about the log and the windows before any run is
:mod:`sweep.validate_checks`.

Outputs: ``validation.json`` (:data:`SCHEMA_VERSION`) and ``validation.html`` in ``out``.
"""

from __future__ import annotations

import dataclasses
import html
import math
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twinsweep.core import availability as _avail
from twinsweep.core.archive_cleaning import cleaning_summary
from twinsweep.core.atomic import atomic_write, folder_target_problem, foreign_folder
from twinsweep.core.backfill import BUILTIN_BACKFILLS
from twinsweep.core.backfill.windows import ClockRules, WindowsOptions
from twinsweep.core.config import Perturbation, RunConfig, parse_human_duration
from twinsweep.core.durations import duration_text
from twinsweep.core.errors import ConfigError
from twinsweep.core.jobprep import cancel_times
from twinsweep.core.metrics import format_number
from twinsweep.core.fidelity import FIGURE_LABELS, FIGURES, SPLIT_FIGURES, compare, recorded_schedule, twin_schedule
from twinsweep.core.options import parse_options
from twinsweep.core.partitions import pool_rows, with_pool_nodes
from twinsweep.core.run import load_run_workload, resolve_system, simulate, to_json, trace_system_warnings
from twinsweep.core.scheduler import validate_scheduler
from twinsweep.core.system import header_mismatch, run_setting
from twinsweep.core.tracespan import utc_text
from twinsweep.core.workload import Workload

# the checks before any run (sweep.validate_checks); window_text is also the CLI's
from .validate_checks import (CLEANING_NOTE, CLEANING_WARN_SHARE, check_comparable, check_submit_gap,
                              cleaning_warning, idle_stretch, input_warnings, oversubscribed, ran_sizes, share_text,
                              undeclared_partitions, window_text)

#: validation.json layout version.
SCHEMA_VERSION = 1
#: Run-time perturbation of the noise floor: σ of the multiplicative log-normal noise (1 %).
NOISE_SIGMA = 0.01
#: Seeds of the noise floor (3 by default; ``noise_seeds`` changes the count).
DEFAULT_NOISE_SEEDS = 3
#: Ordering policies of the sensitivity table (``priority`` joins when the trace has priorities).
SENSITIVITY_POLICIES = ("fcfs", "sjf", "ljf")
#: Timeline bin of the validation runs (s): the figures use the job tables, not the timeline.
_SAMPLE_PERIOD = 3600

#: Recorded fields the twin's input holds, per mode (``validation.json["fields_read"]``).
_TWIN_FIELDS_BLIND = ["submit_time", "run_time", "procs (-> nodes)", "time_limit", "user", "account",
                      "priority", "status"]
_REFERENCE_FIELDS = ["submit_time", "recorded_start_time", "run_time", "procs (-> nodes)"]


#: Fewer submissions than this in the fitting or the reported window: the validation runs, with a
#: warning that its constants or figures rest on too few jobs (a rule of thumb, not a test).
MIN_WINDOW_JOBS = 100

#: Most restart periods one validation runs (each is one twin run from the recorded state).
MAX_RESTART_PERIODS = 10_000

#: Group labels of ``modes[m]["wait_by_log_hold"]`` (:func:`core.availability.held_jobs`).
HELD, NOT_HELD = "held", "not_held"


def log_hold_groups(reference: pd.DataFrame, pools: list | None = None) -> pd.Series:
    """:data:`HELD` or :data:`NOT_HELD` per job of the recorded schedule, indexed by
    ``trace_index``: ``held`` when the log shows the job held for a reason of its own
    (:func:`core.availability.held_jobs`: a later job asking for at least its nodes and time
    limit started before it), else ``not_held`` (its wait is consistent with waiting for nodes
    under the site's queue order). ``reference`` needs ``time_limit`` for the comparison of
    limits (without it, nodes alone are compared). ``pools``: on a partitioned machine, the rows
    of each partition (:func:`core.partitions.pool_rows`): a job is compared with the later jobs
    of its own partition only (a later job that started on other nodes did not overtake it)."""
    if pools is None:
        held = _avail.held_jobs(reference)
    else:
        held = np.zeros(len(reference), dtype=bool)
        for r in pools:
            held[r] = _avail.held_jobs(reference.iloc[r])
    return pd.Series(np.where(held, HELD, NOT_HELD), index=reference["trace_index"].to_numpy())


def holds_workload(workload: Workload, reference: pd.DataFrame, groups: pd.Series) -> Workload:
    """``workload`` with an ``eligible_time`` column: the recorded start of each job the log held
    (``groups`` == :data:`HELD`, :func:`log_hold_groups`) — the log's holds as if the log had
    recorded when each held job became eligible (Slurm's ``Eligible``; the hold ended at or
    before the start) — and for every other job the log's own eligible time when it records one
    (a Slurm dump's ``Eligible``), else missing; a held job keeps the later of the two. Reads
    ``reference`` (the recorded schedule) for the held jobs' starts; used by the diagnostic
    ``holds`` mode only. (Until 2026-12-07 a log's own ``Eligible`` was overwritten for every job.)"""
    jobs = workload.jobs.copy()
    held = groups.reindex(jobs["trace_index"].to_numpy()).to_numpy() == HELD
    start = reference.set_index("trace_index")["start_time"].astype("Int64")
    rec = start.reindex(jobs["trace_index"].to_numpy()).to_numpy(dtype="float64", na_value=np.nan)
    own = (jobs["eligible_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)
           if "eligible_time" in jobs.columns else np.full(len(jobs), np.nan))
    elig = np.where(held, np.fmax(rec, own), own)
    jobs["eligible_time"] = pd.array(np.where(np.isnan(elig), None, elig), dtype="Int64")
    return dataclasses.replace(workload, jobs=jobs)


def _mode_figures(reference: pd.DataFrame, jobs: pd.DataFrame, t0: int, t1: int, nodes: int,
                  groups: pd.Series, busy: pd.DataFrame | None = None) -> dict:
    """One mode's figures (:func:`core.fidelity.compare`; ``busy``: the twin's machine state when
    its job rows do not give it, see :func:`_restart_jobs`) and their split by the log's holds
    (``wait_by_log_hold``: :func:`core.fidelity.wait_split` over :func:`log_hold_groups`, from the
    same pairing)."""
    out = compare(reference, twin_schedule(jobs), t0, t1, nodes, groups=groups, twin_busy=busy)
    out["wait_by_log_hold"] = out.pop("wait_by_group")
    return out


def _window_arg(text: str | None, what: str) -> tuple[int, int] | None:
    """``"A:B"`` (seconds or durations from the trace epoch) -> (A, B); None passes through."""
    if text is None:
        return None
    if isinstance(text, (tuple, list)):
        a, b = text
    else:
        if ":" not in str(text):
            raise ConfigError(f"{what}: expected START:END (seconds or durations from the trace epoch, e.g. 0:180d), "
                              f"got {text!r}")
        a, b = str(text).split(":", 1)
    a, b = parse_human_duration(a, what), parse_human_duration(b, what)
    if b <= a:
        raise ConfigError(f"{what}: END must be after START, got {text!r}")
    return int(a), int(b)


def _system_origin(system) -> str:
    """Where the machine's size comes from, for people: the system file, or for a generic system
    the header fields and the rule (:func:`core.system.system_from_swf_header`)."""
    if not system.generic:
        return f"system file {Path(system.path).name}" if system.path else "given"
    return next((src["cite"] for src in system.sources if "nodes" in src.get("what", "")), "the trace header")


def blind_workload(workload: Workload) -> Workload:
    """A copy of ``workload`` without anything the log recorded about the schedule: recorded
    start and end times and placements (``node_ids``) are removed (set missing). What remains is
    what a user submitted (submit time, request, limit), the run time, and for a job its user
    cancelled while it was queued (it never ran) the cancel time, kept as its
    ``recorded_end_time``: a user's action, not the schedule, which the twin reads only with
    ``queue_cancelled`` (:func:`core.jobprep.cancel_times`)."""
    jobs = workload.jobs.copy()
    cancel = cancel_times(jobs)  # a user's action, not the schedule: kept as the time the job left
    jobs["recorded_start_time"] = pd.array([pd.NA] * len(jobs), dtype="Int64")
    jobs["recorded_end_time"] = pd.array(np.where(np.isnan(cancel), None, cancel), dtype="Int64")
    jobs["node_ids"] = pd.Series([None] * len(jobs), index=jobs.index, dtype="object")
    return dataclasses.replace(workload, jobs=jobs)


def _planned_end(jobs: pd.DataFrame, kill: bool) -> pd.Series:
    """end_time, with a still-running job's end filled in from its start and occupancy
    (run time, cut at the effective time limit when jobs are killed)."""
    end = jobs["end_time"].astype("Int64").copy()
    run = jobs["run_time"].astype("float64").to_numpy(na_value=np.nan)
    if kill:
        run = np.fmin(run, jobs["time_limit"].astype("float64").to_numpy(na_value=np.nan))
    start = jobs["start_time"].astype("float64").to_numpy(na_value=np.nan)
    fill = (end.isna().to_numpy() & ~np.isnan(start) & ~np.isnan(run)
            & (jobs["status"] == "running").to_numpy())
    if fill.any():
        vals = end.to_numpy(dtype="float64", na_value=np.nan)
        vals[fill] = start[fill] + run[fill]
        end = pd.array(np.where(np.isnan(vals), 0, vals).astype("int64"), dtype="Int64")
        end[np.isnan(vals)] = pd.NA
        return pd.Series(end, index=jobs.index)
    return end


def _run(config: RunConfig, workload: Workload, system) -> pd.DataFrame:
    res = simulate(config, workload=workload, system=system)
    jobs = res.jobs
    return jobs.assign(end_time=_planned_end(jobs, config.kill))


_SCHED_COLS = ["trace_index", "submit_time", "start_time", "end_time", "nodes", "prepopulated"]


def _restart_jobs(config: RunConfig, workload: Workload, system, t0: int, t1: int,
                  period: int, jobs_of: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Twin schedule of restart mode: periods of ``period`` s over ``[t0, t1)``, each simulated
    from the recorded state at its start (running jobs on their nodes, queued jobs queued). Each
    job is judged in the run of the period it was submitted in: its row is that run's (the
    twin's start, or none when the twin rejected it). A period's run lasts until every job
    submitted in the period has left the twin's queue: when some are still queued at the
    period's end, the run is made again from the same restart point over a window
    :data:`RESTART_STRETCH` times longer (the later submissions in it, as in the log), until none
    is or the trace ends. So no job drops out between periods (a job the twin still held queued
    at the next restart point while the log had run it by then — the jobs the twin delays most —
    keeps the twin's start instead of vanishing from the comparison), and a log the twin made
    itself validates to zero error. The first period's run also gives the rows of the jobs
    running or queued at ``t0`` (a running one at its recorded placement, ``prepopulated``: not
    compared; they fill the busy-node series). One row per job of the trace (trace order); jobs
    submitted at or after ``t1`` have no start.

    Returns ``(jobs, busy)``: ``jobs`` the judged rows above (a schedule, :mod:`core.fidelity`);
    ``busy`` the restarted machine's state, for the busy-node figures: over each period
    ``[s, e)`` the jobs holding nodes in that period's own run (those placed from the recorded
    state at ``s`` included), their start and end cut to ``[s, e)``. The judged rows cannot stand
    for it: a job the twin started late holds its nodes past the next restart point, where the
    next period's run is seeded from the log's state instead, so stitched together they overlap
    (SDSC-SP2 at 7 d: above the machine's 128 nodes in 17 % of the hours, up to 347). Cost: one run per period, plus about one more
    (4 x longer) for each period whose jobs the twin still holds queued at its end; a period
    whose job the twin cannot start until much later re-runs up to the trace's end (measured:
    KTH at 1 d, 333 runs for 167 periods, 8.9 s; SDSC-SP2 at 6 h, 4,127 runs, 74 s)."""
    end_all = int(workload.jobs["submit_time"].max()) + 1
    parts, busy_parts = [], []
    for s in range(t0, t1, period):
        e = min(s + period, t1)
        dur = e - s
        while True:
            last = s + dur >= end_all
            jobs = _run(dataclasses.replace(config, start=s, duration=None if last else dur), workload, system)
            sub = jobs["submit_time"].to_numpy(dtype="int64")
            mine = ((sub >= s) | (s == t0)) & (sub < e)  # the first period also holds the state at t0
            if last or not (mine & (jobs["status"] == "queued").to_numpy()).any():
                break
            dur *= RESTART_STRETCH
        parts.append(jobs.loc[mine, _SCHED_COLS])
        busy_parts.append(_holding_nodes(jobs, s, e))
    judged = pd.concat(parts, ignore_index=True).set_index("trace_index")
    if jobs_of is None:
        wl = with_pool_nodes(workload, system).jobs
        jobs_of = pd.DataFrame({"trace_index": wl["trace_index"].astype("int64").to_numpy(),
                                "submit_time": wl["submit_time"].astype("int64").to_numpy(),
                                "nodes": wl["nodes"].astype("Int64").to_numpy()})
    out = jobs_of[["trace_index", "submit_time", "nodes"]].reset_index(drop=True)
    idx = out["trace_index"]
    out["start_time"] = judged["start_time"].reindex(idx).astype("Int64").to_numpy()
    out["end_time"] = judged["end_time"].reindex(idx).astype("Int64").to_numpy()
    out["prepopulated"] = judged["prepopulated"].reindex(idx).fillna(False).astype(bool).to_numpy()
    return out, pd.concat(busy_parts, ignore_index=True)


def _holding_nodes(jobs: pd.DataFrame, s: int, e: int) -> pd.DataFrame:
    """The jobs of one run holding nodes in ``[s, e)``, start and end cut to it (an end not
    known: held to ``e``); columns start_time, end_time, nodes (int64)."""
    start = jobs["start_time"].astype("float64").to_numpy(na_value=np.nan)
    end = jobs["end_time"].astype("float64").to_numpy(na_value=np.nan)
    end = np.where(np.isnan(end) & ~np.isnan(start), float(e), end)
    nodes = jobs["nodes"].astype("float64").to_numpy(na_value=np.nan)
    on = ~np.isnan(start) & ~np.isnan(nodes) & (start < e) & (end > s)
    return pd.DataFrame({"start_time": np.maximum(start[on], s).astype(np.int64),
                         "end_time": np.minimum(end[on], e).astype(np.int64),
                         "nodes": nodes[on].astype(np.int64)})


#: How much longer each new attempt of a restart period's run is when jobs of the period are
#: still queued at its end (:func:`_restart_jobs`): 4 x, so a period needs few attempts.
RESTART_STRETCH = 4


def _noise_floor(base: tuple, make_jobs, seeds: int, t0: int, t1: int, nodes: int,
                 ran: np.ndarray | None = None) -> dict:
    """Mean and worst (``*_worst``: the largest in size, or the least for a correlation or a share
    of starts within a bound, :data:`_HIGHER_IS_CLOSER`) of each figure between the twin and itself
    under 1 % run-time noise.

    ``base`` and what ``make_jobs(seed)`` returns: ``(jobs, busy)``, a twin job table and the
    machine state of the occupancy figures (None: the job table's own, :func:`_restart_jobs`).
    ``ran``: the ``trace_index`` of the jobs that ran in the log: the per-job figures pair those
    only, the jobs the mode's own figures compare (until 2026-12-07 they paired every job the twin
    started, also those the log gives no start); the occupancy figures read each side's whole
    machine either way."""
    base_jobs, base_busy = base
    ref_all = twin_schedule(base_jobs)
    ref = ref_all if ran is None else ref_all[ref_all["trace_index"].isin(ran)]
    rows = []
    for seed in range(1, seeds + 1):
        jobs, busy = make_jobs(seed)
        tw_all = twin_schedule(jobs)
        tw = tw_all if ran is None else tw_all[tw_all["trace_index"].isin(ran)]
        rows.append(compare(ref, tw, t0, t1, nodes, reference_busy=ref_all if base_busy is None else base_busy,
                            twin_busy=tw_all if busy is None else busy))
    out: dict[str, Any] = {"seeds": seeds, "runtime_sigma": NOISE_SIGMA}
    for k in FIGURES:
        vals = [r[k] for r in rows if r.get(k) is not None]
        if not vals:
            out[k] = None
            continue
        out[k] = float(np.mean(vals))
        out[k + "_worst"] = float(min(vals) if k in _HIGHER_IS_CLOSER else max(vals, key=abs))
    return out


#: Figures for which the twin agrees with itself more the higher they are (1 at best): the noise
#: floor's ``*_worst`` of these is the least value over the seeds, of the others the largest in size.
_HIGHER_IS_CLOSER = frozenset({"occupancy_corr_hourly", "start_within_1h_frac", "start_within_1min_frac"})


#: Kill grace fitted on the fitting window: this quantile of the overruns (run time − time limit
#: > 0) of the jobs submitted in it, rounded up to whole minutes (KTH: 75 % of overruns <= 18 s,
#: SDSC-SP2: <= 40 s, i.e. a grace of 60 s on both; the tail is jobs the limit did not stop).
KILL_GRACE_QUANTILE = 0.75


#: The figures :func:`closest_row` ranks the sensitivity rows by, each with the sign that makes
#: smaller closer.
CLOSEST_BY = ("wait_mean_rel_error", "wait_p95_rel_error", "bsld_mean_rel_error", "occupancy_corr_hourly")


def closest_row(table: list[dict]) -> dict | None:
    """The policy-sensitivity row closest to the log (``best_matching_policy``): the lowest mean
    rank (average ranks, :func:`sweep.ranking.average_ranks`; a Borda count) over :data:`CLOSEST_BY` — |mean wait error|, |p95 wait
    error|, |mean bounded slowdown error| and the hourly busy-node correlation (higher is closer);
    a missing figure ranks last. Ties go to the smaller |mean wait error|, then the higher
    correlation. ``tied_with`` lists the rows with the very same four figures (on OSC-Clust all
    twelve: none queues a job). None when no row has a mean wait error. Until 2026-12-07 the
    mean wait error alone chose, and a synthetic log's ``ljf + easy`` was "closest" at −10 %
    with a bounded slowdown error of +790 %."""
    from .ranking import average_ranks

    scored = [r for r in table if r.get("wait_mean_rel_error") is not None]
    if not scored:
        return None

    def key(r, k):  # smaller is closer: a figure closer when higher counts negated (_HIGHER_IS_CLOSER)
        v = r.get(k)
        return np.inf if v is None else (-v if k in _HIGHER_IS_CLOSER else abs(v))

    figs = np.array([[key(r, k) for r in scored] for k in CLOSEST_BY])  # figure x row, smaller closer
    ranks = average_ranks(figs).mean(axis=0)
    i = min(range(len(scored)), key=lambda j: (ranks[j], figs[0, j], figs[3, j]))
    b = scored[i]
    tied = [f"{r['policy']}+{r['backfill']}" for j, r in enumerate(scored) if j != i and (figs[:, j] == figs[:, i]).all()]
    return {"policy": b["policy"], "backfill": b["backfill"],
            "by": "lowest mean rank over |mean wait error|, |p95 wait error|, |bsld error| and hourly correlation",
            "mean_rank": float(ranks[i]), "of_rows": len(scored), "tied_with": tied}


def fit_kill_grace(jobs: pd.DataFrame, fit0: int, fit1: int) -> int:
    """Kill grace (s) from the jobs submitted in ``[fit0, fit1)``: the :data:`KILL_GRACE_QUANTILE`
    quantile of their positive overruns (run time − time limit), rounded up to a multiple of 60 s;
    0 when none overran. Reads ``submit_time``, ``run_time`` and ``time_limit`` only."""
    sub = jobs["submit_time"].to_numpy(dtype="int64")
    over = (jobs["run_time"].astype("float64").to_numpy(na_value=np.nan)
            - jobs["time_limit"].astype("float64").to_numpy(na_value=np.nan))
    over = over[(sub >= fit0) & (sub < fit1) & (over > 0)]
    if not len(over):
        return 0
    return int(math.ceil(float(np.quantile(over, KILL_GRACE_QUANTILE)) / 60.0) * 60)


#: Keys of a system file's ``[site]`` table (the scheduler the site ran; docs/validation.md).
SITE_KEYS = ("policy", "backfill", "options", "class_field", "clock_utc_offset_s", "time_shared", "source")


def site_scheduler(system, workload: Workload | None = None) -> dict:
    """The site's scheduler as its system file declares it in a ``[site]`` table (read by
    ``validate`` only; ``twinsweep run`` keeps its own defaults): ``policy``, ``backfill``,
    ``options`` (the plug-ins' options, checked by :func:`core.scheduler.validate_scheduler`),
    ``class_field`` (``"queue"``: the job's class is the SWF queue, field 15, given to the twin
    as the job's partition — the queue it was submitted to in Slurm's sense; ``"partition"`` or
    absent: as loaded), ``clock_utc_offset_s`` (the site clock's offset from UTC of the log's
    timestamps; with a ``windows`` backfill, its ``clock_offset_s`` becomes the trace's Unix
    start time plus this), ``time_shared`` (the machine ran jobs non-dedicated, several per node:
    every mode then runs on :func:`core.availability.time_shared_slots` node slots fitted on the
    fitting window instead of the nominal nodes; default false) and ``source`` (citation). Returns ``{}`` when the system has no file
    or no ``[site]`` table. Raises ConfigError naming the file and key for an unknown key or a
    bad value."""
    path = getattr(system, "path", None)
    if not path:
        return {}
    with open(path, "rb") as fh:
        doc = tomllib.load(fh)
    site = doc.get("site")
    if site is None:
        return {}
    where = f"{path} [site]"
    if not isinstance(site, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(site) - set(SITE_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {list(SITE_KEYS)}")
    out = {"policy": site.get("policy", "fcfs"), "backfill": site.get("backfill", "easy"),
           "options": dict(site.get("options", {})), "class_field": site.get("class_field", "partition"),
           "clock_utc_offset_s": site.get("clock_utc_offset_s", 0), "time_shared": site.get("time_shared", False),
           "source": site.get("source", "")}
    if not isinstance(out["time_shared"], bool):
        raise ConfigError(f"{where}: time_shared must be true or false, got {out['time_shared']!r}")
    if out["class_field"] not in ("queue", "partition"):
        raise ConfigError(f"{where}: class_field must be 'queue' or 'partition', got {out['class_field']!r}")
    off = out["clock_utc_offset_s"]
    if isinstance(off, bool) or not isinstance(off, int):
        raise ConfigError(f"{where}: clock_utc_offset_s must be an integer (s), got {off!r}")
    if out["backfill"] == "windows" and workload is not None and "clock_offset_s" not in out["options"]:
        out["options"]["clock_offset_s"] = int(workload.epoch) + off
    try:
        validate_scheduler(out["policy"], out["backfill"], out["options"])
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return out


def class_workload(workload: Workload, class_field: str) -> Workload:
    """``workload`` with each job's class in ``partition`` (``class_field = "queue"``: the SWF
    queue code, field 15; ``"partition"``: unchanged)."""
    if class_field != "queue" or "queue" not in workload.jobs.columns:
        return workload
    jobs = workload.jobs.copy()
    jobs["partition"] = jobs["queue"]
    return dataclasses.replace(workload, jobs=jobs)


def _clock_rules(config: RunConfig):
    """``max_limit(t)`` of the site's clock rules (the longest time limit a job may have to start
    at ``t``, :meth:`ClockRules.max_limit`) when the run's backfill is ``windows`` with rules,
    else None (the availability estimators then count every queued job)."""
    if config.backfill != "windows":
        return None
    opts = {k: v for k, v in config.option_dict.items() if k in {f.name for f in dataclasses.fields(WindowsOptions)}}
    rules = ClockRules(parse_options("backfill", "windows", WindowsOptions, opts))
    return rules.max_limit if rules.active else None


def _machine_estimates(sysobj, pools: list | None, reference: pd.DataFrame, reference_est: pd.DataFrame, nodes: int,
                       fit: tuple, span0: int, end_all: int, max_limit, report: tuple) -> dict:
    """The blind and informed machines (:mod:`core.availability`), estimated per node pool: the
    machine, or each partition of a partitioned one (:mod:`core.partitions`) from its own jobs and
    nodes — a partition's busy and queued counts are its own telemetry (Slurm's ``sinfo`` and
    ``squeue`` per partition), and nodes idle in one pool are no evidence of nodes down in another.
    ``pools``: each partition's rows (:func:`core.partitions.pool_rows`), None when unpartitioned.

    Returns a dict: ``blind_down`` / ``blind_median`` (nodes, summed over the pools), ``idle_fit``
    (:func:`core.availability.fit_idle_share`'s dict; partitioned: the pools' sums, ``share`` their
    ratio), ``informed`` (an :class:`core.availability.InformedMachine` of the whole machine; a
    partitioned one's calendar periods carry the partition's name as a fourth item), ``sys_blind``,
    ``sys_informed`` (the systems the modes run on), ``site_cal`` (the calendar the system file
    gives when it gives every pool's: known machine state, nothing estimated; a pool whose calendar
    the file gives is not estimated, the others are), ``calendar_source`` (text) and ``partitions``
    (per pool: :meth:`System.partitions_summary`'s name, nodes, serves, default and node type;
    jobs — of the whole trace —,
    jobs_reported — submitted in the reported window ``report`` —, blind_nodes_down,
    informed_idle_share, informed_slots, informed_down_node_frac, calendar_source; None when
    unpartitioned)."""
    parts = sysobj.partitions
    # a calendar the system file gives is known machine state: that pool is not estimated
    declared = [p.availability for p in parts] if parts else [tuple(sysobj.availability)]
    rows = pools if parts else [None]
    sizes = [p.nodes for p in parts] if parts else [nodes]
    span_nodes = max(1, end_all - span0)
    est = []
    for n, r, cal in zip(sizes, rows, declared):
        ref = reference if r is None else reference.iloc[r]
        ref_est = reference_est if r is None else reference_est.iloc[r]
        idle_fit = _avail.fit_idle_share(ref_est, n, fit[0], fit[1], max_limit=max_limit)
        if cal:
            est.append((0, 0, idle_fit, _avail.InformedMachine(
                slots=n, calendar=cal, down_periods=len(cal),
                down_frac=sum((b - a) * k for a, b, k in cal) / (span_nodes * n), added_ratio=0.0)))
            continue
        down, median = _avail.blind_constant(ref_est, n, fit[0], fit[1], max_limit=max_limit)
        # the machine's telemetry counts the jobs that fit it (a wider one, which the twin rejects, is
        # no evidence of slots: as over_capacity counts)
        fitting = ref.loc[~(ref["nodes"].astype("float64").to_numpy(na_value=np.nan) > n)]
        informed = _avail.telemetry_machine(_avail.telemetry_counts(fitting), n, span0, end_all, idle_fit["share"])
        est.append((down, median, idle_fit, informed))
    site_cal = tuple(x for c in declared for x in c) if all(declared) else ()
    source = ("system file" if site_cal else "estimated (core/availability.py)" if not any(declared) else
              f"system file for partition(s) {', '.join(p.name for p, c in zip(parts, declared) if c)}; estimated "
              "(core/availability.py) for the others")
    if not parts:
        down, median, idle_fit, informed = est[0]
        return {"blind_down": down, "blind_median": median, "idle_fit": idle_fit, "informed": informed,
                # the constant hold lasts beyond any job (the engine stops once only holds are left)
                "sys_blind": sysobj if site_cal else dataclasses.replace(
                    sysobj, availability=_avail.constant_calendar(down, span0, 2 ** 40)),
                "sys_informed": dataclasses.replace(sysobj, nodes=informed.slots, availability=informed.calendar),
                "site_cal": site_cal, "calendar_source": source, "partitions": None}
    fits = [e[2] for e in est]
    sums = {k: sum(f[k] for f in fits) for k in fits[0] if k != "share" and isinstance(fits[0][k], (int, float))}
    num, den = sums["down_node_blocks"], sums["idle_node_blocks"]  # each pool ran with its own share
    idle_fit = {**sums, "share": min(1.0, num / den) if den else 1.0}
    informed = _avail.InformedMachine(
        slots=sum(e[3].slots for e in est),
        calendar=tuple(sorted((*x, p.name) for p, e in zip(parts, est) for x in e[3].calendar)),
        down_periods=sum(e[3].down_periods for e in est),
        down_frac=sum(e[3].down_frac * n for e, n in zip(est, sizes)) / nodes,
        added_ratio=sum(e[3].added_ratio * n for e, n in zip(est, sizes)) / nodes)
    sys_blind = dataclasses.replace(sysobj, partitions=tuple(
        p if cal else dataclasses.replace(p, availability=_avail.constant_calendar(e[0], span0, 2 ** 40))
        for p, e, cal in zip(parts, est, declared)))
    sys_informed = dataclasses.replace(sysobj, nodes=informed.slots, partitions=tuple(
        dataclasses.replace(p, nodes=e[3].slots, availability=e[3].calendar) for p, e in zip(parts, est)))
    return {"blind_down": sum(e[0] for e in est), "blind_median": sum(e[1] for e in est), "idle_fit": idle_fit,
            "informed": informed, "sys_blind": sys_blind, "sys_informed": sys_informed, "site_cal": site_cal,
            "calendar_source": source,
            "partitions": [{**desc, "jobs": int(len(r)),
                            "jobs_reported": int(_in_window(reference["submit_time"].to_numpy()[r], report).sum()),
                            "blind_nodes_down": e[0], "informed_idle_share": e[2]["share"],
                            "informed_slots": e[3].slots, "informed_down_node_frac": e[3].down_frac,
                            "calendar_source": "system file" if cal else "estimated"}
                           for desc, r, e, cal in zip(sysobj.partitions_summary(), pools, est, declared)]}


def _in_window(t: np.ndarray, window: tuple) -> np.ndarray:
    """``window[0] <= t < window[1]``, elementwise."""
    return (t >= window[0]) & (t < window[1])


def _sensitivity_policies(workload: Workload) -> list[str]:
    pols = list(SENSITIVITY_POLICIES)
    if workload.jobs["priority"].notna().any():
        pols.append("priority")
    return pols


def validate(data: str, system: str | None = None, policy: str | None = None, backfill: str | None = None,
             restart: int | str | None = None, calibrate: str | tuple | None = None,
             report_window: str | tuple | None = None, noise_seeds: int = DEFAULT_NOISE_SEEDS,
             sensitivity: bool = True, kill: bool = True, out: str | Path | None = None,
             workload: Workload | None = None, lenient: bool = False, tables: dict | None = None,
             windows: int = 4, rank_seeds: int = 2, rank_window: int | str = "7d", format: str | None = None,
             queue_cancelled: bool = False, holds: bool = False, force: bool = False) -> dict:
    """Backtest the twin on trace ``data`` (see the module docstring); returns validation.json's dict.

    Args:
        data: trace path (relative paths resolve against the data folder).
        system: system name or TOML path (default: as ``twinsweep run``).
        policy, backfill: the site's scheduler; both None (default): the system file's ``[site]``
            table (:func:`site_scheduler`: policy, backfill, their options, the class field),
            else ``fcfs`` + ``easy``. Either given: that pair, without options.
        restart: restart period (s or a duration such as ``"7d"``) to add the ``restart`` mode.
        calibrate: fitting window ``"A:B"`` (durations from the trace epoch); default the first
            half of the trace's submit span. It must hold submissions of the trace. The reported
            window defaults to what follows it (to what precedes it when it ends at or after the
            trace's last submission).
        report_window: ``"A:B"``, the window the figures are taken over (default: see above).
        noise_seeds: seeds of the noise floor (0 = no noise floor).
        sensitivity: add the policy × backfill table (blind twin).
        kill: end jobs at their time limit (the twin's default).
        out: folder for validation.json and validation.html (created; None = write nothing).
        workload: an already loaded trace (else loaded from ``data``).
        windows: busiest weeks of the ranking-stability study (:mod:`sweep.ranking_stability`;
            0 = none); rank_seeds: its perturbation seeds; rank_window: its window length.
        tables: when a dict is given, the twin's job table of each mode is stored in it under the
            mode's name (for inspection and tests).
        format: trace loader name (default: detected, as ``twinsweep run --format``).
        queue_cancelled: jobs cancelled while queued in the log stay queued in the twin until
            their cancel time (the machine-model option ``queue_cancelled``, every mode; the cancel
            time, a user's action, is read even in blind mode). Off by default: its measured effect
            on the PWA logs is mixed (docs/validation.md).
        holds: add the diagnostic mode ``holds``: blind, but each job the log held for a reason
            of its own (:func:`log_hold_groups`) enters the queue only at its recorded start
            (:func:`holds_workload`, the run option ``honor_eligible``). It reads those jobs'
            recorded starts in the reported window, so it is no backtest of the twin's
            prediction: it says how close the machine and queue model is once the holds are known.
        force: write into ``out`` even when it is a non-empty folder that holds no earlier
            validation (``validation.json``); without it such a folder is refused, as
            ``twinsweep run`` refuses one that is not a run folder.
    Raises: ConfigError (bad window, restart period, output folder, policy, trace; a trace with
    fewer than two distinct submit times; default windows made lopsided by one gap of submissions,
    :func:`sweep.validate_checks.check_submit_gap`), UnknownNameError. Every check is made before any
    simulation, and nothing is written unless the whole validation succeeds.
    """
    t_wall = time.perf_counter()
    for name, v, low in (("noise_seeds", noise_seeds, 0), ("windows", windows, 0), ("rank_seeds", rank_seeds, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ConfigError(f"validate: {name} must be a whole number >= {low}, got {v!r}")
    if windows and (parse_human_duration(rank_window, "rank_window") or 0) <= 0:
        raise ConfigError(f"validate: rank_window must be a duration > 0 (e.g. '7d'), got {rank_window!r}")
    if out is not None and (problem := folder_target_problem(out)):
        raise ConfigError(f"--out {str(out)!r}: {problem}")
    if out is not None and not force and (show := foreign_folder(out, "validation.json")):
        raise ConfigError(f"--out {str(out)!r}: the folder is not empty and holds no earlier validation (it holds "
                          f"{show}); choose an empty or new folder, or pass --force to write validation.json and "
                          "validation.html into it")
    policy_given = policy is not None or backfill is not None
    if policy == "replay":
        raise ConfigError("validate: policy 'replay' copies the recorded starts; give the site's policy (e.g. fcfs)")
    if policy == "external":
        raise ConfigError("validate: policy 'external' is not run by validate (it has no --scheduler, and its "
                          "sensitivity table and ranking study run the built-in policies): validate the built-in or a "
                          "registered policy, and compare an external scheduler in a sweep against the replay reference")
    base_cfg = RunConfig(data=data, system=system, policy=policy or "fcfs", backfill=backfill or "easy", kill=kill,
                         sample_period=_SAMPLE_PERIOD, lenient=lenient, format=format)
    given_workload = workload is not None
    if workload is None:
        workload = load_run_workload(base_cfg)
    sysobj = resolve_system(base_cfg.system, workload)
    site_table = site_scheduler(sysobj, workload)  # the machine's rules (time_shared) hold for any policy
    site = site_table if policy is None and backfill is None else {}
    if site:
        policy, backfill = site["policy"], site["backfill"]
        workload = class_workload(workload, site["class_field"])
        base_cfg = dataclasses.replace(base_cfg, policy=policy, backfill=backfill,
                                       options=tuple(sorted(site["options"].items())))
    dropped = (not site and site_table.get("options")
               and (base_cfg.policy == site_table.get("policy") or base_cfg.backfill == site_table.get("backfill")))
    policy, backfill = base_cfg.policy, base_cfg.backfill
    period = parse_human_duration(restart, "--restart") if restart is not None else None
    if period is not None and period <= 0:
        raise ConfigError(f"--restart: the period must be > 0 s, got {restart!r}")
    submit = workload.jobs["submit_time"].to_numpy(dtype="int64")
    if (distinct := len(np.unique(submit))) < 2:
        raise ConfigError(f"validate: {data}: the trace holds {len(submit)} job(s) with {distinct} "
                          "distinct submit time(s); a fitting and a reported window need at least two")
    span0, span1 = int(submit.min()), int(submit.max()) + 1
    if calibrate is None and report_window is None:
        check_submit_gap(submit, workload.jobs["job_id"].to_numpy(), data, span0, span1)
    fit = _window_arg(calibrate, "--calibrate")
    if fit is None:
        fit = (span0, span0 + (span1 - span0) // 2)
    rep = _window_arg(report_window, "--report-window")
    if rep is None:
        rep = (fit[1], span1) if fit[1] < span1 else (span0, fit[0])
    t0, t1 = rep
    if t1 <= t0 and fit[0] <= span0 and fit[1] >= span1:
        raise ConfigError(f"validate: the fitting window {window_text(fit)} covers every submission of the trace "
                          f"({window_text((span0, span1))} from the trace epoch): nothing is left to report on; give a "
                          "shorter --calibrate or a --report-window")
    if t1 <= t0 or t1 <= span0 or t0 >= span1:
        raise ConfigError(f"validate: the reported window [{t0}, {t1}) s {window_text((t0, t1))} holds no submission of the "
                          f"trace (submits span [{span0}, {span1}) s, {window_text((span0, span1))} from the trace epoch)")
    warns: list[str] = []  # validation.json "warnings", after the trace's own
    if dropped:  # the site's plug-in named on the command line runs with its defaults, not the site's options
        warns.append(f"--policy / --backfill replace the site's scheduler ({site_table['policy']} + "
                     f"{site_table['backfill']} with {', '.join(f'{k}={v}' for k, v in sorted(site_table['options'].items()))}) "
                     f"and run {policy} + {backfill} without options: give neither to run the site's scheduler "
                     "as its system file declares it")
    spec = validate_scheduler(policy, backfill, base_cfg.option_dict)  # options that make it a simpler scheduler
    warns += [n for o in (spec.policy_options, spec.backfill_options) if o is not None for n in o.notes()]
    # the header against the system, and served values no job has (a misspelling sends its jobs
    # elsewhere): a trace loaded here has them in its own warnings already, but for --system's header
    if given_workload:
        warns += trace_system_warnings(sysobj, workload, "its file name" if system is None else "--system")
    elif system is not None and (mismatch := header_mismatch(sysobj, workload.header, workload.procs_unit,
                                                             workload.source, "--system")):
        warns.append(mismatch)  # the machine the figures are of is not the header's: say so
    if not sysobj.partitions and (hint := undeclared_partitions(workload)):
        warns.append(hint)
    if t0 < span0 or t1 > span1:
        # hours outside the data are empty in both schedules: they would only inflate the agreement
        # of the busy-node series (and restart periods there have nothing to restart from)
        ends = ([f"starts {t0_gap:,} s before the first submission (at {span0:,} s)"] if (t0_gap := span0 - t0) > 0
                else []) + ([f"ends {t1_gap:,} s after the last (at {span1 - 1:,} s)"] if (t1_gap := t1 - span1) > 0
                            else [])
        warns.append(f"the reported window {window_text((t0, t1))} reaches beyond the trace's submissions "
                     f"{window_text((span0, span1))} (it {' and '.join(ends)}): it is cut to "
                     f"{window_text((max(t0, span0), min(t1, span1)))}")
        t0, t1 = max(t0, span0), min(t1, span1)
    if fit[0] < t1 and t0 < fit[1]:
        raise ConfigError(f"validate: the fitting window [{fit[0]}, {fit[1]}) s {window_text(fit)} overlaps the reported "
                          f"window [{t0}, {t1}) s {window_text((t0, t1))}; blind mode must not fit on what it reports")
    if not ((submit >= fit[0]) & (submit < fit[1])).any():
        raise ConfigError(f"validate: the fitting window [{fit[0]}, {fit[1]}) s {window_text(fit)} holds no submission of the "
                          f"trace (submits span [{span0}, {span1}) s, {window_text((span0, span1))} from the trace epoch): "
                          "nothing to fit the constants on")
    if period is not None and -(-(t1 - t0) // period) > MAX_RESTART_PERIODS:
        raise ConfigError(f"--restart: a period of {period} s cuts the reported window ({t1 - t0} s) into "
                          f"{-(-(t1 - t0) // period):,} periods, more than {MAX_RESTART_PERIODS:,} (each is a run); "
                          "give a longer period")
    if period is not None and period >= t1 - t0:
        warns.append(f"--restart: the period ({period:,} s) covers the whole reported window ({t1 - t0:,} s): restart "
                     "mode re-seeds the twin once, at the window's start, and is informed mode from the log's state there")
    # windows too small to mean much are allowed (a quick look), and said so
    warns += [f"the {what} window {window_text(w)} holds only {k} submission(s) (fewer than {MIN_WINDOW_JOBS}): its "
             f"{use} rest on too few jobs to mean much"
             for what, w, use in (("fitting", fit, "fitted constants"), ("reported", (t0, t1), "figures"))
             if (k := int(((submit >= w[0]) & (submit < w[1])).sum())) < MIN_WINDOW_JOBS]
    nominal = nodes = sysobj.nodes
    time_shared = bool(site_table.get("time_shared"))
    if sysobj.partitions and time_shared:
        raise ConfigError(f"validate: system {sysobj.name!r} is partitioned and its [site] table says time_shared: "
                          "time-shared node slots are not inferred per partition")
    # a partitioned machine: each node pool is estimated on its own (core.partitions); one error
    # naming the partition values no pool serves, before any work
    pools = (pool_rows(sysobj, workload.jobs["partition"].tolist(), workload.header.get("Partition"), workload.source)
             if sysobj.partitions else None)
    wl_nodes = with_pool_nodes(workload, sysobj, pools)  # each job's nodes in its pool's node type
    reference = recorded_schedule(wl_nodes.jobs)  # "ran without a recorded start" counted apart (unrecorded)
    if pools is not None:  # each job's pool size: what it may not exceed (core.fidelity, "capacity")
        cap = np.zeros(len(reference), dtype=np.int64)
        for p, r in zip(sysobj.partitions, pools):
            cap[r] = p.nodes
        reference = reference.assign(capacity=cap)
    sizes = ran_sizes(reference, nominal)
    ran_index = reference["trace_index"].to_numpy()[sizes[0]]  # the jobs that ran in the log (the noise floor's)
    reported = (submit >= t0) & (submit < t1)
    check_comparable(reference, sizes, reported, t0, t1, nominal, data)
    if (idle := idle_stretch(reference, submit, t0, t1)) is not None:
        warns.append(idle)
    if time_shared:
        # a time-shared machine held more jobs at once than its nodes: the twin (space-shared) runs
        # on as many node slots as the fitting window's recorded use (core.availability)
        nodes = _avail.time_shared_slots(reference, nominal, fit[0], fit[1])
        sysobj = dataclasses.replace(sysobj, nodes=nodes)
    for label, rows, n in ([(None, None, nodes)] if pools is None else
                           [(p.name, r, p.nodes) for p, r in zip(sysobj.partitions, pools)]):
        whole = pools is None and not time_shared and workload.procs_unit == "cores"  # one pool of the header's nodes
        if (over := oversubscribed(reference if rows is None else reference.iloc[rows], n, label,
                                    workload.jobs["procs"] if whole else None,
                                    sysobj.cores_per_node if whole else 1)) is not None:
            warns.append(over)  # against the slots of a time-shared site, or each partition's nodes
    blind_wl = blind_workload(workload)

    modes: dict[str, dict] = {}

    def mode(name: str, jobs: pd.DataFrame, description: str, busy: pd.DataFrame | None = None, **extra) -> None:
        """Record one mode: its twin job table (``tables``), figures, split and description."""
        if tables is not None:
            tables[name] = jobs
        modes[name] = {**_mode_figures(reference, jobs, t0, t1, nodes, hold_groups, busy),
                       "description": description, **extra}
    timing: dict[str, float] = {}

    grace = sysobj.kill_grace_s or (fit_kill_grace(workload.jobs, fit[0], fit[1]) if kill else 0)
    sysobj = dataclasses.replace(sysobj, kill_grace_s=grace,
                                 queue_cancelled=bool(queue_cancelled or sysobj.queue_cancelled))
    end_all = int(np.nanmax(reference["end_time"].astype("float64").to_numpy(na_value=np.nan), initial=span1)) + 1
    # a site whose rules hold jobs back by the clock: idle nodes while every queued job was held
    # are not down (core/availability.py, max_limit); the rules are the site's declared policy
    max_limit = _clock_rules(base_cfg)
    if max_limit is not None and not workload.epoch:
        warns.append("the trace gives no absolute start time (no UnixStartTime in its header: time 0 is taken as "
                     "1970-01-01 00:00 UTC), yet the site's clock rules are applied on the site's clock: their "
                     "hours and dates are then not the log's")
    limits = wl_nodes.jobs["time_limit"].astype("float64").to_numpy(na_value=np.nan)  # requested, s
    # jobs the archive's cleaning took out: the recorded schedule ran with them, every mode without
    cleaning = cleaning_summary(workload.header, workload.jobs["job_id"], submit, t0, t1, also={"fitting": fit})
    if cleaning["cleaned"] and workload.skipped_lines:  # their numbers are missing too: not the archive's
        cleaning["lenient_skipped_lines"] = len(workload.skipped_lines)
    if (cleaning["removed_share_in_window"] or 0.0) >= CLEANING_WARN_SHARE:
        warns.append(cleaning_warning(cleaning))
    if no_limit := int((~(limits > 0) & reported).sum()):
        warns.append(f"{no_limit:,} of the reported window's {int(reported.sum()):,} jobs have "
                     "no requested time (SWF field 9 is -1; Slurm: Timelimit UNLIMITED or none): the twin gives them "
                     + (f"the system's default limit ({sysobj.default_time_limit:,} s)" if sysobj.default_time_limit
                        else "their own run time as the limit (perfect estimates: backfilling is then optimistic)"))
    warns += input_warnings(workload, reference, sizes, submit, limits, reported, fit, nominal,
                             sysobj.default_time_limit, grace if kill else None)
    # a log that records when each job became eligible (Slurm's Eligible): said, and read only when asked
    honor = run_setting("honor_eligible", base_cfg.option_dict, sysobj)
    later = np.zeros(len(submit), dtype=bool)
    if "eligible_time" in workload.jobs.columns:
        later = workload.jobs["eligible_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan) > submit
    n_later = int(later.sum())
    if (k := int((later & reported).sum())) and not honor:
        warns.append(f"{k:,} of the reported window's {int(reported.sum()):,} jobs became eligible after their submit in "
                     "the log (its eligible time: a begin time, a hold, a dependency): the twin queues them from their "
                     "submit; honor_eligible = true in the system file makes it queue them from then (a recorded field "
                     "that may carry the schedule: a dependency's eligibility is another job's end)")
    # the requested limits (a user's request, not recorded state) let the estimator tell a job
    # held for a reason of its own from one waiting for nodes (core.availability.held_from)
    reference_est = reference.assign(time_limit=limits)
    hold_groups = log_hold_groups(reference_est, pools)  # the log's own holds: what no machine model reproduces
    est = _machine_estimates(sysobj, pools, reference, reference_est, nodes, fit, span0, end_all, max_limit, (t0, t1))
    blind_down, blind_median, idle_fit, informed = est["blind_down"], est["blind_median"], est["idle_fit"], est["informed"]
    sys_blind, sys_informed, site_cal = est["sys_blind"], est["sys_informed"], est["site_cal"]
    informed_cal = informed.calendar
    unit = "node slots" if time_shared else "nodes"
    slots_rule = (f"in each block whose recorded busy count (of the jobs that fit the machine) exceeds the machine's "
                  f"{nodes:,} {unit}, the time-weighted {_avail.TIME_SHARED_QUANTILE:g} quantile of that count is the "
                  "block's node slots (time sharing, or a machine larger than its header says); the twin's pool is "
                  "the largest block's") if not sysobj.partitions else (
        "per partition, in each block whose recorded busy count of the partition's jobs (those that fit it) exceeds "
        f"its nodes, the time-weighted {_avail.TIME_SHARED_QUANTILE:g} quantile of that count is the block's node slots; "
        "each partition's pool is its largest block's")
    pert = Perturbation(runtime_sigma=NOISE_SIGMA)

    # -- blind ------------------------------------------------------------------------------------
    t = time.perf_counter()
    blind_jobs = _run(base_cfg, blind_wl, sys_blind)
    mode("blind", blind_jobs, f"whole trace rescheduled from its first submit with {blind_down} node(s) out of "
         "service throughout (fitted on the fitting window); the twin's input holds no recorded start, end or placement")
    if noise_seeds:
        modes["blind"]["noise_floor"] = _noise_floor(
            (blind_jobs, None),
            lambda s: (_run(dataclasses.replace(base_cfg, seed=s, perturbation=pert), blind_wl, sys_blind), None),
            noise_seeds, t0, t1, nodes, ran_index)
    timing["blind_s"] = time.perf_counter() - t

    # -- informed ---------------------------------------------------------------------------------
    t = time.perf_counter()
    inf_jobs = _run(base_cfg, blind_wl, sys_informed)
    mode("informed", inf_jobs, (
        "as blind, on the availability calendar of the system file (known machine state: nothing estimated)"
        if site_cal else
        "as blind, on a machine whose node availability calendar is inferred from the recorded busy-node and "
        f"queued-job counts (blocks of {_avail.BLOCK_S / 3600:g} h: in a block where jobs were queued at most of its "
        "5-min samples, "
        f"{idle_fit['share']:.2f} of the nodes never busy in it taken as down, that share fitted on the fitting "
        f"window's queue; {slots_rule}"
        + (f": up to {informed.slots:,} slots, adding {share_text(informed.added_ratio)} of the machine's "
           "node-time" if informed.slots > nodes else ": no such block") + "; core/availability.py)"))
    if noise_seeds:
        modes["informed"]["noise_floor"] = _noise_floor(
            (inf_jobs, None),
            lambda s: (_run(dataclasses.replace(base_cfg, seed=s, perturbation=pert), blind_wl, sys_informed), None),
            noise_seeds, t0, t1, nodes, ran_index)
    timing["informed_s"] = time.perf_counter() - t

    # -- restart ----------------------------------------------------------------------------------
    if period is not None:
        t = time.perf_counter()
        trace_jobs = reference[["trace_index", "submit_time", "nodes"]]  # the trace's, in its pools' node types
        rjobs, rbusy = restarted = _restart_jobs(base_cfg, workload, sys_informed, t0, t1, period, trace_jobs)
        mode("restart", rjobs, f"re-seeded from the recorded state every {duration_text(period)}{'' if period % 60 else f' ({period:,} s)'} over the reported window, on the "
             "informed machine; each job judged in the run of the period it was submitted in, run on (with the later "
             "submissions) until every job of the period has left the queue; busy nodes over each period from "
             "that period's run", busy=rbusy, period_s=period)
        if noise_seeds:
            modes["restart"]["noise_floor"] = _noise_floor(
                restarted, lambda s: _restart_jobs(dataclasses.replace(base_cfg, seed=s, perturbation=pert), workload,
                                               sys_informed, t0, t1, period, trace_jobs), noise_seeds, t0, t1, nodes,
                ran_index)
        timing["restart_s"] = time.perf_counter() - t

    # -- holds given (diagnostic) ----------------------------------------------------------------
    if holds:
        t = time.perf_counter()
        held_wl = holds_workload(blind_wl, reference, hold_groups)
        hcfg = dataclasses.replace(base_cfg, options=tuple(sorted({**base_cfg.option_dict, "honor_eligible": True}.items())))
        mode("holds", _run(hcfg, held_wl, sys_blind), (
            "diagnostic: as blind, with each job the log held for a reason of its own queued only from its recorded "
            "start (honor_eligible): how close the machine and queue model is once the holds are known; the held "
            "jobs are inputs here, the not-held jobs' figures are the test"))
        timing["holds_s"] = time.perf_counter() - t

    # -- policy sensitivity (blind twin) ----------------------------------------------------------
    table = []
    if sensitivity:
        t = time.perf_counter()
        plain = not base_cfg.options
        for p in _sensitivity_policies(workload):
            for b in BUILTIN_BACKFILLS:
                if plain and (p, b) == (policy, backfill):
                    fig = {k: v for k, v in modes["blind"].items() if k in FIGURES}
                else:
                    j = _run(dataclasses.replace(base_cfg, policy=p, backfill=b, options=()), blind_wl, sys_blind)
                    fig = {k: v for k, v in compare(reference, twin_schedule(j), t0, t1, nodes).items()
                           if k in FIGURES}
                table.append({"policy": p, "backfill": b, "site": plain and (p, b) == (policy, backfill), **fig})
        if not plain or (policy, backfill) not in {(r["policy"], r["backfill"]) for r in table}:
            table.append({"policy": policy, "backfill": backfill, "site": True,
                          **{k: v for k, v in modes["blind"].items() if k in FIGURES}})
        timing["sensitivity_s"] = time.perf_counter() - t
    stability = None
    if windows:
        from .ranking_stability import ranking_stability

        t = time.perf_counter()
        stability = ranking_stability(base_cfg, workload, sys_blind, sys_informed, _sensitivity_policies(workload),
                                      windows=windows, seeds=rank_seeds, noise_sigma=NOISE_SIGMA,
                                      window_s=parse_human_duration(rank_window, "rank_window"))
        timing["ranking_stability_s"] = time.perf_counter() - t
        if stability.get("skipped"):
            warns.append(f"ranking stability not studied: {stability['skipped']}")
    best = None
    if table:
        best = closest_row(table)

    # the blind workload keeps exactly the cancel times as recorded ends (blind_workload)
    n_cancel = int(blind_wl.jobs["recorded_end_time"].notna().sum()) if sysobj.queue_cancelled else 0
    twin_fields = _TWIN_FIELDS_BLIND + ([f"the cancel time of the {n_cancel:,} jobs cancelled while queued (submit + "
                                         "the recorded wait of a job that never ran: its user's action, not a start)"]
                                        if sysobj.queue_cancelled else []) + (
        [f"eligible_time (the log's own, e.g. Slurm's Eligible: {n_later:,} jobs became eligible after their submit; "
         "honor_eligible is on)"] if honor and n_later else []) + (
        ["partition (the node pool each job runs in: core/partitions.py)"] if sysobj.partitions else [])
    result = {
        "schema_version": SCHEMA_VERSION,
        "trace": Path(workload.source).name,
        "checksum": workload.checksum,
        "provenance": workload.provenance or "",
        "system": {"name": sysobj.name, "nodes": nominal, "cores_per_node": sysobj.cores_per_node,
                   "derived": _system_origin(sysobj),
                   **({"time_shared_slots": nodes,
                       "time_shared_note": (f"the site ran jobs time-shared: every mode runs on {nodes} node slots, "
                                            f"the time-weighted quantile {_avail.TIME_SHARED_QUANTILE} of the "
                                            "fitting window's recorded busy-node count (core/availability.py)")}
                      if time_shared else {}),
                   **({"partitions": sysobj.partitions_summary()} if sysobj.partitions else {})},
        "policy": policy, "backfill": backfill, "options": base_cfg.option_dict, "kill": kill,
        "queue_cancelled": sysobj.queue_cancelled,
        **({"queue_cancelled_jobs": n_cancel} if sysobj.queue_cancelled else {}),
        "site": ({"from": f"{Path(sysobj.path).name} [site]", "class_field": site["class_field"],
                  "source": site["source"]} if site else
                 {"from": "given" if policy_given else "default (no [site] table)"}),
        "windows": {"trace_submit_span": [span0, span1], "fitting": list(fit), "reported": [t0, t1],
                    "epoch_unix": int(workload.epoch),
                    "epoch_utc": utc_text(workload.epoch, 0) if workload.epoch else None},
        "warnings": list(workload.warnings) + warns,
        "archive_cleaning": {**cleaning, "note": CLEANING_NOTE},
        "calibration": {
            "calendar_source": est["calendar_source"],
            "kill_grace_s": grace,
            "kill_grace_note": (f"quantile {KILL_GRACE_QUANTILE} of the fitting window's overruns, rounded up to "
                                "minutes (or the system file's kill_grace_s)"),
            "block_s": _avail.BLOCK_S,
            "blind_nodes_down": blind_down,
            "blind_nodes_down_median": blind_median,
            "blind_note": ("median over the fitting window's blocks of the nodes inferred down, clipped so that the "
                           "trace's largest job (of those the machine fits) fits"),
            "informed_idle_share": idle_fit["share"],
            "informed_idle_share_fit": {k: v for k, v in idle_fit.items() if k != "share"},
            "informed_note": ("in each block where jobs were queued at most of its 5-min samples, informed_idle_share of the "
                              "nodes never busy in it are down; the share is the fitting window's queue-evidence "
                              "nodes down over its idle nodes, in the same kind of blocks (1 without evidence)"),
            "informed_periods": informed.down_periods,
            "informed_calendar": [list(x) for x in informed_cal],
            "informed_calendar_note": ("the informed machine's availability periods [start, end, nodes_down] (s from "
                                       "the trace epoch, on the twin's node slots)" + (
                                           "; on a partitioned machine [start, end, nodes_down, partition]"
                                           if est["partitions"] else "")),
            "informed_down_node_frac": informed.down_frac,
            "informed_slots": informed.slots,
            "informed_added_node_time_ratio": informed.added_ratio,
            "informed_slots_note": "not inferred: the system file gives the machine's calendar" if site_cal else slots_rule,
            "informed_added_note": (f"the node-time added above the machine over {unit} x the span (above 1 when "
                                    "the machine held more than twice as much on average)"),
            **({"partitions": est["partitions"],
                "partitions_note": ("the machine is partitioned (core/partitions.py): each partition is a node pool "
                                    "scheduled on its own, and each constant above is estimated per partition from "
                                    "its own jobs and nodes (blind nodes down, idle share, informed calendar and "
                                    "slots; the figures above are their sums, the share the ratio of the summed "
                                    "node-blocks); informed_calendar's periods name their partition")}
               if est["partitions"] else {}),
        },
        "fields_read": {
            "reference": _REFERENCE_FIELDS,
            "blind": {"twin_input": twin_fields,
                      "calibration": ("the fitting window's queue listing (recorded_start_time, run_time, nodes, "
                                      "time_limit of the jobs submitted in it, censored at its end) only")},
            "informed": {"twin_input": twin_fields,
                         "calibration": ("reported window: the recorded busy-node and queued-job counts over time "
                                         "only (aggregates of recorded_start_time, run_time, nodes; no per-job "
                                         "start or wait); fitting window: its queue listing, for the one share")},
            **({"holds": {"twin_input": twin_fields + ["recorded_start_time of the jobs the log held for a reason of "
                                                        "their own (as their eligible time)"],
                          "calibration": "as blind"}} if holds else {}),
            **({"restart": {"twin_input": twin_fields + ["recorded_start_time and run_time of the jobs "
                                                               "running or queued at each restart point",
                                                               *(["node_ids (placement of those running)"]
                                                                 if "node_ids" in workload.jobs.columns
                                                                 and workload.jobs["node_ids"].notna().any() else [])]}}
               if period is not None else {}),
        },
        "modes": modes,
        "log_holds": {"note": LOG_HOLD_NOTE, "key": "modes[m]['wait_by_log_hold']",
                      "overtaken_by": hold_basis(limits[reported]) + (
                          ", in its own partition (a later job of another node pool did not overtake it)"
                          if sysobj.partitions else ""),
                      "figures": {k: {"unit": u, "definition": d} for k, (u, d) in SPLIT_FIGURES.items()}},
        "sensitivity": table,
        "best_matching_policy": best,
        "ranking_stability": stability,
        "figures": {k: {"unit": u, "definition": d} for k, (u, d) in FIGURES.items()},
        "timing_s": {k: round(v, 3) for k, v in {**timing, "total_s": time.perf_counter() - t_wall}.items()},
    }
    if out is not None:
        write_validation(result, out)
    return result


def write_validation(result: dict, out: str | Path) -> Path:
    """Write ``validation.json`` and ``validation.html`` into ``out`` (created). Returns the folder."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    atomic_write(d / "validation.json", lambda p: Path(p).write_text(to_json(result)))
    atomic_write(d / "validation.html", lambda p: Path(p).write_text(validation_html(result)))
    return d


_SHOWN = ("jobs_compared", "wait_mean_rel_error", "wait_p95_rel_error", "bsld_mean_rel_error",
          "start_error_median_s", "start_error_mae_s", "start_within_1h_frac", "start_within_1min_frac",
          "wait_ks", "wait_w1_s", "occupancy_corr_hourly", "occupancy_rmse_frac")


def _fmt(k: str, v, unit: bool = True) -> str:
    """Figure ``k``'s value ``v`` for the page: a relative error or a share in %, a time in h (with
    the unit, or without it (``unit=False``) in a table cell whose :data:`FIGURE_LABELS` header
    names it); ``–`` when undefined."""
    if v is None:
        return "–"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "–"
    pct, hours = (" %", " h") if unit else ("", "")
    if k.endswith("_rel_error"):  # one decimal below 100 %, none from there (+2,193 %, not +2192.6 %)
        text = format_number(v * 100, decimals=1 if abs(v * 100) < 99.95 else 0)
        return ("+" if v > 0 and text.strip("0.") else "") + text + pct
    if k.endswith("_frac"):
        return f"{v * 100:.1f}{pct}"
    if k.endswith("_s"):
        return f"{v / 3600:,.2f}{hours}"
    if k == "jobs_compared":  # a count (a noise floor gives the mean over its seeds)
        return f"{v:,.0f}" if v == int(v) else f"{v:,.1f}"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _meaning_html(result: dict) -> str:
    """validation.html's "What the figures mean": each figure of the main table with its definition
    (core.fidelity.FIGURES, also the column headers' hover text) and what the validated policy and
    backfill variant do (:meth:`core.registry.Registry.summary` of their registered classes)."""
    from twinsweep.core.backfill.base import BACKFILLS
    from twinsweep.core.policies.base import POLICIES

    e = html.escape
    rows = "".join(f"<tr><td style='text-align:left'>{e(FIGURE_LABELS[k])}</td><td style='text-align:left'>"
                   f"{e(FIGURES[k][1])}</td><td style='text-align:left'><code>{e(k)}</code></td></tr>" for k in _SHOWN)
    what = "".join(f"<li><b>{e(kind)} {e(name)}</b>: {e(reg.summary(name))}</li>"
                   for kind, name, reg in (("policy", result["policy"], POLICIES),
                                           ("backfill", result["backfill"], BACKFILLS)))
    return (f"<h2>What the figures mean</h2><table><tr><th>figure</th><th>definition</th><th>key in "
            f"validation.json</th></tr>{rows}</table><h2>The scheduler validated</h2><ul>{what}</ul>")


def _slots(system: dict) -> str:
    """", time-shared: the twin ran on N node slots" for a time-shared machine, ", in partitions:
    …" for a partitioned one, else ""."""
    n = system.get("time_shared_slots")
    parts = system.get("partitions")
    return ((f", time-shared: the twin ran on {n:,} node slots fitted on the fitting window" if n else "")
            + (", in partitions each scheduled on its own: " + ", ".join(
                f"{p['name']} {p['nodes']:,} nodes x {p['cores_per_node']} core{'' if p['cores_per_node'] == 1 else 's'}"
                for p in parts) if parts else ""))


#: What ``wait_by_log_hold`` splits (validation.json ``log_holds``, validation.html).
LOG_HOLD_NOTE = ("A job is 'held in the log' when a job submitted after it, asking for at least its nodes and its "
                 "time limit, started before it (core.availability.held_from): under the site's queue order it "
                 "waited, at least from then on, for a reason of its own (a user or system hold, a dependency, a "
                 "per-user or per-queue limit, a class or fair-share order), not for nodes. A twin of the machine "
                 "and its queue policy is not expected to reproduce those waits; the other jobs' waits are what "
                 "it models. The split reads the log's queue listing (which job started when) for the reference "
                 "side only; no twin input changes.")
_HOLD_LABELS = {HELD: "held in the log", NOT_HELD: "not held (waited for nodes)"}
_SPLIT_LABELS = {"jobs": "jobs", "ref_wait_share": "share of the log's wait [%]", "wait_mean_ref_s": "mean log wait [h]",
                 "wait_mean_twin_s": "mean twin wait [h]", "wait_mean_rel_error": "mean wait error [%]",
                 "wait_p95_rel_error": "p95 wait error [%]"}


def hold_basis(limits: np.ndarray) -> str:
    """What a later job must ask for to show an earlier one held (:data:`LOG_HOLD_NOTE`), given the
    reported window's requested limits (s; <= 0 or NaN: none): ``held_from`` compares unknown
    limits as equal, so a log without limits compares nodes alone."""
    known = limits > 0
    if known.all():
        return "at least its nodes and its time limit"
    if not known.any():
        return "at least its nodes (the log gives no time limit, so nodes alone are compared)"
    return "at least its nodes and, where the log gives both, its time limit"


def _fmt_split(k: str, v) -> str:
    if v is None:
        return "–"
    if k == "jobs":
        return f"{int(v):,}"
    if k == "ref_wait_share":
        return f"{100 * v:.0f}"
    if k.endswith("_s"):
        return f"{v / 3600:.2f}"
    return f"{100 * v:+.0f}"


def _closest_text(best: dict) -> str:
    """The page's line on the variant closest to the log; when others give the very same figures,
    that no variant is closer (every one tied) or which ones tie with it."""
    e = html.escape
    tied = best.get("tied_with") or []
    name = f"{best['policy']} + {best['backfill']}"
    if not tied:
        return f"<p>Closest to the log: {e(name)} ({e(best['by'])})</p>"
    return (f"<p>No variant is closest to the log: {e(name)} and {len(tied)} other"
            f"{'' if len(tied) == 1 else 's'} ({e(', '.join(tied))}) give the same mean, p95 wait and bounded "
            "slowdown errors and hourly correlation: the figures do not tell them apart.</p>")


def _cleaning_section(ac: dict) -> str:
    """The page's section on what the archive's cleaning removed (validation.json
    ``archive_cleaning``), by window; empty for a log that is not a cleaned one."""
    if not ac.get("cleaned"):  # only a cleaned log's missing numbers are placed (cleaning_summary)
        return ""
    e = html.escape

    def where(part: dict, name: str) -> str:
        n, kept, sh = part.get("removed_in_window"), part.get("kept_in_window", 0), part.get("removed_share_in_window")
        if n is None:
            return f"{name}: not placed (the job ids are not the SWF counter)"
        if n == 0:
            return f"{name}: none of them was submitted in it"
        return (f"{name}: about {n:,} of them were submitted in it, beside the {kept:,} jobs of the log: "
                f"{share_text(sh)} of the jobs the machine received then, by count (their sizes are not in the log)")

    flist = "".join(f"<li>{e(f['expression'])}: {f['jobs_removed']:,} jobs</li>" for f in ac.get("filters", []))
    places = [where(ac, "Reported window")] + ([where(ac["fitting"], "Fitting window")] if ac.get("fitting") else [])
    if ac.get("removed_basis"):  # how the count was bounded: by the header's totals, or by the numbering alone
        places.append(ac["removed_basis"].rstrip("."))
    note = ac.get("note", "")
    return (f"<h2>What the archive removed</h2><p>The archive's filters (expressions as in the header):</p>"
            f"<ul>{flist}</ul><ul>" + "".join(f"<li>{e(x)}.</li>" for x in places) + "</ul>"
            f"<p>{e(note[:1].upper() + note[1:])}.</p>")


def validation_html(result: dict) -> str:
    """A short self-contained HTML page of a validation: figures by mode with their noise floor,
    exclusions, the policy-sensitivity table and what was read."""
    e = html.escape
    head = "".join(f"<th title='{e(k)}: {e(FIGURES[k][1])}'>{e(FIGURE_LABELS[k])}</th>" for k in _SHOWN)
    rows = []
    for m, fig in result["modes"].items():
        label = f"{m} (diagnostic, not a test)" if m == "holds" else m
        rows.append(f"<tr><th>{e(label)}</th>" + "".join(f"<td>{e(_fmt(k, fig.get(k), unit=False))}</td>" for k in _SHOWN) + "</tr>")
        nf = fig.get("noise_floor")
        if nf:
            # jobs_compared of a noise floor is a mean over seeds: shown as a whole number of jobs
            nfv = {k: (round(v) if k == "jobs_compared" and v is not None else v) for k, v in nf.items()}
            rows.append(f"<tr class='nf'><td title='the twin against itself with run times perturbed by "
                        f"{nf['runtime_sigma']:.0%} log-normal noise: the mean over the seeds, then the worst seed'>"
                        f"{e(m)} noise floor ({nf['seeds']} seed{'' if nf['seeds'] == 1 else 's'}, σ={nf['runtime_sigma']})"
                        f"{': mean; worst' if nf['seeds'] > 1 else ''}</td>"
                        + "".join(f"<td>{e(_fmt(k, nfv.get(k), unit=False))}"
                                  + (f"; {e(_fmt(k, nfv.get(k + '_worst'), unit=False))}"
                                     if k + "_worst" in nfv and nf["seeds"] > 1 else "")
                                  + "</td>" for k in _SHOWN) + "</tr>")
    modes_desc = "".join(f"<li><b>{e(m)}</b>: {e(fig.get('description', ''))}</li>" for m, fig in result["modes"].items())
    cal = result.get("calibration") or {}
    consts = [("kill grace", f"{cal['kill_grace_s']:,} s ({cal.get('kill_grace_note', '')})" if "kill_grace_s" in cal else None),
              ("blind: nodes out of service", f"{cal['blind_nodes_down']:,} ({cal.get('blind_note', '')})"
               if "blind_nodes_down" in cal else None),
              ("informed: share of idle nodes taken as down", f"{cal['informed_idle_share']:.2f} ({cal.get('informed_note', '')})"
               if cal.get("informed_idle_share") is not None else None),
              ("informed: node-time inferred down", f"{share_text(cal['informed_down_node_frac'])} in "
               f"{cal.get('informed_periods', 0):,} periods" if cal.get("informed_down_node_frac") is not None else None),
              ("informed: node slots above the machine", f"up to {cal['informed_slots']:,}, adding "
               f"{share_text(cal.get('informed_added_node_time_ratio', 0.0))} of the machine's node-time "
               f"({cal.get('informed_slots_note', '')})"
               if cal.get("informed_slots", 0) > (result["system"].get("time_shared_slots") or result["system"]["nodes"])
               else None),
              ("calendar source", cal.get("calendar_source")),
              ("partitions", "; ".join(
                  f"{p['name']}: {p['nodes']:,} nodes, {p['jobs']:,} jobs in the trace, blind {p['blind_nodes_down']:,} "
                  f"node(s) down, informed idle share {share_text(p['informed_idle_share'])}, "
                  f"{share_text(p['informed_down_node_frac'])} "
                  f"of its node-time down, {p['informed_slots']:,} node slots"
                  + (f", calendar from the system file" if p.get("calendar_source") == "system file" else "")
                  for p in cal["partitions"]) + f" ({cal.get('partitions_note', '')})"
               if cal.get("partitions") else None)]
    consts_html = "".join(f"<li>{e(k)}: {e(str(v))}</li>" for k, v in consts if v is not None)
    def _read(v) -> str:  # fields_read: {mode: {"twin_input": [...], "calibration": "..."}} or a list
        if isinstance(v, dict):
            return "; ".join(f"{e(k.replace('_', ' '))}: {_read(x)}" for k, x in v.items())
        return e(", ".join(v)) if isinstance(v, (list, tuple)) else e(str(v))

    read = "".join(f"<li><b>{e(m)}</b>: {_read(v)}</li>" for m, v in result["fields_read"].items())
    warn = ("<h2>Warnings</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in result["warnings"]) + "</ul>"
            if result.get("warnings") else "")
    cleaned = _cleaning_section(result.get("archive_cleaning") or {})
    split = ""
    if any(fig.get("wait_by_log_hold") for fig in result["modes"].values()):
        cols = ("jobs", "ref_wait_share", "wait_mean_ref_s", "wait_mean_twin_s", "wait_mean_rel_error",
                "wait_p95_rel_error")
        shead = "".join(f"<th title='{e(SPLIT_FIGURES[k][1])}'>{e(_SPLIT_LABELS[k])}</th>" for k in cols)
        srows = "".join(
            f"<tr><th>{e(m)}: {e(_HOLD_LABELS.get(g, g))}</th>" + "".join(f"<td>{e(_fmt_split(k, f.get(k)))}</td>" for k in cols)
            + "</tr>" for m, fig in result["modes"].items() for g, f in (fig.get("wait_by_log_hold") or {}).items())
        basis = (result.get("log_holds") or {}).get("overtaken_by")
        split = (f"<h2>Where the wait error lives: jobs the log held, and the others</h2><p>{e(LOG_HOLD_NOTE)}</p>"
                 + (f"<p>In this log a job counts as overtaken by a later job asking for {e(basis)}.</p>" if basis else "")
                 + f"<table><tr><th>mode: group</th>{shead}</tr>{srows}</table>")
    excl = "".join(f"<li><b>{e(m)}</b>: " + ", ".join(f"{e(r)}: {n:,}" for r, n in fig.get("exclusions", {}).items())
                   + "</li>" for m, fig in result["modes"].items())
    sens = ""
    if result.get("sensitivity"):
        srows = "".join(
            f"<tr{' class=site' if r['site'] else ''}><th>{e(r['policy'])} + {e(r['backfill'])}</th>"
            + "".join(f"<td>{e(_fmt(k, r.get(k), unit=False))}</td>" for k in _SHOWN) + "</tr>" for r in result["sensitivity"])
        sens = (f"<h2>Policy sensitivity (blind twin)</h2><table><tr><th></th>{head}</tr>{srows}</table>"
                + (_closest_text(best) if (best := result.get("best_matching_policy")) else ""))
    rs = result.get("ranking_stability")
    if rs and rs.get("kendall_tau_min_blind_vs_informed") is None and rs.get("skipped"):
        sens += f"<h2>Ranking stability</h2><p>Not studied: {e(rs['skipped'])}.</p>"
    elif rs:
        from .ranking_stability import TAU_GOAL, minimum_text

        nw = rs['windows']
        sens += (f"<h2>Ranking stability ({nw} busiest week{'' if nw == 1 else 's'}, {len(rs['variants'])} variants)</h2>"
                 f"<p>Kendall τ blind vs informed (min, rounded down as the console and the tables print it): "
                 f"{e(minimum_text(rs['kendall_tau_min_blind_vs_informed']))} "
                 f"(issue 15's goal: ≥ {TAU_GOAL:g} on every week; 1 = the same order); "
                 f"informed vs {rs['seeds']} perturbed seed{'' if rs['seeds'] == 1 else 's'} of the ranking study's own "
                 f"(not the noise floor's) (min): {e(minimum_text(rs['kendall_tau_min_seeds']))}; "
                 f"top-3 set the same (share of week × metric pairs): {e(_fmt('_frac', rs['top3_same_frac']))}; "
                 f"winner ahead by more than the "
                 f"seed spread: {e(_fmt('_frac', rs['top1_gap_exceeds_seed_spread_frac']))}. Values within "
                 f"{rs.get('tie_rel_tol', 0) * 100:g} % of each other tie; window × metric pairs in which every "
                 f"variant ties under both machines (no ranking, left out): {rs.get('unranked_window_metrics', 0)}"
                 f"{'. ' + e(rs['skipped']) if rs.get('skipped') else ''}.</p>")
    w = result["windows"]
    has_floor = any((fig or {}).get("noise_floor") for fig in (result.get("modes") or {}).values())
    noise_note = (f"The grey noise-floor rows compare the twin with itself under {NOISE_SIGMA * 100:g} % run-time "
                  "noise (the mean over the seeds, then the worst seed): a difference from the log below them means "
                  "nothing." if has_floor else
                  "No noise floor was computed (noise seeds 0): nothing here says how far the twin moves from itself "
                  "under run-time noise, so a small difference from the log may be noise.")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>twinsweep validate: {e(result['trace'])}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:3px 6px;text-align:right}}tr.nf{{color:#777}}tr.site{{background:#eef}}</style></head><body>
<h1>How close is the twin to the recorded schedule? {e(result['trace'])}</h1>
<p>System {e(result['system']['name'])} ({result['system']['nodes']:,} nodes{_slots(result['system'])}{'; ' + e(result['system']['derived']) if result['system'].get('derived') else ''}); scheduler {e(result['policy'])} +
{e(result['backfill'])}{'' if (result.get('site') or {}).get('from', '').endswith('[site]') else ' (' + e((result.get('site') or {}).get('from', '')) + ')'}; reported window {window_text(w['reported'], w['fitting'])}, fitting window {window_text(w['fitting'], w['reported'])} (from the trace epoch{', ' + e(w['epoch_utc']) if w.get('epoch_utc') else ''}).
Relative errors are (twin − log) / log. {noise_note}</p>
<table><tr><th>mode</th>{head}</tr>{''.join(rows)}</table>
<h2>Modes</h2><ul>{modes_desc}</ul><h2>Fitted constants (on the fitting window)</h2><ul>{consts_html}</ul>{split}
<h2>Jobs left out</h2><ul>{excl}</ul>{cleaned}{sens}{warn}
<h2>Recorded fields read</h2><ul>{read}</ul>
{_meaning_html(result)}
<h2>Data</h2><p>{e(result['trace'])} ({e(result.get('checksum', ''))}): {e(result.get('provenance') or 'no provenance recorded by the loader')}</p>
</body></html>
"""
