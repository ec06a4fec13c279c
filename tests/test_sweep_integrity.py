"""Issue 11, results that cannot be skewed: a damaged run folder is set aside and run again, never
dropped silently; status/report never count what they cannot read; incomplete blocks are not
ranked; a full disk is one clear line; the output folder is the user's; status never unpickles."""

from __future__ import annotations

import errno
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from twinsweep.core.errors import ConfigError, DiskFullError
from twinsweep.sweep.api import report, run_sweep, sweep_status
from twinsweep.sweep.cli import main
from twinsweep.sweep.store import ResultStore, check_run_dir
from test_sweep_support import write_spec

# 1 seed x fcfs/sjf x none/easy = 4 runs: the smallest sweep with two variants per block axis


def _sweep(tmp_path, **kw):
    spec = write_spec(tmp_path, seeds=kw.pop("seeds", 1), **kw)
    lines: list[str] = []
    res = run_sweep(spec, backend="local", report=False, log=lines.append)
    return spec, res, lines


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def test_truncated_stats_json_is_quarantined_and_run_again(tmp_path):
    spec, res, _ = _sweep(tmp_path)
    assert res.ran == res.planned == 4
    out = tmp_path / "out"
    victim = sorted(p.name for p in (out / "runs").iterdir())[1]
    before = (out / "runs" / victim / "stats.json").read_bytes()
    _truncate(out / "runs" / victim / "stats.json")

    lines: list[str] = []
    again = run_sweep(spec, backend="local", report=False, log=lines.append)
    assert again.skipped == 3 and again.ran == 1  # the damaged run counts as missing and runs again
    assert (out / "runs" / victim / "stats.json").read_bytes() == before  # same run, same bytes
    assert len(pd.read_parquet(out / "runs.parquet")) == 4  # no row lost
    moved = list((out / "quarantine").iterdir())
    assert len(moved) == 1 and moved[0].name.startswith(victim)
    assert "stats.json" in (moved[0] / "reason.txt").read_text()
    named = [ln for ln in lines if victim in ln]
    assert len(named) == 1 and "stats.json" in named[0] and "quarantine" in named[0]


def test_truncated_timeline_is_never_counted_by_status_or_report(tmp_path, capsys):
    spec, res, _ = _sweep(tmp_path)
    out = tmp_path / "out"
    victim = sorted(p.name for p in (out / "runs").iterdir())[0]
    _truncate(out / "runs" / victim / "timeline.parquet", 0.7)
    assert "timeline.parquet" in check_run_dir(out / "runs" / victim)

    st = sweep_status(out, rebuild=False)
    assert st["done"] == 3 and st["missing"] == 1 and not st["complete"]
    assert [d["key"] for d in st["damaged"]] == [victim]

    assert main(["report", str(out)]) == 0  # no Arrow traceback: the run is set aside, the page built
    err = capsys.readouterr().err
    assert victim in err and "timeline.parquet" in err and "Traceback" not in err
    table = pd.read_parquet(out / "runs.parquet")
    assert victim not in set(table["key"]) and len(table) == 3
    assert not (out / "runs" / victim).exists() and any((out / "quarantine").iterdir())
    page = (out / "report" / "index.html").read_text()
    assert "left out of the rankings" in page  # the block that lost a variant is not ranked


def test_status_exit_says_complete_in_progress_or_to_run_again(tmp_path, capsys):
    """0 when every planned run is complete; 3 while a sweep holds the folder's lock (in progress);
    1 when runs are missing and nothing runs them (the sweep must be run again)."""
    import fcntl
    import shutil

    spec, res, _ = _sweep(tmp_path)
    out = tmp_path / "out"
    assert main(["status", str(out)]) == 0
    shutil.rmtree(sorted((out / "runs").iterdir())[0])
    assert main(["status", str(out)]) == 1
    assert "not complete and nothing queued" in capsys.readouterr().out
    with open(out / ".lock", "w") as fh:  # a sweep writing here holds this lock
        fh.write("otherhost:4242")
        fh.flush()
        fcntl.flock(fh, fcntl.LOCK_EX)
        rc = subprocess.run([sys.executable, "-m", "twinsweep.sweep.cli", "status", str(out)],
                            capture_output=True, text=True)
    assert rc.returncode == 3, rc.stdout + rc.stderr
    assert "a sweep is writing here: otherhost:4242" in rc.stdout and "in progress" in rc.stdout


def test_older_manifest_schema_counts_as_missing(tmp_path):
    spec, res, _ = _sweep(tmp_path)
    out = tmp_path / "out"
    victim = sorted(p.name for p in (out / "runs").iterdir())[2]
    man = out / "runs" / victim / "manifest.json"
    doc = json.loads(man.read_text())
    doc["schema_version"] = 1
    man.write_text(json.dumps(doc))
    assert "schema_version" in check_run_dir(out / "runs" / victim)
    again = run_sweep(spec, backend="local", report=False, log=lambda m: None)
    assert again.ran == 1 and json.loads(man.read_text())["schema_version"] == 2


def test_check_run_dir_row_counts_and_missing_files(tmp_path):
    _sweep(tmp_path)
    runs = tmp_path / "out" / "runs"
    d = sorted(runs.iterdir())[0]
    assert check_run_dir(d) is None
    stats = json.loads((d / "stats.json").read_text())
    stats["counts"]["jobs_in_window"] += 1
    (d / "stats.json").write_text(json.dumps(stats))
    assert "jobs.parquet" in check_run_dir(d) and "rows" in check_run_dir(d)
    d2 = sorted(runs.iterdir())[1]
    (d2 / "sweep.json").unlink()
    assert "missing sweep.json" == check_run_dir(d2)
    # valid JSON that is not a run's statistics (helper-57: {"system": {}} counted as complete)
    d3 = sorted(runs.iterdir())[2]
    good = json.loads((d3 / "stats.json").read_text())
    (d3 / "stats.json").write_text(json.dumps({"system": {}}))
    assert check_run_dir(d3) == "stats.json: no counts.jobs_in_window (not the statistics of a complete run)"
    (d3 / "stats.json").write_text(json.dumps(good | {"system": {}}))
    assert check_run_dir(d3) == "stats.json: no system.wait_mean_s (not the statistics of a complete run)"
    older = good | {"system": {k: v for k, v in good["system"].items() if k != "wait_censored_max_s"}}
    (d3 / "stats.json").write_text(json.dumps(older))
    assert check_run_dir(d3) is None  # a metric added later may be absent from an earlier run's


def test_report_ranks_only_complete_blocks_unless_asked(tmp_path):
    spec = write_spec(tmp_path, seeds=2)
    run_sweep(spec, backend="local", report=False)
    out = tmp_path / "out"
    plan = pd.read_csv(out / "plan.csv", dtype=str)
    gone = plan[(plan["seed"] == "1") & (plan["policy"] == "sjf") & (plan["backfill"] == "easy")]["key"].iloc[0]
    import shutil

    shutil.rmtree(out / "runs" / gone)  # as if that run had failed
    report(out)
    ranks = pd.read_csv(out / "report" / "ranks.csv")
    assert set(ranks["blocks"]) == {1}  # seed 1 left out: a missing variant would rank last there
    page = (out / "report" / "index.html").read_text()
    assert "1 block(s) left out of the rankings" in page and "seed 1: 1 of 4 missing" in page
    report(out, include_incomplete=True)
    ranks = pd.read_csv(out / "report" / "ranks.csv")
    assert set(ranks["blocks"]) == {2}
    page = (out / "report" / "index.html").read_text()
    assert "Incomplete blocks are ranked" in page


# ------------------------------------------------------------------------------------- disk full
def test_disk_full_is_one_line_and_stops_the_sweep(tmp_path, monkeypatch, capsys):
    import twinsweep.core.run as run_mod

    real = run_mod.write_run
    calls = {"n": 0}

    def full_after_two(result, out_dir, timing=True, **kw):
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(out_dir))
        return real(result, out_dir, timing, **kw)

    monkeypatch.setattr(run_mod, "write_run", full_after_two)
    spec = write_spec(tmp_path, seeds=2)
    rc = main(["sweep", str(spec), "--backend", "local", "--no-report", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "disk full" in err[0] and "Traceback" not in err[0], err
    out = tmp_path / "out"
    assert calls["n"] == 3  # the sweep stopped at the first full disk
    assert len([p for p in (out / "runs").iterdir()]) == 2
    assert not any((out / "failed").iterdir())  # not recorded as a failed run
    info = ResultStore(out).table_info()
    assert info["complete"] is False and info["interrupted"] is True and info["runs"] == 2


def test_record_failure_on_a_full_disk_raises_disk_full(tmp_path, monkeypatch):
    store = ResultStore(tmp_path / "o").create()
    import twinsweep.core.atomic as atomic

    def no_space(path, write, sync=True):
        raise atomic.disk_full_error(path, OSError(errno.ENOSPC, "No space left on device"))

    monkeypatch.setattr("twinsweep.sweep.store.atomic_write_text", lambda p, t, sync=True: no_space(p, None))
    with pytest.raises(DiskFullError, match="disk full: cannot write .*error.json"):
        store.record_failure("k", "boom", None, 1)


def test_atomic_write_leaves_the_old_file_on_a_full_disk(tmp_path):
    from twinsweep.core.atomic import TMP_MARK, atomic_write, atomic_write_text

    target = tmp_path / "plan.csv"
    atomic_write_text(target, "key\na\nb\n")

    def half_then_full(p):
        Path(p).write_text("key\na")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(DiskFullError, match="plan.csv"):
        atomic_write(target, half_then_full)
    assert target.read_text() == "key\na\nb\n"
    assert not [p for p in tmp_path.iterdir() if TMP_MARK in p.name]


def _mount_tmpfs(path: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    path.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def test_real_full_disk_on_a_tiny_tmpfs(tmp_path, capsys):
    mnt = tmp_path / "small"
    if not _mount_tmpfs(mnt, "160k"):
        pytest.skip("cannot mount a tmpfs here (needs root); the monkeypatched test covers ENOSPC")
    try:
        spec = write_spec(tmp_path, seeds=3, n_jobs=200)
        rc = main(["sweep", str(spec), "--backend", "local", "--no-report", "--no-progress", "--out", str(mnt / "o")])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "disk full" in err[0], err
        o = mnt / "o"
        if (o / "plan.csv").exists():  # every file there is complete
            assert len(pd.read_csv(o / "plan.csv")) == 12
        for d in (o / "runs").iterdir():
            assert d.name.startswith(".") or check_run_dir(d) is None
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# ------------------------------------------------------------------------------ the user's folder
def test_run_out_checks_before_simulating(tmp_path, monkeypatch, capsys):
    import twinsweep.core.run as run_mod

    monkeypatch.setattr(run_mod, "simulate", lambda *a, **k: pytest.fail("simulated before checking --out"))
    write_spec(tmp_path)
    trace = tmp_path / "tiny.swf"
    afile = tmp_path / "a-file"
    afile.write_text("mine")
    base = ["run", "--data", str(trace), "--policy", "fcfs", "--quiet"]
    assert main(base + ["--out", str(afile)]) == 2
    assert "is a file" in capsys.readouterr().err
    assert main(base + ["--out", str(afile / "sub")]) == 2  # cannot be created (a file is in the way)
    assert "cannot create" in capsys.readouterr().err
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    assert main(base + ["--out", str(foreign)]) == 2
    err = capsys.readouterr().err
    assert "not a twinsweep run" in err and "thesis.tex" in err and "--force" in err
    assert not (tmp_path / "new").exists()


def test_run_out_force_and_rerun_into_a_run_folder(tmp_path):
    write_spec(tmp_path)
    trace = tmp_path / "tiny.swf"
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    base = ["run", "--data", str(trace), "--policy", "fcfs", "--quiet"]
    assert main(base + ["--out", str(foreign), "--force"]) == 0
    assert (foreign / "thesis.tex").read_text() == "precious" and (foreign / "stats.json").exists()
    assert main(base + ["--out", str(tmp_path / "r")]) == 0
    assert main(base + ["--out", str(tmp_path / "r")]) == 0  # an earlier run's folder: replaced


def test_sweep_keeps_the_users_files_and_its_study(tmp_path):
    spec = write_spec(tmp_path, seeds=1)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".tmp-my-notes").write_text("mine")  # a name the old cleaner deleted
    run_sweep(spec, backend="local", report=False)
    assert (out / ".tmp-my-notes").read_text() == "mine"
    assert not (out / ".lock").exists()  # no stale lock after a normal end
    (tmp_path / "b").mkdir()
    other = write_spec(tmp_path / "b", name="other", seeds=1)
    with pytest.raises(ConfigError, match="belongs to study 'tiny'"):
        run_sweep(other, out=out, backend="local", report=False)
    afile = tmp_path / "f.txt"
    afile.write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        run_sweep(spec, out=afile, backend="local", report=False)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "plan.csv").write_text("someone's plan")
    with pytest.raises(ConfigError, match="not a twinsweep results folder"):
        run_sweep(spec, out=foreign, backend="local", report=False)
    assert (foreign / "plan.csv").read_text() == "someone's plan"


def test_interrupted_sweep_marks_the_table_partial(tmp_path, capsys):
    from test_sweep_support import interrupting_run

    spec = write_spec(tmp_path, seeds=2)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, backend="local", report=False, run_fn=interrupting_run)
    out = tmp_path / "out"
    info = ResultStore(out).table_info()
    assert info == {"complete": False, "interrupted": True, "planned": 8, "runs": 2}
    assert not (out / ".lock").exists()
    assert main(["status", str(out)]) == 1  # not complete, nothing queued: exit 1 (0 only when complete)
    assert "runs.parquet is partial: 2 of 8 planned runs (the sweep was interrupted)" in capsys.readouterr().out
    run_sweep(spec, backend="local", report=False)
    assert ResultStore(out).table_info()["complete"] is True


# --------------------------------------------------------------------------- status never unpickles
class _Boom:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ['TWINSWEEP_TEST_MARKER']}",))


def test_status_never_unpickles_files_of_the_results_folder(tmp_path, monkeypatch, capsys):
    spec, res, _ = _sweep(tmp_path)
    out = tmp_path / "out"
    marker = tmp_path / "PWNED"
    monkeypatch.setenv("TWINSWEEP_TEST_MARKER", str(marker))
    sub = out / "slurm" / "20240101-000000-abcdef"
    (sub / "out").mkdir(parents=True)
    key = "deadbeefdeadbeef"
    for name in (f"{key}.pkl", f"{key}.json"):
        (sub / "out" / name).write_bytes(pickle.dumps(_Boom()))
    (sub / "submission.json").write_text(json.dumps({
        "id": sub.name, "created": "2024-01-01T00:00:00+00:00", "tasks": 1, "arrays": [{"job_id": "1"}],
        "chunks": [{"index": 0, "slurm_id": "1_0", "keys": [key], "stderr": "", "stdout": ""}]}))
    (out / "evil.pkl").write_bytes(pickle.dumps(_Boom()))
    assert main(["status", str(out)]) == 0
    capsys.readouterr()
    assert not marker.exists()


def test_atomic_move_renames_durably_and_names_the_file_on_a_full_disk(tmp_path, monkeypatch):
    from twinsweep.core import atomic

    part, final = tmp_path / "f.part", tmp_path / "f.swf"
    final.write_text("old")
    part.write_text("new")
    synced = []
    monkeypatch.setattr(atomic, "fsync_path", lambda p: synced.append(Path(p)))
    assert atomic.atomic_move(part, final) == final
    assert final.read_text() == "new" and not part.exists()
    assert synced == [part, tmp_path]  # the file before the rename, its folder after

    part.write_text("newer")

    def full(a, b):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", full)
    with pytest.raises(DiskFullError, match="f.swf"):
        atomic.atomic_move(part, final)
    assert final.read_text() == "new"


#: Writes that do not go through core.atomic, each with why a half-written file cannot be read.
_DIRECT_WRITES = {
    ("core/fetch.py", "open(tmp, \"wb\")"): "fills atomic_write's temporary file",
    ("sweep/runner.py", "(tmp / SWEEP_JSON).write_text("): "inside a run folder that commit_run_dir renames when whole",
    ("sweep/store.py", "(dest / \"reason.txt\").write_text("): "a note beside a quarantined run, best effort",
    ("backends/local.py", "os.fdopen(fd, \"wb\")"): "a private mkstemp file, read only by workers started after it",
    ("sweep/api.py", "store.write_text("): "ResultStore.write_text, which is atomic_write_text",
}


def test_every_file_write_goes_through_core_atomic():
    """One atomic-write helper (issue 12, item 6): no module writes a file under its final name
    (``write_text``, ``write_bytes``, ``open(..., "w")``, ``savefig(path)``, ``to_csv(path)``)
    except the few above, whose reason is stated; anything else must use core/atomic.py."""
    import re

    root = Path(__file__).resolve().parent.parent
    pat = re.compile(r"\.write_text\(|\.write_bytes\(|open\([^)]*[\"'][wax]b?[\"']|\.savefig\((?!buf\b)[^)]*"
                     r"|\.to_csv\((?!index=)|\.to_parquet\(|os\.fdopen\([^)]*[\"']w")
    found = []
    for folder in ("core", "sweep", "backends"):
        for f in sorted((root / folder).rglob("*.py")):
            rel = f.relative_to(root).as_posix()
            if rel == "core/atomic.py":
                continue
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if not pat.search(line) or "atomic_write" in line or "lambda p:" in line:
                    continue
                if any(rel == r and s in line for r, s in _DIRECT_WRITES):
                    continue
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "writes outside core/atomic.py:\n  " + "\n  ".join(found)


def test_an_output_folder_refused_is_named_by_where_it_came_from(tmp_path):
    """The output folder an error is about is named by the key that gave it: ``--out`` (``out=``)
    when the caller gave one, else the spec file's ``study.output``, which the user has to edit."""
    spec = write_spec(tmp_path, seeds=1)
    run_sweep(spec, backend="local", report=False)
    (tmp_path / "b").mkdir()
    other = write_spec(tmp_path / "b", name="other", seeds=1)
    other.write_text(other.read_text().replace(str(tmp_path / "b" / "out"), str(tmp_path / "out")))
    with pytest.raises(ConfigError) as ei:
        run_sweep(other, backend="local", report=False)
    assert str(ei.value).startswith(f"{other}: study.output {tmp_path / 'out'}: this results folder belongs to study "
                                    "'tiny' (study.json); the spec is study 'other'")
    with pytest.raises(ConfigError) as ei:
        run_sweep(other, out=tmp_path / "out", backend="local", report=False)
    assert str(ei.value).startswith(f"--out {tmp_path / 'out'}: this results folder belongs to study 'tiny'")
    afile = tmp_path / "f.txt"
    afile.write_text("x")
    other.write_text(other.read_text().replace(str(tmp_path / "out"), str(afile)))
    with pytest.raises(ConfigError) as ei:
        run_sweep(other, backend="local", report=False)
    assert str(ei.value) == f"{other}: study.output {afile}: is a file, not a folder; give a folder for the results"


def test_status_of_a_sweep_folder_without_its_plan_says_what_is_missing(tmp_path, capsys):
    """A results folder whose plan.csv was deleted is not "no sweep here": status says which file is
    missing and how to rewrite it, and the sweep it names does so without running anything again."""
    spec = write_spec(tmp_path, seeds=1)
    run_sweep(spec, backend="local", report=False)
    out = tmp_path / "out"
    (out / "plan.csv").unlink()
    assert main(["status", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out}: a sweep's results folder (study.json) without its plan.csv, which lists the planned runs; run the " \
           f"sweep again to rewrite it (`twinsweep sweep SPEC --out {out}` runs only what is missing; a copy of the spec " \
           f"is {out / 'study.toml'})" in err
    res = run_sweep(spec, out=out, backend="local", report=False)
    assert (res.ran, res.skipped) == (0, res.planned) and (out / "plan.csv").exists()
    assert main(["status", str(out)]) == 0


def test_a_warning_of_many_runs_is_said_once_with_their_count(tmp_path):
    """The replay runs of a 16-node machine whose log uses more nodes each raise the same
    over-subscription warning: the sweep says each distinct text once, after the runs, as a
    warning of its own category counting the runs (helper-56: a sweep printed it once per run and collection, in
    Python's FILE:LINE format), and no run's own warning reaches the caller besides."""
    import warnings as _w

    spec = write_spec(tmp_path, seeds=2, policies=("fcfs", "replay"), backfills=("none",), n_jobs=30)
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        run_sweep(spec, backend="local", report=False, log=lambda m: None)
    texts = [str(w.message) for w in caught]
    over = [t for t in texts if "uses more than the system's" in t]
    from twinsweep.core.run import ReplayOversubscribedWarning

    assert over and all(w.category is ReplayOversubscribedWarning  # its own category: filters on it still apply
                        for w in caught if "uses more than the system's" in str(w.message))
    assert all(t.split(": ", 1)[0] in {"1 run(s)", "2 run(s)"} for t in over)
    assert len(over) == len(set(over)) and sum(int(t.split(" ", 1)[0]) for t in over) == 2  # the 2 replay runs


def test_the_command_line_says_a_run_warning_in_one_line_once(tmp_path):
    """`twinsweep sweep` as a process: the over-subscription warning of the replay runs is one
    line, 'twinsweep sweep: warning: N run(s): …', without Python's FILE:LINE and source line."""
    spec = write_spec(tmp_path, seeds=2, policies=("fcfs", "replay"), backfills=("none",), n_jobs=30)
    p = subprocess.run([sys.executable, "-m", "twinsweep", "sweep", str(spec), "--backend", "local", "--no-report",
                        "--no-progress"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "uses more than the system's" in ln]
    assert len(lines) >= 1 and all(ln.startswith("twinsweep sweep: warning: ") for ln in lines), p.stderr
    assert "ReplayOversubscribedWarning" not in p.stderr and ".py:" not in p.stderr


def test_report_warns_when_the_folder_spec_copy_was_edited(tmp_path):
    """The report reads study.json; an edit of the folder's study.toml (helper-56 added a [report]
    table there and saw nothing change) is said, with the command that applies it, which reuses
    every run."""
    spec, res, _ = _sweep(tmp_path)
    copy = res.out / "study.toml"
    lines: list[str] = []
    report(res.out, log=lines.append)
    assert not any("was edited" in ln for ln in lines)
    copy.write_text(copy.read_text() + "\n# an edit\n")
    report(res.out, log=lines.append)
    (said,) = [ln for ln in lines if "was edited" in ln]
    assert said == (f"{copy} was edited after the sweep wrote it: the report reads study.json (the spec as the sweep "
                    f"ran it), not the edit; to apply an edit, run the sweep with the edited spec, `twinsweep sweep "
                    f"SPEC --out {res.out}` (the sweep ran {spec}; every complete run is reused, and a change of the "
                    "plan is refused, naming it)")
    again = run_sweep(spec, out=res.out, backend="local", report=False, log=lambda m: None)
    assert again.ran == 0 and again.skipped == res.ran
    lines.clear()
    report(res.out, log=lines.append)
    assert not any("was edited" in ln for ln in lines)


def test_a_runs_warnings_reach_someone_whether_it_fails_or_no_driver_collects_them(monkeypatch, tmp_path):
    """execute_run returns its run's warnings only when the driver collects them
    (payload["collect_warnings"], an attached sweep); otherwise (twinsweep tune, a detached Slurm
    array task), and always when the run fails, it lets them through where it runs (helper-58:
    they were dropped)."""
    import warnings as _w

    from twinsweep.core import run as core_run
    from twinsweep.sweep.runner import execute_run

    def fake(cfg, workload=None, system=None):
        _w.warn("the site's price table has no row for this month", UserWarning)
        raise ValueError("boom")

    monkeypatch.setattr(core_run, "simulate", fake)
    for collect in (True, False):
        payload = {"key": "k", "config": None, "runs_dir": str(tmp_path), "ship": False, "collect_warnings": collect}
        with _w.catch_warnings(record=True) as caught:
            _w.simplefilter("always")
            with pytest.raises(ValueError, match="boom"):
                execute_run(payload, None)
        assert [str(w.message) for w in caught] == ["the site's price table has no row for this month"]
