"""Which process owns work and whether it still runs (backends/process.py): the one check behind
the local pool workers' watch of their driver and the Slurm backend's cancelling of arrays whose
driver stopped before recording them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from twinsweep.backends import process
from twinsweep.backends.process import owner_gone, proc_start, process_alive, same_process, worker_id

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc on this platform")


def _exited_unreaped():
    """A child process that has exited and is not reaped yet (a zombie); its Popen, to reap it."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # wait for the exit, leave the zombie
    return p


def test_worker_id_is_host_and_pid():
    assert worker_id() == f"{socket.gethostname()}:{os.getpid()}"


@needs_proc
def test_a_running_process_is_alive_a_zombie_and_a_reaped_one_are_not():
    assert process_alive(os.getpid()) and same_process(os.getpid(), proc_start(os.getpid()))
    p = _exited_unreaped()
    try:
        assert proc_start(p.pid) is None and not process_alive(p.pid)
        assert owner_gone(f"{socket.gethostname()}:{p.pid}")
    finally:
        p.wait()
    assert not process_alive(p.pid)


@needs_proc
def test_same_process_tells_a_reused_pid_by_its_start_time():
    me, start = os.getpid(), proc_start(os.getpid())
    assert start is not None and start.isdigit()
    assert not same_process(me, str(int(start) + 1))  # this pid, another process's start time
    assert not same_process(me, None)  # no start time then: it was gone already


def test_without_proc_a_pid_of_another_user_counts_as_gone(monkeypatch):
    monkeypatch.setattr(process, "_HAVE_PROC", False)
    assert process_alive(os.getpid()) and same_process(os.getpid(), None)
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert not process_alive(p.pid)

    def not_ours(pid, sig):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(process.os, "kill", not_ours)
    assert not process_alive(os.getpid())


def test_owner_gone_only_for_a_process_of_this_host_that_no_longer_runs():
    assert not owner_gone(worker_id())  # this process runs
    assert not owner_gone("another-host.example:1")  # cannot be asked from here
    assert not owner_gone("no pid here") and not owner_gone("")
