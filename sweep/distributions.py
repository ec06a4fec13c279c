"""Pooled distributions over every job and every timeline sample of a sweep, computed with Dask.

``runs.parquet`` holds one number per run and metric; this module looks inside the runs: the
``jobs.parquet`` and ``timeline.parquet`` of every run (millions to billions of rows across a
large sweep), pooled over the seeds of each *variant* (dataset, window and every grid axis —
:func:`twinsweep.sweep.aggregate.group_columns`). Metrics (one value per job or per window pair):

* ``wait_s`` — ``start_time − submit_time`` of every finished job (``completed`` / ``timeout``)
  except those running at the window start (``prepopulated``: placed at their recorded start, their
  waits the log's and the same in every variant): the job set of stats.json's ``wait_*``
  (core/stats.py), so a run's ``wait_s`` values average to its ``wait_mean_s``.
* ``bsld`` — bounded slowdown ``max(1, (wait + run) / max(run, τ))``, τ = 10 s
  (:func:`twinsweep.core.stats.bounded_slowdown`; Feitelson et al., JSSPP 1997), over the same jobs
  (stats.json's ``bsld_mean`` is their mean).
* ``job_edp_js`` — per-job energy-delay product ``energy_j × run`` (J·s), the job's own DC
  energy from the engine, over every finished job, prepopulated ones included (work done in the
  window); stats.json's ``job_edp_sum_js`` is their sum. A job with unknown energy is counted in
  ``missing``.
* ``power_swing_1min_w`` / ``power_swing_15min_w`` — ``|P̄_{k+1} − P̄_k|`` of consecutive exact
  60 s / 900 s averages of the facility power (the population whose maximum and 95th percentile
  are stats.json's ``ramp_*``; core/power.py ``ramps``). The window averages are the means of the
  timeline's exact bin averages, so they need a sample period that divides the window; a run
  whose period does not is counted in ``runs_skipped`` for that metric.

Outputs, beside runs.parquet (written atomically; :func:`pooled_distributions`):

* ``distributions.parquet`` / ``.csv``: per variant and metric, ``runs`` (runs pooled),
  ``runs_skipped``, ``missing`` (NaN values left out), then the exact statistics of
  :data:`twinsweep.sweep.aggregate.STAT_COLUMNS` (n, min, mean, median, std, max, q05…q95).
* ``distribution_quantiles.parquet``: per variant and metric the exact quantiles at
  :data:`QUANTILE_GRID` (q = 0, 0.01, …, 1), for CDF plots.

Every quantile is exact: the type-7 interpolation (``numpy.quantile``'s default) between two
order statistics of the full pooled sample, bit for bit as ``numpy.quantile`` of the pooled
values, without holding the sample in one place. Method (an out-of-core radix selection):

1. *Scan* (one Dask task per partition of runs): read each run's two files (pyarrow, only the
   needed columns), compute the values, and write the partition's values as (code, key) sorted,
   where the code numbers (variant, metric) and the key is the value's IEEE-754 bit pattern made
   order-preserving as an unsigned integer; return a histogram of the keys' top 16 bits with
   count, sum, min and max per (code, bucket). Dask sums the histograms (``groupby().agg``).
2. From the histogram, every needed order statistic is located in its bucket (cumulative counts).
   A bucket whose min equals its max gives the value at once (ties, e.g. a wait of 0 s).
3. *Refine* (one Dask task per staged partition, repeated at most three times): buckets that are
   small enough are collected and sorted in the driver; larger ones get the histogram of their
   next 16 bits. After four levels a bucket holds one key, so the loop always ends. The first
   refinement also sums the squared deviations from each mean (two-pass variance).

So a worker never holds more than one partition (``partition_values`` values, about 12 bytes
each, plus one run's raw columns), the driver holds histograms and at most ``collect_values``
candidates, and the raw files are read exactly once (refinement reads the compact staged
partitions under ``.tmp-distributions-*/``, removed at the end).

Where it runs: the local threaded scheduler by default (``scheduler="threads"``; ``"processes"``
and ``"synchronous"`` too); a ``dask.distributed`` cluster with ``address="tcp://host:8786"``
(``scheduler="distributed"``); the study's Ray cluster with ``scheduler="ray"`` (Dask on Ray,
``ray.util.dask.ray_dask_get``; ``address`` = the Ray address, or the Ray this process already
joined). Workers of a cluster must see the results folder (shared filesystem), as the sweep's
workers do. On Slurm, start a Dask cluster with ``dask-jobqueue`` (docs/aggregation.md) and pass
its scheduler address. A sweep whose files fit in a single partition is computed in-process by
the same functions without Dask's scheduler (``scheduler="inline"``, chosen automatically then:
importing ``dask.dataframe`` alone costs 1.5–2.5 s on a 2-core machine, more than the work); it
keeps the partition's sorted (code, key) arrays in memory instead of staging them to a file.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from twinsweep.core.atomic import atomic_write, atomic_write_text
from twinsweep.core.errors import ConfigError
from twinsweep.core.stats import bounded_slowdown

from .aggregate import STAT_COLUMNS, QUANTILES, group_codes, group_columns, lerp, quantile_positions
from .store import ResultStore

#: Job-level metrics, in output order.
JOB_METRICS = ("wait_s", "bsld", "job_edp_js")  # labels, units, scales: core.metrics.pooled_metrics()
#: Timeline-level metrics and their averaging window (s).
SWING_METRICS = {"power_swing_1min_w": 60, "power_swing_15min_w": 900}
#: Every metric of the summaries, in output order.
DIST_METRICS = JOB_METRICS + tuple(SWING_METRICS)
#: Quantiles written to distribution_quantiles.parquet (percentiles 0..100).
QUANTILE_GRID = tuple(round(i / 100, 2) for i in range(101))
#: Output files (in the results folder).
SUMMARY = "distributions.parquet"
QUANTILES_FILE = "distribution_quantiles.parquet"
SCHEDULERS = ("auto", "inline", "threads", "processes", "synchronous", "distributed", "ray")

_DIGIT_BITS = 16
_LEVELS = 64 // _DIGIT_BITS
_NDIG = 1 << _DIGIT_BITS
#: special "digits" of the scan histogram (beyond every real 16-bit digit)
_DIG_MISSING, _DIG_RUNS, _DIG_SKIPPED = _NDIG, _NDIG + 1, _NDIG + 2
_SIGN = np.uint64(1 << 63)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_FINISHED = ("completed", "timeout")
_JOB_COLUMNS = ["status", "submit_time", "start_time", "end_time", "energy_j"]
_PREPOPULATED = "prepopulated"  # read when the jobs table has it (every run since it was added)
_HIST_META = {"code": "int64", "digit": "int64", "count": "int64", "sum": "float64", "vmin": "float64",
              "vmax": "float64"}
_REFINE_META = {"kind": "int8", "bid": "int64", "digit": "int64", "count": "int64", "vmin": "float64",
                "vmax": "float64", "value": "float64"}


# ------------------------------------------------------------------------------------ float keys
def float_keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys of float64 values (no NaN): ``a < b`` ⇔ ``key(a) < key(b)``.

    The IEEE-754 bit pattern with the sign bit set for non-negative values and every bit flipped
    for negative ones (the classic radix-sort transform); -0.0 is first made +0.0 so that equal
    values have equal keys. Inverse: :func:`key_values`.
    """
    v = np.asarray(values, dtype="float64") + 0.0  # -0.0 -> +0.0
    b = v.view(np.uint64)
    return np.where(b & _SIGN, ~b, b | _SIGN)


def key_values(keys: np.ndarray) -> np.ndarray:
    """float64 values of :func:`float_keys` keys."""
    k = np.asarray(keys, dtype=np.uint64)
    return np.where(k & _SIGN, k & ~_SIGN, ~k).view("float64")


# ------------------------------------------------------------------------------------ one run
def run_values(run_dir: str | os.PathLike, metrics: Sequence[str] = DIST_METRICS
               ) -> dict[str, tuple[np.ndarray | None, str]]:
    """The values one run contributes to each of ``metrics`` (names of :data:`DIST_METRICS`).

    Reads ``jobs.parquet`` (status, submit/start/end times, energy), ``timeline.parquet`` (time,
    facility power) and ``manifest.json`` (window, sample period) of ``run_dir``. Returns
    ``{metric: (values or None, reason)}``: float64 values (NaN where a job's energy is unknown),
    or None with the reason when the run cannot give that metric (sample period not dividing the
    swing window, irregular timeline). Only the files the metrics need are read. Raises
    ValueError naming the file when one is unreadable or lacks a column.
    """
    d = Path(run_dir)
    out: dict[str, tuple[np.ndarray | None, str]] = {}
    if any(m in JOB_METRICS for m in metrics):
        out.update(_job_values(d))
    swings = [m for m in metrics if m in SWING_METRICS]
    if swings:
        out.update(_swing_values(d, swings))
    return {m: out[m] for m in metrics}


def _job_values(d: Path) -> dict[str, tuple[np.ndarray | None, str]]:
    import pyarrow.parquet as pq

    out: dict[str, tuple[np.ndarray | None, str]] = {}
    path = d / "jobs.parquet"
    try:
        pf = pq.ParquetFile(path)
        cols = _JOB_COLUMNS + ([_PREPOPULATED] if _PREPOPULATED in pf.schema_arrow.names else [])
        t = pf.read(columns=cols, use_threads=False)
    except Exception as exc:  # noqa: BLE001 - named and re-raised
        raise ValueError(f"{path}: cannot read the run's jobs ({type(exc).__name__}: {exc})") from exc
    col = {c: t.column(c).to_numpy(zero_copy_only=False) for c in cols}
    start = col["start_time"].astype("float64")
    end = col["end_time"].astype("float64")
    fin = np.isin(col["status"].astype(object), _FINISHED) & np.isfinite(start) & np.isfinite(end)
    # jobs running at the window start (placed at their recorded start, their waits the log's, the
    # same in every variant) are left out of the wait and slowdown, as stats.json's wait_* / bsld_mean
    # do (core/stats.py); their energy is work done in the window, so job_edp_js keeps them
    pre = col[_PREPOPULATED].astype(bool) if _PREPOPULATED in col else np.zeros(len(fin), dtype=bool)
    own = ~pre[fin]
    start, end = start[fin], end[fin]
    wait = start - col["submit_time"].astype("float64")[fin]
    run = end - start
    out["wait_s"] = (wait[own], "")
    out["bsld"] = (bounded_slowdown(wait[own], run[own]), "")
    out["job_edp_js"] = (col["energy_j"].astype("float64")[fin] * run, "")
    return out


def _swing_values(d: Path, swings: Sequence[str]) -> dict[str, tuple[np.ndarray | None, str]]:
    import pyarrow.parquet as pq

    out: dict[str, tuple[np.ndarray | None, str]] = {}
    path = d / "manifest.json"
    try:
        man = json.loads(path.read_text())
        t0, t1 = int(man["window"]["start"]), int(man["window"]["end"])
        period = int(man["config"]["sample_period"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: cannot read the run's window and sample period ({exc})") from exc
    path = d / "timeline.parquet"
    try:
        tl = pq.ParquetFile(path).read(columns=["time", "facility_power_w"], use_threads=False)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"{path}: cannot read the run's timeline ({type(exc).__name__}: {exc})") from exc
    times = tl.column("time").to_numpy(zero_copy_only=False).astype("int64")
    power = tl.column("facility_power_w").to_numpy(zero_copy_only=False).astype("float64")
    regular = len(times) == -(-(t1 - t0) // period) and (len(times) == 0 or (
        times[0] == t0 and bool(np.all(np.diff(times) == period))))
    for name in swings:
        window = SWING_METRICS[name]
        if not regular:
            out[name] = (None, f"timeline of {d.name} is not sampled every {period} s from the window start")
        elif window % period:
            out[name] = (None, f"sample period {period} s does not divide {window} s")
        else:
            k = window // period
            full = (t1 - t0) // window  # full windows only, as core.power.ramps
            means = power[: full * k].reshape(full, k).mean(axis=1) if full else np.zeros(0)
            out[name] = (np.abs(np.diff(means)) if full >= 2 else np.zeros(0), "")
    return out


# ------------------------------------------------------------------------------------ partitions
def _scan_partition(part: tuple[int, list[tuple[str, int]]], metrics: Sequence[str], stage_dir: str) -> pd.DataFrame:
    """Scan one partition of runs: stage its (code, key) pairs sorted in ``stage_dir``, return the
    top-digit histogram (see the module doc) as rows of ``_HIST_META``."""
    hist, c, keys = _scan_values(part, metrics)
    np.savez(Path(stage_dir) / f"part-{part[0]:06d}.npz", codes=c, keys=keys)
    return hist


def _scan_values(part: tuple[int, list[tuple[str, int]]], metrics: Sequence[str]
                 ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The scan of :func:`_scan_partition` without staging: ``(histogram, codes, keys)``, codes and
    keys sorted by (code, key)."""
    _, runs = part
    codes, values, extra = [], [], []
    for run_dir, vcode in runs:
        rv = run_values(run_dir, metrics)
        for m, name in enumerate(metrics):
            vals, _ = rv[name]
            code = vcode * len(metrics) + m
            if vals is None:
                extra.append((code, _DIG_SKIPPED, 1))
                continue
            extra.append((code, _DIG_RUNS, 1))
            nan = np.isnan(vals)
            if nan.any():
                extra.append((code, _DIG_MISSING, int(nan.sum())))
                vals = vals[~nan]
            codes.append(np.full(len(vals), code, dtype="int64"))
            values.append(vals)
    c = np.concatenate(codes) if codes else np.zeros(0, dtype="int64")
    v = np.concatenate(values) if values else np.zeros(0)
    keys = float_keys(v)
    order = np.lexsort((keys, c))
    c, keys, v = c[order], keys[order], v[order]
    digit = (keys >> np.uint64(64 - _DIGIT_BITS)).astype("int64")
    hist = _runs_of(c, digit, v)
    if extra:
        e = np.asarray(extra, dtype="int64")
        ex = pd.DataFrame({"code": e[:, 0], "digit": e[:, 1], "count": e[:, 2], "sum": 0.0, "vmin": np.nan,
                           "vmax": np.nan})
        hist = pd.concat([hist, ex], ignore_index=True) if len(hist) else ex
    return hist.astype(_HIST_META), c, keys


def _runs_of(c: np.ndarray, digit: np.ndarray, v: np.ndarray) -> pd.DataFrame:
    """Runs of equal (c, digit) in arrays sorted by (c, key): count, sum, min (first), max (last)."""
    if len(c) == 0:
        return pd.DataFrame({k: pd.Series(dtype=t) for k, t in _HIST_META.items()})
    new = np.empty(len(c), dtype=bool)
    new[0] = True
    new[1:] = (c[1:] != c[:-1]) | (digit[1:] != digit[:-1])
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(c)) - 1
    return pd.DataFrame({"code": c[first], "digit": digit[first], "count": last - first + 1,
                         "sum": np.add.reduceat(v, first), "vmin": v[first], "vmax": v[last]})


def _bisect(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray, right: bool) -> np.ndarray:
    """Vectorised binary search: for each i, the first position p in ``[lo[i], hi[i])`` with
    ``keys[p] > target[i]`` (``right``) or ``>= target[i]``; ``keys`` sorted on every range."""
    lo, hi = lo.copy(), hi.copy()
    if len(keys) == 0:
        return lo
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        kv = keys[np.minimum(mid, len(keys) - 1)]
        go = (kv <= target) if right else (kv < target)
        lo = np.where(active & go, mid + 1, lo)
        hi = np.where(active & ~go, mid, hi)


def _gather(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indexes of the concatenated slices ``[starts[i], stops[i])`` and the slice number of each."""
    lengths = np.maximum(stops - starts, 0)
    owner = np.repeat(np.arange(len(starts)), lengths)
    offsets = np.zeros(len(starts), dtype="int64")
    np.cumsum(lengths[:-1], out=offsets[1:])
    idx = np.arange(int(lengths.sum()), dtype="int64") - np.repeat(offsets - starts, lengths)
    return idx, owner


def _refine_partition(path: str, buckets: dict[str, np.ndarray], means: np.ndarray | None) -> pd.DataFrame:
    """One staged partition (the ``.npz`` file at ``path``): collected values (kind 1) of the buckets
    to collect, next-digit histograms (kind 0) of the buckets to refine, and per-code squared
    deviations from ``means`` (kind 2, when given). Rows of ``_REFINE_META``."""
    with np.load(path) as z:
        c, keys = z["codes"], z["keys"]
    return _refine_values(c, keys, buckets, means)


def _refine_values(c: np.ndarray, keys: np.ndarray, buckets: dict[str, np.ndarray], means: np.ndarray | None
                   ) -> pd.DataFrame:
    """:func:`_refine_partition` of one partition's sorted ``(codes, keys)`` in memory."""
    parts = []
    if len(buckets["bid"]) and len(c):
        code, level, prefix = buckets["code"], buckets["level"], buckets["prefix"]
        shift = (64 - _DIGIT_BITS * level).astype(np.uint64)
        lo_key = prefix << shift
        hi_key = lo_key | ((np.uint64(1) << shift) - np.uint64(1))
        seg_lo = np.searchsorted(c, code, side="left")
        seg_hi = np.searchsorted(c, code, side="right")
        a = _bisect(keys, seg_lo, seg_hi, lo_key, right=False)
        b = _bisect(keys, a, seg_hi, hi_key, right=True)
        collect = buckets["collect"]
        idx, owner = _gather(a[collect], b[collect])
        if len(idx):
            bid = buckets["bid"][collect][owner]
            parts.append(pd.DataFrame({"kind": 1, "bid": bid, "digit": 0, "count": 1, "vmin": np.nan,
                                       "vmax": np.nan, "value": key_values(keys[idx])}))
        ref = ~collect
        idx, owner = _gather(a[ref], b[ref])
        if len(idx):
            k = keys[idx]
            nshift = shift[ref][owner] - np.uint64(_DIGIT_BITS)
            digit = ((k >> nshift) & np.uint64(_NDIG - 1)).astype("int64")
            h = _runs_of(buckets["bid"][ref][owner], digit, key_values(k))
            parts.append(pd.DataFrame({"kind": 0, "bid": h["code"], "digit": h["digit"], "count": h["count"],
                                       "vmin": h["vmin"], "vmax": h["vmax"], "value": np.nan}))
    if means is not None and len(c):
        v = key_values(keys)
        dev = v - means[c]
        first = np.flatnonzero(np.concatenate(([True], c[1:] != c[:-1])))
        parts.append(pd.DataFrame({"kind": 2, "bid": c[first], "digit": 0, "count": 0, "vmin": np.nan,
                                   "vmax": np.nan, "value": np.add.reduceat(dev * dev, first)}))
    if not parts:
        return pd.DataFrame({k: pd.Series(dtype=t) for k, t in _REFINE_META.items()})
    return pd.concat(parts, ignore_index=True).astype(_REFINE_META)


def _reduce_scan(frame):
    """Sum the scan histograms (pandas or Dask frame, same code)."""
    return frame.groupby(["code", "digit"]).agg({"count": "sum", "sum": "sum", "vmin": "min", "vmax": "max"})


def _reduce_refine(frame):
    """Split and reduce the refinement rows (pandas or Dask frame, same code)."""
    hist = frame[frame["kind"] == 0].groupby(["bid", "digit"]).agg({"count": "sum", "vmin": "min", "vmax": "max"})
    coll = frame[frame["kind"] == 1][["bid", "value"]]
    ss = frame[frame["kind"] == 2].groupby("bid")["value"].sum()
    return hist, coll, ss


# ------------------------------------------------------------------------------------ executors
class _Inline:
    """The partition functions called in this process, reduced with pandas (no Dask scheduler); the
    sorted (code, key) arrays of the partitions stay in memory instead of being staged to files
    (``refine`` ignores ``files``): the inline path runs for a sweep that fits one partition."""

    name = "inline"

    def __init__(self):
        self._staged: list[tuple[np.ndarray, np.ndarray]] = []

    def scan(self, parts, metrics, stage):
        frames = []
        for p in parts:
            hist, c, keys = _scan_values(p, metrics)
            frames.append(hist)
            self._staged.append((c, keys))
        return _reduce_scan(pd.concat(frames, ignore_index=True))

    def refine(self, files, buckets, means):
        frames = [_refine_values(c, keys, buckets, means) for c, keys in self._staged]
        return _reduce_refine(pd.concat(frames, ignore_index=True))

    def close(self):
        self._staged.clear()


class _Dask:
    """``dask.dataframe`` over the partitions, computed on a Dask scheduler (see the module doc)."""

    def __init__(self, scheduler: str, address: str | None):
        import dask.dataframe  # noqa: F401 - fail early when Dask is missing

        self.name = scheduler
        self._client = None
        self._get: Any = scheduler
        if scheduler == "distributed":
            try:
                from distributed import Client
            except ImportError as exc:
                raise ConfigError("a Dask cluster address needs the 'distributed' package: "
                                  "pip install 'twinsweep[cluster]'") from exc
            self._client = Client(address, set_as_default=False)
            self._get = self._client.get
        elif scheduler == "ray":
            import ray
            from ray.util.dask import ray_dask_get

            if not ray.is_initialized():
                ray.init(address=address or "auto", include_dashboard=False, log_to_driver=False,
                         logging_level="warning")
            self._get = ray_dask_get

    def _compute(self, *objs):
        import dask

        return dask.compute(*objs, scheduler=self._get)

    def scan(self, parts, metrics, stage):
        import dask.dataframe as dd

        ddf = dd.from_map(_scan_partition, parts, metrics=tuple(metrics), stage_dir=stage,
                          meta=pd.DataFrame({k: pd.Series(dtype=t) for k, t in _HIST_META.items()}),
                          enforce_metadata=False, label="twinsweep-scan")
        (hist,) = self._compute(_reduce_scan(ddf))
        return hist

    def refine(self, files, buckets, means):
        import dask.dataframe as dd

        ddf = dd.from_map(_refine_partition, files, buckets=buckets, means=means,
                          meta=pd.DataFrame({k: pd.Series(dtype=t) for k, t in _REFINE_META.items()}),
                          enforce_metadata=False, label="twinsweep-refine")
        return self._compute(*_reduce_refine(ddf))

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None


def _executor(scheduler: str | None, address: str | None, n_parts: int):
    scheduler = (scheduler or "auto").lower()
    if scheduler not in SCHEDULERS:
        raise ConfigError(f"unknown Dask scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}")
    if scheduler == "auto":
        if address:
            scheduler = "ray" if address.startswith("ray://") else "distributed"
        else:
            scheduler = "inline" if n_parts <= 1 else "threads"
    if scheduler == "distributed" and not address:
        raise ConfigError("the 'distributed' scheduler needs the address of a Dask scheduler (tcp://host:8786)")
    return _Inline() if scheduler == "inline" else _Dask(scheduler, address)


# ------------------------------------------------------------------------------------ selection
def _locate(bid: np.ndarray, count: np.ndarray, t_bid: np.ndarray, t_rank: np.ndarray):
    """Rows (of histogram rows sorted by (bid, digit)) holding rank ``t_rank`` of bucket ``t_bid``,
    and the rank within that row."""
    cum = np.cumsum(count)
    ub, first = np.unique(bid, return_index=True)
    base = np.where(first > 0, cum[np.maximum(first - 1, 0)], 0)
    g = base[np.searchsorted(ub, t_bid)] + t_rank
    row = np.searchsorted(cum, g, side="right")
    return row, g - (cum[row] - count[row])


def _select(hist: pd.DataFrame, t_code: np.ndarray, t_rank: np.ndarray, ex, files, means: np.ndarray,
            collect_values: int) -> tuple[np.ndarray, np.ndarray]:
    """Values of the order statistics ``(t_code, t_rank)`` (radix selection, module doc) and the
    per-code sum of squared deviations from ``means``."""
    n_t = len(t_code)
    value = np.full(n_t, np.nan)
    h = hist.sort_index()
    hb = h.index.get_level_values(0).to_numpy("int64")
    hd = h.index.get_level_values(1).to_numpy("int64")
    cnt = h["count"].to_numpy("int64")
    vmin, vmax = h["vmin"].to_numpy("float64"), h["vmax"].to_numpy("float64")
    row, within = _locate(hb, cnt, t_code, t_rank)
    # open buckets: (code, level, prefix, count); t_b: bucket of each unresolved target
    done = vmin[row] == vmax[row]
    value[done] = vmin[row][done]
    ub_rows, t_b = np.unique(row, return_inverse=True)
    b_code, b_prefix = hb[ub_rows], hd[ub_rows].astype(np.uint64)
    b_level, b_count = np.ones(len(ub_rows), dtype="int64"), cnt[ub_rows]
    ss = np.zeros(len(means))
    first = True
    while True:
        open_t = ~done
        if not open_t.any() and not first:
            break
        live = np.unique(t_b[open_t]) if open_t.any() else np.zeros(0, dtype="int64")
        order = live[np.argsort(b_count[live], kind="stable")]
        collect = np.zeros(len(b_count), dtype=bool)
        collect[order[np.cumsum(b_count[order]) <= collect_values]] = True
        collect |= b_level >= _LEVELS  # single keys (never reached: min == max there)
        buckets = {"bid": live, "code": b_code[live], "level": b_level[live], "prefix": b_prefix[live],
                   "collect": collect[live]}
        hist2, coll, ssr = ex.refine(files, buckets, means if first else None)
        if first:
            ss[ssr.index.to_numpy("int64")] = ssr.to_numpy("float64")
            first = False
        if not open_t.any():
            break
        # collected buckets: exact order statistics from the sorted candidates
        tc = open_t & collect[t_b]
        if tc.any():
            cb, cv = coll["bid"].to_numpy("int64"), coll["value"].to_numpy("float64")
            o = np.lexsort((cv, cb))
            cb, cv = cb[o], cv[o]
            ucb, cfirst = np.unique(cb, return_index=True)
            pos = cfirst[np.searchsorted(ucb, t_b[tc])] + within[tc]
            value[tc] = cv[pos]
            done |= tc
        # refined buckets: locate in the next-digit histogram
        tr = ~done & ~collect[t_b]
        if tr.any():
            h2 = hist2.sort_index()
            rb = h2.index.get_level_values(0).to_numpy("int64")
            rd = h2.index.get_level_values(1).to_numpy("int64")
            rc = h2["count"].to_numpy("int64")
            rmin, rmax = h2["vmin"].to_numpy("float64"), h2["vmax"].to_numpy("float64")
            r, w = _locate(rb, rc, t_b[tr], within[tr])
            idx = np.flatnonzero(tr)
            res = rmin[r] == rmax[r]
            value[idx[res]] = rmin[r][res]
            done[idx[res]] = True
            within[idx] = w
            ur, inv = np.unique(r, return_inverse=True)
            parent = rb[ur]
            new_ids = len(b_count) + np.arange(len(ur))
            b_code = np.concatenate([b_code, b_code[parent]])
            b_level = np.concatenate([b_level, b_level[parent] + 1])
            b_prefix = np.concatenate([b_prefix, (b_prefix[parent] << np.uint64(_DIGIT_BITS))
                                       | rd[ur].astype(np.uint64)])
            b_count = np.concatenate([b_count, rc[ur]])
            t_b[idx] = new_ids[inv]
    return value, ss


# ------------------------------------------------------------------------------------ entry
def _estimate_values(table: pd.DataFrame, metrics: Sequence[str]) -> np.ndarray:
    """Values each run will contribute (for partitioning): one per job in the window and job
    metric, plus the window's 1-min / 15-min averages (duration, else makespan, else 3 days)."""
    n = len(table)
    jobs = pd.to_numeric(table.get("count_jobs_in_window", pd.Series(np.nan, index=table.index)),
                         errors="coerce").to_numpy("float64", na_value=np.nan)
    span = pd.to_numeric(table.get("duration", pd.Series(np.nan, index=table.index)),
                         errors="coerce").to_numpy("float64", na_value=np.nan)
    mk = pd.to_numeric(table.get("makespan_s", pd.Series(np.nan, index=table.index)),
                       errors="coerce").to_numpy("float64", na_value=np.nan)
    span = np.where(np.isfinite(span), span, np.where(np.isfinite(mk), mk, 3 * 86400.0))
    jobs = np.where(np.isfinite(jobs), jobs, 1000.0)
    est = sum(jobs if m in JOB_METRICS else span / SWING_METRICS[m] for m in metrics) + 1
    return np.asarray(est, dtype="float64").astype("int64") if n else np.zeros(0, "int64")


def plan_partitions(values: np.ndarray, partition_values: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` row ranges whose estimated values stay within
    ``partition_values`` (a run larger than that is a partition of its own)."""
    out, start, acc = [], 0, 0
    for i, v in enumerate(np.asarray(values, dtype="int64").tolist()):
        if i > start and acc + v > partition_values:
            out.append((start, i))
            start, acc = i, 0
        acc += v
    if len(values):
        out.append((start, len(values)))
    return out


def pooled_distributions(root: str | os.PathLike, scheduler: str | None = None, address: str | None = None,
                         partition_values: int = 4_000_000, collect_values: int = 8_000_000,
                         quantiles: Sequence[float] = QUANTILE_GRID, metrics: Sequence[str] = DIST_METRICS,
                         log: Callable[[str], None] | None = None, *, plan: pd.DataFrame | None = None) -> Path:
    """Compute the pooled distributions of a results folder (module doc) and write
    ``distributions.parquet`` / ``.csv`` and ``distribution_quantiles.parquet``; returns the
    summary's path.

    Args:
        root: results folder (runs.parquet lists the runs; their folders are ``runs/<key>/``).
        scheduler: one of :data:`SCHEDULERS` (None = ``"auto"``: ``"inline"`` for one partition,
            else ``"threads"``; with ``address``, ``"distributed"``, or ``"ray"`` for ``ray://``).
        address: Dask scheduler address (``distributed``) or Ray address (``ray``).
        partition_values: values per partition (about 12 bytes each in a worker's memory).
        collect_values: candidates the driver may collect at once during selection.
        quantiles: the grid of distribution_quantiles.parquet (each in [0, 1]).
        metrics: which of :data:`DIST_METRICS` (e.g. :data:`JOB_METRICS` only: the timelines
            are then not read).
        log: called with one line per phase (partitions, scheduler, passes).
        plan: plan.csv as :meth:`~sweep.store.ResultStore.read_plan` gives it, when the caller
            has read it (default: read here).
    Raises FileNotFoundError (no runs.parquet), ConfigError (bad scheduler / address), ValueError
    naming a run file that cannot be read.
    """
    import pyarrow.parquet as pq

    root = Path(root).absolute()
    table_path = ResultStore(root).table_path
    if not table_path.exists():
        raise FileNotFoundError(f"{table_path} not found")
    metrics = tuple(metrics)
    unknown = [m for m in metrics if m not in DIST_METRICS]
    if unknown or not metrics:
        raise ValueError(f"unknown distribution metric(s) {unknown}; choose among {', '.join(DIST_METRICS)}")
    qs = np.asarray(list(quantiles), dtype="float64")
    if len(qs) == 0 or np.any((qs < 0) | (qs > 1)) or np.isnan(qs).any():
        raise ValueError(f"quantiles must lie in [0, 1], got {list(quantiles)}")
    pf = pq.ParquetFile(str(table_path))
    names = set(pf.schema_arrow.names)
    probe = pf.read(columns=[c for c in ("key", "dataset") if c in names], use_threads=False).to_pandas()
    gcols = group_columns(root, probe) if "dataset" in probe.columns else []
    want = ["key", *gcols, "count_jobs_in_window", "duration", "makespan_s"]
    table = pf.read(columns=[c for c in dict.fromkeys(want) if c in names], use_threads=False).to_pandas()
    store = ResultStore(root)
    order = plan if plan is not None else store.read_plan()
    vcodes, groups = group_codes(table, gcols, order) if len(table) else (np.zeros(0, "int64"), pd.DataFrame())
    M, G = len(metrics), len(groups)
    ranges = plan_partitions(_estimate_values(table, metrics), partition_values)
    run_dirs = [str(store.run_dir(str(k))) for k in table["key"]] if len(table) else []
    parts = [(i, [(run_dirs[j], int(vcodes[j])) for j in range(a, b)]) for i, (a, b) in enumerate(ranges)]
    stage = root / f".tmp-distributions-{uuid.uuid4().hex[:8]}"
    ex = _executor(scheduler, address, len(parts))
    if log:
        log(f"distributions: {len(table)} runs in {len(parts)} partition(s), scheduler {ex.name}")
    try:
        stage.mkdir()
        hist = ex.scan(parts, metrics, str(stage)) if parts else _reduce_scan(pd.DataFrame(
            {k: pd.Series(dtype=t) for k, t in _HIST_META.items()}))
        hist = hist.reset_index()
        special = hist[hist["digit"] >= _NDIG]
        real = hist[hist["digit"] < _NDIG]
        ncode = G * M
        n = np.bincount(real["code"], weights=real["count"], minlength=ncode).astype("int64")
        total = np.bincount(real["code"], weights=real["sum"], minlength=ncode)
        extra = {d: np.bincount(special.loc[special["digit"] == d, "code"],
                                weights=special.loc[special["digit"] == d, "count"], minlength=ncode).astype("int64")
                 for d in (_DIG_MISSING, _DIG_RUNS, _DIG_SKIPPED)}
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(n > 0, total / np.maximum(n, 1), np.nan)
        # every order statistic any quantile needs, per code with values
        stat_q = np.asarray([0.0, 0.5, 1.0, *QUANTILES.values()])
        all_q = np.unique(np.concatenate([qs, stat_q]))
        codes_with = np.flatnonzero(n > 0)
        lo, hi, _ = quantile_positions(n[codes_with][:, None], all_q[None, :])
        t_code = np.repeat(codes_with, 2 * len(all_q))
        t_rank = np.concatenate([lo, hi], axis=1).ravel()
        # distinct (code, rank) pairs in (code, rank) order, as one int key (rank < n.max() < maxr)
        maxr = int(n.max()) + 1 if ncode else 1
        pair_id = np.unique(t_code.astype("int64") * maxr + t_rank.astype("int64"))
        t_code, t_rank = np.divmod(pair_id, maxr)
        files = sorted(str(p) for p in stage.glob("part-*.npz"))
        if len(t_code):
            real_hist = real.set_index(["code", "digit"])[["count", "vmin", "vmax"]]
            tval, ss = _select(real_hist, t_code, t_rank, ex, files, np.nan_to_num(means), collect_values)
        else:
            tval, ss = np.zeros(0), np.zeros(ncode)
        if log:
            log(f"distributions: {int(n.sum()):,} values, {len(t_code):,} order statistics selected")
    finally:
        ex.close()
        shutil.rmtree(stage, ignore_errors=True)

    def order_stat(code, rank):
        return tval[np.searchsorted(pair_id, code * maxr + rank)]

    def quantile(code, q):
        lo, hi, g = quantile_positions(n[code], q)
        return lerp(order_stat(code, lo), order_stat(code, hi), g)

    codes = np.arange(ncode)
    has = n > 0
    stats: dict[str, np.ndarray] = {"n": n}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name, q in (("min", 0.0), ("median", 0.5), ("max", 1.0), *QUANTILES.items()):
            col = np.full(ncode, np.nan)
            col[has] = quantile(codes[has], q)
            stats[name] = col
        stats["mean"] = means
        stats["std"] = np.where(n > 1, np.sqrt(ss / np.maximum(n - 1, 1)), np.nan)
    summary = groups.iloc[codes // M].reset_index(drop=True) if G else pd.DataFrame(columns=gcols)
    summary["metric"] = np.asarray(metrics, dtype=object)[codes % M]
    summary["runs"] = extra[_DIG_RUNS]
    summary["runs_skipped"] = extra[_DIG_SKIPPED]
    summary["missing"] = extra[_DIG_MISSING]
    for k in STAT_COLUMNS:
        summary[k] = stats[k].astype("int64" if k == "n" else "float64")
    cw = codes[has]
    qtab = groups.iloc[np.repeat(cw // M, len(qs))].reset_index(drop=True) if G else pd.DataFrame(columns=gcols)
    qtab["metric"] = np.asarray(metrics, dtype=object)[np.repeat(cw % M, len(qs))]
    qtab["q"] = np.tile(qs, len(cw))
    with np.errstate(invalid="ignore"):
        qtab["value"] = quantile(np.repeat(cw, len(qs)), np.tile(qs, len(cw))) if len(cw) else np.zeros(0)

    out = root / SUMMARY
    atomic_write(out, lambda p: summary.to_parquet(p, index=False))
    atomic_write_text(root / "distributions.csv", summary.to_csv(index=False))
    atomic_write(root / QUANTILES_FILE, lambda p: qtab.to_parquet(p, index=False))
    return out
