"""The incentive-study report: who gains and who pays under each account-incentive policy.

``twinsweep incentives RESULTS`` (or :func:`incentive_report`) reads a sweep's results folder
(e.g. of ``studies/incentives.toml``) and writes ``report/incentives.html`` with:

* the facility power timelines of every policy **side by side** (one panel per policy, shared
  axes; the baseline in grey in every panel), per dataset and window, for the smallest seed;
* per-entry outcomes (users or accounts, as the runs' ``options.acct_level``): jobs finished,
  mean wait, energy, and the change of mean wait against the baseline policy (default
  ``fcfs`` + the backfill of the incentive runs), averaged over seeds;
* for each incentive policy a scatter of that change against the quantity the policy ranks by
  (the entry's average power, EDP, ED²P or Fugaku points from the collection replay), point size
  ∝ the entry's collected node-hours, and the five largest gainers and payers;
* ``incentives_entries.csv`` (long table) and the PNGs next to the page.

The collection values come from the window's ``replay`` run when the study has one (its jobs are
what ``collect:replay`` collects), else from the accounts file named by ``options.accounts_in``.
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from twinsweep.core.atomic import atomic_write_bytes, atomic_write_text

from twinsweep.core.accounts import Accounts, load_accounts
from twinsweep.core.atomic import atomic_write_bytes, atomic_write_text
from twinsweep.core.metrics import account_metric

from .plotting import pyplot
from .store import ResultStore

__all__ = ["incentive_report", "entry_outcomes", "POLICY_QUANTITY"]

#: Which collected quantity each incentive policy ranks by (and whether higher runs first).
POLICY_QUANTITY = {
    policy: (q, account_metric(q).header(), higher_first, logx)
    for policy, (q, higher_first, logx) in {
        "acct_avg_power": ("avg_power_w", True, False),
        "acct_low_avg_power": ("avg_power_w", False, False),
        "acct_edp": ("edp_js", False, True),
        "acct_ed2p": ("ed2p_js2", False, True),
        "acct_fugaku_pts": ("fugaku_points", True, False),
        "weighted": ("fugaku_points", True, False),
    }.items()}  # labels and units: core.metrics (kind "account")


def _png(fig, path: Path) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    data = buf.getvalue()
    atomic_write_bytes(path, data)
    pyplot().close(fig)
    return base64.b64encode(data).decode()


def _runs(store: ResultStore) -> pd.DataFrame:
    runs = store.read_table()
    if "policy" not in runs.columns:
        raise FileNotFoundError(f"{store.table_path}: no 'policy' column")
    if "backfill" not in runs.columns:
        runs["backfill"] = "none"
    runs["variant"] = runs["policy"].astype(str) + "+" + runs["backfill"].astype(str)
    runs.loc[runs["policy"] == "replay", "variant"] = "replay"
    return runs


def _level(g: pd.DataFrame) -> str:
    col = "options.acct_level"
    if col in g.columns:
        vals = [v for v in g[col].dropna().unique() if v in ("account", "user")]
        if vals:
            return str(vals[0])
    return "account"


def _collected(store: ResultStore, g: pd.DataFrame) -> Accounts | None:
    rep = g[g["policy"] == "replay"]
    if not rep.empty:
        return load_accounts(store.run_dir(str(rep["key"].iloc[0])))
    col = "options.accounts_in"
    if col in g.columns:
        for v in g[col].dropna().unique():
            if not str(v).startswith("collect:") and Path(str(v)).exists():
                return load_accounts(str(v))
    return None


def entry_outcomes(root: str | os.PathLike, baseline: str = "fcfs") -> pd.DataFrame:
    """Long table: one row per (dataset, window, seed, variant, entry) with ``jobs``,
    ``wait_mean_s``, ``bsld_mean``, ``energy_j``, ``node_seconds`` (of the run), ``wait_delta_s``
    (minus the baseline variant's value for the same entry; NaN when it did not finish there),
    and the collected ``c_*`` values (avg power, EDP, ED²P, Fugaku points, node-seconds)."""
    store = ResultStore(root)
    runs = _runs(store)
    rows = []
    for (ds, win, seed), g in runs.groupby(["dataset", "window", "seed"], sort=True):
        level = _level(g)
        tab = "users" if level == "user" else "accounts"
        acc = _collected(store, g)
        cvals = acc.frame(level) if acc is not None else None
        base_bf = g.loc[g["policy"].str.startswith("acct_"), "backfill"]
        base_variant = f"{baseline}+{base_bf.iloc[0] if len(base_bf) else 'none'}"
        per_variant = {}
        for _, r in g.iterrows():
            stats = store.read_run_json(str(r["key"]), "stats.json")
            per_variant[r["variant"]] = stats.get(tab, {})
        base = per_variant.get(base_variant, {})
        for variant, entries in per_variant.items():
            for name, e in entries.items():
                row = {"dataset": ds, "window": win, "seed": int(seed), "variant": variant, "level": level,
                       "entry": name, "jobs": e.get("jobs"), "wait_mean_s": e.get("wait_mean_s"),
                       "bsld_mean": e.get("bsld_mean"), "energy_j": e.get("energy_j"),
                       "node_seconds": e.get("node_seconds"), "baseline": base_variant}
                b = base.get(name, {}).get("wait_mean_s")
                row["wait_delta_s"] = (e["wait_mean_s"] - b) if (b is not None and e.get("wait_mean_s") is not None) \
                    else np.nan
                if cvals is not None and name in cvals.index:
                    c = cvals.loc[name]
                    for k in ("avg_power_w", "edp_js", "ed2p_js2", "fugaku_points", "node_seconds", "energy_j"):
                        row[f"c_{k}"] = c[k]
                rows.append(row)
    return pd.DataFrame(rows)


def incentive_report(results: str | os.PathLike, out: str | os.PathLike | None = None,
                     baseline: str = "fcfs") -> Path:
    """Write ``report/incentives.html`` (+ PNGs, CSV) for a sweep's results folder; returns its path.

    ``baseline``: the policy whose per-entry waits the others are compared with (its backfill is
    that of the incentive runs). Raises FileNotFoundError when the folder holds no sweep.
    """
    plt = pyplot()
    root = Path(results)
    store = ResultStore(root)
    runs = _runs(store)
    outdir = Path(out) if out is not None else root / "report"
    outdir.mkdir(parents=True, exist_ok=True)
    ent = entry_outcomes(root, baseline)
    atomic_write_text(outdir / "incentives_entries.csv", ent.to_csv(index=False))
    datasets = store.read_json("datasets.json") if store.has("datasets.json") else {}
    parts = [f"<h1>Incentive study: who gains and who pays</h1>"
             f"<p>Results: <code>{html.escape(str(root.resolve()))}</code>. Baseline: <b>{html.escape(baseline)}</b> "
             "with the incentive runs' backfill. Mean waits are over each entry's jobs that finished in the window "
             "(completed or killed at their time limit); changes are per entry against the baseline run of the same "
             "window and seed, averaged over seeds. Collected values come from the window's replay "
             "(the collection run). Power is facility input power; labelled <i>assumed</i> when the system's power "
             "parameters are those of comparable hardware.</p>"]
    seed0 = int(runs["seed"].min())
    for (ds, win), g in runs.groupby(["dataset", "window"], sort=True):
        gs = g[g["seed"] == seed0]
        variants = list(dict.fromkeys(["replay"] + sorted(v for v in gs["variant"] if v.startswith(baseline + "+"))
                                      + sorted(v for v in gs["variant"] if v != "replay" and not v.startswith(baseline + "+"))))
        variants = [v for v in variants if v in set(gs["variant"])]
        assumed = "assumed" in set(gs.get("power_label", pd.Series(dtype=str)).astype(str))
        level = _level(g)
        parts.append(f"<h2>{html.escape(str(ds))} / {html.escape(str(win))}</h2>")
        # -- timelines side by side
        tls = {}
        for v in variants:
            key = gs.loc[gs["variant"] == v, "key"].iloc[0]
            tls[v] = store.read_run_table(str(key), "timeline.parquet", columns=["time", "facility_power_w"])
        if tls:
            t0 = min(int(t["time"].iloc[0]) for t in tls.values() if len(t))
            ncol = min(4, len(variants))
            nrow = int(np.ceil(len(variants) / ncol))
            fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.6 * nrow), sharex=True, sharey=True,
                                     squeeze=False)
            base_v = next((v for v in variants if v.startswith(baseline + "+")), None)
            for i, v in enumerate(variants):
                ax = axes[i // ncol][i % ncol]
                if base_v is not None and v != base_v:
                    bt = tls[base_v]
                    ax.plot((bt["time"] - t0) / 3600, bt["facility_power_w"] / 1e3, color="0.75", lw=0.8,
                            drawstyle="steps-post", label=base_v)
                t = tls[v]
                ax.plot((t["time"] - t0) / 3600, t["facility_power_w"] / 1e3, lw=0.9, drawstyle="steps-post",
                        color="C3" if v.startswith("acct_") else ("C0" if v == "replay" else "C2"), label=v)
                ax.set_title(v, fontsize=9)
                ax.grid(alpha=0.3)
                if i % ncol == 0:
                    ax.set_ylabel("facility power [kW]" + (" (assumed)" if assumed else ""), fontsize=8)
                if i // ncol == nrow - 1:
                    ax.set_xlabel("hours since window start", fontsize=8)
            for j in range(len(variants), nrow * ncol):
                axes[j // ncol][j % ncol].set_visible(False)
            fig.suptitle(f"{ds} / {win}, seed {seed0}: facility power by policy (grey: {base_v})", fontsize=10)
            fig.tight_layout()
            name = f"incentives_timelines_{ds}_{win}.png"
            parts.append(f"<img src='data:image/png;base64,{_png(fig, outdir / name)}' alt='{html.escape(name)}'>")
        # -- summary per variant
        e = ent[(ent["dataset"] == ds) & (ent["window"] == win)]
        if e.empty:
            continue
        summ = []
        for v in variants:
            ev = e[e["variant"] == v]
            d = ev.groupby("entry")["wait_delta_s"].mean().dropna()
            sv = g[g["variant"] == v]
            summ.append({"variant": v, "entries finished": int(ev["entry"].nunique()),
                         "mean wait [h]": sv["wait_mean_s"].mean() / 3600,
                         "peak power [kW]": sv["peak_power_w"].mean() / 1e3,
                         "p95 15-min ramp [kW]": sv["ramp_15min_p95_w"].mean() / 1e3 if "ramp_15min_p95_w" in sv else np.nan,
                         "energy [MWh]": sv["facility_energy_j"].mean() / 3.6e9,
                         f"{level}s waiting less": int((d < 0).sum()), f"{level}s waiting more": int((d > 0).sum())})
        parts.append(f"<h3>Per policy (mean over seeds)</h3>" + pd.DataFrame(summ).to_html(
            index=False, float_format=lambda x: f"{x:,.2f}", border=0))
        # -- who gains, who pays
        inc = [v for v in variants if v.split("+")[0] in POLICY_QUANTITY]
        if inc and f"c_node_seconds" in e.columns:
            ncol = min(3, len(inc))
            nrow = int(np.ceil(len(inc) / ncol))
            fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
            for i, v in enumerate(inc):
                ax = axes[i // ncol][i % ncol]
                qty, label, higher_first, logx = POLICY_QUANTITY[v.split("+")[0]]
                ev = e[e["variant"] == v].groupby("entry").agg(
                    d=("wait_delta_s", "mean"), x=(f"c_{qty}", "first"), ns=("c_node_seconds", "first")).dropna()
                if ev.empty:
                    ax.set_visible(False)
                    continue
                size = 8 + 120 * np.sqrt(ev["ns"] / max(ev["ns"].max(), 1))
                colors = np.where(ev["d"] < 0, "C2", "C3")
                ax.scatter(ev["x"], ev["d"] / 3600, s=size, c=colors, alpha=0.6, edgecolors="none")
                ax.axhline(0, color="0.4", lw=0.8)
                if logx and (ev["x"] > 0).all():
                    ax.set_xscale("log")
                ax.set_xlabel(f"collected {label}" + (" — higher first" if higher_first else " — lower first"),
                              fontsize=8)
                ax.set_ylabel(f"Δ mean wait vs {baseline} [h]", fontsize=8)
                ax.set_title(v, fontsize=9)
                ax.grid(alpha=0.3)
            for j in range(len(inc), nrow * ncol):
                axes[j // ncol][j % ncol].set_visible(False)
            fig.suptitle(f"{ds} / {win}: change of each {level}'s mean wait (green gains, red pays; "
                         "size ∝ collected node-hours)", fontsize=10)
            fig.tight_layout()
            name = f"incentives_gains_{ds}_{win}.png"
            parts.append(f"<h3>Who gains, who pays</h3><img src='data:image/png;base64,{_png(fig, outdir / name)}' "
                         f"alt='{html.escape(name)}'>")
            for v in inc:
                qty = POLICY_QUANTITY[v.split("+")[0]][0]
                ev = e[e["variant"] == v].groupby("entry").agg(
                    jobs=("jobs", "mean"), wait_h=("wait_mean_s", lambda s: s.mean() / 3600),
                    delta_h=("wait_delta_s", lambda s: s.mean() / 3600),
                    energy_kwh=("energy_j", lambda s: s.mean() / 3.6e6),
                    collected=(f"c_{qty}", "first")).dropna(subset=["delta_h"]).sort_values("delta_h")
                if ev.empty:
                    continue
                ev = ev.rename(columns={"collected": f"collected {qty}", "wait_h": "mean wait [h]",
                                        "delta_h": f"Δ wait vs {baseline} [h]", "energy_kwh": "energy [kWh]"})
                top = pd.concat([ev.head(5), ev.tail(5)]).drop_duplicates()
                parts.append(f"<h4>{html.escape(v)}: five largest gainers and payers ({level})</h4>"
                             + top.to_html(float_format=lambda x: f"{x:,.3g}", border=0))
    css = ("body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em}"
           "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid #ddd;"
           "text-align:right}img{max-width:100%}")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>Incentive study</title><style>{css}</style>"
            f"</head><body>{''.join(parts)}</body></html>")
    path = outdir / "incentives.html"
    atomic_write_text(path, page)
    return path
