"""Grid expansion and run identity (DESIGN.md §6).

:func:`load_datasets` loads every dataset of a study once (Workload + System); :func:`expand`
turns a study into the ordered list of :class:`RunItem` — datasets (spec order) x windows (spec
order) x grid axes (spec order, values in the order given; the last axis varies fastest) x seeds
(in the order given). A run's key is :func:`core.config.run_key` over the canonical config JSON,
the trace's identity (its checksum, and the zone its local times were read in:
:attr:`core.workload.Workload.identity`) and the system's parameters, so it is stable across
processes and machines. Every window is checked against its trace's span when the dataset is
loaded (:mod:`core.tracespan`): one that starts after the last job has ended is a ConfigError;
one that extends past the last submission is a warning in :attr:`LoadedDataset.warnings`.

A policy runs once over the grid axes it ignores (:func:`sweep.gridcheck.ignored_axes`): policy
``replay`` ignores the backfill variant, the kill and the rescheduling run options (the recorded
starts decide; DESIGN §3, :func:`core.scheduler.make_scheduler`), every other policy the option
``replay_oversubscribe``. A grid of ``replay`` × several backfill values would run the same replay
once per value; the plan keeps one of them, the point with each ignored axis's *first* value
(:func:`sweep.gridcheck.repeats_a_run`); :func:`grid_size` counts the points left out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from twinsweep.core.config import RunConfig, run_key, system_ref
from twinsweep.core.errors import ConfigError, TraceFormatError

from .gridcheck import ignored_axes, repeats_a_run
from .spec import Dataset, StudySpec


@dataclasses.dataclass
class LoadedDataset:
    """A dataset of the study with its trace loaded once.

    ``workload``: :class:`core.workload.Workload`; ``system``: :class:`core.system.System`;
    ``path``: the resolved trace path; ``system_ref``: what goes into ``RunConfig.system``
    (name or TOML path; None = generic system from the trace header); ``warnings``: one-line
    warnings of the trace (:attr:`core.workload.Workload.warnings`) and of windows past its last
    submission, for the sweep to show once.
    """

    spec: Dataset
    workload: Any
    system: Any
    path: str
    system_ref: str | None
    warnings: list = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        """The dataset's name in the spec."""
        return self.spec.name

    @property
    def checksum(self) -> str:
        """``"sha256:<hex>"`` of the uncompressed trace (part of every run key)."""
        return self.workload.checksum

    def describe(self) -> dict[str, Any]:
        """JSON-ready provenance of the trace and the system (stored as ``datasets.json``)."""
        w, s = self.workload, self.system
        header = {k: str(v) for k, v in sorted((w.header or {}).items())}
        return {
            "name": self.name,
            "trace": self.spec.trace,
            "path": self.path,
            "format": w.format,
            "checksum": w.checksum,
            "epoch": int(w.epoch),
            "timezone": w.timezone,
            "jobs": int(len(w.jobs)),
            "provenance": w.provenance or "",
            "header": header,
            "windows": [{"name": x.name,
                         "start": x.start_seconds(int(w.epoch)),
                         "duration": x.duration} for x in self.spec.windows],
            "system": {
                "ref": self.system_ref,
                "name": s.name,
                "title": s.title,
                "nodes": int(s.nodes),
                "cores_per_node": int(s.cores_per_node),
                "generic": bool(getattr(s, "generic", False)),
                "power_status": s.power.status,
                "power_label": s.power_label,
                "power": _jsonable(dataclasses.asdict(s.power)),
                "sources": _jsonable(list(s.sources)),
                "path": s.path,
                "cooling": _cooling_description(s),
                # a partitioned machine (core/partitions.py): its node pools, each its own node type
                **({"partitions": s.partitions_summary()} if s.partitions else {}),
            },
        }


def _cooling_description(system) -> dict[str, Any]:
    """The cooling plant a run with ``cooling = true`` uses for this system (for the report)."""
    from twinsweep.core.cooling import cooling_model_for

    try:
        m = cooling_model_for(system)
    except Exception as exc:  # noqa: BLE001 - the report says why instead of failing the sweep
        return {"error": f"{type(exc).__name__}: {exc}"}
    d = _jsonable(dataclasses.asdict(m)) if dataclasses.is_dataclass(m) else {"model": str(m)}
    d["from_system_file"] = system.cooling is not None
    return d


@dataclasses.dataclass(frozen=True)
class RunItem:
    """One run of the sweep: its key, where it sits in the grid and its :class:`RunConfig`.

    ``axes``: ``(axis, value)`` pairs in the spec's grid order (``options.<name>`` included).
    """

    key: str
    dataset: str
    window: str
    seed: int
    axes: tuple[tuple[str, Any], ...]
    config: RunConfig
    checksum: str

    def label(self) -> dict[str, Any]:
        """Flat dict of the run's coordinates (for tables and ``sweep.json``)."""
        d = {"key": self.key, "dataset": self.dataset, "window": self.window}
        d.update(dict(self.axes))
        d["seed"] = self.seed
        return d


def _jsonable(o):
    return json.loads(json.dumps(o, default=str))


def resolve_trace(trace: str, spec_dir: Path | None) -> Path:
    """Absolute path of a dataset trace: absolute paths as given; relative ones next to the spec
    file when such a file exists there, else under the data dir (``core.data.resolve_data_path``:
    env ``TWINSWEEP_DATA``, default ``../shared/data``). Raises ConfigError when missing."""
    p = Path(trace)
    if p.is_absolute():
        cand = p
    elif spec_dir is not None and (spec_dir / p).exists():
        cand = spec_dir / p
    else:
        from twinsweep.core.data import resolve_data_path

        cand = Path(resolve_data_path(trace))
    if not cand.exists():
        raise ConfigError(f"dataset trace {trace!r} not found (looked at {cand})")
    return cand


def load_dataset(ds: Dataset, spec_dir: Path | None = None) -> LoadedDataset:
    """Load one dataset's trace (once) and resolve its system: a named system first, so that its
    ``timezone`` applies when the trace is read (after the dataset's ``tz``, before
    ``$TWINSWEEP_TZ``), else a generic system from the trace header. Then every window is
    checked against the trace's span (module docstring). Raises ConfigError naming the dataset
    and the key at fault (its ``trace``, ``system``, ``format``, a window), also for a trace that
    cannot be read (a TraceFormatError's text, chained)."""
    from twinsweep.core.loaders import load_workload
    from twinsweep.core.run import trace_system_warnings
    from twinsweep.core.system import named_system, system_from_swf_header
    from twinsweep.core.tracespan import trace_span

    trace_key = f"dataset {ds.name!r} (trace = {ds.trace!r})"
    with _naming(trace_key):
        path = resolve_trace(ds.trace, spec_dir)
    with _naming(f"dataset {ds.name!r} (system = {ds.system!r})" if ds.system else trace_key):
        system = named_system(ds.system, path, spec_dir)
    with _naming(f"dataset {ds.name!r} (trace = {ds.trace!r}{f', format = {ds.format!r}' if ds.format else ''})"):
        workload = load_workload(str(path), format=ds.format, lenient=ds.lenient, tz=ds.tz,
                                 system_tz=getattr(system, "timezone", None))
    warnings = [f"dataset {ds.name}: {w}" for w in workload.warnings]
    if system is None:
        with _naming(trace_key):
            system = system_from_swf_header(workload.header, workload.source, workload.procs_unit)
    if system.partitions:  # a partitioned machine: every job of the trace has a pool, said before any run
        from twinsweep.core.partitions import pool_rows

        with _naming(f"dataset {ds.name!r}"):
            pool_rows(system, workload.jobs["partition"].tolist(), workload.header.get("Partition"), workload.source)
    # the header against a system its file name chose, and served values no job has (core.run)
    warnings += [f"dataset {ds.name}: {w}" for w in trace_system_warnings(
        system, workload, "its file name" if ds.system is None else None)]
    span = trace_span(workload)
    for window in ds.windows:
        where = f"dataset {ds.name!r} ({ds.trace}), window {window.name!r}"
        with _naming(f"dataset {ds.name!r} ({ds.trace})"):  # its text names the window
            start = window.start_seconds(int(workload.epoch))
        span.check_window(start, window.duration, where)
        t0 = span.first_submit_s if start is None else start
        warnings += span.window_warnings(t0, None if window.duration is None else t0 + window.duration, where)
    return LoadedDataset(ds, workload, system, str(path), system_ref(ds.system, system), warnings)


@contextlib.contextmanager
def _naming(where: str):
    """Re-raise a ConfigError or TraceFormatError of the block as one ConfigError that starts with
    ``where`` (the dataset and its key at fault)."""
    try:
        yield
    except (ConfigError, TraceFormatError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


@contextlib.contextmanager
def in_spec_file(spec: StudySpec):
    """Prefix the spec file's path (``spec.source``) to a ConfigError or TraceFormatError raised in
    the block (loading the datasets, checking the runs' identities), as :func:`sweep.spec.load_spec`
    does for the errors it finds: every error of a spec names its file. A spec without a file (built
    in Python) passes the error through."""
    if not spec.source:
        yield
        return
    try:
        yield
    except (ConfigError, TraceFormatError) as exc:
        if str(exc).startswith(f"{spec.source}: "):
            raise
        raise ConfigError(f"{spec.source}: {exc}") from exc


def load_datasets(spec: StudySpec) -> dict[str, LoadedDataset]:
    """Every dataset of ``spec`` loaded once, keyed by dataset name (spec order). Raises ConfigError
    naming the spec file, the dataset and its key at fault (:func:`load_dataset`)."""
    spec_dir = Path(spec.source).resolve().parent if spec.source else None
    with in_spec_file(spec):
        return _load_datasets(spec, spec_dir)


def _load_datasets(spec: StudySpec, spec_dir: Path | None) -> dict[str, LoadedDataset]:
    loaded = {ds.name: load_dataset(ds, spec_dir) for ds in spec.datasets}
    policies = dict(spec.grid).get("policy", ())
    if "external" in policies and (parted := [n for n, d in loaded.items() if d.system.partitions]):
        raise ConfigError(f"grid.policy: policy 'external' speaks for one machine, and the system of dataset(s) "
                          f"{', '.join(map(repr, parted))} is partitioned (core/partitions.py); put the external "
                          "scheduler in a study over unpartitioned systems")
    return loaded


def _config(ds: LoadedDataset, window, axes: dict, seed: int, spec: StudySpec) -> RunConfig:
    options = tuple(sorted((k[len("options."):], v) for k, v in axes.items() if k.startswith("options.")))
    kw = {k: v for k, v in axes.items() if not k.startswith("options.")}
    return RunConfig(
        data=ds.spec.trace, system=ds.system_ref, format=ds.spec.format,
        start=window.start_seconds(int(ds.workload.epoch)), duration=window.duration,
        seed=seed, lenient=ds.spec.lenient, perturbation=spec.perturbation, options=options, tz=ds.spec.tz, **kw,
    )


_MISSING = object()


def _firsts(spec: StudySpec) -> dict[str, Any]:
    return {a: v[0] for a, v in spec.grid}


def iter_items(spec: StudySpec, datasets: dict[str, LoadedDataset]) -> Iterator[RunItem]:
    """The study's runs in plan order (module docstring), one at a time: nothing is held in
    memory, so the first runs of a 10^7-point grid come at once. Points that repeat a run over an
    axis their policy ignores (:func:`sweep.gridcheck.repeats_a_run`) are left out. No identity
    check (:func:`expand` and :func:`check_distinct_windows` do that)."""
    axis_names = [a for a, _ in spec.grid]
    firsts = _firsts(spec)
    for ds_spec in spec.datasets:
        ds = datasets[ds_spec.name]
        for window in ds_spec.windows:
            for values in itertools.product(*(v for _, v in spec.grid)):
                axes = dict(zip(axis_names, values))
                if repeats_a_run(axes, firsts):
                    continue
                for seed in spec.seeds:
                    yield _item(ds, window, axes, seed, spec)


def _item(ds: LoadedDataset, window, axes: dict, seed: int, spec: StudySpec) -> RunItem:
    cfg = _config(ds, window, axes, seed, spec)
    return RunItem(run_key(cfg, ds.workload, ds.system), ds.name, window.name, seed,
                   tuple(axes.items()), cfg, ds.checksum)


def _identical(o: RunItem, item: RunItem) -> ConfigError:
    return ConfigError(f"datasets: {o.dataset}/{o.window} and {item.dataset}/{item.window} give identical "
                       f"runs (same trace, window and options; key {item.key}); remove one")


def expand(spec: StudySpec, datasets: dict[str, LoadedDataset]) -> list[RunItem]:
    """The study's runs in deterministic order (see module docstring), as a list.

    Raises ConfigError when two grid points give the same run (same key), e.g. two windows with
    the same start and duration.
    """
    items: list[RunItem] = []
    seen: dict[str, RunItem] = {}
    for item in iter_items(spec, datasets):
        if item.key in seen:
            with in_spec_file(spec):
                raise _identical(seen[item.key], item)
        seen[item.key] = item
        items.append(item)
    return items


def check_distinct_windows(spec: StudySpec, datasets: dict[str, LoadedDataset]) -> None:
    """What :func:`expand`'s identity check finds, at the cost of one run per (dataset, window):
    a run's config is its dataset-window part (trace, system, window) plus its grid point and seed,
    and grid points are distinct runs once the spec is loaded (:mod:`sweep.gridcheck`), so two runs
    are identical only when two dataset-windows are. Raises ConfigError naming both."""
    first_axes = {a: v[0] for a, v in spec.grid}
    seen: dict[str, RunItem] = {}
    for ds_spec in spec.datasets:
        for window in ds_spec.windows:
            item = _item(datasets[ds_spec.name], window, first_axes, spec.seeds[0], spec)
            if item.key in seen:
                with in_spec_file(spec):
                    raise _identical(seen[item.key], item)
            seen[item.key] = item



def planned_item(spec: StudySpec, datasets: dict[str, LoadedDataset], coords: dict[str, Any]) -> RunItem | None:
    """The run of the plan at ``coords`` (a run folder's ``sweep.json``: ``dataset``, ``window``,
    ``axes``, ``seed``), or None when the study has no such point. Costs one key, whatever the
    grid's size (how a dry run counts the complete runs of a plan it never expands)."""
    ds_spec = next((d for d in spec.datasets if d.name == coords.get("dataset")), None)
    if ds_spec is None:
        return None
    window = next((w for w in ds_spec.windows if w.name == coords.get("window")), None)
    axes = coords.get("axes")
    if window is None or not isinstance(axes, dict) or set(axes) != {a for a, _ in spec.grid}:
        return None
    point = {}
    for a, values in spec.grid:  # the spec's value (JSON has no tuples; True == 1 in Python)
        point[a] = next((v for v in values if type(axes[a]) is type(v) and axes[a] == v), _MISSING)
        if point[a] is _MISSING:
            return None
    if coords.get("seed") not in spec.seeds or repeats_a_run(point, _firsts(spec)):
        return None
    return _item(datasets[ds_spec.name], window, point, coords["seed"], spec)


def grid_size(spec: StudySpec) -> dict[str, int]:
    """Counts without loading any trace: ``datasets``, ``windows``, ``grid_points`` (the points
    that run: the product of the axes less ``repeats``, the points that would repeat a run over an
    axis their policy ignores, :func:`sweep.gridcheck.repeats_a_run`), ``repeats``, ``seeds``,
    ``runs``. Per policy value the points that run are the product of the lengths of the other
    axes, an axis the policy ignores counting 1."""
    windows = sum(len(d.windows) for d in spec.datasets)
    grid = dict(spec.grid)
    total = 1
    for v in grid.values():
        total *= len(v)
    points = 0
    for policy in grid.get("policy", (None,)):
        ignored = ignored_axes(policy)
        n = 1
        for a, v in grid.items():
            if a != "policy":
                n *= 1 if a in ignored else len(v)
        points += n
    points = min(points, total)
    return {"datasets": len(spec.datasets), "windows": windows, "grid_points": points, "repeats": total - points,
            "seeds": len(spec.seeds), "runs": windows * points * len(spec.seeds)}


def plan_frame(items: Iterable[RunItem]):
    """A DataFrame with one row per run (``key``, dataset, window, axes..., seed), in plan order."""
    import pandas as pd

    rows = []
    for it in items:
        row = it.label()
        for k, v in row.items():
            if isinstance(v, (list, dict, tuple)):
                row[k] = json.dumps(v, sort_keys=True)
        rows.append(row)
    return pd.DataFrame(rows)
