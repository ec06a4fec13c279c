"""The Optuna study of a tuning: its storage (journal file or SQLAlchemy URL), its seeded sampler,
which trials count as finished, recovery of trials cut by an interruption, and the best trial(s).
Only Optuna's public API is used.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import warnings
from pathlib import Path

from twinsweep.core.errors import ConfigError

from .spec import TuneSpec

__all__ = ["open_storage", "check_journal", "check_evaluation", "evaluation", "is_url", "failed_count", "make_sampler",
           "counted", "recover_interrupted", "requeue_cut_trial", "interrupted_numbers", "best_trials"]

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
            raise ConfigError(_storage_error(s, _storage_where(spec, override), exc)) from None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    path = out / "optuna.journal" if s == "journal" else Path(s)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path))), str(path)
    except OSError as exc:
        raise ConfigError(_journal_error(path, _storage_where(spec, override), exc)) from None


def _storage_where(spec: TuneSpec, override: str | None) -> str:
    """The setting an error about the storage names: ``--storage`` or ``<spec>: tune.storage``."""
    if override:
        return "--storage"
    return f"{spec.study.source}: tune.storage" if spec.study.source else "tune.storage"


def _journal_error(path: Path, where: str, why) -> str:
    if isinstance(why, OSError):
        why = why.strerror or str(why)
    return (f"{where}: cannot write the Optuna journal file {str(path)!r}: {why}. Use \"journal\" "
            "(<output>/optuna.journal), a journal file path in a writable folder, or a SQLAlchemy URL")


def check_journal(spec: TuneSpec, override: str | None) -> None:
    """A journal file named by ``tune.storage`` (or ``--storage``), checked before anything is
    created: it must be a file one may write (``os.access``), or be creatable (its nearest existing
    ancestor a folder one can write in; probed with a temporary folder, removed again). Raises one
    ConfigError naming the setting. ``"journal"`` (in the output folder) and URLs are not checked
    here: the output folder is checked with the result store, a URL by :func:`open_storage`."""
    s = override or spec.storage
    if s == "journal" or is_url(s):
        return
    path, where = Path(s), _storage_where(spec, override)
    if path.is_dir():
        raise ConfigError(_journal_error(path, where, "it is a folder"))
    try:
        if path.exists():  # an existing journal: asked, not opened (every write goes through core.atomic)
            if not os.access(path, os.W_OK):
                raise ConfigError(_journal_error(path, where, "it cannot be written (permissions)"))
            return
        anc = path.parent.absolute()
        while not anc.exists() and anc != anc.parent:
            anc = anc.parent
        if not anc.is_dir():
            raise ConfigError(_journal_error(path, where, f"{anc} is a file, not a folder"))
        os.rmdir(tempfile.mkdtemp(prefix=".twinsweep-probe-", dir=anc))
    except OSError as exc:
        raise ConfigError(_journal_error(path, where, exc)) from None


def evaluation(spec: TuneSpec) -> dict:
    """What a trial's objective values depend on besides its parameters (JSON, as stored): the
    seeds, the train windows (their trace, system and span), the fixed grid and the perturbation."""
    st = spec.study
    ds = {d.name: d for d in st.datasets}
    train = []
    for dname, wname in spec.train:
        d = ds[dname]
        w = next(w for w in d.windows if w.name == wname)
        train.append({"window": f"{dname}/{wname}", "trace": d.trace, "system": d.system, "format": d.format,
                      "lenient": d.lenient, "tz": d.tz, "start": w.start, "duration": w.duration})
    doc = {"seeds": list(st.seeds), "train_windows": train, "grid": {a: list(v) for a, v in st.grid},
           "perturbation": dataclasses.asdict(st.perturbation)}
    return json.loads(json.dumps(doc, sort_keys=True, default=str))


def _flat(doc: dict) -> dict:
    """:func:`evaluation` as ``{dotted key: value}`` (train windows by name, their names as one
    list), so that an error names only what differs."""
    out = {}
    for k, v in doc.items():
        if k == "train_windows" and all(isinstance(w, dict) for w in v):
            out[k] = [w.get("window") for w in v]
            for w in v:
                out.update({f"{k}.{w.get('window')}.{f}": x for f, x in w.items() if f != "window"})
        elif isinstance(v, dict):
            out.update({f"{k}.{f}": x for f, x in v.items()})
        else:
            out[k] = v
    return out


def check_evaluation(study, spec: TuneSpec, storage: str) -> None:
    """Refuse to resume a study whose trials were evaluated otherwise (:func:`evaluation`: other
    seeds, train windows, fixed grid or perturbation): their values and the new trials' would not
    be comparable, yet would share one best trial / Pareto front. Raises one ConfigError naming
    what differs; records the evaluation on a study that has none (study user attribute
    ``evaluation``; a study of an earlier version is checked on its seeds and train windows)."""
    now = evaluation(spec)
    attrs = study.user_attrs  # one storage round trip (Optuna reads and copies them at each access)
    prev = attrs.get("evaluation")
    if prev is None:
        old = attrs.get("spec")
        if isinstance(old, dict) and "seeds" in old and "train" in old:
            prev = {"seeds": old["seeds"], "train_windows": ["/".join(w) for w in old["train"]]}
            cur = {"seeds": now["seeds"], "train_windows": [w["window"] for w in now["train_windows"]]}
        else:
            prev, cur = None, None
    else:
        cur = now
    if prev is not None and prev != cur:
        a, b = _flat(prev), _flat(cur)
        diff = [f"{k} {a.get(k)!r}, this spec {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        raise ConfigError(f"storage {storage}: study {spec.study_name!r} evaluated its trials with other "
                          f"settings ({'; '.join(diff)}); old and new trials' values would not be comparable: "
                          "use another study_name or output folder")
    if attrs.get("evaluation") != now:
        study.set_user_attr("evaluation", now)


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
