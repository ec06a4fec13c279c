"""The one interface every backend implements (DESIGN.md §1, §6), and the backend registry.

A backend executes a batch of :class:`Task` s with a run function handed to it by its caller and
yields an :class:`Outcome` per task *as tasks finish* (not in submission order). It never imports
``sweep``: the run function and its payloads are opaque to it.

Run function contract: ``fn(payload, shared_value) -> small picklable result``, where
``shared_value`` is ``shared[task.shared]`` (e.g. a (Workload, System) pair loaded once per
dataset), or None when ``task.shared`` is None. An exception raised by ``fn`` becomes an Outcome
with ``ok=False`` and the formatted traceback; it never stops the other tasks.

Backends are plug-ins of :data:`BACKENDS` (a :class:`~twinsweep.core.registry.Registry`, the one
plug-in mechanism): the built-ins (``local``, ``ray``, ``slurm``) register themselves when
``twinsweep.backends`` imports them; an installed package adds one through the
``twinsweep.backends`` entry-point group (its object: a :class:`Backend` subclass). Every
registered backend runs the shared conformance suite (``twinsweep.testing.conformance``, parametrised
from the registry by ``tests/test_backend_conformance.py``);
docs/plugins.md, "Add a backend", walks through one.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import os
import signal
import socket
import time
import traceback
from typing import Any, Callable, Iterable, Iterator, Mapping

from twinsweep.core.errors import ConfigError
from twinsweep.core.registry import Registry

RunFn = Callable[[Any, Any], Any]


@dataclasses.dataclass(frozen=True)
class Task:
    """One unit of work: ``key`` (unique id), ``payload`` (first argument of the run function),
    ``shared`` (name of a shared object, second argument; None for none)."""

    key: str
    payload: Any
    shared: str | None = None


@dataclasses.dataclass
class Outcome:
    """What came back from one task.

    ``ok``: fn returned; ``result``: its return value; ``error``: ``"Type: message"`` when it
    raised (or the worker died); ``traceback``: formatted traceback text; ``wall_s``: seconds spent
    in fn (wall clock); ``cpu_s``: CPU seconds the worker process spent in fn (user + system of all
    its threads, ``time.process_time``; 0.0 when fn never ran: a dead worker, a lost task); ``worker``: ``host:pid`` that ran it; ``errno``: the ``OSError.errno`` when fn raised an
    OSError (e.g. ENOSPC: the disk is full, which the caller may treat as fatal), else None.
    """

    key: str
    ok: bool
    result: Any = None
    error: str | None = None
    traceback: str | None = None
    wall_s: float = 0.0
    worker: str = ""
    cpu_s: float = 0.0
    errno: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The outcome as a JSON-ready dict (``result`` must be JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Outcome":
        """Inverse of :meth:`to_json`; unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def worker_id() -> str:
    """``host:pid`` of the current process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def call_safely(fn: RunFn, task: Task, shared_value: Any) -> Outcome:
    """Run ``fn(task.payload, shared_value)`` and turn any exception into a failed Outcome (with the
    wall and CPU seconds fn took: ``Outcome.wall_s`` / ``cpu_s``)."""
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        result = fn(task.payload, shared_value)
        return Outcome(task.key, True, result=result, wall_s=time.perf_counter() - t0, worker=worker_id(),
                       cpu_s=time.process_time() - c0)
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, none stops the batch
        if _is_interrupt(exc):
            raise KeyboardInterrupt from exc
        return Outcome(task.key, False, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(),
                       wall_s=time.perf_counter() - t0, worker=worker_id(), errno=_errno_of(exc),
                       cpu_s=time.process_time() - c0)


def _errno_of(exc: BaseException) -> int | None:
    """The errno of ``exc`` or of the OSError it was raised from (pyarrow wraps them), else None."""
    import re

    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError):
            if exc.errno is not None:
                return int(exc.errno)
            m = re.search(r"\[errno (\d+)\]", str(exc), re.I)
            if m:
                return int(m.group(1))
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _is_interrupt(exc: BaseException) -> bool:
    """True for Ctrl-C turned into an ordinary exception by a library: pyarrow cancels a read or
    write on SIGINT/SIGTERM and re-raises ``ArrowCancelled`` (carrying ``signum``) when the
    re-emitted signal has not reached Python yet; as a failed run it would swallow the Ctrl-C."""
    return type(exc).__name__ == "ArrowCancelled" and getattr(exc, "signum", None) in (signal.SIGINT, signal.SIGTERM)


class Backend(abc.ABC):
    """Executes tasks; use as a context manager (``with make_backend(...) as b: ...``).

    ``workers``: parallel workers (None = all CPUs the backend sees). ``in_flight``: tasks
    submitted and not yet returned (what a progress bar shows as running).

    A backend class declares ``name`` (its registry name), ``takes_address`` (True when it joins
    a cluster at an ``address``, as ``ray`` does; :func:`make_backend` refuses an address for the
    others) and optionally ``address_hint`` (appended to that refusal).
    """

    name = "base"
    takes_address = False
    address_hint = ""
    #: True when the workers may not share the driver's filesystem and a run function's result can
    #: carry the run's files back to the driver (``ray`` joined with an address); a caller then
    #: asks for that when a run's outputs do not appear where the driver looks.
    ships_files = False
    #: True when tasks run as jobs of a batch queue that outlive the driver (``slurm``): such a
    #: backend also has ``submit(tasks, fn, shared)``, which queues them and returns at once (a
    #: sweep's ``--detach``), and a tuning runs its Optuna workers as such jobs
    #: (``sweep.tune.slurm_workers``) instead of evaluating trials from the driver.
    batch_queue = False
    #: The scheduler of ``sweep.distributions`` that computes a study's pooled distributions on the
    #: cluster this backend joined at an ``address`` (``ray``: Dask on Ray); None: the local one.
    distributions_scheduler: str | None = None

    @classmethod
    def study_options(cls, table: Mapping[str, Any], results_dir: str | os.PathLike, cache_dir: str | os.PathLike,
                      log: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Keyword arguments of this backend (beyond ``workers``/``address``) for a sweep or tuning
        writing into the results folder ``results_dir`` (absolute): ``table`` holds the study
        spec's options of this backend (already validated), ``cache_dir`` a folder inside the
        results folder the backend may keep files in across runs, ``log`` the caller's one-line
        progress messages. The base class takes none of them (``{}``); a backend overrides this to
        take what it needs, so that a caller never asks which backend it has."""
        return {}

    def __init__(self, workers: int | None = None):
        if workers is not None and int(workers) < 1:
            raise ConfigError(f"backend workers must be >= 1, got {workers}")
        self.workers = int(workers) if workers is not None else None
        self.in_flight = 0

    @abc.abstractmethod
    def run(self, tasks: Iterable[Task], fn: RunFn, shared: Mapping[str, Any] | None = None) -> Iterator[Outcome]:
        """Execute ``tasks`` with ``fn``; yield one Outcome per task as each finishes.

        ``shared``: name -> object, made available once per worker (not once per task).
        Closing the generator early (or KeyboardInterrupt) cancels the tasks not yet started.
        """

    def close(self) -> None:
        """Release workers / clusters this backend started. Idempotent."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _check_backend(name: str, obj: Any) -> None:
    if not (isinstance(obj, type) and issubclass(obj, Backend)):
        raise ConfigError(f"backend {name!r}: expected a subclass of twinsweep.backends.base.Backend, got {obj!r}")


#: Every backend: built-in (registered when ``twinsweep.backends`` is imported, which importing
#: any of its modules does first), installed (entry-point group ``twinsweep.backends``) or given
#: as ``"module:Class"``.
BACKENDS: Registry = Registry("backend", "twinsweep.backends", check=_check_backend)


def register_backend(name: str, cls: type[Backend] | None = None, *, replace: bool = False):
    """Register a :class:`Backend` subclass under ``name`` (also as a class decorator:
    ``@register_backend("mine")``). Raises ConfigError when ``cls`` is not a Backend subclass or
    the name is taken (unless ``replace``)."""
    return BACKENDS.register(name, cls, replace=replace)


def make_backend(name: str, workers: int | None = None, address: str | None = None, **options) -> Backend:
    """The backend called ``name`` (:data:`BACKENDS`: ``local``, ``ray``, ``slurm`` or a plug-in),
    built with ``workers``, ``address`` (only backends with ``takes_address``) and ``options``
    (keyword arguments of its class; for ``slurm`` its Slurm options and ``folder``).

    Raises UnknownNameError listing the valid names, and ConfigError for an address or an option
    the backend does not take (before anything starts).
    """
    cls = BACKENDS.get(name)
    if address and not cls.takes_address:
        takers = address_takers()
        only = f" (only {', '.join(repr(n) for n in takers)} {'does' if len(takers) == 1 else 'do'}" \
               f"{cls.address_hint})" if takers else ""
        raise ConfigError(f"backend {name!r} takes no address{only}")
    kwargs = dict(options, workers=workers)
    if cls.takes_address:
        kwargs["address"] = address
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            accepted = [p for p in params if p != "self"]
            raise ConfigError(f"backend {name!r} takes no option(s) {unknown}; it takes: {', '.join(accepted)}")
    return cls(**kwargs)



def address_takers() -> list[str]:
    """Names of the backends that join a cluster at an address (``takes_address``), sorted; an
    installed plug-in that cannot be loaded is left out here (using it raises its own error)."""
    out = []
    for n in BACKENDS.names():
        try:
            if getattr(BACKENDS.get(n), "takes_address", False):
                out.append(n)
        except ConfigError:
            continue
    return out
