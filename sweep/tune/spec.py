"""The tune spec (``twinsweep tune``; DESIGN.md §6 "Tuning"): a study spec whose grid fixes every
axis to one value, plus a ``[tune]`` table (trials, objectives, sampler, storage, train/test windows,
``[tune.params]``); see :mod:`twinsweep.sweep.tune` for its keys. Parsing only: nothing here runs.
"""

from __future__ import annotations

import dataclasses
import math
import os
from decimal import Decimal
from typing import Any

from twinsweep.core.errors import ConfigError
from twinsweep.core.metrics import metric

from ..gridcheck import check_tuned_options
from ..spec import StudySpec, check_cooling_metrics, load_toml_spec, metric_direction, parse_spec

__all__ = ["TuneParam", "TuneSpec", "SAMPLERS", "parse_tune_spec", "load_tune_spec"]

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

    @property
    def metric_names(self) -> list[str]:
        """The objectives' metric names, in order (the Optuna study's metric names too, so that
        optuna-dashboard shows them instead of "Objective 0")."""
        return [m for m, _ in self.objectives]

    def objective_label(self, i: int) -> str:
        """Axis label of objective ``i``: the catalogue's label and display unit and, in words,
        what the search does with it, e.g. ``"mean bounded slowdown (minimise)"``,
        ``"mean wait [h] (minimise)"`` (:mod:`twinsweep.core.metrics`)."""
        name, d = self.objectives[i]
        return f"{metric(name).header()} ({'minimise' if d == 'min' else 'maximise'})"

    def objective_value(self, i: int, value) -> float | None:
        """Objective ``i``'s stored value in the display unit of :meth:`objective_label`."""
        return metric(self.objectives[i][0]).display(value)

    def format_values(self, values) -> str:
        """Objective values for people: each named and rounded in its display unit, with what the
        search does with it, e.g. ``"mean bounded slowdown 6.76 (minimise); facility energy per
        node-hour 0.299 kWh (minimise)"``; ``—`` for a missing value."""
        if values is None:
            return "—"
        parts = []
        for (name, d), v in zip(self.objectives, values):
            m = metric(name)
            parts.append(f"{m.label} {m.format(v, unit=True)} ({'minimise' if d == 'min' else 'maximise'})")
        return "; ".join(parts)

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
    if step is not None:
        if integer and step != int(step):
            raise ConfigError(f"{where}.step: an integer parameter needs an integer step, got {step}")
        # Optuna would otherwise lower high to the last multiple of step with a mere warning (with
        # step > high - low, the parameter would be fixed at low): checked as Optuna does, in decimals
        if (Decimal(str(high)) - Decimal(str(low))) % Decimal(str(step)) != 0:
            raise ConfigError(f"{where}.step: high - low = {high - low:g} is not a multiple of step {step:g}; "
                              "the search would never reach high")
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
    # as a sweep's options.<name> axes: each tuned option is known to the policy / backfill and
    # accepted at its bounds, before any trial runs (sweep.gridcheck)
    check_tuned_options(study.grid, {p.axis: (int(p.low), int(p.high)) if p.integer else (p.low, p.high)
                                     for p in params})
    if "objectives" not in t:
        raise ConfigError("tune.objectives: missing (e.g. objectives = {bsld_mean = \"min\"})")
    objectives = _parse_objectives(t["objectives"])
    check_cooling_metrics("tune.objectives", [m for m, _ in objectives], study.grid)
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
    return load_toml_spec(path, parse_tune_spec, "tune spec")
