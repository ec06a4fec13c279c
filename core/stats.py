"""Run metrics: stats.json (DESIGN.md §5, docs/architecture.md "stats.json").

Definitions (standard names; every time in s, power in W, energy in J):

Job set. Job metrics use the *finished* jobs: ``status`` in ``{"completed", "timeout"}`` with
both ``start_time`` and ``end_time`` known (the started-and-ended set). The wait, slowdown and
response metrics below (``wait_*``, ``turnaround_mean_s``, ``slowdown_mean``, ``bsld_mean``,
``awrt_s``, ``awwt_s``: :attr:`core.metrics.Metric.finished_only`) leave out the *prepopulated*
jobs (running at the window start, placed at their recorded start: the same in every variant, their
waits the log's), so that a variant finishing few jobs of its own does not rank on the log's waits;
``throughput_jobs_per_h``, ``makespan_s``, the job energy sums and the per-user / per-account sums
count them (work done in the window). For each:
``run = end_time − start_time``, ``wait = start_time − submit_time``,
``turnaround = wait + run``; a job queued at the window start (from the log's state there) counts
with its whole wait since ``submit_time``, part of it before the window.

* ``wait_mean_s`` / ``wait_median_s`` / ``wait_p95_s`` / ``wait_max_s``: of ``wait``
  (percentiles by ``numpy.percentile``, default linear method).
* ``turnaround_mean_s``: mean of ``wait + run``.
* ``slowdown_mean``: mean of ``(wait + run) / run`` over finished jobs with ``run > 0``
  (the plain slowdown is undefined for zero-length jobs, which are left out of this mean only).
* ``bsld_mean``: mean bounded slowdown with τ = 10 s, ``max(1, (wait + run) / max(run, τ))``
  (Feitelson, Rudolph, Schwiegelshohn, Sevcik, Wong, "Theory and practice in parallel job
  scheduling", JSSPP 1997; Feitelson, "Metrics for parallel job scheduling and their
  convergence", JSSPP 2001). Over all finished jobs.
* ``awrt_s`` = Σ nodes·run·(wait + run) / Σ nodes·run and ``awwt_s`` = Σ nodes·run·wait /
  Σ nodes·run: average weighted response / wait time, weighted by the resource consumption
  nodes × run time (Schwiegelshohn & Yahyapour, "Fairness in parallel job scheduling",
  J. Scheduling 2000; Grimme et al. 2008). None when Σ nodes·run = 0.
* ``utilization`` = ∫ busy_nodes dt / (N · (t1 − t0)) over the window, from the engine's steps.
* ``wait_censored_mean_s``: mean wait over every job queued in the run (started ones, prepopulated
  excluded, with their wait; still-queued ones with ``t1 − submit``, a lower bound), so that a policy
  that leaves jobs waiting at a window's end is not rewarded as finished-job means would;
  ``wait_censored_max_s``: the longest of those waits (a job starved until the window end counts).
* ``makespan_s`` = (latest ``end_time`` of a finished job) − t0; None when no job finished.
* ``throughput_jobs_per_h`` = finished jobs / ((t1 − t0) / 3600 s).
* ``it_energy_j`` = ∫ it_power_w dt over [t0, t1) (exact integral of the step function);
  ``loss_energy_j`` = ∫ loss dt (conversion losses, :func:`core.power.convert`; exact because the
  loss is affine in the IT power); ``facility_energy_j`` = it + loss.
* ``facility_j_per_node_h`` = facility_energy_j / (∫ busy_nodes dt / 3600 s): facility energy per
  node-hour delivered in the window (None when no node was busy). Energy per unit of work: over a
  fixed window, facility_energy_j falls when a policy leaves nodes idle (idle nodes draw less power
  and deliver nothing), so ranking it rewards idling; per node-hour delivered it does not.
* ``mean_power_w`` = facility_energy_j / (t1 − t0); ``peak_power_w`` = maximum of the facility
  power step function over the window (over the pieces that intersect [t0, t1)), not of bin means.
* ``edp_js`` = facility_energy_j · makespan_s, ``ed2p_js2`` = facility_energy_j · makespan_s²
  (None when makespan is None).
* ``job_edp_sum_js`` = Σ energy_j · run and ``job_ed2p_sum_js2`` = Σ energy_j · run² over finished
  jobs, where ``energy_j`` is the job's own (DC, node-level) energy from the engine; conversion
  losses are a system quantity and are not attributed to jobs. Jobs with unknown energy add 0.
* ``ramp_1min_*`` / ``ramp_15min_*``: :func:`core.power.ramps` of the facility power over 60 s
  and 900 s windows (largest and p95 absolute change of consecutive exact window averages; full
  windows only; 0.0 when the window holds fewer than two).

Cooling (only with a ``cooling`` timeline, i.e. a run with cooling on; otherwise these keys are
None). The cooling power is constant over each of the cooling model's pieces (core/cooling/: cut at
every change of the IT power and every sample start; timeline.parquet's ``cooling_power_w`` is the
sample mean of its pieces), so the facility power ``it + loss + cooling`` is again a step function
(change points: the engine's and the sample starts); ``facility_energy_j``, ``mean_power_w``,
``peak_power_w``, the ramps and the EDPs then use it, exactly, and do not depend on the sample period
(with a sample period above 60 s the ramps cannot be recomputed from the timeline's bin means):

* ``cooling_energy_j`` = Σ cooling_power_w · sample length; added into ``facility_energy_j``.
* ``pue_avg`` = facility_energy_j / IT equipment energy: the energy-weighted PUE of the window (The
  Green Grid's PUE over a period), with the IT equipment's input power of
  :func:`core.power.it_equipment_power` — the nodes with their converters and the switches, the
  rectifiers too when they are in the IT cabinets (``[power] it_meter``); a room UPS's losses and
  the CDUs' power are facility overhead, as the cooling plant's.
* ``supply_temp_*``, ``return_temp_*`` (secondary loop) and ``tower_return_temp_*`` (water back to
  the cooling towers): ``_mean_c`` the exact time-average over the window, ``_max_c`` and
  ``_swing_c`` (= max − min) of the instantaneous temperature at the edges of the model's
  integration pieces (every change point of the IT power and every sample start). The secondary
  return responds monotonically within a piece, so its extremes are exact; for the tower return
  (a third-order response) they are the extremes at those instants. None of these depend on the
  sample period beyond the extra sample-start instants (°C / K).

Per-user and per-account (``users`` / ``accounts``), over finished jobs only (a user none of whose
jobs finished does not appear): ``jobs`` (count), ``node_seconds`` (Σ nodes·run), ``energy_j`` (Σ
job energy_j), ``edp_js`` (Σ energy_j·run) over all of them, prepopulated ones included (work done
in the window); ``wait_mean_s``, ``bsld_mean`` over those not running at the window start, as the
system's (None when every finished job of the entry was running at the start; until 2026-12-07
they counted those jobs, whose waits are the log's).
A missing user/account is keyed ``"unknown"``; keys are strings.

Plug-in metrics registered in the catalogue (:mod:`twinsweep.core.metrics`, entry-point group
``twinsweep.metrics``) are computed last, each from :class:`~twinsweep.core.metrics.MetricInputs`,
and written into ``system`` beside the built-ins.

Output is JSON-ready: plain Python int/float/str/None (no NaN: undefined means are None), every
dict with sorted keys, deterministic for the same inputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from . import metrics as _metrics
from . import power as _power
from .registry import PASSED_THROUGH, plugin_raised
from .system import System

__all__ = ["compute_stats", "bounded_slowdown", "censored_waits", "SCHEMA_VERSION", "COUNT_KEYS", "SYSTEM_KEYS", "GROUP_KEYS",
           "BSLD_TAU_S", "COOLING_KEYS"]

SCHEMA_VERSION = 1
#: Bounded-slowdown threshold τ (s).
BSLD_TAU_S = 10

#: Keys of ``counts`` (docs/architecture.md); any other key passed in ``counts`` is kept too.
COUNT_KEYS = (
    "jobs_in_window", "jobs_started", "completed", "timeout", "rejected", "not_run",
    "still_queued", "still_queued_node_s", "still_running", "prepopulated", "time_limit_imputed",
    "lenient_skipped_lines", "replay_delayed", "replay_start_imputed",
    "placement_fallbacks", "reservation_delays", "running_when_recorded", "elapsed_mismatch",
)
#: Keys computed here from the jobs table (they override the same keys in ``counts``).
_JOB_COUNT_KEYS = (
    "jobs_in_window", "jobs_started", "completed", "timeout", "rejected", "not_run",
    "still_queued", "still_queued_node_s", "still_running", "prepopulated", "time_limit_imputed",
    "running_when_recorded",
)
#: Keys of ``system``: the built-in metrics of the catalogue (:mod:`twinsweep.core.metrics`), in its
#: order; registered plug-in metrics are added after them.
SYSTEM_KEYS = _metrics.builtin_names()
#: The keys above that only a run with cooling fills.
COOLING_KEYS = tuple(k for k in SYSTEM_KEYS if _metrics.metric(k).cooling)
GROUP_KEYS = ("jobs", "wait_mean_s", "bsld_mean", "node_seconds", "energy_j", "edp_js")

FINISHED = ("completed", "timeout")


def _f(x) -> float | None:
    """Plain float, or None for NaN/inf/None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _mean(a: np.ndarray) -> float | None:
    return _f(a.mean()) if len(a) else None


def _num(df: pd.DataFrame, col: str) -> np.ndarray:
    """float64 values of ``df[col]`` (NaN for missing / non-numeric; all NaN without the column)."""
    if col not in df.columns:
        return np.full(len(df), np.nan)
    s = df[col]
    if pd.api.types.is_numeric_dtype(s.dtype):  # numpy or masked numbers: no parsing needed (same values)
        return s.to_numpy(dtype="float64", na_value=np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def _bool_count(df: pd.DataFrame, col: str) -> int:
    if col not in df.columns:
        return 0
    s = df[col]
    if s.dtype == bool:
        return int(np.count_nonzero(s.to_numpy()))
    return int(s.fillna(False).astype(bool).sum())


def _keys(df: pd.DataFrame, col: str, rows: np.ndarray | None = None) -> list[str]:
    """Group keys of ``df[col]`` (``rows``: a bool mask of the rows wanted, default all): ``str(v)``,
    ``"unknown"`` for a missing value or a missing column."""
    if col not in df.columns:
        return ["unknown"] * (len(df) if rows is None else int(np.count_nonzero(rows)))
    vals = df[col].to_numpy(dtype=object)
    if rows is not None:
        vals = vals[rows]
    return ["unknown" if (v is None or (not isinstance(v, str) and pd.isna(v))) else str(v) for v in vals]


def _status(jobs: pd.DataFrame) -> np.ndarray:
    """``status`` as an object array of str (``""`` where missing or not a string)."""
    if "status" not in jobs.columns:
        return np.full(len(jobs), "", dtype=object)
    s = jobs["status"]
    if isinstance(s.dtype, pd.StringDtype):  # every value is a str or missing
        return s.to_numpy(dtype=object, na_value="")
    return np.array([v if isinstance(v, str) else "" for v in s], dtype=object)


def _prepopulated(jobs: pd.DataFrame) -> np.ndarray:
    """The ``prepopulated`` column as a bool array (missing values and a missing column: False)."""
    if "prepopulated" not in jobs.columns:
        return np.zeros(len(jobs), bool)
    return jobs["prepopulated"].fillna(False).to_numpy(dtype=bool)


def bounded_slowdown(wait, run) -> np.ndarray:
    """Bounded slowdown of each job: ``max(1, (wait + run) / max(run, τ))`` with τ =
    :data:`BSLD_TAU_S` = 10 s (Feitelson, Rudolph, Schwiegelshohn, Sevcik, Wong, "Theory and
    practice in parallel job scheduling", JSSPP 1997; Feitelson, "Metrics for parallel job
    scheduling and their convergence", JSSPP 2001).

    Args:
        wait, run: the jobs' waits and run times in s (array-likes of one shape, or
            broadcastable; a scalar is a one-job array). A run time shorter than τ, zero
            included, is taken as τ, so a zero-length job is defined; NaN in either gives NaN.
            Which jobs to pass (finished ones, the window's own ones …) is the caller's choice.

    Returns:
        float64 array of the broadcast shape, every finite value ≥ 1 (dimensionless).
    """
    wait = np.asarray(wait, dtype="float64")
    run = np.asarray(run, dtype="float64")
    return np.maximum(1.0, (wait + run) / np.maximum(run, float(BSLD_TAU_S)))


def censored_waits(jobs: pd.DataFrame, t1: int | float | None) -> np.ndarray:
    """Right-censored wait of each job of a run's jobs table, the rule of ``wait_censored_mean_s``
    (module doc): every job that queued in the run counts, a job still waiting at the window end
    with its wait so far.

    * a job that started (``start_time`` known) and was not running at the window start:
      ``start_time − submit_time``;
    * a job still queued at the window end (``status == "queued"``, not started):
      ``t1 − submit_time``, a lower bound of its wait;
    * every other job is NaN, not counted: jobs running at the window start (``prepopulated``:
      placed at their recorded start, their waits the log's, the same in every variant), rejected
      and never-run jobs, and the still-queued ones when ``t1`` is None (a window end not known,
      e.g. a manifest of an older results folder).

    Args:
        jobs: a run's jobs (jobs.parquet / ``EngineResult.jobs``): ``submit_time``, ``start_time``
            (s since the trace epoch, nullable), ``status``; an optional bool ``prepopulated``
            (missing values and a missing column: not prepopulated).
        t1: the window end (s since the trace epoch), or None.

    Returns:
        float64 array of ``len(jobs)`` waits in s, in row order, NaN where not counted (the count
        of finite values is the number of jobs that queued in the run).
    """
    return _censored(_num(jobs, "start_time"), _num(jobs, "submit_time"), _status(jobs), _prepopulated(jobs), t1)


def _censored(start: np.ndarray, submit: np.ndarray, status: np.ndarray, pre: np.ndarray,
              t1: int | float | None) -> np.ndarray:
    """:func:`censored_waits` on the columns already read (float start and submit times, the
    status strings, the prepopulated mask), as :func:`compute_stats` holds them."""
    started = np.isfinite(start) & ~pre
    out = np.full(len(start), np.nan)
    out[started] = (start - submit)[started]
    if t1 is not None:
        queued = (status == "queued") & ~np.isfinite(start)
        out[queued] = (float(t1) - submit)[queued]
    return out


def _with_cooling(times, fac_steps, cooling: pd.DataFrame, t0: int, t1: int):
    """Facility step function with the piecewise-constant cooling power added, and the cooling stats."""
    ct = cooling["time"].to_numpy(dtype="int64")
    if len(ct) == 0 or ct[0] != t0 or not np.all(np.diff(ct) > 0) or ct[-1] >= t1:
        raise ValueError("compute_stats: cooling pieces must start at t0 with ascending starts before t1")
    cp = cooling["cooling_power_w"].to_numpy(dtype="float64")
    seg_t, seg_v = _power.step_segments(times, fac_steps, t0, t1)
    tt = np.union1d(seg_t, ct)
    vals = seg_v[np.searchsorted(seg_t, tt, side="right") - 1] + cp[np.searchsorted(ct, tt, side="right") - 1]
    lengths = (np.append(ct[1:], t1) - ct).astype("float64")
    out: dict[str, Any] = {"cooling_energy_j": _f((cp * lengths).sum()), "pue_avg": None}
    for name in ("supply_temp", "return_temp", "tower_return_temp"):
        col = f"{name}_c"
        v = cooling[col].to_numpy(dtype="float64") if col in cooling.columns else np.full(len(ct), np.nan)
        # extremes: instantaneous values at the piece edges when given (else the piece means)
        ext = [cooling[c].to_numpy(dtype="float64") for c in (f"{name}_start_c", f"{name}_end_c")
               if c in cooling.columns] or [v]
        ext = np.concatenate(ext)
        ext = ext[np.isfinite(ext)]
        ok = np.isfinite(v)
        if ok.any() and len(ext):
            out[f"{name}_mean_c"] = _f((v[ok] * lengths[ok]).sum() / lengths[ok].sum())
            out[f"{name}_max_c"] = _f(ext.max())
            out[f"{name}_swing_c"] = _f(ext.max() - ext.min())
        else:
            out[f"{name}_mean_c"] = out[f"{name}_max_c"] = out[f"{name}_swing_c"] = None
    return tt, vals, out


def _requested_node_s(jobs: pd.DataFrame, mask: np.ndarray) -> int:
    """Σ nodes × time_limit (s) over the jobs of ``mask``: the node-seconds they requested; a job
    without a known limit or node count adds 0 (the engine imputes limits, ``time_limit_imputed``)."""
    if not mask.any() or "time_limit" not in jobs.columns:
        return 0
    req = _num(jobs, "nodes")[mask] * _num(jobs, "time_limit")[mask]
    return int(np.nansum(req))


def compute_stats(
    jobs: pd.DataFrame, steps: pd.DataFrame, system: System, t0: int, t1: int, counts: dict | None = None,
    cooling: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """stats.json of one run (structure in docs/architecture.md; definitions in the module doc).

    Args:
        jobs: ``EngineResult.jobs`` (needs ``status``, ``submit_time``, ``start_time``,
            ``end_time``, ``nodes``, ``energy_j``, ``user``, ``account``; ``prepopulated`` and
            ``time_limit_imputed`` bool columns are counted when present).
        steps: ``EngineResult.steps`` (``time``, ``busy_nodes``, ``it_power_w`` …), first time ≤ t0.
        system: the machine (node count, converters, power label).
        t0, t1: the window ``[t0, t1)`` in s, ``t1 > t0``.
        counts: engine/loader counters (``lenient_skipped_lines``, ``replay_delayed``,
            ``replay_start_imputed``, ``placement_fallbacks``, ``reservation_delays``, …);
            missing keys of :data:`COUNT_KEYS` are 0; keys computed from ``jobs`` override them.
        cooling: the cooling model's pieces (:func:`core.cooling.apply_cooling`: ``time`` = piece
            starts from t0, the last ending at t1; ``cooling_power_w`` constant per piece,
            ``supply_temp_c``, ``return_temp_c``, ``tower_return_temp_c`` piece means, optional
            ``*_start_c`` / ``*_end_c`` edge values), or None for a run without cooling.

    Returns:
        ``{"schema_version", "power_label", "counts", "system", "users", "accounts"}`` with
        sorted keys and only JSON-native values.

    Raises:
        ValueError: ``t1 <= t0``, or bad ``steps`` (as :func:`core.power.bin_step`).
    """
    t0, t1 = int(t0), int(t1)
    if t1 <= t0:
        raise ValueError(f"compute_stats: window must have t1 > t0, got [{t0}, {t1})")
    span = float(t1 - t0)
    status = _status(jobs)

    # ---------------------------------------------------------------- counts
    c: dict[str, Any] = {k: 0 for k in COUNT_KEYS}
    for k, v in (counts or {}).items():
        if isinstance(v, (bool, int, np.integer)):
            v = int(v)
        elif isinstance(v, (float, np.floating)):
            v = _f(v)
        c[str(k)] = v
    start = _num(jobs, "start_time")
    end = _num(jobs, "end_time")
    computed = {
        "jobs_in_window": len(jobs),
        "jobs_started": int(np.isfinite(start).sum()),
        "completed": int((status == "completed").sum()),
        "timeout": int((status == "timeout").sum()),
        "rejected": int((status == "rejected").sum()),
        "not_run": int((status == "not_run").sum()),
        "still_queued": int((status == "queued").sum()),
        # the work left in the queue as the scheduler saw it: nodes x time limit (requested node-s)
        "still_queued_node_s": _requested_node_s(jobs, status == "queued"),
        "still_running": int((status == "running").sum()),
        "prepopulated": _bool_count(jobs, "prepopulated"),
        "time_limit_imputed": _bool_count(jobs, "time_limit_imputed"),
        # jobs of the window still running when the trace was recorded (core/workload.py)
        "running_when_recorded": int((jobs["trace_status"] == "running").sum()) if "trace_status" in jobs.columns else 0,
    }
    c.update(computed)
    counts_out = {k: c[k] for k in sorted(c)}

    # ---------------------------------------------------------------- finished-job metrics
    fin = np.isin(status, FINISHED) & np.isfinite(start) & np.isfinite(end)
    run = (end - start)[fin]
    submit_all = _num(jobs, "submit_time")
    wait = (start - submit_all)[fin]
    nodes = _num(jobs, "nodes")[fin]
    nodes = np.where(np.isfinite(nodes), nodes, 0.0)
    energy = _num(jobs, "energy_j")[fin]
    energy0 = np.where(np.isfinite(energy), energy, 0.0)
    n_fin = int(fin.sum())

    # the policy's own finished jobs: those running at the window start (prepopulated, placed at
    # their recorded start) are the same in every variant and their waits the log's, so the wait,
    # slowdown and response metrics leave them out; throughput, makespan and the energy sums count them
    pre = _prepopulated(jobs)
    own = ~pre[fin]
    o_wait, o_run = wait[own], run[own]
    n_own = int(own.sum())
    bsld = bounded_slowdown(wait, run)
    pos = o_run > 0
    sld = (o_wait[pos] + o_run[pos]) / o_run[pos]
    w = nodes * run
    o_w = w[own]
    o_wsum = float(o_w.sum())

    sysm: dict[str, Any] = {
        "wait_mean_s": _mean(o_wait),
        "wait_median_s": _f(np.median(o_wait)) if n_own else None,
        "wait_p95_s": _f(np.percentile(o_wait, 95)) if n_own else None,
        "wait_max_s": _f(o_wait.max()) if n_own else None,
        "turnaround_mean_s": _mean(o_wait + o_run),
        "slowdown_mean": _mean(sld),
        "bsld_mean": _mean(bsld[own]),
        "awrt_s": _f((o_w * (o_wait + o_run)).sum() / o_wsum) if o_wsum > 0 else None,
        "awwt_s": _f((o_w * o_wait).sum() / o_wsum) if o_wsum > 0 else None,
        "throughput_jobs_per_h": _f(n_fin / (span / 3600.0)),
        "job_edp_sum_js": _f((energy0 * run).sum()),
        "job_ed2p_sum_js2": _f((energy0 * run * run).sum()),
    }
    # right-censored wait: every job that was queued in the run (prepopulated ones excluded), a job
    # still queued at the end counting its wait so far (t1 - submit): a lower bound that does not
    # reward a policy for leaving jobs in the queue, as finished-job means do on a window.
    cw = _censored(start, submit_all, status, pre, t1)  # censored_waits on the columns read above
    cw = cw[np.isfinite(cw)]
    sysm["wait_censored_mean_s"] = _mean(cw)
    sysm["wait_censored_max_s"] = _f(cw.max()) if len(cw) else None
    makespan = float(end[fin].max() - t0) if n_fin else None
    sysm["makespan_s"] = _f(makespan)

    # ---------------------------------------------------------------- power / utilisation
    times = steps["time"].to_numpy()
    busy = steps["busy_nodes"].to_numpy(dtype="float64", na_value=np.nan)
    it = steps["it_power_w"].to_numpy(dtype="float64", na_value=np.nan)
    busy_int, it_energy = _power.integrate_step(times, np.column_stack([busy, it]), t0, t1)
    _, loss_mean = _power.convert(system, it_energy / span)
    loss_energy = loss_mean * span
    fac_energy = it_energy + loss_energy
    fac_steps, _ = _power.convert(system, it)
    cool = {k: None for k in COOLING_KEYS}
    if cooling is not None and len(cooling):
        times, fac_steps, cool = _with_cooling(times, fac_steps, cooling, t0, t1)
        fac_energy += cool["cooling_energy_j"]
        it_equipment = _power.it_equipment_power(system, it_energy / span) * span  # affine: exact on the mean
        cool["pue_avg"] = _f(fac_energy / it_equipment) if it_equipment > 0 else None
    _, seg_fac = _power.step_segments(times, fac_steps, t0, t1)
    r1 = _power.ramps(times, fac_steps, t0, t1, 60)
    r15 = _power.ramps(times, fac_steps, t0, t1, 900)
    sysm.update(
        {
            "utilization": _f(busy_int / (float(system.nodes) * span)),
            "it_energy_j": _f(it_energy),
            "loss_energy_j": _f(loss_energy),
            "facility_energy_j": _f(fac_energy),
            _metrics.ENERGY_PER_WORK: _f(fac_energy / (busy_int / 3600.0)) if busy_int > 0 else None,
            "mean_power_w": _f(fac_energy / span),
            "peak_power_w": _f(seg_fac.max()) if len(seg_fac) else None,
            "edp_js": _f(fac_energy * makespan) if makespan is not None else None,
            "ed2p_js2": _f(fac_energy * makespan * makespan) if makespan is not None else None,
            "ramp_1min_max_w": _f(r1[0]),
            "ramp_1min_p95_w": _f(r1[1]),
            "ramp_15min_max_w": _f(r15[0]),
            "ramp_15min_p95_w": _f(r15[1]),
            **cool,
        }
    )
    for m in _metrics.plugin_metrics():  # registered / installed plug-in metrics (core/metrics.py)
        try:
            sysm[m.name] = _f(m.compute(_metrics.MetricInputs(jobs, steps, system, t0, t1, dict(sysm))))
        except PASSED_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - name the plug-in that failed
            raise plugin_raised(f"metric {m.name!r}", "compute", exc) from exc
    system_out = {k: sysm[k] for k in sorted(sysm)}

    # ---------------------------------------------------------------- per user / account
    def groups(col: str) -> dict[str, dict[str, Any]]:
        keys = np.asarray(_keys(jobs, col, fin), dtype=object)
        if len(keys) == 0:
            return {}
        names, inv = np.unique(keys.astype(str), return_inverse=True)  # sorted names
        k = len(names)
        cnt = np.bincount(inv, minlength=k)
        # waits and slowdowns of the group's own jobs (not those running at the window start, whose
        # waits are the log's), as the system's wait_mean_s / bsld_mean; counts and sums keep them
        n_own_g = np.bincount(inv, weights=own.astype("float64"), minlength=k)
        s_wait = np.bincount(inv, weights=np.where(own, wait, 0.0), minlength=k)
        s_bsld = np.bincount(inv, weights=np.where(own, bsld, 0.0), minlength=k)
        s_ns = np.bincount(inv, weights=w, minlength=k)
        s_e = np.bincount(inv, weights=energy0, minlength=k)
        s_edp = np.bincount(inv, weights=energy0 * run, minlength=k)
        return {
            str(names[g]): {
                "bsld_mean": _f(s_bsld[g] / n_own_g[g]) if n_own_g[g] > 0 else None,
                "edp_js": _f(s_edp[g]),
                "energy_j": _f(s_e[g]),
                "jobs": int(cnt[g]),
                "node_seconds": int(round(float(s_ns[g]))),
                "wait_mean_s": _f(s_wait[g] / n_own_g[g]) if n_own_g[g] > 0 else None,
            }
            for g in range(k)
        }

    return {
        "accounts": groups("account"),
        "counts": counts_out,
        "power_label": system.power_label,
        "schema_version": SCHEMA_VERSION,
        "system": system_out,
        "users": groups("user"),
    }
