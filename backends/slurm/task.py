"""What runs inside one array task: a chunk of tasks, each outcome written as JSON as it ends
(package :mod:`backends.slurm`)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import time
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


class ChunkTimeLimit(BaseException):
    """An array task reached its time limit and is not requeued (no run finished in this attempt,
    or it timed out more than ``max_requeues`` times). A BaseException, so that
    :func:`backends.base.call_safely` (interrupted by the signal) does not record it as the run's
    own failure; :class:`ChunkRunner` has written every unfinished run's outcome already."""


def time_limit_text(time_min: int | None) -> str:
    """``90`` -> ``"90 min"``, ``150`` -> ``"2:30:00 (150 min)"``; a Slurm-style limit for messages."""
    if time_min is None:
        return "the partition's limit"
    if time_min < 60:
        return f"{time_min} min"
    d, rem = divmod(time_min, 1440)
    h, m = divmod(rem, 60)
    return (f"{d}-{h:02d}:{m:02d}:00" if d else f"{h}:{m:02d}:00") + f" ({time_min} min)"


def time_limit_hint() -> str:
    return "raise the time limit: [backend.slurm] time in the spec (or --time on the command line)"


class ChunkRunner:
    """What one array task runs: the tasks of one chunk, one after the other, each writing its
    Outcome file. Checkpointable (submitit requeues it on timeout/preemption); a restart skips
    the tasks whose Outcome file exists.

    ``time_min`` / ``signal_delay_s``: the array task's time limit and how long before it the
    checkpoint signal (USR2) comes; a signal within a minute of that moment is a *timeout*, an
    earlier one a preemption. A timeout is requeued only when this attempt finished at least one
    run (requeuing a task that made no progress would only repeat it) and at most
    ``max_requeues`` times; otherwise the task stops: the run it was in and the runs it has not
    started get a failed outcome naming the time limit (``SlurmTimeLimit: ...``). Every timeout
    is recorded in ``<submission>/timeouts/<slurm id>.json`` (``twinsweep status`` shows them).
    """

    # class defaults: a chunk pickled by an earlier version (no such attributes) still loads
    time_min: int | None = None
    signal_delay_s, max_requeues, timeouts = 90, 3, 0

    def __init__(self, time_min: int | None = None, signal_delay_s: int = 90, max_requeues: int = 3):
        self.time_min, self.signal_delay_s, self.max_requeues = time_min, signal_delay_s, max_requeues
        self.timeouts = 0  # kept across requeues: the checkpoint pickles this object
        self._reset()

    def _reset(self) -> None:
        self._t0, self._current, self._attempt_ran, self._job = time.time(), None, 0, "?"

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset()

    def __call__(self, out_dir: str, tasks: list[Task], fn: RunFn, shared_files: dict[str, str]) -> dict:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        job = os.environ.get("SLURM_ARRAY_JOB_ID")
        job = f"{job}_{os.environ.get('SLURM_ARRAY_TASK_ID')}" if job else os.environ.get("SLURM_JOB_ID", "?")
        self._reset()
        self._job = job
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
            self._current = task.key
            value = None
            if task.shared is not None:
                if task.shared not in cache:
                    with open(shared_files[task.shared], "rb") as fh:
                        cache[task.shared] = pickle.load(fh)
                value = cache[task.shared]
            oc = call_safely(fn, task, value)
            oc.worker = f"{oc.worker} slurm:{job}"
            _write_outcome(oc, path)
            self._current = None
            self._attempt_ran += 1
            ran += 1
            print(f"[twinsweep] {task.key}: {'ok' if oc.ok else 'FAILED ' + str(oc.error)} ({oc.wall_s:.2f} s)",
                  flush=True)
        print(f"[twinsweep] chunk done: {ran} ran, {skipped} already done", flush=True)
        return {"ran": ran, "skipped": skipped}

    def _timed_out(self) -> bool:
        """The checkpoint signal came at (or within Slurm's one-minute resolution of) the moment
        the time limit's signal is due: a timeout, not a preemption."""
        if self.time_min is None:
            return False
        due = self.time_min * 60 - self.signal_delay_s
        return time.time() - self._t0 >= due - 60

    def checkpoint(self, out_dir: str, tasks: list[Task], fn: RunFn, shared_files: dict[str, str]):
        """Called by submitit in the USR2 handler: the object to requeue, or raises
        :class:`ChunkTimeLimit` after recording the unfinished runs (see the class docstring)."""
        from submitit.helpers import DelayedSubmission

        if not self._timed_out():  # preempted: requeue, the restart skips the finished runs
            return DelayedSubmission(self, out_dir, tasks, fn, shared_files)
        self.timeouts += 1
        stop = None
        if self._attempt_ran == 0:
            stop = "no run finished in this attempt, so a requeue would only repeat it"
        elif self.timeouts > self.max_requeues:
            stop = f"it timed out {self.timeouts} times (at most {self.max_requeues} requeues)"
        out = Path(out_dir)
        elapsed = time.time() - self._t0
        limit = time_limit_text(self.time_min)
        record = {"slurm_id": self._job, "time_min": self.time_min, "timeouts": self.timeouts,
                  "requeued": stop is None, "run": self._current, "elapsed_s": round(elapsed, 1),
                  "ran_this_attempt": self._attempt_ran, "why": stop}
        try:
            (out.parent / "timeouts").mkdir(exist_ok=True)
            atomic_write_text(out.parent / "timeouts" / f"{self._job}.json", json.dumps(record, sort_keys=True))
        except OSError:
            pass
        if stop is None:
            print(f"[twinsweep] time limit {limit} reached after {elapsed:.0f} s (timeout {self.timeouts} of at most "
                  f"{self.max_requeues + 1}): requeued; the finished runs are kept", flush=True)
            return DelayedSubmission(self, out_dir, tasks, fn, shared_files)
        head = (f"SlurmTimeLimit: array task {self._job} reached its time limit of {limit} "
                f"(after {elapsed:.0f} s in this attempt; not requeued: {stop})")
        for task in tasks:
            path = out / _outcome_name(task.key)
            if path.exists():
                continue
            what = ("this run did not finish within the limit" if task.key == self._current
                    else "this run was not started" + (f" (run {self._current} was running)" if self._current else ""))
            msg = f"{head}: {what}; {time_limit_hint()}"
            _write_outcome(Outcome(task.key, False, error=msg, traceback=msg, worker=f"slurm:{self._job}"), path)
        print(f"[twinsweep] {head}; {time_limit_hint()}", flush=True)
        raise ChunkTimeLimit(f"{head}; {time_limit_hint()}")


def _load_outcome(path: Path) -> Outcome | None:
    """The Outcome in a JSON outcome file; None when it cannot be read (being replaced, damaged)."""
    try:
        doc = json.loads(Path(path).read_text())
        return Outcome.from_json(doc) if isinstance(doc, dict) and "key" in doc and "ok" in doc else None
    except (OSError, ValueError, TypeError):
        return None
