"""Study specs (DESIGN.md §6): parse and validate a TOML study file into :class:`StudySpec`.

A study names datasets (trace + system + windows), grid axes, seeds and their perturbation model,
the metrics to rank by, the backend and the output folder. See ``studies/example.toml`` for an
annotated example; the tables and keys are:

``[study]``        ``name`` (str), ``description`` (str), ``output`` (folder; relative paths are
                   resolved against the current working directory), ``seeds`` (int ``n`` = seeds
                   ``0..n-1``, or a list of ints >= 0), ``retries`` (int >= 0: extra attempts of a
                   failing run per sweep invocation; an error of the run's inputs or of a plug-in's
                   contract — ConfigError, TraceFormatError, PluginError …, which a deterministic run
                   would raise again — is not retried: :data:`core.errors.INPUT_ERRORS`, subclasses
                   included, read from :attr:`backends.base.Outcome.deterministic`).
``[perturbation]`` ``runtime_sigma`` (float >= 0, log-normal sigma on run times) and
                   ``submit_jitter`` (duration, uniform jitter of submit times); seed 0 is always the
                   unperturbed trace (:class:`core.config.Perturbation`).
``[[datasets]]``   ``name``, ``trace`` (path relative to the data dir, or absolute), ``system``
                   (name or TOML path; default: the named system listing this trace, else the SWF
                   header), ``format`` (a loader name, checked here), ``lenient``, ``tz`` (IANA zone
                   of the trace's local wall-clock times, for formats that have them: wins over the
                   file's ``# tz:`` line, the system file's ``timezone`` and ``$TWINSWEEP_TZ``),
                   ``windows`` (list of ``{name, start, duration}``;
                   ``start``: offset from the trace epoch as a duration, or a TOML date-time;
                   omitted = the whole trace). A window that starts after the trace's last job
                   has ended is an error when the datasets are loaded (before any run); one that
                   extends past the trace's last submission is a warning, and its runs are
                   flagged ``window_past_last_submit`` (:mod:`core.tracespan`).
``[grid]``         axes -> lists: ``policy``, ``backfill``, ``kill``, ``sample_period``, ``cooling``,
                   ``wetbulb``, ``scheduler`` (the command line or ``inproc:MODULE:NAME`` of policy
                   ``external``, docs/protocol.md; its program must exist when the spec is loaded)
                   and ``"options.<name>"`` (policy options); every run gets the product
                   of all axes, except that a policy runs once over the axes it ignores, with
                   their first values (``replay``: backfill, kill and the rescheduling run
                   options; the others: ``options.replay_oversubscribe``;
                   :func:`sweep.gridcheck.repeats_a_run`).
                   Every grid point is checked when the spec is loaded
                   (:func:`sweep.gridcheck.check_grid`: run config, wet-bulb files, scheduler and
                   its options), so that a bad value fails here, not in every run.
``[rank]``         metric -> ``"min"`` | ``"max"`` (order = priority, the first is primary); or
                   ``metrics = [names]`` with default directions. Metric names, units and default
                   directions: the catalogue, :mod:`twinsweep.core.metrics`. A metric only runs with
                   the cooling model fill (PUE, coolant temperatures, cooling energy) needs
                   ``cooling = [true]``, here and in ``[report]`` (:func:`check_cooling_metrics`).
``[backend]``      ``name`` (``local`` | ``ray`` | ``slurm`` | an installed plug-in: any name of
                   :data:`backends.base.BACKENDS`), ``workers`` (int >= 1; for ``slurm``: array
                   tasks at once), ``address`` (ray only: backends with ``takes_address``).
``[backend.slurm]`` Slurm options of the ``slurm`` backend (:func:`backends.slurm.parse_options`):
                   ``partition``, ``account``, ``qos``, ``time`` (``MM``, ``HH:MM:SS``, ``D-HH`` ...),
                   ``mem``, ``cpus_per_task``, ``array_parallelism``, ``runs_per_task``,
                   ``max_array_size``, ``sbatch`` (table of extra sbatch options), ``setup`` (shell
                   lines), ``requeue``, ``max_requeues``, ``signal_delay_s``, ``poll_s``, ``job_name``,
                   ``python``. Ignored by the other backends.
``[report]``       ``timeline = {dataset, window, seed}`` (overlay of all policies),
                   ``bootstrap`` (resamples), ``seed`` (bootstrap RNG seed), ``tradeoff`` (the study's
                   stated trade-off: metric = weight, or a list of metrics = equal weights; default:
                   the rank metrics), ``pareto`` (two metrics [x, y] of the Pareto view; default: the
                   first two trade-off metrics), ``baseline`` (the variant others are compared with,
                   ``"policy+backfill"``, then ``+axis=value`` for other axes that vary, as variants are labelled;
                   default ``fcfs+easy`` when in the grid), ``validation``
                   (dataset = path of a ``validation.json``: the twin's stated error on that trace;
                   relative paths against the current directory).

Every error is a :class:`core.errors.ConfigError` naming the key and the allowed values.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from twinsweep.backends.base import BACKENDS, address_takers
from twinsweep.backends.slurm import parse_options as parse_slurm_options
from twinsweep.core.backfill import BACKFILLS
from twinsweep.core.config import Perturbation, check_timezone
from twinsweep.core.durations import parse_human_duration
from twinsweep.core.errors import ConfigError, UnknownNameError
from twinsweep.core.loaders import LOADERS
from twinsweep.core.metrics import default_direction, metric

from .gridcheck import check_grid

#: Grid axes that map onto :class:`core.config.RunConfig` fields (plus ``options.<name>``).
GRID_AXES = ("policy", "backfill", "kill", "sample_period", "cooling", "wetbulb", "scheduler")
#: Rank metrics when a spec names none. Energy per node-hour delivered, not raw facility energy: a total
#: over a fixed window rewards leaving nodes idle (core/metrics.py).
DEFAULT_RANK = {"bsld_mean": "min", "wait_mean_s": "min", "utilization": "max", "facility_j_per_node_h": "min"}

_TOP_KEYS = ("study", "perturbation", "datasets", "grid", "rank", "backend", "report")
_STUDY_KEYS = ("name", "description", "output", "seeds", "retries")
_PERTURB_KEYS = ("runtime_sigma", "submit_jitter", "submit_jitter_s")
_DATASET_KEYS = ("name", "trace", "system", "format", "lenient", "tz", "windows")
_WINDOW_KEYS = ("name", "start", "duration")
_BACKEND_KEYS = ("name", "workers", "address", "slurm")
_REPORT_KEYS = ("timeline", "bootstrap", "seed", "tradeoff", "pareto", "baseline", "validation")
_TIMELINE_KEYS = ("dataset", "window", "seed")


@dataclasses.dataclass(frozen=True)
class Window:
    """A simulation window: ``start`` (s from the trace epoch, or a UTC ``datetime`` converted with
    the workload's epoch at expansion; None = trace start) and ``duration`` (s; None = to the end)."""

    name: str
    start: int | _dt.datetime | None = None
    duration: int | None = None

    def start_seconds(self, epoch: int) -> int | None:
        """``start`` as seconds from ``epoch`` (Unix s, UTC). Raises ConfigError if before it."""
        if isinstance(self.start, _dt.datetime):
            ts = self.start if self.start.tzinfo else self.start.replace(tzinfo=_dt.timezone.utc)
            s = int(ts.timestamp()) - int(epoch)
            if s < 0:
                raise ConfigError(f"window {self.name!r}: start {self.start.isoformat()} is before the trace epoch")
            return s
        return self.start


@dataclasses.dataclass(frozen=True)
class Dataset:
    """One trace with its system and windows (``trace`` as written in the spec)."""

    name: str
    trace: str
    system: str | None = None
    format: str | None = None
    lenient: bool = False
    windows: tuple[Window, ...] = (Window("all"),)
    tz: str | None = None


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    """Backend choice: ``name`` in :data:`backends.base.BACKENDS`, ``workers`` (None: ``local`` runs serially,
    ``ray`` uses every CPU of the cluster), ``address`` (Ray cluster address; None = embedded local Ray),
    ``slurm``: the ``[backend.slurm]`` options, normalised (:func:`backends.slurm.parse_options`)."""

    name: str = "ray"
    workers: int | None = None
    address: str | None = None
    slurm: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ReportSpec:
    """Report options: the (dataset, window, seed) whose timelines are overlaid (None = first
    dataset / its first window / the smallest seed), bootstrap resamples and RNG seed;
    ``tradeoff``: the study's stated trade-off, ``(metric, weight)`` pairs (empty = the rank metrics,
    equal weights); ``pareto``: the two metrics of the Pareto view (empty = the first two trade-off
    metrics); ``baseline``: the variant every other is compared with (e.g. ``"fcfs+easy"``; None =
    ``fcfs+easy`` when the grid has it, else the first variant); ``validation``: ``(dataset, path of
    a validation.json)`` pairs, the twin's stated error per trace (``twinsweep validate``)."""

    timeline_dataset: str | None = None
    timeline_window: str | None = None
    timeline_seed: int | None = None
    bootstrap: int = 1000
    seed: int = 0
    tradeoff: tuple[tuple[str, float], ...] = ()
    pareto: tuple[str, ...] = ()
    baseline: str | None = None
    validation: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class StudySpec:
    """A validated study. ``grid`` keeps the spec's axis order (a tuple of ``(axis, values)``),
    ``rank`` the metric priority (``(metric, "min"|"max")``, first = primary)."""

    name: str
    datasets: tuple[Dataset, ...]
    grid: tuple[tuple[str, tuple], ...]
    seeds: tuple[int, ...] = (0,)
    perturbation: Perturbation = Perturbation()
    rank: tuple[tuple[str, str], ...] = tuple(DEFAULT_RANK.items())
    backend: BackendSpec = BackendSpec()
    report: ReportSpec = ReportSpec()
    output: str = "results/study"
    retries: int = 1
    description: str = ""
    source: str | None = None  # path of the TOML file, if any

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Grid axis names in spec order (``policy`` and ``backfill`` always present)."""
        return tuple(a for a, _ in self.grid)

    @property
    def primary_metric(self) -> tuple[str, str]:
        """``(metric, "min"|"max")`` ranked first."""
        return self.rank[0]

    def with_overrides(self, output: str | None = None, backend: str | None = None,
                       workers: int | None = None, address: str | None = None,
                       slurm: dict | None = None) -> "StudySpec":
        """A copy with the CLI overrides applied (None keeps the spec's value; ``slurm``: Slurm
        options merged over ``[backend.slurm]``)."""
        b = self.backend
        if slurm:
            b = dataclasses.replace(b, slurm=parse_slurm_options({**b.slurm, **slurm}, "slurm options"))
        if backend is not None:
            check_name("backend.name", backend, BACKENDS)
            b = dataclasses.replace(b, name=backend)
        if workers is not None:
            b = dataclasses.replace(b, workers=_int("backend.workers", workers, lo=1))
        if address is not None:
            b = dataclasses.replace(b, address=address or None)
        return dataclasses.replace(self, backend=b, output=output if output is not None else self.output)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (datetimes as ISO strings), stored as ``study.json`` in the output."""

        def conv(o):
            if isinstance(o, _dt.datetime):
                return o.isoformat()
            if isinstance(o, (list, tuple)):
                return [conv(x) for x in o]
            if isinstance(o, dict):
                return {k: conv(v) for k, v in o.items()}
            return o

        d = dataclasses.asdict(self)
        # lists of pairs, not tables: the order matters (axis order, primary metric first)
        d["grid"] = [{"axis": a, "values": list(v)} for a, v in self.grid]
        d["rank"] = [{"metric": m, "direction": r} for m, r in self.rank]
        return conv(d)


def study_axes(study: dict) -> list[str]:
    """Grid axis names, in spec order, from a ``study.json`` document."""
    return [g["axis"] for g in study.get("grid", [])]


def study_rank(study: dict) -> dict[str, str]:
    """Rank metrics -> direction, primary first, from a ``study.json`` document."""
    return {r["metric"]: r["direction"] for r in study.get("rank", [])}


# ----------------------------------------------------------------------------------------- helpers
def _check_keys(where: str, d: Any, allowed) -> dict:
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a table, got {type(d).__name__}")
    unknown = sorted(set(d) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(allowed)}")
    return d


def _check_choice(where: str, value: Any, allowed) -> Any:
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not allowed; allowed: {', '.join(map(str, allowed))}")
    return value


def check_name(where: str, name: Any, registry) -> str:
    """``name`` when ``registry`` (a :class:`core.registry.Registry`: backends, loaders, ...) knows
    it, loading an installed plug-in; else ConfigError naming ``where`` and listing the valid
    names, so that a spec with a misspelt plug-in name fails when it is loaded, not when a run
    starts. A plug-in that is installed but cannot be imported is an error here too."""
    try:
        return registry.resolve(name)
    except UnknownNameError as exc:
        raise ConfigError(f"{where}: {name!r} is not allowed; allowed: {', '.join(exc.valid)}") from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _int(where: str, v: Any, lo: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}: expected an integer, got {v!r}")
    if lo is not None and v < lo:
        raise ConfigError(f"{where}: must be >= {lo}, got {v}")
    return v


def _str(where: str, v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ConfigError(f"{where}: expected a non-empty string, got {v!r}")
    return v


def _description(v: Any) -> str:
    if not isinstance(v, str):
        raise ConfigError(f"study.description: expected a string, got {v!r}")
    return v


def _check_policy(where: str, name: Any) -> str:
    """``name`` when it is ``replay`` or a policy :data:`core.policies.POLICIES` knows (an installed
    or ``module:Class`` plug-in is loaded); else ConfigError naming ``where`` and the valid names."""
    from twinsweep.core.scheduler import REPLAY, available_policies, check_names

    if not isinstance(name, str):
        raise ConfigError(f"{where}: expected a policy name, got {name!r}")
    try:
        check_names(name, "none")
    except UnknownNameError:
        raise ConfigError(f"{where}: {name!r} is not allowed; allowed: {', '.join(available_policies())}") from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return name


def _duration(where: str, v: Any) -> int:
    try:
        return parse_human_duration(v, where)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _parse_window(where: str, w: Any, i: int) -> Window:
    w = _check_keys(where, w, _WINDOW_KEYS)
    start = w.get("start")
    if isinstance(start, _dt.datetime):
        pass
    elif isinstance(start, (_dt.date, _dt.time)):
        raise ConfigError(f"{where}.start: a date-time with time of day is required (e.g. 1997-01-10T00:00:00Z)")
    elif start is not None:
        start = _duration(f"{where}.start", start)
    duration = w.get("duration")
    if duration is not None:
        duration = _duration(f"{where}.duration", duration)
        if duration <= 0:
            raise ConfigError(f"{where}.duration: must be > 0, got {w['duration']!r}")
    name = w.get("name")
    if name is None:
        name = f"w{i}" if (start is not None or duration is not None) else "all"
    return Window(_str(f"{where}.name", name), start, duration)


def _parse_dataset(d: Any, i: int) -> Dataset:
    where = f"datasets[{i}]"
    d = _check_keys(where, d, _DATASET_KEYS)
    if "trace" not in d:
        raise ConfigError(f"{where}: missing required key 'trace'")
    trace = _str(f"{where}.trace", d["trace"])
    name = _str(f"{where}.name", d.get("name", Path(trace).name.split(".")[0]))
    system = d.get("system")
    if system is not None:
        system = _str(f"{where}.system", system)
    fmt = d.get("format")
    if fmt is not None:
        fmt = check_name(f"{where}.format", _str(f"{where}.format", fmt), LOADERS)
    lenient = d.get("lenient", False)
    if not isinstance(lenient, bool):
        raise ConfigError(f"{where}.lenient: expected true or false, got {lenient!r}")
    tz = d.get("tz")
    if tz is not None:
        try:
            check_timezone(tz)
        except ConfigError as exc:
            raise ConfigError(f"{where}.{exc}") from None
    wins = d.get("windows")
    if wins is None:
        windows = (Window("all"),)
    else:
        if not isinstance(wins, list) or not wins:
            raise ConfigError(f"{where}.windows: expected a non-empty list of {{name, start, duration}} tables")
        windows = tuple(_parse_window(f"{where}.windows[{j}]", w, j) for j, w in enumerate(wins))
        names = [w.name for w in windows]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError(f"{where}.windows: duplicate window name(s) {dup}")
    return Dataset(name, trace, system, fmt, lenient, windows, tz)


def _parse_grid(g: Any) -> tuple[tuple[str, tuple], ...]:
    if not isinstance(g, dict):
        raise ConfigError(f"grid: expected a table of axis = [values], got {type(g).__name__}")
    axes = []
    for axis, values in g.items():
        where = f"grid.{axis}"
        if axis not in GRID_AXES and not (axis.startswith("options.") and len(axis) > len("options.")):
            raise ConfigError(f"grid: unknown axis {axis!r}; allowed: {', '.join(GRID_AXES)}, options.<name>")
        if not isinstance(values, list):
            values = [values]
        if not values:
            raise ConfigError(f"{where}: needs at least one value")
        if axis == "policy":
            for v in values:
                _check_policy(where, v)
        elif axis == "backfill":
            for v in values:
                check_name(where, v, BACKFILLS)
        elif axis == "scheduler":
            from twinsweep.core.external import check_scheduler

            for v in values:
                try:
                    check_scheduler(v)
                except ConfigError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
        elif axis == "kill":
            for v in values:
                if not isinstance(v, bool):
                    raise ConfigError(f"{where}: values must be true or false, got {v!r}")
        elif axis == "sample_period":
            values = [_duration(where, v) for v in values]
            if any(v < 1 for v in values):
                raise ConfigError(f"{where}: values must be >= 1 s")
        if len(set(map(repr, values))) != len(values):
            raise ConfigError(f"{where}: duplicate values {values}")
        axes.append((axis, tuple(values)))
    names = [a for a, _ in axes]
    for required, default in (("policy", "fcfs"), ("backfill", "none")):
        if required not in names:
            axes.append((required, (default,)))
    return tuple(axes)


def _parse_rank(r: Any) -> tuple[tuple[str, str], ...]:
    if r is None:
        return tuple(DEFAULT_RANK.items())
    if not isinstance(r, dict):
        raise ConfigError("rank: expected a table of metric = \"min\"|\"max\" (or metrics = [names])")
    if "metrics" in r:
        if set(r) != {"metrics"} or not isinstance(r["metrics"], list) or not r["metrics"]:
            raise ConfigError("rank: use either metrics = [names] or metric = \"min\"|\"max\" entries, not both")
        items = [(m, None) for m in r["metrics"]]
    else:
        items = list(r.items())
    if not items:
        raise ConfigError("rank: name at least one metric")
    out = []
    for m, d in items:
        natural = metric_direction("rank", m)  # the name is checked even when a direction is given
        d = natural if d is None else d
        _check_choice(f"rank.{m}", d, ("min", "max"))
        out.append((m, d))
    return tuple(out)


def metric_direction(where: str, name: Any) -> str:
    """The catalogue's direction of metric ``name`` (:mod:`twinsweep.core.metrics`). Raises
    ConfigError naming ``where`` and listing every valid metric when the name is unknown."""
    if not isinstance(name, str):
        raise ConfigError(f"{where}: expected a metric name, got {name!r}")
    try:
        return default_direction(name)
    except UnknownNameError as exc:
        raise ConfigError(f"{where}: {name!r} is not a metric; valid metric names: {', '.join(exc.valid)}") from exc


def check_cooling_metrics(where: str, names, grid) -> None:
    """Raise ConfigError naming ``where`` when a metric of ``names`` is one only runs with the
    cooling model fill (:attr:`core.metrics.Metric.cooling`: PUE, coolant temperatures, cooling
    energy) and a point of ``grid`` (``(axis, values)`` pairs) has no ``cooling = true``: with no
    such point every run would leave it empty, and a ranking, trade-off or tuning by it would have
    nothing to go on; with some, the variants without the cooling model would rank last on it for
    having no value."""
    values = list(dict(grid).get("cooling", ()))
    if values and all(v is True for v in values):
        return
    need = [m for m in names if metric(m).cooling]
    if need and any(v is True for v in values):  # on and off: the runs without it would rank last on it
        raise ConfigError(f"{where}: {', '.join(map(repr, need))} {'is' if len(need) == 1 else 'are'} filled only by "
                          "runs with the cooling model, and the grid's cooling = false points leave "
                          f"{'it' if len(need) == 1 else 'them'} empty: their variants would rank last on "
                          f"{'it' if len(need) == 1 else 'them'} for having no value, not for a worse one (set "
                          f"cooling = [true], or remove {'it' if len(need) == 1 else 'them'})")
    if need:
        raise ConfigError(f"{where}: {', '.join(map(repr, need))} {'is' if len(need) == 1 else 'are'} filled only by "
                          "runs with the cooling model, and no grid point has cooling = true (add cooling = [true] "
                          f"to [grid], or remove {'it' if len(need) == 1 else 'them'})")


def _parse_tradeoff(v: Any) -> tuple[tuple[str, float], ...]:
    if v is None:
        return ()
    if isinstance(v, list):
        v = {m: 1.0 for m in v}
    if not isinstance(v, dict) or not v:
        raise ConfigError("report.tradeoff: expected a table metric = weight (e.g. { bsld_mean = 2, "
                          "ramp_15min_p95_w = 1 }) or a list of metrics (equal weights)")
    out = []
    for m, w in v.items():
        metric_direction("report.tradeoff", m)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not (w > 0) or w == float("inf"):
            raise ConfigError(f"report.tradeoff.{m}: the weight must be a number > 0, got {w!r}")
        out.append((m, float(w)))
    return tuple(out)


def _parse_pareto(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or len(v) != 2 or v[0] == v[1]:
        raise ConfigError(f"report.pareto: expected two different metrics [x, y], got {v!r}")
    for m in v:
        metric_direction("report.pareto", m)
    return tuple(v)


def _parse_baseline(v: Any, grid) -> str | None:
    if v is None:
        return None
    v = _str("report.baseline", v)
    parts = v.split("+")
    values = dict(grid)
    for axis, part in zip(("policy", "backfill"), parts):
        if part not in map(str, values.get(axis, ())):
            raise ConfigError(f"report.baseline: {v!r} names {axis} {part!r}, which the grid does not have "
                              f"({', '.join(map(str, values.get(axis, ())))}); write it as policy+backfill, "
                              "e.g. \"fcfs+easy\"")
    # further parts as a variant's label has them (sweep.variants): axis=value of an axis that varies;
    # anything else would match no variant, and the report would fall back to its default baseline
    varying = [a for a, vals in grid if a not in ("policy", "backfill") and len(vals) > 1]
    for part in parts[2:]:
        axis, eq, value = part.partition("=")
        if not eq or axis not in varying or value not in map(str, values[axis]):
            shown = ", ".join(f"{a}=<{'|'.join(map(str, values[a]))}>" for a in varying) or "none: no other axis varies"
            raise ConfigError(f"report.baseline: {v!r}: {part!r} is not axis=value of a grid axis that varies "
                              f"({shown}); write it as policy+backfill[+axis=value...], e.g. \"fcfs+easy\"")
    return v


def _parse_validation(v: Any, datasets: list[str]) -> tuple[tuple[str, str], ...]:
    if v is None:
        return ()
    if not isinstance(v, dict):
        raise ConfigError("report.validation: expected a table dataset = \"path/to/validation.json\"")
    out = []
    for ds, path in v.items():
        _check_choice("report.validation", ds, datasets)
        path = _str(f"report.validation.{ds}", path)
        if not Path(path).is_file():
            raise ConfigError(f"report.validation.{ds}: {path} is not a file (a validation.json written by "
                              "twinsweep validate)")
        out.append((ds, str(Path(path).resolve())))
    return tuple(out)


def study_metrics(study: dict) -> list[str]:
    """Every metric a ``study.json`` document names (rank, trade-off, Pareto), in that order."""
    rep = study.get("report") or {}
    names = list(study_rank(study)) + [m for m, _ in rep.get("tradeoff") or ()] + list(rep.get("pareto") or ())
    return list(dict.fromkeys(names))


def parse_spec(doc: dict, source: str | None = None) -> StudySpec:
    """Validate a parsed TOML document (dict) into a :class:`StudySpec`.

    Raises ConfigError naming the offending key (``datasets[1].windows[0].start``, ``grid.policy``,
    ``backend.name`` ...) and the allowed values.
    """
    _check_keys("study spec", doc, _TOP_KEYS)
    st = _check_keys("study", doc.get("study", {}), _STUDY_KEYS)
    name = _str("study.name", st.get("name", Path(source).stem if source else "study"))
    seeds_v = st.get("seeds", 1)
    if isinstance(seeds_v, list):
        seeds = tuple(_int(f"study.seeds[{i}]", s, lo=0) for i, s in enumerate(seeds_v))
        if not seeds or len(set(seeds)) != len(seeds):
            raise ConfigError(f"study.seeds: need distinct seeds, got {seeds_v}")
    else:
        seeds = tuple(range(_int("study.seeds", seeds_v, lo=1)))
    retries = _int("study.retries", st.get("retries", 1), lo=0)
    output = _str("study.output", st.get("output", f"results/{name}"))

    p = _check_keys("perturbation", doc.get("perturbation", {}), _PERTURB_KEYS)
    if "submit_jitter" in p and "submit_jitter_s" in p:
        raise ConfigError("perturbation: give submit_jitter or submit_jitter_s, not both")
    sigma = p.get("runtime_sigma", 0.0)
    number = isinstance(sigma, (int, float)) and not isinstance(sigma, bool)
    if not number or not math.isfinite(sigma) or sigma < 0:
        raise ConfigError(f"perturbation.runtime_sigma: expected a number >= 0, got {sigma!r}"
                          + (" (not a finite number)" if number and not math.isfinite(sigma) else ""))
    jitter = _duration("perturbation.submit_jitter", p.get("submit_jitter", p.get("submit_jitter_s", 0)))
    perturbation = Perturbation(float(sigma), int(jitter))

    ds = doc.get("datasets")
    if not isinstance(ds, list) or not ds:
        raise ConfigError("datasets: the study needs at least one [[datasets]] entry with a 'trace'")
    datasets = tuple(_parse_dataset(d, i) for i, d in enumerate(ds))
    names = [d.name for d in datasets]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"datasets: duplicate dataset name(s) {dup}; give each a distinct 'name'")

    grid = _parse_grid(doc.get("grid", {}))
    check_grid(grid)  # every grid point's run config and scheduler, before anything runs
    rank = _parse_rank(doc.get("rank"))
    check_cooling_metrics("rank", [m for m, _ in rank], grid)

    b = _check_keys("backend", doc.get("backend", {}), _BACKEND_KEYS)
    bname = check_name("backend.name", b.get("name", "ray"), BACKENDS)
    workers = b.get("workers")
    if workers is not None:
        workers = _int("backend.workers", workers, lo=1)
    address = b.get("address")
    if address is not None and not isinstance(address, str):
        raise ConfigError(f"backend.address: expected a cluster address string (e.g. \"auto\" or \"ray://head:10001\"), "
                          f"got {address!r}")
    address = address or None
    if address is not None and not BACKENDS.get(bname).takes_address:
        takers = address_takers()
        raise ConfigError(f"backend.address: backend {bname!r} takes no address; only "
                          f"{', '.join(repr(n) for n in takers) or 'no backend'} {'does' if len(takers) == 1 else 'do'}")
    slurm_opts = {}
    if b.get("slurm") is not None:
        slurm_opts = parse_slurm_options(b["slurm"], "backend.slurm")
    backend = BackendSpec(bname, workers, address, slurm_opts)

    r = _check_keys("report", doc.get("report", {}), _REPORT_KEYS)
    tl = _check_keys("report.timeline", r.get("timeline", {}), _TIMELINE_KEYS)
    if "dataset" in tl:
        _check_choice("report.timeline.dataset", tl["dataset"], names)
    if "window" in tl:
        dsn = tl.get("dataset", names[0])
        wins = [w.name for w in datasets[names.index(dsn)].windows]
        _check_choice("report.timeline.window", tl["window"], wins)
    if "seed" in tl:
        _check_choice("report.timeline.seed", tl["seed"], seeds)
    report = ReportSpec(tl.get("dataset"), tl.get("window"), tl.get("seed"),
                        _int("report.bootstrap", r.get("bootstrap", 1000), lo=1),
                        _int("report.seed", r.get("seed", 0), lo=0),
                        tradeoff=_parse_tradeoff(r.get("tradeoff")),
                        pareto=_parse_pareto(r.get("pareto")),
                        baseline=_parse_baseline(r.get("baseline"), grid),
                        validation=_parse_validation(r.get("validation"), names))
    check_cooling_metrics("report.tradeoff", [m for m, _ in report.tradeoff], grid)
    check_cooling_metrics("report.pareto", report.pareto, grid)
    return StudySpec(name=name, datasets=datasets, grid=grid, seeds=seeds, perturbation=perturbation,
                     rank=rank, backend=backend, report=report, output=output, retries=retries,
                     description=_description(st.get("description", "")), source=source)


def load_toml_spec(path: str | os.PathLike, parse, what: str = "study spec"):
    """Read a TOML file and hand it to ``parse(doc, path)``; every ConfigError is prefixed with the
    file name. Raises ConfigError when the file cannot be read or is not valid TOML."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read {what}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from exc
    try:
        return parse(doc, str(p))
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from exc


def load_spec(path: str | os.PathLike) -> StudySpec:
    """Read and validate a TOML study file. Raises ConfigError (file name + key) when it is bad."""
    return load_toml_spec(path, parse_spec, "study spec")
