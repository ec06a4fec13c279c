"""Optuna tuning of priority and incentive weights (``twinsweep tune``; DESIGN.md §6 "Tuning").

A tune spec is a study spec (TOML, :mod:`sweep.spec`) whose grid fixes every axis to one value,
plus a ``[tune]`` table::

    [tune]
    trials = 24                      # finished trials wanted in the study (resumes count)
    objectives = {ramp_15min_p95_w = "min", bsld_mean = "min"}   # or ["bsld_mean"], or "bsld_mean"
    sampler = "auto"                 # auto (TPE single / NSGA-II multi), tpe, nsga2, random
    sampler_seed = 0
    storage = "journal"              # <out>/optuna.journal; or a file path; or a SQLAlchemy URL
    study_name = "tune-incentives"   # default: [study] name
    train_windows = ["w1", "w2"]     # window names (or "dataset/window"); default: all windows
    test_windows = ["w3"]            # default: the windows not in train_windows
    [tune.params]                    # numeric run options to tune: "options.<name>" = {low, high}
    "options.w_age" = {low = 0.0, high = 1.0}
    "options.w_size" = {low = -1.0, high = 1.0, step = 0.1}    # also: log = true, int = true

Each trial's parameters are added to the grid as run options and the trial is evaluated on every
train window x every seed of ``[study] seeds`` (seeds are explicit and stored on the trial as the
user attributes ``seeds``, ``windows`` and ``run_keys``). Its objective values are the means of the
``stats.json`` system metrics over those runs. Runs go through the sweep backends (``local`` or
``ray``; one backend for the whole tuning) and land in the sweep's result store
(``<out>/runs/<key>``): a run already there is never recomputed, whichever trial asked for it.
Trials run in parallel as far as the backend's workers allow: a new trial is asked whenever a
worker would otherwise idle, and told as soon as its last run is in.

A run that fails makes its trial fail (recorded in ``failed/<key>/error.json`` and in the trial's
``error`` attribute); runs are not retried within a tuning (``[study] retries`` is ignored).

On Slurm (``--backend slurm``) the trials run inside the cluster: the driver submits an array of
Optuna workers (``workers`` of them, default 4, never more than the trials wanted), each an array
task that opens the same ``storage`` on the shared filesystem (the journal file by default), asks
its share of the trials, evaluates each trial's runs itself (serially, or with a local process pool
of ``cpus_per_task`` workers) into the shared result store and tells Optuna. The driver follows the
array, reports trials as they finish and then writes the outputs below (the winners' test runs
go through the slurm backend too). A worker that is requeued (timeout, preemption) resumes: its
trial cut by the requeue is marked failed and queued again, and it asks only the trials it still
owes; a worker that ends for good leaves its running trial to the next session.

Resume: the Optuna study lives in ``storage`` (a journal file by default; any SQLAlchemy URL, e.g.
``sqlite:///tune.db``); running the same command again continues it, with the sampler seeded by
``sampler_seed`` + the number of trials already stored (recorded in the study's ``sessions``
attribute), so a resumed session neither repeats nor depends on wall-clock. Finished trials are kept;
trials cut by an interruption are marked failed (user attribute ``interrupted``) and their
parameters queued again, so they are evaluated with the runs they already finished. Watch it
live with ``optuna-dashboard <out>/optuna.journal`` (or the SQLAlchemy URL).

Outputs in ``<out>``: ``best.json`` (best weights: the best trial, or the Pareto set for several
objectives, each with its train values and its values on the test windows it was not tuned on),
``trials.csv``, ``pareto.png`` (several objectives) or ``history.png`` (one), ``importances.csv``
/ ``importances.png`` (parameter importances per objective, Optuna's PED-ANOVA evaluator, which
needs no extra dependency; fANOVA would need scikit-learn), and ``winners.toml``: a
ready study spec that re-runs the winners as a normal sweep on all windows
(``twinsweep sweep <out>/winners.toml``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from twinsweep.core.errors import ConfigError

from .cli_sweep import add_slurm_args, backend_name, slurm_overrides
from .spec import StudySpec, metric_direction, parse_spec

__all__ = ["TuneParam", "TuneSpec", "TuneResult", "load_tune_spec", "parse_tune_spec", "run_tune",
           "pareto_front", "add_parser"]

_TUNE_KEYS = ("trials", "objectives", "sampler", "sampler_seed", "storage", "study_name", "train_windows",
              "test_windows", "params")
_PARAM_KEYS = ("low", "high", "log", "step", "int")
SAMPLERS = ("auto", "tpe", "nsga2", "random")


@dataclasses.dataclass(frozen=True)
class TuneParam:
    """One tuned run option: ``axis`` (``options.<name>``), range ``[low, high]``, ``log`` scale,
    ``step`` (discretisation; None = continuous), ``integer``."""

    axis: str
    low: float
    high: float
    log: bool = False
    step: float | None = None
    integer: bool = False

    @property
    def option(self) -> str:
        return self.axis[len("options."):]

    def suggest(self, trial) -> float | int:
        if self.integer:
            return trial.suggest_int(self.axis, int(self.low), int(self.high), log=self.log,
                                     step=int(self.step or 1))
        return trial.suggest_float(self.axis, self.low, self.high, log=self.log, step=self.step)


@dataclasses.dataclass(frozen=True)
class TuneSpec:
    """A validated tune spec: the study (datasets, seeds, fixed grid, backend, output) plus the
    search. ``train``/``test``: ``(dataset, window)`` pairs. ``doc``: the parsed TOML (for
    ``winners.toml``)."""

    study: StudySpec
    params: tuple[TuneParam, ...]
    objectives: tuple[tuple[str, str], ...]
    trials: int = 20
    sampler: str = "auto"
    sampler_seed: int = 0
    storage: str = "journal"
    study_name: str = "tune"
    train: tuple[tuple[str, str], ...] = ()
    test: tuple[tuple[str, str], ...] = ()
    doc: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def directions(self) -> list[str]:
        return ["minimize" if d == "min" else "maximize" for _, d in self.objectives]

    def sampler_name(self) -> str:
        if self.sampler != "auto":
            return self.sampler
        return "tpe" if len(self.objectives) == 1 else "nsga2"

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.study.name, "params": [dataclasses.asdict(p) for p in self.params],
                "objectives": [{"metric": m, "direction": d} for m, d in self.objectives],
                "trials": self.trials, "sampler": self.sampler_name(), "sampler_seed": self.sampler_seed,
                "seeds": list(self.study.seeds), "train": [list(w) for w in self.train],
                "test": [list(w) for w in self.test]}


# ------------------------------------------------------------------------------------------ parsing
def _num(where: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where}: expected a finite number, got {v!r}")
    return float(v)


def _parse_param(axis: str, d: Any) -> TuneParam:
    where = f"tune.params.{axis!r}"
    if not (axis.startswith("options.") and len(axis) > len("options.")):
        raise ConfigError(f"{where}: tuned parameters are numeric run options named \"options.<name>\" "
                          "(e.g. \"options.w_age\")")
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a table {{low, high[, log, step, int]}}")
    unknown = sorted(set(d) - set(_PARAM_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(_PARAM_KEYS)}")
    if "low" not in d or "high" not in d:
        raise ConfigError(f"{where}: needs low and high")
    low, high = _num(f"{where}.low", d["low"]), _num(f"{where}.high", d["high"])
    if not low < high:
        raise ConfigError(f"{where}: low must be < high, got [{low}, {high}]")
    log = d.get("log", False)
    integer = d.get("int", False)
    if not isinstance(log, bool) or not isinstance(integer, bool):
        raise ConfigError(f"{where}: log and int are true or false")
    if log and low <= 0:
        raise ConfigError(f"{where}: log scale needs low > 0")
    step = d.get("step")
    if step is not None:
        step = _num(f"{where}.step", step)
        if step <= 0:
            raise ConfigError(f"{where}.step: must be > 0")
        if log:
            raise ConfigError(f"{where}: step and log cannot be combined")
    if integer and (low != int(low) or high != int(high)):
        raise ConfigError(f"{where}: an integer parameter needs integer low and high")
    return TuneParam(axis, low, high, log, step, integer)


def _parse_objectives(v: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(v, str):
        items = [(v, None)]
    elif isinstance(v, list):
        items = [(m, None) for m in v]
    elif isinstance(v, dict):
        items = list(v.items())
    else:
        raise ConfigError("tune.objectives: a metric name, a list of names, or a table metric = \"min\"|\"max\"")
    if not items:
        raise ConfigError("tune.objectives: name at least one metric")
    out = []
    for m, d in items:
        natural = metric_direction("tune.objectives", m)
        d = natural if d is None else d
        if d not in ("min", "max"):
            raise ConfigError(f"tune.objectives.{m}: direction must be \"min\" or \"max\", got {d!r}")
        out.append((m, d))
    if len({m for m, _ in out}) != len(out):
        raise ConfigError("tune.objectives: duplicate metric")
    return tuple(out)


def _parse_windows(where: str, v: Any, study: StudySpec) -> tuple[tuple[str, str], ...]:
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{where}: expected a non-empty list of window names (or \"dataset/window\")")
    all_w = [(d.name, w.name) for d in study.datasets for w in d.windows]
    out = []
    for name in v:
        if not isinstance(name, str):
            raise ConfigError(f"{where}: expected window names, got {name!r}")
        if "/" in name:
            ds, w = name.split("/", 1)
            hit = [(a, b) for a, b in all_w if a == ds and b == w]
        else:
            hit = [(a, b) for a, b in all_w if b == name]
        if not hit:
            raise ConfigError(f"{where}: no window {name!r}; windows: {', '.join(f'{a}/{b}' for a, b in all_w)}")
        out.extend(h for h in hit if h not in out)
    return tuple(out)


def parse_tune_spec(doc: dict, source: str | None = None) -> TuneSpec:
    """Validate a parsed tune spec (TOML dict). Raises ConfigError naming the offending key."""
    if not isinstance(doc, dict) or "tune" not in doc:
        raise ConfigError("tune spec: missing the [tune] table (trials, objectives, [tune.params])")
    doc = dict(doc)
    t = doc.pop("tune")
    study = parse_spec(doc, source)
    if not isinstance(t, dict):
        raise ConfigError("tune: expected a table")
    unknown = sorted(set(t) - set(_TUNE_KEYS))
    if unknown:
        raise ConfigError(f"tune: unknown key(s) {unknown}; allowed: {', '.join(_TUNE_KEYS)}")
    for axis, values in study.grid:
        if len(values) != 1:
            raise ConfigError(f"grid.{axis}: a tune spec fixes every grid axis to one value (it has {len(values)}); "
                              "the tuned parameters go in [tune.params]")
    params_doc = t.get("params")
    if not isinstance(params_doc, dict) or not params_doc:
        raise ConfigError("tune.params: name at least one parameter, e.g. \"options.w_age\" = {low = 0, high = 1}")
    params = tuple(_parse_param(a, d) for a, d in params_doc.items())
    clash = sorted({p.axis for p in params} & {a for a, _ in study.grid})
    if clash:
        raise ConfigError(f"tune.params: {clash} also fixed in [grid]; keep each parameter in one place")
    if "objectives" not in t:
        raise ConfigError("tune.objectives: missing (e.g. objectives = {bsld_mean = \"min\"})")
    objectives = _parse_objectives(t["objectives"])
    trials = t.get("trials", 20)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"tune.trials: expected an integer >= 1, got {trials!r}")
    sampler = t.get("sampler", "auto")
    if sampler not in SAMPLERS:
        raise ConfigError(f"tune.sampler: {sampler!r} is not allowed; allowed: {', '.join(SAMPLERS)}")
    if sampler == "nsga2" and len(objectives) == 1:
        pass  # allowed (NSGA-II works for one objective too)
    sseed = t.get("sampler_seed", 0)
    if isinstance(sseed, bool) or not isinstance(sseed, int) or sseed < 0:
        raise ConfigError(f"tune.sampler_seed: expected an integer >= 0, got {sseed!r}")
    storage = t.get("storage", "journal")
    if not isinstance(storage, str) or not storage:
        raise ConfigError("tune.storage: \"journal\", a journal file path, or a SQLAlchemy URL")
    name = t.get("study_name", study.name)
    if not isinstance(name, str) or not name:
        raise ConfigError("tune.study_name: expected a non-empty string")
    all_w = tuple((d.name, w.name) for d in study.datasets for w in d.windows)
    train = _parse_windows("tune.train_windows", t["train_windows"], study) if "train_windows" in t else None
    test = _parse_windows("tune.test_windows", t["test_windows"], study) if "test_windows" in t else None
    if train is None and test is None:
        train, test = all_w, ()
    elif train is None:
        train = tuple(w for w in all_w if w not in test)
    elif test is None:
        test = tuple(w for w in all_w if w not in train)
    if not train:
        raise ConfigError("tune.train_windows: no window left to tune on")
    both = sorted(set(train) & set(test))
    if both:
        raise ConfigError(f"tune: window(s) {['/'.join(w) for w in both]} are both train and test windows")
    return TuneSpec(study, params, objectives, trials, sampler, sseed, storage, name, train, test, doc | {"tune": t})


def load_tune_spec(path: str | os.PathLike) -> TuneSpec:
    """Read and validate a tune spec (TOML). Raises ConfigError (file name + key)."""
    from .spec import load_toml_spec

    return load_toml_spec(path, parse_tune_spec, "tune spec")


# ------------------------------------------------------------------------------------------ running
@dataclasses.dataclass
class TuneResult:
    """What a tune call did: ``out``, ``study_name``, ``storage`` (URL or journal path),
    ``complete`` (finished trials in the study), ``ran_trials`` (trials evaluated by this call),
    ``executed`` (runs simulated by this call), ``best`` (list of dicts: number, params, values,
    test_values), ``files`` (name -> path), ``interrupted``, ``wall_s``."""

    out: Path
    study_name: str
    storage: str
    complete: int = 0
    ran_trials: int = 0
    executed: int = 0
    best: list = dataclasses.field(default_factory=list)
    files: dict = dataclasses.field(default_factory=dict)
    interrupted: bool = False
    wall_s: float = 0.0
    worker_errors: list = dataclasses.field(default_factory=list)  # Slurm: workers that failed


def _storage(spec: TuneSpec, out: Path, override: str | None):
    import optuna

    s = override or spec.storage
    if "://" in s:
        return optuna.storages.RDBStorage(s), s
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    path = out / "optuna.journal" if s == "journal" else Path(s)
    path.parent.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(path))), str(path)


def _sampler(spec: TuneSpec, offset: int = 0):
    """The spec's sampler, seeded with ``sampler_seed + offset`` (offset = trials already in the
    study, so that a resumed session does not replay the first session's random draws)."""
    import optuna

    name = spec.sampler_name()
    seed = spec.sampler_seed + offset
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    return optuna.samplers.RandomSampler(seed=seed)


def _trial_spec(spec: TuneSpec, params: dict[str, Any]) -> StudySpec:
    grid = tuple(spec.study.grid) + tuple((axis, (value,)) for axis, value in params.items())
    return dataclasses.replace(spec.study, grid=grid)


def _items(spec: TuneSpec, datasets, params: dict[str, Any], windows) -> list:
    from .expand import expand

    want = set(windows)
    return [it for it in expand(_trial_spec(spec, params), datasets) if (it.dataset, it.window) in want]


def _metric_means(store, keys: list[str], objectives) -> list[float]:
    vals = {m: [] for m, _ in objectives}
    for k in keys:
        st = json.loads((store.run_dir(k) / "stats.json").read_text())
        for m, _ in objectives:
            v = (st.get("system") or {}).get(m)
            if v is None or not math.isfinite(float(v)):
                raise ValueError(f"metric {m} is undefined in run {k}")
            vals[m].append(float(v))
    return [math.fsum(vals[m]) / len(vals[m]) for m, _ in objectives]


def pareto_front(points: list[tuple[float, ...]], directions: list[str]) -> list[int]:
    """Indices of the mutually non-dominated points (``directions``: "minimize"/"maximize" each)."""
    sgn = [1.0 if d == "minimize" else -1.0 for d in directions]
    pts = [tuple(s * v for s, v in zip(sgn, p)) for p in points]
    front = []
    for i, p in enumerate(pts):
        dominated = any(all(q[k] <= p[k] for k in range(len(p))) and any(q[k] < p[k] for k in range(len(p)))
                        for j, q in enumerate(pts) if j != i)
        if not dominated:
            front.append(i)
    return front


class _Evaluator:
    """Runs the tasks of many trials through one backend; tells each trial when its runs are in."""

    def __init__(self, spec: TuneSpec, study, store, datasets, run_fn, on_trial: Callable | None):
        self.spec, self.study, self.store, self.datasets = spec, study, store, datasets
        self.run_fn, self.on_trial = run_fn, on_trial
        self.done = store.usable_keys()  # (lock held) damaged run folders go to quarantine/ and run again
        self.inflight: dict[str, list[dict]] = {}  # key -> trial records waiting for it
        self.failed: dict[str, str] = {}
        self.executed = 0
        self.told = 0
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
                values = _metric_means(self.store, rec["keys"], self.spec.objectives)
            except (ValueError, OSError) as exc:
                trial.set_user_attr("error", str(exc))
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                values = None
            else:
                self.study.tell(trial, values)
            rec["values"] = values
        self.told += 1
        if self.on_trial is not None:
            self.on_trial(trial.number, rec.get("params"), rec.get("values"), sorted(rec["errors"]))

    def tasks(self, n_trials: int):
        from twinsweep.backends.base import Task

        from .runner import make_payload

        for _ in range(n_trials):
            trial = self.study.ask()
            params = {p.axis: p.suggest(trial) for p in self.spec.params}
            items = _items(self.spec, self.datasets, params, self.spec.train)
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


def _recover_interrupted(study) -> int:
    """Mark trials left RUNNING by an interrupted session as failed and queue their params again."""
    import optuna

    n = 0
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        optuna.trial.Trial(study, t._trial_id).set_user_attr("interrupted", True)
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        if t.params:
            study.enqueue_trial(t.params, user_attrs={"resumed_from": t.number})
        n += 1
    return n


def _record_interrupt(res, ev, study, t_wall: float) -> None:
    """What an interrupted tune call leaves in its result: progress so far and its wall time."""
    res.interrupted = True
    res.executed, res.ran_trials = ev.executed, ev.told
    res.complete = _counted(study)
    res.wall_s = time.perf_counter() - t_wall


def _counted(study) -> int:
    import optuna

    fin = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    return sum(1 for t in study.get_trials(deepcopy=False, states=fin) if not t.user_attrs.get("interrupted"))


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

    from twinsweep.backends.base import make_backend

    from .expand import load_datasets
    from .runner import execute_run
    from .store import ResultStore

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
    store = ResultStore(root)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    res = TuneResult(out=store.root, study_name=spec.study_name, storage="")
    with store.locked():
        store.clean_tmp()
        datasets = load_datasets(study_spec)
        stor, res.storage = _storage(spec, store.root, storage)
        study = optuna.create_study(storage=stor, study_name=spec.study_name, directions=spec.directions,
                                    sampler=_sampler(spec), load_if_exists=True)
        if [d.name.lower() for d in study.directions] != spec.directions:
            raise ConfigError(f"storage {res.storage}: study {spec.study_name!r} has directions "
                              f"{[d.name.lower() for d in study.directions]}, this spec {spec.directions}; "
                              "use another study_name or output folder")
        prev = study.user_attrs.get("objectives")
        want = [m for m, _ in spec.objectives]
        if prev is not None and prev != want:
            raise ConfigError(f"storage {res.storage}: study {spec.study_name!r} tunes {prev}, this spec {want}; "
                              "use another study_name or output folder")
        study.set_user_attr("objectives", want)
        study.set_user_attr("spec", spec.to_dict())
        _recover_interrupted(study)
        n_before = len(study.get_trials(deepcopy=False))
        study.sampler = _sampler(spec, offset=n_before)
        sessions = list(study.user_attrs.get("sessions", []))
        sessions.append({"sampler_seed": spec.sampler_seed + n_before, "trials_before": n_before,
                         "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
        study.set_user_attr("sessions", sessions)
        store.write_json("tune.json", spec.to_dict() | {"storage": res.storage, "study_name": spec.study_name})
        remaining = max(0, n_wanted - _counted(study))
        ev = _Evaluator(spec, study, store, datasets, run_fn or execute_run, on_trial)
        shared = {name: (ds.workload, ds.system) for name, ds in datasets.items()}
        if remaining and study_spec.backend.name == "slurm":
            _tune_on_slurm(spec, store, study, datasets, remaining, n_before, ev, res, on_trial, log, t_wall)
        elif remaining:
            bk = make_backend(study_spec.backend.name, workers=study_spec.backend.workers,
                              address=study_spec.backend.address)
            try:
                with bk:
                    for outcome in bk.run(ev.tasks(remaining), ev.run_fn, shared):
                        ev.outcome(outcome)
            except KeyboardInterrupt:
                _record_interrupt(res, ev, study, t_wall)
                raise
        res.executed, res.ran_trials = ev.executed, ev.told
        res.complete = _counted(study)
        res.best = _best(study, spec)
        if test and spec.test and res.best:
            _evaluate_test(spec, study_spec, store, datasets, res.best, run_fn or execute_run, shared, ev, log)
            study.set_user_attr("test", [{"number": b["number"], "test_values": b["test_values"]} for b in res.best])
        res.files = write_outputs(study, spec, store.root, res.best)
    res.wall_s = time.perf_counter() - t_wall
    return res


def _best(study, spec: TuneSpec) -> list[dict]:
    import optuna

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not done:
        return []
    best = [study.best_trial] if len(spec.objectives) == 1 else sorted(study.best_trials, key=lambda t: t.number)
    return [{"number": t.number, "params": dict(t.params), "values": list(t.values),
             "seeds": t.user_attrs.get("seeds"), "train_windows": t.user_attrs.get("windows"),
             "test_values": None} for t in best]


def _evaluate_test(spec, study_spec, store, datasets, best, run_fn, shared, ev, log=None) -> None:
    from twinsweep.backends.base import Task, make_backend

    from .runner import make_payload

    per = []
    tasks = {}
    for b in best:
        items = _items(spec, datasets, b["params"], spec.test)
        per.append([it.key for it in items])
        for it in items:
            if it.key not in ev.done and it.key not in tasks:
                tasks[it.key] = Task(it.key, make_payload(it, store.runs_dir), it.dataset)
    failed = {}
    if tasks:
        from .api import _backend_options

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
            b["test_values"] = _metric_means(store, keys, spec.objectives)
        except (ValueError, OSError) as exc:
            b["test_values"], b["test_error"] = None, str(exc)


# ------------------------------------------------------------------------------------------ Slurm
def tune_worker(payload: dict[str, Any], datasets: dict) -> dict[str, Any]:
    """One Optuna worker of a tuning on Slurm (runs as an array task; see the module docstring).

    ``payload``: ``spec`` (TuneSpec), ``out`` (results folder), ``storage`` (URL or journal path),
    ``tag`` (this worker's id, stored on its trials as the user attribute ``worker``), ``trials``
    (its share), ``seed_offset`` (sampler seed offset), ``run_fn``. ``datasets``: the loaded datasets.
    Returns ``{"tag", "trials" (told now), "executed" (runs simulated now)}``.
    """
    import optuna

    from twinsweep.backends.base import make_backend

    from .store import ResultStore

    spec: TuneSpec = payload["spec"]
    store = ResultStore(payload["out"])
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    stor, _ = _storage(spec, store.root, payload["storage"])
    study = optuna.load_study(study_name=spec.study_name, storage=stor,
                              sampler=_sampler(spec, offset=payload["seed_offset"]))
    tag = payload["tag"]
    fin = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    owed = payload["trials"]
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get("worker") != tag:
            continue
        if t.state == optuna.trial.TrialState.RUNNING:  # cut when this very worker was requeued
            optuna.trial.Trial(study, t._trial_id).set_user_attr("interrupted", True)
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)
            if t.params:
                study.enqueue_trial(t.params, user_attrs={"resumed_from": t.number})
        elif t.state in fin and not t.user_attrs.get("interrupted"):
            owed -= 1
    ev = _Evaluator(spec, study, store, datasets, payload["run_fn"], None)
    ev.trial_attrs = {"worker": tag}
    if owed > 0:
        shared = {name: (ds.workload, ds.system) for name, ds in datasets.items()}
        cpus = max(1, int(os.environ.get("SLURM_CPUS_PER_TASK", "1") or 1))
        with make_backend("local", workers=cpus) as bk:
            for outcome in bk.run(ev.tasks(owed), ev.run_fn, shared):
                ev.outcome(outcome)
    print(f"[twinsweep] tune worker {tag}: {ev.told} trial(s), {ev.executed} run(s)", flush=True)
    return {"tag": tag, "trials": ev.told, "executed": ev.executed}


def _tune_on_slurm(spec: TuneSpec, store, study, datasets, remaining: int, n_before: int, ev, res, on_trial,
                   log, t_wall) -> None:
    """Run ``remaining`` trials as an array of :func:`tune_worker` tasks and follow them."""
    import optuna

    from twinsweep.backends.base import Task, make_backend

    from .api import _backend_options

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
    bk = make_backend("slurm", workers=n_workers, **opts)
    errors = []
    try:
        with bk:
            for out in bk.run(tasks, tune_worker, {"datasets": datasets}):
                if out.ok:
                    ev.executed += out.result["executed"]
                    ev.told += out.result["trials"]
                else:
                    errors.append(f"{out.key}: {out.error}")
    except KeyboardInterrupt:
        _record_interrupt(res, ev, study, t_wall)
        raise
    finally:
        # trials left running by workers of this session that ended for good: failed, queued again
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            if str(t.user_attrs.get("worker", "")).startswith(session + "-"):
                optuna.trial.Trial(study, t._trial_id).set_user_attr("interrupted", True)
                study.tell(t.number, state=optuna.trial.TrialState.FAIL)
                if t.params:
                    study.enqueue_trial(t.params, user_attrs={"resumed_from": t.number})
    report_trials()
    res.worker_errors = errors
    if errors and log is not None:
        for e in errors:
            log(f"tune worker failed: {e}")


# ------------------------------------------------------------------------------------------ outputs
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _importance_evaluator():
    """PED-ANOVA (Optuna's own, no extra dependency), else Optuna's default evaluator."""
    try:
        from optuna.importance import PedAnovaImportanceEvaluator

        return PedAnovaImportanceEvaluator(), "PED-ANOVA"
    except ImportError:  # older Optuna
        return None, "Optuna default evaluator"


def _save_plot(plt, fig, ax, path: Path) -> Path:
    """Grid, legend, tight layout; write ``path`` (PNG, 110 dpi) and close the figure."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_outputs(study, spec: TuneSpec, out: Path, best: list[dict]) -> dict[str, Path]:
    """best.json, trials.csv, pareto.png / history.png, importances.csv/png, winners.toml."""
    import optuna

    files: dict[str, Path] = {}
    names = [m for m, _ in spec.objectives]
    df = study.trials_dataframe(attrs=("number", "state", "values", "params", "user_attrs", "datetime_start",
                                       "datetime_complete"))
    if len(names) == 1 and "value" in df.columns:
        df = df.rename(columns={"value": f"values_{names[0]}"})
    else:
        df = df.rename(columns={f"values_{i}": f"values_{m}" for i, m in enumerate(names)})
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    files["trials.csv"] = out / "trials.csv"
    df.to_csv(files["trials.csv"], index=False)

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    plt = _plt()
    if complete and len(names) >= 2:
        fig, ax = plt.subplots(figsize=(6, 4.5))
        xs = [t.values[0] for t in complete]
        ys = [t.values[1] for t in complete]
        ax.scatter(xs, ys, s=18, color="0.6", label="trials")
        front = sorted((b["values"][0], b["values"][1]) for b in best)
        ax.plot([p[0] for p in front], [p[1] for p in front], "o-", color="C3", label="Pareto front")
        for b in best:
            ax.annotate(str(b["number"]), (b["values"][0], b["values"][1]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        ax.set_xlabel(f"{names[0]} ({spec.objectives[0][1]})")
        ax.set_ylabel(f"{names[1]} ({spec.objectives[1][1]})")
        ax.set_title(f"{spec.study_name}: {len(complete)} trials (train windows)", fontsize=10)
        files["pareto.png"] = _save_plot(plt, fig, ax, out / "pareto.png")
    elif complete:
        fig, ax = plt.subplots(figsize=(6, 4))
        nums = [t.number for t in complete]
        vals = [t.values[0] for t in complete]
        sgn = 1 if spec.objectives[0][1] == "min" else -1
        run_best, cur = [], math.inf
        for v in vals:
            cur = min(cur, sgn * v)
            run_best.append(sgn * cur)
        ax.plot(nums, vals, "o", color="0.5", ms=4, label="trial")
        ax.plot(nums, run_best, "-", color="C3", label="best so far")
        ax.set_xlabel("trial")
        ax.set_ylabel(f"{names[0]} ({spec.objectives[0][1]})")
        files["history.png"] = _save_plot(plt, fig, ax, out / "history.png")

    imp_rows, imp_error = [], None
    if len(complete) >= 2 and spec.params:
        import warnings

        evaluator, method = _importance_evaluator()
        for i, (m, d) in enumerate(spec.objectives):
            sgn = 1.0 if d == "min" else -1.0  # the evaluator rates parameters for low target values
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    imp = optuna.importance.get_param_importances(study, evaluator=evaluator,
                                                                  target=lambda t, i=i, s=sgn: s * t.values[i])
            except (RuntimeError, ValueError, ZeroDivisionError, ImportError) as exc:
                imp_error = f"{type(exc).__name__}: {exc}"
                continue
            for p, v in imp.items():
                imp_rows.append({"objective": m, "param": p, "importance": float(v), "method": method})
    if imp_rows:
        import pandas as pd

        imp_df = pd.DataFrame(imp_rows)
        files["importances.csv"] = out / "importances.csv"
        imp_df.to_csv(files["importances.csv"], index=False)
        fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 0.5 + 0.4 * len(spec.params)),
                                 squeeze=False)
        for i, m in enumerate(names):
            d = imp_df[imp_df["objective"] == m].sort_values("importance")
            axes[0][i].barh(d["param"], d["importance"], color="C0")
            axes[0][i].set_title(m, fontsize=9)
            axes[0][i].set_xlabel(f"importance ({method})", fontsize=8)
        fig.tight_layout()
        files["importances.png"] = out / "importances.png"
        fig.savefig(files["importances.png"], dpi=110)
        plt.close(fig)

    doc = {"study_name": spec.study_name, "objectives": [{"metric": m, "direction": d} for m, d in spec.objectives],
           "sampler": spec.sampler_name(), "sampler_seed": spec.sampler_seed, "seeds": list(spec.study.seeds),
           "train_windows": ["/".join(w) for w in spec.train], "test_windows": ["/".join(w) for w in spec.test],
           "complete_trials": len(complete), "best": best,
           "importances": imp_rows, "importances_error": imp_error}
    files["best.json"] = out / "best.json"
    files["best.json"].write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    if best:
        files.update(write_winners(spec, out, best))
    return files


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf"))
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def toml_dumps(doc: dict) -> str:
    """A small TOML writer for study specs (tables, arrays of tables, inline values)."""
    lines: list[str] = []
    for k, v in doc.items():
        if not isinstance(v, (dict, list)) or (isinstance(v, list) and not all(isinstance(x, dict) for x in v)) \
                or (isinstance(v, list) and not v):
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"\n[{_toml_key(k)}]")
            for kk, vv in v.items():
                lines.append(f"{_toml_key(kk)} = {_toml_value(vv)}")
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                lines.append(f"\n[[{_toml_key(k)}]]")
                for kk, vv in x.items():
                    lines.append(f"{_toml_key(kk)} = {_toml_value(vv)}")
    return "\n".join(lines).lstrip("\n") + "\n"


def write_winners(spec: TuneSpec, out: Path, best: list[dict]) -> dict[str, Path]:
    """``winners.toml``: the tune spec's study (all windows, same seeds, fixed grid) with the
    winners as grid points, ready for ``twinsweep sweep``. Several winners whose parameters are all
    weights (``options.w_*``) become one ``"options.weights"`` axis (one table per winner); other
    parameters become single-valued axes when there is one winner, else one spec per winner
    (``winners-<trial>.toml``)."""
    doc = {k: v for k, v in spec.doc.items() if k != "tune"}
    study = dict(doc.get("study", {}))
    name = f"{spec.study.name}-winners"
    study["name"] = name
    study["output"] = str(out / "winners")
    study["description"] = (f"Winners of tune study {spec.study_name!r} ({', '.join(m for m, _ in spec.objectives)}); "
                            f"tuned on {', '.join('/'.join(w) for w in spec.train)}"
                            + (f", tested on {', '.join('/'.join(w) for w in spec.test)}" if spec.test else ""))
    doc["study"] = study
    header = (f"# Generated by `twinsweep tune` from study {spec.study_name!r}: re-runs the best trial(s) as a "
              f"normal sweep.\n# Run:  twinsweep sweep {out / 'winners.toml'}\n")
    grid = dict(doc.get("grid", {}))
    files = {}
    all_weights = all(p.option.startswith("w_") for p in spec.params)
    if len(best) == 1 or all_weights:
        g = dict(grid)
        if len(best) == 1:
            for axis, v in best[0]["params"].items():
                g[axis] = [v]
            header += f"# Trial {best[0]['number']}: train {best[0]['values']}, test {best[0].get('test_values')}\n"
        else:
            g["options.weights"] = [{a[len("options.w_"):]: v for a, v in b["params"].items()} for b in best]
            for b in best:
                header += f"# Trial {b['number']}: train {b['values']}, test {b.get('test_values')}\n"
        d = dict(doc)
        d["grid"] = g
        path = out / "winners.toml"
        path.write_text(header + toml_dumps(d))
        files["winners.toml"] = path
    else:
        for b in best:
            g = dict(grid)
            for axis, v in b["params"].items():
                g[axis] = [v]
            d = dict(doc)
            d["grid"] = g
            d["study"] = dict(study, name=f"{name}-{b['number']}", output=str(out / f"winners-{b['number']}"))
            path = out / f"winners-{b['number']}.toml"
            path.write_text(header + f"# Trial {b['number']}: train {b['values']}, test {b.get('test_values')}\n"
                            + toml_dumps(d))
            files[path.name] = path
    return files


# ------------------------------------------------------------------------------------------ CLI
def add_parser(sub) -> None:
    """Add the ``tune`` subcommand to an argparse subparsers object."""
    p = sub.add_parser("tune", help="Optuna search over priority / incentive weights (resumable)", description=(
        "Tune the numeric run options of a tune spec (a study spec + [tune]) with Optuna: TPE for one objective, "
        "NSGA-II (Pareto front) for several. Each trial runs on every train window x seed through the sweep "
        "backends; running the same command again resumes the study. Writes best.json, trials.csv, "
        "pareto.png/history.png, importances, and winners.toml (a sweep spec re-running the winners)."))
    p.add_argument("spec", help="tune spec (TOML), e.g. studies/tune-incentives.toml")
    p.add_argument("--out", default=None, help="output folder (overrides [study] output)")
    p.add_argument("--backend", default=None, type=backend_name, metavar="NAME",
                   help="local, ray, slurm or an installed backend plug-in (overrides [backend] name)")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel workers (overrides [backend] workers; slurm: Optuna worker array tasks, default 4)")
    p.add_argument("--address", default=None, help="Ray cluster address (default: embedded local Ray)")
    p.add_argument("--trials", type=int, default=None, help="finished trials wanted (overrides tune.trials)")
    p.add_argument("--storage", default=None,
                   help="Optuna storage: a journal file path or a SQLAlchemy URL (overrides tune.storage)")
    p.add_argument("--no-test", action="store_true", help="do not evaluate the winners on the test windows")
    add_slurm_args(p)
    p.set_defaults(func=_cmd_tune)


def _cmd_tune(args) -> int:
    def on_trial(number, params, values, errors):
        short = ", ".join(f"{k.replace('options.', '')}={v:.4g}" for k, v in (params or {}).items())
        what = f"values {[round(v, 6) for v in values]}" if values else f"FAILED {'; '.join(errors)[:200]}"
        print(f"trial {number}: {short} -> {what}", file=sys.stderr, flush=True)

    slurm = slurm_overrides(args)
    if slurm and args.backend not in (None, "slurm"):
        raise ConfigError(f"Slurm options ({', '.join('--' + k.replace('_', '-') for k in slurm)}) need --backend slurm")
    try:
        res = run_tune(args.spec, out=args.out, backend=args.backend, trials=args.trials, workers=args.workers,
                       address=args.address, storage=args.storage, test=not args.no_test, on_trial=on_trial,
                       slurm=slurm or None, log=lambda msg: print(msg, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        print("interrupted: finished trials and runs are kept; run the same command again to resume", file=sys.stderr)
        raise
    print(f"{res.ran_trials} trial(s) evaluated now ({res.executed} run(s) simulated), {res.complete} finished "
          f"in the study, {res.wall_s:.1f} s")
    for b in res.best:
        params = ", ".join(f"{k.replace('options.', '')}={v:.4g}" for k, v in b["params"].items())
        print(f"best trial {b['number']}: {params}; train {b['values']}; test {b.get('test_values')}")
    print(f"storage: {res.storage}  (optuna-dashboard {res.storage})")
    for name, path in res.files.items():
        print(f"{name}: {path}")
    return 0
