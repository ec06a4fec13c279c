"""What the ``slurm`` backend asks the cluster (``sinfo``, ``scontrol``, ``squeue``, ``scancel``)
and the job states it knows (package :mod:`backends.slurm`)."""

from __future__ import annotations

import getpass
import math
import re
import shutil
import subprocess
from typing import Iterable

from twinsweep.core.durations import parse_slurm_duration
from twinsweep.core.errors import ConfigError, TwinError


class SlurmError(TwinError):
    """Slurm cannot be reached (no ``sinfo``/``sbatch``, controller down) or refused a submission."""


#: States of a job (array task) that will still run or is running.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                           "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
                           "RESV_DEL_HOLD", "SPECIAL_EXIT"})

#: States an array task passes through when it ends *or* when it is requeued (Slurm shows
#: ``COMPLETING`` for both while the node cleans up): not yet known to run again. Adoption waits
#: for them to settle and takes a task still in one of them as ended.
UNSETTLED_STATES = frozenset({"COMPLETING", "SIGNALING", "STAGE_OUT"})

#: States of a job that is over.
TERMINAL_STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                             "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED"})


def _run_cmd(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    if shutil.which(args[0]) is None:
        raise SlurmError(f"slurm backend: {args[0]!r} not found; run on a Slurm login node (or start the local "
                         "test cluster: sudo bash slurm/local-cluster.sh)")
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise SlurmError(f"slurm backend: `{' '.join(args)}` did not answer within {timeout:.0f} s") from exc


def slurm_ready(timeout: float = 15) -> tuple[bool, str]:
    """``(True, "")`` when ``sinfo`` answers with at least one usable node, else ``(False, why)``."""
    if shutil.which("sinfo") is None:
        return False, "sinfo not found (Slurm is not installed here)"
    try:
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "sinfo did not answer"
    if p.returncode != 0:
        return False, f"sinfo failed: {p.stderr.strip() or p.stdout.strip()}"
    states = [s.strip() for s in p.stdout.split()]
    if not any(s.startswith(("idle", "mix", "alloc", "comp", "plnd", "planned", "resv")) for s in states):
        return False, f"no usable node (node states: {', '.join(states) or 'none'})"
    return True, ""


def cluster_partitions() -> tuple[list[str], str | None]:
    """``(partition names, default partition)`` from ``sinfo -h -o %P``."""
    p = _run_cmd(["sinfo", "-h", "-o", "%P"])
    if p.returncode != 0:
        raise SlurmError(f"slurm backend: sinfo failed: {p.stderr.strip()}")
    names, default = [], None
    for line in p.stdout.split():
        name = line.strip()
        if name.endswith("*"):
            name = name[:-1]
            default = name
        if name and name not in names:
            names.append(name)
    return names, default


def _scontrol_kv(text: str) -> dict[str, str]:
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", text))


def cluster_max_array_size() -> int:
    """The cluster's ``MaxArraySize`` (``scontrol show config``): an array holds at most this
    many tasks (indices ``0 .. MaxArraySize-1``)."""
    p = _run_cmd(["scontrol", "show", "config"])
    if p.returncode != 0:
        raise SlurmError(f"slurm backend: scontrol show config failed: {p.stderr.strip()}")
    m = re.search(r"^MaxArraySize\s*=\s*(\d+)", p.stdout, re.M)
    return int(m.group(1)) if m else 1001


def _partition_limits(name: str) -> dict[str, str]:
    p = _run_cmd(["scontrol", "show", "partition", name, "-o"])
    return _scontrol_kv(p.stdout) if p.returncode == 0 else {}


def _limit_minutes(text: str | None) -> int | None:
    """A partition's DefaultTime/MaxTime in minutes; None for UNLIMITED/NONE/INFINITE."""
    try:
        seconds = parse_slurm_duration(text or "", "partition limit", missing_ok=True)
    except ConfigError:
        return None
    return None if seconds is None else math.ceil(seconds / 60)


def query_states(slurm_ids: Iterable[str]) -> dict[str, str] | None:
    """``{slurm id ("123" or "123_4"): state}`` from ``squeue -t all -r`` for the jobs/arrays of
    ``slurm_ids``; jobs Slurm has forgotten are absent. None when squeue could not be asked."""
    base = sorted({str(s).split("_")[0] for s in slurm_ids})
    if not base:
        return {}
    try:
        p = _run_cmd(["squeue", "-h", "-r", "-t", "all", "-j", ",".join(base), "-o", "%i|%T"], timeout=30)
    except SlurmError:
        return None
    if p.returncode != 0:
        if "Invalid job id" in (p.stderr + p.stdout):
            return {}
        return None
    out = {}
    for line in p.stdout.splitlines():
        jid, _, state = line.strip().partition("|")
        if jid:
            out[jid] = state.strip().split()[0] if state.strip() else "UNKNOWN"
    return out


def queued_commands(user: str | None = None) -> dict[str, str] | None:
    """``{array or job id: batch script path}`` for ``user``'s jobs still queued or running
    (``squeue -h -u USER -o %F|%o``); None when squeue could not be asked."""
    try:
        p = _run_cmd(["squeue", "-h", "-u", user or getpass.getuser(), "-o", "%F|%o"], timeout=30)
    except SlurmError:
        return None
    if p.returncode != 0:
        return None
    out = {}
    for line in p.stdout.splitlines():
        jid, _, cmd = line.strip().partition("|")
        if jid and cmd:
            out[jid.strip()] = cmd.strip()
    return out


def cancel(job_ids: Iterable[str]) -> None:
    """``scancel`` the given jobs/arrays (errors ignored: they may be over already)."""
    ids = [str(j) for j in job_ids if j]
    if ids and shutil.which("scancel"):
        subprocess.run(["scancel", *ids], capture_output=True, timeout=60)
