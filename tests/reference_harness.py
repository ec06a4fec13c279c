"""Random scenarios for the engine-versus-reference tests, and the engine run through the public API.

:func:`scenarios` is a hypothesis strategy of small traces that reach every edge case of DESIGN.md
§3: several events in one second (submissions from a small set of seconds, ends landing on
them), zero run times, jobs larger than the machine and of 0 nodes (rejected), jobs that never
ran, time limits missing or <= 0 (imputed, with or without a system default), limits shorter
than run times (kills), trace order unlike submit order, tied priorities, and windows whose start
finds jobs running (prepopulated) or waiting, with or without an end.

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


@st.composite
def scenarios(draw, max_jobs: int = 14, max_nodes: int = 8, power: bool = False):
    """A :class:`Scenario` (see the module docstring)."""
    nodes = draw(st.integers(1, max_nodes))
    ints = lambda lo, hi: draw(st.integers(lo, hi))  # noqa: E731 - plain integer draws: cheap to generate
    jobs = []
    for _ in range(ints(1, max_jobs)):
        k = ints(0, 9)  # submit: a few popular seconds (several events at once), else any
        submit = (0, 0, 1, 2, 5, 10, 20)[k] if k < 7 else ints(0, 40)
        k = ints(0, 15)  # run time: never ran, zero, short, any, long
        run = None if k == 0 else 0 if k < 4 else ints(1, 6) if k < 7 else ints(1, 60) if k < 12 else ints(20, 60)
        k = ints(0, 7)  # limit: missing, unusable (0, -1), any (often < run: killed), one the job keeps
        limit = None if k < 2 else (0, -1)[k - 2] if k < 4 else ints(1, 80) if k < 6 else (run or 0) + ints(0, 30)
        k = ints(0, 11)  # nodes: 0 and too many (rejected), else fits
        size = 0 if k == 0 else nodes + ints(1, 3) if k == 1 else ints(1, nodes)
        rec = None if ints(0, 1) == 0 else submit + ints(0, 60)  # recorded start: unknown, or after a wait
        prio = None if ints(0, 1) == 0 else float(ints(0, 3))
        jobs.append(ref.Job(submit=submit, run=run, limit=limit, nodes=size, recorded_start=rec, priority=prio))
    default = draw(st.sampled_from([None, None, 1, 25, 60]))
    mode = draw(st.sampled_from(["open", "open", "start", "start+duration", "start+duration", "duration"]))
    start = draw(st.integers(0, 60)) if mode.startswith("start") else None
    duration = draw(st.integers(1, 120)) if mode in ("start+duration", "duration") else None
    cpu, avg = (), ()
    if power:
        cpu = tuple(draw(st.one_of(st.just(math.nan), st.floats(0, 1))) for _ in jobs)
        avg = tuple(draw(st.one_of(st.just(math.nan), st.just(math.nan), st.floats(0, 5000))) for _ in jobs)
    return Scenario(tuple(jobs), nodes, default, start, duration, cpu, avg)


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
