"""Declared, typed options of scheduler plug-ins (policies and backfill variants).

Every plug-in class names an ``Options`` model: a frozen dataclass subclassing
:class:`PluginOptions` whose fields are the options it accepts, with defaults. A run's
``options`` dict is checked against it before anything runs (:func:`parse_options`): an unknown
or misspelt option, a wrong type, NaN or inf, or a value outside a declared bound is one
:class:`~twinsweep.core.errors.ConfigError` that names the plug-in, each bad option and the valid
options. Field annotations understood:

* ``float``: a finite number (int or float, numpy scalars included; not a bool nor a string),
  stored as float;
* ``int``: an integer (not a bool); ``bool``: true or false (strict); ``str``;
* ``typing.Literal[...]``: one of the listed values;
* ``X | None``: the above or None.

Bounds: ``dataclasses.field(default=..., metadata={"gt": 0})`` (also ``ge``, ``lt``, ``le``).
A subclass may fold keys that are not fields into fields before the check (:meth:`PluginOptions.prepare`,
listing them in ``extra_names``), e.g. the weighted policy's ``weights`` table.

Plain dataclasses rather than pydantic: a run process imports this on its start path, and
the checks needed here are a few lines (pydantic would add ~0.3 s of import per process).

Options that belong to the run rather than to one plug-in are :class:`RunOptions`
(``accounts_in``, ``acct_level``); every policy accepts them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
from typing import Any, ClassVar, Literal, Mapping

import numpy as np

from .errors import ConfigError

__all__ = ["PluginOptions", "RunOptions", "parse_options", "option_names"]

_BOUNDS = {"gt": (">", lambda v, b: v > b), "ge": (">=", lambda v, b: v >= b),
           "lt": ("<", lambda v, b: v < b), "le": ("<=", lambda v, b: v <= b)}


@dataclasses.dataclass(frozen=True)
class PluginOptions:
    """Base of every plug-in's options (a frozen dataclass; subclasses are frozen dataclasses too).

    ``extra_names``: keys :meth:`prepare` folds into fields, accepted although not fields.
    """

    extra_names: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Rewrite the raw options before they are checked (fold ``extra_names``); identity here.
        Raises ConfigError for a bad value of an extra name."""
        return data

    def notes(self) -> list[str]:
        """One-line warnings about valid options that make the plug-in do what a simpler one does
        (every weight 0: submit order, as ``fcfs``), said by every run that uses them
        (:func:`core.run.simulate`'s warnings) so that a study does not rank two names of one
        scheduler as if they differed. None here."""
        return []


@dataclasses.dataclass(frozen=True)
class RunOptions(PluginOptions):
    """Options every policy accepts (read by :func:`core.run.simulate`).

    accounts_in: accounts.json, run directory or jobs.parquet of an earlier run, or
        ``collect:replay`` / ``collect:replay:prev`` (docs in :mod:`core.policies.incentives`).
    acct_level: ``"account"`` (default) or ``"user"``: which accounts table prioritises jobs.
    replay_oversubscribe: replay only — follow the log exactly where it used more nodes than the
        system's nominal size (the pool is sized to the log's peak; utilisation stays against
        the nominal size; :func:`core.run.simulate`). Default False: such starts wait for room
        (``replay_delayed``).
    queue_cancelled: true to keep jobs cancelled while queued in the log queued until their cancel
        time (then they leave with status ``cancelled``; :func:`core.jobprep.cancel_times`), false to
        leave them out (``not_run``); None (default) follows the system file's ``queue_cancelled``
        (default false). Reschedule modes only; replay ignores it.
    honor_eligible: true to queue a job at its ``eligible_time`` (Slurm's ``Eligible``: the end of
        a hold, a dependency or a ``--begin`` time) when the trace gives one after its submit time
        (:func:`core.jobprep.prepare_jobs`); false to queue every job at its submit time; None
        (default) follows the system file's ``honor_eligible`` (default false). Reschedule modes
        only; replay ignores it.
    """

    accounts_in: str | None = None
    acct_level: Literal["account", "user"] = "account"
    replay_oversubscribe: bool = False
    queue_cancelled: bool | None = None
    honor_eligible: bool | None = None


def option_names(model: type[PluginOptions]) -> set[str]:
    """The keys ``model`` accepts: its fields and its ``extra_names``."""
    return {f.name for f in dataclasses.fields(model)} | set(model.extra_names)


@functools.cache
def _hints(model: type) -> dict[str, Any]:
    return typing.get_type_hints(model)


def _coerce(tp: Any, v: Any) -> Any:
    """``v`` converted to annotation ``tp``, or ValueError saying what was expected."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if v is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(a, v)
            except ValueError as exc:
                errors.append(str(exc))
        # "or None" after "got 'x'" read as part of the value: say that the option may be left unset
        raise ValueError(" or ".join(errors) + (" (or leave it unset)" if type(None) in args else ""))
    if origin is Literal:
        allowed = typing.get_args(tp)
        if not any(v == a and type(v) is type(a) for a in allowed):
            raise ValueError(f"expected one of {', '.join(map(repr, allowed))}, got {v!r}")
        return v
    if tp is float:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise ValueError(f"expected a number, got {v!r}")
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"must be finite, got {v!r}")
        return f
    if tp is int:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError(f"expected an integer, got {v!r}")
        return int(v)
    if tp is bool:
        if not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"expected true or false, got {v!r}")
        return bool(v)
    if tp is str:
        if not isinstance(v, str):
            raise ValueError(f"expected a string, got {v!r}")
        return v
    raise TypeError(f"unsupported option annotation {tp!r}")


def parse_options(kind: str, name: str, model: type[PluginOptions], options: Mapping[str, Any]):
    """An instance of ``model`` from ``options``, or one ConfigError naming ``kind`` ``name``, each
    bad option and why, and the valid options (sorted)."""
    valid = ", ".join(sorted(option_names(model))) or "none"
    try:
        data = model.prepare(dict(options))
    except ConfigError as exc:
        raise ConfigError(f"{kind} {name!r}: {exc}; valid options: {valid}") from None
    fields = {f.name: f for f in dataclasses.fields(model)}
    hints = _hints(model)
    bad, values = [], {}
    for key, v in data.items():
        f = fields.get(key)
        if f is None:
            bad.append(f"unknown option {key!r}")
            continue
        try:
            v = _coerce(hints[key], v)
            for b, (op, ok) in _BOUNDS.items():
                if b in f.metadata and v is not None and not ok(v, f.metadata[b]):
                    raise ValueError(f"must be {op} {f.metadata[b]}, got {data[key]!r}")
        except ValueError as exc:
            bad.append(f"option {key} {exc}")
            continue
        values[key] = v
    if bad:
        raise ConfigError(f"{kind} {name!r}: {'; '.join(bad)}; valid options: {valid}")
    return model(**values)
