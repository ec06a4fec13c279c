"""Every grid point of a study checked when its spec is loaded (issue 11, item 4).

A sweep whose grid holds a misspelt policy option, a NaN weight, a wet-bulb CSV that does not exist
or a policy name that resolves to nothing must fail before any run starts, with one
:class:`core.errors.ConfigError` that names the axis (``grid.<axis>``), the value and a grid point
that has it (the spec file is prefixed by :func:`sweep.spec.load_toml_spec`) — not pass
``--dry-run`` and then fail in every run.

The check is equivalent to building every grid point's :class:`core.config.RunConfig` and its
scheduler (policy + backfill + options), without enumerating the product of the axes:

* each check of ``RunConfig`` depends on one field only, so each *distinct value of each axis* is
  checked once, alone (a wet bulb with ``cooling = true``, the only setting that reads it);
* a wet-bulb CSV is opened and read once per distinct path (:func:`core.cooling.check_wetbulb`);
* the scheduler depends on ``(policy, backfill, options)``, so each distinct combination of the
  ``policy``, ``backfill`` and ``options.<name>`` axes is built once (``sample_period``,
  ``cooling``, ``kill``… and the seeds do not multiply this count);
* two values of one axis that normalise to the same run field (``wetbulb = [20, "20"]``), and
  several wet bulbs on points with ``cooling = false`` (which ignore it), would give identical runs:
  they are errors here, so that the grid's size is its number of distinct runs; likewise several
  ``scheduler`` values beside policies other than ``external`` (which ignore it). Policy
  ``external`` needs a ``scheduler`` axis, whose programs must exist
  (:func:`core.external.check_scheduler`), and backfill ``none``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from twinsweep.core.config import RunConfig
from twinsweep.core.errors import ConfigError
from twinsweep.core.scheduler import REPLAY

__all__ = ["check_grid", "check_scheduler", "check_tuned_options", "ignored_axes", "repeats_a_run"]

_OPTION_PREFIX = "options."

#: The grid axes policy ``replay`` ignores (the recorded starts decide; core/run.py, core/jobprep.py):
#: the backfill, the kill at the limit, and the run options of rescheduling.
REPLAY_IGNORES = ("backfill", "kill", "options.accounts_in", "options.acct_level", "options.queue_cancelled",
                  "options.honor_eligible")
#: The grid axes every other policy ignores (replay only: core/options.py RunOptions).
RESCHEDULE_IGNORES = ("options.replay_oversubscribe",)


def ignored_axes(policy: Any) -> tuple[str, ...]:
    """The grid axes a run of ``policy`` ignores: :data:`REPLAY_IGNORES` for ``replay``, else
    :data:`RESCHEDULE_IGNORES`."""
    return REPLAY_IGNORES if policy == REPLAY else RESCHEDULE_IGNORES


def repeats_a_run(point: dict[str, Any], firsts: dict[str, Any]) -> bool:
    """True for a grid point that would repeat a run of the plan: its policy ignores an axis
    (:func:`ignored_axes`) that the point has at a value other than the axis's first (``firsts``:
    axis -> its first value). A policy so runs once over the axes it ignores, with their first
    values; :mod:`sweep.expand` leaves such points out of the plan and :func:`check_grid` does not
    check them (e.g. ``options.replay_oversubscribe = [false, true]`` beside ``fcfs``: fcfs runs
    with false only, and true, which applies to replay only, is never built for it)."""
    return any(a in point and not (type(point[a]) is type(firsts[a]) and point[a] == firsts[a])  # True != 1 here
               for a in ignored_axes(point.get("policy")))


def _point(coords: dict[str, Any]) -> str:
    return ", ".join(f"{a}={v!r}" for a, v in coords.items())


def _first_non_finite(v: Any) -> Any:
    """The first NaN/inf number inside an option value (numbers, lists, tables), else None."""
    if isinstance(v, float) and not math.isfinite(v):
        return v
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (list, tuple)):
        for x in v:
            bad = _first_non_finite(x)
            if bad is not None:
                return bad
    return None


def _check_option_values(grid: dict[str, tuple]) -> None:
    for axis, values in grid.items():
        if not axis.startswith(_OPTION_PREFIX):
            continue
        for v in values:
            bad = _first_non_finite(v)
            if bad is not None:
                what = f"value {v!r}" if bad is v else f"value {v!r} holds {bad!r}, which"
                raise ConfigError(f"grid.{axis}: {what} is not a finite number; an option value is never NaN "
                                  "or inf")


def _check_wetbulb(grid: dict[str, tuple]) -> None:
    from twinsweep.core.cooling import check_wetbulb

    values = grid.get("wetbulb")
    if values is None:
        return
    cooling = grid.get("cooling", (False,))
    if True not in cooling:
        raise ConfigError("grid.wetbulb: the wet bulb is an input of the cooling model, and no grid point has "
                          "cooling = true (add cooling = [true] to [grid], or remove wetbulb)")
    if False in cooling and len(values) > 1:
        raise ConfigError(f"grid.wetbulb: grid points with cooling = false ignore the wet bulb, so its "
                          f"{len(values)} values {list(values)} give identical runs there; keep cooling = [true] "
                          "or give one wetbulb value")
    for v in values:
        try:
            check_wetbulb(v)
        except ConfigError as exc:
            raise ConfigError(f"grid.wetbulb: value {v!r} (grid points with cooling=True): {exc}") from None


def _check_axis_values(grid: dict[str, tuple]) -> None:
    run_axes = {a: v for a, v in grid.items() if not a.startswith(_OPTION_PREFIX)}
    first = {a: v[0] for a, v in grid.items()}
    with_cooling = True in run_axes.get("cooling", ())
    for axis, values in run_axes.items():
        seen: dict[str, Any] = {}
        for v in values:
            # each RunConfig check reads one field (the wet bulb's: only with cooling on), so the
            # value is checked alone and is the cause of any error
            fields = {axis: v, **({"cooling": True} if axis == "wetbulb" and with_cooling else {}),
                      **({"policy": "external"} if axis == "scheduler" else {}),
                      **({"scheduler": first.get("scheduler")} if axis == "policy" and v == "external" else {})}
            try:
                cfg = RunConfig(data="<grid check>", **fields)
            except ConfigError as exc:
                point = {**first, **fields}
                raise ConfigError(f"grid.{axis}: value {v!r} (grid point {_point(point)}): {exc}") from None
            norm = cfg.canonical_json()
            if norm in seen:
                raise ConfigError(f"grid.{axis}: values {seen[norm]!r} and {v!r} give the same run "
                                  f"({axis} = {getattr(cfg, axis)!r}); keep one")
            seen[norm] = v


def check_scheduler(policy: str, backfill: str, options: dict[str, Any]) -> None:
    """Check the scheduler of one run (policy ``policy`` with ``options``, backfill ``backfill``):
    names and typed options by :func:`core.scheduler.validate_scheduler`, then the policy and the
    backfill variant are built on a one-job queue and discarded, so that checks of their
    constructors (e.g. an account factor without ``accounts_in``) run too. ``replay`` builds
    nothing (recorded starts decide). Raises ConfigError; an error of another type (a plug-in that
    needs a real workload to be built) is left to the run.

    The accounts table of account-aware policies is what ``accounts_in`` names; it is read by the
    run (or collected by an earlier replay), so an empty table stands in for it here.
    """
    from twinsweep.core import scheduler
    from twinsweep.core.jobview import JobView, SchedulerContext

    spec = scheduler.validate_scheduler(policy, backfill, options)
    if spec.policy_cls is None:
        return
    accounts = None
    if spec.run_options.accounts_in:
        from twinsweep.core.accounts import Accounts

        accounts = Accounts()
    view = JobView(submit=[0], nodes=[1], time_limit=[60], trace_index=[0], priority=[1.0], user=["u"],
                   account=["a"])
    context = SchedulerContext(system_nodes=1, accounts=accounts)
    try:
        spec.policy_cls(view, spec.policy_options, context)
        spec.backfill_cls(view, spec.backfill_options, context)
    except ConfigError:
        raise
    except Exception:  # noqa: BLE001 - only the plug-ins' own checks are wanted here
        pass


def _check_schedulers(grid: dict[str, tuple]) -> None:
    names = [a for a in grid if a.startswith(_OPTION_PREFIX)]
    axes = ["policy", "backfill", *names]
    firsts = {a: v[0] for a, v in grid.items()}
    for combo in itertools.product(*(grid[a] for a in axes)):
        if repeats_a_run(dict(zip(axes, combo)), firsts):  # not in the plan (sweep.expand)
            continue
        policy, backfill, *vals = combo
        try:
            check_scheduler(policy, backfill, {a[len(_OPTION_PREFIX):]: v for a, v in zip(names, vals)})
        except ConfigError as exc:
            raise ConfigError(f"grid point ({_point(dict(zip(axes, combo)))}): {exc}") from None


def _check_external(grid: dict[str, tuple]) -> None:
    policies = grid.get("policy", ())
    schedulers = grid.get("scheduler")
    if "external" in policies and not schedulers:
        raise ConfigError("grid.policy: policy 'external' needs the command of its scheduler: add scheduler = "
                          "[\"CMD ARGS\"] to [grid] (docs/protocol.md)")
    if schedulers and "external" not in policies:
        raise ConfigError("grid.scheduler: only policy 'external' uses a scheduler, and grid.policy has none")
    if schedulers and len(schedulers) > 1 and any(p != "external" for p in policies):
        others = [p for p in policies if p != "external"]
        raise ConfigError(f"grid.scheduler: policies {others} ignore the scheduler, so its {len(schedulers)} values "
                          "give identical runs there; put the external schedulers in a study of their own or give "
                          "one scheduler value")


def check_grid(grid: tuple[tuple[str, tuple], ...]) -> None:
    """Check every point of a parsed grid (``StudySpec.grid``: ``(axis, values)`` pairs, ``policy``
    and ``backfill`` present) as the module docstring describes. Cost: one RunConfig per distinct
    axis value, one read per wet-bulb CSV, one scheduler per distinct (policy, backfill, options)
    combination. Raises ConfigError naming ``grid.<axis>`` or the grid point."""
    g = dict(grid)
    _check_option_values(g)
    _check_wetbulb(g)
    _check_external(g)
    _check_axis_values(g)
    _check_schedulers(g)


def check_tuned_options(grid: tuple[tuple[str, tuple], ...], bounds: dict[str, tuple[Any, Any]],
                        where: str = "tune.params") -> None:
    """Check run options that a search sets (``twinsweep tune``) as :func:`check_grid` checks a
    sweep's ``options.<name>`` axes, before any run: ``grid``, a checked grid whose axes have one
    value each; ``bounds``, ``"options.<name>" -> (low, high)`` (the values of the option's type).
    The grid point with every tuned option at its low bound, then the one with all at their high
    bound, get their scheduler built (:func:`check_scheduler`: a misspelt or unknown option, a
    wrong type, a value the policy refuses). Raises ConfigError prefixed with ``where``."""
    for i in (0, 1):
        g = {**dict(grid), **{axis: (b[i],) for axis, b in bounds.items()}}
        try:
            _check_option_values(g)
            _check_schedulers(g)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
