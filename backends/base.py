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

Work another backend still has queued in a results folder
--------------------------------------------------------
A batch-queue backend (``slurm``) leaves jobs queued or running after its driver is gone
(``--detach``, a killed driver). Another backend must not then run the same runs into the same
results folder (the work twice, and two writers of one run folder), so every backend *that is not
the one owning those jobs* refuses to start a study on such a folder. The check is made in one
place, :meth:`Backend.study_options` (the hook through which a sweep or a tuning tells its backend
which results folder it works on, before anything runs or is written): the base class wraps its own
and every subclass's ``study_options`` with it (:meth:`Backend.__init_subclass__`), so ``local``,
``ray`` and any plug-in go through it, once per call even when an override calls ``super()``. It
asks every registered batch-queue backend (:meth:`Backend.queued_work`; ``slurm`` reads its
submission records and asks ``squeue``) and raises :class:`QueuedWorkError` naming the jobs, how
many runs they still hold and what to do: wait for them (or follow them with their own backend,
which adopts them), or cancel them to take their runs over. It refuses rather than skipping those
runs: a sweep that silently leaves runs to jobs it does not follow would report them missing at its
end. When the jobs' state cannot be asked (e.g. ``squeue`` not installed here), it refuses as well
and says what could not be checked; with the environment variable ``TWINSWEEP_ASSUME_JOBS_ENDED=1``
those unchecked jobs are taken as over (the study runs, with a message naming them). The owner
backend itself is not refused: ``slurm`` adopts its own queued arrays.
"""

from __future__ import annotations

import abc
import contextvars
import dataclasses
import functools
import inspect
import os
import signal
import time
import traceback
import warnings
from typing import Any, Callable, Iterable, Iterator, Mapping

from twinsweep.core import errors as _errors
from twinsweep.core.errors import INPUT_ERRORS, ConfigError, TwinError
from twinsweep.core.registry import Registry

from .process import worker_id

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
    OSError (e.g. ENOSPC: the disk is full, which the caller may treat as fatal), else None;
    ``deterministic``: True when fn raised an error of its own inputs or of a plug-in's contract
    (an instance of :data:`core.errors.INPUT_ERRORS`, subclasses included: set by
    :func:`call_safely`): a run is deterministic, so it would raise the same error at every
    attempt and a caller does not retry it; False for every other failure (a dead worker, a lost
    task, an OSError, a time limit), which another attempt may get past.
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
    deterministic: bool = False

    def to_json(self) -> dict[str, Any]:
        """The outcome as a JSON-ready dict (``result`` must be JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Outcome":
        """Inverse of :meth:`to_json`; unknown keys are ignored. A record written before outcomes
        carried ``deterministic`` (a Slurm outcome file of an earlier version) gets it from the
        class named at the head of its ``error`` (:func:`_input_error_named`)."""
        names = {f.name for f in dataclasses.fields(cls)}
        out = cls(**{k: v for k, v in d.items() if k in names})
        if "deterministic" not in d and not out.ok:
            out.deterministic = _input_error_named(out.error)
        return out


def _input_error_named(error: str | None) -> bool:
    """Whether ``error`` (``"Type: message"``) names a class of :mod:`core.errors` that is one of
    :data:`core.errors.INPUT_ERRORS`: how an outcome record without ``deterministic`` is read."""
    cls = getattr(_errors, (error or "").split(":", 1)[0].strip(), None)
    return isinstance(cls, type) and issubclass(cls, INPUT_ERRORS)


def call_safely(fn: RunFn, task: Task, shared_value: Any) -> Outcome:
    """Run ``fn(task.payload, shared_value)`` and turn any exception into a failed Outcome (with the
    wall and CPU seconds fn took: ``Outcome.wall_s`` / ``cpu_s``; ``deterministic`` when the
    exception is an input error, :data:`core.errors.INPUT_ERRORS`). Ctrl-C (KeyboardInterrupt, or
    a library's cancellation on SIGINT/SIGTERM) propagates as KeyboardInterrupt."""
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
                       cpu_s=time.process_time() - c0, deterministic=isinstance(exc, INPUT_ERRORS))


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


#: The results folders whose queued-work check the current ``study_options`` call has made: an
#: override that calls ``super().study_options`` (or a parent's) reaches another wrapper of
#: :func:`_checking_queued_work`, which then does not check again.
_CHECKED_FOLDERS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("twinsweep_checked_folders",
                                                                                  default=frozenset())


def _checking_queued_work(fn):
    """``fn`` (a backend's own ``study_options``), with :func:`refuse_queued_work` first, once per
    call: inside an outer ``study_options`` call on the same results folder (a ``super()`` call
    from an override) the check is not made again."""
    @functools.wraps(fn)
    def study_options(cls, table, results_dir, *args, **kwargs):
        folder = os.fspath(results_dir)
        checked = _CHECKED_FOLDERS.get()
        if folder in checked:
            return fn(cls, table, results_dir, *args, **kwargs)
        refuse_queued_work(cls, results_dir, kwargs.get("log", args[1] if len(args) > 1 else None))
        token = _CHECKED_FOLDERS.set(checked | {folder})
        try:
            return fn(cls, table, results_dir, *args, **kwargs)
        finally:
            _CHECKED_FOLDERS.reset(token)

    study_options._checks_queued_work = True
    return study_options


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
    @_checking_queued_work
    def study_options(cls, table: Mapping[str, Any], results_dir: str | os.PathLike, cache_dir: str | os.PathLike,
                      log: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Keyword arguments of this backend (beyond ``workers``/``address``) for a sweep or tuning
        writing into the results folder ``results_dir`` (absolute): ``table`` holds the study
        spec's options of this backend (already validated), ``cache_dir`` a folder inside the
        results folder the backend may keep files in across runs, ``log`` the caller's one-line
        progress messages. The base class takes none of them (``{}``); a backend overrides this to
        take what it needs, so that a caller never asks which backend it has.

        First, for every backend, once per call (this method and every subclass's override are
        wrapped, :meth:`__init_subclass__`): :func:`refuse_queued_work` raises
        :class:`QueuedWorkError` when jobs of another, batch-queue backend still hold runs of
        ``results_dir`` (see the module docstring)."""
        return {}

    def __init_subclass__(cls, **kwargs):
        """Wrap the subclass's own ``study_options`` (if it defines one) with the check of
        :func:`refuse_queued_work` (:func:`_checking_queued_work`): no backend starts a study on
        runs that another backend's queued jobs still hold, whether or not its override calls
        ``super()``, and the check runs once however many overrides the call goes through."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("study_options")
        if isinstance(own, classmethod) and not getattr(own.__func__, "_checks_queued_work", False):
            cls.study_options = classmethod(_checking_queued_work(own.__func__))

    @classmethod
    def queued_work(cls, results_dir: str | os.PathLike) -> "QueuedWork | None":
        """(Batch-queue backends.) The runs of the results folder ``results_dir`` that jobs this
        backend submitted earlier still hold (queued or running), or None when there are none.
        Other backends refuse to start a study there meanwhile (:func:`refuse_queued_work`). The
        base class has no jobs outliving a driver: None."""
        return None

    def __init__(self, workers: int | None = None):
        if workers is not None and int(workers) < 1:
            raise ConfigError(f"backend workers must be >= 1, got {workers}")
        self.workers = int(workers) if workers is not None else None
        self.in_flight = 0

    def validate(self) -> Any:
        """Check this backend's options against what it runs on (a cluster's partitions and limits,
        ...), before the caller writes anything: a sweep calls it when some run is still to do,
        before its results folder gets study.json, plan.csv or a run, so that a refused option
        leaves nothing behind. Raises ConfigError naming a bad option, or a TwinError when what
        it runs on cannot be reached; the return value is the backend's own (callers ignore it).
        The base class checks nothing (None); ``slurm`` asks the cluster
        (:meth:`backends.slurm.SlurmBackend.validate`)."""
        return None

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


@dataclasses.dataclass(frozen=True)
class QueuedWork:
    """What a batch-queue backend's jobs still hold in a results folder (:meth:`Backend.queued_work`).

    ``backend``: its name; ``jobs``: job (array) ids queued or running with runs to do; ``tasks``:
    their queued or running tasks (array tasks); ``runs``: the runs those hold; ``unchecked_jobs``
    / ``unchecked_runs``: recorded jobs with runs to do whose state could not be asked, and
    ``unchecked_why`` why (e.g. ``squeue is not installed here``); ``follow``: how to wait for or
    follow them; ``cancel``: the command that cancels them (``scancel ...``); ``jobs_word`` /
    ``tasks_word``: what messages call them (``Slurm array(s)``, ``array task(s)``)."""

    backend: str
    jobs: tuple[str, ...] = ()
    tasks: int = 0
    runs: int = 0
    unchecked_jobs: tuple[str, ...] = ()
    unchecked_runs: int = 0
    unchecked_why: str = ""
    follow: str = ""
    cancel: str = ""
    jobs_word: str = "job(s)"
    tasks_word: str = "task(s)"


class QueuedWorkError(TwinError):
    """A study cannot start on a results folder where jobs of another backend (Slurm arrays of an
    earlier ``--backend slurm`` sweep) still hold some of its runs, or where their state cannot be
    checked: running them here too would do the work twice, with two writers of the same run
    folders."""


#: Environment variable: set to 1 to take jobs whose state cannot be asked (no ``squeue`` here) as over.
ASSUME_JOBS_ENDED_ENV = "TWINSWEEP_ASSUME_JOBS_ENDED"


def _jobs_text(jobs) -> str:
    jobs = list(jobs)
    return ", ".join(jobs[:10]) + (f" and {len(jobs) - 10} more" if len(jobs) > 10 else "")


def batch_queue_backends() -> dict[str, type["Backend"]]:
    """The registered backends whose jobs outlive their driver (``batch_queue``), by name; an
    installed plug-in that cannot be loaded is left out (it has queued nothing one can ask)."""
    out = {}
    for name in BACKENDS.names():
        try:
            bk = BACKENDS.get(name)
        except ConfigError:
            continue
        if bk.batch_queue:
            out[name] = bk
    return out


def refuse_queued_work(cls: type["Backend"], results_dir: str | os.PathLike,
                       log: Callable[[str], None] | None = None) -> None:
    """Raise :class:`QueuedWorkError` when jobs of a batch-queue backend other than ``cls`` (and
    not a base class of it: a backend adopts its own queued jobs) still hold runs of the results
    folder ``results_dir``, naming the jobs, their runs and what to do (wait, follow them with
    their backend, or cancel them to take the runs over). Jobs whose state cannot be asked refuse
    too, saying what cannot be checked, unless ``TWINSWEEP_ASSUME_JOBS_ENDED=1`` (then ``log``,
    else a warning, names them). The behaviour is *refuse*, not *skip*: see the module docstring."""
    for other in batch_queue_backends().values():
        if issubclass(cls, other):
            continue
        work = other.queued_work(results_dir)
        if work is None:
            continue
        where = f"results folder {results_dir}"
        if work.jobs:
            raise QueuedWorkError(
                f"{where}: {work.runs} run(s) are still held by {work.jobs_word} {_jobs_text(work.jobs)} "
                f"({work.tasks} {work.tasks_word} queued or running) of an earlier --backend {work.backend} "
                f"submission; the {cls.name} backend would run them a second time (the same run folders written twice). Wait for "
                f"them ({work.follow}), or take their runs over: `{work.cancel}`, then run this again")
        if work.unchecked_jobs:
            what = (f"{where}: {work.jobs_word} {_jobs_text(work.unchecked_jobs)} recorded here still had "
                    f"{work.unchecked_runs} run(s) to do, and whether they are still queued cannot be checked: "
                    f"{work.unchecked_why}")
            if os.environ.get(ASSUME_JOBS_ENDED_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
                msg = f"{what}; {ASSUME_JOBS_ENDED_ENV} is set: taken as over, their runs run here"
                if log is not None:
                    log(msg)
                else:
                    warnings.warn(msg, RuntimeWarning, stacklevel=3)
                continue
            raise QueuedWorkError(
                f"{what}. Running them with the {cls.name} backend could do them a second time. Run this where "
                f"the cluster's commands work (to wait for them: {work.follow}), or, if those jobs are over "
                f"(e.g. the folder was copied off the cluster), set {ASSUME_JOBS_ENDED_ENV}=1 to run anyway")


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
