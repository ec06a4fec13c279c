"""Rank statistics over seeds: block ranks, bootstrap intervals of mean ranks, win matrices and
Kendall's coefficient of concordance W.

Terminology: a *variant* is one grid point without the seed (e.g. ``sjf+easy``); a *block* is
one (window, seed) of a dataset, in which all variants ran on the same (perturbed) workload, so
their metric values are comparable and can be ranked (rank 1 = best; ties get the average rank).

Runs of the policy ``replay`` (the recorded schedule, :data:`REFERENCE_POLICY`) are a study's
reference, not a variant to rank: :func:`split_reference` sets them apart. A block whose window
extends past the last submission of its trace (runs.parquet column :data:`PAST_END`) is ranked
but flagged (:func:`past_end_blocks`): the end of such a window has no arrivals.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n within each row of ``values`` (2-D, rows x n), ties given the average of the ranks
    they span (as ``scipy.stats.rankdata(row, method="average")``, exactly: the average of two
    integers is a half-integer, represented exactly). Equal values tie, including ``inf``; NaN is
    not allowed (map it to ``inf`` first). One stable sort per row, vectorised over rows."""
    v = np.asarray(values, dtype="float64")
    if v.ndim != 2:
        raise ValueError(f"values must be 2-D (rows x items), got shape {v.shape}")
    m, n = v.shape
    if not v.size:
        return v.copy()
    order = np.argsort(v, axis=1, kind="stable")
    s = np.take_along_axis(v, order, axis=1)
    idx = np.broadcast_to(np.arange(n), (m, n))
    new = np.ones((m, n), dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]  # a tie group starts here
    first = np.maximum.accumulate(np.where(new, idx, 0), axis=1)
    end = np.ones((m, n), dtype=bool)
    end[:, :-1] = new[:, 1:]  # a tie group ends here
    last = np.minimum.accumulate(np.where(end, idx, n - 1)[:, ::-1], axis=1)[:, ::-1]
    out = np.empty((m, n), dtype="float64")
    np.put_along_axis(out, order, (first + last) / 2.0 + 1.0, axis=1)
    return out


def chi2_sf(x: float, k: int) -> float:
    """Survival function P(X > x) of a chi-square variable with ``k`` (integer >= 1) degrees of
    freedom: the regularised upper incomplete gamma function Q(k/2, x/2) in closed form
    (Abramowitz & Stegun, "Handbook of Mathematical Functions", 1964, 26.4.4 and 26.4.5):
    even k: exp(-x/2) Σ_{i<k/2} (x/2)^i / i!; odd k: erfc(sqrt(x/2)) + exp(-x/2) Σ_{i=1}^{(k-1)/2}
    (x/2)^(i-1/2) / Γ(i+1/2). The terms are summed in log space, so large x underflows to 0 cleanly.
    Raises ValueError for k < 1 or a non-integer k; x <= 0 gives 1."""
    if int(k) != k or k < 1:
        raise ValueError(f"degrees of freedom must be an integer >= 1, got {k!r}")
    k = int(k)
    if not x > 0:
        return 1.0
    if math.isinf(x):
        return 0.0
    y = x / 2.0
    if k % 2 == 0:
        logs = [i * math.log(y) - math.lgamma(i + 1) - y for i in range(k // 2)]
        base = 0.0
    else:
        logs = [(i - 0.5) * math.log(y) - math.lgamma(i + 0.5) - y for i in range(1, (k - 1) // 2 + 1)]
        base = math.erfc(math.sqrt(y))
    top = max(logs, default=-math.inf)
    tail = math.exp(top) * sum(math.exp(t - top) for t in logs) if logs else 0.0
    return min(1.0, base + tail)

from twinsweep.core.scheduler import REPLAY

#: The policy of the recorded schedule: the reference row of a study, never ranked.
REFERENCE_POLICY = REPLAY
#: runs.parquet / stats.json column: the run's window extends past its trace's last submission.
PAST_END = "window_past_last_submit"
BLOCK_COLS = ("dataset", "window", "seed")


def _lower_is_better(values, direction: str) -> np.ndarray:
    """``values`` as float64 with smaller = better (negated when ``direction`` is ``"max"``) and
    NaN as +inf (worst). Raises ValueError for a direction other than ``"min"`` / ``"max"``."""
    v = np.asarray(values, dtype="float64")
    if direction == "max":
        v = -v
    elif direction != "min":
        raise ValueError(f"direction must be 'min' or 'max', got {direction!r}")
    return np.where(np.isnan(v), np.inf, v)


def block_ranks(values: np.ndarray, direction: str) -> np.ndarray:
    """Ranks within each block (row) of ``values`` (blocks x variants): 1 = best under
    ``direction`` (``"min"``: smaller is better, ``"max"``: larger), ties -> average rank, NaN
    (metric undefined) ranks worst (tied among NaNs)."""
    v = _lower_is_better(values, direction)
    return average_ranks(v) if len(v) else v


def bootstrap_mean_rank(ranks: np.ndarray, n_boot: int = 1000, seed: int = 0,
                        level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean rank per variant and its percentile bootstrap interval over blocks.

    ``ranks``: blocks x variants. Blocks are resampled with replacement ``n_boot`` times with
    ``numpy.random.default_rng(seed)`` (so reports are reproducible). Returns ``(mean, low, high)``
    arrays of length n_variants; with a single block the interval collapses to the mean.
    """
    r = np.asarray(ranks, dtype="float64")
    mean = r.mean(axis=0)
    m = r.shape[0]
    if m < 2:
        return mean, mean.copy(), mean.copy()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, m, size=(n_boot, m))
    boot = r[idx].mean(axis=1)  # n_boot x variants
    a = (1 - level) / 2
    return mean, np.quantile(boot, a, axis=0), np.quantile(boot, 1 - a, axis=0)


#: Level below which a sign test's p counts as significant (the 5 % level
#: :data:`sweep.verdict.MIN_BLOCKS` is chosen for).
SIGN_LEVEL = 0.05


@functools.lru_cache(maxsize=4096)  # a report asks the same few small counts thousands of times
def sign_test(a_better: int, b_better: int, ties: int) -> float:
    """Two-sided exact sign test p-value of a paired comparison with ``ties`` split evenly between
    the two sides (an odd tie dropped), Demšar (2006) §3.1.1. 1.0 when nothing is left to compare.

    With ``k`` = a's count and ``n`` the comparisons, under H0 the count is Binomial(n, 1/2), which
    is symmetric: the two-sided p-value (the probability of outcomes no likelier than ``k``, as
    ``scipy.stats.binomtest``) is ``min(1, 2 · sum_{i <= m} C(n, i) / 2^n)`` with ``m = min(k, n - k)``,
    computed in exact integer arithmetic (one rounding, in the final division)."""
    half = ties // 2
    k, n = a_better + half, a_better + b_better + 2 * half
    if n == 0 or 2 * k == n:
        return 1.0
    m = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(m + 1))
    return min(1.0, 2 * tail / 2 ** n)


def win_counts(values: np.ndarray, direction: str) -> tuple[np.ndarray, int]:
    """``(C, m)``: ``C[i, j]`` = number of blocks (rows of ``values``, blocks x variants) in which
    variant i is strictly better than variant j under ``direction`` (NaN never wins; two NaNs tie),
    ``m`` = number of blocks. ``m - C[i, j] - C[j, i]`` blocks are ties; the diagonal is 0."""
    v = _lower_is_better(values, direction)
    m = v.shape[0]
    return (v[:, :, None] < v[:, None, :]).sum(axis=0).astype("int64"), m


def win_matrix(values: np.ndarray, direction: str) -> np.ndarray:
    """``W[i, j]`` = share of blocks in which variant i is strictly better than variant j
    (``values``: blocks x variants; NaN never wins): :func:`win_counts` / blocks. The diagonal is
    NaN. ``W[i,j] + W[j,i]`` is below 1 by the share of ties."""
    counts, m = win_counts(values, direction)
    out = counts / max(m, 1)
    np.fill_diagonal(out, np.nan)
    return out


def kendall_w(ranks: np.ndarray) -> dict[str, float]:
    """Kendall's coefficient of concordance W with the correction for ties.

    ``ranks``: m raters (rows, here seeds) x n objects (columns, variants), each row the ranks
    1..n with tied objects given their average rank. Following Kendall & Babington Smith (1939),
    "The problem of m rankings", Ann. Math. Statist. 10(3):275-287, with the tie correction of
    Kendall (1948, "Rank correlation methods"):

        W = 12 S / (m^2 (n^3 - n) - m sum_j T_j),  S = sum_i (R_i - mean R)^2,
        T_j = sum over tie groups in row j of (t^3 - t),

    where R_i is the rank sum of object i. W = 1: all raters agree; 0: no agreement.
    Returns ``{"W", "chi2", "df", "p", "m", "n"}``; chi2 = m (n - 1) W is referred to a
    chi-square with n - 1 degrees of freedom (Friedman). W (and chi2, p) is NaN when undefined:
    fewer than 2 raters or objects, or every rater ties every object.
    """
    r = np.asarray(ranks, dtype="float64")
    m, n = r.shape if r.ndim == 2 else (0, 0)
    out = {"W": float("nan"), "chi2": float("nan"), "df": float(max(n - 1, 0)), "p": float("nan"),
           "m": float(m), "n": float(n)}
    if m < 2 or n < 2:
        return out
    R = r.sum(axis=0)
    S = float(((R - R.mean()) ** 2).sum())
    T = 0.0
    for row in r:
        _, counts = np.unique(row, return_counts=True)
        T += float((counts ** 3 - counts).sum())
    denom = m ** 2 * (n ** 3 - n) - m * T
    if denom <= 0:
        return out
    W = 12.0 * S / denom
    W = min(max(W, 0.0), 1.0)
    c2 = m * (n - 1) * W
    out.update(W=W, chi2=c2, p=chi2_sf(c2, n - 1))
    return out


class BlockPivot:
    """The (block, variant) cell of every row of ``df`` (one row per run, with a ``variant`` column),
    found once, so that several metrics are pivoted without factorising the blocks again
    (:func:`pivot_blocks` for one metric).

    ``blocks``: the distinct ``block_cols`` tuples that occur in ``df``, sorted (never the product
    of every column's values: datasets with different window names do not make empty blocks);
    tuples for several block columns, plain values for one (as ``pandas.pivot_table``).
    :meth:`values` gives the blocks x variants array of one metric."""

    def __init__(self, df: pd.DataFrame, variants: list[str], block_cols=("window", "seed")):
        cols = list(block_cols)
        self.variants = list(variants)
        if len(df):
            codes, levels = zip(*(pd.factorize(df[c], sort=True, use_na_sentinel=False) for c in cols))
            shape = [max(len(u), 1) for u in levels]
            flat = np.ravel_multi_index(codes, shape) if len(cols) > 1 else codes[0]
            uniq, r = np.unique(flat, return_inverse=True)  # sorted: lexicographic in the sorted levels
            parts = np.unravel_index(uniq, shape) if len(cols) > 1 else (uniq,)
            blocks = list(zip(*(np.asarray(u, dtype=object)[p] for u, p in zip(levels, parts))))
            self.blocks = blocks if len(cols) > 1 else [b[0] for b in blocks]
        else:
            r, self.blocks = np.zeros(0, dtype="int64"), []
        pos = {v: i for i, v in enumerate(self.variants)}
        self._r = np.asarray(r, dtype="int64").ravel()
        self._c = np.fromiter((pos.get(v, -1) for v in df["variant"].tolist()), dtype="int64", count=len(df))
        self._df = df

    def values(self, metric: str) -> np.ndarray:
        """Blocks x variants float64 array of ``metric``: a cell holds the first non-NaN value of its
        (block, variant) in ``df`` order, NaN when there is none (a missing variant ranks worst); rows
        of variants not in ``variants`` are ignored."""
        vals = pd.to_numeric(self._df[metric], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        ok = (self._c >= 0) & ~np.isnan(vals)
        out = np.full((len(self.blocks), len(self.variants)), np.nan)
        out[self._r[ok][::-1], self._c[ok][::-1]] = vals[ok][::-1]  # reversed: the first value of a cell is written last
        return out


def pivot_blocks(df: pd.DataFrame, metric: str, variants: list[str],
                 block_cols=("window", "seed")) -> tuple[np.ndarray, list[tuple]]:
    """``df`` (one row per run, with a ``variant`` column) -> (blocks x variants array of
    ``metric``, block labels): :class:`BlockPivot` for one metric. The same result as
    ``pandas.pivot_table(aggfunc="first")`` reindexed to ``variants``, without its cost (one
    factorisation, one scatter)."""
    p = BlockPivot(df, variants, block_cols)
    return p.values(metric), p.blocks  # tuples for several block columns, plain values for one (as pivot_table)


def incomplete_blocks(runs: pd.DataFrame, plan: pd.DataFrame,
                      block_cols=("dataset", "window", "seed")) -> pd.DataFrame:
    """Blocks of the plan that lack some of their planned runs in ``runs`` (failed, not run yet, or
    set aside as unreadable): one row per such block with ``block_cols`` (as str), ``planned`` and
    ``missing`` (run counts). ``runs`` and ``plan`` (plan.csv) need ``key`` and ``block_cols``.

    Ranking such a block would rank its missing variants last (a NaN metric ranks worst), which
    biases mean ranks against them; the report leaves these blocks out unless asked otherwise.
    """
    cols = list(block_cols)
    if plan is None or plan.empty or not set(cols + ["key"]) <= set(plan.columns):
        return pd.DataFrame(columns=cols + ["planned", "missing"])
    p = plan[cols + ["key"]].astype(str)
    have = set(runs["key"].astype(str)) if "key" in runs.columns else set()
    p = p.assign(missing=~p["key"].isin(have))
    g = p.groupby(cols, sort=False).agg(planned=("key", "size"), missing=("missing", "sum")).reset_index()
    g["missing"] = g["missing"].astype("int64")
    return g[g["missing"] > 0].reset_index(drop=True)


def drop_blocks(runs: pd.DataFrame, blocks: pd.DataFrame, block_cols=("dataset", "window", "seed")) -> pd.DataFrame:
    """``runs`` without the rows of ``blocks`` (as returned by :func:`incomplete_blocks`)."""
    cols = list(block_cols)
    if blocks is None or blocks.empty or runs.empty:
        return runs
    bad = set(map(tuple, blocks[cols].astype(str).to_numpy()))
    ids = runs[cols].astype(str).apply(tuple, axis=1)
    return runs[~ids.isin(bad)].reset_index(drop=True)


def split_reference(runs: pd.DataFrame, variants: list[str]) -> tuple[pd.DataFrame, list[str], list[str]]:
    """``(ranked runs, ranked variants, reference variants)``: the runs of :data:`REFERENCE_POLICY`
    (``policy`` column; a table without it has none) set apart from ``runs`` (one row per run with a
    ``variant`` column); variants keep their grid order. The reference runs are
    ``runs[runs["variant"].isin(reference variants)]``."""
    if runs.empty or "policy" not in runs.columns:
        return runs, list(variants), []
    is_ref = runs["policy"].astype(str) == REFERENCE_POLICY
    ref = set(runs.loc[is_ref, "variant"])
    return (runs[~is_ref].reset_index(drop=True), [v for v in variants if v not in ref],
            [v for v in variants if v in ref])


def past_end_blocks(runs: pd.DataFrame, block_cols=BLOCK_COLS) -> pd.DataFrame:
    """The blocks of ``runs`` in which some run's window extends past its trace's last submission
    (column :data:`PAST_END` true; a table without the column, or a missing value, counts as
    false): one row per block with ``block_cols`` (their dtypes kept), in table order."""
    cols = list(block_cols)
    if runs.empty or PAST_END not in runs.columns:
        return pd.DataFrame(columns=cols)
    flag = runs[PAST_END].astype("boolean").fillna(False).astype(bool)
    return runs.loc[flag, cols].drop_duplicates().reset_index(drop=True)


def pareto_front(points: list[tuple[float, ...]], directions: list[str]) -> list[int]:
    """Indices (ascending) of the mutually non-dominated points: a point is dominated when another is at
    least as good on every objective and strictly better on one (``directions``: "minimize"/"maximize"
    per objective; equal points dominate neither). O(n² k) for n points of k objectives. Shared by the
    tuner's Pareto set (sweep.tune) and the report's trade-off view (sweep.report_pareto)."""
    sgn = [1.0 if d == "minimize" else -1.0 for d in directions]
    pts = [tuple(s * v for s, v in zip(sgn, p)) for p in points]
    front = []
    for i, p in enumerate(pts):
        dominated = any(all(q[k] <= p[k] for k in range(len(p))) and any(q[k] < p[k] for k in range(len(p)))
                        for j, q in enumerate(pts) if j != i)
        if not dominated:
            front.append(i)
    return front
