"""The public API of one twin run: :func:`simulate` returns the tables, :func:`write_run` the files.

A notebook calls these exactly as ``twinsweep run`` does::

    from twinsweep.core import RunConfig, simulate, write_run
    res = simulate(RunConfig(data="pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", policy="fcfs", backfill="easy"))
    res.jobs, res.timeline, res.stats
"""

from __future__ import annotations

import dataclasses
import itertools
import datetime as _dt
import json
import os
import platform
import time
import warnings as _pywarnings  # simulate() has a local list named warnings
import weakref
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from twinsweep import __version__
from .config import RunConfig, run_key
from .engine import Engine, select_window
from .accounts import Accounts, account_names, accounts_of_run, load_accounts
from .atomic import atomic_write, atomic_write_files, bytes_writer, foreign_folder
from .availability import busy_and_queued, over_capacity
from .errors import ConfigError, RunWarning, let_through
from .partitions import (pool_job_node_power_w, pool_rows, pool_traces_node_power, run_partitioned, run_warnings,
                         serves_warnings, with_pool_nodes)
from .perturb import perturb
from .plugin_code import plugins_manifest
from .power import account_power, build_timeline, idle_node_power_w
from .scheduler import validate_scheduler
from .stats import compute_stats
from .system import System, header_mismatch, named_system, resolve_system, run_setting, system_from_swf_header
from .tracespan import trace_span
from .workload import Workload

#: Largest timeline a run may build (bins): a guard against a mistyped duration (e.g. 9999999d) and
#: a trace whose times run away (a submit or run time of decades). A timeline row holds 8 float64
#: columns (14 with cooling) and binning needs about as much again in temporaries, so 10^7 bins
#: cost ~1-2 GB; that is 115 days at a 1 s sample period, 19 years at 60 s.
MAX_TIMELINE_BINS = 10_000_000

#: Output file names of a run directory (DESIGN.md §5).
RUN_FILES = ("jobs.parquet", "timeline.parquet", "stats.json", "manifest.json")

#: ``manifest.json["schema_version"]`` of the outputs this version writes. 2: jobs.parquet's
#: ``start_time``/``end_time`` are the simulated times, ``recorded_*`` the trace's. A sweep treats a
#: run directory with an older schema as missing (it is moved aside and run again).
MANIFEST_SCHEMA_VERSION = 2


@dataclasses.dataclass
class RunResult:
    """Tables of one run: ``jobs`` (one row per job of the window, trace order), ``timeline``
    (one row per sample period), ``stats`` (dict, see docs/architecture.md), ``manifest`` (dict:
    config, system, window, hashes, versions) and ``wall_time_s`` (not part of the identity)."""

    jobs: pd.DataFrame
    timeline: pd.DataFrame
    stats: dict
    manifest: dict
    wall_time_s: float = 0.0
    #: one-line warnings about the run's input (the trace's own, :attr:`Workload.warnings`, and a
    #: window past the trace's last submission, :mod:`core.tracespan`); ``twinsweep run`` prints them.
    warnings: list = dataclasses.field(default_factory=list)


def _check_timeline_size(jobs: pd.DataFrame, t0: int, sample_period: int, source: str, full_run: bool,
                         ends=None) -> None:
    """Refuse a run whose timeline would exceed :data:`MAX_TIMELINE_BINS` *before* it is allocated.

    ``jobs``: the window's jobs (Workload columns); the timeline of an open window reaches at least
    each job's submit time and, when it ran, its submit time plus its run time (``full_run``: the
    recorded run time; else the run time is not used, as a kill may cut it), or the given ``ends``
    (s, NaN = none: the simulated ends). Raises ConfigError naming the job that reaches furthest
    (id, 1-based trace position, time), the span (s and days), the sample period and the bins.
    """
    reach = jobs["submit_time"].to_numpy(dtype="float64")
    if ends is not None:
        reach = np.fmax(reach, ends)
    elif full_run:
        reach = reach + np.nan_to_num(jobs["run_time"].astype("float64").to_numpy(), nan=0.0)
    if not len(reach):
        return
    k = int(np.argmax(reach))
    span = float(reach[k]) - t0
    bins = span // sample_period
    if bins <= MAX_TIMELINE_BINS:
        return
    row = jobs.iloc[k]
    raise ConfigError(
        f"{source}: job {row['job_id']} (trace position {int(row['trace_index']) + 1}) reaches t = {int(reach[k])} s, "
        f"so the run spans {int(span)} s ({span / 86400:,.0f} days) from t = {t0} s: {int(bins):,} timeline bins of "
        f"{sample_period} s (limit {MAX_TIMELINE_BINS:,}); check that job's times in the trace, or choose a "
        "window (--start/--duration) or a longer --sample-period")


def load_run_inputs(config: RunConfig, system: System | None = None) -> tuple[Workload, System]:
    """The run's trace and system, ``(workload, system)``, the trace loaded once.

    The system is resolved first where that needs no trace content (``system`` given,
    ``config.system``, or the named system listing the trace's file name), so that its
    ``timezone`` is known when the trace is read (:func:`core.loaders.load_workload`: the zone of
    local times is ``config.tz``, else the file's own, else the system file's, else
    ``$TWINSWEEP_TZ``); only a generic system is built from the loaded trace's header.
    Relative trace paths resolve against the data directory. A system its file name chose whose
    size the trace header contradicts, and a header's machine far larger than the log asks for,
    are said in the workload's warnings (:func:`trace_system_warnings`). Raises as :func:`resolve_system` and
    :func:`core.loaders.load_workload` do.
    """
    from .data import resolve_data_path
    from .loaders import load_workload

    path = resolve_data_path(config.data)
    named = system if system is not None else named_system(config.system, path)
    wl = load_workload(path, format=config.format, lenient=config.lenient, tz=config.tz,
                       system_tz=getattr(named, "timezone", None))
    chosen_by = "its file name" if system is None and config.system is None else None
    if named is None:  # the header's machine: nothing to hold it against but the log itself
        named, chosen_by = system_from_swf_header(wl.header, wl.source, wl.procs_unit), None
    if more := trace_system_warnings(named, wl, chosen_by):
        wl = dataclasses.replace(wl, warnings=[*wl.warnings, *more])
    return wl, named


def trace_system_warnings(system: System, workload: Workload, chosen_by: str | None) -> list[str]:
    """What a trace says against the system it runs on, before any work: its header's size against
    the system's when ``chosen_by`` names how the system was chosen (``"its file name"``,
    ``"--system"``; None: not checked — :func:`core.system.header_mismatch`), and the served values
    of a partitioned system that no job of the trace has (:func:`core.partitions.serves_warnings`),
    and a machine taken from the header alone that dwarfs what the log asks for
    (:func:`_header_size_check`, which refuses one beyond belief: ConfigError). The one check
    :func:`load_run_inputs`, a sweep's datasets and ``validate`` make."""
    out = []
    if chosen_by and (m := header_mismatch(system, workload.header, workload.procs_unit, workload.source, chosen_by)):
        out.append(m)
    if getattr(system, "generic", False) and (m := _header_size_check(system, workload)):
        out.append(m)
    return out + serves_warnings(system, workload.jobs["partition"].tolist(), workload.header.get("Partition"),
                                 workload.source)


#: A machine taken from a trace's header alone is questioned when it has more than this many times
#: the nodes the log ever asks for at once (its widest job, the recorded schedule's peak): no log
#: of the data folder with a recorded schedule comes near it (generic machines from their headers:
#: KTH-SP2 to CEA-Curie, the ALCF Theta job sets).
HEADER_SIZE_FACTOR = 10
#: ... and refused above this many times (a placeholder such as MaxNodes 2147483647 would take the
#: memory of the machine running the twin): a system file (``--system``) is the way to run it anyway.
HEADER_SIZE_REFUSED = 1000


def _header_size_check(system: System, workload: Workload) -> str | None:
    """A warning when the generic machine built from ``workload``'s header (``system.generic``) has
    more than :data:`HEADER_SIZE_FACTOR` times the nodes of both the widest job and the most nodes
    the recorded schedule holds at once (:func:`core.availability.busy_and_queued` of the
    recorded starts and run times), else None; None too for a log without a recorded schedule
    (e.g. LCG-2005's grid of 24,515 processors ran serial jobs only: its size is no typo, and
    nothing says how many of them were ever busy). A header's ``MaxNodes`` / ``MaxProcs``
    can be wrong (a typo, a placeholder such as 2147483647): the twin simulates every node, so
    time and memory grow with them, and a machine that size never queues a job. Raises ConfigError
    (naming the trace, the header's size and the log's) above :data:`HEADER_SIZE_REFUSED` times."""
    wl = workload.with_nodes(system.cores_per_node)
    jobs = wl.jobs
    n = jobs["nodes"].astype("float64").to_numpy(na_value=np.nan)
    ok = n > 0
    if not ok.any():
        return None
    widest = int(n[ok].max())
    start = jobs["recorded_start_time"].astype("float64").to_numpy(na_value=np.nan)
    run = jobs["run_time"].astype("float64").to_numpy(na_value=np.nan)
    ran = ok & np.isfinite(start) & np.isfinite(run) & (run > 0)
    peak = 0
    if ran.any():
        sched = pd.DataFrame({"submit_time": jobs["submit_time"].to_numpy(dtype="int64")[ran],
                              "start_time": start[ran].astype("int64"),
                              "end_time": (start[ran] + run[ran]).astype("int64"), "nodes": n[ran].astype("int64")})
        peak = int(busy_and_queued(sched)[1].max())
    demand = max(widest, peak)
    if not peak or system.nodes <= HEADER_SIZE_FACTOR * demand:
        return None
    what = (f"{workload.source}: the machine comes from the trace's header ({system.nodes:,} nodes), "
            f"{system.nodes / demand:,.0f} times the most the log asks for (its widest job: {widest:,} node(s); "
            f"the most its recorded schedule holds at once: {peak:,})")
    if system.nodes > HEADER_SIZE_REFUSED * demand:
        raise ConfigError(f"{what}: refused, the header's MaxNodes / MaxProcs cannot be this machine's; give the "
                          "machine with --system (a system file) to run the log on it anyway")
    return (f"{what}; the twin simulates every node (time and memory grow with them) and a machine that "
            "size never queues a job: if the header's MaxNodes / MaxProcs are wrong, give the machine "
            "with --system")


def load_run_workload(config: RunConfig) -> Workload:
    """Load ``config.data`` (relative paths resolve against the data directory), read in the
    zone :func:`load_run_inputs` gives."""
    return load_run_inputs(config)[0]


#: Per-process cache of prepared windows (:func:`_prepared_window`): the runs of a sweep that share
#: a dataset, seed and window (its policy x backfill variants) prepare it once per worker. Keyed
#: by the identity of the workload, its jobs frame and the system (weak references: a freed or
#: replaced one is never matched; a workload's jobs are never changed in place, as everywhere in
#: the twin: a change assigns a new frame, and a frame edited in place anyway changes its
#: :func:`_frame_stamp`) and the config fields the preparation reads; bounded by entries and by
#: the rows held.
_WINDOWS: dict[tuple, tuple] = {}
_WINDOWS_MAX = 32
_WINDOWS_MAX_ROWS = 2_000_000


#: Columns whose sums stamp a jobs frame in the prepared-window key (:func:`_frame_stamp`).
_STAMP_COLUMNS = ("submit_time", "run_time", "time_limit", "nodes", "procs", "recorded_start_time")


def _frame_stamp(jobs) -> tuple:
    """A cheap fingerprint of a jobs frame's numbers (row count and the NaN-ignoring sums of
    :data:`_STAMP_COLUMNS`), so that a frame edited in place between two runs (against the
    house rule, e.g. ``wl.jobs.loc[..., "time_limit"] = ...`` in a notebook) misses the cache
    instead of reusing a stale preparation. Costs about 1.5 ms CPU for SDSC-SP2's 59,715 jobs
    (0.7 ms for KTH-SP2's 28,476), some 1 % of a quickstart run."""
    out = [len(jobs)]
    for c in _STAMP_COLUMNS:
        if c in jobs.columns:
            out.append(float(np.nansum(jobs[c].to_numpy(dtype="float64", na_value=np.nan))))
    return tuple(out)


def _prepared_window(config: RunConfig, workload: Workload, system: System, replay: bool, queue_cancelled: bool):
    """``(span, frame, t0, t1, node_power_w, rows)`` of a run: the trace's :func:`core.tracespan.trace_span`
    (the window checked against it), the workload in whole nodes (each job's pool's, on a
    partitioned machine) and perturbed by the config's seed, cut to its window
    (:func:`core.engine.select_window`), the jobs' node power (:func:`core.power.job_node_power_w`,
    a read-only array) and, on a partitioned machine, each pool's rows of the frame
    (:func:`core.partitions.pool_rows`; None otherwise). These depend only on the workload,
    the system and the config's perturbation, seed, window, kill and ``queue_cancelled``, so a
    process computes them once for all the runs that share them (:data:`_WINDOWS`); ``frame`` is
    shared by those runs and only read by them. Raises ConfigError as those functions do (an
    empty trace, a window outside the trace, a duration of too many timeline bins)."""
    key = (id(workload), id(workload.jobs), _frame_stamp(workload.jobs), id(system), config.perturbation, config.seed,
           config.start, config.duration, config.sample_period if config.duration is not None else None, replay,
           bool(config.kill), queue_cancelled)
    hit = _WINDOWS.get(key)
    if hit is not None and hit[0]() is workload and hit[1]() is workload.jobs and hit[2]() is system:
        return hit[3]
    wl = with_pool_nodes(workload, system)  # each job's nodes in its pool's node type (core.partitions)
    wl = perturb(wl, config.perturbation, config.seed)
    if len(wl) == 0:
        raise ConfigError(f"{workload.source}: the trace holds no job lines; nothing to simulate")
    span = trace_span(workload)  # of the trace as recorded: every seed of a window is judged alike
    span.check_window(config.start, config.duration, workload.source)
    if config.duration is not None and config.duration // config.sample_period > MAX_TIMELINE_BINS:
        raise ConfigError(
            f"duration {config.duration} s at sample_period {config.sample_period} s gives "
            f"{config.duration // config.sample_period:,} timeline bins (limit {MAX_TIMELINE_BINS:,}); "
            "choose a shorter duration or a longer --sample-period")
    frame, t0, t1 = select_window(wl.jobs, config.start, config.duration, replay, config.kill,
                                  system.default_time_limit, system.kill_grace_s, queue_cancelled=queue_cancelled)
    frame.attrs["source"] = workload.source
    # a partitioned machine: each job's pool, once per window (one error naming the values no pool serves)
    rows = (pool_rows(system, frame["partition"].tolist(), workload.header.get("Partition"), workload.source)
            if system.partitions else None)
    npow = np.asarray(pool_job_node_power_w(system, frame, rows))  # each job in its pool's node model
    npow.setflags(write=False)  # shared by the runs of this window: a write would be a bug
    value = (span, frame, t0, t1, npow, rows)
    try:
        refs = (weakref.ref(workload), weakref.ref(workload.jobs), weakref.ref(system))
    except TypeError:  # not weak-referenceable: not cached
        return value
    _WINDOWS[key] = (*refs, value)
    while len(_WINDOWS) > _WINDOWS_MAX or (
            len(_WINDOWS) > 1 and sum(len(v[3][1]) for v in _WINDOWS.values()) > _WINDOWS_MAX_ROWS):
        _WINDOWS.pop(next(iter(_WINDOWS)))
    return value


def simulate(config: RunConfig, workload: Workload | None = None, system: System | None = None,
             progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Run the twin once.

    Args:
        config: the run (policy, backfill, window, seed, …).
        workload: the loaded trace (else loaded from ``config.data``); not modified.
        system: the machine (else from ``config.system`` / the trace header).
        progress: optional ``progress(sim_time, t_end_or_-1)`` callback for long runs.
    Returns: RunResult. Raises TwinError subclasses on bad input.
    """
    t_wall = time.perf_counter()
    spec = validate_scheduler(config.policy, config.backfill, config.option_dict)  # before any work
    if config.scheduler is not None:
        from .external import check_scheduler  # the protocol loads only for external runs

        check_scheduler(config.scheduler)
    if workload is None:
        workload, system = load_run_inputs(config, system)
    if system is None:
        system = resolve_system(config.system, workload)
    replay = config.policy == "replay"
    partitioned = bool(system.partitions) and not replay  # replay follows the recorded starts machine-wide
    part_warnings = run_warnings(spec, system) if partitioned else []  # before any work
    queue_cancelled = run_setting("queue_cancelled", config.option_dict, system)
    span, frame, t0, t1, npow, rows = _prepared_window(config, workload, system, replay, queue_cancelled)
    if t1 is None:  # an open window lasts at least until its last submission / recorded end
        _check_timeline_size(frame, t0, config.sample_period, workload.source, replay or not config.kill)
    cb = None
    if progress is not None:
        seen = [t0]  # a partitioned run's pools each start at t0: report the furthest time reached

        def cb(t):
            seen[0] = max(seen[0], t)
            progress(seen[0], -1 if t1 is None else t1)
    options = config.option_dict
    accounts_manifest = None
    accounts = None
    if options.get("accounts_in") and not replay:
        # account-incentive / weighted policies: the accounts are loaded (or collected) once here
        accounts, accounts_manifest = run_accounts_input(config, workload, system, frame)
    over = replay_oversubscription(frame, system.nodes) if replay else None
    eng_frame, eng_system, eng_npow, too_big = frame, system, npow, None
    if over is not None and over["replay_oversubscribed_periods"]:
        _pywarnings.warn(
            f"{Path(workload.source).name}: the recorded schedule"
            + ("" if config.seed == 0 else f" as seed {config.seed} perturbs it (its recorded waits kept, its ends "
               "moved by the perturbed run times: jobs that followed each other in the log may overlap)")
            + f" uses more than the system's {system.nodes:,} nodes in "
            f"{over['replay_oversubscribed_periods']:,} period(s) ({over['replay_oversubscribed_s']:,} s, peak "
            f"{over['replay_recorded_peak_nodes']:,} nodes) of the window; "
            + ("replay follows the log there (option replay_oversubscribe)" if options.get("replay_oversubscribe")
               else "replay delays those starts (replay_delayed); option replay_oversubscribe follows the log"),
            ReplayOversubscribedWarning, stacklevel=2)
    if options.get("replay_oversubscribe"):  # replay only (validate_scheduler refused it above otherwise)
        if over["replay_recorded_peak_nodes"] > system.nodes:
            # the pool holds the log's peak; jobs larger than the nominal machine stay rejected
            big = frame["nodes"].astype("float64").to_numpy(na_value=np.nan) > system.nodes
            too_big = frame.loc[big]
            keep = ~big
            eng_frame = frame.loc[keep].reset_index(drop=True)
            eng_frame.attrs = frame.attrs
            eng_npow = np.asarray(npow)[keep]
            eng_system = _grown(system, over["replay_recorded_peak_nodes"])
    def engine(frame_, system_, npow_, idle_w: float) -> Engine:
        """The run's engine over ``frame_`` on ``system_`` (the machine, or one pool of it)."""
        return Engine(frame_, system_, config.policy, config.backfill, config.kill, npow_, idle_w, t0, t1,
                      options=options, progress=cb, accounts=accounts, scheduler=config.scheduler,
                      queue_cancelled=queue_cancelled, seed=config.seed)
    with _pywarnings.catch_warnings(record=True) as caught:  # RunWarnings go into the run's warnings too
        _pywarnings.simplefilter("always", RunWarning)
        if partitioned:  # disjoint node pools, each scheduled on its own (core.partitions)
            res = run_partitioned(eng_frame, system, rows, eng_npow, engine)
        else:  # (a grown replay machine keeps the system's idle node power)
            res = engine(eng_frame, eng_system, eng_npow, idle_node_power_w(system)).run()
    engine_warnings = list(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, RunWarning)))
    let_through(caught)  # every caught warning, as if it had not been recorded
    honor_eligible = run_setting("honor_eligible", options, system) and not replay
    if eng_system is not system:
        res = _nominal_view(res, system, eng_system, too_big)
    if over is not None and over["replay_oversubscribed_periods"]:
        res.counts.update(over)
    if res.t_end <= res.t_start:
        raise ConfigError(
            f"{workload.source}: nothing to simulate in the window [{res.t_start}, {res.t_end}) s "
            "(no job is submitted or running in it); check --start/--duration against the trace's span")
    if (res.t_end - res.t_start) // config.sample_period > MAX_TIMELINE_BINS:
        _check_timeline_size(res.jobs, res.t_start, config.sample_period, workload.source, True,
                             ends=res.jobs["end_time"].astype("float64").to_numpy())
        raise ConfigError(f"{workload.source}: the run spans {res.t_end - res.t_start} s from t = {res.t_start} s: "
                          f"more than {MAX_TIMELINE_BINS:,} timeline bins of {config.sample_period} s")
    # the one post-engine power step: recorded per-job power traces, where the workload has them
    jobs, steps, power_counts = account_power(  # a partitioned machine: samples through each job's pool's model
        res, system, workload.traces, node_traces=pool_traces_node_power(system, frame, rows, workload.traces)
        if rows is not None and workload.traces else None)
    timeline = build_timeline(steps, system, res.t_start, res.t_end, config.sample_period)
    cooling_manifest = None
    if config.cooling:  # cooling plant (core/cooling/): PUE, coolant temperatures, cooling power
        from .cooling import apply_cooling

        timeline, cooling_manifest, cooling_pieces = apply_cooling(
            timeline, system, steps, res.t_end, config.wetbulb, epoch=int(workload.epoch))
    counts = dict(res.counts)
    counts.update(power_counts)
    counts["lenient_skipped_lines"] = len(workload.skipped_lines)
    counts["elapsed_mismatch"] = int(workload.header.get("elapsed_mismatch", 0) or 0)
    stats = compute_stats(jobs, steps, system, res.t_start, res.t_end, counts,
                          cooling=cooling_pieces if config.cooling else None)
    stats.update(span.stats(res.t_start, t1))
    warnings = list(workload.warnings) + part_warnings
    warnings += [n for o in (spec.policy_options, spec.backfill_options) if o is not None for n in o.notes()]
    warnings += span.window_warnings(res.t_start, t1, Path(workload.source).name)
    warnings += engine_warnings
    ignored = [k for k in ("honor_eligible", "queue_cancelled") if replay and config.option_dict.get(k)]
    if ignored:
        warnings.append(f"policy 'replay' replays the recorded starts and ignores the option(s) {', '.join(ignored)}")
    if honor_eligible and "eligible_time" not in workload.jobs.columns:
        warnings.append(f"{Path(workload.source).name}: honor_eligible is on, but the trace records no eligible "
                        "time (sacct and PM100 dumps do, SWF logs do not): every job is queued at its submit time")
    manifest = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "twinsweep_version": __version__,
        "config": config.to_dict(),
        "policy": config.policy,
        "backfill": config.backfill,
        "seed": config.seed,
        "kill": bool(config.kill and not replay),
        "window": {"start": res.t_start, "end": res.t_end, "duration": res.t_end - res.t_start,
                   "open": t1 is None},
        "system": {"name": system.name, "title": system.title, "nodes": system.nodes,
                   "cores_per_node": system.cores_per_node, "power_label": system.power_label,
                   "path": Path(system.path).name if system.path else None, "sources": list(system.sources)},
        "workload": {"source": Path(workload.source).name, "format": workload.format,
                     "checksum": workload.checksum, "epoch": int(workload.epoch), "jobs": len(workload),
                     "provenance": workload.provenance,
                     **({"timezone": workload.timezone} if workload.timezone else {}),
                     **({"dump_time": int(workload.dump_time)} if workload.dump_time is not None else {})},
        "run_key": run_key(config, workload, system),
        **({"plugins": plugins} if (plugins := plugins_manifest(config, workload.format)) else {}),
        **({"accounts": accounts_manifest} if accounts_manifest is not None else {}),
        **({"cooling": cooling_manifest} if cooling_manifest is not None else {}),
        **({"warnings": warnings} if warnings else {}),
        "versions": {"python": platform.python_version(), "pandas": pd.__version__, "pyarrow": pa.__version__},
    }
    gone = [c for c in ("replay_start",) if c in jobs.columns]
    if gone:  # (a drop of no column would still copy the table)
        jobs = jobs.drop(columns=gone)
    jobs.attrs = {}  # nothing machine-specific (paths) may reach the output files
    return RunResult(jobs=jobs, timeline=timeline, stats=stats, manifest=manifest,
                     wall_time_s=time.perf_counter() - t_wall, warnings=warnings)


#: Units of the run outputs' columns (the parquet schema metadata ``twinsweep.units``, DESIGN.md §5).
#: ``"s since epoch"``: an instant, seconds since the trace epoch (``twinsweep.epoch``, Unix s, and
#: ``twinsweep.epoch_utc``); ``"s"``: a duration; ``"1"``: a plain ratio or count-free number;
#: ``"fraction"``: 0..1; ``""``: text, flags, identifiers.
COLUMN_UNITS: dict[str, str] = {
    "job_id": "", "trace_index": "", "user": "", "account": "", "partition": "", "status": "", "reason": "",
    "trace_status": "", "prepopulated": "", "time_limit_imputed": "", "node_ids": "node index (0-based)",
    "submit_time": "s since epoch", "recorded_start_time": "s since epoch", "recorded_end_time": "s since epoch",
    "start_time": "s since epoch", "end_time": "s since epoch", "eligible_time": "s since epoch",
    "run_time": "s", "time_limit": "s", "wait_time": "s", "elapsed": "s", "procs": "processors", "nodes": "nodes",
    "cpus": "cores", "gpus": "GPUs", "cpu_util": "fraction", "gpu_util": "fraction", "avg_power_w": "W",
    "node_power_w": "W", "energy_j": "J", "priority": "1",
    # timeline.parquet
    "time": "s since epoch", "it_power_w": "W", "loss_w": "W", "facility_power_w": "W", "cooling_power_w": "W",
    "cdu_pump_w": "W", "facility_pump_w": "W", "tower_fan_w": "W", "heat_rejected_w": "W",
    "busy_nodes": "nodes", "utilization": "fraction", "queued_jobs": "jobs", "running_jobs": "jobs", "pue": "1",
    "wetbulb_c": "°C",
}
_SUFFIX_UNITS = (("_time", "s since epoch"), ("_temp_c", "°C"), ("_c", "°C"), ("_w", "W"), ("_j", "J"), ("_s", "s"))


def column_unit(name: str) -> str:
    """The unit of an output column: :data:`COLUMN_UNITS`, else by its name's suffix (``_time``:
    s since epoch, ``_s``: s, ``_w``: W, ``_j``: J, ``_c``: °C), else ``""``."""
    if name in COLUMN_UNITS:
        return COLUMN_UNITS[name]
    return next((u for suf, u in _SUFFIX_UNITS if name.endswith(suf)), "")


def with_output_metadata(table: pa.Table, epoch: int) -> pa.Table:
    """``table`` with the schema metadata a reader needs (DESIGN.md §5): ``twinsweep.units`` (JSON:
    column -> unit, :func:`column_unit`), ``twinsweep.epoch`` (the trace epoch, Unix s) and
    ``twinsweep.epoch_utc`` (ISO 8601). Dates of a time column (pandas)::

        pd.to_datetime(jobs["submit_time"] + int(pq.read_schema(path).metadata[b"twinsweep.epoch"]), unit="s", utc=True)
    """
    meta = dict(table.schema.metadata or {})
    meta[b"twinsweep.units"] = json.dumps({c: column_unit(c) for c in table.schema.names}, ensure_ascii=False).encode()
    meta[b"twinsweep.epoch"] = str(int(epoch)).encode()
    meta[b"twinsweep.epoch_utc"] = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ").encode()
    return table.replace_schema_metadata(meta)


#: Arrow schemas (with their pandas metadata) by the frame's column names and dtypes: see
#: :func:`_arrow_table`. A sweep's runs share a handful of signatures.
_SCHEMAS: dict[tuple, pa.Schema] = {}
_SCHEMAS_MAX = 64


def _arrow_schema(df: pd.DataFrame, names: list, series: list) -> pa.Schema:
    """The schema ``pa.Table.from_pandas(df[names], preserve_index=False)`` gives once ``df``'s object
    columns are cast to ``"string"`` (as :func:`_arrow_table` does): types and pandas metadata
    depend only on the column names and dtypes then, so it is computed on a zero-row frame once
    per signature and reused. ``names``: the columns, ``series``: those columns already taken out
    of ``df`` (their dtypes give the signature without building ``df.dtypes``)."""
    sig = tuple((str(c), str(s.dtype)) for c, s in zip(names, series))
    schema = _SCHEMAS.get(sig)
    if schema is None:
        empty = df.iloc[:0][names].copy()
        for c in empty.columns:
            if empty[c].dtype == object:
                empty[c] = empty[c].astype("string")
        schema = pa.Schema.from_pandas(empty, preserve_index=False)
        if len(_SCHEMAS) >= _SCHEMAS_MAX:
            _SCHEMAS.pop(next(iter(_SCHEMAS)))
        _SCHEMAS[sig] = schema
    return schema


def _arrow_column(s: pd.Series, typ: pa.DataType) -> pa.Array:
    """One column as ``pa.Table.from_pandas`` converts it (``from_pandas=True``: NaN and None are
    nulls), object columns as strings (``astype("string")``), without pandas' per-frame work: a
    float column without NaN is handed over as is (zero-copy), a column of str / None values is
    converted in one pass."""
    if s.dtype == object:
        vals = s.to_numpy()
        if pd.api.types.infer_dtype(vals, skipna=True) in ("string", "empty"):
            return pa.array(vals, type=typ, from_pandas=True)
        return pa.array(s.astype("string"), type=typ, from_pandas=True)  # str() of other values, as before
    if s.dtype.kind == "f" and isinstance(s.dtype, np.dtype):
        x = s.to_numpy()
        return pa.array(x, type=typ) if not np.isnan(x).any() else pa.array(x, type=typ, from_pandas=True)
    return pa.array(s, type=typ, from_pandas=True)


def _arrow_table(df: pd.DataFrame, skip: str | None = None) -> pa.Table:
    """``df`` (without its column ``skip``) as an Arrow table, equal (values, types, schema and pandas
    metadata) to ``pa.Table.from_pandas(df.drop(columns=[skip]), preserve_index=False)`` with the
    object columns cast to ``"string"`` (tests/test_run_outputs.py checks this), but about 5x
    cheaper on a run's tables (one pass per column, no copy of the frame, the schema computed once
    per signature: :func:`_arrow_schema`)."""
    names = [c for c in df.columns if c != skip]
    series = [df[c] for c in names]
    schema = _arrow_schema(df, names, series)
    cols = [_arrow_column(s, f.type) for s, f in zip(series, schema)]
    return pa.Table.from_arrays(cols, schema=schema)


def _node_ids_array(values) -> pa.Array:
    """``node_ids`` (a list of int sequences or None per job) as Arrow ``list<int32>``, built from
    one flat array (jobs can hold thousands of nodes each)."""
    vals = list(values)
    lens = np.fromiter((0 if v is None else len(v) for v in vals), dtype=np.int32, count=len(vals))
    offsets = np.zeros(len(vals) + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    present = [v for v in vals if v is not None]
    flat = np.fromiter(itertools.chain.from_iterable(present), dtype=np.int32, count=int(offsets[-1])) \
        if present else np.zeros(0, dtype=np.int32)
    mask = np.fromiter((v is None for v in vals), dtype=bool, count=len(vals))
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=pa.int32()), mask=pa.array(mask))


class ReplayOversubscribedWarning(UserWarning):
    """A replayed log uses more nodes than the system's nominal size in some periods."""


def replay_oversubscription(frame: pd.DataFrame, nodes: int) -> dict:
    """Periods of a replay window where the recorded schedule holds more than ``nodes`` nodes.

    Reads the window's ``replay_start`` (recorded start, DESIGN.md §3.9), ``run_time`` and
    ``nodes``; a job occupies ``[replay_start, replay_start + run_time)`` (jobs larger than the
    machine are rejected at submit and not counted). Returns
    ``replay_oversubscribed_periods`` (maximal intervals above ``nodes``),
    ``replay_oversubscribed_s`` (their total length, s) and ``replay_recorded_peak_nodes``.
    """
    run = frame["run_time"].astype("Int64")
    start = frame["replay_start"].astype("Int64").where(run.notna())
    sched = pd.DataFrame({"start_time": start, "end_time": start + run,
                          "nodes": frame["nodes"].astype("Int64"), "submit_time": frame["submit_time"].astype("int64")})
    periods, secs, peak = over_capacity(sched, nodes)  # larger jobs are rejected: never run, not counted
    return {"replay_oversubscribed_periods": periods, "replay_oversubscribed_s": secs,
            "replay_recorded_peak_nodes": peak}


def _grown(system: System, nodes: int) -> System:
    """``system`` with a node pool of ``nodes`` (the replay's over-subscription; no layout; replay
    ignores partitions)."""
    return dataclasses.replace(system, nodes=int(nodes), installed_nodes=None, unavailable_nodes=(), partitions=())


def _nominal_view(res, system: System, grown: System, too_big: pd.DataFrame):
    """An engine result on a grown pool, seen against the nominal ``system``: the phantom nodes'
    idle power removed from the steps, jobs larger than the nominal machine put back as
    rejected (DESIGN.md §3.5), in trace order."""
    extra = grown.nodes - system.nodes
    res.steps = res.steps.assign(it_power_w=res.steps["it_power_w"] - extra * idle_node_power_w(system))
    if too_big is not None and len(too_big):
        rej = too_big.drop(columns=[c for c in ("replay_start",) if c in too_big.columns]).copy()
        rej["trace_status"] = rej["status"]
        rej["status"] = "rejected"
        rej["reason"] = [f"asks for {int(n)} nodes; the system has {system.nodes}" for n in rej["nodes"]]
        rej["prepopulated"] = False
        rej["time_limit_imputed"] = False
        jobs = pd.concat([res.jobs, rej], ignore_index=True)
        jobs = jobs.sort_values("trace_index", kind="stable").reset_index(drop=True)
        for c in res.jobs.columns:
            if str(res.jobs[c].dtype) != str(jobs[c].dtype):
                jobs[c] = jobs[c].astype(res.jobs[c].dtype)
        res.jobs = jobs
    return res


def _jobs_table(jobs: pd.DataFrame) -> pa.Table:
    """jobs.parquet's table: the jobs frame (object columns as strings) with ``node_ids`` as
    ``list<int32>`` in its place (not in the pandas metadata, as ``Table.add_column`` leaves it)."""
    table = _arrow_table(jobs, skip="node_ids")
    pos = list(jobs.columns).index("node_ids")
    return table.add_column(pos, "node_ids", _node_ids_array(jobs["node_ids"]))


def _timeline_table(timeline: pd.DataFrame) -> pa.Table:
    """timeline.parquet's table (:func:`_arrow_table`)."""
    return _arrow_table(timeline)


def to_json(obj: Any) -> str:
    """Canonical JSON of run outputs: sorted keys, 2-space indent, no NaN (as null)."""
    return json.dumps(obj, sort_keys=True, indent=2, allow_nan=False, default=_json_default) + "\n"


def _json_bytes(obj: Any) -> bytes:
    return to_json(obj).encode("utf-8")


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def write_run(result: RunResult, out_dir: str | Path, timing: bool = True, staged: bool = False) -> Path:
    """Write jobs.parquet, timeline.parquet, stats.json, manifest.json (and timing.json with the
    wall time, kept apart so that the four files are byte-identical for the same config and seed).

    The files are written to temporary names in ``out_dir``, flushed to the disk together and
    renamed (:func:`core.atomic.atomic_write_files`), so a crash never leaves a half-written file.
    ``staged``: ``out_dir`` is a staging folder that its caller commits whole
    (:func:`core.atomic.commit_folder`, as a sweep's run folder is): the files are written under
    their names, and that commit flushes them before its rename. Returns the directory. Raises
    DiskFullError (disk full) or OSError when it cannot be written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    epoch = int(result.manifest.get("workload", {}).get("epoch", 0))
    jt = with_output_metadata(_jobs_table(result.jobs), epoch)
    tt = with_output_metadata(_timeline_table(result.timeline), epoch)
    writes = [
        (out / "jobs.parquet", lambda p: pq.write_table(jt, p, compression="zstd")),
        (out / "timeline.parquet", lambda p: pq.write_table(tt, p, compression="zstd")),
        (out / "stats.json", bytes_writer(_json_bytes(result.stats))),
        (out / "manifest.json", bytes_writer(_json_bytes(result.manifest))),
    ]
    if timing:
        writes.append((out / "timing.json", bytes_writer(_json_bytes({"wall_time_s": round(result.wall_time_s, 6)}))))
    if staged:
        for path, write in writes:
            atomic_write(path, write, staged=True)
    else:
        atomic_write_files(writes)
    return out


#: Files a run directory may hold besides :data:`RUN_FILES` (written by ``twinsweep run`` or a sweep).
_RUN_DIR_EXTRA = ("timing.json", "sweep.json", "accounts.json")


def prepare_out_dir(out_dir: str | os.PathLike, force: bool = False) -> tuple[Path, bool]:
    """Check (and create) the output folder of ``twinsweep run`` *before* any simulation.

    Returns ``(path, created)``; ``created`` is True when the folder did not exist (the caller may
    remove it again if the run fails). Accepted: a missing folder (created with its parents), an
    empty folder, or a twinsweep run directory (it holds ``manifest.json``; its files are
    replaced). Raises ConfigError when ``out_dir`` is a file, cannot be created (naming why), or
    is a non-empty folder that is not a twinsweep run and ``force`` is False (listing a few of its
    entries), so that nobody's files are overwritten by surprise.
    """
    out = Path(out_dir).expanduser()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: is a file, not a folder; give a folder for the run's outputs")
    if out.is_dir():
        if not force and (show := foreign_folder(out, "manifest.json", set(RUN_FILES) | set(_RUN_DIR_EXTRA))):
            raise ConfigError(f"--out {out}: the folder is not empty and is not a twinsweep run (it holds {show}); "
                              "choose an empty or new folder, or pass --force to write the run's files into it")
        return out, False
    try:
        out.mkdir(parents=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create the folder ({exc.strerror or exc})") from exc
    return out, True


#: In-process cache of collected accounts (key: collection run key), so that the redeem runs of a
#: sweep executed in one worker do not replay the same window again.
_COLLECT_CACHE: dict[str, Accounts] = {}
_COLLECT_CACHE_MAX = 16


def run_accounts_input(config, workload, system, frame=None) -> tuple[Accounts, dict[str, Any]]:
    """Resolve a run's ``options["accounts_in"]`` (called by :func:`simulate`; it lives here, where runs are
    orchestrated, because ``collect:`` runs a replay first).

    Values: a path (accounts.json, a run directory or its jobs.parquet; relative to the working
    directory); ``collect:replay`` — accounts of a replay of the same trace, window, seed and
    perturbation; ``collect:replay:prev`` — of a replay of the window of the same length that ends
    where this one starts (clipped at the trace epoch; needs a window start and duration): no job
    of the run itself is seen in advance.

    Returns ``(accounts, manifest entry)``. Raises ConfigError for a bad value or file, and when a
    file shares no account (or user, with ``acct_level = "user"``) with the run's window.
    """
    opts = config.option_dict
    spec = str(opts["accounts_in"])
    level = opts.get("acct_level", "account")
    if spec.startswith("collect:"):
        mode = spec[len("collect:"):]
        if mode not in ("replay", "replay:prev"):
            raise ConfigError(f"option accounts_in={spec!r}: expected a path, 'collect:replay' or 'collect:replay:prev'")
        start, duration = config.start, config.duration
        if mode == "replay:prev":
            if start is None or duration is None:
                raise ConfigError("option accounts_in='collect:replay:prev' needs a window start and duration")
            prev = max(0, start - duration)  # clipped at the trace epoch
            if prev >= start:
                raise ConfigError("option accounts_in='collect:replay:prev': the window starts at the trace epoch, "
                                  "there is no preceding window to collect on")
            start, duration = prev, start - prev
        sub = dataclasses.replace(config, policy="replay", backfill="none", options=(), start=start, duration=duration)
        key = run_key(sub, workload, system)
        acc = _COLLECT_CACHE.get(key)
        if acc is None:
            acc = accounts_of_run(simulate(sub, workload=workload, system=system))
            if len(_COLLECT_CACHE) >= _COLLECT_CACHE_MAX:
                _COLLECT_CACHE.pop(next(iter(_COLLECT_CACHE)))
            _COLLECT_CACHE[key] = acc
        acc = Accounts(acc.accounts, acc.users, list(acc.runs), acc.counted_statuses, spec)
        entry = {"in": spec, "collect_run_key": key}
    else:
        acc = load_accounts(spec)
        entry = {"in": spec}
        if frame is not None and len(frame):
            col = "account" if level == "account" else "user"
            names = set(account_names(frame[col] if col in frame.columns else None, len(frame))) - {"unknown"}
            table = acc.table(level)
            if names and table and not (names & set(table)):
                raise ConfigError(
                    f"{acc.source}: the accounts file shares no {col} with this run's window ({len(names)} {col}s, "
                    f"e.g. {sorted(names)[:3]}); was it collected on another trace?")
    entry.update({"checksum": acc.checksum(), "accounts": len(acc.accounts), "users": len(acc.users),
                  "runs": len(acc.runs)})
    return acc, entry
