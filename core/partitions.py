"""Partitioned machines: disjoint node pools, each scheduled on its own (``[[system.partitions]]``).

A system file may cut its machine into **partitions** in Slurm's sense — sets of nodes a job is
submitted to — when they are disjoint pools (node types: CEA Curie's thin, fat and hybrid nodes
behind its ``standard``, ``large`` and ``hybrid`` partitions)::

    [[system.partitions]]
    name = "fat"              # the pool's name (outputs, errors)
    nodes = 360               # its nodes; the partitions' nodes add up to [system] nodes
    serves = ["4", "large"]   # the trace's partition values it runs: codes (SWF field 16, Slurm
                              # Partition) or the names an SWF header gives them (; Partition: 4 large)
    default = false           # true on one partition: it also runs every job no partition serves
    # availability = [{start = "10d", end = "11d", nodes_down = 8}]   # the pool's own calendar
    # cores_per_node = 32     # its node type, where it differs from [system]'s (also cpus_per_node,
    #                         # gpus_per_node): jobs' nodes and power are counted in it

Semantics (:func:`run_partitioned`): each pool is a machine of its own under the run's policy and
backfill variant — one engine per pool, over the pool's jobs, with the pool's calendar — as Slurm
schedules disjoint partitions: a job waits only for the nodes of its own partition, and a job
that cannot start blocks (or, under EASY, reserves against) its own partition only. The pools'
outputs are merged: the job table in the window's job order, node ids numbered machine-wide (pool
``i`` holds nodes ``[offset_i, offset_i + nodes_i)``, the partitions' order in the file; a
recorded placement is read the same way), the machine's busy nodes, IT power and queue counts
summed over the pools at every instant, and the run's counts summed (``partitions``: how many
pools ran; a pool whose jobs end before the others' keeps its calendar's nodes down until the
machine's last event, as one machine would). A job wider than its pool is rejected, with the
partition named. A pool may have a node type of its own (``cores_per_node``, ``cpus_per_node``,
``gpus_per_node``): a job's nodes are its processors over its pool's cores per node
(:func:`with_pool_nodes`), its power per node its pool's node model.

What the split does not model: partitions that share nodes (a job is placed in one pool only),
and any state a policy keeps across jobs is per pool — a fair share (``weighted`` with
``w_fairshare``) counts the usage of the pool's jobs only, where Slurm's is machine-wide (a run
warning says so). An external scheduler (``policy = "external"``) speaks for one machine and is
refused on a partitioned system. Replay follows the recorded starts on the machine as one pool
(partitions are not enforced: the log is what it is), with each job's nodes and power in its
pool's node type and every idle node at the mean idle power of the machine's node types
(:func:`core.power.idle_node_power_w`). A system without ``[[system.partitions]]`` runs as one
pool, unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .engine import EngineResult
from .errors import ConfigError
from .power import idle_node_power_w, job_node_power_w, traces_node_power

__all__ = ["pool_rows", "pool_system", "with_pool_nodes", "pool_job_node_power_w", "merge_results",
           "run_partitioned", "pool_traces_node_power", "serves_warnings", "run_warnings", "values_text"]


def _values(partition: Sequence) -> np.ndarray:
    """Each job's partition value as str, ``""`` when missing (None, NaN, NA)."""
    return np.array(["" if pd.isna(v) else str(v) for v in partition], dtype=object)


def _names(names: Mapping | None) -> dict[str, str]:
    """The trace's ``{code: name}`` partition map as str (empty when None)."""
    return {str(k): str(v) for k, v in (names or {}).items()}


def values_text(values, counts, names: Mapping | None = None) -> str:
    """``"1 (thin): 5,000 jobs, 2 (fat): 1 job, none: 3 jobs"``: partition values (str, ``""`` for
    none) beside their job counts, each with the name the trace's header gives it (``names``:
    ``{code: name}``). The one wording of a trace's partition values in errors, warnings and hints."""
    names = _names(names)
    return ", ".join(f"{v or 'none'}{f' ({names[v]})' if v in names else ''}: {int(c):,} job{'' if c == 1 else 's'}"
                     for v, c in zip(values, counts))


def pool_rows(system, partition: Sequence, names: Mapping[str, str] | None = None,
              source: str = "") -> list[np.ndarray]:
    """The rows of each of ``system.partitions`` (in the file's order): ascending int64 positions.

    Args:
        system: a :class:`core.system.System` with partitions.
        partition: each job's partition value (str or None; SWF: field 16's code as str).
        names: the trace's ``{code: name}`` map of partitions (an SWF header's ``Partition`` lines),
            so that ``serves`` may name a partition either way; None: codes only.
        source: the trace's name, for the error.
    Raises: ConfigError naming the trace's partition values (and their job counts) that no
    partition serves, when no partition is the default.
    """
    names, vals = _names(names), _values(partition)
    uniq, inverse = np.unique(vals, return_inverse=True)
    which_u = np.full(len(uniq), -1, dtype=np.int64)
    for u, v in enumerate(uniq):  # per distinct value: a code, or the name the header gives it
        hit = [i for i, p in enumerate(system.partitions) if v in p.serves or names.get(v) in p.serves]
        if len(hit) > 1:
            raise ConfigError(
                f"{source or 'the trace'}: the partition value {v!r}" + (f" ({names[v]})" if v in names else "")
                + f" is served by {len(hit)} partitions of system {system.name!r} "
                f"({', '.join(system.partitions[i].name for i in hit)}: one by its code, another by its name); "
                "name it in one partition's serves only")
        which_u[u] = hit[0] if hit else -1
    which = which_u[inverse]
    default = [i for i, p in enumerate(system.partitions) if p.default]
    lost = which < 0
    if lost.any():
        if not default:
            shown = values_text(*np.unique(vals[lost], return_counts=True), names)
            raise ConfigError(
                f"{source or 'the trace'}: system {system.name!r} is partitioned "
                f"({', '.join(p.name for p in system.partitions)}) and no partition serves these jobs' "
                f"partition values: {shown}; add them to a partition's serves, or mark one partition default = true")
        which[lost] = default[0]
    return [np.flatnonzero(which == i) for i in range(len(system.partitions))]


def serves_warnings(system, partition: Sequence, names: Mapping[str, str] | None = None, source: str = "") -> list[str]:
    """Warnings for a partitioned system's ``serves`` values that no job of the trace has (a
    misspelt value silently sends its jobs to the default partition, or to an error): one per
    such value, with the trace's own partition values and their job counts. Empty when every
    served value is some job's code or header name, or the system is unpartitioned."""
    if not system.partitions:
        return []
    names = _names(names)
    vals, counts = np.unique(_values(partition), return_counts=True)
    have = set(vals) | {names[v] for v in vals if v in names}
    shown = values_text(vals, counts, names)
    default = next((p.name for p in system.partitions if p.default), None)
    return [f"{source or 'the trace'}: partition {p.name!r} of system {system.name!r} serves {v!r}, which no job of "
            f"the trace has (its partition values: {shown})"
            + (f"; jobs of a misspelt value run on the default partition {default!r}" if default else "")
            for p in system.partitions for v in p.serves if v not in have]


def run_warnings(spec, system) -> list[str]:
    """The checks of a run on a partitioned system, made before any work.
    ``spec``: the run's :class:`core.scheduler.SchedulerSpec`. An external scheduler is refused
    (ConfigError: the protocol speaks for one machine); a policy with a fair-share weight
    (``w_fairshare``, however given: alone or in ``weights``) gives a warning, returned: each
    partition counts its own usage."""
    if spec.policy == "external":
        raise ConfigError(f"system {system.name!r} is partitioned ({', '.join(p.name for p in system.partitions)}): "
                          "an external scheduler speaks for one machine; run it on an unpartitioned system file")
    if float(getattr(spec.policy_options, "w_fairshare", 0) or 0):
        return [f"system {system.name!r} is partitioned: each partition is scheduled on its own, so the fair "
                "share counts each partition's usage apart (Slurm's is machine-wide)"]
    return []


def pool_system(system, i: int):
    """The machine of pool ``i``: ``system`` with the partition's nodes, node type and calendar,
    unpartitioned, its ``pool_name`` the partition's (messages name it). Raises ConfigError as
    :class:`core.system.System` does."""
    p = system.partitions[i]
    return dataclasses.replace(system, nodes=p.nodes, partitions=(), availability=p.availability,
                               installed_nodes=None, unavailable_nodes=(), title=f"{system.title} [{p.name}]",
                               pool_name=p.name,
                               **p.node_kind(system.cores_per_node, system.cpus_per_node, system.gpus_per_node))


def with_pool_nodes(workload, system, rows: list | None = None):
    """``workload.with_nodes`` in each job's pool's cores per node (:meth:`core.workload.Workload.with_nodes`):
    the system's for an unpartitioned system or when every pool has the system's node type.
    ``rows``: the workload's :func:`pool_rows`, when the caller has them. Raises ConfigError as
    :func:`pool_rows` (a job no partition serves)."""
    cores = [p.node_kind(system.cores_per_node, 1, 0)["cores_per_node"] for p in system.partitions]
    if all(c == system.cores_per_node for c in cores):
        return workload.with_nodes(system.cores_per_node)
    if rows is None:
        rows = pool_rows(system, workload.jobs["partition"].tolist(), workload.header.get("Partition"), workload.source)
    if workload.procs_unit == "nodes":  # the trace counts nodes: no node type changes them
        return workload.with_nodes(system.cores_per_node)
    cpn = np.full(len(workload.jobs), float(system.cores_per_node))
    for c, r in zip(cores, rows):
        cpn[r] = c
    p = workload.jobs["procs"].astype("float64").to_numpy(na_value=np.nan)
    n = np.where(p > 0, np.ceil(p / cpn), p)  # as Workload.with_nodes: <= 0 or missing kept (rejected)
    jobs = workload.jobs.copy(deep=False)
    jobs["nodes"] = (pd.array(np.where(np.isnan(n), pd.NA, n), dtype="Int64") if np.isnan(n).any()
                     else pd.array(n.astype("int64"), dtype="Int64"))
    return dataclasses.replace(workload, jobs=jobs)


def _shift(ids, offset: int):
    if ids is None or offset == 0:
        return ids
    if isinstance(ids, np.ndarray):
        return ids + offset
    return [int(x) + offset for x in ids]


def _pool_steps(steps: pd.DataFrame, times: np.ndarray, idle_w: float) -> dict[str, np.ndarray]:
    """A pool's step series read at the instants ``times`` (the value in force then; before the
    pool's first step its nodes are idle: no job busy, queued or running, every node at idle power)."""
    t = steps["time"].to_numpy(dtype=np.int64)
    k = np.searchsorted(t, times, side="right") - 1
    before = k < 0
    k = np.maximum(k, 0)
    out = {}
    for c in ("busy_nodes", "it_power_w", "queued_jobs", "running_jobs"):
        v = steps[c].to_numpy()[k] if len(t) else np.zeros(len(times), dtype=steps[c].dtype)
        first = idle_w if c == "it_power_w" else 0
        out[c] = np.where(before, first, v)
    return out


def _offsets(nodes: Sequence[int]) -> np.ndarray:
    """The first machine-wide node id of each pool (the partitions' order in the file)."""
    return np.concatenate([[0], np.cumsum(nodes)[:-1]]).astype(int)


def merge_results(results: Sequence, rows: Sequence[np.ndarray], nodes: Sequence[int], n_jobs: int,
                  idle_power_w: Sequence[float], calendars: Sequence = ()) -> EngineResult:
    """One machine's engine result from its pools' (:class:`core.engine.EngineResult` each).

    Args:
        results: each pool's result, in the partitions' order.
        rows: each pool's rows of the window's job frame (:func:`pool_rows`).
        nodes: each pool's node count (node ids of pool ``i`` are shifted by the nodes before it).
        n_jobs: the window's job count (the merged table has one row per job, in frame order).
        idle_power_w: each pool's DC power of an idle node (W), for its instants before its first step.
        calendars: each pool's availability periods: a pool that ran out of events before the
            machine's last keeps their nodes down until then in ``availability_down_node_s``
            (its nodes are all idle then, so every period holds all its nodes).
    Returns: an :class:`core.engine.EngineResult`: ``jobs`` one row per job in frame order,
    ``steps`` (``time``, int64 ``busy_nodes`` / ``queued_jobs`` / ``running_jobs``, float64
    ``it_power_w``) summed over the pools at the union of their instants, ``counts`` summed plus
    ``partitions`` (the number of pools).
    """
    tables = []
    for res, off, r in zip(results, _offsets(nodes), rows):
        if not len(r):  # an empty table would turn the others' bool / string columns into objects
            continue
        j = res.jobs
        if off and "node_ids" in j.columns:
            j = j.assign(node_ids=[_shift(x, int(off)) for x in j["node_ids"]])
        tables.append(j)
    order = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    jobs = pd.concat(tables, ignore_index=True) if tables else results[0].jobs
    pos = np.empty(n_jobs, dtype=np.int64)
    pos[order] = np.arange(len(order))
    jobs = jobs.iloc[pos].reset_index(drop=True)
    times = np.unique(np.concatenate([r.steps["time"].to_numpy(dtype=np.int64) for r in results]))
    cols: dict[str, np.ndarray] = {}
    for res, n, w in zip(results, nodes, idle_power_w):
        for c, v in _pool_steps(res.steps, times, w * n).items():
            cols[c] = cols[c] + v if c in cols else v
    steps = pd.DataFrame({"time": times, "busy_nodes": cols["busy_nodes"].astype("int64"),
                          "it_power_w": cols["it_power_w"].astype("float64"),
                          "queued_jobs": cols["queued_jobs"].astype("int64"),
                          "running_jobs": cols["running_jobs"].astype("int64")})
    t_end = max(r.t_end for r in results)
    counts: dict = {}
    for res in results:
        for k, v in res.counts.items():
            counts[k] = counts.get(k, 0) + v
    for res, cal in zip(results, calendars):  # periods a pool's own run stopped counting early
        if cal:
            counts["availability_down_node_s"] = counts.get("availability_down_node_s", 0) + _late_down_node_s(
                res, cal, t_end)
    counts["partitions"] = len(results)
    return EngineResult(jobs=jobs, steps=steps, t_start=min(r.t_start for r in results), t_end=t_end, counts=counts)


def _late_down_node_s(res, cal, t_end: int) -> int:
    """Node-seconds a pool's calendar holds after its own run stopped, up to the machine's
    ``t_end``: its run stops at its last event (``stop``) once it has no job left, so a period
    starting later was never applied (all its nodes are down from its start: the pool is idle),
    and in an open window one still holding nodes was counted only to the pool's own end."""
    t = res.steps["time"].to_numpy(dtype=np.int64)
    stop = int(t[-1]) if len(t) else res.t_start - 1  # a pool without a step applied nothing
    late = 0
    for a, b, k in cal:
        a0 = max(int(a), res.t_start)
        late += k * max(0, min(int(b), t_end) - (a0 if a0 > stop else res.t_end))
    return int(late)


def _pool_frame(frame: pd.DataFrame, idx: np.ndarray, offset: int, nodes: int) -> pd.DataFrame:
    """The pool's rows of the window's frame; a recorded placement (``node_ids``, machine-wide) is
    made the pool's own (ids minus the pool's first node), and dropped when it is not on the pool."""
    sub = frame.iloc[idx].reset_index(drop=True)
    sub.attrs = dict(frame.attrs)
    if "node_ids" in sub.columns and sub["node_ids"].notna().any():
        def local(ids):
            if ids is None or (isinstance(ids, float) and np.isnan(ids)):
                return None
            a = np.asarray(ids, dtype=np.int64) - offset
            return a.tolist() if len(a) and a.min() >= 0 and a.max() < nodes else None
        sub["node_ids"] = pd.Series([local(x) for x in sub["node_ids"]], index=sub.index, dtype="object")
    return sub


def pool_job_node_power_w(system, frame: pd.DataFrame, rows: list | None) -> np.ndarray:
    """:func:`core.power.job_node_power_w` of a window (one float64 per row of ``frame``, W per
    node): on a partitioned machine each job's from its own pool's node model (:func:`pool_system`;
    ``rows``: the frame's :func:`pool_rows`), else the system's (``rows`` None)."""
    if rows is None:
        return job_node_power_w(system, frame)
    out = np.zeros(len(frame), dtype="float64")
    for i, r in enumerate(rows):
        if len(r):
            out[r] = job_node_power_w(pool_system(system, i), frame.iloc[r])
    return out


def run_partitioned(frame: pd.DataFrame, system, rows: list, node_power_w, make_engine: Callable) -> EngineResult:
    """Run each of ``system.partitions`` as a machine of its own and merge (the module doc).

    Args:
        frame: the window's jobs (:func:`core.engine.select_window`), with ``nodes`` counted in
            each job's pool's cores per node (:func:`with_pool_nodes`).
        system: the partitioned :class:`core.system.System`.
        rows: the frame's :func:`pool_rows`.
        node_power_w: per-job DC power per node (W), aligned with ``frame``
            (:func:`pool_job_node_power_w`).
        make_engine: ``make_engine(pool_frame, pool_system, pool_node_power_w, idle_w)`` -> an
            engine with ``run()`` (:class:`core.engine.Engine`, the run's other arguments bound;
            ``idle_w``: the pool's idle node power, W).
    Returns: the merged :class:`core.engine.EngineResult` (:func:`merge_results`).
    """
    nodes = [p.nodes for p in system.partitions]
    results, idle = [], []
    for i, (idx, off) in enumerate(zip(rows, _offsets(nodes))):
        pool = pool_system(system, i)
        idle.append(idle_node_power_w(pool))
        eng = make_engine(_pool_frame(frame, idx, int(off), pool.nodes), pool, np.asarray(node_power_w)[idx], idle[-1])
        results.append(eng.run())
    return merge_results(results, rows, nodes, len(frame), idle, [p.availability for p in system.partitions])


def pool_traces_node_power(system, frame: pd.DataFrame, rows: list, traces: dict) -> dict:
    """:func:`core.power.traces_node_power` of a partitioned run: each job's utilisation samples
    through its own pool's node model (:func:`pool_system`), recorded power samples as they are.
    ``frame``: the window's jobs (``job_id``); ``rows``: its :func:`pool_rows`; ``traces``:
    ``Workload.traces``. Returns ``{job_id: {"period": s, "node_power_w": array of W per node}}``."""
    ids = frame["job_id"].to_numpy()
    out: dict = {}
    for i, r in enumerate(rows):
        mine = {j: traces[j] for j in ids[r] if j in traces}
        if mine:
            out.update(traces_node_power(pool_system(system, i), mine))
    return out
