"""Aggregation of a sweep's per-run tables with Dask (DESIGN.md §6).

For every group — (dataset, window, every grid axis: policy, backfill, ...) — and every metric,
the distribution across seeds is summarised with *exact* statistics: ``n``, ``min``, ``mean``,
``median``, ``std`` (sample, ddof=1; NaN for n=1), ``max`` and the quantiles ``q05``, ``q25``,
``q75``, ``q95`` computed from the fully sorted values with linear interpolation (numpy's
``linear`` method, Hyndman & Fan type 7) — no sketches (t-digest) or approximations. Dask's
groupby-apply moves each complete group to one partition, so every statistic sees all its values.
NaN values (a metric undefined for a run) are left out of the group's statistics; ``n`` counts
the values used.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from twinsweep.core.metrics import summary_metrics

#: Summary columns, in order.
STAT_COLUMNS = ("n", "min", "mean", "median", "std", "max", "q05", "q25", "q75", "q95")
QUANTILES = {"q05": 0.05, "q25": 0.25, "q75": 0.75, "q95": 0.95}


def exact_stats(values: np.ndarray) -> dict[str, float]:
    """Exact summary of a 1-D array (NaNs dropped): see :data:`STAT_COLUMNS` and the module doc."""
    v = np.sort(np.asarray(values, dtype="float64"))
    v = v[~np.isnan(v)]
    n = len(v)
    if n == 0:
        return {"n": 0, **{k: float("nan") for k in STAT_COLUMNS[1:]}}
    out = {"n": n, "min": float(v[0]), "mean": float(v.mean()), "median": float(np.quantile(v, 0.5)),
           "std": float(v.std(ddof=1)) if n > 1 else float("nan"), "max": float(v[-1])}
    for name, q in QUANTILES.items():
        out[name] = float(np.quantile(v, q, method="linear"))
    return out


def _group_stats(df: pd.DataFrame) -> pd.DataFrame:
    s = exact_stats(df["value"].to_numpy(dtype="float64", na_value=np.nan))
    return pd.DataFrame({k: [s[k]] for k in STAT_COLUMNS}).astype({"n": "int64"})


def group_columns(root: str | os.PathLike, table: pd.DataFrame | None = None) -> list[str]:
    """Grouping columns of a results folder: dataset, window and the study's grid axes (from
    ``study.json``), i.e. everything that identifies a variant except the seed."""
    from .spec import study_axes

    root = Path(root)
    axes: list[str] = []
    p = root / "study.json"
    if p.exists():
        axes = study_axes(json.loads(p.read_text()))
    elif table is not None:
        axes = [c for c in ("policy", "backfill", "kill", "sample_period") if c in table.columns]
    return ["dataset", "window", *axes]


def aggregate(runs_parquet: str | os.PathLike, group_by: Sequence[str], metrics: Sequence[str] | None = None,
              npartitions: int | None = None, order: pd.DataFrame | None = None) -> pd.DataFrame:
    """Exact per-group distributions across seeds, computed with Dask.

    Reads ``runs_parquet`` (one row per run) with ``dask.dataframe``, melts ``metrics`` to long
    form and applies :func:`exact_stats` per ``group_by`` + ``metric`` group (``metrics``: default the
    catalogue's summary metrics, :func:`twinsweep.core.metrics.summary_metrics`). Returns a pandas
    DataFrame: ``group_by`` columns (as str), ``metric``, then :data:`STAT_COLUMNS`; sorted by group
    then metric (in ``metrics`` order). Group values sort in their order of appearance in ``order``
    (e.g. the plan, so datasets and axis values keep the spec's order), else alphabetically.
    Metrics absent from the table are skipped.
    """
    with warnings.catch_warnings():  # dask's parquet reader uses pandas APIs that pandas 3.1 deprecates
        warnings.filterwarnings("ignore", message=".*inplace keyword.*")
        return _aggregate(runs_parquet, group_by, metrics, npartitions, order)


def _aggregate(runs_parquet, group_by, metrics, npartitions, order) -> pd.DataFrame:
    import dask
    import dask.dataframe as dd

    ddf = dd.read_parquet(str(runs_parquet))
    if metrics is None:
        metrics = summary_metrics()
    metrics = [m for m in metrics if m in ddf.columns]
    group_by = list(group_by)
    if npartitions:
        ddf = ddf.repartition(npartitions=npartitions)
    cols = group_by + metrics
    ddf = ddf[cols]
    # group keys as strings so that options values (JSON text), bools and ints group alike
    for c in group_by:
        ddf[c] = ddf[c].astype(str)
    long = ddf.melt(id_vars=group_by, value_vars=metrics, var_name="metric", value_name="value")
    long["value"] = long["value"].astype("float64")
    meta = pd.DataFrame({k: pd.Series(dtype="int64" if k == "n" else "float64") for k in STAT_COLUMNS})
    with dask.config.set(scheduler="threads"):
        res = long.groupby(group_by + ["metric"]).apply(_group_stats, meta=meta).compute()
    res = res.reset_index()
    res = res.drop(columns=[c for c in res.columns if c.startswith("level_")])
    keys = []
    for c in group_by:
        if order is not None and c in order.columns:
            seq = list(dict.fromkeys(order[c].astype(str)))
            rank = {v: i for i, v in enumerate(seq)}
            res[f"_o_{c}"] = res[c].map(lambda v: rank.get(v, len(seq)))
            keys += [f"_o_{c}", c]
        else:
            keys.append(c)
    mo = {m: i for i, m in enumerate(metrics)}
    res["_m"] = res["metric"].map(mo)
    res = res.sort_values(keys + ["_m"], kind="mergesort").reset_index(drop=True)
    return res[group_by + ["metric", *STAT_COLUMNS]]


def aggregate_results(root: str | os.PathLike, metrics: Sequence[str] | None = None) -> Path:
    """Aggregate a results folder's ``runs.parquet`` into ``aggregate.parquet`` and
    ``aggregate.csv`` (metrics: the catalogue's summary metrics + the study's rank and report metrics); returns the
    parquet path. Raises FileNotFoundError when runs.parquet is missing."""
    root = Path(root)
    table = root / "runs.parquet"
    if not table.exists():
        raise FileNotFoundError(f"{table} not found")
    df = pd.read_parquet(table)
    if metrics is None:
        metrics = summary_metrics()
        p = root / "study.json"
        if p.exists():
            from .spec import study_metrics

            metrics += [m for m in study_metrics(json.loads(p.read_text())) if m not in metrics]
    # metrics no run of this study reports (e.g. cooling metrics in a study without cooling)
    metrics = [m for m in metrics if m in df.columns and df[m].notna().any()]
    out = root / "aggregate.parquet"
    if df.empty or "dataset" not in df.columns:
        agg = pd.DataFrame(columns=["dataset", "window", "metric", *STAT_COLUMNS])
    else:
        plan = root / "plan.csv"
        order = pd.read_csv(plan, dtype=str, keep_default_na=False) if plan.exists() else None
        agg = aggregate(table, group_columns(root, df), metrics, order=order)
    from twinsweep.core.atomic import atomic_write, atomic_write_text

    atomic_write(out, lambda p: agg.to_parquet(p, index=False))
    atomic_write_text(root / "aggregate.csv", agg.to_csv(index=False))
    return out
