"""The report's first section, ``verdict``: what to run, how sure we are, what it costs, and how to
read the rest of the page (rendering of :class:`twinsweep.sweep.verdict.Verdict`).

:func:`section_verdict` is one section function of the report (:mod:`twinsweep.sweep.report`).
"""

from __future__ import annotations

import html

import pandas as pd

from twinsweep.core.metrics import ENERGY_PER_WORK, format_number, metric

from .verdict import OVERALL, TRADEOFF, ObjectiveVerdict, ScopeVerdict, Verdict, cost_text

#: HTML id of the section.
SECTION_ID = "verdict"

HOW_TO_READ = (
    "How to read this page: every (dataset, window, seed) is a <i>block</i> in which all variants ran on the "
    "same workload; within a block the variants are ranked per objective (1 = best). The recommended variant "
    "has the lowest mean rank over the blocks. <i>P(best)</i> is the share of bootstrap resamples of the blocks in "
    "which it stays first: near 100 % the choice is robust to which seeds and windows were drawn, near "
    "1/number of variants it is a coin toss. <i>Distinguishable</i> means the 95 % bootstrap interval of the "
    "runner-up's mean-rank gap excludes zero. Costs compare the recommended variant with the baseline on every "
    "objective (mean over blocks; % change, or a difference for percentages, PUE and temperatures). Energy is "
    "ranked per node-hour delivered: a total over a fixed window would reward leaving nodes idle. The sections "
    "below give the trade-off (Pareto) view, rank tables, ranking stability and, last, the details.")


def _obj_label(o: str, directions: dict[str, str]) -> str:
    if o == TRADEOFF:
        return "stated trade-off"
    m = metric(o)
    return f"{m.label} ({'minimise' if directions.get(o, m.direction) == 'min' else 'maximise'})"


def _costs(o: ObjectiveVerdict, scope: ScopeVerdict, objectives: list[str]) -> str:
    if scope.baseline is None:
        return "—"
    if o.best == scope.baseline:
        return "is the baseline"
    return ", ".join(cost_text(m, o.costs.get(m)) for m in objectives if m in o.costs)


def _sure(o: ObjectiveVerdict, blocks: int) -> str:
    if o.runner_up is None:
        return "the only variant"
    if blocks < 2:
        return "one block: no uncertainty estimate"
    return (f"distinguishable from {o.runner_up}" if o.distinguishable
            else f"not distinguishable from {o.runner_up}")


def _tradeoff_text(v: Verdict) -> str:
    total = sum(v.tradeoff.values())
    return ", ".join(f"{metric(m).label} {format_number(100 * w / total, 2)} %" for m, w in v.tradeoff.items())


def section_verdict(pg, v: Verdict, notes: list[str]) -> None:
    """Write the verdict section: a headline per scope for the stated trade-off, a table of every
    objective's recommendation per scope, the caveats in ``notes`` (HTML, e.g. failed or missing runs,
    windows past their trace) and how to read the page. ``pg``: the report's page (``h``, ``p``, ``raw``,
    ``table``)."""
    pg.h(2, "Verdict", SECTION_ID)
    if not v.scopes:
        pg.p("No verdict: no complete block of runs to rank yet.")
        for n in notes:
            pg.p(n, raw=True)
        return
    objectives = list(v.directions)
    items = []
    for s in v.scopes:
        o = s.get(TRADEOFF)
        if o is None:
            continue
        what = "Across all datasets" if s.scope == OVERALL else f"On {s.scope}"
        cost = _costs(o, s, objectives)
        vs = f"; against the baseline {html.escape(str(s.baseline))}: {html.escape(cost)}" \
            if o.best != s.baseline else " (the baseline)"
        items.append(f"<li>{what}: run <b class=\"best\">{html.escape(o.best)}</b> — P(best) "
                     f"{format_number(100 * o.p_best, 2)} % over {s.blocks:,} blocks, "
                     f"{html.escape(_sure(o, s.blocks))}{vs}.</li>")
    pg.raw(f"<p>Recommended for the study's stated trade-off ({html.escape(_tradeoff_text(v))} of the rank "
           f"weights):</p><ul class=\"verdict\">{''.join(items)}</ul>")
    for n in notes:
        pg.p(f"&#9888; {n}", raw=True)
    rows = []
    for s in v.scopes:
        for o in s.objectives:
            rows.append({"scope": s.scope, "objective": _obj_label(o.objective, v.directions), "recommended": o.best,
                         "P(best) [%]": format_number(100 * o.p_best, 2),
                         "how sure": _sure(o, s.blocks),
                         f"against the baseline": _costs(o, s, objectives) if s.baseline else "—"})
    pg.table(pd.DataFrame(rows), cls="t verdict-table")
    energy = metric(ENERGY_PER_WORK)
    pg.p(f"Baseline: {', '.join(sorted({str(s.baseline) for s in v.scopes}))} ([report] baseline). Energy is "
         f"compared per unit of work: {energy.label} [{energy.display_unit}] = facility energy / node-hours "
         "delivered in the window.")
    pg.p(HOW_TO_READ, raw=True)
