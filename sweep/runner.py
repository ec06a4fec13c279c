"""The run function the sweep hands to its backend: simulate one grid point and commit its folder.

It runs on the workers (a Ray actor, a pool process or in-process), writes ``runs/<key>/``
itself (atomically, see :func:`sweep.store.commit_run_dir`) and returns only a small summary, so
the driver never holds run outputs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from twinsweep.core.config import RunConfig

from .store import SWEEP_JSON, commit_run_dir, dump_json


def make_payload(item, runs_dir: str | Path) -> dict[str, Any]:
    """The picklable payload of one :class:`sweep.expand.RunItem` for :func:`execute_run`."""
    return {
        "key": item.key,
        "config": item.config,
        "runs_dir": str(runs_dir),
        "sweep": {"key": item.key, "dataset": item.dataset, "window": item.window, "seed": item.seed,
                  "axes": {k: v for k, v in item.axes}, "workload_checksum": item.checksum,
                  "config": item.config.to_dict(), "schema_version": 1},
    }


def execute_run(payload: dict[str, Any], shared: Any) -> dict[str, Any]:
    """Simulate ``payload["config"]`` on the preloaded ``shared = (workload, system)`` and write
    ``runs/<key>/`` (jobs.parquet, timeline.parquet, stats.json, manifest.json, sweep.json).

    Returns ``{"key", "status": "written"|"exists", "sim_s"}`` (sim_s: seconds in simulate).
    Exceptions of the twin propagate (the backend records them as a failed run).
    """
    from twinsweep.core.run import simulate, write_run

    runs_dir = Path(payload["runs_dir"])
    key = payload["key"]
    if (runs_dir / key).exists():
        return {"key": key, "status": "exists", "sim_s": 0.0}
    cfg: RunConfig = payload["config"]
    workload, system = shared if shared is not None else (None, None)
    t0 = time.perf_counter()
    result = simulate(cfg, workload=workload, system=system)
    sim_s = time.perf_counter() - t0

    def write(tmp: Path) -> None:
        write_run(result, tmp)
        (tmp / SWEEP_JSON).write_text(dump_json(payload["sweep"]))

    status = commit_run_dir(runs_dir, key, write)
    return {"key": key, "status": status, "sim_s": sim_s}
