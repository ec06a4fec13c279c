"""The metric catalogue (core/metrics.py): completeness, units, formatting, energy per unit of work,
and a plug-in metric that is one registration."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinsweep.core.errors import ConfigError, PluginError
from twinsweep.core.metrics import (ENERGY_PER_WORK, METRICS, Metric, builtin_names, column_decimals,
                                    format_number, format_spread, metric, metric_names, si_power, register_metric, summary_metrics)
from twinsweep.core.stats import compute_stats
from test_stats import JOBS, STEPS, T0, T1, four_node_system

# Independent table: 1 display unit expressed in the stored unit.
_FACTORS = {("s", "h"): 3600.0, ("J", "MWh"): 3.6e9, ("W", "kW"): 1e3, ("1", "%"): 0.01, ("1", ""): 1.0,
            ("J·s", "MWh·h"): 3.6e9 * 3600, ("J·s²", "MWh·h²"): 3.6e9 * 3600 ** 2,
            ("J·s", "kWh·h"): 3.6e6 * 3600, ("J·s²", "kWh·h²"): 3.6e6 * 3600 ** 2,
            ("°C", "°C"): 1.0, ("K", "K"): 1.0, ("jobs/h", "jobs/h"): 1.0, ("J/node-h", "kWh/node-h"): 3.6e6}


def test_catalogue_is_what_stats_writes():
    """stats.json's system metrics are the catalogue: every built-in, and every installed or
    registered plug-in metric (a user's installed plug-ins are in it too)."""
    from twinsweep.core.metrics import plugin_metrics

    s = compute_stats(JOBS, STEPS, four_node_system(), T0, T1)
    assert set(s["system"]) == set(metric_names())
    assert set(metric_names()) == set(builtin_names()) | {m.name for m in plugin_metrics()}


@pytest.mark.parametrize("name", builtin_names())
def test_every_metric_is_described_and_its_scale_converts_its_unit(name):
    m = metric(name)
    assert m.direction in ("min", "max") and m.label and m.description
    assert m.label == m.label.strip() and "_" not in m.label  # a label, not a key
    assert m.scale == pytest.approx(_FACTORS[(m.unit, m.display_unit)], rel=1e-12)
    # name suffixes agree with the stored unit
    suffix = {"_s": "s", "_j": "J", "_w": "W", "_c": ("°C", "K"), "_js": "J·s", "_js2": "J·s²"}
    for suf, unit in suffix.items():
        if name.endswith(suf) and not name.endswith("_per_node_h"):
            assert m.unit in ((unit,) if isinstance(unit, str) else unit), (name, m.unit)


def test_header_and_direction_words():
    m = metric("wait_censored_mean_s")
    assert m.header() == "mean wait incl. still queued [h]"
    assert metric("peak_power_w").header(assumed=True) == "peak facility power [kW] (assumed)"
    assert metric("bsld_mean").header(assumed=True) == "mean bounded slowdown"  # not a power figure
    assert metric("utilization").verb == "maximise" and metric("utilization").better == "higher is better"
    assert metric("utilization").format(0.7134) == "71.3"
    assert metric("wait_mean_s").format(17_424.0, unit=True) == "4.84 h"
    assert metric("wait_mean_s").format(None) == "—"


def test_energy_per_node_hour_by_hand():
    s = compute_stats(JOBS, STEPS, four_node_system(), T0, T1)["system"]
    # test_stats: ∫busy = 1220 node-s; facility energy = 815200 / 0.855 J
    assert s[ENERGY_PER_WORK] == pytest.approx((815_200 / 0.855) / (1220 / 3600), rel=1e-12)
    idle = STEPS.assign(busy_nodes=0, it_power_w=400.0)
    assert compute_stats(JOBS, idle, four_node_system(), T0, T1)["system"][ENERGY_PER_WORK] is None


def test_energy_per_node_hour_does_not_reward_idling():
    """Two schedules of the same window on 4 nodes (idle 100 W, busy 300 W): A runs 4 nodes for
    600 s, B leaves 2 of them idle. B uses less facility energy (it did half the work) but more per
    node-hour delivered: ranking raw energy picks B, energy per node-hour picks A."""
    def steps(busy):
        return pd.DataFrame({"time": np.array([0, 600], dtype="int64"), "busy_nodes": [busy, 0],
                             "it_power_w": [busy * 300.0 + (4 - busy) * 100.0, 400.0],
                             "queued_jobs": [0, 0], "running_jobs": [busy, 0]})
    a = compute_stats(JOBS.iloc[:0], steps(4), four_node_system(), 0, 1200)["system"]
    b = compute_stats(JOBS.iloc[:0], steps(2), four_node_system(), 0, 1200)["system"]
    assert b["facility_energy_j"] < a["facility_energy_j"]
    assert b[ENERGY_PER_WORK] > a[ENERGY_PER_WORK]
    # by hand: F(P) = (P + 76) / 0.855 per second; A: (1200 + 76)·600 + (400 + 76)·600 over 2400/3600 node-h
    assert a[ENERGY_PER_WORK] == pytest.approx(((1276 + 476) * 600 / 0.855) / (2400 / 3600), rel=1e-12)
    assert metric("facility_energy_j").rewards_idle and not metric(ENERGY_PER_WORK).rewards_idle


@pytest.mark.parametrize("x, kw, text", [
    (1335.564978, {}, "1,336"), (17.497384, {}, "17.5"), (0.000902, {}, "0.000902"), (4.49e3, {}, "4,490"),
    (769.9275362318841, {}, "770"), (1e15, {}, "1,000,000,000,000,000"), (1e-10, {}, "0"),
    (-0.0004, {"decimals": 2}, "0.00"), (-12.345, {}, "-12.3"), (None, {}, "—"), (float("nan"), {}, "—"),
    (True, {}, "yes"), (False, {}, "no"), (0.0, {}, "0"), (2.0, {"digits": 1}, "2"),
    (12345.678, {"decimals": 1}, "12,345.7"),
    (0.00098, {"digits": 1}, "0.001"), (9.96, {"digits": 2}, "10"), (0.0999, {}, "0.0999"), (0.09996, {}, "0.100"),
])
def test_format_number(x, kw, text):
    assert format_number(x, **kw) == text


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False), st.integers(1, 6))
def test_format_number_is_plain_and_close(x, digits):
    t = format_number(x, digits)
    assert "e" not in t.lower() and "None" not in t
    back = float(t.replace(",", ""))
    # within half a unit of the last shown decimal, or below the smallest shown decimal
    dec = len(t.split(".")[1]) if "." in t else 0
    assert abs(back - x) <= 0.5 * 10 ** -dec + 1e-9 * abs(x) or abs(x) < 10 ** -6


@pytest.mark.parametrize("std, decimals, text", [
    (1.34, 1, "1.3"), (17.2, 0, "17"), (0.004, 2, "0.004"), (0.00049, 2, "0.0005"), (0.4, 0, "0.4"),
    (0.0, 2, "0"), (1234.6, 0, "1,235"),
])
def test_format_spread_never_shows_a_nonzero_spread_as_zero(std, decimals, text):
    assert format_spread(std, decimals) == text


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1e9, allow_nan=False), st.integers(0, 4))
def test_format_spread_is_nonzero_and_close(std, decimals):
    t = format_spread(std, decimals)
    back = float(t.replace(",", ""))
    assert back > 0
    # the same decimals as the value when they show it, else one significant digit
    assert abs(back - std) <= max(0.5 * 10 ** -decimals, 0.5 * std) + 1e-9 * std


def test_column_decimals():
    assert column_decimals([7.1e-05, 2.66, None, float("nan")]) == 2
    assert column_decimals([48.4, 4.9]) == 1
    assert column_decimals([12_345.0]) == 0
    assert column_decimals([]) == 0
    assert format_number(7.1e-05, decimals=column_decimals([7.1e-05, 2.66])) == "0.00"


def _jobs_per_mwh(m):
    fin = m.jobs["status"].isin(["completed", "timeout"]).sum()
    return fin / (m.stats["facility_energy_j"] / 3.6e9)


def test_plugin_metric_is_one_registration(tmp_path):
    from twinsweep.sweep.spec import parse_spec

    m = Metric("jobs_per_mwh", "jobs/MWh", "max", "jobs per MWh", "jobs/MWh", compute=_jobs_per_mwh)
    register_metric(m)
    try:
        assert "jobs_per_mwh" in metric_names() and "jobs_per_mwh" in summary_metrics()
        s = compute_stats(JOBS, STEPS, four_node_system(), T0, T1)["system"]
        # 3 finished jobs (A, B, C) / facility energy in MWh
        assert s["jobs_per_mwh"] == pytest.approx(3 / ((815_200 / 0.855) / 3.6e9), rel=1e-12)
        spec = parse_spec({"datasets": [{"trace": "x.swf"}], "rank": {"metrics": ["jobs_per_mwh"]}})
        assert spec.rank == (("jobs_per_mwh", "max"),)  # the plug-in's own direction
        assert metric("jobs_per_mwh").header() == "jobs per MWh [jobs/MWh]"
    finally:
        METRICS.unregister("jobs_per_mwh")
    assert "jobs_per_mwh" not in metric_names()


def test_bad_plugin_metrics_are_refused():
    with pytest.raises(ConfigError, match="needs compute"):
        register_metric(Metric("no_compute", "1", "min", "no compute"))
    with pytest.raises(ConfigError, match="computed by core.stats"):
        register_metric(Metric("wait_mean_s", "s", "min", "mean wait", compute=_jobs_per_mwh), replace=True)
    with pytest.raises(ConfigError, match="direction"):
        register_metric(Metric("sideways", "1", "up", "sideways", compute=_jobs_per_mwh))
    with pytest.raises(ConfigError, match="named 'b'"):
        METRICS.register("a", Metric("b", "1", "min", "b", compute=_jobs_per_mwh))
    assert not {"no_compute", "sideways", "a"} & set(metric_names())


def test_failing_plugin_is_named():
    register_metric(Metric("broken_metric", "1", "min", "broken", compute=lambda m: 1 / 0))
    try:
        with pytest.raises(PluginError, match=r"^metric 'broken_metric': compute raised ZeroDivisionError: division "
                                              r"by zero \(raised at \S+/test_metrics.py, line \d+\)$"):
            compute_stats(JOBS, STEPS, four_node_system(), T0, T1)
    finally:
        METRICS.unregister("broken_metric")


def test_plot_floors_and_comparisons():
    assert metric("pue_avg").floor == 1.0 and metric("pue_avg").compare == "difference"
    assert metric("tower_return_temp_mean_c").floor is None and metric("tower_return_temp_mean_c").min_span > 0
    assert metric("utilization").compare == "difference"
    assert all(metric(n).floor == 0.0 for n in ("wait_mean_s", "peak_power_w", "facility_j_per_node_h"))
    assert math.isclose(metric("utilization").display(0.5), 50.0)


def test_pooled_and_account_quantities_live_in_the_one_catalogue():
    """Item 5 of issue 12: the pooled-distribution metrics and the accounts quantities are Metrics of
    core.metrics (kind "pooled" / "account"), read by sweep.distributions, the pooled report section
    and the incentive report; they are not run metrics (not rankable, not in stats.json)."""
    from twinsweep.core.metrics import account_metric, metric_names, pooled_metrics
    from twinsweep.sweep.distributions import DIST_METRICS
    from twinsweep.sweep.incentives import POLICY_QUANTITY
    from twinsweep.sweep.report_pooled import POOLED_DISPLAY

    pooled = pooled_metrics()
    assert tuple(pooled) == DIST_METRICS
    assert all(m.kind == "pooled" for m in pooled.values()) and not set(pooled) & set(metric_names())
    # the display table the report used to hold by hand, now derived: same labels, scales, units
    assert POOLED_DISPLAY == {
        "wait_s": ("job wait", 3600.0, "h", False),
        "bsld": ("job bounded slowdown (τ=10 s)", 1.0, "", False),
        "job_edp_js": ("job EDP (energy × run time)", 3.6e6 * 3600.0, "kWh·h", True),
        "power_swing_1min_w": ("1-min power swing", 1e3, "kW", True),
        "power_swing_15min_w": ("15-min power swing", 1e3, "kW", True)}
    assert POLICY_QUANTITY["acct_edp"] == ("edp_js", "EDP sum [J·s]", False, True)
    assert POLICY_QUANTITY["acct_fugaku_pts"][1] == "Fugaku points [node·s]"
    assert POLICY_QUANTITY["acct_avg_power"][1] == "average power per node [W]"
    assert account_metric("ed2p_js2").header() == "ED²P sum [J·s²]"
    with pytest.raises(ConfigError, match="only run metrics"):
        register_metric(dataclasses.replace(pooled["wait_s"], name="wait2_s", compute=lambda i: 0.0))


def test_scaled_to_takes_the_si_unit_of_the_largest_power():
    """Metric.scaled_to: a W metric reads its largest value in [1, 1000) of W/kW/MW/GW (by hand:
    357 W -> W, 28,200 W -> kW, 2.5e7 W -> MW); other units and missing values keep the catalogue."""
    from twinsweep.core.metrics import metric

    ramp = metric("ramp_1min_max_w")
    assert (ramp.scaled_to(357.0).scale, ramp.scaled_to(357.0).display_unit) == (1.0, "W")
    assert ramp.scaled_to(28_200.0).display_unit == "kW" and ramp.scaled_to(-28_200.0).scale == 1e3
    assert (ramp.scaled_to(2.5e7).scale, ramp.scaled_to(2.5e7).display_unit) == (1e6, "MW")
    assert ramp.scaled_to(float("nan")) is ramp and ramp.scaled_to(0) is ramp and ramp.scaled_to(None) is ramp
    assert ramp.scaled_to(357.0).header() == ramp.label + " [W]"
    wait = metric("wait_mean_s")
    assert wait.scaled_to(1e9) is wait  # not a power: its own display (h)


def test_si_power_reads_in_one_to_a_thousand_of_its_unit():
    value, unit = si_power(1411436.36)
    assert unit == "MW" and value == pytest.approx(1.41143636)
    assert si_power(375.0) == (375.0, "W") and si_power(0) == (0.0, "W")
    assert si_power(-2500) == (-2.5, "kW") and si_power(999.9) == (999.9, "W") and si_power(1000) == (1.0, "kW")
    with pytest.raises(ValueError, match="finite"):
        si_power(float("inf"))


def test_column_decimals_keeps_differing_values_apart_when_asked():
    from twinsweep.core.metrics import column_decimals

    med = [7.94, 7.97, 8.03, 8.22, 137.0]
    assert column_decimals(med, 3) == 0  # the largest value's 3 digits alone: 8, 8, 8, 8, 137
    assert column_decimals(med, 3, distinct=True) == 2  # 7.94, 7.97, 8.03, 8.22, 137.00
    assert column_decimals([1.0, 1.0, 2.0], 3, distinct=True) == 2  # equal values need nothing more
    assert column_decimals([1000.1, 1000.2], 3, distinct=True) == 1  # at most digits - 1 more than the base 0


def test_a_module_object_metric_name_points_to_the_entry_point(tmp_path, monkeypatch):
    """A metric cannot be named 'module:object' in [rank] (its name is its column); the error says
    what to do instead (before: "register it under that name", which a study file cannot do)."""
    (tmp_path / "tw_metric_mod.py").write_text(
        "from twinsweep.core.metrics import Metric\n"
        "M = Metric('tw_mod_metric', '1', 'min', 'mod metric', '', compute=lambda m: 1.0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"cannot be named 'module:object'.*entry point named 'tw_mod_metric' "
                                          r"in the group 'twinsweep.metrics'"):
        metric("tw_metric_mod:M")
    assert "tw_metric_mod:M" not in METRICS.names()
