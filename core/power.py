"""Node power, conversion losses, exact time binning and power ramps (DESIGN.md §4, §5).

Units everywhere: W (power), J (energy), s (time, int64 seconds since the trace epoch).

Sources of the formulas:

* Node power is the linear utilisation model of DESIGN.md §4 (the same form as the per-component
  model of ExaDigiT/RAPS): ``P_node = other + mem + nic + storage
  + cpus·(cpu_idle + u_cpu·(cpu_max − cpu_idle)) + gpus·(gpu_idle + u_gpu·(gpu_max − gpu_idle))``.
* Conversion losses (DESIGN.md §4) are affine, ``P_in = (P_out + c) / η`` at the level where the
  converter sits. They are *never* modelled as a plain multiplication by η: the constant ``c``
  (no-load loss) is paid even by an idle converter.
* Bin averages are exact time-averages of a piecewise-constant (step) signal: the integral of the
  step function over each bin divided by the bin's length.

Step signals follow the engine's contract (docs/architecture.md, ``EngineResult.steps``):
``times`` are strictly ascending int64 change points, ``values[i]`` holds on
``[times[i], times[i+1])`` and the last value holds until the end of the window ``t1``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from typing import TYPE_CHECKING

from .errors import ConfigError

if TYPE_CHECKING:  # annotations only: power reads a System, it never builds one (core.system builds on power)
    from .system import PowerModel, System

__all__ = [
    "node_power_w",
    "idle_node_power_w",
    "job_node_power_w",
    "convert",
    "bin_step",
    "integrate_step",
    "step_segments",
    "ramps",
    "build_timeline",
    "TIMELINE_COLUMNS",
    "power_breakdown",
    "apply_power_traces",
    "traces_node_power",
]

#: Column order of timeline.parquet (docs/architecture.md "timeline.parquet").
TIMELINE_COLUMNS = (
    "time",
    "it_power_w",
    "loss_w",
    "facility_power_w",
    "busy_nodes",
    "utilization",
    "queued_jobs",
    "running_jobs",
)


# --------------------------------------------------------------------------------------------
# node power
# --------------------------------------------------------------------------------------------


def node_power_w(power: PowerModel, cpus, gpus, cpu_util, gpu_util):
    """DC power of one node (W) under the linear utilisation model (DESIGN.md §4).

    ``P = other + mem + nic + storage + cpus·(cpu_idle + u_cpu·(cpu_max − cpu_idle))
    + gpus·(gpu_idle + u_gpu·(gpu_max − gpu_idle))``.

    Args:
        power: the system's :class:`~core.system.PowerModel` (W per CPU socket / GPU / node part).
        cpus, gpus: CPU sockets and GPUs per node (int or array, broadcast).
        cpu_util, gpu_util: utilisation in 0..1 (scalar or array of any shape, broadcast);
            values outside [0, 1] are clipped to it. NaN is not allowed here: replace it with the
            system defaults first (:func:`job_node_power_w` does).

    Returns:
        float when every input is a scalar, else a float64 ndarray of the broadcast shape (W).

    Raises:
        ConfigError: a utilisation (after defaults) or a power parameter is NaN.
    """
    u_c = np.asarray(cpu_util, dtype="float64")
    u_g = np.asarray(gpu_util, dtype="float64")
    if np.isnan(u_c).any():
        raise ConfigError("node_power_w: cpu_util contains NaN (fill it with power.default_cpu_util first)")
    if np.isnan(u_g).any():
        raise ConfigError("node_power_w: gpu_util contains NaN (fill it with power.default_gpu_util first)")
    params = {
        k: float(getattr(power, k))
        for k in ("cpu_idle_w", "cpu_max_w", "gpu_idle_w", "gpu_max_w", "mem_w", "nic_w", "storage_w", "other_w")
    }
    bad = sorted(k for k, v in params.items() if np.isnan(v))
    if bad:
        raise ConfigError(f"node_power_w: power parameter(s) {bad} are NaN")
    u_c = np.clip(u_c, 0.0, 1.0)
    u_g = np.clip(u_g, 0.0, 1.0)
    c = np.asarray(cpus, dtype="float64")
    g = np.asarray(gpus, dtype="float64")
    p = (
        params["other_w"] + params["mem_w"] + params["nic_w"] + params["storage_w"]
        + c * (params["cpu_idle_w"] + u_c * (params["cpu_max_w"] - params["cpu_idle_w"]))
        + g * (params["gpu_idle_w"] + u_g * (params["gpu_max_w"] - params["gpu_idle_w"]))
    )
    return float(p) if np.ndim(p) == 0 else np.asarray(p, dtype="float64")


def peak_input_power_w(power: PowerModel, nodes: int, cpus_per_node: int, gpus_per_node: int,
                       node_types: list | None = None) -> float:
    """Peak facility input power (W, without cooling plant) of ``nodes`` nodes at full CPU and GPU
    utilisation, through the conversion losses of :func:`convert`. 0 when the node power is 0
    (no power model). ``node_types``: ``(nodes, cpus_per_node, gpus_per_node)`` of each node type
    of a partitioned machine (:meth:`core.system.System.node_types`), summed instead of ``nodes``
    nodes of one type. Used to size the cooling plant (:func:`core.cooling.peak_heat_w`) from a
    power model before its System exists."""
    kinds = node_types or [(nodes, cpus_per_node, gpus_per_node)]
    dc = sum(float(node_power_w(power, c, g, 1.0, 1.0)) * n for n, c, g in kinds)
    if dc <= 0:
        return 0.0
    return float(_stages(power, int(nodes), np.asarray(dc, dtype="float64"))[2])


def idle_node_power_w(system: System) -> float:
    """DC power of one idle node of ``system`` (W): :func:`node_power_w` at zero utilisation; of a
    partitioned machine (:mod:`core.partitions`), the mean over its nodes of their types' (what a
    replay, which runs the machine as one pool, gives each idle node)."""
    if system.partitions:  # one pool of several node types (a replay): their mean
        return float(sum(n * float(node_power_w(system.power, c, g, 0.0, 0.0)) for n, c, g in system.node_types())
                     / max(1, system.nodes))
    return float(node_power_w(system.power, system.cpus_per_node, system.gpus_per_node, 0.0, 0.0))


def _float_col(df: pd.DataFrame, col: str) -> np.ndarray:
    if col not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def job_node_power_w(system: System, jobs: pd.DataFrame) -> np.ndarray:
    """DC power per node (W) of each job while it runs, one float64 per row of ``jobs``.

    * When ``avg_power_w`` (the job's recorded power over *all* its nodes) is finite and ≥ 0 and
      ``nodes`` > 0: ``avg_power_w / nodes`` (recorded power is used as is; DESIGN.md §4).
    * Otherwise the node model (:func:`node_power_w`) at the job's ``cpu_util`` / ``gpu_util``,
      with NaN (or a missing column) replaced by ``system.power.default_cpu_util`` /
      ``default_gpu_util``. Negative recorded power is treated as missing.

    Raises:
        ConfigError: a utilisation is still NaN after the defaults (NaN default in the system).
    """
    n = len(jobs)
    if n == 0:
        return np.zeros(0, dtype="float64")
    nodes = _float_col(jobs, "nodes")
    avg = _float_col(jobs, "avg_power_w")
    u_c = _float_col(jobs, "cpu_util")
    u_g = _float_col(jobs, "gpu_util")
    u_c = np.where(np.isnan(u_c), float(system.power.default_cpu_util), u_c)
    u_g = np.where(np.isnan(u_g), float(system.power.default_gpu_util), u_g)
    model = np.broadcast_to(
        node_power_w(system.power, system.cpus_per_node, system.gpus_per_node, u_c, u_g), (n,)
    )
    use_rec = np.isfinite(avg) & (avg >= 0) & np.isfinite(nodes) & (nodes > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rec = avg / nodes
    return np.where(use_rec, rec, model).astype("float64")


# --------------------------------------------------------------------------------------------
# conversion losses
# --------------------------------------------------------------------------------------------


def convert(system: System, it_power_w):
    """Facility input power and conversion loss for a total IT (DC) power (W).

    Two converter stages (DESIGN.md §4: ``P_in = (P_out + c) / η`` where the converter sits,
    never a multiplication by η alone):

    1. node converters (PSUs): ``G_n = ceil(N / node_converter.nodes_per_group)`` units
       (``N = system.nodes``; ``nodes_per_group = 1`` means one per node, ``G_n = N``):
       ``P_n = (P + G_n·c_n) / η_n``;
    2. rectifiers, one per group of ``rectifier.nodes_per_group`` nodes,
       ``G_r = ceil(N / rectifier.nodes_per_group)``: ``P_in = (P_n + G_r·c_r) / η_r``.

    A converter that gives ``units`` uses that count instead of ``ceil(N / nodes_per_group)``.
    When the system has network switches (``power.switches × power.switch_w``), their constant
    power enters the rectifier stage with the node converters' output (they sit behind the
    rectifiers, as in ExaDigiT/RAPS); CDU power (``power.cdus × power.cdu_w``) is added after
    the rectifiers. Both are constant facility power, so they appear in ``loss_w``
    (= input − IT) and keep ``facility = it + loss``; :func:`power_breakdown` separates them.

    Every unit of a stage has the same (c, η), so summing the per-unit affine map over the units
    gives exactly the map of the total: the result does not depend on how the load is spread
    over nodes or groups, and it commutes with time-averaging (bin means of ``P_in`` are
    ``convert`` of bin means of ``P``). Idle nodes are powered, so every converter is counted.

    Args:
        system: the machine (``system.nodes`` and ``system.power.node_converter`` / ``rectifier``).
        it_power_w: total DC power of all nodes, scalar or array (W).

    Returns:
        ``(input_w, loss_w)`` with ``loss_w = input_w − it_power_w``; floats for a scalar input,
        else float64 arrays of the input's shape.
    """
    p = np.asarray(it_power_w, dtype="float64")
    p_in = _stages(system.power, int(system.nodes), p)[2]
    loss = p_in - p
    if np.ndim(p_in) == 0:
        return float(p_in), float(loss)
    return p_in, loss


def _stages(pw: PowerModel, n_nodes: int, p):
    """``(P_n, P_r, P_in, switch_w, cdu_w)`` of :func:`power_breakdown` for IT power ``p`` (W) of
    ``n_nodes`` nodes with power model ``pw``."""
    nc, rc = pw.node_converter, pw.rectifier
    g_n = nc.count(n_nodes) if hasattr(nc, "count") else -(-n_nodes // int(nc.nodes_per_group))
    g_r = rc.count(n_nodes) if hasattr(rc, "count") else -(-n_nodes // int(rc.nodes_per_group))
    sw = float(getattr(pw, "switches", 0)) * float(getattr(pw, "switch_w", 0.0))
    cdu = float(getattr(pw, "cdus", 0)) * float(getattr(pw, "cdu_w", 0.0))
    p_n = (p + g_n * float(nc.c_w)) / float(nc.eta)
    p_r = (p_n + sw + g_r * float(rc.c_w)) / float(rc.eta)
    return p_n, p_r, p_r + cdu, sw, cdu


def _it_equipment(pw: PowerModel, p_n, p_r, sw):
    return p_r if pw.it_meter == "rectifier_input" else p_n + sw


def it_equipment_power(system: System, it_power_w):
    """The IT equipment power of PUE for a total IT (DC) power (W), scalar or array: the power
    metered at the IT equipment's input (The Green Grid, "PUE: a comprehensive examination of the
    metric", White Paper 49, 2012, where UPS losses and cooling are facility overhead).

    ``system.power.it_meter`` says where that is (:mod:`core.system`): ``"rectifier_input"`` — the
    rectifiers are in the IT cabinets (ExaDigiT/RAPS's per-chassis rectifiers): ``P_r`` of
    :func:`power_breakdown`, the facility input without the CDUs — or ``"rectifier_output"`` — the
    rectifier stage is a room UPS: the node converters' input plus the switches, ``P_n + switches``.
    The CDUs' pumps are cooling, never IT. Affine in ``it_power_w`` (so exact on time means), and at
    most :func:`convert`'s input. Floats for a scalar input, else float64 arrays of its shape."""
    p = np.asarray(it_power_w, dtype="float64")
    p_n, p_r, _, sw, _ = _stages(system.power, int(system.nodes), p)
    out = _it_equipment(system.power, p_n, p_r, sw)
    return float(out) if np.ndim(out) == 0 else np.asarray(out, dtype="float64")


def power_breakdown(system: System, it_power_w) -> dict:
    """The pieces of :func:`convert` for a total IT (DC) power (W), scalar or array.

    Returns a dict of floats/arrays: ``it_w`` (the input), ``node_converter_loss_w``,
    ``switch_w`` (constant), ``rectifier_loss_w``, ``cdu_w`` (constant) and ``input_w`` (their
    sum: the facility's electrical input without cooling plant) and ``it_equipment_w``
    (:func:`it_equipment_power`, not a piece of the sum). With ``N = system.nodes``,
    ``G_n``/``G_r`` the converter unit counts (:meth:`core.system.Converter.count`)::

        P_n  = (P + G_n·c_n) / η_n                    # per-node converters (e.g. SIVOCs)
        P_r  = (P_n + switches·switch_w + G_r·c_r) / η_r   # rectifiers, switches behind them
        P_in = P_r + cdus·cdu_w
    """
    p = np.asarray(it_power_w, dtype="float64")
    p_n, p_r, p_in, sw, cdu = _stages(system.power, int(system.nodes), p)
    out = {
        "it_w": p,
        "node_converter_loss_w": p_n - p,
        "switch_w": sw,
        "rectifier_loss_w": p_r - p_n - sw,
        "cdu_w": cdu,
        "input_w": p_in,
        "it_equipment_w": _it_equipment(system.power, p_n, p_r, sw),
    }
    if np.ndim(p) == 0:
        return {k: float(v) for k, v in out.items()}
    return out


# --------------------------------------------------------------------------------------------
# recorded per-job power traces (DESIGN.md §4: jobs with recorded power use it)
# --------------------------------------------------------------------------------------------


def traces_node_power(system: System, traces: dict) -> dict:
    """Per-job DC node power samples from ``Workload.traces`` (see :func:`apply_power_traces`).

    An entry with ``node_power_w`` is used as is. An entry with utilisation samples
    (``cpu_util`` and/or ``gpu_util``, 0..1) gets ``node_power_w`` from the system's node model
    (:func:`node_power_w`; a missing one of the two takes the system default), so GPU
    utilisation enters the node model exactly like CPU utilisation. Other entries are dropped.
    """
    out = {}
    pw = system.power
    for jid, tr in traces.items():
        if not isinstance(tr, dict):
            continue
        if tr.get("node_power_w") is not None:
            out[jid] = tr
            continue
        cu, gu = tr.get("cpu_util"), tr.get("gpu_util")
        if cu is None and gu is None:
            continue
        n = len(cu) if cu is not None else len(gu)
        c = np.asarray(cu, dtype="float64")[:n] if cu is not None else np.full(n, float(pw.default_cpu_util))
        g = np.asarray(gu, dtype="float64")[:n] if gu is not None else np.full(n, float(pw.default_gpu_util))
        m = min(len(c), len(g))
        c, g = c[:m], g[:m]
        c = np.where(np.isnan(c), float(pw.default_cpu_util), c)
        g = np.where(np.isnan(g), float(pw.default_gpu_util), g)
        p = np.broadcast_to(node_power_w(pw, system.cpus_per_node, system.gpus_per_node, c, g), (m,))
        out[jid] = {"period": tr.get("period"), "node_power_w": np.asarray(p, dtype="float64")}
    return out


def account_power(result, system: System, traces: dict | None,
                  node_traces: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The run's final jobs and step tables, power accounted once, after the engine.

    The engine schedules with one constant DC power per job and node (``node_power_w``: the
    recorded average when there is one, else the node model) and reports ``jobs`` / ``steps`` on
    that basis. Where the workload carries per-job power or utilisation samples (``traces``,
    ``Workload.traces``), this step turns them into node power (:func:`traces_node_power`) and
    rebuilds the traced jobs' energy and the IT power step function (:func:`apply_power_traces`);
    without traces the engine's tables are final as they are. ``result`` (an
    ``EngineResult``: ``jobs``, ``steps``, ``t_end``) is not modified: the timeline, the cooling
    and the statistics read the tables returned here, and nothing writes back into the engine's.

    ``node_traces``: the traces already turned into node power (a partitioned machine's, each
    job through its own pool's node model: :func:`core.partitions.pool_traces_node_power`), else
    None (:func:`traces_node_power` of ``system``).

    Returns ``(jobs, steps, counts)``; ``counts``: ``{}`` without traces, else the
    ``power_trace*`` counts of :func:`apply_power_traces`.
    """
    if not traces:
        return result.jobs, result.steps, {}
    return apply_power_traces(result.jobs, result.steps,
                              traces_node_power(system, traces) if node_traces is None else node_traces,
                              result.t_end)


def apply_power_traces(jobs: pd.DataFrame, steps: pd.DataFrame, traces: dict,
                       t_end: int) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Replace the constant per-job power of traced jobs by their recorded power samples.

    The engine gives every job one DC power per node (``node_power_w``, from the recorded average
    when there is one) for its whole simulated run. This pass rebuilds the IT power step function
    for jobs that carry a sample trace: sample ``k`` of a job that (re)starts at ``s`` holds on
    ``[s + k·period, s + (k+1)·period)``, clipped to the simulated run ``[s, e)`` (``e`` = its
    simulated end, or ``t_end`` while still running). When the trace is shorter than the run
    (a rescheduled job that runs longer than recorded, or a trace with missing samples at its
    end) the last known value is held; the samples so filled are counted.

    Args:
        jobs: ``EngineResult.jobs`` (``job_id``, ``nodes``, ``start_time``, ``end_time``,
            ``status``, ``node_power_w``, ``energy_j``, ``avg_power_w``).
        steps: ``EngineResult.steps`` (``time``, ``it_power_w`` …).
        traces: ``Workload.traces``: ``job_id -> {"period": s, "node_power_w": array}`` (W per node,
            DC, sample-wise mean over the job's nodes). Entries without ``node_power_w`` or with
            no samples are ignored.
        t_end: end of the simulated window (s).

    Returns:
        ``(jobs, steps, counts)``: copies with ``it_power_w`` rebuilt (new change points at sample
        boundaries; the other step columns carried forward), the traced jobs' ``energy_j`` /
        ``avg_power_w`` recomputed from the samples actually used, a bool column
        ``power_traced``, and ``counts`` = ``{"power_traced_jobs", "power_trace_filled_samples",
        "power_trace_samples_used"}``.
    """
    counts = {"power_traced_jobs": 0, "power_trace_filled_samples": 0, "power_trace_samples_used": 0}
    jobs = jobs.copy()
    jobs["power_traced"] = False
    if not traces or len(jobs) == 0:
        return jobs, steps, counts
    t_end = int(t_end)
    ev_t: list[np.ndarray] = []
    ev_d: list[np.ndarray] = []
    energy = jobs["energy_j"].to_numpy(dtype="float64", copy=True)
    avgp = jobs["avg_power_w"].to_numpy(dtype="float64", copy=True)
    traced = np.zeros(len(jobs), dtype=bool)
    ids = jobs["job_id"].astype(str).tolist()
    starts = jobs["start_time"].astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
    ends = jobs["end_time"].astype("Float64").to_numpy(dtype="float64", na_value=np.nan)
    status = jobs["status"].tolist()
    nodes = pd.to_numeric(jobs["nodes"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    npow = jobs["node_power_w"].to_numpy(dtype="float64")
    for j, jid in enumerate(ids):
        tr = traces.get(jid)
        if tr is None or not np.isfinite(starts[j]) or not (nodes[j] > 0):
            continue
        vals = tr.get("node_power_w")
        if vals is None:
            continue
        v = np.asarray(vals, dtype="float64").ravel()
        gaps = ~np.isfinite(v)
        if gaps.all():
            continue
        if gaps.any():  # missing samples inside the trace: last known value (first known at the head)
            idx = np.where(~gaps, np.arange(len(v)), -1)
            idx = np.maximum.accumulate(idx)
            idx[idx < 0] = int(np.flatnonzero(~gaps)[0])
            v = v[idx]
        period = int(tr.get("period", 0) or 0)
        if period < 1:
            raise ConfigError(f"power trace of job {jid}: period must be a whole number of seconds >= 1")
        s = int(starts[j])
        e = int(ends[j]) if np.isfinite(ends[j]) else (t_end if status[j] == "running" else s)
        e = max(e, s)
        if e <= s:
            continue
        need = -(-(e - s) // period)
        used = v[:need]
        extend = max(0, need - len(v))
        if extend:
            used = np.concatenate([used, np.full(extend, v[-1])])
        filled = extend + int(gaps[:need].sum())
        counts["power_traced_jobs"] += 1
        counts["power_trace_filled_samples"] += int(filled)
        counts["power_trace_samples_used"] += int(need)
        traced[j] = True
        t = s + period * np.arange(need, dtype="int64")
        lengths = np.minimum(t + period, e) - t
        # delta against the engine's constant per-node power over [s, e)
        diff = nodes[j] * (used - npow[j])
        d = np.diff(np.concatenate(([0.0], diff, [0.0])))
        ev_t.append(np.concatenate((t, [e])))
        ev_d.append(d)
        energy[j] = float(nodes[j] * (used * lengths).sum())
        avgp[j] = energy[j] / float(e - s)
    counts["power_traced_jobs"] = int(counts["power_traced_jobs"])
    if not ev_t:
        return jobs, steps, counts
    et = np.concatenate(ev_t)
    ed = np.concatenate(ev_d)
    order = np.argsort(et, kind="stable")
    et, ed = et[order], ed[order]
    ut, first = np.unique(et, return_index=True)
    dsum = np.add.reduceat(ed, first)
    dval = np.cumsum(dsum)  # delta holding on [ut[i], ut[i+1])
    st = steps["time"].to_numpy(dtype="int64")
    t0 = int(st[0])
    keep = (ut >= t0) & (ut < max(t_end, t0 + 1))
    all_t = np.union1d(st, ut[keep])
    si = np.searchsorted(st, all_t, side="right") - 1
    di = np.searchsorted(ut, all_t, side="right") - 1
    delta = np.where(di >= 0, dval[np.clip(di, 0, None)], 0.0)
    out = {"time": all_t}
    for c in steps.columns:
        if c == "time":
            continue
        col = steps[c].to_numpy()
        out[c] = col[si]
    out["it_power_w"] = steps["it_power_w"].to_numpy(dtype="float64")[si] + delta
    new_steps = pd.DataFrame(out, columns=list(steps.columns))
    jobs["energy_j"] = energy
    jobs["avg_power_w"] = avgp
    jobs["power_traced"] = traced
    return jobs, new_steps, counts


# --------------------------------------------------------------------------------------------
# exact binning of step functions
# --------------------------------------------------------------------------------------------


def _as_int_seconds(x, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind in "iu":
        return a.astype("int64")
    if a.dtype.kind == "f" or a.dtype == object:
        f = a.astype("float64")
        if not np.all(np.isfinite(f)) or not np.all(f == np.round(f)):
            raise ValueError(f"{what} must be whole seconds (int64), got non-integral values")
        return f.astype("int64")
    raise ValueError(f"{what} must be int64 seconds, got dtype {a.dtype}")


def _check_step(times, values, t0, t1):
    t = _as_int_seconds(times, "times")
    if t.ndim != 1:
        raise ValueError(f"times must be 1-D, got shape {t.shape}")
    v = np.asarray(values, dtype="float64")
    if v.ndim not in (1, 2) or v.shape[0] != t.shape[0]:
        raise ValueError(f"values must have shape (n,) or (n, k) with n = len(times) = {len(t)}, got {v.shape}")
    if len(t) == 0:
        raise ValueError("times is empty: a step function needs at least one change point <= t0")
    if len(t) > 1 and not np.all(np.diff(t) > 0):
        raise ValueError("times must be strictly ascending")
    t0, t1 = int(t0), int(t1)
    if t1 < t0:
        raise ValueError(f"t1 ({t1}) < t0 ({t0})")
    if t[0] > t0:
        raise ValueError(f"times[0] ({int(t[0])}) > t0 ({t0}): the step function is undefined at the window start")
    return t, v, t0, t1


def step_segments(times, values, t0: int, t1: int):
    """The pieces of a step function that intersect ``[t0, t1)``.

    Returns ``(starts, values)``: the start of each piece clipped to ``t0`` (int64, ascending,
    first = t0) and its value (shape ``(m,)`` or ``(m, k)``). Empty when ``t1 == t0``.
    Raises ValueError as :func:`bin_step`.
    """
    t, v, t0, t1 = _check_step(times, values, t0, t1)
    if t1 == t0:
        return np.zeros(0, dtype="int64"), v[:0]
    i0 = int(np.searchsorted(t, t0, side="right")) - 1  # piece holding at t0
    i1 = int(np.searchsorted(t, t1, side="left"))  # first change point at/after t1
    starts = t[i0:i1].copy()
    starts[0] = t0
    return starts, v[i0:i1]


def bin_step(times, values, t0: int, t1: int, period: int):
    """Exact bin averages of a step function.

    The step function is ``values[i]`` on ``[times[i], times[i+1])``, the last value until ``t1``.
    Bins are ``[t0 + k·period, t0 + (k+1)·period) ∩ [t0, t1)`` for ``k = 0 … ceil((t1−t0)/period)−1``;
    each bin holds the exact time-average of the step function over it (the last, partial bin is
    averaged over its real length ``t1 − start``).

    Method: the window is cut at every change point and every bin edge; each piece contributes
    ``value × length`` (float64; exact for integer-valued signals below 2**53), and the pieces are
    summed per bin with ``np.add.reduceat``. This equals differencing the cumulative integral at
    the bin edges (the integral is piecewise linear, so its interpolation at the edges is exact),
    but sums only the bin's own pieces, so there is no cancellation between large cumulative
    totals. O((n + bins) log) time; 1e6 change points × 1e6 bins in well under a second.

    Args:
        times: strictly ascending change points, int64 seconds, shape ``(n,)``; ``times[0] <= t0``
            is required (the function is not defined before its first change point).
            Change points at or after ``t1`` are ignored.
        values: shape ``(n,)`` or ``(n, k)`` (k signals sharing the change points), float.
            NaN values propagate to the bins they touch.
        t0, t1: window ``[t0, t1)``, int seconds, ``t1 >= t0`` (``t1 == t0`` gives empty output).
        period: bin length in seconds, int >= 1.

    Returns:
        ``(bin_start, mean)``: int64 array of shape ``(m,)`` and float64 array of shape ``(m,)``
        or ``(m, k)``.

    Raises:
        ValueError: times empty, not strictly ascending, not whole seconds, ``times[0] > t0``,
            ``t1 < t0``, ``period < 1``, or mismatched shapes.
    """
    period_i = int(period)
    if period_i != period or period_i < 1:
        raise ValueError(f"period must be a whole number of seconds >= 1, got {period!r}")
    starts, seg_v = step_segments(times, values, t0, t1)
    binner = _Bins(starts, int(t0), int(t1), period_i)
    if binner.nbins == 0:
        return binner.bin_start, seg_v[:0].astype("float64")
    return binner.bin_start, binner.means(seg_v)


class _Bins:
    """The cut structure of :func:`bin_step` for one set of change points, shared by every signal
    binned on it. ``starts``: the pieces of :func:`step_segments` (first = t0)."""

    def __init__(self, starts: np.ndarray, t0: int, t1: int, period: int):
        self.nbins = nbins = -(-(t1 - t0) // period)
        self.bin_start = bin_start = np.arange(t0, t0 + period * nbins, period, dtype="int64")
        if nbins == 0:
            return
        # breakpoints: bin starts ∪ change points inside the window, then t1. The change points
        # that are not bin starts go after their bin's start (both lists are sorted), so the merge
        # is an insertion, not a sort.
        inner = starts[((starts - t0) % period) != 0]
        inner_bin = (inner - t0) // period
        self.several = len(inner) > 0  # some bins hold several pieces
        cuts = np.insert(bin_start, inner_bin + 1, inner) if self.several else bin_start
        # the piece starting at each cut: piece i covers the cuts in [starts[i], starts[i+1])
        self.per_piece = np.diff(np.searchsorted(cuts, starts, side="left"), append=len(cuts))
        self.unit = period == 1  # every bin is one whole second of one piece: its mean is its value
        if self.unit:
            return
        self.lengths = np.diff(cuts, append=t1).astype("float64")
        if self.several:
            first = np.arange(nbins, dtype="int64")
            first[1:] += np.cumsum(np.bincount(inner_bin, minlength=nbins))[:-1]
            self.first = first
        self.blen = (np.minimum(bin_start + period, t1) - bin_start).astype("float64")

    def means(self, seg_v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Exact bin means of the pieces' values ``seg_v`` (shape ``(m,)`` or ``(m, k)``), written
        into ``out`` (float64, shape ``(nbins,)`` or ``(nbins, k)``) when given."""
        pv = np.repeat(seg_v, self.per_piece, axis=0)
        if self.unit:  # (v · 1) / 1 == v exactly
            if out is not None:
                out[...] = pv
                return out
            return pv.astype("float64", copy=False)
        area = pv * (self.lengths[:, None] if pv.ndim == 2 else self.lengths)
        sums = np.add.reduceat(area, self.first, axis=0) if self.several else area
        return np.divide(sums, self.blen[:, None] if sums.ndim == 2 else self.blen, out=out)


def integrate_step(times, values, t0: int, t1: int):
    """Exact integral of a step function over ``[t0, t1)`` (value·s, e.g. J for W).

    Same conventions and errors as :func:`bin_step`; returns a float (1-D values) or a float64
    array of shape ``(k,)`` (2-D values). 0 when ``t1 == t0``.
    """
    starts, seg_v = step_segments(times, values, t0, t1)
    if len(starts) == 0:
        return 0.0 if seg_v.ndim == 1 else np.zeros(seg_v.shape[1])
    lengths = np.diff(np.append(starts, int(t1))).astype("float64")
    if seg_v.ndim == 2:
        return (seg_v * lengths[:, None]).sum(axis=0)
    return float((seg_v * lengths).sum())


def ramps(times, values, t0: int, t1: int, window: int) -> tuple[float, float]:
    """Largest and 95th-percentile absolute change between consecutive window averages (W).

    The step function (1-D ``values``) is averaged exactly over consecutive bins of ``window``
    seconds from ``t0`` (:func:`bin_step`); only *full* bins are used (a trailing partial bin is
    dropped, as its average covers a different length). With ``d_k = |mean_{k+1} − mean_k|``
    returns ``(max d, percentile(d, 95))``, the percentile by ``numpy.percentile`` with its
    default ``"linear"`` method (type 7 of Hyndman & Fan). Fewer than 2 full bins: ``(0.0, 0.0)``.

    Raises ValueError as :func:`bin_step`, or for 2-D values.
    """
    if np.ndim(values) != 1:
        raise ValueError("ramps: values must be 1-D")
    _, mean = bin_step(times, values, t0, t1, window)
    n_full = (int(t1) - int(t0)) // int(window)
    mean = mean[:n_full]
    if len(mean) < 2:
        return 0.0, 0.0
    d = np.abs(np.diff(mean))
    return float(d.max()), float(np.percentile(d, 95))


# --------------------------------------------------------------------------------------------
# timeline
# --------------------------------------------------------------------------------------------

_STEP_COLUMNS = ("busy_nodes", "it_power_w", "queued_jobs", "running_jobs")


def build_timeline(steps: pd.DataFrame, system: System, t0: int, t1: int, period: int) -> pd.DataFrame:
    """timeline.parquet (docs/architecture.md) from the engine's ``steps``.

    Args:
        steps: ``EngineResult.steps``: columns ``time`` (int64, strictly ascending, first ≤ t0),
            ``busy_nodes``, ``it_power_w`` (W), ``queued_jobs``, ``running_jobs``.
        system: the machine (node count, converters).
        t0, t1: the window ``[t0, t1)`` (s).
        period: sample period (s).

    Returns:
        DataFrame with :data:`TIMELINE_COLUMNS`: ``time`` (int64 bin start) and float64 exact bin
        means of ``it_power_w``, ``loss_w``, ``facility_power_w`` (= it + loss, via
        :func:`convert`, exact on bin means because the loss is affine), ``busy_nodes``,
        ``utilization`` (= busy_nodes / N), ``queued_jobs``, ``running_jobs``.

    Raises:
        ValueError: a column is missing, or as :func:`bin_step`.
    """
    missing = [c for c in ("time",) + _STEP_COLUMNS if c not in steps.columns]
    if missing:
        raise ValueError(f"steps lacks column(s) {missing}")
    period_i = int(period)
    if period_i != period or period_i < 1:
        raise ValueError(f"period must be a whole number of seconds >= 1, got {period!r}")
    times = steps["time"].to_numpy()
    cols = [steps[c].to_numpy(dtype="float64", na_value=np.nan) for c in _STEP_COLUMNS]
    starts, _ = step_segments(times, cols[0], t0, t1)  # validates; the pieces in [t0, t1)
    i0 = int(np.searchsorted(np.asarray(times), int(t0), side="right")) - 1  # piece holding at t0
    binner = _Bins(starts, int(t0), int(t1), period_i)  # one cut structure for the four signals
    if binner.nbins and binner.unit:
        # 1-s bins: each bin's mean is its piece's value, and every column is elementwise in it,
        # so the columns are computed per piece and repeated into the bins (the same numbers)
        busy, it, queued, running = (c[i0:i0 + len(starts)] for c in cols)
        fac, loss = convert(system, it)
        block = np.vstack([it, loss, fac, busy, busy / float(system.nodes), queued, running])
        # repeated along the rows of a (columns, bins) array: each column is contiguous in memory
        # (as pandas keeps a block), so it reaches Arrow / parquet without a strided copy
        rep = np.repeat(block, binner.per_piece, axis=1)
        return pd.DataFrame({"time": binner.bin_start, **dict(zip(TIMELINE_COLUMNS[1:], rep))}, copy=False)
    # the float columns are written straight into one (columns, bins) array, the block pandas
    # keeps them in (row k = TIMELINE_COLUMNS[k + 1]), instead of separate arrays that the
    # DataFrame constructor then copies into it
    block = np.empty((len(TIMELINE_COLUMNS) - 1, binner.nbins), dtype="float64")
    it, loss, fac, busy, util, queued, running = block
    if binner.nbins:
        for out, c in zip((busy, it, queued, running), cols):
            binner.means(c[i0:i0 + len(starts)], out=out)
    fac[:], loss[:] = convert(system, it)
    np.divide(busy, float(system.nodes), out=util)
    frame = pd.DataFrame(block.T, columns=list(TIMELINE_COLUMNS[1:]), copy=False)
    frame.insert(0, "time", np.asarray(binner.bin_start, dtype="int64"))
    return frame
