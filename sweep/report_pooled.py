"""The report's "pooled distributions" section: every job and timeline sample of every run, per
variant, pooled over seeds (from ``distributions.parquet`` and ``distribution_quantiles.parquet``,
written by :mod:`twinsweep.sweep.distributions`).

:func:`section_pooled` is one section function of the report (:mod:`twinsweep.sweep.report`):
it takes the page object, the results folder and the run table with its ``variant`` labels.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from twinsweep.core.metrics import format_number, pooled_metrics

from .distributions import JOB_METRICS
from .svgchart import LinePanel, Series, line_panels

#: HTML id of the section.
SECTION_ID = "pooled"
#: Display of the pooled metrics: name -> (label, divisor, unit, is_power_or_energy).
POOLED_DISPLAY: dict[str, tuple[str, float, str, bool]] = {
    m.name: (m.label, m.scale, m.display_unit, m.power) for m in pooled_metrics().values()}


#: The smallest linear threshold of a panel's symmetric-log axis, as a fraction of its largest
#: value: 10^4, i.e. about four decades shown.
SYMLOG_DECADES = 1e4


def display_units(summ: pd.DataFrame, metrics: list[str]) -> dict[str, tuple[str, float, str, bool]]:
    """The display of each pooled metric over the summary rows ``summ``: :data:`POOLED_DISPLAY`,
    except that a metric stored in watts takes the SI prefix that puts the largest pooled value of
    those rows (``summ``'s ``max`` column) in [1, 1000) — a 100-node machine's power swings in W, an
    exascale machine's in MW, instead of one fixed kW for both. The section's table passes every
    row (one unit per column); each figure passes its dataset and window's rows (the unit is in
    each panel title). Returns ``{metric: (label, divisor, unit, is_power)}``."""
    catalogue = pooled_metrics()
    out = {}
    for m in metrics:
        if m not in catalogue:
            out[m] = POOLED_DISPLAY.get(m, (m, 1.0, "", False))
            continue
        top = pd.to_numeric(summ.loc[summ["metric"] == m, "max"], errors="coerce").abs().max()
        shown = catalogue[m].scaled_to(top)  # the SI unit of the largest value (Metric.scaled_to)
        out[m] = (shown.label, shown.scale, shown.display_unit, shown.power)
    return out


def _label(metric: str, assumed: bool, display: dict | None = None) -> str:
    label, _, unit, power = (display or POOLED_DISPLAY).get(metric, (metric, 1.0, "", False))
    s = f"{label} [{unit}]" if unit else label
    return s + (" (assumed)" if power and assumed else "")


def _table_display(summ: pd.DataFrame, metrics: list[str], assumed: bool) -> tuple[dict, dict, set]:
    """The units of the section's table: ``(display, header, per_cell)``. ``display[(dataset,
    window)]`` is :func:`display_units` of that dataset and window's rows, as its figure uses, so
    that a 100-node machine's power swings read in W beside an exascale machine's in MW (one unit
    per column showed 0.58 W as 0.000582 kW). ``header[metric]`` is the column title, with the unit
    when every dataset and window shows the metric in the same unit; otherwise the metric is in
    ``per_cell`` and each cell ends with its own unit."""
    display = {key: display_units(summ.iloc[idx], metrics)
               for key, idx in summ.groupby(["dataset", "window"], sort=False).indices.items()}
    header, per_cell = {}, set()
    for m in metrics:
        shown = {d[m] for d in display.values()} or {POOLED_DISPLAY.get(m, (m, 1.0, "", False))}
        label, _, unit, power = next(iter(shown))
        if len({x[2] for x in shown}) > 1:
            per_cell.add(m)
            unit = ""
        header[m] = (f"{label} [{unit}]" if unit else label) + (" (assumed)" if power and assumed else "")
    return display, header, per_cell


def _variant_map(runs: pd.DataFrame, gcols: list[str]) -> pd.DataFrame:
    """(group columns as str) -> variant label, from the report's run table."""
    keys = pd.DataFrame({c: runs[c].astype(str) for c in gcols})
    keys["variant"] = runs["variant"].to_numpy()
    return keys.drop_duplicates(gcols)


def section_pooled(pg, root: Path, runs: pd.DataFrame, variants: list[str], assumed: bool) -> None:
    """Write the section: a table of the pooled statistics and one quantile-function figure per
    dataset and window (one panel per metric, one line per variant). ``pg``: the report's page
    (``h``, ``p``, ``table``, ``svg`` and its variant ``styles``); ``runs``: runs.parquet with a
    ``variant`` column."""
    pg.h(2, "Pooled distributions (every job and every power sample)", SECTION_ID)
    root = Path(root)
    summ_p, qt_p = root / "distributions.parquet", root / "distribution_quantiles.parquet"
    if not summ_p.exists() or not qt_p.exists():
        pg.p("Not computed for this folder (run `twinsweep report RESULTS`).")
        return
    summ = pd.read_parquet(summ_p)
    qt = pd.read_parquet(qt_p)
    gcols = [c for c in summ.columns if c not in ("metric", "runs", "runs_skipped", "missing", "n", "min", "mean",
                                                    "median", "std", "max", "q05", "q25", "q75", "q95")]
    gcols = [c for c in gcols if c in runs.columns]
    vmap = _variant_map(runs, gcols)
    summ = summ.merge(vmap, on=gcols, how="inner")
    qt = qt.merge(vmap, on=gcols, how="inner")
    pg.p("Pooled over the seeds of each variant: the wait and bounded slowdown of every finished job the variant "
         "scheduled (jobs running at the window start, whose waits are the log's, left out, as in the runs' mean "
         "wait), every finished job's energy-delay product (its own DC energy × its run time), and the absolute "
         "change between consecutive "
         "exact 1-min and 15-min averages of the facility power (the population whose maximum and 95th "
         "percentile are the runs' power ramps). Every quantile is exact (type 7, as numpy.quantile of all the "
         "pooled values), computed with Dask over the runs' files; all statistics are in distributions.csv, "
         "percentiles 0–100 in distribution_quantiles.parquet.")
    skipped = summ[summ["runs_skipped"] > 0]
    if len(skipped):
        pg.p(f"{int(skipped['runs_skipped'].sum())} run-metric pairs could not give a power swing (the sample "
             "period must divide the swing window); they are counted in distributions.csv, column runs_skipped.")
    order = {v: i for i, v in enumerate(variants)}
    metrics = [m for m in POOLED_DISPLAY if m in set(summ["metric"])]
    display, header, per_cell = _table_display(summ, metrics, assumed)
    rows = []
    groups: dict[tuple, dict[str, dict]] = {}  # (dataset, window, variant) -> metric -> its summary row
    for x in summ.to_dict("records"):
        groups.setdefault((x["dataset"], x["window"], x["variant"]), {}).setdefault(x["metric"], x)
    for (ds, win, v), by_metric in groups.items():
        r = {"dataset": ds, "window": win, "variant": v, "seeds": int(max(x["runs"] for x in by_metric.values()))}
        for m in metrics:
            x = by_metric.get(m)
            if x is None or x["n"] == 0:
                r[header[m]] = "—"
                continue
            _, s, unit, _ = display[(ds, win)][m]
            f = [format_number(x[k] / s, 3) for k in ("median", "q25", "q75", "q95", "max")]
            cell = f"{f[0]} [{f[1]}–{f[2]}], p95 {f[3]}, max {f[4]}"
            cell = f"{cell} {unit}" if m in per_cell and unit else cell
            # how many jobs a job distribution pools: a variant that finished 3 jobs and one that
            # finished 200 must not read alike (survivorship; the runs' still-queued counts say the rest)
            r[header[m]] = f"{cell} ({int(x['n']):,} jobs)" if m in JOB_METRICS else cell
        rows.append(r)
    tab = pd.DataFrame(rows)
    if len(tab):
        tab = tab.sort_values(["dataset", "window", "variant"], kind="mergesort",
                              key=lambda s: s.map(order) if s.name == "variant" else s.map(
                                  {k: i for i, k in enumerate(dict.fromkeys(runs[s.name].astype(str)))}))
    pg.p("Median [quartiles], 95th percentile and maximum, in display units, and for the job distributions the "
         "number of finished jobs pooled"
         + (" (the datasets differ in scale, so a column whose title has no unit gives the unit in each cell, as "
            "its figure below does)" if per_cell else "") + ":")
    pg.table(tab, key_cols=4, max_cols=2)
    _figures(pg, qt, summ, metrics, variants, assumed)


def _figures(pg, qt: pd.DataFrame, summ: pd.DataFrame, metrics: list[str], variants: list[str],
             assumed: bool) -> None:
    """One SVG per dataset and window (:func:`twinsweep.sweep.svgchart.line_panels`): a panel per
    metric with the quantile function of every variant, in the page's variant styles. A value axis
    starts at zero; one whose positive values span more than two decades is symmetric-log (linear
    below the 5th percentile of the positive values), so that the bulk and the tail both show."""
    # row positions per (dataset, window, metric) and per variant in it, in file order (two groupings,
    # not a sub-frame per group: the quantile table has one row per variant, metric and percentile)
    by_metric = qt.groupby(["dataset", "window", "metric"], sort=False).indices
    by_variant = qt.groupby(["dataset", "window", "metric", "variant"], sort=False).indices
    q_all, v_all = qt["q"].to_numpy(dtype="float64"), qt["value"].to_numpy(dtype="float64")
    none = np.zeros(0, dtype="int64")
    summ_rows = summ.groupby(["dataset", "window"], sort=False).indices
    for ds, win in dict.fromkeys(k[:2] for k in by_metric):
        panels = []
        display = display_units(summ.iloc[summ_rows.get((ds, win), none)], metrics)
        for m in metrics:
            s = display[m][1]
            vals = v_all[by_metric.get((ds, win, m), none)] / s
            fin = vals[np.isfinite(vals)]
            pos = fin[fin > 0]
            hi = float(fin.max()) if len(fin) else 1.0
            # symmetric-log axis for values spread over decades: linear below the 5 % quantile of the
            # positive values, but never below hi / 10^4 (a panel shows at most ~4 decades: values
            # near 0, such as the float rounding of a power swing between equal steps, stay at 0)
            symlog = (max(float(np.quantile(pos, 0.05)), hi / SYMLOG_DECADES)
                      if len(pos) and pos.max() / pos.min() > 100 else None)
            lo = min(0.0, float(fin.min())) if len(fin) else 0.0
            rows = {v: by_variant[(ds, win, m, v)] for v in variants if (ds, win, m, v) in by_variant}
            series = [Series(v, q_all[i] * 100, v_all[i] / s) for v, i in rows.items()]
            panels.append(LinePanel(series, (lo, hi * 1.04 if hi > 0 else 1.0), (0.0, 100.0),
                                    title=_label(m, assumed, display), xlabel="percentile", symlog=symlog))
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in f"{ds}_{win}")
        safe += "_" + hashlib.sha1(f"{ds}\0{win}".encode()).hexdigest()[:6]  # distinct for any names
        label = f"{ds} / {win}: pooled quantile functions per variant"
        pg.svg(line_panels(panels, variants, pg.styles, label, cols=min(len(panels), 3), panel_height=150),
               f"pooled_{safe}.svg", f"{ds} / {win}: quantile function (exact percentiles 0–100) of each pooled "
               "distribution, one line per variant")
