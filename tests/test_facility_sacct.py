"""Slurm sacct dumps (allocations vs steps, arrays, pending remainders, heterogeneous jobs, Unknown/
None/UNLIMITED, D-HH:MM:SS, node lists, DST) and node-list expansion, each with its expected parse."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from twinsweep.core.errors import TraceFormatError
from twinsweep.core.loaders import detect_format, load_workload, read_trace
from twinsweep.core.loaders.nodelist import HostlistError, NodeIndex, compress_hostlist, expand_hostlist
from twinsweep.core.durations import parse_slurm_duration
from twinsweep.core.loaders.sacct import expand_array_spec

HEADER = ("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|Submit|Eligible|Start|End|Elapsed|"
          "ElapsedRaw|Timelimit|TimelimitRaw|NNodes|NCPUS|AllocTRES|NodeList|State|ExitCode|ConsumedEnergyRaw")

ROWS = [
    # a plain allocation, 4 nodes, energy recorded
    "1000|1000|sim|alice|proj1|batch|normal|4294|2024-01-10T08:00:00|2024-01-10T08:00:00|2024-01-10T08:05:00|"
    "2024-01-10T09:05:00|01:00:00|3600|02:00:00|120|4|128|billing=128,cpu=128,gres/gpu=16,mem=1T,node=4|"
    "node[001-004]|COMPLETED|0:0|7200000",
    # its steps: not jobs
    "1000.batch|1000.batch|batch||proj1||||2024-01-10T08:05:00|2024-01-10T08:05:00|2024-01-10T08:05:00|"
    "2024-01-10T09:05:00|01:00:00|3600|||1|32|cpu=32,node=1|node001|COMPLETED|0:0|1800000",
    "1000.extern|1000.extern|extern||proj1||||2024-01-10T08:05:00|2024-01-10T08:05:00|2024-01-10T08:05:00|"
    "2024-01-10T09:05:00|01:00:00|3600|||4|128|cpu=128,node=4|node[001-004]|COMPLETED|0:0|7100000",
    # array task 1 of array 1001 (its own raw id 1002), UNLIMITED limit, no energy
    "1001_1|1002|arr|bob|proj2|batch|normal|100|2024-01-10T08:10:00|2024-01-10T08:10:00|2024-01-10T08:20:00|"
    "2024-01-10T08:30:00|00:10:00|600|UNLIMITED|UNLIMITED|1|32|cpu=32,node=1|node010|FAILED|1:0|",
    # the array's pending remainder: tasks 2, 3, 4 (throttle %2)
    "1001_[2-4%2]|1001|arr|bob|proj2|batch|normal|100|2024-01-10T08:10:00|Unknown|Unknown|Unknown|00:00:00|0|"
    "01:00:00|60|1|32||None assigned|PENDING|0:0|0",
    # a heterogeneous job: two components
    "1003+0|1003|het|carol|proj1|batch|normal|50|2024-01-10T08:30:00|2024-01-10T08:30:00|2024-01-10T08:40:00|"
    "2024-01-10T09:40:00|01:00:00|3600|1-00:00:00|1440|2|64|cpu=64,node=2|node[005-006]|COMPLETED|0:0|1000",
    "1003+1|1004|het|carol|proj1|gpu|normal|50|2024-01-10T08:30:00|2024-01-10T08:30:00|2024-01-10T08:40:00|"
    "2024-01-10T09:40:00|01:00:00|3600|12:00:00|720|2|64|cpu=64,gres/gpu=8,node=2|gpu[01-02]|FAILED|1:0|2000",
    "1003+0.batch|1003.batch|batch||proj1||||2024-01-10T08:40:00|2024-01-10T08:40:00|2024-01-10T08:40:00|"
    "2024-01-10T09:40:00|01:00:00|3600|||1|32||node005|COMPLETED|0:0|500",
    # cancelled before it started
    "1005|1005|cancel|dave|proj3|batch|normal|0|2024-01-10T08:50:00|2024-01-10T08:50:00|None|"
    "2024-01-10T09:00:00|00:00:00|0|30:00|30|1|1||None assigned|CANCELLED by 1234|0:0|0",
    # still running when sacct ran: End Unknown, elapsed D-HH:MM:SS, Partition_Limit
    "1006|1006|run|erin|proj3|batch|normal|7|2024-01-10T09:00:00|2024-01-10T09:00:00|2024-01-10T09:01:00|"
    "Unknown|1-02:03:04|93784|Partition_Limit|Partition_Limit|2|2||node[007,009]|RUNNING|0:0|",
]


def dump(tmp_path, rows=ROWS, header=HEADER, name="sacct.txt", pre="", trailing=False):
    p = tmp_path / name
    lines = [header] + list(rows)
    if trailing:
        lines = [ln + "|" for ln in lines]
    p.write_text(pre + "\n".join(lines) + "\n")
    return p


def job(wl, jid):
    j = wl.jobs
    return j.loc[j["job_id"] == jid].iloc[0]


@pytest.fixture(autouse=True)
def _no_tz_env(monkeypatch):
    monkeypatch.delenv("TWINSWEEP_TZ", raising=False)


def test_detect_and_rows(tmp_path):
    p = dump(tmp_path)
    assert detect_format(read_trace(p)) == "sacct"
    wl = load_workload(p)
    assert wl.format == "sacct" and wl.procs_unit == "nodes"
    assert wl.epoch == int(pd.Timestamp("2024-01-10 08:00:00", tz="UTC").timestamp())
    assert list(wl.jobs["job_id"]) == ["1000", "1001_1", "1001_2", "1001_3", "1001_4", "1003", "1005", "1006"]
    assert wl.header["sacct_step_rows"] == 3
    a = job(wl, "1000")
    assert (a.submit_time, a.recorded_start_time, a.recorded_end_time, a.run_time, a.time_limit) == (0, 300, 3900, 3600, 7200)
    assert (a.nodes, a.procs, a.cpus, a.gpus) == (4, 4, 128, 16)
    assert a.hosts == ["node001", "node002", "node003", "node004"]
    assert a.user == "alice" and a.account == "proj1" and a.partition == "batch" and a.priority == 4294
    assert a.status == "completed" and a.energy_j == 7200000 and a.avg_power_w == 2000.0


def test_array_task_and_pending_remainder(tmp_path):
    wl = load_workload(dump(tmp_path))
    t1 = job(wl, "1001_1")
    assert (t1.array_job_id, t1.array_task_id) == ("1001", 1)
    assert t1.status == "failed" and pd.isna(t1.time_limit) and t1.run_time == 600  # UNLIMITED -> missing
    assert math.isnan(t1.energy_j)
    for k in (2, 3, 4):
        t = job(wl, f"1001_{k}")
        assert t.array_task_id == k and t.sacct_state == "PENDING" and t.status == "unknown"
        assert pd.isna(t.recorded_start_time) and pd.isna(t.run_time) and t.node_ids is None and t.time_limit == 3600
        assert t.submit_time == 600


def test_heterogeneous_job_is_one_job(tmp_path):
    wl = load_workload(dump(tmp_path))
    h = job(wl, "1003")
    assert h.het_components == 2
    assert (h.nodes, h.cpus, h.gpus) == (4, 128, 8)
    assert h.hosts == ["node005", "node006", "gpu01", "gpu02"]
    assert (h.recorded_start_time, h.run_time, h.time_limit) == (2400, 3600, 86400)  # the larger limit: 1 day
    assert h.energy_j == 3000 and h.status == "failed" and h.partition == "batch"


def test_cancelled_before_start_and_still_running(tmp_path):
    wl = load_workload(dump(tmp_path))
    c = job(wl, "1005")
    assert c.status == "cancelled" and pd.isna(c.recorded_start_time) and pd.isna(c.run_time) and c.time_limit == 1800
    assert c.node_ids is None and c.sacct_state == "CANCELLED by 1234"
    r = job(wl, "1006")
    # changed (issue 11, item 10a): a job still running when sacct printed was "unknown" with no run
    # time, so the twin never let it hold its nodes; now it is "running" and has run its Elapsed so far
    assert r.status == "running" and r.recorded_start_time == 3660 and pd.isna(r.recorded_end_time)
    assert r.run_time == 93784 and wl.header["running_when_recorded"] == 1
    assert r.elapsed == 93784 and pd.isna(r.time_limit)  # 1-02:03:04; Partition_Limit -> missing
    assert r.hosts == ["node007", "node009"]


def test_node_indexes_rank_hostnames_of_the_dump(tmp_path):
    wl = load_workload(dump(tmp_path))
    names = wl.header["sacct_node_names"]
    assert names == ["gpu01", "gpu02", "node001", "node002", "node003", "node004", "node005", "node006",
                     "node007", "node009", "node010"]
    assert job(wl, "1000").node_ids == [2, 3, 4, 5]
    assert job(wl, "1003").node_ids == [0, 1, 6, 7]
    assert job(wl, "1001_1").node_ids == [10]


def test_duplicate_rows_keep_the_first(tmp_path):
    wl = load_workload(dump(tmp_path, rows=ROWS + [ROWS[0].replace("COMPLETED", "REQUEUED")]))
    assert job(wl, "1000").status == "completed" and wl.header["sacct_duplicate_rows"] == 1


def test_parsable_with_trailing_bar(tmp_path):
    wl = load_workload(dump(tmp_path, trailing=True))
    assert len(wl) == 8 and job(wl, "1000").run_time == 3600


def test_step_energy_used_when_allocation_has_none(tmp_path):
    rows = [ROWS[0].rsplit("|", 1)[0] + "|", ROWS[1], ROWS[2]]
    wl = load_workload(dump(tmp_path, rows=rows))
    assert job(wl, "1000").energy_j == 7100000  # the largest step (extern), steps overlap


def test_subset_of_columns(tmp_path):
    hdr = "JobID|Submit|Start|End|NNodes|State"
    rows = ["7|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:02:00|3|COMPLETED"]
    wl = load_workload(dump(tmp_path, rows=rows, header=hdr))
    a = job(wl, "7")
    assert (a.nodes, a.run_time, a.node_ids) == (3, 60, None) and pd.isna(a.time_limit)


def test_malformed_rows(tmp_path):
    p = dump(tmp_path, rows=ROWS + ["1007|1007|x"])
    with pytest.raises(TraceFormatError) as e:
        load_workload(p)
    assert e.value.line == 12 and "fields" in e.value.detail
    wl = load_workload(p, lenient=True)
    assert len(wl) == 8 and wl.skipped_lines[0][0] == 12
    bad_time = ROWS[0].replace("2024-01-10T08:05:00", "10/01/2024", 1)
    with pytest.raises(TraceFormatError, match="time stamp"):
        load_workload(dump(tmp_path, rows=[bad_time], name="b.txt"))
    bad_nodes = ROWS[0].replace("node[001-004]", "node[001-")
    with pytest.raises(TraceFormatError, match="unbalanced"):
        load_workload(dump(tmp_path, rows=[bad_nodes], name="c.txt"))


@pytest.mark.parametrize("text,seconds", [
    ("1-02:03:04", 93784), ("02:03:04", 7384), ("03:04", 184), ("00:00:00", 0), ("90", 5400),
    ("2-12", 216000), ("5-00:30", 432000 + 1800), ("UNLIMITED", None), ("Partition_Limit", None),
    ("Unknown", None), ("", None), ("10:00.5", 600),
])
def test_durations(text, seconds):
    assert parse_slurm_duration(text, "Elapsed", missing_ok=True) == seconds


def test_bad_duration():
    with pytest.raises(ValueError, match="Elapsed: 'ten minutes' is not a Slurm duration"):
        parse_slurm_duration("ten minutes", "Elapsed", missing_ok=True)


@pytest.mark.parametrize("spec,tasks", [
    ("2-4%2", [2, 3, 4]), ("5,7,9-10", [5, 7, 9, 10]), ("1-9:4", [1, 5, 9]), ("3", [3]),
])
def test_array_specs(spec, tasks):
    assert expand_array_spec(spec) == tasks


# ------------------------------------------------------------------------------------------ DST

DST_ROWS = [
    # fall back 2023-10-29 03:00 CEST -> 02:00 CET: 02:30 (CEST) to 02:20 (CET) is 50 min
    "1|1|a|u|p|batch|normal|1|2023-10-29T02:10:00|2023-10-29T02:10:00|2023-10-29T02:30:00|"
    "2023-10-29T02:20:00|00:50:00|3000|01:00:00|60|1|1||n1|COMPLETED|0:0|",
    # the same wall times, read the other way round: 02:20 (CEST) to 02:30 (CEST) is 10 min
    "2|2|a|u|p|batch|normal|1|2023-10-29T02:00:00|2023-10-29T02:00:00|2023-10-29T02:20:00|"
    "2023-10-29T02:30:00|00:10:00|600|01:00:00|60|1|1||n2|COMPLETED|0:0|",
    # across the fall-back hour: 01:30 CEST to 03:30 CET is 3 h
    "3|3|a|u|p|batch|normal|1|2023-10-29T01:00:00|2023-10-29T01:00:00|2023-10-29T01:30:00|"
    "2023-10-29T03:30:00|03:00:00|10800|04:00:00|240|1|1||n3|COMPLETED|0:0|",
    # across spring forward 2023-03-26 02:00 CET -> 03:00 CEST: 01:30 to 03:30 is 1 h
    "4|4|a|u|p|batch|normal|1|2023-03-26T01:00:00|2023-03-26T01:00:00|2023-03-26T01:30:00|"
    "2023-03-26T03:30:00|01:00:00|3600|02:00:00|120|1|1||n4|COMPLETED|0:0|",
]


def test_dst_changes_in_local_time(tmp_path):
    p = dump(tmp_path, rows=DST_ROWS, pre="# tz: Europe/Paris\n")
    wl = load_workload(p)
    assert wl.header["sacct_timezone"] == "Europe/Paris"
    utc = lambda s: int(pd.Timestamp(s, tz="UTC").timestamp()) - wl.epoch  # noqa: E731
    a = job(wl, "1")
    assert a.run_time == 3000 and a.recorded_start_time == utc("2023-10-29 00:30:00") and a.recorded_end_time == utc("2023-10-29 01:20:00")
    b = job(wl, "2")
    assert b.run_time == 600 and b.recorded_start_time == utc("2023-10-29 00:20:00")
    assert job(wl, "3").run_time == 10800
    d = job(wl, "4")
    assert d.run_time == 3600 and d.recorded_start_time == utc("2023-03-26 00:30:00")
    assert wl.header["sacct_dst_ambiguous"] >= 4


def test_timezone_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TWINSWEEP_TZ", "America/New_York")
    wl = load_workload(dump(tmp_path))
    assert wl.epoch == int(pd.Timestamp("2024-01-10 13:00:00", tz="UTC").timestamp())  # EST = UTC-5


# ------------------------------------------------------------------------------------------ node lists

@pytest.mark.parametrize("text,names", [
    ("node[001-004,010]", ["node001", "node002", "node003", "node004", "node010"]),
    ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
    ("a1,b[3-4],c", ["a1", "b3", "b4", "c"]),
    ("nid[000008-000010]", ["nid000008", "nid000009", "nid000010"]),
    ("x[8-10]", ["x8", "x9", "x10"]),
    ("gpu[01-02]-ib", ["gpu01-ib", "gpu02-ib"]),
    ("node7", ["node7"]),
    ("None assigned", []), ("", []), (None, []),
])
def test_expand_hostlist(text, names):
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("text", ["n[1-", "n1]", "n[3-1]", "n[a-b]", "n[1-2]]"])
def test_bad_hostlists(text):
    with pytest.raises(HostlistError):
        expand_hostlist(text)


def test_compress_round_trip_and_index():
    names = ["n01", "n02", "n03", "n05", "login"]
    assert set(expand_hostlist(compress_hostlist(names))) == set(names)
    idx = NodeIndex(["n10", "n9", "n100"])
    assert [idx(x) for x in ("n9", "n10", "n100")] == [0, 1, 2]
    assert NodeIndex.by_number(1)("lassen17") == 16
