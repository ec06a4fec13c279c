"""The report's fidelity section (``fidelity``, issue 15 item 4): when a study's grid includes the
recorded schedule (``policy = "replay"``), that schedule is the reference row, and every variant is
compared with it per dataset and window (:func:`twinsweep.core.fidelity.compare`: mean / p95 wait
and mean bounded slowdown relative errors, per-job start errors, KS and 1-Wasserstein distances of
the wait distributions, hourly occupancy correlation).

The recorded schedule exists only for the trace as recorded, so the comparison is made on seed 0
(:data:`REFERENCE_SEED`; a seed > 0 perturbs run and submit times, and its replay is not a record
of anything: such runs are counted on the page and not used). The reference is the *log's* schedule
as the replay run's jobs table carries it (``recorded_start_time``, end = recorded start +
``run_time``: :func:`core.fidelity.recorded_schedule`), not the replay run's simulated starts: a
replay leaves the jobs the log started after the window's end queued and those still running at
its end without an end, delays starts where the log holds more nodes than the machine, and imputes
a start for a job the log gives none (SWF wait -1). Until 2026-12-07 the simulated starts were read:
every job the log started after the window end, or that ran past it, was dropped from the
comparison as "never ran" (the longest waits: the reference mean wait of KTH-SP2 days 144-146 read
6.0 h instead of the 13.3 h of the 97 jobs submitted in it), and a log without a recorded schedule
(NASA-iPSC, LLNL-Atlas) showed every variant as a perfect match of starts the replay had imputed.
A window whose jobs have no recorded start is said so on the page, with nothing compared. When the
grid gives replay several values of an axis it ignores (backfill, kill), the first in grid order is
the reference. A variant's jobs that the replay's window does not hold are left out and counted.
:func:`fidelity_table` computes the table (``fidelity.csv``), :func:`reference_table` the reference
rows (``fidelity_reference.csv``); :func:`section_fidelity` renders both.
"""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from twinsweep.core.fidelity import (FIGURE_KEYS, FIGURE_LABELS, compare, ran_split, recorded_schedule,
                                     twin_schedule)
from twinsweep.core.metrics import format_number

from .store import ResultStore

__all__ = ["fidelity_table", "reference_table", "section_fidelity", "SECTION_ID", "TITLE", "REFERENCE_SEED"]

SECTION_ID = "fidelity"
TITLE = "Fidelity: every variant against the recorded schedule"
#: The seed whose runs are compared with the recorded schedule: the unperturbed trace.
REFERENCE_SEED = 0
_COLUMNS = ("trace_index", "submit_time", "start_time", "end_time", "nodes", "prepopulated", "status")
_NOT_IN_REFERENCE = "not in the recorded schedule's window"


_RECORDED = ("trace_index", "submit_time", "recorded_start_time", "run_time", "nodes")


def _schedule(store: ResultStore, key: str) -> pd.DataFrame:
    path = store.run_dir(key) / "jobs.parquet"
    have = set(pq.read_schema(path).names)
    return twin_schedule(pd.read_parquet(path, columns=[c for c in _COLUMNS if c in have]))


def _reference(store: ResultStore, key: str, read: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The recorded schedule held by the replay run ``key``'s jobs table (module docstring), with
    the ``unrecorded`` marks of :func:`core.fidelity.recorded_schedule`. A jobs table without the
    recorded columns (none a twinsweep run writes) falls back to the run's own schedule.
    ``read``: the schedules already read, by run key: one there is not read again, and one read
    here is added."""
    if read is not None and key in read:
        return read[key]
    path = store.run_dir(key) / "jobs.parquet"
    have = set(pq.read_schema(path).names)
    if set(_RECORDED) <= have:
        ref = recorded_schedule(pd.read_parquet(path, columns=list(_RECORDED)))
    else:
        ref = _schedule(store, key)
    if read is not None:
        read[key] = ref
    return ref


def _reference_run(g: pd.DataFrame, reference: list[str]) -> tuple[str, str] | None:
    """``(variant, key)`` of the reference run among the runs ``g`` of one window and seed: the
    first of the replay variants ``reference`` (grid order) that ``g`` holds; None when none."""
    ref_v = next((v for v in reference if (g["variant"] == v).any()), None)
    return None if ref_v is None else (ref_v, str(g.loc[g["variant"] == ref_v, "key"].iloc[0]))


def _window(store: ResultStore, key: str) -> tuple[int, int, int]:
    """(t0, t1, nodes) of a run from its manifest.json."""
    man = json.loads((store.run_dir(key) / "manifest.json").read_text())
    return int(man["window"]["start"]), int(man["window"]["end"]), int(man["system"]["nodes"])


def fidelity_table(store: ResultStore, runs: pd.DataFrame, variants: list[str], reference: list[str], *,
                   read: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Every variant against the recorded schedule, per (dataset, window), on seed
    :data:`REFERENCE_SEED`: one row per variant with ``dataset``, ``window``, ``variant``, ``key``,
    ``reference_key``, every figure of :data:`core.fidelity.FIGURE_KEYS` and ``exclusions`` (JSON
    object reason -> jobs, as :func:`core.fidelity.compare` counts them, plus jobs not in the
    reference's window).

    ``runs``: every run (one row per run with ``key``, ``dataset``, ``window``, ``seed``, ``variant``);
    ``variants``: the variants to compare (grid order); ``reference``: the replay variants (grid
    order; the first present in a window is the reference). Reads each run's jobs.parquet and
    manifest.json through ``store``; ``read``: the reference schedules already read, by run key
    (:func:`reference_table` given the same dict reads none again). Empty when no window has a
    reference run at the reference seed."""
    rows = []
    r0 = runs[runs["seed"] == REFERENCE_SEED]
    for (ds, win), g in r0.groupby(["dataset", "window"], sort=False):
        if (hit := _reference_run(g, reference)) is None:
            continue
        ref_key = hit[1]
        ref = _reference(store, ref_key, read)
        known = set(ref["trace_index"])
        for v in variants:
            hit = g[g["variant"] == v]
            if hit.empty:
                continue
            key = str(hit["key"].iloc[0])
            t0, t1, nodes = _window(store, key)
            tw = _schedule(store, key)
            inside = tw["trace_index"].isin(known)
            fig = compare(ref, tw[inside], t0, t1, nodes)
            excl = dict(fig.pop("exclusions"))
            if (~inside).any():
                excl[_NOT_IN_REFERENCE] = int((~inside).sum())
            rows.append({"dataset": ds, "window": win, "variant": v, "key": key, "reference_key": ref_key,
                         **{k: np.nan if fig.get(k) is None else fig[k] for k in FIGURE_KEYS},
                         "exclusions": json.dumps(excl, sort_keys=True)})
    out = pd.DataFrame(rows, columns=["dataset", "window", "variant", "key", "reference_key", *FIGURE_KEYS,
                                      "exclusions"])
    return out.astype({k: "float64" for k in FIGURE_KEYS if k != "jobs_compared"} | {"jobs_compared": "Int64"})


_REF_COLUMNS = ["dataset", "window", "variant", "key", "jobs_submitted", "jobs_recorded", "jobs_unrecorded",
                "jobs_never_ran", "wait_mean_s", "wait_p95_s", "replay_runs_unused", "replay_runs_other_seeds"]


def reference_table(store: ResultStore, runs: pd.DataFrame, reference: list[str], *,
                    read: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The reference row of every (dataset, window) that has a replay run of seed
    :data:`REFERENCE_SEED`: the recorded schedule's own figures over the jobs submitted in the
    window (``[start, end)`` of the replay's manifest): ``jobs_submitted``; ``jobs_recorded``, those
    that ran with a recorded start (their ``wait_mean_s`` and ``wait_p95_s``, numpy linear quantile;
    NaN without one); ``jobs_unrecorded``, those that ran without a recorded start (the log records no
    schedule for them: 0 compared when all are so); ``jobs_never_ran`` (no run time: cancelled while
    queued); ``replay_runs_unused``, the window's other replay runs of that seed (an axis replay
    ignores: the first in grid order is the reference) and ``replay_runs_other_seeds``, its replay
    runs of other seeds (perturbed: not a record). Arguments as :func:`fidelity_table`."""
    rows = []
    is_ref = runs["variant"].isin(reference)
    for (ds, win), g in runs[is_ref].groupby(["dataset", "window"], sort=False):
        g0 = g[g["seed"] == REFERENCE_SEED]
        if (hit := _reference_run(g0, reference)) is None:
            continue
        ref_v, key = hit
        t0, t1, _ = _window(store, key)
        ref = _reference(store, key, read)
        sub = ref["submit_time"].to_numpy(dtype="int64")
        inw = (sub >= t0) & (sub < t1)
        split = ran_split(ref, inw)
        n, ran = split.counts(), split.ran
        start = ref["start_time"].astype("Int64").to_numpy(dtype="float64", na_value=np.nan)
        waits = start[ran] - sub[ran]
        rows.append({"dataset": ds, "window": win, "variant": ref_v, "key": key, "jobs_submitted": int(inw.sum()),
                     "jobs_recorded": n["ran"], "jobs_unrecorded": n["unrecorded"], "jobs_never_ran": n["never_ran"],
                     "wait_mean_s": float(waits.mean()) if len(waits) else np.nan,
                     "wait_p95_s": float(np.quantile(waits, 0.95)) if len(waits) else np.nan,
                     "replay_runs_unused": int(len(g0) - 1),
                     "replay_runs_other_seeds": int((g["seed"] != REFERENCE_SEED).sum())})
    return pd.DataFrame(rows, columns=_REF_COLUMNS)


def _rel(x) -> str:
    if x is None or not np.isfinite(x):
        return "—"
    text = format_number(100 * x, 2, decimals=0 if abs(100 * x) >= 10 else 1).replace("-", "−")
    return ("+" if not text.startswith("−") and text.strip("0.") else "") + text


def _num(x, scale: float = 1.0, decimals: int = 2) -> str:
    return "—" if x is None or not np.isfinite(x) else format_number(x / scale, decimals=decimals)


def _left_out(exclusions: str) -> str:
    """The reasons a variant's jobs of the window were not compared, for people (submitted outside
    the window aside: every variant's job table holds the jobs running or queued at its start)."""
    ex = {k: v for k, v in json.loads(exclusions).items() if k != "submitted outside the reported window" and v}
    return "; ".join(f"{v:,} {k}" for k, v in ex.items())


def section_fidelity(pg, store: ResultStore, runs: pd.DataFrame, variants: list[str], reference: list[str]) -> None:
    """Write the fidelity section (a table per dataset and window, ``fidelity.csv`` and
    ``fidelity_reference.csv``).

    ``pg``: the report's page; ``runs``: every run (reference included); ``variants``: the ranked
    variants (grid order); ``reference``: the replay variants (see :func:`fidelity_table`)."""
    pg.h(2, TITLE, SECTION_ID)
    pg.p("The recorded schedule (policy replay) is the reference row, not a ranked variant: the log's own start "
         "of every job (its recorded start; end = start + its recorded run time), read from the replay run's jobs "
         "table, not the replay's simulated starts (which a window's end cuts short). Each variant's schedule of "
         f"the trace as recorded (seed {REFERENCE_SEED}) is compared with it over the jobs submitted in the window "
         "(core/fidelity.py, as twinsweep validate does; docs/validation.md): relative errors (twin − record) / "
         "record of the mean and p95 wait and of the mean bounded slowdown (τ = 10 s), the median |start − "
         "recorded start|, the share of jobs starting within an hour of their recorded start, the "
         "Kolmogorov–Smirnov and 1-Wasserstein distances of the wait distributions, and the correlation of the "
         "hourly busy nodes. Jobs submitted before the window, placed at their recorded start by the variant "
         "(running at the window start), that never ran in the log or ran without a recorded start, or that the "
         "variant did not start by the window's end are left out; the recorded wait beside each variant is over "
         "the jobs compared with it, so a variant that leaves long-waiting jobs queued is compared on fewer jobs "
         "(counts below and in fidelity.csv). Closeness to the record is not a ranking objective: it says which "
         "policy behaves most like the machine did.")
    read: dict[str, pd.DataFrame] = {}  # each reference schedule read once, for both tables
    table = fidelity_table(store, runs, variants, reference, read=read)
    refs = reference_table(store, runs, reference, read=read)
    other_seeds = int(refs["replay_runs_other_seeds"].sum()) if len(refs) else 0
    if refs.empty:
        n = int(runs["variant"].isin(reference).sum())
        pg.p(f"No comparison: no window has a replay run of seed {REFERENCE_SEED} (the trace as recorded), the "
             f"only seed whose replay is the recorded schedule ({n:,} replay run(s) of other seeds are not a record).")
        return
    if other_seeds:
        pg.p(f"{other_seeds:,} replay run(s) of seeds other than {REFERENCE_SEED} are not used: their run and "
             "submit times are perturbed, so they replay no record.")
    L = FIGURE_LABELS
    for _, r in refs.iterrows():
        ds, win = r["dataset"], r["window"]
        t = table[(table["dataset"] == ds) & (table["window"] == win)]
        t = t.assign(_a=t["wait_mean_rel_error"].abs()).sort_values("_a", kind="mergesort", na_position="last")
        pg.h(3, f"{ds} / {win}")
        parts = [f"{r['jobs_recorded']:,} ran with a recorded start"]
        if r["jobs_unrecorded"]:
            parts.append(f"{r['jobs_unrecorded']:,} ran without one (the log records no start for them)")
        if r["jobs_never_ran"]:
            parts.append(f"{r['jobs_never_ran']:,} never ran (no run time recorded)")
        unused = (f" ({r['replay_runs_unused']:,} other replay run(s) of this window and seed, with other values of "
                  "the grid's other axes, are not used: the log's schedule they hold is the same)"
                  ) if r["replay_runs_unused"] else ""
        pg.p(f"Reference: the recorded schedule held by replay run <code>{html.escape(str(r['key'])[:12])}</code>"
             f"{unused}. Of the {r['jobs_submitted']:,} jobs submitted in the window, {', '.join(parts)}.", raw=True)
        if r["jobs_recorded"] == 0:
            pg.p("No recorded schedule in this window: no job submitted in it has a recorded start, so there is "
                 "nothing to compare any variant with (a replay run starts such jobs where it can, and those starts "
                 "are no record).")
            continue
        best = t.iloc[0] if len(t) else None
        if best is not None and np.isfinite(best["wait_mean_rel_error"]):
            short = int(r["jobs_recorded"]) - int(best["jobs_compared"])
            caveat = (f"; compared on {int(best['jobs_compared']):,} of the {r['jobs_recorded']:,} jobs with a recorded "
                      f"start: {short:,} it did not start in the window or placed at their recorded start are not in "
                      "its figures") if short > 0 else ""
            pg.p(f"Closest to the recorded mean wait ({_num(best['wait_mean_ref_s'], 3600)} h over the jobs compared "
                 f"with it): <b>{html.escape(str(best['variant']))}</b> ({_rel(best['wait_mean_rel_error'])} %"
                 f"{html.escape(caveat)}).", raw=True)
            # a mean can match while every job starts elsewhere: name the closest job by job too
            within = t["start_within_1h_frac"].astype("float64")
            if within.notna().any():
                jb = t.loc[within.idxmax()]
                same = jb["variant"] == best["variant"]
                pg.p(f"Closest job by job (the most jobs starting within an hour of their recorded start): "
                     + ("the same variant" if same else f"<b>{html.escape(str(jb['variant']))}</b>")
                     + f", {format_number(100 * float(jb['start_within_1h_frac']), 2)} % of its "
                     f"{int(jb['jobs_compared']):,} compared jobs.", raw=True)
        shown = pd.DataFrame({
            "variant": t["variant"],
            L["jobs_compared"]: t["jobs_compared"].astype("Int64"),
            L["wait_mean_ref_s"]: [_num(x, 3600) for x in t["wait_mean_ref_s"]],
            L["wait_mean_twin_s"]: [_num(x, 3600) for x in t["wait_mean_twin_s"]],
            L["wait_mean_rel_error"]: [_rel(x) for x in t["wait_mean_rel_error"]],
            L["wait_p95_rel_error"]: [_rel(x) for x in t["wait_p95_rel_error"]],
            L["bsld_mean_rel_error"]: [_rel(x) for x in t["bsld_mean_rel_error"]],
            L["start_error_median_s"]: [_num(x, 3600) for x in t["start_error_median_s"]],
            L["start_within_1h_frac"]: [_num(x, 0.01, 0) for x in t["start_within_1h_frac"]],
            L["wait_ks"]: [_num(x) for x in t["wait_ks"]],
            L["wait_w1_s"]: [_num(x, 3600) for x in t["wait_w1_s"]],
            L["occupancy_corr_hourly"]: [_num(x) for x in t["occupancy_corr_hourly"]]})
        ref_row = pd.DataFrame({c: ["—"] for c in shown.columns} | {  # the reference has no error to itself
            "variant": [f"recorded schedule ({r['variant']}, reference)"],
            L["jobs_compared"]: pd.array([r["jobs_recorded"]], dtype="Int64"),
            L["wait_mean_ref_s"]: [_num(r["wait_mean_s"], 3600)]})
        pg.table(pd.concat([ref_row, shown], ignore_index=True), key_cols=1, max_cols=6)
        left = [(v, x) for v, e in zip(t["variant"], t["exclusions"]) if (x := _left_out(e))]
        if left:  # a variant's name may hold ':' (options.accounts_in=collect:replay): never split on it
            pg.p("Left out of the comparison (beyond the jobs submitted outside the window): " + "; ".join(
                f"<b>{html.escape(str(v))}</b>: {html.escape(x)}" for v, x in left) + ".", raw=True)
    pg.csv(table, "fidelity.csv")
    pg.csv(refs, "fidelity_reference.csv")
