"""A results folder's study identity, windows outside a trace in a sweep, durable run commits and
the driver's check of Slurm run folders (issue 11, items 2, 3, 6, 7, 9). Tiny traces, local backend."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from twinsweep.core.errors import ConfigError
from twinsweep.sweep.api import SweepError, dry_run, run_sweep

from test_sweep_support import write_spec


# ------------------------------------------------------------------ windows outside the trace (3)
def test_a_sweep_refuses_a_window_after_the_trace_at_spec_load(tmp_path):
    spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none",),
                      windows='[{ name = "ok", start = "0s", duration = "30m" }, { name = "late", start = "400d", duration = "1d" }]')
    with pytest.raises(ConfigError, match=r"dataset 'tiny'.*window 'late'.*last job has ended"):
        dry_run(spec)
    with pytest.raises(ConfigError, match="window 'late'"):
        run_sweep(spec, report=False)
    assert not (tmp_path / "out" / "runs").exists() or not any((tmp_path / "out" / "runs").iterdir())


def test_a_sweep_flags_windows_past_the_last_submission_in_runs_parquet(tmp_path):
    # write_swf submits 40 jobs within the first hour
    spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none",),
                      windows='[{ name = "in", start = "0s", duration = "10m" }, { name = "tail", start = "30m", duration = "1d" }]')
    lines: list[str] = []
    res = run_sweep(spec, report=False, log=lines.append)
    assert res.ran == 2 and not res.failed
    t = pd.read_parquet(tmp_path / "out" / "runs.parquet").set_index("window")
    assert t.loc["tail", "window_past_last_submit"] and not t.loc["in", "window_past_last_submit"]
    assert str(t["window_past_last_submit"].dtype) == "bool" and t["trace_last_submit_s"].notna().all()
    assert len([ln for ln in lines if "window 'tail'" in ln and "last submission" in ln]) == 1


# ------------------------------------------------------------------------- durable commits (6)
def test_every_run_file_is_fsynced_before_the_commit_rename(tmp_path, monkeypatch):
    events: list[tuple] = []
    real_fsync, real_replace, real_rename = os.fsync, os.replace, os.rename

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(a, b, *args, **kw):
        events.append(("replace", str(a), str(b)))
        return real_replace(a, b, *args, **kw)

    def rename(a, b, *args, **kw):
        events.append(("rename", str(a), str(b)))
        return real_rename(a, b, *args, **kw)

    spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none",))
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "rename", rename)
    run_sweep(spec, report=False)
    monkeypatch.undo()
    commits = [i for i, e in enumerate(events) if e[0] == "rename" and "/runs/.tmp-" in e[1]]
    assert len(commits) == 1
    c = commits[0]
    tmp_dir, final = events[c][1], events[c][2]
    files = sorted(os.listdir(final))
    assert "sweep.json" in files and "stats.json" in files
    for name in files:
        # each file's bytes are flushed before the one rename that commits the run (issue 11): either
        # written under its own name in the staging folder and fsynced there (core.atomic staged
        # writes, flushed together by commit_folder), or fsynced under a temporary name and then
        # moved onto its name by an atomic replace
        target = os.path.join(tmp_dir, name)
        synced = ("fsync", target) in events[:c]
        put = [i for i, e in enumerate(events[:c]) if e[0] == "replace" and e[2] == target]
        moved = bool(put) and any(e == ("fsync", events[put[-1]][1]) for e in events[:put[-1]])
        assert synced or moved, f"{name} was not fsynced before the commit rename"
    assert ("fsync", tmp_dir) in events[:c]  # the folder's entries, before the folder is renamed


# --------------------------------------------------------------------------- study identity (7)
def test_a_cut_down_spec_with_the_same_name_is_refused(tmp_path):
    spec = write_spec(tmp_path, seeds=2)
    res = run_sweep(spec, report=False)
    assert res.ran == 8
    study = json.loads((tmp_path / "out" / "study.json").read_text())
    assert study["plan_sha256"].startswith("sha256:") and study["plan"]["seeds"] == [0, 1]
    assert set(study["plan"]["grid"]) == {"policy", "backfill", "sample_period"}
    cut = tmp_path / "cut"
    cut.mkdir()
    cut_spec = write_spec(cut, seeds=2, policies=("fcfs",), trace=tmp_path / "tiny.swf")
    with pytest.raises(ConfigError, match=r"grid\.policy: \['sjf'\] removed"):
        run_sweep(cut_spec, out=tmp_path / "out", report=False)
    assert len(pd.read_parquet(tmp_path / "out" / "runs.parquet")) == 8  # the folder's table untouched
    # another trace under the same dataset name: named too
    other = tmp_path / "other"
    other.mkdir()
    from test_sweep_support import write_swf

    other_spec = write_spec(other, seeds=2, trace=write_swf(other / "t2.swf", seed=9))
    with pytest.raises(ConfigError, match=r"dataset tiny: trace"):
        run_sweep(other_spec, out=tmp_path / "out", report=False)
    # the explicit override makes the cut-down plan the folder's
    lines: list[str] = []
    res = run_sweep(cut_spec, out=tmp_path / "out", report=False, replace_plan=True, log=lines.append)
    assert res.planned == 4 and any("--replace-plan" in ln for ln in lines)
    assert json.loads((tmp_path / "out" / "study.json").read_text())["plan"]["grid"]["policy"] == ["fcfs"]


def test_adding_seeds_extends_a_finished_study(tmp_path):
    spec = write_spec(tmp_path, seeds=1)
    assert run_sweep(spec, report=False).ran == 4
    more = write_spec(tmp_path, seeds=2)
    lines: list[str] = []
    res = run_sweep(more, report=False, log=lines.append)
    assert res.skipped == 4 and res.ran == 4  # only the new seed's runs
    assert any("extends this folder's study" in ln and "seeds +[1]" in ln for ln in lines)


# --------------------------------------------------------------- Slurm run folders (2) and tune (9)
def test_a_slurm_task_ok_without_its_run_folder_stops_the_sweep(tmp_path, monkeypatch):
    """A Slurm array task that reports success while its run folder is not under the driver's
    results folder (a compute node writing elsewhere) stops the sweep: Slurm cannot ship files."""
    import twinsweep.backends.base as base
    from twinsweep.backends.base import Outcome
    from twinsweep.backends.slurm import SlurmBackend

    class NodeWritesElsewhere(SlurmBackend):
        """SlurmBackend with the cluster replaced: every task "succeeds" on node01 but writes nothing
        the driver sees (what submitit returns for a run written to the node's local disk)."""

        def validate(self):  # no cluster to check (the checks run before anything is written)
            return {}

        def _submit(self, tasks, fn, shared):
            return [t.key for t in tasks], None

        def _follow(self, refs):
            for key in refs:
                yield Outcome(key, True, {"key": key, "status": "written", "sim_s": 0.01}, worker="node01:4242")

    monkeypatch.setattr(base, "make_backend", lambda *a, **k: NodeWritesElsewhere(folder=tmp_path / "slurm"))
    spec = write_spec(tmp_path, seeds=1, policies=("fcfs",), backfills=("none",))
    with pytest.raises(SweepError, match=r"finished on node01:4242 but .*runs/.* does not exist here"):
        run_sweep(spec, report=False)
    info = json.loads(pq_info(tmp_path / "out" / "runs.parquet"))
    assert info["interrupted"] and info["runs"] == 0


def pq_info(path):
    import pyarrow.parquet as pq

    return pq.read_schema(path).metadata[b"twinsweep"]


def test_tune_gives_the_local_pool_the_results_folders_cache(tmp_path, monkeypatch):
    import twinsweep.backends.base as base

    from test_tune import _spec

    seen = []
    real = base.make_backend

    def spy(name, **kw):
        seen.append((name, kw))
        return real(name, **kw)

    monkeypatch.setattr(base, "make_backend", spy)
    from twinsweep.sweep.tune import run_tune

    run_tune(_spec(tmp_path, trials=1), test=False)
    assert seen and all(kw.get("cache_dir") == str(tmp_path / "out" / ".cache") for n, kw in seen if n == "local")


def test_a_round_hands_the_backend_a_sized_stream_of_tasks(tmp_path, monkeypatch):
    """The sweep gives its backend the round's tasks as a sized collection (so that ``ray`` sizes
    its batches from the number of runs) whose tasks are built as they are taken, one per missing
    run, each naming its dataset; the runs complete as before."""
    import twinsweep.backends.base as base
    from twinsweep.backends.local import LocalBackend

    seen = []

    class Spy(LocalBackend):
        def run(self, tasks, fn, shared=None):
            seen.append(len(tasks))
            keys = []
            for t in tasks:
                keys.append(t.key)
                assert t.payload["key"] == t.key and t.shared in shared
            assert len(keys) == seen[-1] == len(set(keys))
            yield from super().run(list(tasks), fn, shared)  # walked again: the same tasks

    monkeypatch.setattr(base, "make_backend", lambda *a, **k: Spy(workers=1))
    spec = write_spec(tmp_path, seeds=1)
    res = run_sweep(spec, report=False)
    assert res.ran == res.planned == seen[0] and len(seen) == 1


def test_progress_lines_where_stderr_is_not_a_terminal(capsys):
    """progress="lines": one stderr line each time another tenth of the runs has ended (and a
    retry round), counted by hand for 7 runs; nothing from the disabled form."""
    from twinsweep.sweep.progress import SweepProgress

    with SweepProgress(7, "s", enabled="lines") as bar:
        for k in range(1, 8):
            bar.update(done=k - (k == 7), failed=int(k == 7))
        bar.retry_round(1, 2)
    lines = capsys.readouterr().err.splitlines()
    # 7 runs: each run ends another tenth (1/7 = 14 %, ..., 7/7)
    assert [ln.split(", ")[0] for ln in lines[:7]] == [f"s: {k}/7 runs ({100 * k // 7} %)" for k in range(1, 8)]
    assert "1 failed" in lines[6] and lines[7] == "s: retrying 1 failed run(s), attempt 2"
    with SweepProgress(3, "off", enabled=False) as bar:
        bar.update(done=3)
    assert capsys.readouterr().err == ""
    with SweepProgress(100, "big", enabled="lines") as bar:
        for k in range(1, 101):
            bar.update(done=k)
    assert len(capsys.readouterr().err.splitlines()) == 10
    with pytest.raises(ValueError, match="progress"):
        SweepProgress(1, enabled="yes")
