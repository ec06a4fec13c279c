"""Shared conformance suites every policy, backfill variant and backend runs (issue 12 item 4).

Each suite is a class of pytest tests that needs one fixture naming the plug-in under test
(Optuna's ``BasicSamplerTestCase`` pattern, optuna/testing/pytest_samplers.py):

* :class:`PolicyConformance` — fixture ``policy_name`` (and optionally ``policy_options``, a
  dict of run options such as ``accounts_in``);
* :class:`BackfillConformance` — fixture ``backfill_name`` (and optionally ``backfill_options``,
  a dict of the variant's options, e.g. clock rules for ``windows``);
* :class:`BackendConformance` — fixture ``backend_factory``: a callable returning a new backend;
* :class:`LoaderConformance` — fixtures ``loader_name`` and ``loader_sample`` (a file).

What every plug-in must do (DESIGN.md §3, §6), on a seeded random trace of :data:`N_JOBS` jobs on
an :data:`NODES`-node machine (about a second of CPU per plug-in):

* capacity: at no second do the running jobs hold more nodes than the machine has;
* no start before submit; in an open window every job that fits ends (none is left queued);
* determinism: the same config and seed give byte-identical jobs.parquet / timeline.parquet /
  stats.json (``write_run`` twice);
* clear errors: an unknown option is a ConfigError naming it, before anything runs;
* no clairvoyance: a subclass of the plug-in that reads a job's run time from the view it is
  given fails the run with :class:`~twinsweep.core.errors.ClairvoyanceError`;
* keys (policies): every key the run computes is a real number (int or float, ±inf allowed),
  never NaN, None or a string (:func:`twinsweep.core.policies.base.key_problem`), so that the
  queue order is defined;
* wake-ups (backfill variants): every time :meth:`Backfill.next_wake` returns is None or an
  integer > the pass's time, and the run still meets the schedule properties above;
* loaders: the sample loads into the standard columns and dtypes, the same twice and from a
  gzip copy, its detector scores it, and the loader's own table (before ``load_workload``'s
  checks) has no impossible value (:func:`twinsweep.core.workload.jobs_problems`: a negative run
  time or limit, an end before its start ...);
* backends: every task comes back exactly once, a failing task is an outcome (not an
  exception), shared values reach the run function, and twin runs give the same results as
  the ``local`` backend run serially.

Every failed check names the plug-in under test and what differed.

Run functions handed to backends live here (importable by pool, Ray and Slurm workers).
"""

from __future__ import annotations

import gzip
import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from twinsweep.backends.base import Task, make_backend
from twinsweep.core.backfill import BACKFILLS
from twinsweep.core.config import RunConfig
from twinsweep.core.errors import ClairvoyanceError, ConfigError, TraceFormatError
from twinsweep.core.loaders import get_loader, load_workload, read_trace
from twinsweep.core.policies import POLICIES
from twinsweep.core.policies.base import key_problem
from twinsweep.core.errors import PluginError
from twinsweep.core.run import simulate, write_run
from twinsweep.core.scheduler import validate_scheduler
from twinsweep.core.system import System
from twinsweep.core.workload import WORKLOAD_COLUMNS, Workload, coerce_jobs_frame, jobs_problems

__all__ = ["NODES", "N_JOBS", "random_workload", "tiny_system", "max_busy_nodes",
           "PolicyConformance", "BackfillConformance", "BackendConformance", "LoaderConformance"]

#: machine size and trace length of the suites' runs
NODES, N_JOBS = 16, 120


def random_workload(seed: int = 0, n: int = N_JOBS, nodes: int = NODES) -> Workload:
    """A seeded random trace (in memory): bursts of submissions (several per second), run times
    0-3600 s, limits missing or shorter or longer than the run, sizes 1..``nodes`` (a few whole-
    machine jobs), three users and two accounts, trace priorities 0-3."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 6 * 3600, n) // 7 * 7)
    run = rng.integers(0, 3600, n)
    limit = np.where(rng.random(n) < 0.1, -1, np.maximum(run + rng.integers(-600, 1800, n), 1))
    size = np.where(rng.random(n) < 0.05, nodes, rng.integers(1, max(nodes // 2, 1) + 1, n))
    df = pd.DataFrame({
        "job_id": [str(i) for i in range(n)], "trace_index": np.arange(n), "user": [f"u{i % 3}" for i in range(n)],
        "account": [f"a{i % 2}" for i in range(n)], "submit_time": submit, "recorded_start_time": submit,
        "recorded_end_time": submit + run, "run_time": run, "time_limit": limit, "procs": size, "nodes": size,
        "cpu_util": rng.random(n), "gpu_util": np.full(n, math.nan), "avg_power_w": np.full(n, math.nan),
        "energy_j": np.full(n, math.nan), "priority": rng.integers(0, 4, n).astype(float), "partition": None,
        "status": "completed", "node_ids": None,
    })
    return Workload(jobs=coerce_jobs_frame(df), epoch=0, checksum=f"sha256:conformance-{seed}", source="conformance",
                    format="test")


def tiny_system(nodes: int = NODES) -> System:
    """A machine of ``nodes`` nodes with the default power model."""
    return System(name="conformance", title="conformance", nodes=nodes)


def max_busy_nodes(jobs: pd.DataFrame) -> int:
    """Most nodes held at once by the jobs of a jobs table (intervals ``[start, end)``; ends before
    starts at one second; zero-length jobs hold their nodes for their pass only and are skipped)."""
    ev = []
    for s, e, m in zip(jobs["start_time"], jobs["end_time"], jobs["nodes"]):
        if pd.isna(s) or pd.isna(e) or int(e) <= int(s):
            continue
        ev += [(int(s), 1, int(m)), (int(e), 0, -int(m))]
    busy = peak = 0
    for _, _, d in sorted(ev):
        busy += d
        peak = max(peak, busy)
    return peak


def _config(policy: str, backfill: str, options: dict | None = None, seed: int = 0) -> RunConfig:
    return RunConfig(data="conformance", policy=policy, backfill=backfill, seed=seed,
                     options=tuple(sorted((options or {}).items())))


def _check_schedule(res, what: str, nodes: int = NODES) -> None:
    """Assert the schedule properties of run ``res`` (module docstring); ``what`` names the
    plug-in(s) under test in each failure message."""
    jobs = res.jobs
    peak = max_busy_nodes(jobs)
    assert peak <= nodes, f"{what}: {peak} nodes busy at once on a {nodes}-node machine"
    if "busy_nodes" in res.timeline:
        most = int(res.timeline["busy_nodes"].max())
        assert most <= nodes, f"{what}: the timeline has {most} busy nodes on a {nodes}-node machine"
    started = jobs[jobs["start_time"].notna()]
    early = started[started["start_time"] < started["submit_time"]]
    assert early.empty, (f"{what}: {len(early)} job(s) started before their submit time, e.g. job "
                         f"{early['job_id'].iloc[0] if len(early) else ''}")
    left = jobs[jobs["status"].isin(["queued", "running"])]
    assert left.empty, (f"{what}: open window, yet {len(left)} job(s) never finished (still "
                        f"{', '.join(sorted(set(left['status'])))}; e.g. job {left['job_id'].iloc[0] if len(left) else ''})")


def _output_bytes(res, out: Path) -> dict:
    write_run(res, out, timing=False)
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())
            if p.name in ("jobs.parquet", "timeline.parquet", "stats.json")}


def _check_same_outputs(runs, out: Path, what: str) -> None:
    """Assert two runs of one config and seed wrote byte-identical files; the message names
    ``what`` and the files that differ."""
    a, b = _output_bytes(runs[0], out / "a"), _output_bytes(runs[1], out / "b")
    differ = sorted(f for f in a.keys() | b.keys() if a.get(f) != b.get(f))
    assert not differ, (f"{what}: two runs of the same config and seed wrote different {', '.join(differ)} (not "
                        "deterministic: an unseeded random generator, the order of a set of objects, the clock?)")


def _expect_error(error: type[Exception], pattern: str, what: str, fn, *args, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` and assert it raises ``error`` with a message matching the
    regular expression ``pattern``; a failure names ``what`` and what happened instead (an error
    of another type propagates as it is)."""
    try:
        fn(*args, **kwargs)
    except error as exc:
        assert re.search(pattern, str(exc)), f"{what}: the {error.__name__} does not name {pattern!r}: {exc}"
        return
    pytest.fail(f"{what}: expected a {error.__name__} naming {pattern!r}, and nothing was raised")


def _cheat(cls, *hooks: str):
    """A subclass of plug-in class ``cls`` whose ``hooks`` read a run time before delegating."""
    def make(hook):
        def cheating(self, *a, **k):
            self.jobs.run_time  # noqa: B018 - the clairvoyant read under test
            return getattr(cls, hook)(self, *a, **k)
        return cheating

    return type(f"Clairvoyant{cls.__name__}", (cls,), {**{h: make(h) for h in hooks}, "name": ""})


class PolicyConformance:
    """What every queue policy must do (module docstring). Fixture: ``policy_name``; optional
    ``policy_options`` (run options the policy needs, e.g. ``{"accounts_in": path}``)."""

    @pytest.fixture
    def policy_name(self) -> str:
        raise NotImplementedError("a PolicyConformance subclass provides the policy_name fixture")

    @pytest.fixture
    def policy_options(self) -> dict:
        return {}

    @pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
    def test_capacity_submit_and_completion(self, policy_name, policy_options, backfill):
        res = simulate(_config(policy_name, backfill, policy_options), workload=random_workload(1),
                       system=tiny_system())
        _check_schedule(res, f"policy {policy_name!r} with backfill {backfill!r}")

    def test_same_seed_byte_identical_outputs(self, policy_name, policy_options, tmp_path):
        runs = [simulate(_config(policy_name, "easy", policy_options, seed=3), workload=random_workload(2),
                         system=tiny_system()) for _ in range(2)]
        _check_same_outputs(runs, tmp_path, f"policy {policy_name!r} (backfill 'easy', seed 3)")

    def test_unknown_option_is_a_clear_error(self, policy_name, policy_options):
        _expect_error(ConfigError, "no_such_option_xyz", f"policy {policy_name!r} given an unknown option",
                      validate_scheduler, policy_name, "none", dict(policy_options, no_such_option_xyz=1))

    def test_reading_a_run_time_fails(self, policy_name, policy_options):
        name = f"clairvoyant-{policy_name}"
        POLICIES.register(name, _cheat(POLICIES.get(policy_name), "key", "key_at"), replace=True)
        try:
            _expect_error(ClairvoyanceError, "run_time", f"a subclass of policy {policy_name!r} reading a run time",
                          simulate, _config(name, "easy", policy_options), workload=random_workload(1),
                          system=tiny_system())
        finally:
            POLICIES.unregister(name)

    def test_keys_are_real_numbers_never_nan(self, policy_name, policy_options):
        """Every key the run computes (``key``, and ``key_at`` of a dynamic policy) is a real
        number, not NaN: recorded on a run and checked on the values themselves (the scheduler
        stops a run at the first bad key with a PluginError, reported here naming the policy)."""
        cls = POLICIES.get(policy_name)
        seen: list[tuple[int, int | None, object]] = []

        def key(self, job):
            k = cls.key(self, job)
            seen.append((job, None, k))
            return k

        def key_at(self, job, now):
            k = cls.key_at(self, job, now)
            seen.append((job, now, k))
            return k

        name = f"key-recording-{policy_name}"
        POLICIES.register(name, type(f"KeyRecording{cls.__name__}", (cls,), {"key": key, "key_at": key_at, "name": ""}),
                          replace=True)
        try:
            simulate(_config(name, "easy", policy_options), workload=random_workload(3), system=tiny_system())
        except PluginError as exc:
            pytest.fail(f"policy {policy_name!r}: {exc}")
        finally:
            POLICIES.unregister(name)
        assert seen, f"policy {policy_name!r}: no key was computed (the scheduler asks one per submitted job)"
        bad = [(job, now, k, why) for job, now, k in seen if (why := key_problem(k)) is not None]
        assert not bad, (f"policy {policy_name!r}: {len(bad)} key(s) are not real numbers or are NaN, e.g. "
                         + "; ".join(f"{'key' if now is None else f'key_at at {now} s'} of job {job} = {k!r} ({why})"
                                     for job, now, k, why in bad[:3]))


class BackfillConformance:
    """What every backfill variant must do (module docstring). Fixture: ``backfill_name``;
    optional ``backfill_options`` (the variant's options, checked like a run's)."""

    @pytest.fixture
    def backfill_name(self) -> str:
        raise NotImplementedError("a BackfillConformance subclass provides the backfill_name fixture")

    @pytest.fixture
    def backfill_options(self) -> dict:
        return {}

    @pytest.mark.parametrize("kill", [True, False], ids=["kill", "nokill"])
    @pytest.mark.parametrize("policy", ["fcfs", "sjf", "ljf"])
    def test_capacity_submit_and_completion(self, backfill_name, backfill_options, policy, kill):
        cfg = RunConfig(data="conformance", policy=policy, backfill=backfill_name, kill=kill,
                        options=tuple(sorted(backfill_options.items())))
        _check_schedule(simulate(cfg, workload=random_workload(4), system=tiny_system()),
                        f"backfill {backfill_name!r} under policy {policy!r} ({'kill' if kill else 'no kill'} at limits)")

    def test_same_seed_byte_identical_outputs(self, backfill_name, backfill_options, tmp_path):
        runs = [simulate(_config("sjf", backfill_name, backfill_options, seed=5), workload=random_workload(5),
                         system=tiny_system()) for _ in range(2)]
        _check_same_outputs(runs, tmp_path, f"backfill {backfill_name!r} (policy 'sjf', seed 5)")

    def test_unknown_option_is_a_clear_error(self, backfill_name, backfill_options):
        _expect_error(ConfigError, "no_such_option_xyz", f"backfill {backfill_name!r} given an unknown option",
                      validate_scheduler, "fcfs", backfill_name, dict(backfill_options, no_such_option_xyz=1))

    def test_reading_a_run_time_fails(self, backfill_name, backfill_options):
        name = f"clairvoyant-{backfill_name}"
        BACKFILLS.register(name, _cheat(BACKFILLS.get(backfill_name), "select"), replace=True)
        try:
            _expect_error(ClairvoyanceError, "run_time", f"a subclass of backfill {backfill_name!r} reading a run time",
                          simulate, _config("fcfs", name, backfill_options), workload=random_workload(1),
                          system=tiny_system())
        finally:
            BACKFILLS.unregister(name)

    def test_wake_ups_are_after_the_pass(self, backfill_name, backfill_options):
        """Each next_wake value is None or an integer > now (the scheduler would raise otherwise;
        recorded here so that the property is checked on the values themselves)."""
        cls = BACKFILLS.get(backfill_name)
        seen: list[tuple[int, object]] = []

        def next_wake(self, now, queue, cluster):
            w = cls.next_wake(self, now, queue, cluster)
            seen.append((now, w))
            return w

        name = f"wake-recording-{backfill_name}"
        BACKFILLS.register(name, type(f"WakeRecording{cls.__name__}", (cls,), {"next_wake": next_wake, "name": ""}),
                           replace=True)
        try:
            res = simulate(_config("fcfs", name, backfill_options), workload=random_workload(6), system=tiny_system())
        finally:
            BACKFILLS.unregister(name)
        _check_schedule(res, f"backfill {backfill_name!r} (wake-ups recorded)")
        assert seen, (f"backfill {backfill_name!r}: next_wake was never called (the scheduler calls it after every "
                      "pass with a queue)")
        bad = [(now, w) for now, w in seen if w is not None and not (isinstance(w, int) and w > now)]
        assert not bad, f"backfill {backfill_name!r}: next_wake returned times not after the pass (now, time): {bad[:5]}"


# -- backends ------------------------------------------------------------------------------------

def twin_run(payload: dict, shared) -> dict:
    """Backend run function: one twin run of ``payload`` (policy, backfill, seed) on the shared
    ``(workload seed, nodes)``; returns the sha256 of its jobs table's schedule columns."""
    wl_seed, nodes = shared
    res = simulate(_config(payload["policy"], payload["backfill"], seed=payload["seed"]),
                   workload=random_workload(wl_seed, n=60, nodes=nodes), system=tiny_system(nodes))
    cols = res.jobs[["job_id", "start_time", "end_time", "status"]].astype(str)
    return {"digest": hashlib.sha256(cols.to_csv(index=False).encode()).hexdigest(),
            "started": int(res.jobs["start_time"].notna().sum())}


def fail_on_negative(payload, shared):
    """Backend run function: raises ValueError for a negative payload, else payload + shared."""
    if payload < 0:
        raise ValueError(f"negative payload {payload}")
    return payload + shared


def _twin_tasks():
    return [Task(f"{p}-{b}-{s}", {"policy": p, "backfill": b, "seed": s}, "wl")
            for p in ("fcfs", "sjf") for b in ("easy", "conservative") for s in (0, 1)]


class BackendConformance:
    """What every backend must do (module docstring). Fixture: ``backend_factory`` (a callable
    returning a new, unstarted backend; the suite uses it as a context manager)."""

    @pytest.fixture
    def backend_factory(self):
        raise NotImplementedError("a BackendConformance subclass provides the backend_factory fixture")

    def test_every_task_once_errors_are_outcomes_shared_values(self, backend_factory):
        tasks = [Task(f"t{i}", i, "off") for i in range(-2, 4)]
        with backend_factory() as b:
            outs = list(b.run(tasks, fail_on_negative, {"off": 10}))
            what = f"backend {getattr(b, 'name', '') or type(b).__name__!r}"
        got, want = sorted(o.key for o in outs), sorted(t.key for t in tasks)
        assert got == want, f"{what}: the outcomes' task keys are {got}, expected each of {want} once"
        for o in outs:
            i = int(o.key[1:])
            if i < 0:
                assert not o.ok and o.error == f"ValueError: negative payload {i}" and "Traceback" in (o.traceback or ""), (
                    f"{what}: task {o.key} raised ValueError('negative payload {i}'); expected a failed outcome with "
                    f"that error and its traceback, got ok={o.ok}, error={o.error!r}")
            else:
                assert o.ok and o.result == i + 10, (f"{what}: task {o.key} should give {i} + shared 10 = {i + 10}; got "
                                                     f"ok={o.ok}, result={o.result!r}, error={o.error!r}")

    def test_twin_runs_equal_the_local_backend(self, backend_factory):
        with make_backend("local", workers=1) as b:
            want = {o.key: o.result for o in b.run(_twin_tasks(), twin_run, {"wl": (7, 8)})}
        with backend_factory() as b:
            got = {o.key: (o.result if o.ok else o.error) for o in b.run(_twin_tasks(), twin_run, {"wl": (7, 8)})}
            what = f"backend {getattr(b, 'name', '') or type(b).__name__!r}"
        differ = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
        assert not differ, (f"{what}: twin runs differ from the serial local backend's for {differ} (e.g. "
                            f"{differ[0] if differ else ''}: {got.get(differ[0]) if differ else ''!r} instead of "
                            f"{want.get(differ[0]) if differ else ''!r})")


# -- loaders -------------------------------------------------------------------------------------

class LoaderConformance:
    """What every trace loader must do. Fixtures: ``loader_name`` and ``loader_sample`` (path of a
    small file in that format, plain text or gzip).

    The file loads into a Workload with the standard columns and dtypes, ``trace_index`` 0..n-1
    and ``checksum`` = sha256 of the uncompressed bytes; its detector scores it > 0; loading twice
    gives equal tables; a gzip copy loads the same jobs; the loader's own table has no impossible
    value (negative run time or limit, an end before its start ...: ``load_workload`` refuses
    such a table); a missing file is a TraceFormatError naming the file."""

    @pytest.fixture
    def loader_name(self) -> str:
        raise NotImplementedError("a LoaderConformance subclass provides the loader_name fixture")

    @pytest.fixture
    def loader_sample(self) -> Path:
        raise NotImplementedError("a LoaderConformance subclass provides the loader_sample fixture")

    def test_loads_standard_columns_and_round_trips(self, loader_name, loader_sample, tmp_path):
        what = f"loader {loader_name!r} on {Path(loader_sample).name}"
        wl = load_workload(loader_sample, format=loader_name)
        for col, dtype in WORKLOAD_COLUMNS.items():
            got = str(wl.jobs[col].dtype) if col in wl.jobs else "missing"
            assert got == dtype, f"{what}: column {col!r} is {got}, expected {dtype} (core.workload.coerce_jobs_frame)"
        assert list(wl.jobs["trace_index"]) == list(range(len(wl.jobs))), f"{what}: trace_index is not 0..n-1"
        text = read_trace(loader_sample)
        want = "sha256:" + hashlib.sha256(text.data).hexdigest()
        assert wl.checksum == text.checksum == want, (f"{what}: Workload.checksum is {wl.checksum!r}, expected the "
                                                      f"sha256 of the file's uncompressed bytes ({want!r})")
        score = get_loader(loader_name).detect(text)
        assert float(score or 0) > 0, f"{what}: its detector scores its own sample {score!r} (expected > 0)"
        assert load_workload(loader_sample, format=loader_name).jobs.equals(wl.jobs), (
            f"{what}: loading the file twice gave different tables")
        gz = tmp_path / (Path(loader_sample).name + ".copy.gz")
        gz.write_bytes(gzip.compress(text.data))
        assert load_workload(gz, format=loader_name).jobs.drop(columns=["job_id"]).equals(wl.jobs.drop(columns=["job_id"])), (
            f"{what}: a gzip copy of the file loads different jobs")

    def test_jobs_have_possible_values(self, loader_name, loader_sample):
        """The loader's ``load`` itself (before ``load_workload``'s checks) gives no job a
        negative run time, limit, energy, power or utilisation, an end before its start or an
        unknown status (:func:`twinsweep.core.workload.jobs_problems`)."""
        wl = get_loader(loader_name).load(read_trace(loader_sample), False)
        n, first = jobs_problems(coerce_jobs_frame(wl.jobs))
        assert n == 0, (f"loader {loader_name!r} on {Path(loader_sample).name}: {n} job(s) with impossible values, "
                        f"e.g. {'; '.join(first)} (reject such lines in load, naming the line: TraceFormatError)")

    def test_missing_file_error_names_it(self, loader_name, tmp_path):
        missing = tmp_path / "no-such-trace.log"
        _expect_error(TraceFormatError, "no-such-trace.log", f"loader {loader_name!r} given a missing file",
                      load_workload, missing, format=loader_name)
