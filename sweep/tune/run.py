"""``run_tune``: run (or resume) a tuning study through a sweep backend (local, Ray) or as Optuna
workers on Slurm (:mod:`.slurm_workers`), then write its outputs (:mod:`.outputs`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import time
from pathlib import Path
from typing import Callable

from twinsweep.core.errors import ConfigError

from .evaluator import Evaluator, evaluate_test
from .outputs import write_outputs
from .result import TuneResult, record_interrupt
from .slurm_workers import tune_on_slurm
from .spec import TuneSpec, load_tune_spec
from .study import (best_trials, check_evaluation, check_journal, counted, failed_count, is_url, make_sampler,
                    name_objectives, open_storage, recover_interrupted)

__all__ = ["run_tune"]

def run_tune(spec: TuneSpec | str | os.PathLike, out: str | os.PathLike | None = None, backend: str | None = None,
             trials: int | None = None, workers: int | None = None, address: str | None = None,
             storage: str | None = None, run_fn: Callable | None = None, test: bool = True,
             on_trial: Callable | None = None, slurm: dict | None = None,
             log: Callable[[str], None] | None = None) -> TuneResult:
    """Run (or resume) a tuning study; returns a :class:`TuneResult` (module docstring).

    ``out``/``backend``/``workers``/``address`` override the spec's ``[study] output`` and
    ``[backend]``; ``trials``: finished trials wanted (overrides ``tune.trials``); ``storage``:
    overrides ``tune.storage``; ``run_fn``: the backend's run function (default
    :func:`sweep.runner.execute_run`); ``test``: evaluate the winners on the test windows;
    ``on_trial(number, params, values, errors)``: called as each trial is told (on Slurm: as the
    driver sees it finished); ``slurm``: Slurm options over ``[backend.slurm]``; ``log``: one-line
    backend messages.
    Raises ConfigError for a bad spec or a storage holding a study with other objectives;
    KeyboardInterrupt propagates (the study and the finished runs are kept: run again to resume).
    """
    import optuna

    from ..api import _remove_if_untouched, output_where
    from ..store import ResultStore

    t_wall = time.perf_counter()
    if not isinstance(spec, TuneSpec):
        spec = load_tune_spec(spec)
    study_spec = spec.study.with_overrides(output=str(out) if out is not None else None, backend=backend,
                                           workers=workers, address=address, slurm=slurm)
    spec = dataclasses.replace(spec, study=study_spec)
    n_wanted = spec.trials if trials is None else int(trials)
    if n_wanted < 1:
        raise ConfigError(f"--trials: expected >= 1, got {n_wanted}")
    root = Path(study_spec.output).expanduser().absolute()  # workers elsewhere must not resolve it themselves
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # a database storage is opened (and so checked: dialect, driver, connection) before anything
    # is created here; the journal file lives in the output folder, opened once it is locked
    opened = open_storage(spec, root, storage) if is_url(storage or spec.storage) else None
    if opened is None:
        check_journal(spec, storage)  # a journal file elsewhere: writable, before anything is created
    check_tune_folder(root, output_where(study_spec, root, given=out is not None), spec.study_name)
    store = ResultStore(root)
    res = TuneResult(out=store.root, study_name=spec.study_name, storage="")
    # what this call creates: removed again when it stops before writing anything (as a sweep's)
    made = [d for d in (root, store.runs_dir, store.failed_dir) if not d.exists()]
    try:
        return _run_locked(spec, study_spec, store, res, opened, storage, n_wanted, run_fn, test, on_trial, log,
                           t_wall)
    except BaseException:
        _remove_if_untouched(made)
        raise


#: What a tuning writes in its output folder (:mod:`.outputs`, :mod:`.winners`), and a sweep's study.json.
_TUNE_OUTPUTS = frozenset({"tune.json", "best.json", "trials.csv", "pareto.png", "history.png", "importances.csv",
                           "importances.png", "winners.toml", "study.json"})


def check_tune_folder(root: Path, where: str, study_name: str | None = None) -> None:
    """Refuse, before anything is created, an output folder that holds no tuning (no ``tune.json``)
    but files a tuning writes (``best.json``, ``trials.csv``, ``winners.toml`` ...: the user's own,
    which it would overwrite) or a sweep's results (``study.json``), as a sweep refuses a folder
    that is not its own (:func:`sweep.api.check_output_folder`); and one whose ``tune.json`` names
    another study than ``study_name`` (its best.json, trials.csv and winners.toml would be
    overwritten by this study's, while the storage keeps both). ``where``: how the error names the
    folder (:func:`sweep.api.output_where`). Raises ConfigError."""
    if not root.is_dir():
        return
    if (root / "tune.json").exists():
        try:
            other = json.loads((root / "tune.json").read_text()).get("study_name")
        except (OSError, ValueError, AttributeError):
            other = None
        if study_name is not None and isinstance(other, str) and other != study_name:
            raise ConfigError(f"{where}: holds the outputs of tune study {other!r} (tune.json); study {study_name!r} "
                              "would overwrite its best.json, trials.csv and winners.toml: choose another --out, or "
                              f"study_name = {other!r} to go on with that study")
        return
    from ..api import output_clash

    clash = output_clash(root, _TUNE_OUTPUTS)
    if clash:
        raise ConfigError(f"{where}: not a tuning's output folder (no tune.json) but it holds {', '.join(clash)} "
                          "(a sweep's results, or files a tuning would overwrite); choose another --out")


def _run_locked(spec, study_spec, store, res, opened, storage, n_wanted, run_fn, test, on_trial, log,
                t_wall) -> TuneResult:
    import optuna

    from twinsweep.backends.base import BACKENDS, make_backend

    from ..api import _backend_options
    from ..expand import load_datasets
    from ..runner import execute_run

    with store.locked():
        store.clean_tmp()
        datasets = load_datasets(study_spec)
        stor, res.storage = opened or open_storage(spec, store.root, storage)
        study = optuna.create_study(storage=stor, study_name=spec.study_name, directions=spec.directions,
                                    sampler=make_sampler(spec), load_if_exists=True)
        if [d.name.lower() for d in study.directions] != spec.directions:
            raise ConfigError(f"storage {res.storage}: study {spec.study_name!r} has directions "
                              f"{[d.name.lower() for d in study.directions]}, this spec {spec.directions}; "
                              "use another study_name or output folder")
        check_evaluation(study, spec, res.storage)
        prev = study.user_attrs.get("objectives")
        want = [m for m, _ in spec.objectives]
        if prev is not None and prev != want:
            raise ConfigError(f"storage {res.storage}: study {spec.study_name!r} tunes {prev}, this spec {want}; "
                              "use another study_name or output folder")
        study.set_user_attr("objectives", want)
        name_objectives(study, spec)  # optuna-dashboard shows the metric names, not "Objective 0"
        study.set_user_attr("spec", spec.to_dict())
        recover_interrupted(study)
        n_before = len(study.get_trials(deepcopy=False))
        study.sampler = make_sampler(spec, offset=n_before)
        sessions = list(study.user_attrs.get("sessions", []))
        sessions.append({"sampler_seed": spec.sampler_seed + n_before, "trials_before": n_before,
                         "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
        study.set_user_attr("sessions", sessions)
        store.write_json("tune.json", spec.to_dict() | {"storage": res.storage, "study_name": spec.study_name})
        remaining = max(0, n_wanted - counted(study))
        ev = Evaluator(spec, study, store, datasets, run_fn or execute_run, on_trial)
        shared = {name: (ds.workload, ds.system) for name, ds in datasets.items()}
        if remaining and BACKENDS.get(study_spec.backend.name).batch_queue:  # Optuna workers as batch jobs
            tune_on_slurm(spec, store, study, datasets, remaining, n_before, ev, res, on_trial, log, t_wall)
        elif remaining:
            # as a sweep's: the local pool's dataset file stays inside the results folder (.cache/)
            bk = make_backend(study_spec.backend.name, workers=study_spec.backend.workers,
                              address=study_spec.backend.address, **_backend_options(study_spec, store, None, log))
            try:
                with bk:
                    for outcome in bk.run(ev.tasks(remaining), ev.run_fn, shared):
                        ev.outcome(outcome)
            except KeyboardInterrupt:
                record_interrupt(res, ev, study, t_wall)
                raise
        res.executed, res.ran_trials, res.failed_trials = ev.executed, ev.told, ev.failed_trials
        res.complete, res.failed_in_study = counted(study), failed_count(study)
        res.best = best_trials(study, spec)
        if test and spec.test and res.best:
            evaluate_test(spec, study_spec, store, datasets, res.best, run_fn or execute_run, shared, ev, log)
            study.set_user_attr("test", [{"number": b["number"], "test_values": b["test_values"]} for b in res.best])
        res.executed = ev.executed  # with the winners' runs on the test windows
        res.files = write_outputs(study, spec, store.root, res.best)
    res.wall_s = time.perf_counter() - t_wall
    return res
