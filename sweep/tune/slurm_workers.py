"""Tuning on Slurm: the driver submits an array of Optuna workers (:func:`tune_worker`), each
opening the same storage on the shared filesystem, asking its share of trials and evaluating their
runs itself; the driver (:func:`tune_on_slurm`) follows the array and reports trials as they finish.
"""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any

from .evaluator import Evaluator
from .spec import TuneSpec
from .result import record_interrupt
from .study import interrupted_numbers, make_sampler, name_objectives, open_storage, requeue_cut_trial

__all__ = ["tune_worker", "tune_on_slurm"]

def tune_worker(payload: dict[str, Any], datasets: dict) -> dict[str, Any]:
    """One Optuna worker of a tuning on Slurm (runs as an array task; see the module docstring).

    ``payload``: ``spec`` (TuneSpec), ``out`` (results folder), ``storage`` (URL or journal path),
    ``tag`` (this worker's id, stored on its trials as the user attribute ``worker``), ``trials``
    (its share), ``seed_offset`` (sampler seed offset), ``run_fn``. ``datasets``: the loaded datasets.
    Returns ``{"tag", "trials" (told now), "failed" (of those, failed), "executed" (runs simulated now)}``.
    """
    import optuna

    from twinsweep.backends.base import make_backend

    from ..store import ResultStore

    spec: TuneSpec = payload["spec"]
    store = ResultStore(payload["out"])
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    stor, _ = open_storage(spec, store.root, payload["storage"])
    study = optuna.load_study(study_name=spec.study_name, storage=stor,
                              sampler=make_sampler(spec, offset=payload["seed_offset"]))
    name_objectives(study, spec)
    tag = payload["tag"]
    fin = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    owed = payload["trials"]
    cut = interrupted_numbers(study)
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get("worker") != tag:
            continue
        if t.state == optuna.trial.TrialState.RUNNING:  # cut when this very worker was requeued
            requeue_cut_trial(study, t)
        elif t.state in fin and t.number not in cut:
            owed -= 1
    ev = Evaluator(spec, study, store, datasets, payload["run_fn"], None)
    ev.trial_attrs = {"worker": tag}
    if owed > 0:
        shared = {name: (ds.workload, ds.system) for name, ds in datasets.items()}
        cpus = max(1, int(os.environ.get("SLURM_CPUS_PER_TASK", "1") or 1))
        with make_backend("local", workers=cpus, cache_dir=str(store.cache_dir)) as bk:
            for outcome in bk.run(ev.tasks(owed), ev.run_fn, shared):
                ev.outcome(outcome)
    print(f"[twinsweep] tune worker {tag}: {ev.told} trial(s) ({ev.failed_trials} failed), {ev.executed} run(s)",
          flush=True)
    return {"tag": tag, "trials": ev.told, "failed": ev.failed_trials, "executed": ev.executed}


def tune_on_slurm(spec: TuneSpec, store, study, datasets, remaining: int, n_before: int, ev, res, on_trial,
                   log, t_wall) -> None:
    """Run ``remaining`` trials as an array of :func:`tune_worker` tasks and follow them."""
    import optuna

    from twinsweep.backends.base import Task, make_backend

    from ..api import _backend_options

    study_spec = spec.study
    n_workers = max(1, min(remaining, study_spec.backend.workers or 4))
    base, extra = divmod(remaining, n_workers)
    session = f"s{n_before}-{_dt.datetime.now().strftime('%Y%m%d%H%M%S')}"
    tasks = []
    for i in range(n_workers):
        tag = f"{session}-w{i}"
        payload = {"spec": spec, "out": str(store.root.absolute()), "storage": res.storage, "tag": tag,
                   "trials": base + (1 if i < extra else 0), "seed_offset": n_before + i, "run_fn": ev.run_fn}
        tasks.append(Task(f"tune-{tag}", payload, "datasets"))
    fin = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    reported: set[int] = set()

    def report_trials() -> None:
        if on_trial is None:
            return
        for t in study.get_trials(deepcopy=False, states=fin):
            if t.number in reported or not str(t.user_attrs.get("worker", "")).startswith(session + "-"):
                continue
            reported.add(t.number)
            err = t.user_attrs.get("error")
            on_trial(t.number, {k: v for k, v in t.params.items()},
                     list(t.values) if t.values is not None else None, [err] if err else [])

    opts = _backend_options(study_spec, store, {"runs_per_task": 1, "folder": str(store.root.absolute() / "slurm-tune"),
                                                "poll_hook": report_trials}, log)
    bk = make_backend(study_spec.backend.name, workers=n_workers, **opts)
    errors = []
    try:
        with bk:
            for out in bk.run(tasks, tune_worker, {"datasets": datasets}):
                if out.ok:
                    ev.executed += out.result["executed"]
                    ev.told += out.result["trials"]
                    ev.failed_trials += out.result.get("failed", 0)
                else:
                    errors.append(f"{out.key}: {out.error}")
    except KeyboardInterrupt:
        record_interrupt(res, ev, study, t_wall)
        raise
    finally:
        # trials left running by workers of this session that ended for good: failed, queued again
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            if str(t.user_attrs.get("worker", "")).startswith(session + "-"):
                requeue_cut_trial(study, t)
    report_trials()
    res.worker_errors = errors
    if errors and log is not None:
        for e in errors:
            log(f"tune worker failed: {e}")
