"""A ``kill -9`` of a sweep driver that runs the local process pool leaves no process behind: the
pool workers notice that their driver is gone and exit, after which the multiprocessing fork
server and resource tracker exit too (backends/local.py, ``_watch_driver``).

Processes are inspected with psutil when it is installed, else through ``/proc``. A process that
has exited but was re-parented to an init that does not reap (a zombie, as in some containers)
counts as gone: it runs nothing and holds no memory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_sweep_support import write_spec

HERE = Path(__file__).resolve().parent

try:
    import psutil
except ImportError:  # pragma: no cover - depends on the environment
    psutil = None

pytestmark = pytest.mark.skipif(psutil is None and not os.path.isdir("/proc/self"),
                                reason="needs psutil or /proc to inspect processes")


def _proc_table() -> dict[int, tuple[int, str, float]]:
    """pid -> (ppid, state, start time) of every process (the /proc fallback of psutil)."""
    table = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        f = stat[stat.rindex(b")") + 2:].split()
        table[int(d)] = (int(f[1]), f[0].decode(), float(f[19]))
    return table


def _descendants(pid: int) -> list:
    """Handles of every descendant of ``pid`` (psutil.Process, or (pid, start time) pairs)."""
    if psutil is not None:
        return psutil.Process(pid).children(recursive=True)
    table = _proc_table()
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for p, (pp, _, start) in table.items():
            if pp == parent:
                out.append((p, start))
                todo.append(p)
    return out


def _running(handle) -> bool:
    """Whether the process is still running (a zombie is not)."""
    if psutil is not None:
        try:
            return handle.is_running() and handle.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    pid, start = handle
    row = _proc_table().get(pid)
    return row is not None and row[2] == start and row[1] not in ("Z", "X")


def _cmdline(handle) -> str:
    try:
        if psutil is not None:
            return " ".join(handle.cmdline())
        with open(f"/proc/{handle[0]}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except Exception:  # noqa: BLE001 - exited meanwhile
        return ""


DRIVER = """
import sys
from twinsweep.sweep.api import run_sweep
from test_sweep_support import slow_run

if __name__ == "__main__":
    run_sweep(sys.argv[1], backend="local", workers=2, report=False, progress=False, run_fn=slow_run)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="kill -9 of a process group member")
def test_kill_9_of_the_sweep_driver_leaves_no_pool_process(tmp_path):
    spec = write_spec(tmp_path, seeds=2, retries=0)
    started = tmp_path / "started"
    started.mkdir()
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
               TWINSWEEP_TEST_SLEEP="600")  # each run sleeps: the workers are busy when the driver dies
    driver = subprocess.Popen([sys.executable, str(script), str(spec)], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    procs = []
    try:
        deadline = time.monotonic() + 180  # the fork server imports the run path and warms it up first
        while time.monotonic() < deadline:
            assert driver.poll() is None, driver.stdout.read().decode(errors="replace")
            procs = _descendants(driver.pid)
            server = [p for p in procs if "multiprocessing.forkserver" in _cmdline(p)]
            if len(server) >= 3:  # the server and its 2 workers
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the pool did not start: {[_cmdline(p) for p in procs]}")
        time.sleep(2.0)  # the workers are inside their (sleeping) runs
        procs = _descendants(driver.pid)
        kinds = " | ".join(_cmdline(p) for p in procs)
        assert "resource_tracker" in kinds and kinds.count("multiprocessing.forkserver") >= 3
        assert all(_running(p) for p in procs)

        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_running(p) for p in procs):
            time.sleep(0.25)
        left = [_cmdline(p)[:120] for p in procs if _running(p)]
        assert not left, f"still running 15 s after the driver's kill -9: {left}"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for p in procs:  # never leave them to the next test, whatever failed above
            if _running(p):
                os.kill(p.pid if psutil is not None else p[0], signal.SIGKILL)
        driver.stdout.close()
