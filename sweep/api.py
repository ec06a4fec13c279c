"""Public Python API of sweeps (what ``twinsweep sweep`` and ``twinsweep report`` call).

Example (notebook)::

    from twinsweep.sweep.api import run_sweep
    res = run_sweep("studies/quickstart.toml", out="results/qs", backend="local", workers=2)
    res.table()          # runs.parquet as a DataFrame
    res.report           # path of report/index.html
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from twinsweep.core.atomic import DISK_FULL_ERRNOS, atomic_write_bytes, disk_full_error, is_disk_full
from twinsweep.backends.base import BACKENDS, batch_queue_backends
from twinsweep.core.errors import ConfigError, DiskFullError, TwinError

from .expand import (RunItem, check_distinct_windows, expand, grid_size, iter_items, load_datasets, plan_frame,
                     planned_item)
from .spec import StudySpec, load_spec
from .store import SWEEP_JSON, ResultStore


@dataclasses.dataclass
class SweepResult:
    """What a sweep did.

    ``out``: output folder; ``planned``: runs in the study; ``skipped``: already complete before
    this call; ``ran``: completed now; ``failed``: keys still failing after every retry;
    ``attempts``: extra attempts used by retries; ``interrupted``: stopped by Ctrl-C;
    ``table`` / ``aggregate`` / ``report``: paths of runs.parquet, aggregate.parquet and the HTML
    report (None when not built); ``wall_s``: seconds in all (loading the traces, the runs, the
    tables and the report); ``runs_s``: seconds of those spent running, from the backend's start
    to the last run's result (what the progress bar times); ``outputs_s``: seconds spent writing runs.parquet, the
    aggregates and the report after the last run; ``items``: the expanded plan;
    ``slurm``: for a detached Slurm sweep (``detach=True``), what was submitted (``submission``,
    ``jobs``, ``tasks``, ``adopted``, ``folder``), else None.
    """

    out: Path
    planned: int
    skipped: int = 0
    ran: int = 0
    failed: list[str] = dataclasses.field(default_factory=list)
    attempts: int = 0
    interrupted: bool = False
    table_path: Path | None = None
    aggregate_path: Path | None = None
    report: Path | None = None
    wall_s: float = 0.0
    runs_s: float = 0.0
    outputs_s: float = 0.0
    items: list[RunItem] = dataclasses.field(default_factory=list, repr=False)
    slurm: dict | None = None

    def table(self) -> pd.DataFrame:
        """runs.parquet as a DataFrame."""
        return ResultStore(self.out).read_table()


def _as_spec(spec: StudySpec | str | os.PathLike) -> StudySpec:
    return spec if isinstance(spec, StudySpec) else load_spec(spec)


def plan_sweep(spec: StudySpec | str | os.PathLike, datasets=None) -> tuple[StudySpec, dict, list[RunItem]]:
    """Load the datasets and expand the grid: ``(spec, datasets, items)`` (items in plan order)."""
    spec = _as_spec(spec)
    datasets = datasets if datasets is not None else load_datasets(spec)
    return spec, datasets, expand(spec, datasets)


def dry_run(spec: StudySpec | str | os.PathLike, out: str | os.PathLike | None = None) -> dict[str, Any]:
    """What a sweep would do, writing nothing: ``{"sizes": grid_size(), "runs", "done", "missing",
    "keys": first keys, "out", "warnings": the datasets' warnings (windows past their trace's last
    submission, the traces' own)}``.

    The grid is counted, never expanded: the first runs come from :func:`sweep.expand.iter_items`,
    the complete ones are counted from the output folder's run folders (each one's coordinates
    rebuilt into its planned run and its key compared, :func:`sweep.expand.planned_item`), and the
    runs' identities are checked per dataset-window (:func:`sweep.expand.check_distinct_windows`;
    the grid points were checked when the spec was loaded). So a 10^7-point grid answers in well
    under a second (bench/bench_dry_run.py) once its traces are loaded. Raises ConfigError as
    :func:`run_sweep` would for the same spec.
    """
    spec = _as_spec(spec)
    datasets = load_datasets(spec)
    check_distinct_windows(spec, datasets)
    root = Path(out if out is not None else spec.output)
    n_done = 0
    store = ResultStore(root)
    for key in sorted(store.done_keys()):
        try:
            coords = store.read_run_json(key, SWEEP_JSON)
        except (OSError, ValueError):
            continue  # unreadable: the sweep sets it aside and runs it again
        item = planned_item(spec, datasets, coords) if isinstance(coords, dict) else None
        n_done += item is not None and item.key == key
    sizes = grid_size(spec)
    return {"sizes": sizes, "runs": sizes["runs"], "done": n_done, "missing": sizes["runs"] - n_done,
            "keys": [it.label() for it in itertools.islice(iter_items(spec, datasets), 5)], "out": str(root),
            "warnings": [w for ds in datasets.values() for w in ds.warnings]}


def run_sweep(spec: StudySpec | str | os.PathLike, out: str | os.PathLike | None = None, backend: str | None = None,
              workers: int | None = None, address: str | None = None, retries: int | None = None,
              progress: bool = False, report: bool = True, run_fn: Callable | None = None,
              backend_options: dict | None = None, slurm: dict | None = None, detach: bool = False,
              log: Callable[[str], None] | None = None, replace_plan: bool = False) -> SweepResult:
    """Run (or resume) a study; returns a :class:`SweepResult`.

    ``out``/``backend``/``workers``/``address`` override the spec; ``retries``: extra attempts of a
    failing run (default: the spec's ``study.retries``); ``progress``: True shows a rich progress bar,
    ``"lines"`` one stderr line per tenth of the runs (:class:`sweep.progress.SweepProgress`);
    ``report``: build the aggregate tables and the HTML report at the end; ``run_fn``: the function
    the backend runs per task (default :func:`sweep.runner.execute_run`; same contract);
    ``slurm``: Slurm options merged over the spec's ``[backend.slurm]`` (slurm backend; array tasks
    write into ``<out>/slurm``); ``detach``: (slurm only) submit the missing runs and return at once
    (``res.slurm`` says what was submitted; :func:`sweep_status` follows it, and the same call
    without ``detach`` follows the queued arrays to the end and builds the report);
    ``log``: called with one-line messages (Slurm submissions, damaged runs moved to quarantine);
    default: :func:`warnings.warn` for warnings, nothing for the rest; ``replace_plan``: accept a
    spec whose plan differs from the one the output folder's study.json records (or whose study
    name differs), making it the folder's plan (:mod:`sweep.planid`; an extension — added seeds,
    grid values, windows or datasets — needs no flag).

    The output folder is resolved to an absolute path here, in the driver (workers elsewhere would
    resolve a relative one against their own working directory). Only runs without a complete,
    readable ``runs/<key>/`` are executed (a damaged one is moved to ``quarantine/`` and run again,
    :meth:`sweep.store.ResultStore.usable_keys`). A run that raises is recorded in
    ``failed/<key>/error.json`` and retried; it never stops the others. After each run the driver
    checks that its folder is there; when it is not and the backend can ship files (Ray workers
    without a shared filesystem), that run and the following ones send their files back to the
    driver, else the sweep stops with :class:`SweepError`. A full disk stops the sweep with
    :class:`core.errors.DiskFullError` (the complete runs are kept). On Ctrl-C the backend is
    stopped, runs.parquet is rebuilt from what is complete (marked partial) and KeyboardInterrupt
    propagates. Raises ConfigError for a bad spec or an output folder that is a file, cannot be
    created, holds another study or files of the user's; StoreBusyError when another sweep holds
    the folder.
    """
    from .runner import execute_run

    t0 = time.perf_counter()
    spec = _as_spec(spec).with_overrides(output=str(out) if out is not None else None, backend=backend,
                                           workers=workers, address=address, slurm=slurm)
    if detach and not BACKENDS.get(spec.backend.name).batch_queue:
        queues = list(batch_queue_backends())
        raise ConfigError(f"--detach needs a batch-queue backend ({', '.join(queues)}); this sweep uses "
                          f"{spec.backend.name!r}")
    root = Path(spec.output).expanduser().absolute()
    spec = spec.with_overrides(output=str(root))
    retries = spec.retries if retries is None else int(retries)
    run_fn = run_fn or execute_run
    where = output_where(spec, root, given=out is not None)
    check_output_folder(root, where)
    store = ResultStore(root, log=log)
    # what this call creates (ResultStore.create, before the datasets are checked): removed again
    # when the sweep stops before writing anything into it
    made = [d for d in (root, store.runs_dir, store.failed_dir) if not d.exists()]
    try:
        with store.locked():
            return _run_locked(spec, store, retries, run_fn, progress, report, backend_options, detach, log, t0,
                               replace_plan, where)
    except OSError as exc:  # a full disk anywhere in the driver: one clear line, never a traceback
        _remove_if_untouched(made)
        if is_disk_full(exc):
            raise disk_full_error(root, exc) from exc
        raise
    except BaseException:  # e.g. a spec refused before any run: no empty results folder left behind
        _remove_if_untouched(made)
        raise


def _remove_if_untouched(made: list[Path]) -> None:
    """Remove the folders of ``made`` (those a sweep call created: the results folder, its
    ``runs/`` and ``failed/``), deepest first, when every one of them is still empty once the
    deeper ones are gone: a sweep that wrote anything (a run, a failure record, study.json) keeps
    its whole skeleton."""
    made = sorted(made, key=lambda p: len(p.parts), reverse=True)
    inside = set(made)
    for d in made:
        try:
            if any(p not in inside for p in d.iterdir()):
                return
        except OSError:
            return
    for d in made:
        try:
            d.rmdir()
        except OSError:
            return


class SweepError(TwinError):
    """The sweep cannot go on (e.g. the workers write where the driver cannot see it)."""


def output_where(spec: StudySpec, root: Path, given: bool) -> str:
    """How an error about the output folder ``root`` names where it came from: ``--out ROOT`` when
    the caller gave it (``--out``, ``out=``), else the spec's key, ``SPEC.toml: study.output ROOT``."""
    if given:
        return f"--out {root}"
    return f"{spec.source + ': ' if spec.source else ''}study.output {root}"


def output_clash(root: Path, names, empty_folders: bool = True) -> list[str]:
    """The entries of folder ``root`` named in ``names`` (files a command would write there),
    sorted; ``empty_folders``: an empty folder of such a name counts too."""
    return [p.name for p in sorted(root.iterdir())
            if p.name in names and (empty_folders or p.is_file() or any(p.iterdir()))]


def check_output_folder(root: Path, where: str | None = None) -> None:
    """Refuse, before anything runs, an output folder that is a file, or a folder that is not a
    twinsweep results folder (no ``study.json``) but already holds files a sweep would write
    (``plan.csv``, ``runs.parquet``, ``report/`` ...): they are someone else's. Raises ConfigError
    starting with ``where`` (:func:`output_where`; default ``--out ROOT``)."""
    where = where or f"--out {root}"
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{where}: is a file, not a folder; give a folder for the results")
    if root.is_dir() and not (root / "study.json").exists():
        clash = output_clash(root, _SWEEP_OUTPUTS, empty_folders=False)
        if clash:
            raise ConfigError(f"{where}: not a twinsweep results folder (no study.json) but it holds "
                              f"{', '.join(clash)}, which a sweep would overwrite; choose another --out")


#: Names a sweep writes in its output folder.
_SWEEP_OUTPUTS = frozenset({"study.toml", "study.json", "datasets.json", "plan.csv", "runs.parquet",
                            "aggregate.parquet", "aggregate.csv", "report", "runs", "failed", "quarantine", "slurm"})


def _read_study(store: ResultStore) -> dict | None:
    """The folder's study.json (None when there is none). Raises ConfigError when it cannot be read."""
    from twinsweep.core.errors import ConfigError

    if not (store.root / "study.json").exists():
        return None
    try:
        doc = store.read_json("study.json")
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{store.root / 'study.json'}: cannot be read ({exc}); this folder's study is unknown; "
                          "choose another --out") from exc
    return doc


def _check_study(store: ResultStore, spec: StudySpec, replace_plan: bool, where: str) -> None:
    """A results folder belongs to the study named in its study.json: refuse another study's spec
    (it would rebuild the table and report of the folder from its own plan), unless ``replace_plan``.
    ``where``: how the error names the folder (:func:`output_where`)."""
    from twinsweep.core.errors import ConfigError

    doc = _read_study(store)
    name = None if doc is None else doc.get("name")
    if doc is not None and name != spec.name and not replace_plan:
        raise ConfigError(f"{where}: this results folder belongs to study {name!r} (study.json); the spec "
                          f"is study {spec.name!r}; choose another --out (or give the spec the folder's study name, "
                          "or pass --replace-plan to make this spec the folder's study)")


def _check_plan(store: ResultStore, plan: dict, replace_plan: bool, where: str) -> tuple[list[str], list[str]]:
    """Compare the spec's plan (:func:`sweep.planid.plan_fingerprint`) with the one the folder's
    study.json records: ``(added, differences)`` (:func:`sweep.planid.compare_plans`; both empty
    for a folder without a recorded plan). Raises ConfigError listing the differences when the spec
    is not the folder's plan or an extension of it, unless ``replace_plan``."""
    from twinsweep.core.errors import ConfigError

    from .planid import compare_plans

    doc = _read_study(store)
    if doc is None or not isinstance(doc.get("plan"), dict):
        return [], []  # a new folder, or one written before plans were recorded
    added, diff = compare_plans(doc["plan"], plan)
    if diff and not replace_plan:
        raise ConfigError(
            f"{where}: the spec's plan is not this results folder's study {doc.get('name')!r} (study.json) "
            f"nor an extension of it: {'; '.join(diff)}; choose another --out, run the folder's own spec (a copy is "
            f"{store.root / 'study.toml'}), or pass --replace-plan to make this spec's plan the folder's")
    return added, diff


def _warn_edited_spec(store: ResultStore) -> None:
    """Warn (through the store's log) when the folder's ``study.toml`` is not the text the sweep
    wrote there (its sha256 in ``study.json``): the report reads ``study.json``, the spec as the
    sweep resolved it, so an edit of ``study.toml`` (a [report] or [rank] table, say) changes
    nothing until the sweep runs with it, reusing every complete run. Folders of a version that
    did not record the hash are not checked."""
    study = store.read_json("study.json")
    want = study.get("study_toml_sha256")
    path = store.root / "study.toml"
    if not want or not path.exists():
        return
    if hashlib.sha256(path.read_bytes()).hexdigest() != want:
        store.warn(f"{path} was edited after the sweep wrote it: the report reads study.json (the spec as the sweep "
                   f"ran it), not the edit; to apply an edit, run the sweep with the edited spec, `twinsweep sweep "
                   f"SPEC --out {store.root}` (the sweep ran {study.get('source') or 'a spec given in code'}; every "
                   "complete run is reused, and a change of the plan is refused, naming it)")


def _disk_full_outcome(outcome) -> bool:
    """A run that failed for a full disk or quota: its errno (a DiskFullError carries ENOSPC;
    ``backends.base.call_safely`` records the errno of any OSError, also one pyarrow wrapped)."""
    return outcome.errno in DISK_FULL_ERRNOS


def _run_locked(spec, store, retries, run_fn, progress, report, backend_options, detach, log, t0,
                replace_plan, where) -> "SweepResult":
    """The body of :func:`run_sweep`, with the folder's lock held."""
    from twinsweep.backends.base import Task, make_backend
    from .progress import SweepProgress
    from .runner import RunWarnings, commit_shipped, make_payload

    from .planid import plan_fingerprint, plan_sha256

    store.clean_tmp()
    _check_study(store, spec, replace_plan, where)
    spec, datasets, items = plan_sweep(spec)
    plan = plan_fingerprint(spec, datasets)
    added, diff = _check_plan(store, plan, replace_plan, where)  # before anything is written
    bk = make_backend(spec.backend.name, workers=spec.backend.workers, address=spec.backend.address,
                      **_backend_options(spec, store, backend_options, log))
    _check_backend_first(bk, items, store)  # the cluster's checks, before anything is written too
    if diff:
        store.warn(f"--replace-plan: this spec's plan replaces the folder's ({'; '.join(diff)})")
    elif added:
        store.warn(f"the spec extends this folder's study ({', '.join(added)}): the added runs run now")
    for ds in datasets.values():  # windows past their trace's last submission, the traces' own (once)
        for w in ds.warnings:
            store.warn(w)
    if spec.source:
        try:
            text = Path(spec.source).read_bytes()
        except OSError:
            text = None
        if text is not None:
            atomic_write_bytes(store.root / "study.toml", text)
    toml_sha = {"study_toml_sha256": hashlib.sha256(text).hexdigest()} if spec.source and text is not None else {}
    store.write_json("study.json", spec.to_dict() | {"plan": plan, "plan_sha256": plan_sha256(plan)} | toml_sha)
    store.write_json("datasets.json", {name: ds.describe() for name, ds in datasets.items()})
    store.write_text("plan.csv", plan_frame(items).to_csv(index=False))

    by_key = {it.key: it for it in items}
    done = store.usable_keys(by_key)  # damaged run folders go to quarantine/ and run again
    todo = [it for it in items if it.key not in done]
    res = SweepResult(out=store.root, planned=len(items), skipped=len(items) - len(todo), items=items)
    if detach and todo:
        with bk:
            needed = {it.dataset for it in todo}
            shared = {name: (datasets[name].workload, datasets[name].system) for name in needed}
            res.slurm = bk.submit([Task(it.key, make_payload(it, store.runs_dir), it.dataset) for it in todo],
                                  run_fn, shared)
        res.table_path = store.write_table(by_key)  # what is complete so far
        res.wall_s = time.perf_counter() - t0
        return res
    n_ok = n_failed = 0
    attempts: dict[str, int] = {}
    ship = {"on": False}  # switched on when the workers turn out not to see the results folder
    failed_final: list[str] = []
    run_warnings = RunWarnings()  # said once each, after the runs
    try:
        with bk, SweepProgress(len(todo), f"{spec.name} ({res.skipped} already done)", enabled=progress) as bar:
            t_runs = time.perf_counter()  # the backend has started (Ray: its cluster): the bar's clock starts here too
            round_no = 0
            while todo:
                round_no += 1
                retrying = [it for it in todo if attempts.get(it.key, 0) > 0]
                if round_no > 1 and retrying:
                    res.attempts += len(retrying)
                    bar.retry_round(len(todo), round_no)
                needed = {it.dataset for it in todo}
                shared = {name: (datasets[name].workload, datasets[name].system) for name in needed}
                tasks = _TaskStream(todo, store.runs_dir, ship["on"], collect_warnings=not detach)
                again = []
                for outcome in bk.run(tasks, run_fn, shared):
                    it = by_key[outcome.key]
                    if outcome.ok:
                        result = outcome.result if isinstance(outcome.result, dict) else {}
                        if result.get("status") == "shipped":
                            commit_shipped(store.runs_dir, result)
                        if not store.is_done(outcome.key):
                            if not bk.ships_files:
                                raise SweepError(
                                    f"run {outcome.key} finished on {outcome.worker or 'a worker'} but "
                                    f"{store.run_dir(outcome.key)} does not exist here: the workers do not see this "
                                    "results folder; put it on a filesystem the workers share")
                            if not ship["on"]:
                                ship["on"] = True
                                store.warn(f"run {outcome.key} finished on {outcome.worker or 'a worker'} but its folder "
                                           f"is not under {store.runs_dir}: the workers do not see this folder (no "
                                           "shared filesystem); runs now send their files back to the driver")
                            again.append(it)  # run again, shipping its files (not a failed attempt)
                            continue
                        if attempts.get(outcome.key, 0) > 0:
                            n_failed -= 1
                        store.clear_failure(outcome.key)
                        run_warnings.add(result)  # once per run that counts (not a run sent again to ship)
                        n_ok += 1
                    else:
                        if _disk_full_outcome(outcome):
                            raise DiskFullError(f"disk full: run {outcome.key} could not be written "
                                                f"({outcome.error}); the sweep stopped, the {len(store.done_keys())} "
                                                "complete run(s) are kept; free some space and run the same command "
                                                "again")
                        if attempts.get(outcome.key, 0) == 0:
                            n_failed += 1
                        attempts[outcome.key] = attempts.get(outcome.key, 0) + 1
                        store.record_failure(outcome.key, outcome.error, outcome.traceback, attempts[outcome.key],
                                             info=it.label() | {"config": it.config.to_dict()},
                                             worker=outcome.worker)
                        if attempts[outcome.key] <= retries and not outcome.deterministic:
                            again.append(it)
                        else:
                            failed_final.append(outcome.key)
                    bar.update(done=n_ok, failed=n_failed, running=bk.in_flight)
                todo = again
            res.runs_s = time.perf_counter() - t_runs  # the last run is in (the backend still stops)
        run_warnings.say()
    except (KeyboardInterrupt, DiskFullError, SweepError):
        run_warnings.say()
        res.interrupted = True
        res.ran = n_ok
        res.failed = sorted(store.failed_keys() & set(by_key))
        try:
            res.table_path = store.write_table(by_key, interrupted=True)
        except DiskFullError:
            pass  # the earlier table stays as it was (written atomically)
        res.wall_s = time.perf_counter() - t0
        raise
    t_outputs = time.perf_counter()
    res.ran = n_ok
    res.failed = sorted(failed_final)
    res.table_path = store.write_table(by_key)
    if not res.failed:  # every run is in: the pool's dataset file is not needed again
        shutil.rmtree(store.cache_dir, ignore_errors=True)
    if report:
        build_outputs(store.root, res)
    res.outputs_s = time.perf_counter() - t_outputs
    res.wall_s = time.perf_counter() - t0
    return res


def _check_backend_first(bk, items, store: ResultStore) -> None:
    """The backend's checks against what it runs on (:meth:`backends.base.Backend.validate`;
    ``slurm``: the partition, the time limit, ``sbatch --test-only``), run before the sweep writes
    anything (study.json, plan.csv, runs/), so that a refused option leaves no results folder
    behind. Only when some run is still to do: a complete folder does not need the cluster."""
    done = store.done_keys()  # one listing of runs/, not a stat per run
    if any(it.key not in done for it in items):
        bk.validate()


class _TaskStream:
    """The backend's tasks of a round: one :class:`backends.base.Task` per item, built as the
    backend takes them (a payload is built only when its run is dispatched, so the driver never
    holds every payload of a large sweep at once) but *sized* (``len``), so that a backend that
    batches runs per dispatch (``ray``: :func:`backends.ray_backend.auto_runs_per_call`) sizes its
    batches from the number of runs instead of the short batches it uses for a stream of unknown
    length."""

    def __init__(self, items, runs_dir: Path, ship: bool, collect_warnings: bool = False):
        self._items, self._runs_dir, self._ship = list(items), runs_dir, ship
        self._collect = collect_warnings

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        from twinsweep.backends.base import Task
        from .runner import make_payload

        for it in self._items:
            yield Task(it.key, make_payload(it, self._runs_dir, ship=self._ship, collect_warnings=self._collect), it.dataset)


def _backend_options(spec: StudySpec, store: ResultStore, extra: dict | None, log) -> dict:
    """Keyword arguments of make_backend beyond name/workers/address: what the backend's class asks
    for a study writing into this results folder (:meth:`backends.base.Backend.study_options`: the
    spec's ``[backend.slurm]`` table, the results and cache folders, ``log``), then ``extra``
    (the caller's)."""
    cls = BACKENDS.get(spec.backend.name)
    opts = cls.study_options(spec.backend.slurm, store.root.absolute(), store.cache_dir, log)
    opts.update(extra or {})
    return opts


def _lock_holder(root: Path) -> str | None:
    """Who holds ``root/.lock`` (``host:pid``), or None when nobody does (never creates the file)."""
    import fcntl

    try:
        fd = os.open(root / ".lock", os.O_RDWR)
    except OSError:
        return None
    with os.fdopen(fd, "r+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            return fh.read().strip() or "unknown process"
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


def _plan_keys(root: Path) -> list[str]:
    return list(ResultStore(root).read_plan(["key"])["key"])


def _rebuild_table(store: ResultStore, planned: list[str] | None = None) -> Path:
    """Rebuild runs.parquet from the complete run folders, holding the folder's lock (damaged
    folders go to quarantine/); ``planned``: the plan's keys (default: plan.csv's, when there is
    one), so that the table records whether it covers the whole plan. Used by ``twinsweep status``
    and ``twinsweep report``. Raises StoreBusyError when a sweep holds the folder."""
    if planned is None and store.has("plan.csv"):
        planned = _plan_keys(store.root)
    with store.locked():
        return store.write_table(planned)


def sweep_status(results: str | os.PathLike, rebuild: bool = True) -> dict[str, Any]:
    """Progress of a sweep's results folder (``twinsweep status``), also while Slurm array tasks
    of a detached sweep are writing into it. Reads only JSON, CSV and parquet files twinsweep
    wrote; never unpickles anything.

    Returns ``{"out", "study", "planned", "done", "missing", "failed": [{key, error, log}],
    "damaged": [{key, problem}] (run folders that cannot be read completely: not counted as done;
    the next sweep moves them to quarantine/ and runs them again), "slurm":
    :func:`backends.slurm.folder_status` or None, "busy": host:pid of a sweep holding the folder or
    None, "complete", "table": runs.parquet path when (re)built or current, "table_info":
    :meth:`sweep.store.ResultStore.table_info` (``complete`` False = partial)}``. With ``rebuild``,
    a complete sweep whose runs.parquet is missing or older than its runs gets it rebuilt (when no
    sweep holds the folder). Raises FileNotFoundError when the folder holds no sweep plan.
    """
    from .store import StoreBusyError

    root = Path(results)
    if not (root / "plan.csv").exists():
        if (root / "study.json").is_file():  # a sweep's folder that lost its plan: say so, and how to get it back
            raise FileNotFoundError(f"{root}: a sweep's results folder (study.json) without its plan.csv, which lists "
                                    f"the planned runs; run the sweep again to rewrite it (`twinsweep sweep SPEC --out "
                                    f"{root}` runs only what is missing; a copy of the spec is {root / 'study.toml'})")
        raise FileNotFoundError(f"{root}: no sweep here (missing plan.csv); start one with `twinsweep sweep`")
    planned = _plan_keys(root)
    store = ResultStore(root, log=lambda msg: None)
    want = set(planned)
    done, bad = store.check_runs(want)
    failed = {k: {"key": k, "error": doc.get("error"), "log": None, "record": str(store.failure_dir(k))}
              for k, doc in store.failures(want).items()}
    slurm_info = None
    if (root / "slurm").is_dir():
        from twinsweep.backends.slurm import folder_status

        slurm_info = folder_status(root / "slurm", done)
        for f in slurm_info["failed_runs"]:
            failed.setdefault(f["key"], {"key": f["key"], "error": f["error"], "log": f["log"], "record": None})
            failed[f["key"]]["log"] = f["log"]
    study = None
    try:
        study = store.read_json("study.json").get("name")
    except (OSError, ValueError, AttributeError):
        pass
    busy = _lock_holder(root)
    complete = len(done) == len(want)
    table = store.table_path
    if complete and rebuild and busy is None:
        newest = max((store.run_dir(k).stat().st_mtime for k in done), default=0.0)
        if not table.exists() or table.stat().st_mtime < newest or not (store.table_info() or {}).get("complete"):
            try:
                _rebuild_table(store, planned)
            except StoreBusyError:
                pass
    return {"out": str(root), "study": study, "planned": len(want), "done": len(done),
            "missing": len(want) - len(done), "failed": list(failed.values()),
            "damaged": [{"key": k, "problem": v} for k, v in sorted(bad.items())], "slurm": slurm_info,
            "busy": busy, "complete": complete, "table": str(table) if table.exists() else None,
            "table_info": store.table_info()}


def dask_target(results: str | os.PathLike, scheduler: str | None = None,
                address: str | None = None) -> tuple[str | None, str | None]:
    """Where the pooled distributions are computed (:mod:`sweep.distributions`): the given
    ``scheduler`` / ``address`` when either is set; else the study's Ray cluster (Dask on Ray)
    when the sweep ran on a Ray cluster given by address; else ``(None, None)``: the local
    scheduler (threads, or in-process for a single partition)."""
    if scheduler or address:
        return scheduler, address
    try:
        backend = ResultStore(results).read_json("study.json").get("backend") or {}
    except (OSError, ValueError, AttributeError):
        return None, None
    if backend.get("address"):
        try:
            sched = BACKENDS.get(str(backend.get("name"))).distributions_scheduler
        except ConfigError:  # a plug-in backend that is not installed here: compute locally
            sched = None
        if sched:
            return sched, backend["address"]
    return None, None


def build_outputs(results: str | os.PathLike, res: SweepResult | None = None, include_incomplete: bool = False,
                  scheduler: str | None = None, address: str | None = None) -> Path:
    """Aggregate runs.parquet (``aggregate.parquet`` / ``aggregate.csv``), compute the pooled job
    and timeline distributions with Dask (``distributions.parquet``,
    ``distribution_quantiles.parquet``; ``scheduler`` / ``address``: see :func:`dask_target`) and
    build the report; returns the report's path (``report/index.html``). ``include_incomplete``: rank
    blocks that miss some of their planned runs too (see :func:`sweep.report.build_report`)."""
    from .aggregate import aggregate_results
    from .distributions import pooled_distributions
    from .report import build_report

    root = Path(results)
    plan = ResultStore(root).read_plan()  # once for the three
    agg_path = aggregate_results(root, plan=plan)
    pooled_distributions(root, *dask_target(root, scheduler, address), plan=plan)
    path = build_report(root, include_incomplete=include_incomplete, plan=plan)
    if res is not None:
        res.aggregate_path, res.report = agg_path, path
    return path


def report(results: str | os.PathLike, include_incomplete: bool = False,
           log: Callable[[str], None] | None = None, scheduler: str | None = None, address: str | None = None) -> Path:
    """Rebuild the aggregate tables, the pooled distributions and the HTML report of an output
    folder; returns the page's path. ``scheduler`` / ``address``: where Dask computes the
    distributions (:func:`dask_target`).

    Every run in runs.parquet is checked first (:func:`sweep.store.check_run_dir`): when one cannot
    be read completely, or its folder is gone, the folder is locked, the damaged runs are moved to
    ``quarantine/`` (one warning line each, through ``log``) and runs.parquet is rebuilt, so the
    report never counts a run it cannot read. Blocks (dataset, window, seed) that miss planned runs
    are left out of the rankings unless ``include_incomplete`` (the page says which either way).

    A folder whose runs.parquet is missing (deleted, or a sweep killed before writing it) or lacks
    runs completed after it was written (the array tasks of a detached Slurm sweep) gets it rebuilt
    from its complete run folders first, as ``twinsweep status`` does (one line through ``log``).

    Raises FileNotFoundError when the folder holds no sweep results (no study.json, or neither
    runs.parquet nor a run folder), and StoreBusyError when runs.parquet must be rebuilt or damaged
    runs set aside while a sweep is writing there.
    """
    root = Path(results)
    store = ResultStore(root, log=log)
    if not store.has("study.json"):
        raise FileNotFoundError(f"{root}: no sweep results here (missing study.json); run `twinsweep sweep` first")
    _warn_edited_spec(store)
    planned = _plan_keys(root) if store.has("plan.csv") else None
    if not store.has("runs.parquet"):
        runs = store.done_keys() if planned is None else store.done_keys() & set(planned)
        if not runs:
            raise FileNotFoundError(f"{root}: no sweep results here (missing runs.parquet, and no run folder in "
                                    f"{store.runs_dir}); run `twinsweep sweep` first")
        _rebuild_table(store, planned)
        info = store.table_info() or {}
        if not info.get("runs"):
            raise FileNotFoundError(f"{root}: no sweep results here (runs.parquet was missing, and none of the "
                                    f"{len(runs)} run folder(s) could be read; see {store.quarantine_dir})")
        store.warn(f"runs.parquet was missing: rebuilt from {info['runs']} complete run folder(s) "
                   f"(of {info['planned']} planned)")
    try:
        in_table = set(store.read_table(columns=["key"])["key"].astype(str))
    except Exception:  # noqa: BLE001 - an unreadable table is rebuilt from the run folders
        in_table = None
    good, bad = store.check_runs(in_table) if in_table is not None else (set(), {"": ""})
    newer = (store.done_keys() & set(planned)) - in_table if in_table is not None and planned is not None else set()
    if bad or (in_table is not None and in_table - good) or newer:
        _rebuild_table(store, planned)
        if newer:  # runs completed after the table was written (Slurm array tasks of a detached sweep)
            store.warn(f"runs.parquet lacked {len(newer):,} run(s) completed after it was written: rebuilt from the "
                       f"run folders ({(store.table_info() or {}).get('runs', 0):,} of {len(planned):,} planned)")
    return build_outputs(root, include_incomplete=include_incomplete, scheduler=scheduler, address=address)
