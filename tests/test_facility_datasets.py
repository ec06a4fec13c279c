"""The real facility datasets beside the repository: Lassen (RAPS snapshot of LLNL LAST), CINECA
Eurora 2014, MetaCentrum wagap 2013 — load, replay with recorded placement, reschedule."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_cached
from twinsweep.core.config import RunConfig
from twinsweep.core.power import bin_step
from twinsweep.core.run import simulate

LASSEN = "lassen-last-raps-snapshot/lassen_jobs_2019-08-22_2h_with_traces.parquet"
LASSEN_CSV = "lassen-last-raps-snapshot/lassen_jobs_2019-08-22_2h_summary.csv"
EURORA = "eurora-cineca-2014/eurora_historical_jobs_dedup.txt"
WAGAP = "metacentrum-wagap-2013/wagap-2013.swf.gz"
T0, SPAN = 31497370, 7200  # RAPS's Lassen window: 2019-08-22T00:00Z, 2 h


def recorded_busy(jobs, t0, t1):
    """Recorded busy-node step function of ``jobs`` on [t0, t1): (times, values)."""
    s = jobs["recorded_start_time"].astype("float64").to_numpy()
    e = jobs["recorded_end_time"].astype("float64").to_numpy()
    n = jobs["nodes"].astype("float64").to_numpy()
    ok = np.isfinite(s) & np.isfinite(e)
    ts = np.unique(np.concatenate([s[ok], e[ok], [t0]])).astype(np.int64)
    ts = ts[(ts >= t0) & (ts < t1)]
    vals = np.array([n[ok & (s <= t) & (e > t)].sum() for t in ts])
    return ts, vals


def test_lassen_snapshot_loads():
    wl = load_cached(LASSEN)
    assert wl.format == "lassen-raps" and len(wl) == 442
    assert wl.epoch == 1566432000 - T0  # 2019-08-22T00:00Z is t = 31,497,370
    j = wl.jobs
    assert int(j["nodes"].max()) == 256 and j["node_ids"].map(len).eq(j["nodes"]).all()
    assert max(max(x) for x in j["node_ids"]) == 777 and wl.header["distinct_nodes"] == 778
    assert len(wl.traces) == 442
    csv = load_cached(LASSEN_CSV)
    assert csv.jobs[["job_id", "submit_time", "recorded_start_time", "run_time", "nodes"]].equals(
        j[["job_id", "submit_time", "recorded_start_time", "run_time", "nodes"]])
    assert list(csv.jobs["node_ids"]) == list(j["node_ids"])


def test_lassen_replay_reproduces_the_recorded_busy_node_timeline_exactly():
    wl = load_cached(LASSEN)
    res = simulate(RunConfig(data=LASSEN, policy="replay", start=T0, duration=SPAN, sample_period=1), workload=wl)
    assert res.manifest["system"]["name"] == "lassen"
    c = res.stats["counts"]
    assert c["placement_fallbacks"] == 0 and c["replay_delayed"] == 0 and c["rejected"] == 0
    ts, vals = recorded_busy(wl.jobs, T0, T0 + SPAN)
    _, expect = bin_step(ts, vals, T0, T0 + SPAN, 1)
    got = res.timeline["busy_nodes"].to_numpy()
    assert len(got) == SPAN
    np.testing.assert_array_equal(got, expect)
    started = res.jobs[res.jobs["start_time"].notna()]
    assert (started["start_time"] == np.maximum(started["recorded_start_time"], started["submit_time"])).all()
    rec = wl.jobs.set_index("job_id")["node_ids"]
    assert all(list(r.node_ids) == rec[r.job_id] for r in started.itertuples())  # recorded placement


def test_lassen_reschedule_and_gpu_power():
    wl = load_cached(LASSEN)
    res = simulate(RunConfig(data=LASSEN, policy="sjf", backfill="easy", start=T0, duration=SPAN), workload=wl)
    c = res.stats["counts"]
    assert c["jobs_in_window"] == 442 and c["rejected"] == 0 and c["power_traced_jobs"] > 0
    assert res.stats["power_label"] == "published"
    # GPU utilisation enters the node model like CPU utilisation (4 V100 at 75..300 W each)
    from twinsweep.core.power import node_power_w
    from twinsweep.core.system import load_system

    lassen = load_system("lassen")
    j = res.jobs
    expect = node_power_w(lassen.power, 2, 4, j["cpu_util"].to_numpy(), j["gpu_util"].to_numpy())
    np.testing.assert_allclose(j["node_power_w"].to_numpy(), expect)
    busy = j[(j["gpu_util"] > 0.3) & j["start_time"].notna()].iloc[0]
    assert busy.node_power_w > node_power_w(lassen.power, 2, 4, busy.cpu_util, 0.0) + 4 * 225 * 0.3
    assert res.stats["system"]["utilization"] > 0.8


def test_eurora_loads_with_predicted_power():
    wl = load_cached(EURORA)
    assert wl.format == "eurora" and len(wl) == 5930
    j = wl.jobs
    assert int(j["nodes"].max()) == 512 and j["nodes"].min() >= 1
    assert j["node_ids"].map(len).eq(j["nodes"]).all()
    assert j["avg_power_w"].notna().sum() > 4000 and (j["avg_power_w"].dropna() > 0).all()
    assert wl.header["loader_slot_collisions"] == 1
    assert (j["status"] == "completed").all() and j["time_limit"].notna().all()


def test_eurora_replay_and_reschedule():
    wl = load_cached(EURORA)
    rep = simulate(RunConfig(data=EURORA, policy="replay", sample_period=60), workload=wl)
    c = rep.stats["counts"]
    assert rep.manifest["system"]["name"] == "eurora"
    assert c["completed"] == 5930 and c["replay_delayed"] == 0 and c["placement_fallbacks"] == 1
    t0, t1 = rep.manifest["window"]["start"], rep.manifest["window"]["end"]
    ts, vals = recorded_busy(wl.jobs, t0, t1)
    _, expect = bin_step(ts, vals, t0, t1, 60)
    np.testing.assert_allclose(rep.timeline["busy_nodes"].to_numpy(), expect, rtol=0, atol=1e-9)
    j = rep.jobs.set_index("job_id")
    assert j.loc["498503", "node_power_w"] == pytest.approx(wl.jobs.set_index("job_id").loc["498503", "avg_power_w"])
    res = simulate(RunConfig(data=EURORA, policy="fcfs", backfill="easy", start=0, duration=3 * 86400), workload=wl)
    c = res.stats["counts"]
    assert c["rejected"] == 0 and c["completed"] + c["timeout"] + c["still_running"] + c["still_queued"] \
        == c["jobs_in_window"]


def test_metacentrum_replay_with_recorded_placement_and_reschedule():
    wl = load_cached(WAGAP)
    t0, span = 30 * 86400, 3 * 86400
    rep = simulate(RunConfig(data=WAGAP, policy="replay", start=t0, duration=span, sample_period=60), workload=wl)
    c = rep.stats["counts"]
    assert c["placement_fallbacks"] == 0 and c["replay_delayed"] == 0
    jobs = wl.jobs
    ts, vals = recorded_busy(jobs.assign(nodes=jobs["procs"]), t0, t0 + span)
    _, expect = bin_step(ts, vals, t0, t0 + span, 60)
    np.testing.assert_allclose(rep.timeline["busy_nodes"].to_numpy(), expect, rtol=0, atol=1e-9)
    res = simulate(RunConfig(data=WAGAP, policy="ljf", backfill="conservative", start=t0, duration=span),
                   workload=wl)
    assert res.stats["counts"]["jobs_in_window"] == c["jobs_in_window"]


def test_facility_study_spec():
    from twinsweep.sweep.spec import load_spec

    from twinsweep.core.data import REPO_ROOT

    spec = load_spec(REPO_ROOT / "studies" / "facility.toml")
    names = [d.name for d in spec.datasets]
    assert names == ["lassen-2h", "eurora", "metacentrum"]
    assert spec.datasets[0].windows[0].start_seconds(load_cached(LASSEN).epoch) == T0
