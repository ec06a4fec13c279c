"""Recorded power: jobs with power traces or averages use them instead of the utilisation model; a
trace shorter than the simulated run holds its last value and the filled samples are counted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twinsweep.core.config import RunConfig
from twinsweep.core.power import apply_power_traces, traces_node_power
from twinsweep.core.run import simulate
from twinsweep.core.system import system_from_dict
from twinsweep.core.workload import Workload, coerce_jobs_frame

IDLE = 100.0  # W per idle node of the test system
SYSTEM = system_from_dict({
    "system": {"name": "tiny", "nodes": 4, "cpus_per_node": 1, "gpus_per_node": 2},
    "power": {"status": "assumed", "cpu_idle_w": 60.0, "cpu_max_w": 160.0, "gpu_idle_w": 20.0, "gpu_max_w": 120.0,
              "default_cpu_util": 0.5, "default_gpu_util": 0.0},
})


def workload(rows, traces):
    df = pd.DataFrame(rows)
    df["trace_index"] = np.arange(len(df))
    df["job_id"] = df["job_id"].astype(str)
    df["procs"] = df["nodes"]
    df["status"] = "completed"
    return Workload(jobs=coerce_jobs_frame(df), epoch=0, checksum="sha256:test", source="synthetic", format="test",
                    procs_unit="nodes", traces=traces)


def run(wl, **kw):
    cfg = RunConfig(data="synthetic", sample_period=1, **kw)
    return simulate(cfg, workload=wl, system=SYSTEM)


def at(res, t):
    return float(res.timeline.set_index("time").loc[t, "it_power_w"])


def test_idle_and_model_power_of_the_test_system():
    assert SYSTEM.power.cpu_idle_w + 2 * SYSTEM.power.gpu_idle_w == IDLE


def test_replay_uses_trace_samples():
    wl = workload([dict(job_id=1, submit_time=0, recorded_start_time=10, recorded_end_time=70, run_time=60, time_limit=100, nodes=2,
                        avg_power_w=2 * 250.0)],
                  {"1": {"period": 20, "node_power_w": [200.0, 300.0, 250.0]}})
    res = run(wl, policy="replay")
    j = res.jobs.iloc[0]
    assert j.energy_j == pytest.approx(2 * (200 + 300 + 250) * 20.0)
    assert j.avg_power_w == pytest.approx(500.0) and bool(j.power_traced)
    assert at(res, 5) == 4 * IDLE
    assert at(res, 15) == pytest.approx(2 * IDLE + 2 * 200.0)
    assert at(res, 35) == pytest.approx(2 * IDLE + 2 * 300.0)
    assert at(res, 69) == pytest.approx(2 * IDLE + 2 * 250.0)
    assert res.manifest["window"]["end"] == 70  # open window: ends with the last job
    c = res.stats["counts"]
    assert (c["power_traced_jobs"], c["power_trace_filled_samples"], c["power_trace_samples_used"]) == (1, 0, 3)
    # IT energy over the run = idle base + the job's recorded samples above idle
    assert res.stats["system"]["it_energy_j"] == pytest.approx(4 * IDLE * 70 + 2 * (100 + 200 + 150) * 20.0)


def test_short_trace_holds_the_last_value_and_counts_filled_samples():
    # recorded run 100 s but only 3 samples of 20 s: samples 4 and 5 take the last value (150 W)
    wl = workload([dict(job_id=1, submit_time=0, recorded_start_time=0, recorded_end_time=100, run_time=100, time_limit=200, nodes=1)],
                  {"1": {"period": 20, "node_power_w": [110.0, 130.0, 150.0]}})
    res = run(wl, policy="fcfs")
    j = res.jobs.iloc[0]
    assert j.energy_j == pytest.approx((110 + 130 + 150 + 150 + 150) * 20.0)
    assert res.stats["counts"]["power_trace_filled_samples"] == 2
    assert at(res, 90) == pytest.approx(3 * IDLE + 150.0)


def test_killed_job_uses_only_the_samples_it_ran_and_a_partial_last_one():
    # limit 50 s: samples [0, 20), [20, 40), and half of [40, 60)
    wl = workload([dict(job_id=1, submit_time=0, recorded_start_time=0, recorded_end_time=100, run_time=100, time_limit=50, nodes=1)],
                  {"1": {"period": 20, "node_power_w": [110.0, 130.0, 150.0, 170.0, 190.0]}})
    res = run(wl, policy="fcfs")
    j = res.jobs.iloc[0]
    assert j.status == "timeout"
    assert j.energy_j == pytest.approx(110 * 20 + 130 * 20 + 150 * 10.0)
    assert res.stats["counts"]["power_trace_filled_samples"] == 0


def test_rescheduled_trace_follows_the_simulated_start():
    # job 2 waits for job 1 (both need all 4 nodes); its trace starts at its simulated start, 50 s
    wl = workload([dict(job_id=1, submit_time=0, recorded_start_time=0, recorded_end_time=50, run_time=50, time_limit=60, nodes=4),
                   dict(job_id=2, submit_time=1, recorded_start_time=1, recorded_end_time=41, run_time=40, time_limit=60, nodes=4)],
                  {"2": {"period": 20, "node_power_w": [300.0, 400.0]}})
    res = run(wl, policy="fcfs")
    s2 = int(res.jobs.iloc[1].start_time)
    assert s2 == 50
    model = 60 + 0.5 * 100 + 2 * 20  # job 1: no trace, no average: node model at the default utilisation
    assert at(res, 10) == pytest.approx(4 * model)
    assert at(res, 55) == pytest.approx(4 * 300.0) and at(res, 75) == pytest.approx(4 * 400.0)


def test_missing_samples_inside_a_trace_are_filled_and_counted():
    wl = workload([dict(job_id=1, submit_time=0, recorded_start_time=0, recorded_end_time=60, run_time=60, time_limit=60, nodes=1)],
                  {"1": {"period": 20, "node_power_w": [200.0, np.nan, 220.0]}})
    res = run(wl, policy="replay")
    assert res.jobs.iloc[0].energy_j == pytest.approx((200 + 200 + 220) * 20.0)
    assert res.stats["counts"]["power_trace_filled_samples"] == 1


def test_recorded_average_is_used_without_a_trace():
    wl = workload([dict(job_id=1, submit_time=0, recorded_start_time=0, recorded_end_time=10, run_time=10, time_limit=10, nodes=2,
                        avg_power_w=900.0, cpu_util=0.0)], {})
    res = run(wl, policy="replay")
    assert res.jobs.iloc[0].node_power_w == 450.0 and at(res, 5) == pytest.approx(2 * IDLE + 900.0)


def test_utilisation_traces_go_through_the_node_model_gpu_like_cpu():
    tr = traces_node_power(SYSTEM, {"a": {"period": 10, "cpu_util": [0.0, 1.0], "gpu_util": [1.0, 0.5]},
                                    "b": {"period": 10, "gpu_util": [0.25]}})
    # a: 60 + 2 x 120 = 300; 160 + 2 x 70 = 300
    np.testing.assert_allclose(tr["a"]["node_power_w"], [300.0, 300.0])
    # b: CPU at its default 0.5 -> 110; GPUs 2 x (20 + 0.25 x 100) = 90
    np.testing.assert_allclose(tr["b"]["node_power_w"], [200.0])


def test_apply_power_traces_without_traces_is_identity():
    jobs = pd.DataFrame({"job_id": ["1"], "nodes": [1], "start_time": pd.array([0], dtype="Int64"),
                         "end_time": pd.array([10], dtype="Int64"), "status": ["completed"],
                         "node_power_w": [150.0], "energy_j": [1500.0], "avg_power_w": [150.0]})
    steps = pd.DataFrame({"time": [0, 10], "it_power_w": [150.0, 100.0], "busy_nodes": [1, 0],
                          "queued_jobs": [0, 0], "running_jobs": [1, 0]})
    j2, s2, c = apply_power_traces(jobs, steps, {}, 20)
    assert s2 is steps and c["power_traced_jobs"] == 0 and not j2["power_traced"].any()


def test_power_is_accounted_once_after_the_engine_without_writing_back():
    """account_power (issue 12, item 6: the data path never doubles back) returns the final tables
    and leaves the engine's result as it was; without traces the engine's tables are final."""
    from types import SimpleNamespace

    from twinsweep.core.power import account_power

    jobs = pd.DataFrame({"job_id": ["a"], "nodes": [1], "start_time": pd.array([0], dtype="Int64"),
                         "end_time": pd.array([20], dtype="Int64"), "status": ["completed"],
                         "node_power_w": [100.0], "energy_j": [2000.0], "avg_power_w": [100.0]})
    steps = pd.DataFrame({"time": [0, 20], "it_power_w": [100.0, 0.0]})
    res = SimpleNamespace(jobs=jobs, steps=steps, t_end=20)
    j, s, c = account_power(res, SYSTEM, None)
    assert j is jobs and s is steps and c == {}
    j, s, c = account_power(res, SYSTEM, {"a": {"period": 10, "node_power_w": [50.0, 150.0]}})
    assert j["energy_j"].tolist() == [10 * 50.0 + 10 * 150.0] and c["power_traced_jobs"] == 1
    assert res.jobs is jobs and jobs["energy_j"].tolist() == [2000.0] and "power_traced" not in jobs.columns
