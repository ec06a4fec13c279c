"""What runs inside one array task: a chunk of tasks, each outcome written as JSON as it ends
(package :mod:`backends.slurm`)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
from pathlib import Path
from typing import Any

from ..base import Outcome, RunFn, Task, call_safely
from twinsweep.core.atomic import atomic_write_text


def _outcome_name(key: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_.\-]{1,200}", key) and not key.startswith("."):
        return key + ".json"
    return "h-" + hashlib.sha1(key.encode()).hexdigest() + ".json"


def _write_outcome(oc: Outcome, path: Path) -> None:
    """Write an Outcome as JSON, atomically (a result that is not JSON-ready becomes a failure)."""

    try:
        text = json.dumps(oc.to_json(), sort_keys=True, allow_nan=True)
    except (TypeError, ValueError) as exc:
        bad = Outcome(oc.key, False, error=f"TypeError: the run's result cannot be written as JSON ({exc})",
                      traceback=oc.traceback, wall_s=oc.wall_s, worker=oc.worker)
        text = json.dumps(bad.to_json(), sort_keys=True)
    atomic_write_text(path, text)


class ChunkRunner:
    """What one array task runs: the tasks of one chunk, one after the other, each writing its
    Outcome file. Checkpointable (submitit requeues it on timeout/preemption); a restart skips
    the tasks whose Outcome file exists."""

    def __call__(self, out_dir: str, tasks: list[Task], fn: RunFn, shared_files: dict[str, str]) -> dict:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        job = os.environ.get("SLURM_ARRAY_JOB_ID")
        job = f"{job}_{os.environ.get('SLURM_ARRAY_TASK_ID')}" if job else os.environ.get("SLURM_JOB_ID", "?")
        try:
            return self._run(out, job, tasks, fn, shared_files)
        except BaseException as exc:  # recorded as JSON for the driver (it never reads submitit's pickles)
            import traceback as _tb

        
            try:
                (out.parent / "errors").mkdir(exist_ok=True)
                atomic_write_text(out.parent / "errors" / f"{job}.json",
                                  json.dumps({"error": f"{type(exc).__name__}: {exc}", "traceback": _tb.format_exc()}))
            except OSError:
                pass
            raise

    def _run(self, out: Path, job: str, tasks: list[Task], fn: RunFn, shared_files: dict[str, str]) -> dict:
        cache: dict[str, Any] = {}
        ran = skipped = 0
        for task in tasks:
            path = out / _outcome_name(task.key)
            if path.exists():
                skipped += 1
                continue
            value = None
            if task.shared is not None:
                if task.shared not in cache:
                    with open(shared_files[task.shared], "rb") as fh:
                        cache[task.shared] = pickle.load(fh)
                value = cache[task.shared]
            oc = call_safely(fn, task, value)
            oc.worker = f"{oc.worker} slurm:{job}"
            _write_outcome(oc, path)
            ran += 1
            print(f"[twinsweep] {task.key}: {'ok' if oc.ok else 'FAILED ' + str(oc.error)} ({oc.wall_s:.2f} s)",
                  flush=True)
        print(f"[twinsweep] chunk done: {ran} ran, {skipped} already done", flush=True)
        return {"ran": ran, "skipped": skipped}

    def checkpoint(self, *args: Any, **kwargs: Any):
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self, *args, **kwargs)


def _load_outcome(path: Path) -> Outcome | None:
    """The Outcome in a JSON outcome file; None when it cannot be read (being replaced, damaged)."""
    try:
        doc = json.loads(Path(path).read_text())
        return Outcome.from_json(doc) if isinstance(doc, dict) and "key" in doc and "ok" in doc else None
    except (OSError, ValueError, TypeError):
        return None
