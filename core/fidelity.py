"""Fidelity of a twin schedule against a reference schedule (DESIGN.md §7): pure functions.

A *schedule* here is a job table with one row per job and the columns ``trace_index`` (the key
that pairs rows of two schedules), ``submit_time``, ``start_time``, ``end_time`` (s since the
trace epoch; nullable: never started / still running) and ``nodes``. :func:`recorded_schedule`
builds the reference from a Workload's recorded fields (marking the jobs that ran without a recorded
start: ``unrecorded``, read by :func:`ran_split`); :func:`twin_schedule` from a run's
jobs.parquet (simulated ``start_time``/``end_time``). A reference of a partitioned machine may
carry ``capacity``, the nodes of each job's partition (``core/partitions.py``): a job the twin
rejected for asking more is then counted against it rather than the machine's node count.

:func:`compare` returns the figures of issue 15 (definitions in :data:`FIGURES`), for the jobs
*compared*: jobs that ran in the reference (a start and an end), were submitted in the reported
window ``[t0, t1)``, and were started by the twin; every other job is counted under
``exclusions`` with its reason, never silently dropped. Occupancy figures use every job that
occupies nodes in the window (compared or not), in each schedule.

Sources: bounded slowdown with τ = 10 s (Feitelson et al., "Theory and practice in parallel job
scheduling", JSSPP 1997; :func:`core.stats.bounded_slowdown`); the two-sample Kolmogorov-Smirnov
statistic and the 1-Wasserstein distance of the empirical wait distributions are
``scipy.stats.ks_2samp(...).statistic`` and ``scipy.stats.wasserstein_distance``; quantiles are
``numpy.quantile`` (linear interpolation); Pearson's correlation of hourly mean busy nodes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from .stats import bounded_slowdown

#: Fewest hourly bins over which the busy-node correlation is given: with 2 bins Pearson's r is
#: always ±1, and with a handful one burst decides it; a day of hours is the least that reads as a
#: correlation of occupancy over time.
MIN_CORR_HOURS = 24

#: The figures :func:`compare` returns: name -> (unit, definition). Relative errors are signed
#: (twin − reference) / reference; a twin that waits less than the machine did is negative.
FIGURES: dict[str, tuple[str, str]] = {
    "jobs_compared": ("jobs", "jobs submitted in the reported window that ran in the log (a recorded start and "
                              "end) and were started by the twin; every other job is counted with its reason"),
    "wait_mean_rel_error": ("1", "(mean twin wait − mean reference wait) / mean reference wait"),
    "wait_p95_rel_error": ("1", "(p95 twin wait − p95 reference wait) / p95 reference wait"),
    "bsld_mean_rel_error": ("1", "(mean twin bounded slowdown − reference's) / reference's; τ = 10 s, "
                                 "each schedule's own occupancy (end − start) as run time"),
    "start_error_median_s": ("s", "median of |twin start − reference start| over the compared jobs"),
    "start_error_mae_s": ("s", "mean of |twin start − reference start|"),
    "start_error_bias_s": ("s", "median of (twin start − reference start): < 0 the twin starts jobs earlier"),
    "start_within_1h_frac": ("1", "share of compared jobs whose |start error| <= 3600 s"),
    "start_within_1min_frac": ("1", "share of compared jobs whose |start error| <= 60 s"),
    "wait_ks": ("1", "two-sample Kolmogorov-Smirnov statistic of the two wait distributions"),
    "wait_w1_s": ("s", "1-Wasserstein (earth mover's) distance of the two wait distributions"),
    "occupancy_corr_hourly": ("1", "Pearson correlation of hourly mean busy nodes over [t0, t1); undefined "
                                   "(None) over fewer than MIN_CORR_HOURS hours (two points always correlate ±1) "
                                   "or when either side never varies"),
    "occupancy_rmse_frac": ("1", "RMSE of hourly mean busy nodes / the system's nodes"),
    "wait_mean_ref_s": ("s", "mean reference wait of the compared jobs"),
    "wait_mean_twin_s": ("s", "mean twin wait of the compared jobs"),
    "wait_p95_ref_s": ("s", "p95 reference wait"),
    "wait_p95_twin_s": ("s", "p95 twin wait"),
}

#: Keys of a comparison that are figures (the order of tables in reports).
FIGURE_KEYS = tuple(FIGURES)

#: Column headers of the figures where people read them (validation.html, the sweep report's
#: fidelity section), with the display unit: relative errors and shares in %, times in h.
FIGURE_LABELS: dict[str, str] = {
    "jobs_compared": "jobs compared",
    "wait_mean_rel_error": "mean wait error [%]",
    "wait_p95_rel_error": "p95 wait error [%]",
    "bsld_mean_rel_error": "mean bounded slowdown error [%]",
    "start_error_median_s": "median |start error| [h]",
    "start_error_mae_s": "mean |start error| [h]",
    "start_error_bias_s": "median start error [h]",
    "start_within_1h_frac": "starts within 1 h [%]",
    "start_within_1min_frac": "starts within 1 min [%]",
    "wait_ks": "wait KS distance",
    "wait_w1_s": "wait W1 distance [h]",
    "occupancy_corr_hourly": "hourly busy-node correlation",
    "occupancy_rmse_frac": "hourly busy-node RMSE [% of nodes]",
    "wait_mean_ref_s": "mean recorded wait [h]",
    "wait_mean_twin_s": "mean twin wait [h]",
    "wait_p95_ref_s": "p95 recorded wait [h]",
    "wait_p95_twin_s": "p95 twin wait [h]",
}

_HOUR = 3600

#: Exclusion reasons of :func:`compare` for a reference with the ``unrecorded`` column (every
#: :func:`recorded_schedule`): a job that ran in the log without a recorded start, and one that never ran.
NO_RECORDED_START = "ran in the log without a recorded start (the log records no schedule for it)"
NEVER_RAN = "never ran in the reference (no run time recorded: e.g. cancelled while queued)"
#: The one exclusion reason of :func:`compare` for a reference without the ``unrecorded`` column
#: (a schedule made by hand, or a twin run's own as the noise floor's reference): the two above, not told apart.
NOT_RAN = "never ran in the reference (no recorded start or run time)"


def recorded_schedule(jobs: pd.DataFrame) -> pd.DataFrame:
    """The recorded schedule of a Workload table (or of a run's jobs table).

    Reads ``trace_index``, ``submit_time``, ``recorded_start_time``, ``run_time`` (end = recorded
    start + recorded run time, so that a log's end column with another meaning is not needed) and
    ``nodes``. A job without a recorded run time never ran: it has no start either (logs record
    a wait for jobs cancelled in the queue). Returns a schedule (see the module docstring); rows in
    the input's order, with the bool column ``unrecorded``: true for a job that ran (it has a run
    time) but whose start the log does not record (SWF wait -1; a log without a schedule), so that
    :func:`ran_split` and :func:`compare` count it apart from the jobs that never ran.
    """
    run = jobs["run_time"].astype("Int64")
    rec = jobs["recorded_start_time"].astype("Int64")
    start = rec.where(run.notna(), pd.NA)  # never ran: no start
    end = start + run
    out = pd.DataFrame({
        "trace_index": jobs["trace_index"].astype("int64").to_numpy(),
        "submit_time": jobs["submit_time"].astype("int64").to_numpy(),
        "start_time": start.to_numpy(),
        "end_time": end.to_numpy(),
        "nodes": jobs["nodes"].astype("Int64").to_numpy(),
        "unrecorded": (run.notna() & rec.isna()).to_numpy(dtype=bool),
    })
    return out


class RanSplit(NamedTuple):
    """How the jobs of a reference schedule ran (:func:`ran_split`): bool arrays, one per row."""

    #: a start and an end: ran, on a known schedule
    ran: np.ndarray
    #: no start, yet ran (the ``unrecorded`` column: a run time without a recorded start)
    unrecorded: np.ndarray
    #: neither (no run time: e.g. cancelled while queued; every job without a start when not ``marked``)
    never_ran: np.ndarray
    #: whether the schedule tells ``unrecorded`` apart (it has the ``unrecorded`` column); if not,
    #: ``unrecorded`` is all false
    marked: bool

    def counts(self) -> dict[str, int]:
        """``{"ran": n, "unrecorded": n, "never_ran": n}``: the jobs of each kind (the three add up
        to the rows counted)."""
        return {k: int(getattr(self, k).sum()) for k in ("ran", "unrecorded", "never_ran")}


def ran_split(schedule: pd.DataFrame, within: np.ndarray | None = None) -> RanSplit:
    """The jobs of a reference schedule that ran in it (a ``start_time`` and an ``end_time``), that
    ran without a recorded start (the ``unrecorded`` column of :func:`recorded_schedule`), and
    that never ran: the one reading of "ran / unrecorded / never ran" for :func:`compare`, a
    sweep report's reference rows and ``twinsweep validate``'s warnings.

    ``within``: a bool mask per row (e.g. submitted in the reported window); every array of the
    result is and-ed with it, so that its :meth:`RanSplit.counts` count those rows only. Returns a
    :class:`RanSplit` (arrays of ``len(schedule)``)."""
    ran = (schedule["start_time"].astype("Int64").notna() & schedule["end_time"].astype("Int64").notna()).to_numpy()
    marked = "unrecorded" in schedule.columns
    unrec = schedule["unrecorded"].to_numpy(dtype=bool) & ~ran if marked else np.zeros(len(schedule), dtype=bool)
    if within is not None:
        ran, unrec = ran & within, unrec & within
        rest = within & ~ran & ~unrec
    else:
        rest = ~ran & ~unrec
    return RanSplit(ran=ran, unrecorded=unrec, never_ran=rest, marked=marked)


def twin_schedule(jobs: pd.DataFrame) -> pd.DataFrame:
    """The simulated schedule of a run's jobs table (jobs.parquet: ``start_time``, ``end_time``).

    Jobs still running at the window end (``status == 'running'``) have no ``end_time``; they
    count as busy up to the comparison window's end. Rejected and never-run jobs have no start;
    with a ``status`` column, ``rejected`` (bool) marks the jobs the twin refused at submit, so
    that :func:`compare` tells them from jobs still queued at the twin's end.
    """
    out = pd.DataFrame({
        "trace_index": jobs["trace_index"].astype("int64").to_numpy(),
        "submit_time": jobs["submit_time"].astype("int64").to_numpy(),
        "start_time": jobs["start_time"].astype("Int64").to_numpy(),
        "end_time": jobs["end_time"].astype("Int64").to_numpy(),
        "nodes": jobs["nodes"].astype("Int64").to_numpy(),
    })
    if "prepopulated" in jobs.columns:
        out["prepopulated"] = jobs["prepopulated"].astype(bool).to_numpy()
    if "status" in jobs.columns:  # the twin refused it at submit (e.g. more nodes than the machine has)
        out["rejected"] = (jobs["status"].astype("string") == "rejected").fillna(False).to_numpy(dtype=bool)
    return out


def hourly_busy_nodes(schedule: pd.DataFrame, t0: int, t1: int, bin_s: int = _HOUR,
                      open_end: int | None = None) -> np.ndarray:
    """Mean busy nodes per bin ``[t0 + k·bin_s, t0 + (k+1)·bin_s)`` over ``[t0, t1)``, exact.

    A job occupies ``nodes`` on ``[start_time, end_time)``; a started job without an end occupies
    up to ``open_end`` (default ``t1``). The last bin may be shorter (its mean is over its own
    length). Computed from the node-seconds accumulated up to each bin edge,
    ``G(T) = Σ n·(T − s)⁺ − Σ n·(T − e)⁺``, so the cost is O((jobs + bins)·log jobs).
    Returns float64 array of length ``ceil((t1 − t0) / bin_s)``. Raises ValueError if t1 <= t0.
    """
    if t1 <= t0:
        raise ValueError(f"occupancy window [{t0}, {t1}) is empty")
    st = schedule["start_time"].astype("Int64")
    ok = st.notna().to_numpy() & schedule["nodes"].notna().to_numpy()
    s = st.to_numpy(dtype="float64", na_value=np.nan)[ok].astype(np.int64)
    e_raw = schedule["end_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)[ok]
    e = np.where(np.isnan(e_raw), float(t1 if open_end is None else open_end), e_raw).astype(np.int64)
    n = schedule["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=0)[ok].astype(np.int64)
    edges = np.append(np.arange(t0, t1, bin_s, dtype=np.int64), np.int64(t1))

    def accumulated(points, weights):
        order = np.argsort(points, kind="stable")
        p, w = points[order], weights[order]
        cw = np.concatenate([[0], np.cumsum(w)])
        cpw = np.concatenate([[0], np.cumsum(w * p)])
        k = np.searchsorted(p, edges, side="left")  # points < edge
        return cw[k] * edges - cpw[k]

    g = accumulated(s, n) - accumulated(e, n)
    return np.diff(g).astype("float64") / np.diff(edges).astype("float64")


def _rel(twin: float, ref: float) -> float | None:
    if ref == 0 or math.isnan(ref) or math.isnan(twin):
        return None
    return (twin - ref) / ref


def _f(x) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


def job_capacity(schedule: pd.DataFrame, nodes: int | None):
    """The most nodes each job of ``schedule`` may ask for: its ``capacity`` column (the nodes of
    its partition, on a partitioned machine: float64 per row), else the machine's ``nodes``."""
    return schedule["capacity"].to_numpy(dtype="float64") if "capacity" in schedule.columns else nodes


def _paired(reference: pd.DataFrame, twin: pd.DataFrame, t0: int, t1: int, system_nodes: int | None = None):
    """The pairing :func:`compare` and :func:`wait_split` share: ``(ref, tw, keep, exclusions)``,
    ``ref`` / ``tw`` indexed by the twin's ``trace_index`` (ref rows in the twin's order), ``keep``
    the compared jobs (bool per row), ``exclusions`` every other job counted under its reason.
    Raises ValueError on an empty window or when the twin holds a ``trace_index`` the reference
    lacks."""
    if t1 <= t0:
        raise ValueError(f"reported window [{t0}, {t1}) is empty")
    ref = reference.set_index("trace_index", drop=False)
    tw = twin.set_index("trace_index", drop=False)
    missing = tw.index.difference(ref.index)
    if len(missing):
        raise ValueError(f"{len(missing)} twin job(s) are not in the reference (first trace_index {missing[0]})")
    ref = ref.loc[tw.index]
    submit = ref["submit_time"].to_numpy(dtype="int64")
    in_window = (submit >= t0) & (submit < t1)
    split = ran_split(ref, in_window)
    ran, n = split.ran, split.counts()  # ran: in the window too
    started = tw["start_time"].astype("Int64").notna().to_numpy()
    prepop = tw["prepopulated"].to_numpy(dtype=bool) if "prepopulated" in tw.columns else np.zeros(len(tw), bool)
    # ran in the log, start not recorded: told apart from "never ran" when the reference marks it
    not_ran = ({NO_RECORDED_START: n["unrecorded"], NEVER_RAN: n["never_ran"]} if split.marked
               else {NOT_RAN: n["never_ran"]})
    exclusions = {
        "submitted outside the reported window": int((~in_window).sum()),
        **not_ran,
        "placed at its recorded start by the twin (running at the twin's window start)": int((ran & prepop).sum()),
    }
    unstarted = ran & ~prepop & ~started
    if "rejected" in tw.columns:  # the twin's own reason is known: say which
        rej = tw["rejected"].to_numpy(dtype=bool)
        parted = "capacity" in ref.columns  # a partitioned machine: each job's partition's nodes
        if "nodes" in tw.columns and (system_nodes or parted):  # which request: none, too many, or other
            n = tw["nodes"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)
            none, big = ~(n > 0), n > job_capacity(ref, system_nodes)
            exclusions["rejected by the twin at submit (asks for no nodes: processors <= 0 or unknown)"] = int(
                (unstarted & rej & none).sum())
            exclusions["rejected by the twin at submit (asks for more nodes than "
                       + ("its partition has)" if parted else "the machine has)")] = int((unstarted & rej & big).sum())
            exclusions["rejected by the twin at submit (another reason: the run's jobs table gives it)"] = int(
                (unstarted & rej & ~none & ~big).sum())
        else:
            exclusions["rejected by the twin at submit (a request its machine cannot hold)"] = int((unstarted & rej).sum())
        exclusions["not started by the twin (queued at its end)"] = int((unstarted & ~rej).sum())
    else:
        exclusions["not started by the twin (rejected, or queued at its end)"] = int(unstarted.sum())
    exclusions = {k: v for k, v in exclusions.items() if v}
    keep = ran & started & ~prepop
    return ref, tw, keep, exclusions


def _waits(ref: pd.DataFrame, tw: pd.DataFrame, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(reference waits, twin waits)`` (s, float64) of the compared jobs."""
    sub = ref["submit_time"].to_numpy(dtype="float64")[keep]
    rs = ref["start_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)[keep]
    ts = tw["start_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)[keep]
    return rs - sub, ts - sub


def compare(reference: pd.DataFrame, twin: pd.DataFrame, t0: int, t1: int, system_nodes: int,
            groups: pd.Series | None = None, *, reference_busy: pd.DataFrame | None = None,
            twin_busy: pd.DataFrame | None = None) -> dict:
    """The fidelity figures of ``twin`` against ``reference`` over the reported window ``[t0, t1)``.

    Args:
        reference, twin: schedules (see the module docstring), paired by ``trace_index``; a twin
            row with ``prepopulated`` true was placed at its recorded start, not scheduled, and
            is excluded.
        t0, t1: reported window (s); jobs are compared when submitted in it; occupancy is binned
            by the hour over it.
        system_nodes: the machine's node count (normalises the occupancy RMSE).
        groups: optional label per job (indexed by ``trace_index``): the result then also holds
            ``wait_by_group``, :func:`wait_split` of the same pairing.
        reference_busy, twin_busy: what holds each side's nodes over time, for the occupancy
            figures (columns ``start_time``, ``end_time``, ``nodes``; see
            :func:`hourly_busy_nodes`), when the schedule's own rows do not stand for one
            machine's state (a twin restarted from the log every period: its job rows, each
            from the run of its own period, overlap across restart points). Default: the
            reference's jobs the twin holds and did not reject at submit (a job wider than the
            machine would otherwise count in the log's busy nodes only: until 2026-12-07 it did,
            and one such job in fifty took a synthetic log's correlation from 0.95 to 0.49), and
            the twin schedule.
    Returns: dict with every key of :data:`FIGURES` (None where undefined, e.g. no job compared)
        and ``exclusions`` {reason: count}. Raises ValueError on an empty window or when the
        twin holds a ``trace_index`` the reference lacks.
    """
    ref, tw, keep, exclusions = _paired(reference, twin, t0, t1, system_nodes)
    split = _split(ref, tw, keep, groups) if groups is not None else None
    r_start = ref["start_time"].astype("Int64")
    r_end = ref["end_time"].astype("Int64")
    t_start = tw["start_time"].astype("Int64")
    t_end = tw["end_time"].astype("Int64")
    rs = r_start.to_numpy(dtype="float64", na_value=np.nan)[keep]
    ts = t_start.to_numpy(dtype="float64", na_value=np.nan)[keep]
    w_ref, w_tw = _waits(ref, tw, keep)
    run_ref = r_end.to_numpy(dtype="float64", na_value=np.nan)[keep] - rs
    te = t_end.to_numpy(dtype="float64", na_value=np.nan)[keep]
    run_tw = np.where(np.isnan(te), np.float64(t1) - ts, te - ts)
    run_tw = np.maximum(run_tw, 0.0)
    out: dict = {"jobs_compared": int(keep.sum())}
    if reference_busy is None:  # the same jobs on both sides: not those the twin refused at submit
        held = tw.index[~tw["rejected"].to_numpy(dtype=bool)] if "rejected" in tw.columns else tw.index
        reference_busy = reference.loc[reference["trace_index"].isin(held)]
    occ_r = hourly_busy_nodes(reference_busy, t0, t1)
    occ_t = hourly_busy_nodes(twin if twin_busy is None else twin_busy, t0, t1)
    if len(occ_r) >= MIN_CORR_HOURS and occ_r.std() > 0 and occ_t.std() > 0:
        out["occupancy_corr_hourly"] = float(np.corrcoef(occ_r, occ_t)[0, 1])
    else:
        out["occupancy_corr_hourly"] = None
    out["occupancy_rmse_frac"] = float(np.sqrt(np.mean((occ_r - occ_t) ** 2)) / system_nodes)
    if not keep.any():
        for k in FIGURE_KEYS:
            out.setdefault(k, None)
        out["exclusions"] = exclusions
        if split is not None:
            out["wait_by_group"] = split
        return out
    from scipy.stats import ks_2samp, wasserstein_distance

    err = ts - rs
    aerr = np.abs(err)
    mr, mt = float(w_ref.mean()), float(w_tw.mean())
    pr, pt = float(np.quantile(w_ref, 0.95)), float(np.quantile(w_tw, 0.95))
    with np.errstate(divide="ignore", invalid="ignore"):  # the p-value of a tiny sample divides by 0; unused
        ks = float(ks_2samp(w_ref, w_tw, method="asymp").statistic)  # the statistic only
    out.update({
        "wait_mean_rel_error": _rel(mt, mr),
        "wait_p95_rel_error": _rel(pt, pr),
        "bsld_mean_rel_error": _rel(float(bounded_slowdown(w_tw, run_tw).mean()),
                                    float(bounded_slowdown(w_ref, run_ref).mean())),
        "start_error_median_s": float(np.median(aerr)),
        "start_error_mae_s": float(aerr.mean()),
        "start_error_bias_s": float(np.median(err)),
        "start_within_1h_frac": float((aerr <= 3600).mean()),
        "start_within_1min_frac": float((aerr <= 60).mean()),
        "wait_ks": ks,
        "wait_w1_s": float(wasserstein_distance(w_ref, w_tw)),
        "wait_mean_ref_s": mr, "wait_mean_twin_s": mt, "wait_p95_ref_s": pr, "wait_p95_twin_s": pt,
    })
    out = {k: (_f(v) if isinstance(v, float) else v) for k, v in out.items()}
    out["exclusions"] = exclusions
    if split is not None:
        out["wait_by_group"] = split
    return out


#: The figures of each group of :func:`wait_split`: name -> (unit, definition).
SPLIT_FIGURES: dict[str, tuple[str, str]] = {
    "jobs": ("jobs", "compared jobs of the group"),
    "ref_wait_share": ("1", "the group's share of the compared jobs' total reference wait"),
    "wait_mean_ref_s": ("s", "mean reference wait of the group"),
    "wait_mean_twin_s": ("s", "mean twin wait of the group"),
    "wait_mean_rel_error": ("1", "(mean twin wait − mean reference wait) / mean reference wait, in the group"),
    "wait_p95_ref_s": ("s", "p95 reference wait of the group"),
    "wait_p95_twin_s": ("s", "p95 twin wait of the group"),
    "wait_p95_rel_error": ("1", "(p95 twin wait − p95 reference wait) / p95 reference wait, in the group"),
}


def wait_split(reference: pd.DataFrame, twin: pd.DataFrame, t0: int, t1: int, group: pd.Series) -> dict:
    """The wait figures of :func:`compare` for each group of compared jobs apart.

    ``group``: a label (str) per job, indexed by ``trace_index`` (every compared job needs one;
    KeyError otherwise). The compared jobs are those of :func:`compare` (same pairing and
    exclusions). Returns ``{label: {key of SPLIT_FIGURES: value}}`` for every label of a compared
    job, in sorted order (None where undefined: a reference mean or p95 of 0). ``ref_wait_share``
    of the groups adds up to 1 when the compared jobs waited at all. Raises as :func:`compare`.
    """
    ref, tw, keep, _ = _paired(reference, twin, t0, t1)
    return _split(ref, tw, keep, group)


def _split(ref: pd.DataFrame, tw: pd.DataFrame, keep: np.ndarray, group: pd.Series) -> dict:
    """:func:`wait_split` of a pairing (:func:`_paired`)."""
    w_ref, w_tw = _waits(ref, tw, keep)
    labels = group.loc[tw.index[keep]].to_numpy()
    total = float(w_ref.sum())
    out: dict = {}
    for lab in sorted(set(labels.tolist())):
        m = labels == lab
        r, t = w_ref[m], w_tw[m]
        mr, mt = float(r.mean()), float(t.mean())
        pr, pt = float(np.quantile(r, 0.95)), float(np.quantile(t, 0.95))
        out[str(lab)] = {"jobs": int(m.sum()), "ref_wait_share": (float(r.sum()) / total) if total > 0 else None,
                         "wait_mean_ref_s": mr, "wait_mean_twin_s": mt, "wait_mean_rel_error": _rel(mt, mr),
                         "wait_p95_ref_s": pr, "wait_p95_twin_s": pt, "wait_p95_rel_error": _rel(pt, pr)}
    return out
