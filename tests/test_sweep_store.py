"""Result store: atomic run folders, resume after kill -9, failures recorded and retried."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from twinsweep.sweep.api import run_sweep
from twinsweep.sweep.store import ResultStore, StoreBusyError, commit_run_dir
from test_sweep_support import flaky_run, run_files, write_spec, write_swf

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def test_commit_run_dir_is_atomic(tmp_path):
    runs = tmp_path / "runs"

    def boom(d: Path):
        (d / "a.txt").write_text("half")
        raise RuntimeError("crash while writing")

    with pytest.raises(RuntimeError):
        commit_run_dir(runs, "k1", boom)
    assert list(runs.iterdir()) == []  # nothing half-written is left, under any name
    assert commit_run_dir(runs, "k1", lambda d: (d / "a.txt").write_text("ok")) == "written"
    assert (runs / "k1" / "a.txt").read_text() == "ok"
    assert commit_run_dir(runs, "k1", lambda d: (d / "a.txt").write_text("again")) == "exists"
    assert (runs / "k1" / "a.txt").read_text() == "ok"
    assert [p.name for p in runs.iterdir()] == ["k1"]


def test_lock_refuses_a_second_sweep(tmp_path):
    store = ResultStore(tmp_path / "o")
    with store.locked():
        with pytest.raises(StoreBusyError, match="another sweep is writing here"):
            with ResultStore(tmp_path / "o").locked():
                pass
    with store.locked():  # released
        pass


def _killed_sweep(spec_path: Path, kill_after: int, sig: int = signal.SIGKILL) -> int:
    """Start a sweep in a subprocess (slow runs), send ``sig`` once ``kill_after`` runs are complete."""
    # the child installs Python's Ctrl-C handler itself: started from a background job of a
    # non-interactive shell (a CI runner may be one) it would inherit SIGINT ignored
    code = textwrap.dedent(f"""
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from twinsweep.sweep.api import run_sweep
        from test_sweep_support import slow_run
        run_sweep({str(spec_path)!r}, backend="local", run_fn=slow_run, report=False)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(REPO)]), TWINSWEEP_TEST_SLEEP="0.25")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env)
    runs = spec_path.parent / "out" / "runs"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            done = [p for p in runs.iterdir() if not p.name.startswith(".")] if runs.exists() else []
            if len(done) >= kill_after:
                break
            if proc.poll() is not None:
                raise AssertionError("the sweep finished before it could be killed")
            time.sleep(0.02)
        time.sleep(0.1)  # most likely in the middle of the next run
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    return len([p for p in runs.iterdir() if not p.name.startswith(".")])


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_killed_sweep_resumes_only_missing_runs(tmp_path, sig):
    # reference: uninterrupted sweep (both sweeps read the same trace file: jobs.parquet records its path)
    trace = write_swf(tmp_path / "tiny.swf")
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref = run_sweep(write_spec(ref_dir, seeds=3, trace=trace), backend="local", report=False)
    assert ref.ran == ref.planned == 12 and not ref.failed

    work = tmp_path / "work"
    work.mkdir()
    spec_path = write_spec(work, seeds=3, trace=trace)
    n_before = _killed_sweep(spec_path, kill_after=4, sig=sig)
    assert 4 <= n_before < 12
    runs = work / "out" / "runs"
    if sig == signal.SIGINT:  # Ctrl-C: the sweep stops cleanly and indexes what is complete
        assert not [p for p in runs.iterdir() if p.name.startswith(".")]
        assert len(pd.read_parquet(work / "out" / "runs.parquet")) == n_before
    before = {p.name: p.stat().st_ino for p in runs.iterdir() if not p.name.startswith(".")}

    res = run_sweep(spec_path, backend="local", report=False)
    assert res.skipped == n_before
    assert res.ran == 12 - n_before  # only the missing runs ran
    after = {p.name: p.stat().st_ino for p in runs.iterdir()}
    assert not [k for k in after if k.startswith(".")]  # leftovers of the killed run are cleaned
    assert all(after[k] == ino for k, ino in before.items())  # complete runs untouched
    assert len(after) == 12

    # same results as the uninterrupted sweep, byte for byte
    assert (work / "out" / "runs.parquet").read_bytes() == (ref_dir / "out" / "runs.parquet").read_bytes()
    pd.testing.assert_frame_equal(pd.read_parquet(work / "out" / "runs.parquet"),
                                  pd.read_parquet(ref_dir / "out" / "runs.parquet"))
    assert run_files(work / "out") == run_files(ref_dir / "out")

    # a third call has nothing to do
    again = run_sweep(spec_path, backend="local", report=False)
    assert again.ran == 0 and again.skipped == 12


def test_failing_runs_are_recorded_and_retried(tmp_path):
    spec_path = write_spec(tmp_path, seeds=3, retries=2)
    res = run_sweep(spec_path, backend="local", run_fn=flaky_run, report=True)
    # seed 2 + sjf fails always (2 backfills), the others succeed (seed 1 on its second attempt)
    assert res.planned == 12
    assert len(res.failed) == 2
    assert res.ran == 10
    store = ResultStore(tmp_path / "out")
    assert store.failed_keys() == set(res.failed)
    for key in res.failed:
        doc = store.failure(key)
        assert doc["key"] == key
        assert "RuntimeError: injected permanent failure" in doc["error"]
        assert "Traceback" in doc["traceback"] and "flaky_run" in doc["traceback"]
        assert [a["attempt"] for a in doc["attempts"]] == [1, 2, 3]  # 1 + retries
        assert doc["info"]["policy"] == "sjf" and doc["info"]["seed"] == 2
        assert not store.is_done(key)
    # transient failures were retried and left no failure record
    attempts = {p.name: int(p.read_text()) for p in (tmp_path / "out" / "attempts").iterdir()}
    seed1 = [json.loads((store.run_dir(k) / "sweep.json").read_text()) for k in store.done_keys()]
    assert all(attempts[s["key"]] == 2 for s in seed1 if s["seed"] == 1)
    table = pd.read_parquet(tmp_path / "out" / "runs.parquet")
    assert len(table) == 10 and set(table["key"]).isdisjoint(res.failed)
    html = res.report.read_text()
    assert "injected permanent failure" in html

    # a later sweep retries the failed runs; once they succeed their failure record goes away
    res2 = run_sweep(spec_path, backend="local", report=False)
    assert res2.ran == 2 and not res2.failed
    assert store.failed_keys() == set() and not any((tmp_path / "out" / "failed").iterdir())
    assert len(pd.read_parquet(tmp_path / "out" / "runs.parquet")) == 12


def test_an_input_error_is_not_retried(tmp_path, capsys):
    """A run is deterministic, so a ConfigError would come back at every attempt: with retries = 2
    the 4 sjf runs fail after one attempt each (not 3), the 4 fcfs runs succeed."""
    from test_sweep_support import input_error_run

    spec_path = write_spec(tmp_path, seeds=2, retries=2)
    res = run_sweep(spec_path, backend="local", run_fn=input_error_run, report=False)
    assert (res.ran, len(res.failed)) == (4, 4)
    attempts = {p.name: int(p.read_text()) for p in (tmp_path / "out" / "attempts").iterdir()}
    assert sorted(attempts[k] for k in res.failed) == [1, 1, 1, 1]
    doc = ResultStore(tmp_path / "out").failure(res.failed[0])
    assert doc["error"].startswith("ConfigError: injected input error") and len(doc["attempts"]) == 1
    # the sweep's console names the first failures' errors, not only the folder they are in
    from twinsweep.sweep.cli_sweep import _print_failures

    _print_failures(res, most=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"  {k}: ConfigError: injected input error of {k}" for k in res.failed[:2]]
    assert lines[2] == "  ... 2 more (each in failed/<key>/error.json; `twinsweep status` lists them)"



def test_a_plug_in_s_own_input_error_class_is_not_retried(tmp_path):
    """The never-retry rule goes by the exception's class (a subclass of PluginError here), not by
    a class name in the error text: with retries = 2 the 4 sjf runs fail after one attempt each."""
    from test_sweep_support import plugin_error_run

    spec_path = write_spec(tmp_path, seeds=2, retries=2)
    res = run_sweep(spec_path, backend="local", run_fn=plugin_error_run, report=False)
    assert (res.ran, len(res.failed), res.attempts) == (4, 4, 0)
    attempts = {p.name: int(p.read_text()) for p in (tmp_path / "out" / "attempts").iterdir()}
    assert sorted(attempts[k] for k in res.failed) == [1, 1, 1, 1]
    doc = ResultStore(tmp_path / "out").failure(res.failed[0])
    assert doc["error"] == f"PolicyKeyBroken: policy 'sjf' of {res.failed[0]}: job 3's key is NaN"
    assert len(doc["attempts"]) == 1

def test_leftovers_are_ignored_then_cleaned(tmp_path):
    store = ResultStore(tmp_path / "o").create()
    (store.runs_dir / ".tmp-abc-host-1-x").mkdir()
    (store.runs_dir / ".tmp-abc-host-1-x" / "jobs.parquet").write_bytes(b"half")
    (store.runs_dir / "done1").mkdir()
    (store.failed_dir / "k").mkdir()
    (store.failed_dir / "k" / ".tmp-error.json-1").write_text("{")
    (store.root / ".tmp-runs.parquet-1").write_bytes(b"")
    assert store.done_keys() == {"done1"}
    with store.locked():
        assert store.clean_tmp() == 3
    assert sorted(p.name for p in store.runs_dir.iterdir()) == ["done1"]
    assert not list((store.failed_dir / "k").iterdir())


def test_commit_folder_flushes_every_staged_file_before_its_one_rename(tmp_path, monkeypatch):
    """Staged files get no rename or fsync of their own; commit_folder flushes each file and the
    folder before the rename that commits it (issue 11), then the parent folder."""
    from twinsweep.core import atomic

    events = []
    monkeypatch.setattr(atomic, "fsync_path", lambda p: events.append(("sync", Path(p))))
    real_rename = os.rename
    monkeypatch.setattr(atomic.os, "rename", lambda a, b: (events.append(("rename", Path(a))), real_rename(a, b)))
    tmp = tmp_path / ".tmp-x"
    tmp.mkdir()
    for name in ("a.json", "b.parquet"):
        atomic.atomic_write_text(tmp / name, name, staged=True)
    assert events == [] and sorted(p.name for p in tmp.iterdir()) == ["a.json", "b.parquet"]
    assert atomic.commit_folder(tmp, tmp_path / "x")
    renames = [i for i, e in enumerate(events) if e[0] == "rename"]
    before = {p for kind, p in events[:renames[0]] if kind == "sync"}
    assert before == {tmp / "a.json", tmp / "b.parquet", tmp}
    assert events[renames[0] + 1:] == [("sync", tmp_path)]
    assert (tmp_path / "x" / "a.json").read_text() == "a.json"
    other = tmp_path / ".tmp-y"
    other.mkdir()
    assert not atomic.commit_folder(other, tmp_path / "x")  # already committed by someone else


def test_atomic_write_files_flushes_all_before_renaming_and_cleans_up(tmp_path, monkeypatch):
    from twinsweep.core import atomic

    (tmp_path / "keep.txt").write_text("old")
    events = []
    real_fsync = atomic.fsync_path
    monkeypatch.setattr(atomic, "fsync_path", lambda p: (events.append(("sync", Path(p).name)), real_fsync(p)))
    real_replace = os.replace
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: (events.append(("replace", Path(b).name)), real_replace(a, b)))
    atomic.atomic_write_files([(tmp_path / "keep.txt", atomic.bytes_writer(b"new")),
                               (tmp_path / "two.txt", atomic.bytes_writer(b"2"))])
    first_replace = next(i for i, e in enumerate(events) if e[0] == "replace")
    assert sum(1 for e in events[:first_replace] if e[0] == "sync") == 2  # both temporary files flushed first
    assert events[-1] == ("sync", tmp_path.name)  # the folder once, at the end
    assert (tmp_path / "keep.txt").read_text() == "new" and (tmp_path / "two.txt").read_text() == "2"

    def boom(p):
        with open(p, "wb") as fh:
            fh.write(b"half")
        raise RuntimeError("write failed")

    with pytest.raises(RuntimeError):
        atomic.atomic_write_files([(tmp_path / "keep.txt", atomic.bytes_writer(b"newer")), (tmp_path / "bad.txt", boom)])
    assert (tmp_path / "keep.txt").read_text() == "new"  # nothing renamed: the failure came before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "two.txt"]  # no temporary file left
    with pytest.raises(RuntimeError):
        atomic.atomic_write(tmp_path / "staged.txt", boom, staged=True)
    assert not (tmp_path / "staged.txt").exists()  # a failed staged write leaves no partial file


def test_the_store_is_the_only_code_that_knows_run_folder_paths(tmp_path):
    """ResultStore's accessors (run_file, read_run_json, read_run_table, failures, read_table) give a
    run's files by key; no module outside sweep/store.py (and the report, which its own helper
    moves onto run_file) builds ``runs/<key>`` or ``failed/<key>`` paths itself."""
    import re

    from twinsweep.sweep.store import ResultStore

    store = ResultStore(tmp_path / "out").create()
    d = store.run_dir("k1")
    d.mkdir()
    (d / "stats.json").write_text('{"system": {"wait_mean_s": 3.0}}')
    pd.DataFrame({"time": [0, 60], "facility_power_w": [1.0, 2.0]}).to_parquet(d / "timeline.parquet")
    assert store.run_file("k1", "stats.json") == tmp_path / "out" / "runs" / "k1" / "stats.json"
    assert store.read_run_json("k1", "stats.json") == {"system": {"wait_mean_s": 3.0}}
    assert store.read_run_table("k1", "timeline.parquet", columns=["time"])["time"].tolist() == [0, 60]
    store.record_failure("k2", "boom", None, 1)
    store.record_failure("k3", "bang", None, 2)
    assert {k: v["error"] for k, v in store.failures().items()} == {"k2": "boom", "k3": "bang"}
    assert list(store.failures(["k3", "zz"])) == ["k3"]
    assert store.failure_dir("k2") == tmp_path / "out" / "failed" / "k2"
    with pytest.raises(FileNotFoundError, match="no sweep results here"):
        store.read_table()

    root = Path(__file__).resolve().parent.parent
    pat = re.compile(r"""/ ["'](runs|failed)["'] /|["'](runs|failed)/["']\s*\+""")
    allowed = {"sweep/store.py", "sweep/report.py"}  # report.py: the report helper's stream
    found = [f"{f.relative_to(root)}:{n}: {line.strip()}"
             for folder in ("core", "sweep", "backends") for f in sorted((root / folder).rglob("*.py"))
             if f.relative_to(root).as_posix() not in allowed
             for n, line in enumerate(f.read_text().splitlines(), 1) if pat.search(line)]
    assert not found, "run-folder paths built outside the result store:\n  " + "\n  ".join(found)
