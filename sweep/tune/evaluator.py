"""Evaluation of tuning trials: a trial's runs (its parameters as run options on every train window
x seed), the objective values (means of ``stats.json`` system metrics), the Pareto front, the
:class:`Evaluator` that runs many trials' runs through one sweep backend and tells each trial as its
last run comes in, and the winners' evaluation on the test windows.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

from ..ranking import pareto_front  # one Pareto front for the tuner and the report's trade-off view
from ..spec import StudySpec
from .spec import TuneSpec

__all__ = ["trial_spec", "trial_items", "metric_means", "pareto_front", "Evaluator", "evaluate_test"]

def trial_spec(spec: TuneSpec, params: dict[str, Any]) -> StudySpec:
    grid = tuple(spec.study.grid) + tuple((axis, (value,)) for axis, value in params.items())
    return dataclasses.replace(spec.study, grid=grid)


def trial_items(spec: TuneSpec, datasets, params: dict[str, Any], windows) -> list:
    from ..expand import expand

    want = set(windows)
    return [it for it in expand(trial_spec(spec, params), datasets) if (it.dataset, it.window) in want]


def metric_means(store, keys: list[str], objectives) -> list[float]:
    vals = {m: [] for m, _ in objectives}
    for k in keys:
        st = store.read_run_json(k, "stats.json")
        for m, _ in objectives:
            v = (st.get("system") or {}).get(m)
            if v is None or not math.isfinite(float(v)):
                raise ValueError(f"metric {m} is undefined in run {k}")
            vals[m].append(float(v))
    return [math.fsum(vals[m]) / len(vals[m]) for m, _ in objectives]


class Evaluator:
    """Runs the tasks of many trials through one backend; tells each trial when its runs are in."""

    def __init__(self, spec: TuneSpec, study, store, datasets, run_fn, on_trial: Callable | None):
        self.spec, self.study, self.store, self.datasets = spec, study, store, datasets
        self.run_fn, self.on_trial = run_fn, on_trial
        self.done = store.usable_keys()  # (lock held) damaged run folders go to quarantine/ and run again
        self.inflight: dict[str, list[dict]] = {}  # key -> trial records waiting for it
        self.failed: dict[str, str] = {}
        self.executed = 0
        self.told = 0
        self.failed_trials = 0  # trials told failed (a run failed, or a metric undefined)
        self.trial_attrs: dict[str, Any] = {}  # extra user attributes of every trial asked (e.g. its worker)

    def _finish(self, rec: dict) -> None:
        import optuna

        if rec.get("finished"):
            return
        rec["finished"] = True
        trial = rec["trial"]
        if rec["errors"]:
            trial.set_user_attr("error", "; ".join(sorted(rec["errors"]))[:2000])
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            try:
                values = metric_means(self.store, rec["keys"], self.spec.objectives)
            except (ValueError, OSError) as exc:
                trial.set_user_attr("error", str(exc))
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                values = None
            else:
                self.study.tell(trial, values)
            rec["values"] = values
        self.told += 1
        if rec.get("values") is None:
            self.failed_trials += 1
        if self.on_trial is not None:
            self.on_trial(trial.number, rec.get("params"), rec.get("values"), sorted(rec["errors"]))

    def tasks(self, n_trials: int):
        from twinsweep.backends.base import Task

        from ..runner import make_payload

        for _ in range(n_trials):
            trial = self.study.ask()
            params = {p.axis: p.suggest(trial) for p in self.spec.params}
            items = trial_items(self.spec, self.datasets, params, self.spec.train)
            keys = [it.key for it in items]
            trial.set_user_attr("seeds", list(self.spec.study.seeds))
            trial.set_user_attr("windows", ["/".join(w) for w in self.spec.train])
            trial.set_user_attr("run_keys", keys)
            for k, v in self.trial_attrs.items():
                trial.set_user_attr(k, v)
            rec = {"trial": trial, "params": params, "keys": keys, "missing": set(), "errors": set()}
            submit = []
            for it in items:  # register every missing run before the first task can come back
                if it.key in self.done:
                    continue
                if it.key in self.failed:
                    rec["errors"].add(self.failed[it.key])
                    continue
                rec["missing"].add(it.key)
                waiting = self.inflight.get(it.key)
                if waiting is not None:  # another trial asked for the very same run: wait for it
                    waiting.append(rec)
                    continue
                self.inflight[it.key] = [rec]
                submit.append(it)
            if not rec["missing"]:
                self._finish(rec)
            for it in submit:
                yield Task(it.key, make_payload(it, self.store.runs_dir), it.dataset)

    def outcome(self, out) -> None:
        recs = self.inflight.pop(out.key, [])
        if out.ok:
            self.done.add(out.key)
            self.executed += 1
            self.store.clear_failure(out.key)
        else:
            self.failed[out.key] = f"run {out.key}: {out.error}"
            self.store.record_failure(out.key, out.error or "", out.traceback, 1, info={"tune": True},
                                      worker=out.worker)
        for rec in recs:
            rec["missing"].discard(out.key)
            if not out.ok:
                rec["errors"].add(self.failed[out.key])
            if not rec["missing"]:
                self._finish(rec)


def evaluate_test(spec, study_spec, store, datasets, best, run_fn, shared, ev, log=None) -> None:
    from twinsweep.backends.base import Task, make_backend

    from ..runner import make_payload

    per = []
    tasks = {}
    for b in best:
        items = trial_items(spec, datasets, b["params"], spec.test)
        per.append([it.key for it in items])
        for it in items:
            if it.key not in ev.done and it.key not in tasks:
                tasks[it.key] = Task(it.key, make_payload(it, store.runs_dir), it.dataset)
    failed = {}
    if tasks:
        from ..api import _backend_options

        bk = make_backend(study_spec.backend.name, workers=study_spec.backend.workers,
                          address=study_spec.backend.address, **_backend_options(study_spec, store, None, log))
        with bk:
            for out in bk.run(list(tasks.values()), run_fn, shared):
                if out.ok:
                    ev.done.add(out.key)
                    ev.executed += 1
                else:
                    failed[out.key] = out.error
    for b, keys in zip(best, per):
        b["test_windows"] = ["/".join(w) for w in spec.test]
        if any(k in failed for k in keys):
            b["test_values"] = None
            b["test_error"] = "; ".join(f"{k}: {failed[k]}" for k in keys if k in failed)
            continue
        try:
            b["test_values"] = metric_means(store, keys, spec.objectives)
        except (ValueError, OSError) as exc:
            b["test_values"], b["test_error"] = None, str(exc)
