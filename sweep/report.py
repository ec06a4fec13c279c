"""The sweep report: one self-contained HTML page plus its charts (SVG) and CSVs beside it, in
``<results>/report/``.

Sections (HTML ids, in page order): ``verdict`` (what to run and how sure we are), ``summary``
(the study), ``ranks`` (per dataset: mean rank with seeded bootstrap 95 % intervals), ``wins``
(win matrices), ``agreement`` (Kendall's W across seeds), ``timelines`` (power, utilisation and
cooling of all variants overlaid for one window and seed, as in Fig. 4 of the S-RAPS paper), then
the details: ``distributions`` (box strips per metric and variant across seeds), ``aggregate``
(the exact statistics of ``aggregate.parquet``), ``pooled`` (every job and power sample),
``provenance`` (every trace, its archive and donors), ``power-models`` (the power parameters and
their sources) and ``failures``. Every power or energy axis is labelled "(assumed)" when the
system's power model is assumed rather than published.

Readable at 1280 px: tables wrap into column blocks, headers are the metric catalogue's labels with
units, numbers are rounded (:func:`format_frame`). Every chart is inline SVG
(:mod:`twinsweep.sweep.svgchart`) drawn with one variant -> (colour, line style) map
(:func:`twinsweep.sweep.plotting.variant_styles`) and value axes that start at the metric's floor
(:func:`twinsweep.sweep.plotting.axis_range`). Run files are read through
:class:`twinsweep.sweep.store.ResultStore`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from twinsweep.core.atomic import atomic_write_text
from twinsweep.core.durations import duration_text
from twinsweep.core.metrics import column_decimals, format_number, format_spread, metric as _metric, si_power, summary_metrics

from .plotting import axis_range, variant_styles
from .ranking import (REFERENCE_POLICY, BlockPivot, block_ranks, bootstrap_mean_rank, drop_blocks, incomplete_blocks, kendall_w,
                      past_end_blocks, split_reference, win_matrix)
from .report_fidelity import SECTION_ID as FIDELITY_ID, section_fidelity
from .report_pareto import SECTION_ID as PARETO_ID, section_pareto
from .report_stability import SECTION_ID as STABILITY_ID, section_stability
from .report_verdict import assumed_power_note, section_verdict, starvation_note, survivorship_note
from .spec import study_axes, study_metrics, study_rank
from .store import ResultStore
from .svgchart import LinePanel, Series, box_strips, line_panels
from .twin_error import load_twin_errors
from .variants import add_variant
from .verdict import compute_verdict

KENDALL_CITE = ("M. G. Kendall and B. Babington Smith, \"The problem of m rankings\", "
                "The Annals of Mathematical Statistics 10(3):275–287, 1939; tie correction as in "
                "M. G. Kendall, \"Rank correlation methods\", Griffin, 1948.")
SRAPS_CITE = ("M. Maiterth et al., \"HPC Digital Twins for Evaluating Scheduling Policies, Incentive Structures "
              "and their Impact on Power and Cooling\" (S-RAPS), arXiv:2508.20016, 2025, Fig. 4")


def _is_assumed(labels) -> bool:
    """True unless every label is "published" (a missing label counts as assumed)."""
    vals = list(labels)
    return not vals or any(v != "published" for v in vals)


def _object_strings(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its string columns (pandas' Arrow-backed ``str`` dtype) as Python objects: the
    report walks these columns value by value (variant sets, labels, cells), which costs ~5 µs a
    value through Arrow and ~50 ns through objects; values, order and NaN are unchanged."""
    cols = {c: object for c in df.columns if isinstance(df[c].dtype, pd.StringDtype)}
    return df.astype(cols) if cols else df


def _cell(x, digits: int = 4) -> str:
    """One cell of a text column as display text: numbers through
    :func:`core.metrics.format_number` (``digits`` significant digits; a whole number without
    decimals: ``100``, not ``100.0``), booleans yes / no, None / NaN / an empty list ``—``, a list
    as its items joined by commas; text as it is."""
    if x is None or isinstance(x, (bool, np.bool_)):
        return format_number(None if x is None else bool(x))
    if isinstance(x, (int, np.integer)):
        return format_number(int(x), decimals=0)
    if isinstance(x, (float, np.floating)):
        whole = np.isfinite(x) and float(x).is_integer() and abs(x) < 1e15
        text = format_number(float(x), digits, decimals=0 if whole else None)
        return text.rstrip("0").rstrip(".") if "." in text else text  # 1.5, not 1.500
    if isinstance(x, str):
        return x
    if isinstance(x, (list, tuple, np.ndarray)):
        return ", ".join(_cell(v, digits) for v in x) if len(x) else "—"
    try:
        return "—" if pd.isna(x) else str(x)
    except (TypeError, ValueError):
        return str(x)


def format_frame(df: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """``df`` with every cell as display text (:func:`core.metrics.format_number`): a float column is
    rounded to one number of decimals that shows its largest magnitude with ``digits`` significant
    digits (:func:`core.metrics.column_decimals`), integers get thousands separators, booleans read
    yes / no, None and NaN read ``—``; never scientific notation. Text cells are kept."""
    out = {}
    for c in df.columns:
        col = df[c]
        if pd.api.types.is_bool_dtype(col):
            out[c] = [format_number(bool(x)) for x in col]
        elif pd.api.types.is_integer_dtype(col):
            out[c] = [format_number(x, decimals=0) for x in col]
        elif pd.api.types.is_float_dtype(col):
            d = column_decimals(col.to_numpy(), digits)
            out[c] = [format_number(x, decimals=d) for x in col]
        else:
            out[c] = [_cell(x) for x in col]
    return pd.DataFrame(out, columns=df.columns, index=df.index)


_CELL_ESCAPES = (("\t", "\\t"), ("\r", "\\r"), ("\n", "\\n"))


def _html_cell(text: str, tag: str, cell: bool) -> str:
    # as pandas' HTML formatter: tabs and line breaks of a cell shown as \t \r \n, &, <, > escaped,
    # the text stripped, a double space kept as two non-breaking spaces
    if cell:
        for a, b in _CELL_ESCAPES:
            text = text.replace(a, b)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").strip().replace("  ", "&nbsp;&nbsp;")
    return f"      <{tag}>{text}</{tag}>"


def _html_table(df: pd.DataFrame, cls: str) -> str:
    """``df`` (text cells, as :func:`format_frame` makes them) as the HTML table
    ``df.to_html(index=False, escape=True, na_rep="—", classes=cls, border=0)`` writes, character
    for character, without pandas' formatter (a tenth of the report's time went there); a frame
    with a cell that is not text, or with non-text or multi-level column labels, goes to pandas."""
    cols = [df.iloc[:, j].tolist() for j in range(df.shape[1])]
    if not df.shape[1] or isinstance(df.columns, pd.MultiIndex) or not all(isinstance(c, str) for c in df.columns) or not all(
            isinstance(x, str) for col in cols for x in col):
        return df.to_html(index=False, escape=True, na_rep="—", classes=cls, border=0)
    out = [f'<table class="dataframe {cls}">', "  <thead>", '    <tr style="text-align: right;">']
    out += [_html_cell(c, "th", False) for c in df.columns]
    out += ["    </tr>", "  </thead>", "  <tbody>"]
    for row in zip(*cols):
        out.append("    <tr>")
        out += [_html_cell(x, "td", True) for x in row]
        out.append("    </tr>")
    out += ["  </tbody>", "</table>"]
    return "\n".join(out)


class _Page:
    """Collects HTML fragments and writes the charts beside the page (SVG, also inline). ``styles``: the page's variant -> (colour, line style) map
    (:func:`twinsweep.sweep.plotting.variant_styles`) that every figure draws with."""

    def __init__(self, out: Path, styles: dict | None = None):
        self.out = out
        self.parts: list[str] = []
        self.files: list[str] = []
        self.toc: list[tuple[str, str]] = []  # (HTML id, title) of every section, in page order
        self.styles = styles or {}

    def h(self, level: int, text: str, id: str | None = None) -> None:
        a = f' id="{id}"' if id else ""
        if level == 2 and id:
            self.toc.append((id, text))
        self.parts.append(f"<h{level}{a}>{html.escape(text)}</h{level}>")

    def p(self, text: str, raw: bool = False) -> None:
        self.parts.append(f"<p>{text if raw else html.escape(text)}</p>")

    def raw(self, text: str) -> None:
        self.parts.append(text)

    def table(self, df: pd.DataFrame, index: bool = False, key_cols: int = 0, max_cols: int = 0,
              cls: str = "t") -> None:
        """Add ``df`` as an HTML table with every cell readable (:func:`format_frame`). A table with more
        than ``max_cols`` value columns (0: no limit) is wrapped into blocks of at most ``max_cols``
        columns, each repeating the first ``key_cols`` columns, so that it fits the page."""
        df = format_frame(df.reset_index() if index else df)
        value_cols = list(df.columns[key_cols:])
        if max_cols <= 0 or len(value_cols) <= max_cols:
            chunks = [value_cols]
        else:
            n = -(-len(value_cols) // max_cols)
            size = -(-len(value_cols) // n)
            chunks = [value_cols[i:i + size] for i in range(0, len(value_cols), size)]
        for chunk in chunks:
            part = df[list(df.columns[:key_cols]) + chunk]
            self.parts.append(_html_table(part, cls))

    def svg(self, svg: str, name: str, caption: str = "") -> None:
        """Add an SVG chart (:mod:`twinsweep.sweep.svgchart`) inline and write it as ``name`` beside
        the page."""
        atomic_write_text(self.out / name, svg + "\n", sync=False)  # rebuilt from the runs at will: not synced
        self.files.append(name)
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self.parts.append(f"<figure>{svg}{cap}</figure>")

    def csv(self, df: pd.DataFrame, name: str) -> None:
        atomic_write_text(self.out / name, df.to_csv(index=False), sync=False)
        self.files.append(name)

    def html(self, title: str) -> str:
        """The page: a table of contents of the sections, then the sections in the order added."""
        return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<meta name=\"viewport\" content=\"width=device-width\"><title>{html.escape(title)}</title>"
                f"<style>{CSS}</style></head><body><nav class=\"toc\"><b>Contents:</b> "
                + " ".join(f'<a href="#{i}">{html.escape(t)}</a>' for i, t in self.toc)
                + "</nav>\n" + "\n".join(self.parts) + "</body></html>\n")


#: The page's style sheet: 1200 px of content at most; tables and charts never wider than the page
#: (words break only where they must; numbers never); dark text (contrast >= 7:1).
CSS = ("body{font-family:system-ui,sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222;"
       "line-height:1.4}"
       "table.t{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em;max-width:100%}"
       "table.t td,table.t th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:right;"
       "font-variant-numeric:tabular-nums;overflow-wrap:break-word}"
       "table.t td{white-space:nowrap}table.t th{background:#f0f0f0;vertical-align:bottom}"
       "table.t td:first-child,table.t th:first-child{text-align:left}"
       "table.verdict-table td,table.wrap td{white-space:normal;text-align:left}table.wrap th{text-align:left}"
       "table.wins td,table.wins th{padding:2px 5px}"
       "figure{margin:1em 0}img,svg{max-width:100%;height:auto}"
       "figcaption{font-size:0.85em;color:#444}nav.toc{font-size:0.9em;line-height:1.7}"
       "nav.toc a{margin-right:0.8em;white-space:nowrap}"
       "pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:0.8em;background:#f6f6f6;padding:0.5em}"
       "ul.verdict{font-size:1.05em;line-height:1.5}b.best{color:#064}"
       ".assumed{color:#a40}p,li{overflow-wrap:break-word}")


def _fname(*parts) -> str:
    """A safe file name from parts: anything but letters, digits, ``.``, ``_``, ``-`` becomes
    ``-``, and a part that was changed gets 6 hex digits of its SHA-1, so that names differing
    only there (dataset ``a/b`` and ``a-b``) still give different files."""
    out = []
    for p in map(str, parts):
        safe = re.sub(r"[^A-Za-z0-9._-]+", "-", p)
        out.append(safe if safe == p else f"{safe}-{hashlib.sha1(p.encode()).hexdigest()[:6]}")
    return "_".join(out)


def _fmt_duration(s) -> str:
    """A duration in s as the largest whole unit (:func:`core.durations.duration_text`): ``3 d``,
    ``12 h``, ``1 min``, ``90 s``; ``—`` for None."""
    if s is None or (isinstance(s, float) and np.isnan(s)):
        return "—"
    return duration_text(s)


def _axis_text(axis: str, values) -> str:
    """A grid axis and its values for people: ``sample period: 1 min``, ``cooling: yes``."""
    def one(v) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if axis == "sample_period" and isinstance(v, (int, float)):
            return _fmt_duration(v)
        return _cell(v)

    return f"{axis.replace('_', ' ')}: {', '.join(one(v) for v in values)}"


def _utc(epoch: int, offset) -> str:
    import datetime as dt

    if offset is None:
        return "trace start"
    return dt.datetime.fromtimestamp(int(epoch) + int(offset), dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# ---------------------------------------------------------------------------------------- sections
def _section_summary(pg: _Page, study: dict, runs: pd.DataFrame, root: Path, failed: list[dict], plan_n: int) -> None:
    pg.h(2, "Study", "summary")
    grid = {g["axis"]: g["values"] for g in study.get("grid", [])}
    pert = study.get("perturbation", {})
    rank = study_rank(study)
    rows = [
        ("results folder", str(root)),
        ("runs complete / planned", f"{len(runs):,} / {plan_n:,}"),
        ("runs failed", f"{len(failed):,}"),
        ("datasets: windows (jobs in each: submitted in it, or running or queued at its start; seed 0, the trace "
         "as recorded)", _datasets_text(study, runs)),
        ("grid", "; ".join(_axis_text(k, v) for k, v in grid.items())),
        ("seeds", ", ".join(map(str, study.get("seeds", [])))),
        ("perturbation (seed > 0)", f"run times × exp(σ·N(0,1)) with σ = {pert.get('runtime_sigma', 0)}; "
                                    f"submit times ± U{{0..{pert.get('submit_jitter_s', 0)}}} s; seed 0 = the trace as recorded"),
        ("ranking objectives (first = primary)", "; ".join(f"{_metric(m).label} ({'minimise' if d == 'min' else 'maximise'})"
                                                          for m, d in rank.items())),
        ("statistics", "exact (full sort); std is the sample standard deviation (ddof = 1)"),
    ]
    pg.table(pd.DataFrame(rows, columns=["", "value"]), cls="t wrap")


def _datasets_text(study: dict, runs: pd.DataFrame) -> str:
    """``"kth-sp2: day144 (1,021 jobs); sdsc-sp2: ..."``: each dataset's windows with the jobs of
    their runs — submitted in the window, or running or queued at its start
    (``count_jobs_in_window`` of the seed-0 run, else the median over the window's runs; ``—``
    when none ran or the column is absent)."""
    out = []
    for d in study.get("datasets", []):
        wins = []
        for w in d.get("windows") or []:
            sel = runs[(runs["dataset"] == d["name"]) & (runs["window"] == w["name"])] if len(runs) else runs
            n = None
            if "count_jobs_in_window" in sel.columns and len(sel):
                zero = sel.loc[sel["seed"] == 0, "count_jobs_in_window"] if "seed" in sel.columns else sel.iloc[:0]
                vals = (zero if len(zero) else sel["count_jobs_in_window"]).dropna()
                n = int(vals.median()) if len(vals) else None
            wins.append(f"{w['name']} ({'—' if n is None else f'{n:,}'} jobs)")
        out.append(f"{d['name']}: " + (", ".join(wins) or "—"))
    return "; ".join(out)


def _section_distributions(pg: _Page, runs: pd.DataFrame, variants: list[str], metrics: list[str]) -> None:
    pg.h(2, "Distributions across seeds", "distributions")
    pg.p("Per metric, one panel per dataset and window, one box per variant over its seeds: box = quartiles, "
         "thick line = median, whiskers = the furthest runs within 1.5 IQR, dots = every run. Value axes start at "
         "the metric's natural zero (1 for PUE) or, for temperatures, span at least 5 K, so that a difference "
         "below the noise does not fill the axis. Hover a box for its figures.")
    groups = [(key, g, {v: np.flatnonzero(g["variant"].to_numpy() == v) for v in variants})
              for key, g in runs.groupby(["dataset", "window"], sort=False)]
    assumed = _is_assumed(runs["power_label"])
    for metric in metrics:
        if metric not in runs.columns or runs[metric].isna().all():
            continue
        m = _metric(metric)
        panels, ranges, shown = [], [], []
        for (ds, win), g, rows in groups:
            raw = g[metric].to_numpy(dtype="float64")
            fin_raw = np.abs(raw[np.isfinite(raw)])
            disp = m.scaled_to(fin_raw.max() if len(fin_raw) else np.nan)  # power in its SI unit per panel
            vals = raw / disp.scale
            by = {v: vals[i] for v, i in rows.items()}
            panels.append([f"{ds} / {win}", by])
            shown.append(disp)
            fin = vals[np.isfinite(vals)]
            ranges.append(axis_range(disp, float(fin.min()) if len(fin) else np.nan,
                                     float(fin.max()) if len(fin) else np.nan))
        units = {d.display_unit for d in shown}
        if len(units) > 1:  # panels in different units: each title says its own
            for p, d in zip(panels, shown):
                p[0] += f" [{d.display_unit}]"
            head = dataclasses.replace(m, display_unit="").header(assumed)
        else:
            head = (shown[0] if shown else m).header(assumed)
        panels = [tuple(p) for p in panels]
        pg.svg(box_strips(panels, variants, pg.styles, ranges, head, f"{head} per variant across seeds",
                          units=[d.display_unit for d in shown]),
               f"box_{metric}.svg", f"{head} per variant across seeds ({m.better})")




def _section_ranks(pg: _Page, runs: pd.DataFrame, variants: list[str], rank: dict, n_boot: int, seed: int) -> None:
    pg.h(2, "Rank tables", "ranks")
    pg.p(f"Per dataset, every (window, seed) is a block in which the variants are ranked (1 = best; ties share "
         f"the average rank; a metric that is undefined ranks last). Mean rank over blocks with a percentile "
         f"bootstrap 95 % interval ({n_boot} resamples of the blocks, RNG seed {seed}). Sorted by the primary "
         f"metric.")
    rows = []
    for ds, g in runs.groupby("dataset", sort=False):
        vs = [v for v in variants if v in set(g["variant"])]
        cols: dict[str, object] = {"variant": vs}  # the table's columns, made a frame once
        pivot = BlockPivot(g, vs)
        assumed = _is_assumed(g["power_label"])
        for metric, direction in rank.items():
            if metric not in g.columns:
                continue
            values, blocks = pivot.values(metric), pivot.blocks
            ranks = block_ranks(values, direction)
            mean, lo, hi = bootstrap_mean_rank(ranks, n_boot, seed)
            m = _metric(metric)
            head = f"{m.label} ({'min' if direction == 'min' else 'max'}imise)"
            cols[f"{head}: mean rank [95 % CI]"] = [f"{format_number(a, decimals=2)} [{format_number(b, decimals=2)}"
                                                   f"–{format_number(c, decimals=2)}]" for a, b, c in zip(mean, lo, hi)]
            raw = np.full(values.shape[1] if len(values) else len(vs), np.nan)  # "—" where every block lacks it
            some = ~np.isnan(values).all(axis=0) if len(values) else np.zeros(len(raw), bool)
            raw[some] = np.nanmedian(values[:, some], axis=0)  # (numpy warns "All-NaN slice" on the others)
            fin = raw[np.isfinite(raw)]
            shown = m.scaled_to(np.abs(fin).max() if len(fin) else None)  # power in this table's SI unit
            med = raw / shown.scale
            d = column_decimals(med, max(m.digits, 3), distinct=True)  # medians that differ read apart
            cols[f"{shown.header(assumed)}: median"] = [format_number(x, decimals=d) for x in med]
            cols[f"_{metric}"] = mean
            for v, a, b, c in zip(vs, mean, lo, hi):
                rows.append({"dataset": ds, "variant": v, "metric": metric, "direction": direction,
                             "mean_rank": a, "ci_low": b, "ci_high": c, "blocks": len(blocks)})
        table = pd.DataFrame(cols)
        first = f"_{next(iter(rank))}"
        if first in table.columns:
            table = table.sort_values(first, kind="mergesort")
        table = table.drop(columns=[c for c in table.columns if c.startswith("_")])
        pg.h(3, f"{ds}")
        pg.p(f"{runs[runs['dataset'] == ds][['window', 'seed']].drop_duplicates().shape[0]} blocks; sorted by "
             f"the primary objective, {_metric(next(iter(rank))).label}.")
        pg.table(table, key_cols=1, max_cols=6)
    pg.csv(pd.DataFrame(rows), "ranks.csv")


def _win_colour(x: float) -> str:
    """Background of a win share (0..1): light red (loses) through white to light green (wins), so
    that black text stays readable on every cell."""
    if np.isnan(x):
        return "#eee"
    lo, mid, hi = np.array([244, 170, 160]), np.array([255, 255, 255]), np.array([140, 210, 160])
    c = mid + (hi - mid) * (2 * x - 1) if x >= 0.5 else mid + (lo - mid) * (1 - 2 * x)
    return "#%02x%02x%02x" % tuple(int(round(v)) for v in c)


def _win_table(W: np.ndarray, vs: list[str], max_cols: int = 12) -> str:
    """A win matrix as HTML tables (percent, coloured cells; variant names break at ``+``): the
    columns in blocks of at most ``max_cols`` (each block repeats the row names), so that the
    matrix of many variants still fits the page."""
    def name(v: str) -> str:
        return html.escape(v).replace("+", "+<wbr>")

    n = -(-len(vs) // max_cols) if vs else 1
    size = -(-len(vs) // n) if vs else 0
    out = []
    for j0 in range(0, max(len(vs), 1), max(size, 1)):
        js = range(j0, min(j0 + size, len(vs)))
        head = "".join(f"<th>{name(vs[j])}</th>" for j in js)
        body = []
        for i, a in enumerate(vs):
            cells = "".join(f'<td style="background:{_win_colour(W[i, j])}">'
                            f'{"—" if i == j else format_number(100 * W[i, j], decimals=0)}</td>' for j in js)
            body.append(f"<tr><th>{name(a)}</th>{cells}</tr>")
        out.append(f'<table class="t wins"><tr><th>row \\ column</th>{head}</tr>{"".join(body)}</table>')
    return "".join(out)


def _section_wins(pg: _Page, runs: pd.DataFrame, variants: list[str], rank: dict) -> None:
    pg.h(2, "Win matrices", "wins")
    metric, direction = next(iter(rank.items()))
    pg.p(f"Cell (row i, column j): share of blocks (window, seed) in % in which variant i is strictly better than "
         f"variant j on {_metric(metric).label} ({_metric(metric).verb if direction == _metric(metric).direction else direction}). "
         f"Ties count for neither; green: the row wins mostly, red: it loses mostly. wins.csv holds every rank metric.")
    rows = []
    for ds, g in runs.groupby("dataset", sort=False):
        vs = [v for v in variants if v in set(g["variant"])]
        pivot = BlockPivot(g, vs)
        for m, d in rank.items():
            if m not in g.columns:
                continue
            values = pivot.values(m)
            W = win_matrix(values, d)
            for i, a in enumerate(vs):
                for j, b in enumerate(vs):
                    if i != j:
                        rows.append({"dataset": ds, "metric": m, "variant": a, "opponent": b, "win_share": W[i, j]})
            if m != metric:
                continue
            pg.h(3, f"{ds}: row beats column on {_metric(m).label}")
            pg.raw(_win_table(W, vs))
    pg.csv(pd.DataFrame(rows), "wins.csv")


def _section_agreement(pg: _Page, runs: pd.DataFrame, variants: list[str], rank: dict) -> None:
    pg.h(2, "Agreement of rankings across seeds (Kendall's W)", "agreement")
    pg.p("Kendall's coefficient of concordance W of the variants' rankings across seeds (raters = seeds, objects "
         "= variants), per dataset, window and metric, with the correction for tied ranks; W = 1 means every seed "
         "ranks the variants the same way, 0 no agreement. χ² = m(n−1)W with n−1 degrees of freedom. Reference: "
         + KENDALL_CITE)
    rows = []
    for (ds, win), g in runs.groupby(["dataset", "window"], sort=False):
        vs = [v for v in variants if v in set(g["variant"])]
        pivot = BlockPivot(g, vs, block_cols=("seed",))
        for m, d in rank.items():
            if m not in g.columns:
                continue
            values = pivot.values(m)
            kw = kendall_w(block_ranks(values, d))
            rows.append({"dataset": ds, "window": win, "metric": m, "W": kw["W"], "seeds (m)": int(kw["m"]),
                         "variants (n)": int(kw["n"]), "chi2": kw["chi2"], "p": kw["p"]})
    df = pd.DataFrame(rows)
    pg.csv(df, "kendall_w.csv")
    if df.empty:
        pg.p("No blocks to compare.")
        return
    shown = pd.DataFrame({"dataset": df["dataset"], "window": df["window"],
                          "objective": [_metric(m).label for m in df["metric"]],
                          "W": [format_number(x, decimals=2) for x in df["W"]], "seeds (m)": df["seeds (m)"],
                          "variants (n)": df["variants (n)"], "χ²": [format_number(x, 3) for x in df["chi2"]],
                          "p": ["< 0.001" if x < 0.001 else format_number(x, decimals=3) for x in df["p"].fillna(np.nan)]})
    shown.loc[df["p"].isna().to_numpy(), "p"] = "—"
    pg.table(shown)


#: Timeline panels: (timeline.parquet column, catalogue metric giving its unit, scale and axis floor, label).
_TIMELINE_PANELS = (("facility_power_w", "peak_power_w", "facility power"), ("utilization", "utilization", "utilisation"),
                    ("pue", "pue_avg", "PUE"), ("tower_return_temp_c", "tower_return_temp_mean_c",
                                                 "cooling-tower return"))


def _section_timelines(pg: _Page, root: Path, runs: pd.DataFrame, variants: list[str], study: dict,
                       datasets: dict) -> None:
    import pyarrow.parquet as pq

    pg.h(2, "Power, utilisation and cooling timelines", "timelines")
    rep = study.get("report", {})
    seeds = sorted(runs["seed"].dropna().unique().tolist())
    seed = rep.get("timeline_seed")
    seed = seed if seed is not None else (seeds[0] if seeds else 0)
    if rep.get("timeline_dataset"):
        ds = rep["timeline_dataset"]
        win = rep.get("timeline_window") or next((w["name"] for d in study["datasets"] if d["name"] == ds
                                                  for w in d["windows"]), None)
        choices = [(ds, win)]
    else:
        choices = [(d["name"], d["windows"][0]["name"]) for d in study.get("datasets", []) if d.get("windows")]
    pg.p(f"All variants overlaid for one window and seed {seed} (seed 0 = the trace as recorded), in the manner "
         f"of {SRAPS_CITE}. Facility power is the input power with conversion losses; utilisation is busy nodes "
         f"/ nodes. Averages per sample period, drawn as steps. Power axes start at zero, PUE at 1 and "
         f"temperature axes span at least 5 K, so that small differences are not magnified.")
    store = ResultStore(root)
    for ds, win in choices:
        g = runs[(runs["dataset"] == ds) & (runs["window"] == win) & (runs["seed"] == seed)]
        series: dict[str, dict[str, np.ndarray]] = {}
        for v in variants:
            keys = g.loc[g["variant"] == v, "key"]
            path = store.run_file(str(keys.iloc[0]), "timeline.parquet") if len(keys) else None
            if path is None or not path.exists():
                continue
            pf = pq.ParquetFile(path)
            cols = [c for c in ["time"] + [c for c, _, _ in _TIMELINE_PANELS] if c in pf.schema_arrow.names]
            t = pf.read(columns=cols, use_threads=False)
            series[v] = {c: t.column(c).to_numpy(zero_copy_only=False).astype("float64") for c in cols}
        if not series:
            pg.p(f"{ds} / {win} / seed {seed}: no complete runs.")
            continue
        assumed = _is_assumed(g["power_label"])
        t0 = min(float(s["time"][0]) for s in series.values() if len(s["time"]))
        dt = min((float(np.diff(s["time"]).min()) for s in series.values() if len(s["time"]) > 1), default=0.0)
        t1 = max(float(s["time"][-1]) for s in series.values() if len(s["time"])) + dt
        epoch = datasets.get(ds, {}).get("epoch", 0)
        panels = []
        for col, name, text in _TIMELINE_PANELS:
            have = [v for v in series if col in series[v]]
            if not have:
                continue
            m = _metric(name)
            ys = {v: series[v][col] / m.scale for v in have}
            allv = np.concatenate(list(ys.values()))
            allv = allv[np.isfinite(allv)]
            lim = axis_range(m, float(allv.min()) if len(allv) else np.nan, float(allv.max()) if len(allv) else np.nan)
            unit = f" [{m.display_unit}]" if m.display_unit else ""
            panels.append(LinePanel([Series(v, (series[v]["time"] - t0) / 3600.0, ys[v], step=True) for v in have],
                                    lim, (0.0, (t1 - t0) / 3600.0), ylabel=text + unit + (" (assumed)" if assumed and
                                                                                         m.power else "")))
        panels[0].title = f"{ds} / {win} / seed {seed}"
        panels[-1].xlabel = f"hours since {_utc(epoch, t0)}"
        what = ", ".join(p.ylabel.split(" [")[0].split(" (")[0] for p in panels)
        label = f"{ds} / {win}, seed {seed}: {what}"
        pg.svg(line_panels(panels, variants, pg.styles, label, cols=1, panel_height=140),
               _fname("timeline", ds, win, f"seed{seed}") + ".svg",
               label + (" (power model assumed)" if assumed else ""))


def _decimals(m, values) -> int:
    """Decimals of a column of metric ``m`` (a :class:`core.metrics.Metric`; ``values`` in its
    display units): the largest magnitude in ``values`` with the metric's significant digits
    (:func:`core.metrics.column_decimals`), but no finer than 0.001 display units (0.0001 for a
    metric shown with 4 digits, such as PUE): the display units (h, kW, MWh, %) are chosen so that
    a finer figure is below what the model resolves."""
    return min(column_decimals(list(values), m.digits), max(3, m.digits))


def _aggregate_rows(root: Path, runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """The exact per-variant statistics the aggregation wrote (``aggregate.parquet``,
    :func:`twinsweep.sweep.aggregate.aggregate_results`) with the report's ``variant`` labels; the
    same summary made in memory (:func:`twinsweep.sweep.aggregate.summarise`) when the file is
    missing (a report built from a folder that was never aggregated)."""
    from .aggregate import group_columns, summarise

    gcols = [c for c in group_columns(root, runs) if c in runs.columns]
    path = root / "aggregate.parquet"
    agg = pd.read_parquet(path) if path.exists() else summarise(runs, gcols, metrics)
    gcols = [c for c in gcols if c in agg.columns]
    keys = pd.DataFrame({c: runs[c].astype(str).to_numpy() for c in gcols})
    keys["variant"] = runs["variant"].to_numpy()
    return agg.astype({c: str for c in gcols}).merge(keys.drop_duplicates(gcols), on=gcols, how="inner")


def _section_aggregate(pg: _Page, root: Path, runs: pd.DataFrame, variants: list[str], metrics: list[str]) -> None:
    pg.h(2, "Aggregate statistics", "aggregate")
    pg.p("Mean ± sample standard deviation across seeds, per dataset, window and variant, in display units, from "
         "aggregate.parquet (exact statistics of the aggregation: n, min, mean, median, std, max, q05, q25, q75, "
         "q95 of every metric, also in aggregate.csv; quantiles use the full sorted sample). Each table shows a "
         "metric in one unit (power in the SI unit of its largest value) and its means with one number of "
         "decimals; a spread too small for those decimals shows one significant digit (± 0.0008); ± 0 is a "
         "spread of exactly 0 (the same value in every seed).")
    agg = _aggregate_rows(root, runs, metrics)
    keep = [m for m in metrics if m in set(agg["metric"]) and agg.loc[agg["metric"] == m, "mean"].notna().any()]
    agg = agg[agg["metric"].isin(keep)]
    assumed = _is_assumed(runs["power_label"])
    order = {v: i for i, v in enumerate(variants)}
    # each dataset/window table has its own unit (power in the SI unit of its largest mean,
    # Metric.scaled_to) and decimals per metric column: a 100-node machine's ramps beside an
    # exascale one's would otherwise round to 0
    shown: dict[tuple, dict[str, tuple]] = {}  # (dataset, window) -> metric -> (Metric shown, decimals)
    for (ds, win, m), means in agg.groupby(["dataset", "window", "metric"], sort=False)["mean"]:
        disp = _metric(m).scaled_to(means.abs().max())
        shown.setdefault((ds, win), {})[m] = (disp, _decimals(disp, (means / disp.scale).abs()))
    windows: dict[tuple, dict[str, dict]] = {}  # (dataset, window) -> variant -> table row, in file order
    for x in agg[["dataset", "window", "variant", "metric", "n", "mean", "std"]].to_dict("records"):
        r = windows.setdefault((x["dataset"], x["window"]), {}).setdefault(x["variant"], {"variant": x["variant"],
                                                                                          "seeds": 0})
        disp, dec = shown[(x["dataset"], x["window"])][x["metric"]]
        sc = disp.scale
        r["seeds"] = max(r["seeds"], int(x["n"]))
        r[disp.header(assumed)] = "—" if pd.isna(x["mean"]) else (
            format_number(x["mean"] / sc, decimals=dec) + ("" if pd.isna(x["std"]) else
                                                           f" ± {format_spread(x['std'] / sc, dec)}"))
    for (ds, win), by_variant in windows.items():
        rows = sorted(by_variant.values(), key=lambda r: order.get(r["variant"], len(order)))
        pg.h(3, f"{ds} / {win}")
        df = pd.DataFrame(rows)
        cols = [shown[(ds, win)][m][0].header(assumed) for m in keep if m in shown[(ds, win)]]
        pg.table(df[["variant", "seeds"] + [c for c in cols if c in df]], key_cols=2, max_cols=5)


def _section_provenance(pg: _Page, datasets: dict) -> None:
    pg.h(2, "Provenance of the traces", "provenance")
    pg.p("Every trace used, as loaded (checksum = sha256 of the uncompressed file). Cite the archive and the "
         "donors named here when using these results.")
    for name, d in datasets.items():
        pg.h(3, name)
        hdr = d.get("header", {})
        rows = [("trace", d.get("trace")), ("format", d.get("format")), ("jobs", f"{d.get('jobs', 0):,}"),
                ("checksum", d.get("checksum")), ("epoch", _utc(d.get("epoch", 0), 0))]
        for k in ("Computer", "Installation", "Acknowledge", "Information", "Conversion", "Version"):
            if k in hdr:  # the SWF header's Version is the format's (2.2), not the log's (…-2.1-cln)
                rows.append(("SWF format version" if k == "Version" else k,
                             str(hdr[k]).replace("\\n", " ").replace("\n", " ")))
        for w in d.get("windows", []):
            rows.append((f"window {w['name']}", f"start {_utc(d.get('epoch', 0), w.get('start'))}, "
                                                f"duration {_fmt_duration(w.get('duration'))}"))
        pg.table(pd.DataFrame(rows, columns=["", "value"], dtype=object), cls="t wrap")
        prov = (d.get("provenance") or "no provenance recorded by the loader").replace("\\n", "\n")
        pg.raw(f"<pre>{html.escape(prov)}</pre>")


#: Unit suffixes of system-file parameter names (longest first) and the unit they stand for.
_UNIT_SUFFIXES = (("_j_per_kg_k", "J/(kg·K)"), ("_kg_s", "kg/s"), ("_kw", "kW"), ("_w", "W"), ("_c", "°C"),
                  ("_k", "K"), ("_s", "s"), ("_j", "J"))
#: Words of parameter names spelled out on the page.
_PARAM_WORDS = {"cpu": "CPU", "gpu": "GPU", "nic": "NIC", "cdu": "CDU", "cdus": "CDUs", "mem": "memory",
                "util": "utilisation", "eta": "efficiency η", "c": "constant loss c", "cp": "specific heat c_p",
                "hx": "heat-exchanger", "fmu": "FMU", "wetbulb": "wet-bulb", "min": "minimum", "max": "maximum"}
#: Whole parameter names whose label is not made of their words.
_PARAM_LABELS = {"it_meter": "PUE's IT power metered at"}
#: Values of ``[power] it_meter`` for people (core/system.py IT_METERS).
_IT_METER_TEXT = {"rectifier_input": "the rectifiers' input (rectifiers in the IT cabinets)",
                  "rectifier_output": "the rectifiers' output (the rectifier stage is a room UPS: its losses are "
                                      "facility overhead)"}


def _param_row(key: str, v) -> tuple[str, object]:
    """(label, value) of a system-file parameter for the report's tables: :func:`_param_label`, and a
    power in watts shown in the SI unit of its value (``design_heat_w`` 1411436.4 -> ``design heat
    [MW]``, 1.411; :func:`core.metrics.si_power`, as the report's power metrics); other
    values as they are (the table formats them: :func:`_cell`)."""
    label = _param_label(key)
    if key == "it_meter":
        return label, _IT_METER_TEXT.get(str(v), v)
    if label.endswith(" [W]") and isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) \
            and np.isfinite(v):
        value, unit = si_power(v)
        if unit != "W":
            return f"{label[:-4]} [{unit}]", value
    return label, v


def _param_label(key: str) -> str:
    """A system-file parameter name for people, with its unit from the name's suffix:
    ``cpu_idle_w`` -> ``CPU idle [W]``, ``node_converter.eta`` -> ``node converter: efficiency η``,
    ``primary_flow_kg_s`` -> ``primary flow [kg/s]``. An *approach* (a temperature difference) named
    ``..._c`` is in K."""
    if key in _PARAM_LABELS:
        return _PARAM_LABELS[key]
    *parents, last = key.split(".")
    unit = ""
    for suffix, u in _UNIT_SUFFIXES:
        if last.endswith(suffix) and len(last) > len(suffix):
            last, unit = last[: -len(suffix)], u
            break
    if unit == "°C" and last.endswith("approach"):
        unit = "K"
    words = " ".join(_PARAM_WORDS.get(w, w) for w in last.split("_"))
    prefix = " ".join(_PARAM_WORDS.get(w, w) for p in parents for w in p.split("_"))
    return (f"{prefix}: " if prefix else "") + words + (f" [{unit}]" if unit else "")


def _param_list(what: str) -> str:
    """A comma-separated list of parameter names (a source's ``what``) as labels."""
    return ", ".join(_param_label(k.strip()) if re.fullmatch(r"[a-z0-9_.]+", k.strip()) else k.strip()
                     for k in what.split(","))


def _section_power(pg: _Page, datasets: dict) -> None:
    pg.h(2, "Power models and their assumptions", "power-models")
    pg.p("Node power = constant parts + per-CPU/GPU idle + utilisation × (max − idle); conversion losses "
         "P_in = (P_out + c)/η per node and per rectifier group. A model marked 'assumed' takes its parameters "
         "from comparable hardware, not from the machine itself; every power and energy figure of such a system is "
         "labelled (assumed).")
    seen = set()
    for d in datasets.values():
        s = d.get("system", {})
        key = (s.get("name"), s.get("path"))
        if key in seen:
            continue
        seen.add(key)
        status = s.get("power_status", "assumed")
        cls = ' class="assumed"' if status != "published" else ""
        pg.raw(f"<h3>{html.escape(str(s.get('name')))} — {html.escape(str(s.get('title', '')))} "
               f"<span{cls}>(power {html.escape(status)})</span></h3>")
        pw = s.get("power", {})
        flat = []
        for k, v in pw.items():
            if isinstance(v, dict):
                for kk, vv in v.items():
                    flat.append((f"{k}.{kk}", vv))
            else:
                flat.append((k, v))
        head = [("nodes", s.get("nodes")), ("trace processors per node (the trace's unit: 1 = the trace counts nodes)",
                                           s.get("cores_per_node")),
                ("generic (from the trace header)", s.get("generic"))]
        if s.get("partitions"):  # a partitioned machine: its node pools, each its own node type
            head.append(("partitions (each scheduled on its own; core/partitions.py)", "; ".join(
                f"{p['name']}: {p['nodes']:,} nodes x {p['cores_per_node']} cores, {p.get('cpus_per_node')} CPUs"
                + (f", {p['gpus_per_node']} GPUs" if p.get("gpus_per_node") else "")
                + f" (serves {', '.join(p['serves']) or 'nothing named'}{'; the default' if p['default'] else ''})"
                for p in s["partitions"])))
        flat = head + flat
        pg.table(pd.DataFrame([(k, v) if i < len(head) else _param_row(k, v) for i, (k, v) in enumerate(flat)],
                              columns=["parameter", "value"], dtype=object), cls="t wrap")
        srcs = s.get("sources") or []
        if srcs:
            items = "".join(f"<li><b>{html.escape(_param_list(str(x.get('what', ''))))}</b>: "
                            f"{html.escape(str(x.get('cite', '')))}</li>"
                            for x in srcs)
            pg.raw(f"<p>Sources:</p><ul>{items}</ul>")
        else:
            pg.p("No sources cited in the system file.")
        cool = s.get("cooling") or {}
        if cool and "error" not in cool:
            origin = "the system file's [cooling] table" if cool.get("from_system_file") else \
                "the generic warm-water plant sized from the system's peak IT power (all values assumed)"
            pg.raw(f"<p>Cooling plant (used by runs with <code>cooling = true</code>): {html.escape(origin)}; "
                   "model and sources in docs/cooling.md. PUE and coolant temperatures of such runs carry the "
                   "same label as the power model.</p>")
            rows = [_param_row(k, v) for k, v in cool.items()
                    if k != "from_system_file" and not isinstance(v, (dict, list))]
            pg.table(pd.DataFrame(rows, columns=["cooling parameter", "value"], dtype=object), cls="t wrap")


def _section_definitions(pg: _Page, metrics: list[str], rank: dict[str, str], grid: dict | None = None) -> None:
    """What each figure of the page means: every metric ranked or tabled, with its unit, which
    way is better (the study's ranking direction, else the metric's own), its definition and its
    source, from the metric catalogue (:mod:`core.metrics`; a plug-in metric brings its own); then
    what each ordering policy and backfill variant of the study's ``grid`` (axis -> values) does,
    in the first sentence of its registered class's docstring (:func:`_plugin_summary`)."""
    pg.h(2, "What the figures mean", "definitions")
    rows = []
    for name in metrics:
        m = _metric(name)
        unit = m.display_unit or "—"
        if m.unit == "W":  # Metric.scaled_to: each table shows power in the SI unit its values need
            unit = "W, kW, MW or GW, as each table's values need (stored in W)"
        rows.append({"figure": m.label, "unit": unit,
                     "better": "lower" if rank.get(name, m.direction) == "min" else "higher",
                     "definition": m.description or "—", "source": m.source or "—", "column": name})
    pg.table(pd.DataFrame(rows), cls="t wrap")
    names = [(kind, v) for kind in ("policy", "backfill") for v in (grid or {}).get(kind, [])]
    if names:
        pg.p("A variant is named policy+backfill: the ordering policy sorts the queue, the backfill variant decides "
             "which queued jobs start (docs/architecture.md, \"Engine and scheduler\").")
        pg.table(pd.DataFrame([{"": kind, "name": v, "what it does": _plugin_summary(kind, v)} for kind, v in names]),
                 cls="t wrap")


def _plugin_summary(kind: str, name: str) -> str:
    """What the ``kind`` (``"policy"`` or ``"backfill"``) plug-in registered as ``name`` does:
    :meth:`core.registry.Registry.summary`, and for the policy ``replay`` (the recorded schedule,
    not a registered policy) what it is."""
    from twinsweep.core.backfill.base import BACKFILLS
    from twinsweep.core.policies.base import POLICIES

    if kind == "policy" and name == REFERENCE_POLICY:
        return "The recorded schedule, replayed as the log ran it (the reference, not ranked)."
    return (POLICIES if kind == "policy" else BACKFILLS).summary(name)


def _section_failures(pg: _Page, failed: list[dict]) -> None:
    pg.h(2, "Failed runs", "failures")
    if not failed:
        pg.p("No run failed.")
        return
    df = pd.DataFrame([{"key": f.get("key"), "dataset": (f.get("info") or {}).get("dataset"),
                        "window": (f.get("info") or {}).get("window"), "policy": (f.get("info") or {}).get("policy"),
                        "backfill": (f.get("info") or {}).get("backfill"), "seed": (f.get("info") or {}).get("seed"),
                        "attempts": len(f.get("attempts", [])), "error": f.get("error")} for f in failed])
    pg.table(df)
    pg.p("Tracebacks: failed/<key>/error.json in the results folder.")


def _verdict_notes(runs: pd.DataFrame, plan_n: int, failed: list[dict], incomplete: pd.DataFrame,
                   included: bool, directions: dict[str, str], assumed: bool) -> list[str]:
    """The verdict's caveats (HTML): failed or missing runs, how incomplete blocks were treated, and
    which of the verdict's objectives (``directions``) are figures of assumed power models."""
    notes = []
    missing = plan_n - len(runs)
    if missing > 0 or failed:
        notes.append(f"<b>{missing:,} of {plan_n:,} planned runs are missing</b> ({len(failed):,} failed; see "
                     f"<a href=\"#failures\">failed runs</a>)." if missing > 0 else
                     f"<b>{len(failed):,} run(s) failed</b> (see <a href=\"#failures\">failed runs</a>).")
    if not incomplete.empty:
        notes.append(f"{len(incomplete):,} block(s) with missing runs are " +
                     ("ranked anyway (their missing variants rank last)." if included else
                      "left out of the verdict and the rankings."))
    power = [_metric(m).label for m in directions if _metric(m).power]
    if power and assumed:
        notes.append(f"{', '.join(power).capitalize()}: figures of assumed power models (see "
                     "<a href=\"#power-models\">power models</a>); the verdict's differences in "
                     f"{'it' if len(power) == 1 else 'them'} are those of the assumed models, not of a measured machine.")
    return notes


def _note_incomplete(pg: _Page, incomplete: pd.DataFrame, included: bool) -> None:
    """Say on the page which blocks miss planned runs and whether they were ranked."""
    if incomplete.empty:
        return
    what = "; ".join(f"{r.dataset}/{r.window}/seed {r.seed}: {r.missing} of {r.planned} missing"
                     for r in incomplete.head(12).itertuples())
    more = f" (and {len(incomplete) - 12} more)" if len(incomplete) > 12 else ""
    if included:
        pg.p(f"<b>Incomplete blocks are ranked</b> (twinsweep report --include-incomplete): {len(incomplete)} "
             f"block(s) miss planned runs, whose variants rank last there: {html.escape(what)}{more}.", raw=True)
    else:
        pg.p(f"<b>{len(incomplete)} block(s) left out of the rankings</b> because planned runs are missing (failed, "
             f"not run yet, or set aside as unreadable); a missing variant would rank last: {html.escape(what)}{more}. "
             "Run the sweep again to complete them, or rank them anyway with twinsweep report --include-incomplete.",
             raw=True)


def _backfill_of(runs: pd.DataFrame) -> dict[str, str] | None:
    """variant -> its backfill variant (the line style of :func:`plotting.variant_styles`), or None
    when the runs have no backfill column or a variant mixes several."""
    if "backfill" not in runs.columns or not len(runs):
        return None
    pairs = runs[["variant", "backfill"]].astype(str).drop_duplicates()
    return None if pairs["variant"].duplicated().any() else dict(zip(pairs["variant"], pairs["backfill"]))


# ---------------------------------------------------------------------------------------- entry
def build_report(results: str | os.PathLike, out: str | os.PathLike | None = None,
                 include_incomplete: bool = False, *, plan: pd.DataFrame | None = None) -> Path:
    """Build ``<results>/report/index.html`` (+ SVGs and CSVs) from a results folder; returns the
    page's path. Needs runs.parquet, study.json and datasets.json (written by a sweep). Raises
    FileNotFoundError when they are missing. ``plan``: plan.csv as
    :meth:`~sweep.store.ResultStore.read_plan` gives it, when the caller has read it (default:
    read here).

    Blocks (dataset, window, seed) that miss some of their planned runs
    (:func:`sweep.ranking.incomplete_blocks`) are left out of the rank tables, win matrices and
    agreement, since their missing variants would rank last; ``include_incomplete`` ranks them too.
    The summary says which blocks were left out, or that incomplete blocks were ranked."""
    root = Path(results)
    out_dir = Path(out) if out is not None else root / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    for need in ("runs.parquet", "study.json", "datasets.json"):
        if not (root / need).exists():
            raise FileNotFoundError(f"{root / need} not found: not a sweep results folder")
    study = json.loads((root / "study.json").read_text())
    datasets = json.loads((root / "datasets.json").read_text())
    twin_errors = load_twin_errors(study, datasets)  # [report] validation files: checked before any work
    runs = pd.read_parquet(root / "runs.parquet")
    axes = study_axes(study)
    rank: dict[str, str] = study_rank(study) or {"bsld_mean": "min"}
    failed = []
    fdir = root / "failed"
    if fdir.exists():
        for p in sorted(fdir.glob("*/error.json")):
            if not (root / "runs" / p.parent.name).exists():
                try:
                    failed.append(json.loads(p.read_text()))
                except ValueError:
                    pass
    plan_n = len(runs)
    if plan is None:  # plan order: datasets, windows and axis values as in the spec
        plan = ResultStore(root).read_plan()
    if plan is not None:
        plan_n = len(plan)
        pos = {k: i for i, k in enumerate(plan["key"])}
        runs = runs.assign(_pos=runs["key"].map(pos).fillna(len(pos))).sort_values(["_pos", "key"], kind="mergesort")
        runs = runs.drop(columns="_pos").reset_index(drop=True)
    if "power_label" not in runs.columns:
        runs["power_label"] = "assumed"
    runs, variants = add_variant(runs, axes) if len(runs) else (runs.assign(variant=[]), [])
    runs = _object_strings(runs)
    metrics = list(dict.fromkeys(summary_metrics() + study_metrics(study)))

    # the recorded schedule (policy replay) is the reference row, never ranked; its runs do not make blocks incomplete
    incomplete = incomplete_blocks(runs, plan if plan is None or "policy" not in plan.columns
                                   else plan[plan["policy"] != REFERENCE_POLICY])
    ranked = runs if include_incomplete else drop_blocks(runs, incomplete)
    ranked, ranked_variants, reference = split_reference(ranked, variants)

    pg = _Page(out_dir, styles=variant_styles(variants, _backfill_of(runs)))
    pg.h(1, f"twinsweep report — {study.get('name', '')}")
    if study.get("description"):
        pg.p(study["description"])
    rep = study.get("report", {})
    n_boot, boot_seed = int(rep.get("bootstrap", 1000)), int(rep.get("seed", 0))
    verdict = compute_verdict(ranked, ranked_variants, rank, dict(rep.get("tradeoff") or ()) or None,
                              rep.get("baseline"), n_boot, boot_seed)
    later = [(PARETO_ID, "trade-offs"), (STABILITY_ID, "ranking stability")] + \
        ([(FIDELITY_ID, "fidelity to the recorded schedule")] if reference else [])
    assumed = _is_assumed(runs["power_label"])
    notes = _verdict_notes(runs, plan_n, failed, incomplete, include_incomplete, verdict.directions, assumed)
    survivors = survivorship_note(ranked, verdict)
    starving = starvation_note(ranked, verdict)
    on_power = assumed_power_note(ranked, ranked_variants, verdict, rep.get("baseline")) if assumed else None
    section_verdict(pg, verdict, notes + [n for n in (on_power, survivors, starving) if n], later, reference,
                    rep.get("baseline"))
    section_pareto(pg, ranked, ranked_variants, study, verdict.directions, pg.styles, assumed,
                   past_end=past_end_blocks(ranked))
    section_stability(pg, ranked, ranked_variants, verdict, twin_errors)
    if reference:
        section_fidelity(pg, ResultStore(root), runs, ranked_variants, reference)
    _section_summary(pg, study, runs, root, failed, plan_n)
    _note_incomplete(pg, incomplete, include_incomplete)
    if len(runs):
        _section_ranks(pg, ranked, ranked_variants, rank, n_boot, boot_seed)
        _section_wins(pg, ranked, ranked_variants, rank)
        _section_agreement(pg, ranked, ranked_variants, rank)
        _section_timelines(pg, root, runs, variants, study, datasets)
        _section_distributions(pg, runs, variants, metrics)
        _section_aggregate(pg, root, runs, variants, metrics)
        from .report_pooled import section_pooled

        section_pooled(pg, root, runs, variants, assumed)
    else:
        for sid, title in (("ranks", "Rank tables"), ("wins", "Win matrices"), ("agreement", "Agreement"),
                           ("timelines", "Timelines"), ("distributions", "Distributions"), ("aggregate", "Aggregate"),
                           ("pooled", "Pooled distributions")):
            pg.h(2, title, sid)
            pg.p("No complete runs yet.")
    _section_provenance(pg, datasets)
    _section_power(pg, datasets)
    _section_definitions(pg, list(dict.fromkeys(list(rank) + metrics)), rank,
                         {g["axis"]: g["values"] for g in study.get("grid", [])})
    _section_failures(pg, failed)
    atomic_write_text(out_dir / "runs.csv", runs.drop(columns=["variant"], errors="ignore").to_csv(index=False),
                      sync=False)
    return atomic_write_text(out_dir / "index.html", pg.html(f"twinsweep — {study.get('name', '')}"))


def report_sections() -> tuple[str, ...]:
    """The HTML ids every report has (for tests and links), in page order; a study whose grid has the
    recorded schedule (policy replay) also has ``fidelity``, after ``stability``."""
    return ("verdict", PARETO_ID, STABILITY_ID, "summary", "ranks", "wins", "agreement", "timelines", "distributions", "aggregate", "pooled",
            "provenance", "power-models", "definitions", "failures")
