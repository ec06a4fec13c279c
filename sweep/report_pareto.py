"""The report's trade-off section (``tradeoffs``, issue 13 item 2): the variants on two objectives,
per dataset, each variant's spread across blocks shown, and the variants dominated by mean marked.

The two objectives are the study's ``[report] pareto`` (``[x, y]``), else the first two metrics of
its stated trade-off (``[report] tradeoff``, in the order given), else its first two rank metrics
(:func:`pareto_metrics`). Per dataset a variant's point is its mean over the dataset's blocks
(windows × seeds) with ±1 sample standard deviation as error bars; the blocks are drawn as small
dots. A variant is **dominated** when another one's means are at least as good on both objectives
and better on one (:func:`sweep.ranking.pareto_front`, the tuner's Pareto front too): by mean,
so a variant dominated by a small margin may still win some blocks.

:func:`pareto_table` computes the table (written as ``pareto.csv``); :func:`section_pareto` is the
report's section function.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from twinsweep.core.metrics import column_decimals, format_number, format_spread, metric

from .plotting import VariantStyle, axis_range, variant_styles
from .ranking import pareto_front
from .svgchart import ScatterPanel, ScatterPoint, scatter_panels

__all__ = ["pareto_metrics", "pareto_table", "section_pareto", "SECTION_ID", "TITLE"]

SECTION_ID = "tradeoffs"
TITLE = "Trade-offs"


def pareto_metrics(study: dict, available: list[str] | None = None) -> list[str]:
    """The two objectives of the Pareto view from a ``study.json`` document (see the module
    docstring), keeping only metrics in ``available`` (None: all). Fewer than two when the study
    names fewer (then there is no Pareto view)."""
    rep = study.get("report") or {}
    ok = (lambda m: True) if available is None else (lambda m: m in available)
    given = [m for m in rep.get("pareto") or () if ok(m)]
    if len(given) == 2:
        return given
    for names in ([m for m, _ in rep.get("tradeoff") or ()], [r["metric"] for r in study.get("rank", [])]):
        names = [m for m in dict.fromkeys(names) if ok(m)]
        if len(names) >= 2:
            return names[:2]
    return []


def _direction(m: str, directions: dict[str, str]) -> str:
    return directions.get(m) or metric(m).direction


def pareto_table(runs: pd.DataFrame, variants: list[str], x: str, y: str, directions: dict[str, str]) -> pd.DataFrame:
    """Per dataset and variant: ``blocks``, ``x_mean``, ``x_std``, ``y_mean``, ``y_std`` (stored
    units; sample std, ddof = 1, NaN with one block), ``front`` (not dominated by mean), ``dominated_by``
    (the variants whose means dominate it, ``", "``-joined, grid order). A variant with an undefined
    mean is neither on the front nor dominated (``front`` False, ``dominated_by`` ``"—"``).

    ``runs``: ranked runs (the reference ``replay`` set apart), one row per run with ``dataset``,
    ``variant``, ``x`` and ``y``; ``directions``: metric -> min/max (default: the catalogue's)."""
    dirs = ["minimize" if _direction(m, directions) == "min" else "maximize" for m in (x, y)]
    rows = []
    for ds, g in runs.groupby("dataset", sort=False):
        vs = [v for v in variants if v in set(g["variant"])]
        agg = g.groupby("variant", sort=False)[[x, y]].agg(["mean", "std", "count"])
        a = {k: agg[k].to_dict() for k in agg.columns}  # (metric, stat) -> variant -> value; no .at per cell
        pts = {v: (float(a[(x, "mean")][v]), float(a[(y, "mean")][v])) for v in vs}
        ok = [v for v in vs if np.isfinite(pts[v]).all()]
        front = {ok[i] for i in pareto_front([pts[v] for v in ok], dirs)}
        for v in vs:
            if v in ok:
                dom = [u for u in ok if u != v and pareto_front([pts[v], pts[u]], dirs) == [1]]
            rows.append({"dataset": ds, "variant": v, "blocks": int(min(a[(x, "count")][v], a[(y, "count")][v])),
                         "x_metric": x, "x_mean": pts[v][0], "x_std": float(a[(x, "std")][v]),
                         "y_metric": y, "y_mean": pts[v][1], "y_std": float(a[(y, "std")][v]),
                         "front": v in front, "dominated_by": ", ".join(dom) if v in ok else "—"})
    return pd.DataFrame(rows)


#: A Pareto axis is logarithmic when its values span more than this factor (all > 0): a few extreme
#: variants would otherwise squeeze the others into a corner, and a log axis shows relative differences.
LOG_SPAN = 10.0


def _axis(values: np.ndarray, m: str) -> tuple[tuple[float, float], bool]:
    """Range (display units) and logarithmic flag of one axis of metric ``m``: logarithmic, from
    ``lo / 1.3`` to ``hi * 1.3``, when the values are all > 0 and span more than :data:`LOG_SPAN`;
    else linear per the catalogue (:func:`~twinsweep.sweep.plotting.axis_range`: from the floor, 0
    for most metrics and 1 for PUE, when it has one, so that a small difference is not blown up; or
    around the data, at least ``min_span`` wide) with 6 % of the span as margin."""
    v = values[np.isfinite(values)]
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (math.nan, math.nan)
    if len(v) and lo > 0 and hi / lo > LOG_SPAN:
        return (lo / 1.3, hi * 1.3), True
    return axis_range(metric(m), lo, hi, pad=0.06), False


def _label(m: str, d: str, assumed: bool) -> str:
    better = "lower" if d == "min" else "higher"
    return f"{metric(m).header(assumed)} — {better} is better"


def _figure(pg, runs: pd.DataFrame, table: pd.DataFrame, variants: list[str], x: str, y: str,
            directions: dict[str, str], styles: dict[str, VariantStyle], assumed: bool) -> None:
    sx, sy = metric(x).scale, metric(y).scale
    xl, yl = _label(x, _direction(x, directions), assumed), _label(y, _direction(y, directions), assumed)
    panels = []
    by_ds = dict(tuple(runs[["dataset", "variant", x, y]].groupby("dataset", sort=False)))  # the 4 columns only
    for ds, t in table.groupby("dataset", sort=False):
        g, t = by_ds[ds], t.set_index("variant")
        blocks = {v: (b[x].to_numpy(float) / sx, b[y].to_numpy(float) / sy)
                  for v, b in g.groupby("variant", sort=False)}
        pts = [ScatterPoint(v, r.x_mean / sx, r.y_mean / sy, r.x_std / sx, r.y_std / sy, bool(r.front), *blocks[v])
               for v, r in zip(t.index, t.itertuples(index=False))]
        f = t[t["front"]].sort_values("x_mean")
        xlim, xlog = _axis(np.concatenate([g[x].to_numpy(float), t["x_mean"].to_numpy(float)]) / sx, x)
        ylim, ylog = _axis(np.concatenate([g[y].to_numpy(float), t["y_mean"].to_numpy(float)]) / sy, y)
        panels.append(ScatterPanel(pts, xlim, ylim, xl, yl, str(ds), xlog, ylog,
                                   list(zip(f["x_mean"] / sx, f["y_mean"] / sy))))
    shown = [v for v in variants if v in set(table["variant"])]
    cap = (f"{metric(x).label} against {metric(y).label} per dataset: mean over blocks ± 1 standard deviation, "
           f"dots = single blocks; an axis whose values span more than a factor {LOG_SPAN:g} is logarithmic")
    pg.svg(scatter_panels(panels, shown, styles, f"{metric(x).label} against {metric(y).label} per dataset",
                          ["filled: on the front (grey line)", "hollow: dominated (by mean)",
                           "bars: ±1 sd over blocks"]), "pareto.svg", cap)


def _fmt(mean: float, std: float, m: str) -> str:
    spec = metric(m)
    if not np.isfinite(mean):
        return "—"
    d = column_decimals([mean / spec.scale], spec.digits)
    text = format_number(mean / spec.scale, decimals=d)
    return text if not np.isfinite(std) else f"{text} ± {format_spread(std / spec.scale, d)}"


def _few(names: str, k: int = 3) -> str:
    """At most ``k`` of a ``", "``-joined list, then how many more."""
    parts = [n for n in names.split(", ") if n] if names and names != "—" else []
    if not parts:
        return "—"
    more = f" and {len(parts) - k} more" if len(parts) > k else ""
    return ", ".join(parts[:k]) + more


def section_pareto(pg, runs: pd.DataFrame, variants: list[str], study: dict, directions: dict[str, str],
                   styles: dict[str, VariantStyle] | None = None, assumed: bool = True,
                   past_end: pd.DataFrame | None = None) -> None:
    """Write the trade-off section: the chart ``pareto.svg`` (:func:`~twinsweep.sweep.svgchart.scatter_panels`;
    filled marker: on the front, hollow: dominated), a table per dataset and ``pareto.csv``.

    ``pg``: the report's page; ``runs``: ranked runs (the reference replay set apart); ``variants``:
    grid order; ``study``: study.json; ``directions``: metric -> min/max; ``styles``: variant ->
    :class:`~twinsweep.sweep.plotting.VariantStyle` shared by every chart of the page (default: the
    page's map ``pg.styles``, else :func:`~twinsweep.sweep.plotting.variant_styles` of ``variants``);
    ``assumed``: power model assumed (labels power metrics so); ``past_end``: blocks whose window
    extends past its trace's last submission (:func:`sweep.ranking.past_end_blocks`), named on the page."""
    pg.h(2, TITLE, SECTION_ID)
    ms = pareto_metrics(study, [c for c in runs.columns if runs[c].notna().any()])
    if len(ms) < 2:
        pg.p("No trade-off view: the study names fewer than two objectives with values "
             "([report] pareto = [x, y], or two trade-off or rank metrics).")
        return
    x, y = ms
    table = pareto_table(runs, variants, x, y, directions)
    if table.empty:
        pg.p("No trade-off view: no ranked runs.")
        return
    pg.p(f"Each variant on {html.escape(metric(x).label)} ({_direction(x, directions)}imise) against "
         f"{html.escape(metric(y).label)} ({_direction(y, directions)}imise), per dataset: the mean over the "
         "dataset's blocks (windows × seeds) with ±1 standard deviation, and every block as a dot. A variant is "
         "<b>dominated</b> when another is at least as good on both means and better on one; dominance is "
         "judged <b>by mean</b>, so a dominated variant can still win single blocks (see ranking stability). "
         "The objectives are [report] pareto, else the first two of the stated trade-off, else the first two "
         "rank metrics. Every value is in pareto.csv.", raw=True)
    styles = styles or getattr(pg, "styles", None) or variant_styles(variants)
    _figure(pg, runs, table, variants, x, y, directions, styles, assumed)
    hx, hy = metric(x).header(assumed), metric(y).header(assumed)
    for ds, t in table.groupby("dataset", sort=False):
        t = t.assign(_f=~t["front"]).sort_values(["_f", "x_mean"], kind="mergesort")
        shown = pd.DataFrame({"variant": t["variant"],
                              f"{hx}: mean ± sd": [_fmt(a, b, x) for a, b in zip(t["x_mean"], t["x_std"])],
                              f"{hy}: mean ± sd": [_fmt(a, b, y) for a, b in zip(t["y_mean"], t["y_std"])],
                              "blocks": t["blocks"].astype("int64"),
                              "on the front": ["yes" if f else "no" for f in t["front"]],
                              "dominated (by mean) by": [_few(d) for d in t["dominated_by"]]})
        pg.h(3, f"{ds}")
        if past_end is not None and not past_end.empty:
            wins = sorted({str(w) for d, w in zip(past_end["dataset"], past_end["window"]) if str(d) == str(ds)})
            if wins:
                pg.p(f"&#9888; window(s) {html.escape(', '.join(wins))} extend past the trace's last submission: "
                     "the end of the window has no arrivals.", raw=True)
        pg.table(shown, cls="t verdict-table")
    pg.csv(table, "pareto.csv")
