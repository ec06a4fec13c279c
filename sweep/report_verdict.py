"""The report's first section, ``verdict``: what to run, how sure we are, what it costs, and how to
read the rest of the page (rendering of :class:`twinsweep.sweep.verdict.Verdict`).

:func:`section_verdict` is one section function of the report (:mod:`twinsweep.sweep.report`).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from twinsweep.core.metrics import ENERGY_PER_WORK, format_number, metric

from .ranking import BLOCK_COLS, SIGN_LEVEL, sign_test
from .verdict import (DEFAULT_BASELINE, MIN_BLOCKS, OVERALL, TRADEOFF, ObjectiveVerdict, ScopeVerdict, Verdict,
                      baseline_rule, compute_verdict, cost_text)

#: HTML id of the section.
SECTION_ID = "verdict"

HOW_TO_READ = (
    "How to read this page: every (dataset, window, seed) is a <i>block</i> in which all variants ran on the "
    "same workload; within a block the variants are ranked per objective (1 = best). The recommended variant "
    "has the lowest mean rank over the blocks. <i>P(best)</i> is the share of bootstrap resamples of the blocks in "
    "which it stays first: near 100 % the choice is robust to which of the study's seeds and windows were drawn "
    "(with one window per dataset, to the seeds only: the verdict says so), near 1/number of variants it is a "
    "coin toss. <i>Distinguishable</i> means the 95 % bootstrap interval of the "
    "runner-up's mean-rank gap excludes zero and the recommended variant is ahead of the runner-up in "
    "significantly more blocks than behind it (two-sided exact sign test at 5 %, tied blocks split evenly between "
    "the two, an odd one dropped), over at least {min_blocks} blocks (fewer cannot show a difference at the 5 % "
    "level). Costs compare the recommended variant with the baseline on every "
    "objective (mean over blocks; % change, or a difference for percentages, PUE and temperatures); a cost "
    "followed by <i>(in k of n blocks)</i> goes in the direction of the mean change in only k of the scope's n "
    "blocks, fewer than three quarters: read it as no clear change. Ranks keep "
    "the order of the variants in each block, not the size of their differences: in a trade-off a power ramp "
    "lower by 200 W weighs as much as a wait cut by half; the costs give the sizes. Energy is "
    "ranked per node-hour delivered: a total over a fixed window would reward leaving nodes idle.")
#: The report's sections after the decision sections (report.py), in page order.
_DETAILS = (("summary", "the study"), ("ranks", "rank tables"), ("wins", "win matrices"),
            ("agreement", "agreement across seeds"), ("timelines", "timelines"),
            ("distributions", "box plots of every metric"), ("aggregate", "aggregate statistics"),
            ("pooled", "pooled distributions"))


def how_to_read(later: list[tuple[str, str]] = ()) -> str:
    """The how-to-read paragraph (HTML): :data:`HOW_TO_READ`, then the sections that follow the
    verdict, linked: ``later`` (HTML id, what it shows) — the decision sections present on the page —
    and the report's fixed detail sections."""
    links = ", ".join(f'<a href="#{i}">{html.escape(t)}</a>' for i, t in list(later) + list(_DETAILS))
    return HOW_TO_READ.format(min_blocks=MIN_BLOCKS) + f" Below, in this order: {links}; then provenance, power models and failed runs."


def objective_label(o: str, directions: dict[str, str]) -> str:
    """An objective as the page names it: ``"stated trade-off"`` or ``"mean wait (minimise)"``."""
    if o == TRADEOFF:
        return "stated trade-off"
    m = metric(o)
    return f"{m.label} ({'minimise' if directions.get(o, m.direction) == 'min' else 'maximise'})"


def _costs(o: ObjectiveVerdict, scope: ScopeVerdict, objectives: list[str]) -> str:
    if scope.baseline is None:
        return "—"
    if o.best == scope.baseline:
        return "is the baseline"
    return ", ".join(cost_text(m, o.costs.get(m)) + _mixed(o, m) for m in objectives if m in o.costs)


def _mixed(o: ObjectiveVerdict, m: str) -> str:
    """`` (in 4 of 8 blocks)`` after a cost whose direction fewer than three quarters of the blocks
    share: a mean change that many blocks contradict (a ramp −2.9 % on average but higher in half
    the blocks) is not read as a change."""
    agree, n = o.cost_blocks.get(m, (0, 0))
    return f" (in {agree:,} of {n:,} blocks)" if n and 4 * agree < 3 * n else ""


def _sure(o: ObjectiveVerdict, blocks: int) -> str:
    if o.runner_up is None:
        return "the only variant"
    if blocks < 2:
        return "one block: no uncertainty estimate"
    if blocks < MIN_BLOCKS:
        return f"too few blocks to tell it from {o.runner_up} ({blocks}; need ≥ {MIN_BLOCKS})"
    if o.distinguishable:
        return f"distinguishable from {o.runner_up}"
    tied = blocks - (o.ahead or 0) - (o.behind or 0)
    counts = (f"ahead of it in {o.ahead:,} of {blocks:,} blocks, behind in {o.behind:,}"
              + (f", tied in {tied:,}" if tied else "")
              if o.ahead is not None and o.behind is not None else "")
    split = ", ties split" if tied and o.ahead is not None else ""
    if o.p_sign is not None and o.p_sign >= SIGN_LEVEL and o.gap_ci[0] > 0:  # the bootstrap alone would say so
        return (f"not distinguishable from {o.runner_up}: it keeps the lowest mean rank when the blocks are redrawn "
                f"(the bootstrap interval of the mean-rank gap excludes 0), but block by block it is "
                f"{counts or 'not ahead often enough'} (sign test{split}: p = {format_number(o.p_sign, 2)})")
    p = f"sign test{split}: p = {format_number(o.p_sign, 2)}" if o.p_sign is not None else ""
    said = "; ".join(x for x in (counts, p) if x)
    return (f"not distinguishable from {o.runner_up}: the bootstrap interval of the mean-rank gap includes 0"
            + (f"; {said}" if said else ""))


def _made_of(s: ScopeVerdict) -> str:
    """`` (1 window x 8 seeds)``: what a scope's blocks vary, so that a P(best) over the seeds of one
    window is not read as robust to the window (empty when the counts are not known)."""
    if not s.windows or not s.seeds:
        return ""
    w = f"{s.windows:,} window{'s' if s.windows > 1 else ''}"
    one = " — one window: robust to the seeds only" if s.windows == 1 else ""
    return f" ({w} × {s.seeds:,} seed{'s' if s.seeds > 1 else ''}{one})"


def _tradeoff_text(v: Verdict) -> str:
    total = sum(v.tradeoff.values())
    return ", ".join(f"{metric(m).label} {format_number(100 * w / total, 2)} %" for m, w in v.tradeoff.items())


def _past_end(s: ScopeVerdict) -> str:
    return f"⚠ {s.past_end:,} of {s.blocks:,} blocks past the trace's end" if s.past_end else ""


def past_end_note(v: Verdict) -> str | None:
    """The caveat (HTML) for windows that extend past their trace's last submission, or None."""
    wins = list(dict.fromkeys(w for s in v.scopes for w in s.past_end_windows))
    if not wins:
        return None
    n = max((s.past_end for s in v.scopes if s.scope == OVERALL), default=sum(s.past_end for s in v.scopes))
    return (f"<b>Window(s) {html.escape(', '.join(wins))} extend past the last submission of their trace</b> "
            f"({n:,} block(s)): no job arrives in the end of such a window, so its waits, utilisation and energy "
            "are not those of a loaded machine. These blocks are ranked and marked &#9888; below.")


def alike_note(v: Verdict) -> str | None:
    """The caveat (HTML) for trade-off metrics that rank the variants exactly alike in every block
    of a scope (:attr:`ScopeVerdict.alike_in_tradeoff`): the stated trade-off then weighs that one
    preference with both weights. None when no pair does."""
    total = sum(v.tradeoff.values())
    where: dict[tuple[str, str], list[str]] = {}
    for s in v.scopes:
        for pair in s.alike_in_tradeoff:
            where.setdefault(pair, []).append(s.scope)
    if not where:
        return None
    parts = []
    for (a, b), scopes in where.items():
        scope = ("every scope" if len(scopes) == len(v.scopes) else ", ".join(scopes))
        w = format_number(100 * (v.tradeoff.get(a, 0) + v.tradeoff.get(b, 0)) / total, 2)
        parts.append(f"{html.escape(metric(a).label)} and {html.escape(metric(b).label)} rank the variants exactly "
                     f"alike in every block ({html.escape(scope)}): the stated trade-off weighs that one preference "
                     f"with both weights ({w} % together)")
    return "; ".join(parts) + ". Give one of them less weight in [report] tradeoff if that is not meant."


#: Count columns of runs.parquet that measure what a run left queued at its window end: jobs, and
#: the node-seconds they requested (nodes x time limit; core/stats.py), with how each is shown.
LEFT_QUEUED = (("count_still_queued", "jobs", 1.0), ("count_still_queued_node_s", "requested node-hours", 3600.0))
#: Smallest mean extra of :data:`LEFT_QUEUED` (relative to the other variant's mean) that the
#: survivorship caveat reports: 68 jobs left against 67 is not a lead bought with the queue.
SURVIVORSHIP_MIN_SHARE = 0.10


def _left_more(pair: pd.DataFrame, a: str, b: str, min_share: float = SURVIVORSHIP_MIN_SHARE
               ) -> tuple[int, int, float, float, float, float | None] | None:
    """(blocks where ``a`` is larger, blocks compared, mean extra per block, b's mean, extra / b's mean,
    the sign test's p or None below :data:`MIN_BLOCKS`) when ``a`` is larger than ``b`` by the
    survivorship rule (:func:`survivorship_note`; ``min_share``: the smallest mean extra relative
    to b's mean), else None."""
    n = len(pair)
    more, fewer = int((pair[a] > pair[b]).sum()), int((pair[a] < pair[b]).sum())
    if n == 0 or more <= fewer:
        return None
    p = sign_test(more, fewer, n - more - fewer) if n >= MIN_BLOCKS else None
    if (p is None and more < n) or (p is not None and p >= SIGN_LEVEL):
        return None
    extra, base = float((pair[a] - pair[b]).mean()), float(pair[b].mean())
    share = extra / base if base > 0 else float("inf")
    return (more, n, extra, base, share, p) if share >= min_share else None


def _block_table(runs: pd.DataFrame, scope: str, col: str) -> pd.DataFrame:
    """Blocks x variants values of ``col`` in ``scope`` (a dataset, or :data:`OVERALL`: every run):
    the table the survivorship and starvation caveats compare two variants in, block by block."""
    g = runs if scope == OVERALL else runs[runs["dataset"].astype(str) == scope]
    return g.pivot_table(index=list(BLOCK_COLS), columns="variant", values=col, aggfunc="first", observed=True)


#: The longest wait a recommended variant gives a job, against the baseline's, that the
#: starvation caveat reports (:func:`starvation_note`): at least half as long again.
STARVATION_MIN_SHARE = 0.5
#: The longest wait the starvation caveat compares: of every job that queued, a job still queued at
#: the window end counting its wait so far (a job starved past the window end counts: the longest
#: wait of a finished job left it out and read shorter under SJF on ALCF Theta, helper-56); results
#: of a version without it are compared on :data:`STARVATION_FALLBACK`, the finished jobs'.
STARVATION_METRIC = "wait_censored_max_s"
STARVATION_FALLBACK = "wait_max_s"


def starvation_note(runs: pd.DataFrame, v: Verdict) -> str | None:
    """The caveat (HTML) for a stated trade-off's recommendation whose longest wait
    (:data:`STARVATION_METRIC`: of every job that queued, one still queued at the window end with
    its wait so far) is longer than the baseline's by the survivorship rule (a two-sided sign test
    significant at :data:`sweep.stability.SIGN_LEVEL` over the scope's blocks, or every block
    below :data:`sweep.verdict.MIN_BLOCKS`) and by at least :data:`STARVATION_MIN_SHARE` of it on
    average: a gain in mean wait bought by making some jobs wait far longer (SJF's and a backfill
    without reservation's starvation of large or long jobs). Results without that column are
    compared on the longest wait of a finished job (:data:`STARVATION_FALLBACK`), and the caveat
    says so. None when no recommendation is concerned or ``runs`` has neither column. ``runs``:
    the ranked runs."""
    col = next((c for c in (STARVATION_METRIC, STARVATION_FALLBACK) if c in runs.columns and runs[c].notna().any()),
               None)
    if col is None or runs.empty:
        return None
    what = "longest wait (a job still queued at the window end counted with its wait so far)" \
        if col == STARVATION_METRIC else "longest wait of a finished job"
    parts = []
    for s in v.scopes:
        o = s.get(TRADEOFF)
        if o is None or s.baseline is None or o.best == s.baseline:
            continue
        if s.scope == OVERALL and runs["dataset"].nunique() > 1:
            continue  # a maximum pooled over machines of different sizes says little: each dataset's scope says it
        q = _block_table(runs, s.scope, col)
        if o.best not in q.columns or s.baseline not in q.columns:
            continue
        hit = _left_more(q[[o.best, s.baseline]].dropna(), o.best, s.baseline, STARVATION_MIN_SHARE)
        if hit:
            more, n, extra, base, share, p = hit
            rule = f"sign test p = {format_number(p, 2)}" if p is not None else "every block"
            parts.append(f"{s.scope}: {o.best}'s {what} is {format_number((base + extra) / 3600, 3)} h "
                         f"on average against {format_number(base / 3600, 3)} h for {s.baseline} (the baseline), "
                         f"longer in {more} of {n} blocks ({rule})")
    if not parts:
        return None
    return ("<b>Longer longest waits</b> (starvation): " + html.escape("; ".join(parts), quote=False) + ". Each such "
            "recommendation's gain in mean wait comes with some jobs waiting far longer: shortest-job-first orders and backfilling "
            "without a reservation (firstfit) can push large or long jobs back again and again. Rank or weigh "
            f"{html.escape(metric(col).label)} ([rank], [report] tradeoff) if that matters here.")


def _twin(m: str, v: Verdict) -> str | None:
    """A ranked metric that is not a power figure and ranks the variants exactly as the power metric
    ``m`` in every block of every scope (:attr:`ScopeVerdict.alike_ranked`), or None."""
    for other in v.directions:
        if other == m or metric(other).power:
            continue
        if v.scopes and all((m, other) in s.alike_ranked or (other, m) in s.alike_ranked for s in v.scopes):
            return other
    return None


def assumed_power_note(runs: pd.DataFrame, variants: list[str], v: Verdict,
                       baseline: str | None) -> str | None:
    """When the stated trade-off weighs power metrics (``Metric.power``) of *assumed* power models
    and other metrics too: what the trade-off recommends in each scope without the power figures
    (the verdict computed again, same weights and baseline; the recommended variant is the lowest
    mean rank, so one bootstrap resample is enough: P(best) is not read), so that a reader sees
    whether a recommendation rests on the assumed models (a power ramp of a few hundred watts on a
    machine whose idle power is assumed 90 % of its busy power can decide it). A power metric that
    ranks the variants exactly as a ranked metric that is no power figure in every block of every
    scope (:func:`_twin`: facility energy per node-hour and utilisation, where idle power
    dominates) carries that metric's preference: its weight then goes to that metric instead of
    being dropped, and the note says so. HTML, or None when the trade-off weighs no power metric or
    nothing else. ``runs``: the ranked runs."""
    power = [m for m in v.tradeoff if metric(m).power]
    rest = {m: w for m, w in v.tradeoff.items() if m not in power}
    if not power or not rest:
        return None
    moved_to = {}
    for m in power:
        t = _twin(m, v)
        if t is not None:
            moved_to[m] = t
            rest[t] = rest.get(t, 0.0) + v.tradeoff[m]
    rank = {m: d for m, d in v.directions.items() if m in rest}
    alt = compute_verdict(runs, variants, rank, rest, baseline, n_boot=1)
    now = {s.scope: s.get(TRADEOFF) for s in v.scopes}
    then = {s.scope: s.get(TRADEOFF) for s in alt.scopes}
    moved = [(sc, now[sc].best, then[sc].best) for sc in now
             if now[sc] is not None and then.get(sc) is not None and then[sc].best != now[sc].best]
    labels = ", ".join(metric(m).label for m in power)
    weight = sum(v.tradeoff[m] for m in power) / sum(v.tradeoff.values())
    head = (f"The stated trade-off gives {format_number(100 * weight, 2)} % of its weight to figures of assumed power "
            f"models ({labels}). ")
    if moved_to:
        head += " ".join(
            f"{metric(m).label.capitalize()} ranks the variants exactly as {metric(t).label} (no power figure) in every "
            f"block: under these models its weight is {metric(t).label}'s preference." for m, t in moved_to.items()) + " "
        dropped = [metric(m).label for m in power if m not in moved_to]
        without = ("Checked with " + " and ".join(f"the weight of {metric(m).label} on {metric(t).label}"
                                                   for m, t in moved_to.items())
                   + (f" and {', '.join(dropped)} left out" if dropped else "") + ", the trade-off")
    else:
        without = "Without the power figures, the trade-off"
    if not moved:
        return head + f"{without} recommends the same variant in every scope."
    kept = [(sc, now[sc].best) for sc in now if now[sc] is not None and sc not in {m[0] for m in moved}
            and then.get(sc) is not None]
    return head + (f"<b>{without} recommends otherwise</b>: " + "; ".join(
        f"{html.escape(sc)}: {html.escape(b)} instead of {html.escape(a)}" for sc, a, b in moved)
        + ("" if not kept else "; the same in " + "; ".join(f"{html.escape(sc)} ({html.escape(a)})" for sc, a in kept))
        + ". In " + ("that scope" if len(moved) == 1 else "those scopes")
        + " the stated trade-off's recommendation rests on the assumed models: give the machine's measured power "
        "model, or a trade-off without them ([report] tradeoff), before acting on it.")


#: The wait metric that counts the jobs still queued at the window end (survivorship's check).
CENSORED_WAIT = "wait_censored_mean_s"


def _kept(best: str, flagged: set[str]) -> str:
    """What the censored mean wait's best variant of a scope says of the variants the survivorship
    caveat named there: which keeps its lead with the queued jobs counted, which does not."""
    others = sorted(flagged - {best})
    bits = (["first with its queued jobs counted too"] if best in flagged else []) + (
        [f"{', '.join(html.escape(o) for o in others)} {'is' if len(others) == 1 else 'are'} not"] if others else [])
    return f" ({'; '.join(bits)})" if bits else ""


def survivorship_note(runs: pd.DataFrame, v: Verdict) -> str | None:
    """The caveat (HTML) for recommendations made on metrics of the finished jobs only
    (:attr:`core.metrics.Metric.finished_only`: mean wait, bounded slowdown, AWRT …, or a trade-off
    weighing one) when the recommended variant leaves more in the queue at the window end than the
    runner-up or the baseline — more jobs, or more requested node-hours (:data:`LEFT_QUEUED`: a
    policy that starves large jobs may leave fewer jobs but more work): those jobs are not in its
    means (survivorship), so its lead may be the queue it did not serve.

    Said for a measure when the recommended variant leaves more by a two-sided sign test significant
    at :data:`sweep.stability.SIGN_LEVEL` over the scope's blocks (paired by block, as the verdict
    ranks them; ties split) — or, below :data:`sweep.verdict.MIN_BLOCKS` blocks where no sign test can
    be significant, in every block — and its mean extra per block is at least
    :data:`SURVIVORSHIP_MIN_SHARE` of the other's mean; the note gives the counts, the mean extra and
    which rule applied, and — when :data:`CENSORED_WAIT` is ranked too — the best variant by it in
    each scope concerned (else how to rank by it). None when no recommendation is concerned, or ``runs`` has none of the
    columns (results written before they existed).

    ``runs``: the ranked runs the verdict was computed from (``variant`` column, block columns)."""
    measures = [m for m in LEFT_QUEUED if m[0] in runs.columns]
    if not measures or runs.empty:
        return None
    parts = []
    censored = []  # (scope, best on the censored mean wait) where that metric is ranked
    flagged: dict[str, set[str]] = {}  # scope -> the recommended variants the note names
    for s in v.scopes:
        pairs: dict[tuple[str, str], tuple[list[str], list[str]]] = {}  # (best, other) -> (objectives, roles)
        for o in s.objectives:
            names = list(v.tradeoff) if o.objective == TRADEOFF else [o.objective]
            if not any(metric(m).finished_only for m in names):
                continue
            on = "the stated trade-off" if o.objective == TRADEOFF else metric(o.objective).label
            for what, b in (("runner-up", o.runner_up), ("baseline", s.baseline)):
                if b is None or b == o.best:
                    continue
                objectives, roles = pairs.setdefault((o.best, b), ([], []))
                if on not in objectives:
                    objectives.append(on)
                if what not in roles:
                    roles.append(what)
        if not pairs:
            continue
        tables = {col: _block_table(runs, s.scope, col) for col, _, _ in measures}
        for (a, b), (objectives, roles) in pairs.items():
            found = []
            for col, unit, scale in measures:
                q = tables[col]
                if a not in q.columns or b not in q.columns:
                    continue
                hit = _left_more(q[[a, b]].dropna(), a, b)
                if hit:
                    more, n, extra, base, share, p = hit
                    rule = (f"sign test p = {format_number(p, 2)}" if p is not None
                            else "every block; too few for a sign test")
                    rel = f", +{format_number(100 * share, 2)} %" if np.isfinite(share) else ""
                    found.append(f"more {unit} in {more} of {n} blocks ({rule}), {format_number(extra / scale, 2)} "
                                 f"more per block on average ({format_number((base + extra) / scale, 3)} against "
                                 f"{format_number(base / scale, 3)}{rel}; runs.parquet {col}"
                                 + (", stored there in node-seconds" if scale == 3600.0 else "") + ")")
            if found:
                parts.append(f"{s.scope}: {a} (recommended on {' and '.join(objectives)}) leaves more queued at the "
                             f"window end than {b} (the {', the '.join(roles)}): " + "; and ".join(found))
                flagged.setdefault(s.scope, set()).add(a)
                oc = s.get(CENSORED_WAIT)
                if oc is not None and (s.scope, oc.best) not in censored:
                    censored.append((s.scope, oc.best))
    if not parts:
        return None
    label = html.escape(metric(CENSORED_WAIT).label)
    label = label[:1].upper() + label[1:]  # it starts a sentence
    if censored:
        said = "; ".join(f"{sc}: {html.escape(best)}" + _kept(best, flagged.get(sc, set())) for sc, best in censored)
        check = (f"{label} counts the queued jobs too, each with its wait up to the window end. Ranked by it on this "
                 f"page (the verdict table), the best is {said}. Utilisation gives the work each variant got done.")
    else:
        check = (f"{label} counts the queued jobs too (rank by it, or weigh it in [report] tradeoff, to see whether "
                 "the lead holds); utilisation gives the work each variant got done.")
    return ("<b>Recommendations on metrics of the finished jobs only</b> (survivorship): "
            f"{html.escape('. '.join(parts))}. The jobs a variant leaves queued are not in that variant's means, so "
            f"part of a recommended variant's lead may be the queue it left. {check}")


def section_verdict(pg, v: Verdict, notes: list[str], later: list[tuple[str, str]] = (),
                    reference: list[str] = (), baseline: str | None = None) -> None:
    """Write the verdict section: a headline per scope for the stated trade-off, a table of every
    objective's recommendation per scope, the caveats in ``notes`` (HTML, e.g. failed or missing runs)
    and those the verdict knows (windows past their trace's end, :func:`past_end_note`), and how to
    read the page (:func:`how_to_read` with ``later``: (HTML id, title) of the decision sections that
    follow). ``reference``: the variants of the recorded schedule (``replay``), which are not ranked;
    ``baseline``: the study's ``[report] baseline`` (None: not given), to say which rule chose it.
    ``pg``: the report's page (``h``, ``p``, ``raw``, ``table``)."""
    pg.h(2, "Verdict", SECTION_ID)
    notes = list(notes)
    past = past_end_note(v)
    if past:
        notes.append(past)
    if reference:
        fid = next((i for i, _ in later if i == "fidelity"), None)
        see = f' (<a href="#{fid}">fidelity</a>)' if fid else ""
        notes.append(f"The recorded schedule ({html.escape(', '.join(reference))}) is the reference{see}, "
                     "not a ranked variant: it is left out of the verdict, rank tables, win matrices and trade-offs.")
    else:
        notes.append("How close the twin is to what these machines really did is not measured in this study: add "
                     "<code>replay</code> to the grid's policies for a fidelity section (every variant against the "
                     "recorded schedule), or run <code>twinsweep validate</code> on a trace (the README's \"How close "
                     "is the twin to the real machine?\" gives its figures on nine archive logs: mean waits within "
                     "a few percent on some, far off on others, with the reasons).")
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
        each = " (each change the mean of the datasets' changes)" if s.scope == OVERALL else ""
        vs = f"; against the baseline {html.escape(str(s.baseline))}{each}: {html.escape(cost)}" \
            if o.best != s.baseline else " (the baseline)"
        past_s = f" ({html.escape(_past_end(s))})" if s.past_end else ""
        if s.blocks < MIN_BLOCKS:  # a P(best) from so few blocks would read as a certainty it is not
            sure = (f"first on average over {s.blocks:,} block(s){past_s}, too few to tell it from any other variant "
                    f"(P(best) and the sign test need ≥ {MIN_BLOCKS}: add seeds or windows)")
        else:
            sure = (f"P(best) {format_number(100 * o.p_best, 2)} % over {s.blocks:,} blocks{_made_of(s)}{past_s}, "
                    f"{html.escape(_sure(o, s.blocks))}")
        items.append(f"<li>{what}: run <b class=\"best\">{html.escape(o.best)}</b> — {sure}{vs}.</li>")
    left = [metric(m).label for m in v.directions if m not in v.tradeoff]
    left_text = (f"; {', '.join(left)} {'is' if len(left) == 1 else 'are'} ranked in the tables below but not weighed"
                 if left else "")
    pg.raw(f"<p>Recommended for the study's stated trade-off ({html.escape(_tradeoff_text(v))} of the rank "
           f"weights{html.escape(left_text)}):</p><ul class=\"verdict\">{''.join(items)}</ul>")
    alike = alike_note(v)
    for n in notes + ([alike] if alike else []):  # the caller's list is left as it was
        pg.p(f"&#9888; {n}", raw=True)
    rows = []
    for s in v.scopes:
        for o in s.objectives:
            sure = _sure(o, s.blocks) + (f"; {_past_end(s)}" if s.past_end else "")
            rows.append({"scope": s.scope, "objective": objective_label(o.objective, v.directions),
                         "recommended": o.best,
                         "P(best) [%]": format_number(100 * o.p_best, 2) if s.blocks >= MIN_BLOCKS else "—",
                         "how sure": sure,
                         "against the baseline": _costs(o, s, objectives) if s.baseline else "—"})
    pg.table(pd.DataFrame(rows), cls="t verdict-table")
    energy = metric(ENERGY_PER_WORK)
    bases = sorted({str(s.baseline) for s in v.scopes})
    said = {"study": "the study's [report] baseline",
            "default": "the default baseline" + (f"; the study's [report] baseline {baseline!r} is not a variant"
                                                 if baseline else "; [report] baseline in the study sets another"),
            "first": "the first variant: " + (f"neither the study's [report] baseline {baseline!r} nor "
                                              f"{DEFAULT_BASELINE} is a variant" if baseline else
                                              f"no [report] baseline is given and {DEFAULT_BASELINE} is not a variant")}
    rules = dict.fromkeys(said[baseline_rule(list(s.variants), baseline)] for s in v.scopes)
    text = f"Baseline: {', '.join(bases)} ({'; '.join(rules)})."
    if any(metric(m).power for m in v.directions):
        text += (f" Energy is compared per unit of work: {energy.label} [{energy.display_unit}] = facility energy / "
                 "node-hours delivered in the window.")
    pg.p(text)
    pg.p(how_to_read(later), raw=True)
