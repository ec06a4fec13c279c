"""A sweep folder where Slurm arrays of an earlier ``--backend slurm`` submission still hold runs:
the other backends refuse to run it (``backends.base.refuse_queued_work``, through every backend's
``study_options``), naming the arrays, their runs and what to do; records whose arrays cannot be
asked refuse too (unless ``TWINSWEEP_ASSUME_JOBS_ENDED=1``). And the workers cap of two Slurm
submissions: the arrays of an extension wait for the adopted ones, so the cap holds across both.

The tests of the first part need no Slurm (a plug-in batch-queue double, hand-written submission
records and no ``squeue`` on PATH); the others need the real local Slurm (``slurm/local-cluster.sh``)
and skip (locally) or fail (CI) with the reason when it is not usable, as tests/test_slurm.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from twinsweep.backends.base import BACKENDS, Backend, QueuedWork, QueuedWorkError, register_backend
from twinsweep.backends.slurm import held_runs, load_submissions
from twinsweep.backends.slurm.task import _outcome_name
from twinsweep.sweep.api import plan_sweep, run_sweep
from twinsweep.sweep.cli import main
from test_slurm import _states, _wait_until, slurm_cluster, slurm_env, study, trace  # noqa: F401 (fixtures)
from test_slurm_support import logged_run, read_runlog
from test_sweep_support import write_spec


# ------------------------------------------------------------------------------------ no Slurm needed
class _Idle(Backend):
    """The plug-in doubles' base: runs nothing."""

    def run(self, tasks, fn, shared=None):
        yield from ()


class _Queue(_Idle):
    """A batch-queue plug-in double whose jobs 41 and 42 still hold 5 runs of every results folder."""

    name = "queue-double"
    batch_queue = True

    @classmethod
    def queued_work(cls, results_dir):
        return QueuedWork(backend=cls.name, jobs=("41", "42"), tasks=3, runs=5, follow="qstat",
                          cancel="qdel 41 42")


class _OwnOptions(_Idle):
    """A plug-in whose study_options does not call super(): it is checked all the same."""

    name = "own-options-double"

    @classmethod
    def study_options(cls, table, results_dir, cache_dir, log=None):
        return {}


@pytest.fixture
def queue_double():
    register_backend(_Queue.name, _Queue, replace=True)
    register_backend(_OwnOptions.name, _OwnOptions, replace=True)
    yield _Queue
    BACKENDS.unregister(_Queue.name)
    BACKENDS.unregister(_OwnOptions.name)


def test_every_other_backend_refuses_runs_a_batch_queue_still_holds(tmp_path, queue_double):
    for name in ("local", "ray", "slurm", _OwnOptions.name):
        with pytest.raises(QueuedWorkError) as err:
            BACKENDS.get(name).study_options({}, tmp_path, tmp_path / ".cache", None)
        msg = str(err.value)
        assert f"5 run(s) are still held by job(s) 41, 42 (3 task(s) queued or running)" in msg, msg
        assert f"the {name} backend would run them a second time" in msg and "`qdel 41 42`" in msg
    assert queue_double.study_options({}, tmp_path, tmp_path / ".cache", None) == {}  # its own jobs: adopted



class _Counted(_Queue):
    """A batch-queue plug-in double that holds nothing and counts how often it is asked."""

    name = "counted-queue-double"
    asked: list[str] = []

    @classmethod
    def queued_work(cls, results_dir):
        cls.asked.append(str(results_dir))
        return None


class _Parent(_Idle):
    """A plug-in whose study_options adds to what super() gives."""

    name = "parent-options-double"

    @classmethod
    def study_options(cls, table, results_dir, cache_dir, log=None):
        return super().study_options(table, results_dir, cache_dir, log) | {"parent": 1}


class _Child(_Parent):
    """A subclass of it whose study_options calls super() too: three wrapped methods on one call."""

    name = "child-options-double"

    @classmethod
    def study_options(cls, table, results_dir, cache_dir, log=None):
        return super().study_options(table, results_dir, cache_dir, log=log) | {"child": 2}


def test_the_queued_work_check_runs_once_even_through_super_calls(tmp_path):
    """Each of these calls goes through two or three wrapped study_options (the child's, the
    parent's, the base class's); the batch-queue backend is asked once per call, for that folder."""
    register_backend(_Counted.name, _Counted, replace=True)
    try:
        _Counted.asked.clear()
        assert _Child.study_options({}, tmp_path / "a", tmp_path / "c", None) == {"parent": 1, "child": 2}
        assert _Counted.asked == [str(tmp_path / "a")]
        assert _Parent.study_options({}, tmp_path / "b", tmp_path / "c") == {"parent": 1}
        assert BACKENDS.get("local").study_options({}, tmp_path / "d", tmp_path / "c", None) == {
            "cache_dir": str(tmp_path / "c")}
        assert _Counted.asked == [str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "d")]
    finally:
        BACKENDS.unregister(_Counted.name)


def test_a_subclass_calling_super_is_refused_once_and_told_once(tmp_path, queue_double, monkeypatch):
    """Refused with the subclass's own name; and with squeue unable to tell (the env variable set),
    the one message naming the unchecked jobs comes once, not once per wrapped method."""
    with pytest.raises(QueuedWorkError, match=r"the child-options-double backend would run them a second time"):
        _Child.study_options({}, tmp_path, tmp_path / ".cache", None)

    class _Unchecked(_Queue):
        name = "unchecked-double"

        @classmethod
        def queued_work(cls, results_dir):
            return QueuedWork(backend=cls.name, unchecked_jobs=("43",), unchecked_runs=2, unchecked_why="no qstat here")

    BACKENDS.unregister(_Queue.name)
    register_backend(_Unchecked.name, _Unchecked, replace=True)
    monkeypatch.setenv("TWINSWEEP_ASSUME_JOBS_ENDED", "1")
    try:
        msgs: list[str] = []
        assert _Child.study_options({}, tmp_path, tmp_path / ".cache", msgs.append) == {"parent": 1, "child": 2}
        assert len(msgs) == 1 and "job(s) 43 recorded here still had 2 run(s) to do" in msgs[0], msgs
    finally:
        BACKENDS.unregister(_Unchecked.name)
        register_backend(_Queue.name, _Queue, replace=True)

def _records(spec: Path, done: int = 0) -> Path:
    """The study's folder as a detached Slurm sweep leaves it: its study.json and a
    submission.json whose arrays 7 (two tasks) and 8 (one) hold the study's runs; the first
    ``done`` runs have their outcome file."""
    spec_obj, _, items = plan_sweep(spec)
    keys = [it.key for it in items]
    out = Path(spec_obj.output)
    out.mkdir()
    (out / "study.json").write_text(json.dumps(spec_obj.to_dict()))
    sub = out / "slurm" / "20260101-000000-abcdef"
    (sub / "out").mkdir(parents=True)
    chunks = [{"index": i, "slurm_id": sid, "keys": keys[i::3], "stderr": "", "stdout": ""}
              for i, sid in enumerate(("7_0", "7_1", "8_0"))]
    (sub / "submission.json").write_text(json.dumps({
        "id": sub.name, "created": "2026-01-01T00:00:00+00:00", "folder": str(sub), "tasks": len(keys),
        "arrays": [{"job_id": "7", "tasks": 2}, {"job_id": "8", "tasks": 1}], "chunks": chunks}))
    for k in keys[:done]:
        (sub / "out" / _outcome_name(k)).write_text(json.dumps({"key": k, "ok": True}))
    return sub


def test_records_that_squeue_cannot_check_refuse_unless_told_the_arrays_are_over(tmp_path, monkeypatch, capsys):
    spec = write_spec(tmp_path, seeds=1)
    out = tmp_path / "out"
    _records(spec)
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))  # no squeue, no sinfo
    monkeypatch.delenv("TWINSWEEP_ASSUME_JOBS_ENDED", raising=False)
    with pytest.raises(QueuedWorkError, match=r"Slurm array\(s\) 7, 8 recorded here still had 4 run\(s\) to do, and "
                                              r"whether they are still queued cannot be checked: squeue is not "
                                              r"installed here\. .* set TWINSWEEP_ASSUME_JOBS_ENDED=1 to run anyway"):
        run_sweep(spec, report=False)
    assert not (out / "runs").exists() or not any((out / "runs").iterdir())  # nothing ran
    assert main(["sweep", str(spec), "--backend", "local", "--no-report", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "twinsweep sweep: error: results folder" in err and "cannot be checked" in err and "Traceback" not in err
    monkeypatch.setenv("TWINSWEEP_ASSUME_JOBS_ENDED", "1")
    msgs: list[str] = []
    res = run_sweep(spec, report=False, log=msgs.append)
    assert res.ran == 4 and not res.failed
    assert any("Slurm array(s) 7, 8" in m and "taken as over" in m for m in msgs), msgs


def test_records_whose_runs_all_have_outcomes_do_not_need_squeue(tmp_path, monkeypatch):
    spec = write_spec(tmp_path, seeds=1)
    _records(spec, done=4)
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))
    monkeypatch.delenv("TWINSWEEP_ASSUME_JOBS_ENDED", raising=False)
    res = run_sweep(spec, report=False)
    assert res.ran == 4 and not res.failed


def _sub(folder: Path, sub_id: str, created: str, job: str, keys: list[str]) -> None:
    d = folder / sub_id
    (d / "out").mkdir(parents=True)
    (d / "submission.json").write_text(json.dumps({
        "id": sub_id, "created": created, "arrays": [{"job_id": job, "tasks": 1}],
        "chunks": [{"index": 0, "slurm_id": f"{job}_0", "keys": keys, "stderr": "", "stdout": ""}]}))


def test_submissions_of_one_second_are_ordered_by_job_id_and_a_newer_one_claims_its_runs(tmp_path, monkeypatch):
    """Two submissions made within one second (``created`` has whole seconds, the ids a random
    part): the one whose array Slurm numbered first is the older; runs a newer submission took
    over are not held by the older one's records."""
    same = "2026-01-01T00:00:00+00:00"
    _sub(tmp_path, "20260101-000000-ffffff", same, "9", ["a", "b"])
    _sub(tmp_path, "20260101-000000-000000", same, "12", ["b"])
    assert [d["id"] for d in load_submissions(tmp_path)] == ["20260101-000000-ffffff", "20260101-000000-000000"]
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))
    held = held_runs(tmp_path)
    assert held["unchecked"] == {"arrays": ["9", "12"], "tasks": 2, "runs": 2} and "squeue" in held["why"]



def test_walk_chunks_newest_claims_for_status_every_record_oldest_first_for_adoption(tmp_path):
    """One walk over the records serves status and held runs (the newest record of a run wins) and
    adoption (every record of a wanted run, oldest first); each submission's outcome files listed once."""
    from twinsweep.backends.slurm.status import walk_chunks

    _sub(tmp_path, "20260101-000000-aaaaaa", "2026-01-01T00:00:00+00:00", "7", ["a", "b"])
    _sub(tmp_path, "20260101-000001-bbbbbb", "2026-01-01T00:00:01+00:00", "9", ["b", "c"])
    (tmp_path / "20260101-000000-aaaaaa" / "out" / _outcome_name("a")).write_text('{"key": "a", "ok": true}')
    subs = load_submissions(tmp_path)
    claims = [(c["slurm_id"], keys, sorted(present)) for _, c, keys, present in walk_chunks(subs)]
    assert claims == [("9_0", ["b", "c"], []), ("7_0", ["a"], ["a.json"])]
    every = [(c["slurm_id"], keys) for _, c, keys, _ in walk_chunks(subs, wanted={"b", "c"}.__contains__,
                                                                      newest_claims=False)]
    assert every == [("7_0", ["b"]), ("9_0", ["b", "c"])]
    assert [c["slurm_id"] for _, c, _, _ in walk_chunks(subs, wanted=lambda k: k != "b")] == ["9_0", "7_0"]


def test_a_submission_reads_the_records_once_for_orphans_and_adoption(tmp_path, monkeypatch):
    """Every run is held by a running array task of an earlier submission: the backend follows it,
    submits nothing, and has read the records (and asked each squeue question) once."""
    from twinsweep.backends.base import Task
    from twinsweep.backends.slurm import SlurmBackend
    from twinsweep.backends.slurm import backend as slurm_backend

    _sub(tmp_path, "20260101-000000-aaaaaa", "2026-01-01T00:00:00+00:00", "7", ["a", "b"])
    (tmp_path / "20260101-000000-aaaaaa" / "out" / _outcome_name("a")).write_text('{"key": "a", "ok": true}')
    calls: list[str] = []

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(slurm_backend, "load_submissions", counted("load_submissions", load_submissions))
    monkeypatch.setattr(slurm_backend, "queued_commands", counted("queued_commands", lambda: {"7": "/elsewhere/x.sh"}))
    monkeypatch.setattr(slurm_backend, "query_states", counted("query_states", lambda ids: {"7_0": "RUNNING"}))
    bk = SlurmBackend(folder=tmp_path)
    bk._validated = {"partition": "debug", "max_array_size": 1000, "time_min": 10}  # no cluster asked
    refs, doc = bk._submit([Task("b", None)], print, {})
    assert doc is None and [(r.slurm_id, r.keys, r.state, r.own) for r in refs] == [("7_0", ["b"], "RUNNING", False)]
    assert calls == ["load_submissions", "queued_commands", "query_states"]

# --------------------------------------------------------------------------------------- real Slurm
def test_local_and_ray_refuse_runs_queued_slurm_arrays_hold_until_they_are_cancelled(slurm_env, tmp_path, trace,
                                                                                     capsys):
    """Before: `twinsweep sweep --backend local` ran the 8 runs the held arrays also hold."""
    spec = study(tmp_path, trace)
    out = tmp_path / "out"
    res = run_sweep(spec, backend="slurm", report=False, detach=True,
                    slurm={"runs_per_task": 2, "array_parallelism": 1, "sbatch": {"hold": True}})
    jobs = res.slurm["jobs"]
    assert res.slurm["tasks"] == 8 and jobs
    for backend in ("local", "ray"):
        rc = main(["sweep", str(spec), "--backend", backend, "--no-report", "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert (f"8 run(s) are still held by Slurm array(s) {', '.join(jobs)} (4 array task(s) queued or running) "
                f"of an earlier --backend slurm submission; the {backend} backend would run them a second time") in err
        assert f"`scancel {' '.join(jobs)}`" in err and f"twinsweep status {out}" in err and "Traceback" not in err
    assert not list((out / "runs").iterdir())  # nothing ran
    subprocess.run(["scancel", *jobs], check=True)
    _wait_until(lambda: not any(st in ("PENDING", "RUNNING", "COMPLETING") for j in jobs for st, _ in
                                _states(j).values()), 30, "the cancelled arrays to leave the queue")
    res = run_sweep(spec, backend="local", report=False)  # taken over
    assert res.ran == 8 and not res.failed


@pytest.mark.filterwarnings("ignore:the spec extends this folder:RuntimeWarning")  # the extension is the point
def test_an_extension_s_arrays_share_the_workers_cap_with_the_adopted_ones(slurm_env, tmp_path, trace, monkeypatch):
    """A spec extended while the arrays of its first submission are still queued: the second
    submission's arrays (``%1``) wait for the adopted ones (``afterany``), so at most one array
    task of the two submissions runs at once (the node has 2 CPUs: without the dependency two do;
    checked by removing it). The first array is held until the second submission exists."""
    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "0.5")
    out = tmp_path / "out"
    opts = {"runs_per_task": 4, "array_parallelism": 1, "poll_s": 0.3}  # one array task per submission
    first = run_sweep(write_spec(tmp_path, seeds=1, trace=trace), backend="slurm", run_fn=logged_run, report=False,
                      detach=True, slurm=opts | {"sbatch": {"hold": True}})
    spec = study(tmp_path, trace)  # seeds 1 -> 2: four runs added
    second = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False, detach=True, slurm=opts)
    assert second.slurm["adopted"] == 4 and second.slurm["tasks"] == 4
    subs = load_submissions(out / "slurm")
    assert len(subs) == 2
    dep = f"afterany:{':'.join(first.slurm['jobs'])}"
    assert [a["dependency"] for a in subs[1]["arrays"]] == [dep]
    script = (Path(subs[1]["dir"]) / "logs" / f"{second.slurm['jobs'][0]}_submission.sh").read_text()
    assert f"#SBATCH --dependency={dep}" in script
    arrays = first.slurm["jobs"] + second.slurm["jobs"]
    running_max, stop = 0, threading.Event()

    def watch():
        nonlocal running_max
        while not stop.is_set():
            running_max = max(running_max, sum(st == "RUNNING" for j in arrays for st, _ in _states(j).values()))
            time.sleep(0.05)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    try:
        subprocess.run(["scontrol", "release", *first.slurm["jobs"]], check=True, capture_output=True)
        res = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False, slurm=opts)  # follows both
    finally:
        stop.set()
        th.join(timeout=5)
    assert res.ran + res.skipped == 8 and not res.failed
    assert len(load_submissions(out / "slurm")) == 2  # nothing submitted a third time
    assert running_max == 1, f"{running_max} array tasks of the two submissions ran at once (cap 1)"
    written = [k for k, st in read_runlog(tmp_path / "runlog") if st == "written"]
    assert sorted(written) == sorted(set(written)) and len(written) == 8
