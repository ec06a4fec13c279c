"""Backends: same interface, errors become outcomes, and local / pool / ray give byte-identical runs."""

from __future__ import annotations

import os
import sys

import pytest

from twinsweep.backends.base import Outcome, Task, call_safely, make_backend
from twinsweep.core.errors import (ClairvoyanceError, ConfigError, DiskFullError, PluginError, ProtocolError,
                                   TraceFormatError, UnknownNameError)
from twinsweep.sweep.api import run_sweep
from test_sweep_support import run_files, write_spec, write_swf


def square_or_fail(payload, shared):
    """Test run function: fails on negative payloads, else payload**2 + shared offset."""
    if payload < 0:
        raise ValueError(f"negative payload {payload}")
    return {"value": payload * payload + (shared or 0), "pid": os.getpid()}


@pytest.fixture(scope="module")
def ray_session():
    """One embedded Ray for the module (backends reuse it instead of starting their own)."""
    ray = pytest.importorskip("ray")
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests/
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
    yield ray
    ray.shutdown()


def _check_outcomes(outs):
    by_key = {o.key: o for o in outs}
    assert set(by_key) == {f"t{i}" for i in range(-2, 6)}
    for i in range(-2, 6):
        o = by_key[f"t{i}"]
        if i < 0:
            assert not o.ok and o.error == f"ValueError: negative payload {i}"
            assert "Traceback" in o.traceback and "square_or_fail" in o.traceback
        else:
            assert o.ok and o.result["value"] == i * i + 10


TASKS = [Task(f"t{i}", i, "off") for i in range(-2, 6)]


@pytest.mark.parametrize("workers", [1, 2])
def test_local_backend_runs_all_and_records_errors(workers):
    with make_backend("local", workers=workers) as b:
        outs = list(b.run(TASKS, square_or_fail, {"off": 10}))
    _check_outcomes(outs)
    if workers == 2:
        assert len({o.result["pid"] for o in outs if o.ok} - {os.getpid()}) >= 1


def test_ray_backend_runs_all_and_records_errors(ray_session):
    with make_backend("ray", workers=2) as b:
        outs = list(b.run(TASKS, square_or_fail, {"off": 10}))
    _check_outcomes(outs)
    assert ray_session.is_initialized()  # it did not shut down a Ray it did not start


def test_make_backend_errors():
    with pytest.raises(UnknownNameError, match="valid backend names: local, ray"):
        make_backend("slurmx")
    with pytest.raises(ConfigError, match="takes no address"):
        make_backend("local", address="auto")
    with pytest.raises(ConfigError, match="workers must be >= 1"):
        make_backend("local", workers=0)



class _KeyIsNaN(PluginError):
    """A plug-in's own subclass of an input error; its messages name no class."""


def _raise_payload(payload, shared):
    raise payload


@pytest.mark.parametrize("exc, deterministic", [
    (_KeyIsNaN("policy 'mine' at t=60: job 7's key is NaN"), True),
    (UnknownNameError("policy", "fifo", ["fcfs", "sjf"]), True),
    (TraceFormatError("x.swf", 3, "18 fields, expected 18 or more"), True),
    (ClairvoyanceError("a scheduler cannot read run_time"), True),
    (RuntimeError("ConfigError: a message that looks like an input error"), False),
    (ProtocolError("scheduler 'ext' exited"), False),
    (DiskFullError("x.parquet: disk full"), False),
    (OSError(5, "Input/output error"), False),
])
def test_call_safely_marks_input_errors_deterministic_by_their_class(exc, deterministic):
    """The flag the sweep's never-retry rule reads comes from isinstance (core.errors.INPUT_ERRORS),
    not from the error's text: a plug-in's subclass whose message names no class is deterministic,
    a RuntimeError whose message starts with "ConfigError:" is not."""
    oc = call_safely(_raise_payload, Task("k", exc), None)
    assert not oc.ok and oc.error.startswith(f"{type(exc).__name__}: ")
    assert oc.deterministic is deterministic
    assert Outcome.from_json(oc.to_json()) == oc  # kept through an outcome file (Slurm)
    assert call_safely(lambda p, s: 1, Task("k", None), None).deterministic is False


def test_outcome_records_without_the_flag_read_it_from_the_error_class_named():
    """A Slurm outcome file written before outcomes carried ``deterministic``: the class at the head
    of its error decides, by the same classes (core.errors.INPUT_ERRORS and their subclasses)."""
    def read(error, ok=False):
        return Outcome.from_json({"key": "k", "ok": ok, "error": error}).deterministic

    assert read("ConfigError: bad option") and read("UnknownNameError: unknown policy 'x'")
    assert read("TraceFormatError: x.swf:3: bad") and read("PluginError: NaN") and read("ClairvoyanceError: no")
    assert not read("RuntimeError: boom") and not read("ProtocolError: exited") and not read("DiskFullError: full")
    assert not read("TwinError: x") and not read("INPUT_ERRORS: x") and not read(None) and not read("", ok=True)
    assert Outcome.from_json({"key": "k", "ok": False, "error": "ConfigError: x", "deterministic": False}) \
        .deterministic is False  # a record that carries the flag is taken as it is


def test_a_slurm_chunk_writes_the_flag_into_its_outcome_files(tmp_path):
    """What one array task runs (in-process here): its outcome files carry ``deterministic``."""
    from twinsweep.backends.slurm.task import ChunkRunner, _load_outcome, _outcome_name

    tasks = [Task("a", _KeyIsNaN("job 7's key is NaN")), Task("b", RuntimeError("flaky"))]
    ChunkRunner()(str(tmp_path / "out"), tasks, _raise_payload, {})
    a, b = (_load_outcome(tmp_path / "out" / _outcome_name(k)) for k in ("a", "b"))
    assert (a.ok, a.error, a.deterministic) == (False, "_KeyIsNaN: job 7's key is NaN", True)
    assert (b.ok, b.error, b.deterministic) == (False, "RuntimeError: flaky", False)

def test_local_pool_and_ray_give_byte_identical_runs(tmp_path, ray_session):
    trace = write_swf(tmp_path / "tiny.swf", n_jobs=30)
    outs = {}
    for name, backend, workers in (("serial", "local", 1), ("pool", "local", 2), ("ray", "ray", 2)):
        d = tmp_path / name
        d.mkdir()
        res = run_sweep(write_spec(d, seeds=2, trace=trace), backend=backend, workers=workers, report=False)
        assert res.ran == res.planned == 8 and not res.failed
        outs[name] = (run_files(d / "out"), (d / "out" / "runs.parquet").read_bytes())
    assert outs["serial"][0] == outs["pool"][0] == outs["ray"][0]
    assert outs["serial"][1] == outs["pool"][1] == outs["ray"][1]
    assert len(outs["serial"][0]) == 8 * 5


def _cancelled_by_sigint(payload, shared):
    import signal

    import pyarrow as pa

    raise pa.lib.ArrowCancelled("Operation cancelled", signum=signal.SIGINT)


def _cancelled_otherwise(payload, shared):
    import pyarrow as pa

    raise pa.lib.ArrowCancelled("Operation cancelled")


def test_ctrl_c_inside_pyarrow_stops_the_batch_instead_of_failing_a_run():
    # pyarrow turns a SIGINT during a read/write into ArrowCancelled(signum=SIGINT) when the
    # re-emitted signal has not reached Python yet: that must stop the sweep like Ctrl-C does
    from twinsweep.backends.base import call_safely

    with pytest.raises(KeyboardInterrupt):
        call_safely(_cancelled_by_sigint, Task("k", {}, None), None)
    out = call_safely(_cancelled_otherwise, Task("k", {}, None), None)  # no signal: a failed run
    assert not out.ok and "ArrowCancelled" in out.error


def crash_on_13(payload, shared):
    """Test run function: the worker process dies on payload 13, else :func:`square_or_fail`."""
    if payload == 13:
        os._exit(3)
    return square_or_fail(payload, shared)


def test_auto_runs_per_call_by_hand():
    from twinsweep.backends.ray_backend import MAX_RUNS_PER_CALL, auto_runs_per_call

    # about 16 calls per actor: ceil(n / (16 * workers)), clamped to [1, MAX_RUNS_PER_CALL]
    assert auto_runs_per_call(180, 2) == 6  # the quickstart on 2 workers: ceil(180 / 32)
    assert auto_runs_per_call(8, 2) == 1 and auto_runs_per_call(1, 4) == 1
    assert auto_runs_per_call(33, 1) == 3
    assert auto_runs_per_call(100_000, 2) == MAX_RUNS_PER_CALL == 16
    assert auto_runs_per_call(None, 2) == 4  # a generator: length unknown
    with pytest.raises(ConfigError, match="runs_per_call must be >= 1"):
        make_backend("ray", workers=1, runs_per_call=0)


def test_ray_batches_carry_several_runs_and_a_crash_fails_only_its_run(ray_session):
    with make_backend("ray", workers=2, runs_per_call=3) as b:
        outs, in_flight = [], []
        for o in b.run(TASKS, square_or_fail, {"off": 10}):
            outs.append(o)
            in_flight.append(b.in_flight)
        _check_outcomes(outs)
        assert max(in_flight) >= 3  # batches of 3 in flight, not one run per actor
        # the actor running c13's batch dies: its batch is dispatched again one run per call, so only
        # c13 fails, with the worker's death as its error
        crash = [Task(f"c{i}", i, "off") for i in (1, 13, 2, 3, 4)]
        got = {o.key: o for o in b.run(crash, crash_on_13, {"off": 10})}
    assert set(got) == {f"c{i}" for i in (1, 13, 2, 3, 4)}
    assert not got["c13"].ok and got["c13"].error.startswith("WorkerDied")
    for i in (1, 2, 3, 4):
        assert got[f"c{i}"].ok and got[f"c{i}"].result["value"] == i * i + 10


def test_forkserver_warm_up_runs_and_leaves_nothing(tmp_path, monkeypatch):
    """The local pool's forkserver preloads twinsweep.sweep.warm, whose import runs
    sweep.runner.warm_up: it must succeed on the current run path (it returns -1.0 instead of
    raising, which would leave every worker cold without a word) and write nothing, not even its
    temporary trace; its module is on the preload list; and a run's CPU is in the Outcome."""
    import tempfile

    from twinsweep.backends import local
    from twinsweep.sweep import runner

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert runner.warm_up() >= 0.0
    assert list(tmp_path.iterdir()) == []
    assert "twinsweep.sweep.warm" in local.PRELOAD
    out = next(make_backend("local", workers=1).run([Task("a", 3)], square_or_fail))
    assert out.ok and 0.0 <= out.cpu_s <= out.wall_s + 0.05


def test_ray_default_token_notice_is_dropped_and_nothing_else(caplog):
    """The embedded Ray cluster keeps Ray's default token authentication; only Ray's notice that it
    turned it on is dropped from the console. Its warning that authentication is *disabled*, and
    any other record of that logger, still show (and installing the filter twice adds one)."""
    import logging

    from twinsweep.backends.ray_backend import _quiet_default_token_notice

    name = "ray._private.authentication.authentication_token_setup"
    log = logging.getLogger(name)
    before = list(log.filters)
    try:
        _quiet_default_token_notice()
        _quiet_default_token_notice()
        assert len(log.filters) == len(before) + 1
        with caplog.at_level(logging.WARNING, logger=name):
            log.warning("Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled ...")
            log.warning("Token authentication is disabled for this Ray cluster. Anyone with network access ...")
            log.warning("some other Ray warning")
        assert [r.getMessage().split(".")[0] for r in caplog.records] == [
            "Token authentication is disabled for this Ray cluster", "some other Ray warning"]
    finally:
        log.filters[:] = before
