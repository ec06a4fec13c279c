"""``slurm`` backend: tasks run as Slurm job arrays submitted through submitit.

How a batch of tasks executes
-----------------------------
- **Chunks.** The tasks are grouped into chunks (``runs_per_task`` tasks each; by default the
  tasks are split evenly into ``min(tasks, MaxArraySize, 2 x parallelism)`` chunks, 64 without a
  parallelism cap) and each chunk is one array task. A chunk runs its tasks one after the other
  in-process, with :func:`backends.base.call_safely`, and writes one *outcome file* per task
  (``<folder>/<submission>/out/<key>.json``, JSON written atomically: the driver and ``twinsweep
  status`` read it without unpickling anything; the run function's result must be JSON-ready) as
  soon as that task ends. A chunk that fails outside its tasks writes ``errors/<slurm id>.json``. The run
  function itself writes its outputs (the sweep's ``runs/<key>/``) on the shared filesystem.
- **Shared objects** (e.g. a dataset's (Workload, System)) are pickled once per submission into
  ``<submission>/shared/`` and loaded by a chunk the first time one of its tasks needs them.
- **Arrays.** A Slurm array holds at most ``MaxArraySize`` tasks (read from ``scontrol show
  config``; the ``max_array_size`` option can only lower it), so more chunks are split over
  several arrays. ``array_parallelism`` (default: ``workers``) caps the array tasks running at
  once (``--array=0-N%P``); when the chunks span several arrays, each array then waits for the
  previous one (``--dependency=afterany``) so that the cap holds for the whole batch.
- **Following.** The driver watches the outcome files (yielding an :class:`Outcome` per task as
  it lands) and polls ``squeue`` every ``poll_s`` seconds. An array task that has left the queue
  (completed, cancelled, failed, timed out, or purged) with tasks that never wrote an outcome
  turns each of them into a failed Outcome naming the array task, its state and its log file.
  Accounting (``sacct``) is not needed.
- **Requeue.** Chunks are checkpointable: when Slurm signals a timeout or a preemption
  (``--signal=USR2@signal_delay_s``) submitit requeues the array task (at most ``max_requeues``
  timeouts), and a task requeued by Slurm itself (``--requeue``; preemption with
  ``PreemptMode=REQUEUE``, node failure) restarts the same way. A restarted chunk skips the tasks
  that already wrote their outcome, so it resumes with only what is missing. The run function is
  idempotent on the sweep's side (a run directory that exists is not recomputed).
- **Adoption.** Before submitting, the backend looks at the earlier submissions in ``folder``:
  tasks that a still-pending or running array task of an earlier submission (e.g. a ``--detach``
  sweep) will run are followed instead of being submitted again.
- **Stopping.** Closing :meth:`SlurmBackend.run` early (Ctrl-C, generator closed) cancels
  (``scancel``) the arrays that call submitted; arrays of earlier submissions it only followed
  keep running. :meth:`SlurmBackend.submit` submits without following (``twinsweep sweep --detach``).

Options are checked before anything is submitted (:func:`parse_options` for their form, and
:meth:`SlurmBackend.validate` against the cluster: known partition, time limit within the
partition's ``MaxTime``, and ``sbatch --test-only`` with the very same options), and every problem is
a :class:`core.errors.ConfigError` naming the option. The array tasks run the driver's Python
(``sys.executable``; ``python`` option to change it), so the project and its virtual environment
must be on a filesystem the compute nodes share, and so must ``folder``.

Folder layout (``folder``; the sweep uses ``<results>/slurm``)::

    <submission>/submission.json   arrays, chunks (slurm id, keys, log paths), options
    <submission>/shared/*.pkl      shared objects (removed when a followed submission is complete)
    <submission>/out/<key>.json    one Outcome per finished task (JSON)
    <submission>/errors/<id>.json  what an array task raised outside its tasks (JSON)
    <submission>/logs/             submitit's sbatch scripts, pickles and logs (<job>_<task>_0_log.err)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import pickle
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from twinsweep.core.atomic import atomic_write_bytes, atomic_write_text
from twinsweep.core.durations import parse_slurm_duration
from twinsweep.core.errors import ConfigError, TwinError

from .base import Backend, Outcome, RunFn, Task, call_safely, register_backend

__all__ = ["SlurmBackend", "SlurmError", "parse_options", "parse_time", "parse_sbatch_items", "plan_chunks",
           "split_arrays", "cluster_partitions", "cluster_max_array_size", "query_states", "folder_status",
           "slurm_ready", "OPTION_KEYS"]


class SlurmError(TwinError):
    """Slurm cannot be reached (no ``sinfo``/``sbatch``, controller down) or refused a submission."""


#: States of a job (array task) that will still run or is running.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                           "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
                           "RESV_DEL_HOLD", "SPECIAL_EXIT"})
#: States of a job that is over.
TERMINAL_STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                             "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED"})

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

_UNLIMITED_MIN = 365 * 24 * 60  # time limit given to submitit when neither the user nor the partition sets one


# ------------------------------------------------------------------------------------ option parsing
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


# ------------------------------------------------------------------------------------------ chunking
def plan_chunks(n_tasks: int, runs_per_task: int | None = None, parallelism: int | None = None,
                max_array_size: int = 1001) -> list[tuple[int, int]]:
    """Split ``n_tasks`` tasks into chunks; returns ``[(start, stop), ...]`` index ranges.

    With ``runs_per_task``: chunks of exactly that many (the last may be smaller). Otherwise the
    tasks are split evenly (sizes differ by at most one) into ``min(n_tasks, max_array_size,
    2 x parallelism)`` chunks (64 instead of 2 x parallelism when there is no cap), so the default
    fits one array.
    """
    if n_tasks <= 0:
        return []
    if runs_per_task:
        return [(i, min(i + runs_per_task, n_tasks)) for i in range(0, n_tasks, runs_per_task)]
    k = max(1, min(n_tasks, max_array_size, 2 * parallelism if parallelism else 64))
    base, extra = divmod(n_tasks, k)
    out, start = [], 0
    for i in range(k):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def split_arrays(n_chunks: int, max_array_size: int) -> list[tuple[int, int]]:
    """Chunks -> arrays of at most ``max_array_size`` tasks: ``[(first_chunk, count), ...]``."""
    if max_array_size < 1:
        raise ValueError("max_array_size must be >= 1")
    return [(i, min(max_array_size, n_chunks - i)) for i in range(0, n_chunks, max_array_size)]


# ----------------------------------------------------------------------------------- cluster queries
def _run_cmd(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    if shutil.which(args[0]) is None:
        raise SlurmError(f"slurm backend: {args[0]!r} not found; run on a Slurm login node (or start the local "
                         "test cluster: sudo bash slurm/local-cluster.sh)")
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise SlurmError(f"slurm backend: `{' '.join(args)}` did not answer within {timeout:.0f} s") from exc


def slurm_ready(timeout: float = 15) -> tuple[bool, str]:
    """``(True, "")`` when ``sinfo`` answers with at least one usable node, else ``(False, why)``."""
    if shutil.which("sinfo") is None:
        return False, "sinfo not found (Slurm is not installed here)"
    try:
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "sinfo did not answer"
    if p.returncode != 0:
        return False, f"sinfo failed: {p.stderr.strip() or p.stdout.strip()}"
    states = [s.strip() for s in p.stdout.split()]
    if not any(s.startswith(("idle", "mix", "alloc", "comp", "plnd", "planned", "resv")) for s in states):
        return False, f"no usable node (node states: {', '.join(states) or 'none'})"
    return True, ""


def cluster_partitions() -> tuple[list[str], str | None]:
    """``(partition names, default partition)`` from ``sinfo -h -o %P``."""
    p = _run_cmd(["sinfo", "-h", "-o", "%P"])
    if p.returncode != 0:
        raise SlurmError(f"slurm backend: sinfo failed: {p.stderr.strip()}")
    names, default = [], None
    for line in p.stdout.split():
        name = line.strip()
        if name.endswith("*"):
            name = name[:-1]
            default = name
        if name and name not in names:
            names.append(name)
    return names, default


def _scontrol_kv(text: str) -> dict[str, str]:
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", text))


def cluster_max_array_size() -> int:
    """The cluster's ``MaxArraySize`` (``scontrol show config``): an array holds at most this
    many tasks (indices ``0 .. MaxArraySize-1``)."""
    p = _run_cmd(["scontrol", "show", "config"])
    if p.returncode != 0:
        raise SlurmError(f"slurm backend: scontrol show config failed: {p.stderr.strip()}")
    m = re.search(r"^MaxArraySize\s*=\s*(\d+)", p.stdout, re.M)
    return int(m.group(1)) if m else 1001


def _partition_limits(name: str) -> dict[str, str]:
    p = _run_cmd(["scontrol", "show", "partition", name, "-o"])
    return _scontrol_kv(p.stdout) if p.returncode == 0 else {}


def _limit_minutes(text: str | None) -> int | None:
    """A partition's DefaultTime/MaxTime in minutes; None for UNLIMITED/NONE/INFINITE."""
    try:
        seconds = parse_slurm_duration(text or "", "partition limit", missing_ok=True)
    except ConfigError:
        return None
    return None if seconds is None else math.ceil(seconds / 60)


def query_states(slurm_ids: Iterable[str]) -> dict[str, str] | None:
    """``{slurm id ("123" or "123_4"): state}`` from ``squeue -t all -r`` for the jobs/arrays of
    ``slurm_ids``; jobs Slurm has forgotten are absent. None when squeue could not be asked."""
    base = sorted({str(s).split("_")[0] for s in slurm_ids})
    if not base:
        return {}
    try:
        p = _run_cmd(["squeue", "-h", "-r", "-t", "all", "-j", ",".join(base), "-o", "%i|%T"], timeout=30)
    except SlurmError:
        return None
    if p.returncode != 0:
        if "Invalid job id" in (p.stderr + p.stdout):
            return {}
        return None
    out = {}
    for line in p.stdout.splitlines():
        jid, _, state = line.strip().partition("|")
        if jid:
            out[jid] = state.strip().split()[0] if state.strip() else "UNKNOWN"
    return out


# ------------------------------------------------------------------------------------- array tasks
def _outcome_name(key: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_.\-]{1,200}", key) and not key.startswith("."):
        return key + ".json"
    return "h-" + hashlib.sha1(key.encode()).hexdigest() + ".json"


def _write_outcome(oc: Outcome, path: Path) -> None:
    """Write an Outcome as JSON, atomically (a result that is not JSON-ready becomes a failure)."""

    try:
        text = json.dumps(oc.to_json(), sort_keys=True, allow_nan=True)
    except (TypeError, ValueError) as exc:
        bad = Outcome(oc.key, False, error=f"TypeError: the run's result cannot be written as JSON ({exc})",
                      traceback=oc.traceback, wall_s=oc.wall_s, worker=oc.worker)
        text = json.dumps(bad.to_json(), sort_keys=True)
    atomic_write_text(path, text)


class ChunkRunner:
    """What one array task runs: the tasks of one chunk, one after the other, each writing its
    Outcome file. Checkpointable (submitit requeues it on timeout/preemption); a restart skips
    the tasks whose Outcome file exists."""

    def __call__(self, out_dir: str, tasks: list[Task], fn: RunFn, shared_files: dict[str, str]) -> dict:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        job = os.environ.get("SLURM_ARRAY_JOB_ID")
        job = f"{job}_{os.environ.get('SLURM_ARRAY_TASK_ID')}" if job else os.environ.get("SLURM_JOB_ID", "?")
        try:
            return self._run(out, job, tasks, fn, shared_files)
        except BaseException as exc:  # recorded as JSON for the driver (it never reads submitit's pickles)
            import traceback as _tb

        
            try:
                (out.parent / "errors").mkdir(exist_ok=True)
                atomic_write_text(out.parent / "errors" / f"{job}.json",
                                  json.dumps({"error": f"{type(exc).__name__}: {exc}", "traceback": _tb.format_exc()}))
            except OSError:
                pass
            raise

    def _run(self, out: Path, job: str, tasks: list[Task], fn: RunFn, shared_files: dict[str, str]) -> dict:
        cache: dict[str, Any] = {}
        ran = skipped = 0
        for task in tasks:
            path = out / _outcome_name(task.key)
            if path.exists():
                skipped += 1
                continue
            value = None
            if task.shared is not None:
                if task.shared not in cache:
                    with open(shared_files[task.shared], "rb") as fh:
                        cache[task.shared] = pickle.load(fh)
                value = cache[task.shared]
            oc = call_safely(fn, task, value)
            oc.worker = f"{oc.worker} slurm:{job}"
            _write_outcome(oc, path)
            ran += 1
            print(f"[twinsweep] {task.key}: {'ok' if oc.ok else 'FAILED ' + str(oc.error)} ({oc.wall_s:.2f} s)",
                  flush=True)
        print(f"[twinsweep] chunk done: {ran} ran, {skipped} already done", flush=True)
        return {"ran": ran, "skipped": skipped}

    def checkpoint(self, *args: Any, **kwargs: Any):
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self, *args, **kwargs)


# ----------------------------------------------------------------------------------------- backend
class _Ref:
    """A chunk being followed: its submission folder, slurm id, keys still expected, log paths."""

    __slots__ = ("sub", "out", "slurm_id", "keys", "stderr", "stdout", "strikes", "state", "own")

    def __init__(self, sub: Path, slurm_id: str, keys: list[str], stderr: str, stdout: str, own: bool):
        self.sub, self.out, self.slurm_id = sub, sub / "out", slurm_id
        self.keys = list(keys)
        self.stderr, self.stdout = stderr, stdout
        self.strikes, self.state, self.own = 0, "PENDING", own


def _log_paths(logs: Path, slurm_id: str) -> tuple[str, str]:
    return str(logs / f"{slurm_id}_0_log.err"), str(logs / f"{slurm_id}_0_log.out")


def _tail(path: str, n: int = 30) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            lines = fh.read().decode(errors="replace").splitlines()
        return "\n".join(lines[-n:])
    except OSError:
        return ""


def load_submissions(folder: str | os.PathLike) -> list[dict]:
    """The ``submission.json`` documents under ``folder``, oldest first (``dir`` added)."""
    root = Path(folder)
    subs = []
    if root.is_dir():
        for p in root.glob("*/submission.json"):
            try:
                doc = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            doc["dir"] = str(p.parent)
            subs.append(doc)
    return sorted(subs, key=lambda d: (d.get("created", ""), d.get("id", "")))


def _outcomes_present(sub_dir: Path) -> set[str]:
    out = sub_dir / "out"
    try:
        return {n for n in os.listdir(out) if n.endswith(".json") and not n.startswith(".")}
    except FileNotFoundError:
        return set()


def _load_outcome(path: Path) -> Outcome | None:
    """The Outcome in a JSON outcome file; None when it cannot be read (being replaced, damaged)."""
    try:
        doc = json.loads(Path(path).read_text())
        return Outcome.from_json(doc) if isinstance(doc, dict) and "key" in doc and "ok" in doc else None
    except (OSError, ValueError, TypeError):
        return None


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
    def _adopt(self, keys: set[str]) -> list[_Ref]:
        """Chunks of earlier submissions in ``folder`` that are still queued or running and will
        run some of ``keys``: followed instead of submitted again."""
        candidates = []
        for doc in load_submissions(self.folder):
            sub = Path(doc["dir"])
            present = None
            for c in doc.get("chunks", []):
                if not keys.intersection(c["keys"]):
                    continue
                if present is None:
                    present = _outcomes_present(sub)
                left = [k for k in c["keys"] if k in keys and _outcome_name(k) not in present]
                if left:
                    candidates.append((sub, c, left))
        if not candidates:
            return []
        states = query_states(c["slurm_id"] for _, c, _ in candidates)
        if not states:
            return []
        refs, taken = [], set()
        for sub, c, left in candidates:
            if states.get(c["slurm_id"]) not in ACTIVE_STATES:
                continue
            left = [k for k in left if k not in taken]
            if not left:
                continue
            taken.update(left)
            ref = _Ref(sub, c["slurm_id"], left, c.get("stderr", ""), c.get("stdout", ""), own=False)
            ref.state = states[c["slurm_id"]]
            refs.append(ref)
        return refs

    # ------------------------------------------------------------------ submission
    def _submit(self, tasks: list[Task], fn: RunFn, shared: Mapping[str, Any]) -> tuple[list[_Ref], dict | None]:
        info = self.validate()
        by_key = {}
        for t in tasks:
            if t.key in by_key:
                raise ValueError(f"slurm backend: duplicate task key {t.key!r}")
            by_key[t.key] = t
        adopted = self._adopt(set(by_key))
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
               "driver": f"{socket.gethostname()}:{os.getpid()}", "folder": str(sub), "tasks": len(todo),
               "partition": info["partition"], "time_min": info["time_min"],
               "options": {k: v for k, v in self.options.items()}, "arrays": [], "chunks": []}
        refs: list[_Ref] = []
        prev_array = None
        try:
            for first, count in arrays:
                ex = submitit.SlurmExecutor(folder=logs, max_num_timeout=self.options.get("max_requeues", 3),
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
                        jobs = [ex.submit(ChunkRunner(), *args) for args in chunk_args]
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
                    refs.append(_Ref(sub, job.job_id, keys, err, out, own=True))
                self.log(f"slurm: submitted array {array_id}: {count} task(s), {sum(len(a[1]) for a in chunk_args)} "
                         f"run(s), at most {params['array_parallelism']} at once; logs in {logs}")
        finally:
            if doc["arrays"]:
                atomic_write_text(sub / "submission.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
            else:
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
        tb = f"{msg}{detail}\n--- last lines of {r.stderr} ---\n{_tail(r.stderr)}"
        return Outcome(key, False, error=msg, traceback=tb, worker=f"slurm:{r.slurm_id}")

    def close(self) -> None:
        self.in_flight = 0


def cancel(job_ids: Iterable[str]) -> None:
    """``scancel`` the given jobs/arrays (errors ignored: they may be over already)."""
    ids = [str(j) for j in job_ids if j]
    if ids and shutil.which("scancel"):
        subprocess.run(["scancel", *ids], capture_output=True, timeout=60)


# -------------------------------------------------------------------------------------------- status
def folder_status(folder: str | os.PathLike, done: set[str] | None = None) -> dict[str, Any]:
    """Progress of the submissions under ``folder`` (a sweep's ``<results>/slurm``).

    ``done``: keys complete elsewhere (the sweep's store), whose failures are not reported.
    Returns ``{"submissions": [{id, created, jobs, tasks}], "tasks": {state: count} over array
    tasks that still expect runs (``PENDING``, ``RUNNING``, ...; ``ENDED`` when over),
    "running_runs" / "queued_runs": runs in running / pending array tasks, "failed_runs": [{key,
    error, log, slurm_id}] (the run raised), "failed_tasks": [{slurm_id, state, missing, log}]
    (array tasks that ended with runs missing), "active": any array task still queued or running,
    "squeue": False when squeue could not be asked}``.
    """
    done = done or set()
    subs = load_submissions(folder)
    res: dict[str, Any] = {"submissions": [], "tasks": {}, "running_runs": 0, "queued_runs": 0,
                           "failed_runs": [], "failed_tasks": [], "active": False, "squeue": True}
    open_chunks = []
    claimed: set[str] = set()  # keys a newer submission took over: older records of them are stale
    for doc in reversed(subs):
        sub = Path(doc["dir"])
        present = _outcomes_present(sub)
        res["submissions"].insert(0, {"id": doc["id"], "created": doc.get("created"),
                                      "jobs": [a["job_id"] for a in doc.get("arrays", [])],
                                      "tasks": doc.get("tasks")})
        for c in doc.get("chunks", []):
            missing = []
            for k in c["keys"]:
                if k in done or k in claimed:
                    continue
                name = _outcome_name(k)
                if name in present:
                    oc = _load_outcome(sub / "out" / name)
                    if oc is not None and not oc.ok:
                        res["failed_runs"].append({"key": k, "error": oc.error, "log": c.get("stderr"),
                                                   "slurm_id": c["slurm_id"], "worker": oc.worker})
                else:
                    missing.append(k)
            if missing:
                open_chunks.append((c, missing))
        for c in doc.get("chunks", []):
            claimed.update(c["keys"])
    states = query_states(c["slurm_id"] for c, _ in open_chunks) if open_chunks else {}
    if states is None:
        res["squeue"] = False
        states = {}
    for c, missing in open_chunks:
        st = states.get(c["slurm_id"])
        if not res["squeue"]:
            st = "UNKNOWN"
        if st in ACTIVE_STATES or st == "UNKNOWN":
            res["active"] = res["active"] or st in ACTIVE_STATES
            res["tasks"][st] = res["tasks"].get(st, 0) + 1
            if st == "RUNNING":
                res["running_runs"] += len(missing)
            else:
                res["queued_runs"] += len(missing)
        else:
            res["tasks"]["ENDED"] = res["tasks"].get("ENDED", 0) + 1
            res["failed_tasks"].append({"slurm_id": c["slurm_id"], "state": st or "GONE (no longer in squeue)",
                                        "missing": len(missing), "log": c.get("stderr")})
    return res
