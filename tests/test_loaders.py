"""Trace loaders: real traces (counts from each folder's PROVENANCE.md, hand-checked rows) and
synthetic files (errors, lenient mode, gzip, -1 handling, status mapping, detection, registry).

Every real trace is loaded at most once per session (``load_cached`` in conftest.py).
"""

from __future__ import annotations

import gzip
import hashlib
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from conftest import LOAD_SECONDS, data_path, load_cached
from twinsweep.core.data import data_dir, resolve_data_path
from twinsweep.core.errors import ConfigError, TraceFormatError, UnknownNameError
from twinsweep.core.loaders import available_formats, detect_format, load_workload, read_trace, register_loader
from twinsweep.core.workload import WORKLOAD_COLUMNS

NA = pd.NA

# ---------------------------------------------------------------------------------------------
# real traces: job counts (PROVENANCE.md tables)

PWA_COUNTS = {
    "CEA-Curie-2011-2.1-cln.swf.gz": 312_826,
    "HPC2N-2002-2.2-cln.swf.gz": 202_871,
    "KTH-SP2-1996-2.1-cln.swf.gz": 28_476,
    "LANL-CM5-1994-4.1-cln.swf.gz": 122_060,
    "LCG-2005-1.swf.gz": 188_041,
    "LLNL-Atlas-2006-2.1-cln.swf.gz": 43_778,
    "NASA-iPSC-1993-3.1-cln.swf.gz": 18_239,
    "OSC-Clust-2000-3.1-cln.swf.gz": 36_097,
    "RICC-2010-2.swf.gz": 447_794,
    "SDSC-BLUE-2000-4.2-cln.swf.gz": 243_306,
    "SDSC-Par-1996-3.1-cln.swf.gz": 32_135,
    "SDSC-SP2-1998-4.2-cln.swf.gz": 59_715,
}
THETA_COUNTS = {f"real_week_{i}.swf.gz": 3_200 for i in range(1, 10)}
THETA_COUNTS.update({"validation_2023_jan.swf.gz": 2_849, "test_2023_feb_dec.swf.gz": 26_671})
ALL_TRACES = (
    [(f"pwa-swf/{f}", n, "swf") for f, n in PWA_COUNTS.items()]
    + [(f"alcf-theta-dras-jobsets/{f}", n, "swf-theta") for f, n in THETA_COUNTS.items()]
    + [("metacentrum-wagap-2013/wagap-2013.swf.gz", 17_900, "swf-metacentrum")]
)


@pytest.mark.parametrize("rel,count,fmt", ALL_TRACES, ids=[t[0].split("/")[-1] for t in ALL_TRACES])
def test_real_trace_counts_and_schema(rel, count, fmt):
    wl = load_cached(rel)
    assert len(wl) == count
    assert wl.format == fmt
    assert wl.skipped_lines == []
    for col, dtype in WORKLOAD_COLUMNS.items():
        assert str(wl.jobs[col].dtype) == dtype, col
    assert (wl.jobs["trace_index"].to_numpy() == np.arange(count)).all()
    assert wl.checksum.startswith("sha256:") and len(wl.checksum) == 7 + 64
    assert set(wl.jobs["status"].unique()) <= {"completed", "failed", "cancelled", "unknown"}
    assert wl.provenance
    cu = wl.jobs["cpu_util"].to_numpy()
    assert np.all(np.isnan(cu) | ((cu >= 0) & (cu <= 1)))


def test_no_job_lost_in_status_and_quirk_counts():
    """Quirk counts listed in pwa-swf/PROVENANCE.md."""
    j = load_cached("pwa-swf/LLNL-Atlas-2006-2.1-cln.swf.gz").jobs
    assert j["recorded_start_time"].isna().all()  # wait = -1 for all jobs
    assert j["status"].value_counts().to_dict() == {"completed": 21915, "cancelled": 11432, "failed": 10431}
    j = load_cached("pwa-swf/SDSC-BLUE-2000-4.2-cln.swf.gz").jobs
    assert int(j["run_time"].isna().sum()) == 10744
    assert (j["status"] == "unknown").sum() == 2
    j = load_cached("pwa-swf/LCG-2005-1.swf.gz").jobs
    assert (j["status"] == "unknown").all() and j["recorded_start_time"].isna().all() and (j["procs"] == 1).all()
    j = load_cached("pwa-swf/HPC2N-2002-2.2-cln.swf.gz").jobs
    assert int(j["recorded_start_time"].isna().sum()) == 1 and (j["status"] == "unknown").sum() == 878
    j = load_cached("pwa-swf/LANL-CM5-1994-4.1-cln.swf.gz").jobs
    assert int(j["time_limit"].isna().sum()) == 11290 and int(j["procs"].max()) == 1024
    j = load_cached("pwa-swf/CEA-Curie-2011-2.1-cln.swf.gz").jobs
    assert int(j["procs"].max()) == 79920
    # 10,912 jobs have field 5 = -1; all but 19 have a requested count (field 8)
    assert int(j["procs"].isna().sum()) == 19


def _row(wl, i=0) -> dict:
    """Row ``i`` as {column: value}, keeping pd.NA for missing nullable ints."""
    return {c: wl.jobs[c].iloc[i] for c in wl.jobs.columns}


def test_kth_first_rows_by_hand():
    # "15 599850 192180 3477 4 -1 -1 4 53940 -1 1 12 12 -1 -1 -1 -1 -1"
    wl = load_cached("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz")
    assert wl.epoch == 843480031
    assert wl.procs_unit == "cores"
    r = _row(wl, 0)
    assert r["job_id"] == "15" and r["trace_index"] == 0
    assert r["submit_time"] == 599850
    assert r["recorded_start_time"] == 599850 + 192180
    assert r["run_time"] == 3477 and r["recorded_end_time"] == 599850 + 192180 + 3477
    assert r["procs"] == 4 and r["req_procs"] == 4 and r["nodes"] is NA
    assert r["time_limit"] == 53940
    assert math.isnan(r["cpu_util"]) and math.isnan(r["priority"]) and math.isnan(r["avg_power_w"])
    assert r["status"] == "completed"
    assert r["user"] == "12" and r["account"] == "12"
    assert r["partition"] is None and r["queue"] is None and r["node_ids"] is None
    # header
    h = wl.header
    assert h["UnixStartTime"] == 843480031 and h["MaxNodes"] == 100 and h["MaxProcs"] == 100
    assert h["TimeZoneString"] == "Europe/Stockholm" and h["Computer"] == "IBM SP2"
    assert h["Information"] == "http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"
    assert h["Note"].startswith("uses the EASY scheduler\nTHIS IS A CLEANED VERSION OF THE LOG!")
    assert "Parallel Workloads Archive" in wl.provenance and "Lars Malinowsky" in wl.provenance
    assert "KTH" in wl.provenance


def test_kth_checksum_is_sha256_of_uncompressed_bytes():
    p = data_path("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz")
    raw = gzip.decompress(p.read_bytes())
    assert load_cached("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz").checksum == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert hashlib.md5(raw).hexdigest() == "c1578d48da5658af0f5dd73f5a6d22f3"  # PROVENANCE.md


def test_kth_gz_and_plain_give_the_same_workload(tmp_path):
    p = data_path("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz")
    plain = tmp_path / "KTH-SP2-1996-2.1-cln.swf"
    plain.write_bytes(gzip.decompress(p.read_bytes()))
    a, b = load_cached("pwa-swf/KTH-SP2-1996-2.1-cln.swf.gz"), load_workload(plain)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.checksum == b.checksum and a.header == b.header and a.epoch == b.epoch


def test_hpc2n_float_cpu_time():
    # "12 342343 5 553 40 552.21 -1 40 43200 -1 1 4 1 -1 -1 1 -1 -1"
    r = _row(load_cached("pwa-swf/HPC2N-2002-2.2-cln.swf.gz"), 1)
    assert r["job_id"] == "12" and r["recorded_start_time"] == 342348 and r["recorded_end_time"] == 342348 + 553
    assert r["cpu_util"] == pytest.approx(552.21 / 553)
    assert r["partition"] == "1" and r["account"] == "1" and r["user"] == "4"
    # "11 342072 32 43306 32 43307 ..." -> cpu time above run time is clipped to 1
    assert _row(load_cached("pwa-swf/HPC2N-2002-2.2-cln.swf.gz"), 0)["cpu_util"] == 1.0


def test_lanl_rows():
    wl = load_cached("pwa-swf/LANL-CM5-1994-4.1-cln.swf.gz")
    # "1 0 0 3691 128 3436 6676 -1 3600 5904 1 2 2 2 -1 -1 -1 -1"
    r = _row(wl, 0)
    assert r["procs"] == 128 and r["req_procs"] is NA and r["cpu_util"] == pytest.approx(3436 / 3691)
    assert r["time_limit"] == 3600 and r["queue"] is None and r["partition"] is None
    # "2 465 5 3362 32 489.00 988 32 900 1024 1 3 3 3 1 -1 -1 -1"
    r = _row(wl, 1)
    assert r["recorded_start_time"] == 470 and r["cpu_util"] == pytest.approx(489 / 3362) and r["queue"] == "1"
    assert wl.header["Queue"]["1"] == "development"


def test_lcg_first_row_unknown_start():
    # "1 0 -1 83 1 -1 -1 -1 1200 -1 -1 1 1 -1 -1 1 -1 -1"
    wl = load_cached("pwa-swf/LCG-2005-1.swf.gz")
    r = _row(wl, 0)
    assert r["recorded_start_time"] is NA and r["recorded_end_time"] is NA and r["run_time"] == 83
    assert r["procs"] == 1 and r["time_limit"] == 1200 and r["status"] == "unknown" and r["partition"] == "1"
    assert wl.header["Partition"]["1"] == "grid.ici.ro" and "MaxNodes" not in wl.header


def test_llnl_first_row_all_unknown():
    # "1435 3273240 -1 0 -1 -1 -1 -1 -1 -1 5 14 -1 184 -1 1 -1 -1"
    r = _row(load_cached("pwa-swf/LLNL-Atlas-2006-2.1-cln.swf.gz"), 0)
    assert r["job_id"] == "1435" and r["submit_time"] == 3273240
    # cancelled (5) with run time 0 and no allocated processors: it never started, so no run time
    assert r["procs"] is NA and r["recorded_start_time"] is NA and r["recorded_end_time"] is NA and r["run_time"] is NA
    assert r["time_limit"] is NA and r["status"] == "cancelled" and r["account"] is None and r["partition"] == "1"


def test_cea_rows_and_header():
    wl = load_cached("pwa-swf/CEA-Curie-2011-2.1-cln.swf.gz")
    # "272393 31656837 33492 86395 256 -1 -1 256 86400 -1 1 87 95 -1 -1 4 -1 -1"
    r = _row(wl, 0)
    assert r["job_id"] == "272393" and r["recorded_start_time"] == 31656837 + 33492 and r["run_time"] == 86395
    assert r["procs"] == 256 and r["status"] == "completed" and r["user"] == "87" and r["account"] == "95"
    assert r["partition"] == "4"
    # "272394 31664481 249861 1189 2048 -1 -1 2048 72000 -1 0 21 89 ..." -> failed
    assert _row(wl, 1)["status"] == "failed"
    h = wl.header
    assert h["Partition"]["4"] == "large" and h["MaxNodes"] == 5544 and h["MaxProcs"] == 93312
    assert "Computer" not in h and "Joseph Emeras" in wl.provenance
    assert "5040 thin nodes + 360 fat nodes + 144 hybrid nodes" in h["Note"]


def test_sdsc_par_nasa_osc_ricc_blue_sp2_rows():
    wl = load_cached("pwa-swf/SDSC-Par-1996-3.1-cln.swf.gz")
    # "1 0 392395 19025 64 19025 -1 -1 -1 -1 1 4 -1 -1 23 2 -1 -1"
    r = _row(wl, 0)
    assert r["recorded_start_time"] == 392395 and r["recorded_end_time"] == 392395 + 19025 and r["cpu_util"] == 1.0
    assert r["time_limit"] is NA and r["req_procs"] is NA and r["queue"] == "23" and r["partition"] == "2"
    assert wl.header["MaxNodes"] == "400 (48 interactive, 352 batch, 6 service, 10 I/O)"
    assert wl.header["Partition"] == {"1": "interactive", "2": "batch"}
    # NASA "1 0 -1 1451 128 -1 -1 -1 -1 -1 -1 1 1 ..."
    r = _row(load_cached("pwa-swf/NASA-iPSC-1993-3.1-cln.swf.gz"), 0)
    assert r["recorded_start_time"] is NA and r["procs"] == 128 and r["status"] == "unknown" and r["time_limit"] is NA
    # OSC "2 423 0 8977 16 9.56 -1 16 -1 ..."
    r = _row(load_cached("pwa-swf/OSC-Clust-2000-3.1-cln.swf.gz"), 1)
    assert r["cpu_util"] == pytest.approx(9.56 / 8977) and r["recorded_start_time"] == 423 and r["time_limit"] is NA
    # RICC "2 1136 0 244682 128 -1 -1 128 259200 1024000 1 2 2 -1 1 -1 -1 -1"
    r = _row(load_cached("pwa-swf/RICC-2010-2.swf.gz"), 1)
    assert r["submit_time"] == 1136 and r["recorded_end_time"] == 1136 + 244682 and r["time_limit"] == 259200
    assert r["queue"] == "1" and r["partition"] is None
    # BLUE "9 430593 13 50866 256 25381 -1 256 64800 -1 1 95 -1 -1 4 -1 -1 -1"
    r = _row(load_cached("pwa-swf/SDSC-BLUE-2000-4.2-cln.swf.gz"), 0)
    assert r["cpu_util"] == pytest.approx(25381 / 50866) and r["account"] is None and r["queue"] == "4"
    # SP2 "11 566129 5 28826 1 27758 -1 1 28800 -1 5 153 75 18180 3 -1 -1 -1"
    r = _row(load_cached("pwa-swf/SDSC-SP2-1998-4.2-cln.swf.gz"), 0)
    assert r["status"] == "cancelled" and r["cpu_util"] == pytest.approx(27758 / 28826) and r["queue"] == "3"


def test_big_traces_load_fast():
    """CEA-Curie (312,826 jobs) and RICC (447,794) stay on the fast path (well under 5 s each)."""
    for rel in ("pwa-swf/CEA-Curie-2011-2.1-cln.swf.gz", "pwa-swf/RICC-2010-2.swf.gz"):
        load_cached(rel)  # timed by conftest on its first (only) load
        assert LOAD_SECONDS[rel] < 10.0, rel  # generous bound for slow CI machines


# ---------------------------------------------------------------------------------------------
# Theta


def test_theta_test_file_first_row():
    # "632190 1668693697 3962980 18431 512 -1 -1 512 21600 -1 1 2507 275 -1 -1 -1 -1 -1 0.975"
    wl = load_cached("alcf-theta-dras-jobsets/test_2023_feb_dec.swf.gz")
    assert wl.format == "swf-theta" and wl.procs_unit == "nodes"
    assert wl.epoch == 1668693697 == wl.header["UnixStartTime"]
    r = _row(wl, 0)
    assert r["job_id"] == "632190" and r["submit_time"] == 0
    assert r["recorded_start_time"] == 3962980 and r["recorded_end_time"] == 3962980 + 18431
    assert r["procs"] == 512 and r["nodes"] == 512 and r["time_limit"] == 21600
    assert r["status"] == "completed" and r["user"] == "2507" and r["account"] == "275"
    assert "ALCF" in wl.provenance and "DRAS" in wl.provenance
    j = wl.jobs
    assert int(j["nodes"].max()) == 4349 and (j["submit_time"] >= 0).all()
    # status 1/0 only; ~40 % non-zero exit
    assert j["status"].value_counts().to_dict() == {"completed": 15136, "failed": 11535}
    # times relative to the epoch: the last submit is in Dec 2023
    assert pd.Timestamp(wl.epoch + int(j["submit_time"].max()), unit="s").year == 2023


def test_theta_week_epochs_are_absolute():
    wl = load_cached("alcf-theta-dras-jobsets/real_week_1.swf.gz")
    assert wl.epoch == 1668143264 and int(wl.jobs["submit_time"].min()) == 0
    assert (wl.jobs["nodes"] == wl.jobs["procs"]).all()


# ---------------------------------------------------------------------------------------------
# MetaCentrum


@pytest.fixture(scope="module")
def wagap():
    return load_cached("metacentrum-wagap-2013/wagap-2013.swf.gz")


def test_wagap_rows(wagap):
    assert wagap.format == "swf-metacentrum" and wagap.epoch == 1356996147 and wagap.procs_unit == "cores"
    # "0 1356996147 0 56011 64 1 1024 64 86400 68719476736 1 62 1 1 -1 1 1 1 {1241 x64} q_1d 1:ppn=64:x86_64:cl_zewura#excl"
    r = _row(wagap, 0)
    assert r["job_id"] == "0" and r["submit_time"] == 0 and r["recorded_start_time"] == 0 and r["recorded_end_time"] == 56011
    assert r["procs"] == 64 and r["nodes"] == 64 and r["time_limit"] == 86400
    assert r["partition"] == "q_1d" == r["queue"] and r["pbs_spec"].startswith("1:ppn=64")
    assert math.isnan(r["cpu_util"]) and r["user"] == "62" and r["account"] == "1" and r["status"] == "completed"
    assert r["hosts"] == [1241] and len(r["node_ids"]) == 64
    # "1 1356996695 71 1164297 12 ... {1129 x12} q_2w 1:ppn=12"
    r = _row(wagap, 1)
    assert r["submit_time"] == 548 and r["recorded_start_time"] == 619 and r["recorded_end_time"] == 619 + 1164297
    assert r["partition"] == "q_2w" and r["hosts"] == [1129]
    # "4185 1359980916 1 -1359980917 1 ..." : impossible negative run time
    for i in (4185, 4199):
        r = _row(wagap, i)
        assert r["run_time"] is NA and r["recorded_end_time"] is NA and r["status"] == "unknown"
        assert r["recorded_start_time"] is not NA
    assert (wagap.jobs["status"] == "unknown").sum() == 2
    assert "Alea" in wagap.provenance and "MetaCentrum" in wagap.provenance


def test_wagap_slot_placement_is_collision_free(wagap):
    info = wagap.header["loader_placement"]
    assert info["slots"] == 2176 and info["collisions"] == 0 and info["unplaced_jobs"] == 0
    assert info["machines"].endswith("wagap-2013.swf.machines")
    hosts = info["hosts"]
    assert len(hosts) == 44
    zewura = {int(h) for h, v in hosts.items() if v["cluster"] == "zewura"}
    assert zewura == set(range(1129, 1136)) | set(range(1238, 1249))
    assert sum(v["cluster"] == "zegox" for v in hosts.values()) == 26
    for h, v in hosts.items():
        width = 80 if v["cluster"] == "zewura" else 12
        base = 0 if v["cluster"] == "zewura" else 1600
        assert v["first_slot"] == base + v["node"] * width and v["peak_cpus"] <= width
    j = wagap.jobs
    rows = []
    for ids, hs, procs, s, e in zip(j["node_ids"], j["hosts"], j["procs"], j["recorded_start_time"], j["recorded_end_time"]):
        assert ids is not None and len(ids) == procs and ids == sorted(ids)
        # every slot inside the blocks of the job's recorded hosts
        allowed = set()
        for h in hs:
            allowed.update(range(hosts[str(h)]["first_slot"], hosts[str(h)]["first_slot"] + (80 if hosts[str(h)]["cluster"] == "zewura" else 12)))
        assert set(ids) <= allowed
        if e is NA:
            continue
        rel = e if e > s else s + 1
        rows.extend((sl, s, rel) for sl in ids)
    a = np.array(rows, dtype=np.int64)
    a = a[np.lexsort((a[:, 1], a[:, 0]))]
    same = a[1:, 0] == a[:-1, 0]
    assert (a[1:, 1][same] >= a[:-1, 2][same]).all()  # no slot held by two jobs at once
    assert a[:, 0].min() >= 0 and a[:, 0].max() < 2176


def test_wagap_without_machines_file_assumes_the_layout(tmp_path, wagap):
    p = data_path("metacentrum-wagap-2013/wagap-2013.swf.gz")
    q = tmp_path / "wagap-2013.swf.gz"
    shutil.copy(p, q)
    wl = load_workload(q)
    assert wl.header["loader_placement"]["machines"] == "assumed"
    assert list(wl.jobs["node_ids"]) == list(wagap.jobs["node_ids"])


# ---------------------------------------------------------------------------------------------
# synthetic SWF files

HEADER = "; Version: 2.2\n; Computer: Test machine\n; UnixStartTime: 1000000\n; MaxNodes: 4\n; MaxProcs: 16\n;\n"


def swf_line(*fields) -> str:
    assert len(fields) == 18
    return " ".join(str(f) for f in fields) + "\n"


def basic_lines():
    return [
        swf_line(1, 0, 10, 100, 4, 50, -1, 4, 200, -1, 1, 7, 3, -1, 2, 1, -1, -1),
        swf_line(2, 5, -1, -1, -1, -1, -1, 8, -1, -1, 5, -1, -1, -1, -1, -1, -1, -1),
        swf_line(3, 3, 0, 0, 2, 0, -1, 2, 0, -1, 0, 8, 3, -1, -1, 2, -1, -1),  # out of order submit
        swf_line(4, 20, 2, 30, 16, 60, -1, 16, 30, -1, -1, 7, 3, -1, -1, -1, -1, -1),
        swf_line(5, 21.6, 1, 10, -1, -1, -1, -1, 50, -1, 4, 7, 3, -1, -1, -1, -1, -1),
    ]


def write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    data = text.encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


def test_synthetic_mapping(tmp_path):
    p = write(tmp_path, "t.swf", HEADER + "".join(basic_lines()))
    wl = load_workload(p)
    j = wl.jobs
    assert wl.format == "swf" and wl.epoch == 1000000 and len(j) == 5
    assert list(j["job_id"]) == ["1", "2", "3", "4", "5"]  # trace order kept
    assert list(j["submit_time"]) == [0, 5, 3, 20, 22]  # out-of-order kept; 21.6 rounds to 22
    assert list(j["trace_index"]) == [0, 1, 2, 3, 4]
    assert list(j["recorded_start_time"]) == [10, NA, 3, 22, 23]
    assert list(j["run_time"]) == [100, NA, 0, 30, 10]
    assert list(j["recorded_end_time"]) == [110, NA, 3, 52, 33]
    assert list(j["procs"]) == [4, 8, 2, 16, NA]  # field 8 when field 5 is -1
    assert list(j["time_limit"]) == [200, NA, NA, 30, 50]  # -1 and 0 -> <NA>
    assert list(j["status"]) == ["completed", "cancelled", "failed", "unknown", "failed"]  # orphan 4 -> failed
    assert list(j["user"]) == ["7", None, "8", "7", "7"]
    assert list(j["partition"]) == ["1", None, "2", None, None]
    assert list(j["queue"]) == ["2", None, None, None, None]
    cu = j["cpu_util"].to_list()
    assert cu[0] == 0.5 and math.isnan(cu[1]) and math.isnan(cu[2]) and cu[3] == 1.0 and math.isnan(cu[4])
    assert j["nodes"].isna().all() and j["priority"].isna().all()
    assert wl.with_nodes(4).jobs["nodes"].to_list() == [1, 2, 1, 4, NA]


def test_partial_execution_lines_are_dropped_when_a_summary_exists(tmp_path):
    lines = [
        swf_line(1, 0, 0, 100, 4, -1, -1, 4, 200, -1, 1, 1, 1, -1, -1, -1, -1, -1),  # summary
        swf_line(1, 0, 0, 60, 4, -1, -1, 4, 200, -1, 2, 1, 1, -1, -1, -1, -1, -1),  # partial
        swf_line(1, 0, 70, 40, 4, -1, -1, 4, 200, -1, 3, 1, 1, -1, -1, -1, -1, -1),  # last partial
        swf_line(2, 5, 0, 10, 1, -1, -1, 1, 20, -1, 3, 1, 1, -1, -1, -1, -1, -1),  # orphan partial
    ]
    wl = load_workload(write(tmp_path, "p.swf", HEADER + "".join(lines)))
    assert list(wl.jobs["job_id"]) == ["1", "2"] and list(wl.jobs["trace_index"]) == [0, 1]
    assert list(wl.jobs["status"]) == ["completed", "completed"]
    assert wl.header["loader_partial_lines_dropped"] == 2


def test_gz_and_plain_identical(tmp_path):
    text = HEADER + "".join(basic_lines())
    a = load_workload(write(tmp_path, "a.swf", text))
    b = load_workload(write(tmp_path, "b.swf", text, gz=True))  # gzip detected by magic, not name
    c = load_workload(write(tmp_path, "c.swf.gz", text, gz=True))
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.jobs, c.jobs)
    assert a.checksum == b.checksum == c.checksum == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("bad,line_no,what", [
    ("1 2 3\n", 8, "expected 18 whitespace-separated fields, found 3"),
    ("6 30 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1 99\n", 8, "found 19"),
    ("6 30 0 1x 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n", 8, "field 4 is not a number"),
    ("6 30 0 10 1 -1 -1 1 nan -1 1 1 1 -1 -1 -1 -1 -1\n", 8, "field 9 is not a number"),
])
def test_malformed_line_names_file_and_line(tmp_path, bad, line_no, what):
    lines = basic_lines()
    text = HEADER + lines[0] + bad + "".join(lines[1:])  # header = 6 lines, good line 7, bad 8
    p = write(tmp_path, "bad.swf", text)
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p, format="swf")
    err = ei.value
    assert err.path == str(p) and err.line == line_no and what in err.detail
    assert f"{p}:{line_no}" in str(err)
    wl = load_workload(p, format="swf", lenient=True)
    assert len(wl) == 5 and [n for n, _ in wl.skipped_lines] == [line_no]
    assert what in wl.skipped_lines[0][1]
    assert list(wl.jobs["trace_index"]) == [0, 1, 2, 3, 4]


def test_lenient_counts_every_bad_line(tmp_path):
    lines = basic_lines()
    text = HEADER + "garbage\n" + lines[0] + "1 2\n\n" + "".join(lines[1:]) + "x y z\n"
    p = write(tmp_path, "bad2.swf.gz", text, gz=True)
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p, format="swf")
    assert ei.value.line == 7
    wl = load_workload(p, format="swf", lenient=True)
    assert [n for n, _ in wl.skipped_lines] == [7, 9, 15]
    assert len(wl) == 5


def test_lenient_that_would_skip_every_job_line_is_an_error_naming_the_format(tmp_path):
    """A lenient load that skips every job line reads the file under the wrong format (the SWF
    lines of a log read as swf-theta, which has 19 fields): one error naming the first line and
    the format, not an empty workload."""
    p = write(tmp_path, "all.swf", HEADER + "".join(basic_lines()))
    with pytest.raises(TraceFormatError, match="every one of the 5 job line.* under format 'swf-theta'") as ei:
        load_workload(p, format="swf-theta", lenient=True)
    assert ei.value.line == HEADER.count("\n") + 1


def test_header_only_and_empty_swf(tmp_path):
    wl = load_workload(write(tmp_path, "h.swf", HEADER))
    assert wl.format == "swf" and len(wl) == 0 and wl.epoch == 1000000
    assert list(wl.jobs.columns)[: len(WORKLOAD_COLUMNS)] == list(WORKLOAD_COLUMNS)
    with pytest.raises(TraceFormatError):
        load_workload(write(tmp_path, "e.swf", ""))  # nothing to detect
    assert len(load_workload(write(tmp_path, "e2.swf", ""), format="swf")) == 0


def test_swf_without_unix_start_time_has_epoch_zero(tmp_path):
    wl = load_workload(write(tmp_path, "n.swf", "".join(basic_lines())))
    assert wl.epoch == 0 and wl.header == {} and wl.provenance == "SWF trace n.swf"


# ---------------------------------------------------------------------------------------------
# synthetic Theta / MetaCentrum files

THETA_HEADER = ("; Version: 2.2\n; Computer: Theta Supercomputer\n; UnixStartTime: 1600000000\n"
                "; MaxNodes: 4360\n; MaxProcs: 4360\n; Note: Generated jobset for DRAS training\n;\n")


def test_theta_synthetic(tmp_path):
    lines = ("1 1600000000 10 100 128 -1 -1 128 3600 -1 1 5 6 -1 -1 -1 -1 -1 0.5\n"
             "2 1600000050 -1 -1 -1 -1 -1 8 -1 -1 0 5 6 -1 -1 -1 -1 -1 0.1\n")
    p = write(tmp_path, "th.swf", THETA_HEADER + lines)
    assert detect_format(read_trace(p)) == "swf-theta"
    wl = load_workload(p)
    j = wl.jobs
    assert wl.epoch == 1600000000 and list(j["submit_time"]) == [0, 50]
    assert list(j["recorded_start_time"]) == [10, NA] and list(j["nodes"]) == [128, 8]
    assert list(j["status"]) == ["completed", "failed"]
    # without UnixStartTime the first (smallest) submit is the epoch
    p2 = write(tmp_path, "th2.swf", "; Note: DRAS\n" + lines)
    assert load_workload(p2).epoch == 1600000000
    # 19 fields but no Theta/DRAS header: an SWF header, so SWF, whose load names the line and count
    th3 = write(tmp_path, "th3.swf", "; Version: 2.2\n" + lines)
    assert detect_format(read_trace(th3)) == "swf"
    with pytest.raises(TraceFormatError) as ei:
        load_workload(th3)
    assert ei.value.line == 2 and "expected 18 whitespace-separated fields, found 19" in ei.value.detail
    bad = write(tmp_path, "th4.swf", THETA_HEADER + lines + "3 1600000100 0 5 1 -1 -1 1 60 -1 1 5 6 -1 -1 -1 -1 -1\n")
    with pytest.raises(TraceFormatError) as ei:
        load_workload(bad, format="swf-theta")
    assert ei.value.line == 10 and "expected 19" in ei.value.detail


MC_LINES = [
    "0 1000 0 100 3 1 1024 3 200 1048576 1 7 1 1 -1 1 1 1 {50,50,50} q_2h 1:ppn=3:cl_big\n",
    "1 1010 0 100 2 1 1024 2 200 1048576 1 8 1 1 -1 1 1 1 {50,50} q_2h 1:ppn=2\n",
    "2 1020 5 50 4 1 1024 4 200 1048576 1 8 1 1 -1 1 1 1 {60,60,61,61} q_4h 2:ppn=2\n",
    "3 1200 0 10 3 1 1024 3 200 1048576 1 8 1 1 -1 1 1 1 {50,50,50} q_2h 1:ppn=3\n",
    "4 1300 1 -1301 1 1 1024 1 0 1048576 1 8 1 1 -1 1 1 1 {61} q_2h 1:ppn=1\n",
]


def test_metacentrum_synthetic_slots(tmp_path):
    p = write(tmp_path, "mc.swf.gz", "".join(MC_LINES), gz=True)
    (tmp_path / "mc.swf.machines").write_text("0\tbig\t2\t8\t1\t100\n1\tsmall\t3\t2\t1\t100\n")
    assert detect_format(read_trace(p)) == "swf-metacentrum"
    wl = load_workload(p)
    j = wl.jobs
    info = wl.header["loader_placement"]
    assert info["slots"] == 2 * 8 + 3 * 2
    # host 50: voted cl_big, peak 5 CPUs -> big node 0 (slots 0-7); hosts 60, 61: peak 2 -> small nodes
    assert info["hosts"]["50"] == {"cluster": "big", "node": 0, "first_slot": 0, "peak_cpus": 5}
    assert info["hosts"]["60"]["first_slot"] == 16 and info["hosts"]["61"]["first_slot"] == 18
    assert list(j["node_ids"]) == [[0, 1, 2], [3, 4], [16, 17, 18, 19], [0, 1, 2], [18]]
    assert wl.epoch == 1000 and list(j["submit_time"]) == [0, 10, 20, 200, 300]
    assert j.loc[4, "run_time"] is NA and j.loc[4, "status"] == "unknown"
    assert list(j["partition"]) == ["q_2h", "q_2h", "q_4h", "q_2h", "q_2h"]


def test_metacentrum_bad_node_list(tmp_path):
    lines = MC_LINES[:2] + ["2 1020 5 50 4 1 1024 4 200 1048576 1 8 1 1 -1 1 1 1 60,60 q_4h 2:ppn=2\n"] + MC_LINES[3:]
    p = write(tmp_path, "mc2.swf", "".join(lines))
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p, format="swf-metacentrum")
    assert ei.value.line == 3 and "field 19" in ei.value.detail
    wl = load_workload(p, format="swf-metacentrum", lenient=True)
    assert len(wl) == 4 and wl.skipped_lines[0][0] == 3
    lines = MC_LINES[:1] + ["1 1010 0 100 2 1 1024 2 200 1048576 1 8 1 1 -1 1 1 1 {50,50}\n"] + MC_LINES[2:]
    with pytest.raises(TraceFormatError) as ei:
        load_workload(write(tmp_path, "mc3.swf", "".join(lines)), format="swf-metacentrum")
    assert ei.value.line == 2 and "expected 21" in ei.value.detail


# ---------------------------------------------------------------------------------------------
# registry, detection, paths


def test_formats_and_unknown_format(tmp_path):
    assert {"swf", "swf-theta", "swf-metacentrum"} <= set(available_formats())
    with pytest.raises(UnknownNameError) as ei:
        load_workload(write(tmp_path, "a.swf", HEADER), format="nope")
    assert "swf-metacentrum" in str(ei.value) and "nope" in str(ei.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(TraceFormatError) as ei:
        load_workload(tmp_path / "missing.swf")
    assert "missing.swf" in str(ei.value)
    p = tmp_path / "corrupt.swf.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert str(p) in str(ei.value)
    with pytest.raises(TraceFormatError, match="cannot detect"):
        load_workload(write(tmp_path, "text.csv", "a,b,c\n1,2,3\n"))


def test_register_custom_loader(tmp_path):
    from twinsweep.core.workload import Workload, empty_jobs_frame

    def detect(trace):
        return 10.0 if trace.data.startswith(b"#MYFMT") else 0.0

    def load(trace, lenient=False):
        return Workload(empty_jobs_frame(), 0, trace.checksum, trace.path, "myfmt-test")

    register_loader("myfmt-test", detect, load)
    try:
        assert "myfmt-test" in available_formats()
        wl = load_workload(write(tmp_path, "x.my", "#MYFMT\n"))
        assert wl.format == "myfmt-test" and len(wl) == 0
        with pytest.raises(ConfigError):
            register_loader("myfmt-test", detect, load)
        with pytest.raises(ConfigError):
            register_loader("other", "not callable", load)
    finally:
        from twinsweep.core.loaders import _registry

        _registry.LOADERS.unregister("myfmt-test")


def test_a_loader_giving_impossible_values_is_an_error_naming_the_jobs(tmp_path):
    """A plug-in loader whose jobs have a negative run time, a negative limit, an end before their
    start or an unknown status: load_workload refuses the table with one error naming the file, the
    format, how many jobs and the first three (job id, row, column, value); never simulated."""
    from twinsweep.core.workload import Workload, coerce_jobs_frame, jobs_problems

    rows = {"job_id": ["a", "b", "c", "d", "e"], "submit_time": [0, 10, 20, 30, 40],
            "run_time": [100, -500, 50, 60, 70], "time_limit": [200, 200, -10, 100, 100],
            "recorded_start_time": [5, 15, 25, 35, 45], "recorded_end_time": [105, 20, 75, 30, 115],
            "status": ["completed", "completed", "completed", "completed", "done"]}

    def detect(trace):
        return 10.0 if trace.data.startswith(b"#BADFMT") else 0.0

    def load(trace, lenient=False):
        return Workload(coerce_jobs_frame(pd.DataFrame(rows)), 0, trace.checksum, trace.path, "badfmt-test")

    n, first = jobs_problems(coerce_jobs_frame(pd.DataFrame(rows)))
    assert n == 4 and first == [
        "job b (trace_index 1): run_time = -500 (not a run time (s); missing is <NA>)",
        "job c (trace_index 2): time_limit = -10 (not a time limit (s); missing is <NA>)",
        "job d (trace_index 3): recorded_end_time 30 s is before recorded_start_time 35 s"]
    register_loader("badfmt-test", detect, load)
    try:
        with pytest.raises(TraceFormatError) as ei:
            load_workload(write(tmp_path, "x.bad", "#BADFMT\n"))
        msg = str(ei.value)
        assert "x.bad" in msg and "format 'badfmt-test' gave 4 job(s) with impossible values" in msg
        assert "job b (trace_index 1): run_time = -500" in msg and "status" not in msg  # the first three only
        rows["run_time"][1], rows["time_limit"][2], rows["recorded_end_time"][3] = 0, pd.NA, 95
        with pytest.raises(TraceFormatError, match=r"1 job\(s\) .*job e \(trace_index 4\): status 'done' \(valid: "):
            load_workload(write(tmp_path, "y.bad", "#BADFMT\n"))
        rows["status"][4] = "completed"
        assert len(load_workload(write(tmp_path, "z.bad", "#BADFMT\n"))) == 5  # 0 s, a missing limit: valid
    finally:
        from twinsweep.core.loaders import _registry

        _registry.LOADERS.unregister("badfmt-test")


def test_relative_paths_resolve_under_the_data_dir(monkeypatch, tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "r.swf", HEADER + "".join(basic_lines()))
    monkeypatch.setenv("TWINSWEEP_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path / "sub")  # "sub/r.swf" does not exist from here
    assert data_dir() == tmp_path.resolve()
    assert resolve_data_path("sub/r.swf") == tmp_path.resolve() / "sub" / "r.swf"
    assert resolve_data_path("r.swf").name == "r.swf"  # exists from the working directory
    assert len(load_workload("sub/r.swf")) == 5
    with pytest.raises(ConfigError) as ei:
        resolve_data_path("sub/none.swf")
    assert "sub/none.swf" in str(ei.value) and str(tmp_path.resolve()) in str(ei.value)
    with pytest.raises(ConfigError):
        resolve_data_path(tmp_path / "absent.swf")
    monkeypatch.chdir(tmp_path)  # a bare name that lies in a subfolder of the data folder: named
    with pytest.raises(ConfigError, match="did you mean 'sub/r.swf'"):
        resolve_data_path("r.swf")


def test_default_data_dir_is_beside_the_repo(monkeypatch):
    from twinsweep.core.data import REPO_ROOT

    monkeypatch.delenv("TWINSWEEP_DATA", raising=False)
    beside = (REPO_ROOT / ".." / "shared" / "data").resolve()
    if beside.is_dir():
        assert data_dir() == beside
    else:
        assert data_dir().parts[-2:] == ("shared", "data")


def test_out_of_range_number_names_the_line_and_lenient_skips_it(tmp_path):
    # a 23-digit submit time passes the line pattern but not int64 parsing: the error must still
    # name the file and line, and --lenient must skip and count it
    from twinsweep.core.errors import TraceFormatError
    from twinsweep.core.loaders import load_workload

    lines = ["; MaxNodes: 4", "; MaxProcs: 4"]
    for i in range(1, 6):
        submit = "99999999999999999999999" if i == 3 else str(10 * i)
        lines.append(f"{i} {submit} 0 10 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1")
    p = tmp_path / "big.swf"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError, match=r"big\.swf:5: field 2 is out of range"):
        load_workload(p)
    wl = load_workload(p, lenient=True)
    assert len(wl) == 4 and wl.skipped_lines[0][0] == 5


@pytest.mark.parametrize("text", [b"", b"\n\n  \n", None])
def test_an_empty_trace_file_is_said_to_be_empty(tmp_path, text):
    """An empty file (or blank lines, or an empty gzip) names the file and says it is empty,
    instead of "cannot detect the trace format"."""
    p = tmp_path / ("empty.swf.gz" if text is None else "empty.swf")
    p.write_bytes(gzip.compress(b"") if text is None else text)
    with pytest.raises(TraceFormatError, match="the file is empty") as e:
        load_workload(str(p))
    assert p.name in str(e.value)


def test_fractional_seconds_and_repeated_job_numbers_are_said_not_silently_changed(tmp_path):
    """SWF times are whole seconds: a 57.7 s run time is rounded (58 s) and said, with its line;
    a job number used twice stays two jobs and is said."""
    head = "; MaxNodes: 8\n; MaxProcs: 8\n"
    p = tmp_path / "odd.swf"
    p.write_text(head + "1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                        "2 10 5 57.7 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                        "2 20 5 30 1 -1 -1 1 200 -1 1 1 1 -1 -1 -1 -1 -1\n")
    wl = load_workload(str(p))
    assert wl.jobs["run_time"].tolist() == [100, 58, 30] and len(wl.jobs) == 3
    (frac,) = [w for w in wl.warnings if "whole number of seconds" in w]
    assert "run time (field 4)" in frac and "line 4" in frac and "57.7" in frac
    (dup,) = [w for w in wl.warnings if "more than one line" in w]
    assert "1 job number(s)" in dup and "(2 lines)" in dup
    clean = tmp_path / "clean.swf"
    clean.write_text(head + "1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n")
    assert load_workload(str(clean)).warnings == []


def test_a_parquet_file_cut_short_is_named_as_such(tmp_path):
    """A Parquet file is framed by b"PAR1" at both ends: one that starts so but was cut short is
    said to be truncated, not "cannot detect the trace format"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    whole = tmp_path / "jobs.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), whole)
    data = whole.read_bytes()
    assert data[:4] == data[-4:] == b"PAR1"
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match=r"cut.parquet: a Parquet file cut short: it starts with Parquet's magic "
                                               rf"bytes but lacks the footer .*\({len(data) // 2:,} bytes"):
        load_workload(cut)
    with pytest.raises(TraceFormatError, match="cannot detect the trace format"):  # whole, but no known table
        load_workload(whole)
