"""Hand-computed schedules on tiny traces (DESIGN.md §3). Every expected value is worked out in
the comments from the semantics, not taken from a run."""

import pytest

from twinsweep.core.errors import ConfigError
from twin_helpers import schedule_of, simulate_tiny


def J(submit, run, limit, nodes, **kw):
    return dict(submit=submit, run=run, limit=limit, nodes=nodes, **kw)


def test_easy_no_backfill_when_limit_too_long_and_backfill_ending_at_shadow():
    # N=10. J0 runs [0,100) on 6 nodes. J1 (10 nodes) is the head at t=1: shadow = 100 (J0's
    # expected end), extra = 4 + 6 - 10 = 0. J2 fits now (4 free) and would really end at 12, but
    # 2 + 200 > 100 and 4 > extra: it must wait. J3 (limit 97): 3 + 97 = 100 <= shadow -> starts at
    # 3 (ends exactly at the shadow by its limit). J1 starts at 100, J2 at 150 when J1 ends.
    jobs = [J(0, 100, 100, 6), J(1, 50, 50, 10), J(2, 10, 200, 4), J(3, 10, 97, 4)]
    out, _ = simulate_tiny(jobs, backfill="easy")
    assert schedule_of(out) == {0: (0, 100), 1: (100, 150), 2: (150, 160), 3: (3, 13)}


def test_easy_two_candidates_compete_for_extra_nodes_in_one_pass():
    # J0 [0,100) 5 nodes. Head J1 (8 nodes): shadow 100, extra = 5 + 5 - 8 = 2. At t=2 both J2 and
    # J3 (2 nodes, limit 500) arrive: J2 takes the 2 extra nodes; J3 then needs 2 > extra 0.
    # At 100 J1 starts on 8 of the 8 free; J3 waits until J1 ends at 200.
    jobs = [J(0, 100, 100, 5), J(1, 100, 100, 8), J(2, 500, 500, 2), J(2, 500, 500, 2)]
    out, _ = simulate_tiny(jobs, backfill="easy")
    assert schedule_of(out) == {0: (0, 100), 1: (100, 200), 2: (2, 502), 3: (200, 700)}


def test_easy_shadow_from_expected_ends_not_durations():
    # J0 really runs 10 s but its limit is 1000: at t=1 the head J1 (10 nodes) gets shadow 1000,
    # so J2 (4 nodes, limit 100) backfills at 2 (2 + 100 <= 1000). Had the shadow come from J0's
    # real duration (10), J2 could not backfill. J0 ends at 10 (J1 still blocked by J2); J1 starts
    # when J2 ends at 102.
    jobs = [J(0, 10, 1000, 6), J(1, 50, 50, 10), J(2, 100, 100, 4)]
    out, _ = simulate_tiny(jobs, backfill="easy")
    assert schedule_of(out) == {0: (0, 10), 1: (102, 152), 2: (2, 102)}


def test_easy_shadow_is_when_enough_nodes_are_free_not_the_first_expected_end():
    # Issue 16's example. N=10. J0 (4 nodes) [0,50), J1 (4 nodes) [0,100). At 1 the head J2 needs
    # all 10: 2 free, +4 at 50 (6), +4 at 100 (10) -> shadow 100, extra = 10 - 10 = 0. J3 (2 nodes,
    # limit 60) at 2: 2 + 60 = 62 <= 100 -> it backfills at 2. J2 starts at 100, ends at 110.
    # (Taking the first expected end, 50, as the shadow would make J3 wait until 110.)
    jobs = [J(0, 50, 50, 4), J(0, 100, 100, 4), J(1, 10, 10, 10), J(2, 60, 60, 2)]
    out, _ = simulate_tiny(jobs, backfill="easy")
    assert schedule_of(out) == {0: (0, 50), 1: (0, 100), 2: (100, 110), 3: (2, 62)}


def test_easy_job_past_its_limit_counts_as_ending_one_second_from_now():
    # kill off, N=8. J0 (6 nodes, limit 10) overruns to 50; the head J1 (8 nodes) waits from 1.
    # At 20, J0 is past its expected end (10): EASY takes it to end at now + 1 = 21, the shadow
    # time, so J2 (1 node, limit 1) ends by it and backfills at 20. (A shadow left at 10 would
    # leave no room before it, and J2 would wait behind J1 until 60.)
    jobs = [J(0, 50, 10, 6), J(1, 10, 10, 8), J(20, 1, 1, 1)]
    out, _ = simulate_tiny(jobs, nodes=8, backfill="easy", kill=False)
    assert schedule_of(out) == {0: (0, 50), 1: (50, 60), 2: (20, 21)}


def test_easy_each_backfill_on_extra_nodes_uses_them_up():
    # N=10. J0 (6 nodes) [0,100). Head J1 (8 nodes) at 1: shadow 100, extra = 4 + 6 - 8 = 2.
    # J2, J3, J4 (1 node each, limit 500 > shadow) at 2: J2 and J3 take the 2 extra nodes; J4
    # must wait though 2 nodes are still free now: had the extra not shrunk it would start at 2
    # and, with J2 and J3 still running at 100, leave J1 only 7 of its 8 nodes. At 100 J1 takes
    # the 8 free nodes; J4 starts when J1 ends at 150.
    jobs = [J(0, 100, 100, 6), J(1, 50, 50, 8), J(2, 500, 500, 1), J(2, 500, 500, 1), J(2, 500, 500, 1)]
    out, _ = simulate_tiny(jobs, backfill="easy")
    assert schedule_of(out) == {0: (0, 100), 1: (100, 150), 2: (2, 502), 3: (2, 502), 4: (150, 650)}


def test_release_used_in_the_same_second():
    # J0 ends at 10 and J1 (all 10 nodes) is submitted at 10: ends are applied before the pass.
    out, _ = simulate_tiny([J(0, 10, 10, 10), J(10, 5, 5, 10)], backfill="none")
    assert schedule_of(out) == {0: (0, 10), 1: (10, 15)}


def test_two_completions_applied_before_one_pass():
    # J0 and J1 (5 nodes each) both end at 10. Queue (fcfs): J2 (10 nodes, submitted 5), J3 (5 nodes,
    # submitted 6). With firstfit a pass after only one completion would start J3 and block J2;
    # with both ends applied first, J2 starts at 10 and J3 at 15.
    jobs = [J(0, 10, 10, 5), J(0, 10, 10, 5), J(5, 5, 5, 10), J(6, 5, 5, 5)]
    out, _ = simulate_tiny(jobs, backfill="firstfit")
    assert schedule_of(out) == {0: (0, 10), 1: (0, 10), 2: (10, 15), 3: (15, 20)}


def test_zero_length_job_releases_and_another_pass_runs_same_second():
    # J0 (run 0) takes all nodes at 0 and ends at 0; its nodes are released after the pass and a
    # second pass at t=0 starts J1.
    out, _ = simulate_tiny([J(0, 0, 10, 10), J(0, 5, 5, 10)], backfill="none")
    assert schedule_of(out) == {0: (0, 0), 1: (0, 5)}


def test_exact_fit():
    # 4 + 6 = 10 nodes: both start at 0, free is exactly 0; J2 waits for the first end (J0 at 20).
    out, _ = simulate_tiny([J(0, 20, 20, 4), J(0, 30, 30, 6), J(0, 5, 5, 1)], backfill="easy")
    assert schedule_of(out) == {0: (0, 20), 1: (0, 30), 2: (20, 25)}


def _cons_trace():
    # J0 [0,100) 5 nodes; J1 (6 nodes) reserved [100,200); J2 (8 nodes) reserved [200,300);
    # J3 (4 nodes, limit 300) at t=3: [3,100) has 5 free, [100,200) 4, [200,300) only 2 -> no fit
    # now. EASY sees only the head: extra = 5 + 5 - 6 = 4 >= 4 -> backfills J3 at 3.
    return [J(0, 100, 100, 5), J(1, 100, 100, 6), J(2, 100, 100, 8), J(3, 300, 300, 4)]


def test_conservative_reserves_for_every_waiting_job():
    out, res = simulate_tiny(_cons_trace(), backfill="conservative")
    # J3's earliest slot holding 4 nodes for 300 s is after J2's reservation: [300, 600).
    assert schedule_of(out) == {0: (0, 100), 1: (100, 200), 2: (200, 300), 3: (300, 600)}
    assert res.counts["reservation_delays"] == 0


def test_easy_same_trace_backfills_past_second_job():
    out, _ = simulate_tiny(_cons_trace(), backfill="easy")
    # J3 runs [3,303); J1 starts at 100 (6 free); at 200 only 6 free for J2 (8) -> 303.
    assert schedule_of(out) == {0: (0, 100), 1: (100, 200), 2: (303, 403), 3: (3, 303)}


def test_conservative_reservation_moves_later_is_counted():
    # J0 [0,10) limit 100 on 10 nodes. J1 (10 nodes, limit 50) reserved at 100 at t=1.
    # J0 ends at 10: J1 starts at 10. Nothing moves later: the count stays 0. Then J2 (10 nodes)
    # submitted at 20 gets [60, ...): J1's limit is 50 -> expected end 60; J1 ends really at 30
    # -> J2 starts at 30 (pulled forward, not a delay).
    jobs = [J(0, 10, 100, 10), J(1, 20, 50, 10), J(20, 5, 5, 10)]
    out, res = simulate_tiny(jobs, backfill="conservative")
    assert schedule_of(out) == {0: (0, 10), 1: (10, 30), 2: (30, 35)}
    assert res.counts["reservation_delays"] == 0


def test_conservative_reservation_taken_by_a_newcomer_in_front_is_counted():
    # 4 nodes, sjf. J0 (4 nodes, limit 100) runs [0,10). At 1 J1 (4 nodes, limit 50) is reserved
    # [100,150). At 5 J2 (4 nodes, limit 20) is shorter: sjf puts it in front, it takes
    # [100,120) and J1 moves to [120,170): one reservation delay. J0 ends at 10: J2 starts
    # (ends 30), J1 is reserved at 30 (earlier: not a delay) and starts then.
    jobs = [J(0, 10, 100, 4), J(1, 50, 50, 4), J(5, 20, 20, 4)]
    out, res = simulate_tiny(jobs, nodes=4, policy="sjf", backfill="conservative")
    assert schedule_of(out) == {0: (0, 10), 1: (30, 80), 2: (10, 30)}
    assert res.counts["reservation_delays"] == 1


def test_none_stops_at_first_blocked_job():
    # J1 (6 nodes) blocks at t=1 (4 free); with `none`, J2 (1 node) must not pass it.
    jobs = [J(0, 100, 100, 6), J(1, 10, 10, 6), J(2, 10, 10, 1)]
    out, _ = simulate_tiny(jobs, backfill="none")
    assert schedule_of(out) == {0: (0, 100), 1: (100, 110), 2: (100, 110)}
    out, _ = simulate_tiny(jobs, backfill="firstfit")
    assert schedule_of(out)[2] == (2, 12)


def test_sjf_easy_reserves_for_sjf_head_not_oldest():
    # J0 [0,100) 8 nodes. At t=1: J1 (10 nodes, limit 1000) and J2 (4 nodes, limit 50) arrive;
    # SJF puts J2 first: it is the head, shadow 100, extra = 2 + 8 - 4 = 6. J3 (2 nodes, limit 200)
    # at t=2 backfills (2 <= 6). Reserving for the oldest (J1, 10 nodes) would give extra 0.
    # At 100 J2 starts; J1 (head) gets shadow 202 (J3's expected end) and starts then.
    jobs = [J(0, 100, 100, 8), J(1, 1000, 1000, 10), J(1, 50, 50, 4), J(2, 200, 200, 2)]
    out, _ = simulate_tiny(jobs, policy="sjf", backfill="easy")
    assert schedule_of(out) == {0: (0, 100), 1: (202, 1202), 2: (100, 150), 3: (2, 202)}


def test_ljf_orders_by_nodes():
    # After J0 ends at 10, LJF starts the 7-node job before the older 2-node job... which also fits.
    jobs = [J(0, 10, 10, 10), J(1, 5, 5, 2), J(2, 5, 5, 7), J(3, 5, 5, 3)]
    out, _ = simulate_tiny(jobs, policy="ljf", backfill="none")
    # at 10: queue LJF = J2 (7), J3 (3), J1 (2): J2 and J3 start (10 nodes); J1 waits until 15.
    assert schedule_of(out) == {0: (0, 10), 1: (15, 20), 2: (10, 15), 3: (10, 15)}


def test_kill_at_limit_in_reschedule_never_in_replay():
    jobs = [J(0, 100, 60, 4, start=5)]
    out, _ = simulate_tiny(jobs, backfill="easy")
    assert schedule_of(out) == {0: (0, 60)} and out.status[0] == "timeout"
    out, _ = simulate_tiny(jobs, policy="replay", backfill="none")
    assert schedule_of(out) == {0: (5, 105)} and out.status[0] == "completed"
    out, _ = simulate_tiny(jobs, backfill="easy", kill=False)
    assert schedule_of(out) == {0: (0, 100)} and out.status[0] == "completed"
    # running exactly its limit is completed, not timeout
    out, _ = simulate_tiny([J(0, 60, 60, 4)], backfill="easy")
    assert out.status[0] == "completed"


def test_rejection_with_reason_and_not_queued():
    jobs = [J(0, 10, 10, 11), J(0, 10, 10, 0), J(1, 10, 10, 10)]
    out, _ = simulate_tiny(jobs, backfill="none")
    assert list(out.status) == ["rejected", "rejected", "completed"]
    assert "system has 10" in out.reason[0]
    assert schedule_of(out)[2] == (1, 11)


def test_imputed_time_limit_flags_and_default():
    jobs = [J(0, 50, None, 2), J(0, 50, -1, 2)]
    out, _ = simulate_tiny(jobs, default_time_limit=3600)
    assert list(out.time_limit_imputed) == [True, True]
    assert list(out.time_limit) == [3600, 3600]
    out, _ = simulate_tiny(jobs)
    assert list(out.time_limit) == [50, 50]  # no default: its own run time


def test_priority_without_column_names_it():
    with pytest.raises(ConfigError, match="priority"):
        simulate_tiny([J(0, 10, 10, 1)], policy="priority")
    out, _ = simulate_tiny([J(0, 100, 100, 10), J(1, 5, 5, 10, priority=1), J(2, 5, 5, 10, priority=9)],
                           policy="priority", backfill="none")
    assert schedule_of(out) == {0: (0, 100), 1: (105, 110), 2: (100, 105)}


def test_window_prepopulation_queue_and_leftovers():
    # Window [100, 200). J0 ran [0,150) recorded: running at 100 -> prepopulated at its recorded
    # start. J1 ended at 50: dropped. J2 submitted 90, recorded start 120: queued at 100; it fits
    # (4 free) and starts at 100 under rescheduling. J3 submitted 150 runs 100 s: running at 200.
    # J4 needs 10 nodes, submitted 160: still queued at 200. J5 submitted at 250: dropped.
    jobs = [J(0, 150, 200, 6, start=0), J(0, 50, 50, 2, start=0), J(90, 30, 30, 4, start=120),
            J(150, 100, 100, 4, start=150), J(160, 10, 10, 10, start=300), J(250, 1, 1, 1, start=250)]
    out, res = simulate_tiny(jobs, backfill="firstfit", start=100, duration=100)
    assert list(out.job_id) == ["0", "2", "3", "4"]
    s = schedule_of(out)
    assert s[0] == (0, 150) and bool(out.prepopulated[0])
    assert s[2] == (100, 130)
    assert s[3][0] == 150 and out.status[2] == "running"
    assert out.status[3] == "queued" and s[4] == (None, None)
    assert res.steps.time.iloc[0] == 100 and res.steps.busy_nodes.iloc[0] == 10


def test_window_prepopulation_uses_the_effective_time_limit():
    # Window [100, 300), kill on, 10 nodes. J0 ran [0,150) recorded with limit -1 (unusable) and
    # J1 [50,200) with no limit: without a system default their limits are their run times, so
    # both still run at 100: prepopulated at their recorded starts (J0 used to be dropped, as if
    # killed at -1 s). J2 (8 nodes) at 100 waits for both: 200.
    jobs = [J(0, 150, -1, 4, start=0), J(50, 150, None, 4, start=50), J(100, 10, 10, 8)]
    out, _ = simulate_tiny(jobs, start=100, duration=200, backfill="none")
    assert schedule_of(out) == {0: (0, 150), 1: (50, 200), 2: (200, 210)}
    assert list(out.prepopulated) == [True, True, False]
    # With a system default of 30 s both would have been killed (at 30 and 80) before the window:
    # dropped (J1 used to be placed anyway, ending at 80, before its window). J2 starts at once.
    out, _ = simulate_tiny(jobs, start=100, duration=200, backfill="none", default_time_limit=30)
    assert schedule_of(out) == {2: (100, 110)}


def test_replay_uses_recorded_nodes_when_free():
    jobs = [J(0, 10, 10, 2, start=0, node_ids=[5, 7]), J(0, 10, 10, 2, start=3, node_ids=[5, 6])]
    out, res = simulate_tiny(jobs, policy="replay", backfill="none")
    assert list(out.node_ids[0]) == [5, 7]
    assert list(out.node_ids[1]) == [0, 1]  # node 5 busy: lowest free, counted
    assert res.counts["placement_fallbacks"] == 1


def test_replay_counts_a_job_delayed_by_an_inconsistent_trace():
    # 2 nodes. J0 recorded [0, 10) on both; J1 (1 node) recorded to start at 5, when none is free:
    # replay starts it as soon as it fits, at 10, and counts one delayed job
    out, res = simulate_tiny([dict(submit=0, run=10, limit=10, nodes=2, start=0),
                              dict(submit=0, run=5, limit=5, nodes=1, start=5)], nodes=2, policy="replay",
                             backfill="none")
    assert schedule_of(out) == {0: (0, 10), 1: (10, 15)}
    assert res.counts["replay_delayed"] == 1
