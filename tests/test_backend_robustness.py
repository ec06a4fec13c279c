"""Issue 11, items 2 and 9: results reach the driver whatever the workers' working directory or
filesystem (a real local Ray cluster joined with --address, a backend double without a shared
folder), one crashed pool worker fails only its own run, and the pool's dataset file lives in the
results folder (reused, never left in the system's temporary folder)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from twinsweep.backends.base import Task
from twinsweep.backends.local import LocalBackend
from twinsweep.sweep.api import SweepError, run_sweep
from test_sweep_support import run_files, write_spec, write_swf

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def crash_on_sjf_easy_seed1(payload, shared):
    """Kills its worker process for one run (sjf + easy, seed 1); the others run normally."""
    from twinsweep.sweep.runner import execute_run

    sw = payload["sweep"]
    if sw["seed"] == 1 and sw["axes"].get("policy") == "sjf" and sw["axes"].get("backfill") == "easy":
        time.sleep(0.3)  # let the other worker be busy with an innocent run
        os._exit(3)
    return execute_run(payload, shared)


def test_a_crashed_worker_fails_only_its_own_run(tmp_path):
    spec = write_spec(tmp_path, seeds=3, retries=0)
    res = run_sweep(spec, backend="local", workers=2, report=False, run_fn=crash_on_sjf_easy_seed1)
    assert res.planned == 12 and res.ran == 11
    assert len(res.failed) == 1
    plan = pd.read_csv(tmp_path / "out" / "plan.csv", dtype=str)
    culprit = plan[(plan.seed == "1") & (plan.policy == "sjf") & (plan.backfill == "easy")]["key"].iloc[0]
    assert res.failed == [culprit]
    err = (tmp_path / "out" / "failed" / culprit / "error.json").read_text()
    assert "WorkerDied" in err and "exited with code 3" in err
    assert list((tmp_path / "out" / ".cache").glob("shared-*.pkl"))  # kept for the next sweep while runs are missing


def _double(payload, shared):
    return {"value": payload}


def test_pool_dataset_file_lives_in_the_cache_folder_and_is_reused(tmp_path):
    cache = tmp_path / "out" / ".cache"
    tmp_before = set(Path(tempfile.gettempdir()).glob("twinsweep-shared-*"))
    tasks = [Task(f"t{i}", i, "ds") for i in range(4)]
    with LocalBackend(workers=2, cache_dir=cache) as b:
        assert sorted(o.result["value"] for o in b.run(tasks, _double, {"ds": list(range(1000))})) == [0, 1, 2, 3]
    files = list(cache.glob("shared-*.pkl"))
    assert len(files) == 1  # kept where a kill -9 would leave it: inside the results folder
    mtime = files[0].stat().st_mtime_ns
    with LocalBackend(workers=2, cache_dir=cache) as b:
        list(b.run(tasks, _double, {"ds": list(range(1000))}))
    assert files[0].stat().st_mtime_ns == mtime  # same content: reused, not written again
    files[0].write_bytes(b"tampered")
    with LocalBackend(workers=2, cache_dir=cache) as b:  # a file that does not hash to its name is replaced
        assert len(list(b.run(tasks, _double, {"ds": list(range(1000))}))) == 4
    with LocalBackend(workers=2, cache_dir=cache) as b:  # another dataset: the old file goes
        list(b.run(tasks, _double, {"ds": [1, 2]}))
    assert len(list(cache.glob("shared-*.pkl"))) == 1
    # nothing of ours left in the system's temporary folder (files another twinsweep process on the
    # machine makes or removes meanwhile are not this test's business)
    assert not set(Path(tempfile.gettempdir()).glob("twinsweep-shared-*")) - tmp_before


def test_sweep_with_a_pool_keeps_nothing_in_tmp(tmp_path):
    tmp_before = set(Path(tempfile.gettempdir()).glob("twinsweep-shared-*"))
    spec = write_spec(tmp_path, seeds=1)
    res = run_sweep(spec, backend="local", workers=2, report=False)
    assert res.ran == 4 and not res.failed
    assert not (tmp_path / "out" / ".cache").exists()  # all runs in: the dataset file is removed
    # nothing of ours left in the system's temporary folder (files another twinsweep process on the
    # machine makes or removes meanwhile are not this test's business)
    assert not set(Path(tempfile.gettempdir()).glob("twinsweep-shared-*")) - tmp_before


# ----------------------------------------------------------------------- workers that see elsewhere
class _ElsewhereBackend(LocalBackend):
    """A backend double whose workers write into their own filesystem (``elsewhere``), as Ray
    workers on machines without the driver's folder would; it can ship files back like Ray."""

    ships_files = True

    def __init__(self, elsewhere: Path, ships: bool):
        super().__init__(workers=1)
        self.elsewhere = elsewhere
        self.ships_files = ships

    def run(self, tasks, fn, shared=None):
        def moved(task):
            p = dict(task.payload)
            if not p.get("ship"):
                p["runs_dir"] = str(self.elsewhere / "runs")
            return Task(task.key, p, task.shared)

        return super().run((moved(t) for t in tasks), fn, shared)


def test_workers_without_the_results_folder_ship_their_files(tmp_path, monkeypatch):
    import twinsweep.backends.base as base

    elsewhere = tmp_path / "worker-disk"
    monkeypatch.setattr(base, "make_backend", lambda *a, **k: _ElsewhereBackend(elsewhere, ships=True))
    trace = write_swf(tmp_path / "tiny.swf")
    spec = write_spec(tmp_path, seeds=2, trace=trace)
    lines: list[str] = []
    res = run_sweep(spec, backend="local", report=False, log=lines.append)
    assert res.ran == 8 and not res.failed
    table = pd.read_parquet(tmp_path / "out" / "runs.parquet")
    assert len(table) == 8
    assert len([ln for ln in lines if "send their files back" in ln]) == 1
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    monkeypatch.undo()
    ref = run_sweep(write_spec(ref_dir, seeds=2, trace=trace), backend="local", report=False)
    assert ref.ran == 8
    assert run_files(tmp_path / "out") == run_files(ref_dir / "out")  # shipped runs: the same bytes


def test_workers_without_the_results_folder_fail_fast_without_shipping(tmp_path, monkeypatch, capsys):
    import twinsweep.backends.base as base

    monkeypatch.setattr(base, "make_backend", lambda *a, **k: _ElsewhereBackend(tmp_path / "w", ships=False))
    spec = write_spec(tmp_path, seeds=2)
    with pytest.raises(SweepError, match="do not see this results folder"):
        run_sweep(spec, backend="local", report=False)
    assert len(list((tmp_path / "w" / "runs").iterdir())) == 1  # stopped at the first run


# A Slurm task that reports ok without its run folder: tests/test_sweep_identity.py::
# test_a_slurm_task_ok_without_its_run_folder_stops_the_sweep (a real SweepError, not a class attribute).


# ------------------------------------------------------------------------------ a real Ray cluster
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reset_ray_auth() -> None:
    try:
        from ray._private.authentication_test_utils import reset_auth_token_state
    except ImportError:  # a Ray without token authentication
        return
    reset_auth_token_state()


def _kill_tree(proc: subprocess.Popen, marker: str) -> None:
    """Stop the Ray processes this test started: its process group, then any process whose
    command line names this test's temporary folder (never anyone else's Ray)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_ray_cluster_with_address_and_relative_out(tmp_path, monkeypatch):
    """A Ray head started here (its workers' working directory is ray_home) and a driver in
    another directory with a relative --out: every run lands in the driver's folder."""
    pytest.importorskip("ray")
    ray_home, driver = tmp_path / "ray_home", tmp_path / "driver"
    ray_home.mkdir()
    driver.mkdir()
    rtmp = Path(tempfile.mkdtemp(prefix="r11ray-", dir="/tmp"))  # short: Ray's socket paths have a length limit
    port = _free_port()
    import secrets

    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}  # as slurm/ray-on-slurm.sbatch
    for k, v in auth.items():
        monkeypatch.setenv(k, v)
    _reset_ray_auth()  # Ray caches the token it read first (e.g. ~/.ray/auth_token in an earlier test)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]), RAY_USAGE_STATS_ENABLED="0", **auth)
    ray_bin = str(Path(sys.executable).with_name("ray"))
    head = subprocess.Popen([ray_bin, "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1",
                             "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={rtmp}",
                             "--disable-usage-stats"],
                            cwd=ray_home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        import ray

        deadline = time.monotonic() + 120
        while True:  # wait for the head's GCS port (a ray.init before it is up fails for good)
            if head.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the Ray head did not start")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        ray.init(address=f"127.0.0.1:{port}", log_to_driver=False, logging_level="error")
        spec = write_spec(tmp_path, seeds=1)
        monkeypatch.chdir(driver)
        res = run_sweep(spec, out="results", backend="ray", address=f"127.0.0.1:{port}", report=False)
        assert res.ran == 4 and not res.failed
        assert len(pd.read_parquet(driver / "results" / "runs.parquet")) == 4
        assert len(list((driver / "results" / "runs").iterdir())) == 4
        assert not (ray_home / "results").exists()  # nothing written against the workers' directory
    finally:
        try:
            import ray

            ray.shutdown()
        except Exception:  # noqa: BLE001
            pass
        _kill_tree(head, str(rtmp))
        monkeypatch.undo()
        _reset_ray_auth()
        import shutil

        shutil.rmtree(rtmp, ignore_errors=True)
