"""Jobs queued at their eligible time (option / system key ``honor_eligible``; Slurm's ``Eligible``:
the end of a hold, a dependency or a ``--begin`` time): values worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from twin_helpers import frame
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.system import System


def _frame(eligible, extra=()):
    """2 nodes. A: submitted at 0, eligible at ``eligible``, 2 nodes for 50 s. B: submitted at 10,
    2 nodes for 50 s. C: submitted at 20, 2 nodes for 100 s."""
    f = frame([dict(submit=0, run=50, limit=50, nodes=2), dict(submit=10, run=50, limit=50, nodes=2),
               dict(submit=20, run=100, limit=100, nodes=2), *extra])
    f["eligible_time"] = pd.array([eligible, None, None] + [e.get("eligible") for e in extra], dtype="Int64")
    return f


def _run(f, option=None, system_flag=False, policy="fcfs", queue_cancelled=False):
    system = System(name="tiny", title="tiny", nodes=2, honor_eligible=system_flag)
    win, t0, t1 = select_window(f, None, None, policy == "replay", True, queue_cancelled=queue_cancelled)
    opts = {} if option is None else {"honor_eligible": option}
    return Engine(win, system, policy, "easy", True, [100.0] * len(win), 10.0, t0, t1, options=opts,
                  queue_cancelled=queue_cancelled).run()


def test_a_job_enters_the_queue_at_its_eligible_time_and_is_ordered_by_it():
    """Off: A 0-50, B 50-100, C 100-200. On: A may not start before 100; B starts at 10 (ends 60),
    C at 60 (ends 160: it entered the queue at 20, before A at 100, so FCFS puts it first), A at 160.
    A's wait counts from its submit time: 160 s."""
    off = _run(_frame(100))
    assert off.jobs["start_time"].tolist() == [0, 50, 100]
    on = _run(_frame(100), option=True)
    assert on.jobs["start_time"].tolist() == [160, 10, 60]
    assert on.jobs["wait_time"].tolist() == [160, 0, 40]
    assert on.jobs["submit_time"].tolist() == [0, 10, 20]  # the recorded submit is kept
    assert on.counts["eligible_later"] == 1 and "eligible_later" not in off.counts
    # an eligible time at or before the submit time changes nothing
    assert _run(_frame(0), option=True).jobs["start_time"].tolist() == [0, 50, 100]


def test_the_system_key_turns_it_on_the_run_option_overrides_and_replay_ignores_it():
    assert _run(_frame(100), system_flag=True).jobs["start_time"].tolist() == [160, 10, 60]
    assert _run(_frame(100), option=False, system_flag=True).jobs["start_time"].tolist() == [0, 50, 100]
    f = _frame(100)
    f["recorded_start_time"] = pd.array([0, 50, 100], dtype="Int64")
    assert _run(f, option=True, policy="replay").jobs["start_time"].tolist() == [0, 50, 100]


def test_a_job_cancelled_before_it_became_eligible_is_never_queued():
    """D: submitted at 30, eligible at 500, cancelled in the queue at 400 (SWF-style: no run time,
    the cancel time as its recorded start): with queue_cancelled it would hold the queue until
    400; it was never eligible, so it is not_run with that reason and delays no one."""
    d = dict(submit=30, run=None, limit=1000, nodes=2, start=400, status="cancelled", eligible=500)
    res = _run(_frame(None, [d]), option=True, queue_cancelled=True)
    j = res.jobs
    assert j["status"].tolist()[3] == "not_run"
    assert "before it became eligible" in j["reason"].tolist()[3]
    assert j["start_time"].tolist()[:3] == [0, 50, 100]


def test_system_files_check_the_key():
    with pytest.raises(Exception, match="honor_eligible must be true or false"):
        System(name="t", title="t", nodes=2, honor_eligible="yes")
    assert System(name="t", title="t", nodes=2).checksum == System(name="t", title="t", nodes=2, honor_eligible=False).checksum
    assert System(name="t", title="t", nodes=2).checksum != System(name="t", title="t", nodes=2, honor_eligible=True).checksum


def test_a_sacct_dump_queues_a_held_job_at_its_eligible_time(tmp_path):
    """End to end through the sacct loader: job 10 was submitted at 08:00 with a --begin time of
    09:00 (Eligible), job 11 at 08:10; both ran 10 min on 1 of 4 nodes. Rescheduled under fcfs,
    job 10 starts at 09:00 with the option (its wait 1 h, from its submit) and at 08:00 without."""
    from twinsweep.core import RunConfig, simulate

    header = "JobID|User|Account|Submit|Eligible|Start|End|ElapsedRaw|TimelimitRaw|NNodes|State"
    rows = ["10|ann|p|2024-01-10T08:00:00|2024-01-10T09:00:00|2024-01-10T09:00:00|2024-01-10T09:10:00|600|30|1|COMPLETED",
            "11|bob|p|2024-01-10T08:10:00|2024-01-10T08:10:00|2024-01-10T08:10:00|2024-01-10T08:20:00|600|30|1|COMPLETED"]
    trace = tmp_path / "sacct.txt"
    trace.write_text("\n".join([header, *rows]) + "\n")
    system = tmp_path / "four.toml"
    system.write_text('[system]\nname = "four"\ntitle = "four nodes"\nnodes = 4\ntimezone = "UTC"\n')
    base = dict(data=str(trace), system=str(system), policy="fcfs", backfill="easy")
    on = simulate(RunConfig(**base, options=(("honor_eligible", True),)))
    off = simulate(RunConfig(**base))
    t0 = int(on.jobs["submit_time"].iloc[0])
    assert (on.jobs["start_time"] - t0).tolist() == [3600, 600]
    assert on.jobs["wait_time"].tolist() == [3600, 0]
    assert (off.jobs["start_time"] - t0).tolist() == [0, 600]
    assert on.stats["counts"]["eligible_later"] == 1


def test_the_option_on_a_trace_without_eligible_times_says_so(tmp_path):
    """An SWF log records no eligible time: the option changes nothing, and the run says why
    instead of ignoring it silently."""
    from twin_helpers import write_swf_rows
    from twinsweep.core import RunConfig, simulate

    log = write_swf_rows(tmp_path / "t.swf", [(1, 0, 0, 100, 2), (2, 10, 90, 100, 2)], max_nodes=2)
    on = simulate(RunConfig(data=str(log), options=(("honor_eligible", True),)))
    off = simulate(RunConfig(data=str(log)))
    assert on.jobs["start_time"].tolist() == off.jobs["start_time"].tolist()
    assert any("records no eligible time" in w for w in on.warnings)
    assert not any("eligible" in w for w in off.warnings)


def test_replay_says_it_ignores_the_option(tmp_path):
    from twin_helpers import write_swf_rows
    from twinsweep.core import RunConfig, simulate

    log = write_swf_rows(tmp_path / "t.swf", [(1, 0, 0, 100, 2), (2, 10, 90, 100, 2)], max_nodes=2)
    res = simulate(RunConfig(data=str(log), policy="replay", options=(("honor_eligible", True),)))
    assert any("ignores the option(s) honor_eligible" in w for w in res.warnings)
    assert not simulate(RunConfig(data=str(log), policy="replay")).warnings
