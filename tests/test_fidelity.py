"""core/fidelity.py: figures of a twin schedule against a reference, checked on values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from twinsweep.core.fidelity import (FIGURES, MIN_CORR_HOURS, SPLIT_FIGURES, compare, hourly_busy_nodes,
                                     recorded_schedule, wait_split)


def _sched(rows):
    """rows: (trace_index, submit, start|None, end|None, nodes)."""
    return pd.DataFrame({
        "trace_index": [r[0] for r in rows],
        "submit_time": [r[1] for r in rows],
        "start_time": pd.array([r[2] for r in rows], dtype="Int64"),
        "end_time": pd.array([r[3] for r in rows], dtype="Int64"),
        "nodes": pd.array([r[4] for r in rows], dtype="Int64"),
    })


def test_hourly_busy_nodes_by_hand():
    s = _sched([(0, 0, 0, 5400, 2), (1, 0, 1800, 3600, 1), (2, 0, None, None, 4)])
    # bin 0: 2 nodes · 3600 s + 1 node · 1800 s = 9000 node-s / 3600 s = 2.5; bin 1: 2 · 1800 / 3600 = 1
    assert hourly_busy_nodes(s, 0, 7200).tolist() == [2.5, 1.0]
    # a short last bin is averaged over its own length: [3600, 5400) holds 2 nodes throughout
    assert hourly_busy_nodes(s, 0, 5400).tolist() == [2.5, 2.0]
    # a started job without an end is busy up to the window end
    open_job = _sched([(0, 0, 1800, None, 3)])
    assert hourly_busy_nodes(open_job, 0, 7200).tolist() == [1.5, 3.0]
    with pytest.raises(ValueError):
        hourly_busy_nodes(s, 10, 10)


def _pair():
    # reference waits 0, 100, 190, 280; twin waits 0, 50, 0, 300; every job runs 100 s in both
    ref = _sched([(0, 1000, 1000, 1100, 1), (1, 1000, 1100, 1200, 1), (2, 1010, 1200, 1300, 1),
                  (3, 1020, 1300, 1400, 1), (4, 1030, None, None, 1), (5, 500, 500, 600, 1)])
    tw = _sched([(0, 1000, 1000, 1100, 1), (1, 1000, 1050, 1150, 1), (2, 1010, 1010, 1110, 1),
                 (3, 1020, 1320, 1420, 1), (4, 1030, None, None, 1), (5, 500, 500, 600, 1)])
    return ref, tw


def test_compare_by_hand():
    ref, tw = _pair()
    f = compare(ref, tw, 1000, 4600, system_nodes=4)
    assert f["jobs_compared"] == 4
    assert f["exclusions"] == {"submitted outside the reported window": 1,
                               "never ran in the reference (no recorded start or run time)": 1}
    assert f["wait_mean_ref_s"] == 142.5 and f["wait_mean_twin_s"] == 87.5
    assert f["wait_mean_rel_error"] == pytest.approx(-55 / 142.5)
    # numpy linear quantile: position 0.95 · 3 = 2.85 -> 190 + 0.85 · 90 and 50 + 0.85 · 250
    assert f["wait_p95_rel_error"] == pytest.approx((262.5 - 266.5) / 266.5)
    # bounded slowdown max(1, (w + 100) / 100): 1, 2, 2.9, 3.8 against 1, 1.5, 1, 4
    assert f["bsld_mean_rel_error"] == pytest.approx((7.5 / 4 - 9.7 / 4) / (9.7 / 4))
    # start errors 0, -50, -190, +20
    assert f["start_error_median_s"] == 35.0
    assert f["start_error_mae_s"] == 65.0
    assert f["start_error_bias_s"] == pytest.approx(-25.0)
    assert f["start_within_1min_frac"] == 0.75 and f["start_within_1h_frac"] == 1.0
    # ECDFs differ most just after 50 s: 1/4 of the reference against 3/4 of the twin
    assert f["wait_ks"] == pytest.approx(0.5)
    # equal sizes: mean |sorted difference| = (0 + 100 + 140 + 20) / 4
    assert f["wait_w1_s"] == pytest.approx(65.0)
    # one hour-long bin holds everything... and a second nearly empty one: [1000, 4600) is one bin
    assert f["occupancy_corr_hourly"] is None
    # node-seconds in [1000, 4600): 400 in both (the job submitted at 500 ended before) -> equal means
    assert f["occupancy_rmse_frac"] == pytest.approx(0.0)


def test_wait_split_by_hand():
    """The compared jobs of test_compare_by_hand in two groups: a = jobs 0 and 2 (reference waits
    0 and 190, twin 0 and 0), b = jobs 1 and 3 (reference 100 and 280, twin 50 and 300); jobs 4
    (never ran) and 5 (outside the window) are not compared, whatever their group."""
    ref, tw = _pair()
    groups = pd.Series(["a", "b", "a", "b", "a", "b"], index=range(6))
    out = wait_split(ref, tw, 1000, 4600, groups)
    assert list(out) == ["a", "b"]
    a, b = out["a"], out["b"]
    assert set(a) == set(SPLIT_FIGURES)
    assert compare(ref, tw, 1000, 4600, system_nodes=4, groups=groups)["wait_by_group"] == out  # one pairing
    assert a["jobs"] == 2 and b["jobs"] == 2
    assert a["ref_wait_share"] == pytest.approx(190 / 570) and b["ref_wait_share"] == pytest.approx(380 / 570)
    assert a["wait_mean_ref_s"] == 95.0 and a["wait_mean_twin_s"] == 0.0 and a["wait_mean_rel_error"] == -1.0
    assert b["wait_mean_ref_s"] == 190.0 and b["wait_mean_twin_s"] == 175.0
    assert b["wait_mean_rel_error"] == pytest.approx(-15 / 190)
    # numpy linear quantile of two values: a + 0.95 (b - a)
    assert b["wait_p95_ref_s"] == pytest.approx(271.0) and b["wait_p95_twin_s"] == pytest.approx(287.5)
    assert b["wait_p95_rel_error"] == pytest.approx(16.5 / 271)
    assert a["wait_p95_rel_error"] == -1.0
    # a group whose reference waits are all 0 has no relative error, and a job without a label is an error
    zero = wait_split(ref, tw, 1000, 4600, pd.Series(["z", "y", "y", "y", "y", "y"], index=range(6)))
    assert zero["z"]["wait_mean_rel_error"] is None and zero["z"]["ref_wait_share"] == 0.0
    with pytest.raises(KeyError):
        wait_split(ref, tw, 1000, 4600, pd.Series(["a"], index=[0]))


def test_compare_identity_and_occupancy():
    ref, _ = _pair()
    big = _sched([(i, i * 2400, i * 2400 + 60 * (i % 7), i * 2400 + 60 * (i % 7) + 1800 + 300 * (i % 5), 1 + i % 3)
                  for i in range(40)])
    for s in (ref, big):
        f = compare(s, s, 0, 96000, system_nodes=8)
        for k in ("wait_mean_rel_error", "wait_p95_rel_error", "bsld_mean_rel_error", "start_error_median_s",
                  "start_error_mae_s", "wait_ks", "wait_w1_s", "occupancy_rmse_frac"):
            assert f[k] == 0.0 or f[k] is None, k
    f = compare(big, big, 0, 96000, system_nodes=8)  # 27 hourly bins
    assert f["occupancy_corr_hourly"] == pytest.approx(1.0)
    assert f["start_within_1min_frac"] == 1.0
    # fewer than MIN_CORR_HOURS bins: no correlation (2 bins always correlate ±1)
    assert MIN_CORR_HOURS == 24
    assert compare(big, big, 0, 7200, system_nodes=8)["occupancy_corr_hourly"] is None
    assert compare(big, big, 0, 23 * 3600, system_nodes=8)["occupancy_corr_hourly"] is None
    assert compare(big, big, 0, 24 * 3600, system_nodes=8)["occupancy_corr_hourly"] == pytest.approx(1.0)
    # the twin's occupancy shifted by one hour: correlation and RMSE as computed from the bins directly
    late = big.copy()
    late["start_time"] = late["start_time"] + 3600
    late["end_time"] = late["end_time"] + 3600
    g = compare(big, late, 0, 96000, system_nodes=8)
    a, b = hourly_busy_nodes(big, 0, 96000), hourly_busy_nodes(late, 0, 96000)
    assert g["occupancy_corr_hourly"] == pytest.approx(float(np.corrcoef(a, b)[0, 1]))
    assert g["occupancy_rmse_frac"] == pytest.approx(math.sqrt(float(np.mean((a - b) ** 2))) / 8)
    assert g["start_error_median_s"] == 3600 and g["start_within_1h_frac"] == 1.0
    assert g["start_within_1min_frac"] == 0.0
    assert set(FIGURES) <= set(g)


def test_compare_prepopulated_and_unstarted_are_excluded():
    ref, tw = _pair()
    tw = tw.copy()
    tw["prepopulated"] = [False, True, False, False, False, False]
    tw.loc[3, "start_time"] = pd.NA
    tw.loc[3, "end_time"] = pd.NA
    f = compare(ref, tw, 1000, 4600, system_nodes=4)
    assert f["jobs_compared"] == 2
    assert f["exclusions"]["placed at its recorded start by the twin (running at the twin's window start)"] == 1
    assert f["exclusions"]["not started by the twin (rejected, or queued at its end)"] == 1
    # with the twin's reason known (twin_schedule of a jobs table with a status), they are told apart
    tw["rejected"] = [False, False, False, True, False, False]
    g = compare(ref, tw, 1000, 4600, system_nodes=4)["exclusions"]
    assert g["rejected by the twin at submit (another reason: the run's jobs table gives it)"] == 1  # fits 4 nodes
    for n, why in ((5, "asks for more nodes than the machine has"),  # the request says why
                   (0, "asks for no nodes: processors <= 0 or unknown")):
        tw.loc[3, "nodes"] = n
        gn = compare(ref, tw, 1000, 4600, system_nodes=4)["exclusions"]
        assert gn[f"rejected by the twin at submit ({why})"] == 1 and sum("rejected" in k for k in gn) == 1
    tw.loc[3, "nodes"] = ref.loc[3, "nodes"]
    assert "not started by the twin (queued at its end)" not in g
    tw["rejected"] = False
    assert compare(ref, tw, 1000, 4600, system_nodes=4)["exclusions"]["not started by the twin (queued at its end)"] == 1
    with pytest.raises(ValueError, match="not in the reference"):
        compare(ref.iloc[:2], tw, 1000, 4600, system_nodes=4)


def test_recorded_schedule_uses_start_plus_run_time():
    jobs = pd.DataFrame({"trace_index": [0, 1], "submit_time": [0, 5],
                         "recorded_start_time": pd.array([10, 40], dtype="Int64"),
                         "run_time": pd.array([90, None], dtype="Int64"),
                         "nodes": pd.array([2, 1], dtype="Int64")})
    s = recorded_schedule(jobs)
    assert s["end_time"].tolist()[0] == 100 and pd.isna(s["end_time"].tolist()[1])
    # cancelled in the queue: the log records a wait but no run time -> no start, never busy
    assert pd.isna(s["start_time"].tolist()[1])
    assert hourly_busy_nodes(s, 0, 3600).tolist() == [2 * 90 / 3600]
