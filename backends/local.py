"""``local`` backend: serial in-process execution, or a process pool with ``workers`` > 1.

The pool uses the ``spawn`` start method (safe whatever threads the driver runs; a script that
uses it needs the usual ``if __name__ == "__main__":`` guard). The shared objects are pickled
once to a temporary file that every worker reads at start-up (not pushed through the start-up
pipe), and each worker exits by itself if the driver dies (it watches its parent pid), so a
``kill -9`` of the driver leaves no orphans running.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import pickle
import tempfile
import threading
import time
from typing import Any, Iterable, Iterator, Mapping

from .base import Backend, Outcome, RunFn, Task, call_safely, register_backend

_SHARED: dict[str, Any] = {}
_FN: RunFn | None = None


def _watch_parent(ppid: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != ppid:
            os._exit(1)


def _init_worker(fn: RunFn, shared_path: str | None, ppid: int) -> None:
    global _FN
    threading.Thread(target=_watch_parent, args=(ppid,), daemon=True).start()
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
    however many tasks there are.
    """

    name = "local"

    def __init__(self, workers: int | None = 1, max_pending: int | None = None):
        super().__init__(workers if workers is not None else 1)
        self.max_pending = max_pending or 2 * self.workers
        self._pool: cf.ProcessPoolExecutor | None = None
        self._shared_path: str | None = None

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
        try:
            exhausted = False
            while True:
                while not exhausted and len(pending) < self.max_pending:
                    try:
                        task = next(it)
                    except StopIteration:
                        exhausted = True
                        break
                    pending[self._pool.submit(_pool_call, task)] = task
                self.in_flight = min(len(pending), self.workers)
                if not pending:
                    break
                done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                broken = False
                for fut in done:
                    task = pending.pop(fut)
                    try:
                        out = fut.result()
                    except Exception as exc:  # the worker process died (BrokenProcessPool) or pickling failed
                        broken |= isinstance(exc, cf.process.BrokenProcessPool)
                        out = Outcome(task.key, False, error=f"{type(exc).__name__}: {exc}",
                                      traceback=f"worker failure: {exc!r}")
                    self.in_flight = min(len(pending), self.workers)
                    yield out
                if broken:  # a crashed worker breaks the pool: start a fresh one for the rest
                    rest = list(pending.values())
                    pending.clear()
                    self._terminate()
                    self._pool = self._new_pool(fn)
                    for task in rest:
                        pending[self._pool.submit(_pool_call, task)] = task
        except BaseException:  # Ctrl-C, or the caller closed the generator: stop the workers now
            self._terminate()
            raise
        finally:
            self.in_flight = 0
            self.close()

    def _write_shared(self, shared: Mapping[str, Any]) -> None:
        self._drop_shared()
        if shared:
            fd, path = tempfile.mkstemp(prefix="twinsweep-shared-", suffix=".pkl")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(dict(shared), fh, protocol=pickle.HIGHEST_PROTOCOL)
            self._shared_path = path

    def _drop_shared(self) -> None:
        if self._shared_path is not None:
            try:
                os.unlink(self._shared_path)
            except OSError:
                pass
            self._shared_path = None

    def _new_pool(self, fn) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
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
