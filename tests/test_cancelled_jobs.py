"""Jobs cancelled while queued in the log (issue 15 item 2; option ``queue_cancelled``): they stay
queued until their cancel time, can hold EASY's reservation meanwhile, then leave with status
``cancelled``; off by default (then they are ``not_run``)."""

from __future__ import annotations

import pandas as pd
import pytest

from twin_helpers import frame
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.system import System


def _log():
    """4 nodes. A: 2 nodes, runs [0, 100) (limit 100). C: 4 nodes, limit 1000, submitted at 10
    and cancelled in the log at 50 without running (SWF: wait 40, run -1). B: 2 nodes, limit
    200, run 200, submitted at 20.

    By hand, with the option: at 20 the queue is C, B. C (4 nodes) does not fit the 2 free
    nodes, so it is EASY's head; shadow = A's expected end 100, extra = 4 - 4 = 0. B fits now but
    20 + 200 > 100 and 2 > extra: it waits. At 50, C leaves the queue (cancelled); the pass
    starts B: start 50, wait 30, end 250. Without the option C is never queued: B starts at 20."""
    f = frame([{"submit": 0, "run": 100, "limit": 100, "nodes": 2, "start": 0},
               {"submit": 10, "run": None, "limit": 1000, "nodes": 4, "start": 50},
               {"submit": 20, "run": 200, "limit": 200, "nodes": 2, "start": 20}])
    f.loc[1, "status"] = "cancelled"
    f["recorded_end_time"] = f["recorded_end_time"].astype("Int64")
    f.loc[1, "recorded_end_time"] = pd.NA
    return f


def _run(f, backfill="easy", option=None, system_flag=False, start=None, duration=None):
    system = System(name="tiny", title="tiny", nodes=4, queue_cancelled=system_flag)
    on = option if option is not None else system_flag
    win, t0, t1 = select_window(f, start, duration, False, True, queue_cancelled=on)
    opts = {} if option is None else {"queue_cancelled": option}
    return Engine(win, system, "fcfs", backfill, True, [100.0] * len(win), 10.0, t0, t1, options=opts).run()


def test_a_cancelled_job_holds_the_easy_reservation_until_its_cancel_time():
    res = _run(_log(), option=True)
    j = res.jobs
    assert list(j["status"]) == ["completed", "cancelled", "completed"]
    assert j["start_time"].tolist()[2] == 50 and j["wait_time"].tolist()[2] == 30 and j["end_time"].tolist()[2] == 250
    assert pd.isna(j["start_time"][1]) and pd.isna(j["end_time"][1])
    assert "cancelled while queued at t = 50 s" in j["reason"][1]
    assert res.counts["cancelled"] == 1
    # the queue held C from 10 to 50 (and B from 20 to 50)
    steps = res.steps.set_index("time")["queued_jobs"]
    assert steps[10] == 1 and steps[20] == 2 and steps[50] == 0


def test_the_system_file_key_turns_it_on_and_the_run_option_overrides_it():
    assert _run(_log(), system_flag=True).jobs["status"].tolist()[1] == "cancelled"
    assert _run(_log(), option=False, system_flag=True).jobs["status"].tolist()[1] == "not_run"


def test_off_by_default_the_cancelled_job_is_not_run():
    res = _run(_log())
    assert list(res.jobs["status"]) == ["completed", "not_run", "completed"]
    assert res.jobs["start_time"].tolist()[2] == 20
    assert "cancelled" not in res.counts


@pytest.mark.parametrize("backfill", ["conservative", "firstfit", "none"])
def test_cancellation_with_the_other_backfill_variants(backfill):
    # conservative: C's reservation (at 100) blocks B (20 + 200 > 100 overlaps it with 4 nodes);
    # at 50 C leaves and the rebuilt profile starts B. firstfit: B starts at 20 (no reservation).
    # none: B is behind C in strict order and starts at 50.
    want = {"conservative": 50, "firstfit": 20, "none": 50}[backfill]
    res = _run(_log(), backfill=backfill, option=True)
    assert res.jobs["start_time"].tolist()[2] == want
    assert res.jobs["status"].tolist()[1] == "cancelled"


def test_a_window_starting_while_it_waits_queues_it_and_a_started_one_runs_until_its_cancel_time():
    res = _run(_log(), option=True, start=30, duration=1000)
    # A and B run at 30 in the log (prepopulated at their recorded starts); C is queued at 30
    assert res.jobs["status"].tolist() == ["completed", "cancelled", "completed"]
    assert res.jobs["prepopulated"].tolist() == [True, False, True]
    assert "cancelled while queued at t = 50 s" in res.jobs["reason"][1]
    # a machine where C fits at once: the twin starts it at 10; its user cancels it at 50 (recorded)
    f = _log()
    f.loc[1, ["nodes", "procs"]] = 2
    res = _run(f, option=True)
    assert res.jobs["start_time"].tolist()[1] == 10 and res.jobs["end_time"].tolist()[1] == 50
    assert res.jobs["status"].tolist()[1] == "cancelled"


def test_an_swf_job_cancelled_in_the_queue_written_with_run_time_0_and_no_processors_never_ran(tmp_path):
    """CEA-Curie / LLNL-Atlas write a job cancelled before it started as status 5, run time 0 and
    allocated processors -1 (SDSC writes run time -1). Read either way it never ran: no run time,
    its wait is the time to its cancellation (its cancel time = submit + wait), so it is not
    compared as a job that ran and, with queue_cancelled, stays queued until then. A cancelled job
    with run time 0 that was allocated processors, and a completed one with run time 0 and none,
    keep their run time 0 (they are not told apart as never started)."""
    from twinsweep.core.jobprep import cancel_times
    from twinsweep.core.loaders import load_workload

    log = tmp_path / "c.swf"
    log.write_text("; MaxNodes: 4\n; MaxProcs: 4\n"
                   "1 0 0 100 2 -1 -1 2 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
                   "2 10 40 0 -1 -1 -1 4 1000 -1 5 1 1 -1 -1 -1 -1 -1\n"   # CEA style: cancelled at 50
                   "3 10 40 -1 -1 -1 -1 4 1000 -1 5 1 1 -1 -1 -1 -1 -1\n"  # SDSC style: cancelled at 50
                   "4 20 5 0 2 -1 -1 2 200 -1 5 1 1 -1 -1 -1 -1 -1\n"      # allocated: it started
                   "5 30 5 0 -1 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n")    # completed, 0 s
    j = load_workload(log).jobs
    assert j["run_time"].isna().tolist() == [False, True, True, False, False]
    assert j["recorded_end_time"].isna().tolist() == [False, True, True, False, False]
    assert j["recorded_start_time"].tolist()[1:3] == [50, 50]
    ct = cancel_times(j)
    assert ct[1] == 50 and ct[2] == 50 and pd.isna(ct[[0, 3, 4]]).all()
