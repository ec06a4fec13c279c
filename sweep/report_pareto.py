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

import numpy as np
import pandas as pd

from twinsweep.core.metrics import column_decimals, format_number, metric

from .plotting import pyplot
from .ranking import pareto_front

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
        pts = {v: (float(agg.at[v, (x, "mean")]), float(agg.at[v, (y, "mean")])) for v in vs}
        ok = [v for v in vs if np.isfinite(pts[v]).all()]
        front = {ok[i] for i in pareto_front([pts[v] for v in ok], dirs)}
        for v in vs:
            if v in ok:
                dom = [u for u in ok if u != v and pareto_front([pts[v], pts[u]], dirs) == [1]]
            rows.append({"dataset": ds, "variant": v, "blocks": int(min(agg.at[v, (x, "count")], agg.at[v, (y, "count")])),
                         "x_metric": x, "x_mean": pts[v][0], "x_std": float(agg.at[v, (x, "std")]),
                         "y_metric": y, "y_mean": pts[v][1], "y_std": float(agg.at[v, (y, "std")]),
                         "front": v in front, "dominated_by": ", ".join(dom) if v in ok else "—"})
    return pd.DataFrame(rows)


#: A Pareto axis is logarithmic when its values span more than this factor (all > 0): a few extreme
#: variants would otherwise squeeze the others into a corner, and a log axis shows relative differences.
LOG_SPAN = 10.0


def _axis(ax, which: str, values: np.ndarray, m: str) -> None:
    """Scale and limits of one axis (display units) of metric ``m``: logarithmic when the values span
    more than :data:`LOG_SPAN`; else linear from the catalogue's floor (0 for most metrics, 1 for PUE)
    when it has one, so that a small difference is not blown up, or around the data, at least the
    catalogue's ``min_span`` wide. No offset notation."""
    spec = metric(m)
    v = values[np.isfinite(values)]
    if not len(v):
        return
    lo, hi = float(v.min()), float(v.max())
    setlim = ax.set_xlim if which == "x" else ax.set_ylim
    if lo > 0 and hi / lo > LOG_SPAN:
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        setlim(lo / 1.3, hi * 1.3)
        axis = ax.xaxis if which == "x" else ax.yaxis
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda val, _: format_number(val, 1)))  # ticks are 1, 2, 5 x 10^k
        axis.set_minor_formatter(NullFormatter())
        return
    if spec.floor is not None:
        lo = min(lo, spec.floor)
        setlim(lo, hi + 0.06 * (hi - lo or 1.0))
    else:
        span = max(hi - lo, spec.min_span, 1e-12)
        mid = (lo + hi) / 2
        setlim(mid - 0.55 * span, mid + 0.55 * span)
    ax.ticklabel_format(axis=which, useOffset=False, style="plain")


def _label(m: str, d: str, assumed: bool) -> str:
    better = "lower" if d == "min" else "higher"
    return f"{metric(m).header(assumed)} — {better} is better"


def _default_styles(variants: list[str]) -> dict[str, tuple[str, str]]:
    """Colour and line style per variant when the report passes none: matplotlib's ``tab20`` colours in
    grid order, then the next line style."""
    from matplotlib.colors import to_hex

    cmap = pyplot().get_cmap("tab20")
    ls = ["-", "--", ":", "-."]
    return {v: (to_hex(cmap(i % 20)), ls[(i // 20) % len(ls)]) for i, v in enumerate(variants)}


def _figure(pg, runs: pd.DataFrame, table: pd.DataFrame, variants: list[str], x: str, y: str,
            directions: dict[str, str], styles: dict[str, tuple[str, str]], assumed: bool) -> None:
    plt = pyplot()
    dss = list(dict.fromkeys(table["dataset"]))
    sx, sy = metric(x).scale, metric(y).scale
    n = len(dss)
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.3 * cols + 2.6, 3.9 * rows), squeeze=False)
    for ax, ds in zip(axes.ravel(), dss):
        g = runs[runs["dataset"] == ds]
        t = table[table["dataset"] == ds].set_index("variant")
        for v in t.index:
            colour, ls = styles.get(v, ("C0", "-"))
            pts = g[g["variant"] == v]
            ax.plot(pts[x] / sx, pts[y] / sy, ".", color=colour, alpha=0.5, ms=5, zorder=1)
            r = t.loc[v]
            eb = ax.errorbar(r["x_mean"] / sx, r["y_mean"] / sy,
                             xerr=0 if np.isnan(r["x_std"]) else r["x_std"] / sx,
                             yerr=0 if np.isnan(r["y_std"]) else r["y_std"] / sy, fmt="o", ms=7, color=colour,
                             mfc=colour if r["front"] else "white", mec=colour, mew=1.5, elinewidth=1,
                             capsize=2, zorder=3)
            for line in eb[2]:
                line.set_linestyle(ls)
        f = t[t["front"]].sort_values("x_mean")
        ax.plot(f["x_mean"] / sx, f["y_mean"] / sy, "-", color="0.5", lw=0.8, zorder=2)
        _axis(ax, "x", np.concatenate([g[x].to_numpy(float), t["x_mean"].to_numpy(float)]) / sx, x)
        _axis(ax, "y", np.concatenate([g[y].to_numpy(float), t["y_mean"].to_numpy(float)]) / sy, y)
        ax.set_title(str(ds), fontsize=10)
        ax.set_xlabel(_label(x, _direction(x, directions), assumed), fontsize=8)
        ax.set_ylabel(_label(y, _direction(y, directions), assumed), fontsize=8)
        ax.grid(alpha=0.3, which="both")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    from matplotlib.lines import Line2D

    shown = [v for v in variants if v in set(table["variant"])]
    handles = [Line2D([], [], color=styles.get(v, ("C0", "-"))[0], ls=styles.get(v, ("C0", "-"))[1], marker="o",
                      lw=1) for v in shown]
    fig.legend(handles, shown, loc="upper left", bbox_to_anchor=(1.0, 0.98), fontsize=8, frameon=False,
               title="filled: on the front (grey line)\nhollow: dominated (by mean)\nbars: ±1 sd over blocks",
               title_fontsize=8)
    fig.tight_layout()
    pg.figure(fig, "pareto.png", f"{metric(x).label} against {metric(y).label} per dataset: mean over blocks ± 1 "
              f"standard deviation, dots = single blocks; an axis whose values span more than a factor {LOG_SPAN:g} "
              "is logarithmic", bbox="tight")


def _fmt(mean: float, std: float, m: str) -> str:
    spec = metric(m)
    if not np.isfinite(mean):
        return "—"
    d = column_decimals([mean / spec.scale], spec.digits)
    text = format_number(mean / spec.scale, decimals=d)
    return text if not np.isfinite(std) else f"{text} ± {format_number(std / spec.scale, decimals=d)}"


def _few(names: str, k: int = 3) -> str:
    """At most ``k`` of a ``", "``-joined list, then how many more."""
    parts = [n for n in names.split(", ") if n] if names and names != "—" else []
    if not parts:
        return "—"
    more = f" and {len(parts) - k} more" if len(parts) > k else ""
    return ", ".join(parts[:k]) + more


def section_pareto(pg, runs: pd.DataFrame, variants: list[str], study: dict, directions: dict[str, str],
                   styles: dict[str, tuple[str, str]] | None = None, assumed: bool = True,
                   past_end: pd.DataFrame | None = None) -> None:
    """Write the trade-off section: the figure ``pareto.png``, a table per dataset and ``pareto.csv``.

    ``pg``: the report's page; ``runs``: ranked runs (the reference replay set apart); ``variants``:
    grid order; ``study``: study.json; ``directions``: metric -> min/max; ``styles``: variant ->
    (colour, line style) shared by every plot of the page (default: the colour cycle in grid order);
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
    _figure(pg, runs, table, variants, x, y, directions, styles or _default_styles(variants), assumed)
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
