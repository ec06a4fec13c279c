"""The compiled conservative-backfilling pass against a brute-force model on integer seconds.

The model keeps free nodes per second on a horizon long enough for every reservation and gives
each queued job, in queue order, the first second from which it fits for its whole duration
(DESIGN.md §3.7): an independent method (no breakpoints, no step splitting).
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twinsweep.core._profile import BLOCK, Profile, conservative_pass


def brute_force(now, running, free_now, queue, prev):
    """running: [(expected_end, nodes)]; queue: [(nodes, duration)]; prev: [int]. Returns
    (reservation starts, delay count)."""
    horizon = now + 2 + max([e for e, _ in running] + [now]) + sum(d for _, d in queue)
    free = np.full(horizon - now, free_now + sum(n for _, n in running), dtype=np.int64)
    for end, n in running:
        free[: max(end, now + 1) - now] -= n  # busy on [now, max(end, now + 1))
    starts, delays = [], 0
    for (n, d), p in zip(queue, prev):
        t = 0
        while (free[t:t + d] < n).any():
            t += 1
        free[t:t + d] -= n
        starts.append(now + t)
        delays += int(now + t > now and 0 <= p < now + t)
    return starts, delays


@st.composite
def passes(draw, total_max=12):
    now = draw(st.integers(0, 50))
    total = draw(st.integers(1, total_max))
    running, busy = [], 0
    for _ in range(draw(st.integers(0, 12))):
        n = draw(st.integers(1, total))
        if busy + n > total:
            break
        busy += n
        # an expected end at or before now: a job past its limit (kill disabled)
        running.append((draw(st.integers(now - 5, now + 60)), n))
    running.sort()
    # shapes from a small palette: runs of identical jobs (reserved together) are common
    palette = [(draw(st.integers(1, total)), draw(st.integers(1, 40))) for _ in range(draw(st.integers(1, 4)))]
    queue = [draw(st.sampled_from(palette)) if draw(st.booleans()) else
             (draw(st.integers(1, total)), draw(st.integers(1, 40))) for _ in range(draw(st.integers(0, 20)))]
    prev = [draw(st.integers(-1, now + 120)) for _ in queue]
    return now, running, total - busy, queue, prev


def _kernel(now, running, free_now, queue, prev, block=BLOCK):
    a = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    out = np.empty(len(queue), dtype=np.int64)
    delays = conservative_pass(now, a([e for e, _ in running]), a([n for _, n in running]), free_now,
                               a([n for n, _ in queue]), a([d for _, d in queue]), a(prev), out, block)
    return out.tolist(), int(delays)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(passes(), st.sampled_from([4, 6, BLOCK]))
def test_compiled_pass_equals_brute_force(p, block):
    # small blocks make the searches skip blocks, reserve whole blocks lazily and split blocks
    assert _kernel(*p, block=block) == brute_force(*p)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(passes(), st.sampled_from([4, 6, BLOCK]), st.data())
def test_reserving_in_several_calls_on_a_kept_profile_equals_one_pass(p, block, data):
    # what reuse does: the jobs behind the queue are reserved on the kept profile (which also
    # grows its arrays and its shape table when they could fill)
    now, running, free_now, queue, prev = p
    cut = data.draw(st.integers(0, len(queue)))
    # the rest in calls of 1-3 jobs: a kept profile's blocks may be nearly full, so each call
    # may split as many blocks as it has jobs
    cuts = [0, cut]
    while cuts[-1] < len(queue):
        cuts.append(min(len(queue), cuts[-1] + data.draw(st.integers(1, 3))))
    a = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    prof = Profile(now, a([e for e, _ in running]), a([n for _, n in running]), free_now, cut, block)
    starts = []
    for part in (slice(x, y) for x, y in zip(cuts, cuts[1:])):
        qn, qd = a([n for n, _ in queue[part]]), a([d for _, d in queue[part]])
        out = np.empty(len(qn), dtype=np.int64)
        prof.reserve(now, qn, qd, a(prev[part]), out)
        starts += out.tolist()
    assert starts == brute_force(*p)[0]


def test_hand_computed_pass():
    # 10 nodes; free now 2; running: 3 nodes to t=10, 5 nodes to t=20. Profile: [0,10) 2 free,
    # [10,20) 5, then 10. Queue, in order:
    #   A 4 nodes x 5 s:   2 < 4 before 10; [10,15) has 5 -> 10.    Then [10,15) 1 free.
    #   B 2 nodes x 30 s:  from 0 it meets [10,15) with 1 -> retry at 15: 5, then 10 -> 15.
    #                      Then [15,20) 3, [20,45) 8.
    #   C 1 node x 100 s:  2, 1, 3, 8, 10 free on [0,100) -> starts now (0). Then [10,15) 0.
    #   D 2 nodes x 1 s:   [0,10) 1, [10,15) 0, [15,20) 2 -> 15.
    # prev: A held 8 (moved later: one delay), B held 20 (moved earlier), C and D none.
    starts, delays = _kernel(0, [(10, 3), (20, 5)], 2, [(4, 5), (2, 30), (1, 100), (2, 1)], [8, 20, -1, -1])
    assert starts == [10, 15, 0, 15]
    assert delays == 1


def test_job_past_its_expected_end_is_taken_to_end_one_second_later():
    # kill disabled: a running job whose expected end (5) has passed holds its nodes until now + 1
    starts, _ = _kernel(9, [(5, 4)], 0, [(4, 3)], [-1])
    assert starts == [10]


# -- the engine: reusing the previous pass's profile gives the schedule of a rebuild ------------

from twin_helpers import bursty_traces as _bursty_traces, schedule_of, simulate_tiny  # noqa: E402

from twinsweep.core.backfill import Conservative  # noqa: E402


bursty_traces = st.composite(_bursty_traces)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bursty_traces(), st.sampled_from(["fcfs", "sjf", "ljf"]), st.booleans())
def test_profile_reuse_equals_rebuild_every_pass(jobs, policy, kill):
    out_reuse, res_reuse = simulate_tiny(jobs, nodes=8, policy=policy, backfill="conservative", kill=kill)
    Conservative.reuse_profile = False
    try:
        out_rebuild, res_rebuild = simulate_tiny(jobs, nodes=8, policy=policy, backfill="conservative", kill=kill)
    finally:
        Conservative.reuse_profile = True
    assert out_reuse.equals(out_rebuild)
    assert res_reuse.counts == res_rebuild.counts


def test_submissions_only_reuse_the_profile(monkeypatch):
    # 8 nodes. J0 holds all of them on [0, 100). J1..J5 (2 nodes, limit 10) arrive at 1..5: no
    # job ends in between, so passes 1..5 reserve only the newcomer on the kept profile:
    # J1..J4 at 100 (4 x 2 = 8 nodes), J5 at 110. The same schedule as a rebuild at every pass.
    import twinsweep.core.engine as engine_mod
    made = []

    def recording(*a, **k):
        made.append(engine_mod_make(*a, **k))
        return made[-1]

    engine_mod_make = engine_mod.make_scheduler
    monkeypatch.setattr(engine_mod, "make_scheduler", recording)
    jobs = [dict(submit=0, run=100, limit=100, nodes=8)] + [dict(submit=i, run=10, limit=10, nodes=2) for i in range(1, 6)]
    out, res = simulate_tiny(jobs, nodes=8, backfill="conservative")
    assert schedule_of(out) == {0: (0, 100), 1: (100, 110), 2: (100, 110), 3: (100, 110), 4: (100, 110), 5: (110, 120)}
    assert made[-1].backfill.state.reused == 5
    monkeypatch.setattr(Conservative, "reuse_profile", False)
    out2, res2 = simulate_tiny(jobs, nodes=8, backfill="conservative")
    assert made[-1].backfill.state.reused == 0
    assert out.equals(out2) and res.counts == res2.counts


def test_run_of_identical_jobs_reserved_together():
    # 10 nodes all busy until 10. Six jobs of 2 nodes x 5 s: five fit at 10 (the run is reserved
    # in one step), the sixth at 15; a 3-node job after them: [10,15) is full, [15,20) has 8 -> 15.
    starts, _ = _kernel(0, [(10, 10)], 0, [(2, 5)] * 6 + [(3, 5)], [-1] * 7)
    assert starts == [10, 10, 10, 10, 10, 15, 15]
