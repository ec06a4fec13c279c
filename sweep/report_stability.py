"""The report's uncertainty section (``stability``, issue 13 item 3): which conclusions of the verdict
survive run-time uncertainty (:mod:`twinsweep.sweep.stability`), how stable each window's ranking is
across the perturbation seeds, and — where the study names a validation of the trace — the twin's
stated error beside the differences between variants (:mod:`twinsweep.sweep.twin_error`).

:func:`section_stability` is one section function of the report (:mod:`twinsweep.sweep.report`).
"""

from __future__ import annotations

import html
import types

import numpy as np
import pandas as pd

from twinsweep.core.metrics import format_number, metric

from .ranking_stability import minimum_text
from .report_verdict import objective_label
from .stability import SIGN_LEVEL, conclusions, pair_flips, window_stability
from .twin_error import METRIC_FIGURES, TwinError, difference_table
from .verdict import MIN_BLOCKS, OVERALL, TRADEOFF, Verdict

__all__ = ["section_stability", "conclusion_text", "SECTION_ID", "TITLE"]

SECTION_ID = "stability"
TITLE = "Ranking stability under run-time uncertainty"


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "—"
    v = 100 * x
    text = format_number(v, 2, decimals=0 if abs(v) >= 10 or v == 0 else 1)
    if signed:
        text = text.replace("-", "−")
        text = ("+" if not text.startswith("−") and text.strip("0.") else "") + text
    return f"{text} %"


def _rows(df: pd.DataFrame) -> list[types.SimpleNamespace]:
    """The rows of ``df`` with attribute access, as ``df.itertuples()`` gives them, without the
    namedtuple class ``itertuples`` builds on every call (~1 ms each)."""
    return [types.SimpleNamespace(**r) for r in df.to_dict("records")]


def _p_text(p: float) -> str:
    """A sign test's p as shown: 2 significant digits, ``< 0.001`` below that (24 blocks that all
    agree give p = 1.2e-7, which 2 digits would round to 0)."""
    return "< 0.001" if p < 0.001 else f"= {format_number(p, 2)}"


def _obj(o: str, directions: dict[str, str]) -> str:
    return "the stated trade-off" if o == TRADEOFF else objective_label(o, directions)


def _standing(r, untested: str = " (too few blocks to test)") -> tuple[str, str]:
    """How a conclusion stands, as (counts, verdict), from both criteria of the section: whether
    any block reverses it (``survives``) and, from :data:`MIN_BLOCKS` blocks, whether the sign test
    is significant at :data:`sweep.stability.SIGN_LEVEL`. So that "does not survive" never sits
    beside a significant p unexplained, nor "survives" beside a large one:

    - every block ties: ``tied in every block``;
    - never reversed, significant: ``survives``; with too few blocks to test: ``survives (too few
      blocks to test)``;
    - never reversed, not significant: ``never reversed, but not significant``, with ``: the
      blocks mostly tie`` when more blocks tie than favour it;
    - reversed in some block, significant: ``holds on balance (significant), not in every block``;
    - reversed, not significant: ``does not survive``; as many blocks each way reads ``split 4–4``,
      not as a reversal.

    ``counts`` gives ahead / reversed / tied out of the blocks, ties always shown; ``untested``: what
    follows ``survives`` below :data:`MIN_BLOCKS` blocks (``""`` where the caller says it itself)."""
    tied = f", tied in {r.ties}" if r.ties else ""
    testable = r.blocks >= MIN_BLOCKS
    significant = testable and r.p_sign < SIGN_LEVEL
    if r.a_better == 0 and r.b_better == 0:
        return f"tied in all {r.blocks}", "tied in every block"
    if r.survives:
        counts = f"ahead in {r.a_better} of {r.blocks}{tied}"
        if not testable:
            return counts, "survives" + untested
        if not significant:
            return counts, "never reversed, but not significant" + (
                ": the blocks mostly tie" if r.ties > r.a_better else "")
        return counts, "survives"
    if r.a_better == r.b_better:  # neither is behind: not a reversal of a lead
        return f"split {r.a_better}–{r.b_better} of {r.blocks}{tied}", "does not survive"
    counts = f"reversed in {r.b_better} of {r.blocks} ({_pct(r.flip_share)}), ahead in {r.a_better}{tied}"
    if significant:
        return counts, "holds on balance (significant), not in every block"
    return counts, "does not survive"


def standing(r) -> str:
    """The verdict word of :func:`_standing` for one row of :func:`sweep.stability.conclusions`
    (the ``standing`` column of stability_conclusions.csv)."""
    return _standing(r)[1]


def conclusion_text(r, directions: dict[str, str], test: bool = True) -> str:
    """One row of :func:`sweep.stability.conclusions` as a sentence, e.g. ``"sjf+easy is ahead of
    fcfs+easy (the baseline) on mean wait (minimise) in 100 % of blocks (6 of 6): survives (sign test
    p = 0.031)"`` or ``"the order of X and Y (the runner-up) on ... flips in 40 % of blocks (2 of 5,
    ahead in 3): does not survive"`` (the four outcomes: :func:`_standing`);
    with ``test``, the sign test's p, or that there are too few blocks for one."""
    obj = _obj(r.objective, directions)
    who = f"{r.b} (the {r.against})"
    _, verdict = _standing(r, untested="")  # too few blocks: said below, with the number needed
    tied = f", tied in {r.ties}" if r.ties else ""
    if r.survives:
        text = (f"{r.a} is ahead of {who} on {obj} in {_pct(r.holds_share)} of blocks ({r.a_better} of "
                f"{r.blocks}{tied}): {verdict}")
    elif r.a_better == 0 and r.b_better == 0:
        text = f"{r.a} and {who} tie on {obj} in every block ({r.blocks})"
    else:
        text = (f"the order of {r.a} and {who} on {obj} flips in {_pct(r.flip_share)} of blocks "
                f"({r.b_better} of {r.blocks}, ahead in {r.a_better}{tied}): {verdict}")
    if not test:
        return text
    if r.blocks < MIN_BLOCKS:
        return text + f" — too few blocks for a sign test at 5 % (need ≥ {MIN_BLOCKS})"
    return text + f" (sign test p {_p_text(r.p_sign)})"


def _cell(r) -> str:
    """One conclusion as a table cell: the opponent, then how often it holds / is reversed / ties
    and how it stands (:func:`_standing`)."""
    counts, word = _standing(r)
    verdict = counts if r.a_better == 0 and r.b_better == 0 else f"{counts} — {word}"
    p = f"; p {_p_text(r.p_sign)}" if r.blocks >= MIN_BLOCKS else ""
    return f"{r.b}: {verdict}{p}"


def _conclusions(pg, conc: pd.DataFrame, directions: dict[str, str], baselines: dict[str, str | None]) -> None:
    recs = _rows(conc)
    by_scope: dict[str, list] = {}  # the trade-off rows per scope, in table order
    for r in recs:
        if r.objective == TRADEOFF:
            by_scope.setdefault(r.scope, []).append(r)
    items = []
    for scope, g in by_scope.items():
        what = "Across all datasets" if scope == OVERALL else f"On {scope}"
        n = int(g[0].blocks)
        few = (f" ({n} blocks: too few for a sign test at 5 %, which needs ≥ {MIN_BLOCKS})" if n < MIN_BLOCKS
               else "")
        items.append(f"<li>{html.escape(what)}: "
                     + "; ".join(html.escape(conclusion_text(r, directions, test=n >= MIN_BLOCKS))
                                 for r in g) + f"{html.escape(few)}.</li>")
    if items:
        pg.raw(f"<p>The verdict's recommendations for the stated trade-off, block by block:</p>"
               f"<ul class=\"verdict\">{''.join(items)}</ul>")
    by_objective: dict[tuple, list] = {}  # the rows per (scope, objective), in table order
    for r in recs:
        by_objective.setdefault((r.scope, r.objective), []).append(r)
    rows = []
    for (scope, o), g in by_objective.items():
        cells = {r.against: _cell(r) for r in g}
        base = baselines.get(scope)
        no_base = ("— (it is the baseline)" if base == g[0].a else "— (the runner-up is the baseline)"
                   if base is not None else "—")
        rows.append({"scope": scope, "objective": objective_label(o, directions), "recommended": g[0].a,
                     "blocks": int(g[0].blocks), "against the runner-up": cells.get("runner-up", "—"),
                     "against the baseline": cells.get("baseline", no_base)})
    pg.p(f"Every objective: the recommended variant against the runner-up and the baseline, block by block "
         f"(p: two-sided sign test, from {MIN_BLOCKS} blocks).")
    pg.table(pd.DataFrame(rows), cls="t verdict-table")


def _windows(pg, ws: pd.DataFrame, directions: dict[str, str]) -> None:
    def top(k: int, n: int) -> str:
        if k >= n:
            return "the whole ranking"
        if k <= 0:
            return "none: the leader loses some seed"
        return "place 1 only" if k == 1 else f"places 1–{k}"

    shown = pd.DataFrame({
        "dataset": ws["dataset"], "window": ws["window"],
        "objective": [objective_label(o, directions) for o in ws["objective"]],
        "seeds": ws["seeds"].astype("int64"),
        "pairs reversed in some seed": [f"{k} of {p}" for k, p in zip(ws["pairs_flipping"], ws["pairs"])],
        "largest flip share": [_pct(x) for x in ws["max_flip_share"]],
        "order kept in every seed": [top(k, n) for k, n in zip(ws["stable_top"], ws["variants"])]})
    pg.table(shown, cls="t verdict-table")


def _twin_errors(pg, runs: pd.DataFrame, variants: list[str], verdict: Verdict, errors: dict[str, TwinError]) -> None:
    pg.h(3, "Differences between variants beside the twin's stated error")
    ref = {s.scope: s.get(TRADEOFF).best for s in verdict.scopes if s.get(TRADEOFF) is not None}
    table = difference_table(runs, variants, ref, errors)
    pg.p("The twin's error on the trace as twinsweep validate states it (docs/validation.md), for the validated "
         "policy: the signed relative error of the mean / p95 wait and mean bounded slowdown against the recorded "
         "schedule, in the validation mode that matches a sweep window (restart: started from the recorded state; "
         "else blind), and its noise floor (the largest change of the same figure under 1 % run-time noise). A "
         "difference between two variants smaller than the twin's error is not established by the twin (errors of "
         "the level may cancel between policies; the validation's ranking stability says how far rankings move).")
    for ds, te in errors.items():
        figs = ", ".join(f"{metric(m).label} {_pct(te.errors.get(m), signed=True)} (noise floor ±"
                         f"{_pct(te.noise.get(m))})" for m in METRIC_FIGURES)
        tau = "" if te.tau_min is None else f"; ranking stability: Kendall's τ blind vs informed ≥ {minimum_text(te.tau_min)}"
        jobs = "" if te.jobs_compared is None else f", {te.jobs_compared:,} jobs compared"
        pg.p(f"<b>{html.escape(ds)}</b>: {html.escape(te.policy)}, mode {html.escape(te.mode)}{jobs}: "
             f"{html.escape(figs)}{html.escape(tau)}. Source: <code>{html.escape(te.path)}</code>.", raw=True)
        g = table[table["dataset"] == ds]
        if g.empty:
            pg.p("No ranked runs of this dataset to compare.")
            continue
        out = pd.DataFrame({"variant": list(dict.fromkeys(g["variant"]))})
        for m, gm in g.groupby("metric", sort=False):
            cells = {r.variant: _pct(r.difference, signed=True) + (f" — {r.label}" if r.label else "")
                     for r in _rows(gm)}
            out[f"{metric(m).label}: vs {gm['reference'].iloc[0]}"] = [cells.get(v, "—") for v in out["variant"]]
        pg.table(out, key_cols=1, max_cols=3, cls="t verdict-table")
    pg.csv(table, "twin_error.csv")


def section_stability(pg, runs: pd.DataFrame, variants: list[str], verdict: Verdict,
                      errors: dict[str, TwinError] | None = None) -> None:
    """Write the stability section: the verdict's conclusions tested block by block, the per-window
    ranking stability across seeds, and (with ``errors``: :func:`sweep.twin_error.load_twin_errors`)
    the differences between variants beside the twin's stated error; CSVs ``stability_conclusions.csv``,
    ``stability_pairs.csv`` (every pair of variants per window and objective), ``stability_windows.csv``
    and ``twin_error.csv``.

    ``runs``: the ranked runs the verdict was computed from (reference replay and incomplete blocks set
    apart); ``variants``: grid order; ``verdict``: :func:`sweep.verdict.compute_verdict`'s result."""
    pg.h(2, TITLE, SECTION_ID)
    if not verdict.scopes or runs.empty:
        pg.p("No ranked blocks: nothing to test.")
        return
    pg.p("Seeds > 0 perturb the trace's run and submit times by the study's perturbation model, so the seeds of "
         "one window are the same workload under run-time uncertainty — with the requested time limits kept as "
         "recorded, so a job whose perturbed run time exceeds its limit is killed there (count_timeout in "
         "runs.parquet: more such jobs at seeds > 0 than at seed 0, the recorded trace). For two variants, a block <i>reverses</i> "
         "their order when the one behind (by the majority of the blocks) does strictly better there; the "
         "<i>flip share</i> is the share of blocks that reverse it, ties (the same schedule) count for neither "
         "(paired comparison as in J. Demšar, \"Statistical comparisons of classifiers over multiple data "
         "sets\", JMLR 7, 2006). A conclusion of the verdict — the recommended variant ahead of the runner-up or "
         "the baseline — <b>survives</b> when no block of its scope reverses it. The two-sided exact sign test "
         f"(ties split evenly, an odd tie dropped) can reach the 5 % level only from {MIN_BLOCKS} blocks. The two criteria can "
         "disagree, and the wording says so: when no block reverses a conclusion but too few blocks favour it for "
         "the sign test (often because most tie), it reads <i>never reversed, but not significant</i>; when a "
         "few blocks reverse it but the sign test is significant, <i>holds on balance, not in every block</i>. Every pair of variants "
         "of every window is in stability_pairs.csv.", raw=True)
    directions = verdict.directions
    conc = conclusions(runs, verdict, variants)
    if not conc.empty:
        _conclusions(pg, conc, directions, {s.scope: s.baseline for s in verdict.scopes})
    objectives = [TRADEOFF] + [o.objective for o in verdict.scopes[0].objectives if o.objective != TRADEOFF]
    ws = window_stability(runs, variants, directions, verdict.tradeoff, objectives)
    if not ws.empty:
        pg.h(3, "Each window's ranking across its seeds")
        pg.p("Per window: how many pairs of variants change order in at least one seed, the largest flip share, "
             "and how far down the ranking (variants by mean rank) no pair ever changes order.")
        _windows(pg, ws, directions)
    if errors:
        _twin_errors(pg, runs, variants, verdict, errors)
    pg.csv(conc.assign(standing=[standing(r) for r in _rows(conc)]), "stability_conclusions.csv")
    pg.csv(pair_flips(runs, variants, directions, verdict.tradeoff, objectives), "stability_pairs.csv")
    pg.csv(ws, "stability_windows.csv")
