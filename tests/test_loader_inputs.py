"""Hand-written inputs the loaders had not seen (helper-loaders): line ends other than LF, comment
lines indented before the first job line, whitespace that is not a field separator, sacct node
counts with unit suffixes and jobs listed only by their steps. Each input's job count, values or
error (file, line, field) is checked by hand."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest

from twinsweep.core.errors import TraceFormatError
from twinsweep.core.loaders import load_workload

SWF_HEADER = ("; Version: 2.2\n; Computer: Test\n; UnixStartTime: 1000000000\n; MaxNodes: 8\n; MaxProcs: 16\n")


def _job(i: int, submit: int, procs: int = 2) -> str:
    return f"{i} {submit} 10 100 {procs} -1 -1 {procs} 200 -1 1 1 1 -1 1 1 -1 -1\n"


JOBS = "".join(_job(i, 50 * i) for i in range(1, 5))  # 4 jobs, submits 50 .. 200


def _write(tmp_path, name: str, data: bytes, gz: bool = False):
    p = tmp_path / name
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


# ------------------------------------------------------------------ SWF: indented comment lines
@pytest.mark.parametrize("lead", [
    "  ; an indented comment\n",          # before the header
    "\t;tab-indented\n",
    "\n  \n \t; after blank lines\n",
])
@pytest.mark.parametrize("where", ["top", "after_header"])
def test_an_indented_comment_before_the_first_job_line_loses_no_job(tmp_path, lead, where):
    """pandas' C tokenizer says "no columns to parse" for a file whose first line is an indented
    ``;`` comment, however many job lines follow; the loader took that for a file without jobs and
    returned 0 of the 4 jobs, with no warning."""
    text = lead + SWF_HEADER + JOBS if where == "top" else SWF_HEADER + lead + JOBS
    for fmt in (None, "swf"):
        wl = load_workload(_write(tmp_path, "indent.swf", text.encode()), format=fmt)
        assert wl.format == "swf"
        assert list(wl.jobs["job_id"]) == ["1", "2", "3", "4"]
        assert list(wl.jobs["submit_time"]) == [50, 100, 150, 200]
        assert wl.epoch == 1_000_000_000


def test_an_indented_comment_line_and_a_bad_line_names_the_bad_line(tmp_path):
    p = _write(tmp_path, "indent_bad.swf", ("  ; note\n" + SWF_HEADER + _job(1, 50) + "2 x\n" + _job(3, 150)).encode())
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.line == 8 and "expected 18 whitespace-separated fields, found 2" in ei.value.detail


# ------------------------------------------------------------------ SWF: line ends
@pytest.mark.parametrize("eol", ["\r\n", "\r"])
@pytest.mark.parametrize("gz", [False, True])
def test_swf_lines_ended_by_cr_or_crlf_read_as_lf(tmp_path, eol, gz):
    """Lines ended by a lone CR (classic Mac OS) were read by pandas as lines, but the header and
    the line-by-line pass split at LF only: the header was lost (epoch 0, MaxProcs unread) with no
    warning."""
    text = (SWF_HEADER + JOBS).replace("\n", eol)
    wl = load_workload(_write(tmp_path, "eol.swf", text.encode(), gz=gz))
    ref = load_workload(_write(tmp_path, "lf.swf", (SWF_HEADER + JOBS).encode()))
    assert wl.format == "swf" and wl.epoch == 1_000_000_000
    assert wl.header["MaxProcs"] == 16 and wl.header["Computer"] == "Test"
    assert list(wl.jobs["submit_time"]) == [50, 100, 150, 200]
    assert wl.jobs.equals(ref.jobs)


@pytest.mark.parametrize("eol", ["\r\n", "\r"])
def test_a_bad_line_in_a_cr_file_is_named_and_no_job_is_lost(tmp_path, eol):
    """A CR-only file with one malformed line went to the line-by-line pass, which saw one line (a
    comment, as the file starts with ';'): 0 jobs and no error. Line 7 is the bad one (5 header
    lines, job 1 on line 6)."""
    text = (SWF_HEADER + _job(1, 50) + "2 x\n" + _job(3, 150)).replace("\n", eol)
    p = _write(tmp_path, "eol_bad.swf", text.encode())
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.line == 7 and "expected 18 whitespace-separated fields, found 2" in ei.value.detail
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["1", "3"] and [n for n, _ in wl.skipped_lines] == [7]
    assert wl.epoch == 1_000_000_000


def test_a_lone_cr_inside_an_lf_file_ends_a_line(tmp_path):
    """pandas ends a line at a lone CR; the line numbers of the errors now count it too (as
    str.splitlines and text editors do), so the bad line after it is named right (line 8)."""
    text = SWF_HEADER + _job(1, 50).replace("\n", "\r") + _job(2, 100) + "3 x\n" + _job(4, 200)
    p = _write(tmp_path, "lone_cr.swf", text.encode())
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.line == 8
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["1", "2", "4"] and [n for n, _ in wl.skipped_lines] == [8]


def test_cr_line_ends_in_the_metacentrum_dialect(tmp_path):
    """The dialects share the parse (MetaCentrum reads no SWF header: parse_table alone)."""
    lines = ["1 1356994800 10 100 2 -1 -1 2 200 -1 1 1 1 -1 1 1 -1 -1 {1,2} q1 nodes=1:ppn=2",
             "2 1356994900 10 100 2 -1 -1 2 200 -1 1 1 1 -1 1 1 -1 -1 {3} q1 nodes=1:ppn=2",
             "3 x"]
    p = _write(tmp_path, "mc.swf", ("\r".join(lines) + "\r").encode())
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p, format="swf-metacentrum")
    assert ei.value.line == 3
    wl = load_workload(p, format="swf-metacentrum", lenient=True)
    assert list(wl.jobs["job_id"]) == ["1", "2"] and list(wl.jobs["submit_time"]) == [0, 100]


# ------------------------------------------------------------------ SWF: field separators
@pytest.mark.parametrize("sep, shown", [("\x0b", r"'\x0b'"), ("\x0c", r"'\x0c'"), ("\xa0", r"'\xa0'")])
def test_whitespace_that_separates_no_field_is_named_with_its_line(tmp_path, sep, shown):
    """Fields are separated by spaces and tabs (pandas' whitespace); the line-by-line pass split
    at any white space (vertical tab, form feed, a Latin-1 no-break space), found the line valid
    and failed later with "job lines could not be parsed after validation", naming no line."""
    bad = _job(2, 100).replace(" ", sep, 1)
    p = _write(tmp_path, "sep.swf", (SWF_HEADER + _job(1, 50) + bad + _job(3, 150)).encode("latin-1"))
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p, format="swf")
    assert ei.value.line == 7
    assert ei.value.detail.startswith(f"the line holds {shown}, which separates no fields (only spaces and tabs do)")
    wl = load_workload(p, format="swf", lenient=True)
    assert list(wl.jobs["job_id"]) == ["1", "3"] and [n for n, _ in wl.skipped_lines] == [7]


# ------------------------------------------------------------------ sacct: counts with unit suffixes
SACCT_HEADER = "JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|NodeList|State"


def _sacct(tmp_path, rows, name="dump.txt"):
    return _write(tmp_path, name, ("\n".join([SACCT_HEADER, *rows]) + "\n").encode())


def _ints(col):
    return [None if pd.isna(x) else int(x) for x in col]


def _row(jid, nnodes, ncpus, nodelist="", state="COMPLETED"):
    return (f"{jid}|2024-03-01T10:00:00|2024-03-01T10:00:10|2024-03-01T10:10:10|00:10:00|01:00:00|"
            f"{nnodes}|{ncpus}|{nodelist}|{state}")


def test_sacct_counts_with_a_unit_suffix_are_read_as_slurm_prints_them(tmp_path):
    """Older sacct prints NNodes (and counts such as NCPUS) through Slurm's convert_num_unit:
    1024 as '1K', 1536 as '1.50K' (unless --noconvert). They were read as unknown, silently, and
    the twin rejected the job as asking for no nodes."""
    wl = load_workload(_sacct(tmp_path, [_row(1, "1K", "32K"), _row(2, "1.50K", "2M"), _row(3, "4", "128", "n[1-4]"),
                                         _row(4, "", "")]))
    assert _ints(wl.jobs["nodes"]) == [1024, 1536, 4, None]  # an empty NNodes is missing, as documented
    assert _ints(wl.jobs["cpus"]) == [32768, 2097152, 128, None]


@pytest.mark.parametrize("field, value, why", [
    ("NNodes", "2-4", "NNodes '2-4' is not a count (a whole number"),
    ("NNodes", "-1", "NNodes '-1' is not a count (a whole number"),
    ("NNodes", "many", "NNodes 'many' is not a count (a whole number"),
    ("NNodes", "1.23K", "NNodes '1.23K' is 1259.52 as sacct rounded it (unit K = 1,024): not a whole number; "
                        "export with sacct --noconvert, which prints counts in full"),
    ("NCPUS", "3x", "NCPUS '3x' is not a count (a whole number"),
])
def test_a_sacct_count_that_is_no_count_is_an_error_naming_line_and_field(tmp_path, field, value, why):
    rows = [_row(1, "1", "32", "n1"), _row(2, value, "32") if field == "NNodes" else _row(2, "1", value)]
    p = _sacct(tmp_path, rows)
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.line == 3 and ei.value.detail.startswith(why)
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["1"] and [n for n, _ in wl.skipped_lines] == [3]


# ------------------------------------------------------------------ sacct: steps without their job
def test_a_job_listed_only_by_its_steps_is_said_not_dropped_silently(tmp_path):
    """Step rows (``300.batch``) are not jobs; a job whose allocation row is not in the dump (a
    ``--name`` filter that matches step names, a dump cut at its top) vanished without a word."""
    rows = [_row("300.batch", "1", "32", "n1"), _row("300.extern", "1", "32", "n1"), _row("301", "1", "32", "n2"),
            _row("301.batch", "1", "32", "n2"), _row("302_7.0", "1", "32", "n3"), _row("303+1.0", "1", "32", "n4")]
    wl = load_workload(_sacct(tmp_path, rows))
    assert list(wl.jobs["job_id"]) == ["301"]
    assert wl.header["sacct_step_rows"] == 5 and wl.header["sacct_step_only_jobs"] == 3
    msg = [w for w in wl.warnings if "only as job steps" in w]
    assert msg == [f"{tmp_path / 'dump.txt'}: 3 job(s) appear only as job steps, without their allocation row "
                   "(sacct prints one per job: its submit, size and limit), so they are not loaded, e.g. job 300 "
                   "(its first step row: line 2); a --name or --state filter of sacct leaves allocation rows out, "
                   "and so does a dump cut short at its top"]


# ------------------------------------------------------------------ twinsweep run --accounts-out
@pytest.mark.parametrize("quiet", [["--quiet"], []])
def test_an_accounts_out_path_that_cannot_be_made_is_refused_before_the_run(tmp_path, capsys, quiet):
    """``--accounts-out`` under a file: the run was simulated and written, then save_accounts
    raised FileExistsError with a traceback."""
    from twinsweep.sweep.cli import main

    log = _write(tmp_path, "log.swf", (SWF_HEADER + JOBS).encode())
    (tmp_path / "afile").write_text("not a folder")
    out = tmp_path / "out"
    code = main(["run", "--data", str(log), "--policy", "fcfs", "--out", str(out), *quiet,
                 "--accounts-out", str(tmp_path / "afile" / "sub" / "acc.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == (f"twinsweep run: error: --accounts-out {tmp_path / 'afile' / 'sub' / 'acc.json'}: cannot "
                           f"create its folder: {tmp_path / 'afile'} is a file")
    assert not out.exists()  # refused before any work: no run folder


# ------------------------------------------------------------------ PM100 / F-DATA: time columns
def _pm100(tmp_path, name="job_table.parquet", **change):
    cols = dict(
        job_id=[1, 2, 3], user_id=[1, 1, 2], job_state=["COMPLETED"] * 3, run_time=[3600, 3600, 3600],
        time_limit=[120, 120, 120], num_nodes_alloc=[1, 2, 1],
        submit_time=["2020-05-01 10:00:00"] * 3, eligible_time=["2020-05-01 10:01:00"] * 3,
        start_time=["2020-05-01 10:05:00", "2020-05-01 10:06:00", "2020-05-01 10:07:00"],
        end_time=["2020-05-01 11:05:00", "2020-05-01 11:06:00", "2020-05-01 11:07:00"],
        node_power_consumption=[[1000.0, 1000.0], [2000.0, 2100.0], [900.0]])
    cols.update(change)
    p = tmp_path / name
    pd.DataFrame(cols).to_parquet(p, index=False)
    return p


def test_pm100_eligible_time_is_read_in_the_zone_of_the_other_times(tmp_path):
    """Naive eligible times were read as UTC while the submit, start and end times were read in the
    trace's zone: 2 h off in Rome in May (7,260 s after a submit one minute earlier)."""
    wl = load_workload(_pm100(tmp_path), tz="Europe/Rome")
    assert wl.epoch == 1_588_320_000  # 2020-05-01 10:00 CEST = 08:00 UTC
    assert list(wl.jobs["eligible_time"]) == [60, 60, 60]
    assert list(wl.jobs["recorded_start_time"]) == [300, 360, 420]


@pytest.mark.parametrize("change, why", [
    (dict(start_time=["2020-05-01 10:05:00", "garbage", "2020-05-01 10:07:00"]),
     "row 2, job 2: start_time 'garbage' is not a date and time"),
    (dict(end_time=["2020-05-01 11:05:00", "2020-05-01 10:00:00", "2020-05-01 11:07:00"]),
     "row 2, job 2: end_time 2020-05-01 10:00:00 is before start_time 2020-05-01 10:06:00"),
    (dict(eligible_time=["2020-05-01 10:01:00", "2020-13-45 10:00:00", "2020-05-01 10:01:00"]),
     "row 2, job 2: eligible_time '2020-13-45 10:00:00' is not a date and time"),
    (dict(submit_time=["2020-05-01 10:00:00", None, "2020-05-01 10:00:00"]),
     "row 2, job 2: submit_time is missing"),
])
def test_pm100_a_time_that_is_not_one_is_an_error_naming_the_row(tmp_path, change, why):
    """A start time that is not a time was read as "never started", silently (the job kept its
    status 'completed'); an end before the start was caught only by the generic check."""
    p = _pm100(tmp_path, **change)
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.detail == why
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["1", "3"] and wl.skipped_lines == [(2, why)]


def test_fdata_a_time_that_is_not_one_is_an_error_naming_the_row(tmp_path):
    df = pd.DataFrame({"jid": ["j1", "j2"], "usr": ["u", "u"], "adt": ["2021-04-01 09:00:00"] * 2,
                       "sdt": ["2021-04-01 09:10:00", "noon"], "edt": ["2021-04-01 09:40:00"] * 2,
                       "nnumr": [1, 1], "elpl": [3600, 3600], "duration": [1800.0, 1800.0]})
    p = tmp_path / "21_04.parquet"
    df.to_parquet(p, index=False)
    with pytest.raises(TraceFormatError) as ei:
        load_workload(p)
    assert ei.value.detail == "row 2, job j2: sdt 'noon' is not a date and time"
    wl = load_workload(p, lenient=True)
    assert list(wl.jobs["job_id"]) == ["j1"] and list(wl.jobs["run_time"]) == [1800]
