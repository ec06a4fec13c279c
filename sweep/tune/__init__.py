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

The tuned options are checked when the spec is read, as a sweep's ``options.<name>`` axes are
(:func:`sweep.gridcheck.check_tuned_options`: the scheduler is built with every tuned option at its
low, then at its high bound), so a misspelt name is one error before anything runs; a storage URL
is opened before the output folder is created, and one that cannot be opened is one error naming
``tune.storage`` (or ``--storage``), as is a journal file path that cannot be written (checked
before anything is created). An output folder without ``tune.json`` that holds files a tuning writes
(the user's own ``best.json`` ...) or a sweep's results (``study.json``) is refused the same way
(:func:`sweep.tune.run.check_tune_folder`), named by ``--out`` or the spec's ``study.output``. A ``step`` must divide ``high - low`` (an integer one for ``int``).

A run that fails makes its trial fail (recorded in ``failed/<key>/error.json`` and in the trial's
``error`` attribute); runs are not retried within a tuning (``[study] retries`` is ignored). Failed
trials count towards ``trials`` (so a run that always fails is not retried for ever); the summary
line says how many failed, and ``twinsweep tune`` then exits with status 1, as ``twinsweep sweep``
does when runs failed (the outputs are written all the same).

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
attribute), so a resumed session neither repeats nor depends on wall-clock. A study whose trials
were evaluated with other seeds, train windows, fixed grid or perturbation (study user attribute
``evaluation``) is not resumed: one error names what differs. Finished trials are kept;
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

__all__ = ["TuneParam", "TuneSpec", "TuneResult", "load_tune_spec", "parse_tune_spec", "run_tune",
           "pareto_front", "add_parser"]

#: where each public name lives; loaded on first use, so that building the ``twinsweep`` parser
#: (``sweep.tune.cli.add_parser``) imports neither Optuna nor the study spec nor the backends
_LAZY = {"pareto_front": "evaluator", "TuneResult": "result", "run_tune": "run", "TuneParam": "spec",
         "TuneSpec": "spec", "load_tune_spec": "spec", "parse_tune_spec": "spec", "add_parser": "cli"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
