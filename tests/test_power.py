"""core.power: node model, conversion losses, exact binning, ramps, timeline (hand-computed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinsweep.core.errors import ConfigError
from twinsweep.core.power import (
    TIMELINE_COLUMNS,
    bin_step,
    build_timeline,
    convert,
    idle_node_power_w,
    integrate_step,
    job_node_power_w,
    node_power_w,
    ramps,
)
from twinsweep.core.system import Converter, PowerModel, System


def four_node_system() -> System:
    """4 nodes, 1 CPU each: idle = 40 (other) + 60 (cpu idle) = 100 W; full = 40 + 260 = 300 W.

    Node converter per node: c = 10 W, eta = 0.9; rectifier per 2 nodes: c = 20 W, eta = 0.95.
    """
    pm = PowerModel(
        status="assumed", cpu_idle_w=60.0, cpu_max_w=260.0, other_w=40.0,
        default_cpu_util=1.0, default_gpu_util=0.0,
        node_converter=Converter(c_w=10.0, eta=0.9, nodes_per_group=1),
        rectifier=Converter(c_w=20.0, eta=0.95, nodes_per_group=2),
    )
    return System(name="t4", title="test", nodes=4, cpus_per_node=1, gpus_per_node=0, power=pm)


# ------------------------------------------------------------------ node model


def test_node_power_linear_model_with_gpus_and_clipping():
    pm = PowerModel(cpu_idle_w=50, cpu_max_w=150, gpu_idle_w=30, gpu_max_w=300,
                    mem_w=20, nic_w=10, storage_w=5, other_w=15)
    # 15+20+10+5 = 50 constant; 2 cpus at 0.5: 2*(50 + 0.5*100) = 200; 4 gpus at 0.25: 4*(30 + 0.25*270) = 390
    assert node_power_w(pm, 2, 4, 0.5, 0.25) == pytest.approx(50 + 200 + 390)
    # utilisation is clipped to [0, 1]: 1.7 -> 1, -0.2 -> 0: 50 + 2*150 + 4*30 = 470
    assert node_power_w(pm, 2, 4, 1.7, -0.2) == pytest.approx(470)
    arr = node_power_w(pm, 2, 4, np.array([0.0, 1.0]), 0.0)
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float64
    np.testing.assert_allclose(arr, [50 + 100 + 120, 50 + 300 + 120])
    with pytest.raises(ConfigError, match="cpu_util"):
        node_power_w(pm, 2, 4, np.array([0.5, np.nan]), 0.0)
    with pytest.raises(ConfigError, match="gpu_util"):
        node_power_w(pm, 2, 4, 0.5, float("nan"))


def test_idle_and_job_node_power():
    s = four_node_system()
    assert idle_node_power_w(s) == pytest.approx(100.0)
    jobs = pd.DataFrame({
        "nodes": pd.array([2, 2, 1, 0, pd.NA], dtype="Int64"),
        "avg_power_w": [600.0, np.nan, np.nan, 500.0, 500.0],
        "cpu_util": [0.1, 0.5, np.nan, 0.0, np.nan],
        "gpu_util": [np.nan] * 5,
    })
    got = job_node_power_w(s, jobs)
    assert got.dtype == np.float64 and got.shape == (5,)
    # row 0: recorded 600 W over 2 nodes -> 300 (the utilisation is ignored)
    # row 1: model at u=0.5: 40 + 60 + 0.5*200 = 200
    # row 2: model at the default u=1.0: 300
    # row 3: nodes 0 -> recorded power unusable -> model at u=0: 100
    # row 4: nodes NA -> model at default u=1: 300
    np.testing.assert_allclose(got, [300, 200, 300, 100, 300])
    assert job_node_power_w(s, jobs.iloc[:0]).shape == (0,)


def test_job_node_power_nan_default_raises():
    s = four_node_system()
    with pytest.raises(ConfigError, match="default_cpu_util must be a utilisation in 0..1, got nan"):
        PowerModel(default_cpu_util=float("nan"))  # refused where the model is built, before any run
    assert job_node_power_w(s, pd.DataFrame({"nodes": [1]}))[0] == pytest.approx(300)


# ------------------------------------------------------------------ conversion losses

# IT 400 W (4 idle nodes): P_n = (400 + 4*10)/0.9 = 4400/9; P_in = (4400/9 + 2*20)/0.95 = 4760/8.55
IDLE_IN = 4760 / 8.55  # 556.7251461988...
# IT 800 W (2 nodes at 300 + 2 idle): P_n = 840/0.9; P_in = (840/0.9 + 40)/0.95 = 8760/8.55
BUSY_IN = 8760 / 8.55  # 1024.5614035087...


def test_convert_hand_computed():
    s = four_node_system()
    p_in, loss = convert(s, 400.0)
    assert isinstance(p_in, float)
    assert p_in == pytest.approx(IDLE_IN, rel=1e-12)
    assert loss == pytest.approx(IDLE_IN - 400.0, rel=1e-12)
    arr_in, arr_loss = convert(s, np.array([400.0, 800.0, 0.0]))
    np.testing.assert_allclose(arr_in, [IDLE_IN, BUSY_IN, (40 / 0.9 + 40) / 0.95], rtol=1e-12)
    np.testing.assert_allclose(arr_loss, arr_in - [400, 800, 0], rtol=1e-12)
    # the no-load constant makes losses at zero load positive: never a plain multiplication by eta
    assert arr_loss[2] > 0
    assert arr_loss[1] != pytest.approx(800 / (0.9 * 0.95) - 800)


def test_convert_grouped_node_converter_and_odd_rectifier_groups():
    pm = PowerModel(node_converter=Converter(5.0, 0.8, 2), rectifier=Converter(7.0, 0.5, 2))
    s = System(name="g", title="g", nodes=3, power=pm)
    # G_n = ceil(3/2) = 2: P_n = (100 + 10)/0.8 = 137.5; G_r = 2: P_in = (137.5 + 14)/0.5 = 303
    assert convert(s, 100.0) == pytest.approx((303.0, 203.0))


def test_hand_computed_job_energies_via_timeline():
    """4-node system, idle 100 W/node; a 2-node job at 300 W/node on [300, 900); window [0, 1200).

    IT power: 400 W on [0,300), 800 W on [300,900), 400 W on [900,1200).
    IT energy = 400*600 + 800*600 = 720 000 J; job energy = 2*300*600 = 360 000 J.
    Facility = 600*IDLE_IN + 600*BUSY_IN = 600*(4760 + 8760)/8.55 = 8 112 000/8.55 = 948 771.93 J,
    loss = 948 771.93 − 720 000 = 228 771.93 J.
    """
    s = four_node_system()
    job = pd.DataFrame({"nodes": pd.array([2], dtype="Int64"), "cpu_util": [1.0]})
    p_job = job_node_power_w(s, job)[0]
    assert p_job == pytest.approx(300.0)
    idle = idle_node_power_w(s)
    it_busy = 2 * p_job + 2 * idle
    assert it_busy == pytest.approx(800.0)
    steps = pd.DataFrame({
        "time": np.array([0, 300, 900], dtype="int64"),
        "busy_nodes": [0, 2, 0],
        "it_power_w": [4 * idle, it_busy, 4 * idle],
        "queued_jobs": [1, 0, 0],
        "running_jobs": [0, 1, 0],
    })
    tl = build_timeline(steps, s, 0, 1200, 300)
    assert list(tl.columns) == list(TIMELINE_COLUMNS)
    assert tl["time"].dtype == np.int64
    np.testing.assert_array_equal(tl["time"], [0, 300, 600, 900])
    np.testing.assert_allclose(tl["it_power_w"], [400, 800, 800, 400])
    np.testing.assert_allclose(tl["facility_power_w"], [IDLE_IN, BUSY_IN, BUSY_IN, IDLE_IN], rtol=1e-12)
    np.testing.assert_allclose(tl["loss_w"], tl["facility_power_w"] - tl["it_power_w"], rtol=1e-12)
    np.testing.assert_allclose(tl["busy_nodes"], [0, 2, 2, 0])
    np.testing.assert_allclose(tl["utilization"], [0, 0.5, 0.5, 0])
    np.testing.assert_allclose(tl["queued_jobs"], [1, 0, 0, 0])
    # energies: every bin is 300 s long
    assert (tl["it_power_w"] * 300).sum() == pytest.approx(720_000.0)
    assert (tl["facility_power_w"] * 300).sum() == pytest.approx(8_112_000 / 8.55, rel=1e-12)
    assert (tl["loss_w"] * 300).sum() == pytest.approx(8_112_000 / 8.55 - 720_000, rel=1e-12)
    assert integrate_step(steps["time"], steps["it_power_w"], 0, 1200) == pytest.approx(720_000.0)
    assert p_job * 2 * 600 == pytest.approx(360_000.0)

    # period 500 s: [0,500): (400*300 + 800*200)/500 = 560; [500,1000): (800*400 + 400*100)/500 = 720;
    # [1000,1200) partial (200 s): 400. Facility of a bin mean = convert(bin mean) (affine).
    tl5 = build_timeline(steps, s, 0, 1200, 500)
    np.testing.assert_array_equal(tl5["time"], [0, 500, 1000])
    np.testing.assert_allclose(tl5["it_power_w"], [560, 720, 400])
    np.testing.assert_allclose(tl5["facility_power_w"], convert(s, np.array([560.0, 720.0, 400.0]))[0], rtol=1e-12)
    np.testing.assert_allclose(tl5["busy_nodes"], [0.8, 1.6, 0.0])  # 2*200/500, 2*400/500


# ------------------------------------------------------------------ bin_step


def brute_force(times, values, t0, t1, period):
    """Per-second evaluation of the step function, averaged per bin."""
    times = list(times)
    per_sec = []
    for s in range(t0, t1):
        i = max(k for k in range(len(times)) if times[k] <= s)
        per_sec.append(values[i])
    starts, means = [], []
    for b in range(t0, t1, period):
        chunk = per_sec[b - t0: min(b + period, t1) - t0]
        starts.append(b)
        means.append(sum(chunk) / len(chunk))
    return starts, means


@st.composite
def step_functions(draw):
    times = sorted(draw(st.sets(st.integers(0, 300), min_size=1, max_size=25)))
    values = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=len(times), max_size=len(times)))
    t0 = draw(st.integers(times[0], times[0] + 100))
    t1 = draw(st.integers(t0 + 1, t0 + 400))
    period = draw(st.integers(1, 120))
    return times, values, t0, t1, period


@settings(max_examples=300, deadline=None)
@given(step_functions())
def test_bin_step_matches_per_second_average(case):
    times, values, t0, t1, period = case
    starts, means = bin_step(np.array(times, dtype="int64"), np.array(values), t0, t1, period)
    bs, bm = brute_force(times, values, t0, t1, period)
    np.testing.assert_array_equal(starts, bs)
    assert starts.dtype == np.int64 and means.dtype == np.float64
    np.testing.assert_allclose(means, bm, rtol=1e-9, atol=1e-6)
    # the integral is the sum of bin mean × bin length
    lengths = np.minimum(starts + period, t1) - starts
    assert integrate_step(times, values, t0, t1) == pytest.approx(float((means * lengths).sum()), rel=1e-9, abs=1e-3)


def test_bin_step_last_partial_bin_and_2d():
    times = np.array([-50, 10, 25], dtype="int64")
    vals = np.array([[1.0, 100.0], [3.0, 0.0], [7.0, 50.0]])
    # window [0, 35), period 20: bins [0,20) and [20,35) (15 s, partial)
    # col 0: [0,20): (10*1 + 10*3)/20 = 2; [20,35): (5*3 + 10*7)/15 = 85/15
    # col 1: [0,20): (10*100 + 0)/20 = 50; [20,35): (5*0 + 10*50)/15 = 500/15
    starts, means = bin_step(times, vals, 0, 35, 20)
    np.testing.assert_array_equal(starts, [0, 20])
    assert means.shape == (2, 2)
    np.testing.assert_allclose(means, [[2.0, 50.0], [85 / 15, 500 / 15]])
    for k in range(2):
        np.testing.assert_allclose(bin_step(times, vals[:, k], 0, 35, 20)[1], means[:, k])
    # change points at / after t1 are ignored; t1 == t0 gives empty output
    s2, m2 = bin_step(np.array([0, 35, 99]), np.array([4.0, 1e9, 1e9]), 0, 35, 20)
    np.testing.assert_allclose(m2, [4.0, 4.0])
    e0, e1 = bin_step(times, vals, 0, 0, 20)
    assert e0.shape == (0,) and e1.shape == (0, 2)


def test_bin_step_errors():
    with pytest.raises(ValueError, match="t0"):
        bin_step(np.array([5]), np.array([1.0]), 0, 10, 5)  # times[0] > t0
    with pytest.raises(ValueError, match="ascending"):
        bin_step(np.array([0, 5, 5]), np.array([1.0, 2.0, 3.0]), 0, 10, 5)
    with pytest.raises(ValueError, match="period"):
        bin_step(np.array([0]), np.array([1.0]), 0, 10, 0)
    with pytest.raises(ValueError, match="empty"):
        bin_step(np.array([], dtype="int64"), np.array([]), 0, 10, 5)
    with pytest.raises(ValueError, match="shape"):
        bin_step(np.array([0, 1]), np.array([1.0]), 0, 10, 5)
    with pytest.raises(ValueError, match="whole seconds"):
        bin_step(np.array([0.0, 1.5]), np.array([1.0, 2.0]), 0, 10, 5)
    with pytest.raises(ValueError, match="t1"):
        bin_step(np.array([0]), np.array([1.0]), 10, 5, 5)


def test_bin_step_large_is_fast_and_exact_for_integers():
    import time

    rng = np.random.default_rng(1)
    n = 1_000_000
    times = np.cumsum(rng.integers(1, 50, n)).astype("int64")
    times[0] = 0
    vals = rng.integers(0, 10_000, n).astype("float64")
    t1 = int(times[-1]) + 7
    period = max(1, t1 // n)
    tic = time.perf_counter()
    starts, means = bin_step(times, vals, 0, t1, period)
    assert time.perf_counter() - tic < 10.0
    assert len(starts) >= n // 2
    lengths = np.minimum(starts + period, t1) - starts
    # integer signal: every piece area is an exact integer, so totals agree to the last digit
    assert float(np.round(means * lengths).sum()) == float((vals * np.diff(np.append(times, t1))).sum())


# ------------------------------------------------------------------ ramps


def test_ramps_hand_made():
    # square wave, 100 W on [0,90), 300 W on [90,180), repeated, window 60 s on [0, 600):
    # minute means 100, 200, 300, 100, 200, 300, 100, 200, 300, 100 -> |diffs| six 100s, three 200s
    times = np.arange(0, 600, 90, dtype="int64")
    vals = np.where(np.arange(len(times)) % 2 == 0, 100.0, 300.0)
    mx, p95 = ramps(times, vals, 0, 600, 60)
    # sorted diffs [100]*6 + [200]*3; p95 position 0.95*8 = 7.6 -> 200
    assert (mx, p95) == (200.0, 200.0)
    # window 180 averages the wave out: every mean is 200 -> no ramp
    assert ramps(times, vals, 0, 540, 180) == (0.0, 0.0)

    # minute means 0, 10, 30, 60, 100, 100 -> |diffs| 10, 20, 30, 40, 0;
    # sorted [0, 10, 20, 30, 40]: linear p95 at position 0.95*4 = 3.8 -> 30 + 0.8*10 = 38.
    # A trailing partial bin (1000 W on [360, 370)) is not a full window and is ignored.
    t = np.array([0, 60, 120, 180, 240, 360], dtype="int64")
    v = np.array([0.0, 10.0, 30.0, 60.0, 100.0, 1000.0])
    mx, p95 = ramps(t, v, 0, 370, 60)
    assert mx == pytest.approx(40.0)
    assert p95 == pytest.approx(38.0)
    # fewer than two full windows: defined as 0.0
    assert ramps(t, v, 0, 119, 60) == (0.0, 0.0)
    with pytest.raises(ValueError):
        ramps(t, np.column_stack([v, v]), 0, 370, 60)


def test_build_timeline_missing_column():
    s = four_node_system()
    with pytest.raises(ValueError, match="it_power_w"):
        build_timeline(pd.DataFrame({"time": [0], "busy_nodes": [0], "queued_jobs": [0], "running_jobs": [0]}),
                       s, 0, 10, 5)
