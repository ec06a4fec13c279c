"""Bad values in sacct, Eurora and Lassen traces: each is an error naming the file and 1-based line
(skipped and listed under ``lenient``) or a counted warning, with hand-computed expectations."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from twinsweep.core.errors import TraceFormatError
from twinsweep.core.loaders import load_workload
from twinsweep.core.loaders.sacct import MAX_ARRAY_INDEX, expand_array_spec, parse_energy

HEADER = ("JobID|JobIDRaw|JobName|User|Account|Partition|QOS|Priority|Submit|Eligible|Start|End|Elapsed|"
          "ElapsedRaw|Timelimit|TimelimitRaw|NNodes|NCPUS|AllocTRES|NodeList|State|ExitCode|ConsumedEnergyRaw")


def srow(jid="100", submit="2024-03-01T10:00:00", start="2024-03-01T10:01:00", end="2024-03-01T11:01:00",
         elapsed="3600", nnodes="2", nodelist="node[001-002]", energy="", state="COMPLETED"):
    return (f"{jid}|{jid}|a|alice|p1|cpu|normal|1000|{submit}|{submit}|{start}|{end}|01:00:00|{elapsed}|02:00:00|120|"
            f"{nnodes}|64|cpu=64|{nodelist}|{state}|0:0|{energy}")


def sacct(tmp_path, rows, pre="", name="s.txt"):
    p = tmp_path / name
    p.write_text(pre + "\n".join([HEADER] + rows) + "\n")
    return p


@pytest.fixture(autouse=True)
def _no_tz_env(monkeypatch):
    monkeypatch.delenv("TWINSWEEP_TZ", raising=False)


def by_id(wl, jid):
    return wl.jobs.loc[wl.jobs["job_id"] == jid].iloc[0]


# ------------------------------------------------------------------------------------------ sacct

def test_sacct_end_before_start_is_a_malformed_line(tmp_path):
    bad = srow("101", submit="2024-03-01T10:05:00", start="2024-03-01T12:06:00", end="2024-03-01T11:00:00",
               elapsed="3240", nnodes="1", nodelist="node003")
    p = sacct(tmp_path, [srow(), bad])
    with pytest.raises(TraceFormatError) as e:
        load_workload(p)
    # 11:00 − 12:06 = −66 min = −3,960 s
    assert e.value.line == 3 and e.value.path == str(p) and "End 2024-03-01T11:00:00 is before Start" in e.value.detail
    assert "-3,960 s" in e.value.detail
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["100"] and [n for n, _ in wl.skipped_lines] == [3]


def test_sacct_start_before_submit_is_kept_and_warned(tmp_path):
    early = srow("101", submit="2024-03-01T10:05:00", start="2024-03-01T09:06:00", end="2024-03-01T11:00:00",
                 elapsed="6840", nnodes="1", nodelist="node003")
    wl = load_workload(sacct(tmp_path, [srow(), early]))
    j = by_id(wl, "101")
    # epoch = 10:00 (the first submit): submit 300 s, start 09:06 = −3,240 s, run 11:00 − 09:06 = 6,840 s
    assert (j.submit_time, j.recorded_start_time, j.run_time) == (300, -3240, 6840)
    assert wl.header["sacct_start_before_submit"] == 1
    (w,) = [w for w in wl.warnings if "Start before Submit" in w]
    assert "1 job(s)" in w and "job 101 (line 3)" in w and "3,540 s before Submit" in w  # 10:05 − 09:06


@pytest.mark.parametrize("text,value,unset", [
    ("7200000", 7200000.0, False), ("", None, False), ("Unknown", None, False), ("0", None, True),
    ("18446744073709551614", None, True), ("18446744073709551615", None, True), (str(2 ** 63), None, True),
    (str(2 ** 63 - 1024), float(2 ** 63 - 1024), False),
])
def test_parse_energy(text, value, unset):
    assert parse_energy(text) == (value, unset)


@pytest.mark.parametrize("text", ["-5", "12 J", "1e3"])
def test_parse_energy_rejects_text(text):
    with pytest.raises(ValueError, match="ConsumedEnergyRaw"):
        parse_energy(text)


def test_sacct_zero_and_no_val_energy_are_missing(tmp_path):
    rows = [srow("100", energy="0"), "100.batch|100.batch|batch|||cpu||||2024-03-01T10:01:00|2024-03-01T10:01:00|"
            "2024-03-01T11:01:00|01:00:00|3600|||1|32|cpu=32|node001|COMPLETED|0:0|0",
            srow("101", energy="18446744073709551614"), srow("102", energy="18446744073709551615"),
            srow("103", energy="7200000")]
    wl = load_workload(sacct(tmp_path, rows))
    for jid in ("100", "101", "102"):
        assert math.isnan(by_id(wl, jid).energy_j) and math.isnan(by_id(wl, jid).avg_power_w)
    assert by_id(wl, "103").avg_power_w == 2000.0  # 7.2 MJ over 3,600 s
    assert wl.header["sacct_energy_unset"] == 3
    (w,) = [w for w in wl.warnings if "no recorded energy" in w]
    assert "3 job(s)" in w and "job 100 (line 2)" in w and "node power model" in w


def test_sacct_negative_energy_is_a_malformed_line(tmp_path):
    with pytest.raises(TraceFormatError) as e:
        load_workload(sacct(tmp_path, [srow(), srow("101", energy="-5")]))
    assert e.value.line == 3 and "'-5'" in e.value.detail


def test_sacct_duplicate_rows_are_warned(tmp_path):
    again = srow(submit="2024-03-01T12:00:00", start="2024-03-01T12:01:00", end="2024-03-01T13:01:00")
    wl = load_workload(sacct(tmp_path, [srow(), again, srow("101"), srow("101")]))
    assert list(wl.jobs["job_id"]) == ["100", "101"] and by_id(wl, "100").recorded_start_time == 60
    assert wl.header["sacct_duplicate_rows"] == 2
    (w,) = [w for w in wl.warnings if "repeat a job id" in w]
    assert "2 row(s)" in w and "job 100: line 2 kept, line 3 dropped" in w


def test_sacct_nnodes_must_match_nodelist(tmp_path):
    p = sacct(tmp_path, [srow(), srow("101", nnodes="4", nodelist="node[003-004]")])
    with pytest.raises(TraceFormatError) as e:
        load_workload(p)
    assert e.value.line == 3 and "NNodes 4 but NodeList 'node[003-004]' names 2 node(s)" in e.value.detail
    assert len(load_workload(p, lenient=True)) == 1


def test_sacct_unknown_zone_line_names_the_file(tmp_path):
    p = sacct(tmp_path, [srow()], pre="# tz: Mars/Olympus\n")
    with pytest.raises(TraceFormatError) as e:
        load_workload(p)
    assert e.value.path == str(p) and e.value.line == 1 and "Mars/Olympus" in e.value.detail
    assert load_workload(p, tz="UTC").timezone == "UTC"  # a requested zone wins; the line is not read


def test_sacct_bad_dump_time_names_its_line(tmp_path):
    with pytest.raises(TraceFormatError) as e:
        load_workload(sacct(tmp_path, [srow()], pre="# tz: UTC\n# dump_time: yesterday\n"))
    assert e.value.line == 2 and "'yesterday'" in e.value.detail


def test_sacct_impossible_date_names_the_field(tmp_path):
    with pytest.raises(TraceFormatError) as e:
        load_workload(sacct(tmp_path, [srow(), srow("101", submit="2024-02-30T10:05:00")]))
    assert e.value.line == 3 and e.value.detail.startswith("Submit: '2024-02-30T10:05:00'")


@pytest.mark.parametrize("spec,tasks", [
    ("1-3,2-5", [1, 2, 3, 4, 5]), ("3999999-4000000", [3999999, 4000000]), ("7,7", [7]),
])
def test_array_spec_values(spec, tasks):
    assert expand_array_spec(spec) == tasks


@pytest.mark.parametrize("spec,what", [
    ("1-4000001", "above 4,000,000"), ("1-100000000", "above 4,000,000"), ("5-3", "empty"), ("1-9:0", "step 0"),
    ("1-4000000,1-4000000", "more than 4,000,001 tasks"),
])
def test_array_spec_limits(spec, what):
    assert MAX_ARRAY_INDEX == 4000000
    with pytest.raises(ValueError, match=what):
        expand_array_spec(spec)


def test_sacct_huge_array_is_a_malformed_line(tmp_path):
    pend = srow("102_[1-100000000]", start="Unknown", end="Unknown", elapsed="0", nodelist="None assigned",
                state="PENDING")
    p = sacct(tmp_path, [srow(), pend])
    with pytest.raises(TraceFormatError) as e:
        load_workload(p)
    assert e.value.line == 3 and "MaxArraySize" in e.value.detail
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["100"] and wl.skipped_lines[0][0] == 3


def test_sacct_pending_tasks_share_one_row_of_values(tmp_path):
    pend = srow("102_[4-6]", submit="2024-03-01T10:10:00", start="Unknown", end="Unknown", elapsed="0",
                nodelist="None assigned", state="PENDING")
    wl = load_workload(sacct(tmp_path, [srow(), srow("102_5", submit="2024-03-01T10:10:00", nnodes="1",
                                                     nodelist="node009"), pend]))
    assert list(wl.jobs["job_id"]) == ["100", "102_5", "102_4", "102_6"]
    tasks = wl.jobs["array_task_id"].tolist()
    assert pd.isna(tasks[0]) and tasks[1:] == [5, 4, 6]
    t4 = by_id(wl, "102_4")
    assert t4.submit_time == 600 and pd.isna(t4.recorded_start_time) and t4.nodes == 2 and t4.node_ids is None
    assert t4.sacct_state == "PENDING" and t4.array_job_id == "102" and by_id(wl, "102_5").nodes == 1
    assert wl.header["sacct_duplicate_rows"] == 1  # task 5 already read as its own row


# ------------------------------------------------------------------------------------------ Eurora

def eline(jid=10, submit="2014-03-31 08:00:00", start="2014-03-31 08:10:00", end="2014-03-31 09:10:00",
          hhmm="01:30", tail_end="COMPLETED;0", block="5;1;1;0;1048576"):
    return f"{jid};xxx;yyy;parallel;{submit}__{block}#__{start};{end};1;1;1;{hhmm};NA;NA;{tail_end}"


def eurora(tmp_path, lines, name="e.txt"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("bad,what", [
    (eline(11, submit="2014-13-45 08:51:10"), "SUBMIT: '2014-13-45 08:51:10' is not a valid date"),
    (eline(11, start="2014-03-31 8:10"), "START: '2014-03-31 8:10' is not a time stamp"),
    (eline(11, start="2014-03-31 16:55:42", end="2014-03-31 14:02:08"),
     "END 2014-03-31 14:02:08 is before START 2014-03-31 16:55:42"),
    (eline(11, tail_end="CO"), "found 9 (the line is cut short"),
    (eline(11, tail_end="COMPLETED;"), "apptype ''"),
    (eline(11, hhmm="1h30"), "walltime (HH:MM) '1h30'"),
    # a letter in a node entry's numeric field names the entry and the field, not Python's int()
    (eline(11, block="5;1x;1;0;1048576"), "node entry '5;1x;1;0;1048576': cores '1x' is not a whole number"),
    (eline(11, block="5;1;1;0;10MB"), "node entry '5;1;1;0;10MB': mem '10MB' is not a number"),
    (eline(11, block="5;-3;1;0;1048576"), "a node entry has a negative count of cores"),
])
def test_eurora_bad_values_name_the_line(tmp_path, bad, what):
    p = eurora(tmp_path, [eline(), bad, eline(12)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning may leak
        with pytest.raises(TraceFormatError) as e:
            load_workload(p, format="eurora")
        assert e.value.line == 2 and what in e.value.detail
        wl = load_workload(p, format="eurora", lenient=True)
    assert list(wl.jobs["job_id"]) == ["10", "12"] and [n for n, _ in wl.skipped_lines] == [2]
    a = by_id(wl, "10")
    # 08:00 CEST = 06:00 UTC is the epoch; 08:10 -> 600 s; 09:10 − 08:10 = 3,600 s; 01:30 = 5,400 s
    assert (a.submit_time, a.recorded_start_time, a.run_time, a.time_limit) == (0, 600, 3600, 5400)


def test_eurora_end_before_start_in_the_dst_fall_back_hour(tmp_path):
    """Wall times are converted first: 02:50 → 02:10 on 2014-10-26 (Europe/Rome) reads both as the first
    (CEST) occurrence, so END is before START and the line is refused, naming it."""
    p = eurora(tmp_path, [eline(submit="2014-10-26 01:00:00", start="2014-10-26 02:50:00", end="2014-10-26 02:10:00")])
    with pytest.raises(TraceFormatError) as e:
        load_workload(p, format="eurora")
    assert e.value.line == 1


# ------------------------------------------------------------------------------------------ Lassen

RAPS_COLS = ("job_id,account_hash,name_hash,nodes_required,scheduled_nodes,submit_time_s,start_time_s,end_time_s,"
             "time_limit_s,wall_time_s,trace_quanta_s,trace_start_time_s,trace_end_time_s,n_samples,cpu_util_mean,"
             "cpu_util_min,cpu_util_max,gpu_util_mean,gpu_util_min,gpu_util_max,net_tx_mean,net_rx_mean")


def rrow(jid, nodes="2", sched="805 12", submit="100.0", start="200.0", end="260.0", wall="60.0"):
    return (f"{jid},acct,n,{nodes},{sched},{submit},{start},{end},3600.0,{wall},20,{start},{end},3,1.5,1.5,1.5,"
            "2.0,2.0,2.0,1.0,2.0")


def raps(tmp_path, rows, name="snap_summary.csv", cut=0):
    p = tmp_path / name
    text = "\n".join([RAPS_COLS] + rows) + "\n"
    p.write_text(text[:len(text) - cut] if cut else text)
    return p


def test_lassen_csv_cut_mid_row(tmp_path):
    p = raps(tmp_path, [rrow(7), rrow(8, nodes="1", sched="40")], cut=60)  # the last row loses its tail
    with pytest.raises(TraceFormatError) as e:
        load_workload(p)
    assert e.value.line == 3 and "expected 22 comma-separated fields" in e.value.detail and "cut short" in e.value.detail
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["7"] and [n for n, _ in wl.skipped_lines] == [3]
    assert by_id(wl, "7").run_time == 60 and by_id(wl, "7").node_ids == [0, 1]  # ranks of 12, 805


@pytest.mark.parametrize("bad,what", [
    (rrow(9, submit="NaN"), "submit_time_s is missing"),
    (rrow(9, submit="abc"), "submit_time_s 'abc' is not a number"),
    (rrow(9, nodes="-4"), "nodes_required '-4' is not a whole number of nodes >= 1"),
    (rrow(9, start="300.0", end="200.0", wall=""), "end_time_s 200 is before start_time_s 300"),
    (rrow(9, wall="-5"), "wall_time_s -5 is not a run time"),
    (rrow(9, sched="12 x"), "scheduled_nodes: 'x' is not a node index"),
])
def test_lassen_csv_bad_values_name_the_line(tmp_path, bad, what):
    p = raps(tmp_path, [rrow(7), bad, rrow(8, nodes="1", sched="40")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning may leak
        with pytest.raises(TraceFormatError) as e:
            load_workload(p)
        assert e.value.line == 3 and f"job 9: {what}" in e.value.detail
        wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["7", "8"] and [n for n, _ in wl.skipped_lines] == [3]
    assert wl.jobs["trace_index"].tolist() == [0, 1] and by_id(wl, "8").node_ids == [1]  # 12, 40, 805 -> 0, 1, 2


def test_lassen_parquet_bad_row_is_named_by_row(tmp_path):
    src = raps(tmp_path, [rrow(7), rrow(8, nodes="1", sched="40")])
    df = pd.read_csv(src, dtype={"scheduled_nodes": str})
    df["scheduled_nodes"] = [[805, 12], [40]]
    df.loc[1, "submit_time_s"] = np.nan
    pq = tmp_path / "snap.parquet"
    df.to_parquet(pq, index=False)
    with pytest.raises(TraceFormatError) as e:
        load_workload(pq)
    assert e.value.line is None and e.value.detail == "row 2, job 8: submit_time_s is missing"
    wl = load_workload(pq, lenient=True)
    assert list(wl.jobs["job_id"]) == ["7"] and wl.skipped_lines == [(2, "row 2, job 8: submit_time_s is missing")]


LAST_COLS = "allocation_id,primary_job_id,num_nodes,begin_time,end_time,job_submit_time,time_limit,exit_status"


@pytest.mark.parametrize("bad,line,what", [
    ("2,20,1,2019-01-01 10:00:00,2019-01-01 09:00:00,2019-01-01 08:00:00,3600,0", 3, "end_time 2019-01-01 09:00:00 is "
     "before begin_time"),
    ("2,20,1,2019-01-01 10:00:00,2019-01-01 11:00:00,2019-13-45 08:00:00,3600,0", 3, "job_submit_time "
     "'2019-13-45 08:00:00' is not a date and time"),
    ("2,20,1,2019-01-01 10:00", 3, "expected 8 comma-separated fields (the header's), found 4"),
    ("2,20,0,2019-01-01 10:00:00,2019-01-01 11:00:00,2019-01-01 08:00:00,3600,0", 3, "num_nodes '0'"),
])
def test_last_bad_values_name_the_line(tmp_path, bad, line, what):
    p = tmp_path / "final_csm_allocation_history_hashed.csv"
    p.write_text(LAST_COLS + "\n1,10,2,2019-01-01 08:10:00,2019-01-01 09:10:00,2019-01-01 08:00:00,3600,0\n"
                 + bad + "\n")
    with pytest.raises(TraceFormatError) as e:
        load_workload(p)
    assert e.value.line == line and what in e.value.detail
    wl = load_workload(p, lenient=True)
    a = by_id(wl, "10")
    # 08:00 PST is the epoch: start 600 s, run 3,600 s
    assert len(wl) == 1 and (a.submit_time, a.recorded_start_time, a.run_time, a.nodes) == (0, 600, 3600, 2)
