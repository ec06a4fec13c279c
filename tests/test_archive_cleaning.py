"""core.archive_cleaning: the cleaning filters of a PWA header, the removed jobs placed in time by
the job numbers missing between kept jobs, and validate's statement of them."""

from __future__ import annotations

import numpy as np
import pytest

from twinsweep.core.archive_cleaning import cleaning_filters, cleaning_summary, removed_in_window, removed_job_gaps
from twinsweep.core.loaders._swfcore import parse_swf_header

_HEADER = """; Version: 2.2
; Note: THIS IS A CLEANED VERSION OF THE LOG!
;       The filters used to produce it were
;         user=21 and (job>=13717 and job<=16207) (944 jobs removed)
;         user=174 (44617 jobs removed)
;         job<=10 (10 jobs removed)
;
; MaxJobs: 73496
"""


def test_filters_are_read_from_the_note_in_header_order():
    f = cleaning_filters(parse_swf_header(_HEADER.splitlines()))
    assert [(x.expression, x.jobs_removed) for x in f] == [
        ("user=21 and (job>=13717 and job<=16207)", 944), ("user=174", 44617), ("job<=10", 10)]
    assert cleaning_filters(parse_swf_header(["; Note: the cluster is composed of 32 nodes"])) == []
    assert cleaning_filters({}) == []


def test_gaps_by_hand():
    # kept jobs 1, 2, 5, 6, 10 submitted at 0, 10, 40, 40, 100: jobs 3-4 came in [10, 40], 7-9 in [40, 100]
    g = removed_job_gaps(["1", "2", "5", "6", "10"], [0, 10, 40, 40, 100])
    assert g.after.tolist() == [10, 40] and g.before.tolist() == [40, 100] and g.count.tolist() == [2, 3]
    assert g.total == 5 and g.numbered == 5
    # a window sharing out each gap by the overlap of its submit interval: [25, 70) takes half of
    # the first gap (15 of 30 s) and half of the second (30 of 60 s)
    assert removed_in_window(g, 25, 70) == pytest.approx(2 * 0.5 + 3 * 0.5)
    assert removed_in_window(g, 0, 1000) == pytest.approx(5.0)
    assert removed_in_window(g, 100, 200) == pytest.approx(0.0)
    # a gap between two jobs submitted at the same second counts whole in the window holding it
    g2 = removed_job_gaps([1, 4], [50, 50])
    assert removed_in_window(g2, 50, 51) == 2.0 and removed_in_window(g2, 0, 50) == 0.0


def test_ids_that_are_not_the_swf_counter_place_nothing():
    assert removed_job_gaps(["a", "b", "c"], [0, 1, 2]) is None  # not numbers
    assert removed_job_gaps([1, 2, 3, 4], [40, 30, 20, 10]) is None  # numbers against submit order
    assert removed_job_gaps([], []) is None
    # repeated numbers count once; in order without gaps: nothing removed
    g = removed_job_gaps([1, 1, 2, 3], [0, 0, 5, 9])
    assert g.total == 0


def test_summary_of_a_window():
    header = parse_swf_header(_HEADER.splitlines())
    ids = np.arange(1, 101)
    keep = (ids % 4) != 0  # every fourth job removed: 25 of 100, one per gap
    s = cleaning_summary(header, ids[keep], ids[keep] * 10.0, 0, 500)
    assert s["cleaned"] and s["jobs_removed"] == 944 + 44617 + 10
    assert s["removed_between_kept_jobs"] == 24  # job 100 is after the last kept job: not between
    # jobs 4, 8, ..., 48 were submitted before 500 s (their neighbours at 30/50 s ... 470/490 s)
    assert s["removed_in_window"] == 12 and s["kept_in_window"] == 37
    assert s["removed_share_in_window"] == pytest.approx(12 / 49)
    plain = cleaning_summary({}, ids, ids * 10.0, 0, 500)
    assert not plain["cleaned"] and plain["removed_in_window"] is None and plain["removed_share_in_window"] is None
    # a log without a cleaning note whose ids skip (Slurm's, or every 4th kept here): no job was removed
    gappy = cleaning_summary({}, ids[keep], ids[keep] * 10.0, 0, 500)
    assert not gappy["cleaned"] and gappy["removed_between_kept_jobs"] is None and gappy["removed_in_window"] is None


def test_validate_states_the_removed_jobs_and_computes_the_same_figures(tmp_path):
    """A log whose job numbers have gaps and whose header carries a cleaning note: validate warns
    and writes archive_cleaning; every figure is the same as for the log without the note and with
    its jobs renumbered (the removed jobs are a statement, not an input)."""
    from twin_helpers import write_swf_rows
    from twinsweep.sweep.validate import validate

    rows = [(1 + 3 * i, 900 * i, 0, 600, 2 + i % 3) for i in range(40)]  # numbers 1, 4, 7, ...: 2 missing per gap
    cleaned = write_swf_rows(tmp_path / "cln.swf", rows, max_nodes=8)
    cleaned.write_text(_HEADER + cleaned.read_text())
    plain = write_swf_rows(tmp_path / "plain.swf", [(1 + i, *r[1:]) for i, r in enumerate(rows)], max_nodes=8)
    kw = dict(policy="fcfs", backfill="easy", noise_seeds=0, sensitivity=False, windows=0,
              calibrate="0:18000", report_window="18000:36000")
    a, b = validate(str(cleaned), **kw), validate(str(plain), **kw)
    ac = a["archive_cleaning"]
    # the reported window holds jobs 21..40 of the list (submits 18000..35100) and the 2 x 20 missing
    # numbers between them and the jobs before them (the gap before job 21 lies in [17100, 18000]: outside)
    assert ac["cleaned"] and ac["kept_in_window"] == 20 and ac["removed_in_window"] == 38
    # the fitting window [0, 18000) holds jobs 1..20 and the 2 x 19 numbers between them, plus the
    # gap before job 21, whose submit interval [17100, 18000] lies inside it
    assert ac["fitting"] == {"removed_in_window": 40, "kept_in_window": 20, "removed_share_in_window": 40 / 60}
    assert ac["removed_share_in_window"] == pytest.approx(38 / 58)
    assert any("the archive's cleaning removed about 38 jobs" in w and "user=174 (44,617 jobs)" in w
               and "not comparable" in w and "the fitting window lost 67 %" in w for w in a["warnings"])
    assert b["archive_cleaning"]["removed_in_window"] is None and not b["archive_cleaning"]["cleaned"]
    assert not any("cleaning" in w for w in b["warnings"])
    assert a["modes"] == b["modes"]
    # the same gappy numbers without the cleaning note (a Slurm-numbered log): no removed jobs, no warning
    gappy = write_swf_rows(tmp_path / "gappy.swf", rows, max_nodes=8)
    c = validate(str(gappy), **kw)
    assert c["archive_cleaning"]["removed_in_window"] is None and not any("cleaning" in w for w in c["warnings"])
    assert c["modes"] == b["modes"]


def test_the_cleaned_pwa_logs_gaps_match_their_filters(load_cached):
    """On a real cleaned log the numbers missing between kept jobs are the filters' removed jobs,
    less those cut before the first kept job or after the last (OSC-Clust: user=174 removed
    44,617 jobs; 2 of them came after the last kept job, 80,712 of MaxJobs 80,714)."""
    wl = load_cached("pwa-swf/OSC-Clust-2000-3.1-cln.swf.gz")
    s = cleaning_summary(wl.header, wl.jobs["job_id"], wl.jobs["submit_time"], 0, 10**12)
    assert s["cleaned"] and s["filters"] == [{"expression": "user=174", "jobs_removed": 44617}]
    assert s["removed_between_kept_jobs"] == 44615 == s["removed_in_window"]


def test_lines_lenient_skipped_in_a_cleaned_log_are_said_beside_the_removed_jobs(tmp_path):
    """A malformed line of a cleaned log, skipped with --lenient, leaves its job number missing
    too: the warning says how many of the missing numbers may be such lines."""
    from twin_helpers import write_swf_rows
    from twinsweep.sweep.validate import validate

    rows = [(1 + 3 * i, 900 * i, 0, 600, 2 + i % 3) for i in range(40)]
    log = write_swf_rows(tmp_path / "cln.swf", rows, max_nodes=8)
    lines = log.read_text().splitlines()
    lines[-5] = "998 1 2"  # a malformed job line
    log.write_text(_HEADER + "\n".join(lines) + "\n")
    v = validate(str(log), policy="fcfs", backfill="easy", noise_seeds=0, sensitivity=False, windows=0,
                 calibrate="0:18000", report_window="18000:36000", lenient=True)
    assert v["archive_cleaning"]["lenient_skipped_lines"] == 1
    assert any("the archive's cleaning removed" in w and "up to 1 of the missing numbers are the lines --lenient skipped"
               in w for w in v["warnings"])
