"""Properties of the engine on random small traces (hypothesis)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings, target
from hypothesis import strategies as st

import reference_scheduler as ref
from reference_harness import (engine_starts, window_outside_trace, examples, kept_has_priority, reference_scenarios, run_engine,
                               run_reference)
from twin_helpers import schedule_of, simulate_tiny

N = 8


@st.composite
def traces(draw, max_jobs=14):
    n = draw(st.integers(1, max_jobs))
    jobs = []
    for _ in range(n):
        run = draw(st.integers(0, 60))
        limit = draw(st.one_of(st.none(), st.integers(1, 80)))
        jobs.append(dict(submit=draw(st.integers(0, 100)), run=run, limit=limit,
                         nodes=draw(st.integers(1, N))))
    return jobs


def _max_busy(out):
    ev = []
    for _, r in out.iterrows():
        if r.start_time is None or r.start_time is np.nan or str(r.start_time) == "<NA>":
            continue
        s, e = int(r.start_time), int(r.end_time)
        if e > s:
            ev.append((s, r.nodes))
            ev.append((e, -r.nodes))
    ev.sort(key=lambda x: (x[0], x[1]))  # releases before starts at the same second
    busy = peak = 0
    for _, d in ev:
        busy += d
        peak = max(peak, busy)
    return peak


SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(traces(), st.sampled_from(["fcfs", "sjf", "ljf"]), st.sampled_from(["none", "firstfit", "easy", "conservative"]))
def test_capacity_submit_and_runtime(jobs, policy, backfill):
    out, res = simulate_tiny(jobs, nodes=N, policy=policy, backfill=backfill)
    assert _max_busy(out) <= N
    assert (res.steps.busy_nodes <= N).all()
    for j, r in zip(jobs, out.itertuples()):
        assert r.status == "completed" or r.status == "timeout"
        assert r.start_time >= r.submit_time  # no start before submit
        limit = j["limit"] if j["limit"] else j["run"]  # no limit: its own run time
        assert r.end_time - r.start_time == min(j["run"], limit)


@SETTINGS
@given(traces(), st.sampled_from(["fcfs", "sjf"]), st.sampled_from(["firstfit", "easy", "conservative"]))
def test_replay_reproduces_recorded_starts(jobs, policy, backfill):
    # a schedule produced by the twin is a consistent recorded trace: replay must reproduce it
    out, _ = simulate_tiny(jobs, nodes=N, policy=policy, backfill=backfill, kill=False)
    recorded = [dict(j, start=int(r.start_time), node_ids=list(r.node_ids)) for j, r in zip(jobs, out.itertuples())]
    rep, res = simulate_tiny(recorded, nodes=N, policy="replay", backfill="none")
    assert schedule_of(rep) == schedule_of(out)
    assert res.counts["replay_delayed"] == 0
    # recorded placement is reproduced too, except when zero-length jobs share a second with others
    # (the passes inside one second cannot be recovered from start times alone)
    if all(j["run"] > 0 for j in jobs):
        assert res.counts["placement_fallbacks"] == 0
        assert [list(x) for x in rep.node_ids] == [list(x) for x in out.node_ids]


# -- the backfill guarantees (DESIGN.md §3.7), with every job killed at its limit ---------------------
# The reference scheduler (tests/reference_scheduler.py) records, pass by pass, which job is EASY's
# head and its shadow time, and every job's conservative reservations; the engine's starts must keep
# the promises those records make.

GUARANTEE_EXAMPLES = 30  # per policy, in CI


def _reference_and_engine(scn, policy, backfill):
    """(reference result, engine RunResult, engine starts by trace index), kill on."""
    want = run_reference(scn, policy, backfill, kill=True)
    assume(want.t_end > want.t0 and not window_outside_trace(scn)
           and (policy != "priority" or kept_has_priority(scn, want)))
    res = run_engine(scn, policy, backfill, kill=True)
    return want, res, engine_starts(res.jobs)


@pytest.mark.parametrize("policy", ref.POLICIES)
@settings(max_examples=examples(GUARANTEE_EXAMPLES), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scn=reference_scenarios())
def test_easy_head_starts_no_later_than_its_shadow_time(scn, policy):
    # EASY's promise: the job at the head of the queue when the pass finds it blocked starts no
    # later than the shadow time computed then, whatever is backfilled behind it, as long as it
    # stays head and no job ahead of it in queue order starts (possible only for a newcomer that
    # the policy puts in front: never under fcfs). A spell still open at the window end promises
    # nothing before its shadow, so that shadow must lie at or after the end.
    want, _, starts = _reference_and_engine(scn, policy, "easy")
    spells = ref.easy_head_spells(want)
    checked = 0
    for job, _, shadow, jumped, _ in spells:
        if policy == "fcfs":
            assert not jumped, "under fcfs no job can move ahead of the head"
        if jumped:
            continue
        checked += 1
        s = starts[job]
        if s is None:
            assert shadow >= want.t_end, f"head {job} promised {shadow}, still queued at {want.t_end}"
        else:
            assert s <= shadow, f"head {job} promised {shadow}, started at {s}"
    event(f"EASY head spells checked: {'some' if checked else 'none'}")
    target(float(checked), label="EASY head spells checked")


@pytest.mark.parametrize("policy", ref.POLICIES)
@settings(max_examples=examples(GUARANTEE_EXAMPLES), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scn=reference_scenarios())
def test_conservative_job_starts_by_its_first_reservation_unless_it_moved(scn, policy):
    # Conservative backfilling's promise: every queued job starts no later than the reservation
    # it got at its first pass, unless a later pass moved its reservation later (an earlier job in
    # queue order took its slot: a newcomer put in front, or a job pulled forward by an early
    # end). Each job that starts late must have been moved at least once, so those jobs number
    # at most the engine's reservation_delays, which must equal the reference's count of moves.
    want, res, starts = _reference_and_engine(scn, policy, "conservative")
    late = 0
    for job, first in want.first_reservation.items():
        s = starts[job]
        if (s is None and first < want.t_end) or (s is not None and s > first):
            late += 1
            assert want.delays.get(job, 0) >= 1, f"job {job} reserved at {first}, started {s}, never moved"
    counts = res.stats["counts"]
    assert late <= counts["reservation_delays"] == want.reservation_delays
    event(f"conservative jobs late: {'some' if late else 'none'}")
    target(float(want.reservation_delays), label="conservative reservation moves")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3000), st.lists(st.tuples(st.booleans(), st.integers(1, 50)), max_size=40))
def test_node_pool_lowest_free_both_representations(n, ops):
    # the bit-set pool (n <= 1024) and the numpy pool (n > 1024) must both hand out the lowest free
    # node ids; checked against a plain sorted-set model
    from twinsweep.core.resources import NodePool

    pool, free, held = NodePool(n), set(range(n)), []
    for alloc, k in ops:
        if alloc and k <= pool.free:
            got = [int(i) for i in pool.allocate(k)]
            assert got == sorted(free)[:k]
            free -= set(got)
            held.append(got)
        elif held:
            ids = held.pop(0)
            pool.release(ids if n <= NodePool.BITSET_MAX_NODES else __import__("numpy").asarray(ids))
            free |= set(ids)
        assert pool.free == len(free)


# -- EASY's one pass, re-derived from DESIGN.md §3.7 on a blocked head (independent of the reference) --

@st.composite
def blocked_heads(draw):
    """A machine of ``N`` nodes, 1-4 jobs running from 0 (each asks for its time limit of at least 3 s
    and may end earlier), a head submitted at 1 that does not fit beside them, and 1-6 candidates
    submitted at 2, all with usable limits: at 2 no running job has ended, so the pass at 2 sees
    exactly the running jobs, the head and the candidates (fcfs: the head stays first)."""
    n = draw(st.integers(3, 16))
    running = []
    busy = 0
    for _ in range(draw(st.integers(1, 4))):
        if busy >= n - 1:
            break
        size = draw(st.integers(1, n - 1 - busy))
        limit = draw(st.integers(3, 120))
        run = draw(st.one_of(st.just(limit), st.integers(3, limit)))  # may end before its expected end
        running.append(dict(submit=0, run=run, limit=limit, nodes=size))
        busy += size
    head = dict(submit=1, run=draw(st.integers(1, 50)), limit=None, nodes=draw(st.integers(n - busy + 1, n)))
    head["limit"] = head["run"]
    cands = [dict(submit=2, run=None, limit=draw(st.integers(1, 150)), nodes=draw(st.integers(1, n)))
             for _ in range(draw(st.integers(1, 6)))]
    for c in cands:
        c["run"] = draw(st.integers(1, c["limit"]))
    return n, running, head, cands


def _easy_pass_at_2(n, running, head, cands):
    """Trace indices of the candidates EASY starts at 2 (DESIGN §3.7, written out for this one pass):
    shadow = the first expected end (start + time limit) in ascending order at which the free nodes
    reach the head's size; extra = nodes free at shadow - the head's; a candidate that fits now starts
    if it ends by shadow by its limit, else if it needs no more than extra (which then shrinks)."""
    free = n - sum(r["nodes"] for r in running)
    avail, shadow = free, None
    for end, size in sorted((r["limit"], r["nodes"]) for r in running):  # all started at 0
        avail += size
        if avail >= head["nodes"]:
            shadow = end
            break
    extra = free + sum(r["nodes"] for r in running if r["limit"] <= shadow) - head["nodes"]
    first = len(running) + 1
    started = set()
    for k, c in enumerate(cands):
        if c["nodes"] > free:
            continue
        if 2 + c["limit"] <= shadow:
            pass
        elif c["nodes"] <= extra:
            extra -= c["nodes"]
        else:
            continue
        started.add(first + k)
        free -= c["nodes"]
    return started


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocked_heads())
def test_easy_pass_on_a_blocked_head_backfills_exactly_what_the_reservation_allows(case):
    # Catches a shadow time taken at the first expected end, extra nodes that are not used up, and
    # a scheduler that sees running jobs' real ends (run < limit here) instead of start + limit.
    n, running, head, cands = case
    jobs = running + [head] + cands
    out, _ = simulate_tiny(jobs, nodes=n, policy="fcfs", backfill="easy")
    starts = schedule_of(out)
    assert all(starts[i][0] == 0 for i in range(len(running)))
    assert starts[len(running)][0] > 2, "the head does not fit beside the running jobs"
    got = {i for i in range(len(running) + 1, len(jobs)) if starts[i][0] == 2}
    assert got == _easy_pass_at_2(n, running, head, cands)
    event(f"candidates backfilled at 2: {min(len(got), 3)}")
