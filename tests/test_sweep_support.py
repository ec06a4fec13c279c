"""Helpers shared by the sweep/backend/report tests (tiny SWF traces and study specs).

Also importable from subprocesses started by the tests (they put this folder on PYTHONPATH).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np


def write_swf(path: Path, n_jobs: int = 40, nodes: int = 16, seed: int = 1, span_s: int = 3600) -> Path:
    """Write a small valid SWF trace with queueing (jobs of 1..nodes nodes, run 60..1800 s)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, span_s, n_jobs))
    lines = ["; Version: 2.2", "; UnixStartTime: 1000000000", f"; MaxNodes: {nodes}", f"; MaxProcs: {nodes}",
             "; Installation: twinsweep test cluster", "; Acknowledge: the twinsweep tests"]
    for i in range(n_jobs):
        run = int(rng.integers(60, 1800))
        req = int(run * rng.uniform(1.0, 3.0))
        procs = int(rng.integers(1, nodes + 1))
        lines.append(f"{i + 1} {submit[i]} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {1 + i % 4} 1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_spec(tmp: Path, name: str = "tiny", seeds: int = 3, backend: str = "local", extra: str = "",
               policies=("fcfs", "sjf"), backfills=("none", "easy"), n_jobs: int = 40, retries: int = 1,
               windows: str | None = None, trace: Path | None = None) -> Path:
    """Write a trace + study spec into ``tmp``; returns the spec path (output: tmp/out).

    ``trace``: use this (absolute) trace instead of writing ``tmp/tiny.swf``.
    """
    if trace is None:
        write_swf(tmp / "tiny.swf", n_jobs=n_jobs)
    win = f"windows = {windows}\n" if windows else ""
    spec = f"""
[study]
name = "{name}"
output = "{tmp / 'out'}"
seeds = {seeds}
retries = {retries}

[perturbation]
runtime_sigma = 0.3
submit_jitter = "30s"

[[datasets]]
name = "tiny"
trace = "{trace if trace is not None else 'tiny.swf'}"
{win}
[grid]
policy = {list(policies)!r}
backfill = {list(backfills)!r}
sample_period = ["60s"]

[backend]
name = "{backend}"

[report]
bootstrap = 200
{extra}
""".replace("'", '"')
    p = tmp / "spec.toml"
    p.write_text(spec)
    return p


def slow_run(payload, shared):
    """A run function that sleeps before the real run (so a test can kill a sweep midway)."""
    from twinsweep.sweep.runner import execute_run

    time.sleep(float(os.environ.get("TWINSWEEP_TEST_SLEEP", "0.3")))
    return execute_run(payload, shared)


def _count_attempt(payload) -> int:
    """Count this attempt of the payload's run in ``<out>/attempts/<key>``; returns its number (1 first)."""
    marker = Path(payload["runs_dir"]).parent / "attempts" / payload["key"]
    marker.parent.mkdir(exist_ok=True)
    n = int(marker.read_text()) + 1 if marker.exists() else 1
    marker.write_text(str(n))
    return n


def flaky_run(payload, shared):
    """Fails the first attempt of every run whose seed is 1; always fails policy sjf + seed 2."""
    from twinsweep.sweep.runner import execute_run

    sw = payload["sweep"]
    n = _count_attempt(payload)
    if sw["seed"] == 2 and sw["axes"].get("policy") == "sjf":
        raise RuntimeError(f"injected permanent failure of {payload['key']}")
    if sw["seed"] == 1 and n == 1:
        raise RuntimeError(f"injected transient failure of {payload['key']}")
    return execute_run(payload, shared)


def _sjf_raises(payload, shared, error):
    """Counts its attempts like :func:`flaky_run`; policy sjf raises ``error(key)``, the others run."""
    from twinsweep.sweep.runner import execute_run

    _count_attempt(payload)
    if payload["sweep"]["axes"].get("policy") == "sjf":
        raise error(payload["key"])
    return execute_run(payload, shared)


def input_error_run(payload, shared):
    """Counts its attempts like :func:`flaky_run`; policy sjf raises a ConfigError (an error of the
    run's inputs: the same at every attempt), the others run."""
    from twinsweep.core.errors import ConfigError

    return _sjf_raises(payload, shared, lambda key: ConfigError(f"injected input error of {key}"))


def plugin_error_run(payload, shared):
    """As :func:`input_error_run`, but policy sjf raises a plug-in's own subclass of PluginError
    whose message names no error class."""
    from twinsweep.core.errors import PluginError

    class PolicyKeyBroken(PluginError):
        """A plug-in's own subclass of an input error."""

    return _sjf_raises(payload, shared, lambda key: PolicyKeyBroken(f"policy 'sjf' of {key}: job 3's key is NaN"))


def run_files(root: Path) -> dict[str, bytes]:
    """``{"<key>/<file>": bytes}`` of every run folder's deterministic files (not timing.json)."""
    out = {}
    for d in sorted((root / "runs").iterdir()):
        for f in ("jobs.parquet", "timeline.parquet", "stats.json", "manifest.json", "sweep.json"):
            out[f"{d.name}/{f}"] = (d / f).read_bytes()
    return out


def interrupting_run(payload, shared):
    """Runs normally until two runs are complete, then behaves like Ctrl-C (KeyboardInterrupt)."""
    from twinsweep.sweep.runner import execute_run

    runs = Path(payload["runs_dir"])
    if runs.exists() and len([p for p in runs.iterdir() if not p.name.startswith(".")]) >= 2:
        raise KeyboardInterrupt
    return execute_run(payload, shared)
