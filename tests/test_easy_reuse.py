"""EASY's reuse of its last pass (core/backfill/easy.py): deciding only the newcomers, where
nothing else changed, gives exactly the schedule of a full pass at every event."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin_helpers import bursty_traces, schedule_of, simulate_tiny

from twinsweep.core.backfill import Easy

traces = st.composite(bursty_traces)


def _both(jobs, **kw):
    out_reuse, res_reuse = simulate_tiny(jobs, backfill="easy", **kw)
    Easy.reuse_pass = False
    try:
        out_full, res_full = simulate_tiny(jobs, backfill="easy", **kw)
    finally:
        Easy.reuse_pass = True
    return (out_reuse, res_reuse), (out_full, res_full)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(cancels=True), st.sampled_from(["fcfs", "sjf", "ljf"]), st.booleans(), st.booleans(),
       st.sampled_from([(), ((3, 40, 3),), ((0, 20, 8), (25, 70, 2))]))
def test_reuse_equals_a_full_pass_every_time(jobs, policy, kill, queue_cancelled, availability):
    # cancellations while queued, kills and overruns (kill off: jobs past their limit), and
    # availability periods taking and returning nodes: every change that forbids the reuse
    (out_r, res_r), (out_f, res_f) = _both(jobs, nodes=8, policy=policy, kill=kill, queue_cancelled=queue_cancelled,
                                           availability=availability)
    assert out_r.equals(out_f)
    assert res_r.counts == res_f.counts
    assert res_r.steps.equals(res_f.steps)


def test_submissions_only_decide_the_newcomers(monkeypatch):
    # 8 nodes. J0 holds 6 on [0, 100); J1 (8 nodes) arrives at 1 and is the head, shadow 100.
    # J2..J5 (1 node, limit 10) arrive at 2..5 with no end in between: the passes at 2..5 decide
    # only the newcomer on the kept reservation. J2, J3 backfill at once (2 free nodes), J4 and
    # J5 wait for their ends at 12 and 13 (full passes: a job ended).
    import twinsweep.core.engine as engine_mod
    made = []
    make = engine_mod.make_scheduler

    def recording(*a, **k):
        made.append(make(*a, **k))
        return made[-1]

    monkeypatch.setattr(engine_mod, "make_scheduler", recording)
    jobs = [dict(submit=0, run=100, limit=100, nodes=6), dict(submit=1, run=10, limit=10, nodes=8)]
    jobs += [dict(submit=i, run=10, limit=10, nodes=1) for i in range(2, 6)]
    out, res = simulate_tiny(jobs, nodes=8)
    assert schedule_of(out) == {0: (0, 100), 1: (100, 110), 2: (2, 12), 3: (3, 13), 4: (12, 22), 5: (13, 23)}
    assert made[-1].backfill.reused == 4
    monkeypatch.setattr(Easy, "reuse_pass", False)
    out2, res2 = simulate_tiny(jobs, nodes=8)
    assert made[-1].backfill.reused == 0
    assert out.equals(out2) and res.counts == res2.counts


def test_a_shadow_time_that_has_passed_is_not_reused():
    # kill off, 8 nodes. J0 (6 nodes, limit 10) overruns to 50; J1 (8 nodes) is the head from 1,
    # shadow 10. At 20 no job has ended, but the shadow time has passed: a full pass takes J0 to
    # end at now + 1 = 21, so J2 (1 node, limit 1) ends by the shadow time and starts at 20. A
    # reused reservation (shadow 10, room < 0) would keep J2 waiting behind J1.
    jobs = [dict(submit=0, run=50, limit=10, nodes=6), dict(submit=1, run=10, limit=10, nodes=8),
            dict(submit=20, run=1, limit=1, nodes=1)]
    (out_r, _), (out_f, _) = _both(jobs, nodes=8, kill=False)
    assert schedule_of(out_r) == schedule_of(out_f) == {0: (0, 50), 1: (50, 60), 2: (20, 21)}
