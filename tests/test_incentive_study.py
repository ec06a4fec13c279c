"""The two-phase incentive study: collection replay + redeem runs through a sweep, and the
incentive report (sweep/incentives.py); the shipped study specs parse."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from twinsweep.core.accounts import load_accounts

ROOT = Path(__file__).resolve().parents[1]


def _trace(path, n=150, seed=11):
    rng = np.random.default_rng(seed)
    lines = ["; MaxNodes: 16", "; MaxProcs: 16"]
    t = 0
    for i in range(1, n + 1):
        t += int(rng.integers(30, 900))
        run = int(rng.integers(60, 5000))
        procs = int(rng.choice([1, 2, 4, 8]))
        cpu = run * rng.uniform(0.2, 1.0)  # average CPU time per processor: per-job power differs
        lines.append(f"{i} {t} 0 {run} {procs} {cpu:.0f} -1 {procs} {int(run * 1.5)} -1 1 {i % 6} {i % 4} -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def _spec(tmp_path, name: str, window: str, policies: str, options: str) -> Path:
    """An incentive study over the generated trace, one dataset and window, firstfit, the local
    backend; ``window``, ``policies`` and ``options`` (extra [grid] lines) as TOML text."""
    trace = _trace(tmp_path / "tiny.swf")
    spec = tmp_path / "inc.toml"
    spec.write_text(textwrap.dedent(f"""
        [study]
        name = "{name}"
        output = "{tmp_path / 'out'}"
        [[datasets]]
        name = "tiny"
        trace = "{trace}"
        windows = [{window}]
        [grid]
        policy = {policies}
        backfill = ["firstfit"]
    """) + options + textwrap.dedent("""
        [backend]
        name = "local"
        workers = 1
    """))
    return spec


# the generated trace starts every job at its submit (recorded schedule over the machine's 16 nodes) and
# its 1-day window holds idle lead-in and tail: both said in warnings tested elsewhere
@pytest.mark.filterwarnings("ignore::twinsweep.core.run.ReplayOversubscribedWarning")
@pytest.mark.filterwarnings("ignore:dataset 'tiny':RuntimeWarning")
def test_incentive_sweep_and_report(tmp_path):
    from twinsweep.sweep.api import run_sweep
    from twinsweep.sweep.cli import main
    from twinsweep.sweep.incentives import entry_outcomes

    spec = _spec(tmp_path, "inc", '{ name = "all", start = "0d", duration = "1d" }',
                 '["replay", "fcfs", "acct_avg_power", "acct_low_avg_power", "acct_edp", "acct_ed2p", "acct_fugaku_pts"]',
                 '"options.accounts_in" = ["collect:replay"]')
    res = run_sweep(spec, report=False)
    assert res.ran == 7 and not res.failed
    out = tmp_path / "out"
    runs = res.table()
    # each redeem run used exactly the accounts of the replay in the grid (the collection run)
    rep_key = runs.loc[runs["policy"] == "replay", "key"].iloc[0]
    collected = load_accounts(out / "runs" / rep_key)
    import json

    for key in runs.loc[runs["policy"].str.startswith("acct_"), "key"]:
        man = json.loads((out / "runs" / key / "manifest.json").read_text())
        assert man["accounts"]["in"] == "collect:replay"
        assert man["accounts"]["checksum"] == collected.checksum()
    assert main(["incentives", str(out)]) == 0
    page = out / "report" / "incentives.html"
    assert page.exists()
    text = page.read_text()
    assert "who gains" in text.lower() and "acct_fugaku_pts+firstfit" in text
    assert (out / "report" / "incentives_timelines_tiny_all.png").exists()
    ent = entry_outcomes(out)
    assert set(ent["variant"]) == {"replay", "fcfs+firstfit", "acct_avg_power+firstfit", "acct_low_avg_power+firstfit",
                                   "acct_edp+firstfit", "acct_ed2p+firstfit", "acct_fugaku_pts+firstfit"}
    base = ent[ent["variant"] == "fcfs+firstfit"]
    assert (base["wait_delta_s"].fillna(0) == 0).all()
    # collected values are the collection run's
    row = ent[(ent["variant"] == "acct_edp+firstfit")].dropna(subset=["c_edp_js"]).iloc[0]
    assert row["c_edp_js"] == collected.accounts[row["entry"]].edp_js
    assert pd.read_csv(out / "report" / "incentives_entries.csv").shape[0] == len(ent)
    assert main(["incentives", str(tmp_path / "nothing")]) == 2


def test_shipped_specs_parse():
    from twinsweep.sweep.spec import load_spec
    from twinsweep.sweep.tune import load_tune_spec

    inc = load_spec(ROOT / "studies" / "incentives.toml")
    pols = dict(inc.grid)["policy"]
    assert {"replay", "fcfs", "acct_avg_power", "acct_low_avg_power", "acct_edp", "acct_ed2p",
            "acct_fugaku_pts"} == set(pols)
    assert dict(inc.grid)["backfill"] == ("firstfit",)
    tune = load_tune_spec(ROOT / "studies" / "tune-incentives.toml")
    assert tune.sampler_name() == "nsga2" and len(tune.objectives) == 2
    assert tune.test and not set(tune.test) & set(tune.train)


def test_entry_jobs_count_every_job_queued_in_the_window_hand_computed():
    """Per user: jobs that queued in the run (prepopulated, rejected and never-run jobs left out),
    those not finished at the window end, and their mean wait with a still-queued job counting
    window end − submit."""
    from twinsweep.sweep.incentives import _entry_jobs

    jobs = pd.DataFrame({
        "user": ["a", "a", "a", "b", None, "c", "d"],
        "status": ["running", "completed", "queued", "running", "rejected", "not_run", "timeout"],
        "submit_time": [0, 40, 500, 200, 10, 20, 100],
        "start_time": pd.array([5, 100, None, 300, None, None, 100], dtype="Int64"),
        "prepopulated": [True, False, False, False, False, False, False],
    })
    got = _entry_jobs(jobs, 1000, "user")  # window end 1000 s
    assert sorted(got.index) == ["a", "b", "d"]
    a, b, d = got.loc["a"], got.loc["b"], got.loc["d"]
    assert (a["queued_jobs"], a["unfinished"], a["wait_censored_mean_s"]) == (2, 1, (60 + 500) / 2)
    assert (b["queued_jobs"], b["unfinished"], b["wait_censored_mean_s"]) == (1, 1, 100.0)
    assert (d["queued_jobs"], d["unfinished"], d["wait_censored_mean_s"]) == (1, 0, 0.0)


def test_baseline_run_is_narrowed_axis_by_axis_hand_computed():
    """The baseline of each run: a run of policy fcfs with the run's own backfill (k2, fcfs+easy,
    is its own baseline; the firstfit runs' candidates are k4 (y, p), k5 (x, r), k6 (x, q)),
    narrowed to those sharing the run's first axis where any does, then its second among those,
    the first in table order among equals. k1 (x, p): x -> k5, k6; p -> none, keep both -> k5.
    k3 (x, q): k6. k4 (y, p): k4. k7 (z, p): z -> none, keep all; p -> k4. (The baseline's backfill
    used to be the first acct_* run's for every run: acct_*+firstfit and fcfs+easy alike were
    compared with fcfs+firstfit, helper-51.)"""
    from twinsweep.sweep.incentives import _baseline_keys

    g = pd.DataFrame({
        "key": ["k1", "k2", "k3", "k4", "k5", "k6", "k7"],
        "policy": ["replay", "fcfs", "acct_edp", "fcfs", "fcfs", "fcfs", "acct_edp"],
        "backfill": ["firstfit", "easy", "firstfit", "firstfit", "firstfit", "firstfit", "firstfit"],
        "a1": ["x", "x", "x", "y", "x", "x", "z"],
        "a2": ["p", "p", "q", "p", "r", "q", "p"],
    }, index=range(10, 17))
    got = _baseline_keys(g, ["a1", "a2"], "fcfs")
    assert got.index.tolist() == list(range(10, 17))
    assert got.tolist() == ["k5", "k2", "k6", "k4", "k5", "k6", "k4"]
    assert _baseline_keys(g, [], "fcfs").tolist() == ["k4", "k2", "k4", "k4", "k4", "k4", "k4"]  # first of its backfill
    assert _baseline_keys(g, ["a2", "a1"], "fcfs").tolist() == ["k4", "k2", "k6", "k4", "k5", "k6", "k4"]
    assert _baseline_keys(g, ["a1"], "sjf").tolist() == [None] * 7  # no run of the baseline policy


def test_each_backfill_is_compared_with_the_baseline_of_that_backfill():
    """Two backfills: acct_edp+easy against fcfs+easy, acct_edp+firstfit against fcfs+firstfit;
    a run of a backfill no fcfs run has (replay's 'none', acct_edp+conservative) against the fcfs
    run of the first acct_* run's backfill (easy here)."""
    from twinsweep.sweep.incentives import _baseline_keys

    g = pd.DataFrame({"key": ["r", "ae", "af", "fe", "ff", "ac"],
                      "policy": ["replay", "acct_edp", "acct_edp", "fcfs", "fcfs", "acct_edp"],
                      "backfill": ["none", "easy", "firstfit", "easy", "firstfit", "conservative"]})
    assert _baseline_keys(g, [], "fcfs").tolist() == ["fe", "fe", "ff", "fe", "ff", "fe"]


@pytest.mark.filterwarnings("ignore::twinsweep.core.run.ReplayOversubscribedWarning")
@pytest.mark.filterwarnings("ignore:dataset 'tiny':RuntimeWarning")
def test_incentive_report_shows_the_collection_each_run_used(tmp_path):
    """Two collections in one grid (this window's replay, and the preceding window's): the variants
    stay apart, and each shows the values it prioritised by — the preceding window's for
    collect:replay:prev, checked against a replay of that window computed here; every user that
    queued a job appears, with or without finished jobs."""
    import json

    from twinsweep.core.accounts import accounts_of_run
    from twinsweep.core.config import RunConfig
    from twinsweep.core.run import simulate
    from twinsweep.sweep.api import run_sweep
    from twinsweep.sweep.incentives import entry_outcomes

    spec = _spec(tmp_path, "inc2", '{ name = "w", start = "6h", duration = "6h" }', '["replay", "fcfs", "acct_edp"]',
                 '"options.accounts_in" = ["collect:replay", "collect:replay:prev"]\n"options.acct_level" = ["user"]')
    res = run_sweep(spec, report=False)
    assert not res.failed
    out = tmp_path / "out"
    ent = entry_outcomes(out)
    v_now = "acct_edp+firstfit+options.accounts_in=collect:replay"
    v_prev = "acct_edp+firstfit+options.accounts_in=collect:replay:prev"
    assert {v_now, v_prev} <= set(ent["variant"])
    prev = accounts_of_run(simulate(RunConfig(data=str(tmp_path / "tiny.swf"), policy="replay", start=0, duration=6 * 3600)))
    now = accounts_of_run(simulate(RunConfig(data=str(tmp_path / "tiny.swf"), policy="replay", start=6 * 3600, duration=6 * 3600)))
    assert prev.checksum() != now.checksum()
    for v, acc in ((v_prev, prev), (v_now, now)):
        rows = ent[ent["variant"] == v]
        held = rows.dropna(subset=["c_edp_js"])
        assert len(held) and all(r.c_edp_js == acc.users[r.entry].edp_js for r in held.itertuples())
        assert rows.loc[rows["c_edp_js"].isna(), "entry"].map(lambda n: n not in acc.users).all()
    # every user with a job queued in the window is a row of every variant, finished or not
    runs = res.table()
    k = runs.loc[runs["policy"] == "fcfs", "key"].iloc[0]
    jobs = pd.read_parquet(out / "runs" / k / "jobs.parquet")
    queued_users = set(jobs.loc[~jobs["prepopulated"] & jobs["status"].isin(
        ["completed", "timeout", "running", "queued"]), "user"].astype(str))
    assert queued_users <= set(ent.loc[ent["variant"] == v_prev, "entry"])
    man = json.loads((out / "runs" / runs.loc[runs["policy"] == "acct_edp", "key"].iloc[0] / "manifest.json").read_text())
    assert man["accounts"]["in"].startswith("collect:replay")
