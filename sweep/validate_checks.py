"""What ``twinsweep validate`` says about a log and its windows before any simulation (DESIGN.md §7;
docs/validation.md, "Windows"): the errors that stop a validation that could not mean anything,
and the warnings, each with its count of the reported window's jobs, on what the log holds that the
comparison cannot use as it is (nothing is left out silently). Pure functions of the recorded
schedule (:func:`core.fidelity.recorded_schedule`), the submit times and the windows; called by
:func:`sweep.validate.validate`, which keeps every name here importable from it too.

- errors (ConfigError): default windows made lopsided by one gap of submissions
  (:func:`check_submit_gap`); a reported window with no job the twin could be compared on
  (:func:`check_comparable`);
- warnings (text, or None): a long idle stretch of the reported window (:func:`idle_stretch`,
  from :func:`idle_hours`); a recorded schedule busier than the machine (:func:`oversubscribed`);
  many jobs removed by the archive's cleaning (:func:`cleaning_warning`); jobs without a recorded
  start, beyond the machine, killed early, with corrupt waits, run times of 0 s, a fitting window
  without a schedule (:func:`input_warnings`); partitions the system does not declare
  (:func:`undeclared_partitions`);
- the texts they print, which validate's console and page print too: :func:`window_text` (a
  window from the trace epoch) and :func:`share_text` (a share in %).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from twinsweep.core import availability as _avail
from twinsweep.core.errors import ConfigError
from twinsweep.core.fidelity import hourly_busy_nodes, job_capacity, ran_split
from twinsweep.core.metrics import format_number
from twinsweep.core.partitions import values_text
from twinsweep.core.tracespan import gap_text
from twinsweep.core.workload import Workload


def window_text(window, *others) -> str:
    """A window ``[a, b)`` (s from the trace epoch) for people: ``"[a d, b d)"``, days to one decimal;
    hours (``"[a h, b h)"``) for a window shorter than two days in the trace's first 100 days, whose
    ends one-decimal days would blur (further out, days with the decimals that tell the ends apart:
    ``[100000.0 d, 100001.0 d)``, not ``[2400000.0 h, 2400024.0 h)``). Hours too take the decimals
    (up to 4) that tell the ends apart: two one-second windows at 168.2 h read ``[168.1656 h,
    168.1658 h)``, not the same text twice. ``others``: windows printed beside this one (the fitting
    window beside the reported one): the decimals then tell every distinct end of all of them apart,
    so that a fitting window ending at 364.553 d does not read as reaching past a reported window
    starting there (``[358.8 d, 364.6 d)`` beside ``[364.55 d, 364.63 d)`` until 2026-12-07)."""
    a, b = window
    ends = sorted({int(x) for w in (window, *others) for x in w})
    if b - a < 2 * 86400 and a < 100 * 86400:
        unit, scale = "h", 3600
    else:
        unit, scale = "d", 86400

    def apart(k: int) -> bool:
        return len({f"{x / scale:.{k}f}" for x in ends}) == len(ends)
    d = next((k for k in (1, 2, 3) if apart(k)), 4)
    return f"[{a / scale:.{d}f} {unit}, {b / scale:.{d}f} {unit})"


def share_text(x: float) -> str:
    """A share as a percentage, two significant digits however small (:func:`core.metrics.format_number`:
    0.0075 %, 3.6 %, 100 %)."""
    return f"{format_number(100 * float(x), 2)} %"


#: The default windows (the submit-time span in halves) are refused when one gap between two
#: consecutive submissions exceeds this share of the span *and* leaves one half with fewer than
#: :data:`SUBMIT_GAP_MIN_HALF` of the jobs: one outlier submit time (a corrupt field) put every job
#: but one in the fitting half and made the run cost the span, not the jobs. A long gap between
#: two halves of work (a shutdown) is no such case. The logs of the data folder have no gap above
#: 0.07 of their span (NASA-iPSC's; 0.03 or less elsewhere).
SUBMIT_GAP_MAX_SHARE = 0.25
SUBMIT_GAP_MIN_HALF = 0.05


def check_submit_gap(submit: np.ndarray, job_id: np.ndarray, data, span0: int, span1: int) -> None:
    """Raise ConfigError when the default windows would be one outlier's: the largest gap between
    consecutive submit times exceeds :data:`SUBMIT_GAP_MAX_SHARE` of the span ``[span0, span1)``
    (s from the trace epoch) and one half of the span holds fewer than :data:`SUBMIT_GAP_MIN_HALF`
    of the jobs (``submit``: s from the trace epoch, ``job_id``: the SWF job numbers, one per job).
    The error names the two jobs around the gap and the counts on each side."""
    order = np.argsort(submit, kind="stable")
    sub = submit[order]
    gaps = np.diff(sub)
    k = int(np.argmax(gaps))
    first_half = int(np.sum(sub < span0 + (span1 - span0) // 2))
    if (gaps[k] <= SUBMIT_GAP_MAX_SHARE * (span1 - span0)
            or min(first_half, len(sub) - first_half) >= SUBMIT_GAP_MIN_HALF * len(sub)):
        return
    ids = job_id[order]

    def side(n: int, a: int, b: int) -> str:
        return f"{n:,} job(s) " + (f"at {window_text((a, a + 1))[1:].split(',')[0]}" if a == b
                                   else f"in {window_text((a, b + 1))}")

    gap = f"{gaps[k] / 86400:,.1f} days" if gaps[k] >= 2 * 86400 else f"{gaps[k] / 3600:,.1f} h"
    raise ConfigError(
        f"validate: {data}: {side(k + 1, span0, int(sub[k]))} and {side(len(sub) - k - 1, int(sub[k + 1]), span1 - 1)} "
        f"(from the trace epoch): a gap of {gap} between job {ids[k]} and job {ids[k + 1]}, "
        f"{gaps[k] / (span1 - span0):.0%} of the span, so the default windows (the span in halves) would hold "
        f"{first_half:,} and {len(sub) - first_half:,} job(s) (a corrupt submit time?): give --calibrate and "
        "--report-window")


def ran_sizes(reference: pd.DataFrame, nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(ran, none, wide, size)`` per row of the recorded schedule ``reference``: ``ran`` the
    jobs with a recorded start and end (they ran in the log), ``none`` those of them asking for
    no nodes, ``wide`` those asking for more than the machine's ``nodes`` (than their partition's,
    the ``capacity`` column, on a partitioned machine), ``size`` the nodes asked for (float64,
    NaN unknown). The twin rejects ``none`` and ``wide`` jobs at submit. One reading for the check
    before any run and for the warnings (``ran``: :func:`core.fidelity.ran_split`)."""
    ran = ran_split(reference).ran
    size = reference["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)
    return ran, ran & ~(size > 0), ran & (size > job_capacity(reference, nodes)), size


def check_comparable(reference: pd.DataFrame, sizes: tuple, reported: np.ndarray, t0: int, t1: int,
                      nodes: int, data: str) -> None:
    """Raise ConfigError, before any simulation, when no job submitted in ``[t0, t1)`` (the
    ``reported`` mask) can be compared: none has a recorded start (the log records no schedule
    there), or every one that has asks for no nodes or for more than the machine's ``nodes`` (its
    partition's) (``sizes``: :func:`ran_sizes`)."""
    ran, none, wide, _size = sizes
    if not (ran & reported).any():
        raise ConfigError(f"validate: {data}: none of the {int(reported.sum()):,} jobs submitted in the reported window "
                          f"{window_text((t0, t1))} has a recorded start (SWF field 3, wait, is -1, or no run time): the log "
                          "records no schedule there to validate against")
    if not (ran & reported & ~none & ~wide).any():
        ran = ran & reported
        raise ConfigError(f"validate: {data}: every one of the {int(ran.sum()):,} jobs of the reported window with a "
                          "recorded start asks for no nodes or for more than "
                          + ("its partition's nodes" if "capacity" in reference.columns else f"the machine's {nodes:,}")
                          + ": nothing the twin could run to compare (check --system)")


#: An idle stretch of the reported window (no job submitted or running in the log) is warned of when it
#: is at least this many hours long and :data:`IDLE_STRETCH_MIN_SHARE` of the window's hours
#: (:func:`idle_stretch`).
IDLE_STRETCH_MIN_HOURS = 24
IDLE_STRETCH_MIN_SHARE = 0.10


def idle_hours(reference: pd.DataFrame, submit: np.ndarray, t0: int, t1: int) -> tuple[int, int, int, int]:
    """The hours of ``[t0, t1)`` (bins ``[t0 + k·3600, t0 + (k+1)·3600)``, the last one cut at
    ``t1``: as :func:`core.fidelity.hourly_busy_nodes`) in which the schedule ``reference`` holds
    no node busy and no job of ``submit`` (s from the trace epoch, any order) is submitted.

    Returns ``(empty, longest, first, bins)``: the number of such hours, the length of their longest
    stretch of consecutive hours and its first bin (the earliest of equally long stretches; 0 and 0
    when there is none), and the window's number of bins, ``ceil((t1 − t0) / 3600)``. Raises
    ValueError if ``t1 <= t0``. Vectorised: the stretches are the runs of true in the bins' mask,
    found where the mask (padded with false at both ends) steps up and down."""
    busy = hourly_busy_nodes(reference, t0, t1)
    sub = submit[(submit >= t0) & (submit < t1)]
    hit = np.zeros(len(busy), dtype=bool)
    hit[((sub - t0) // 3600).astype(np.int64)] = True
    empty = (busy == 0) & ~hit
    step = np.diff(np.concatenate(([0], empty.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(step == 1), np.flatnonzero(step == -1)
    if not len(starts):
        return 0, 0, 0, len(busy)
    i = int(np.argmax(ends - starts))  # the first of the longest
    return int(empty.sum()), int(ends[i] - starts[i]), int(starts[i]), len(busy)


def idle_stretch(reference: pd.DataFrame, submit: np.ndarray, t0: int, t1: int) -> str | None:
    """A warning when the reported window ``[t0, t1)`` holds a stretch of whole hours in which the log
    has no job running and none is submitted (:func:`idle_hours`), at least
    :data:`IDLE_STRETCH_MIN_HOURS` long and :data:`IDLE_STRETCH_MIN_SHARE` of the window (a gap in
    the log, e.g. a month without jobs): both schedules hold no node there whatever the twin does,
    so those hours raise the hourly busy-node correlation and lower its RMSE without telling
    anything (the reason a window reaching beyond the submissions is cut). On a KTH-SP2 log with a
    30-day gap inside the default reported window the correlation read 0.77 with the empty hours
    and 0.52 without them, for the same jobs. None when there is no such stretch."""
    total, n, first, bins = idle_hours(reference, submit, t0, t1)
    if bins < IDLE_STRETCH_MIN_HOURS or n < IDLE_STRETCH_MIN_HOURS or n < IDLE_STRETCH_MIN_SHARE * bins:
        return None
    a = t0 + first * 3600
    return (f"the reported window {window_text((t0, t1))} holds {total:,} hour(s) ({total / bins:.0%} of its "
            f"hours) in which no job ran in the log and none was submitted, {n:,} of them in one stretch "
            f"{window_text((a, min(t1, a + n * 3600)))}: both schedules are empty there whatever the twin does, so "
            "the hourly busy-node correlation and RMSE count those hours as agreement; give a --report-window "
            "without the gap for occupancy figures that tell")


#: When the log's busy processors stand above the machine's for at most this share of the time its
#: busy whole nodes do, :func:`oversubscribed` names node sharing as the cause (one processor over
#: for a few hours, as in KTH's log, against hundreds of hours of rounded-up nodes).
NODE_SHARING_SHARE = 0.1


def oversubscribed(reference: pd.DataFrame, nodes: int, partition: str | None = None,
                    procs: pd.Series | None = None, cores_per_node: int = 1) -> str | None:
    """A warning when the recorded schedule holds more than ``nodes`` nodes busy at some time
    (jobs that fit the machine only: :func:`core.availability.over_capacity`), else None: the
    log's machine was larger then, or ran jobs time-shared, and no twin of ``nodes`` nodes can
    follow those periods (nor can the estimators, which read the recorded busy-node counts).
    ``partition``: the pool of a partitioned machine the schedule is of (its jobs, its nodes).
    ``procs`` (the processors of each row of ``reference``) and ``cores_per_node`` > 1: when the
    log's busy *processors* exceed the machine's for at most :data:`NODE_SHARING_SHARE` of that
    time, the warning says the cause is jobs sharing
    nodes (each job rounded up to whole nodes counts more nodes than it held) and which machine of
    one-processor slots follows the log."""
    periods, secs, peak = _avail.over_capacity(reference, nodes)
    if not periods:
        return None
    length = f"{secs / 3600:,.1f} h" if secs >= 3600 else f"{secs:,} s"
    whose = f"the machine's {nodes:,} nodes" if partition is None else f"the {nodes:,} nodes of partition {partition!r}"
    if procs is not None and cores_per_node > 1:
        slots = nodes * cores_per_node
        p_periods, p_secs, p_peak = _avail.over_capacity(reference.assign(nodes=procs.to_numpy()), slots)
        if p_secs <= NODE_SHARING_SHARE * secs:
            above = ("never exceed the machine's" if not p_periods else
                     f"exceed the machine's {slots:,} in {p_periods:,} period(s) only ({p_secs / 3600:,.1f} h, peak "
                     f"{p_peak:,}), against")
            return (f"the recorded schedule holds more than {whose} busy in {periods:,} period(s), {length} in all "
                    f"(peak {peak:,} nodes, each job rounded up to whole nodes of {cores_per_node} processors), but its "
                    f"busy processors {above} {slots:,}: its jobs shared nodes, which a twin of whole nodes cannot "
                    f"do; a system of {slots:,} one-processor nodes (a system TOML with nodes = {slots} and "
                    "cores_per_node = 1, --system) follows it (the jobs are compared all the same: none is left out "
                    "for it)")
    return (f"the recorded schedule holds more than {whose} busy in {periods:,} period(s), "
            f"{length} in all (peak {peak:,} nodes): the log's machine was larger then, or ran "
            "jobs time-shared (see time_shared in the system file's [site] table, docs/validation.md "
            "\"Time-shared machines\"); no twin of this size can follow those periods (their jobs are "
            "compared all the same: none is left out for it)")


#: The share of a reported window's jobs removed by the archive's cleaning from which validate
#: warns (a twentieth: beyond it the recorded waits carry a load the twin never sees).
CLEANING_WARN_SHARE = 0.05
CLEANING_NOTE = ("jobs the Parallel Workloads Archive removed from the cleaned log (filters in its header), placed "
                 "in time by the job numbers missing between kept jobs (core/archive_cleaning.py): the recorded "
                 "schedule ran with them on the machine, the twin runs without them in every mode, and the "
                 "recorded busy-node counts informed mode reads lack them too; their nodes and run times are "
                 "not in the log")


def cleaning_warning(cleaning: dict) -> str:
    """The warning of a reported window from which the archive's cleaning removed many jobs
    (``cleaning``: validation.json's ``archive_cleaning``, with its ``fitting`` part)."""
    filters = "; ".join(f"{f['expression']} ({f['jobs_removed']:,} jobs)" for f in cleaning["filters"]) or \
        "no filter listed in the header"
    fit = cleaning.get("fitting") or {}
    fit_share = fit.get("removed_share_in_window")
    fit_text = "" if fit_share is None else (
        f"; the fitting window lost {share_text(fit_share)}"
        + (" (a reported window that lost few, given with --report-window and --calibrate, compares like with like)"
           if fit_share < CLEANING_WARN_SHARE else ""))
    return (f"the archive's cleaning removed about {cleaning['removed_in_window']:,} jobs submitted in the reported "
            f"window, {share_text(cleaning['removed_share_in_window'])} of the jobs the machine received then (by "
            f"count: their sizes are not in the log; filters: {filters}). The recorded waits and busy nodes of the "
            "window were made with them on the machine; the twin runs without them in every mode, so its absolute "
            f"waits there are not comparable with the log's (it will wait less){fit_text}"
            + (f"; up to {cleaning['lenient_skipped_lines']:,} of the missing numbers are the lines --lenient skipped, "
               "not jobs the archive removed" if cleaning.get("lenient_skipped_lines") else "")
            + (f" ({cleaning['removed_basis']})" if cleaning.get("removed_basis") and (
                cleaning.get("removed_is_upper_bound") or cleaning.get("unexplained_number_gaps")) else ""))


#: A recorded wait longer than the log's whole submit span and than this (s; 30 days) is said as
#: implausible before any run (:func:`input_warnings`): a log's jobs waited inside its span.
LONGEST_PLAUSIBLE_WAIT_S = 30 * 86400


def input_warnings(workload: Workload, reference: pd.DataFrame, sizes: tuple, submit: np.ndarray,
                    limits: np.ndarray, reported: np.ndarray, fit: tuple[int, int], nodes: int,
                    default_limit: int | None, grace: int | None) -> list[str]:
    """What the log holds that the comparison cannot use as it is, said before any run (each a
    count of the reported window's jobs; nothing is left out silently):

    - jobs with a run time but no recorded start (SWF wait -1): the twin runs them, they are not
      compared, and the log's busy nodes (compared hour by hour, read by informed mode) lack them;
    - jobs that ran in the log but ask for no nodes or for more than the machine's ``nodes``: the
      twin rejects them at submit; they count on neither side;
    - with ``grace`` (kill on): jobs that ran longer in the log than the limit the twin gives them
      (requested, else ``default_limit``) plus the kill grace: the twin kills them early;
    - jobs that waited longer than the log's whole submit span (and :data:`LONGEST_PLAUSIBLE_WAIT_S`):
      a corrupt wait, said with the share of the log's wait it holds;
    - a reported window whose jobs that ran all ran for 0 s: no busy node to compare or to read;
    - a fitting window in which no job has a recorded start: nothing is fitted from the schedule
      there (the kill grace reads run times and limits only).

    Arrays (``submit`` in s, ``limits`` requested in s, ``reported`` a mask) are per row of
    ``reference`` (the recorded schedule of ``workload.jobs``, same order); ``sizes`` is
    :func:`ran_sizes` of ``reference``."""
    out = []
    n_rep = int(reported.sum())
    jobs = workload.jobs
    run = jobs["run_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)
    ran, none, wide, size = sizes  # ran: a recorded start and a run time, hence an end (recorded_schedule)
    if k := ran_split(reference, reported).counts()["unrecorded"]:
        out.append(f"{k:,} of the reported window's {n_rep:,} jobs have a run time but no recorded start (SWF field 3 "
                   "is -1; Slurm: Start Unknown): the twin runs them, but they are not compared, and the log's busy nodes (compared hour by "
                   "hour, and read by informed mode as telemetry) lack them")
    parted = "capacity" in reference.columns  # a partitioned machine: each job's partition's nodes
    none, wide = reported & none, reported & wide
    if none.any() or wide.any():
        parts = [f"{int(none.sum()):,} ask for no nodes (processors <= 0 or unknown)"] if none.any() else []
        parts += [(f"{int(wide.sum()):,} ask for more nodes than their partition has (up to {int(size[wide].max()):,})"
                   if parted else
                   f"{int(wide.sum()):,} ask for more than the machine's {nodes:,} nodes (up to {int(size[wide].max()):,})")
                  ] if wide.any() else []
        out.append(f"of the reported window's {n_rep:,} jobs that ran in the log, {' and '.join(parts)}: the twin rejects "
                   "them at submit; they are not compared and count in neither side's busy nodes"
                   + (" — except in informed and restart modes where the log's busy count shows more nodes held than "
                      "the machine has: the node slots those modes add may run such a job, which is then compared "
                      "(each mode's jobs_compared and log's mean wait say so; check --system if the log's machine "
                      "was larger)" if wide.any() and not parted else
                      " (check --system if the log's machine was larger)" if wide.any() else ""))
    start = reference["start_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)
    wait = start - submit
    longest = max(float(submit.max() - submit.min()) if len(submit) else 0.0, LONGEST_PLAUSIBLE_WAIT_S)
    if (late := reported & ran & (wait > longest)).any():
        i = int(np.argmax(np.where(late, wait, -np.inf)))
        all_ran = reported & ran
        share = float(wait[late].sum() / max(wait[all_ran].sum(), 1.0))
        out.append(f"{int(late.sum()):,} of the reported window's jobs that ran in the log waited longer than the log's "
                   f"whole submit span ({gap_text(longest)}), e.g. job {jobs['job_id'].iloc[i]} (trace position {i:,}): "
                   f"{gap_text(wait[i])} — a corrupt wait (SWF field 3)? They hold {share_text(share)} of the log's "
                   "wait there and are compared as recorded (a --report-window that does not hold their submit times leaves them out)")
    if grace is not None:
        lim = np.where(limits > 0, limits, np.nan if not default_limit else float(default_limit))
        killed = reported & ran & (run > lim + grace)
        if k := int(killed.sum()):
            share = k / max(1, int((reported & ran).sum()))
            out.append(f"{k:,} of the reported window's jobs that ran in the log ({share_text(share)}) ran longer than "
                       f"the limit the twin gives them (their requested time, else the system's default) plus the kill "
                       f"grace ({grace:,} s): the twin kills them at that point, shorter than they ran (--no-kill lets "
                       "them run to their recorded length)")
    if (reported & ran).any() and not (reported & ran & (run > 0)).any():
        out.append(f"every one of the reported window's {int((reported & ran).sum()):,} jobs that ran in the log ran for "
                   "0 s: the log's schedule holds no node busy there, so the hourly busy-node comparison has nothing to "
                   "correlate, and informed mode reads any queue in it as nodes down (a log without run times?)")
    in_fit = (submit >= fit[0]) & (submit < fit[1])
    if in_fit.any() and not (in_fit & ran).any():
        out.append(f"no job submitted in the fitting window {window_text(fit)} has a recorded start: nothing is fitted "
                   "from the schedule there (blind mode takes no node out, and informed mode, without evidence, takes "
                   "every idle node of a block with a standing queue as down); give --calibrate a window the log "
                   "recorded")
    return out


#: A partition value that holds at least this share of a trace's jobs counts towards
#: :func:`undeclared_partitions`'s hint (a stray value of a few jobs is no node pool).
PARTITION_HINT_SHARE = 0.05


def undeclared_partitions(workload: Workload) -> str | None:
    """A hint when the trace's jobs name two or more partitions, each with at least
    :data:`PARTITION_HINT_SHARE` of its jobs, and the system declares none: the twin then runs them
    on one pool (docs/validation.md, "Machine model: partitions"); else None."""
    vals = workload.jobs["partition"].dropna().astype(str)
    counts = vals.value_counts()
    big = counts[counts >= PARTITION_HINT_SHARE * max(1, len(workload.jobs))]
    if len(big) < 2:
        return None
    shown = values_text(big.index, big.to_numpy(), workload.header.get("Partition"))
    return (f"the trace's jobs name {len(big)} partitions ({shown}) and the system declares none: the twin runs them "
            "on one pool of its nodes; if they were disjoint node pools, declare them ([[system.partitions]] in the "
            "system file; docs/validation.md, \"Machine model: partitions\")")
