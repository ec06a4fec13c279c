"""The slurm backend (backends/slurm.py), Slurm sweeps, detach/status, tuning on Slurm and the
Ray-on-Slurm template, against a real Slurm (``slurm/local-cluster.sh`` starts one on this machine).

Tests that need Slurm skip with the reason when it is not usable here, and fail in CI (``CI`` set),
where ``.ci/run`` starts the local cluster first. The option, time-format and chunking tests need
no Slurm. Array tasks import this folder's helper modules: the tests put it on PYTHONPATH, which
sbatch passes on to the jobs.
"""

from __future__ import annotations

import glob
import json
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from twinsweep.backends.base import make_backend
from twinsweep.backends.slurm import (ACTIVE_STATES, cluster_max_array_size, cluster_partitions, load_submissions, parse_options,
                            parse_sbatch_items, parse_time, plan_chunks, slurm_ready, split_arrays)
from twinsweep.core.errors import ConfigError
from twinsweep.sweep.api import run_sweep, sweep_status
from twinsweep.sweep.cli import main
from twinsweep.sweep.spec import parse_spec
from ci_policy import in_ci as _in_ci
from test_slurm_support import logged_run, read_runlog
from test_sweep_support import run_files, write_spec, write_swf

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


# ------------------------------------------------------------------------------------ no Slurm needed
@pytest.mark.parametrize("text, minutes", [
    ("30", 30), (45, 45), ("5:30", 6), ("0:30", 1), ("2:00:00", 120), ("1-12", 2160), ("1-0:30", 1470),
    ("0-00:00:30", 1), ("2-03:04:05", 2 * 1440 + 3 * 60 + 5),
])
def test_parse_time_accepts_slurm_formats(text, minutes):
    assert parse_time(text)[1] == minutes


@pytest.mark.parametrize("bad, match", [
    ("1:2:3:4", "not a Slurm time limit"), ("abc", "not a Slurm time limit"), ("2h", "not a Slurm time limit"),
    ("90:75", "seconds must be < 60"), ("1-25", "hours must be < 24"), ("1:61:00", "minutes and seconds"),
    ("0", "must be > 0"), ("", "not a Slurm time limit"), (1.5, "expected a Slurm time limit"),
    (True, "expected a Slurm time limit"),
])
def test_parse_time_rejects_other_forms(bad, match):
    with pytest.raises(ConfigError, match=match):
        parse_time(bad, "backend.slurm.time")


@pytest.mark.parametrize("opts, match", [
    ({"partitions": "x"}, r"unknown key\(s\) \['partitions'\]"),
    ({"mem": "4GB"}, "memory per node"), ({"cpus_per_task": 0}, "must be >= 1"),
    ({"array_parallelism": "2"}, "expected an integer"), ({"sbatch": {"array": "0-3"}}, "set by the backend"),
    ({"sbatch": {"partition": "x"}}, "use the 'partition' option"), ({"sbatch": {"C": "gpu"}}, "long option name"),
    ({"sbatch": {"constraint": ["a"]}}, "expected a string"), ({"partition": "a b"}, "Slurm name"),
    ({"requeue": "yes"}, "true or false"), ({"poll_s": 0}, "> 0"), ({"setup": [1]}, "shell lines"),
])
def test_parse_options_errors_name_the_key(opts, match):
    with pytest.raises(ConfigError, match=match):
        parse_options(opts)


def test_parse_options_normalises():
    o = parse_options({"partition": "debug", "time": 90, "mem": "4g", "sbatch": {"mail_type": "END", "exclusive": True,
                                                                               "hint": False}})
    assert o == {"partition": "debug", "time": "90", "mem": "4G", "sbatch": {"mail-type": "END", "exclusive": True}}
    assert parse_sbatch_items(["constraint=cpu", "--exclusive", "gres = gpu:1"]) == {
        "constraint": "cpu", "exclusive": True, "gres": "gpu:1"}


@pytest.mark.parametrize("rpt", [None, 1, 3])
@pytest.mark.parametrize("par", [None, 2])
def test_chunks_cover_every_task_once_and_arrays_respect_the_limit(rpt, par):
    for n in range(0, 60):
        for max_arr in (1, 4, 1001):
            chunks = plan_chunks(n, rpt, par, max_arr)
            flat = [i for a, b in chunks for i in range(a, b)]
            assert flat == list(range(n))
            assert all(b > a for a, b in chunks)
            if rpt:
                assert all(b - a == rpt for a, b in chunks[:-1])
            else:  # automatic chunking fits one array and balances the chunks
                assert len(chunks) <= max_arr
                assert max(b - a for a, b in chunks or [(0, 0)]) - min(b - a for a, b in chunks or [(0, 0)]) <= 1
            arrays = split_arrays(len(chunks), max_arr)
            assert sum(c for _, c in arrays) == len(chunks)
            assert all(1 <= c <= max_arr for _, c in arrays)
            assert [f for f, _ in arrays] == list(range(0, len(chunks), max_arr))


def test_spec_backend_slurm_table():
    doc = tomllib.loads("""
        [[datasets]]
        trace = "x.swf"
        [backend]
        name = "slurm"
        workers = 3
        [backend.slurm]
        partition = "debug"
        time = "1-00"
        sbatch = { constraint = "cpu" }
    """)
    spec = parse_spec(doc)
    assert spec.backend.name == "slurm" and spec.backend.slurm["time"] == "1-00"
    assert spec.to_dict()["backend"]["slurm"]["sbatch"] == {"constraint": "cpu"}
    assert spec.with_overrides(slurm={"time": "30"}).backend.slurm["time"] == "30"
    doc["backend"]["slurm"]["time"] = "1:2:3:4"
    with pytest.raises(ConfigError, match=r"backend\.slurm\.time: '1:2:3:4' is not a Slurm time limit"):
        parse_spec(doc)


def test_make_backend_slurm_checks_options_first():
    with pytest.raises(ConfigError, match="takes no address"):
        make_backend("slurm", address="auto")
    with pytest.raises(ConfigError, match="not a Slurm time limit"):
        make_backend("slurm", time="90 minutes")
    with pytest.raises(ConfigError, match="workers must be >= 1"):
        make_backend("slurm", workers=0)


def test_chunk_checkpoint_requeues_only_a_timeout_that_made_progress(tmp_path, monkeypatch):
    """The USR2 handler's decision (:meth:`ChunkRunner.checkpoint`): a preemption is requeued; a
    timeout is requeued when the attempt finished a run, at most max_requeues times; otherwise the
    unfinished runs get an outcome naming the time limit and how to raise it, and the task stops."""
    pytest.importorskip("submitit")
    from submitit.helpers import DelayedSubmission

    from twinsweep.backends.base import Task
    from twinsweep.backends.slurm.task import ChunkRunner, ChunkTimeLimit, _load_outcome, _outcome_name

    out = tmp_path / "sub" / "out"
    out.mkdir(parents=True)
    tasks = [Task(f"k{i}", {}, None) for i in range(3)]
    args = (str(out), tasks, print, {})

    r = ChunkRunner(time_min=60, signal_delay_s=90, max_requeues=1)
    r._job = "7_0"
    assert isinstance(r.checkpoint(*args), DelayedSubmission) and r.timeouts == 0  # early: a preemption
    r._t0 -= 3600 - 90  # the signal of the time limit
    r._attempt_ran, r._current = 1, "k1"
    again = r.checkpoint(*args)
    assert isinstance(again, DelayedSubmission) and r.timeouts == 1
    restored = pickle.loads(pickle.dumps(again.function))
    assert restored.timeouts == 1 and restored._attempt_ran == 0  # the count survives the requeue, not the attempt
    rec = json.loads((out.parent / "timeouts" / "7_0.json").read_text())
    assert rec["requeued"] and rec["timeouts"] == 1 and rec["time_min"] == 60
    with pytest.raises(ChunkTimeLimit, match=r"timed out 2 times \(at most 1 requeues\)"):
        r.checkpoint(*args)  # a second timeout, though with progress: over max_requeues

    out = tmp_path / "sub2" / "out"
    out.mkdir(parents=True)
    args = (str(out), tasks, print, {})
    (out / _outcome_name("k0")).write_text(json.dumps({"key": "k0", "ok": True}))  # finished before
    r = ChunkRunner(time_min=1, signal_delay_s=15, max_requeues=3)
    r._job, r._current = "8_1", "k1"
    with pytest.raises(ChunkTimeLimit, match="no run finished in this attempt"):
        r.checkpoint(*args)
    assert _load_outcome(out / _outcome_name("k0")).ok  # kept
    for k, what in (("k1", "this run did not finish within the limit"), ("k2", "this run was not started")):
        oc = _load_outcome(out / _outcome_name(k))
        assert not oc.ok and oc.error.startswith("SlurmTimeLimit: array task 8_1 reached its time limit of 1 min")
        assert what in oc.error and "[backend.slurm] time" in oc.error and "--time" in oc.error
    assert not json.loads((out.parent / "timeouts" / "8_1.json").read_text())["requeued"]


# --------------------------------------------------------------------------------------- real Slurm
@pytest.fixture(scope="session")
def slurm_cluster():
    """A usable Slurm, or skip (locally) / fail (CI) with the reason."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        msg = "submitit is not installed (pip install -e '.[slurm]')"
        if _in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    ok, why = slurm_ready()
    if not ok and _in_ci() and shutil.which("sinfo") and os.geteuid() == 0:
        subprocess.run(["bash", str(ROOT / "slurm" / "local-cluster.sh")], capture_output=True, timeout=180)
        ok, why = slurm_ready()
    if not ok:
        msg = (f"no usable Slurm here ({why}); start the local test cluster with "
               f"`sudo bash slurm/local-cluster.sh` (installs slurm-wlm and munge)")
        if _in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return {"max_array_size": cluster_max_array_size()}


@pytest.fixture
def slurm_env(slurm_cluster, monkeypatch, tmp_path):
    """Array tasks can import the test helpers; jobs left behind by a failing test are cancelled."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("TWINSWEEP_TEST_RUNLOG", str(tmp_path / "runlog"))
    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "0")
    yield slurm_cluster
    ids = [a["job_id"] for p in glob.glob(str(tmp_path / "**" / "submission.json"), recursive=True)
           for a in json.loads(Path(p).read_text())["arrays"]]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """One small SWF trace shared by the studies of this module (same run keys and files everywhere)."""
    return write_swf(tmp_path_factory.mktemp("trace") / "tiny.swf", n_jobs=40)


def study(tmp_path: Path, trace: Path, **kw) -> Path:
    """The 8-run test study (2 policies x 2 backfills x 2 seeds) on ``trace``, output ``tmp_path/out``."""
    return write_spec(tmp_path, seeds=2, trace=trace, **kw)


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory, trace):
    """runs.parquet and run files of the 8-run test study, run serially with the local backend."""
    d = tmp_path_factory.mktemp("local-ref")
    res = run_sweep(study(d, trace), backend="local", workers=1, report=False)
    assert res.ran == 8 and not res.failed
    return (d / "out" / "runs.parquet").read_bytes(), run_files(d / "out")


def _states(job: str) -> dict[str, tuple[str, str]]:
    p = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%i|%T|%r"], capture_output=True, text=True)
    out = {}
    for line in p.stdout.splitlines():
        jid, st, reason = (line.split("|") + ["", ""])[:3]
        out[jid] = (st, reason)
    return out


def _wait_until(cond, timeout: float, what: str, step: float = 0.2):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)


def _outcome_keys(out: Path) -> set[str]:
    return {Path(p).stem for p in glob.glob(str(out / "slurm" / "*" / "out" / "*.json"))}


def test_bad_options_give_clear_errors_before_submitting(slurm_env, tmp_path, trace, capsys):
    spec = study(tmp_path, trace)
    out = tmp_path / "out"
    cases = [
        (["--partition", "nope"], r"unknown partition 'nope'; partitions on this cluster: .*debug"),
        (["--time", "1:2:3:4"], r"'1:2:3:4' is not a Slurm time limit; use MM, MM:SS, HH:MM:SS, D-HH"),
        (["--time", "61:00"], None),  # valid: only checked, then refused below for the memory
        (["--mem", "999999G"], r"rejected by `sbatch --test-only`"),
        (["--cpus-per-task", "512"], r"rejected by `sbatch --test-only`"),
        (["--sbatch", "array=0-3"], r"set by the backend"),
    ]
    if "short" in cluster_partitions()[0]:  # the local cluster's partition with MaxTime 10 minutes
        cases.append((["--partition", "short", "--time", "20"], r"'20' exceeds partition short's MaxTime"))
    for extra, match in cases:
        if match is None:
            continue
        rc = main(["sweep", str(spec), "--backend", "slurm", "--no-report", *extra])
        err = capsys.readouterr().err
        assert rc == 2, (extra, err)
        assert re.search(match, err), (extra, err)
        assert "Traceback" not in err
    assert not load_submissions(out / "slurm")  # nothing was submitted
    assert not out.exists()  # the cluster's checks come before anything is written: no results folder left
    rc = main(["sweep", str(spec), "--backend", "local", "--partition", "debug"])
    assert rc == 2 and "need the slurm backend" in capsys.readouterr().err
    rc = main(["status", str(tmp_path / "nowhere")])
    assert rc == 2 and "no sweep here" in capsys.readouterr().err


def test_slurm_sweep_gives_the_same_table_as_local(slurm_env, tmp_path, trace, capsys, local_reference):
    spec = study(tmp_path, trace)
    rc = main(["sweep", str(spec), "--backend", "slurm", "--no-report", "--no-progress"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "8 run(s) done now" in out.out and "slurm: submitted array" in out.err
    assert (tmp_path / "out" / "runs.parquet").read_bytes() == local_reference[0]
    assert run_files(tmp_path / "out") == local_reference[1]
    subs = load_submissions(tmp_path / "out" / "slurm")
    assert len(subs) == 1 and sum(len(c["keys"]) for c in subs[0]["chunks"]) == 8
    assert not (Path(subs[0]["dir"]) / "shared").exists()  # shared pickles removed once followed to the end
    assert main(["status", str(tmp_path / "out")]) == 0
    assert "8 of 8 complete, 0 missing, 0 failed" in capsys.readouterr().out


def test_scancel_one_array_task_then_rerun_completes_without_loss_or_duplicates(slurm_env, tmp_path, trace, monkeypatch,
                                                                                local_reference):
    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "2.5")
    spec = study(tmp_path, trace, retries=0)
    out = tmp_path / "out"
    box: dict = {}

    def first():
        try:
            box["res"] = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False,
                                   slurm={"runs_per_task": 4, "poll_s": 0.5})
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
            box["exc"] = exc

    th = threading.Thread(target=first)
    th.start()
    _wait_until(lambda: _outcome_keys(out) or "exc" in box, 90, "a first finished run")
    assert "exc" not in box, box.get("exc")
    sub = load_submissions(out / "slurm")[0]
    key = sorted(_outcome_keys(out))[0]
    victim = next(c for c in sub["chunks"] if key in c["keys"])
    subprocess.run(["scancel", victim["slurm_id"]], check=True)
    th.join(timeout=120)
    assert not th.is_alive() and "exc" not in box, box.get("exc")
    res = box["res"]
    done_first = {k for k, st in read_runlog(tmp_path / "runlog") if st == "written"}
    missing = set(victim["keys"]) - done_first
    assert missing and sorted(res.failed) == sorted(missing)
    for k in missing:  # each lost run is recorded with the array task, its state and its log
        err = json.loads((out / "failed" / k / "error.json").read_text())["error"]
        assert f"array task {victim['slurm_id']} ended (CANCELLED)" in err and victim["stderr"] in err
    st = sweep_status(out)
    assert st["missing"] == len(missing) and not st["complete"]
    assert [(f["slurm_id"], f["state"], f["missing"]) for f in st["slurm"]["failed_tasks"]] == \
        [(victim["slurm_id"], "CANCELLED", len(missing))]
    assert st["slurm"]["failed_tasks"][0]["log"] == victim["stderr"] and Path(victim["stderr"]).exists()

    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "0")
    res2 = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False, slurm={"poll_s": 0.5})
    assert (res2.skipped, res2.ran, res2.failed) == (8 - len(missing), len(missing), [])
    log = read_runlog(tmp_path / "runlog")
    written = [k for k, st in log if st == "written"]
    assert sorted(written) == sorted(set(written)) and len(written) == 8  # every run simulated to the end once
    assert set(written[len(done_first):]) == missing  # the rerun ran only the missing runs
    assert (out / "runs.parquet").read_bytes() == local_reference[0]
    assert not list((out / "runs").glob(".tmp-*")) and not sweep_status(out)["failed"]


def test_rerun_right_after_scancel_waits_for_the_completing_task_and_resubmits_its_runs(slurm_env, tmp_path, trace,
                                                                                        monkeypatch, local_reference):
    """A task cancelled just before the re-run is COMPLETING (as a requeued one would be): the
    re-run waits for it to settle, follows the other task and submits the cancelled task's runs
    again instead of following them into a failure."""
    # wide margins, so that a loaded machine (the whole suite beside it) still finds the other task
    # running and the cancelled one COMPLETING when the re-run starts: 4 runs x 6 s, a 10 s TERM trap
    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "6")
    spec = study(tmp_path, trace, retries=0)
    out = tmp_path / "out"
    # the batch script takes a few seconds to end when cancelled (as a run's child process may):
    # the task stays COMPLETING meanwhile (Slurm kills it after KillWait)
    res = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False, detach=True,
                    slurm={"runs_per_task": 4, "poll_s": 0.5, "setup": ["trap 'sleep 10' TERM"]})
    sub = load_submissions(out / "slurm")[0]
    c0, c1 = sub["chunks"]
    _wait_until(lambda: all(_states(res.slurm["jobs"][0]).get(c["slurm_id"], ("",))[0] == "RUNNING" for c in (c0, c1)),
                90, "both array tasks running")
    subprocess.run(["scancel", c0["slurm_id"]], check=True)
    _wait_until(lambda: _states(res.slurm["jobs"][0])[c0["slurm_id"]][0] == "COMPLETING", 10, "COMPLETING", step=0.05)
    # Slurm ends the COMPLETING state after KillWait (5 s here): a re-run that starts later on a
    # loaded machine would find the task already CANCELLED. So the re-run's first two looks at the
    # cancelled task see COMPLETING whenever Slurm already settled it: the wait is always exercised,
    # on a task that really was cancelled.
    from twinsweep.backends.slurm import backend as slurm_backend

    real, seen = slurm_backend.query_states, {"completing": 0}

    def still_completing(ids):
        states = real(ids)
        if states is not None and c0["slurm_id"] in states and seen["completing"] < 2:
            seen["completing"] += 1
            states = {**states, c0["slurm_id"]: "COMPLETING"}
        return states

    monkeypatch.setattr(slurm_backend, "query_states", still_completing)
    msgs: list[str] = []
    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "0")
    res2 = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False, slurm={"poll_s": 0.5}, log=msgs.append)
    assert res2.failed == [] and res2.ran + res2.skipped == 8, msgs
    assert any("completing" in m for m in msgs), msgs
    assert any("following" in m and res.slurm["jobs"][0] in m for m in msgs), msgs
    subs = load_submissions(out / "slurm")
    assert len(subs) == 2
    resubmitted = [k for c in subs[1]["chunks"] for k in c["keys"]]
    assert resubmitted and set(resubmitted) <= set(c0["keys"])  # only the cancelled task's runs were submitted again
    written = [k for k, st in read_runlog(tmp_path / "runlog") if st == "written"]
    assert sorted(written) == sorted(set(written)) and len(written) == 8
    assert (out / "runs.parquet").read_bytes() == local_reference[0]


def test_driver_killed_during_submission_rerun_adopts_the_recorded_arrays(slurm_env, tmp_path, trace, local_reference):
    """kill -9 of the driver between arrays: each array is in submission.json as soon as sbatch
    returned, so the re-run follows them and submits only the rest (after them: the parallelism
    cap holds); an array queued from that submission but recorded nowhere (the driver died between
    sbatch and the record) is cancelled."""
    spec = study(tmp_path, trace)
    out = tmp_path / "out"
    spec.write_text(spec.read_text().replace('[backend]\nname = "local"',
                                             '[backend]\nname = "slurm"\n[backend.slurm]\nmax_array_size = 1\npoll_s = 0.5'))
    driver = subprocess.Popen([sys.executable, "-m", "twinsweep.sweep.cli", "sweep", str(spec), "--runs-per-task", "1",
                               "--array-parallelism", "1", "--no-report", "--no-progress"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in driver.stderr:
            if "submitted array" in line:
                driver.kill()
                break
    finally:
        driver.kill()
        driver.wait(timeout=30)
    subs = load_submissions(out / "slurm")
    assert len(subs) == 1 and 1 <= len(subs[0]["arrays"]) < 8, subs
    killed = subs[0]
    recorded = [k for c in killed["chunks"] for k in c["keys"]]
    assert len(recorded) == len(killed["arrays"])  # every recorded array with its chunk
    # an array the killed driver queued but did not record (as if killed right after its sbatch)
    script = Path(killed["dir"]) / "logs" / ".submission_file_orphan.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH --output={tmp_path}/orphan-%j.out\nsleep 300\n")
    orphan = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True,
                            check=True).stdout.strip().split(";")[0]
    try:
        msgs: list[str] = []
        res = run_sweep(spec, backend="slurm", report=False, log=msgs.append)
    finally:
        subprocess.run(["scancel", orphan], capture_output=True)
    assert res.failed == [] and res.ran + res.skipped == 8, msgs
    # the killed driver may itself have queued an array it never recorded (killed right after its
    # sbatch): it is cancelled with the orphan, in the same list
    cancelled = [m for m in msgs if re.search(rf"cancelled array\(s\) [0-9, ]*\b{orphan}\b", m)]
    assert cancelled, msgs
    assert _states(orphan).get(orphan, ("GONE",))[0] in ("CANCELLED", "GONE", "COMPLETING")
    subs = load_submissions(out / "slurm")
    keys = [k for d in subs for c in d["chunks"] for k in c["keys"]]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 8  # no run submitted twice
    if len(subs) == 2:  # the rest was submitted after the adopted arrays
        adopted = ":".join(sorted(a["job_id"] for a in killed["arrays"]))
        assert subs[1]["arrays"][0]["dependency"] in (f"afterany:{adopted}", None)
    assert (out / "runs.parquet").read_bytes() == local_reference[0]


def test_too_short_time_limit_fails_at_once_naming_the_limit(slurm_env, tmp_path, trace, monkeypatch, capsys):
    """Runs longer than the time limit: the task that timed out without finishing a run is not
    requeued; its runs fail with the limit named and the option to raise, and status says TIMEOUT."""
    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "120")
    spec = study(tmp_path, trace, retries=0)
    out = tmp_path / "out"
    t0 = time.monotonic()
    res = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False,
                    slurm={"time": "1", "runs_per_task": 4, "poll_s": 0.5})
    assert time.monotonic() - t0 < 110  # the first timeout (signal 15 s before the 1 min limit), no requeue
    assert sorted(res.failed) == sorted(k for c in load_submissions(out / "slurm")[0]["chunks"] for k in c["keys"])
    for k in res.failed:
        err = json.loads((out / "failed" / k / "error.json").read_text())["error"]
        assert err.startswith("SlurmTimeLimit: array task") and "time limit of 1 min" in err, err
        assert "[backend.slurm] time" in err and "--time" in err
    sub = load_submissions(out / "slurm")[0]
    for c in sub["chunks"]:
        assert Path(c["stdout"]).read_text().count("Starting with JobEnvironment") == 1  # never requeued
    assert main(["status", str(out)]) == 1  # runs failed, nothing queued: the sweep needs running again
    text = capsys.readouterr().out
    assert text.count("TIMEOUT  task") == 2 and "time limit of 1 min" in text and "not requeued" in text, text


def test_preempted_and_requeued_tasks_resume_with_only_their_missing_runs(slurm_env, tmp_path, trace, monkeypatch,
                                                                          local_reference):
    """Array task 0 gets submitit's checkpoint signal (USR2: what a timeout or a preemption sends),
    array task 1 is requeued by Slurm (``scontrol requeue``); both restart, skip the runs they
    finished and the sweep that follows them completes with every run simulated once."""
    monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "2")
    spec = study(tmp_path, trace)
    out = tmp_path / "out"
    res = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False, detach=True,
                    slurm={"runs_per_task": 4, "poll_s": 0.5})
    assert res.slurm["tasks"] == 8 and len(res.slurm["jobs"]) == 1
    sub = load_submissions(out / "slurm")[0]
    c0, c1 = sub["chunks"]
    _wait_until(lambda: set(c0["keys"]) & _outcome_keys(out) and set(c1["keys"]) & _outcome_keys(out), 90,
                "a finished run in each array task")
    subprocess.run(["scancel", "--signal=USR2", c0["slurm_id"]], check=True)
    subprocess.run(["scontrol", "requeue", c1["slurm_id"]], check=True)
    stop = threading.Event()
    seen_requeue = set()

    def release():  # Slurm holds a requeued job ~2 min (BeginTime); let it start at once
        while not stop.is_set():
            for jid, (st, reason) in _states(res.slurm["jobs"][0]).items():
                if st == "PENDING" and reason == "BeginTime":
                    seen_requeue.add(jid)
                    subprocess.run(["scontrol", "update", f"JobId={jid}", "StartTime=now"], capture_output=True)
            time.sleep(0.3)

    th = threading.Thread(target=release, daemon=True)
    th.start()
    try:
        monkeypatch.setenv("TWINSWEEP_TEST_SLEEP", "0")
        res2 = run_sweep(spec, backend="slurm", run_fn=logged_run, report=False, slurm={"poll_s": 0.5})
    finally:
        stop.set()
        th.join(timeout=10)
    assert seen_requeue == {c0["slurm_id"], c1["slurm_id"]}
    assert res2.ran + res2.skipped == 8 and not res2.failed
    assert len(load_submissions(out / "slurm")) == 1  # it followed the requeued tasks, submitted nothing new
    for c in (c0, c1):
        text = Path(c["stdout"]).read_text()
        assert text.count("Starting with JobEnvironment") == 2, text  # ran twice: before and after the requeue
        m = re.search(r"chunk done: (\d+) ran, (\d+) already done", text)
        assert m and int(m.group(2)) >= 1 and int(m.group(1)) + int(m.group(2)) == 4, text
    written = [k for k, st in read_runlog(tmp_path / "runlog") if st == "written"]
    assert sorted(written) == sorted(set(written)) and len(written) == 8
    assert (out / "runs.parquet").read_bytes() == local_reference[0]


def test_arrays_respect_max_array_size_and_parallelism_detach_and_status(slurm_env, tmp_path, trace, capsys,
                                                                          local_reference):
    limit = min(slurm_env["max_array_size"], 3)
    spec = study(tmp_path, trace)
    out = tmp_path / "out"
    text = spec.read_text().replace('[backend]\nname = "local"',
                                    f'[backend]\nname = "slurm"\n[backend.slurm]\nmax_array_size = {limit}\npoll_s = 0.5')
    spec.write_text(text)
    rc = main(["sweep", str(spec), "--detach", "--runs-per-task", "1", "--array-parallelism", "2"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "submitted 8 run(s) as Slurm array(s)" in cap.out and f"twinsweep status {out}" in cap.out
    sub = load_submissions(out / "slurm")[0]
    sizes = [a["tasks"] for a in sub["arrays"]]
    assert sizes == [limit] * (8 // limit) + ([8 % limit] if 8 % limit else []) and len(sizes) == math.ceil(8 / limit)
    assert [a["dependency"] for a in sub["arrays"]] == [None] + [f"afterany:{a['job_id']}" for a in sub["arrays"][:-1]]
    for a in sub["arrays"]:
        script = (Path(sub["dir"]) / "logs" / f"{a['job_id']}_submission.sh").read_text()
        assert f"#SBATCH --array=0-{a['tasks'] - 1}%{min(2, a['tasks'])}" in script
        if a["dependency"]:
            assert f"#SBATCH --dependency={a['dependency']}" in script
    running_max = 0

    def watch():
        nonlocal running_max
        while not stop.is_set():
            n = sum(st == "RUNNING" for a in sub["arrays"] for st, _ in _states(a["job_id"]).values())
            running_max = max(running_max, n)
            time.sleep(0.2)

    stop = threading.Event()
    th = threading.Thread(target=watch, daemon=True)
    th.start()
    assert main(["status", str(out)]) in (0, 3)  # in progress, or (on a fast cluster) already complete
    cap = capsys.readouterr().out
    assert re.search(r"runs:\s+\d of 8 complete", cap) and "array tasks with runs to do" in cap
    rc = main(["sweep", str(spec), "--no-report", "--no-progress"])  # follows the queued arrays to the end
    stop.set()
    th.join(timeout=5)
    cap = capsys.readouterr()
    assert rc == 0 and "following" in cap.err and "0 failed (of 8)" in cap.out, cap
    assert len(load_submissions(out / "slurm")) == 1 and running_max <= 2
    assert (out / "runs.parquet").read_bytes() == local_reference[0]
    assert main(["status", str(out)]) == 0
    assert "8 of 8 complete" in capsys.readouterr().out


def test_ray_on_slurm_template_starts_ray_and_runs_a_sweep(slurm_env, tmp_path, trace, local_reference):
    spec = study(tmp_path, trace)
    out = tmp_path / "out-ray"
    cpus = min(2, int(subprocess.run(["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True).stdout.split()[0]))
    log = tmp_path / "ray-%j.out"
    p = subprocess.run(["sbatch", "--parsable", "--nodes=1", f"--cpus-per-task={cpus}", "--time=15", f"--output={log}",
                        f"--export=ALL,TWINSWEEP_VENV={Path(sys.executable).parent.parent}",
                        str(ROOT / "slurm" / "ray-on-slurm.sbatch"), str(spec), "--out", str(out), "--no-report"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    job = p.stdout.strip().split(";")[0]
    try:
        _wait_until(lambda: _states(job).get(job, ("GONE", ""))[0] not in ACTIVE_STATES, 240, "the Ray job", step=0.5)
    finally:
        subprocess.run(["scancel", job], capture_output=True)
    text = Path(str(log).replace("%j", job)).read_text()
    assert _states(job)[job][0] == "COMPLETED", text[-3000:]
    m = re.search(r"ray-on-slurm: job (\d+), 1 node\(s\) x (\d+) CPUs; head \S+ at (\S+):(\d+); temp dir (\S+)", text)
    assert m and m.group(1) == job, text[:2000]
    assert int(m.group(4)) >= 20000 + (int(job) % 2000) * 20  # the job's own port block
    assert m.group(5).endswith(f"-{job}") and not Path(m.group(5)).exists()  # per-job temp dir, removed at the end
    assert f"Ray cluster up: 1 node(s), {cpus} CPUs" in text
    assert "8 run(s) done now, 0 already complete, 0 failed (of 8)" in text
    assert (out / "runs.parquet").read_bytes() == local_reference[0]


def test_tune_through_slurm_finishes_and_resumes(slurm_env, tmp_path):
    import optuna

    from test_tune import _spec, _study
    from twinsweep.sweep.tune import run_tune

    spec = _spec(tmp_path, trials=2)
    seen = []
    r1 = run_tune(spec, backend="slurm", workers=2, run_fn=logged_run, on_trial=lambda n, p, v, e: seen.append(n),
                  slurm={"poll_s": 0.5})
    assert (r1.complete, r1.ran_trials, r1.worker_errors) == (2, 2, [])
    assert sorted(seen) == [0, 1] and r1.best and r1.best[0]["test_values"] is not None
    subs = load_submissions(tmp_path / "out" / "slurm-tune")
    assert len(subs) == 1 and len(subs[0]["chunks"]) == 2  # two Optuna workers, one array task each
    r2 = run_tune(spec, backend="slurm", workers=2, trials=3, run_fn=logged_run, slurm={"poll_s": 0.5})
    assert (r2.complete, r2.ran_trials) == (3, 1)
    study = _study(tmp_path / "out")
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(done) == 3 and all(t.user_attrs["worker"] for t in done)
    assert len({t.user_attrs["worker"] for t in done}) == 3  # 2 workers, then 1
    written = [k for k, st in read_runlog(tmp_path / "runlog") if st == "written"]
    assert sorted(written) == sorted(set(written))  # no run simulated twice
    assert (tmp_path / "out" / "best.json").exists() and (tmp_path / "out" / "winners.toml").exists()
