"""SWF input robustness: strict numeric header fields (``UnixStartTime``, ``MaxNodes`` …),
conflicting repeated header fields, partial-execution lines (status 2/3/4) said in a warning, a
UTF-8 byte-order mark, and detection of an SWF file whose job lines have the wrong field count.
Every expected value is written out by hand (line numbers count from 1, header lines included)."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from twinsweep.core.errors import ConfigError, TraceFormatError
from twinsweep.core.loaders import detect_format, load_workload, read_trace
from twinsweep.core.loaders._swfcore import header_epoch, header_number
from twinsweep.core.system import header_count, system_from_swf_header

JOB = "1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1\n"  # 18 fields


def swf(tmp_path, header_lines, jobs=JOB, name="t.swf", gz=False, prefix=b""):
    p = tmp_path / name
    data = prefix + ("".join(f"{h}\n" for h in header_lines) + jobs).encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


# ---------------------------------------------------------------------------------------------
# 1. numeric header fields are parsed strictly


@pytest.mark.parametrize("value,detail", [
    ("abc", "header field UnixStartTime is 'abc', not a whole number"),
    ("12abc", "header field UnixStartTime is '12abc', not a whole number"),  # was read as 12
    ("1.5", "header field UnixStartTime is '1.5', not a whole number"),
    ("99999999999999", "header field UnixStartTime is 99999999999999, outside [0, 7,258,118,400]"),
    ("7258118401", "header field UnixStartTime is 7258118401, outside"),  # 2200-01-01 00:00:01 UTC
    ("-5", "header field UnixStartTime is -5, outside"),
])
def test_bad_unix_start_time_names_file_line_and_field(tmp_path, value, detail):
    p = swf(tmp_path, ["; Version: 2.2", f"; UnixStartTime: {value}", "; MaxNodes: 4"])
    for lenient in (False, True):  # the header is not a job line: lenient does not skip it
        with pytest.raises(TraceFormatError) as ei:
            load_workload(p, lenient=lenient)
        assert ei.value.path == str(p) and ei.value.line == 2 and detail in ei.value.detail


def test_unix_start_time_integral_float_is_accepted_as_that_integer(tmp_path):
    wl = load_workload(swf(tmp_path, ["; UnixStartTime: 1.5e9", "; MaxNodes: 4"]))
    assert wl.epoch == 1_500_000_000 and wl.header["UnixStartTime"] == 1_500_000_000 and wl.warnings == []
    wl = load_workload(swf(tmp_path, ["; UnixStartTime: 7258118400"], name="edge.swf"))  # 2200-01-01 UTC: allowed
    assert wl.epoch == 7_258_118_400


def test_unix_start_time_minus_one_is_unknown_and_said(tmp_path):
    wl = load_workload(swf(tmp_path, ["; MaxNodes: 4", "; MaxProcs: 4", "; UnixStartTime: -1"], name="u.swf"))
    assert wl.epoch == 0 and len(wl) == 1
    assert wl.warnings == ["u.swf: header UnixStartTime is -1 (unknown, line 3): treated as absent, so times "
                           "count from time 0 = 1970-01-01 00:00 UTC"]
    assert header_epoch({"UnixStartTime": -1}) is None and header_epoch({}) is None
    assert header_epoch({"UnixStartTime": "1.5e9"}) == 1_500_000_000


def test_theta_unix_start_time_minus_one_takes_the_smallest_submit(tmp_path):
    jobs = ("1 1600000050 10 100 128 -1 -1 128 3600 -1 1 5 6 -1 -1 -1 -1 -1 0.5\n"
            "2 1600000000 -1 -1 -1 -1 -1 8 -1 -1 0 5 6 -1 -1 -1 -1 -1 0.1\n")
    p = swf(tmp_path, ["; Computer: Theta Supercomputer", "; UnixStartTime: -1"], jobs, name="th.swf")
    wl = load_workload(p)
    assert wl.format == "swf-theta" and wl.epoch == 1_600_000_000
    assert list(wl.jobs["submit_time"]) == [50, 0]
    assert wl.warnings == ["th.swf: header UnixStartTime is -1 (unknown, line 2): treated as absent, so the "
                           "smallest submit time is taken as the epoch"]


@pytest.mark.parametrize("line,detail", [
    ("; MaxNodes: 0", "header field MaxNodes is 0, outside [1, 2,147,483,647] (a count of nodes; -1 = unknown)"),
    ("; MaxNodes: -4", "header field MaxNodes is -4, outside"),
    ("; MaxProcs: 0", "header field MaxProcs is 0, outside"),
    ("; MaxProcs: many", "header field MaxProcs is 'many', not a whole number"),
    ("; MaxNodes: 6.5", "header field MaxNodes is '6.5', not a whole number"),
    ("; MaxRuntime: 0", "header field MaxRuntime is 0, outside"),
    ("; MaxJobs: -2", "header field MaxJobs is -2, outside"),
    ("; TimeZone: abc", "header field TimeZone is 'abc', not a whole number (an offset from UTC in s)"),
    ("; TimeZone: 90000", "header field TimeZone is 90000, outside [-86,400, 86,400]"),
])
def test_bad_size_and_zone_fields(tmp_path, line, detail):
    p = swf(tmp_path, ["; UnixStartTime: 1000000", line])
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.line == 2 and detail in ei.value.detail and f"{p}:2:" in str(ei.value)


def test_accepted_size_spellings_are_kept_as_written(tmp_path):
    # SDSC-Par's "MaxNodes: 400 (48 interactive, ...)", "1,024", "-1" (unknown), MaxQueues 0
    wl = load_workload(swf(tmp_path, ["; MaxNodes: 400 (48 interactive, 352 batch)", "; MaxProcs: 1,024",
                                      "; MaxRuntime: -1", "; MaxQueues: 0", "; TimeZone: -28800"]))
    h = wl.header
    assert h["MaxNodes"] == "400 (48 interactive, 352 batch)" and h["MaxProcs"] == "1,024"
    assert h["MaxRuntime"] == -1 and h["MaxQueues"] == 0 and h["TimeZone"] == -28800
    assert header_count(h, "MaxNodes") == 400 and header_count(h, "MaxProcs") == 1024
    assert header_number("1,024", first_word=True) == 1024 and header_number("1,024") is None
    assert header_number("inf") is None and header_number("1e400") is None and header_number("-1") == -1


# ---------------------------------------------------------------------------------------------
# 2. a repeated numeric header field must repeat the same value


def test_conflicting_repeated_field_names_both_lines(tmp_path):
    p = swf(tmp_path, ["; Version: 2.2", "; MaxNodes: 64", "; MaxProcs: 64", "; MaxNodes: 32"])
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.line == 4
    assert ei.value.detail == ("header field MaxNodes is given twice with different values: line 2 says '64', "
                               "line 4 says '32'; keep the right one")
    p = swf(tmp_path, ["; UnixStartTime: 1000000", "; UnixStartTime: 2000000"], name="u2.swf")
    with pytest.raises(TraceFormatError, match="line 1 says '1000000', line 2 says '2000000'"):
        load_workload(p)


def test_identical_repeats_are_kept_once_and_free_text_is_joined(tmp_path):
    wl = load_workload(swf(tmp_path, ["; MaxNodes: 64", "; Note: first", "; MaxNodes: 64", "; Note: second",
                                      "; UnixStartTime: 1000000", "; UnixStartTime: 1e6"]))
    assert wl.header["MaxNodes"] == 64 and wl.header["UnixStartTime"] == 1_000_000 and wl.epoch == 1_000_000
    assert wl.header["Note"] == "first\nsecond"
    assert system_from_swf_header(wl.header, "t.swf").nodes == 64


def test_header_count_refuses_a_joined_conflict():
    """A header dict built without the loader (``parse_swf_header`` joins repeated keys): the size
    is refused, never read from the first line only."""
    with pytest.raises(ConfigError, match="MaxNodes is given more than once with different values"):
        header_count({"MaxNodes": "64\n32"}, "MaxNodes", "x.swf")
    assert header_count({"MaxNodes": "64\n64"}, "MaxNodes") == 64
    assert header_count({"MaxNodes": "400 (48 interactive,\n352 batch)"}, "MaxNodes") == 400  # continuation text


# ---------------------------------------------------------------------------------------------
# 3. partial-execution lines: dropped and said; the repeated-number warning counts kept lines only


def test_partial_lines_dropped_are_said_and_duplicates_counted_after_the_drop(tmp_path):
    jobs = ("1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"     # line 3: job 1 summary
            "1 0 0 60 4 -1 -1 4 200 -1 2 1 1 -1 -1 -1 -1 -1\n"      # line 4: job 1 part 1 (dropped)
            "1 0 70 40 4 -1 -1 4 200 -1 3 1 1 -1 -1 -1 -1 -1\n"     # line 5: job 1 last part (dropped)
            "2 5 0 57.7 1 -1 -1 1 200 -1 1 1 1 -1 -1 -1 -1 -1\n"    # line 6: fractional run time
            "3 6 0 10 1 -1 -1 1 20 -1 4 1 1 -1 -1 -1 -1 -1\n"       # line 7: orphan partial (kept)
            "4 7 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n"       # line 8: job 4
            "4 8 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n")      # line 9: job 4 again
    wl = load_workload(swf(tmp_path, ["; UnixStartTime: 1000000", "; MaxProcs: 8"], jobs, name="p.swf"))
    assert list(wl.jobs["job_id"]) == ["1", "2", "3", "4", "4"] and list(wl.jobs["trace_index"]) == [0, 1, 2, 3, 4]
    assert list(wl.jobs["run_time"]) == [100, 58, 10, 10, 10] and wl.header["loader_partial_lines_dropped"] == 2
    assert wl.warnings == [
        "p.swf: 2 partial-execution line(s) (status 2/3/4, first: line 4) dropped: each details a checkpointed or "
        "swapped part of a job whose summary line (same job number) is kept and describes the whole job",
        "p.swf: 1 job line(s) give a run time (field 4) that is not a whole number of seconds (first: line 6, 57.7); "
        "rounded to the nearest second",
        "p.swf: 1 job number(s) (field 1) appear on more than one line (2 lines); each line is kept as its own job "
        "(told apart by trace_index)",
    ]


def test_no_partial_lines_no_partial_warning(tmp_path):
    wl = load_workload(swf(tmp_path, ["; MaxProcs: 8"], JOB + JOB.replace("1 0 5", "2 0 5", 1)))
    assert wl.warnings == [] and "loader_partial_lines_dropped" not in wl.header


# ---------------------------------------------------------------------------------------------
# 4. a UTF-8 byte-order mark


@pytest.mark.parametrize("gz", [False, True])
def test_byte_order_mark_is_ignored(tmp_path, gz):
    head = ["; UnixStartTime: 1000000", "; MaxNodes: 4"]
    p = swf(tmp_path, head, name="bom.swf", gz=gz, prefix=b"\xef\xbb\xbf")
    for lenient in (False, True):
        wl = load_workload(p, lenient=lenient)
        assert wl.format == "swf" and len(wl) == 1 and wl.epoch == 1_000_000 and wl.header["MaxNodes"] == 4
        assert wl.skipped_lines == [] and wl.warnings == []
    raw = b"\xef\xbb\xbf" + ("".join(f"{h}\n" for h in head) + JOB).encode()
    t = read_trace(p)
    assert t.data == raw[3:] and t.checksum == "sha256:" + hashlib.sha256(raw).hexdigest()


def test_byte_order_mark_in_another_text_format(tmp_path):
    from test_facility_sacct import HEADER, ROWS
    p = tmp_path / "dump.txt"
    p.write_bytes(b"\xef\xbb\xbf" + (HEADER + "\n" + ROWS[0] + "\n").encode())
    assert detect_format(read_trace(p)) == "sacct"
    assert list(load_workload(p).jobs["job_id"]) == ["1000"]


# ---------------------------------------------------------------------------------------------
# 5. an SWF header with job lines of the wrong field count is SWF (and the load says why)


@pytest.mark.parametrize("jobs,count", [
    ("1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1\n", 17),
    ("1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1 -1 0.5\n", 19),
])
def test_swf_header_with_wrong_field_count_is_detected_as_swf(tmp_path, jobs, count):
    p = swf(tmp_path, ["; Version: 2.2", "; Computer: Test", "; MaxNodes: 4"], jobs * 3)
    assert detect_format(read_trace(p)) == "swf"
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.line == 4 and ei.value.detail.startswith(f"expected 18 whitespace-separated fields, found {count}")
    with pytest.raises(TraceFormatError, match="every one of the 3 job line"):
        load_workload(p, lenient=True)


def test_wrong_field_count_without_swf_header_keys_is_not_detected(tmp_path):
    p = swf(tmp_path, ["; Note: nothing SWF-specific here"], "1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 -1 -1 -1\n")
    with pytest.raises(TraceFormatError, match="cannot detect"):
        load_workload(p)


def test_the_lenient_hint_follows_job_line_errors_only(tmp_path, capsys):
    """--lenient skips malformed job lines, never header lines: the CLI's hint after the error
    says so for the first and is absent for the second (TraceFormatError.skippable)."""
    from twinsweep.sweep.cli import main

    bad_header = tmp_path / "h.swf"
    bad_header.write_text("; UnixStartTime: abc\n; MaxNodes: 8\n1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    bad_job = tmp_path / "j.swf"
    bad_job.write_text("; UnixStartTime: 0\n; MaxNodes: 8\n1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1\n")
    assert main(["run", "--data", str(bad_header), "--policy", "fcfs", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{bad_header}:1: header field UnixStartTime is 'abc'" in err and "--lenient" not in err
    assert main(["run", "--data", str(bad_job), "--policy", "fcfs", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{bad_job}:3: expected 18" in err and "(--lenient skips such lines" in err
    assert not (tmp_path / "o").exists()


def test_a_standard_field_in_another_case_is_that_field(tmp_path):
    """``; maxnodes: 64`` after ``; TimeZoneString: Europe/Berlin`` is MaxNodes (it used to extend
    the zone's text); a continuation line with a colon (a URL) still continues its field."""
    from twinsweep.core.loaders._swfcore import parse_swf_header

    h = parse_swf_header(["; TimeZoneString: Europe/Berlin", "; maxnodes: 64", "; MAXPROCS: 128",
                          "; Information: http://a.org/", ";   http://b.org/x"])
    assert h["TimeZoneString"] == "Europe/Berlin" and h["MaxNodes"] == 64 and h["MaxProcs"] == 128
    assert h["Information"] == "http://a.org/\nhttp://b.org/x"
    with pytest.raises(TraceFormatError, match=r"t\.swf:2: header field MaxNodes is 0"):
        load_workload(swf(tmp_path, ["; UnixStartTime: 0", "; maxnodes: 0"]), format="swf")


def test_errors_with_several_fields_cross_processes_intact():
    """A worker's TraceFormatError or UnknownNameError reaches the driver through pickle (pool
    workers, Ray): both took several arguments and failed to unpickle (TypeError) until
    2026-12-07; they now come back with every field and the same message."""
    import pickle

    from twinsweep.core.errors import UnknownNameError

    e = pickle.loads(pickle.dumps(TraceFormatError("f.swf", 3, "bad header", skippable=False)))
    assert (type(e), e.path, e.line, e.detail, e.skippable, str(e)) == (
        TraceFormatError, "f.swf", 3, "bad header", False, "f.swf:3: bad header")
    u = pickle.loads(pickle.dumps(UnknownNameError("policy", "fcsf", ["sjf", "fcfs"], "; see docs/plugins.md")))
    assert (type(u), u.kind, u.name, u.valid, str(u)) == (
        UnknownNameError, "policy", "fcsf", ["fcfs", "sjf"], "unknown policy 'fcsf'; valid policy names: fcfs, sjf; "
                                                              "see docs/plugins.md; did you mean 'fcfs'?")
