"""Helpers of the Slurm tests (tests/test_slurm*.py); array tasks import this module (the tests put
this folder on PYTHONPATH, which sbatch passes on to the jobs).

``logged_run``: :func:`sweep.runner.execute_run` after an optional sleep
(``TWINSWEEP_TEST_SLEEP`` seconds), appending ``key status host:pid`` to the file named by
``TWINSWEEP_TEST_RUNLOG`` (O_APPEND, one line per call), so a test can tell which runs were
simulated, by whom, and how often.
"""

from __future__ import annotations

import os
import socket
import time


def logged_run(payload, shared):
    from twinsweep.sweep.runner import execute_run

    time.sleep(float(os.environ.get("TWINSWEEP_TEST_SLEEP", "0")))
    res = execute_run(payload, shared)
    log = os.environ.get("TWINSWEEP_TEST_RUNLOG")
    if log:
        line = f"{payload['key']} {res['status']} {socket.gethostname()}:{os.getpid()}\n"
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    return res


def read_runlog(path) -> list[tuple[str, str]]:
    """``[(key, status), ...]`` from a ``TWINSWEEP_TEST_RUNLOG`` file (empty when missing)."""
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        return []
    return [tuple(line.split()[:2]) for line in lines if line.strip()]
