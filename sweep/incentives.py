"""The incentive-study report: who gains and who pays under each account-incentive policy.

``twinsweep incentives RESULTS`` (or :func:`incentive_report`) reads a sweep's results folder
(e.g. of ``studies/incentives.toml``) and writes ``report/incentives.html`` with:

* the facility power timelines of every policy **side by side** (one panel per policy, shared
  axes; the baseline in grey in every panel), per dataset and window, for the smallest seed;
* per-entry outcomes (users or accounts, as the runs' ``options.acct_level``): jobs queued,
  finished and not finished, the mean wait of every job the entry queued (a job still waiting at
  the window end with its wait so far: the same jobs in every variant, so an entry whose jobs stop
  finishing is counted as paying, not dropped) and of its finished jobs, energy, and the change
  against the baseline policy (default ``fcfs``, with each run's own backfill), averaged
  over seeds;
* for each incentive policy a scatter of that change against the quantity the policy ranks by
  (the entry's average power, EDP, ED²P or Fugaku points from the collection replay), point size
  ∝ the entry's collected node-hours, and the five largest gainers and payers;
* ``incentives_entries.csv`` (long table) and the PNGs next to the page.

The collection values are those each incentive run prioritised by, as its manifest records them
(``accounts.in`` and ``accounts.checksum``): the window's ``replay`` run for ``collect:replay``;
for ``collect:replay:prev`` (the preceding window) or a file, the collection made again as the
run made it. Values whose checksum differs from the recorded one are never shown (the page says
why); entries the collection does not hold (their jobs got the neutral value) are listed.
"""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from twinsweep.core.accounts import Accounts, account_names, load_accounts
from twinsweep.core.atomic import atomic_write_bytes, atomic_write_text
from twinsweep.core.config import RunConfig
from twinsweep.core.metrics import account_metric
from twinsweep.core.run import load_run_inputs, run_accounts_input
from twinsweep.core.stats import censored_waits

from .plotting import pyplot
from .spec import study_axes
from .store import ResultStore
from .variants import variant_columns, variant_labels

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


def _runs(store: ResultStore) -> tuple[pd.DataFrame, list[str]]:
    """The runs table with its ``variant`` label, and the grid axes besides policy and backfill
    that are part of the label (:func:`sweep.variants.variant_columns`: those that vary, e.g. two
    ``options.accounts_in`` values), so that two variants never share one. The labels are the
    report's, except that a ``replay`` run's leaves out the backfill it ignores."""
    runs = store.read_table()
    if "policy" not in runs.columns:
        raise FileNotFoundError(f"{store.table_path}: no 'policy' column")
    if "backfill" not in runs.columns:
        runs["backfill"] = "none"
    axes = study_axes(store.read_json("study.json")) if store.has("study.json") else []
    other = [a for a in variant_columns(runs, axes) if a not in ("policy", "backfill")]
    runs["variant"] = variant_labels(runs, ["policy", "backfill", *other], replay_alone=True)
    return runs, other


def _level(g: pd.DataFrame) -> str:
    col = "options.acct_level"
    if col in g.columns:
        vals = [v for v in g[col].dropna().unique() if v in ("account", "user")]
        if vals:
            return str(vals[0])
    return "account"


def _accounts_entry(manifest: dict) -> dict | None:
    """``manifest["accounts"]`` of a run (None when it used no accounts)."""
    acc = manifest.get("accounts")
    return acc if isinstance(acc, dict) else None


def _collected(store: ResultStore, g: pd.DataFrame, manifests: dict[str, dict], key: str | None = None,
               cache: dict | None = None) -> tuple[Accounts | None, str]:
    """The accounts table the run ``key`` of group ``g`` (one dataset, window and seed) prioritised
    by, as its manifest (``manifests[key]``) records it (``accounts.in`` and ``accounts.checksum``);
    without ``key``, that of the group's first run that used accounts. Returns
    ``(accounts or None, note)``.

    ``collect:replay``: the group's own replay run (the same window, seed and perturbation), when
    its sums have the recorded checksum; otherwise (``collect:replay:prev``: the preceding window;
    a file) the collection is made again as the run made it (:func:`core.run.run_accounts_input`)
    and must give the recorded checksum. A collection that cannot be reproduced is None with the
    reason, never another window's values."""
    cache = {} if cache is None else cache
    if key is None:
        key = next((str(k) for k in g["key"] if _accounts_entry(manifests[str(k)]) is not None), None)
    man = manifests[str(key)] if key is not None else {}
    entry, config = _accounts_entry(man), man.get("config")
    if entry is None:  # older results: the replay of the group (collect:replay), else a named file
        rep = g[g["policy"] == "replay"]
        if not rep.empty:
            return load_accounts(store.run_dir(str(rep["key"].iloc[0]))), "the window's replay"
        col = "options.accounts_in"
        if col in g.columns:
            for v in g[col].dropna().unique():
                if not str(v).startswith("collect:") and Path(str(v)).exists():
                    return load_accounts(str(v)), str(v)
        return None, "no run of this window used accounts"
    want, spec = entry.get("checksum"), str(entry.get("in"))
    if want in cache:
        return cache[want]
    found: tuple[Accounts | None, str] = (None, "")
    rep = g[g["policy"] == "replay"]
    if spec == "collect:replay" and not rep.empty:
        acc = load_accounts(store.run_dir(str(rep["key"].iloc[0])))
        if acc.checksum() == want:
            found = (acc, "the window's replay (collect:replay)")
    if found[0] is None:
        try:
            cfg = RunConfig.from_dict(config)
            acc, _ = run_accounts_input(cfg, *load_run_inputs(cfg))
            found = (acc, spec) if acc.checksum() == want else (
                None, f"{spec}: collected again, the sums differ from those the runs used (checksum "
                      f"{acc.checksum()} != {want})")
        except Exception as exc:  # noqa: BLE001 - the report says why the values are missing
            found = (None, f"{spec}: cannot collect again ({type(exc).__name__}: {exc})")
    cache[want] = found
    return found


def _entry_jobs(jobs: pd.DataFrame, t1: int | None, level: str) -> pd.DataFrame:
    """Per entry (index ``entry``: the ``account`` or ``user`` name as ``level`` says, missing as
    ``"unknown"``) of one run's jobs (jobs.parquet; ``t1``: its window end, s, from the manifest):
    ``queued_jobs`` (jobs that queued in the run: started after queueing, or still queued at the
    window end; jobs running at the window start, rejected and never-run jobs left out),
    ``unfinished`` (of those, still queued or running at the end) and ``wait_censored_mean_s``
    (their mean wait, a job still queued counting its wait so far, window end − submit: the
    per-entry form of stats.json's ``wait_censored_mean_s``, by :func:`core.stats.censored_waits`)."""
    col = "account" if level == "account" else "user"
    wait = censored_waits(jobs, t1)
    keep = ~np.isnan(wait)
    names = np.asarray(account_names(jobs[col] if col in jobs.columns else None, len(jobs)), dtype=object)
    unfinished = jobs["status"].isin(["queued", "running"]).to_numpy(dtype=bool)
    df = pd.DataFrame({"entry": names[keep], "w": wait[keep], "u": unfinished[keep]})
    if df.empty:
        return pd.DataFrame(columns=["queued_jobs", "unfinished", "wait_censored_mean_s"]).rename_axis("entry")
    return df.groupby("entry").agg(queued_jobs=("w", "size"), unfinished=("u", "sum"),
                                   wait_censored_mean_s=("w", "mean"))


#: Per-entry figures of a run (:func:`_run_entries`), as float64 (NaN where undefined).
_ENTRY_FIGURES = ("jobs", "wait_mean_s", "bsld_mean", "energy_j", "node_seconds", "queued_jobs", "unfinished",
                  "wait_censored_mean_s")
#: Collected values shown beside each entry (``c_<name>`` columns of :func:`entry_outcomes`).
_COLLECTED = ("avg_power_w", "edp_js", "ed2p_js2", "fugaku_points", "node_seconds", "energy_j")


def _run_entries(store: ResultStore, key: str, manifest: dict, level: str) -> pd.DataFrame:
    """One run's per-entry figures (:data:`_ENTRY_FIGURES`; index ``entry``): its stats.json
    ``users`` / ``accounts`` (finished jobs) beside :func:`_entry_jobs` of its jobs.parquet, one
    row per entry in either."""
    stats = store.read_run_json(key, "stats.json").get("users" if level == "user" else "accounts", {})
    jobs = _entry_jobs(store.read_run_table(key, "jobs.parquet"), (manifest.get("window") or {}).get("end"), level)
    both = pd.DataFrame.from_dict(stats, orient="index").join(jobs, how="outer") if stats else jobs
    return pd.DataFrame({c: pd.to_numeric(both[c], errors="coerce").astype("float64") if c in both.columns
                         else np.nan for c in _ENTRY_FIGURES}, index=both.index.astype(str)).rename_axis("entry")


def _baseline_keys(g: pd.DataFrame, axes: list[str], baseline: str) -> pd.Series:
    """For each run of group ``g`` (one dataset, window and seed; index aligned with ``g``), the key
    of its baseline run (None when the group has none): a run of policy ``baseline``, of those
    the one with the run's own backfill where any has it (``acct_edp+firstfit`` against
    ``fcfs+firstfit``, not against the baseline of another backfill), then the one that shares the
    run's value of the first axis of ``axes`` where any does, then of the next axis among those,
    and so on; among baseline runs equal on all of that (a run whose backfill no baseline run has,
    e.g. replay), the one with the backfill of the group's first incentive (``acct_*``) run, then
    the first in ``g``'s order."""
    inc_bf = g.loc[g["policy"].astype(str).str.startswith("acct_"), "backfill"]
    base_bf = str(inc_bf.iloc[0]) if len(inc_bf) else "none"
    keyed = ["backfill", *[a for a in axes if a != "backfill"]]
    vals = {a: g[a].astype(str).tolist() for a in keyed}  # the group's rows in order, by axis
    where = np.flatnonzero((g["policy"] == baseline).to_numpy()).tolist()  # the baseline runs, in g's order

    def narrowed(row: int) -> str | None:
        keep = where
        for a in keyed:  # narrow axis by axis, keeping all when none shares the run's value
            same = [c for c in keep if vals[a][c] == vals[a][row]]
            keep = same or keep
        pref = [c for c in keep if vals["backfill"][c] == base_bf]
        return str(g["key"].iloc[(pref or keep)[0]]) if keep else None

    return pd.Series([narrowed(r) for r in range(len(g))], index=g.index, dtype=object)


def entry_outcomes(root: str | os.PathLike, baseline: str = "fcfs") -> pd.DataFrame:
    """Long table: one row per (dataset, window, seed, variant, entry) for every entry that queued a
    job or finished one in that run or in the baseline run, with

    * ``jobs``, ``wait_mean_s``, ``bsld_mean``, ``energy_j``, ``node_seconds``: the entry's finished
      jobs (stats.json ``users`` / ``accounts``; ``jobs`` 0 and the others NaN when none finished);
    * ``queued_jobs``, ``unfinished``, ``wait_censored_mean_s``: every job of the entry that queued
      in the run, those still waiting at the window end with their wait so far
      (:func:`_entry_jobs`) — the same jobs in every variant of a window and seed, so that an entry
      whose jobs no longer finish is seen paying, not dropped;
    * ``wait_delta_s`` / ``wait_censored_delta_s``: minus the baseline variant's value for the same
      entry (the baseline run of the same window, seed, backfill and other axes; NaN when either
      is undefined);
    * the collected ``c_*`` values the run prioritised by (avg power, EDP, ED²P, Fugaku points,
      node-seconds, energy; NaN for an entry the collection does not hold: such an entry's jobs got
      the neutral value) and ``collected_from`` (where they come from, or why they are missing).

    Rows are by dataset, window and seed, then in the runs table's order, then by entry name.
    Reads each run's manifest, stats.json and jobs.parquet once.
    """
    store = ResultStore(root)
    runs, axes = _runs(store)
    return _entry_outcomes(store, runs, axes, baseline)


_OUTCOME_COLUMNS = ("dataset", "window", "seed", "variant", "level", "entry", "jobs", "wait_mean_s", "bsld_mean",
                    "energy_j", "node_seconds", "queued_jobs", "unfinished", "wait_censored_mean_s", "baseline",
                    "wait_delta_s", "wait_censored_delta_s", "collected_from", *(f"c_{k}" for k in _COLLECTED))


def _entry_outcomes(store: ResultStore, runs: pd.DataFrame, axes: list[str], baseline: str) -> pd.DataFrame:
    """:func:`entry_outcomes` of the runs table ``runs`` (with its ``variant`` labels) and its
    other variant ``axes`` (:func:`_runs`)."""
    manifests = {str(k): store.read_run_json(str(k), "manifest.json") for k in runs["key"]}
    parts = []
    cache: dict = {}
    for (ds, win, seed), g in runs.groupby(["dataset", "window", "seed"], sort=True):
        level = _level(g)
        keys = g["key"].astype(str).to_numpy(dtype=object)
        figs = pd.concat({k: _run_entries(store, k, manifests[k], level) for k in keys}, names=["key", "entry"])
        figs = figs.reset_index()
        default_acc = _collected(store, g, manifests, cache=cache)
        collected, sources = [], {}
        for k in keys:
            acc, sources[k] = _collected(store, g, manifests, k, cache) if _accounts_entry(manifests[k]) \
                else default_acc
            if acc is not None:
                collected.append(acc.frame(level)[list(_COLLECTED)].add_prefix("c_").rename_axis("entry")
                                 .reset_index().assign(key=k))
        # the runs of the group in their order, each with its baseline run's key and variant
        order = pd.DataFrame({"key": keys, "variant": g["variant"].to_numpy(dtype=object),
                              "base": _baseline_keys(g, axes, baseline).to_numpy(dtype=object)})
        order["baseline"] = order["base"].map(dict(zip(order["key"], order["variant"]))).astype(object) \
            .where(order["base"].notna(), None)
        order["_pos"] = np.arange(len(order))
        # every entry of a run or of its baseline run, by name
        names = pd.concat([order[["_pos", "key"]].merge(figs[["key", "entry"]], on="key")[["_pos", "entry"]],
                           order[["_pos", "base"]].merge(figs[["key", "entry"]], left_on="base", right_on="key")
                           [["_pos", "entry"]]])
        rows = names.drop_duplicates().sort_values(["_pos", "entry"], kind="mergesort").merge(order, on="_pos")
        rows = rows.merge(figs, on=["key", "entry"], how="left")
        base = figs[["key", "entry", "wait_mean_s", "wait_censored_mean_s"]].rename(columns={"key": "base"})
        rows = rows.merge(base, on=["base", "entry"], how="left", suffixes=("", "_base"))
        for c in ("wait_mean_s", "wait_censored_mean_s"):
            rows[c.replace("mean_s", "delta_s")] = rows[c] - rows[f"{c}_base"]
        rows["collected_from"] = rows["key"].map(sources)
        cvals = pd.concat(collected) if collected else pd.DataFrame(columns=["key", "entry"])
        rows = rows.merge(cvals, on=["key", "entry"], how="left")
        for c in ("jobs", "queued_jobs", "unfinished"):
            rows[c] = rows[c].fillna(0).astype("int64")
        rows = rows.assign(dataset=ds, window=win, seed=int(seed), level=level)
        parts.append(rows.reindex(columns=list(_OUTCOME_COLUMNS)))
    if not parts:
        return pd.DataFrame(columns=list(_OUTCOME_COLUMNS))
    out = pd.concat(parts, ignore_index=True)
    for c in _COLLECTED:
        out[f"c_{c}"] = pd.to_numeric(out[f"c_{c}"], errors="coerce").astype("float64")
    return out


def incentive_report(results: str | os.PathLike, out: str | os.PathLike | None = None,
                     baseline: str = "fcfs") -> Path:
    """Write ``report/incentives.html`` (+ PNGs, CSV) for a sweep's results folder; returns its path.

    ``baseline``: the policy whose per-entry waits the others are compared with (each run against
    the baseline run of its own backfill, :func:`_baseline_keys`). Raises FileNotFoundError when
    the folder holds no sweep.
    """
    plt = pyplot()
    root = Path(results)
    store = ResultStore(root)
    runs, other_axes = _runs(store)
    outdir = Path(out) if out is not None else root / "report"
    outdir.mkdir(parents=True, exist_ok=True)
    ent = _entry_outcomes(store, runs, other_axes, baseline)
    atomic_write_text(outdir / "incentives_entries.csv", ent.to_csv(index=False))
    datasets = store.read_json("datasets.json") if store.has("datasets.json") else {}
    parts = [f"<h1>Incentive study: who gains and who pays</h1>"
             f"<p>Results: <code>{html.escape(str(root.resolve()))}</code>. Baseline: <b>{html.escape(baseline)}</b> "
             "with each run's own backfill (the incentive runs' backfill for a run of a backfill it was not run with). Mean waits are over each entry's jobs that finished in the window "
             "(completed or killed at their time limit); changes are per entry against the baseline run of the same "
             "window and seed, averaged over seeds. Collected values are those the incentive runs prioritised by "
             "(the collection each run's manifest records, checked by its checksum). Power is facility input power; labelled <i>assumed</i> when the system's power "
             "parameters are those of comparable hardware. Who waits less or more is judged on the mean wait of "
             "<i>every</i> job the entry queued in the window (the same jobs in every variant; a job still waiting at "
             "the window end counts with its wait so far), so that an entry whose jobs stop finishing under an "
             "incentive counts as paying instead of dropping out of a mean over finished jobs.</p>"]
    seed0 = int(runs["seed"].min())
    for (ds, win), g in runs.groupby(["dataset", "window"], sort=True):
        gs = g[g["seed"] == seed0]
        # the recorded schedule first, then the baseline's variants, then the others (labels may
        # carry other axes: replay+kill=True)
        pol_of = dict(zip(gs["variant"], gs["policy"].astype(str)))
        variants = sorted(pol_of, key=lambda v: (pol_of[v] != "replay", pol_of[v] != baseline, v))
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
            # each panel's grey line: the baseline run its entries are compared with (_baseline_keys)
            e0 = ent[(ent["dataset"] == ds) & (ent["window"] == win) & (ent["seed"] == seed0)]
            base_of = {v: b for v, b in zip(e0["variant"], e0["baseline"]) if isinstance(b, str) and b in tls}
            bases = sorted(set(base_of.values()))
            for i, v in enumerate(variants):
                ax = axes[i // ncol][i % ncol]
                base_v = base_of.get(v)
                if base_v is not None and v != base_v:
                    bt = tls[base_v]
                    ax.plot((bt["time"] - t0) / 3600, bt["facility_power_w"] / 1e3, color="0.75", lw=0.8,
                            drawstyle="steps-post", label=base_v)
                t = tls[v]
                ax.plot((t["time"] - t0) / 3600, t["facility_power_w"] / 1e3, lw=0.9, drawstyle="steps-post",
                        color="C3" if pol_of[v].startswith("acct_") else ("C0" if pol_of[v] == "replay" else "C2"),
                        label=v)
                ax.set_ylim(bottom=0)  # power from zero, as the sweep report draws it: a 1 % change is not magnified
                ax.set_title(v, fontsize=9)
                ax.grid(alpha=0.3)
                if i % ncol == 0:
                    ax.set_ylabel("facility power [kW]" + (" (assumed)" if assumed else ""), fontsize=8)
                if i // ncol == nrow - 1:
                    ax.set_xlabel("hours since window start", fontsize=8)
            for j in range(len(variants), nrow * ncol):
                axes[j // ncol][j % ncol].set_visible(False)
            grey = bases[0] if len(bases) == 1 else f"each panel's baseline, {baseline} with its backfill"
            fig.suptitle(f"{ds} / {win}, seed {seed0}: facility power by policy"
                         + (f" (grey: {grey})" if bases else ""), fontsize=10)
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
            d = ev.groupby("entry")["wait_censored_delta_s"].mean().dropna()
            sv = g[g["variant"] == v]
            lost = ev.groupby("entry").agg(j=("jobs", "mean"), u=("unfinished", "mean"))
            summ.append({"variant": v, "entries finished": int((ev["jobs"] > 0).groupby(ev["entry"]).any().sum()),
                         "mean wait [h]": sv["wait_mean_s"].mean() / 3600,
                         "mean wait incl. still queued [h]": sv["wait_censored_mean_s"].mean() / 3600
                         if "wait_censored_mean_s" in sv else np.nan,
                         "peak power [kW]": sv["peak_power_w"].mean() / 1e3,
                         "p95 15-min ramp [kW]": sv["ramp_15min_p95_w"].mean() / 1e3 if "ramp_15min_p95_w" in sv else np.nan,
                         "energy [MWh]": sv["facility_energy_j"].mean() / 3.6e9,
                         f"{level}s waiting less": int((d < 0).sum()), f"{level}s waiting more": int((d > 0).sum()),
                         f"{level}s finishing no job": int(((lost["j"] == 0) & (lost["u"] > 0)).sum())})
        parts.append(f"<h3>Per policy (mean over seeds)</h3>" + pd.DataFrame(summ).to_html(
            index=False, float_format=lambda x: f"{x:,.2f}", border=0))
        ei = e[e["variant"].str.split("+").str[0].isin(list(POLICY_QUANTITY))]
        if len(ei):
            srcs = sorted({str(x) for x in ei["collected_from"].dropna()})
            parts.append("<p>Collected values: " + "; ".join(html.escape(x) for x in srcs) + ".</p>")
            nocol = ei[ei["c_node_seconds"].isna() & (ei["queued_jobs"] > 0)].groupby("entry")["queued_jobs"].max()
            if len(nocol):
                parts.append(f"<p>{len(nocol)} {level}(s) with {int(nocol.sum())} queued job(s) have no collected "
                             "value (no finished job in the collection run): the incentive policies gave their jobs "
                             "the neutral value (the collection's mean; 0 Fugaku points): "
                             + html.escape(", ".join(f"{k} ({int(n)})" for k, n in nocol.items())) + ".</p>")
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
                    d=("wait_censored_delta_s", "mean"), x=(f"c_{qty}", "first"),
                    ns=("c_node_seconds", "first")).dropna()
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
                    queued=("queued_jobs", "mean"), jobs=("jobs", "mean"), unfinished=("unfinished", "mean"),
                    cwait_h=("wait_censored_mean_s", lambda s: s.mean() / 3600),
                    delta_h=("wait_censored_delta_s", lambda s: s.mean() / 3600),
                    fdelta_h=("wait_delta_s", lambda s: s.mean() / 3600),
                    energy_kwh=("energy_j", lambda s: s.mean() / 3.6e6),
                    collected=(f"c_{qty}", "first")).dropna(subset=["delta_h"]).sort_values("delta_h")
                if ev.empty:
                    continue
                ev = ev.rename(columns={"collected": f"collected {qty}", "queued": "jobs queued",
                                        "jobs": "jobs finished", "unfinished": "not finished",
                                        "cwait_h": "mean wait, all queued jobs [h]",
                                        "delta_h": f"Δ vs {baseline} [h]",
                                        "fdelta_h": f"Δ wait of finished jobs vs {baseline} [h]",
                                        "energy_kwh": "energy [kWh]"})
                top = pd.concat([ev.head(5), ev.tail(5)])
                top = top[~top.index.duplicated()]  # by entry: two entries with equal figures both stay
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
