"""``ray`` backend: one twin actor per worker CPU, datasets shared through the object store.

- No ``address``: an embedded local Ray is started with ``ray.init(num_cpus=workers,
  include_dashboard=False)`` (with Ray's default token authentication, minus its notice at every
  start: :func:`_quiet_default_token_notice`) and shut down by :meth:`RayBackend.close`. With ``address``
  (``"auto"``, ``"host:6379"``, ``"ray://host:10001"``) a running cluster is joined (and left
  running). If Ray is already initialised in this process it is used as is.
- Each shared object (e.g. a dataset's (Workload, System)) is ``ray.put`` once per :meth:`run`;
  an actor fetches and deserialises it the first time a task needs it and keeps it for the next
  tasks. Actors live until :meth:`close` (or until ``run`` is called with another function).
- Tasks are dispatched in batches: one actor call carries ``runs_per_call`` tasks (default
  :func:`auto_runs_per_call`: about 16 calls per actor over the sweep, at most
  :data:`MAX_RUNS_PER_CALL`), so the per-call cost of Ray (scheduling, argument and result
  serialisation, the driver's round trip) is paid once per batch, not per run (issue 14, item 1).
- Results stream back batch by batch as they finish (``ray.wait``); every actor holds one batch at
  a time, so the driver holds only ``workers`` batches of small results at once and its memory
  stays flat. The run function writes its outputs itself and should return a small summary.
- An actor that dies (segfault, OOM kill) is replaced; the runs of its batch are dispatched again
  one per call, so only the run that kills its worker becomes a failed Outcome.

A sweep folder whose runs Slurm arrays of an earlier ``--backend slurm`` submission still hold
(queued or running), or whose arrays cannot be checked (no ``squeue``), is refused before this
backend starts, not run a second time (:func:`backends.base.refuse_queued_work`, through
:meth:`~backends.base.Backend.study_options`).
"""

from __future__ import annotations

import collections
import logging
import math
import os
import warnings
from typing import Any, Iterable, Iterator, Mapping

from .base import Backend, Outcome, RunFn, Task, call_safely, register_backend
from twinsweep.core.errors import ConfigError


class _TwinActor:
    """Actor body: holds the run function and a cache of deserialised shared objects."""

    def __init__(self, fn: RunFn):
        self._fn = fn
        self._cache: dict[str, Any] = {}

    def ping(self) -> int:
        """The actor's pid (a cheap liveness check)."""
        return os.getpid()

    def run(self, task: Task, ref_box: list) -> Outcome:
        import ray

        value = None
        if task.shared is not None:
            ref = ref_box[0]
            cid = ref.hex()
            if cid not in self._cache:
                if len(self._cache) >= 4:  # keep a few datasets; drop the oldest
                    self._cache.pop(next(iter(self._cache)))
                self._cache[cid] = ray.get(ref)
            value = self._cache[cid]
        return call_safely(self._fn, task, value)

    def run_batch(self, tasks: list, ref_boxes: list) -> list:
        """:meth:`run` of each task in order; the list of their Outcomes."""
        return [self.run(t, b) for t, b in zip(tasks, ref_boxes)]


_REMOTE_ACTOR = None

#: the largest batch one actor call carries
MAX_RUNS_PER_CALL = 16


def auto_runs_per_call(n_tasks: int | None, workers: int) -> int:
    """Runs per actor call: ``ceil(n_tasks / (16 * workers))`` clamped to [1, MAX_RUNS_PER_CALL], so
    that each actor gets about 16 calls (the last batches stay short enough to balance the
    workers); 4 when the number of tasks is unknown (a generator)."""
    if n_tasks is None:
        return 4
    return max(1, min(MAX_RUNS_PER_CALL, math.ceil(n_tasks / (16 * max(1, workers)))))


#: The WARNING Ray (>= 2.52) logs at every start of a new local cluster when ``RAY_AUTH_MODE`` is
#: unset: that it turned token authentication on (``ray._private.authentication.
#: authentication_token_setup._warn_token_auth_enabled``). Nothing is wrong and nothing is to do.
_TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"


class _DropTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_TOKEN_NOTICE)


def _quiet_default_token_notice() -> None:
    """Drop Ray's notice that a new local cluster uses token authentication (its default; the
    embedded cluster keeps it). Only that record: the warning that authentication is *disabled*
    and every other Ray message still show. Idempotent."""
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    if not any(isinstance(f, _DropTokenNotice) for f in log.filters):
        log.addFilter(_DropTokenNotice())


@register_backend("ray")
class RayBackend(Backend):
    """Ray actors (see module docstring).

    ``workers``: actors (default: the cluster's CPUs); ``address``: cluster to join (None = embedded);
    ``init_kwargs``: extra ``ray.init`` arguments; ``log_to_driver``: forward worker output;
    ``runs_per_call``: tasks per actor call (None: :func:`auto_runs_per_call`).
    """

    name = "ray"
    takes_address = True
    ships_files = True  # workers on other machines may not see the driver's folders
    distributions_scheduler = "ray"  # a study's pooled distributions run on its Ray cluster (Dask on Ray)

    def __init__(self, workers: int | None = None, address: str | None = None,
                 init_kwargs: Mapping[str, Any] | None = None, log_to_driver: bool = False,
                 runs_per_call: int | None = None):
        super().__init__(workers)
        if runs_per_call is not None and int(runs_per_call) < 1:
            raise ConfigError(f"ray backend: runs_per_call must be >= 1, got {runs_per_call}")
        self.runs_per_call = None if runs_per_call is None else int(runs_per_call)
        self.address = address or None
        self.init_kwargs = dict(init_kwargs or {})
        self.log_to_driver = log_to_driver
        self._owns_ray = False
        self._actors: list = []
        self._fn: RunFn | None = None

    def _start(self) -> None:
        import ray

        if not ray.is_initialized():
            kw = dict(include_dashboard=False, log_to_driver=self.log_to_driver,
                      logging_level="warning", configure_logging=True)
            kw.update(self.init_kwargs)
            if self.address:
                ray.init(address=self.address, **kw)
            else:
                _quiet_default_token_notice()
                ray.init(num_cpus=self.workers or os.cpu_count() or 1, **kw)
                self._owns_ray = True
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        if self.workers is None:
            self.workers = cpus
        elif self.workers > cpus:  # an actor needs a CPU: more actors than CPUs would never start
            warnings.warn(f"ray backend: {self.workers} workers requested but the cluster has {cpus} CPUs; "
                          f"using {cpus}", RuntimeWarning, stacklevel=2)
            self.workers = cpus

    def _new_actor(self, fn):
        global _REMOTE_ACTOR
        if _REMOTE_ACTOR is None:
            import ray

            _REMOTE_ACTOR = ray.remote(num_cpus=1, max_restarts=0)(_TwinActor)
        return _REMOTE_ACTOR.remote(fn)

    def run(self, tasks: Iterable[Task], fn: RunFn, shared: Mapping[str, Any] | None = None) -> Iterator[Outcome]:
        import ray
        from ray.exceptions import RayActorError, RayError

        self._start()
        refs = {name: ray.put(obj) for name, obj in (shared or {}).items()}
        if self._fn is not fn:  # actors live across run() calls (retry rounds) while fn is the same
            self._kill_actors()
            self._fn = fn
        while len(self._actors) < self.workers:
            self._actors.append(self._new_actor(fn))
        idle = collections.deque(self._actors)
        per_call = self.runs_per_call or auto_runs_per_call(
            len(tasks) if hasattr(tasks, "__len__") else None, self.workers)
        pending: dict[Any, tuple[Any, list]] = {}
        alone: collections.deque = collections.deque()  # runs of a crashed batch, one per call now
        it = iter(tasks)
        exhausted = False

        def box(task: Task) -> list:
            return [refs[task.shared]] if task.shared is not None else []

        try:
            while True:
                while idle and (alone or not exhausted):
                    if alone:
                        batch = [alone.popleft()]
                    else:
                        batch = []
                        for task in it:
                            batch.append(task)
                            if len(batch) >= per_call:
                                break
                        else:
                            exhausted = True
                        if not batch:
                            break
                    actor = idle.popleft()
                    if len(batch) == 1:
                        ref = actor.run.remote(batch[0], box(batch[0]))
                    else:
                        ref = actor.run_batch.remote(batch, [box(t) for t in batch])
                    pending[ref] = (actor, batch)
                self.in_flight = sum(len(b) for _, b in pending.values())
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    actor, batch = pending.pop(ref)
                    try:
                        got = ray.get(ref)
                        outs = [got] if len(batch) == 1 else got
                        idle.append(actor)
                    except RayActorError as exc:  # the actor process died: replace it
                        self._actors.remove(actor)
                        new = self._new_actor(fn)
                        self._actors.append(new)
                        idle.append(new)
                        if len(batch) > 1:  # which run killed it is unknown: each again on its own
                            alone.extend(batch)
                            outs = []
                        else:
                            outs = [Outcome(batch[0].key, False, error=f"WorkerDied: {type(exc).__name__}",
                                            traceback=str(exc))]
                    except RayError as exc:
                        outs = [Outcome(t.key, False, error=f"{type(exc).__name__}: {exc}", traceback=str(exc))
                                for t in batch]
                        idle.append(actor)
                    del ref
                    self.in_flight = sum(len(b) for _, b in pending.values()) + len(alone)
                    yield from outs
        finally:
            self.in_flight = 0
            if pending:  # stopped early (Ctrl-C, generator closed): kill the actors, which stops their tasks
                pending.clear()
                self._kill_actors()
            refs.clear()

    def _kill_actors(self) -> None:
        import ray

        for a in self._actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self._actors = []
        self._fn = None

    def close(self) -> None:
        import ray

        self._kill_actors()
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
        self._owns_ray = False
