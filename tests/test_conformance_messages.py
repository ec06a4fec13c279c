"""The shipped conformance suites (twinsweep.testing.conformance) on deliberately broken plug-ins:
each breach fails with a message naming the plug-in and what differed, never a bare
AssertionError. The suites' test methods are called directly with their fixtures' values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from twinsweep.core.loaders import LOADERS, register_loader
from twinsweep.core.policies import POLICIES, Policy
from twinsweep.core.workload import Workload, coerce_jobs_frame
from twinsweep.testing.conformance import LoaderConformance, PolicyConformance


@pytest.fixture
def registered():
    """``add(name, cls)``: register a policy for the test only."""
    names = []

    def add(name, cls):
        POLICIES.register(name, cls)
        names.append(name)

    yield add
    for n in names:
        POLICIES.unregister(n)


class _Flips(Policy):
    """Not deterministic: every other instance orders the queue last-come first (a class counter
    standing in for an unseeded random generator)."""

    made = 0

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        type(self).made += 1
        self.sign = -1 if type(self).made % 2 else 1

    def key(self, job):
        return self.sign * float(self.jobs.submit[job])


class _NaNEveryThird(Policy):
    """NaN for every third job (trace_index 0, 3, ...), submit time otherwise."""

    def key(self, job):
        return math.nan if self.jobs.trace_index[job] % 3 == 0 else float(self.jobs.submit[job])


def test_a_non_deterministic_policy_is_named_with_the_files_that_differ(registered, tmp_path):
    registered("flips-test", _Flips)
    with pytest.raises(AssertionError) as ei:
        PolicyConformance().test_same_seed_byte_identical_outputs("flips-test", {}, tmp_path)
    msg = str(ei.value).splitlines()[0]
    assert msg.startswith("policy 'flips-test' (backfill 'easy', seed 3): two runs of the same config and seed "
                          "wrote different jobs.parquet")
    assert "not deterministic" in msg


def test_a_nan_key_fails_the_key_check_naming_the_policy_the_job_and_the_key(registered):
    registered("nan-third-test", _NaNEveryThird)
    with pytest.raises(pytest.fail.Exception, match=r"^policy 'nan-third-test': policy 'key-recording-nan-third-test': "
                                                    r"key\(0\) for job 0 \(trace_index 0\) returned nan, which is NaN"):
        PolicyConformance().test_keys_are_real_numbers_never_nan("nan-third-test", {})
    # a conforming policy passes it
    PolicyConformance().test_keys_are_real_numbers_never_nan("fcfs", {})


def test_an_unknown_option_that_is_not_refused_is_named(monkeypatch):
    """A policy whose options are not checked (validate_scheduler patched to accept anything)."""
    import twinsweep.testing.conformance as conf

    monkeypatch.setattr(conf, "validate_scheduler", lambda *a, **k: None)
    with pytest.raises(pytest.fail.Exception, match=r"^policy 'fcfs' given an unknown option: expected a "
                                                    r"ConfigError naming 'no_such_option_xyz', and nothing was raised"):
        PolicyConformance().test_unknown_option_is_a_clear_error("fcfs", {})


#: the trial's negcsv sample: j2 and j3 run for -500 and -50 s, j6 has a limit of -10 s (j5's 0
#: nodes are a request the run refuses, not an impossible value)
NEG = "# negcsv\nj1;0;100;600;4\nj2;10;-500;600;4\nj3;20;-50;600;64\nj4;30;200;600;8\nj5;40;100;600;0\nj6;50;100;-10;2\n"


def _neg_load(trace, lenient=False):
    rows = []
    for line in trace.data.decode().splitlines()[1:]:
        jid, sub, ran, asked, n = line.split(";")
        rows.append({"job_id": jid, "submit_time": int(sub), "run_time": int(ran), "time_limit": int(asked),
                     "procs": int(n), "user": "u", "status": "completed"})
    return Workload(jobs=coerce_jobs_frame(pd.DataFrame(rows)), epoch=0, checksum=trace.checksum, source=trace.path,
                    format="neg-test", procs_unit="nodes")


def test_a_loader_giving_negative_run_times_and_limits_is_named_with_the_jobs(tmp_path):
    sample = tmp_path / "neg.csv"
    sample.write_text(NEG)
    register_loader("neg-test", lambda t: 1.0 if t.data.startswith(b"# negcsv") else 0.0, _neg_load)
    try:
        with pytest.raises(AssertionError) as ei:
            LoaderConformance().test_jobs_have_possible_values("neg-test", sample)
        assert str(ei.value).splitlines()[0] == (
            "loader 'neg-test' on neg.csv: 3 job(s) with impossible values, e.g. "
            "job j2 (trace_index 1): run_time = -500 (not a run time (s); missing is <NA>); "
            "job j3 (trace_index 2): run_time = -50 (not a run time (s); missing is <NA>); "
            "job j6 (trace_index 5): time_limit = -10 (not a time limit (s); missing is <NA>) "
            "(reject such lines in load, naming the line: TraceFormatError)")
    finally:
        LOADERS.unregister("neg-test")
