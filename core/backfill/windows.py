"""Time-of-day start rules of a site (``windows``): synchronization points and run-time caps by
the clock, around any built-in backfill variant (issue 15: a site's queue rules as documented
options, not per-trace constants).

Some sites restricted *when* a job may start by the wall clock. The Parallel Workloads Archive's
page of the KTH SP2 log (https://www.cs.huji.ac.il/labs/parallel/workload/l_kth_sp2/) says that
until 6 June 1997 weekday jobs between 07:00 and 16:00 had a 4 h limit, weekday nights 15 h and
weekends 60 h, and that no job could run across 07:00 and 16:00 on weekdays (synchronization
points; lifted on 6 June, the caps stayed until 15 July 1997). A twin that ignores such rules
lets wide jobs wait behind a full machine that the real one emptied twice a day.

:class:`Windows` (registered as ``windows``) keeps, at each pass, only the queued jobs that may
start *now* under these rules and hands them, in policy order, to the ``inner`` variant
(``none``, ``firstfit``, ``easy``, ``conservative``); a job held back keeps its place in the
queue and is offered again at every later pass. A job may start at wall-clock time ``w`` when

* ``caps``: no cap period contains ``w``, or its time limit is <= that period's cap, and
* ``sync``: its limit does not reach past the next synchronization point after ``w``
  (``w + time_limit <= next point``; a job may end exactly at it).

Each rule applies while the wall clock is before its ``*_until`` date (empty: always). The wall
clock is ``now + clock_offset_s`` seconds since 1970-01-01 00:00 of the site's clock (for a trace:
its Unix start time plus the site clock's offset from UTC), so weekdays and hours are those of
the site. Only requests and the clock are read (no run time: DESIGN.md §3.3).

A job held back by a rule becomes startable only at a synchronization point, at the end of a cap
period or at a rule's ``*_until`` date (:meth:`ClockRules.next_allowed`); the variant's
:meth:`~Windows.next_wake` returns the earliest such time for the held jobs that fit in the free
nodes, and the engine runs a pass then (a job refused at 05:00 because it would run across 07:00
starts at 07:00, not at the next job end or submission). Option grammar (checked before the
run, one ConfigError naming the bad part):

* ``sync``: groups ``DAYS HH:MM [HH:MM ...]`` separated by ``;`` — e.g. ``"mon-fri 07:00 16:00"``;
* ``caps``: groups ``DAYS HH:MM-HH:MM CAP`` separated by ``;`` — e.g.
  ``"mon-fri 07:00-16:00 4:00; mon-thu 16:00-24:00 15:00"`` (a period ends at its second time on
  the same day, ``24:00`` = midnight; the cap is hours:minutes of time limit);
* ``DAYS``: ``mon``..``sun``, a range ``mon-fri`` or a comma list ``sat,sun``;
* ``sync_until`` / ``caps_until``: ``YYYY-MM-DD`` (00:00 of that day, site clock) or empty.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as _dt
import re
from typing import Literal

from ..errors import ConfigError
from .base import BACKFILLS, Backfill, BackfillOptions

__all__ = ["Windows", "WindowsOptions", "ClockRules", "parse_days", "parse_sync", "parse_caps"]

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WEEK = 7 * 86400
_DAY = 86400


def parse_days(text: str, where: str) -> list[int]:
    """``"mon-fri"``, ``"sat,sun"`` or ``"wed"`` -> weekday numbers (Monday = 0). ConfigError otherwise."""
    out: list[int] = []
    for part in text.lower().split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            if a not in _DAYS or b not in _DAYS:
                raise ConfigError(f"{where}: bad day range {part!r} (days are {', '.join(_DAYS)})")
            i, k = _DAYS.index(a), _DAYS.index(b)
            out.extend(range(i, k + 1) if i <= k else list(range(i, 7)) + list(range(0, k + 1)))
        elif part in _DAYS:
            out.append(_DAYS.index(part))
        else:
            raise ConfigError(f"{where}: bad day {part!r} (days are {', '.join(_DAYS)})")
    return sorted(set(out))


def _clock(text: str, where: str) -> int:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if not m or int(m.group(1)) > 24 or int(m.group(2)) > 59 or (int(m.group(1)) == 24 and int(m.group(2))):
        raise ConfigError(f"{where}: bad clock time {text!r} (expected HH:MM, 00:00..24:00)")
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60


def parse_sync(text: str) -> tuple[int, ...]:
    """The ``sync`` option -> sorted offsets (s) within the week (Monday 00:00 = 0)."""
    pts: set[int] = set()
    for g in filter(None, (x.strip() for x in text.split(";"))):
        parts = g.split()
        if len(parts) < 2:
            raise ConfigError(f"backfill 'windows': option sync: group {g!r} needs DAYS and at least one HH:MM")
        for d in parse_days(parts[0], "backfill 'windows': option sync"):
            for c in parts[1:]:
                pts.add((d * _DAY + _clock(c, "backfill 'windows': option sync")) % _WEEK)
    return tuple(sorted(pts))


def parse_caps(text: str) -> tuple[tuple[int, int, int], ...]:
    """The ``caps`` option -> ``(week offset from, week offset to, cap s)`` periods, sorted."""
    out = []
    for g in filter(None, (x.strip() for x in text.split(";"))):
        parts = g.split()
        w = "backfill 'windows': option caps"
        if len(parts) != 3 or "-" not in parts[1]:
            raise ConfigError(f"{w}: group {g!r} must be 'DAYS HH:MM-HH:MM CAP'")
        a, b = (_clock(x, w) for x in parts[1].split("-", 1))
        if b <= a:
            raise ConfigError(f"{w}: group {g!r}: the period must end after it starts on the same day (24:00 = midnight)")
        m = re.fullmatch(r"(\d{1,3}):([0-5]\d)", parts[2])
        if not m:
            raise ConfigError(f"{w}: group {g!r}: the cap must be H:MM (hours:minutes, e.g. 4:00), got {parts[2]!r}")
        cap = int(m.group(1)) * 3600 + int(m.group(2)) * 60
        if cap <= 0:
            raise ConfigError(f"{w}: group {g!r}: the cap must be > 0 s")
        for d in parse_days(parts[0], w):
            out.append((d * _DAY + a, d * _DAY + b, cap))
    out.sort()
    for (a0, b0, _), (a1, _b1, _c) in zip(out, out[1:]):
        if a1 < b0:
            raise ConfigError(f"backfill 'windows': option caps: periods overlap (week offsets {a0}-{b0} and {a1})")
    return tuple(out)


def _date(text: str, what: str) -> int | None:
    if not text:
        return None
    try:
        d = _dt.date.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"backfill 'windows': option {what}: expected YYYY-MM-DD or empty, got {text!r}") from None
    return int((d - _dt.date(1970, 1, 1)).days) * _DAY


@dataclasses.dataclass(frozen=True)
class WindowsOptions(BackfillOptions):
    """Options of ``windows`` (grammar in the module docstring).

    inner: the backfill variant run over the startable jobs. sync, caps: the rules ("" = none).
    sync_until, caps_until: YYYY-MM-DD, the rule applies before that day ("" = always).
    clock_offset_s: wall-clock seconds (site clock, since 1970-01-01) at trace time 0.
    """

    inner: Literal["none", "firstfit", "easy", "conservative"] = "easy"
    sync: str = ""
    caps: str = ""
    sync_until: str = ""
    caps_until: str = ""
    clock_offset_s: int = 0

    def __post_init__(self):  # the rules are checked when the options are, before any work
        parse_sync(self.sync)
        parse_caps(self.caps)
        _date(self.sync_until, "sync_until")
        _date(self.caps_until, "caps_until")

    def notes(self) -> list[str]:
        """No rule (neither sync nor caps): ``windows`` is its inner variant."""
        if self.sync.strip() or self.caps.strip():
            return []
        return [f"backfill 'windows' without a sync or caps rule is its inner variant {self.inner!r} (the site's "
                "rules are in its system file's [site] table, docs/validation.md)"]


class ClockRules:
    """The rules of :class:`WindowsOptions` as a predicate on (time limit, trace time): the one
    implementation both the ``windows`` backfill and the availability estimator use
    (:func:`core.availability.block_down_nodes`, ``max_limit``)."""

    def __init__(self, options: WindowsOptions):
        self.sync = parse_sync(options.sync)
        self.caps = parse_caps(options.caps)
        self._cap_starts = [a for a, _b, _c in self.caps]
        self.sync_until = _date(options.sync_until, "sync_until")
        self.caps_until = _date(options.caps_until, "caps_until")
        self.offset = int(options.clock_offset_s)
        # week offsets at which a held job may become startable: the synchronization points
        # (the next point moves a period further) and the ends of cap periods
        self._turns = tuple(sorted(set(self.sync) | {b % _WEEK for _a, b, _c in self.caps}))
        self._untils = tuple(sorted(u for u in (self.sync_until, self.caps_until) if u is not None))
        self._next: dict[int, tuple[int, int | None]] = {}  # limit -> (asked at, answer) of next_allowed

    @property
    def active(self) -> bool:
        """True when there is any rule."""
        return bool(self.sync or self.caps)

    def max_limit(self, now: int) -> float:
        """The longest time limit (s) a job may have to start at ``now`` (s from the trace epoch):
        the cap of the cap period containing the wall clock, and the time to the next
        synchronization point, whichever is less (``inf`` when no rule applies then). The rules
        are monotone in the time limit, so a job may start iff its limit is at most this: one
        figure per pass instead of one test per queued job."""
        w = now + self.offset
        day = w // _DAY
        monday = (day - (day + 3) % 7) * _DAY  # 1970-01-01 was a Thursday
        pos = w - monday
        most = float("inf")
        if self.caps and (self.caps_until is None or w < self.caps_until):
            k = bisect.bisect_right(self._cap_starts, pos) - 1
            if k >= 0:
                a, b, cap = self.caps[k]
                if a <= pos < b:
                    most = cap
        if self.sync and (self.sync_until is None or w < self.sync_until):
            k = bisect.bisect_right(self.sync, pos)
            nxt = monday + (self.sync[k] if k < len(self.sync) else self.sync[0] + _WEEK)
            most = min(most, nxt - w)
        return most

    def allowed(self, limit: int, now: int) -> bool:
        """True when a job with time limit ``limit`` (s) may start at ``now`` (s from the trace epoch)."""
        return limit <= self.max_limit(now)

    def next_allowed(self, limit: int, now: int) -> int | None:
        """The earliest trace time ``w > now`` (s) at which a job with time limit ``limit`` (s)
        may start (:meth:`allowed`), or None when no such time exists (the rules, as they stand
        after their last ``*_until`` date, never let it start).

        Where it is allowed is a union of intervals closed on the left: the sync rule holds on
        ``[point, next point - limit]``, a cap on the complement of its periods ``[a, b)``, and a
        rule ends at its ``*_until`` date; so the left end of any allowed interval is a
        synchronization point, a cap period's end or an ``*_until`` date, and only those are
        tried (after ``now + 1``, for a job allowed already). Between two ``*_until`` dates the
        rules repeat every week: when no candidate of one week works, the next date is the only
        hope.

        The answer ``r`` for ``(limit, now)`` is also the answer for any later ``now' < r`` (no
        allowed time lies in ``(now, r)``), so the last answer per limit is kept and reused: a
        queue held back over a night asks the same question at every pass."""
        hit = self._next.get(limit)
        if hit is not None and hit[0] <= now and (hit[1] is None or now < hit[1]):
            return hit[1]
        r = self._next_allowed(limit, now)
        self._next[limit] = (now, r)
        return r

    def _next_allowed(self, limit: int, now: int) -> int | None:
        if self.allowed(limit, int(now) + 1):  # already inside an allowed interval
            return int(now) + 1
        w = int(now) + self.offset
        while True:
            day = w // _DAY
            monday = (day - (day + 3) % 7) * _DAY  # 1970-01-01 was a Thursday
            pos = w - monday
            turns = self._turns
            k = bisect.bisect_right(turns, pos)
            # candidates in (w, w + one week], in time order: the rest of this week, then the next
            cands = [monday + p for p in turns[k:]] + [monday + _WEEK + p for p in turns[:k]]
            cands += [u for u in self._untils if w < u <= w + _WEEK]
            for c in sorted(cands):
                if self.allowed(limit, c - self.offset):
                    return c - self.offset
            later = [u for u in self._untils if u > w + _WEEK]
            if not later:
                return None
            w = later[0] - 1  # the date itself is the first candidate of the next round


@BACKFILLS.register("windows")
class Windows(Backfill):
    """``windows``: the ``inner`` variant over the queued jobs that the site's clock rules let
    start now (see the module docstring). ``stats``: the inner variant's counters plus
    ``windows_held_passes`` (job × pass count of jobs held back by a rule)."""

    name = "windows"
    Options = WindowsOptions

    def __init__(self, jobs, options=None, context=None):
        super().__init__(jobs, options, context)
        self.rules = ClockRules(self.options)
        self.inner = BACKFILLS.get(self.options.inner)(jobs, {}, self.context)
        self.stats = {"windows_held_passes": 0}
        self._held: tuple[int, list[int]] | None = None  # (now, jobs held back) of the last select()
        self._inner_wakes = type(self.inner).next_wake is not Backfill.next_wake  # a variant with its own wake-ups

    def allowed(self, job: int, now: int) -> bool:
        """True when ``job`` may start at ``now`` (s from the trace epoch) under the rules."""
        return self.rules.allowed(self.jobs.time_limit[job], now)

    def select(self, now, queue, cluster):
        most, limit = self.rules.max_limit(now), self.jobs.time_limit
        held = [j for j in queue if limit[j] > most]
        ok = [j for j in queue if limit[j] <= most] if held else list(queue)
        self._held = (now, held)
        self.stats["windows_held_passes"] += len(held)
        # the startable subset changes with the clock: a variant must not reuse state across passes
        self.inner.static_queue = self.static_queue and not self.rules.active
        started = self.inner.select(now, ok, cluster)
        for k, v in self.inner.stats.items():
            self.stats[k] = v
        return started

    def next_wake(self, now, queue, cluster):
        """The earliest time a job held back at ``now`` becomes startable under the rules
        (:meth:`ClockRules.next_allowed`), counting only held jobs that fit in
        ``cluster.free_nodes`` (a wider one needs a job end first, and an end runs a pass), else
        the inner variant's wake-up (None for the built-ins). The rules are monotone in the time
        limit (a shorter job is allowed wherever a longer one is), so the held job with the
        shortest limit decides."""
        cached = self._held
        if cached is not None and cached[0] == now:  # select() at this pass: its held jobs, all still queued
            held = cached[1]
        else:
            most, limit = self.rules.max_limit(now), self.jobs.time_limit
            held = [j for j in queue if limit[j] > most]
        wake = None
        if held:
            nodes, limit, free = self.jobs.nodes, self.jobs.time_limit, cluster.free_nodes
            fits = [limit[j] for j in held if nodes[j] <= free]
            wake = self.rules.next_allowed(min(fits), now) if fits else None
        if not self._inner_wakes:
            return wake
        h = set(held)
        inner = self.inner.next_wake(now, [j for j in queue if j not in h], cluster)
        return min((w for w in (wake, inner) if w is not None), default=None)
