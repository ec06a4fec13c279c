"""No clairvoyance by construction (DESIGN.md §3.3, issue 12 item 2): nothing a policy or backfill
variant receives — the JobView, the Cluster, the scheduler objects — reaches a run time or a
recorded start/end, whether read by name or by walking attributes, ``__dict__``, slots and
closures."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pandas as pd
import pytest

from twin_helpers import frame, simulate_tiny
from twinsweep.core.backfill import BACKFILLS, Backfill
from twinsweep.core.engine import Engine, select_window
from twinsweep.core.errors import ClairvoyanceError
from twinsweep.core.policies import POLICIES, Policy
from twinsweep.core.system import System

#: run times and recorded starts no request, limit or submit time of the trace below equals
SECRET_RUN = (7_777_771, 7_777_793, 7_777_799)
SECRET_START = (9_111_103, 9_111_109, 9_111_119)


def _walk(roots):
    """Every object reachable from ``roots`` through instance ``__dict__``, ``__slots__``,
    containers, bound methods (``__self__``, ``__func__``) and function closures (cells) —
    not through modules, classes or function globals (shared code, no per-run data)."""
    seen, stack, out = set(), list(roots), []
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (types.ModuleType, type)):
            continue
        seen.add(id(o))
        out.append(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif isinstance(o, np.ndarray):
            if o.dtype == object:
                stack.extend(o.ravel().tolist())
        elif isinstance(o, types.MethodType):
            stack.extend((o.__self__, o.__func__))
        elif isinstance(o, types.FunctionType):
            stack.extend(c.cell_contents for c in (o.__closure__ or ()) if _cell_ok(c))
            stack.extend(o.__defaults__ or ())
        elif isinstance(o, (str, bytes, int, float, bool, type(None))):
            continue
        else:
            if hasattr(o, "__dict__"):
                stack.append(vars(o))
            for klass in type(o).__mro__:
                for name in getattr(klass, "__slots__", ()):
                    try:
                        stack.append(object.__getattribute__(o, name))
                    except AttributeError:
                        pass
            if dataclasses.is_dataclass(o):
                stack.extend(getattr(o, f.name) for f in dataclasses.fields(o))
    return out


def _cell_ok(c) -> bool:
    try:
        c.cell_contents
    except ValueError:
        return False
    return True


class _Snoop(Policy):
    """fcfs that keeps everything it is handed (itself: view, options, context; the cluster)."""

    seen: list = []

    def key(self, job):
        return self.jobs.submit[job]

    def observe(self, now, cluster):
        _Snoop.seen.append((self, cluster))


def _jobs():
    return [{"submit": 10 * i, "run": SECRET_RUN[i], "limit": 8_000_000 + i, "nodes": 2 + i,
             "start": SECRET_START[i]} for i in range(3)]


def test_nothing_reachable_from_what_a_scheduler_receives_holds_a_run_time():
    POLICIES.register("_snoop_test", _Snoop)
    try:
        _Snoop.seen = []
        f = frame(_jobs())
        system = System(name="tiny", title="tiny", nodes=10)
        win, t0, t1 = select_window(f, None, None, False, True)
        res = Engine(win, system, "_snoop_test", "easy", True, [100.0] * len(win), 10.0, t0, t1).run()
        assert list(res.jobs["end_time"] - res.jobs["start_time"]) == list(SECRET_RUN)  # the run used them
        reach = _walk([x for pair in _Snoop.seen for x in pair])
        ints = {o for o in reach if isinstance(o, int) and not isinstance(o, bool)}
        assert 8_000_000 in ints and 2 in ints  # the walk does reach the limits and requests
        assert not ints & set(SECRET_RUN), "a run time is reachable from the scheduler's objects"
        assert not ints & set(SECRET_START), "a recorded start is reachable from the scheduler's objects"
        assert not ints & {s + r for s, r in zip(SECRET_START, SECRET_RUN)}, "a recorded end is reachable"
        assert not any(isinstance(o, (pd.DataFrame, pd.Series, Engine)) for o in reach)
    finally:
        POLICIES.unregister("_snoop_test")


def test_the_cluster_has_no_engine_callback_to_open():
    seen = []

    class Peek(Backfill):
        def select(self, now, queue, cluster):
            seen.append(cluster)
            return []

    f = frame(_jobs()[:1])
    system = System(name="tiny", title="tiny", nodes=10)
    win, t0, t1 = select_window(f, None, None, False, True)
    BACKFILLS.register("_peek_test", Peek)
    try:
        Engine(win, system, "fcfs", "_peek_test", True, [100.0], 10.0, t0, t0 + 100).run()
    finally:
        BACKFILLS.unregister("_peek_test")
    c = seen[0]
    assert not hasattr(c, "_start") and not hasattr(c, "__dict__")  # the old closure over the run times is gone
    for name in type(c).__slots__:
        v = object.__getattribute__(c, name)
        assert not isinstance(v, types.FunctionType), f"Cluster.{name} is a function (a closure to open)"


def test_a_policy_reading_a_run_time_from_the_view_fails():
    class Cheat(Policy):
        def key(self, job):
            return self.jobs.run_time[job]

    POLICIES.register("_cheat_test", Cheat)
    try:
        with pytest.raises(ClairvoyanceError, match="run_time"):
            simulate_tiny(_jobs(), policy="_cheat_test")
    finally:
        POLICIES.unregister("_cheat_test")


@pytest.mark.parametrize("name", ["recorded_start_time", "recorded_end_time", "duration", "frame", "node_ids"])
def test_hidden_view_fields_raise(name):
    class Cheat(Backfill):
        def select(self, now, queue, cluster):
            getattr(self.jobs, name)
            return []

    BACKFILLS.register("_cheat_bf_test", Cheat)
    try:
        with pytest.raises(ClairvoyanceError):
            simulate_tiny(_jobs(), backfill="_cheat_bf_test")
    finally:
        BACKFILLS.unregister("_cheat_bf_test")


def test_an_imputed_limit_is_flagged_in_the_view():
    """A job without a usable limit and no system default gets its own run time as its limit:
    the view marks it (``time_limit_imputed``) and the context says there is no default."""
    got = {}

    class Look(Policy):
        def key(self, job):
            got[job] = (self.jobs.time_limit[job], self.jobs.time_limit_imputed[job], self.context.default_time_limit)
            return self.jobs.submit[job]

    POLICIES.register("_look_test", Look)
    try:
        jobs = [{"submit": 0, "run": 50, "limit": None, "nodes": 1}, {"submit": 1, "run": 60, "limit": 100, "nodes": 1}]
        simulate_tiny(jobs, policy="_look_test")
        assert got == {0: (50, True, None), 1: (100, False, None)}
        got.clear()
        simulate_tiny(jobs, policy="_look_test", default_time_limit=3600)
        assert got == {0: (3600, True, 3600), 1: (100, False, 3600)}
    finally:
        POLICIES.unregister("_look_test")
