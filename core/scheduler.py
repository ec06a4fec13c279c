"""Schedulers: a queue-ordering policy plus a backfill variant (DESIGN.md §3.6–3.7).

A scheduler sees only submitted jobs and their time limits (no clairvoyance). Interface::

    class Scheduler:
        def submit(self, job: int, now: int) -> int | None   # optional wake-up time
        def schedule(self, now: int, cluster: Cluster) -> None   # calls cluster.start(job)
        def queued(self) -> int
        def queue(self) -> list[int]

Ordering policies are plug-ins registered by name (:func:`register_policy`); each maps a job to
a sort key, lower first, ties broken by ``(submit_time, trace_index)``. A policy whose key depends
on time or on state (fair share, accounts updated during the run) sets ``dynamic = True`` and the
queue is re-sorted at each pass with ``key_at(job, now)``. Such a policy may also define
``observe(now, cluster)`` (called at the start of every pass, even with an empty queue; every job
end is an event followed by a pass) and ``on_start(jobs, now)`` (called with the jobs a pass
started) to follow usage during the run (the fair-share factor of ``weighted`` does).

Plug-ins shipped with the twin (:mod:`core.policies`: ``acct_avg_power``, ``acct_low_avg_power``,
``acct_edp``, ``acct_ed2p``, ``acct_fugaku_pts``, ``weighted``) are registered when this module is
imported.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from typing import Any, Callable

import numpy as np

from .errors import ConfigError, UnknownNameError
from .resources import Cluster


@dataclasses.dataclass
class JobView:
    """What schedulers may read about jobs (index = job number in the run, row of ``frame``).

    submit, nodes, time_limit (effective, s), trace_index: lists of int; priority: list of float
    (NaN = none); user, account: lists of str|None; frame: the run's jobs DataFrame (extra features
    for plug-in policies); recorded_start: list of int|None (replay).
    """

    submit: list
    nodes: list
    time_limit: list
    trace_index: list
    priority: list
    user: list
    account: list
    recorded_start: list
    frame: Any = None
    recorded_zero: list | None = None  # replay only: recorded run time is 0
    source: str = ""


class Policy:
    """Queue order. Subclasses set ``name`` and implement ``key(job)`` (lower runs first)."""

    name = "base"
    dynamic = False

    def __init__(self, jobs: JobView, options: dict):
        self.jobs = jobs
        self.options = options

    def key(self, job: int) -> float:
        raise NotImplementedError

    def key_at(self, job: int, now: int) -> float:
        return self.key(job)


class FCFS(Policy):
    """First come, first served: submit time ascending."""

    OPTIONS = frozenset()
    name = "fcfs"

    def key(self, job):
        return self.jobs.submit[job]


class SJF(Policy):
    """Shortest job first by requested time limit (the scheduler never sees run times)."""

    OPTIONS = frozenset()
    name = "sjf"

    def key(self, job):
        return self.jobs.time_limit[job]


class LJF(Policy):
    """Largest job first: nodes descending."""

    OPTIONS = frozenset()
    name = "ljf"

    def key(self, job):
        return -self.jobs.nodes[job]


class TracePriority(Policy):
    """The trace's priority column, descending. Raises ConfigError when the trace has none."""

    OPTIONS = frozenset()
    name = "priority"

    def __init__(self, jobs, options):
        super().__init__(jobs, options)
        if not any(not math.isnan(p) for p in jobs.priority):
            raise ConfigError(
                f"policy 'priority' needs the workload column 'priority', which is empty in "
                f"{jobs.source or 'this trace'}; choose fcfs, sjf or ljf"
            )

    def key(self, job):
        p = self.jobs.priority[job]
        return math.inf if math.isnan(p) else -p


_POLICIES: dict[str, Callable[[JobView, dict], Policy]] = {
    "fcfs": FCFS, "sjf": SJF, "ljf": LJF, "priority": TracePriority,
}


def register_policy(name: str, factory: Callable[[JobView, dict], Policy]) -> None:
    """Register an ordering policy plug-in: ``factory(jobs: JobView, options: dict) -> Policy``."""
    _POLICIES[name] = factory


def available_policies() -> list[str]:
    """Names accepted as ``policy`` (``replay`` included)."""
    return sorted(set(_POLICIES) | {"replay"})


#: Run options any policy accepts (handled by ``simulate``: accounts loaded for every policy).
COMMON_OPTIONS = frozenset({"accounts_in", "acct_level"})


def make_policy(name: str, jobs: JobView, options: dict) -> Policy:
    """Build policy ``name``. A factory with an ``OPTIONS`` attribute (a set of names) accepts
    only those options (plus :data:`COMMON_OPTIONS` and internal ``_``-prefixed ones); an unknown
    option is a ConfigError naming it, so that a typo never silently makes a new run."""
    if name not in _POLICIES:
        raise UnknownNameError("policy", name, available_policies())
    factory = _POLICIES[name]
    allowed = getattr(factory, "OPTIONS", None)
    if allowed is not None:
        unknown = sorted(k for k in options if not k.startswith("_") and k not in allowed and k not in COMMON_OPTIONS)
        if unknown:
            ok = sorted(set(allowed) | COMMON_OPTIONS)
            raise ConfigError(f"policy {name!r} takes no option(s) {unknown}; its options: {', '.join(ok) or 'none'}")
    return factory(jobs, options)


class QueueScheduler:
    """Ordering policy + backfill variant over one priority-ordered queue.

    ``stats["reservation_delays"]`` counts, for conservative backfilling, how often a job's
    reservation moved later than the one it held at the previous pass.
    """

    #: conservative: reuse the previous pass's profile where that is exact (tests turn it off to
    #: compare with a rebuild at every pass)
    reuse_profile = True

    def __init__(self, policy: Policy, backfill: str):
        if backfill not in _BACKFILL:
            raise UnknownNameError("backfill", backfill, _BACKFILL)
        self.policy = policy
        self.backfill = backfill
        self._pass = _BACKFILL[backfill]
        self.jobs = policy.jobs
        self._k: dict[int, tuple] = {}  # job -> sort key (policy key, submit, trace_index, job)
        self._q: list[int] = []
        self._cons: _Conservative | None = None
        self.stats = {"reservation_delays": 0}
        # optional usage hooks of dynamic policies (see the module docstring)
        self._observe = getattr(policy, "observe", None)
        self._on_start = getattr(policy, "on_start", None)

    # -- queue --------------------------------------------------------------------------------
    def _key(self, job, now=None):
        j = self.jobs
        k = self.policy.key(job) if now is None else self.policy.key_at(job, now)
        return (k, j.submit[job], j.trace_index[job], job)

    def submit(self, job: int, now: int):
        self._k[job] = self._key(job, now if self.policy.dynamic else None)
        bisect.insort(self._q, job, key=self._k.__getitem__)
        return None

    def queued(self) -> int:
        return len(self._q)

    def queue(self) -> list[int]:
        return list(self._q)

    def schedule(self, now: int, cluster: Cluster) -> None:
        if self._observe is not None:  # usage hook: every pass, even with an empty queue
            self._observe(now, cluster)
        if not self._q:
            return
        if self.policy.dynamic:
            for j in self._q:
                self._k[j] = self._key(j, now)
            self._q.sort(key=self._k.__getitem__)
        started = self._pass(self, now, cluster)
        if started:
            if self._on_start is not None:
                self._on_start(started, now)
            if len(started) == 1:
                self._q.remove(started[0])
            else:
                s = set(started)
                self._q = [j for j in self._q if j not in s]

    # -- backfill variants (DESIGN.md §3.7) -----------------------------------------------------
    def _none(self, now, cluster):
        nodes, started = self.jobs.nodes, []
        for j in self._q:
            if nodes[j] > cluster.free_nodes:
                break
            cluster.start(j)
            started.append(j)
        return started

    def _firstfit(self, now, cluster):
        nodes, started = self.jobs.nodes, []
        for j in self._q:
            free = cluster.free_nodes
            if free == 0:
                break
            if nodes[j] <= free:
                cluster.start(j)
                started.append(j)
        return started

    def _easy(self, now, cluster):
        nodes, limit = self.jobs.nodes, self.jobs.time_limit
        q, started = self._q, []
        i, nq = 0, len(q)
        while i < nq and nodes[q[i]] <= cluster.free_nodes:
            cluster.start(q[i])
            started.append(q[i])
            i += 1
        if i >= nq:
            return started
        free = cluster.free_nodes
        if free == 0:
            return started
        head_n = nodes[q[i]]
        shadow, avail = None, free
        for exp_end, j in cluster.running:
            avail += nodes[j]
            if avail >= head_n:
                shadow = max(exp_end, now + 1)
                break
        if shadow is None:  # cannot happen: the head fits an empty machine (rejected otherwise)
            raise RuntimeError("EASY: head job can never fit")
        extra = free - head_n
        for exp_end, j in cluster.running:
            if max(exp_end, now + 1) > shadow:
                break
            extra += nodes[j]
        for k in range(i + 1, nq):
            j = q[k]
            n = nodes[j]
            if n > free:
                continue
            if now + limit[j] <= shadow:
                cluster.start(j)
            elif n <= extra:
                cluster.start(j)
                extra -= n
            else:
                continue
            started.append(j)
            free -= n
            if free == 0:
                break
        return started

    def _conservative(self, now, cluster):
        # the profile pass is compiled (core/_profile.py); here the marshalling, and the reuse of
        # the previous pass's profile when the rebuild would give every queued job the same
        # reservation again
        c = self._cons
        if c is None:
            from ._profile import Profile  # numba: imported on first use (it takes ~1 s)

            nodes = np.asarray(self.jobs.nodes, dtype=np.int64)
            dur = np.maximum(np.asarray(self.jobs.time_limit, dtype=np.int64), 1)
            c = self._cons = _Conservative(Profile, nodes, dur, np.full(len(nodes), -1, dtype=np.int64))
        q, run = self._q, cluster.running
        m = c.kept
        if (c.profile is not None and self.reuse_profile and not self.policy.dynamic
                and len(run) == c.n_running and (not run or run[0][0] > now)
                and (m == 0 or (len(q) >= m and q[m - 1] == c.tail))
                and c.profile.free_now == cluster.free_nodes and c.changes == cluster.changes):
            # Only submissions since the last pass (no end: starts happen only in passes), no
            # running job past its expected end, and every new job queued behind every old
            # one: the old jobs' reservations are unchanged (no breakpoint lies between the two
            # passes, the profile ahead is the same, and a start between them failed before),
            # so only the new jobs are reserved, on the previous pass's final profile.
            qa = np.array(q[m:], dtype=np.int64)
            c.profile.move_to(now)
            c.reused += 1
        else:
            if run:
                r = np.array(run, dtype=np.int64)
                run_end, run_nodes = r[:, 0], c.nodes[r[:, 1]]
            else:
                run_end = run_nodes = np.empty(0, dtype=np.int64)
            qa = np.array(q, dtype=np.int64)
            c.profile = c.make_profile(now, run_end, run_nodes, cluster.free_nodes, len(qa))
        t = np.empty(len(qa), dtype=np.int64)
        self.stats["reservation_delays"] += c.profile.reserve(now, c.nodes[qa], c.dur[qa], c.prev[qa], t)
        later = t > now
        c.prev[qa[later]] = t[later]  # a started job leaves the queue: its entry is never read again
        started = qa[~later].tolist()
        for j in started:  # in queue order: placement takes the lowest free nodes in that order
            cluster.start(j)
        c.n_running = len(run)
        c.changes = cluster.changes  # after this pass's starts: any later change (an end, a node
        # availability period taking or returning nodes) forbids the reuse
        c.kept = len(q) - len(started)
        if c.kept:
            c.tail = q[-1] if not started or started[-1] != q[-1] else _last_not_in(q, set(started))
        return started


@dataclasses.dataclass
class _Conservative:
    """Conservative backfilling's state between passes: the profile class ``make_profile``
    (core._profile.Profile, imported on first use); per job (index = job) ``nodes``,
    reserved duration ``dur`` (time limit, >= 1 s) and last reservation ``prev`` (-1: none); the
    last pass's final ``profile``, how many jobs it left queued (``kept``), the last of them
    (``tail``), the number of running jobs after it (``n_running``); ``reused`` counts passes
    that reused the profile."""

    make_profile: Any
    nodes: np.ndarray
    dur: np.ndarray
    prev: np.ndarray
    profile: Any = None  # core._profile.Profile
    kept: int = 0
    tail: int = -1
    n_running: int = -1
    changes: int = -1  # Cluster.changes after the last pass
    reused: int = 0  # passes that reused the profile (tests check that the path runs)


def _last_not_in(q: list, gone: set) -> int:
    for j in reversed(q):
        if j not in gone:
            return j
    raise RuntimeError("no job left in the queue")


_BACKFILL = {
    "none": QueueScheduler._none,
    "firstfit": QueueScheduler._firstfit,
    "easy": QueueScheduler._easy,
    "conservative": QueueScheduler._conservative,
}


class ReplayScheduler:
    """Replays the trace: each job starts at its recorded start (DESIGN.md §3, replay mode).

    A job whose recorded start has no room (an inconsistent trace or system size) starts as soon
    as it fits, in recorded-start order; ``stats["replay_delayed"]`` counts those.
    """

    def __init__(self, jobs: JobView):
        self.jobs = jobs
        self._waiting: list[tuple[int, int, int, int]] = []  # (release, nonzero, trace_index, job)
        self.stats = {"replay_delayed": 0}

    def submit(self, job: int, now: int):
        rs = self.jobs.recorded_start[job]
        rel = max(rs if rs is not None else now, now)
        # at one second, zero-length jobs first: they hold their nodes only for the pass
        zero = 0 if (self.jobs.recorded_zero and self.jobs.recorded_zero[job]) else 1
        bisect.insort(self._waiting, (rel, zero, self.jobs.trace_index[job], job))
        return rel if rel > now else None

    def queued(self) -> int:
        return len(self._waiting)

    def queue(self) -> list[int]:
        return [w[3] for w in self._waiting]

    def schedule(self, now: int, cluster: Cluster) -> None:
        nodes = self.jobs.nodes
        keep = []
        for item in self._waiting:
            rel, _, _, j = item
            if rel <= now and nodes[j] <= cluster.free_nodes:
                cluster.start(j)
                if now > rel:
                    self.stats["replay_delayed"] += 1
            else:
                keep.append(item)
        self._waiting = keep


def make_scheduler(policy: str, backfill: str, jobs: JobView, options: dict | None = None):
    """Build the scheduler for a run: ``ReplayScheduler`` for ``policy='replay'`` (backfill is
    ignored and must be ``none``… or any: recorded starts decide), else ``QueueScheduler``.
    Raises UnknownNameError for unknown names (listing the valid ones)."""
    if policy == "replay":
        return ReplayScheduler(jobs)
    return QueueScheduler(make_policy(policy, jobs, options or {}), backfill)


# Plug-in policies shipped with the twin (incentive + weighted): registered on import. At the end of
# the module so that core.policies finds Policy and register_policy defined (no import cycle).
from . import policies as _builtin_policies  # noqa: E402,F401
