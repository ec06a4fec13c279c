"""Progress of the submissions in a backend folder, read from their files alone (``twinsweep
status``; package :mod:`backends.slurm`)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

from .cluster import ACTIVE_STATES, query_states
from .task import _load_outcome, _outcome_name


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
    """The ``submission.json`` documents under ``folder``, oldest first (``dir`` added): by their
    ``created`` time (whole seconds), then by their first array's Slurm job id (ids grow with
    submission time; two submissions of one second were in random order by their ids' random
    part); a submission without arrays yet goes last."""
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
    return sorted(subs, key=lambda d: (d.get("created", ""), _first_job(d), d.get("id", "")))


def _first_job(doc: dict) -> int:
    try:
        return int(str(doc["arrays"][0]["job_id"]))
    except (KeyError, IndexError, TypeError, ValueError):
        return 1 << 62


def _outcomes_present(sub_dir: Path) -> set[str]:
    out = sub_dir / "out"
    try:
        return {n for n in os.listdir(out) if n.endswith(".json") and not n.startswith(".")}
    except FileNotFoundError:
        return set()


def walk_chunks(subs: list[dict], wanted: Callable[[str], bool] | None = None,
                newest_claims: bool = True) -> Iterator[tuple[dict, dict, list[str], set[str]]]:
    """The array tasks (chunks) of the submission records ``subs`` (:func:`load_submissions`) with
    runs to look at: ``(doc, chunk, keys, present)`` for every chunk with at least one such key.

    ``keys``: the chunk's keys, in its order, for which ``wanted`` (None: every key) is true;
    ``present``: the names of the outcome files in the submission's ``out/`` (listed once per
    submission, when one of its chunks has such keys; a key's file is :func:`.task._outcome_name`).
    ``newest_claims`` True (what a folder's status and held runs read): newest submission first,
    and a key that a newer submission lists too is left out of the older ones (their record of it
    is stale: the newer submission took it over). False (adoption, which follows any live array
    task holding a run): every record of a key, oldest submission first."""
    claimed: set[str] = set()
    for doc in (reversed(subs) if newest_claims else subs):
        present = None
        chunks = doc.get("chunks", [])
        for c in chunks:
            keys = [k for k in c["keys"] if k not in claimed and (wanted is None or wanted(k))]
            if not keys:
                continue
            if present is None:
                present = _outcomes_present(Path(doc["dir"]))
            yield doc, c, keys, present
        if newest_claims:
            for c in chunks:
                claimed.update(c["keys"])


def _timeout_records(sub_dir: Path) -> dict[str, dict]:
    """``{slurm id: record}`` of ``<submission>/timeouts/*.json`` (written by an array task that
    reached its time limit, :meth:`backends.slurm.task.ChunkRunner.checkpoint`)."""
    out = {}
    try:
        names = os.listdir(sub_dir / "timeouts")
    except OSError:
        return out
    for n in names:
        if not n.endswith(".json") or n.startswith("."):
            continue
        try:
            doc = json.loads((sub_dir / "timeouts" / n).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("slurm_id"):
            out[str(doc["slurm_id"])] = doc
    return out


def folder_status(folder: str | os.PathLike, done: set[str] | None = None) -> dict[str, Any]:
    """Progress of the submissions under ``folder`` (a sweep's ``<results>/slurm``).

    ``done``: keys complete elsewhere (the sweep's store), whose failures are not reported.
    Returns ``{"submissions": [{id, created, jobs, tasks}], "tasks": {state: count} over array
    tasks that still expect runs (``PENDING``, ``RUNNING``, ...; ``ENDED`` when over),
    "running_runs" / "queued_runs": runs in running / pending array tasks, "failed_runs": [{key,
    error, log, slurm_id}] (the run raised), "failed_tasks": [{slurm_id, state, missing, log}]
    (array tasks that ended with runs missing), "active": any array task still queued or running,
    "squeue": False when squeue could not be asked, "timeouts": [{slurm_id, time_min, timeouts,
    requeued, run, state}] (array tasks that reached their time limit and still have runs missing
    or failed: ``<submission>/timeouts/<id>.json``, written by the task, or the state ``TIMEOUT``)}``.
    """
    done = done or set()
    subs = load_submissions(folder)
    submissions = [{"id": doc["id"], "created": doc.get("created"),
                    "jobs": [a["job_id"] for a in doc.get("arrays", [])], "tasks": doc.get("tasks")} for doc in subs]
    res: dict[str, Any] = {"submissions": submissions, "tasks": {}, "running_runs": 0, "queued_runs": 0,
                           "failed_runs": [], "failed_tasks": [], "active": False, "squeue": True, "timeouts": []}
    open_chunks = []
    timeouts: dict[str, dict[str, dict]] = {}  # per submission folder: _timeout_records
    for doc, c, keys, present in walk_chunks(subs, wanted=lambda k: k not in done):
        sub = Path(doc["dir"])
        missing = []
        failed_before = len(res["failed_runs"])
        for k in keys:
            name = _outcome_name(k)
            if name in present:
                oc = _load_outcome(sub / "out" / name)
                if oc is not None and not oc.ok:
                    res["failed_runs"].append({"key": k, "error": oc.error, "log": c.get("stderr"),
                                               "slurm_id": c["slurm_id"], "worker": oc.worker})
            else:
                missing.append(k)
        if missing:
            open_chunks.append((c, missing, doc.get("time_min")))
        if doc["dir"] not in timeouts:
            timeouts[doc["dir"]] = _timeout_records(sub)
        t = timeouts[doc["dir"]].get(c["slurm_id"])
        if t is not None and (missing or len(res["failed_runs"]) > failed_before):
            res["timeouts"].append(dict(t, time_min=t.get("time_min", doc.get("time_min")), state=None))
    states = query_states(c["slurm_id"] for c, _, _ in open_chunks) if open_chunks else {}
    if states is None:
        res["squeue"] = False
        states = {}
    for t in res["timeouts"]:
        t["state"] = states.get(t["slurm_id"])
    for c, missing, time_min in open_chunks:
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
            if st == "TIMEOUT" and not any(t["slurm_id"] == c["slurm_id"] for t in res["timeouts"]):
                res["timeouts"].append({"slurm_id": c["slurm_id"], "time_min": time_min, "timeouts": None,
                                        "requeued": False, "run": None, "state": st})
            res["tasks"]["ENDED"] = res["tasks"].get("ENDED", 0) + 1
            res["failed_tasks"].append({"slurm_id": c["slurm_id"], "state": st or "GONE (no longer in squeue)",
                                        "missing": len(missing), "log": c.get("stderr")})
    return res


def held_runs(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The runs that array tasks of the submissions under ``folder`` (a sweep's ``<results>/slurm``)
    still hold: tasks without an outcome file (and not taken over by a newer submission) whose
    array task is queued or running (:data:`.cluster.ACTIVE_STATES`, ``COMPLETING`` included: it
    may be requeued). What another backend must not run a second time
    (:meth:`backends.slurm.SlurmBackend.queued_work`).

    None when no recorded array task has runs left to do (then squeue is not asked). Else
    ``{"arrays": [array ids], "tasks": array tasks, "runs": runs}`` of the live ones and, when
    squeue cannot be asked (not installed, controller down), ``"unchecked": {"arrays", "tasks",
    "runs"}`` over every recorded array task with runs left to do and ``"why"``: what failed;
    ``"unchecked"`` is None when squeue answered."""
    open_chunks: list[tuple[dict, list[str]]] = []
    for _, c, keys, present in walk_chunks(load_submissions(folder)):
        missing = [k for k in keys if _outcome_name(k) not in present]
        if missing:
            open_chunks.append((c, missing))
    if not open_chunks:
        return None

    def summary(chunks):
        return {"arrays": sorted({c["slurm_id"].split("_")[0] for c, _ in chunks}, key=_id_order),
                "tasks": len(chunks), "runs": len({k for _, m in chunks for k in m})}

    states = query_states(c["slurm_id"] for c, _ in open_chunks)
    if states is None:
        why = ("squeue is not installed here" if shutil.which("squeue") is None
               else "squeue did not answer (is the Slurm controller down?)")
        return {"arrays": [], "tasks": 0, "runs": 0, "unchecked": summary(open_chunks), "why": why}
    live = [(c, m) for c, m in open_chunks if states.get(c["slurm_id"]) in ACTIVE_STATES]
    if not live:
        return None
    return summary(live) | {"unchecked": None, "why": ""}


def _id_order(job_id: str) -> tuple[int, str]:
    return (int(job_id), "") if job_id.isdigit() else (1 << 62, job_id)
