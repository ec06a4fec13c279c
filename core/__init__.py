"""twinsweep's twin: one event-driven, deterministic simulation run of a batch system.

Public API (re-exported here): :func:`simulate`, :func:`write_run`, :class:`RunConfig`,
:class:`Perturbation`, :func:`load_workload`, :class:`Workload`, :func:`load_system`,
:func:`list_systems`, :class:`System`, the error types, and the policy / backfill names.
"""

from twinsweep import __version__  # noqa: E402,F401 - one version, set in twinsweep/__init__.py

from .config import Perturbation, RunConfig, parse_human_duration  # noqa: E402
from .errors import ConfigError, TraceFormatError, TwinError, UnknownNameError  # noqa: E402
from .system import System, list_systems, load_system, system_from_swf_header  # noqa: E402
from .workload import Workload  # noqa: E402


def __getattr__(name):  # lazy: keep `import core` light for workers
    if name in ("simulate", "write_run", "RunResult"):
        from . import run

        return getattr(run, name)
    if name == "load_workload":
        from .loaders import load_workload

        return load_workload
    if name in ("POLICIES", "Policy"):
        from . import policies

        return getattr(policies, name)
    if name in ("BACKFILLS", "Backfill"):
        from . import backfill

        return getattr(backfill, name)
    if name in ("available_policies", "available_backfills", "validate_scheduler"):
        from . import scheduler

        return getattr(scheduler, name)
    raise AttributeError(name)


__all__ = [
    "BACKFILLS", "POLICIES", "Perturbation", "RunConfig", "parse_human_duration", "ConfigError",
    "TraceFormatError", "TwinError", "UnknownNameError", "System", "list_systems", "load_system",
    "system_from_swf_header", "Workload", "simulate", "write_run", "RunResult", "load_workload",
    "Policy", "Backfill", "available_policies", "available_backfills", "validate_scheduler",
]
