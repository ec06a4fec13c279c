"""The node availability calendar during a run: drains and holds (``System.availability``).

Each period ``(start, end, nodes_down)`` *drains* its nodes: from its start, every node that is
free (at once, else as running jobs end) is taken out of service, before any scheduling pass,
until ``nodes_down`` are out; all come back at its end. A node out of service is a *hold*: a
one-node running "job" numbered past the window's jobs whose expected end is the period's end, so
that a scheduler (EASY's shadow time, conservative reservations) counts on its return; a period
is seen from its start on (as a drain is), not before. Held nodes are not busy and draw idle
power. The event kernel (:mod:`core.kernel`) calls :meth:`Calendar.apply` at each period start /
end and :meth:`Calendar.drain` whenever nodes may have become free.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["Calendar"]


class Calendar:
    """The periods of a run that end after its start ``t0``.

    Args:
        periods: ``(start, end, nodes_down)`` tuples (s from the trace epoch, ``[start, end)``).
        t0: the window start (a period that began earlier starts draining at ``t0``).
        first_hold: the job number of the first hold (the window's job count); the holds of
            period ``i`` follow those of period ``i - 1``.
        listener: optional object told of holds taken and given back (an external scheduler:
            ``nodes_down(count, until, now)`` and ``nodes_up(count, until, now)``), or None.

    Attributes: ``held`` (nodes out of service now), ``draining`` (periods still waiting for
    nodes; empty when nothing is to drain), ``hold_nodes`` / ``hold_limits`` (per hold: 1 node,
    limit 0, to append to the scheduler's per-job lists), ``times`` (the instants the kernel must
    wake at: each period's start, clipped at ``t0``, and end).
    """

    def __init__(self, periods: Sequence[tuple[int, int, int]], t0: int, first_hold: int, listener=None):
        self.periods = [tuple(int(x) for x in p) for p in periods if p[1] > t0]
        self.base: list[int] = []
        k_total = 0
        for (_a, _b, k) in self.periods:
            self.base.append(first_hold + k_total)
            k_total += k
        self.hold_nodes = [1] * k_total
        self.hold_limits = [0] * k_total
        events = []  # (time, 0 end | 1 start, period): ends first at one second
        for pi, (a, b, _k) in enumerate(self.periods):
            events.append((max(a, t0), 1, pi))
            events.append((b, 0, pi))
        events.sort()
        self._events = events
        self._next = 0
        self.times = [e[0] for e in events]
        self._pending = [0] * len(self.periods)
        # per period, each drain's holds: (first hold, count, time taken, node ids); holds numbered
        # first hold .. first hold + count - 1 (one node each), their nodes allocated together
        self._held: list[list[tuple[int, int, int, object]]] = [[] for _ in self.periods]
        self._n_held = [0] * len(self.periods)
        self.draining: list[int] = []
        self.held = 0
        self._down_node_s = 0
        self.listener = listener

    def __bool__(self) -> bool:
        return bool(self.periods)

    def apply(self, t: int, pool, cluster) -> None:
        """Periods ending at ``t`` give their nodes back; periods starting at ``t`` start draining."""
        ev = self._events
        while self._next < len(ev) and ev[self._next][0] == t:
            _, kind, pi = ev[self._next]
            self._next += 1
            if kind == 0:
                b = self.periods[pi][1]
                back = 0
                for _h0, count, taken, ids in self._held[pi]:
                    pool.release(ids)
                    self._down_node_s += (b - taken) * count
                    back += count
                # the period's holds are numbered base .. base + back - 1: given back in one pass
                cluster.remove_running_many([(b, h) for h in range(self.base[pi], self.base[pi] + back)])
                if back and self.listener is not None:
                    self.listener.nodes_up(back, b, t)
                self.held -= back
                self._held[pi] = []
                self._n_held[pi] = 0
                self._pending[pi] = 0
                if pi in self.draining:
                    self.draining.remove(pi)
            else:
                self._pending[pi] = self.periods[pi][2]
                self.draining.append(pi)

    def drain(self, t: int, pool, cluster) -> None:
        """Take free nodes, one hold each, for the draining periods (in the order they started).
        A period takes what it still lacks, up to the free nodes, in one allocation (the lowest
        free node ids, as taking them one at a time would) and one merge into the running list."""
        pending = self._pending
        for pi in self.draining:
            taken = min(pending[pi], pool.free)
            if taken:
                h0 = self.base[pi] + self._n_held[pi]
                self._held[pi].append((h0, taken, t, pool.allocate(taken)))
                b = self.periods[pi][1]
                cluster.add_running_many([(b, h) for h in range(h0, h0 + taken)])
                self._n_held[pi] += taken
                pending[pi] -= taken
            self.held += taken
            if taken and self.listener is not None:
                self.listener.nodes_down(taken, self.periods[pi][1], t)
        if not all(pending[pi] for pi in self.draining):
            self.draining[:] = [pi for pi in self.draining if pending[pi]]

    def counts(self, t_end: int) -> dict[str, int]:
        """``availability_periods`` and ``availability_down_node_s`` (node-seconds held down up to
        ``t_end``, periods still holding nodes counted up to it)."""
        down = self._down_node_s
        for pi, (_a, b, _k) in enumerate(self.periods):
            down += sum(max(0, min(b, t_end) - taken) * count for _h, count, taken, _ids in self._held[pi])
        return {"availability_periods": len(self.periods), "availability_down_node_s": int(down)}
