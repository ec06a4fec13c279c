"""Ranking stability under run-time uncertainty (issue 13, item 3): how often the order of two
variants flips across the perturbation seeds, and which conclusions of the verdict survive it.

Terms as in :mod:`twinsweep.sweep.ranking` and :mod:`twinsweep.sweep.verdict`: a *block* is one
(dataset, window, seed); within a block a variant's *score* on an objective is its rank (1 = best,
ties share the average rank, an undefined metric ranks last) or, for the stated trade-off, its
weighted mean rank; lower is better. Seeds > 0 perturb the run times (and submit times) of the
trace by the study's perturbation model, so the blocks of one (dataset, window) are the same
workload under run-time uncertainty.

For two variants a, b on one objective over a set of blocks (the paired comparison of Demšar,
"Statistical comparisons of classifiers over multiple data sets", JMLR 7:1-30, 2006, §3.1.1):

- ``a_better`` / ``b_better`` / ``ties``: blocks in which a scores strictly lower / b does / both
  score the same (two runs with the same schedule, or both undefined);
- the pair's **order** in a (dataset, window) is the majority order over its seeds: a is ahead when
  ``a_better >= b_better`` (equal counts: the lower mean score, then grid order);
- the **flip share** is ``b_better / n``: the share of the seeds in which the order is reversed
  (``n`` = seeds; ties are neither order and count in ``tie_share``). It is 0 when every seed agrees
  and at most 1/2 by the orientation. Against a pairwise share over seed pairs it has the advantage
  of reading as "in x % of the perturbed realisations the conclusion is the other way round";
- ``p_sign``: the two-sided exact sign test of "a and b are equally often ahead", ties split evenly
  between the two (an odd one left out), as Demšar recommends; with ``n`` blocks it can fall below
  5 % only from ``n >= 6`` (:data:`sweep.verdict.MIN_BLOCKS`).

A **conclusion** of the verdict, "best is ahead of X on objective o" for X = the runner-up and X =
the baseline, is tested over every block of its scope (every window and seed of a dataset, or of
every dataset): it **survives** run-time uncertainty when no block reverses it (``b_better == 0``)
and some block shows it (``a_better > 0``); otherwise it flips in ``b_better`` of the ``n`` blocks.
Within one (dataset, window), the **stable top** of an objective is the largest k such that each of
the first k variants by mean score (ties: grid order) loses to no variant after it in any seed
(places 1..k are the same in every seed; 0 when the leader loses some seed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .ranking import SIGN_LEVEL, sign_test, win_counts  # sign_test, SIGN_LEVEL: re-exported
from .verdict import OVERALL, TRADEOFF, BlockScores, Verdict, block_scores

__all__ = ["SIGN_LEVEL", "sign_test", "pair_flips", "window_stability", "conclusions", "PAIR_COLUMNS", "CONCLUSION_COLUMNS"]


#: Columns of :func:`pair_flips`.
PAIR_COLUMNS = ["dataset", "window", "objective", "a", "b", "seeds", "a_better", "b_better", "ties",
                "flip_share", "tie_share", "p_sign"]
#: Columns of :func:`conclusions`.
CONCLUSION_COLUMNS = ["scope", "objective", "against", "a", "b", "blocks", "a_better", "b_better", "ties",
                      "holds_share", "flip_share", "p_sign", "survives"]




def _objectives(bs: BlockScores, objectives: list[str]) -> list[str]:
    return [o for o in objectives if (o == TRADEOFF and bs.tradeoff is not None) or o in bs.ranks]


def _orient(c: np.ndarray, mean: np.ndarray, i: int, j: int) -> tuple[int, int]:
    """(ahead, behind) of variants i < j (grid order) by the majority of blocks, then mean score."""
    if c[i, j] != c[j, i]:
        return (i, j) if c[i, j] > c[j, i] else (j, i)
    return (j, i) if mean[j] < mean[i] else (i, j)


def _window_counts(runs, variants, directions, tradeoff, objectives):
    """Per (dataset, window) with scores, and per objective: ``(dataset, window, objective,
    block_scores, scores (seeds x variants), win counts, seeds)``; the shared walk of
    :func:`pair_flips` and :func:`window_stability`."""
    for (ds, win), g in runs.groupby(["dataset", "window"], sort=False):
        bs = block_scores(g, variants, directions, tradeoff)
        if bs is None:
            continue
        for o in _objectives(bs, objectives):
            sc = bs.scores(o)
            c, n = win_counts(sc, "min")
            yield ds, win, o, bs, sc, c, n


def pair_flips(runs: pd.DataFrame, variants: list[str], directions: dict[str, str], tradeoff: dict[str, float],
               objectives: list[str]) -> pd.DataFrame:
    """Every pair of variants per (dataset, window) and objective across the seeds: columns
    :data:`PAIR_COLUMNS`, ``a`` the variant ahead (see the module docstring), one row per pair.

    ``runs``: ranked runs (one per dataset x window x seed x variant; the reference ``replay`` and
    incomplete blocks already set apart); ``directions``: metric -> min/max; ``tradeoff``: metric ->
    weight; ``objectives``: metrics and/or :data:`sweep.verdict.TRADEOFF`, in page order."""
    rows = []
    for ds, win, o, bs, sc, c, n in _window_counts(runs, variants, directions, tradeoff, objectives):
        mean = sc.mean(axis=0)
        for i in range(len(bs.variants)):
            for j in range(i + 1, len(bs.variants)):
                a, b = _orient(c, mean, i, j)
                ties = n - c[a, b] - c[b, a]
                rows.append({"dataset": ds, "window": win, "objective": o, "a": bs.variants[a],
                             "b": bs.variants[b], "seeds": n, "a_better": int(c[a, b]), "b_better": int(c[b, a]),
                             "ties": int(ties), "flip_share": c[b, a] / n, "tie_share": ties / n,
                             "p_sign": sign_test(int(c[a, b]), int(c[b, a]), int(ties))})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _stable_top(c: np.ndarray, order: np.ndarray) -> int:
    """Largest k such that each of the first k of ``order`` is beaten in no block by any variant
    after it (``c[x, y]``: blocks in which x beats y): places 1..k are the same in every block.
    0 when the leader itself loses to some variant in some block. (Until 2026-12-07 only pairs
    *among* the first k counted, so k was at least 1 — "place 1 kept" — even when the leader
    lost a block to the runner-up.)"""
    for k in range(len(order)):
        if any(c[order[j], order[k]] > 0 for j in range(k + 1, len(order))):
            return k
    return len(order)


def window_stability(runs: pd.DataFrame, variants: list[str], directions: dict[str, str],
                     tradeoff: dict[str, float], objectives: list[str]) -> pd.DataFrame:
    """Per (dataset, window) and objective: ``seeds``, ``variants``, ``pairs``, ``pairs_flipping``
    (pairs reversed in at least one seed), ``max_flip_share`` (the largest flip share of a pair),
    ``stable_top`` (module docstring) and ``order`` (the variants by mean score, ``" > "``-joined).
    Arguments as :func:`pair_flips`."""
    rows = []
    for ds, win, o, bs, sc, c, n in _window_counts(runs, variants, directions, tradeoff, objectives):
        order = np.argsort(sc.mean(axis=0), kind="stable")
        k = len(bs.variants)
        reversed_ = np.minimum(c, c.T)[np.triu_indices(k, 1)]  # the minority count of each pair
        rows.append({"dataset": ds, "window": win, "objective": o, "seeds": n, "variants": k,
                     "pairs": k * (k - 1) // 2, "pairs_flipping": int((reversed_ > 0).sum()),
                     "max_flip_share": float(reversed_.max() / n) if len(reversed_) else 0.0,
                     "stable_top": _stable_top(c, order),
                     "order": " > ".join(bs.variants[i] for i in order)})
    return pd.DataFrame(rows)


def conclusions(runs: pd.DataFrame, verdict: Verdict, variants: list[str]) -> pd.DataFrame:
    """The verdict's conclusions tested block by block: for every scope and objective of
    ``verdict``, the recommended variant (``a``) against the runner-up and against the baseline
    (``against`` = ``"runner-up"`` / ``"baseline"``; one row when they are the same variant, none
    against a baseline that is the recommended variant). Columns :data:`CONCLUSION_COLUMNS`;
    ``survives``: never reversed in a block of the scope and shown in at least one.

    ``runs``: the ranked runs the verdict was computed from; ``variants``: grid order."""
    rows = []
    for s in verdict.scopes:
        g = runs if s.scope == OVERALL else runs[runs["dataset"].astype(str) == s.scope]
        bs = block_scores(g, variants, verdict.directions, verdict.tradeoff)
        if bs is None:
            continue
        vs = list(bs.variants)
        for o in s.objectives:
            try:
                sc = bs.scores(o.objective)
            except KeyError:
                continue
            c, n = win_counts(sc, "min")
            against = [("runner-up", o.runner_up), ("baseline", s.baseline)]
            seen = {o.best}
            for what, b in against:
                if b is None or b in seen:
                    continue
                seen.add(b)
                i, j = vs.index(o.best), vs.index(b)
                ties = n - c[i, j] - c[j, i]
                rows.append({"scope": s.scope, "objective": o.objective, "against": what, "a": o.best, "b": b,
                             "blocks": n, "a_better": int(c[i, j]), "b_better": int(c[j, i]), "ties": int(ties),
                             "holds_share": c[i, j] / n, "flip_share": c[j, i] / n,
                             "p_sign": sign_test(int(c[i, j]), int(c[j, i]), int(ties)),
                             "survives": bool(c[j, i] == 0 and c[i, j] > 0)})
    return pd.DataFrame(rows, columns=CONCLUSION_COLUMNS)
