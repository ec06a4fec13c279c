"""The report's verdict: which variant to run, how sure we are and what it costs, computed from the
run table (one row per run, with the report's ``variant`` label).

Terms (as in :mod:`twinsweep.sweep.ranking`): a *block* is one (dataset, window, seed) in which every
variant ran on the same (perturbed) workload; within a block the variants are ranked per objective
(1 = best, ties share the average rank, an undefined value ranks last).

For each scope (every dataset, and "all datasets" pooling their blocks) and each objective:

- **recommended** = the variant with the lowest mean rank over the blocks (ties: grid order);
- **P(best)** = the share of ``n_boot`` bootstrap resamples of the blocks (with replacement, seeded
  ``numpy.random.default_rng(seed)``) in which it has the lowest mean rank (ties split the share);
- **distinguishable from the runner-up** when the scope has at least :data:`MIN_BLOCKS` blocks and the
  percentile bootstrap 95 % interval of the runner-up's mean rank minus the recommended one's lies
  above zero (a paired bootstrap over the same resampled blocks; Efron & Tibshirani, "An Introduction
  to the Bootstrap", Chapman & Hall 1993, ch. 13) **and** the recommended variant is ahead of the
  runner-up in significantly more blocks than behind it (two-sided exact sign test, ties split,
  p < :data:`sweep.ranking.SIGN_LEVEL`; J. Demšar, JMLR 7, 2006): the percentile bootstrap of a few
  blocks excludes zero too readily (8 blocks with the runner-up ahead in one and tied in two did),
  and the report's stability section tests the same pair with the same sign test, so the two never
  disagree. With fewer blocks the percentile interval cannot be trusted (it never reaches beyond
  the few values drawn: two blocks that agree give a zero-width interval), so the verdict says "too
  few blocks" instead;
- **costs** = the recommended variant against the baseline on every objective: relative change of the
  mean over blocks in % (metrics compared as a ratio) or the difference in display units (percentages,
  PUE, temperatures), as the metric catalogue (:mod:`twinsweep.core.metrics`) says.

Blocks whose window extends past the last submission of its trace (runs.parquet column
``window_past_last_submit``, :data:`sweep.ranking.PAST_END`) are ranked, and counted per scope
(``past_end``) so that the page can say so. Runs of the reference policy ``replay`` must be set
apart by the caller (:func:`sweep.ranking.split_reference`): the recorded schedule is not ranked.

The *trade-off* objective is the study's stated weighting (``[report] tradeoff``; default: the rank
metrics with equal weights): per block, the weighted mean of the variants' ranks on its metrics, ranked
like any objective. Ranks, not raw values, are weighted, so metrics in different units combine.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from twinsweep.core.metrics import format_number, metric

from .ranking import BLOCK_COLS, SIGN_LEVEL, BlockPivot, block_ranks, past_end_blocks, sign_test, win_counts

__all__ = ["ObjectiveVerdict", "ScopeVerdict", "Verdict", "BlockScores", "block_scores", "compute_verdict",
           "default_baseline", "baseline_rule", "DEFAULT_BASELINE", "alike_pairs", "TRADEOFF", "OVERALL", "MIN_BLOCKS", "cost_text"]

#: Objective name of the study's stated trade-off.
TRADEOFF = "trade-off"
#: Scope name of the verdict pooled over every dataset.
OVERALL = "all datasets"
#: Fewest blocks for "distinguishable": the smallest number of paired blocks at which an exact
#: two-sided sign test can reach the 5 % level at all (p = 2 * 0.5^6 = 0.031; with 5 blocks the
#: smallest p is 0.0625); W. J. Conover, "Practical Nonparametric Statistics", 3rd ed., Wiley 1999, §3.4.
MIN_BLOCKS = 6
_BLOCK = BLOCK_COLS


@dataclasses.dataclass(frozen=True)
class ObjectiveVerdict:
    """The verdict for one objective in one scope.

    ``objective``: a metric name or :data:`TRADEOFF`; ``best`` / ``runner_up``: variant labels
    (``runner_up`` None with a single variant); ``p_best``: bootstrap probability (0..1) that ``best``
    has the lowest mean rank; ``mean_rank``: of ``best``; ``gap_ci``: percentile bootstrap 95 %
    interval of (runner-up's − best's mean rank), in ranks; ``distinguishable``: ``gap_ci[0] > 0``,
    ``p_sign`` below :data:`sweep.ranking.SIGN_LEVEL` and at least :data:`MIN_BLOCKS` blocks;
    ``costs``: metric -> change of ``best`` against the baseline (:func:`cost_text` formats it;
    in the scope of several datasets, the mean of the per-dataset changes: each dataset weighs the
    same, whatever the scale of its values);
    ``p_sign``: two-sided exact sign test of ``best`` against ``runner_up`` over the blocks (ties
    split, :func:`sweep.ranking.sign_test`; None with a single variant); ``ahead`` / ``behind``: the
    blocks in which ``best`` ranks ahead of / behind ``runner_up`` (the sign test's counts; the rest
    tie; None with a single variant), so that a page can say why a high ``p_best`` (the lowest mean
    rank when the blocks are redrawn) need not be a lead block by block; ``cost_blocks``: metric ->
    (blocks in which ``best`` differs from the baseline in the direction of its cost, blocks with
    both values) — a mean change whose sign half of the blocks contradict is not a change to rely on.
    """

    objective: str
    best: str
    p_best: float
    mean_rank: float
    runner_up: str | None
    gap_ci: tuple[float, float]
    distinguishable: bool
    costs: dict[str, float | None]
    p_sign: float | None = None
    ahead: int | None = None
    behind: int | None = None
    cost_blocks: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ScopeVerdict:
    """The verdicts of one scope (a dataset or :data:`OVERALL`): ``blocks`` counted, ``variants``
    ranked (grid order), ``baseline`` variant, one :class:`ObjectiveVerdict` per objective (rank
    metrics in spec order, then :data:`TRADEOFF`); ``past_end``: how many of the blocks have a window
    past its trace's last submission, ``past_end_windows``: those windows as ``"dataset/window"``;
    ``alike_in_tradeoff``: pairs of trade-off metrics that rank the variants exactly alike in every
    block of the scope (:func:`alike_pairs`: the trade-off then weighs one preference twice);
    ``windows`` / ``seeds``: the distinct (dataset, window) pairs and seeds of its blocks (a scope
    of one window varies the seeds only: its P(best) says nothing about other windows);
    ``alike_ranked``: the pairs of *all* ranked metrics that rank alike in every block (weighed or
    not: e.g. facility energy per node-hour and an unweighed utilisation)."""

    scope: str
    blocks: int
    variants: tuple[str, ...]
    baseline: str | None
    objectives: tuple[ObjectiveVerdict, ...]
    past_end: int = 0
    past_end_windows: tuple[str, ...] = ()
    alike_in_tradeoff: tuple[tuple[str, str], ...] = ()
    windows: int = 0
    seeds: int = 0
    alike_ranked: tuple[tuple[str, str], ...] = ()

    def get(self, objective: str) -> ObjectiveVerdict | None:
        """The verdict for ``objective`` (a metric name or :data:`TRADEOFF`), or None."""
        return next((o for o in self.objectives if o.objective == objective), None)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Every scope's verdict (datasets in study order, then :data:`OVERALL` when there are several),
    the trade-off weights (metric -> weight) and the objectives' directions (metric -> min/max)."""

    scopes: tuple[ScopeVerdict, ...]
    tradeoff: dict[str, float]
    directions: dict[str, str]


#: The baseline when the study names none (or names no variant) and it is a variant.
DEFAULT_BASELINE = "fcfs+easy"


def _baseline_choice(variants: list[str], baseline: str | None) -> tuple[str | None, str]:
    """(the baseline, which rule chose it: ``"study"``, ``"default"`` or ``"first"``)."""
    for want, rule in ([(baseline, "study")] if baseline else []) + [(DEFAULT_BASELINE, "default")]:
        hit = next((v for v in variants if v == want or v.startswith(want + "+")), None)
        if hit is not None:
            return hit, rule
    return (variants[0] if variants else None), "first"


def default_baseline(variants: list[str], baseline: str | None = None) -> str | None:
    """The variant every other is compared with: the spec's ``baseline`` (``"policy+backfill"``,
    matching the first variant whose label is it or starts with it and ``+``), else ``fcfs+easy``
    when present, else the first variant; None without variants."""
    return _baseline_choice(variants, baseline)[0]


def baseline_rule(variants: list[str], baseline: str | None = None) -> str:
    """Which rule of :func:`default_baseline` chose the baseline of ``variants``: ``"study"`` (the
    spec's ``baseline``), ``"default"`` (:data:`DEFAULT_BASELINE`) or ``"first"`` (the first variant)."""
    return _baseline_choice(variants, baseline)[1]


def _bootstrap(scores: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """n_boot x variants mean scores over resampled blocks (rows of ``scores``)."""
    m = scores.shape[0]
    if m < 2:
        return scores.mean(axis=0, keepdims=True)
    idx = np.random.default_rng(seed).integers(0, m, size=(n_boot, m))
    return scores[idx].mean(axis=1)


def _objective(name: str, scores: np.ndarray, vs: list[str], n_boot: int, seed: int) -> tuple:
    """(best, p_best, mean_rank, runner_up, gap_ci, distinguishable, p_sign, ahead, behind) from
    blocks x variants scores (lower is better)."""
    mean = scores.mean(axis=0)
    order = np.argsort(mean, kind="stable")
    b = int(order[0])
    boot = _bootstrap(scores, n_boot, seed)
    lowest = np.isclose(boot, boot.min(axis=1, keepdims=True), rtol=0, atol=1e-12)
    p = float((lowest[:, b] / lowest.sum(axis=1)).mean())
    if len(vs) < 2:
        return vs[b], p, float(mean[b]), None, (float("nan"), float("nan")), False, None, None, None
    r = int(order[1])
    gap = boot[:, r] - boot[:, b]
    lo, hi = (np.quantile(gap, [0.025, 0.975]) if scores.shape[0] >= 2 else (float("nan"), float("nan")))
    # the paired sign test of best against the runner-up (the stability section's test): a bootstrap
    # of few blocks can exclude zero while the runner-up is ahead in some blocks and tied in others
    c, n = win_counts(scores[:, [b, r]], "min")  # as sweep.stability counts the pair: NaN never wins
    ahead, behind = int(c[0, 1]), int(c[1, 0])
    p_sign = sign_test(ahead, behind, n - ahead - behind)
    dist = bool(scores.shape[0] >= MIN_BLOCKS and lo > 0 and p_sign < SIGN_LEVEL)
    return vs[b], p, float(mean[b]), vs[r], (float(lo), float(hi)), dist, p_sign, ahead, behind


def _change(name: str, best: np.ndarray, base: np.ndarray) -> float | None:
    """Change of ``best`` against ``base`` (per-block values, stored units) on metric ``name``: % of the
    baseline's mean (compare = ratio) or the difference of the means in display units."""
    ok = ~(np.isnan(best) | np.isnan(base))
    if not ok.any():
        return None
    a, b = best[ok].mean(), base[ok].mean()
    m = metric(name)
    if m.compare == "difference":
        return float((a - b) / m.scale)
    return None if b == 0 else float(100.0 * (a - b) / abs(b))


def cost_text(name: str, change: float | None) -> str:
    """A change from :class:`ObjectiveVerdict` ``costs`` as text: ``"−58 % mean wait"``,
    ``"+1.2 %-points utilisation"``, ``"mean wait: —"`` when undefined."""
    m = metric(name)
    if change is None:
        return f"{m.label}: —"
    change = float(f"{change:.2g}")  # 2 significant digits (9.9999 -> 10, not 10.0)
    if m.compare == "difference":
        unit = "%-points" if m.display_unit == "%" else (m.display_unit or "")
        text = format_number(change, 2, decimals=None if abs(change) >= 1 else 2)
    else:
        unit = "%"
        text = format_number(change, 2, decimals=0 if abs(change) >= 10 else 1)
    text = text.replace("-", "−")
    sign = "" if text.startswith("−") or text.strip("0.") == "" else "+"
    return f"{sign}{text} {unit} {m.label}".replace("  ", " ")


@dataclasses.dataclass(frozen=True)
class BlockScores:
    """The per-block values and ranks of one scope: ``variants`` (grid order), ``blocks`` (labels
    ``(dataset, window, seed)``, sorted), ``values`` / ``ranks``: metric -> blocks x variants arrays
    (stored units / ranks, 1 = best); ``tradeoff``: blocks x variants weighted mean rank of the
    trade-off metrics (lower is better), None when none of them is in the table."""

    variants: tuple[str, ...]
    blocks: tuple[tuple, ...]
    values: dict[str, np.ndarray]
    ranks: dict[str, np.ndarray]
    tradeoff: np.ndarray | None

    def scores(self, objective: str) -> np.ndarray:
        """Blocks x variants scores of ``objective`` (a metric or :data:`TRADEOFF`), lower = better:
        ranks for a metric, the weighted mean rank for the trade-off. Raises KeyError when absent."""
        if objective == TRADEOFF:
            if self.tradeoff is None:
                raise KeyError(objective)
            return self.tradeoff
        return self.ranks[objective]


def block_scores(g: pd.DataFrame, variants: list[str], directions: dict[str, str],
                 tradeoff: dict[str, float]) -> BlockScores | None:
    """The :class:`BlockScores` of the runs ``g`` (one row per run with ``dataset``, ``window``,
    ``seed``, ``variant`` and metric columns; blocks are the (dataset, window, seed) that occur in
    it). ``directions``: metric -> min/max of every metric to score; ``tradeoff``: metric -> weight.
    Metrics absent from ``g`` are left out. None when ``g`` has no variant, metric or block."""
    vs = [v for v in variants if v in set(g["variant"])]
    metrics = [m for m in dict.fromkeys(list(directions) + list(tradeoff)) if m in g.columns]
    if not vs or not metrics:
        return None
    values: dict[str, np.ndarray] = {}
    ranks: dict[str, np.ndarray] = {}
    pivot = BlockPivot(g, vs, block_cols=_BLOCK)
    labels = pivot.blocks
    for m in metrics:
        values[m] = pivot.values(m)
        ranks[m] = block_ranks(values[m], directions.get(m) or metric(m).direction)
    if not labels:
        return None
    tw = {m: w for m, w in tradeoff.items() if m in ranks}
    score = sum(w * ranks[m] for m, w in tw.items()) / sum(tw.values()) if tw else None
    return BlockScores(tuple(vs), tuple(labels), values, ranks, score)


def alike_pairs(ranks: dict[str, np.ndarray], metrics: list[str]) -> tuple[tuple[str, str], ...]:
    """Pairs ``(a, b)`` of ``metrics`` (in their order, ``a`` first) whose blocks x variants rank
    arrays in ``ranks`` are equal in every block: two objectives that order the variants exactly
    alike (e.g. facility energy per node-hour and utilisation under a power model whose idle power
    dominates), which a weighted trade-off counts twice. Metrics absent from ``ranks`` are skipped;
    a metric whose ranks are all tied pairs with nothing (it expresses no preference)."""
    ms = [m for m in metrics if m in ranks and len(np.unique(ranks[m])) > 1]
    return tuple((a, b) for i, a in enumerate(ms) for b in ms[i + 1:] if np.array_equal(ranks[a], ranks[b]))


def _scope(name: str, g: pd.DataFrame, variants: list[str], rank: dict[str, str], tradeoff: dict[str, float],
           baseline: str | None, n_boot: int, seed: int) -> ScopeVerdict | None:
    bs = block_scores(g, variants, rank, tradeoff)
    if bs is None:
        return None
    vs = list(bs.variants)
    base = default_baseline(vs, baseline)
    bi = vs.index(base)

    ds_of = np.array([str(b[0]) for b in bs.blocks], dtype=object)
    datasets = list(dict.fromkeys(ds_of))

    def change(m: str, k: int) -> float | None:
        """The change on ``m`` of variant ``k`` against the baseline: over one dataset, of its
        blocks' means; over several, the mean of each dataset's change, so that each dataset weighs
        the same (pooled means are those of the dataset with the largest values: a 4,392-node
        machine's power ramps over two 100-node machines')."""
        if len(datasets) == 1:
            return _change(m, bs.values[m][:, k], bs.values[m][:, bi])
        per = [_change(m, bs.values[m][ds_of == d, k], bs.values[m][ds_of == d, bi]) for d in datasets]
        per = [c for c in per if c is not None]
        return float(np.mean(per)) if per else None

    def agree(m: str, k: int, c: float | None) -> tuple[int, int] | None:
        """(blocks whose difference of variant ``k`` from the baseline on ``m`` has the sign of its
        cost ``c``, blocks with both values); None without a non-zero cost."""
        if c is None or c == 0:
            return None
        d = bs.values[m][:, k] - bs.values[m][:, bi]
        d = d[~np.isnan(d)]
        return int((np.sign(d) == np.sign(c)).sum()), int(len(d))

    def verdict(obj: str, scores: np.ndarray) -> ObjectiveVerdict:
        best, p, mr, ru, ci, dist, p_sign, ahead, behind = _objective(obj, scores, vs, n_boot, seed)
        k = vs.index(best)
        costs = {m: change(m, k) for m in bs.values}
        blocks = {m: a for m in bs.values if (a := agree(m, k, costs[m])) is not None}
        return ObjectiveVerdict(obj, best, p, mr, ru, ci, dist, costs, p_sign, ahead, behind, blocks)

    objs = [verdict(m, bs.ranks[m]) for m in rank if m in bs.ranks]
    if bs.tradeoff is not None:
        objs.append(verdict(TRADEOFF, bs.tradeoff))
    past = past_end_blocks(g)
    past_windows = tuple(dict.fromkeys(f"{r.dataset}/{r.window}" for r in past.itertuples()))
    return ScopeVerdict(name, len(bs.blocks), tuple(vs), base, tuple(objs), len(past), past_windows,
                        alike_pairs(bs.ranks, list(tradeoff)), windows=len({tuple(b[:2]) for b in bs.blocks}),
                        seeds=len({b[2] for b in bs.blocks}), alike_ranked=alike_pairs(bs.ranks, list(rank)))


def compute_verdict(runs: pd.DataFrame, variants: list[str], rank: dict[str, str],
                    tradeoff: dict[str, float] | None = None, baseline: str | None = None,
                    n_boot: int = 1000, seed: int = 0) -> Verdict:
    """The verdict of a run table.

    ``runs``: one row per ranked run with ``dataset``, ``window``, ``seed``, ``variant`` and the metric
    columns (incomplete blocks already left out by the caller, :func:`sweep.ranking.drop_blocks`);
    ``variants``: labels in grid order; ``rank``: metric -> ``"min"``/``"max"`` (spec order);
    ``tradeoff``: metric -> weight > 0 (default: every rank metric, weight 1); ``baseline``: see
    :func:`default_baseline`; ``n_boot`` resamples with RNG ``seed``. Scopes without blocks are
    left out. Raises UnknownNameError (core.metrics) for a metric the catalogue does not know.
    """
    tradeoff = dict(tradeoff) if tradeoff else {m: 1.0 for m in rank}
    directions = {m: rank.get(m) or metric(m).direction for m in list(rank) + list(tradeoff)}
    scopes = []
    if len(runs):
        for ds, g in runs.groupby("dataset", sort=False):
            s = _scope(str(ds), g, variants, directions, tradeoff, baseline, n_boot, seed)
            if s is not None:
                scopes.append(s)
        if runs["dataset"].nunique() > 1:
            s = _scope(OVERALL, runs, variants, directions, tradeoff, baseline, n_boot, seed)
            if s is not None:
                scopes.append(s)
    # rank keeps its own objectives; trade-off-only metrics are costs, not objectives
    scopes = [dataclasses.replace(s, objectives=tuple(o for o in s.objectives if o.objective in rank
                                                      or o.objective == TRADEOFF)) for s in scopes]
    return Verdict(tuple(scopes), tradeoff, directions)
