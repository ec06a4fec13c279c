"""The recorded schedule as the reference (sweep/report_fidelity.py, core/fidelity.py) and the
validation checks added with it (sweep/validate.py): values computed by hand.

A replay run's own starts are not the record: a window's end leaves the jobs the log started
after it queued (no start) and those running past it without an end. The fidelity section reads
the log's starts (``recorded_start_time``, end = start + ``run_time``) from the replay's jobs table.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from twinsweep.core.fidelity import NEVER_RAN, NO_RECORDED_START, NOT_RAN, compare, ran_split, recorded_schedule
from twinsweep.sweep.report import _Page
from twinsweep.sweep.report_fidelity import fidelity_table, reference_table, section_fidelity
from twinsweep.sweep.store import ResultStore
from twinsweep.sweep.validate import window_text
from twinsweep.sweep.validate_checks import idle_hours, idle_stretch

T1 = 3600  # every run's window is [0, 3600)


def _jobs_dir(store: ResultStore, key: str, submit, rec_start, run, start, end, nodes: int = 4) -> None:
    """A run folder: jobs.parquet with the recorded and the simulated columns, manifest.json."""
    d = store.run_dir(key)
    d.mkdir(parents=True)
    n = len(submit)
    pd.DataFrame({"trace_index": np.arange(n), "submit_time": submit,
                  "recorded_start_time": pd.array(rec_start, dtype="Int64"),
                  "run_time": pd.array(run, dtype="Int64"),
                  "start_time": pd.array(start, dtype="Int64"), "end_time": pd.array(end, dtype="Int64"),
                  "nodes": [1] * n, "prepopulated": [False] * n,
                  "status": ["completed" if s is not None else "queued" for s in start]}).to_parquet(d / "jobs.parquet")
    (d / "manifest.json").write_text(json.dumps({"window": {"start": 0, "end": T1}, "system": {"nodes": nodes}}))


def _store(tmp_path):
    """Four jobs submitted at 0, 0, 100, 200. The log started them at 0, 100, 3000 and 5000 (after
    the window's end), each for 1000 s: recorded waits 0, 100, 2900, 4800 (mean 1950). The replay
    run ends at 3600: job 2 still running (no end), job 3 still queued (no start)."""
    store = ResultStore(tmp_path)
    submit, rec, run = [0, 0, 100, 200], [0, 100, 3000, 5000], [1000] * 4
    _jobs_dir(store, "rep", submit, rec, run, [0, 100, 3000, None], [1000, 1100, None, None])
    # the variant: waits 0, 0, 100, 1800 -> every job started in the window
    _jobs_dir(store, "v", submit, rec, run, [0, 0, 200, 2000], [1000, 1000, 1200, 3000])
    runs = pd.DataFrame({"key": ["rep", "v"], "dataset": "d", "window": "w", "seed": [0, 0],
                         "variant": ["replay+easy", "fcfs+easy"]})
    return store, runs


def test_the_reference_is_the_log_not_the_replays_window(tmp_path):
    store, runs = _store(tmp_path)
    t = fidelity_table(store, runs, ["fcfs+easy"], ["replay+easy"]).set_index("variant")
    # all four jobs compared (before: 2, jobs 2 and 3 were "never ran in the reference")
    assert t.loc["fcfs+easy", "jobs_compared"] == 4
    assert json.loads(t.loc["fcfs+easy", "exclusions"]) == {}
    assert t.loc["fcfs+easy", "wait_mean_ref_s"] == pytest.approx((0 + 100 + 2900 + 4800) / 4)
    assert t.loc["fcfs+easy", "wait_mean_twin_s"] == pytest.approx((0 + 0 + 100 + 1800) / 4)
    assert t.loc["fcfs+easy", "wait_mean_rel_error"] == pytest.approx(475 / 1950 - 1)
    # |start errors| 0, 100, 2800, 3000: median 1450
    assert t.loc["fcfs+easy", "start_error_median_s"] == pytest.approx(1450)
    r = reference_table(store, runs, ["replay+easy"]).iloc[0]
    assert (r["jobs_submitted"], r["jobs_recorded"], r["jobs_unrecorded"], r["jobs_never_ran"]) == (4, 4, 0, 0)
    assert r["wait_mean_s"] == pytest.approx(1950)
    # numpy linear p95 of 0, 100, 2900, 4800: position 2.85 -> 2900 + 0.85 * 1900
    assert r["wait_p95_s"] == pytest.approx(2900 + 0.85 * 1900)


def test_replay_runs_not_used_are_counted(tmp_path):
    store, runs = _store(tmp_path)
    _jobs_dir(store, "rep1", [0], [0], [10], [0], [10])
    _jobs_dir(store, "rep0b", [0], [0], [10], [0], [10])
    runs = pd.concat([runs, pd.DataFrame({"key": ["rep1", "rep0b"], "dataset": "d", "window": "w", "seed": [1, 0],
                                          "variant": ["replay+easy", "replay+easy+kill=False"]})])
    r = reference_table(store, runs, ["replay+easy", "replay+easy+kill=False"]).iloc[0]
    assert r["key"] == "rep" and r["replay_runs_unused"] == 1 and r["replay_runs_other_seeds"] == 1


def test_a_window_without_a_recorded_schedule_is_said_and_not_compared(tmp_path):
    store = ResultStore(tmp_path)
    # SWF wait -1 throughout: no recorded start; the replay imputed starts at submission
    _jobs_dir(store, "rep", [0, 10, 20], [None, None, None], [50, 50, None], [0, 10, None], [50, 60, None])
    _jobs_dir(store, "v", [0, 10, 20], [None, None, None], [50, 50, None], [0, 10, None], [50, 60, None])
    runs = pd.DataFrame({"key": ["rep", "v"], "dataset": "d", "window": "w", "seed": [0, 0],
                         "variant": ["replay+easy", "fcfs+easy"]})
    t = fidelity_table(store, runs, ["fcfs+easy"], ["replay+easy"]).iloc[0]
    assert t["jobs_compared"] == 0 and np.isnan(t["start_within_1h_frac"]) and np.isnan(t["wait_ks"])
    assert json.loads(t["exclusions"]) == {NO_RECORDED_START: 2, NEVER_RAN: 1}
    r = reference_table(store, runs, ["replay+easy"]).iloc[0]
    assert (r["jobs_submitted"], r["jobs_recorded"], r["jobs_unrecorded"], r["jobs_never_ran"]) == (3, 0, 2, 1)
    out = tmp_path / "page"
    out.mkdir()
    pg = _Page(out)
    section_fidelity(pg, store, runs, ["fcfs+easy"], ["replay+easy"])
    page = "".join(pg.parts)
    assert "No recorded schedule in this window" in page and "<table" not in page
    assert "2 ran without one" in page and "1 never ran" in page
    assert (out / "fidelity_reference.csv").exists()


def test_the_page_shows_the_reference_row_and_what_was_left_out(tmp_path):
    store, runs = _store(tmp_path)
    out = tmp_path / "page"
    out.mkdir()
    pg = _Page(out)
    section_fidelity(pg, store, runs, ["fcfs+easy"], ["replay+easy"])
    page = "".join(pg.parts)
    assert "recorded schedule (replay+easy, reference)" in page
    assert "Of the 4 jobs submitted in the window, 4 ran with a recorded start" in page
    # the reference row's mean wait: 1950 s = 0.54 h; the variant's error -76 %
    assert "0.54" in page and "−76" in page
    # |start errors| 0, 100, 2800 and 3000 s: all four within an hour of their recorded starts
    assert ("Closest job by job (the most jobs starting within an hour of their recorded start): the same variant, "
            "100 % of its 4 compared jobs.") in page


def test_the_section_reads_each_reference_once(tmp_path, monkeypatch):
    """The fidelity table and the reference rows compare with the same recorded schedule: the
    section reads the replay run's jobs table for it once (both tables read it until 2026-12-07),
    and the figures are those of each table read on its own."""
    import twinsweep.sweep.report_fidelity as rf

    store, runs = _store(tmp_path)
    alone = (fidelity_table(store, runs, ["fcfs+easy"], ["replay+easy"]), reference_table(store, runs, ["replay+easy"]))
    reads = []
    real = rf.recorded_schedule
    monkeypatch.setattr(rf, "recorded_schedule", lambda jobs: reads.append(len(jobs)) or real(jobs))
    out = tmp_path / "page"
    out.mkdir()
    section_fidelity(_Page(out), store, runs, ["fcfs+easy"], ["replay+easy"])
    assert reads == [4]  # the replay's table, once
    pd.testing.assert_frame_equal(pd.read_csv(out / "fidelity.csv"), alone[0].astype({"jobs_compared": "int64"}))
    pd.testing.assert_frame_equal(pd.read_csv(out / "fidelity_reference.csv"), alone[1])


def test_a_variant_name_holding_a_colon_is_shown_whole(tmp_path):
    """The incentive study's variants hold ':' (options.accounts_in=collect:replay); the page's
    left-out list split each entry at its first ':' and cut such a name in two."""
    store, runs = _store(tmp_path)
    name = "fcfs+easy+options.accounts_in=collect:replay"
    _jobs_dir(store, "v2", [0, 0, 100, 200], [0, 100, 3000, 5000], [1000] * 4, [0, 0, 200, None],
              [1000, 1000, 1200, None])  # job 3 not started by the window end
    runs = pd.concat([runs, pd.DataFrame({"key": ["v2"], "dataset": "d", "window": "w", "seed": [0],
                                          "variant": [name]})])
    out = tmp_path / "page"
    out.mkdir()
    pg = _Page(out)
    section_fidelity(pg, store, runs, ["fcfs+easy", name], ["replay+easy"])
    page = "".join(pg.parts)
    assert f"<b>{name}</b>: 1 " in page


def test_recorded_schedule_marks_jobs_without_a_recorded_start():
    jobs = pd.DataFrame({"trace_index": [0, 1, 2], "submit_time": [0, 0, 0],
                         "recorded_start_time": pd.array([10, None, 5], dtype="Int64"),
                         "run_time": pd.array([5, 5, None], dtype="Int64"), "nodes": pd.array([1, 1, 1], dtype="Int64")})
    s = recorded_schedule(jobs)
    assert s["unrecorded"].tolist() == [False, True, False]
    tw = s.drop(columns="unrecorded").assign(start_time=pd.array([10, 3, None], dtype="Int64"),
                                             end_time=pd.array([15, 8, None], dtype="Int64"))
    f = compare(s, tw, 0, 100, system_nodes=1)
    assert f["jobs_compared"] == 1 and f["exclusions"] == {NO_RECORDED_START: 1, NEVER_RAN: 1}
    # a reference without the marks (made by hand, or a twin run's own) does not tell the two apart
    assert compare(s.drop(columns="unrecorded"), tw, 0, 100, system_nodes=1)["exclusions"] == {NOT_RAN: 2}
    split = ran_split(s, np.array([True, True, False]))  # the one reading: jobs 0 and 1 only
    assert split.marked and split.counts() == {"ran": 1, "unrecorded": 1, "never_ran": 0}
    assert ran_split(s).counts() == {"ran": 1, "unrecorded": 1, "never_ran": 1}
    bare = ran_split(s.drop(columns="unrecorded"))
    assert not bare.marked and bare.counts() == {"ran": 1, "unrecorded": 0, "never_ran": 2}


def test_idle_stretch_in_the_reported_window_is_warned_of():
    # one job busy [0, 10 h), then nothing until a job submitted at 60 h runs [60 h, 70 h): 50 empty hours
    ref = pd.DataFrame({"trace_index": [0, 1], "submit_time": [0, 60 * 3600],
                        "start_time": pd.array([0, 60 * 3600], dtype="Int64"),
                        "end_time": pd.array([10 * 3600, 70 * 3600], dtype="Int64"), "nodes": pd.array([1, 1], dtype="Int64")})
    w = idle_stretch(ref, np.array([0, 60 * 3600]), 0, 70 * 3600)
    assert w is not None and "holds 50 hour(s) (71% of its hours)" in w and "50 of them in one stretch" in w
    # a 20-hour gap is below the 24 hours that make a warning
    ref2 = ref.assign(submit_time=[0, 30 * 3600], start_time=pd.array([0, 30 * 3600], dtype="Int64"),
                      end_time=pd.array([10 * 3600, 70 * 3600], dtype="Int64"))
    assert idle_stretch(ref2, np.array([0, 30 * 3600]), 0, 70 * 3600) is None


def test_window_text_tells_ends_apart():
    # two one-second windows at 168.2 h read apart
    assert window_text((605396, 605397)) == "[168.1656 h, 168.1658 h)"
    # a fitting window ending where the reported one starts reads so, beside it
    assert window_text((31000000, 31497370), (31497370, 31503856)) == "[358.80 d, 364.55 d)"
    assert window_text((31497370, 31503856), (31000000, 31497370)) == "[364.55 d, 364.63 d)"
    assert window_text((144 * 86400, 146 * 86400)) == "[144.0 d, 146.0 d)"


def _idle_hours_by_seconds(jobs, submits, t0, t1):
    """The brute force of ``idle_hours``: every second of ``[t0, t1)`` busy or not (a job with
    nodes > 0 holds ``[start, end)``, an open end to ``t1``), an hour empty when none of its seconds
    is busy and no job is submitted in it; stretches by walking the hours one by one."""
    secs = np.arange(t0, t1)
    busy = np.zeros(len(secs), dtype=bool)
    for s, e, n in jobs:
        if s is not None and n is not None and n > 0:
            busy |= (secs >= s) & (secs < (t1 if e is None else e))
    bins = -(-(t1 - t0) // 3600)
    empty = [not busy[k * 3600:(k + 1) * 3600].any() and not any(t0 + k * 3600 <= x < min(t1, t0 + (k + 1) * 3600)
                                                                 for x in submits) for k in range(bins)]
    best, first, run = 0, 0, 0
    for k, e in enumerate(empty + [False]):
        if e:
            run += 1
        else:
            if run > best:
                best, first = run, k - run
            run = 0
    return sum(empty), best, first, bins


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_idle_hours_agree_with_a_per_second_count(data):
    """``idle_hours`` (vectorised) against the per-second brute force on random job sets: starts and
    ends on a half-hour grid give touching (one job's end the next one's start) and overlapping
    jobs, and hour edges hit exactly; jobs and submissions reach beyond both window edges or stop
    short of them (empty stretches at the start and the end); the window's last hour is often cut."""
    t0 = data.draw(st.integers(-20_000, 20_000), label="t0")
    t1 = t0 + data.draw(st.one_of(st.integers(1, 30 * 3600), st.sampled_from([3600, 24 * 3600, 48 * 3600])), label="len")
    hours = -(-(t1 - t0) // 3600)
    grid = st.builds(lambda k, d: t0 + 1800 * k + d, st.integers(-4, 2 * hours + 4), st.sampled_from([0, 0, 0, 1, -1, 1799]))
    jobs, prev_end = [], None
    for _ in range(data.draw(st.integers(0, 8), label="jobs")):
        s = prev_end if prev_end is not None and data.draw(st.booleans(), label="touch") else data.draw(grid, label="start")
        e = s + data.draw(st.one_of(st.sampled_from([0, 1, 1800, 3600, 5 * 3600]), st.integers(0, 20 * 3600)), label="run")
        n = data.draw(st.sampled_from([1, 1, 4, 0, None]), label="nodes")
        started = data.draw(st.integers(0, 9), label="started") > 0
        jobs.append((s if started else None, (e if data.draw(st.integers(0, 9), label="ended") > 0 else None)
                     if started else None, n))
        prev_end = e if started else prev_end
    submits = data.draw(st.lists(st.one_of(grid, st.sampled_from([t0, t1 - 1, t1, t0 - 1])), max_size=6), label="submits")
    ref = pd.DataFrame({"trace_index": range(len(jobs)), "submit_time": [0] * len(jobs),
                        "start_time": pd.array([j[0] for j in jobs], dtype="Int64"),
                        "end_time": pd.array([j[1] for j in jobs], dtype="Int64"),
                        "nodes": pd.array([j[2] for j in jobs], dtype="Int64")})
    got = idle_hours(ref, np.array(submits, dtype=np.int64), t0, t1)
    assert got == _idle_hours_by_seconds(jobs, submits, t0, t1)
    total, longest, first, bins = got
    assert longest <= total <= bins and first + longest <= bins


def test_idle_hours_by_hand():
    """Hours [0, 10) of a window: a job busy [1 h, 2 h), another touching it [2 h, 3.5 h), a
    submission at 6.5 h, the last hour cut at 9.5 h: empty hours 0, 4, 5, 7, 8, 9 (six); the
    longest stretches are 7-9 (three, cut at the window's end) and none at its start longer."""
    ref = pd.DataFrame({"trace_index": [0, 1], "submit_time": [0, 0],
                        "start_time": pd.array([3600, 7200], dtype="Int64"),
                        "end_time": pd.array([7200, 12600], dtype="Int64"), "nodes": pd.array([2, 1], dtype="Int64")})
    assert idle_hours(ref, np.array([int(6.5 * 3600)]), 0, int(9.5 * 3600)) == (6, 3, 7, 10)
    # nothing busy and nothing submitted: one stretch, the whole window
    assert idle_hours(ref.iloc[:0], np.array([], dtype=np.int64), 0, 5 * 3600) == (5, 5, 0, 5)
    # every hour busy: none (length 0 at bin 0)
    assert idle_hours(ref.assign(end_time=pd.array([7200, 10 * 3600], dtype="Int64")), np.array([0]), 0, 9000) == (
        0, 0, 0, 3)
