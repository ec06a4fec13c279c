"""core.stats.compute_stats on a hand-computed table (values written out in the comments)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from twinsweep.core.stats import COUNT_KEYS, GROUP_KEYS, SYSTEM_KEYS, bounded_slowdown, censored_waits, compute_stats
from twinsweep.core.system import Converter, PowerModel, System


def four_node_system(status: str = "assumed") -> System:
    """4 nodes: idle 100 W, full 300 W per node; node converter c=10 W η=0.9 (per node),
    rectifier c=20 W η=0.95 per 2 nodes.

    convert(P) = ((P + 4·10)/0.9 + 2·20)/0.95 = (P + 40 + 36)/0.855 = (P + 76)/0.855.
    """
    pm = PowerModel(
        status=status, cpu_idle_w=60.0, cpu_max_w=260.0, other_w=40.0,
        node_converter=Converter(10.0, 0.9, 1), rectifier=Converter(20.0, 0.95, 2),
    )
    return System(name="t4", title="t4", nodes=4, cpus_per_node=1, power=pm)


def F(p):
    return (p + 76.0) / 0.855


T0, T1 = 0, 1200

# Jobs (window [0, 1200)):
#   A  u1/a1  submit 0,   start 0,   end 600  nodes 2  completed  wait 0   run 600  energy 2*300*600 = 360000
#   B  u2/a1  submit 100, start 600, end 605  nodes 4  timeout    wait 500 run 5    energy 4*300*5   = 6000
#   C  None/a2 submit 200, start 200, end 200 nodes 1  completed  wait 0   run 0    energy 0
#   D  u1/a2  submit 300, never started, status queued
#   E  u3/None submit 400, 8 nodes > 4: rejected
JOBS = pd.DataFrame({
    "job_id": ["A", "B", "C", "D", "E"],
    "user": ["u1", "u2", None, "u1", "u3"],
    "account": ["a1", "a1", "a2", "a2", None],
    "submit_time": np.array([0, 100, 200, 300, 400], dtype="int64"),
    "nodes": pd.array([2, 4, 1, 1, 8], dtype="Int64"),
    "start_time": pd.array([0, 600, 200, pd.NA, pd.NA], dtype="Int64"),
    "end_time": pd.array([600, 605, 200, pd.NA, pd.NA], dtype="Int64"),
    "wait_time": pd.array([0, 500, 0, pd.NA, pd.NA], dtype="Int64"),
    "status": ["completed", "timeout", "completed", "queued", "rejected"],
    "prepopulated": [False, False, False, False, False],
    "time_limit_imputed": [True, False, False, True, False],
    "node_power_w": [300.0, 300.0, 300.0, 300.0, 300.0],
    "energy_j": [360000.0, 6000.0, 0.0, np.nan, np.nan],
    "avg_power_w": [600.0, 1200.0, 300.0, np.nan, np.nan],
})

# Steps: busy/IT power: [0,600) 2 busy, IT 2*300 + 2*100 = 800; [600,605) 4 busy, IT 1200;
# [605,1200) 0 busy, IT 400. (C ran 0 s at t=200 and leaves no step.)
STEPS = pd.DataFrame({
    "time": np.array([0, 100, 600, 605], dtype="int64"),
    "busy_nodes": [2, 2, 4, 0],
    "it_power_w": [800.0, 800.0, 1200.0, 400.0],
    "queued_jobs": [0, 1, 0, 1],
    "running_jobs": [1, 1, 1, 0],
})

COUNTS_IN = {"lenient_skipped_lines": 2, "reservation_delays": np.int64(3), "completed": 99}


@pytest.fixture(scope="module")
def stats():
    return compute_stats(JOBS, STEPS, four_node_system(), T0, T1, COUNTS_IN)


def test_structure_and_json(stats):
    assert list(stats) == sorted(stats)
    assert set(stats) == {"schema_version", "power_label", "counts", "system", "users", "accounts"}
    assert stats["schema_version"] == 1
    assert stats["power_label"] == "assumed"
    assert set(stats["counts"]) == set(COUNT_KEYS)
    assert set(stats["system"]) == set(SYSTEM_KEYS)
    for d in (stats["counts"], stats["system"], stats["users"], stats["accounts"]):
        assert list(d) == sorted(d)
    for g in list(stats["users"].values()) + list(stats["accounts"].values()):
        assert set(g) == set(GROUP_KEYS) and list(g) == sorted(g)
    text = json.dumps(stats, allow_nan=False)  # no NaN / numpy types
    assert json.loads(text) == stats

    def plain(x):
        if isinstance(x, dict):
            return all(isinstance(k, str) and plain(v) for k, v in x.items())
        return x is None or type(x) in (int, float, str, bool)

    assert plain(stats)
    # deterministic
    again = compute_stats(JOBS, STEPS, four_node_system(), T0, T1, COUNTS_IN)
    assert json.dumps(again) == text


def test_counts(stats):
    c = stats["counts"]
    assert c["jobs_in_window"] == 5
    assert c["jobs_started"] == 3
    assert c["completed"] == 2  # computed from the table: overrides the 99 passed in
    assert c["timeout"] == 1
    assert c["rejected"] == 1
    assert c["still_queued"] == 1
    assert c["still_running"] == 0
    assert c["not_run"] == 0
    assert c["prepopulated"] == 0
    assert c["time_limit_imputed"] == 2
    assert c["lenient_skipped_lines"] == 2
    assert c["reservation_delays"] == 3 and type(c["reservation_delays"]) is int
    assert c["replay_delayed"] == 0 and c["placement_fallbacks"] == 0 and c["replay_start_imputed"] == 0


def test_job_metrics(stats):
    s = stats["system"]
    # waits [0, 500, 0]: mean 500/3, median 0, max 500; p95 (linear): sorted [0,0,500], pos 1.9 -> 0.9*500
    assert s["wait_mean_s"] == pytest.approx(500 / 3)
    assert s["wait_median_s"] == 0.0
    assert s["wait_p95_s"] == pytest.approx(450.0)
    assert s["wait_max_s"] == 500.0
    # turnaround [600, 505, 0]
    assert s["turnaround_mean_s"] == pytest.approx(1105 / 3)
    # slowdown: A 600/600 = 1, B 505/5 = 101, C (run 0) left out -> 51
    assert s["slowdown_mean"] == pytest.approx(51.0)
    # bounded slowdown τ=10: A max(1, 600/600)=1, B max(1, 505/10)=50.5, C max(1, 0/10)=1 -> 52.5/3
    assert s["bsld_mean"] == pytest.approx(17.5)
    # weights nodes*run: A 1200, B 20, C 0 -> Σ 1220
    # AWRT = (1200*600 + 20*505)/1220 = 730100/1220; AWWT = 20*500/1220 = 10000/1220
    assert s["awrt_s"] == pytest.approx(730100 / 1220)
    assert s["awwt_s"] == pytest.approx(10000 / 1220)
    # makespan = last finished end (605) - t0
    assert s["makespan_s"] == 605.0
    # 3 finished jobs in 1200 s = 1/3 h
    assert s["throughput_jobs_per_h"] == pytest.approx(9.0)
    # job EDP: 360000*600 + 6000*5 + 0; ED2P: 360000*600^2 + 6000*5^2
    assert s["job_edp_sum_js"] == pytest.approx(216_030_000.0)
    assert s["job_ed2p_sum_js2"] == pytest.approx(129_600_150_000.0)


def test_power_metrics(stats):
    s = stats["system"]
    # ∫busy = 2*600 + 4*5 = 1220 node-s over 4*1200 -> 1220/4800
    assert s["utilization"] == pytest.approx(1220 / 4800)
    # IT energy = 800*600 + 1200*5 + 400*595 = 724000 J
    assert s["it_energy_j"] == pytest.approx(724_000.0)
    # facility = ∫ (P + 76)/0.855 = (724000 + 76*1200)/0.855 = 815200/0.855
    fac = 815_200 / 0.855
    assert s["facility_energy_j"] == pytest.approx(fac, rel=1e-12)
    assert s["loss_energy_j"] == pytest.approx(fac - 724_000, rel=1e-12)
    assert s["mean_power_w"] == pytest.approx(fac / 1200, rel=1e-12)
    # peak of the facility step function: F(1200) = 1276/0.855 (held only 5 s)
    assert s["peak_power_w"] == pytest.approx(1276 / 0.855, rel=1e-12)
    assert s["edp_js"] == pytest.approx(fac * 605, rel=1e-12)
    assert s["ed2p_js2"] == pytest.approx(fac * 605 ** 2, rel=1e-12)
    # 1-min ramps: 20 full minutes; minutes 0..9 at F(800); minute 10 = (5*F(1200) + 55*F(400))/60;
    # minutes 11..19 at F(400). Two non-zero diffs d1 = F(800) - m10, d2 = m10 - F(400);
    # p95 of 19 diffs (17 zeros, d2, d1): position 0.95*18 = 17.1 -> d2 + 0.1*(d1 - d2)
    m10 = (5 * F(1200) + 55 * F(400)) / 60
    d1, d2 = F(800) - m10, m10 - F(400)
    assert s["ramp_1min_max_w"] == pytest.approx(d1, rel=1e-12)  # 389.86 W
    assert s["ramp_1min_p95_w"] == pytest.approx(d2 + 0.1 * (d1 - d2), rel=1e-12)  # 109.16 W
    # 15-min windows: only one full window in [0, 1200) -> 0.0 by definition
    assert s["ramp_15min_max_w"] == 0.0 and s["ramp_15min_p95_w"] == 0.0


def test_per_user_and_account(stats):
    u = stats["users"]
    assert list(u) == ["u1", "u2", "unknown"]  # u3 has no finished job; None -> "unknown"
    assert u["u1"] == {"bsld_mean": 1.0, "edp_js": 216_000_000.0, "energy_j": 360_000.0, "jobs": 1,
                       "node_seconds": 1200, "wait_mean_s": 0.0}
    assert u["u2"] == {"bsld_mean": 50.5, "edp_js": 30_000.0, "energy_j": 6000.0, "jobs": 1,
                       "node_seconds": 20, "wait_mean_s": 500.0}
    assert u["unknown"] == {"bsld_mean": 1.0, "edp_js": 0.0, "energy_j": 0.0, "jobs": 1,
                            "node_seconds": 0, "wait_mean_s": 0.0}
    a = stats["accounts"]
    assert list(a) == ["a1", "a2"]
    # a1 = A + B: waits (0 + 500)/2, bsld (1 + 50.5)/2, node-s 1200 + 20, energy 366000, edp 216030000
    assert a["a1"] == {"bsld_mean": 25.75, "edp_js": 216_030_000.0, "energy_j": 366_000.0, "jobs": 2,
                       "node_seconds": 1220, "wait_mean_s": 250.0}
    assert a["a2"]["jobs"] == 1 and a["a2"]["node_seconds"] == 0


def test_no_finished_jobs_gives_none_not_nan():
    jobs = JOBS.iloc[3:].reset_index(drop=True)  # only the queued and the rejected job
    steps = pd.DataFrame({"time": [0], "busy_nodes": [0], "it_power_w": [400.0],
                          "queued_jobs": [1], "running_jobs": [0]})
    st = compute_stats(jobs, steps, four_node_system("published"), 0, 100, None)
    assert st["power_label"] == "published"
    s = st["system"]
    for k in ("wait_mean_s", "wait_median_s", "wait_p95_s", "wait_max_s", "turnaround_mean_s",
              "slowdown_mean", "bsld_mean", "awrt_s", "awwt_s", "makespan_s", "edp_js", "ed2p_js2"):
        assert s[k] is None, k
    assert s["throughput_jobs_per_h"] == 0.0
    assert s["utilization"] == 0.0
    assert s["it_energy_j"] == pytest.approx(40_000.0)
    assert s["peak_power_w"] == pytest.approx(F(400))
    assert st["users"] == {} and st["accounts"] == {}
    json.dumps(st, allow_nan=False)
    assert not any(isinstance(v, float) and math.isnan(v) for v in s.values())


def test_bad_window():
    with pytest.raises(ValueError):
        compute_stats(JOBS, STEPS, four_node_system(), 10, 10, {})


def test_censored_wait_counts_jobs_left_in_the_queue():
    # N=10, window [0, 50): J0 runs [0,100) on all nodes (still running at 50, wait 0); J1 (submitted
    # at 10) is still queued at 50: its wait so far is 40. Censored mean = (0 + 40) / 2 = 20; no job
    # finished, so the finished-job mean is None.
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from twin_helpers import simulate_tiny

    from twinsweep.core.system import System

    jobs, res = simulate_tiny([dict(submit=0, run=100, limit=100, nodes=10), dict(submit=10, run=5, limit=5, nodes=10)],
                              backfill="easy", start=0, duration=50)
    st = compute_stats(jobs, res.steps, System(name="tiny", title="tiny", nodes=10), res.t_start, res.t_end, res.counts)
    assert st["system"]["wait_censored_mean_s"] == 20.0
    assert st["system"]["wait_mean_s"] is None
    assert st["counts"]["still_queued"] == 1 and st["counts"]["still_running"] == 1


def test_prepopulated_jobs_are_left_out_of_the_wait_and_slowdown_metrics_only():
    """Job A marked prepopulated (running at the window start, placed at its recorded start): the
    wait / slowdown / response metrics are over B and C alone, by hand: waits 500 and 0 (mean
    250, max 500), runs 5 and 0, bsld max(1, 505/10) = 50.5 and max(1, 0/10) = 1 (mean 25.75),
    slowdown over B only (run > 0) = 505/5 = 101, AWRT over B and C: weights 4*5 = 20 and 0, so
    (20 * 505) / 20 = 505. Throughput (3 finished jobs in 1,200 s = 9 /h), makespan (605 s) and
    the per-user sums still count A."""
    jobs = JOBS.assign(prepopulated=[True, False, False, False, False])
    s = compute_stats(jobs, STEPS, four_node_system(), T0, T1)
    m = s["system"]
    assert m["wait_mean_s"] == 250 and m["wait_max_s"] == 500 and m["wait_median_s"] == 250
    assert m["bsld_mean"] == pytest.approx((50.5 + 1) / 2) and m["slowdown_mean"] == pytest.approx(101)
    assert m["turnaround_mean_s"] == pytest.approx((505 + 0) / 2)
    assert m["awrt_s"] == pytest.approx(505) and m["awwt_s"] == pytest.approx(500)
    assert m["throughput_jobs_per_h"] == pytest.approx(9) and m["makespan_s"] == 605
    assert s["users"]["u1"]["jobs"] == 1 and s["users"]["u1"]["node_seconds"] == 1200  # A: 2 nodes x 600 s
    # per user / account the waits leave A out too: u1's only finished job is A (no wait to give);
    # account a1 = A + B: its wait and slowdown are B's (500 s, 50.5), its sums A's and B's
    assert s["users"]["u1"]["wait_mean_s"] is None and s["users"]["u1"]["bsld_mean"] is None
    a1 = s["accounts"]["a1"]
    assert (a1["wait_mean_s"], a1["bsld_mean"], a1["jobs"], a1["node_seconds"]) == (500.0, 50.5, 2, 1220)
    assert s["counts"]["prepopulated"] == 1
    every = compute_stats(JOBS, STEPS, four_node_system(), T0, T1)["system"]  # none prepopulated: A counts
    assert every["wait_mean_s"] == pytest.approx(500 / 3) and every["throughput_jobs_per_h"] == m["throughput_jobs_per_h"]


def test_bounded_slowdown_by_hand():
    """max(1, (wait + run) / max(run, 10 s)): a zero-length job divides by τ = 10 s (wait 0 -> 1,
    wait 500 -> 50); a run of 5 s too (505 / 10 = 50.5); a run of 10 s is τ itself (100 / 10 = 10);
    a long run with no wait is 1 (never below); a run of 40 s waiting 120 s is 160 / 40 = 4."""
    got = bounded_slowdown([0, 500, 500, 90, 0, 120], [0, 0, 5, 10, 3600, 40])
    assert got.dtype == np.float64
    assert got.tolist() == [1.0, 50.0, 50.5, 10.0, 1.0, 4.0]
    assert bounded_slowdown(500, 5) == 50.5  # scalars are one job
    assert np.isnan(bounded_slowdown([np.nan], [5])).all() and np.isnan(bounded_slowdown([5], [np.nan])).all()


def test_censored_waits_by_hand():
    """JOBS (window end 1200): A, B, C started (waits 0, 500, 0); D still queued: 1200 − 300 = 900;
    E rejected: not counted. Their mean, (0 + 500 + 0 + 900) / 4 = 350, is stats.json's
    wait_censored_mean_s. A marked prepopulated is left out; without a window end D is too."""
    w = censored_waits(JOBS, T1)
    assert w[:4].tolist() == [0.0, 500.0, 0.0, 900.0] and np.isnan(w[4])
    assert compute_stats(JOBS, STEPS, four_node_system(), T0, T1)["system"]["wait_censored_mean_s"] == 350.0
    pre = censored_waits(JOBS.assign(prepopulated=[True, False, False, False, False]), T1)
    assert np.isnan(pre[0]) and pre[1:4].tolist() == [500.0, 0.0, 900.0]
    assert censored_waits(JOBS.drop(columns="prepopulated"), T1)[:4].tolist() == [0.0, 500.0, 0.0, 900.0]
    unknown_end = censored_waits(JOBS, None)
    assert unknown_end[:3].tolist() == [0.0, 500.0, 0.0] and np.isnan(unknown_end[3:]).all()
