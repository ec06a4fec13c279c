"""The report's verdict (sweep/verdict.py) and its readable tables (sweep/report.py format_frame)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twinsweep.sweep.report import format_frame
from twinsweep.sweep.verdict import OVERALL, TRADEOFF, compute_verdict, cost_text, default_baseline


def _runs(table: dict[str, list[tuple[float, float]]], datasets=("d1",), seeds=(0, 1, 2, 3)) -> pd.DataFrame:
    """One run per dataset x seed x variant; table: variant -> per-seed (wait, power)."""
    rows = []
    for ds in datasets:
        for v, vals in table.items():
            for s, (w, p) in zip(seeds, vals):
                rows.append({"dataset": ds, "window": "w", "seed": s, "variant": v, "wait_mean_s": w,
                             "peak_power_w": p, "utilization": 0.5})
    return pd.DataFrame(rows)


def test_clear_winner_is_certain_and_its_costs_are_the_mean_changes():
    # "b" waits half as long as "a" in every block and draws 10 % more peak power
    runs = _runs({"fcfs+easy": [(100, 1000)] * 4, "b": [(50, 1100)] * 4, "c": [(80, 900)] * 4})
    v = compute_verdict(runs, ["fcfs+easy", "b", "c"], {"wait_mean_s": "min", "peak_power_w": "min"}, n_boot=200)
    (s,) = v.scopes  # one dataset: no "all datasets" scope
    assert s.scope == "d1" and s.blocks == 4 and s.baseline == "fcfs+easy"
    w = s.get("wait_mean_s")
    assert w.best == "b" and w.p_best == 1.0 and w.runner_up == "c" and w.distinguishable
    assert w.gap_ci == (1.0, 1.0)  # c is always exactly one rank behind b
    assert w.costs["wait_mean_s"] == pytest.approx(-50.0) and w.costs["peak_power_w"] == pytest.approx(10.0)
    assert cost_text("wait_mean_s", w.costs["wait_mean_s"]) == "−50 % mean wait"
    assert cost_text("peak_power_w", w.costs["peak_power_w"]) == "+10 % peak facility power"
    p = s.get("peak_power_w")
    assert p.best == "c" and p.costs["peak_power_w"] == pytest.approx(-10.0)
    # trade-off, equal weights: mean ranks a = (3+2)/2, b = (1+3)/2, c = (2+1)/2 -> c
    t = s.get(TRADEOFF)
    assert t.best == "c" and t.mean_rank == pytest.approx(1.5) and t.runner_up == "b"


def test_tradeoff_weights_change_the_recommendation():
    runs = _runs({"fcfs+easy": [(100, 1000)] * 4, "b": [(50, 1100)] * 4, "c": [(80, 900)] * 4})
    rank = {"wait_mean_s": "min", "peak_power_w": "min"}
    # wait 3x as important: b = (3*1 + 3)/4 = 1.5, c = (3*2 + 1)/4 = 1.75
    v = compute_verdict(runs, ["fcfs+easy", "b", "c"], rank, tradeoff={"wait_mean_s": 3, "peak_power_w": 1},
                        n_boot=50)
    assert v.scopes[0].get(TRADEOFF).best == "b"
    assert v.tradeoff == {"wait_mean_s": 3, "peak_power_w": 1}


def test_coin_toss_is_not_distinguishable_and_p_best_splits():
    # a wins seeds 0,1 and b seeds 2,3 by the same margin: mean ranks tie, P(best) ~ 1/2 each
    runs = _runs({"a": [(1, 1), (1, 1), (2, 1), (2, 1)], "b": [(2, 1), (2, 1), (1, 1), (1, 1)]})
    v = compute_verdict(runs, ["a", "b"], {"wait_mean_s": "min"}, n_boot=4000, seed=3)
    o = v.scopes[0].get("wait_mean_s")
    assert o.best == "a" and not o.distinguishable  # tie broken by grid order
    # exact: P(a strictly ahead) = P(more a-blocks drawn) = (1 - P(2 of 4)) / 2 = (1 - 6/16)/2; ties split
    expected = (1 - 6 / 16) / 2 + (6 / 16) / 2
    assert o.p_best == pytest.approx(expected, abs=0.03)
    assert o.gap_ci[0] < 0 < o.gap_ci[1] or o.gap_ci == (0.0, 0.0)


def test_overall_scope_pools_every_dataset_and_one_block_has_no_uncertainty():
    runs = _runs({"fcfs+easy": [(100, 1)], "b": [(50, 1)]}, datasets=("d1", "d2"), seeds=(0,))
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=10)
    assert [s.scope for s in v.scopes] == ["d1", "d2", OVERALL]
    assert v.scopes[0].blocks == 1 and not v.scopes[0].get("wait_mean_s").distinguishable
    assert v.scopes[-1].blocks == 2 and v.scopes[-1].get("wait_mean_s").best == "b"


def test_max_objective_and_difference_metrics():
    runs = _runs({"fcfs+easy": [(1, 1)] * 2, "b": [(1, 1)] * 2}, seeds=(0, 1))
    runs.loc[runs["variant"] == "b", "utilization"] = 0.6
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"utilization": "max"}, n_boot=10)
    o = v.scopes[0].get("utilization")
    assert o.best == "b" and o.costs["utilization"] == pytest.approx(10.0)  # percentage points
    assert cost_text("utilization", o.costs["utilization"]) == "+10 %-points utilisation"


def test_baseline_choice():
    assert default_baseline(["sjf+none", "fcfs+easy"]) == "fcfs+easy"
    assert default_baseline(["sjf+none", "fcfs+easy+kill=False"]) == "fcfs+easy+kill=False"
    assert default_baseline(["sjf+none", "ljf+none"], "ljf+none") == "ljf+none"
    assert default_baseline(["sjf+none", "ljf+none"]) == "sjf+none"
    assert default_baseline([]) is None


def test_format_frame_reads_like_a_person_wrote_it():
    df = pd.DataFrame({"x": [769.9275362318841, 7.1e-05, np.nan], "n": [1234567, 2, 3],
                       "flag": [True, False, True], "o": [None, 4490.123, "text"]})
    out = format_frame(df)
    assert out["x"].tolist() == ["770", "0", "—"]  # one column, one number of decimals
    assert out["n"].tolist() == ["1,234,567", "2", "3"]
    assert out["flag"].tolist() == ["yes", "no", "yes"]
    assert out["o"].tolist() == ["—", "4,490", "text"]
    assert not any("e+" in c or "e-" in c for col in out.columns for c in out[col])
