"""A plug-in that breaks its contract while it runs is one clear error naming it (docs/plugins.md):
policy keys that are NaN, None or not numbers (core/scheduler.py ``QueueScheduler._key``), a
backfill variant's ``select`` returning something other than a list of distinct queued jobs that
fit (``QueueScheduler._start``), and trace-format detectors that raise (core/loaders/_registry.py
``detect_format``). Each case is built by hand on a 4-node machine; the expected messages name
the plug-in, the pass time and the job."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twinsweep import RunConfig, simulate
from twinsweep.core.backfill import BACKFILLS, Backfill, FirstFit
from twinsweep.core.errors import TraceFormatError, TwinError
from twinsweep.core.jobview import JobView
from twinsweep.core.loaders import LOADERS, detect_format, read_trace, register_loader
from twinsweep.core.policies import POLICIES, Policy
from twinsweep.core.policies.base import key_problem
from twinsweep.core.errors import PluginError
from twinsweep.core.resources import Cluster, NodePool
from twinsweep.core.scheduler import QueueScheduler
from twinsweep.testing.conformance import random_workload, tiny_system

#: three jobs submitted at 0, 5 and 9 s asking 1, 3 and 2 nodes of a 4-node machine
SUBMIT, NODES = [0, 5, 9], [1, 3, 2]


def _view() -> JobView:
    n = len(SUBMIT)
    return JobView(submit=SUBMIT, nodes=NODES, time_limit=[100] * n, trace_index=list(range(n)),
                   priority=[math.nan] * n, user=["u"] * n, account=["a"] * n, job_id=["a", "b", "c"])


def _policy(keys, name="keys-test", dynamic=False):
    """A policy class whose key of job j is ``keys[j]`` (key_at too, when ``dynamic``)."""
    return type("Keys", (Policy,), {"name": name, "dynamic": dynamic, "key": lambda self, j: keys[j]})


def _scheduler(policy_cls=None, backfill_cls=FirstFit) -> QueueScheduler:
    view = _view()
    pol = (policy_cls or _policy([0, 1, 2]))(view)
    return QueueScheduler(pol, backfill_cls(view))


def _submit_all(sched: QueueScheduler) -> None:
    for j, t in enumerate(SUBMIT):
        sched.submit(j, t)


# -- policy keys -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, shown, why", [
    (math.nan, "nan", "NaN"), (np.float64("nan"), r"np.float64\(nan\)", "NaN"), (None, "None", "None, not a number"),
    ("a", "'a'", "a str, not a real number"), ((1, 2), r"\(1, 2\)", "a tuple, not a real number")])
def test_a_bad_key_is_an_error_naming_the_policy_the_job_and_the_key(bad, shown, why):
    """Job b's key is bad: its submit (the key is computed there, once) raises; jobs a and c's
    keys are fine. A str among floats used to be a raw TypeError in the queue's sort."""
    sched = _scheduler(_policy([1.0, bad, 2.0]))
    sched.submit(0, 0)
    with pytest.raises(PluginError, match=rf"^policy 'keys-test': key\(1\) for job b \(trace_index 1\) returned "
                                          rf"{shown}, which is {why}.*real number \(int or float, ±inf allowed\)"):
        sched.submit(1, 5)
    assert isinstance(PluginError("x"), TwinError) and isinstance(PluginError("x"), RuntimeError)


def test_a_dynamic_policys_key_at_is_checked_at_each_pass():
    """key_at is checked where the pass re-keys the queue: the error names key_at(job, now)."""
    keys = [0.0, 1.0, 2.0]
    cls = _policy(keys, name="dyn-test", dynamic=True)
    cls.key_at = lambda self, j, now: keys[j] if now < 20 else None
    sched = _scheduler(cls, backfill_cls=BACKFILLS.get("none"))
    _submit_all(sched)
    cluster = Cluster(NodePool(4), NODES, [100] * 3)
    sched.schedule(10, cluster)  # job a starts (1 node), b (3 nodes) fits next: started too
    assert sched.queue() == [2]
    with pytest.raises(PluginError, match=r"^policy 'dyn-test': key_at\(2, 20\) for job c \(trace_index 2\) "
                                          r"returned None, which is None, not a number"):
        sched.schedule(20, cluster)


def test_numpy_and_infinite_keys_order_the_queue():
    """numpy's int64 / float64 and ±inf are real numbers: accepted, and the queue is in key order
    (job b at -inf first, job c (int64 1) next, job a (+inf) last)."""
    sched = _scheduler(_policy([math.inf, -math.inf, np.int64(1)]))
    _submit_all(sched)
    assert sched.queue() == [1, 2, 0]
    sched = _scheduler(_policy([np.float64(2.5), np.float64(0.5), np.float64(1.5)]))
    _submit_all(sched)
    assert sched.queue() == [1, 2, 0]


def test_key_problem_by_hand():
    assert [key_problem(k) for k in (0, -3, 2.5, math.inf, -math.inf, np.int64(4), True)] == [None] * 7
    assert key_problem(math.nan).startswith("NaN") and key_problem(None) == "None, not a number"
    assert key_problem("x") == "a str, not a real number" and key_problem([1]) == "a list, not a real number"


def test_a_nan_key_stops_a_run_with_the_policy_named():
    """Through simulate: the first job whose key is NaN (trace_index 0 of the seeded trace)."""
    cls = type("NaNKey", (Policy,), {"key": lambda self, j: math.nan if self.jobs.trace_index[j] % 3 == 0
                                      else float(self.jobs.submit[j])})
    POLICIES.register("nan-key-test", cls)
    try:
        with pytest.raises(PluginError, match=r"policy 'nan-key-test': key\(0\) for job 0 \(trace_index 0\) "
                                              r"returned nan, which is NaN"):
            simulate(RunConfig(data="conformance", policy="nan-key-test", backfill="easy"),
                     workload=random_workload(1), system=tiny_system())
    finally:
        POLICIES.unregister("nan-key-test")


# -- backfill selections ---------------------------------------------------------------------------

def _variant(select, name="select-test"):
    return type("Sel", (Backfill,), {"name": name, "select": lambda self, now, queue, cluster: select(queue)})


def _pass(select, now=10):
    sched = _scheduler(backfill_cls=_variant(select))
    _submit_all(sched)
    cluster = Cluster(NodePool(4), NODES, [100] * 3)
    sched.schedule(now, cluster)
    return sched, cluster


@pytest.mark.parametrize("got, shown", [(None, r"None \(type NoneType\)"), (0, r"0 \(type int\)"),
                                        ({0}, r"\{0\} \(type set\)"), (np.array([0]), r"array\(\[0\]\) \(type ndarray\)")])
def test_select_returning_a_non_list_is_an_error_naming_the_variant(got, shown):
    """None used to mean "start nothing" silently; a set has no start order; an array is not a list."""
    with pytest.raises(PluginError, match=rf"^backfill 'select-test': select at 10 s returned {shown}; it must return "
                                          r"a list of the queued jobs to start, in start order \(\[\] to start none\)"):
        _pass(lambda q: got)


def test_select_returning_a_tuple_starts_its_jobs():
    """A tuple is a sequence in start order: jobs a (1 node) and b (3 nodes) start, c waits."""
    sched, cluster = _pass(lambda q: (0, 1))
    assert sched.queue() == [2] and cluster.free_nodes == 0
    assert [j for j, _ in cluster.pop_started()] == [0, 1]


def test_select_returning_a_job_twice_or_not_queued_or_too_many_nodes():
    with pytest.raises(PluginError, match=r"^backfill 'select-test': select at 10 s returned job 0 twice; it must "
                                          r"return distinct queued jobs$"):
        _pass(lambda q: [0, 0])
    with pytest.raises(PluginError, match=r"^backfill 'select-test': select at 10 s returned job 7, which is not queued; it must "
                                          r"return distinct queued jobs$"):
        _pass(lambda q: [0, 7])
    # a (1 node) fits, b (3 nodes) fits in the 3 left, c (2 nodes) does not: 0 free after 2 jobs, 4 at the pass
    with pytest.raises(PluginError, match=r"^backfill 'select-test': select at 10 s returned job 2 \(2 nodes\) with 0 "
                                          r"node\(s\) free after the 2 job\(s\) before it in its list \(the jobs it "
                                          r"returns must fit together in cluster.free_nodes: 4 at this pass\)"):
        _pass(lambda q: list(q))


# -- format detection ------------------------------------------------------------------------------

def test_detectors_that_raise_are_named_when_no_format_is_found(tmp_path):
    """A detector that raises scores 0 (the others still detect: an SWF file is still found) and
    the "cannot detect" error says which detector raised and why."""
    def crash(trace):
        raise KeyError("detector bug")

    def never_load(trace, lenient=False):
        raise AssertionError("not called")

    register_loader("crash-detect-test", crash, never_load)
    try:
        plain = tmp_path / "notes.txt"
        plain.write_text("nothing a loader knows\n")
        with pytest.raises(TraceFormatError, match=r"cannot detect the trace format; known formats: .*; 1 detector\(s\) "
                                                   r"raised instead of scoring the file \(a bug in that loader\): "
                                                   r"crash-detect-test \(KeyError: 'detector bug'\)"):
            detect_format(read_trace(plain))
        swf = tmp_path / "jobs.swf"
        swf.write_text("; MaxNodes: 4\n1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
        assert detect_format(read_trace(swf)) == "swf"
    finally:
        LOADERS.unregister("crash-detect-test")


# -- a plug-in's own exception ---------------------------------------------------------------------

def _raises(msg):
    def fn(*args):
        raise ValueError(msg)
    return fn


def test_a_policy_whose_key_raises_is_one_error_naming_it_the_job_and_the_line():
    """key(1) raises: a PluginError names the policy, the call, the job, the exception and this
    file's line, with the exception chained (not a traceback through the queue)."""
    cls = _policy([0.0, 1.0, 2.0], name="raises-test")
    cls.key = lambda self, j: 1.0 if j != 1 else _raises("boom in key")()
    sched = _scheduler(cls)
    sched.submit(0, 0)
    with pytest.raises(PluginError, match=r"^policy 'raises-test': key\(1\) for job b \(trace_index 1\) raised "
                                          r"ValueError: boom in key \(raised at \S+/test_plugins_errors.py, line \d+\)$"
                       ) as e:
        sched.submit(1, 5)
    assert isinstance(e.value.__cause__, ValueError)


@pytest.mark.parametrize("owner, hook, call", [
    ("policy", "observe", "observe at 10 s"),
    ("backfill", "select", "select at 10 s"),
    ("policy", "on_start", "on_start at 10 s"),
    ("backfill", "next_wake", "next_wake at 10 s")])
def test_a_hook_that_raises_is_one_error_naming_the_plug_in_and_the_pass(owner, hook, call):
    """Each per-pass hook of a policy or backfill variant that raises: one PluginError naming
    the plug-in, the hook and the pass time (the first pass, at 10 s)."""
    pol = _policy([0.0, 1.0, 2.0], name="hooks-test")
    bf = type("BF", (FirstFit,), {"name": "hooks-bf"})
    setattr(pol if owner == "policy" else bf, hook, lambda self, *a: _raises(f"boom in {hook}")())
    sched = _scheduler(pol, bf)
    _submit_all(sched)
    who = "policy 'hooks-test'" if owner == "policy" else "backfill 'hooks-bf'"
    with pytest.raises(PluginError, match=rf"^{who}: {call} raised ValueError: boom in {hook} "
                                          r"\(raised at \S+/test_plugins_errors.py, line \d+\)$"):
        sched.schedule(10, Cluster(NodePool(4), NODES, [100] * 3))


def test_on_remove_that_raises_names_the_cancelled_job():
    pol = _policy([0.0, 1.0, 2.0], name="remove-test")
    pol.on_remove = lambda self, j, now: _raises("boom in on_remove")()
    sched = _scheduler(pol)
    _submit_all(sched)
    with pytest.raises(PluginError, match=r"^policy 'remove-test': on_remove\(2, 30\) for job c \(trace_index 2\) "
                                          r"raised ValueError: boom in on_remove"):
        sched.cancel(2, 30)


def test_a_run_whose_policy_constructor_raises_names_the_policy(tmp_path):
    """A registered policy whose constructor raises a plain exception: ``simulate`` raises one
    PluginError naming the policy and its class, before any job is scheduled; a ConfigError the
    constructor raises (a missing input) stays a ConfigError."""
    from twinsweep.core.errors import ConfigError

    class Broken(Policy):
        name = "ctor-raises-test"

        def __init__(self, jobs, options=None, context=None):
            raise KeyError("no such column")

        def key(self, j):
            return 0.0

    class NeedsInput(Broken):
        name = "ctor-config-test"

        def __init__(self, jobs, options=None, context=None):
            raise ConfigError("ctor-config-test needs accounts")

    wl, system = random_workload(1, n=5), tiny_system()
    for cls in (Broken, NeedsInput):
        POLICIES.register(cls.name, cls)
    try:
        with pytest.raises(PluginError, match=r"^policy 'ctor-raises-test': building it \(\S*Broken\) raised "
                                              r"KeyError: 'no such column' \(raised at \S+/test_plugins_errors.py"):
            simulate(RunConfig(data="conformance", policy="ctor-raises-test", backfill="easy"), workload=wl, system=system)
        with pytest.raises(ConfigError, match="^ctor-config-test needs accounts$"):
            simulate(RunConfig(data="conformance", policy="ctor-config-test", backfill="easy"), workload=wl, system=system)
    finally:
        for cls in (Broken, NeedsInput):
            POLICIES.unregister(cls.name)


@pytest.mark.parametrize("exc", [MemoryError(), OSError(5, "Input/output error"), RecursionError("deep")])
def test_a_machine_failure_inside_a_hook_passes_through_to_be_retried(exc):
    """Out of memory, an I/O error or a recursion limit inside a policy's key or a backfill's
    select is not a PluginError (which a sweep never retries: helper-58), but itself."""
    def boom(*a):
        raise exc

    pol = _policy([0.0, 1.0, 2.0], name="machine-test")
    pol.key = lambda self, j: boom()
    sched = _scheduler(pol)
    with pytest.raises(type(exc)) as e:
        sched.submit(0, 0)
    assert not isinstance(e.value, PluginError)
    bf = type("BF", (FirstFit,), {"name": "machine-bf", "select": lambda self, *a: boom()})
    sched = _scheduler(None, bf)
    _submit_all(sched)
    with pytest.raises(type(exc)) as e:
        sched.schedule(10, Cluster(NodePool(4), NODES, [100] * 3))
    assert not isinstance(e.value, PluginError)
