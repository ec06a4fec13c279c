"""``local`` backend: serial in-process execution, or a process pool with ``workers`` > 1.

The pool uses the ``forkserver`` start method where the platform has it (else ``spawn``): workers
fork from a clean single-threaded server process, so this is safe whatever threads the driver
runs (a script that uses it needs the usual ``if __name__ == "__main__":`` guard), and the server
imports the run path once (:data:`PRELOAD`: twinsweep's run modules, pandas, pyarrow), so a
worker starts warm instead of paying those imports (~1 s CPU each) itself. The shared objects are pickled
once to a file that every worker reads at start-up (not pushed through the start-up pipe):
``<cache_dir>/shared-<sha256>.pkl`` when a ``cache_dir`` is given (a sweep gives
``<results>/.cache``: a file left by a ``kill -9`` stays inside the results folder and is reused,
after its content hash is checked, by the next run; other ``shared-*.pkl`` files there are
removed), else a temporary file removed at :meth:`LocalBackend.close`. Each worker exits by
itself within a second if the driver dies (it watches the driver's pid, not only its parent's:
see :func:`_watch_driver`), and the fork server and the resource tracker then exit too, so a
``kill -9`` of the driver leaves no orphans running.

A worker process that dies (segfault, OOM kill, ``os._exit``) breaks the whole pool, and every
task in it fails with ``BrokenProcessPool``, the innocent ones too. Those tasks are not reported
as failed: they become *suspects* and run again one at a time in a fresh pool, so that only the
task that kills its worker when it runs alone fails (``WorkerDied: ...``, with the worker's exit
code or signal); the others succeed.

A sweep folder whose runs Slurm arrays of an earlier ``--backend slurm`` submission still hold
(queued or running), or whose arrays cannot be checked (no ``squeue``), is refused before this
backend starts, not run a second time (:func:`backends.base.refuse_queued_work`, through
:meth:`~backends.base.Backend.study_options`).
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import hashlib
import multiprocessing
import os
import pickle
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .base import Backend, Outcome, RunFn, Task, call_safely, register_backend
from .process import proc_start, same_process
from twinsweep.core.atomic import atomic_write_bytes

_SHARED: dict[str, Any] = {}
_FN: RunFn | None = None

#: Modules the forkserver imports once for every worker it forks (what a sweep's run function
#: needs). A module that fails to import there is only skipped (the worker imports it itself).
#: ``twinsweep.sweep.warm`` runs one tiny simulation at import (:func:`sweep.runner.warm_up`), so
#: that the run path's lazy imports and numba's compiled passes are loaded once in the server
#: instead of in every worker's first run.
PRELOAD = ["twinsweep.sweep.runner", "twinsweep.core.run", "pandas", "pyarrow.parquet", "twinsweep.sweep.warm"]


def _mp_context():
    """The pool's start method: ``forkserver`` preloading :data:`PRELOAD`, else ``spawn``."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)  # used when the server starts (once per driver process)
        return ctx
    return multiprocessing.get_context("spawn")


def _watch_driver(driver: int, ppid: int, period: float = 0.5) -> None:
    """Exit this worker as soon as its driver is gone (or its parent changes).

    Watching the parent alone is not enough: with ``forkserver`` the parent is the fork server,
    and the fork server lives as long as any of its children holds its "alive" pipe (every worker
    does, multiprocessing/forkserver.py), so after a ``kill -9`` of the driver the server, the
    workers and the resource tracker would wait for each other forever. Once the workers exit, the
    server sees the end of that pipe and exits, and so does the resource tracker."""
    start = proc_start(driver)  # None: already gone (a worker started as the driver died), or no /proc
    while True:
        time.sleep(period)
        if os.getppid() != ppid or not same_process(driver, start):
            os._exit(1)


def _init_worker(fn: RunFn, shared_path: str | None, driver: int | None = None) -> None:
    global _FN
    # the parent is the driver (spawn) or the fork server: watch both the parent and the driver
    # (``driver``: its pid, given by the driver when it makes the pool)
    threading.Thread(target=_watch_driver, args=(driver if driver is not None else os.getppid(), os.getppid()),
                     name="twinsweep-driver-watch", daemon=True).start()
    _FN = fn
    _SHARED.clear()
    if shared_path is not None:
        with open(shared_path, "rb") as fh:
            _SHARED.update(pickle.load(fh))


def _pool_call(task: Task) -> Outcome:
    return call_safely(_FN, task, _SHARED.get(task.shared) if task.shared is not None else None)


@register_backend("local")
class LocalBackend(Backend):
    """Serial (``workers`` None or 1) or process-pool (``workers`` > 1) execution on this machine.

    ``max_pending``: tasks queued in the pool at once (default 2 x workers), so memory stays flat
    however many tasks there are. ``cache_dir``: where the pool's shared-object file lives (see
    the module docstring); None = the system's temporary folder, removed at close.
    """

    name = "local"

    @classmethod
    def study_options(cls, table, results_dir, cache_dir, log=None) -> dict[str, Any]:
        """The pool's dataset file stays inside the results folder (``cache_dir``)."""
        return {"cache_dir": str(cache_dir)}

    def __init__(self, workers: int | None = 1, max_pending: int | None = None,
                 cache_dir: str | os.PathLike | None = None):
        super().__init__(workers if workers is not None else 1)
        self.max_pending = max_pending or 2 * self.workers
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._pool: cf.ProcessPoolExecutor | None = None
        self._shared_path: str | None = None
        self._shared_is_temp = False
        self._procs: dict[int, Any] = {}  # every worker process started (their exit codes name a death)

    def run(self, tasks: Iterable[Task], fn: RunFn, shared: Mapping[str, Any] | None = None) -> Iterator[Outcome]:
        shared = dict(shared or {})
        if self.workers == 1:
            yield from self._run_serial(tasks, fn, shared)
        else:
            yield from self._run_pool(tasks, fn, shared)

    def _run_serial(self, tasks, fn, shared) -> Iterator[Outcome]:
        self.in_flight = 1  # one task at a time, always busy until the tasks run out
        try:
            for task in tasks:
                yield call_safely(fn, task, shared.get(task.shared) if task.shared is not None else None)
        finally:
            self.in_flight = 0

    def _run_pool(self, tasks, fn, shared) -> Iterator[Outcome]:
        self._write_shared(shared)
        self._pool = self._new_pool(fn)
        it = iter(tasks)
        pending: dict[cf.Future, Task] = {}
        suspects: collections.deque[Task] = collections.deque()  # in the pool when a worker died
        suspect_running = False
        try:
            exhausted = False
            while True:
                if suspects or suspect_running:  # isolate: one suspect at a time, alone in the pool
                    if not pending and suspects:
                        task = suspects.popleft()
                        pending[self._pool.submit(_pool_call, task)] = task
                        suspect_running = True
                        self._note_procs()
                else:
                    while not exhausted and len(pending) < self.max_pending:
                        try:
                            task = next(it)
                        except StopIteration:
                            exhausted = True
                            break
                        pending[self._pool.submit(_pool_call, task)] = task
                    self._note_procs()
                self.in_flight = min(len(pending), self.workers)
                if not pending:
                    if suspects:
                        continue
                    break
                done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                broken = False
                for fut in done:
                    task = pending.pop(fut)
                    try:
                        out = fut.result()
                    except cf.process.BrokenProcessPool:
                        broken = True
                        if suspect_running:  # it killed its worker while running alone: the culprit
                            out = Outcome(task.key, False, error=f"WorkerDied: {self._death_note()}",
                                          traceback=f"the pool worker running {task.key} died while running it "
                                                    f"alone ({self._death_note()})")
                        else:
                            suspects.append(task)
                            continue
                    except Exception as exc:  # pickling failed, ...
                        out = Outcome(task.key, False, error=f"{type(exc).__name__}: {exc}",
                                      traceback=f"worker failure: {exc!r}")
                    self.in_flight = min(len(pending), self.workers)
                    yield out
                if suspect_running and not pending:
                    suspect_running = False
                if broken:  # a crashed worker breaks the pool: everything in it runs again, suspects alone
                    suspects.extend(pending.values())
                    pending.clear()
                    suspect_running = False
                    self._terminate()
                    self._procs.clear()
                    self._pool = self._new_pool(fn)
        except BaseException:  # Ctrl-C, or the caller closed the generator: stop the workers now
            self._terminate()
            raise
        finally:
            self.in_flight = 0
            self.close()

    def _note_procs(self) -> None:
        for p in list((getattr(self._pool, "_processes", None) or {}).values()):
            self._procs[id(p)] = p

    def _death_note(self) -> str:
        deadline = time.monotonic() + 2.0
        # the pool notices the death (its pipe closes) before the process is reaped, and it then
        # terminates the other workers: wait (briefly) for every worker's exit status
        for p in self._procs.values():
            if p.exitcode is None:
                p.join(max(0.0, deadline - time.monotonic()))
        dead = [p for p in self._procs.values() if not p.is_alive()]
        codes = [p.exitcode for p in dead if p.exitcode is not None and p.exitcode != 0]
        # the pool's own SIGTERM of the healthy workers is not the cause, nor is 255: what a
        # forkserver child reports when the forkserver could not pass its status on
        # (multiprocessing/popen_forkserver.py, ``Popen.poll``), as for a sibling terminated mid-start
        codes = [c for c in codes if c not in (-signal.SIGTERM, _FORKSERVER_UNKNOWN)] or codes
        if not codes:
            return "the worker process exited abruptly"
        c = codes[0]
        if c < 0:
            try:
                return f"the worker process was killed by signal {signal.Signals(-c).name}"
            except ValueError:
                return f"the worker process was killed by signal {-c}"
        return f"the worker process exited with code {c}"

    def _write_shared(self, shared: Mapping[str, Any]) -> None:
        self._drop_shared()
        if not shared:
            return
        data = pickle.dumps(dict(shared), protocol=pickle.HIGHEST_PROTOCOL)
        if self.cache_dir is None:
            fd, path = tempfile.mkstemp(prefix="twinsweep-shared-", suffix=".pkl")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            self._shared_path, self._shared_is_temp = path, True
            return

        digest = hashlib.sha256(data).hexdigest()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        path = self.cache_dir / f"shared-{digest}.pkl"
        for old in self.cache_dir.glob("shared-*.pkl"):  # another dataset set: not needed any more
            if old != path:
                old.unlink(missing_ok=True)
        if not (path.exists() and _sha256_file(path) == digest):  # reuse only a file with this very content
            atomic_write_bytes(path, data, sync=False)
        self._shared_path, self._shared_is_temp = str(path), False

    def _drop_shared(self) -> None:
        if self._shared_path is not None and self._shared_is_temp:
            try:
                os.unlink(self._shared_path)
            except OSError:
                pass
        self._shared_path = None

    def _new_pool(self, fn) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(
            max_workers=self.workers, mp_context=_mp_context(),
            initializer=_init_worker, initargs=(fn, self._shared_path, os.getpid()))

    def _terminate(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._drop_shared()


#: Exit code multiprocessing's forkserver gives a child whose status it could not read.
_FORKSERVER_UNKNOWN = 255


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
