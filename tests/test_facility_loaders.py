"""Facility-dataset loaders on fixture files written here in the datasets' published schemas.

Every expected value below is worked out by hand from the fixture rows (comments show the sums).
"""

from __future__ import annotations

import gzip
import math

import numpy as np
import pandas as pd
import pytest

from twinsweep.core.errors import TraceFormatError
from twinsweep.core.loaders import available_formats, detect_format, load_workload, read_trace

UTC = "UTC"


def ts(*vals, tz=UTC):
    return pd.to_datetime(list(vals)).tz_localize(tz) if tz else pd.to_datetime(list(vals))


def row(wl, job_id):
    j = wl.jobs
    return j.loc[j["job_id"] == str(job_id)].iloc[0]


def test_formats_are_registered():
    for name in ("pm100", "adastra", "fdata", "lassen-last", "lassen-raps", "swf-frontier", "sacct", "eurora"):
        assert name in available_formats()


# ----------------------------------------------------------------------------------------- PM100

def write_pm100(path):
    df = pd.DataFrame({
        "job_id": [101, 102, 103],
        "user_id": [7, 7, 8],
        "group_id": [1, 1, 2],
        "partition": [1, 1, 2],
        "qos": ["normal", "normal", "debug"],
        "priority": [100, 200, 0],
        "job_state": ["COMPLETED", "FAILED", "CANCELLED"],
        "submit_time": ts("2020-05-01 00:00:00", "2020-05-01 00:01:00", "2020-05-01 00:02:00"),
        "eligible_time": ts("2020-05-01 00:00:00", "2020-05-01 00:01:00", "2020-05-01 00:02:00"),
        "start_time": ts("2020-05-01 00:10:00", "2020-05-01 00:11:00", None),
        "end_time": ts("2020-05-01 00:11:00", "2020-05-01 00:12:40", None),
        "run_time": [60, 100, 0],
        "time_limit": [30, 4294967294, 10],  # minutes; INFINITE
        "num_nodes_req": [2, 1, 1],
        "num_nodes_alloc": [2, 1, 1],
        "num_cores_alloc": [64, 32, 0],
        "num_gpus_alloc": [8, 4, 0],
        "nodes": [[3, 4], [7], []],
        "node_power_consumption": [[2000.0, 2200.0, 2400.0], [1000.0] * 5, []],
        "cpu_power_consumption": [[400.0, 400.0, 400.0], [200.0] * 5, []],
        "mem_power_consumption": [[100.0, 100.0, 100.0], [50.0] * 5, []],
    })
    df.to_parquet(path, index=False)


def test_pm100_rows(tmp_path):
    p = tmp_path / "job_table.parquet"
    write_pm100(p)
    assert detect_format(read_trace(p)) == "pm100"
    wl = load_workload(p)
    assert wl.format == "pm100" and wl.procs_unit == "nodes" and len(wl) == 3
    assert wl.epoch == int(pd.Timestamp("2020-05-01", tz="UTC").timestamp())
    a = row(wl, 101)
    assert (a.submit_time, a.recorded_start_time, a.recorded_end_time, a.run_time) == (0, 600, 660, 60)
    assert a.time_limit == 1800  # 30 min
    assert a.nodes == 2 and a.procs == 2 and a.cpus == 64 and a.gpus == 8
    assert a.node_ids == [3, 4]
    assert a.user == "7" and a.account == "1" and a.partition == "1" and a.status == "completed"
    assert a.priority == 100
    assert a.avg_power_w == pytest.approx(2200.0)  # mean(2000, 2200, 2400), the job over both nodes
    assert a.energy_j == pytest.approx(2200.0 * 60)
    # CPU: 400 W / 2 nodes / 2 sockets = 100 W per socket: (100 - 47.25) / (252 - 47.25)
    assert a.cpu_util == pytest.approx(52.75 / 204.75)
    # GPU: 2200 - 400 - 100 - 2 x (42 NIC + 45 NVMe) = 1526 W; / 2 nodes / 4 GPUs = 190.75 W
    assert a.gpu_power_w == pytest.approx(1526.0)
    assert a.gpu_util == pytest.approx((190.75 - 75.0) / 225.0)
    tr = wl.traces["101"]
    assert tr["period"] == 20
    np.testing.assert_allclose(tr["node_power_w"], [1000.0, 1100.0, 1200.0])
    b = row(wl, 102)
    assert b.status == "failed" and pd.isna(b.time_limit)  # INFINITE
    assert (b.run_time, b.node_ids) == (100, [7])
    c = row(wl, 103)
    assert c.status == "cancelled" and pd.isna(c.recorded_start_time) and pd.isna(c.run_time)
    assert c.node_ids is None and math.isnan(c.avg_power_w) and "103" not in wl.traces


def test_pm100_replay_uses_the_recorded_trace(tmp_path):
    from twinsweep.core.config import RunConfig
    from twinsweep.core.run import simulate

    p = tmp_path / "job_table.parquet"
    write_pm100(p)
    res = simulate(RunConfig(data=str(p), policy="replay", sample_period=1))
    assert res.manifest["system"]["name"] == "marconi100"
    j = res.jobs.set_index("job_id")
    assert j.loc["101", "energy_j"] == pytest.approx(2 * (1000 + 1100 + 1200) * 20.0)
    assert list(j.loc["101", "node_ids"]) == [3, 4]
    c = res.stats["counts"]
    assert c["power_traced_jobs"] == 2 and c["power_trace_filled_samples"] == 0
    tl = res.timeline.set_index("time")
    idle = 555.76  # marconi100 node at idle
    # t = 620 s: job 101 (2 nodes, started at 600) is in its 2nd 20 s sample: 1100 W per node
    assert tl.loc[620, "it_power_w"] == pytest.approx(978 * idle + 2 * 1100.0)
    # t = 665 s: job 101 ended at 660, job 102 (1 node, 1000 W) started at 660
    assert tl.loc[665, "it_power_w"] == pytest.approx(979 * idle + 1000.0)


# ----------------------------------------------------------------------------------------- Adastra

def test_adastra_rows(tmp_path):
    p = tmp_path / "AdastaJobsMI250_fixture.parquet"
    df = pd.DataFrame({
        "job_id": [1, 2],
        "user_id": [11, 12],
        "job_state": ["COMPLETED", "TIMEOUT"],
        "priority": [5, 6],
        "submit_time": ts("2024-03-01 10:00:00", "2024-03-01 10:00:30"),
        "start_time": ts("2024-03-01 10:01:00", "2024-03-01 10:02:00"),
        "end_time": ts("2024-03-01 10:02:40", "2024-03-01 10:12:00"),
        "run_time": [100, 600],
        "time_limit": [3600, 600],  # seconds for Adastra
        "num_nodes_alloc": [2, 1],
        "nodes": [["x1000c0s1b0n1", "x1000c0s0b0n0"], ["x1000c0s10b0n0"]],
        "node_power_consumption": [[3000.0, 3200.0, 3400.0, 3600.0], [900.0, 1100.0]],
        "cpu_power_consumption": [[600.0, 600.0, 600.0, 600.0], [300.0, 300.0]],
        "mem_power_consumption": [[200.0, 200.0, 200.0, 200.0], [100.0, 100.0]],
    })
    df.to_parquet(p, index=False)
    assert detect_format(read_trace(p)) == "adastra"
    wl = load_workload(p)
    a = row(wl, 1)
    assert (a.submit_time, a.recorded_start_time, a.recorded_end_time, a.run_time, a.time_limit) == (0, 60, 160, 100, 3600)
    # natural order of the three names: ...s0b0n0 (0), ...s1b0n1 (1), ...s10b0n0 (2)
    assert a.node_ids == [0, 1] and row(wl, 2).node_ids == [2]
    assert a.avg_power_w == pytest.approx(3300.0)
    assert a.gpu_power_w == pytest.approx(3300.0 - 600.0 - 200.0)  # node - CPU - memory
    # per node 1250 W over 8 GCDs = 156.25 W: (156.25 - 44) / (238 - 44)
    assert a.gpu_util == pytest.approx(112.25 / 194.0)
    # CPU 300 W per node, 1 socket: (300 - 90) / (280 - 90) -> 1.105 clipped to 1
    assert a.cpu_util == 1.0
    assert wl.traces["1"]["period"] == 25  # 100 s over 4 samples
    np.testing.assert_allclose(wl.traces["1"]["node_power_w"], [1500.0, 1600.0, 1700.0, 1800.0])
    b = row(wl, 2)
    assert b.status == "failed" and wl.traces["2"]["period"] == 300


# ----------------------------------------------------------------------------------------- F-DATA

def fdata_frame(econ):
    return pd.DataFrame({
        "jid": ["j1", "j2", "j3"],
        "usr": ["u1", "u1", "u2"],
        "jnam": ["a", "b", "c"],
        "cnumr": [96, 48, 48],
        "nnumr": [2, 1, 4],
        "nnuma": [2, 0, 4],
        "adt": ["2021-04-01 09:00:00", "2021-04-01 09:01:00", "2021-04-01 09:02:00"],
        "sdt": ["2021-04-01 09:10:00", None, "2021-04-01 09:04:00"],
        "edt": ["2021-04-01 09:40:00", None, "2021-04-01 09:05:00"],
        "elpl": [3600.0, 600.0, 120.0],
        "duration": [1800.0, 0.0, 60.0],
        "pri": [1, 1, 2],
        "econ": econ,
        "avgpcon": [200.0, None, 100.0],
        "minpcon": [180.0, None, 95.0],
        "maxpcon": [240.0, None, 105.0],
        "perf1": [3.0, 0.0, 1.0],
        "perf6": [1.0, 0.0, 3.0],
        "exit state": ["completed", "failed", "abort"],
        "ec": [0, 1, 2],
    })


@pytest.mark.parametrize("unit,econ", [("Wh", [100.0, None, 100.0 / 60.0]), ("J", [360000.0, None, 6000.0])])
def test_fdata_rows(tmp_path, unit, econ, monkeypatch):
    monkeypatch.delenv("TWINSWEEP_TZ", raising=False)
    p = tmp_path / "21_04.parquet"
    fdata_frame(econ).to_parquet(p, index=False)
    assert detect_format(read_trace(p)) == "fdata"
    wl = load_workload(p)
    assert wl.header["econ_unit"] == unit
    # naive times are Asia/Tokyo (UTC+9): 2021-04-01 09:00 JST = 00:00 UTC
    assert wl.epoch == int(pd.Timestamp("2021-04-01 00:00:00", tz="UTC").timestamp())
    a = row(wl, "j1")
    assert (a.submit_time, a.recorded_start_time, a.recorded_end_time, a.run_time, a.time_limit) == (0, 600, 2400, 1800, 3600)
    assert a.nodes == 2 and a.cpus == 96 and a.node_ids is None and a.status == "completed"
    assert a.avg_power_w == 200.0 and a.energy_j == pytest.approx(360000.0)  # 100 Wh = 360 kJ
    assert a.cpu_util == pytest.approx(0.75)  # perf1 / (perf1 + perf6)
    b = row(wl, "j2")
    assert b.nodes == 1 and pd.isna(b.recorded_start_time) and pd.isna(b.run_time) and b.status == "failed"  # nnuma 0 -> nnumr
    c = row(wl, "j3")
    assert c.status == "failed" and c.energy_j == pytest.approx(6000.0) and c.nodes == 4


# ----------------------------------------------------------------------------------------- LAST

ALLOC_HEADER = ("allocation_id,primary_job_id,launch_node_name,isolated_cores,user_flags,system_flags,ssd_min,"
                "ssd_max,num_nodes,num_processors,num_gpus,projected_memory,type,job_type,hashed_user_id,"
                "hashed_user_group_id,begin_time,end_time,exit_status,job_submit_time,queue,requeue,time_limit,"
                "smt_mode,core_blink")
NODE_HEADER = ("allocation_id,node_name,shared,energy,gpfs_read,gpfs_write,ib_tx,ib_rx,power_cap,"
               "power_shifting_ratio,power_cap_hit,gpu_usage,gpu_energy,cpu_usage,memory_usage_max")


def write_last(d, with_nodes=True):
    alloc = d / "final_csm_allocation_history_hashed.csv"
    alloc.write_text("\n".join([
        ALLOC_HEADER,
        "9001,500,lassen709,1,,,0,0,2,88,0,0,user managed,batch,uA,gA,2019-01-10 08:00:00.123,"
        "2019-01-10 09:00:00.456,0,2019-01-10 07:30:00,pbatch,,7200,4,f",
        "9002,501,lassen709,1,,,0,0,1,44,0,0,user managed,batch,uB,gB,2019-01-10 08:30:00,"
        "2019-01-10 08:40:00,1,2019-01-10 08:29:00,pdebug,,1800,4,f",
    ]) + "\n")
    if with_nodes:
        (d / "final_csm_allocation_node_history.csv").write_text("\n".join([
            NODE_HEADER,
            # allocation 9001 on lassen10 and lassen9: 3.6 MJ + 3.6 MJ over 3600 s -> 2,000 W for the job
            "9001,lassen10,f,3600000,0,0,0,0,0,0,0,0,1800000,79200000000000,0",
            "9001,lassen9,f,3600000,0,0,0,0,0,0,0,0,1800000,79200000000000,0",
            # allocation 9002: energy missing (-1), GPU energy 600 s x 300 W
            "9002,lassen100,f,-1,0,0,0,0,0,0,0,0,180000,0,0",
        ]) + "\n")
    return alloc


def test_last_rows(tmp_path, monkeypatch):
    monkeypatch.delenv("TWINSWEEP_TZ", raising=False)
    alloc = write_last(tmp_path)
    assert detect_format(read_trace(alloc)) == "lassen-last"
    wl = load_workload(alloc)
    # naive times are America/Los_Angeles (PST in January, UTC-8): 07:30 PST = 15:30 UTC
    assert wl.epoch == int(pd.Timestamp("2019-01-10 15:30:00", tz="UTC").timestamp())
    a = row(wl, 500)
    assert (a.submit_time, a.recorded_start_time, a.recorded_end_time, a.run_time, a.time_limit) == (0, 1800, 5400, 3600, 7200)
    assert a.nodes == 2 and a.status == "completed" and a.partition == "pbatch"
    assert a.user == "uA" and a.account == "gA" and a.allocation_id == "9001"
    assert a.node_ids == [0, 1]  # natural order: lassen9, lassen10, lassen100 -> 0, 1, 2
    assert a.energy_j == 7.2e6 and a.avg_power_w == pytest.approx(2000.0)
    # GPU: 3.6 MJ / 2 nodes / 3600 s = 500 W per node over 4 V100: 125 W -> (125 - 75) / 225
    assert a.gpu_util == pytest.approx(50.0 / 225.0)
    # CPU: 2 x 79,200 s of CPU time / (2 nodes x 3600 s x 44 cores) = 0.5
    assert a.cpu_util == pytest.approx(0.5)
    b = row(wl, 501)
    assert (b.submit_time, b.recorded_start_time, b.run_time, b.time_limit) == (3540, 3600, 600, 1800)
    assert b.status == "failed" and b.node_ids == [2] and math.isnan(b.energy_j) and math.isnan(b.avg_power_w)
    assert b.gpu_util == pytest.approx((300.0 / 4 - 75.0) / 225.0)  # 75 W per GPU = idle -> 0


def test_last_node_names_rank_in_natural_order(tmp_path):
    alloc = write_last(tmp_path)
    wl = load_workload(alloc)
    assert wl.header["node_names"] == ["lassen9", "lassen10", "lassen100"]
    assert row(wl, 500).node_ids == [0, 1]


def test_last_without_node_history(tmp_path):
    alloc = write_last(tmp_path, with_nodes=False)
    wl = load_workload(alloc)
    assert row(wl, 500).node_ids is None and wl.header["node_history"] is None


# ----------------------------------------------------------------------------------------- Frontier SWF

FRONTIER = """; Version: 2.2
; Computer: Frontier
; UnixStartTime: 1704067200
; MaxNodes: 9408
1 0 10 3600 589824 -1 -1 589824 7200 -1 1 5 2 -1 1 1 -1 -1 20000 -1 frontier:excl:2500x112
2 60 0 100 64 -1 -1 64 600 -1 0 6 2 -1 1 1 -1 -1 -1 -1 frontier:excl:8x112
3 120 -1 -1 4 -1 -1 4 300 -1 5 6 2 -1 1 1 -1 -1 -1 -1 frontier:shared:1x56
"""


def test_frontier_swf_rows(tmp_path):
    p = tmp_path / "frontier-2024.swf"
    p.write_text(FRONTIER)
    assert detect_format(read_trace(p)) == "swf-frontier"
    wl = load_workload(p)
    assert wl.epoch == 1704067200 and wl.procs_unit == "nodes"
    a = row(wl, 1)
    assert (a.submit_time, a.recorded_start_time, a.run_time, a.time_limit) == (0, 10, 3600, 7200)
    assert a.nodes == 2500 and a.procs == 2500 and a.gpus == 20000 and a.swf_procs == 589824
    assert a.node_mode == "excl" and a.cores_per_node == 112 and a.status == "completed"
    b = row(wl, 2)
    assert b.nodes == 8 and b.status == "failed" and pd.isna(b.gpus)
    c = row(wl, 3)
    assert c.nodes == 1 and c.node_mode == "shared" and c.status == "cancelled" and pd.isna(c.recorded_start_time)
    assert wl.header["loader_descriptor_fallbacks"] == 0


def test_frontier_swf_bad_line(tmp_path):
    p = tmp_path / "f.swf"
    p.write_text(FRONTIER + "4 1 2 3\n")
    with pytest.raises(TraceFormatError) as e:
        load_workload(p, format="swf-frontier")
    assert e.value.line == 8
    wl = load_workload(p, format="swf-frontier", lenient=True)
    assert len(wl) == 3 and wl.skipped_lines[0][0] == 8


# ----------------------------------------------------------------------------------------- Eurora

EURORA = [
    "10;xxx;yyy;parallel;2014-03-31 08:00:00__5;1;1;0;1048576#__2014-03-31 08:10:00;2014-03-31 09:10:00;1;1;1;"
    "01:30;NA;NA;COMPLETED;0",
    "11;xxx;yyy;debug;2014-03-31 08:05:00__5;4;0;0;1048576#6;16;2;0;14680064#5;4;0;0;1048576#__2014-03-31 08:20:00;"
    "2014-03-31 08:30:00;2;24;16;00:30;NA;NA;COMPLETED;1",
    "12;xxx;yyy;parallel;2014-03-31 08:06:00__5;2;0;0;1048576#__2014-03-31 09:10:00;2014-03-31 09:20:00;1;2;1;"
    "00:15;NA;NA;COMPLETED;2",
]


def test_eurora_rows(tmp_path, monkeypatch):
    monkeypatch.delenv("TWINSWEEP_TZ", raising=False)
    p = tmp_path / "eurora_historical_jobs_dedup.txt"
    p.write_text("\n".join(EURORA) + "\n")
    with gzip.open(tmp_path / "eurora_job_power_predictions.csv.gz", "wt") as fh:
        fh.write("10.node129;20.0\n11.node129;0.0\n")
    assert detect_format(read_trace(p)) == "eurora"
    wl = load_workload(p)
    # 08:00 CEST (UTC+2 after the 2014-03-30 switch) = 06:00 UTC
    assert wl.epoch == int(pd.Timestamp("2014-03-31 06:00:00", tz="UTC").timestamp())
    a = row(wl, 10)
    assert (a.submit_time, a.recorded_start_time, a.recorded_end_time, a.run_time, a.time_limit) == (0, 600, 4200, 3600, 5400)
    assert a.nodes == 1 and a.node_ids == [64] and a.hosts == [5] and a.gpus == 1  # node 5 -> slots 64..79
    assert a.avg_power_w == 20.0 and a.energy_j == 72000.0
    b = row(wl, 11)
    # node 5 twice (4 + 4 cores) and node 6 (16): 24 cores; job 10 holds slot 64 -> 65..72
    assert b.nodes == 24 and b.hosts == [5, 6]
    assert b.node_ids == list(range(65, 73)) + list(range(80, 96))
    assert math.isnan(b.avg_power_w)  # a 0 W prediction is missing
    c = row(wl, 12)
    assert c.node_ids == [64, 65] and math.isnan(c.avg_power_w)  # starts when job 10 ends; no prediction
    assert wl.header["loader_slot_collisions"] == 0


def test_eurora_dst_spring_forward(tmp_path):
    """2014-03-30 02:00 CET jumps to 03:00 CEST: a job from 01:30 CET to 03:30 CEST ran one hour."""
    line = ("20;xxx;yyy;parallel;2014-03-30 01:00:00__1;1;0;0;1#__2014-03-30 01:30:00;2014-03-30 03:30:00;1;1;1;"
            "02:00;NA;NA;COMPLETED;0")
    p = tmp_path / "e.txt"
    p.write_text(line + "\n")
    wl = load_workload(p, format="eurora")
    assert row(wl, 20).run_time == 3600 and row(wl, 20).recorded_start_time == 1800


def test_eurora_bad_line(tmp_path):
    p = tmp_path / "e.txt"
    p.write_text("\n".join(EURORA) + "\n1;2;3\n")
    with pytest.raises(TraceFormatError) as e:
        load_workload(p, format="eurora")
    assert e.value.line == 4


# ----------------------------------------------------------------------------------------- Lassen RAPS snapshot

def test_lassen_raps_snapshot_rows(tmp_path):
    cols = ("job_id,account_hash,name_hash,nodes_required,scheduled_nodes,submit_time_s,start_time_s,end_time_s,"
            "time_limit_s,wall_time_s,trace_quanta_s,trace_start_time_s,trace_end_time_s,n_samples,cpu_util_mean,"
            "cpu_util_min,cpu_util_max,gpu_util_mean,gpu_util_min,gpu_util_max,net_tx_mean,net_rx_mean")
    p = tmp_path / "snap_summary.csv"
    p.write_text(cols + "\n"
                 "7,acct1,n1,2,805 12,100.0,200.0,260.0,3600.0,60.0,20,200.0,260.0,3,1.5,1.5,1.5,2.0,2.0,2.0,1.0,2.0\n"
                 "8,acct2,n2,1,40,150.0,300.0,320.0,600.0,20.0,20,300.0,320.0,1,0.2,0.2,0.2,0.0,0.0,0.0,0.0,0.0\n")
    assert detect_format(read_trace(p)) == "lassen-raps"
    wl = load_workload(p)
    assert wl.epoch == 1566432000 - 31497370
    a = row(wl, 7)
    assert (a.submit_time, a.recorded_start_time, a.recorded_end_time, a.run_time, a.time_limit) == (100, 200, 260, 60, 3600)
    # RAPS indexes 12, 40, 805 -> ranks 0, 1, 2
    assert a.node_ids == [0, 2] and row(wl, 8).node_ids == [1] and a.raps_nodes == [805, 12]
    assert a.cpu_util == pytest.approx(0.75) and a.gpu_util == pytest.approx(0.5)  # 1.5 of 2 sockets, 2 of 4 GPUs
    assert a.user == "acct1" and a.account == "acct1" and a.status == "unknown"
    pq = tmp_path / "snap.parquet"
    df = pd.read_csv(p, dtype={"scheduled_nodes": str})
    df["scheduled_nodes"] = [[805, 12], [40]]
    df["cpu_trace"] = [[1.5, 1.5, 1.5], [0.2]]
    df["gpu_trace"] = [[2.0, 2.0, 2.0], [0.0]]
    df.to_parquet(pq, index=False)
    wl2 = load_workload(pq)
    assert row(wl2, 7).node_ids == [0, 2]
    assert wl2.traces["7"]["period"] == 20
    np.testing.assert_allclose(wl2.traces["7"]["cpu_util"], [0.75] * 3)
    np.testing.assert_allclose(wl2.traces["7"]["gpu_util"], [0.5] * 3)
