"""Exact per-variant summaries of a sweep's run table (``runs.parquet`` → ``aggregate.parquet``).

For every group — (dataset, window, every grid axis: policy, backfill, ...) — and every metric,
the distribution across seeds is summarised with *exact* statistics: ``n``, ``min``, ``mean``,
``median``, ``std`` (sample, ddof=1; NaN for n=1), ``max`` and the quantiles ``q05``, ``q25``,
``q75``, ``q95`` computed from the fully sorted values with linear interpolation (numpy's
``linear`` method, Hyndman & Fan type 7, bit for bit as ``numpy.quantile``) — no sketches
(t-digest) or approximations. NaN values (a metric undefined for a run) are left out of the
group's statistics; ``n`` counts the values used.

The run table has one row per run (100,000 runs are a few tens of MB), so it is summarised in
memory with vectorised numpy over all groups at once (one sort, segment reductions), not with a
Python function per group: 100,000 runs take about a second (``bench/bench_aggregate.py``). The
out-of-core work — distributions over every job and timeline sample of every run — is
:mod:`twinsweep.sweep.distributions`, with Dask.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from twinsweep.core.metrics import summary_metrics

from .store import ResultStore
from twinsweep.core.atomic import atomic_write, atomic_write_text

#: Summary columns, in order.
STAT_COLUMNS = ("n", "min", "mean", "median", "std", "max", "q05", "q25", "q75", "q95")
QUANTILES = {"q05": 0.05, "q25": 0.25, "q75": 0.75, "q95": 0.95}


def quantile_positions(n, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order statistics and weight of the linear (type 7) quantile ``q`` of samples of size ``n``.

    ``n`` and ``q`` broadcast (int counts >= 1; q in [0, 1]). Returns ``(lo, hi, gamma)``: 0-based
    ranks in the sorted sample and the interpolation weight, exactly as ``numpy.quantile`` (method
    ``"linear"``) computes them: virtual index ``h = (n - 1)·q``, ``lo = floor(h)``, ``hi = lo + 1``,
    ``gamma = h - lo``, both ranks clipped to ``n - 1``. Combine the values with :func:`lerp`.
    """
    n = np.asarray(n, dtype="int64")
    q = np.asarray(q, dtype="float64")
    h = (n - 1) * q
    lo = np.floor(h)
    gamma = h - lo
    lo = lo.astype("int64")
    top = h >= n - 1
    lo = np.where(top, n - 1, lo)
    hi = np.where(top, n - 1, lo + 1)
    return lo, hi, gamma


def lerp(a, b, gamma) -> np.ndarray:
    """``numpy.quantile``'s linear interpolation between the order statistics ``a`` <= ``b``
    (numpy's ``_lerp``: ``a + (b - a)·gamma``, evaluated from ``b`` when ``gamma >= 0.5``), so
    that quantiles computed from order statistics equal ``numpy.quantile`` bit for bit."""
    a = np.asarray(a, dtype="float64")
    b = np.asarray(b, dtype="float64")
    gamma = np.asarray(gamma, dtype="float64")
    diff = b - a
    with np.errstate(invalid="ignore"):
        return np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)


def grouped_exact_stats(codes, values, n_groups: int) -> dict[str, np.ndarray]:
    """Exact :data:`STAT_COLUMNS` of ``values`` per group, for all groups at once.

    Args:
        codes: int group code of each value, in ``[0, n_groups)``, shape ``(m,)``.
        values: float values, shape ``(m,)``; NaNs are left out (``n`` counts the others).
        n_groups: number of groups (groups without values get ``n = 0`` and NaN statistics).
    Returns: ``{column: array of length n_groups}`` for every :data:`STAT_COLUMNS` entry
    (``n`` int64, the rest float64). One lexicographic sort of (code, value), then segment
    reductions: min/max are the segment ends, quantiles the type-7 interpolation of the order
    statistics (:func:`quantile_positions`, :func:`lerp`), ``std`` the two-pass sample standard
    deviation (sum of squared deviations from the group mean, ddof = 1).
    Raises ValueError when the shapes differ or a code is out of range.
    """
    c = np.asarray(codes, dtype="int64")
    v = np.asarray(values, dtype="float64")
    if c.shape != v.shape or c.ndim != 1:
        raise ValueError(f"codes and values must be 1-D of one length, got {c.shape} and {v.shape}")
    if len(c) and (c.min() < 0 or c.max() >= n_groups):
        raise ValueError(f"group codes must lie in [0, {n_groups})")
    ok = ~np.isnan(v)
    c, v = c[ok], v[ok]
    order = np.lexsort((v, c))
    c, v = c[order], v[order]
    n = np.bincount(c, minlength=n_groups).astype("int64")
    start = np.zeros(n_groups, dtype="int64")
    np.cumsum(n[:-1], out=start[1:])
    has = n > 0
    nn = np.where(has, n, 1)

    def at(rank):  # value of 0-based rank within each group (NaN for empty groups)
        return np.where(has, v[np.minimum(start + rank, max(len(v) - 1, 0))] if len(v) else np.nan, np.nan)

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # a spread beyond float64: inf, as numpy's std
        mean = np.where(has, np.bincount(c, weights=v, minlength=n_groups) / nn, np.nan)
        dev = v - mean[c]
        ss = np.bincount(c, weights=dev * dev, minlength=n_groups)
        std = np.where(n > 1, np.sqrt(ss / np.maximum(n - 1, 1)), np.nan)
    out = {"n": n, "min": at(0), "mean": mean}

    def quant(q: float) -> np.ndarray:
        lo, hi, g = quantile_positions(nn, q)
        return np.where(has, lerp(at(lo), at(hi), g), np.nan)

    out["median"] = quant(0.5)
    out["std"] = std
    out["max"] = at(nn - 1)
    for name, q in QUANTILES.items():
        out[name] = quant(q)
    return out


def exact_stats(values: np.ndarray) -> dict[str, float]:
    """Exact summary of a 1-D array (NaNs dropped): see :data:`STAT_COLUMNS` and the module doc."""
    v = np.asarray(values, dtype="float64").ravel()
    s = grouped_exact_stats(np.zeros(len(v), dtype="int64"), v, 1)
    return {k: (int(s[k][0]) if k == "n" else float(s[k][0])) for k in STAT_COLUMNS}


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


def group_codes(table: pd.DataFrame, group_by: Sequence[str], order: pd.DataFrame | None = None
                ) -> tuple[np.ndarray, pd.DataFrame]:
    """Number the groups of ``table`` (one code per row) in report order.

    Group values are compared as strings (options values are JSON text, and bools and ints of
    one axis must group alike). Groups sort by their values' order of first appearance in
    ``order`` (e.g. plan.csv, so datasets and axis values keep the spec's order), then
    alphabetically for values ``order`` does not hold. Returns ``(codes, groups)``: int64 codes
    aligned with ``table``'s rows, and one row per group (``group_by`` columns as str) whose
    position is its code.
    """
    group_by = list(group_by)
    keys = pd.DataFrame({c: table[c].astype(str).to_numpy() for c in group_by}, index=np.arange(len(table)))
    sort_cols = []
    for c in group_by:
        if order is not None and c in order.columns:
            seq = list(dict.fromkeys(order[c].astype(str)))
            rank = pd.Series(np.arange(len(seq)), index=pd.Index(seq, dtype=object))
            keys[f"_o_{c}"] = keys[c].map(rank).fillna(len(seq)).astype("int64")
            sort_cols += [f"_o_{c}", c]
        else:
            sort_cols.append(c)
    if not group_by:
        return np.zeros(len(table), dtype="int64"), pd.DataFrame(index=range(1 if len(table) else 0))
    first = keys.drop_duplicates(group_by).sort_values(sort_cols, kind="mergesort").reset_index(drop=True)
    groups = first[group_by]
    code_of = pd.Series(np.arange(len(groups)), index=pd.MultiIndex.from_frame(groups))
    codes = code_of.reindex(pd.MultiIndex.from_frame(keys[group_by])).to_numpy(dtype="int64")
    return codes, groups.reset_index(drop=True)


def summarise(table: pd.DataFrame, group_by: Sequence[str], metrics: Sequence[str],
              order: pd.DataFrame | None = None) -> pd.DataFrame:
    """Exact per-group distributions of ``metrics`` across the rows of ``table`` (in memory,
    vectorised; see the module doc). Returns ``group_by`` columns (str), ``metric``, then
    :data:`STAT_COLUMNS`, sorted by group (see :func:`group_codes`) then metric (in ``metrics``
    order). Metrics absent from the table are skipped."""
    group_by = list(group_by)
    metrics = [m for m in metrics if m in table.columns]
    codes, groups = group_codes(table, group_by, order)
    G, M = len(groups), len(metrics)
    parts = []
    for m in metrics:  # one vectorised pass per metric over every group
        vals = pd.to_numeric(table[m], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        parts.append(grouped_exact_stats(codes, vals, G))
    rows = np.repeat(np.arange(G), M)  # group-major, metric-minor
    out = groups.iloc[rows].reset_index(drop=True) if G else pd.DataFrame(columns=group_by)
    out["metric"] = np.tile(np.asarray(metrics, dtype=object), G)
    for k in STAT_COLUMNS:
        col = np.column_stack([p[k] for p in parts]).ravel() if M and G else np.zeros(0)
        out[k] = col.astype("int64" if k == "n" else "float64")
    return out[group_by + ["metric", *STAT_COLUMNS]]


def aggregate(runs_parquet: str | os.PathLike, group_by: Sequence[str], metrics: Sequence[str] | None = None,
              order: pd.DataFrame | None = None) -> pd.DataFrame:
    """Exact per-group distributions across seeds of a run table file (:func:`summarise` over the
    columns ``group_by`` + ``metrics`` of ``runs_parquet``, read with pyarrow; ``metrics``: default
    the catalogue's summary metrics, :func:`twinsweep.core.metrics.summary_metrics`).
    Raises FileNotFoundError when the file is missing."""
    import pyarrow.parquet as pq

    if metrics is None:
        metrics = summary_metrics()

    pf = pq.ParquetFile(str(runs_parquet))
    have = set(pf.schema_arrow.names)
    cols = [c for c in dict.fromkeys([*group_by, *metrics]) if c in have]
    table = pf.read(columns=cols, use_threads=False).to_pandas()
    return summarise(table, group_by, metrics, order=order)


def aggregate_results(root: str | os.PathLike, metrics: Sequence[str] | None = None, *,
                      plan: pd.DataFrame | None = None) -> Path:
    """Aggregate a results folder's ``runs.parquet`` into ``aggregate.parquet`` and
    ``aggregate.csv`` (metrics: the catalogue's summary metrics + the study's rank and report
    metrics); returns the parquet path. ``plan``: plan.csv as :meth:`ResultStore.read_plan`
    gives it, when the caller has read it (default: read here). Raises FileNotFoundError when
    runs.parquet is missing."""
    import pyarrow.parquet as pq

    root = Path(root)
    table = ResultStore(root).table_path
    if not table.exists():
        raise FileNotFoundError(f"{table} not found")
    pf = pq.ParquetFile(str(table))
    have = pf.schema_arrow.names
    if metrics is None:
        metrics = summary_metrics()
        p = root / "study.json"
        if p.exists():
            from .spec import study_metrics

            metrics += [m for m in study_metrics(json.loads(p.read_text())) if m not in metrics]
    gcols = group_columns(root, pd.DataFrame(columns=have))
    # only the columns the summary needs (a table of 100,000 runs has ~100 columns)
    df = pf.read(columns=[c for c in dict.fromkeys([*gcols, *metrics]) if c in have], use_threads=False).to_pandas()
    # metrics no run of this study reports (e.g. cooling metrics in a study without cooling)
    metrics = [m for m in metrics if m in df.columns and df[m].notna().any()]
    out = root / "aggregate.parquet"
    if df.empty or "dataset" not in df.columns:
        agg = pd.DataFrame(columns=["dataset", "window", "metric", *STAT_COLUMNS])
    else:
        agg = summarise(df, gcols, metrics, order=plan if plan is not None else ResultStore(root).read_plan())

    atomic_write(out, lambda p: agg.to_parquet(p, index=False))
    atomic_write_text(root / "aggregate.csv", agg.to_csv(index=False))
    return out
