"""Exact per-group statistics (runs table) and the pooled job/timeline distributions with Dask:
checked against numpy on the pooled values, and against the runs' own stats.json ramps."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinsweep.core.errors import ConfigError
from twinsweep.core.power import ramps
from twinsweep.sweep.aggregate import STAT_COLUMNS, grouped_exact_stats, group_columns
from twinsweep.sweep.distributions import (DIST_METRICS, JOB_METRICS, QUANTILES_FILE, float_keys, key_values,
                                           plan_partitions, pooled_distributions, run_values)
from test_sweep_support import write_spec

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


# ------------------------------------------------------------------------------ building blocks
@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=60))
def test_float_keys_preserve_order_and_round_trip(xs):
    v = np.asarray(xs, dtype="float64")
    k = float_keys(v)
    assert np.array_equal(key_values(k), v + 0.0)  # -0.0 comes back as +0.0 (equal values, equal keys)
    i, j = np.meshgrid(np.arange(len(v)), np.arange(len(v)))
    assert np.array_equal(k[i] < k[j], v[i] < v[j])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.one_of(finite, st.just(float("nan")),
                                                       st.sampled_from([0.0, 1.0, -2.5]))), max_size=80))
def test_grouped_exact_stats_equal_numpy_per_group(pairs):
    codes = np.asarray([p[0] for p in pairs], dtype="int64")
    vals = np.asarray([p[1] for p in pairs], dtype="float64")
    s = grouped_exact_stats(codes, vals, 6)  # group 5 is always empty
    for g in range(6):
        v = vals[(codes == g) & ~np.isnan(vals)]
        assert s["n"][g] == len(v)
        if len(v) == 0:
            assert all(np.isnan(s[k][g]) for k in STAT_COLUMNS if k != "n")
            continue
        assert s["min"][g] == v.min() and s["max"][g] == v.max()
        for k, q in (("median", 0.5), ("q05", 0.05), ("q25", 0.25), ("q75", 0.75), ("q95", 0.95)):
            assert s[k][g] == np.quantile(v, q)  # bit for bit
        if np.isfinite(v).all() and np.abs(v).max() < 1e150:
            assert s["mean"][g] == pytest.approx(v.mean(), rel=1e-12, abs=1e-300)
            if len(v) > 1:
                assert s["std"][g] == pytest.approx(v.std(ddof=1), rel=1e-9, abs=1e-300)
        if len(v) == 1:
            assert np.isnan(s["std"][g])


def test_plan_partitions_bounds_each_partition():
    est = np.array([5, 5, 5, 20, 1, 1, 1])
    parts = plan_partitions(est, 10)
    assert parts == [(0, 2), (2, 3), (3, 4), (4, 7)]  # a run above the bound is a partition of its own
    assert plan_partitions(np.zeros(0, "int64"), 10) == []


# ------------------------------------------------------------------------------ a real small sweep
@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    from twinsweep.sweep.api import run_sweep

    tmp = tmp_path_factory.mktemp("dist")
    spec = write_spec(tmp, seeds=3, n_jobs=60, policies=("fcfs", "sjf"), backfills=("none", "easy"))
    res = run_sweep(spec, workers=1, report=False)
    assert not res.failed
    return res.out


def _pooled(root) -> dict:
    """Variant -> metric -> pooled values, computed run by run with plain numpy."""
    runs = pd.read_parquet(root / "runs.parquet")
    g = group_columns(root, runs)
    out = {}
    for key, grp in runs.groupby(g):
        key = tuple(str(k) for k in key)
        out[key] = {m: [] for m in DIST_METRICS}
        for k in grp["key"]:
            rv = run_values(root / "runs" / k)
            for m in DIST_METRICS:
                if rv[m][0] is not None:
                    out[key][m].append(rv[m][0])
    return {k: {m: np.concatenate(v) if v else np.zeros(0) for m, v in d.items()} for k, d in out.items()}, g


@pytest.mark.parametrize("kw", [
    {"scheduler": "inline"},
    # several partitions, tiny collection budget: every refinement level of the selection runs
    {"scheduler": "threads", "partition_values": 1_500, "collect_values": 100},
    {"scheduler": "synchronous", "partition_values": 2_000, "collect_values": 7},
])
def test_pooled_distributions_equal_numpy_on_pooled_values(sweep_dir, kw):
    path = pooled_distributions(sweep_dir, **kw)
    summ = pd.read_parquet(path)
    qt = pd.read_parquet(sweep_dir / QUANTILES_FILE)
    pooled, g = _pooled(sweep_dir)
    assert len(summ) == len(pooled) * len(DIST_METRICS)
    for key, per_metric in pooled.items():
        sel = summ
        qsel = qt
        for c, v in zip(g, key):
            sel, qsel = sel[sel[c] == v], qsel[qsel[c] == v]
        for m, v in per_metric.items():
            r = sel[sel["metric"] == m].iloc[0]
            assert r["runs"] == 3 and r["runs_skipped"] == 0
            v = v[~np.isnan(v)]
            assert r["n"] == len(v) > 0
            for k, q in (("min", 0), ("q05", 0.05), ("q25", 0.25), ("median", 0.5), ("q75", 0.75), ("q95", 0.95),
                         ("max", 1)):
                assert r[k] == np.quantile(v, q), (key, m, k)
            assert r["mean"] == pytest.approx(v.mean(), rel=1e-12)
            assert r["std"] == pytest.approx(v.std(ddof=1), rel=1e-9)
            qm = qsel[qsel["metric"] == m]
            assert np.array_equal(qm["value"].to_numpy(), np.quantile(v, qm["q"].to_numpy()))


def test_pooled_swings_and_edp_match_the_runs_stats(sweep_dir):
    """Independent check: per run, the largest 1-/15-min swing is stats.json's ramp (core.power.ramps
    on the step function) and the job EDPs sum to job_edp_sum_js."""
    for d in sorted((sweep_dir / "runs").iterdir())[:4]:
        stats = json.loads((d / "stats.json").read_text())["system"]
        rv = run_values(d)
        assert rv["power_swing_1min_w"][0].max() == pytest.approx(stats["ramp_1min_max_w"], rel=1e-9, abs=1e-6)
        assert np.percentile(rv["power_swing_1min_w"][0], 95) == pytest.approx(stats["ramp_1min_p95_w"], rel=1e-9,
                                                                             abs=1e-6)
        assert np.nansum(rv["job_edp_js"][0]) == pytest.approx(stats["job_edp_sum_js"], rel=1e-12)
        w = rv["wait_s"][0]
        assert w.mean() == pytest.approx(stats["wait_mean_s"], rel=1e-12)
        tl = pd.read_parquet(d / "timeline.parquet")
        t0, t1 = int(tl["time"].iloc[0]), int(tl["time"].iloc[0]) + 60 * len(tl)
        assert rv["power_swing_15min_w"][0].max(initial=0.0) == pytest.approx(
            ramps(tl["time"].to_numpy(), tl["facility_power_w"].to_numpy(), t0, t1, 900)[0], rel=1e-9, abs=1e-6)


def test_job_metrics_only_and_a_dask_cluster_address(sweep_dir):
    distributed = pytest.importorskip("distributed")
    ref = pd.read_parquet(pooled_distributions(sweep_dir, scheduler="inline", metrics=JOB_METRICS))
    assert set(ref["metric"]) == set(JOB_METRICS)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as lc:
        got = pd.read_parquet(pooled_distributions(sweep_dir, address=lc.scheduler_address, metrics=JOB_METRICS,
                                                   partition_values=500))
    pd.testing.assert_frame_equal(got.drop(columns=["mean", "std"]), ref.drop(columns=["mean", "std"]))
    assert np.allclose(got["std"], ref["std"], rtol=1e-9, equal_nan=True)


def test_a_sample_period_that_does_not_divide_the_window_is_counted(tmp_path):
    from twinsweep.sweep.api import run_sweep

    spec = write_spec(tmp_path, seeds=2, policies=("fcfs",), backfills=("easy",))
    spec.write_text(spec.read_text().replace('sample_period = ["60s"]', 'sample_period = ["7m"]'))
    res = run_sweep(spec, workers=1, report=False)
    summ = pd.read_parquet(pooled_distributions(res.out))
    sw = summ[summ["metric"] == "power_swing_1min_w"].iloc[0]
    assert sw["runs"] == 0 and sw["runs_skipped"] == 2 and sw["n"] == 0 and np.isnan(sw["median"])
    assert summ[summ["metric"] == "wait_s"].iloc[0]["runs"] == 2


def test_bad_input_is_named(sweep_dir, tmp_path):
    with pytest.raises(ConfigError, match="unknown Dask scheduler"):
        pooled_distributions(sweep_dir, scheduler="gpu")
    with pytest.raises(ConfigError, match="needs the address"):
        pooled_distributions(sweep_dir, scheduler="distributed")
    with pytest.raises(ValueError, match="unknown distribution metric"):
        pooled_distributions(sweep_dir, metrics=["wait"])
    import shutil

    broken = tmp_path / "copy"
    shutil.copytree(sweep_dir, broken)
    victim = sorted((broken / "runs").iterdir())[0] / "jobs.parquet"
    victim.write_bytes(b"not parquet")
    with pytest.raises(ValueError, match=str(victim.parent.name)):
        pooled_distributions(broken, scheduler="inline")
    assert not list(broken.glob(".tmp-*"))  # the staging folder is removed on error too


def test_jobs_running_at_the_window_start_are_left_out_of_wait_and_bsld(tmp_path):
    """Hand-computed: a prepopulated job (running at the window start, its wait the log's) is not a
    wait of the variant — stats.json's wait_mean_s / bsld_mean leave it out, and so must the pooled
    wait_s / bsld; job_edp_js keeps it (stats.json's job_edp_sum_js counts it)."""
    d = tmp_path / "run"
    d.mkdir()
    pd.DataFrame({
        "status": ["completed", "completed", "timeout", "queued", "running"],
        "submit_time": [0, 100, 100, 150, 120],
        "start_time": [50, 1000, 130, None, 200],      # job 0: placed at its recorded start (waited 50 s in the log)
        "end_time": [5050, 1005, 230, None, None],
        "energy_j": [10.0, 2.0, None, None, None],
        "prepopulated": [True, False, False, False, False],
    }, dtype=None).astype({"start_time": "Int64", "end_time": "Int64"}).to_parquet(d / "jobs.parquet")
    rv = run_values(d, JOB_METRICS)
    assert rv["wait_s"][0].tolist() == [900.0, 30.0]             # 1000 - 100, 130 - 100
    # bsld: max(1, (900 + 5) / max(5, 10)) = 90.5; max(1, (30 + 100) / 100) = 1.3
    assert rv["bsld"][0].tolist() == pytest.approx([90.5, 1.3], rel=1e-15)
    edp = rv["job_edp_js"][0]                                       # 10 J × 5000 s, 2 J × 5 s, unknown
    assert edp[:2].tolist() == [50_000.0, 10.0] and np.isnan(edp[2])
    # a jobs table written before the column existed: every finished job counts, as before
    pd.read_parquet(d / "jobs.parquet").drop(columns=["prepopulated"]).to_parquet(d / "jobs.parquet")
    assert run_values(d, ["wait_s"])["wait_s"][0].tolist() == [50.0, 900.0, 30.0]



def test_pooled_wait_of_a_windowed_run_averages_to_its_wait_mean(tmp_path):
    """A run on a window that starts mid-trace has jobs running at its start: its pooled wait_s
    values average to stats.json's wait_mean_s and its bsld values to bsld_mean (the same jobs)."""
    from twinsweep.core.config import RunConfig
    from twinsweep.core.run import simulate, write_run
    from test_sweep_support import write_swf

    swf = write_swf(tmp_path / "t.swf", n_jobs=60, nodes=8, span_s=3600)
    res = simulate(RunConfig(data=str(swf), policy="fcfs", backfill="easy", start=1800, duration=3600))
    d = tmp_path / "run"
    write_run(res, d)
    jobs = pd.read_parquet(d / "jobs.parquet")
    assert jobs["prepopulated"].sum() > 0  # the case this test is about
    stats = json.loads((d / "stats.json").read_text())["system"]
    rv = run_values(d, JOB_METRICS)
    assert rv["wait_s"][0].mean() == pytest.approx(stats["wait_mean_s"], rel=1e-12)
    assert rv["bsld"][0].mean() == pytest.approx(stats["bsld_mean"], rel=1e-12)
    assert np.nansum(rv["job_edp_js"][0]) == pytest.approx(stats["job_edp_sum_js"], rel=1e-12)
