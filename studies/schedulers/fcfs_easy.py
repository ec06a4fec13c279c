#!/usr/bin/env python3
"""FCFS + EASY backfilling as an external scheduler of the twinsweep protocol (docs/protocol.md).

A standalone script: it imports nothing from twinsweep, only the standard library, so it shows
everything a scheduler in any language has to do. Run by the twin as a child process::

    twinsweep run --data pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz --policy external \\
        --scheduler "python studies/schedulers/fcfs_easy.py" --start 144d --duration 7d --out out/ext

It reads one JSON message per line on stdin and writes one reply per line on stdout. The same
object also serves the in-process transport (``scheduler = "inproc:studies/schedulers/
fcfs_easy.py:FcfsEasy"``).

Semantics (DESIGN.md §3.6-3.7, as the built-in ``fcfs`` + ``easy``): the queue is ordered by
``(submit_time, trace_index, job_id)``. At each message, jobs start in queue order while they
fit; the first that does not is the head and gets the one reservation: walking the running jobs
by expected end (start + time limit; a job past it is taken to end at now + 1), the first at which
enough nodes are free is the *shadow* time; ``extra`` = nodes free at the shadow time minus the
head's. Each later job starts now if it fits now and either ends by the shadow time (by its
limit), or else needs no more than ``extra`` nodes (``extra`` then shrinks by its size). Nodes down
(availability holds) count as running one-node jobs that end when they come back. Lifka 1995,
"The ANL/IBM SP scheduling system"; Mu'alem & Feitelson 2001.
"""

from __future__ import annotations

import bisect
import json
import sys


class FcfsEasy:
    """The scheduler's state and its one method, ``handle(message) -> reply``."""

    def __init__(self):
        self.queue: list[tuple[int, int, int]] = []  # (submit_time, trace_index, job_id), sorted
        self.jobs: dict[int, tuple[int, int]] = {}  # job_id -> (nodes, time_limit)
        self.running: list[tuple[int, int, int]] = []  # (expected_end, kind 0 job / 1 hold, id), sorted
        self.ends: dict[int, int] = {}  # running job -> expected end
        self.hold_seq = 0

    # -- events ------------------------------------------------------------------------------------
    def _event(self, e: dict) -> None:
        kind, d = e["type"], e.get("data", {})
        if kind == "JOB_SUBMITTED":
            self.jobs[d["job_id"]] = (d["nodes"], d["time_limit"])
            bisect.insort(self.queue, (d["submit_time"], d["trace_index"], d["job_id"]))
        elif kind == "JOB_RUNNING":  # running at the window start: its expected end counts
            self.jobs[d["job_id"]] = (d["nodes"], d["time_limit"])
            self._run(d["job_id"], d["start_time"] + d["time_limit"])
        elif kind == "JOB_ENDED":
            j = d["job_id"]
            end = self.ends.pop(j)
            self.running.remove((end, 0, j))
        elif kind == "JOB_CANCELLED":
            j = d["job_id"]
            self.queue = [q for q in self.queue if q[2] != j]
        elif kind == "NODES_DOWN":  # held nodes: one-node "jobs" ending when the period ends
            for _ in range(d["count"]):
                self.hold_seq += 1
                bisect.insort(self.running, (d["until"], 1, self.hold_seq))
        elif kind == "NODES_UP":
            gone = d["count"]
            keep = []
            for r in self.running:
                if gone and r[1] == 1 and r[0] == d["until"]:
                    gone -= 1
                    continue
                keep.append(r)
            self.running = keep

    def _run(self, j: int, expected_end: int) -> None:
        self.ends[j] = expected_end
        bisect.insort(self.running, (expected_end, 0, j))

    def _size(self, r: tuple[int, int, int]) -> int:
        return 1 if r[1] == 1 else self.jobs[r[2]][0]

    # -- one pass: FCFS + EASY -----------------------------------------------------------------------
    def _pass(self, now: int, free: int) -> list[int]:
        q = [x[2] for x in self.queue]
        nodes = {j: self.jobs[j][0] for j in q}
        limit = {j: self.jobs[j][1] for j in q}
        started: list[int] = []
        i = 0
        while i < len(q) and nodes[q[i]] <= free:
            started.append(q[i])
            free -= nodes[q[i]]
            i += 1
        if i < len(q) and free > 0:
            head_n = nodes[q[i]]
            running = [(r[0], self._size(r)) for r in self.running]
            running += [(now + limit[j], nodes[j]) for j in started]
            running.sort(key=lambda x: x[0])
            shadow, avail = None, free
            for end, n in running:
                avail += n
                if avail >= head_n:
                    shadow = max(end, now + 1)
                    break
            if shadow is None:
                raise RuntimeError("the head job can never fit")
            extra = free - head_n
            for end, n in running:
                if max(end, now + 1) > shadow:
                    break
                extra += n
            for j in q[i + 1:]:
                n = nodes[j]
                if n > free:
                    continue
                if now + limit[j] <= shadow:
                    started.append(j)
                elif n <= extra:
                    started.append(j)
                    extra -= n
                else:
                    continue
                free -= n
                if free == 0:
                    break
        return started

    def handle(self, msg: dict) -> dict:
        """One reply (a dict) to one message: start decisions for this pass."""
        for e in msg["events"]:
            if e["type"] == "SIMULATION_ENDS":
                return {"events": []}
            self._event(e)
        now = msg["now"]
        started = self._pass(now, msg["free_nodes"]) if self.queue else []
        if started:
            gone = set(started)
            self.queue = [x for x in self.queue if x[2] not in gone]
            for j in started:
                self._run(j, now + self.jobs[j][1])
        return {"now": now, "events": [{"type": "EXECUTE_JOB", "data": {"job_id": j}} for j in started]}


def main() -> int:
    sched = FcfsEasy()
    out = sys.stdout
    for line in sys.stdin:
        reply = sched.handle(json.loads(line))
        out.write(json.dumps(reply, separators=(",", ":")) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
