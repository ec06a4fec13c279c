"""The report's fidelity section (``fidelity``, issue 15 item 4): when a study's grid includes the
recorded schedule (``policy = "replay"``), that schedule is the reference row, and every variant is
compared with it per dataset and window (:func:`twinsweep.core.fidelity.compare`: mean / p95 wait
and mean bounded slowdown relative errors, per-job start errors, KS and 1-Wasserstein distances of
the wait distributions, hourly occupancy correlation).

The recorded schedule exists only for the trace as recorded, so the comparison is made on seed 0
(:data:`REFERENCE_SEED`; a seed > 0 perturbs run and submit times, and its replay is not a record
of anything). The reference is the replay run's own schedule (its ``jobs.parquet``: jobs started at
their recorded starts); when the grid gives replay several backfill values (replay ignores them),
the first in grid order is used. A variant's jobs that the replay's window does not hold are left
out and counted. :func:`fidelity_table` computes the table (``fidelity.csv``); :func:`section_fidelity`
renders it.
"""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from twinsweep.core.fidelity import FIGURE_KEYS, FIGURE_LABELS, compare, twin_schedule
from twinsweep.core.metrics import format_number

from .store import ResultStore

__all__ = ["fidelity_table", "section_fidelity", "SECTION_ID", "TITLE", "REFERENCE_SEED"]

SECTION_ID = "fidelity"
TITLE = "Fidelity: every variant against the recorded schedule"
#: The seed whose runs are compared with the recorded schedule: the unperturbed trace.
REFERENCE_SEED = 0
_COLUMNS = ("trace_index", "submit_time", "start_time", "end_time", "nodes", "prepopulated")
_NOT_IN_REFERENCE = "not in the recorded schedule's window"


def _schedule(store: ResultStore, key: str) -> pd.DataFrame:
    path = store.run_dir(key) / "jobs.parquet"
    have = set(pq.read_schema(path).names)
    return twin_schedule(pd.read_parquet(path, columns=[c for c in _COLUMNS if c in have]))


def _window(store: ResultStore, key: str) -> tuple[int, int, int]:
    """(t0, t1, nodes) of a run from its manifest.json."""
    man = json.loads((store.run_dir(key) / "manifest.json").read_text())
    return int(man["window"]["start"]), int(man["window"]["end"]), int(man["system"]["nodes"])


def fidelity_table(store: ResultStore, runs: pd.DataFrame, variants: list[str], reference: list[str]) -> pd.DataFrame:
    """Every variant against the recorded schedule, per (dataset, window), on seed
    :data:`REFERENCE_SEED`: one row per variant with ``dataset``, ``window``, ``variant``, ``key``,
    ``reference_key``, every figure of :data:`core.fidelity.FIGURE_KEYS` and ``exclusions`` (JSON
    object reason -> jobs, as :func:`core.fidelity.compare` counts them, plus jobs not in the
    reference's window).

    ``runs``: every run (one row per run with ``key``, ``dataset``, ``window``, ``seed``, ``variant``);
    ``variants``: the variants to compare (grid order); ``reference``: the replay variants (grid
    order; the first present in a window is the reference). Reads each run's jobs.parquet and
    manifest.json through ``store``. Empty when no window has a reference run at the reference seed."""
    rows = []
    r0 = runs[runs["seed"] == REFERENCE_SEED]
    for (ds, win), g in r0.groupby(["dataset", "window"], sort=False):
        ref_v = next((v for v in reference if (g["variant"] == v).any()), None)
        if ref_v is None:
            continue
        ref_key = str(g.loc[g["variant"] == ref_v, "key"].iloc[0])
        ref = _schedule(store, ref_key)
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


def _rel(x) -> str:
    if x is None or not np.isfinite(x):
        return "—"
    text = format_number(100 * x, 2, decimals=0 if abs(100 * x) >= 10 else 1).replace("-", "−")
    return ("+" if not text.startswith("−") and text.strip("0.") else "") + text


def _num(x, scale: float = 1.0, decimals: int = 2) -> str:
    return "—" if x is None or not np.isfinite(x) else format_number(x / scale, decimals=decimals)


def section_fidelity(pg, store: ResultStore, runs: pd.DataFrame, variants: list[str], reference: list[str]) -> None:
    """Write the fidelity section (a table per dataset and window, ``fidelity.csv``).

    ``pg``: the report's page; ``runs``: every run (reference included); ``variants``: the ranked
    variants (grid order); ``reference``: the replay variants (see :func:`fidelity_table`)."""
    pg.h(2, TITLE, SECTION_ID)
    pg.p("The recorded schedule (policy replay: every job started at its recorded start) is the reference row, "
         "not a ranked variant. Each variant's schedule of the trace as recorded (seed 0) is compared with it over "
         "the window (core/fidelity.py, as twinsweep validate does; docs/validation.md): relative errors (twin − "
         "record) / record of the mean and p95 wait and of the mean bounded slowdown (τ = 10 s), the median "
         "|start − recorded start|, the share of jobs starting within an hour of their recorded start, the "
         "Kolmogorov–Smirnov and 1-Wasserstein distances of the wait distributions, and the correlation of the "
         "hourly busy nodes. Jobs submitted before the window, placed at their recorded start (running at the "
         "window start) or never started by the variant are left out (counts in fidelity.csv). Closeness to the "
         "record is not a ranking objective: it says which policy behaves most like the machine did.")
    table = fidelity_table(store, runs, variants, reference)
    if table.empty:
        pg.p(f"No comparison: no window has a replay run of seed {REFERENCE_SEED} (the trace as recorded), the "
             "only seed whose replay is the recorded schedule.")
        return
    for (ds, win), t in table.groupby(["dataset", "window"], sort=False):
        t = t.assign(_a=t["wait_mean_rel_error"].abs()).sort_values("_a", kind="mergesort", na_position="last")
        pg.h(3, f"{ds} / {win}")
        best = t.iloc[0]
        ref_wait = best["wait_mean_ref_s"]
        if np.isfinite(best["wait_mean_rel_error"]):
            pg.p(f"Closest to the recorded mean wait ({_num(ref_wait, 3600)} h over the compared jobs): "
                 f"<b>{html.escape(str(best['variant']))}</b> ({_rel(best['wait_mean_rel_error'])} %). Reference run "
                 f"<code>{html.escape(str(best['reference_key'])[:12])}</code>.", raw=True)
        L = FIGURE_LABELS
        shown = pd.DataFrame({
            "variant": t["variant"],
            L["jobs_compared"]: t["jobs_compared"].astype("Int64"),
            L["wait_mean_rel_error"]: [_rel(x) for x in t["wait_mean_rel_error"]],
            L["wait_p95_rel_error"]: [_rel(x) for x in t["wait_p95_rel_error"]],
            L["bsld_mean_rel_error"]: [_rel(x) for x in t["bsld_mean_rel_error"]],
            L["start_error_median_s"]: [_num(x, 3600) for x in t["start_error_median_s"]],
            L["start_within_1h_frac"]: [_num(x, 0.01, 0) for x in t["start_within_1h_frac"]],
            L["wait_ks"]: [_num(x) for x in t["wait_ks"]],
            L["wait_w1_s"]: [_num(x, 3600) for x in t["wait_w1_s"]],
            L["occupancy_corr_hourly"]: [_num(x) for x in t["occupancy_corr_hourly"]]})
        pg.table(shown, key_cols=1, max_cols=5)
    pg.csv(table, "fidelity.csv")
