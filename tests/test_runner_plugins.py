"""A worker that lacks the driver's plug-ins fails its runs, naming what it lacks (sweep/runner.py).

A metric plug-in registered in the driver only (``register_metric`` in a notebook or script) is
not computed by pool, Ray or Slurm workers: before, such a sweep completed every run without the
metric and the report ranked by a metric no run had, silently."""

from __future__ import annotations

import dataclasses

import pytest

from twinsweep.core.errors import PluginError
from twinsweep.core.metrics import METRICS, Metric, register_metric
from twinsweep.sweep.api import plan_sweep
from twinsweep.sweep.runner import execute_run, make_payload
from twinsweep.sweep.spec import load_spec

from test_sweep_support import write_spec

_DRIVER_ONLY = Metric("driver_only_metric", "1", "min", "driver-only metric", "", compute=lambda m: 1.0)


def _first_item(tmp_path):
    spec = load_spec(write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none",), n_jobs=10))
    _, datasets, items = plan_sweep(spec)
    ds = datasets[items[0].dataset]
    return items[0], (ds.workload, ds.system)  # the workload and system the sweep shares with its workers


def test_a_worker_without_the_drivers_metric_fails_the_run_naming_it(tmp_path):
    register_metric(_DRIVER_ONLY)
    try:  # the driver: the metric is registered when the run is planned
        item, shared = _first_item(tmp_path)
        payload = make_payload(item, tmp_path / "runs")
    finally:
        METRICS.unregister(_DRIVER_ONLY.name)
    # the worker: a process without it
    with pytest.raises(PluginError, match=r"'driver_only_metric' are not registered in this worker.*entry point"):
        execute_run(payload, shared)
    assert not (tmp_path / "runs" / item.key).exists()


def test_a_worker_with_other_plugin_code_fails_the_run(tmp_path):
    item, shared = _first_item(tmp_path)
    payload = make_payload(item, tmp_path / "runs")
    register_metric(dataclasses.replace(_DRIVER_ONLY, name="worker_only_metric"))
    try:
        with pytest.raises(PluginError, match=r"plug-ins differ between the driver and this worker.*worker_only_metric"):
            execute_run(payload, shared)
    finally:
        METRICS.unregister("worker_only_metric")
    assert not (tmp_path / "runs" / item.key).exists()


def test_the_same_plugins_run_and_write(tmp_path):
    item, shared = _first_item(tmp_path)
    assert execute_run(make_payload(item, tmp_path / "runs"), shared)["status"] == "written"
    assert (tmp_path / "runs" / item.key).is_dir()
