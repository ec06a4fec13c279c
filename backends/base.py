"""The one interface every backend implements (DESIGN.md §1, §6).

A backend executes a batch of :class:`Task` s with a run function handed to it by its caller and
yields an :class:`Outcome` per task *as tasks finish* (not in submission order). It never imports
``sweep``: the run function and its payloads are opaque to it.

Run function contract: ``fn(payload, shared_value) -> small picklable result``, where
``shared_value`` is ``shared[task.shared]`` (e.g. a (Workload, System) pair loaded once per
dataset), or None when ``task.shared`` is None. An exception raised by ``fn`` becomes an Outcome
with ``ok=False`` and the formatted traceback; it never stops the other tasks.
"""

from __future__ import annotations

import abc
import dataclasses
import os
import socket
import time
import traceback
from typing import Any, Callable, Iterable, Iterator, Mapping

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
    in fn; ``worker``: ``host:pid`` that ran it.
    """

    key: str
    ok: bool
    result: Any = None
    error: str | None = None
    traceback: str | None = None
    wall_s: float = 0.0
    worker: str = ""


def worker_id() -> str:
    """``host:pid`` of the current process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def call_safely(fn: RunFn, task: Task, shared_value: Any) -> Outcome:
    """Run ``fn(task.payload, shared_value)`` and turn any exception into a failed Outcome."""
    t0 = time.perf_counter()
    try:
        result = fn(task.payload, shared_value)
        return Outcome(task.key, True, result=result, wall_s=time.perf_counter() - t0, worker=worker_id())
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, none stops the batch
        if _is_interrupt(exc):
            raise KeyboardInterrupt from exc
        return Outcome(task.key, False, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(),
                       wall_s=time.perf_counter() - t0, worker=worker_id())


def _is_interrupt(exc: BaseException) -> bool:
    """True for Ctrl-C turned into an ordinary exception by a library: pyarrow cancels a read or
    write on SIGINT/SIGTERM and re-raises ``ArrowCancelled`` (carrying ``signum``) when the
    re-emitted signal has not reached Python yet; as a failed run it would swallow the Ctrl-C."""
    import signal

    return type(exc).__name__ == "ArrowCancelled" and getattr(exc, "signum", None) in (signal.SIGINT, signal.SIGTERM)


class Backend(abc.ABC):
    """Executes tasks; use as a context manager (``with make_backend(...) as b: ...``).

    ``workers``: parallel workers (None = all CPUs the backend sees). ``in_flight``: tasks
    submitted and not yet returned (what a progress bar shows as running).
    """

    name = "base"

    def __init__(self, workers: int | None = None):
        if workers is not None and int(workers) < 1:
            from twinsweep.core.errors import ConfigError

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


def make_backend(name: str, workers: int | None = None, address: str | None = None, **options) -> Backend:
    """Backend by name: ``local`` (:class:`backends.local.LocalBackend`), ``ray``
    (:class:`backends.ray_backend.RayBackend`) or ``slurm`` (:class:`backends.slurm.SlurmBackend`;
    ``options``: its Slurm options and ``folder``). Raises UnknownNameError for other names and
    ConfigError for options a backend does not take."""
    from twinsweep.core.errors import ConfigError, UnknownNameError

    if name == "local":
        if address:
            raise ConfigError("backend 'local' takes no address (only 'ray' does)")
        from .local import LocalBackend

        return LocalBackend(workers=workers, **options)
    if name == "ray":
        from .ray_backend import RayBackend

        return RayBackend(workers=workers, address=address, **options)
    if name == "slurm":
        if address:
            raise ConfigError("backend 'slurm' takes no address (only 'ray' does; see slurm/ray-on-slurm.sbatch "
                              "for a Ray cluster inside a Slurm allocation)")
        from .slurm import SlurmBackend

        return SlurmBackend(workers=workers, **options)
    raise UnknownNameError("backend", name, ["local", "ray", "slurm"])
