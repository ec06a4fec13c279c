"""Inputs of real accounting data (issue 11, items 3 and 10; issue 13, item 6): windows outside the
trace, jobs still running when a dump was taken, time zones by precedence, elapsed-time checks, and
the units / epoch a reader of the outputs needs. Hand-made traces; every expected value by hand."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from twinsweep.core.config import RunConfig
from twinsweep.core.errors import ConfigError
from twinsweep.core.loaders import load_workload
from twinsweep.core.run import load_run_inputs, simulate, write_run
from twinsweep.core.workload import RUNNING_WHEN_RECORDED

EPOCH = 1_000_000_000  # 2001-09-09 01:46:40 UTC


def _swf(path, rows):
    """rows: (job, submit, wait, run, procs); UnixStartTime = EPOCH, 8 nodes."""
    lines = ["; UnixStartTime: 1000000000", "; MaxNodes: 8", "; MaxProcs: 8"]
    for jid, sub, wait, run, procs in rows:
        lines.append(f"{jid} {sub} {wait} {run} {procs} -1 -1 {procs} {max(run, 1) * 2} -1 1 1 1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def span_trace(tmp_path):
    # submits 0, 100, 200 (last submission 200 s); ends 50, 1100, 500 (last end 1100 s)
    return _swf(tmp_path / "span.swf", [(1, 0, 0, 50, 1), (2, 100, 0, 1000, 2), (3, 200, 0, 300, 1)])


# ------------------------------------------------------------------------------ windows (item 3)
@pytest.mark.parametrize("start", [1100, 2000, 400 * 86400])
def test_a_window_after_the_last_job_is_an_error_naming_the_span(span_trace, start):
    with pytest.raises(ConfigError) as e:
        simulate(RunConfig(data=str(span_trace), policy="fcfs", start=start, duration=3600))
    msg = str(e.value)
    assert "after the trace's last job has ended" in msg
    assert "2001-09-09 01:46:40 UTC" in msg and "2001-09-09 01:50:00 UTC" in msg  # first / last submission
    assert "2001-09-09 02:05:00 UTC" in msg  # last end: EPOCH + 1100 s
    assert "200 s" in msg and "1,100 s" in msg and " d " in msg  # offsets in s and days


@pytest.mark.parametrize("start, duration, flagged", [
    (0, 150, False),      # ends before the last submission
    (0, 201, False),      # its last second is the last submission's
    (0, 202, True),       # one second after it
    (150, 1000, True),    # straddles the end of the trace
    (1099, 60, True),     # only job 2 still running (prepopulated)
    (None, None, False),  # the whole trace, open: it ends with its last job
    (150, None, False),   # open, with submissions in it
    (300, None, True),    # open, starting after the last submission
])
def test_a_window_past_the_last_submission_warns_and_is_flagged(span_trace, start, duration, flagged):
    res = simulate(RunConfig(data=str(span_trace), policy="fcfs", backfill="easy", start=start, duration=duration))
    assert res.stats["window_past_last_submit"] is flagged
    assert res.stats["trace_last_submit_s"] == 200 and res.stats["trace_last_end_s"] == 1100
    past = [w for w in res.warnings if "window_past_last_submit" in w]
    assert len(past) == int(flagged)
    assert res.manifest.get("warnings", []) == res.warnings


def _late_trace(tmp_path):
    # first submission at 5,000 s; ends 5,100 and 6,000 s
    return _swf(tmp_path / "late.swf", [(1, 5000, 0, 100, 1), (2, 5500, 0, 500, 2)])


@pytest.mark.parametrize("start, duration", [(0, 1000), (0, 5000), (4000, 1000)])
def test_a_window_that_ends_before_the_first_submission_is_an_error(tmp_path, start, duration):
    with pytest.raises(ConfigError) as e:
        simulate(RunConfig(data=str(_late_trace(tmp_path)), policy="fcfs", start=start, duration=duration))
    msg = str(e.value)
    assert "ends before the trace's first submission" in msg and "5,000 s" in msg
    assert "2001-09-09 03:10:00 UTC" in msg  # the first submission, EPOCH + 5000 s


def test_a_window_that_starts_before_the_first_submission_warns_of_its_idle_lead_in(tmp_path):
    res = simulate(RunConfig(data=str(_late_trace(tmp_path)), policy="fcfs", start=1400, duration=7200))
    lead = [w for w in res.warnings if "before the trace's first submission" in w]
    assert len(lead) == 1 and "1,400 s" in lead[0] and "1.0 h before" in lead[0]  # 5,000 - 1,400 = 3,600 s
    assert res.stats["counts"]["jobs_in_window"] == 2  # both jobs still run
    at_first = simulate(RunConfig(data=str(_late_trace(tmp_path)), policy="fcfs", start=5000, duration=7200))
    assert not any("first submission" in w for w in at_first.warnings)


def test_the_cli_prints_the_window_as_dates_on_stdout_and_the_warning_on_stderr(span_trace, tmp_path, capsys):
    from twinsweep.sweep.cli import main

    assert main(["run", "--data", str(span_trace), "--policy", "fcfs", "--start", "150", "--duration", "1000",
                 "--out", str(tmp_path / "o")]) == 0
    out, err = capsys.readouterr()
    assert "window: 2001-09-09 01:49:10 UTC to 2001-09-09 02:05:50 UTC" in out  # EPOCH + 150, EPOCH + 1150
    assert "warning:" in err and "last submission" in err
    assert json.loads((tmp_path / "o" / "stats.json").read_text())["window_past_last_submit"] is True
    assert main(["run", "--data", str(span_trace), "--policy", "fcfs", "--start", "2000", "--out",
                 str(tmp_path / "bad")]) == 2
    assert "last job has ended" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_outputs_carry_units_and_the_epoch(span_trace, tmp_path):
    res = simulate(RunConfig(data=str(span_trace), policy="fcfs"))
    write_run(res, tmp_path / "o")
    for name in ("jobs.parquet", "timeline.parquet"):
        meta = pq.read_schema(tmp_path / "o" / name).metadata
        units = json.loads(meta[b"twinsweep.units"])
        assert set(units) == set(pq.read_schema(tmp_path / "o" / name).names)
        assert meta[b"twinsweep.epoch"] == b"1000000000" and meta[b"twinsweep.epoch_utc"] == b"2001-09-09T01:46:40Z"
    units = json.loads(pq.read_schema(tmp_path / "o" / "jobs.parquet").metadata[b"twinsweep.units"])
    assert units["submit_time"] == "s since epoch" and units["wait_time"] == "s" and units["energy_j"] == "J"
    tl = json.loads(pq.read_schema(tmp_path / "o" / "timeline.parquet").metadata[b"twinsweep.units"])
    assert tl["time"] == "s since epoch" and tl["utilization"] == "fraction" and tl["it_power_w"] == "W"
    # the documented one-liner (README, docs/architecture.md)
    path = tmp_path / "o" / "jobs.parquet"
    jobs = pd.read_parquet(path)
    dates = pd.to_datetime(jobs["submit_time"] + int(pq.read_schema(path).metadata[b"twinsweep.epoch"]), unit="s",
                           utc=True)
    assert str(dates.iloc[2]) == "2001-09-09 01:50:00+00:00"


# ----------------------------------------------------------- jobs still running at the dump (10a)
SYSTEM = """[system]
name = "tiny3"
title = "three nodes"
nodes = 3
cores_per_node = 1
{tz}
[power]
status = "assumed"
cpu_idle_w = 10.0
cpu_max_w = 100.0
"""
HEAD = "JobID|User|Account|Partition|Submit|Start|End|Elapsed|Timelimit|NNodes|NodeList|State"
# job 1 runs on n1 from 09:00 and is still running when sacct prints; job 2 takes n2-n3 09:30-10:30;
# job 3 (1 node, submitted 09:45) waits for a node until 10:30: n1 was busy (the recorded schedule)
DUMP = [
    "1|a|p|batch|2024-01-10T09:00:00|2024-01-10T09:00:00|Unknown|{elapsed}|UNLIMITED|1|n1|RUNNING",
    "2|b|p|batch|2024-01-10T09:30:00|2024-01-10T09:30:00|2024-01-10T10:30:00|01:00:00|01:00:00|2|n[2-3]|COMPLETED",
    "3|c|p|batch|2024-01-10T09:45:00|2024-01-10T10:30:00|2024-01-10T11:00:00|00:30:00|01:00:00|1|n2|COMPLETED",
]


def _dump(tmp_path, elapsed="", pre="", tz_line=""):
    p = tmp_path / "sacct.txt"
    p.write_text(pre + tz_line + "\n".join([HEAD] + [r.format(elapsed=elapsed) for r in DUMP]) + "\n")
    s = tmp_path / "tiny3.toml"
    s.write_text(SYSTEM.format(tz=""))
    return p, s


@pytest.fixture(autouse=True)
def _no_tz_env(monkeypatch):
    monkeypatch.delenv("TWINSWEEP_TZ", raising=False)


@pytest.mark.parametrize("elapsed, pre, run", [
    ("", "", 7200),                                   # dump time = latest time stamp (job 3's end, 11:00)
    ("01:50:00", "", 6600),                           # sacct's Elapsed wins
    ("", "# dump_time: 2024-01-10T12:00:00\n", 10800),  # the dump's own time
])
def test_a_job_still_running_at_the_dump_holds_its_node_when_rescheduled(tmp_path, elapsed, pre, run):
    trace, system = _dump(tmp_path, elapsed, pre)
    wl = load_workload(trace)
    j1 = wl.jobs.iloc[0]
    assert j1.status == "running" and j1.run_time == run and pd.isna(j1.recorded_end_time)
    assert wl.header["running_when_recorded"] == 1
    res = simulate(RunConfig(data=str(trace), system=str(system), policy="fcfs", backfill="none"))
    j = res.jobs.set_index("job_id")
    assert j.loc["1", "status"] == "running" and j.loc["1", "reason"] == RUNNING_WHEN_RECORDED
    assert j.loc["1", "start_time"] == 0 and pd.isna(j.loc["1", "end_time"])
    # UNLIMITED on a system without a default limit: the run time is imputed (DESIGN.md §3.3), never 0
    assert j.loc["1", "time_limit"] == run and bool(j.loc["1", "time_limit_imputed"])
    assert j.loc["3", "wait_time"] == 2700  # n1 held: job 3 starts when job 2 ends (10:30), as recorded
    assert j.loc["1", "energy_j"] == pytest.approx(j.loc["1", "node_power_w"] * run)
    c = res.stats["counts"]
    assert (c["running_when_recorded"], c["still_running"], c["completed"], c["not_run"]) == (1, 1, 2, 0)


def test_a_job_still_running_at_the_dump_holds_its_node_in_replay(tmp_path):
    trace, system = _dump(tmp_path)
    res = simulate(RunConfig(data=str(trace), system=str(system), policy="replay", sample_period=1800))
    j = res.jobs.set_index("job_id")
    assert j.loc["1", "status"] == "running" and j.loc["1", "reason"] == RUNNING_WHEN_RECORDED
    assert res.manifest["window"]["end"] == 7200  # until the dump (11:00)
    busy = res.timeline.set_index("time")["busy_nodes"]
    # bins of 30 min: n1 alone; n1 + job 2; n1 + job 2 (job 3 waits); n1 + job 3
    assert busy.tolist() == [1.0, 3.0, 3.0, 2.0]


def test_an_swf_archive_has_no_running_jobs(tmp_path):
    # SWF logs hold ended jobs: a start (wait >= 0) without a run time is unknown, not running
    trace = _swf(tmp_path / "a.swf", [(1, 0, 10, -1, 1), (2, 5, 0, 100, 1)])
    wl = load_workload(trace)
    assert wl.finished_only and wl.dump_time is None and wl.jobs.iloc[0].status != "running"
    res = simulate(RunConfig(data=str(trace), policy="fcfs"))
    assert res.jobs.iloc[0].status == "not_run" and res.stats["counts"]["running_when_recorded"] == 0


def test_any_loader_gets_the_rule(tmp_path):
    """The rule lives in load_workload, not in one loader: a Workload of another format (here built
    by hand, as a plug-in loader would) with a start and no end is marked the same way."""
    from twinsweep.core.workload import Workload, coerce_jobs_frame, mark_running_at_dump

    df = coerce_jobs_frame(pd.DataFrame({
        "job_id": ["a", "b", "c"], "submit_time": [0, 0, 0], "recorded_start_time": [10, 20, None],
        "recorded_end_time": [None, 500, None], "run_time": [None, 480, None], "procs": [1, 1, 1],
        "status": ["unknown", "completed", "cancelled"]}))
    wl = mark_running_at_dump(Workload(df, 0, "sha256:x", "x", "plugin"))
    assert wl.dump_time == 500
    assert wl.jobs["status"].tolist() == ["running", "completed", "cancelled"]
    assert wl.jobs["run_time"].tolist()[:2] == [490, 480] and pd.isna(wl.jobs["run_time"].iloc[2])


# ------------------------------------------------------------------------------ time zones (10b)
TZ_DUMP = ("JobID|Submit|Start|End|Elapsed|NNodes|State\n"
           # 2023-10-29 01:30 CEST -> 03:30 CET is 3 h in Paris (2 h if read as UTC)
           "1|2023-10-29T01:00:00|2023-10-29T01:30:00|2023-10-29T03:30:00|03:00:00|1|COMPLETED\n")


def _utc(text):
    return int(pd.Timestamp(text, tz="UTC").timestamp())


@pytest.mark.parametrize("cli, comment, system_tz, env, zone, epoch_utc", [
    ("UTC", "America/New_York", "Europe/Paris", "Asia/Tokyo", "UTC", "2023-10-29 01:00"),
    (None, "America/New_York", "Europe/Paris", "Asia/Tokyo", "America/New_York", "2023-10-29 05:00"),
    (None, None, "Europe/Paris", "Asia/Tokyo", "Europe/Paris", "2023-10-28 23:00"),
    (None, None, None, "Asia/Tokyo", "Asia/Tokyo", "2023-10-28 16:00"),
    (None, None, None, None, "UTC", "2023-10-29 01:00"),
])
def test_time_zone_precedence(tmp_path, monkeypatch, cli, comment, system_tz, env, zone, epoch_utc):
    trace = tmp_path / "tz.txt"
    trace.write_text((f"# tz: {comment}\n" if comment else "") + TZ_DUMP)
    system = tmp_path / "tiny3.toml"
    system.write_text(SYSTEM.format(tz=f'timezone = "{system_tz}"' if system_tz else ""))
    if env:
        monkeypatch.setenv("TWINSWEEP_TZ", env)
    wl, sysm = load_run_inputs(RunConfig(data=str(trace), system=str(system), policy="fcfs", tz=cli))
    assert sysm.name == "tiny3"
    assert wl.timezone == zone and wl.header["sacct_timezone"] == zone
    assert wl.epoch == _utc(epoch_utc)


def test_the_zone_is_part_of_the_run_identity(tmp_path):
    trace = tmp_path / "tz.txt"
    trace.write_text(TZ_DUMP)
    system = tmp_path / "tiny3.toml"
    system.write_text(SYSTEM.format(tz=""))
    keys = {z: simulate(RunConfig(data=str(trace), system=str(system), policy="fcfs", tz=z)).manifest["run_key"]
            for z in ("UTC", "Europe/Paris")}
    assert keys["UTC"] != keys["Europe/Paris"]
    with pytest.raises(ConfigError, match="unknown time zone"):
        RunConfig(data=str(trace), tz="Mars/Olympus")


def test_end_minus_start_against_elapsed_is_warned_and_counted(tmp_path):
    trace = tmp_path / "tz.txt"
    trace.write_text(TZ_DUMP)
    system = tmp_path / "tiny3.toml"
    system.write_text(SYSTEM.format(tz=""))
    utc = simulate(RunConfig(data=str(trace), system=str(system), policy="fcfs"))  # read as UTC: 2 h vs 3 h
    assert utc.stats["counts"]["elapsed_mismatch"] == 1
    assert any("recorded elapsed time" in w and "whole hours" in w and "UTC" in w for w in utc.warnings)
    paris = simulate(RunConfig(data=str(trace), system=str(system), policy="fcfs", tz="Europe/Paris"))
    assert paris.stats["counts"]["elapsed_mismatch"] == 0 and not paris.warnings
    assert paris.jobs.iloc[0].run_time == 10800


def test_a_dataset_tz_key_and_the_cli_flag(tmp_path):
    from twinsweep.sweep.cli import main
    from twinsweep.sweep.spec import parse_spec

    spec = parse_spec({"datasets": [{"trace": "x.txt", "tz": "Europe/Rome"}], "grid": {"policy": ["fcfs"]}})
    assert spec.datasets[0].tz == "Europe/Rome"
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.tz"):
        parse_spec({"datasets": [{"trace": "x.txt", "tz": "Nowhere/Land"}], "grid": {"policy": ["fcfs"]}})
    trace = tmp_path / "tz.txt"
    trace.write_text(TZ_DUMP)
    system = tmp_path / "tiny3.toml"
    system.write_text(SYSTEM.format(tz=""))
    assert main(["run", "--quiet", "--data", str(trace), "--system", str(system), "--policy", "fcfs",
                 "--tz", "Europe/Paris", "--out", str(tmp_path / "o")]) == 0
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert m["workload"]["timezone"] == "Europe/Paris" and m["config"]["tz"] == "Europe/Paris"


@pytest.mark.parametrize("max_nodes, waits, warned", [
    (1000, (0, 10, 0), True),     # 3 jobs of 4 nodes, two at once: peak 8, 1000 > 10 x 8
    (80, (0, 10, 0), False),      # exactly 10 x the peak: no warning
    (1000, (-1, -1, -1), False),  # no recorded schedule: the header's size cannot be judged
])
def test_a_header_machine_far_beyond_the_log_is_questioned(tmp_path, max_nodes, waits, warned):
    """A machine built from the header alone (no system file) with more than 10 x the nodes the
    log ever holds at once, and than its widest job, is named in the run's warnings before any
    work: jobs 1 and 2 overlap on [110, 200) with 4 nodes each, job 3 runs alone later."""
    from tests.twin_helpers import write_swf_rows

    rows = [(1, 100, waits[0], 100, 4), (2, 100, waits[1], 100, 4), (3, 1000, waits[2], 50, 4)]
    path = write_swf_rows(tmp_path / "XYZ.swf", rows, max_nodes=max_nodes, header=["; UnixStartTime: 1000000000"])
    wl, system = load_run_inputs(RunConfig(data=str(path), policy="fcfs", backfill="easy"))
    said = [w for w in wl.warnings if "comes from the trace's header" in w]
    assert system.nodes == max_nodes and len(said) == warned
    if warned:
        assert said[0] == (f"{path}: the machine comes from the trace's header (1,000 nodes), 125 times the most the "
                           "log asks for (its widest job: 4 node(s); the most its recorded schedule holds at once: 8); "
                           "the twin simulates every node (time and memory grow with them) and a machine that size "
                           "never queues a job: if the header's MaxNodes / MaxProcs are wrong, give the machine with "
                           "--system")


def test_a_header_machine_beyond_belief_is_refused_before_any_work(tmp_path):
    """More than 1000 x what the log holds at once (a placeholder MaxNodes): one ConfigError naming
    the trace and both sizes, from load_run_inputs; the same log with a system file runs."""
    from tests.twin_helpers import write_swf_rows

    rows = [(1, 100, 0, 100, 4), (2, 100, 10, 100, 4)]
    path = write_swf_rows(tmp_path / "XYZ.swf", rows, max_nodes=2147483647, header=["; UnixStartTime: 1000000000"])
    with pytest.raises(ConfigError, match=r"XYZ\.swf: the machine comes from the trace's header \(2,147,483,647 "
                                          r"nodes\), 268,435,456 times .* holds at once: 8\): refused"):
        load_run_inputs(RunConfig(data=str(path), policy="fcfs", backfill="easy"))
    (tmp_path / "big.toml").write_text('[system]\nname = "big"\nnodes = 16\n')
    wl, system = load_run_inputs(RunConfig(data=str(path), policy="fcfs", backfill="easy", system=str(tmp_path / "big.toml")))
    assert system.nodes == 16 and len(wl) == 2
