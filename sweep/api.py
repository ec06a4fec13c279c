"""Public Python API of sweeps (what ``twinsweep sweep`` and ``twinsweep report`` call).

Example (notebook)::

    from twinsweep.sweep.api import run_sweep
    res = run_sweep("studies/quickstart.toml", out="results/qs", backend="local", workers=2)
    res.table()          # runs.parquet as a DataFrame
    res.report           # path of report/index.html
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .expand import RunItem, expand, grid_size, load_datasets, plan_frame
from .spec import StudySpec, load_spec
from .store import ResultStore


@dataclasses.dataclass
class SweepResult:
    """What a sweep did.

    ``out``: output folder; ``planned``: runs in the study; ``skipped``: already complete before
    this call; ``ran``: completed now; ``failed``: keys still failing after every retry;
    ``attempts``: extra attempts used by retries; ``interrupted``: stopped by Ctrl-C;
    ``table`` / ``aggregate`` / ``report``: paths of runs.parquet, aggregate.parquet and the HTML
    report (None when not built); ``wall_s``: seconds; ``items``: the expanded plan;
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
    "keys": first keys, "out"}``."""
    spec = _as_spec(spec)
    spec, _, items = plan_sweep(spec)
    root = Path(out if out is not None else spec.output)
    done = ResultStore(root).done_keys()
    n_done = sum(1 for it in items if it.key in done)
    return {"sizes": grid_size(spec), "runs": len(items), "done": n_done, "missing": len(items) - n_done,
            "keys": [it.label() for it in items[:5]], "out": str(root)}


def run_sweep(spec: StudySpec | str | os.PathLike, out: str | os.PathLike | None = None, backend: str | None = None,
              workers: int | None = None, address: str | None = None, retries: int | None = None,
              progress: bool = False, report: bool = True, run_fn: Callable | None = None,
              backend_options: dict | None = None, slurm: dict | None = None, detach: bool = False,
              log: Callable[[str], None] | None = None) -> SweepResult:
    """Run (or resume) a study; returns a :class:`SweepResult`.

    ``out``/``backend``/``workers``/``address`` override the spec; ``retries``: extra attempts of a
    failing run (default: the spec's ``study.retries``); ``progress``: show a rich progress bar;
    ``report``: build the aggregate tables and the HTML report at the end; ``run_fn``: the function
    the backend runs per task (default :func:`sweep.runner.execute_run`; same contract);
    ``slurm``: Slurm options merged over the spec's ``[backend.slurm]`` (slurm backend; array tasks
    write into ``<out>/slurm``); ``detach``: (slurm only) submit the missing runs and return at once
    (``res.slurm`` says what was submitted; :func:`sweep_status` follows it, and the same call
    without ``detach`` follows the queued arrays to the end and builds the report);
    ``log``: called with one-line backend messages (Slurm submissions).

    Only runs without a complete ``runs/<key>/`` are executed. A run that raises is recorded in
    ``failed/<key>/error.json`` and retried; it never stops the others. On Ctrl-C the backend is
    stopped, runs.parquet is rebuilt from what is complete and KeyboardInterrupt propagates.
    Raises ConfigError for a bad spec, StoreBusyError when another sweep holds the folder.
    """
    from twinsweep.backends.base import Task, make_backend

    from .progress import SweepProgress
    from .runner import execute_run, make_payload

    t0 = time.perf_counter()
    spec = _as_spec(spec).with_overrides(output=str(out) if out is not None else None, backend=backend,
                                           workers=workers, address=address, slurm=slurm)
    if detach and spec.backend.name != "slurm":
        from twinsweep.core.errors import ConfigError

        raise ConfigError(f"--detach needs the slurm backend (this sweep uses {spec.backend.name!r})")
    retries = spec.retries if retries is None else int(retries)
    run_fn = run_fn or execute_run
    store = ResultStore(Path(spec.output))
    with store.locked():
        store.clean_tmp()
        spec, datasets, items = plan_sweep(spec)
        if spec.source:
            try:
                shutil.copyfile(spec.source, store.root / "study.toml")
            except shutil.SameFileError:  # sweeping the copy kept in the results folder
                pass
        store.write_json("study.json", spec.to_dict())
        store.write_json("datasets.json", {name: ds.describe() for name, ds in datasets.items()})
        plan_frame(items).to_csv(store.root / "plan.csv", index=False)

        done = store.done_keys()
        todo = [it for it in items if it.key not in done]
        res = SweepResult(out=store.root, planned=len(items), skipped=len(items) - len(todo), items=items)
        by_key = {it.key: it for it in items}
        bk = make_backend(spec.backend.name, workers=spec.backend.workers, address=spec.backend.address,
                          **_backend_options(spec, store, backend_options, log))
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
        try:
            with bk, SweepProgress(len(todo), f"{spec.name} ({res.skipped} already done)", enabled=progress) as bar:
                for attempt in range(1, retries + 2):
                    if not todo:
                        break
                    if attempt > 1:
                        res.attempts += len(todo)
                        bar.retry_round(len(todo), attempt)
                    needed = {it.dataset for it in todo}
                    shared = {name: (datasets[name].workload, datasets[name].system) for name in needed}
                    tasks = (Task(it.key, make_payload(it, store.runs_dir), it.dataset) for it in todo)
                    still_failing = []
                    for outcome in bk.run(tasks, run_fn, shared):
                        it = by_key[outcome.key]
                        if outcome.ok:
                            if attempt > 1:
                                n_failed -= 1
                            store.clear_failure(outcome.key)
                            n_ok += 1
                        else:
                            if attempt == 1:
                                n_failed += 1
                            store.record_failure(outcome.key, outcome.error, outcome.traceback, attempt,
                                                 info=it.label() | {"config": it.config.to_dict()},
                                                 worker=outcome.worker)
                            still_failing.append(it)
                        bar.update(done=n_ok, failed=n_failed, running=bk.in_flight)
                    todo = still_failing
        except KeyboardInterrupt:
            res.interrupted = True
            res.ran = n_ok
            res.failed = sorted(store.failed_keys() & set(by_key))
            res.table_path = store.write_table(by_key)
            res.wall_s = time.perf_counter() - t0
            raise
        res.ran = n_ok
        res.failed = sorted(it.key for it in todo)
        res.table_path = store.write_table(by_key)
    if report:
        build_outputs(store.root, res)
    res.wall_s = time.perf_counter() - t0
    return res


def _backend_options(spec: StudySpec, store: ResultStore, extra: dict | None, log) -> dict:
    """Keyword arguments of make_backend beyond name/workers/address: for ``slurm`` the spec's
    Slurm options, ``folder=<out>/slurm`` and ``log``; then ``extra`` (the caller's)."""
    opts: dict = {}
    if spec.backend.name == "slurm":
        opts.update(spec.backend.slurm)
        opts["folder"] = str(store.root.absolute() / "slurm")
        if log is not None:
            opts["log"] = log
    opts.update(extra or {})
    return opts


def _lock_holder(root: Path) -> str | None:
    """Who holds ``root/.lock`` (``host:pid``), or None when nobody does."""
    import fcntl

    path = root / ".lock"
    if not path.exists():
        return None
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            return fh.read().strip() or "unknown process"
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


def sweep_status(results: str | os.PathLike, rebuild: bool = True) -> dict[str, Any]:
    """Progress of a sweep's results folder (``twinsweep status``), also while Slurm array tasks
    of a detached sweep are writing into it.

    Returns ``{"out", "study", "planned", "done", "missing", "failed": [{key, error, log}], "slurm":
    :func:`backends.slurm.folder_status` or None, "busy": host:pid of a sweep holding the folder or
    None, "complete", "table": runs.parquet path when (re)built or current}``. With ``rebuild``,
    a complete sweep whose runs.parquet is missing or older than its runs gets it rebuilt (when no
    sweep holds the folder). Raises FileNotFoundError when the folder holds no sweep plan.
    """
    from .store import StoreBusyError

    root = Path(results)
    if not (root / "plan.csv").exists():
        raise FileNotFoundError(f"{root}: no sweep here (missing plan.csv); start one with `twinsweep sweep`")
    planned = [str(k) for k in pd.read_csv(root / "plan.csv", usecols=["key"], dtype={"key": str})["key"]]
    store = ResultStore(root)
    want = set(planned)
    done = store.done_keys() & want
    failed: dict[str, dict] = {}
    for k in sorted(store.failed_keys() & want):
        try:
            doc = store.failure(k)
        except (OSError, ValueError):
            continue
        failed[k] = {"key": k, "error": doc.get("error"), "log": None, "record": str(store.failed_dir / k)}
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
    except (OSError, ValueError):
        pass
    busy = _lock_holder(root)
    complete = len(done) == len(want)
    table = root / "runs.parquet"
    if complete and rebuild and busy is None:
        newest = max((store.run_dir(k).stat().st_mtime for k in done), default=0.0)
        if not table.exists() or table.stat().st_mtime < newest:
            try:
                with store.locked():
                    store.write_table(want)
            except StoreBusyError:
                pass
    return {"out": str(root), "study": study, "planned": len(want), "done": len(done),
            "missing": len(want) - len(done), "failed": list(failed.values()), "slurm": slurm_info,
            "busy": busy, "complete": complete, "table": str(table) if table.exists() else None}


def build_outputs(results: str | os.PathLike, res: SweepResult | None = None) -> Path:
    """Aggregate runs.parquet (``aggregate.parquet`` / ``aggregate.csv``) and build the report;
    returns the report's path (``report/index.html``)."""
    from .aggregate import aggregate_results
    from .report import build_report

    root = Path(results)
    agg_path = aggregate_results(root)
    path = build_report(root)
    if res is not None:
        res.aggregate_path, res.report = agg_path, path
    return path


def report(results: str | os.PathLike) -> Path:
    """Rebuild the aggregate tables and the HTML report of an output folder; returns the page's path.

    Raises FileNotFoundError when the folder holds no sweep (no runs.parquet / study.json).
    """
    root = Path(results)
    for need in ("runs.parquet", "study.json"):
        if not (root / need).exists():
            raise FileNotFoundError(f"{root}: no sweep results here (missing {need}); run `twinsweep sweep` first")
    return build_outputs(root)
