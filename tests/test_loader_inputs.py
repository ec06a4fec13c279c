"""Hand-written inputs the loaders had not seen (helper-loaders): line ends other than LF, comment
lines indented before the first job line, whitespace that is not a field separator, sacct node
counts with unit suffixes and jobs listed only by their steps. Each input's job count, values or
error (file, line, field) is checked by hand."""

from __future__ import annotations

import gzip

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
