"""The report's verdict (sweep/verdict.py) and its readable tables (sweep/report.py format_frame)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from twinsweep.sweep.ranking import PAST_END, past_end_blocks, pivot_blocks, split_reference
from twinsweep.sweep.report import format_frame
from twinsweep.sweep.report_verdict import past_end_note, section_verdict
from twinsweep.sweep.verdict import MIN_BLOCKS, OVERALL, TRADEOFF, compute_verdict, cost_text, default_baseline


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
    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 6, "c": [(80, 900)] * 6}, seeds=range(6))
    v = compute_verdict(runs, ["fcfs+easy", "b", "c"], {"wait_mean_s": "min", "peak_power_w": "min"}, n_boot=200)
    (s,) = v.scopes  # one dataset: no "all datasets" scope
    assert s.scope == "d1" and s.blocks == 6 and s.baseline == "fcfs+easy"
    from twinsweep.sweep.report_verdict import _made_of

    assert (s.windows, s.seeds) == (1, 6)  # one window: the headline says its P(best) covers the seeds only
    assert _made_of(s) == " (1 window × 6 seeds — one window: robust to the seeds only)"
    two = compute_verdict(pd.concat([runs, runs.assign(window="w2")]), ["fcfs+easy", "b", "c"],
                          {"wait_mean_s": "min"}, n_boot=20).scopes[0]
    assert (two.blocks, two.windows, two.seeds) == (12, 2, 6) and _made_of(two) == " (2 windows × 6 seeds)"
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


# ------------------------------------------------------------------------------ audit fixes
def test_all_datasets_scope_counts_only_the_blocks_that_exist():
    # two datasets with different window names (the quickstart's case): d1/w1 and d2/w2, two seeds each.
    # The old pivot built every dataset x window x seed, i.e. 8 blocks, 4 of them empty and tied.
    rows = []
    wins = {("d1", 0): "a", ("d1", 1): "a", ("d2", 0): "a", ("d2", 1): "b"}
    for (ds, s), w in wins.items():
        win = {"d1": "w1", "d2": "w2"}[ds]
        rows += [{"dataset": ds, "window": win, "seed": s, "variant": v, "wait_mean_s": 1.0 if v == w else 2.0}
                 for v in ("a", "b")]
    runs = pd.DataFrame(rows)
    values, blocks = pivot_blocks(runs, "wait_mean_s", ["a", "b"], block_cols=("dataset", "window", "seed"))
    assert blocks == [("d1", "w1", 0), ("d1", "w1", 1), ("d2", "w2", 0), ("d2", "w2", 1)]
    assert values.tolist() == [[1, 2], [1, 2], [1, 2], [2, 1]]
    v = compute_verdict(runs, ["a", "b"], {"wait_mean_s": "min"}, n_boot=20000, seed=1)
    over = v.scopes[-1]
    assert over.scope == OVERALL and over.blocks == 4
    o = over.get("wait_mean_s")
    assert o.best == "a" and o.mean_rank == pytest.approx(1.25)
    # exact P(best) over resamples of the 4 blocks (3 won by a, 1 by b): a is ahead when it draws more of
    # its blocks, K ~ Binomial(4, 3/4): P(K >= 3) + P(K = 2) / 2 (a tie of mean ranks splits the share)
    pk = {k: math.comb(4, k) * 0.75 ** k * 0.25 ** (4 - k) for k in range(5)}
    assert o.p_best == pytest.approx(pk[3] + pk[4] + pk[2] / 2, abs=0.01)  # 0.844 (8 blocks gave 0.85, mean rank 1.375)


def test_few_blocks_are_never_distinguishable_and_the_page_says_why():
    from twinsweep.sweep.report_verdict import _sure

    for n, dist in ((MIN_BLOCKS - 1, False), (MIN_BLOCKS, True)):
        runs = _runs({"a": [(1, 1)] * n, "b": [(2, 1)] * n}, seeds=range(n))
        o = compute_verdict(runs, ["a", "b"], {"wait_mean_s": "min"}, n_boot=100).scopes[0].get("wait_mean_s")
        assert o.p_best == 1.0 and o.gap_ci == (1.0, 1.0)  # a wins every block either way
        assert o.distinguishable is dist
        text = _sure(o, n)
        assert (f"need ≥ {MIN_BLOCKS}" in text) is (not dist) and ("distinguishable from b" in text) is dist


def _past_end_runs(flag_d2: bool | None):
    runs = _runs({"fcfs+easy": [(100, 1), (100, 1)], "b": [(50, 1), (50, 1)]}, datasets=("d1", "d2"), seeds=(0, 1))
    if flag_d2 is not None:
        runs[PAST_END] = ((runs["dataset"] == "d2") & flag_d2).astype(object)
        runs.loc[(runs["dataset"] == "d2") & (runs["seed"] == 1) & (runs["variant"] == "b"), PAST_END] = None
    return runs


def test_blocks_with_a_window_past_the_trace_end_are_counted_and_named():
    runs = _past_end_runs(True)
    pe = past_end_blocks(runs)
    assert sorted(map(tuple, pe.to_numpy().tolist())) == [("d2", "w", 0), ("d2", "w", 1)]  # any run of the block
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=10)
    by = {s.scope: s for s in v.scopes}
    assert by["d1"].past_end == 0 and by["d2"].past_end == 2 and by[OVERALL].past_end == 2
    assert by["d2"].past_end_windows == ("d2/w",) and by[OVERALL].past_end_windows == ("d2/w",)
    note = past_end_note(v)
    assert "d2/w" in note and "2 block(s)" in note
    pg = _FakePage()
    section_verdict(pg, v, [])
    page = "".join(pg.parts)
    assert "d2/w" in page and "⚠ 2 of 2 blocks past the trace's end" in page
    # without the column (older tables), or all false: nothing is flagged
    for runs in (_past_end_runs(None), _past_end_runs(False)):
        v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=10)
        assert all(s.past_end == 0 for s in v.scopes) and past_end_note(v) is None


def test_the_recorded_schedule_is_set_apart_from_the_ranked_variants():
    runs = pd.DataFrame({"policy": ["fcfs", "replay", "sjf", "replay"], "variant": ["fcfs+easy", "replay+easy",
                                                                                 "sjf+easy", "replay+none"]})
    ranked, vs, ref = split_reference(runs, ["replay+none", "fcfs+easy", "replay+easy", "sjf+easy"])
    assert vs == ["fcfs+easy", "sjf+easy"] and ref == ["replay+none", "replay+easy"]
    assert ranked["variant"].tolist() == ["fcfs+easy", "sjf+easy"]
    same, vs2, ref2 = split_reference(runs.drop(columns="policy"), ["fcfs+easy"])
    assert len(same) == 4 and vs2 == ["fcfs+easy"] and ref2 == []


class _FakePage:
    """Collects what a section writes (the report's page API: h, p, raw, table)."""

    def __init__(self):
        self.parts, self.ids, self.tables = [], [], []

    def h(self, level, text, id=None):
        self.ids.append(id)
        self.parts.append(f"<h{level}>{text}</h{level}>")

    def p(self, text, raw=False):
        self.parts.append(f"<p>{text}</p>")

    def raw(self, text):
        self.parts.append(text)

    def table(self, df, **kw):
        self.tables.append(df)
        self.parts.append(df.to_html())


def test_how_to_read_names_only_sections_the_page_has():
    from twinsweep.sweep.report import report_sections
    from twinsweep.sweep.report_verdict import _DETAILS, how_to_read

    later = [("tradeoffs", "trade-offs"), ("stability", "ranking stability"), ("fidelity", "fidelity")]
    text = how_to_read(later)
    linked = re.findall(r'href="#([^"]+)"', text)
    assert linked == [i for i, _ in later] + [i for i, _ in _DETAILS]
    assert set(i for i, _ in _DETAILS) <= set(report_sections())
    # in page order
    order = list(report_sections())
    assert [order.index(i) for i, _ in _DETAILS] == sorted(order.index(i) for i, _ in _DETAILS)
    assert "fidelity" not in how_to_read(later[:2])


def test_tradeoff_metrics_that_rank_alike_in_every_block_are_named():
    """Two trade-off metrics that order the variants the same way in every block (here peak power
    follows the wait exactly; utilisation is tied everywhere and expresses no preference) are one
    preference weighed twice: the verdict names the pair and the page says so."""
    runs = _runs({"fcfs+easy": [(100, 1000), (90, 1000)] * 3, "b": [(50, 500), (60, 600)] * 3,
                  "c": [(80, 800), (70, 700)] * 3}, seeds=range(6))
    rank = {"wait_mean_s": "min", "peak_power_w": "min", "utilization": "max"}
    v = compute_verdict(runs, ["fcfs+easy", "b", "c"], rank, n_boot=20)
    (s,) = v.scopes
    assert s.alike_in_tradeoff == (("wait_mean_s", "peak_power_w"),)
    from twinsweep.sweep.report_verdict import alike_note

    note = alike_note(v)
    assert "mean wait and peak facility power rank the variants exactly alike in every block (every scope)" in note
    assert "67 % together" in note  # 2 of the 3 equal weights
    # one block where they disagree: no longer alike
    runs.loc[(runs["variant"] == "b") & (runs["seed"] == 0), "peak_power_w"] = 2000
    assert compute_verdict(runs, ["fcfs+easy", "b", "c"], rank, n_boot=20).scopes[0].alike_in_tradeoff == ()


def test_survivorship_note_names_a_lead_on_finished_jobs_bought_with_a_longer_queue():
    """b leads on mean wait (finished jobs only) but leaves more jobs queued at the window end than
    fcfs+easy (the baseline and runner-up) in all 6 blocks (sign test p = 2 / 2^6 = 0.031):
    (5 x 3 + 6) / 6 = 3.5 more per block, +35 % of fcfs+easy's 10. In 5 of 6 with a tie (p = 2 /
    2^5 = 0.0625), or on peak power (not a finished-job metric), or with equal queues, or with 0.5
    more per block (+5 %, under SURVIVORSHIP_MIN_SHARE), nothing is said."""
    from twinsweep.sweep.report_verdict import survivorship_note

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 6}, seeds=range(6))
    runs["count_still_queued"] = [10] * 6 + [13] * 5 + [10]
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    assert survivorship_note(runs, v) is None
    runs["count_still_queued"] = [10] * 6 + [13] * 5 + [16]
    note = survivorship_note(runs, v)
    assert note is not None and (
        "d1: b (recommended on mean wait and the stated trade-off) leaves more queued at the window end than "
        "fcfs+easy (the runner-up, the baseline): more jobs in 6 of 6 blocks (sign test p = 0.031), 3.5 more per "
        "block on average (13.5 against 10.0, +35 %; runs.parquet count_still_queued). ") in note
    assert "Mean wait incl. still queued" in note
    runs["count_still_queued"] = [10] * 6 + [11] * 3 + [10] * 3  # 0.5 more: +5 %
    runs.loc[runs["variant"] == "b", "count_still_queued"] = [11, 11, 11, 11, 11, 10]
    runs.loc[runs["variant"] == "fcfs+easy", "count_still_queued"] = [10, 10, 10, 10, 10, 10]
    assert survivorship_note(runs, v) is None  # 5 of 6 and a tie: p = 0.0625 anyway
    runs.loc[runs["variant"] == "b", "count_still_queued"] = [100 + 1] * 6
    runs.loc[runs["variant"] == "fcfs+easy", "count_still_queued"] = [100] * 6
    assert survivorship_note(runs, v) is None  # 6 of 6 but +1 %
    v_power = compute_verdict(runs, ["fcfs+easy", "b"], {"peak_power_w": "min"}, n_boot=50)
    runs["count_still_queued"] = [10] * 6 + [20] * 6
    assert survivorship_note(runs, v_power) is None  # fcfs+easy leads on power, and power counts no jobs
    runs["count_still_queued"] = 10
    assert survivorship_note(runs, v) is None
    assert survivorship_note(runs.drop(columns="count_still_queued"), v) is None


def test_survivorship_note_says_what_the_censored_wait_ranks_best_when_it_is_ranked():
    """When the page ranks the censored mean wait too, the note gives its best variant per scope
    instead of advising to rank by it: here b leads on mean wait (50 against 100 s) but fcfs+easy on
    the censored mean wait (200 against 400 s) in every block."""
    from twinsweep.sweep.report_verdict import survivorship_note

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 6}, seeds=range(6))
    runs["count_still_queued"] = [10] * 6 + [20] * 6
    runs["wait_censored_mean_s"] = [200.0] * 6 + [400.0] * 6
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min", "wait_censored_mean_s": "min"}, n_boot=50)
    note = survivorship_note(runs, v)
    assert "d1: b (recommended on mean wait) leaves more queued" in note
    assert ("Mean wait incl. still queued counts the queued jobs too, each with its wait up to the window end. "
            "Ranked by it on this page (the verdict table), the best is d1: fcfs+easy (b is not). Utilisation gives "
            "the work each variant got done.") in note
    assert "rank by it" not in note and "counted too)" not in note
    assert "The jobs a variant leaves queued are not in that variant's means" in note
    runs["wait_censored_mean_s"] = [400.0] * 6 + [200.0] * 6  # b leads with its queued jobs counted too
    v2 = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min", "wait_censored_mean_s": "min"}, n_boot=50)
    assert ("Ranked by it on this page (the verdict table), the best is d1: b (first with its queued jobs counted "
            "too). Utilisation") in survivorship_note(runs, v2)
    v1 = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    assert "rank by it, or weigh it in [report] tradeoff" in survivorship_note(runs, v1)


def test_survivorship_note_sees_fewer_jobs_but_more_work_left_queued():
    """SJF's starvation of large jobs: b leaves fewer jobs queued (5 against 10) but more requested
    node-hours (40 h = 144,000 node-s against 10 h) in all 6 blocks: the note names the work, 30
    node-hours more per block, +300 %."""
    from twinsweep.sweep.report_verdict import survivorship_note

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 6}, seeds=range(6))
    runs["count_still_queued"] = [10] * 6 + [5] * 6
    runs["count_still_queued_node_s"] = [36_000] * 6 + [144_000] * 6
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    note = survivorship_note(runs, v)
    # 6 of 6 blocks: p = 2 / 2^6 = 0.031
    assert "more requested node-hours in 6 of 6 blocks (sign test p = 0.031), 30 more per block on average " \
        "(40.0 against 10.0, +300 %; runs.parquet count_still_queued_node_s, stored there in node-seconds)" in note \
        and "more jobs" not in note


def test_survivorship_note_below_the_sign_test_needs_every_block():
    """With 3 blocks no sign test is significant: the note needs b to leave more queued in all 3."""
    from twinsweep.sweep.report_verdict import survivorship_note

    runs = _runs({"fcfs+easy": [(100, 1000)] * 3, "b": [(50, 1100)] * 3}, seeds=range(3))
    runs["count_still_queued"] = [10] * 3 + [12, 12, 10]
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    assert survivorship_note(runs, v) is None
    runs["count_still_queued"] = [10] * 3 + [12, 12, 13]
    assert "more jobs in 3 of 3 blocks (every block; too few for a sign test), 2.3 more per block" in \
        survivorship_note(runs, v)


def test_distinguishable_needs_the_sign_test_too():
    """8 blocks: b ahead of fcfs+easy in 6, behind in 1, tied in 1. The bootstrap interval of the
    mean-rank gap (mean 5/8) excludes 0, but the sign test (ties split: 6 of 7, p = 2 * 8 / 2^7 =
    0.125) does not reach 5 %: not distinguishable, and the page says why."""
    from twinsweep.sweep.report_verdict import _sure
    from twinsweep.sweep.stability import sign_test

    waits = [(50, 1)] * 6 + [(100, 1)] + [(70, 1)]
    runs = _runs({"fcfs+easy": [(70, 1)] * 8, "b": waits}, seeds=range(8))
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=2000, seed=1)
    w = v.scopes[0].get("wait_mean_s")
    assert w.best == "b" and w.runner_up == "fcfs+easy" and w.gap_ci[0] > 0
    assert w.p_sign == pytest.approx(sign_test(6, 1, 1)) == pytest.approx(2 * 8 / 2 ** 7)
    assert not w.distinguishable
    assert (w.ahead, w.behind) == (6, 1)
    assert _sure(w, 8) == ("not distinguishable from fcfs+easy: it keeps the lowest mean rank when the blocks are "
                           "redrawn (the bootstrap interval of the mean-rank gap excludes 0), but block by block it is "
                           "ahead of it in 6 of 8 blocks, behind in 1, tied in 1 (sign test, ties split: p = 0.12)")
    # ahead in 4, behind in 3, tied in 1: the interval includes 0 too
    runs = _runs({"fcfs+easy": [(70, 1)] * 8, "b": [(50, 1)] * 4 + [(100, 1)] * 3 + [(70, 1)]}, seeds=range(8))
    w = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=2000, seed=1).scopes[0].get(
        "wait_mean_s")
    assert w.best == "b" and w.gap_ci[0] <= 0 and (w.ahead, w.behind) == (4, 3)
    assert _sure(w, 8) == ("not distinguishable from fcfs+easy: the bootstrap interval of the mean-rank gap includes "
                           "0; ahead of it in 4 of 8 blocks, behind in 3, tied in 1; sign test, ties split: p = 1.0")  # 4.5 vs 3.5
    # all 8 ahead: p = 2 / 2^8, both agree
    v = compute_verdict(_runs({"fcfs+easy": [(70, 1)] * 8, "b": [(50, 1)] * 8}, seeds=range(8)), ["fcfs+easy", "b"],
                        {"wait_mean_s": "min"}, n_boot=500)
    assert v.scopes[0].get("wait_mean_s").distinguishable


def test_the_baseline_line_says_which_rule_chose_it_and_energy_only_when_ranked():
    """fcfs+easy by default; the study's own when given; the first variant otherwise. The energy
    sentence only when a power or energy metric is an objective."""
    class Page:
        def __init__(self):
            self.text = []

        def h(self, *a, **k):
            pass

        def p(self, text, raw=False):
            self.text.append(text)

        raw = p

        def table(self, *a, **k):
            pass

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 6}, seeds=range(6))

    def baseline_line(rank, variants=("fcfs+easy", "b"), baseline=None, table=runs):
        pg = Page()
        section_verdict(pg, compute_verdict(table, list(variants), rank, baseline=baseline, n_boot=20), [],
                        baseline=baseline)
        return next(t for t in pg.text if t.startswith("Baseline:"))

    assert baseline_line({"wait_mean_s": "min"}) == (
        "Baseline: fcfs+easy (the default baseline; [report] baseline in the study sets another).")
    assert baseline_line({"wait_mean_s": "min"}, baseline="b") == "Baseline: b (the study's [report] baseline)."
    assert "Energy is compared per unit of work" in baseline_line({"peak_power_w": "min"})
    other = runs.replace({"variant": {"fcfs+easy": "sjf+easy"}})
    assert baseline_line({"wait_mean_s": "min"}, ("sjf+easy", "b"), table=other) == (
        "Baseline: sjf+easy (the first variant: no [report] baseline is given and fcfs+easy is not a variant).")


def test_the_costs_across_datasets_are_the_mean_of_each_datasets_change():
    """Across two datasets of very different scales, the change against the baseline is the mean of
    the per-dataset changes (small: wait 100 -> 50 s, -50 %; big: 10,000 -> 9,900 s, -1 %; mean
    -25.5 %), not the change of pooled means ((50 + 9,900) / (100 + 10,000) - 1 = -1.5 %, the big
    dataset's alone)."""
    small = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1000)] * 6}, datasets=("small",), seeds=range(6))
    big = _runs({"fcfs+easy": [(10_000, 1000)] * 6, "b": [(9_900, 1000)] * 6}, datasets=("big",), seeds=range(6))
    v = compute_verdict(pd.concat([small, big]), ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    got = {s.scope: s.get("wait_mean_s") for s in v.scopes}
    assert {o.best for o in got.values()} == {"b"}
    assert got["small"].costs["wait_mean_s"] == pytest.approx(-50.0)
    assert got["big"].costs["wait_mean_s"] == pytest.approx(-1.0)
    assert got["all datasets"].costs["wait_mean_s"] == pytest.approx(-25.5)


def test_a_trade_off_resting_on_assumed_power_figures_is_said():
    """b waits less than fcfs+easy in every block, fcfs+easy draws less peak power: with equal
    weights the trade-off ties on ranks and the name breaks it; weighing power twice makes
    fcfs+easy the recommendation, and without the power metric b is: the note names the move. With
    the wait weighed more, both agree, and the note says the recommendation stands without them."""
    from twinsweep.sweep.report_verdict import assumed_power_note

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 6}, seeds=range(6))
    rank = {"wait_mean_s": "min", "peak_power_w": "min"}
    v = compute_verdict(runs, ["fcfs+easy", "b"], rank, {"wait_mean_s": 1.0, "peak_power_w": 2.0}, n_boot=50)
    from twinsweep.sweep.verdict import TRADEOFF

    assert v.scopes[0].get(TRADEOFF).best == "fcfs+easy"
    note = assumed_power_note(runs, ["fcfs+easy", "b"], v, None)
    assert note == ("The stated trade-off gives 67 % of its weight to figures of assumed power models (peak "
                    "facility power). <b>Without the power figures, the trade-off recommends otherwise</b>: d1: b "
                    "instead of fcfs+easy. In that "
                    "scope the stated trade-off's recommendation rests on the assumed models: give the machine's "
                    "measured power model, or a trade-off without them ([report] tradeoff), before acting on it.")
    v2 = compute_verdict(runs, ["fcfs+easy", "b"], rank, {"wait_mean_s": 2.0, "peak_power_w": 1.0}, n_boot=50)
    assert assumed_power_note(runs, ["fcfs+easy", "b"], v2, None).endswith(
        "Without the power figures, the trade-off recommends the same variant in every scope.")
    # utilisation (ranked, not weighed, no power figure) ranks exactly as peak power in every block
    # (fcfs+easy draws less and is busier): peak power's weight goes to it, and fcfs+easy stays
    busy = runs.assign(utilization=np.where(runs["variant"] == "fcfs+easy", 0.8, 0.6))
    v4 = compute_verdict(busy, ["fcfs+easy", "b"], {**rank, "utilization": "max"},
                         {"wait_mean_s": 1.0, "peak_power_w": 2.0}, n_boot=50)
    assert v4.scopes[0].alike_ranked == (("peak_power_w", "utilization"),)
    note4 = assumed_power_note(busy, ["fcfs+easy", "b"], v4, None)
    assert ("Peak facility power ranks the variants exactly as utilisation (no power figure) in every block: under "
            "these models its weight is utilisation's preference. Checked with the weight of peak facility power on "
            "utilisation, the trade-off recommends the same variant in every scope.") in note4
    v3 = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    assert assumed_power_note(runs, ["fcfs+easy", "b"], v3, None) is None  # no power metric weighed


def test_a_cost_that_many_blocks_contradict_says_in_how_many_blocks_it_holds():
    """b waits half as long in all 6 blocks (no qualifier); its peak power is 1100 W in 2 blocks
    and 500 W in 4 against fcfs+easy's 1000 W: mean 700 W, -30 %, lower in 4 of 6 blocks — fewer
    than three quarters, so the cost says "(in 4 of 6 blocks)"."""
    from twinsweep.sweep.report_verdict import _costs

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 2 + [(50, 500)] * 4}, seeds=range(6))
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min", "peak_power_w": "min"}, n_boot=50)
    s = v.scopes[0]
    o = s.get("wait_mean_s")
    assert o.best == "b" and o.cost_blocks == {"wait_mean_s": (6, 6), "peak_power_w": (4, 6)}
    assert _costs(o, s, ["wait_mean_s", "peak_power_w"]) == (
        "−50 % mean wait, −30 % peak facility power (in 4 of 6 blocks)")


def test_a_recommendation_whose_longest_wait_is_far_longer_is_said():
    """b waits half as long on average in all 6 blocks, but its longest wait is 20 h against the
    baseline's 10 h in every block (+100 %, sign test p = 2 / 2^6 = 0.031): the starvation caveat
    names both and the blocks. At 11 h (+10 %, under STARVATION_MIN_SHARE) nothing is said."""
    from twinsweep.sweep.report_verdict import starvation_note

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1000)] * 6}, seeds=range(6))
    runs["wait_max_s"] = [36_000.0] * 6 + [72_000.0] * 6
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    note = starvation_note(runs, v)
    assert note is not None and ("d1: b's longest wait of a finished job is 20.0 h on average against 10.0 h for "
                                 "fcfs+easy (the baseline), longer in 6 of 6 blocks (sign test p = 0.031)") in note
    runs["wait_max_s"] = [36_000.0] * 6 + [39_600.0] * 6
    assert starvation_note(runs, v) is None
    assert starvation_note(runs.drop(columns="wait_max_s"), v) is None



def test_the_starvation_caveat_counts_a_job_starved_past_the_window_end():
    """ALCF Theta under SJF (helper-56): the starved wide job never starts in the window, so b's
    longest wait of a finished job (9 h) reads shorter than the baseline's (10 h), while its
    longest wait counting the still-queued job (30 h against 10 h, every block) is longer. The
    caveat compares the latter when the runs have it, and names it."""
    from twinsweep.sweep.report_verdict import starvation_note

    runs = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1000)] * 6}, seeds=range(6))
    runs["wait_max_s"] = [36_000.0] * 6 + [32_400.0] * 6
    runs["wait_censored_max_s"] = [36_000.0] * 6 + [108_000.0] * 6
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min"}, n_boot=50)
    note = starvation_note(runs, v)
    assert note is not None and (
        "d1: b's longest wait (a job still queued at the window end counted with its wait so far) is 30.0 h on "
        "average against 10.0 h for fcfs+easy (the baseline), longer in 6 of 6 blocks (sign test p = 0.031)") in note
    assert "Rank or weigh max wait incl. still queued" in note
    assert starvation_note(runs.drop(columns="wait_censored_max_s"), v) is None  # the finished jobs' reads shorter


def test_the_assumed_power_note_names_the_scopes_whose_recommendation_stands():
    """Two datasets: on d1 the power weight decides (fcfs+easy; b without it), on d2 b leads on
    both figures: the note names d1's move and says d2 and all datasets keep theirs (helper-56: the
    scopes that did not move were not named, so the reader could not tell)."""
    from twinsweep.sweep.report_verdict import assumed_power_note

    d1 = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 1100)] * 6}, datasets=("d1",), seeds=range(6))
    d2 = _runs({"fcfs+easy": [(100, 1000)] * 6, "b": [(50, 900)] * 6}, datasets=("d2",), seeds=range(6))
    runs = pd.concat([d1, d2], ignore_index=True)
    v = compute_verdict(runs, ["fcfs+easy", "b"], {"wait_mean_s": "min", "peak_power_w": "min"},
                        {"wait_mean_s": 1.0, "peak_power_w": 2.0}, n_boot=50)
    from twinsweep.sweep.verdict import TRADEOFF

    best = {s.scope: s.get(TRADEOFF).best for s in v.scopes}
    assert best["d1"] == "fcfs+easy" and best["d2"] == "b"
    note = assumed_power_note(runs, ["fcfs+easy", "b"], v, None)
    assert "recommends otherwise</b>: d1: b instead of fcfs+easy; the same in d2 (b); all datasets (" in note
