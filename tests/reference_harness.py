"""Random scenarios for the engine-versus-reference tests, and the engine run through the public API.

:func:`scenarios` is a hypothesis strategy of small traces that reach every edge case of DESIGN.md
§3: several events in one second (submissions from a small set of seconds, ends landing on
them), zero run times, jobs larger than the machine and of 0 nodes (rejected), jobs that never
ran, time limits missing or <= 0 (imputed, with or without a system default), limits shorter
than run times (kills), trace order unlike submit order, tied priorities, and windows whose start
finds jobs running (prepopulated) or waiting, with or without an end.

Most of those traces never block a queue head: EASY and conservative backfilling then schedule
exactly as ``none`` does, and an example cannot tell a backfill bug from a correct pass.
:func:`blocked_scenarios` is the second family: jobs running from the start with staggered time
limits (some ending early, some overrunning), wide jobs behind them that the policy puts first
(a short limit for sjf, the widest for ljf, the highest priority for priority), candidates
whose limits end around the head's shadow time (before, exactly at, just after) and whose sizes
are around the extra nodes, then a tail of ordinary random jobs. :func:`reference_scenarios`
draws from both (one in four from :func:`scenarios`); tests/telling_share.py measures how often
each backfill variant then differs from ``none``.

:func:`run_engine` runs the twin on a scenario through ``twinsweep.core.run.simulate`` and
:func:`engine_outcomes` reads its jobs table back into the reference's terms.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from hypothesis import strategies as st

import reference_scheduler as ref
from hypothesis_budget import examples  # noqa: F401 - re-exported for the property tests
from twinsweep.core.config import RunConfig
from twinsweep.core.run import simulate
from twinsweep.core.system import Converter, PowerModel, System
from twinsweep.core.tracespan import trace_span
from twinsweep.core.workload import WORKLOAD_COLUMNS, Workload, coerce_jobs_frame

#: jobs.parquet columns of the simulated start / end (DESIGN.md §5)
SIM_START, SIM_END = "start_time", "end_time"
#: Workload column of the trace's recorded start (DESIGN.md §2)
REC_START, REC_END = "recorded_start_time", "recorded_end_time"

#: A power model with every term of DESIGN.md §4 non-zero, and affine converters (c > 0, η < 1).
POWER = PowerModel(status="assumed", cpu_idle_w=40.0, cpu_max_w=200.0, gpu_idle_w=30.0, gpu_max_w=300.0,
                   mem_w=20.0, nic_w=10.0, storage_w=5.0, other_w=15.0, default_cpu_util=0.6,
                   default_gpu_util=0.25, node_converter=Converter(c_w=3.0, eta=0.95),
                   rectifier=Converter(c_w=50.0, eta=0.97, nodes_per_group=4))
CPUS, GPUS = 2, 1


@dataclasses.dataclass(frozen=True)
class Scenario:
    jobs: tuple  # reference_scheduler.Job, trace order
    nodes: int
    default_time_limit: int | None
    start: int | None
    duration: int | None
    cpu_util: tuple = ()  # per job, NaN = unknown (power tests)
    avg_power_w: tuple = ()  # per job, recorded power over all its nodes, NaN = unknown


def _random_job(draw, nodes: int, submit_lo: int = 0) -> ref.Job:
    """One job of the edge-case mix (module docstring), submitted at or after ``submit_lo``."""
    ints = lambda lo, hi: draw(st.integers(lo, hi))  # noqa: E731 - plain integer draws: cheap to generate
    k = ints(0, 9)  # submit: a few popular seconds (several events at once), else any
    submit = submit_lo + ((0, 0, 1, 2, 5, 10, 20)[k] if k < 7 else ints(0, 40))
    k = ints(0, 15)  # run time: never ran, zero, short, any, long
    run = None if k == 0 else 0 if k < 4 else ints(1, 6) if k < 7 else ints(1, 60) if k < 12 else ints(20, 60)
    k = ints(0, 7)  # limit: missing, unusable (0, -1), any (often < run: killed), one the job keeps
    limit = None if k < 2 else (0, -1)[k - 2] if k < 4 else ints(1, 80) if k < 6 else (run or 0) + ints(0, 30)
    k = ints(0, 11)  # nodes: 0 and too many (rejected), else fits
    size = 0 if k == 0 else nodes + ints(1, 3) if k == 1 else ints(1, nodes)
    rec = None if ints(0, 1) == 0 else submit + ints(0, 60)  # recorded start: unknown, or after a wait
    prio = None if ints(0, 1) == 0 else float(ints(0, 3))
    return ref.Job(submit=submit, run=run, limit=limit, nodes=size, recorded_start=rec, priority=prio)


def _power_columns(draw, jobs) -> tuple[tuple, tuple]:
    cpu = tuple(draw(st.one_of(st.just(math.nan), st.floats(0, 1))) for _ in jobs)
    avg = tuple(draw(st.one_of(st.just(math.nan), st.just(math.nan), st.floats(0, 5000))) for _ in jobs)
    return cpu, avg


@st.composite
def scenarios(draw, max_jobs: int = 14, max_nodes: int = 8, power: bool = False):
    """A :class:`Scenario` (see the module docstring)."""
    nodes = draw(st.integers(1, max_nodes))
    jobs = [_random_job(draw, nodes) for _ in range(draw(st.integers(1, max_jobs)))]
    default = draw(st.sampled_from([None, None, 1, 25, 60]))
    mode = draw(st.sampled_from(["open", "open", "start", "start+duration", "start+duration", "duration"]))
    start = draw(st.integers(0, 60)) if mode.startswith("start") else None
    duration = draw(st.integers(1, 120)) if mode in ("start+duration", "duration") else None
    cpu, avg = _power_columns(draw, jobs) if power else ((), ())
    return Scenario(tuple(jobs), nodes, default, start, duration, cpu, avg)


@st.composite
def blocked_scenarios(draw, max_nodes: int = 10, power: bool = False):
    """A :class:`Scenario` whose queue head is blocked behind running jobs (module docstring).

    Layout (s), one time in three the *pull-forward* one: a long job (limit 45-90 s) that ends
    early at 7-14 s and a short one (limit 15-30 s) running from 0; a head submitted at 1 that
    needs nodes of both and comes first in every policy's order; and a job submitted at 2-6 that
    does not fit now and is reserved between the short job's end and the head's shadow: when the
    long job ends early, the head's reservation moves forward onto that slot and pushes the job's
    reservation back (a moved reservation, under every policy and kill on or off). Otherwise:
    1-4 jobs submitted at 0 that all fit (so they run from 0 under every policy), with
    time limits 4-90 s (often one short and the others long); each ends at its limit, earlier
    (often at 7-14 s, after the candidates' submissions: an early end pulls reservations forward
    and can push a later job's back, a moved reservation, also under fcfs), or later (killed at
    its limit, or overdue with kill off). 1-2 wide jobs submitted at 1 that do not fit beside
    them; each is, with probability 3/4, the first in every policy's order (limit 1-12 s, nodes
    at least the others', priority 9). 1-6 candidates submitted at 2-6: most fit now, with limits
    ending within a few seconds of the first head's shadow time (as computed at 1 from the running
    jobs' limits; sometimes any limit) and sizes up to the free nodes, some of them exactly the
    extra nodes; or, when a running job ends before the shadow, too wide for now and short enough
    to fit between that end and the shadow (a reservation an early end of the shadow's job may
    push back). Then 0-4 jobs of the :func:`scenarios` mix. The window is usually open; else it
    starts at 1 or 2 (the running jobs, recorded at 0, are prepopulated) or ends after 40-150 s.
    """
    ints = lambda lo, hi: draw(st.integers(lo, hi))  # noqa: E731
    n = ints(4, max_nodes)
    running, busy, pulled = [], 0, []
    if ints(0, 2) == 0:  # the pull-forward layout (docstring)
        a = ints(1, n - 2)
        b = ints(1, n - a)
        f = n - a - b
        long_limit, short_limit = ints(45, 90), ints(15, 30)
        running = [ref.Job(submit=0, run=ints(7, 14), limit=long_limit, nodes=a, recorded_start=0, priority=1.0),
                   ref.Job(submit=0, run=short_limit, limit=short_limit, nodes=b, recorded_start=0, priority=1.0)]
        busy = a + b
        head_limit = ints(5, 12)
        pulled = [ref.Job(submit=1, run=head_limit, limit=head_limit, nodes=n if ints(0, 1) else ints(f + a + 1, n),
                          recorded_start=None, priority=9.0)]
        c_limit = ints(max(13, long_limit - short_limit - 8), long_limit - short_limit)
        pulled.append(ref.Job(submit=ints(2, 6), run=c_limit, limit=c_limit, nodes=ints(f + 1, f + b),
                              recorded_start=None, priority=5.0))
    for _ in range(0 if running else ints(1, 4)):
        if busy >= n - 1:
            break
        size = ints(1, n - 1 - busy)
        # staggered limits: often one short (4-30 s) and the others long (40-90 s), a wide gap between
        limit = ints(4, 30) if (running and ints(0, 1) == 0) else ints(40, 90) if running else ints(4, 90)
        k = ints(0, 5)  # ends at its limit, early (often just after the candidates arrive), or overruns it
        run = limit if k < 2 else min(ints(7, 14), limit - 1) if k < 4 else ints(1, limit - 1) if k < 5 \
            else limit + ints(1, 20)
        running.append(ref.Job(submit=0, run=run, limit=limit, nodes=size, recorded_start=0, priority=float(ints(0, 3))))
        busy += size
    free = n - busy
    ends = sorted((j.limit, j.nodes) for j in running)  # expected ends, all started at 0
    heads = pulled[:1]
    for _ in range(ints(0, 1) if heads else ints(1, 2)):
        favoured = ints(0, 3) > 0
        size = ints(max(free + 1, n - 1), n) if favoured else ints(free + 1, n)
        limit = ints(1, 12) if favoured else ints(1, 90)
        heads.append(ref.Job(submit=1, run=ints(0, limit), limit=limit, nodes=size, recorded_start=None,
                             priority=9.0 if favoured else float(ints(0, 3))))
    avail, shadow = free, ends[-1][0]
    for end, size in ends:  # the first head's shadow time as seen at 1 (DESIGN §3.7)
        avail += size
        if avail >= heads[0].nodes:
            shadow = end
            break
    extra = max(free + sum(m for e, m in ends if e <= shadow) - heads[0].nodes, 0)
    first_end, first_nodes = ends[0]
    gap = first_end < shadow  # a running job ends before the shadow: room for a job in between
    cands = []
    for _ in range(ints(1, 6)):
        submit = ints(2, 6)
        if gap and ints(0, 1) == 0:  # does not fit now, fits from the first end until the shadow
            size = ints(free + 1, free + first_nodes)
            limit = max(1, shadow - first_end + ints(-5, 0))
        else:
            k = ints(0, 7)  # limit: ends before, at or just after the shadow; sometimes anything
            limit = (max(1, shadow - submit + ints(-6, 4)) if k < 5 else max(1, shadow - submit) if k < 6
                     else ints(1, 120))
            size = extra if (extra and ints(0, 2) == 0) else ints(1, max(free, 1))
        k = ints(0, 5)  # run: its limit, shorter, or longer (killed)
        run = limit if k < 3 else ints(0, limit) if k < 5 else limit + ints(1, 10)
        cands.append(ref.Job(submit=submit, run=run, limit=limit, nodes=size, recorded_start=None,
                             priority=None if ints(0, 2) == 0 else float(ints(0, 3))))
    tail = [_random_job(draw, n, submit_lo=3) for _ in range(ints(0, 4))]
    jobs = running + heads + pulled[1:] + cands + tail
    default = draw(st.sampled_from([None, 25, 60]))
    mode = draw(st.sampled_from(["open"] * 6 + ["start", "duration"]))
    start = ints(1, 2) if mode == "start" else None
    duration = ints(40, 150) if mode == "duration" else None
    cpu, avg = _power_columns(draw, jobs) if power else ((), ())
    return Scenario(tuple(jobs), n, default, start, duration, cpu, avg)


def reference_scenarios(power: bool = False):
    """The reference-agreement tests' strategy: :func:`blocked_scenarios` three times in four,
    :func:`scenarios` (every edge case of §3) once."""
    return st.one_of(scenarios(power=power), blocked_scenarios(power=power), blocked_scenarios(power=power),
                     blocked_scenarios(power=power))


def workload(scn: Scenario) -> Workload:
    """The scenario as a Workload (one node per processor, trace order = list order), its columns
    built with the Workload dtypes (``coerce_jobs_frame`` costs more than a run of the engine)."""
    jobs = scn.jobs
    n = len(jobs)
    nan = [math.nan] * n
    ints = lambda xs: pd.array(xs, dtype="Int64")  # noqa: E731
    df = pd.DataFrame({
        "job_id": [str(i) for i in range(n)], "trace_index": np.arange(n, dtype="int64"),
        "user": [f"u{i % 3}" for i in range(n)], "account": [f"a{i % 2}" for i in range(n)],
        "submit_time": np.array([j.submit for j in jobs], dtype="int64"),
        REC_START: ints([j.recorded_start for j in jobs]), REC_END: ints([None] * n),
        "run_time": ints([j.run for j in jobs]), "time_limit": ints([j.limit for j in jobs]),
        "procs": ints([j.nodes for j in jobs]), "nodes": ints([j.nodes for j in jobs]),
        "cpu_util": np.array(scn.cpu_util or nan, dtype="float64"), "gpu_util": np.array(nan, dtype="float64"),
        "avg_power_w": np.array(scn.avg_power_w or nan, dtype="float64"), "energy_j": np.array(nan, dtype="float64"),
        "priority": np.array([math.nan if j.priority is None else j.priority for j in jobs], dtype="float64"),
        "partition": [None] * n, "status": ["completed" if j.run is not None else "cancelled" for j in jobs],
        "node_ids": [None] * n,
    })
    if not all(c in df.columns and str(df[c].dtype) == t for c, t in WORKLOAD_COLUMNS.items()):
        df = coerce_jobs_frame(df)  # (a column this builder does not know yet)
    return Workload(jobs=df, epoch=0, checksum="sha256:scenario", source="scenario", format="test")


def system(scn: Scenario) -> System:
    return System(name="scenario", title="scenario", nodes=scn.nodes, cpus_per_node=CPUS, gpus_per_node=GPUS,
                  default_time_limit=scn.default_time_limit, power=POWER)


def window_outside_trace(scn: Scenario) -> bool:
    """True when the scenario's window holds nothing of its trace — it starts after the last job
    has ended, or ends before the first submission: the engine refuses such a window with one
    ConfigError (core.tracespan.TraceSpan.outside, the engine's own rule), so there is no run to
    compare (the reference model, written from DESIGN §3, simulates an empty window instead)."""
    return trace_span(workload(scn)).outside(scn.start, scn.duration) is not None


def run_engine(scn: Scenario, policy: str, backfill: str, kill: bool, sample_period: int = 60):
    """``simulate`` on the scenario; returns the RunResult (raises what simulate raises)."""
    cfg = RunConfig(data="scenario", policy=policy, backfill=backfill, kill=kill, start=scn.start,
                    duration=scn.duration, sample_period=sample_period)
    return simulate(cfg, workload=workload(scn), system=system(scn))


def run_reference(scn: Scenario, policy: str, backfill: str, kill: bool) -> ref.Result:
    return ref.simulate(list(scn.jobs), scn.nodes, policy=policy, backfill=backfill, kill=kill,
                        default_time_limit=scn.default_time_limit, start=scn.start, duration=scn.duration)


def _int(v):
    return None if pd.isna(v) else int(v)


def engine_outcomes(jobs: pd.DataFrame) -> dict:
    """{trace index: (status, start, end, prepopulated, node_ids, time_limit, imputed)} of a
    simulate() jobs table."""
    out = {}
    for r in jobs.itertuples(index=False):
        ids = getattr(r, "node_ids")
        out[int(r.trace_index)] = (
            r.status, _int(getattr(r, SIM_START)), _int(getattr(r, SIM_END)), bool(r.prepopulated),
            None if ids is None else tuple(int(x) for x in np.asarray(ids)), int(r.time_limit),
            bool(r.time_limit_imputed))
    return out


def reference_outcomes(res: ref.Result) -> dict:
    """The same mapping from a reference result (kept jobs only)."""
    return {i: (o.status, o.start, o.end, o.prepopulated, o.node_ids, o.limit, o.imputed)
            for i, o in enumerate(res.jobs) if o.kept}


def engine_starts(jobs: pd.DataFrame) -> dict:
    """{trace index: simulated start or None}."""
    return {int(i): _int(s) for i, s in zip(jobs["trace_index"], jobs[SIM_START])}


def kept_has_priority(scn: Scenario, res: ref.Result) -> bool:
    return any(o.kept and scn.jobs[i].priority is not None for i, o in enumerate(res.jobs))
