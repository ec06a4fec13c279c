"""Node availability calendar (System.availability, core/engine.py) and its estimators (core/availability.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twin_helpers import frame
from twinsweep.core import availability as av
from twinsweep.core.backfill import BUILTIN_BACKFILLS as BACKFILLS
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.errors import ConfigError
from twinsweep.core.system import System, system_from_dict

# A: the whole machine for [0, 200); B: 8 nodes for 100 s, submitted at 50; C: 6 nodes for 500 s.
_JOBS = [dict(submit=0, run=200, limit=200, nodes=10), dict(submit=50, run=100, limit=100, nodes=8),
         dict(submit=60, run=500, limit=500, nodes=6)]


def _run(calendar, backfill, jobs=_JOBS, policy="fcfs"):
    f = frame(jobs)
    system = System(name="t", title="t", nodes=10, availability=calendar)
    win, t0, t1 = select_window(f, None, None, policy == "replay", True)
    return Engine(win, system, policy, backfill, True, [100.0] * len(win), 10.0, t0, t1).run()


@pytest.mark.parametrize("backfill", BACKFILLS)
def test_nominal_machine(backfill):
    # B starts when A ends; C needs 6 of the 2 left: after B
    assert _run((), backfill).jobs["start_time"].tolist() == [0, 200, 300]


@pytest.mark.parametrize("backfill", BACKFILLS)
def test_drain_holds_nodes_and_reservations_count_on_their_return(backfill):
    # 4 nodes down on [100, 1000): the machine is full at 100, so they are drained when A ends
    # at 200; B (8 nodes) then waits for the period's end. With a reservation for B at 1000 (the
    # held nodes' expected end), C (6 nodes, ends by 700) is backfilled at 200; without
    # backfilling, C waits behind B.
    res = _run(((100, 1000, 4),), backfill)
    want = [0, 1000, 1100] if backfill == "none" else [0, 1000, 200]
    assert res.jobs["start_time"].tolist() == want
    assert res.counts["availability_down_node_s"] == 4 * (1000 - 200)
    assert res.counts["availability_periods"] == 1
    # held nodes are not busy: 6 busy from 200 (C), none after C ends at 700 until B starts
    steps = dict(zip(res.steps["time"].tolist(), res.steps["busy_nodes"].tolist()))
    if backfill != "none":
        assert steps[200] == 6 and steps[700] == 0 and steps[1000] == 8


def test_calendar_before_window_and_replay_ignore_it():
    assert _run(((5000, 6000, 4),), "easy").jobs["start_time"].tolist() == [0, 200, 300]
    jobs = [dict(j, start=s) for j, s in zip(_JOBS, (0, 200, 300))]
    assert _run(((100, 1000, 4),), "easy", jobs=jobs, policy="replay").jobs["start_time"].tolist() == [0, 200, 300]


def test_system_file_calendar_is_checked():
    doc = {"system": {"name": "x", "nodes": 10,
                      "availability": [{"start": "1d", "end": "2d", "nodes_down": 3}, [0, 50, 1]]}}
    assert system_from_dict(doc).availability == ((0, 50, 1), (86400, 172800, 3))
    assert System(name="x", title="x", nodes=10).checksum == system_from_dict(
        {"system": {"name": "x", "title": "x", "nodes": 10}}).checksum
    for bad, msg in (({"start": 5, "end": 5, "nodes_down": 1}, "after start"),
                     ({"start": 0, "end": 5, "nodes_down": 11}, r"1\.\.10 \(all of them: a full outage"),
                     ({"start": 0, "end": 5, "nodes_down": 0}, r"1\.\.10"),
                     ({"start": 0, "end": 5}, "exactly start, end, nodes_down")):
        with pytest.raises(ConfigError, match=msg):
            system_from_dict({"system": {"name": "x", "nodes": 10, "availability": [bad]}}, "x.toml")


def _sched(rows):
    return pd.DataFrame({"submit_time": [r[0] for r in rows], "start_time": pd.array([r[1] for r in rows], dtype="Int64"),
                         "end_time": pd.array([r[2] for r in rows], dtype="Int64"),
                         "nodes": pd.array([r[3] for r in rows], dtype="Int64")})


def test_estimators_by_hand():
    B, G = 100, 10  # blocks of 100 s, the queue looked at every 10 s
    # block [0, 100): 6 of 10 nodes busy; only 10-node jobs wait: a queue held for a wide head
    # (EASY's drain) says nothing about nodes down
    wide = [(0, 0, 100, 6), (0, 100, 150, 10), (0, 200, 300, 10)]
    edges, down = av.block_down_nodes(_sched(wide), 10, 0, 300, block_s=B, grid_s=G, latency_s=0)
    assert edges.tolist() == [0, 100, 200, 300] and down.tolist() == [0, 0, 0]
    # a 2-node job queued *behind* the wide head may be kept by the head's reservation: still 0
    behind = _sched(wide + [(0, 100, 120, 2)])
    assert av.block_down_nodes(behind, 10, 0, 300, block_s=B, grid_s=G, latency_s=0)[1].tolist() == [0, 0, 0]
    assert av.first_starters(behind, np.array([0, 50, 100, 150, 250]), latency_s=0)[:3].tolist() == [10, 10, 10]
    # the 2-node job at the head waited along block 0 while 4 nodes were never used: at least
    # 4 - 2 + 1 = 3 were down (with 2 usable it would have started); block [100, 200) peaks at
    # 12 busy (a log busier than the machine) -> 0; [200, 300) full -> 0
    s = _sched([(0, 100, 120, 2)] + wide)
    edges, down = av.block_down_nodes(s, 10, 0, 300, block_s=B, grid_s=G, latency_s=0)
    assert down.tolist() == [3, 0, 0]
    assert av.first_starters(s, np.array([0, 50, 100, 150, 250]), latency_s=0)[:3].tolist() == [2, 2, 10]
    # with a site rule that holds every job of limit > 50 s, the 2-node job (limit 100) does not
    # count, nor do the 10-node jobs: no head the rules let start
    s_lim = s.assign(time_limit=[100, 100, 100, 100])
    _e, held = av.block_down_nodes(s_lim, 10, 0, 300, block_s=B, grid_s=G, max_limit=lambda t: 50, latency_s=0)
    assert held.tolist() == [0, 0, 0]
    _e, free = av.block_down_nodes(s_lim, 10, 0, 300, block_s=B, grid_s=G, max_limit=lambda t: np.inf, latency_s=0)
    assert free.tolist() == [3, 0, 0]
    # blind: median of [3, 0, 0] = 0 on the whole window; on [0, 100) alone 3, clipped to 0 as a
    # 10-node job was submitted in it (it must still fit)
    bc = lambda sch, a, b: av.blind_constant(sch, 10, a, b, block_s=B, grid_s=G, latency_s=0)  # noqa: E731
    assert bc(s, 0, 300) == (0, 0) and bc(s, 0, 100) == (0, 3)
    small = _sched([(0, 0, 100, 6), (0, 100, 150, 3)])  # a 3-node job waits while 4 nodes free
    assert av.blind_constant(small, 10, 0, 100, block_s=B, grid_s=G, latency_s=0) == (2, 2)
    assert av.constant_calendar(0, 0, 10) == () and av.constant_calendar(2, 0, 10) == ((0, 10, 2),)


def test_job_behind_the_head_counts_when_it_delays_no_reservation():
    """Hand-computed: 10 nodes, X holds 6 on [0, 200); the head W (10 nodes) starts at 200; J
    (2 nodes, limit L) waits behind it. Blocks of 100 s, queue looked at every 10 s. In [0, 100)
    and [100, 200) 4 nodes are never used; J would have been backfilled at t had 2 of them been
    usable when t + L <= 200 (W's start: J delays no reservation). L = 100: at all 10 looks of
    block 0, so at least 4 - 2 + 1 = 3 down; in block 1 only at its look at 100 (1 of 10: no
    majority): 0. L = 150: at 6 of block 0's looks (t <= 50): 3; L = 160: at 5 of 10 (t <= 40),
    not more than half: 0. No known limit: nothing (W is wider than 4)."""
    B, G = 100, 10
    rows = [(0, 0, 200, 6), (0, 200, 300, 10), (0, 300, 310, 2)]
    down = lambda sch: av.block_down_nodes(sch, 10, 0, 300, block_s=B, grid_s=G, latency_s=0)[1].tolist()  # noqa: E731
    assert down(_sched(rows).assign(time_limit=[200.0, 100.0, 100.0])) == [3, 0, 0]
    assert down(_sched(rows).assign(time_limit=[200.0, 100.0, 150.0])) == [3, 0, 0]
    assert down(_sched(rows).assign(time_limit=[200.0, 100.0, 160.0])) == [0, 0, 0]
    assert down(_sched(rows)) == [0, 0, 0]
    assert av.first_starters(_sched(rows).assign(time_limit=[200.0, 100.0, 100.0]),
                             np.array([0, 100, 110, 250]), latency_s=0).tolist() == [2, 2, 10, 2]


def test_held_from_by_hand():
    """A job is held for a reason of its own from the first start of a job submitted after it
    that asks for at least its nodes and its limit (unknown limits compare as equal)."""
    inf = np.inf
    sub = np.array([0, 10, 20, 30, 40])
    st = np.array([500, 100, 60, 45, 50])
    n = np.array([4, 4, 2, 8, 3])
    lim = np.array([100.0, 100.0, 500.0, 50.0, 200.0])
    # job 0 (4 nodes, 100 s): overtaken by 1 at 100 (4, 100 s: as large) -- 2 is smaller, 3 is
    # shorter, 4 is smaller; job 1 (start 100): 3 is shorter, 2 and 4 smaller: never held; job 2
    # (2 nodes, 500 s, start 60): 4 (3 nodes, 200 s) is shorter -> never; 3 and 4: nobody after
    # them starts before them
    assert av.held_from(sub, st, n, lim).tolist() == [100, inf, inf, inf, inf]
    # limits unknown (-inf): nodes alone decide: 0 is overtaken by 3 (8 nodes) at 45; 2 (2 nodes,
    # start 60) by 3 at 45 and 4 at 50: 45; 1 by 3 at 45
    unk = np.full(5, -np.inf)
    assert av.held_from(sub, st, n, unk).tolist() == [45, 45, 45, inf, inf]


def test_held_jobs_by_hand():
    """held_jobs marks, per row of a schedule, the jobs held_from finds overtaken (the example of
    test_held_from_by_hand: job 0 only), never a job that did not run (row 5: no start)."""
    sched = pd.DataFrame({
        "submit_time": [0, 10, 20, 30, 40, 5],
        "start_time": pd.array([500, 100, 60, 45, 50, None], dtype="Int64"),
        "end_time": pd.array([600, 200, 560, 95, 250, None], dtype="Int64"),
        "nodes": pd.array([4, 4, 2, 8, 3, 1], dtype="Int64"),
        "time_limit": [100.0, 100.0, 500.0, 50.0, 200.0, 10.0],
    })
    assert av.held_jobs(sched).tolist() == [True, False, False, False, False, False]
    # without limits, nodes alone decide (as held_from with unknown limits): 0, 1 and 2
    assert av.held_jobs(sched.drop(columns="time_limit")).tolist() == [True, True, True, False, False, False]


def test_held_job_is_no_evidence_of_nodes_down():
    """Hand-computed: 10 nodes, X holds 6 on [0, 300); A (2 nodes, limit 100) waits from 0 to 250.
    Blocks of 100 s, queue looked at every 10 s. Alone, A at the head of the queue with 4 nodes
    never used says at least 4 - 2 + 1 = 3 were down in [0, 100) and [100, 200); in [200, 300)
    2 are never used (A itself runs on [250, 260)): 1 (A waits at all 5 looks before 250):
    [3, 3, 1]. B (2 nodes) submitted at 110 starts at 120: with a
    limit >= A's, B proves there was room for A (A waited for a reason of its own, and none of
    its wait is evidence): [0, 0, 0] once B's own 10 s wait is put down to scheduler latency; with a shorter limit B may have been backfilled ahead of A:
    [3, 1, 1] (in [100, 200) B and X peak at 8 busy: 2 never used)."""
    B, G = 100, 10
    x = (0, 0, 300, 6, 300)
    a = (0, 250, 260, 2, 100)
    rows = lambda *r: _sched(r).assign(time_limit=[float(v[4]) for v in r])  # noqa: E731
    down = lambda sch: av.block_down_nodes(sch, 10, 0, 300, block_s=B, grid_s=G, latency_s=0)[1].tolist()  # noqa: E731
    assert down(rows(x, a)) == [3, 3, 1]
    # B itself waited 10 s (its one look, at 110) with 2 nodes never used: with no scheduler
    # latency that says 1 down; a job queued less than latency_s is not evidence
    assert down(rows(x, a, (110, 120, 130, 2, 100))) == [0, 1, 0]
    late = av.block_down_nodes(rows(x, a, (110, 120, 130, 2, 100)), 10, 0, 300, block_s=B, grid_s=G, latency_s=G)
    assert late[1].tolist() == [0, 0, 0]
    assert down(rows(x, a, (110, 120, 130, 2, 50))) == [3, 1, 1]
    # the stacked calendar of [3, 1, 1]: 1 node on [0, 300), 2 more on [0, 100)
    assert av.queue_calendar(rows(x, a, (110, 120, 130, 2, 50)), 10, 0, 300, block_s=B, grid_s=G, latency_s=0) == \
        ((0, 100, 2), (0, 300, 1))


def test_calendar_is_stacked_contiguous_periods():
    """A step function of nodes down becomes stacked periods: each node is held for its whole
    contiguous run (its expected end is the run's end, not the block's), and the periods add up
    to the step function at every time."""
    e = np.array([0, 10, 20, 30, 40])
    assert av.layered_calendar(e, np.array([3, 5, 2, 2]), 100) == ((0, 20, 1), (0, 40, 2), (10, 20, 2))
    assert av.layered_calendar(e, np.array([0, 1, 0, 1]), 100) == ((10, 20, 1), (30, 40, 1))
    assert av.layered_calendar(e, np.array([2, 1, 3, 0]), 100) == ((0, 10, 1), (0, 30, 1), (20, 30, 2))
    assert av.layered_calendar(e, np.array([0, 0, 0, 0]), 100) == ()
    assert av.layered_calendar(e, np.array([9, 12, 9, 0]), 10) == ((0, 30, 9), (10, 20, 1))  # clipped to nodes
    rng = np.random.default_rng(3)
    for _ in range(50):
        d = rng.integers(0, 6, 12)
        edges = np.arange(0, 130, 10)
        cal = av.layered_calendar(edges, d, 100)
        total = np.zeros(12, dtype=int)
        for a, b, k in cal:
            total[a // 10:b // 10] += k
        assert total.tolist() == d.tolist()
        # levels of one run are merged: never two periods with the same span
        assert len({(a, b) for a, b, _k in cal}) == len(cal)
        # a period ends only where the step falls (never at a block edge where it stays or rises)
        assert all(b == 120 or d[b // 10] < d[b // 10 - 1] for _a, b, _k in cal)


def _run_grace(grace, jobs, backfill="easy"):
    f = frame(jobs)
    system = System(name="t", title="t", nodes=10, kill_grace_s=grace)
    win, t0, t1 = select_window(f, None, None, False, True, None, grace)
    return Engine(win, system, "fcfs", backfill, True, [100.0] * len(win), 10.0, t0, t1).run().jobs


def test_kill_grace():
    # A overruns its 100 s limit by 30 s, B by 100 s; C needs the whole machine
    jobs = [dict(submit=0, run=130, limit=100, nodes=5), dict(submit=0, run=200, limit=100, nodes=5),
            dict(submit=1, run=10, limit=10, nodes=10)]
    j = _run_grace(0, jobs)
    assert j["end_time"].tolist() == [100, 100, 110] and j["status"].tolist() == ["timeout", "timeout", "completed"]
    j = _run_grace(60, jobs)
    # A completes inside the grace, B is killed 60 s past its limit; C starts when both are gone
    assert j["end_time"].tolist() == [130, 160, 170]
    assert j["status"].tolist() == ["completed", "timeout", "completed"]
    assert "60 s past its time limit" in j["reason"][1]
    with pytest.raises(ConfigError, match="kill_grace_s"):
        System(name="t", title="t", nodes=10, kill_grace_s=-1)


def test_fit_kill_grace_by_hand():
    from twinsweep.sweep.validate import fit_kill_grace

    jobs = pd.DataFrame({"submit_time": [0, 1, 2, 3, 4, 500],
                         "run_time": pd.array([110, 105, 90, 130, 1000, 9999], dtype="Int64"),
                         "time_limit": pd.array([100, 100, 100, 100, 100, 100], dtype="Int64")})
    # overruns in [0, 100): 10, 5, 30, 900 -> 0.75 quantile (linear) = 30 + 0.25 · 870 = 247.5 -> 300 s
    assert fit_kill_grace(jobs, 0, 100) == 300
    assert fit_kill_grace(jobs.iloc[:3], 0, 100) == 60  # overruns 10, 5 -> 8.75 -> 60 s
    assert fit_kill_grace(jobs.iloc[2:3], 0, 100) == 0


def _run_cycle(cycle, jobs, backfill="easy", policy="fcfs"):
    f = frame(jobs)
    system = System(name="t", title="t", nodes=10, scheduling_cycle_s=cycle)
    win, t0, t1 = select_window(f, None, None, policy == "replay", True)
    return Engine(win, system, policy, backfill, True, [100.0] * len(win), 10.0, t0, t1).run()


@pytest.mark.parametrize("backfill", BACKFILLS)
def test_scheduling_cycle(backfill):
    # A on the whole machine [0, 150); B (submitted at 10) and C (at 230) wait for the next pass
    jobs = [dict(submit=0, run=150, limit=200, nodes=10), dict(submit=10, run=50, limit=60, nodes=10),
            dict(submit=230, run=10, limit=10, nodes=2)]
    assert _run_cycle(0, jobs, backfill).jobs["start_time"].tolist() == [0, 150, 230]
    res = _run_cycle(100, jobs, backfill)
    # passes at 0, 100, 200, 300: B at 200 (A ended at 150), C at 300 (B ends at 250)
    assert res.jobs["start_time"].tolist() == [0, 200, 300]
    # a recorded schedule is replayed as recorded whatever the cycle
    rep = [dict(j, start=s) for j, s in zip(jobs, (0, 150, 230))]
    assert _run_cycle(100, rep, policy="replay").jobs["start_time"].tolist() == [0, 150, 230]
    with pytest.raises(ConfigError, match="scheduling_cycle_s"):
        System(name="t", title="t", nodes=10, scheduling_cycle_s=1.5)


def test_blind_constant_reads_nothing_recorded_after_the_fitting_window():
    """Fitting window [0, 200), blocks of 100 s: X (6 of 10 nodes) on [0, 300), A (2 nodes)
    waits from 0 to 250. C (submitted at 210, 2 nodes, A's limit) starts at 220, before A: read
    in full, it shows A held for a reason of its own and nothing is down; censored at 200 (what
    was known then: A still queued), A says 3 down in both blocks: median 3, below the 4 nodes the
    window's largest job (X) leaves. Moving the starts of the reported window changes nothing."""
    B, G = 100, 10
    rows = lambda c_start: _sched([(0, 0, 300, 6), (0, 250, 260, 2), (210, c_start, c_start + 10, 2)]).assign(  # noqa: E731
        time_limit=[300.0, 100.0, 100.0])
    full = av.block_down_nodes(rows(220), 10, 0, 200, block_s=B, grid_s=G, latency_s=0)[1].tolist()
    assert full == [0, 0]
    for c_start in (220, 240, 400):
        assert av.blind_constant(rows(c_start), 10, 0, 200, block_s=B, grid_s=G, latency_s=0) == (3, 3)
    cen = av.censor_at(rows(220), 200)
    assert cen["start_time"].tolist() == [0, 200] and cen["end_time"].tolist() == [300, 200]
    # a 9-node job submitted in the reported window (requests are blind inputs): the constant is
    # clipped to the 1 node it leaves, else that job would wait for ever behind a constant hold
    wide = pd.concat([rows(220), _sched([(230, 500, 600, 9)]).assign(time_limit=[100.0])], ignore_index=True)
    assert av.blind_constant(wide, 10, 0, 200, block_s=B, grid_s=G, latency_s=0) == (1, 3)
    # a job wider than the machine is rejected by the twin: it does not clip
    huge = pd.concat([rows(220), _sched([(230, 500, 600, 12)]).assign(time_limit=[100.0])], ignore_index=True)
    assert av.blind_constant(huge, 10, 0, 200, block_s=B, grid_s=G, latency_s=0) == (3, 3)


def test_telemetry_estimator_by_hand():
    """The informed estimator reads the two counts only. Blocks of 100 s, looks every 10 s, a
    10-node machine: block 0 has a job queued at 6 of 10 looks (pressured) and at most 6 nodes
    busy (4 idle); block 1 has a queue at 2 looks (not pressured); block 2 nothing ran."""
    # busy: 6 nodes over [0, 100), 9 over [100, 200); queued: one job over [0, 60) and [100, 120)
    counts = (np.array([0, 100, 200]), np.array([6, 9, 0]), np.array([0, 60, 100, 120]), np.array([1, 0, 1, 0]))
    edges = np.array([0, 100, 200, 300])
    assert av.pressure(counts[2], counts[3], edges, grid_s=10).tolist() == [True, False, False]
    assert av.idle_nodes(counts[0], counts[1], 10, edges).tolist() == [4, 1, 10]
    # share 0.5: round(0.5 x 4) = 2 nodes down in block 0, nothing else
    assert av.telemetry_calendar(counts, 10, 0, 300, 0.5, block_s=100, grid_s=10) == ((0, 100, 2),)
    assert av.telemetry_calendar(counts, 10, 0, 300, 1.0, block_s=100, grid_s=10) == ((0, 100, 4),)
    assert av.telemetry_calendar(counts, 10, 0, 300, 0.0, block_s=100, grid_s=10) == ()
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        av.telemetry_calendar(counts, 10, 0, 300, 1.5, block_s=100, grid_s=10)


def test_telemetry_machine_adds_the_slots_the_busy_count_shows_above_the_machine():
    """Blocks of 100 s on a 10-node machine. Block 0 as in the test above (pressured, 4 nodes
    idle: 2 down at share 0.5); block 1 holds 14 nodes busy for 60 s and 12 for 40 s (time
    sharing): its 0.4 quantile is 12, its 0.99 quantile 14; block 2 nothing ran."""
    counts = (np.array([0, 100, 160, 200]), np.array([6, 14, 12, 0]),
              np.array([0, 60, 100, 120]), np.array([1, 0, 1, 0]))
    m = av.telemetry_machine(counts, 10, 0, 300, 0.5, block_s=100, grid_s=10)
    # capacity per block: 10 - 2 = 8, 14, 10 -> 14 slots, 6 / 0 / 4 down on them
    assert m.slots == 14
    assert m.calendar == ((0, 100, 6), (200, 300, 4))
    assert m.down_periods == 1  # the 2 nodes down in block 0; the rest is the slots above the 10 nodes
    assert m.down_frac == pytest.approx(2 * 100 / (10 * 300)) and m.added_ratio == pytest.approx(4 * 100 / (10 * 300))
    m = av.telemetry_machine(counts, 10, 0, 300, 0.5, block_s=100, grid_s=10, quantile=0.4)
    assert m.slots == 12 and m.calendar == ((0, 100, 4), (200, 300, 2)) and m.added_ratio == pytest.approx(2 * 100 / 3000)
    # no block above the machine: exactly the calendar of telemetry_calendar, on the machine's nodes
    plain = (np.array([0, 100, 200]), np.array([6, 9, 0]), counts[2], counts[3])
    m = av.telemetry_machine(plain, 10, 0, 300, 0.5, block_s=100, grid_s=10)
    assert (m.slots, m.calendar, m.added_ratio) == (10, av.telemetry_calendar(plain, 10, 0, 300, 0.5, block_s=100,
                                                                              grid_s=10), 0.0)
    assert m.down_frac == pytest.approx(2 * 100 / 3000) and m.down_periods == len(m.calendar) == 1


def test_step_quantile_by_hand():
    t, v = np.array([0, 10, 40]), np.array([5, 1, 3])  # 5 on [0, 10), 1 on [10, 40), 3 from 40 on
    assert av.step_quantile(t, v, 0, 100, 0.3) == 1.0  # 1 for 30 % of [0, 100)
    assert av.step_quantile(t, v, 0, 100, 0.31) == 3.0
    assert av.step_quantile(t, v, 0, 100, 1.0) == 5.0
    assert av.step_quantile(t, v, 50, 60, 0.5) == 3.0  # the value in force at the window's start
    assert av.step_quantile(t, v, -10, 0, 1.0) == 0.0  # 0 before the first change
    with pytest.raises(ValueError, match="empty"):
        av.step_quantile(t, v, 5, 5, 0.5)
    with pytest.raises(ValueError, match="quantile"):
        av.step_quantile(t, v, 0, 10, 0.0)


def test_telemetry_counts_cannot_tell_which_job_started_when():
    """Two jobs of the same size and run time that trade their starts leave both counts as they
    were: the informed estimator's whole input is the same."""
    a = _sched([(0, 10, 60, 3), (5, 20, 70, 3), (0, 0, 100, 2)])
    b = _sched([(0, 20, 70, 3), (5, 10, 60, 3), (0, 0, 100, 2)])
    for x, y in zip(av.telemetry_counts(a), av.telemetry_counts(b)):
        assert x.tolist() == y.tolist()


def test_idle_share_is_fitted_on_the_fitting_window_only():
    """fit_idle_share: queue-evidence nodes down over idle nodes of the pressured blocks; nothing
    recorded after the fitting window's end changes it, and no evidence gives 1."""
    # one 10-node block [0, 100): 6 nodes busy, 4 never busy, while a 2-node job waits the whole
    # block: by queue evidence 4 - 2 + 1 = 3 of the 4 were down
    s = _sched([(0, 0, 100, 6), (0, 100, 150, 2)]).assign(time_limit=[100.0, 50.0])
    fit = av.fit_idle_share(s, 10, 0, 100, block_s=100, grid_s=10, latency_s=0)
    assert fit["pressured_blocks"] == 1 and fit["idle_node_blocks"] == 4 and fit["down_node_blocks"] == 3
    assert fit["share"] == 0.75
    later = pd.concat([s, _sched([(120, 130, 200, 9)]).assign(time_limit=[70.0])], ignore_index=True)
    assert av.fit_idle_share(later, 10, 0, 100, block_s=100, grid_s=10, latency_s=0) == fit
    quiet = _sched([(0, 0, 100, 6)]).assign(time_limit=[100.0])
    assert av.fit_idle_share(quiet, 10, 0, 100, block_s=100, grid_s=10, latency_s=0)["share"] == 1.0


def test_holds_taken_and_given_back_in_batches_match_one_at_a_time():
    """Cluster.add_running_many / remove_running_many (what a calendar's drain and period end use:
    k holds in one merge, not k insertions) leave ``running`` as k single calls would, count every
    entry in ``changes``, and refuse an entry that is not running without changing anything."""
    import random

    from twinsweep.core.resources import Cluster, NodePool

    rng = random.Random(3)
    jobs = [(rng.randrange(0, 10_000), j) for j in range(40)]
    holds = [(5_000, h) for h in range(100, 130)]
    one, many = Cluster(NodePool(8), [1] * 130, [0] * 130), Cluster(NodePool(8), [1] * 130, [0] * 130)
    for c in (one, many):
        for e in jobs:
            c.add_running(*e)
    for e in holds:
        one.add_running(*e)
    many.add_running_many(holds)
    assert many.running == one.running == sorted(jobs + holds) and many.changes == one.changes == 70
    gone = holds[::2] + jobs[:5]
    for e in gone:
        one.remove_running(*e)
    many.remove_running_many(gone)
    assert many.running == one.running and many.changes == one.changes == 70 + len(gone)
    before = list(many.running)
    with pytest.raises(RuntimeError, match="job 100 is not running"):
        many.remove_running_many([holds[1], holds[0]])
    assert many.running == before and many.changes == 70 + len(gone)
