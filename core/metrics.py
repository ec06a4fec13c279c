"""The metric catalogue: every run metric's name, unit, direction, display and definition.

One :class:`Metric` per key of ``stats.json["system"]`` (and column of a sweep's
``runs.parquet``). Everything that names, validates, ranks, aggregates, labels or prints a metric
reads it from here: :mod:`twinsweep.core.stats` (the keys it writes), the study and tune specs
(``[rank]``, ``[report]`` and ``tune.objectives`` names and their default direction), the
aggregation (which metrics are summarised by default), the HTML report (labels, units, rounding,
axis floors, how two values are compared) and the CLI summaries.

Stored values are SI (s, J, W, °C / K) or plain ratios; the display fields say how a value is shown:
``value / scale`` in ``display_unit`` with ``digits`` significant digits.

Plug-in metrics. A metric is registered in :data:`METRICS` (``twinsweep.core.registry``), so an
installed package adds one with an entry point in the ``twinsweep.metrics`` group whose object is a
:class:`Metric` with a ``compute`` function::

    [project.entry-points."twinsweep.metrics"]
    jobs_per_mwh = "mypkg.metrics:JOBS_PER_MWH"

    JOBS_PER_MWH = Metric("jobs_per_mwh", unit="jobs/MWh", direction="max", label="jobs per MWh",
                          compute=lambda m: ...)      # m: MetricInputs -> float | None

or a session calls ``METRICS.register(name, Metric(...))`` (or :func:`register_metric`). From then
on :func:`twinsweep.core.stats.compute_stats` writes it into every run's ``stats.json``, a spec may
rank or tune by it, the aggregation summarises it and the report labels it — one registration.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

from .errors import ConfigError, UnknownNameError
from .registry import Registry

__all__ = ["Metric", "MetricInputs", "METRICS", "register_metric", "metric", "metric_names", "builtin_names",
           "pooled_metrics", "account_metric",
           "default_direction", "summary_metrics", "plugin_metrics", "format_number", "format_spread", "si_power", "column_decimals",
           "ENERGY_PER_WORK"]

_DIRECTIONS = ("min", "max")
_COMPARE = ("ratio", "difference")


@dataclasses.dataclass(frozen=True)
class MetricInputs:
    """What a plug-in metric's ``compute`` receives for one run.

    ``jobs``: the run's jobs table (``EngineResult.jobs``: simulated ``start_time`` / ``end_time``,
    ``status`` …); ``steps``: the engine's piecewise-constant system state (``time``,
    ``busy_nodes``, ``it_power_w`` …); ``system``: the :class:`~twinsweep.core.system.System`;
    ``t0``, ``t1``: the window ``[t0, t1)`` in s; ``stats``: the built-in metrics already computed
    (``stats.json["system"]`` so far, a dict).
    """

    jobs: Any
    steps: Any
    system: Any
    t0: int
    t1: int
    stats: dict


@dataclasses.dataclass(frozen=True)
class Metric:
    """One run metric.

    Attributes:
        name: key in ``stats.json["system"]`` and column of ``runs.parquet``.
        unit: unit of the stored value (``"s"``, ``"J"``, ``"W"``, ``"J·s"``, ``"°C"``, ``"K"``,
            ``"1"`` for a plain ratio, ``"jobs/h"``, ``"J/node-h"`` …).
        direction: ``"min"`` (smaller is better) or ``"max"``: the default direction when a spec
            ranks or tunes by the metric without giving one.
        label: display label, a lower-case noun phrase ("mean wait").
        display_unit: unit shown on pages and in summaries ("h", "MWh", "%", "" for none).
        scale: stored value / ``scale`` = displayed value (e.g. 3600 for s -> h).
        digits: significant digits shown.
        description: the definition in one or two sentences (formulas: ``core/stats.py``).
        source: where the definition comes from (paper, standard), or "".
        power: a power, energy or cooling figure: labelled "(assumed)" when the system's power
            model is assumed.
        cooling: only runs with the cooling model fill it (None otherwise).
        floor: where a plot axis of the metric starts (display units): 0 for most, 1 for PUE;
            None when the quantity has no natural zero (temperatures in °C), see ``min_span``.
        min_span: smallest span of a plot axis without a floor (display units), so that a zoom
            does not magnify differences below it.
        compare: how two values are compared on the page: ``"ratio"`` (relative change in %) or
            ``"difference"`` (in display units; for percentages, PUE and temperatures).
        rewards_idle: the metric falls when the machine does less work in the fixed window
            (energy totals, mean power): ranking it as "min" rewards leaving nodes idle. The report
            says so and points to a per-work metric (:data:`ENERGY_PER_WORK`).
        finished_only: computed over the jobs the policy started that finished in the window only
            (jobs running at the window start are left out, core/stats.py): a policy that leaves
            more jobs queued at the window end is not penalised for them (survivorship), so the
            report's verdict warns when the variant it recommends on such a metric leaves more jobs
            or work queued (``wait_censored_mean_s`` counts the jobs).
        summary: summarised by default by the aggregation and shown in the report's details
            (plug-ins: yes unless they say otherwise).
        compute: plug-ins only: ``compute(MetricInputs) -> float | None`` (None = undefined for
            the run). Built-in metrics are computed by :func:`twinsweep.core.stats.compute_stats`.
        kind: ``"run"`` (one value per run: a key of ``stats.json["system"]``, rankable, tunable;
            the registry :data:`METRICS`), ``"pooled"`` (one value per job or per power window,
            pooled over a sweep's runs by ``sweep.distributions``; :func:`pooled_metrics`) or
            ``"account"`` (one value per account or user of an accounts table, ``core.accounts``;
            :func:`account_metric`). Only ``"run"`` metrics are valid in ``[rank]`` and tuning.
    """

    name: str
    unit: str
    direction: str
    label: str
    display_unit: str = ""
    scale: float = 1.0
    digits: int = 3
    description: str = ""
    source: str = ""
    power: bool = False
    cooling: bool = False
    floor: float | None = 0.0
    min_span: float = 0.0
    compare: str = "ratio"
    rewards_idle: bool = False
    finished_only: bool = False
    summary: bool = True
    compute: Callable[[MetricInputs], float | None] | None = dataclasses.field(default=None, compare=False,
                                                                               repr=False)
    kind: str = "run"

    def display(self, value) -> float | None:
        """``value`` in display units, or None when it is None / NaN."""
        if value is None:
            return None
        try:
            v = float(value)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(v) else v / self.scale

    def scaled_to(self, max_abs) -> "Metric":
        """This metric shown in the SI unit of a set of values whose largest magnitude is
        ``max_abs`` (stored units): a metric stored in watts (``unit == "W"``) takes W, kW, MW or
        GW so that ``max_abs`` reads in [1, 1000) (a 100-node machine's power ramps in W, an
        exascale machine's in MW, not one fixed kW for both); every other metric, and a missing or
        zero ``max_abs``, keep their own display. Returns a Metric (``self`` when unchanged)."""
        try:
            top = abs(float(max_abs))
        except (TypeError, ValueError):
            return self
        if self.unit != "W" or not math.isfinite(top) or top <= 0:
            return self
        scale, unit = _power_unit(top)
        if (scale, unit) == (self.scale, self.display_unit):
            return self
        return dataclasses.replace(self, scale=scale, display_unit=unit)

    def header(self, assumed: bool = False) -> str:
        """Label with its display unit, e.g. ``"mean wait [h]"``; `` (assumed)`` appended for power
        and energy figures of an assumed power model."""
        s = f"{self.label} [{self.display_unit}]" if self.display_unit else self.label
        return s + (" (assumed)" if assumed and self.power else "")

    def format(self, value, digits: int | None = None, unit: bool = False) -> str:
        """``value`` (stored units) as display text: rounded, thousands separators, ``—`` for None."""
        text = format_number(self.display(value), self.digits if digits is None else digits)
        return f"{text} {self.display_unit}" if unit and self.display_unit and text != "—" else text

    @property
    def better(self) -> str:
        """``"lower is better"`` or ``"higher is better"``."""
        return "lower is better" if self.direction == "min" else "higher is better"

    @property
    def verb(self) -> str:
        """``"minimise"`` or ``"maximise"``."""
        return "minimise" if self.direction == "min" else "maximise"


def _check(name: str, obj) -> None:
    if not isinstance(obj, Metric):
        raise ConfigError(f"metric plug-in {name!r}: expected a twinsweep.core.metrics.Metric, got "
                          f"{type(obj).__name__}")
    if obj.name != name and ":" in name:  # a "module:object" name ([rank], tune): a metric's name is its column
        raise ConfigError(f"metric {name!r}: a metric cannot be named 'module:object' (its name is its column of "
                          f"runs.parquet and its key in [rank]: {obj.name!r}); install it through an entry point "
                          f"named {obj.name!r} in the group 'twinsweep.metrics' and use {obj.name!r} "
                          "(docs/plugins.md, \"Add a metric\")")
    if obj.name != name:
        raise ConfigError(f"metric plug-in {name!r}: its Metric is named {obj.name!r}; register it under that name "
                          "(an entry point in 'twinsweep.metrics' is named like its Metric)")
    if obj.direction not in _DIRECTIONS:
        raise ConfigError(f"metric {name!r}: direction must be 'min' or 'max', got {obj.direction!r}")
    if obj.compare not in _COMPARE:
        raise ConfigError(f"metric {name!r}: compare must be 'ratio' or 'difference', got {obj.compare!r}")
    if not (isinstance(obj.scale, (int, float)) and obj.scale > 0):
        raise ConfigError(f"metric {name!r}: scale must be > 0, got {obj.scale!r}")
    if not (isinstance(obj.digits, int) and 1 <= obj.digits <= 12):
        raise ConfigError(f"metric {name!r}: digits must be an integer in 1..12, got {obj.digits!r}")
    if obj.kind != "run":
        raise ConfigError(f"metric {name!r}: only run metrics (kind 'run') are registered, got kind {obj.kind!r}")
    if name in _BUILTIN and obj.compute is not None:
        raise ConfigError(f"metric {name!r} is computed by core.stats; a plug-in needs a new name")
    if name not in _BUILTIN and obj.compute is None:
        raise ConfigError(f"metric plug-in {name!r}: needs compute(MetricInputs) -> float | None")


#: Every run metric: built-ins (registered below) and plug-ins (entry-point group ``twinsweep.metrics``).
METRICS: Registry[Metric] = Registry("metric", "twinsweep.metrics", check=_check)

_BUILTIN: dict[str, Metric] = {}

_WAIT = "Job metrics use the jobs that finished in the window (completed or killed at their time limit)."
_FEITELSON = ("D. G. Feitelson, \"Metrics for parallel job scheduling and their convergence\", JSSPP 2001; "
              "Feitelson et al., \"Theory and practice in parallel job scheduling\", JSSPP 1997")
_AWRT = ("U. Schwiegelshohn and R. Yahyapour, \"Fairness in parallel job scheduling\", J. Scheduling 3(5), 2000")
_EDP = "R. Gonzalez and M. Horowitz, \"Energy dissipation in general purpose microprocessors\", IEEE JSSC 31(9), 1996"
_PUE = "The Green Grid, \"PUE: a comprehensive examination of the metric\", White Paper 49, 2012"
_COOL = "twinsweep's reduced-order cooling plant (docs/cooling.md)"

#: The per-work energy metric the report recommends instead of window totals.
ENERGY_PER_WORK = "facility_j_per_node_h"


def _b(name, unit, direction, label, display_unit="", scale=1.0, summary=False, **kw) -> None:
    m = Metric(name, unit, direction, label, display_unit, scale, summary=summary, **kw)
    _BUILTIN[name] = m


_H, _MWH, _KW = 3600.0, 3.6e9, 1e3
#: SI units a power metric's display may take (divisor, unit), smallest first (:meth:`Metric.scaled_to`).
_POWER_UNITS = ((1.0, "W"), (1e3, "kW"), (1e6, "MW"), (1e9, "GW"))


def _power_unit(top: float) -> tuple[float, str]:
    """(divisor, unit) of :data:`_POWER_UNITS` in which ``top`` (W, > 0) reads in [1, 1000)."""
    return next(((d, u) for d, u in reversed(_POWER_UNITS) if top >= d), _POWER_UNITS[0])


def si_power(watts: float) -> tuple[float, str]:
    """A power in watts as ``(value, unit)`` in the SI unit in which it reads in [1, 1000)
    (``1411436.4`` -> ``(1.4114364, "MW")``, ``375.0`` -> ``(375.0, "W")``; 0 -> ``(0.0, "W")``),
    the choice :meth:`Metric.scaled_to` makes for a power metric. Raises TypeError / ValueError
    for a value that is not a finite number."""
    w = float(watts)
    if not math.isfinite(w):
        raise ValueError(f"power must be finite, got {watts!r}")
    scale, unit = _power_unit(abs(w)) if w else _POWER_UNITS[0]
    return w / scale, unit
_b("wait_mean_s", "s", "min", "mean wait", "h", _H, summary=True,
   finished_only=True, description="Mean of start − submit over the finished jobs. " + _WAIT)
_b("wait_median_s", "s", "min", "median wait", "h", _H, finished_only=True,
   description="Median wait of the finished jobs.")
_b("wait_p95_s", "s", "min", "p95 wait", "h", _H, summary=True,
   finished_only=True, description="95th percentile (linear interpolation) of the finished jobs' waits.")
_b("wait_max_s", "s", "min", "max wait", "h", _H, finished_only=True, description="Longest wait of a finished job.")
_b("wait_censored_mean_s", "s", "min", "mean wait incl. still queued", "h", _H, summary=True,
   description="Mean wait over every job that queued in the window, a job still queued at the end counting its "
               "wait so far (a lower bound), so that leaving jobs in the queue is not rewarded as "
               "finished-job means would. It can be below 'mean wait' when many jobs are still queued: "
               "their waits are cut at the window end, while the few that finished may have queued since "
               "before the window. Jobs already running at the window start (placed at their recorded "
               "start) are not in it: their wait was not the policy's.")
_b("wait_censored_max_s", "s", "min", "max wait incl. still queued", "h", _H,
   description="Longest wait of a job that queued in the window, a job still queued at the end counting its "
               "wait so far (a lower bound): a job a policy starves until the window ends counts, where the "
               "longest wait of a finished job ('max wait') leaves it out. Jobs already running at the window "
               "start are not in it.")
_b("turnaround_mean_s", "s", "min", "mean turnaround", "h", _H,
   finished_only=True, description="Mean of wait + run time over the finished jobs.")
_b("slowdown_mean", "1", "min", "mean slowdown", digits=3,
   finished_only=True, description="Mean of (wait + run) / run over the finished jobs with run > 0.",
   source=_FEITELSON)
_b("bsld_mean", "1", "min", "mean bounded slowdown", summary=True,
   finished_only=True, description="Mean of max(1, (wait + run) / max(run, τ)) with τ = 10 s over the finished jobs.",
   source=_FEITELSON)
_b("awrt_s", "s", "min", "average weighted response time (AWRT)", "h", _H, summary=True,
   finished_only=True, description="Σ nodes·run·(wait + run) / Σ nodes·run over the finished jobs: response time "
                                   "weighted by resource use.", source=_AWRT)
_b("awwt_s", "s", "min", "average weighted wait time (AWWT)", "h", _H,
   finished_only=True, description="Σ nodes·run·wait / Σ nodes·run over the finished jobs.", source=_AWRT)
#: Said in the definition of every ``finished_only`` metric (core/stats.py leaves those jobs out).
_OWN = (" Jobs already running at the window start (placed at their recorded start, the same in every "
        "variant) are left out; a job already queued at the window start counts with its whole wait since "
        "its submission, part of which lies before the window (the log's queue the window starts from, the "
        "same in every variant).")
for _name, _m in list(_BUILTIN.items()):
    if _m.finished_only:
        _BUILTIN[_name] = dataclasses.replace(_m, description=_m.description + _OWN)
_b("utilization", "1", "max", "utilisation", "%", 0.01, summary=True, compare="difference",
   description="Busy node-time / (nodes × window length); a fraction in files, a percentage on pages "
               "(differences in percentage points).")
_b("makespan_s", "s", "min", "makespan", "h", _H,
   description="Latest end of a finished job − window start.")
_b("throughput_jobs_per_h", "jobs/h", "max", "throughput", "jobs/h",
   description="Finished jobs per hour of the window.")
_b("it_energy_j", "J", "min", "IT energy", "MWh", _MWH, power=True, rewards_idle=True,
   description="∫ IT (DC node) power dt over the window.")
_b("loss_energy_j", "J", "min", "conversion-loss energy", "MWh", _MWH, power=True, rewards_idle=True,
   description="∫ power-conversion losses dt over the window (node converters and rectifiers).")
_b("facility_energy_j", "J", "min", "facility energy", "MWh", _MWH, power=True, rewards_idle=True, summary=True,
   description="IT + conversion-loss (+ cooling) energy over the window. A total over a fixed window: a policy "
               "that leaves nodes idle uses less of it while delivering less work — compare "
               "facility energy per node-hour instead.")
_b(ENERGY_PER_WORK, "J/node-h", "min", "facility energy per node-hour", "kWh/node-h", 3.6e6, power=True,
   summary=True,
   description="Facility energy over the window / node-hours delivered in it (∫ busy nodes dt). Energy per "
               "unit of work: ranking raw facility energy over a fixed window rewards idling (idle nodes draw "
               "less power and do no work), while per node-hour delivered the idle nodes' power counts "
               "against the policy that left them idle. None when no node was busy.")
_b("mean_power_w", "W", "min", "mean facility power", "kW", _KW, power=True, rewards_idle=True,
   description="Facility energy / window length.")
_b("peak_power_w", "W", "min", "peak facility power", "kW", _KW, power=True, summary=True,
   description="Maximum of the facility power step function over the window (not of bin means).")
_b("edp_js", "J·s", "min", "EDP (facility energy × makespan)", "MWh·h", _MWH * _H, power=True, summary=True,
   description="Facility energy × makespan.", source=_EDP)
_b("ed2p_js2", "J·s²", "min", "ED²P (facility energy × makespan²)", "MWh·h²", _MWH * _H ** 2, power=True,
   description="Facility energy × makespan².", source=_EDP)
_b("job_edp_sum_js", "J·s", "min", "Σ job EDP", "kWh·h", 3.6e6 * _H, power=True,
   description="Σ over finished jobs of the job's node energy × its run time.", source=_EDP)
_b("job_ed2p_sum_js2", "J·s²", "min", "Σ job ED²P", "kWh·h²", 3.6e6 * _H ** 2, power=True,
   description="Σ over finished jobs of the job's node energy × its run time².", source=_EDP)
for _w, _txt in ((60, "1-min"), (900, "15-min")):
    _b(f"ramp_{_txt.replace('-', '')}_max_w", "W", "min", f"max {_txt} power ramp", "kW", _KW, power=True,
       summary=True, description=f"Largest absolute change between consecutive exact {_w}-s averages of the "
                                 "facility power.")
    _b(f"ramp_{_txt.replace('-', '')}_p95_w", "W", "min", f"p95 {_txt} power ramp", "kW", _KW, power=True,
       summary=True, description=f"95th percentile of the absolute changes between consecutive exact {_w}-s "
                                 "averages of the facility power.")
_b("cooling_energy_j", "J", "min", "cooling energy", "MWh", _MWH, power=True, cooling=True, rewards_idle=True,
   description="Σ cooling power × sample length (pumps, tower fans).", source=_COOL)
_b("pue_avg", "1", "min", "average PUE", "", 1.0, digits=4, power=True, cooling=True, summary=True, floor=1.0,
   compare="difference",
   description="Facility energy / IT equipment energy over the window (energy-weighted PUE; IT metered at the "
               "IT equipment input: a room UPS's losses and CDU pumps are overhead).", source=_PUE)
for _loop, _what in (("supply_temp", "secondary supply temperature"), ("return_temp", "secondary return temperature"),
                     ("tower_return_temp", "cooling-tower return temperature")):
    _b(f"{_loop}_mean_c", "°C", "min", f"mean {_what}", "°C", power=True, cooling=True, floor=None, min_span=5.0,
       compare="difference", description=f"Exact time-average of the {_what} over the window.", source=_COOL)
    _b(f"{_loop}_max_c", "°C", "min", f"max {_what}", "°C", power=True, cooling=True, floor=None, min_span=5.0,
       compare="difference", description=f"Highest instantaneous {_what}.", source=_COOL)
    _b(f"{_loop}_swing_c", "K", "min", f"{_what} swing", "K", power=True, cooling=True,
       summary=_loop == "tower_return_temp", compare="difference",
       description=f"Max − min of the instantaneous {_what} over the window.", source=_COOL)

#: Pooled-distribution metrics (``sweep.distributions``: every finished job's value, every power
#: window's change, pooled over the runs of a variant), in report order.
_POOLED: dict[str, Metric] = {}
#: Per-entry quantities of an accounts table (``core.accounts``), what account-incentive policies rank by.
_ACCOUNT: dict[str, Metric] = {}


def _other(table: dict, kind: str, name, unit, direction, label, display_unit="", scale=1.0, **kw) -> None:
    table[name] = Metric(name, unit, direction, label, display_unit, scale, summary=False, kind=kind, **kw)


_other(_POOLED, "pooled", "wait_s", "s", "min", "job wait", "h", _H,
       description="Wait (start − submit) of every finished job of the runs. " + _WAIT)
_other(_POOLED, "pooled", "bsld", "1", "min", "job bounded slowdown (τ=10 s)",
       description="max(1, (wait + run) / max(run, 10 s)) of every finished job.", source=_FEITELSON)
_other(_POOLED, "pooled", "job_edp_js", "J·s", "min", "job EDP (energy × run time)", "kWh·h", 3.6e6 * _H, power=True,
       description="Each finished job's energy × its run time; stats.json's job_edp_sum_js is their sum.", source=_EDP)
_other(_POOLED, "pooled", "power_swing_1min_w", "W", "min", "1-min power swing", "kW", _KW, power=True,
       description="|change| of facility power between consecutive 1-minute means (stats.json's ramp_1min_*).")
_other(_POOLED, "pooled", "power_swing_15min_w", "W", "min", "15-min power swing", "kW", _KW, power=True,
       description="|change| of facility power between consecutive 15-minute means (stats.json's ramp_15min_*).")
_other(_ACCOUNT, "account", "avg_power_w", "W", "min", "average power per node", "W", power=True,
       description="An entry's DC job energy / its node-seconds (core.accounts).")
_other(_ACCOUNT, "account", "edp_js", "J·s", "min", "EDP sum", "J·s", power=True,
       description="Σ energy × run time over an entry's finished jobs.", source=_EDP)
_other(_ACCOUNT, "account", "ed2p_js2", "J·s²", "min", "ED²P sum", "J·s²", power=True,
       description="Σ energy × run time² over an entry's finished jobs.", source=_EDP)
_other(_ACCOUNT, "account", "fugaku_points", "node·s", "max", "Fugaku points", "node·s",
       description="(mean energy − the entry's energy) / mean power, RAPS's formula (core.accounts).")


def pooled_metrics() -> dict[str, Metric]:
    """The pooled-distribution metrics (kind ``"pooled"``) by name, in report order."""
    return dict(_POOLED)


def account_metric(name: str) -> Metric:
    """The accounts-table quantity (kind ``"account"``) called ``name``. Raises UnknownNameError."""
    if name not in _ACCOUNT:
        raise UnknownNameError("account quantity", name, list(_ACCOUNT))
    return _ACCOUNT[name]


#: Built-in names in catalogue order (the order of ``stats.json["system"]``'s definitions).
_BUILTIN_ORDER: tuple[str, ...] = tuple(_BUILTIN)
for _n, _m in _BUILTIN.items():
    METRICS.register(_n, _m)


def register_metric(m: Metric, replace: bool = False) -> Metric:
    """Register a plug-in :class:`Metric` under its name (it needs ``compute``). Returns it.
    Raises ConfigError for a bad metric or a taken name (unless ``replace``)."""
    return METRICS.register(m.name, m, replace=replace)


def builtin_names() -> tuple[str, ...]:
    """The built-in metrics' names, in catalogue order (computed by :mod:`twinsweep.core.stats`)."""
    return _BUILTIN_ORDER


def metric_names() -> list[str]:
    """Every valid metric name: built-ins in catalogue order, then plug-ins (sorted)."""
    return list(_BUILTIN_ORDER) + [n for n in METRICS.names() if n not in _BUILTIN]


def metric(name: str) -> Metric:
    """The :class:`Metric` called ``name``. Raises UnknownNameError listing every valid name."""
    return METRICS.get(name)


def default_direction(name: str) -> str:
    """``"min"`` or ``"max"``: the metric's natural direction. Raises UnknownNameError."""
    return metric(name).direction


def summary_metrics() -> list[str]:
    """Names of the metrics summarised by default (``summary``), in catalogue order."""
    return [n for n in metric_names() if metric(n).summary]


def plugin_metrics() -> list[Metric]:
    """The registered and installed plug-in metrics (those with a ``compute``), sorted by name."""
    return [metric(n) for n in METRICS.names() if n not in _BUILTIN]


# ----------------------------------------------------------------------------------- formatting
def _decimals_for(x: float, digits: int) -> int:
    """Decimals that show ``x`` with ``digits`` significant digits, counted on ``x`` as rounded:
    a value that rounds up to the next power of ten takes one decimal less (0.00098 with one
    digit is 0.001, not 0.0010; 9.96 with two is 10, not 10.0)."""
    if x == 0 or not math.isfinite(x):
        return 0
    e = math.floor(math.log10(abs(x)))
    d = max(0, digits - 1 - e)
    if d > 0 and abs(round(x, d)) >= 10.0 ** (e + 1):
        d -= 1
    return d


def format_number(x, digits: int = 3, decimals: int | None = None, max_decimals: int = 6) -> str:
    """A number as text for people: ``digits`` significant digits (or exactly ``decimals``
    decimals; the integer part is always shown in full), thousands separators, never scientific
    notation; ``—`` for None / NaN, ``yes`` / ``no`` for booleans; a value that rounds to zero shows
    no sign. At most ``max_decimals`` decimals.

    >>> format_number(1335.564978), format_number(0.000902), format_number(4.4e3), format_number(None)
    ('1,336', '0.000902', '4,400', '—')
    >>> format_number(17.497384), format_number(-0.0004, decimals=2), format_number(2.5, decimals=0)
    ('17.5', '0.00', '2')
    """
    if x is None or isinstance(x, bool):
        return "—" if x is None else ("yes" if x else "no")
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    d = _decimals_for(v, digits) if decimals is None else decimals
    d = min(max(d, 0), max_decimals)
    text = f"{v:,.{d}f}"
    if float(text.replace(",", "")) == 0:
        return "0" if decimals is None else f"{0:.{d}f}"
    return text


def format_spread(std, decimals: int) -> str:
    """A standard deviation (or other spread) shown beside a value with ``decimals`` decimals: with
    the same decimals, or, when that would round a non-zero spread to 0 (``± 0.00`` reads as "no
    spread"), with one significant digit (``0.004``); an exact 0 is ``0`` (:func:`format_number`).

    >>> format_spread(1.34, 1), format_spread(0.004, 2), format_spread(0.0, 2)
    ('1.3', '0.004', '0')
    """
    if std == 0:
        return "0"
    text = format_number(std, decimals=decimals)
    return format_number(std, digits=1) if text.lstrip("-").strip("0.,") == "" else text


def column_decimals(values, digits: int = 3, max_decimals: int = 6, distinct: bool = False) -> int:
    """Decimals that show the largest magnitude in ``values`` with ``digits`` significant digits,
    for formatting a whole column alike (so that round-off such as 7e-05 next to 2.66 reads 0.00).
    ``distinct``: more decimals, up to ``digits - 1`` more and ``max_decimals``, while two values
    that differ would read alike (a ranking's medians 7.94 and 8.22 h beside 137 h: 2 decimals,
    not 0)."""
    finite = [float(v) for v in values if v is not None and not isinstance(v, bool)
              and isinstance(v, (int, float)) and math.isfinite(float(v))]
    big = max((abs(v) for v in finite), default=0.0)
    d = min(_decimals_for(big, digits), max_decimals) if big else 0
    if distinct:
        uniq = sorted(set(finite))
        limit = min(d + digits - 1, max_decimals)
        while d < limit and len({round(v, d) for v in uniq}) < len(uniq):
            d += 1
    return d
