"""Seed-driven workload perturbation for sweeps (DESIGN.md §3.10): seed 0 leaves the trace as is."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from .config import Perturbation
from .workload import Workload


def perturb(workload: Workload, perturbation: Perturbation, seed: int) -> Workload:
    """Return a perturbed copy of ``workload`` (or the workload itself for seed 0 / no noise).

    Run times: ``r' = max(0, round(r · exp(σ·Z)))``, Z ~ N(0, 1) per job (multiplicative
    log-normal noise with median factor 1). Submit times: shifted by an integer drawn uniformly
    from ``[-jitter, +jitter]`` s, clipped at 0; recorded starts move with their submit (waits
    kept) and recorded ends follow the new run time. One draw per row in trace order from
    ``numpy.random.default_rng(seed)``, so the same seed gives the same workload on any machine.
    """
    if seed == 0 or (perturbation.runtime_sigma == 0 and perturbation.submit_jitter_s == 0):
        return workload
    rng = np.random.default_rng(seed)
    jobs = workload.jobs.copy()
    n = len(jobs)
    z = rng.standard_normal(n)
    shift = rng.integers(-perturbation.submit_jitter_s, perturbation.submit_jitter_s + 1, size=n) \
        if perturbation.submit_jitter_s else np.zeros(n, dtype="int64")
    run = jobs["run_time"].astype("float64").to_numpy()
    if perturbation.runtime_sigma:
        run = np.where(np.isnan(run), np.nan, np.maximum(0.0, np.round(run * np.exp(perturbation.runtime_sigma * z))))
    submit = jobs["submit_time"].to_numpy(dtype="int64")
    new_submit = np.maximum(0, submit + shift)
    delta = new_submit - submit
    start = jobs["recorded_start_time"].astype("float64").to_numpy() + delta
    end = start + run

    def to_int(a):
        nan = np.isnan(a)
        return pd.arrays.IntegerArray(np.where(nan, 0, a).astype("int64"), nan)

    jobs["submit_time"] = new_submit.astype("int64")
    jobs["run_time"] = to_int(run)
    jobs["recorded_start_time"] = to_int(start)
    jobs["recorded_end_time"] = to_int(end)
    return dataclasses.replace(workload, jobs=jobs)
