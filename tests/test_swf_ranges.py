"""Issue 11 item 8: SWF values are range-checked the same way on the fast and the slow parse path,
and a run refuses a timeline it could not hold before allocating it."""

from __future__ import annotations

import dataclasses

import pytest

from twinsweep.core.config import RunConfig
from twinsweep.core.errors import ConfigError, TraceFormatError
from twinsweep.core.loaders import load_workload
from twinsweep.core.loaders._swfcore import SWF_TIME_MAX
from twinsweep.core.run import MAX_TIMELINE_BINS, simulate
from twinsweep.core.system import System

CLEAN = [(i, 10 * i, 0, 20, 1) for i in range(1, 6)]  # job, submit, wait, run, procs


def _swf(tmp_path, rows, name="t.swf", extra_lines=()):
    """An SWF file of (job, submit, wait, run, procs) rows after two header lines; the values are
    written as given (strings such as "1e300" included), the requested time is 100 s."""
    lines = ["; MaxNodes: 4", "; MaxProcs: 4"]
    lines += [f"{j} {s} {w} {r} {n} -1 -1 {n} 100 -1 1 1 1 -1 -1 -1 -1 -1" for j, s, w, r, n in rows]
    p = tmp_path / name
    p.write_text("\n".join([*lines, *extra_lines]) + "\n")
    return p


def _with(row_no, **fields):
    """CLEAN with job ``row_no`` (1-based) changed; fields: submit, wait, run, procs."""
    rows = [list(r) for r in CLEAN]
    pos = {"submit": 1, "wait": 2, "run": 3, "procs": 4}
    for k, v in fields.items():
        rows[row_no - 1][pos[k]] = v
    return [tuple(r) for r in rows]


# the file has two header lines: job k is on line k + 2
@pytest.mark.parametrize("fields, field_no, what", [
    ({"submit": "3e9"}, 2, "submit time 3000000000 s is not in [0, 2147483647]"),
    ({"submit": "1e300"}, 2, "submit time 1e+300 s is not in"),
    ({"run": "1e300"}, 4, "run time 1e+300 s is not in"),
    ({"run": "-5"}, 4, "run time -5 s is not in [-1, 2147483647]"),
    ({"submit": "-30"}, 2, "submit time -30 s is not in"),
    ({"wait": "-7"}, 3, "wait time -7 s is not in"),
    ({"procs": "-3"}, 5, "allocated processors -3 is not in"),
    ({"submit": "1e400"}, 2, "inf is not a finite number"),
])
def test_out_of_range_value_names_file_line_and_field(tmp_path, fields, field_no, what):
    p = _swf(tmp_path, _with(3, **fields))
    with pytest.raises(TraceFormatError) as exc:
        load_workload(p)
    assert exc.value.line == 5 and exc.value.path.endswith("t.swf")
    assert f"field {field_no} is out of range" in exc.value.detail and what in exc.value.detail


def test_limits_are_inclusive(tmp_path):
    # 2^31 - 1 s is a valid requested/run time (CEA-Curie writes it for "unlimited"), -1 = unknown
    p = _swf(tmp_path, _with(2, run=SWF_TIME_MAX, wait=-1))
    wl = load_workload(p)
    assert int(wl.jobs["run_time"].iloc[1]) == SWF_TIME_MAX
    assert wl.jobs["recorded_start_time"].isna().iloc[1]


def test_fast_and_slow_path_apply_the_same_checks(tmp_path):
    # file A: only the range error (parsed by the fast path); file B: the same plus a malformed
    # line further down, which sends the whole file through the line-by-line path
    rows = _with(2, run="1e300")
    a = _swf(tmp_path, rows, "a.swf")
    b = _swf(tmp_path, rows, "b.swf", extra_lines=["6 60 0 20 1 -1 -1"])
    wa, wb = load_workload(a, lenient=True), load_workload(b, lenient=True)
    assert wa.skipped_lines == [(4, "field 4 is out of range: run time 1e+300 s is not in [-1, 2147483647]")]
    assert wb.skipped_lines[0] == wa.skipped_lines[0]
    assert [n for n, _ in wb.skipped_lines] == [4, 8]
    assert list(wa.jobs["job_id"]) == list(wb.jobs["job_id"]) == ["1", "3", "4", "5"]
    # strict mode names the first bad line on both paths
    for p in (a, b):
        with pytest.raises(TraceFormatError, match=r":4: field 4 is out of range"):
            load_workload(p)


def test_values_beyond_float_precision_are_refused_in_every_field(tmp_path):
    # a field without its own range (here the user id, field 12) is held to |v| <= 2^53
    p = tmp_path / "u.swf"
    p.write_text("1 0 0 10 1 -1 -1 1 20 -1 1 99999999999999999999 1 -1 -1 -1 -1 -1\n")
    with pytest.raises(TraceFormatError, match=r"u\.swf:1: field 12 is out of range: .* exceeds 2\^53"):
        load_workload(p)


def test_theta_absolute_submit_times_and_metacentrum_negative_run_times_stay_valid(tmp_path):
    from twinsweep.core.loaders._swfcore import swf_ranges

    assert swf_ranges(absolute_submit=True)[1].hi == 2**32 - 1
    assert swf_ranges(negative_run_time=True)[3].lo == -SWF_TIME_MAX


def _system(nodes=4):
    return System(name="tiny", title="tiny", nodes=nodes)


def test_timeline_too_large_is_refused_before_it_is_built(tmp_path):
    # a submit time of 2^31 - 1 s passes the range check (68 years): at 60 s that is 35.8 M bins
    far = SWF_TIME_MAX
    p = _swf(tmp_path, _with(4, submit=far))
    wl = load_workload(p)
    cfg = RunConfig(data=str(p), policy="fcfs", backfill="easy", sample_period=60)
    with pytest.raises(ConfigError) as exc:
        simulate(cfg, wl, _system())
    msg = str(exc.value)
    assert "job 4 (trace position 4)" in msg and f"t = {far} s" in msg
    bins = (far - 10) // 60
    assert f"{bins:,} timeline bins of 60 s" in msg and f"limit {MAX_TIMELINE_BINS:,}" in msg
    assert f"spans {far - 10} s" in msg
    # a sample period that makes the span fit runs
    res = simulate(dataclasses.replace(cfg, sample_period=86400 * 7), wl, _system())
    assert len(res.timeline) == (far - 10) // (86400 * 7) + 1


def test_run_time_that_reaches_too_far_is_named(tmp_path):
    p = _swf(tmp_path, _with(2, run=SWF_TIME_MAX))
    wl = load_workload(p)
    cfg = RunConfig(data=str(p), policy="replay", sample_period=60)
    with pytest.raises(ConfigError, match=r"job 2 \(trace position 2\) reaches t = 2147483667 s"):
        simulate(cfg, wl, _system())
