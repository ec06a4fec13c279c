"""Timeline and energy of rescheduled runs follow from the jobs table (DESIGN.md §4, §5).

On random scenarios (tests/reference_harness.py, with per-job utilisation and recorded power),
every timeline bin of ``simulate`` must hold what the jobs' simulated start and end times, node
counts and node power give, recomputed here second by second without core.power: busy nodes,
running and queued jobs, IT power (busy nodes at their job's node power, the others idle), and
facility power and loss through the two affine converter stages of the system. The jobs' energy
inside the window plus the idle nodes' energy equals the integral of IT power, and stats.json's
IT energy and utilisation equal the same sums.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import reference_scheduler as ref
from reference_harness import (CPUS, GPUS, POWER, SIM_END, SIM_START, examples, run_engine, run_reference, scenarios,
                               window_outside_trace)

#: examples per backfill variant in CI (policy, kill and sample period drawn)
EXAMPLES = 15


def node_power(cpu_util, gpu_util):
    """DESIGN.md §4: other + memory + NIC + storage + Σ CPUs and GPUs (idle + u·(max − idle))."""
    p = POWER
    return (p.other_w + p.mem_w + p.nic_w + p.storage_w
            + CPUS * (p.cpu_idle_w + cpu_util * (p.cpu_max_w - p.cpu_idle_w))
            + GPUS * (p.gpu_idle_w + gpu_util * (p.gpu_max_w - p.gpu_idle_w)))


def job_node_power(scn, i):
    """A job's DC power per node: its recorded power over its nodes, else the node model at its
    utilisation (the system's default where unknown)."""
    rec, nodes = scn.avg_power_w[i], scn.jobs[i].nodes
    if math.isfinite(rec) and rec >= 0 and nodes > 0:
        return rec / nodes
    cpu = scn.cpu_util[i]
    return node_power(POWER.default_cpu_util if math.isnan(cpu) else cpu, POWER.default_gpu_util)


def facility(it, nodes):
    """(input, loss) of the two converter stages: P_n = (P + G_n·c_n)/η_n, P_in = (P_n + G_r·c_r)/η_r."""
    nc, rc = POWER.node_converter, POWER.rectifier
    p_n = (it + math.ceil(nodes / nc.nodes_per_group) * nc.c_w) / nc.eta
    p_in = (p_n + math.ceil(nodes / rc.nodes_per_group) * rc.c_w) / rc.eta
    return p_in, p_in - it


@pytest.mark.parametrize("backfill", ref.BACKFILLS)
@settings(max_examples=examples(EXAMPLES), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scn=scenarios(power=True), policy=st.sampled_from(["fcfs", "sjf", "ljf"]), kill=st.booleans(),
       period=st.sampled_from([1, 1, 7, 60]))
def test_timeline_and_energy_follow_from_the_jobs(scn, backfill, policy, kill, period):
    want = run_reference(scn, policy, backfill, kill)
    assume(want.t_end > want.t0 and not window_outside_trace(scn))
    res = run_engine(scn, policy, backfill, kill, sample_period=period)
    t0, t1 = res.manifest["window"]["start"], res.manifest["window"]["end"]
    N, span = scn.nodes, t1 - t0
    idle = node_power(0.0, 0.0)
    busy, it, running, queued = (np.zeros(span) for _ in range(4))
    job_energy = 0.0  # DC energy of the jobs inside the window
    for r in res.jobs.itertuples(index=False):
        i = int(r.trace_index)
        if r.status in ("rejected", "not_run"):
            continue
        sub = max(int(r.submit_time), t0)
        start = getattr(r, SIM_START)
        if start is None or start is np.nan or str(start) == "<NA>":
            queued[sub - t0:] += 1
            assert math.isnan(r.energy_j) and math.isnan(r.avg_power_w)
            continue
        s = int(start)
        e = t1 if r.status == "running" else int(getattr(r, SIM_END))
        queued[max(sub, t0) - t0:max(s, t0) - t0] += 1
        a, b = max(s, t0) - t0, min(e, t1) - t0
        p = job_node_power(scn, i)
        if b > a:
            busy[a:b] += r.nodes
            running[a:b] += 1
            it[a:b] += r.nodes * (p - idle)
            job_energy += p * r.nodes * (b - a)
        assert r.avg_power_w == pytest.approx(p * r.nodes, rel=1e-12)
        assert r.energy_j == pytest.approx(p * r.nodes * (e - s), rel=1e-12, abs=1e-9)
    it += N * idle
    # bins [t0 + k·period, …), the last one partial: exact means of the per-second values
    edges = list(range(0, span, period)) + [span]
    tl = res.timeline
    assert list(tl.time) == [t0 + x for x in edges[:-1]]
    mean = lambda a: np.array([a[x:y].mean() for x, y in zip(edges, edges[1:])])  # noqa: E731
    np.testing.assert_allclose(tl.busy_nodes, mean(busy), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(tl.running_jobs, mean(running), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(tl.queued_jobs, mean(queued), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(tl.it_power_w, mean(it), rtol=1e-12, atol=1e-9)  # round-off near 0 W (a bin with nothing drawing)
    np.testing.assert_allclose(tl.utilization, mean(busy) / N, rtol=1e-12, atol=1e-12)
    fac, loss = facility(mean(it), N)
    np.testing.assert_allclose(tl.facility_power_w, fac, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(tl.loss_w, loss, rtol=1e-9, atol=1e-9)
    # energy: the jobs' part in the window + the idle nodes' = ∫ IT power = stats' IT energy
    idle_energy = idle * (N * span - busy.sum())
    integral = float((tl.it_power_w * np.diff(edges)).sum())
    assert job_energy + idle_energy == pytest.approx(integral, rel=1e-12)
    system = res.stats["system"]
    assert system["it_energy_j"] == pytest.approx(integral, rel=1e-12)
    assert system["utilization"] == pytest.approx(busy.sum() / (N * span), rel=1e-12, abs=1e-15)
    assert system["facility_energy_j"] == pytest.approx(float((fac * np.diff(edges)).sum()), rel=1e-12)


def test_a_window_after_the_trace_is_refused_not_compared():
    """The example hypothesis found outside CI: two never-run 0-node jobs at 0 and a window
    [1, 2) — after the trace's last job ended, so the engine refuses it (issue 11) and the
    properties above leave it out instead of failing on the refusal."""
    from reference_harness import Scenario
    from twinsweep.core.errors import ConfigError

    j = ref.Job(submit=0, run=None, limit=None, nodes=0, recorded_start=None, priority=None)
    scn = Scenario(jobs=(j, j), nodes=1, default_time_limit=None, start=1, duration=1)
    assert window_outside_trace(scn)
    with pytest.raises(ConfigError, match="nothing is submitted or running"):
        run_engine(scn, "fcfs", "firstfit", True)
    assert not window_outside_trace(Scenario(jobs=(j, j), nodes=1, default_time_limit=None, start=0, duration=1))


def test_a_window_before_the_trace_is_refused_not_compared():
    """The example hypothesis found: both jobs submitted at 1 s and a window [0, 1), which ends
    before the first submission; the engine refuses it, and the properties leave it out."""
    from reference_harness import Scenario
    from twinsweep.core.errors import ConfigError

    j = ref.Job(submit=1, run=1, limit=2, nodes=1, recorded_start=None, priority=None)
    scn = Scenario(jobs=(j, j), nodes=1, default_time_limit=None, start=0, duration=1)
    assert window_outside_trace(scn)
    with pytest.raises(ConfigError, match="ends before the trace's first submission"):
        run_engine(scn, "fcfs", "conservative", True)
    assert not window_outside_trace(Scenario(jobs=(j, j), nodes=1, default_time_limit=None, start=0, duration=2))
