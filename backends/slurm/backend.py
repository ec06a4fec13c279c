"""The ``slurm`` backend (:class:`SlurmBackend`): validation against the cluster, submission
(chunks, arrays, shared objects), adoption of earlier submissions, following and cancelling
(package :mod:`backends.slurm`)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import pickle
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..base import Backend, Outcome, QueuedWork, RunFn, Task, register_backend
from ..process import owner_gone, worker_id
from twinsweep.core.atomic import atomic_write_bytes, atomic_write_text
from twinsweep.core.errors import ConfigError
from .chunking import plan_chunks, split_arrays
from .cluster import (ACTIVE_STATES, UNSETTLED_STATES, SlurmError, _limit_minutes, _partition_limits, _run_cmd,
                      cancel, cluster_max_array_size, cluster_partitions, query_states, queued_commands, slurm_ready)
from .options import parse_options, parse_time
from .status import _outcomes_present, _tail, held_runs, load_submissions, walk_chunks
from .task import ChunkRunner, _load_outcome, _outcome_name, time_limit_hint, time_limit_text


_UNLIMITED_MIN = 365 * 24 * 60  # time limit given to submitit when neither the user nor the partition sets one
#: Seconds adoption waits for array tasks in an unsettled state (COMPLETING: ending or being requeued).
ADOPT_SETTLE_S = 60.0
#: submitit's own timeout count (max_num_timeout): ChunkRunner counts timeouts itself (max_requeues)
_SUBMITIT_TIMEOUTS = 10 ** 6


class _Ref:
    """A chunk being followed: its submission folder, slurm id, keys still expected, log paths."""

    __slots__ = ("sub", "out", "slurm_id", "keys", "stderr", "stdout", "strikes", "state", "own", "time_min")

    def __init__(self, sub: Path, slurm_id: str, keys: list[str], stderr: str, stdout: str, own: bool,
                 time_min: int | None = None):
        self.sub, self.out, self.slurm_id = sub, sub / "out", slurm_id
        self.keys = list(keys)
        self.stderr, self.stdout = stderr, stdout
        self.strikes, self.state, self.own, self.time_min = 0, "PENDING", own, time_min


def _log_paths(logs: Path, slurm_id: str) -> tuple[str, str]:
    return str(logs / f"{slurm_id}_0_log.err"), str(logs / f"{slurm_id}_0_log.out")


@register_backend("slurm")
class SlurmBackend(Backend):
    """Job arrays through submitit (see the module docstring for chunking, requeue and adoption).

    ``workers``: array tasks running at once when ``array_parallelism`` is not given (None: no
    cap); ``folder``: submissions, outcome files and logs, on a shared filesystem (default
    ``./twinsweep-slurm``); ``log``: called with one-line progress messages (submissions,
    adoptions); ``poll_hook``: called after every squeue poll (e.g. to report trial progress);
    other keyword arguments: :func:`parse_options`.
    """

    name = "slurm"
    address_hint = "; see slurm/ray-on-slurm.sbatch for a Ray cluster inside a Slurm allocation"
    batch_queue = True  # array jobs outlive the driver: submit() / --detach, tuning workers as jobs
    #: Folder of the results folder holding the submissions (``twinsweep status`` reads it).
    STATE_FOLDER = "slurm"

    @classmethod
    def study_options(cls, table, results_dir, cache_dir, log=None) -> dict[str, Any]:
        """The spec's ``[backend.slurm]`` options, ``folder = <results>/slurm`` and ``log``."""
        opts = dict(table)
        opts["folder"] = str(Path(results_dir) / cls.STATE_FOLDER)
        if log is not None:
            opts["log"] = log
        return opts

    @classmethod
    def queued_work(cls, results_dir) -> QueuedWork | None:
        """The runs of a sweep's results folder that array tasks of its submissions
        (``<results>/slurm``, :func:`.status.held_runs`) still hold, queued or running; or None.
        The other backends refuse to run that folder meanwhile (:func:`backends.base.refuse_queued_work`);
        this backend adopts them instead."""
        held = held_runs(Path(results_dir) / cls.STATE_FOLDER)
        if held is None:
            return None
        unchecked = held["unchecked"] or {"arrays": [], "runs": 0}
        arrays = held["arrays"] or unchecked["arrays"]
        return QueuedWork(
            backend=cls.name, jobs=tuple(held["arrays"]), tasks=held["tasks"], runs=held["runs"],
            unchecked_jobs=tuple(unchecked["arrays"]), unchecked_runs=unchecked["runs"], unchecked_why=held["why"],
            follow=f"`twinsweep status {results_dir}` shows them; `twinsweep sweep SPEC --backend slurm` follows them "
                   "to the end and runs the rest",
            cancel="scancel " + " ".join(arrays), jobs_word="Slurm array(s)", tasks_word="array task(s)")

    def __init__(self, workers: int | None = None, folder: str | os.PathLike | None = None,
                 log: Callable[[str], None] | None = None, poll_hook: Callable[[], None] | None = None,
                 **options):
        super().__init__(workers)
        self.options = parse_options(options, where="slurm backend")
        self.folder = Path(folder if folder is not None else "twinsweep-slurm").absolute()
        self.log = log or (lambda msg: None)
        self.poll_hook = poll_hook
        self.poll_s = self.options.get("poll_s", 2.0)
        self.parallelism = self.options.get("array_parallelism") or self.workers
        self._validated: dict | None = None
        self.last_submission: dict | None = None

    # ------------------------------------------------------------------ validation
    def validate(self) -> dict:
        """Check the options against the cluster before anything is submitted; returns
        ``{"partition", "max_array_size", "time_min"}``. Raises ConfigError (bad option) or
        SlurmError (Slurm unreachable). Cached per backend."""
        if self._validated is not None:
            return self._validated
        ok, why = slurm_ready()
        if not ok:
            raise SlurmError(f"slurm backend: Slurm is not usable here: {why}")
        names, default = cluster_partitions()
        part = self.options.get("partition") or default
        if self.options.get("partition") and self.options["partition"] not in names:
            raise ConfigError(f"slurm option partition: unknown partition {self.options['partition']!r}; "
                              f"partitions on this cluster: {', '.join(names) or 'none'}"
                              + (f" (default {default})" if default else ""))
        if part is None:
            raise ConfigError("slurm option partition: the cluster has no default partition; name one "
                              f"({', '.join(names) or 'none found'})")
        limits = _partition_limits(part)
        max_min = _limit_minutes(limits.get("MaxTime"))
        if "time" in self.options:
            time_min = parse_time(self.options["time"])[1]
            if max_min is not None and time_min > max_min:
                raise ConfigError(f"slurm option time: {self.options['time']!r} exceeds partition {part}'s "
                                  f"MaxTime {limits.get('MaxTime')}")
        else:  # Slurm applies the partition's default; submitit needs the number for its timeout bookkeeping
            time_min = _limit_minutes(limits.get("DefaultTime")) or max_min or _UNLIMITED_MIN
        max_arr = cluster_max_array_size()
        if self.options.get("max_array_size"):
            max_arr = min(max_arr, self.options["max_array_size"])
        args = ["sbatch", "--test-only", f"--job-name={self.options.get('job_name', 'twinsweep')}"]
        args += self._sbatch_flags(time_min)
        args += ["--wrap=true"]
        p = _run_cmd(args)
        if p.returncode != 0:
            msg = " ".join(line.replace("sbatch: error:", "").strip()
                           for line in (p.stderr + p.stdout).splitlines() if line.strip())
            raise ConfigError(f"slurm options rejected by `sbatch --test-only` ({' '.join(args[2:-1])}): {msg}")
        self._validated = {"partition": part, "max_array_size": max_arr, "time_min": time_min}
        return self._validated

    def _sbatch_flags(self, time_min: int | None = None) -> list[str]:
        flags = []
        for k in ("partition", "account", "qos", "mem"):
            if self.options.get(k):
                flags.append(f"--{k}={self.options[k]}")
        if self.options.get("cpus_per_task"):
            flags.append(f"--cpus-per-task={self.options['cpus_per_task']}")
        if time_min is not None:
            flags.append(f"--time={time_min}")
        if self.options.get("requeue", True):
            flags.append("--requeue")
        for k, v in self.options.get("sbatch", {}).items():
            flags.append(f"--{k}" if v is True else f"--{k}={v}")
        return flags

    # ------------------------------------------------------------------ adoption
    def _adopt(self, keys: set[str], subs: list[dict]) -> list[_Ref]:
        """Chunks of the earlier submissions ``subs`` (:func:`.status.load_submissions` of
        ``folder``) that are still queued or running and will run some of ``keys``: followed
        instead of submitted again.

        An array task in an unsettled state (``COMPLETING``: Slurm shows it both for a task that
        ends and for one being requeued) is asked about again for up to :data:`ADOPT_SETTLE_S`
        seconds; one still unsettled then is taken as ended (its runs are submitted again)."""
        candidates = []
        for doc, c, wanted, present in walk_chunks(subs, wanted=keys.__contains__, newest_claims=False):
            left = [k for k in wanted if _outcome_name(k) not in present]
            if left:
                candidates.append((Path(doc["dir"]), c, left, doc.get("time_min")))
        if not candidates:
            return []
        ids = [c["slurm_id"] for _, c, _, _ in candidates]
        states = query_states(ids)
        deadline, told = time.monotonic() + ADOPT_SETTLE_S, False
        while states and any(states.get(i) in UNSETTLED_STATES for i in ids) and time.monotonic() < deadline:
            if not told:
                n = sum(states.get(i) in UNSETTLED_STATES for i in ids)
                self.log(f"slurm: {n} array task(s) of an earlier submission are completing (ending or being "
                         f"requeued); waiting up to {ADOPT_SETTLE_S:.0f} s to tell which")
                told = True
            time.sleep(1.0)
            states = query_states(ids)
        if not states:
            return []
        refs, taken = [], set()
        for sub, c, left, time_min in candidates:
            st = states.get(c["slurm_id"])
            if st not in ACTIVE_STATES or st in UNSETTLED_STATES:
                continue
            left = [k for k in left if k not in taken]
            if not left:
                continue
            taken.update(left)
            ref = _Ref(sub, c["slurm_id"], left, c.get("stderr", ""), c.get("stdout", ""), own=False,
                       time_min=time_min)
            ref.state = st
            refs.append(ref)
        return refs

    def _cancel_orphans(self, subs: list[dict]) -> None:
        """Cancel arrays queued from the folder of one of the submissions ``subs``
        (:func:`.status.load_submissions` of ``folder``) but recorded in no ``submission.json``: a
        driver killed between ``sbatch`` and recording the array (their task pickles may be
        missing, so their tasks would only wait and fail). Only when that submission's driver is
        known to be gone (same host, process not alive: :func:`backends.process.owner_gone`);
        otherwise the arrays are named in a log line."""
        docs = {Path(d["dir"]): d for d in subs}
        if not docs:
            return
        queued = queued_commands()
        if not queued:
            return
        recorded = {a["job_id"] for d in docs.values() for a in d.get("arrays", [])}
        mine, theirs = [], []
        for jid, cmd in queued.items():
            if jid in recorded:
                continue
            owner = next((d for d in docs if Path(cmd).parent == d / "logs"), None)
            if owner is None:
                continue
            (mine if owner_gone(docs[owner].get("driver", "")) else theirs).append(jid)
        if mine:
            cancel(mine)
            self.log(f"slurm: cancelled array(s) {', '.join(sorted(mine))}: submitted by a driver that stopped "
                     "before recording them (their runs are submitted again)")
        if theirs:
            self.log(f"slurm: array(s) {', '.join(sorted(theirs))} were queued from {self.folder} but are recorded "
                     "nowhere and their driver may still run (another host); `scancel` them if it is gone")

    # ------------------------------------------------------------------ submission
    def _submit(self, tasks: list[Task], fn: RunFn, shared: Mapping[str, Any]) -> tuple[list[_Ref], dict | None]:
        info = self.validate()
        by_key = {}
        for t in tasks:
            if t.key in by_key:
                raise ValueError(f"slurm backend: duplicate task key {t.key!r}")
            by_key[t.key] = t
        subs = load_submissions(self.folder)  # the earlier submissions, read once for both
        self._cancel_orphans(subs)
        adopted = self._adopt(set(by_key), subs)
        adopted_keys = {k for r in adopted for k in r.keys}
        if adopted:
            self.log(f"slurm: following {len(adopted_keys)} run(s) already queued by earlier submission(s) "
                     f"({', '.join(sorted({r.slurm_id.split('_')[0] for r in adopted}))})")
        todo = [t for t in tasks if t.key not in adopted_keys]
        if not todo:
            return adopted, None
        todo.sort(key=lambda t: (t.shared is None, str(t.shared)))  # chunks share their datasets
        ranges = plan_chunks(len(todo), self.options.get("runs_per_task"), self.parallelism, info["max_array_size"])
        arrays = split_arrays(len(ranges), info["max_array_size"])

        sub_id = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        sub = self.folder / sub_id
        (sub / "out").mkdir(parents=True)
        (sub / "shared").mkdir()
        logs = sub / "logs"
        used = sorted({t.shared for t in todo if t.shared is not None})
        shared_files = {}
        for i, name in enumerate(used):
            if name not in shared:
                raise KeyError(f"slurm backend: task needs shared object {name!r}, which was not given")
            path = sub / "shared" / f"shared-{i}.pkl"
            atomic_write_bytes(path, pickle.dumps(shared[name], protocol=pickle.HIGHEST_PROTOCOL))
            shared_files[name] = str(path)

        import submitit

        doc = {"id": sub_id, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
               "driver": worker_id(), "folder": str(sub), "tasks": len(todo),
               "partition": info["partition"], "time_min": info["time_min"],
               "options": {k: v for k, v in self.options.items()}, "arrays": [], "chunks": []}
        refs: list[_Ref] = []
        # with a parallelism cap, new arrays wait for the adopted ones too, so the cap holds overall
        prev_array = ":".join(sorted({r.slurm_id.split("_")[0] for r in adopted})) or None
        record = sub / "submission.json"
        try:
            # recorded before the first sbatch (who submits), then extended after each array: a
            # driver killed mid-way leaves the arrays it queued recorded, and a re-run adopts them
            atomic_write_text(record, json.dumps(doc, indent=1, sort_keys=True) + "\n")
            for first, count in arrays:
                ex = submitit.SlurmExecutor(folder=logs, max_num_timeout=_SUBMITIT_TIMEOUTS,
                                            python=self.options.get("python"))
                # the checkpoint signal comes signal_delay_s before the limit, at most a quarter of it
                delay = min(self.options.get("signal_delay_s", 90), max(5, info["time_min"] * 60 // 4))
                params = dict(time=info["time_min"], job_name=self.options.get("job_name", "twinsweep"),
                              signal_delay_s=delay, wckey=None,
                              array_parallelism=min(count, self.parallelism or count),
                              additional_parameters=self._additional())
                if self.options.get("setup"):
                    params["setup"] = list(self.options["setup"])
                if prev_array is not None and self.parallelism:
                    params["dependency"] = f"afterany:{prev_array}"
                ex.update_parameters(**params)
                chunk_args = []
                for ci in range(first, first + count):
                    a, b = ranges[ci]
                    chunk = todo[a:b]
                    files = {n: shared_files[n] for n in {t.shared for t in chunk if t.shared is not None}}
                    chunk_args.append((str(sub / "out"), chunk, fn, files))
                try:
                    with ex.batch():
                        jobs = [ex.submit(ChunkRunner(info["time_min"], delay, self.options.get("max_requeues", 3)),
                                      *args) for args in chunk_args]
                except Exception as exc:  # sbatch refused it (FailedSubmissionError) or submitit failed
                    raise SlurmError(f"slurm backend: submission failed: {exc}") from exc
                array_id = jobs[0].job_id.split("_")[0]
                prev_array = array_id
                doc["arrays"].append({"job_id": array_id, "first_chunk": first, "tasks": count,
                                      "parallelism": params["array_parallelism"],
                                      "dependency": params.get("dependency")})
                for ci, job, args in zip(range(first, first + count), jobs, chunk_args):
                    err, out = _log_paths(logs, job.job_id)
                    keys = [t.key for t in args[1]]
                    doc["chunks"].append({"index": ci, "slurm_id": job.job_id, "keys": keys, "stderr": err,
                                          "stdout": out})
                    refs.append(_Ref(sub, job.job_id, keys, err, out, own=True, time_min=info["time_min"]))
                atomic_write_text(record, json.dumps(doc, indent=1, sort_keys=True) + "\n")
                self.log(f"slurm: submitted array {array_id}: {count} task(s), {sum(len(a[1]) for a in chunk_args)} "
                         f"run(s), at most {params['array_parallelism']} at once; logs in {logs}")
        finally:
            if not doc["arrays"]:  # nothing was queued: nothing to record
                shutil.rmtree(sub, ignore_errors=True)
        self.last_submission = doc
        return adopted + refs, doc

    def _additional(self) -> dict[str, Any]:
        add: dict[str, Any] = {}
        for k in ("partition", "account", "qos", "mem"):
            if self.options.get(k):
                add[k] = self.options[k]
        if self.options.get("cpus_per_task"):
            add["cpus-per-task"] = self.options["cpus_per_task"]
        if self.options.get("requeue", True):
            add["requeue"] = True
        add.update(self.options.get("sbatch", {}))
        return add

    def submit(self, tasks: Iterable[Task], fn: RunFn, shared: Mapping[str, Any] | None = None) -> dict:
        """Submit ``tasks`` and return without following them (``--detach``); tasks already queued
        by an earlier submission in ``folder`` are not submitted again. Returns ``{"submission":
        id or None, "jobs": [array ids], "tasks": submitted, "adopted": followed-by-earlier,
        "folder"}``."""
        tasks = list(tasks)
        refs, doc = self._submit(tasks, fn, shared or {}) if tasks else ([], None)
        adopted = sum(len(r.keys) for r in refs if not r.own)
        return {"submission": doc["id"] if doc else None, "jobs": [a["job_id"] for a in doc["arrays"]] if doc else [],
                "tasks": doc["tasks"] if doc else 0, "adopted": adopted, "folder": str(self.folder)}

    # ------------------------------------------------------------------ following
    def run(self, tasks: Iterable[Task], fn: RunFn, shared: Mapping[str, Any] | None = None) -> Iterator[Outcome]:
        tasks = list(tasks)
        if not tasks:
            return
        refs, doc = self._submit(tasks, fn, shared or {})
        finished = False
        try:
            yield from self._follow(refs)
            finished = True
        finally:
            self.in_flight = 0
            if doc is not None:
                if finished:
                    shutil.rmtree(Path(doc["folder"]) / "shared", ignore_errors=True)
                else:  # stopped early: cancel what this call submitted
                    cancel([a["job_id"] for a in doc["arrays"]])

    def _follow(self, refs: list[_Ref]) -> Iterator[Outcome]:
        waiting = {k: r for r in refs for k in r.keys}
        pending_refs = [r for r in refs if r.keys]
        last_poll = 0.0
        squeue_failures = 0
        while waiting:
            # outcome files that landed since the last look
            for sub in {r.sub for r in pending_refs}:
                present = _outcomes_present(sub)
                for r in pending_refs:
                    if r.sub != sub:
                        continue
                    for k in [k for k in r.keys if _outcome_name(k) in present]:
                        oc = _load_outcome(r.out / _outcome_name(k))
                        if oc is None:
                            continue  # unreadable (being replaced?): look again next time
                        r.keys.remove(k)
                        waiting.pop(k, None)
                        yield oc
            pending_refs = [r for r in pending_refs if r.keys]
            if not waiting:
                break
            now = time.monotonic()
            if now - last_poll >= self.poll_s:
                last_poll = now
                states = query_states(r.slurm_id for r in pending_refs)
                if states is None:
                    squeue_failures += 1
                    if squeue_failures in (5, 50, 500):
                        self.log(f"slurm: squeue has failed {squeue_failures} times in a row; still waiting")
                else:
                    squeue_failures = 0
                    ended = []
                    for r in pending_refs:
                        st = states.get(r.slurm_id)
                        r.state = st or "GONE"
                        if st in ACTIVE_STATES:
                            r.strikes = 0
                        else:
                            r.strikes += 1
                            if r.strikes >= 2:  # seen over twice in a row: not a transient state
                                ended.append(r)
                    for r in ended:
                        present = _outcomes_present(r.sub)  # last look: outcomes written just before the end
                        for k in list(r.keys):
                            oc = _load_outcome(r.out / _outcome_name(k)) if _outcome_name(k) in present else None
                            if oc is None:
                                oc = self._lost(r, k)
                            r.keys.remove(k)
                            waiting.pop(k, None)
                            yield oc
                    pending_refs = [r for r in pending_refs if r.keys]
                self.in_flight = sum(1 for r in pending_refs if r.state == "RUNNING")
                if self.poll_hook is not None:
                    self.poll_hook()
            if waiting:
                time.sleep(min(0.25 if len(waiting) < 2000 else 1.0, self.poll_s))

    def _lost(self, r: _Ref, key: str) -> Outcome:
        """The Outcome of a task whose array task ended without running it to the end."""
        detail = ""
        try:
            doc = json.loads((r.sub / "errors" / f"{r.slurm_id}.json").read_text())
            detail = f"\nthe array task raised:\n{doc.get('traceback') or doc.get('error')}"
        except (OSError, ValueError, AttributeError):  # no error record (killed, cancelled) or unreadable
            pass
        msg = (f"SlurmTaskEnded: array task {r.slurm_id} ended ({r.state}) before this run finished; "
               f"log: {r.stderr}")
        if r.state == "TIMEOUT":
            msg = (f"SlurmTimeLimit: array task {r.slurm_id} reached its time limit of {time_limit_text(r.time_min)} "
                   f"(TIMEOUT) before this run finished; {time_limit_hint()}; log: {r.stderr}")
        tb = f"{msg}{detail}\n--- last lines of {r.stderr} ---\n{_tail(r.stderr)}"
        return Outcome(key, False, error=msg, traceback=tb, worker=f"slurm:{r.slurm_id}")

    def close(self) -> None:
        self.in_flight = 0
