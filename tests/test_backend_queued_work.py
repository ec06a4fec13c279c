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
class _Queue(Backend):
    """A batch-queue plug-in double whose jobs 41 and 42 still hold 5 runs of every results folder."""

    name = "queue-double"
    batch_queue = True

    @classmethod
    def queued_work(cls, results_dir):
        return QueuedWork(backend=cls.name, jobs=("41", "42"), tasks=3, runs=5, follow="qstat",
                          cancel="qdel 41 42")

    def run(self, tasks, fn, shared=None):
        yield from ()


class _OwnOptions(Backend):
    """A plug-in whose study_options does not call super(): it is checked all the same."""

    name = "own-options-double"

    @classmethod
    def study_options(cls, table, results_dir, cache_dir, log=None):
        return {}

    def run(self, tasks, fn, shared=None):
        yield from ()


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
