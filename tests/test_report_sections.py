"""The report's decision sections after the verdict: trade-offs (sweep/report_pareto.py), ranking
stability under run-time uncertainty (sweep/stability.py, sweep/report_stability.py), the twin's stated
error (sweep/twin_error.py) and fidelity to the recorded schedule (sweep/report_fidelity.py). Values
are computed by hand from synthetic run tables and run folders."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from twinsweep.core.errors import ConfigError
from twinsweep.sweep.report_fidelity import fidelity_table
from twinsweep.sweep.report_pareto import pareto_metrics, pareto_table
from twinsweep.sweep.stability import conclusions, pair_flips, sign_test, window_stability
from twinsweep.sweep.store import ResultStore
from twinsweep.sweep.twin_error import SMALLER_THAN_ERROR, WITHIN_NOISE, difference_table, load_twin_errors
from twinsweep.sweep.verdict import OVERALL, TRADEOFF, compute_verdict


def _runs(waits: dict[str, list[float]], dataset="d", window="w") -> pd.DataFrame:
    """One run per seed and variant; waits: variant -> wait per seed."""
    return pd.DataFrame([{"dataset": dataset, "window": window, "seed": s, "variant": v, "wait_mean_s": w}
                         for v, ws in waits.items() for s, w in enumerate(ws)])


# ------------------------------------------------------------------------------ stability
def test_sign_test_exact_values_with_ties_split():
    assert sign_test(6, 0, 0) == pytest.approx(2 * 0.5 ** 6)  # 0.031: the smallest n that reaches 5 %
    assert sign_test(5, 0, 0) == pytest.approx(2 * 0.5 ** 5)  # 0.0625
    # 2 ties split one each way: 5 of 6; an odd third tie is dropped (Demsar 2006)
    p56 = 2 * (6 + 1) / 64
    assert sign_test(4, 0, 2) == pytest.approx(p56) and sign_test(4, 0, 3) == pytest.approx(p56)
    assert sign_test(0, 0, 0) == 1.0 and sign_test(3, 3, 0) == pytest.approx(1.0)


def test_sign_test_matches_scipy_binomtest():
    # independent method: scipy's exact binomial test (the exact sum here replaced it to keep scipy
    # out of the report's import); every split of up to 40 comparisons, ties even and odd
    from scipy.stats import binomtest
    for n in range(0, 41):
        for a in range(n + 1):
            for ties in (0, 1, 2):
                half = ties // 2
                k, m = a + half, n + 2 * half
                want = 1.0 if m == 0 else binomtest(k, m, 0.5).pvalue
                assert sign_test(a, n - a, ties) == pytest.approx(want, rel=1e-12, abs=1e-300), (a, n - a, ties)


def test_pair_flips_and_window_stability_by_hand():
    # 5 seeds; a beats b in 4 and loses 1; c is worst everywhere; d equals a in every seed
    runs = _runs({"a": [1, 1, 1, 1, 3], "b": [2, 2, 2, 2, 2], "c": [9, 9, 9, 9, 9], "d": [1, 1, 1, 1, 3]})
    pf = pair_flips(runs, ["a", "b", "c", "d"], {"wait_mean_s": "min"}, {}, ["wait_mean_s"])
    assert len(pf) == 6
    ab = pf[(pf["a"] == "a") & (pf["b"] == "b")].iloc[0]
    assert (ab["seeds"], ab["a_better"], ab["b_better"], ab["ties"]) == (5, 4, 1, 0)
    assert ab["flip_share"] == pytest.approx(0.2) and ab["p_sign"] == pytest.approx(2 * 6 / 32)
    ad = pf[(pf["a"] == "a") & (pf["b"] == "d")].iloc[0]  # identical: every seed a tie, grid order
    assert (ad["a_better"], ad["b_better"], ad["ties"], ad["tie_share"]) == (0, 0, 5, 1.0)
    ws = window_stability(runs, ["a", "b", "c", "d"], {"wait_mean_s": "min"}, {}, ["wait_mean_s"]).iloc[0]
    # mean ranks: a = d = (4*1.5 + 2.5)/5 = 1.7, b = (4*3 + 1)/5 = 2.6, c = 4: order a, d, b, c
    assert ws["order"] == "a > d > b > c"
    # pairs reversed in some seed: (a,b) and (d,b); b beats the leader a in seed 4, so no place is
    # the same in every seed: stable top 0
    assert (ws["pairs"], ws["pairs_flipping"], ws["stable_top"]) == (6, 2, 0)
    # a leader never beaten (ties are no loss), then d beaten by b in seed 4: place 1 only; c last
    runs2 = _runs({"a": [0, 0, 0, 0, 1], "d": [1, 1, 1, 1, 3], "b": [2, 2, 2, 2, 2], "c": [9, 9, 9, 9, 9]})
    ws2 = window_stability(runs2, ["a", "b", "c", "d"], {"wait_mean_s": "min"}, {}, ["wait_mean_s"]).iloc[0]
    assert ws2["order"] == "a > d > b > c" and ws2["stable_top"] == 1
    # every order the same in every seed: the whole ranking
    runs3 = _runs({"a": [1] * 5, "b": [2] * 5, "c": [3] * 5})
    assert window_stability(runs3, ["a", "b", "c"], {"wait_mean_s": "min"}, {}, ["wait_mean_s"]).iloc[0]["stable_top"] == 3
    assert ws["max_flip_share"] == pytest.approx(0.2)


def test_conclusions_survive_or_flip_over_every_block_of_the_scope():
    # two datasets, 3 seeds each; "sjf" beats the baseline everywhere; against "ljf" it loses one block of d2
    rows = []
    for ds, ljf in (("d1", [5, 5, 5]), ("d2", [5, 0.5, 5])):
        rows.append(_runs({"fcfs+easy": [10, 10, 10], "sjf+easy": [1, 1, 1], "ljf+easy": ljf}, dataset=ds))
    runs = pd.concat(rows, ignore_index=True)
    vs = ["fcfs+easy", "sjf+easy", "ljf+easy"]
    v = compute_verdict(runs, vs, {"wait_mean_s": "min"}, n_boot=50)
    c = conclusions(runs, v, vs)
    over = c[(c["scope"] == OVERALL) & (c["objective"] == "wait_mean_s")].set_index("against")
    assert over.loc["baseline", "a"] == "sjf+easy" and over.loc["baseline", "b"] == "fcfs+easy"
    assert (over.loc["baseline", "a_better"], over.loc["baseline", "blocks"]) == (6, 6)
    assert over.loc["baseline", "survives"] and over.loc["baseline", "p_sign"] == pytest.approx(2 * 0.5 ** 6)
    assert over.loc["runner-up", "b"] == "ljf+easy"
    assert (over.loc["runner-up", "a_better"], over.loc["runner-up", "b_better"]) == (5, 1)
    assert not over.loc["runner-up", "survives"] and over.loc["runner-up", "flip_share"] == pytest.approx(1 / 6)
    d1 = c[(c["scope"] == "d1") & (c["objective"] == "wait_mean_s")].set_index("against")
    assert d1["survives"].all() and (d1["blocks"] == 3).all()
    # one-objective rank = trade-off: the trade-off rows say the same
    t = c[(c["scope"] == OVERALL) & (c["objective"] == TRADEOFF)].set_index("against")
    assert (t.loc["runner-up", "a_better"], t.loc["runner-up", "b_better"]) == (5, 1)


# ------------------------------------------------------------------------------ trade-offs
def test_pareto_table_marks_dominated_variants_by_mean():
    # means (wait, utilisation to maximise): A (1, 0.5), B (2, 0.9), C (3, 0.8) dominated by B, D = A (no strict)
    rows = []
    for v, pts in {"A": [(0.5, 0.4), (1.5, 0.6)], "B": [(2, 0.9), (2, 0.9)], "C": [(2, 0.7), (4, 0.9)],
                   "D": [(1, 0.5), (1, 0.5)], "E": [(np.nan, 0.5), (np.nan, 0.5)]}.items():
        for s, (w, u) in enumerate(pts):
            rows.append({"dataset": "d", "window": "w", "seed": s, "variant": v, "wait_mean_s": w, "utilization": u})
    runs = pd.DataFrame(rows)
    t = pareto_table(runs, list("ABCDE"), "wait_mean_s", "utilization", {"utilization": "max"}).set_index("variant")
    assert t.loc["A", "x_mean"] == 1.0 and t.loc["A", "x_std"] == pytest.approx(np.std([0.5, 1.5], ddof=1))
    assert t.loc["C", "y_mean"] == pytest.approx(0.8)
    assert t["front"].to_dict() == {"A": True, "B": True, "C": False, "D": True, "E": False}
    assert t.loc["C", "dominated_by"] == "B" and t.loc["A", "dominated_by"] == "" and t.loc["E", "dominated_by"] == "—"
    # directions matter: minimising utilisation too, C (3, 0.8) and B (2, 0.9) are dominated by A and D only
    t2 = pareto_table(runs, list("ABCDE"), "wait_mean_s", "utilization", {"utilization": "min"}).set_index("variant")
    assert t2.loc["C", "dominated_by"] == "A, D" and t2.loc["B", "dominated_by"] == "A, D"


def test_pareto_objectives_come_from_the_spec_then_the_tradeoff_then_the_rank():
    study = {"rank": [{"metric": "bsld_mean"}, {"metric": "wait_mean_s"}, {"metric": "utilization"}],
             "report": {"pareto": ["peak_power_w", "bsld_mean"], "tradeoff": [["utilization", 1], ["wait_mean_s", 2]]}}
    assert pareto_metrics(study) == ["peak_power_w", "bsld_mean"]
    assert pareto_metrics(study, ["bsld_mean", "wait_mean_s", "utilization"]) == ["utilization", "wait_mean_s"]
    assert pareto_metrics({"rank": study["rank"], "report": {}}) == ["bsld_mean", "wait_mean_s"]
    assert pareto_metrics({"rank": study["rank"][:1], "report": {}}) == []


def test_pareto_chart_is_svg_in_the_page_styles_with_log_axis_and_hollow_dominated(tmp_path):
    import re

    from twinsweep.core.metrics import metric
    from twinsweep.sweep.plotting import variant_styles
    from twinsweep.sweep.report import _Page
    from twinsweep.sweep.report_pareto import section_pareto

    # waits 3 s .. 900 s (span 300 > 10: log axis), utilisation 0.2 .. 0.9 (linear from the floor 0)
    rows = [{"dataset": "d", "window": "w", "seed": s, "variant": v, "wait_mean_s": w, "utilization": u}
            for v, pts in {"A": [(3, 0.2), (5, 0.3)], "B": [(800, 0.9), (900, 0.8)],
                           "C": [(850, 0.25), (880, 0.3)]}.items() for s, (w, u) in enumerate(pts)]
    styles = variant_styles(list("ABC"))
    pg = _Page(tmp_path, styles=styles)
    study = {"rank": [], "report": {"pareto": ["wait_mean_s", "utilization"]}}
    section_pareto(pg, pd.DataFrame(rows), list("ABC"), study, {"utilization": "max"})
    svg = (tmp_path / "pareto.svg").read_text()
    assert svg.startswith("<svg ") and "".join(pg.parts).count("<svg ") == 1 and not list(tmp_path.glob("*.png"))
    # one marker (r=4.5) per variant in its page colour; C (wait 865, util 0.275) is dominated by B: hollow
    markers = re.findall(r'<circle cx="[^"]+" cy="[^"]+" r="4.5" fill="([^"]+)" stroke="([^"]+)"', svg)
    assert markers == [(styles["A"].color, styles["A"].color), (styles["B"].color, styles["B"].color),
                       ("#ffffff", styles["C"].color)]
    # log x axis (display unit: hours) from 3 s/1.3 to 900 s*1.3 = 0.00064 .. 0.325 h: ticks 1, 2, 5 x 10^k inside
    assert metric("wait_mean_s").scale == 3600
    ticks = re.findall(r'font-size="10" text-anchor="middle" fill="#222222">([^<]+)</text>', svg)
    assert ticks == ["0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2"]
    ylab = re.findall(r'font-size="10" text-anchor="end" fill="#222222">([^<]+)</text>', svg)
    assert ylab == ["0", "20", "40", "60", "80"]  # per cent, floor 0, to 90 % + 6 % of the span
    assert (tmp_path / "pareto.csv").exists()


# ------------------------------------------------------------------------------ the twin's error
def _validation(tmp_path, checksum="sha256:abc", modes=("blind", "restart")):
    fig = {"blind": {"wait_mean_rel_error": -0.5, "noise_floor": {"wait_mean_rel_error_worst": 0.3}},
           "restart": {"wait_mean_rel_error": -0.10, "wait_p95_rel_error": 0.2, "jobs_compared": 99,
                       "noise_floor": {"wait_mean_rel_error_worst": -0.03}}}
    doc = {"checksum": checksum, "trace": "t.swf", "policy": "fcfs", "backfill": "easy",
           "windows": {"reported": [10, 20]}, "modes": {m: fig[m] for m in modes},
           "ranking_stability": {"kendall_tau_min_blind_vs_informed": 0.8}}
    p = tmp_path / "validation.json"
    p.write_text(json.dumps(doc))
    return p


def test_twin_error_takes_the_restart_mode_and_labels_small_differences(tmp_path):
    p = _validation(tmp_path)
    study = {"report": {"validation": [["d", str(p)]]}}
    te = load_twin_errors(study, {"d": {"checksum": "sha256:abc"}})["d"]
    assert te.mode == "restart" and te.policy == "fcfs+easy" and te.reported == (10, 20) and te.tau_min == 0.8
    assert te.errors["wait_mean_s"] == -0.10 and te.noise["wait_mean_s"] == 0.03 and te.noise["bsld_mean"] is None
    # reference mean wait 100; +2 % is within the noise floor (3 %), +5 % smaller than the error (10 %), +50 % is not
    runs = _runs({"ref": [100, 100], "near": [101, 103], "mid": [105, 105], "far": [150, 150]})
    t = difference_table(runs, ["ref", "near", "mid", "far"], {"d": "ref"}, {"d": te}).set_index("variant")
    assert t.loc["near", "difference"] == pytest.approx(0.02) and t.loc["near", "label"] == WITHIN_NOISE
    assert t.loc["mid", "label"] == SMALLER_THAN_ERROR and t.loc["far", "label"] == ""
    assert set(t["metric"]) == {"wait_mean_s"}  # only metrics the runs have
    # blind when there is no restart mode
    assert load_twin_errors(study | {"report": {"validation": [["d", str(_validation(tmp_path, modes=("blind",)))]]}},
                            {})["d"].mode == "blind"


def test_a_bad_validation_file_is_one_clear_error(tmp_path):
    p = _validation(tmp_path, checksum="sha256:other")
    with pytest.raises(ConfigError, match=r"report\.validation\.d: .*validation\.json.*not the same trace"):
        load_twin_errors({"report": {"validation": [["d", str(p)]]}}, {"d": {"checksum": "sha256:abc"}})
    with pytest.raises(ConfigError, match="cannot read"):
        load_twin_errors({"report": {"validation": [["d", str(tmp_path / "gone.json")]]}}, {})
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ConfigError, match="no 'modes'"):
        load_twin_errors({"report": {"validation": [["d", str(tmp_path / "x.json")]]}}, {})
    with pytest.raises(ConfigError, match="has none of the modes"):
        load_twin_errors({"report": {"validation": [["d", str(_validation(tmp_path, modes=()))]]}}, {})


# ------------------------------------------------------------------------------ fidelity
def _run_dir(store: ResultStore, key: str, starts: list[int | None], submit: list[int], nodes: int = 4) -> None:
    d = store.run_dir(key)
    d.mkdir(parents=True)
    n = len(starts)
    st = pd.array(starts, dtype="Int64")
    pd.DataFrame({"trace_index": np.arange(n), "submit_time": submit, "start_time": st,
                  "end_time": st + 100, "nodes": [1] * n, "prepopulated": [False] * n}).to_parquet(d / "jobs.parquet")
    (d / "manifest.json").write_text(json.dumps({"window": {"start": 0, "end": 3600}, "system": {"nodes": nodes}}))


def test_fidelity_compares_every_variant_with_the_recorded_schedule(tmp_path):
    store = ResultStore(tmp_path)
    submit = [0, 0, 100, 200]
    _run_dir(store, "rep", [0, 100, 300, 400], submit)  # recorded waits 0, 100, 200, 200: mean 125
    _run_dir(store, "v1", [0, 200, 300, 700], submit)   # waits 0, 200, 200, 500: mean 225 (+80 %)
    _run_dir(store, "v2", [0, 100, 300, None], submit)  # never starts job 3: compared on 3 jobs
    _run_dir(store, "v1s1", [0, 0, 100, 200], submit)
    runs = pd.DataFrame({"key": ["rep", "v1", "v2", "v1s1"], "dataset": "d", "window": "w", "seed": [0, 0, 0, 1],
                         "variant": ["replay+none", "a", "b", "a"]})
    t = fidelity_table(store, runs, ["a", "b"], ["replay+none"]).set_index("variant")
    assert list(t.index) == ["a", "b"]  # seed 1 is not compared: its replay is not the record
    assert t.loc["a", "jobs_compared"] == 4 and t.loc["a", "wait_mean_rel_error"] == pytest.approx(100 / 125)
    # |start errors| 0, 100, 0, 300: median 50, within 1 h all
    assert t.loc["a", "start_error_median_s"] == pytest.approx(50) and t.loc["a", "start_within_1h_frac"] == 1.0
    assert t.loc["b", "jobs_compared"] == 3 and t.loc["b", "wait_mean_rel_error"] == pytest.approx(0.0)
    assert json.loads(t.loc["b", "exclusions"]) == {"not started by the twin (rejected, or queued at its end)": 1}
    assert (t["reference_key"] == "rep").all()
    # no reference at seed 0: nothing to compare
    assert fidelity_table(store, runs[runs["seed"] == 1], ["a"], ["replay+none"]).empty


# ------------------------------------------------------------------------------ one real sweep
@pytest.mark.filterwarnings("ignore::twinsweep.core.run.ReplayOversubscribedWarning")  # replay on 16 nodes
def test_report_of_a_sweep_with_the_recorded_schedule(tmp_path):
    import re

    from test_sweep_support import write_spec
    from twinsweep.sweep.api import run_sweep

    spec = write_spec(tmp_path, seeds=2, policies=("fcfs", "sjf", "replay"), backfills=("none", "easy"), n_jobs=30,
                      extra='pareto = ["wait_mean_s", "utilization"]')
    res = run_sweep(spec, backend="local")
    page = res.report.read_text()
    ids = re.findall(r'<h2 id="([^"]+)"', page)
    assert ids[:4] == ["verdict", "tradeoffs", "stability", "fidelity"]
    rep = res.out / "report"
    ranked = {f"{p}+{b}" for p in ("fcfs", "sjf") for b in ("none", "easy")}
    # the recorded schedule is the reference row: never ranked, never on the Pareto view
    assert set(pd.read_csv(rep / "ranks.csv")["variant"]) == ranked
    assert set(pd.read_csv(rep / "wins.csv")["variant"]) == ranked
    assert set(pd.read_csv(rep / "pareto.csv")["variant"]) == ranked
    pairs = pd.read_csv(rep / "stability_pairs.csv")
    assert set(pairs["a"]) | set(pairs["b"]) <= ranked and len(pairs) == 6 * pairs["objective"].nunique()
    fid = pd.read_csv(rep / "fidelity.csv")
    assert set(fid["variant"]) == ranked and (fid["reference_key"] == fid["reference_key"].iloc[0]).all()
    verdict = page[page.index('id="verdict"'):page.index('id="tradeoffs"')]
    assert "replay" not in re.sub(r"The recorded schedule \([^)]*\)", "", verdict.split("</ul>")[0])
    assert "too few to tell it from any other variant" in verdict and "P(best) 100" not in verdict  # 2 blocks
    assert 'href="#fidelity"' in verdict and "not measured in this study" not in verdict
    # the trade-off chart is inline SVG (also written as pareto.svg), no PNG
    tradeoffs = page[page.index('id="tradeoffs"'):page.index('id="stability"')]
    assert "<svg " in tradeoffs and "<img " not in tradeoffs
    assert (rep / "pareto.svg").exists() and not (rep / "pareto.png").exists()


def test_pooled_power_display_takes_the_si_prefix_of_the_page_largest_value():
    """A power metric's unit follows the largest pooled value of the rows given (the table: the whole
    page; a figure: its dataset and window): 300 W max -> W, 45 kW -> kW, 2.5 MW -> MW; other
    metrics keep the catalogue's display (job wait in h)."""
    from twinsweep.sweep.report_pooled import POOLED_DISPLAY, display_units

    def summ(*maxes):
        return pd.DataFrame({"metric": ["power_swing_1min_w"] * len(maxes) + ["wait_s"],
                             "max": [*maxes, 7200.0]})

    assert display_units(summ(120.0, 300.0), ["power_swing_1min_w"])["power_swing_1min_w"][1:3] == (1.0, "W")
    assert display_units(summ(999.0, 45_000.0), ["power_swing_1min_w"])["power_swing_1min_w"][1:3] == (1e3, "kW")
    assert display_units(summ(2.5e6), ["power_swing_1min_w"])["power_swing_1min_w"][1:3] == (1e6, "MW")
    assert display_units(summ(float("nan")), ["power_swing_1min_w"])["power_swing_1min_w"] == \
        POOLED_DISPLAY["power_swing_1min_w"]  # nothing pooled: the catalogue's unit
    d = display_units(summ(300.0), ["wait_s"])
    assert d["wait_s"] == POOLED_DISPLAY["wait_s"] and d["wait_s"][2] == "h"


def test_pooled_table_gives_each_dataset_its_own_power_unit():
    """The pooled table of a study over a 100-node machine (power swings up to 536 W) and a large
    one (up to 338 kW): the small machine's p95 of 0.582 W reads "0.582 ... W", not "0.000582" under
    a column-wide kW; a metric in one unit on every dataset (job wait, h) keeps its unit in the
    column title and none in the cells."""
    from twinsweep.sweep.report_pooled import _table_display

    stats = {"median": 0.0, "q25": 0.0, "q75": 0.0}
    summ = pd.DataFrame([
        {"dataset": "kth", "window": "d1", "metric": "power_swing_1min_w", **stats, "q95": 0.582, "max": 536.0},
        {"dataset": "theta", "window": "d2", "metric": "power_swing_1min_w", **stats, "q95": 2e3, "max": 338e3},
        {"dataset": "kth", "window": "d1", "metric": "wait_s", **stats, "q95": 3600.0, "max": 7200.0},
        {"dataset": "theta", "window": "d2", "metric": "wait_s", **stats, "q95": 36000.0, "max": 72000.0}])
    display, header, per_cell = _table_display(summ, ["power_swing_1min_w", "wait_s"], assumed=True)
    assert display[("kth", "d1")]["power_swing_1min_w"][1:3] == (1.0, "W")
    assert display[("theta", "d2")]["power_swing_1min_w"][1:3] == (1e3, "kW")
    assert per_cell == {"power_swing_1min_w"}
    assert header["power_swing_1min_w"] == "1-min power swing (assumed)"
    assert header["wait_s"] == f"{display[('kth', 'd1')]['wait_s'][0]} [h]"


def test_pooled_section_cells_carry_the_unit_of_their_dataset(tmp_path):
    """The section as written: the small machine's cell reads in W, the large one's in kW."""
    from twinsweep.sweep.report_pooled import section_pooled

    cols = {"runs": 5, "runs_skipped": 0, "missing": 0, "n": 100, "min": 0.0, "mean": 1.0, "median": 0.0,
            "std": 1.0, "q05": 0.0, "q25": 0.0, "q75": 0.0}
    pd.DataFrame([{"dataset": "kth", "window": "d1", "policy": "fcfs", "metric": "power_swing_1min_w", **cols,
                   "q95": 0.582, "max": 536.0},
                  {"dataset": "theta", "window": "d2", "policy": "fcfs", "metric": "power_swing_1min_w", **cols,
                   "q95": 2e3, "max": 338e3}]).to_parquet(tmp_path / "distributions.parquet")
    pd.DataFrame([{"dataset": d, "window": w, "policy": "fcfs", "metric": "power_swing_1min_w", "q": q, "value": v}
                  for d, w, top in (("kth", "d1", 536.0), ("theta", "d2", 338e3))
                  for q, v in ((0.0, 0.0), (100.0, top))]).to_parquet(tmp_path / "distribution_quantiles.parquet")
    runs = pd.DataFrame({"dataset": ["kth", "theta"], "window": ["d1", "d2"], "policy": ["fcfs", "fcfs"],
                         "variant": ["fcfs", "fcfs"]})
    tables = []

    from twinsweep.sweep.plotting import variant_styles

    class Page:
        styles = variant_styles(["fcfs"])

        def h(self, *a, **k): pass

        def p(self, *a, **k): pass

        def svg(self, *a, **k): pass

        def table(self, df, **k):
            tables.append(df)

    section_pooled(Page(), tmp_path, runs, ["fcfs"], assumed=False)
    (tab,) = tables
    cells = dict(zip(tab["dataset"], tab["1-min power swing"]))
    assert cells == {"kth": "0 [0–0], p95 0.582, max 536 W", "theta": "0 [0–0], p95 2.00, max 338 kW"}


def test_pooled_job_cells_say_how_many_jobs_they_pool(tmp_path):
    """A variant whose pooled waits are 3 finished jobs must not read like one of 200 (survivorship):
    a job distribution's cell ends with its job count; a power-swing cell does not."""
    from twinsweep.sweep.plotting import variant_styles
    from twinsweep.sweep.report_pooled import section_pooled

    base = {"dataset": "kth", "window": "d1", "runs": 2, "runs_skipped": 0, "missing": 0, "min": 0.0, "mean": 1.0,
            "std": 1.0, "q05": 0.0, "q25": 0.0, "q75": 0.0, "q95": 0.0, "median": 0.0}
    rows = [{**base, "policy": p, "metric": m, "n": n, "max": mx}
            for p, n in (("fcfs", 3), ("sjf", 1234))
            for m, mx in (("wait_s", 7200.0), ("power_swing_1min_w", 500.0))]
    pd.DataFrame(rows).to_parquet(tmp_path / "distributions.parquet")
    pd.DataFrame([{"dataset": "kth", "window": "d1", "policy": r["policy"], "metric": r["metric"], "q": q, "value": v}
                  for r in rows for q, v in ((0.0, 0.0), (1.0, r["max"]))]).to_parquet(
        tmp_path / "distribution_quantiles.parquet")
    runs = pd.DataFrame({"dataset": ["kth", "kth"], "window": ["d1", "d1"], "policy": ["fcfs", "sjf"],
                         "variant": ["fcfs", "sjf"]})
    tables = []

    class Page:
        styles = variant_styles(["fcfs", "sjf"])

        def h(self, *a, **k): pass

        def p(self, *a, **k): pass

        def svg(self, *a, **k): pass

        def table(self, df, **k):
            tables.append(df)

    section_pooled(Page(), tmp_path, runs, ["fcfs", "sjf"], assumed=False)
    (tab,) = tables
    wait_col = next(c for c in tab.columns if c.startswith("job wait"))
    cells = dict(zip(tab["variant"], tab[wait_col]))
    assert cells == {"fcfs": "0 [0–0], p95 0, max 2.00 (3 jobs)", "sjf": "0 [0–0], p95 0, max 2.00 (1,234 jobs)"}
    swing_col = next(c for c in tab.columns if c.startswith("1-min power swing"))
    assert all("jobs" not in c for c in tab[swing_col])


def test_the_twin_error_paragraph_rounds_the_tau_minimum_down(tmp_path):
    """A validation's τ minimum of 0.7576 reads '≥ 0.75' in the sweep report, as validate's console
    and page print it: it read '≥ 0.76', which overstates a minimum (helper-56)."""
    from twinsweep.sweep.report_stability import _twin_errors
    from twinsweep.sweep.verdict import compute_verdict

    p = _validation(tmp_path)
    doc = json.loads(p.read_text())
    doc["ranking_stability"]["kendall_tau_min_blind_vs_informed"] = 0.7576
    p.write_text(json.dumps(doc))
    te = load_twin_errors({"report": {"validation": [["d", str(p)]]}}, {"d": {"checksum": "sha256:abc"}})
    runs = _runs({"ref": [100, 100], "b": [101, 103]})
    paras = []

    class Page:
        def h(self, *a, **k): pass

        def p(self, text, **k):
            paras.append(text)

        def table(self, *a, **k): pass

        def csv(self, *a, **k): pass

    v = compute_verdict(runs, ["ref", "b"], {"wait_mean_s": "min"}, n_boot=20)
    _twin_errors(Page(), runs, ["ref", "b"], v, te)
    text = " ".join(paras)
    assert "τ blind vs informed ≥ 0.75." in text and "0.76" not in text


def test_a_metric_no_block_has_reads_a_dash_without_numpy_s_all_nan_warning(tmp_path):
    """A ranked metric undefined in every block of a variant (no job of it finishes; helper-59: a
    sweep printed numpy's bare 'All-NaN slice encountered'): the rank table is built and no
    RuntimeWarning escapes."""
    import warnings as _w

    from test_sweep_support import write_spec
    from twinsweep.sweep.api import run_sweep

    from twinsweep.sweep.api import report

    spec = write_spec(tmp_path, seeds=2, policies=("fcfs", "sjf"), backfills=("none", "easy"), n_jobs=30)
    res = run_sweep(spec, backend="local", report=False, log=lambda m: None)
    table = res.out / "runs.parquet"
    runs = pd.read_parquet(table)
    gone = (runs["policy"] == "sjf") & (runs["backfill"] == "easy")
    runs.loc[gone, "bsld_mean"] = np.nan  # as when no job of the variant finishes in any block
    runs.to_parquet(table)
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        page = report(res.out, log=lambda m: None).read_text()
    assert not [w for w in caught if "All-NaN" in str(w.message)], [str(w.message) for w in caught]
    assert "mean bounded slowdown: median" in page
