"""The run function the sweep hands to its backend: simulate one grid point and commit its folder.

It runs on the workers (a Ray actor, a pool process or in-process), writes ``runs/<key>/``
itself (atomically, see :func:`sweep.store.commit_run_dir`) and returns only a small summary, so
the driver never holds run outputs. When the workers cannot see the driver's results folder (a
Ray cluster without a shared filesystem), the payload asks to *ship* the files instead: the run
is written to a temporary folder on the worker and its files come back in the result, for the
driver to commit (:func:`commit_shipped`).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from twinsweep.core.atomic import atomic_write_bytes, atomic_write_text
from twinsweep.core.config import RunConfig

from .store import SWEEP_JSON, commit_run_dir, dump_json, run_is_committed
from twinsweep.core.atomic import atomic_write_bytes


def make_payload(item, runs_dir: str | Path, ship: bool = False) -> dict[str, Any]:
    """The picklable payload of one :class:`sweep.expand.RunItem` for :func:`execute_run`.

    ``runs_dir`` is made absolute here (a worker resolves a relative path against its own working
    directory); ``ship``: return the run's files instead of writing them into ``runs_dir``."""
    return {
        "key": item.key,
        "config": item.config,
        "runs_dir": str(Path(runs_dir).absolute()),
        "ship": bool(ship),
        "sweep": {"key": item.key, "dataset": item.dataset, "window": item.window, "seed": item.seed,
                  "axes": {k: v for k, v in item.axes}, "workload_checksum": item.checksum,
                  "config": item.config.to_dict(), "schema_version": 1},
    }


def execute_run(payload: dict[str, Any], shared: Any) -> dict[str, Any]:
    """Simulate ``payload["config"]`` on the preloaded ``shared = (workload, system)`` and write
    ``runs/<key>/`` (jobs.parquet, timeline.parquet, stats.json, manifest.json, sweep.json).

    Returns ``{"key", "status": "written"|"exists", "sim_s"}`` (sim_s: seconds in simulate); with
    ``payload["ship"]`` nothing is written into ``runs_dir``: ``{"key", "status": "shipped",
    "sim_s", "files": {name: bytes}}``. Exceptions of the twin propagate (the backend records them
    as a failed run).
    """
    from twinsweep.core.run import simulate, write_run

    runs_dir = Path(payload["runs_dir"])
    key = payload["key"]
    ship = bool(payload.get("ship"))
    if not ship and run_is_committed(runs_dir, key):
        return {"key": key, "status": "exists", "sim_s": 0.0}
    cfg: RunConfig = payload["config"]
    workload, system = shared if shared is not None else (None, None)
    t0 = time.perf_counter()
    result = simulate(cfg, workload=workload, system=system)
    sim_s = time.perf_counter() - t0

    def write(tmp: Path, staged: bool = True) -> None:  # staged: commit_run_dir flushes and renames the folder
        write_run(result, tmp, staged=staged)
        atomic_write_text(tmp / SWEEP_JSON, dump_json(payload["sweep"]), staged=staged)

    if ship:
        with tempfile.TemporaryDirectory(prefix="twinsweep-ship-") as tmp:  # read back at once: nothing to flush
            write(Path(tmp))
            files = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.is_file()}
        return {"key": key, "status": "shipped", "sim_s": sim_s, "files": files}
    status = commit_run_dir(runs_dir, key, write)
    return {"key": key, "status": status, "sim_s": sim_s}


def commit_shipped(runs_dir: str | Path, result: dict[str, Any]) -> str:
    """Commit the files a worker shipped back (:func:`execute_run` with ``ship``) as
    ``runs/<key>/``, atomically; returns ``"written"`` or ``"exists"``."""
    def write(tmp: Path) -> None:
        for name, data in result["files"].items():
            if "/" in name or name.startswith("."):
                raise ValueError(f"shipped run {result['key']}: bad file name {name!r}")
            atomic_write_bytes(tmp / name, data, staged=True)  # commit_run_dir flushes and renames the folder

    return commit_run_dir(runs_dir, result["key"], write)
