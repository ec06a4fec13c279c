"""simulate / write_run / `twinsweep run`: outputs, names, determinism, errors."""

import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from twinsweep.core.config import Perturbation, RunConfig
from twinsweep.core.errors import ConfigError, TraceFormatError, UnknownNameError
from twinsweep.core.run import RUN_FILES, simulate, write_run

SWF = """; Version: 2.2
; Computer: test
; UnixStartTime: 1000000000
; MaxNodes: 4
; MaxProcs: 8
; MaxRuntime: 7200
    1     0   -1   100  4  -1 -1  4   200  -1 1 1 1 -1 1 -1 -1 -1
    2    10   -1   300  8  50 -1  8   250  -1 1 2 1 -1 1 -1 -1 -1
    3    20   -1    50  2  -1 -1  2    -1  -1 0 1 2 -1 1 -1 -1 -1
    4    30   -1    -1 -1  -1 -1 -1   100  -1 5 3 2 -1 1 -1 -1 -1
    5    40   -1    10 20  -1 -1 20   100  -1 1 3 2 -1 1 -1 -1 -1
"""


@pytest.fixture()
def trace(tmp_path):
    p = tmp_path / "tiny.swf"
    p.write_text(SWF)
    return p


def digest(d: Path):
    return {f: hashlib.sha256((d / f).read_bytes()).hexdigest() for f in RUN_FILES}


def test_outputs_and_names(trace, tmp_path):
    res = simulate(RunConfig(data=str(trace), policy="fcfs", backfill="easy", sample_period=30))
    out = write_run(res, tmp_path / "run")
    for f in RUN_FILES + ("timing.json",):
        assert (out / f).exists()
    jobs = pd.read_parquet(out / "jobs.parquet")
    for col in ("job_id", "trace_index", "time_limit_imputed", "start_time", "end_time", "wait_time",
                "status", "reason", "energy_j", "avg_power_w", "node_ids", "submit_time", "nodes",
                "recorded_start_time", "recorded_end_time"):
        assert col in jobs.columns, col
    assert not {"sim_start_time", "sim_end_time"} & set(jobs.columns)
    # the plain names are the simulated times; the trace's are recorded_* (job 2 waited for job 1 in
    # the twin; the trace's own start for it is its submit + recorded wait)
    assert (jobs.wait_time.dropna() == (jobs.start_time - jobs.submit_time).dropna()).all()
    # generic system from the header: 4 nodes x 2 cores. Job 1 (4 procs -> 2 nodes) runs [0,100),
    # job 2 (8 procs -> 4 nodes, limit 250) waits for job 1 and job 3 (2 procs -> 1 node, no limit ->
    # MaxRuntime 7200 imputed); job 4 never ran; job 5 asks 20 procs = 10 nodes > 4: rejected.
    assert list(jobs.status) == ["completed", "timeout", "completed", "not_run", "rejected"]
    assert list(jobs.time_limit_imputed) == [False, False, True, False, False]
    assert jobs.time_limit[2] == 7200
    assert jobs.start_time[0] == 0 and jobs.end_time[0] == 100
    # job 3 (1 node) is submitted at 20 behind job 2 (4 nodes, head, shadow 100): 20 + 7200 > 100 and
    # extra = 2 + 2 - 4 = 0, so it may not backfill; job 2 runs [100, 350) killed at its limit 250.
    assert jobs.start_time[1] == 100 and jobs.end_time[1] == 350
    assert jobs.start_time[2] == 350 and jobs.end_time[2] == 400
    assert list(jobs.node_ids[1]) == [0, 1, 2, 3]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["counts"]["rejected"] == 1 and stats["counts"]["timeout"] == 1
    assert stats["counts"]["time_limit_imputed"] == 1 and stats["power_label"] == "assumed"
    man = json.loads((out / "manifest.json").read_text())
    for k in ("policy", "backfill", "system", "window", "kill", "seed"):
        assert k in man
    assert man["system"]["nodes"] == 4
    tl = pd.read_parquet(out / "timeline.parquet")
    assert list(tl.columns[:8]) == ["time", "it_power_w", "loss_w", "facility_power_w", "busy_nodes",
                                    "utilization", "queued_jobs", "running_jobs"]
    assert tl.time.iloc[0] == 0 and (tl.time.diff().dropna() == 30).all()
    # bins hold exact averages: busy nodes on [0, 30): job 1 (2 nodes) all along
    assert tl.busy_nodes.iloc[0] == 2.0


def test_same_seed_same_bytes(trace, tmp_path):
    cfg = RunConfig(data=str(trace), policy="sjf", backfill="conservative", seed=3,
                    perturbation=Perturbation(runtime_sigma=0.3, submit_jitter_s=5))
    a = write_run(simulate(cfg), tmp_path / "a")
    b = write_run(simulate(cfg), tmp_path / "b")
    assert digest(a) == digest(b)
    c = write_run(simulate(RunConfig(data=str(trace), policy="sjf", backfill="conservative", seed=4,
                                     perturbation=Perturbation(0.3, 5))), tmp_path / "c")
    assert digest(c)["jobs.parquet"] != digest(a)["jobs.parquet"]


def test_bad_names_and_inputs(trace, tmp_path):
    with pytest.raises(UnknownNameError, match="valid policy names: .*fcfs"):
        RunConfig(data=str(trace), policy="fifo")
    with pytest.raises(UnknownNameError, match="easy"):
        RunConfig(data=str(trace), backfill="aggressive")
    with pytest.raises(UnknownNameError, match="system"):
        simulate(RunConfig(data=str(trace), system="no-such-machine"))
    with pytest.raises(ConfigError, match="priority"):
        simulate(RunConfig(data=str(trace), policy="priority"))
    bad = tmp_path / "bad.swf"
    bad.write_text(SWF + "    6    50   -1   x  2  -1 -1  2   100  -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(TraceFormatError, match=r"bad\.swf:12"):
        simulate(RunConfig(data=str(bad)))
    res = simulate(RunConfig(data=str(bad), lenient=True))
    assert res.stats["counts"]["lenient_skipped_lines"] == 1


def test_cli_run_and_errors(trace, tmp_path):
    out = tmp_path / "cli"
    r = subprocess.run([sys.executable, "-m", "twinsweep", "run", "--data", str(trace), "--policy", "fcfs",
                        "--backfill", "easy", "--duration", "1h", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (out / "stats.json").exists()
    r = subprocess.run([sys.executable, "-m", "twinsweep", "run", "--data", str(trace), "--policy", "lifo",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "valid policy names" in r.stderr
    r = subprocess.run([sys.executable, "-m", "twinsweep", "run", "--data", str(trace), "--policy", "fcfs",
                        "--duration", "7 parsecs", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "duration" in r.stderr


def test_unknown_policy_option_is_an_error(trace):
    # a typo in an option must not silently make a new run (a new key) with the same schedule
    with pytest.raises(ConfigError, match="unknown option .foo.*valid options: accounts_in, acct_level"):
        simulate(RunConfig(data=str(trace), policy="fcfs", options=(("foo", 1),)))


def test_arrow_tables_equal_pandas_conversion():
    """run._arrow_table / _jobs_table (built column by column, schema cached per signature) give
    exactly the table of ``pa.Table.from_pandas`` with object columns cast to "string" and the
    node_ids list built element by element: values, types, nulls and the pandas metadata."""
    import numpy as np
    import pyarrow as pa

    from twinsweep.core import run as run_mod

    df = pd.DataFrame({
        "job_id": pd.Series(["a", None, "c", "d"], dtype=object),
        "user": pd.Series([7, "u", None, np.nan], dtype=object),  # non-str values: str() as astype("string")
        "empty": pd.Series([None] * 4, dtype=object),
        "n": pd.array([1, None, 3, 4], dtype="Int64"),
        "f": [1.5, np.nan, 0.0, -2.0],
        "g": [1.0, 2.0, 3.0, 4.0],
        "i": np.arange(4, dtype="int64"),
        "b": [True, False, True, False],
        "s": pd.Series(["x", None, "z", "w"], dtype="str"),
        "node_ids": [[0, 1], None, [], [5]],
    })
    for frame in (df, df.iloc[:0], df.iloc[[1]]):
        ref = frame.drop(columns=["node_ids"])
        for c in ref.columns:
            if ref[c].dtype == object:
                ref[c] = ref[c].astype("string")
        expect = pa.Table.from_pandas(ref, preserve_index=False)
        got = run_mod._arrow_table(frame.drop(columns=["node_ids"]))
        assert got.equals(expect, check_metadata=True)
        assert run_mod._arrow_table(frame, skip="node_ids").equals(expect, check_metadata=True)  # no drop copy
        ids = pa.array([None if v is None else list(v) for v in frame["node_ids"]], type=pa.list_(pa.int32()))
        jt = run_mod._jobs_table(frame)
        assert jt.column_names == list(frame.columns)
        assert jt.column("node_ids").combine_chunks().equals(ids)
        assert jt.drop_columns(["node_ids"]).equals(expect, check_metadata=True)
    assert run_mod._arrow_table(df[["f"]]).column("f").null_count == 1  # NaN is a null, as from_pandas makes it


@pytest.mark.filterwarnings("ignore::twinsweep.core.run.ReplayOversubscribedWarning")
def test_prepared_window_shared_by_variants_changes_nothing(tmp_path):
    """The runs of one (workload, seed, window) share a prepared window in a process
    (core.run._WINDOWS): every variant's files are byte-identical to the same run with the cache
    emptied first, and the shared frame and node power are not changed by the runs."""
    from twinsweep.core import run as run_mod
    from twinsweep.core.run import load_run_inputs

    base = RunConfig(data="pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz", start=144 * 86400, duration=86400,
                     perturbation=Perturbation(runtime_sigma=0.2, submit_jitter_s=300), seed=3)
    wl, system = load_run_inputs(base)
    variants = [("fcfs", "easy"), ("sjf", "conservative"), ("ljf", "none"), ("replay", "none"), ("fcfs", "easy")]
    cached = []
    run_mod._WINDOWS.clear()
    for i, (pol, bf) in enumerate(variants):
        cfg = dataclasses.replace(base, policy=pol, backfill=bf)
        cached.append(digest(write_run(simulate(cfg, workload=wl, system=system), tmp_path / f"c{i}")))
    # the variants other than replay shared one window (replay selects its own)
    assert len(run_mod._WINDOWS) == 2
    entry = next(v[3] for k, v in run_mod._WINDOWS.items() if not k[9])  # k[9]: replay
    frame_before = entry[1].copy()
    assert not entry[4].flags.writeable
    for i, (pol, bf) in enumerate(variants):
        run_mod._WINDOWS.clear()
        cfg = dataclasses.replace(base, policy=pol, backfill=bf)
        assert digest(write_run(simulate(cfg, workload=wl, system=system), tmp_path / f"u{i}")) == cached[i], (pol, bf)
    pd.testing.assert_frame_equal(entry[1], frame_before)
    # another seed or window is another entry, never the cached one
    run_mod._WINDOWS.clear()
    simulate(dataclasses.replace(base, seed=4), workload=wl, system=system)
    simulate(dataclasses.replace(base, start=145 * 86400), workload=wl, system=system)
    assert len(run_mod._WINDOWS) == 2
    # a workload whose jobs frame was replaced is another workload
    wl.jobs = wl.jobs.copy()
    simulate(base, workload=wl, system=system)
    assert len(run_mod._WINDOWS) == 3
    # a frame edited in place (against the house rule) misses the cache: its stamp changed
    row = int(wl.jobs["submit_time"].astype("float64").sub(144 * 86400 + 3600).abs().idxmin())
    wl.jobs.loc[row, "time_limit"] = wl.jobs.loc[row, "time_limit"] + 60
    simulate(base, workload=wl, system=system)
    assert len(run_mod._WINDOWS) == 4
