"""Which process owns a piece of work, and whether it still runs (package :mod:`backends`).

A process is named ``host:pid`` (:func:`worker_id`): an :class:`~.base.Outcome` names the worker
that ran it, a Slurm ``submission.json`` the driver that submitted it. :func:`process_alive` asks
whether a process of this host still runs: the ``local`` backend's pool workers watch their
driver with :func:`same_process` (and exit when it is gone), the ``slurm`` backend asks
:func:`owner_gone` before cancelling arrays whose driver stopped before recording them.
"""

from __future__ import annotations

import os
import socket

_HAVE_PROC = os.path.isdir("/proc/self")


def worker_id() -> str:
    """``host:pid`` of the current process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def proc_start(pid: int) -> str | None:
    """The start time of process ``pid`` (field 22 of ``/proc/<pid>/stat``, in clock ticks since
    boot, as text), or None when it has none: gone, a zombie (killed but not yet reaped: it runs no
    more), or no ``/proc`` (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host, started by this user, still runs. With ``/proc``
    (Linux): it exists and is not a zombie. Without: ``os.kill(pid, 0)`` succeeds; a pid that
    belongs to another user counts as gone (it is not the one this user started: a reused pid)."""
    if _HAVE_PROC:
        return proc_start(pid) is not None
    try:
        os.kill(pid, 0)
    except OSError:  # ProcessLookupError: gone; PermissionError: another user's (a reused pid)
        return False
    return True


def same_process(pid: int, start: str | None) -> bool:
    """Whether the process ``pid`` that had the start time ``start`` (:func:`proc_start`, taken
    earlier) still runs. With ``/proc``: ``pid`` still has that start time (a pid reused by
    another process, a zombie, and a ``start`` of None, gone already then, count as gone); without
    ``/proc``, where ``start`` is None: :func:`process_alive`."""
    if _HAVE_PROC:
        return start is not None and proc_start(pid) == start
    return process_alive(pid)


def owner_gone(owner: str) -> bool:
    """True when ``owner`` (``host:pid``, :func:`worker_id` of the process that recorded some
    work) is a process of this host that no longer runs (:func:`process_alive`); False when it runs,
    is on another host (it cannot be asked from here) or is not a ``host:pid``."""
    host, _, pid = str(owner).rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return not process_alive(int(pid))
