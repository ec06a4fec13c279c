"""Options of the ``slurm`` backend: their form (``[backend.slurm]``, ``--sbatch KEY=VALUE``) and
Slurm time limits (package :mod:`backends.slurm`)."""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping

from twinsweep.core.durations import parse_slurm_duration
from twinsweep.core.errors import ConfigError


#: Option names (``[backend.slurm]`` keys and :class:`SlurmBackend` keyword arguments).
OPTION_KEYS = ("partition", "account", "qos", "time", "mem", "cpus_per_task", "array_parallelism",
               "runs_per_task", "max_array_size", "sbatch", "setup", "requeue", "max_requeues",
               "signal_delay_s", "poll_s", "job_name", "python")

#: sbatch options the backend sets itself (not accepted in ``sbatch``), with the option to use instead.
_RESERVED_SBATCH = {
    "array": "runs_per_task / array_parallelism", "output": None, "error": None, "open-mode": None,
    "signal": "signal_delay_s", "wrap": None, "test-only": None, "parsable": None, "dependency": None,
    "partition": "partition", "account": "account", "qos": "qos", "time": "time", "mem": "mem",
    "cpus-per-task": "cpus_per_task", "requeue": "requeue", "no-requeue": "requeue", "job-name": "job_name",
}


def parse_time(value: Any, where: str = "time") -> tuple[str, int]:
    """A Slurm time limit (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS`` or
    an integer number of minutes; :func:`core.durations.parse_slurm_duration`, the parser the sacct
    loader uses too). Returns ``(text, minutes)`` (minutes rounded up, as Slurm does). Raises
    ConfigError naming ``where`` for any other form, UNLIMITED, or a limit of zero."""
    seconds = parse_slurm_duration(value, where, kind="Slurm time limit", unlimited_ok=False)
    text = str(value).strip()
    if not seconds:
        raise ConfigError(f"{where}: {text!r}: the time limit must be > 0")
    return text, math.ceil(seconds / 60)


def _int_opt(where: str, v: Any, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}: expected an integer >= {lo}, got {v!r}")
    if v < lo:
        raise ConfigError(f"{where}: must be >= {lo}, got {v}")
    return v


def _name_opt(where: str, v: Any) -> str:
    if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9_.+\-]+", v):
        raise ConfigError(f"{where}: expected a Slurm name (letters, digits, _ . + -), got {v!r}")
    return v


def _sbatch_extra(where: str, d: Any) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where}: expected a table of sbatch option = value (e.g. {{constraint = \"gpu\"}})")
    out = {}
    for k, v in d.items():
        key = str(k).strip().lstrip("-")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key):
            raise ConfigError(f"{where}: {k!r} is not an sbatch option name")
        if len(key) == 1:
            raise ConfigError(f"{where}: {k!r}: use sbatch's long option name (e.g. constraint, not C)")
        key = key.replace("_", "-")
        if key in _RESERVED_SBATCH:
            use = _RESERVED_SBATCH[key]
            raise ConfigError(f"{where}.{key}: set by the backend" + (f"; use the {use!r} option instead" if use else ""))
        if isinstance(v, bool):
            if not v:
                continue  # a flag turned off
        elif isinstance(v, (int, float, str)):
            v = str(v)
            if "\n" in v:
                raise ConfigError(f"{where}.{key}: a value cannot span lines")
        else:
            raise ConfigError(f"{where}.{key}: expected a string, number or true, got {v!r}")
        out[key] = v
    return out


def parse_sbatch_items(items: Iterable[str], where: str = "--sbatch") -> dict[str, Any]:
    """``["constraint=gpu", "exclusive", "--mail-type=END"]`` (command line) -> an ``sbatch`` table."""
    d: dict[str, Any] = {}
    for item in items:
        key, eq, value = str(item).partition("=")
        d[key.strip()] = value.strip() if eq else True
    return _sbatch_extra(where, d)


def parse_options(d: Mapping[str, Any] | None, where: str = "backend.slurm") -> dict[str, Any]:
    """Check and normalise Slurm options (no Slurm needed); returns a new dict.

    Keys (all optional): ``partition``, ``account``, ``qos`` (names), ``time`` (:func:`parse_time`),
    ``mem`` (``<n>[K|M|G|T]``, per node), ``cpus_per_task``, ``array_parallelism``,
    ``runs_per_task``, ``max_array_size`` (integers >= 1), ``sbatch`` (table of extra sbatch options,
    ``true`` for a flag), ``setup`` (shell lines run before each array task, e.g. ``module load``),
    ``requeue`` (bool, default true), ``max_requeues`` (timeouts requeued, default 3),
    ``signal_delay_s`` (seconds before the time limit the checkpoint signal comes, default 90),
    ``poll_s`` (seconds between squeue polls, default 2), ``job_name``, ``python`` (command that
    starts Python on the compute nodes; default: this interpreter). Raises ConfigError naming
    ``<where>.<key>``.
    """
    d = dict(d or {})
    unknown = sorted(set(d) - set(OPTION_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(OPTION_KEYS)}")
    out: dict[str, Any] = {}
    for k in ("partition", "account", "qos"):
        if d.get(k) is not None:
            out[k] = _name_opt(f"{where}.{k}", d[k])
    if d.get("time") is not None:
        out["time"] = parse_time(d["time"], f"{where}.time")[0]
    if d.get("mem") is not None:
        mem = str(d["mem"]).strip().upper()
        if isinstance(d["mem"], bool) or not re.fullmatch(r"\d+[KMGT]?", mem):
            raise ConfigError(f"{where}.mem: expected memory per node as <n>[K|M|G|T] (e.g. 4G, 500M), "
                              f"got {d['mem']!r}")
        out["mem"] = mem
    for k in ("cpus_per_task", "array_parallelism", "runs_per_task", "max_array_size"):
        if d.get(k) is not None:
            out[k] = _int_opt(f"{where}.{k}", d[k], 1)
    for k in ("max_requeues", "signal_delay_s"):
        if d.get(k) is not None:
            out[k] = _int_opt(f"{where}.{k}", d[k], 0)
    if d.get("poll_s") is not None:
        v = d["poll_s"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ConfigError(f"{where}.poll_s: expected a number of seconds > 0, got {v!r}")
        out["poll_s"] = float(v)
    if d.get("requeue") is not None:
        if not isinstance(d["requeue"], bool):
            raise ConfigError(f"{where}.requeue: expected true or false, got {d['requeue']!r}")
        out["requeue"] = d["requeue"]
    if d.get("sbatch"):
        out["sbatch"] = _sbatch_extra(f"{where}.sbatch", d["sbatch"])
    if d.get("setup") is not None:
        s = d["setup"]
        if isinstance(s, str):
            s = [s]
        if not isinstance(s, (list, tuple)) or not all(isinstance(x, str) for x in s):
            raise ConfigError(f"{where}.setup: expected a list of shell lines")
        out["setup"] = list(s)
    for k in ("job_name", "python"):
        if d.get(k) is not None:
            if not isinstance(d[k], str) or not d[k].strip() or "\n" in d[k]:
                raise ConfigError(f"{where}.{k}: expected a non-empty one-line string, got {d[k]!r}")
            out[k] = d[k].strip()
    return out
