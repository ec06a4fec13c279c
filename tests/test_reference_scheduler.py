"""The engine agrees job by job with an independent reference scheduler (tests/reference_scheduler.py,
written from DESIGN.md §3 alone, sharing no code with core/).

Every policy (fcfs, sjf, ljf, priority) x backfill (none, firstfit, easy, conservative) x kill
(on, off) is one test item with its own examples (``EXAMPLES`` each in CI; x25 under
``TWINSWEEP_HYPOTHESIS_PROFILE=nightly``) on random traces that reach every edge case of §3
(tests/reference_harness.py). Per job of the window: status, simulated start and end,
prepopulated flag, placement, effective time limit and its imputed flag; per run: the window end,
the counts of stats.json and, for conservative backfilling, how often a reservation moved later.
"""

import pytest
from hypothesis import HealthCheck, given, settings

import reference_scheduler as ref
from reference_harness import (engine_outcomes, examples, kept_has_priority, reference_outcomes, reference_scenarios,
                               run_engine, run_reference, window_outside_trace)
from twinsweep.core.errors import ConfigError

#: examples per (policy, backfill, kill) item in CI: 32 items -> 640 engine runs
EXAMPLES = 20


def _counts(res: ref.Result) -> dict:
    kept = [o for o in res.jobs if o.kept]
    by = lambda s: sum(o.status == s for o in kept)  # noqa: E731
    return {"jobs_in_window": len(kept), "jobs_started": sum(o.start is not None for o in kept),
            "completed": by("completed"), "timeout": by("timeout"), "rejected": by("rejected"),
            "not_run": by("not_run"), "still_queued": by("queued"), "still_running": by("running"),
            "prepopulated": sum(o.prepopulated for o in kept), "time_limit_imputed": sum(o.imputed for o in kept)}


@pytest.mark.parametrize("kill", [True, False], ids=["kill", "nokill"])
@pytest.mark.parametrize("backfill", ref.BACKFILLS)
@pytest.mark.parametrize("policy", ref.POLICIES)
@settings(max_examples=examples(EXAMPLES), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scn=reference_scenarios())
def test_engine_agrees_with_reference(scn, policy, backfill, kill):
    want = run_reference(scn, policy, backfill, kill)
    if (want.t_end <= want.t0 or window_outside_trace(scn)
            or (policy == "priority" and not kept_has_priority(scn, want))):
        # nothing happens in the window / a window after the trace (refused by design, core.tracespan;
        # the reference simulates it empty) / no priority to order by: one clear error, no run
        with pytest.raises(ConfigError, match="nothing to simulate|nothing is submitted or running|priority"):
            run_engine(scn, policy, backfill, kill)
        return
    res = run_engine(scn, policy, backfill, kill)
    got = engine_outcomes(res.jobs)
    assert got == reference_outcomes(want)
    assert res.manifest["window"]["start"] == want.t0 and res.manifest["window"]["end"] == want.t_end
    counts = res.stats["counts"]
    assert {k: counts[k] for k in _counts(want)} == _counts(want)
    if backfill == "conservative":
        assert counts["reservation_delays"] == want.reservation_delays


# -- hand-checked traces: the reference itself against schedules worked out by hand --------------

def J(submit, run, limit, nodes, **kw):
    return ref.Job(submit=submit, run=run, limit=limit, nodes=nodes, **kw)


def _sched(res):
    return {i: (o.start, o.end) for i, o in enumerate(res.jobs) if o.kept}


def test_reference_easy_issue_example():
    # 10 nodes. J0 (4 nodes) [0, 50), J1 (4 nodes) [0, 100), J2 (10 nodes) at 1, J3 (2 nodes,
    # limit 60) at 2: head J2, shadow 100 (2 + 4 + 4 free then), extra 0; J3 ends by its limit at
    # 62 <= 100: it starts at 2. J2 starts at 100 and ends at 110.
    jobs = [J(0, 50, 50, 4), J(0, 100, 100, 4), J(1, 10, 10, 10), J(2, 60, 60, 2)]
    res = ref.simulate(jobs, 10, backfill="easy")
    assert _sched(res) == {0: (0, 50), 1: (0, 100), 2: (100, 110), 3: (2, 62)}
    spell = [s for s in ref.easy_head_spells(res) if s[0] == 2]
    assert [(s[2], s[3], s[4]) for s in spell] == [(100, False, True)]


def test_reference_conservative_delay_counted():
    # 4 nodes, sjf. J0 (4 nodes, limit 100) runs [0, 10). At 1: J1 (4 nodes, limit 50) reserved
    # [100, 150). At 5: J2 (4 nodes, limit 20) is shorter: sjf puts it first, it takes [100, 120)
    # and J1 moves to 120: one delay. J0 ends at 10: J2 starts at 10 (ends 30), J1 reserved at
    # 10 + 20 = 30 (earlier than 120: no delay) and starts at 30.
    jobs = [J(0, 10, 100, 4), J(1, 50, 50, 4), J(5, 20, 20, 4)]
    res = ref.simulate(jobs, 4, policy="sjf", backfill="conservative")
    assert _sched(res) == {0: (0, 10), 1: (30, 80), 2: (10, 30)}
    assert res.first_reservation[1] == 100 and res.delays == {1: 1} and res.reservation_delays == 1


def test_reference_window_prepopulates_with_imputed_limit():
    # window from 50. J0 ran [0, 80) recorded, limit -1 (unusable): with no default its limit is
    # its run time, so it still holds its 3 nodes at 50: prepopulated at 0, ends at 80. J1 (limit
    # 30) recorded [10, 70): with kill on it would have been killed at 40 < 50: dropped; with kill
    # off it runs to 70. J2 (submitted 20, recorded start 60) waits at 50: queued at 50, 2 nodes
    # of 4: only 1 is free until J0 ends, so it starts at 80.
    jobs = [J(0, 80, -1, 3, recorded_start=0), J(10, 60, 30, 1, recorded_start=10), J(20, 5, 10, 2, recorded_start=60)]
    res = ref.simulate(jobs, 4, backfill="none", start=50)
    assert _sched(res) == {0: (0, 80), 2: (80, 85)} and res.jobs[0].prepopulated and res.jobs[0].imputed
    res = ref.simulate(jobs, 4, backfill="none", start=50, kill=False)
    assert _sched(res) == {0: (0, 80), 1: (10, 70), 2: (80, 85)}
