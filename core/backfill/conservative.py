"""Conservative backfilling (DESIGN.md §3.7; Mu'alem & Feitelson 2001): every queued job, in
queue order, gets the earliest reservation in the availability profile that holds its nodes for
its whole time limit; jobs whose reservation is now start. The profile pass is compiled
(:mod:`core._profile`); here the marshalling and the reuse of the previous pass's profile where
that is exact."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ._newcomers import Newcomers
from .base import BACKFILLS, Backfill

__all__ = ["Conservative"]


@BACKFILLS.register("conservative")
class Conservative(Backfill):
    """``conservative``: every queued job gets a reservation, rebuilt at every pass in queue order
    (as WRENCH does), and a job starts early only if it delays none of them. ``stats["reservation_delays"]``
    counts how often a job's reservation moved later than the one it held at the previous pass."""

    name = "conservative"

    #: reuse the previous pass's profile where that is exact (tests turn it off to compare with a
    #: rebuild at every pass)
    reuse_profile = True

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        self.stats = {"reservation_delays": 0}
        self.state: _State | None = None

    def on_remove(self, job, now):
        """A cancelled job's reservation is in the saved profile: rebuild at the next pass."""
        if self.state is not None:
            self.state.profile = None
            self.state.since.forget()

    def select(self, now, queue, cluster):
        c = self.state
        if c is None:
            from .._profile import Profile  # numba: imported on first use (it takes ~1 s)

            nodes = np.asarray(self.jobs.nodes, dtype=np.int64)
            dur = np.maximum(np.asarray(self.jobs.time_limit, dtype=np.int64), 1)
            c = self.state = _State(Profile, nodes, dur, np.full(len(nodes), -1, dtype=np.int64))
        q, run = queue, cluster.running
        m = None
        if c.profile is not None and self.reuse_profile and self.static_queue:
            m = c.since.first_new(q, cluster)
        if (m is not None and len(run) == c.n_running and (not run or run[0][0] > now)
                and c.profile.free_now == cluster.free_nodes):
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
        started = qa[~later].tolist()  # in queue order: placement takes the lowest free nodes in that order
        c.n_running = len(run) + len(started)
        c.since.record(q, started, cluster)
        return started


@dataclasses.dataclass
class _State:
    """Conservative backfilling's state between passes: the profile class ``make_profile``
    (core._profile.Profile, imported on first use); per job (index = job) ``nodes``,
    reserved duration ``dur`` (time limit, >= 1 s) and last reservation ``prev`` (-1: none); the
    last pass's final ``profile``, the jobs it left queued (``since``, :class:`Newcomers`), the
    number of running jobs after it (``n_running``); ``reused`` counts passes that reused the
    profile."""

    make_profile: Any
    nodes: np.ndarray
    dur: np.ndarray
    prev: np.ndarray
    profile: Any = None  # core._profile.Profile
    since: Newcomers = dataclasses.field(default_factory=Newcomers)
    n_running: int = -1
    reused: int = 0  # passes that reused the profile (tests check that the path runs)

