"""Aggregation (exact statistics with Dask), rank statistics and the HTML report."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinsweep.sweep.aggregate import STAT_COLUMNS, aggregate, exact_stats
from twinsweep.sweep.api import run_sweep
from twinsweep.sweep.cli import main
from twinsweep.sweep.ranking import average_ranks, block_ranks, bootstrap_mean_rank, chi2_sf, kendall_w, win_matrix
from twinsweep.sweep.report import report_sections
from test_sweep_support import write_spec


# ------------------------------------------------------------------------------ exact statistics
def test_exact_stats_match_numpy():
    rng = np.random.default_rng(3)
    v = rng.normal(size=101)
    s = exact_stats(np.append(v, np.nan))
    assert s["n"] == 101
    assert s["median"] == np.median(v) and s["min"] == v.min() and s["max"] == v.max()
    assert s["std"] == pytest.approx(np.std(v, ddof=1))
    assert s["q05"] == np.quantile(v, 0.05) and s["q95"] == np.quantile(v, 0.95)
    assert np.isnan(exact_stats(np.array([1.0]))["std"])
    assert exact_stats(np.array([np.nan]))["n"] == 0


def test_aggregate_equals_numpy_per_group(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for ds in ("a", "b"):
        for pol in ("fcfs", "sjf", "ljf"):
            for seed in range(7):
                rows.append({"key": f"{ds}{pol}{seed}", "dataset": ds, "window": "w", "policy": pol,
                             "backfill": "easy", "seed": seed, "wait_mean_s": rng.exponential(100),
                             "utilization": rng.uniform()})
    df = pd.DataFrame(rows)
    df.to_parquet(tmp_path / "runs.parquet", index=False)
    agg = aggregate(tmp_path / "runs.parquet", ["dataset", "window", "policy", "backfill"],
                    ["wait_mean_s", "utilization"])
    assert list(agg.columns) == ["dataset", "window", "policy", "backfill", "metric", *STAT_COLUMNS]
    assert len(agg) == 2 * 3 * 2
    for _, r in agg.iterrows():
        v = df[(df.dataset == r.dataset) & (df.policy == r.policy)][r.metric].to_numpy()
        assert r["n"] == 7
        assert r["q95"] == np.quantile(v, 0.95) and r["median"] == np.median(v)
        assert r["std"] == pytest.approx(v.std(ddof=1))


# ------------------------------------------------------------------------------ rank statistics
def test_kendall_w_known_values():
    # perfect agreement
    r = np.array([[1, 2, 3, 4]] * 5, dtype=float)
    assert kendall_w(r)["W"] == pytest.approx(1.0)
    # two raters in exact opposition: W = 0
    assert kendall_w(np.array([[1, 2, 3], [3, 2, 1]], dtype=float))["W"] == pytest.approx(0.0)
    # ties: identical tied rankings agree perfectly only with the tie correction
    t = np.array([[1.5, 1.5, 3, 4]] * 3)
    assert kendall_w(t)["W"] == pytest.approx(1.0)
    # hand-computed example: m=3, n=4
    x = np.array([[1, 2, 3, 4], [2, 1, 3, 4], [1, 3, 2, 4]], dtype=float)
    R = x.sum(axis=0)
    S = ((R - R.mean()) ** 2).sum()
    assert kendall_w(x)["W"] == pytest.approx(12 * S / (9 * (64 - 4)))
    assert np.isnan(kendall_w(np.array([[1.0, 2.0]]))["W"])  # one rater


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=5, max_size=5), min_size=2, max_size=6))
def test_kendall_w_in_unit_interval(rows):
    ranks = block_ranks(np.array(rows, dtype=float), "min")
    w = kendall_w(ranks)["W"]
    assert np.isnan(w) or 0.0 <= w <= 1.0


def test_block_ranks_direction_ties_and_nan():
    v = np.array([[3.0, 1.0, 1.0, np.nan]])
    assert block_ranks(v, "min").tolist() == [[3.0, 1.5, 1.5, 4.0]]
    assert block_ranks(v, "max").tolist() == [[1.0, 2.5, 2.5, 4.0]]


def test_bootstrap_is_seeded_and_brackets_mean():
    rng = np.random.default_rng(1)
    ranks = block_ranks(rng.normal(size=(10, 4)), "min")
    a = bootstrap_mean_rank(ranks, 500, seed=7)
    b = bootstrap_mean_rank(ranks, 500, seed=7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    mean, lo, hi = a
    assert np.all(lo <= mean + 1e-12) and np.all(mean <= hi + 1e-12)


def test_win_matrix():
    v = np.array([[1.0, 2.0, 2.0], [3.0, 2.0, 1.0]])
    w = win_matrix(v, "min")
    assert w[0, 1] == 0.5 and w[1, 0] == 0.5 and w[1, 2] == 0.0 and w[2, 1] == 0.5
    assert np.isnan(w[0, 0])


# ------------------------------------------------------------------------------ the report
@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep")
    spec = write_spec(d, seeds=3, extra='timeline = { dataset = "tiny", window = "all", seed = 1 }',
                      policies=("fcfs", "sjf", "ljf"), backfills=("none", "easy"))
    return run_sweep(spec, backend="local")


def test_the_report_defines_every_figure_it_ranks(small_sweep):
    """'What the figures mean': each ranked or tabled metric with its unit, direction and the
    catalogue's definition (the censored mean wait says why it can be below the mean wait)."""
    from twinsweep.core.metrics import metric

    html = small_sweep.report.read_text()
    sec = html[html.index('id="definitions"'):html.index('id="failures"')]
    rows = re.findall(r"<tr>(.*?)</tr>", sec, flags=re.S)
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, flags=re.S) for r in rows[1:]]
    by_col = {c[-1]: c for c in cells}
    m = metric("wait_censored_mean_s")
    assert by_col["wait_censored_mean_s"][:3] == [m.label, "h", "lower"]
    assert "can be below 'mean wait'" in by_col["wait_censored_mean_s"][3]
    assert by_col["utilization"][1:3] == ["%", "higher"]
    # power in the unit each table scales it to (Metric.scaled_to), not the catalogue's one kW
    assert by_col["peak_power_w"][1] == "W, kW, MW or GW, as each table's values need (stored in W)"
    # what each policy and backfill of the grid does, from its registered class's docstring
    what = {(c[0], c[1]): c[2] for c in cells if len(c) == 3}
    assert set(what) == {("policy", p) for p in ("fcfs", "sjf", "ljf")} | {("backfill", b) for b in ("none", "easy")}
    assert what[("policy", "sjf")].startswith("Shortest job first by requested time limit")
    assert "shadow time" in what[("backfill", "easy")] and "``" not in "".join(what.values())


def test_report_states_each_window_and_its_jobs(small_sweep):
    """The study table names every dataset's windows with the jobs submitted in them (seed 0, the
    trace as recorded: write_spec's 40-job trace, whole-trace window)."""
    html = small_sweep.report.read_text()
    sec = html[html.index('id="summary"'):html.index('id="ranks"')]
    assert "tiny: all (40 jobs)" in sec


def test_stability_sentences_say_what_does_not_survive_and_tiny_p_values():
    import types

    from twinsweep.sweep.report_stability import conclusion_text

    row = dict(objective="wait_mean_s", a="sjf+easy", b="fcfs+easy", against="runner-up", ties=0)
    flip = conclusion_text(types.SimpleNamespace(**row, survives=False, a_better=7, b_better=1, blocks=8,
                                                 flip_share=1 / 8, holds_share=7 / 8, p_sign=0.0703),
                           {"wait_mean_s": "min"})
    assert flip.endswith("flips in 12 % of blocks (1 of 8, ahead in 7): does not survive (sign test p = 0.070)")
    held = conclusion_text(types.SimpleNamespace(**row, survives=True, a_better=24, b_better=0, blocks=24,
                                                 flip_share=0.0, holds_share=1.0, p_sign=2 * 0.5 ** 24),
                           {"wait_mean_s": "min"})
    assert held.endswith("(24 of 24): survives (sign test p < 0.001)")  # 1.2e-7, not "p = 0"



def test_stability_wording_when_reversal_and_sign_test_disagree():
    """A conclusion reversed in 1 of 24 blocks whose sign test is significant (23 vs 1: p = 2 * 25 /
    2^24 = 3.0e-6) holds on balance, and one never reversed but ahead in only 2 of 8 (6 ties split
    3/3: k = 5 of n = 8, p = 2 * (1 + 8 + 28 + 56) / 256 = 0.73) is not significant; neither reads as
    plain "survives" / "does not survive". The table cell shows the ties on a reversed line too."""
    import types

    from twinsweep.sweep.report_stability import _cell, conclusion_text
    from twinsweep.sweep.stability import sign_test

    row = dict(objective="wait_mean_s", a="sjf+easy", b="fcfs+easy", against="runner-up")
    assert sign_test(23, 1, 0) == pytest.approx(2 * 25 / 2 ** 24)
    assert sign_test(2, 0, 6) == pytest.approx(2 * (1 + 8 + 28 + 56) / 256)
    mostly = types.SimpleNamespace(**row, survives=False, a_better=23, b_better=1, ties=0, blocks=24,
                                   flip_share=1 / 24, holds_share=23 / 24, p_sign=sign_test(23, 1, 0))
    text = conclusion_text(mostly, {"wait_mean_s": "min"})
    assert text.endswith("(1 of 24, ahead in 23): holds on balance (significant), not in every block "
                         "(sign test p < 0.001)")
    assert "does not survive" not in text
    ties = types.SimpleNamespace(**row, survives=True, a_better=2, b_better=0, ties=6, blocks=8,
                                 flip_share=0.0, holds_share=2 / 8, p_sign=sign_test(2, 0, 6))
    text = conclusion_text(ties, {"wait_mean_s": "min"})
    assert text.endswith("(2 of 8, tied in 6): never reversed, but not significant: the blocks mostly tie "
                         "(sign test p = 0.73)")
    few = types.SimpleNamespace(**row, survives=True, a_better=3, b_better=0, ties=0, blocks=3,
                                flip_share=0.0, holds_share=1.0, p_sign=0.25)
    assert conclusion_text(few, {"wait_mean_s": "min"}).endswith(": survives — too few blocks for a sign "
                                                                  "test at 5 % (need ≥ 6)")
    flip = types.SimpleNamespace(**row, survives=False, a_better=4, b_better=2, ties=2, blocks=8,
                                 flip_share=2 / 8, holds_share=4 / 8, p_sign=sign_test(4, 2, 2))
    assert _cell(flip) == ("fcfs+easy: reversed in 2 of 8 (25 %), ahead in 4, tied in 2 — does not survive; "
                           "p = 0.73")  # 4 + 1 of 8 after the ties split: as the case above


def test_report_has_every_section(small_sweep):
    res = small_sweep
    assert res.report is not None and res.report.name == "index.html"
    html = res.report.read_text()
    for sid in report_sections():
        assert f'id="{sid}"' in html, sid
    # self-contained: charts inline (SVG), any image embedded, no external resource
    imgs = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert all(s.startswith("data:image/png;base64,") for s in imgs)
    assert html.count("<svg ") >= 16 and not re.search(r'(href|src)="(https?:)?//', html)
    assert "http://" not in html.split("<body>")[0] and "<script" not in html
    assert "Kendall and B. Babington Smith" in html and "1939" in html
    assert "(assumed)" in html  # generic header system: power assumed
    assert "twinsweep test cluster" in html  # provenance from the trace header
    assert "fcfs+easy" in html and "ljf+none" in html
    # the verdict is the first section and names a recommended variant; the page reads its sections in
    # report_sections() order with a table of contents
    ids = re.findall(r'<h2 id="([^"]+)"', html)
    assert ids == list(report_sections())
    verdict = html[html.index('id="verdict"'):html.index('id="summary"')]
    assert re.search(r'run <b class="best">(fcfs|sjf|ljf)\+(none|easy)</b>', verdict)
    assert all(f'href="#{sid}"' in html.split("</nav>")[0] for sid in report_sections())
    # headers are labels with units, never raw metric keys; cells never show sci notation or None
    heads = re.findall(r"<th[^>]*>(.*?)</th>", html)
    assert not [h for h in heads if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+( .*)?", h)]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html)
    assert not [c for c in cells if re.search(r"(?<![\w.])\d+(\.\d+)?[eE][+-]?\d+(?!\w)|^None$|^nan$|(?<![\w.])\d+\.\d{7,}(?!\w)", c)]
    rep = res.out / "report"
    for f in ("ranks.csv", "wins.csv", "kendall_w.csv", "runs.csv", "box_bsld_mean.svg",
              "box_peak_power_w.svg", "timeline_tiny_all_seed1.svg"):
        assert (rep / f).exists(), f
    ranks = pd.read_csv(rep / "ranks.csv")
    assert set(ranks["variant"]) == {f"{p}+{b}" for p in ("fcfs", "sjf", "ljf") for b in ("none", "easy")}
    assert ((ranks["ci_low"] <= ranks["mean_rank"] + 1e-9) & (ranks["mean_rank"] <= ranks["ci_high"] + 1e-9)).all()
    kw = pd.read_csv(rep / "kendall_w.csv")
    assert (kw["seeds (m)"] == 3).all() and (kw["variants (n)"] == 6).all()
    agg = pd.read_csv(res.out / "aggregate.csv")
    assert {"wait_mean_s", "wait_p95_s", "bsld_mean", "awrt_s", "utilization", "facility_energy_j", "edp_js",
            "peak_power_w", "ramp_1min_max_w", "ramp_1min_p95_w", "ramp_15min_max_w",
            "ramp_15min_p95_w"} <= set(agg["metric"])
    assert (agg["n"] == 3).all()


def test_report_cli_rebuilds(small_sweep, capsys):
    (small_sweep.out / "report" / "index.html").unlink()
    assert main(["report", str(small_sweep.out)]) == 0
    assert "report:" in capsys.readouterr().out
    assert (small_sweep.out / "report" / "index.html").exists()


def test_report_cli_on_empty_folder(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no sweep results here" in capsys.readouterr().err


def test_report_rebuilds_a_deleted_runs_table_from_the_run_folders(tmp_path, capsys):
    """Issue trialL item 3: `twinsweep report` on a sweep folder whose runs.parquet is gone
    rebuilds it from the complete run folders (as `twinsweep status` does, same code), says so
    in one line, and builds the report; "no sweep results" only when there is no run folder."""
    import shutil

    from twinsweep.sweep.store import ResultStore

    spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none", "easy"))
    res = run_sweep(spec, backend="local", report=False)
    before = pd.read_parquet(res.table_path)
    res.table_path.unlink()
    assert main(["report", str(res.out)]) == 0
    out, err = capsys.readouterr()
    assert "runs.parquet was missing: rebuilt from 2 complete run folder(s) (of 2 planned)" in err
    assert "report:" in out and (res.out / "report" / "index.html").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(res.table_path), before)
    assert ResultStore(res.out).table_info()["complete"] is True

    # a run folder missing too: the table is rebuilt from what is there, marked partial
    res.table_path.unlink()
    gone = sorted((res.out / "runs").iterdir())[0]
    shutil.rmtree(gone)
    assert main(["report", str(res.out)]) == 0
    assert "rebuilt from 1 complete run folder(s) (of 2 planned)" in capsys.readouterr().err
    info = ResultStore(res.out).table_info()
    assert info["runs"] == 1 and info["planned"] == 2 and info["complete"] is False
    assert list(pd.read_parquet(res.table_path)["key"]) == sorted(p.name for p in (res.out / "runs").iterdir())

    # no run folder at all: nothing to report, and nothing written
    res.table_path.unlink()
    shutil.rmtree(res.out / "runs")
    assert main(["report", str(res.out)]) == 2
    err = capsys.readouterr().err
    assert "no sweep results here (missing runs.parquet, and no run folder in" in err
    assert len(err.strip().splitlines()) == 1 and not res.table_path.exists() and not (res.out / "runs").exists()


def test_sweep_cli_prints_report_path(tmp_path, capsys):
    spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none", "easy"))
    assert main(["sweep", str(spec), "--backend", "local", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "2 run(s) done now" in out and "report:" in out and "index.html" in out
    # no replay in the grid: the page says that the twin's closeness to the machine is not measured here
    page = (tmp_path / "out" / "report" / "index.html").read_text()
    assert "How close the twin is to what these machines really did is not measured in this study" in page
    # the total is split so that it can be matched with the progress bar's (which times the runs only)
    import re
    m = re.search(r"in ([0-9.]+) s: runs ([0-9.]+) s \(as the progress bar timed them\); loading traces, planning, starting "
                  r"and stopping the backend ([0-9.]+) s; "
                  r"tables and report ([0-9.]+) s", out)
    assert m, out
    total, *parts = (float(x) for x in m.groups())
    # two runs of a tiny spec can take under 0.05 s on an idle machine: each part is shown, none negative
    assert all(p >= 0 for p in parts) and abs(sum(parts) - total) <= 0.15  # three 1-decimal roundings


def test_figure_file_names_differ_for_names_that_differ_only_in_unsafe_characters():
    from twinsweep.sweep.report import _fname
    names = {_fname("wins", ds, "wait_mean_s") for ds in ("pwa/KTH", "pwa-KTH", "pwa KTH", "pwa_KTH")}
    assert len(names) == 4
    assert _fname("box", "wait_mean_s") == "box_wait_mean_s"  # safe parts are kept as they are
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) for n in names)


# ------------------------------------------------------------------------------ numpy rank statistics
def test_average_ranks_by_hand_and_against_scipy():
    v = np.array([[3.0, 1.0, 1.0, np.inf, np.inf], [5.0, 4.0, 3.0, 2.0, 1.0]])
    assert average_ranks(v).tolist() == [[3.0, 1.5, 1.5, 4.5, 4.5], [5.0, 4.0, 3.0, 2.0, 1.0]]
    ss = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(50, 9)).astype(float)
    assert np.array_equal(average_ranks(x), np.vstack([ss.rankdata(r, method="average") for r in x]))


def test_chi2_sf_closed_form():
    # k = 2: exp(-x/2); k = 1: erfc(sqrt(x/2)) (by hand)
    import math

    assert chi2_sf(3.0, 2) == pytest.approx(math.exp(-1.5), rel=1e-15)
    assert chi2_sf(2.0, 1) == pytest.approx(math.erfc(1.0), rel=1e-15)
    assert chi2_sf(0.0, 5) == 1.0 and chi2_sf(1e6, 30) == 0.0
    ss = pytest.importorskip("scipy.stats")
    for k in (1, 2, 3, 7, 11, 40):
        for x in (0.1, 1.0, 5.0, 30.0, 120.0):
            assert chi2_sf(x, k) == pytest.approx(ss.chi2.sf(x, k), rel=1e-9, abs=1e-300)
    with pytest.raises(ValueError):
        chi2_sf(1.0, 0)


# ------------------------------------------------------------------------------ plotting helpers
def test_variant_styles_are_unique_stable_and_readable():
    from twinsweep.sweep.plotting import PALETTE, axis_range, contrast_ratio, variant_styles

    vs = [f"{p}+{b}" for p in ("fcfs", "sjf", "ljf") for b in ("none", "firstfit", "easy", "conservative")]
    group = {v: v.split("+")[1] for v in vs}
    st = variant_styles(vs, group)
    assert st == variant_styles(vs, group)  # the same map for every figure
    assert len({(s.color, s.linestyle) for s in st.values()}) == len(vs)
    assert len({s.color for s in st.values()}) == 12  # 12 variants: 12 colours
    assert st["fcfs+easy"].linestyle == st["ljf+easy"].linestyle  # line style by backfill
    many = variant_styles([f"v{i}" for i in range(48)])
    assert len({(s.color, s.linestyle) for s in many.values()}) == 48
    assert all(contrast_ratio(c) >= 3.0 for c in PALETTE)  # WCAG 2.1 non-text contrast on white
    assert contrast_ratio("#000000") == pytest.approx(21.0)
    # axes start at the floor (0; 1 for PUE) or span min_span: a 0.0012 PUE spread is not magnified
    from twinsweep.core.metrics import metric

    lo, hi = axis_range(metric("pue_avg"), 1.0988, 1.1000)
    assert lo == 1.0 and hi > 1.1
    lo, hi = axis_range(metric("peak_power_w"), 27.6, 28.2)
    assert lo == 0.0
    lo, hi = axis_range(metric("tower_return_temp_mean_c"), 34.85, 35.0)
    assert hi - lo >= 5.0 and lo < 34.85 and hi > 35.0


def test_pyplot_has_no_offset_labels():
    from twinsweep.sweep.plotting import pyplot

    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1.0988, 1.1000])
    fig.canvas.draw()
    assert ax.yaxis.get_major_formatter().get_offset() == ""
    plt.close(fig)


def test_power_parameter_labels_have_units():
    from twinsweep.sweep.report import _cell, _param_label

    assert _param_label("cpu_idle_w") == "CPU idle [W]"
    assert _param_label("node_converter.eta") == "node converter: efficiency η"
    assert _param_label("primary_flow_kg_s") == "primary flow [kg/s]"
    assert _param_label("tower_approach_c") == "tower approach [K]"
    assert _param_label("cp_j_per_kg_k") == "specific heat c_p [J/(kg·K)]"
    assert [_cell(100.0), _cell(1.0), _cell(769.9275362318841), _cell(None), _cell([]), _cell(False), _cell(0.4)] == \
        ["100", "1", "769.9", "—", "—", "no", "0.4"]


def test_power_parameters_are_shown_in_the_si_unit_of_their_value():
    from twinsweep.sweep.report import _cell, _param_row

    label, v = _param_row("design_heat_w", 1411436.36)  # Theta's generic cooling plant: 1.411 MW, not 1,411,436 W
    assert (label, _cell(v)) == ("design heat [MW]", "1.411")
    assert _param_row("cdu_pump_w", 769.9) == ("CDU pump [W]", 769.9)
    label, v = _param_row("node_converter.c_w", 12000.0)
    assert (label, _cell(v)) == ("node converter: constant loss c [kW]", "12")
    assert _param_row("primary_flow_kg_s", 2.5e4) == ("primary flow [kg/s]", 2.5e4)  # only watts are rescaled
    assert _param_row("cpu_idle_w", 0.0) == ("CPU idle [W]", 0.0)
    assert _param_row("it_meter", "rectifier_output") == (
        "PUE's IT power metered at", "the rectifiers' output (the rectifier stage is a room UPS: its losses are "
        "facility overhead)")


def test_a_box_hover_text_carries_the_axis_unit():
    import numpy as np

    from twinsweep.sweep.plotting import variant_styles
    from twinsweep.sweep.svgchart import box_strips

    svg = box_strips([("d / w", {"a": np.array([1.0, 2.0, 3.0])})], ["a"], variant_styles(["a"]), [(0.0, 4.0)],
                     "mean wait [h]", "waits", units=["h"])
    assert "a: median 2.00 h, quartiles 1.50–2.50 h, range 1.00–3.00 h, 3 run(s)" in svg


def test_a_scatter_points_hover_text_rounds_its_spread_as_the_tables_do():
    """The Pareto chart's hover text: 12.34 ± 0.727 reads 12.3 ± 0.7 (3 significant digits, the
    spread with the value's decimals), a spread too small for them one significant digit."""
    from twinsweep.sweep.svgchart import _mean_sd

    assert _mean_sd(12.34, 0.727) == "12.3 ± 0.7"
    assert _mean_sd(1234.5, 3.2) == "1,234 ± 3"
    assert _mean_sd(1.0001, 0.00003) == "1.00 ± 0.00003"
    assert _mean_sd(5.0, float("nan")) == _mean_sd(5.0, 0.0) == "5.00"


def test_stability_wording_edge_cases_follow_the_counts():
    """6 ahead and 2 tied of 8 (ties split: 7 of 8, p = 2 * (1 + 8) / 2^8 = 0.070) is not
    significant, but the blocks do not mostly tie; 4 of 4 survives only as far as 4 blocks can
    show; 8 ties of 8 is a tie, not 'reversed in 0'."""
    import types

    from twinsweep.sweep.report_stability import _cell, standing
    from twinsweep.sweep.stability import sign_test

    row = dict(objective="wait_mean_s", a="sjf+easy", b="fcfs+easy", against="runner-up")
    six = types.SimpleNamespace(**row, survives=True, a_better=6, b_better=0, ties=2, blocks=8, flip_share=0.0,
                                holds_share=6 / 8, p_sign=sign_test(6, 0, 2))
    assert sign_test(6, 0, 2) == pytest.approx(2 * (1 + 8) / 2 ** 8)  # k = 7 of n = 8
    assert standing(six) == "never reversed, but not significant"
    four = types.SimpleNamespace(**row, survives=True, a_better=4, b_better=0, ties=0, blocks=4, flip_share=0.0,
                                 holds_share=1.0, p_sign=sign_test(4, 0, 0))
    assert _cell(four) == "fcfs+easy: ahead in 4 of 4 — survives (too few blocks to test)"
    ties = types.SimpleNamespace(**row, survives=False, a_better=0, b_better=0, ties=8, blocks=8, flip_share=0.0,
                                 holds_share=0.0, p_sign=1.0)
    assert standing(ties) == "tied in every block" and _cell(ties) == "fcfs+easy: tied in all 8; p = 1.0"


def test_an_even_split_is_not_worded_as_a_reversal():
    """4 blocks each way of 8: 'split 4–4', not 'reversed in 4 of 8'."""
    import types

    from twinsweep.sweep.report_stability import _cell

    r = types.SimpleNamespace(objective="wait_mean_s", a="sjf+easy", b="fcfs+easy", against="runner-up",
                              survives=False, a_better=4, b_better=4, ties=0, blocks=8, flip_share=0.5,
                              holds_share=0.5, p_sign=1.0)
    assert _cell(r) == "fcfs+easy: split 4–4 of 8 — does not survive; p = 1.0"


def test_report_rebuilds_a_table_older_than_runs_completed_after_it(tmp_path, capsys):
    """A detached Slurm sweep writes runs.parquet when it submits (no run done yet) and its array
    tasks complete the runs afterwards: `twinsweep report` rebuilds the table from the run folders
    (it reported every run as missing before) and says so in one line."""
    import shutil

    from twinsweep.sweep.api import _rebuild_table
    from twinsweep.sweep.store import ResultStore

    spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none", "easy"))
    res = run_sweep(spec, backend="local", report=False)
    later = sorted((res.out / "runs").iterdir())[0]
    shutil.move(str(later), str(tmp_path / "aside"))
    _rebuild_table(ResultStore(res.out))  # the table as the submission left it: one run of two
    assert ResultStore(res.out).table_info()["runs"] == 1
    shutil.move(str(tmp_path / "aside"), str(later))  # the array task completes it
    assert main(["report", str(res.out)]) == 0
    err = capsys.readouterr().err
    assert "runs.parquet lacked 1 run(s) completed after it was written: rebuilt from the run folders (2 of 2 planned)" in err
    info = ResultStore(res.out).table_info()
    assert info["runs"] == 2 and info["complete"] is True
    assert main(["report", str(res.out)]) == 0 and "lacked" not in capsys.readouterr().err  # current: not rebuilt again
