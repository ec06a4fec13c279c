"""The Optuna study of a tuning: its storage (journal file or SQLAlchemy URL), its seeded sampler,
which trials count as finished, recovery of trials cut by an interruption, and the best trial(s).
Only Optuna's public API is used.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from twinsweep.core.errors import ConfigError

from .spec import TuneSpec

__all__ = ["open_storage", "is_url", "failed_count", "make_sampler", "counted", "recover_interrupted", "requeue_cut_trial",
           "interrupted_numbers", "best_trials"]

def open_storage(spec: TuneSpec, out: Path, override: str | None):
    """The study's storage and its display name: ``override`` or ``tune.storage`` — a SQLAlchemy
    URL (``RDBStorage``), ``"journal"`` (``<out>/optuna.journal``) or a journal file path.

    A URL that cannot be opened (a dialect SQLAlchemy does not know, its database driver not
    installed, a database that cannot be reached) raises one ConfigError naming ``tune.storage``
    (or ``--storage``, the override) and why; :func:`run_tune` opens a URL before it creates
    anything, so that nothing is left behind."""
    import optuna

    s = override or spec.storage
    if is_url(s):
        try:
            return optuna.storages.RDBStorage(s), s
        except Exception as exc:  # noqa: BLE001 - SQLAlchemy's errors (NoSuchModuleError, OperationalError ...)
            where = "--storage" if override else (f"{spec.study.source}: tune.storage" if spec.study.source
                                                  else "tune.storage")
            raise ConfigError(_storage_error(s, where, exc)) from None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    path = out / "optuna.journal" if s == "journal" else Path(s)
    path.parent.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(path))), str(path)


def is_url(storage: str) -> bool:
    """Whether a storage setting is a SQLAlchemy URL (else ``"journal"`` or a journal file)."""
    return "://" in storage


def _storage_error(url: str, where: str, exc: BaseException) -> str:
    scheme = url.split("://", 1)[0]
    why = (str(exc).strip().splitlines() or [""])[0] or type(exc).__name__
    if isinstance(exc, ImportError):
        why = f"its database driver is not installed ({why})"
    elif type(exc).__name__ == "NoSuchModuleError":
        why = f"SQLAlchemy has no dialect {scheme!r} ({why})"
        if scheme == "postgres":
            why += '; SQLAlchemy spells it "postgresql://"'
    elif type(exc).__name__ == "ArgumentError":
        why = f"not a valid SQLAlchemy URL ({why})"
    return (f"{where}: cannot open the Optuna storage {url!r}: {why}. Use \"journal\" (<output>/optuna.journal), "
            "a journal file path, or a SQLAlchemy URL such as sqlite:///tune.db")


def make_sampler(spec: TuneSpec, offset: int = 0):
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


_CUT_PREFIX = "interrupted."  # study user attribute "interrupted.<trial number>" = True


def interrupted_numbers(study) -> set[int]:
    """Numbers of the trials cut by an interruption (marked by :func:`requeue_cut_trial`; trials
    marked by earlier versions with the trial user attribute ``interrupted`` count too)."""
    import optuna

    marked = {int(k[len(_CUT_PREFIX):]) for k, v in study.user_attrs.items() if k.startswith(_CUT_PREFIX) and v}
    fail = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,))
    return marked | {t.number for t in fail if t.user_attrs.get("interrupted")}


def requeue_cut_trial(study, trial) -> None:
    """A trial left RUNNING by an interruption (``trial``: its FrozenTrial): mark it cut, fail it
    and queue its parameters again (the new trial gets the user attribute ``resumed_from``).

    The mark is a study user attribute of its own per trial (``interrupted.<number>``): Optuna's
    public API sets user attributes of a live trial only, and one key per trial keeps concurrent
    Slurm workers from overwriting each other's marks."""
    import optuna

    study.set_user_attr(f"{_CUT_PREFIX}{trial.number}", True)
    study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    if trial.params:
        study.enqueue_trial(trial.params, user_attrs={"resumed_from": trial.number})


def recover_interrupted(study) -> int:
    """Mark trials left RUNNING by an interrupted session as failed and queue their params again;
    returns how many."""
    import optuna

    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for t in running:
        requeue_cut_trial(study, t)
    return len(running)


def counted(study) -> int:
    """Finished trials (complete or failed) that count towards ``tune.trials``: cut trials do not."""
    import optuna

    fin = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    cut = interrupted_numbers(study)
    return sum(1 for t in study.get_trials(deepcopy=False, states=fin) if t.number not in cut)


def failed_count(study) -> int:
    """Failed trials of the study that count towards ``tune.trials`` (:func:`counted`): a run of
    theirs failed, or their metrics were undefined; trials cut by an interruption are not."""
    import optuna

    cut = interrupted_numbers(study)
    return sum(1 for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,))
               if t.number not in cut)


def best_trials(study, spec: TuneSpec) -> list[dict]:
    """The best trial (one objective) or the Pareto set (several, by trial number), as dicts with
    number, params, values, seeds, train_windows and ``test_values`` (None until evaluated)."""
    import optuna

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if not done:
        return []
    best = [study.best_trial] if len(spec.objectives) == 1 else sorted(study.best_trials, key=lambda t: t.number)
    return [{"number": t.number, "params": dict(t.params), "values": list(t.values),
             "seeds": t.user_attrs.get("seeds"), "train_windows": t.user_attrs.get("windows"),
             "test_values": None} for t in best]


def name_objectives(study, spec: TuneSpec) -> None:
    """Give the Optuna study its objectives' metric names (:attr:`TuneSpec.metric_names`), so that
    optuna-dashboard and ``study.metric_names`` show them instead of "Objective 0/1". Idempotent:
    the names live in the storage; called by the driver and by each Slurm worker that loads the
    study. ``set_metric_names`` is marked experimental by Optuna: its warning is silenced."""
    if study.metric_names == spec.metric_names:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.set_metric_names(spec.metric_names)
