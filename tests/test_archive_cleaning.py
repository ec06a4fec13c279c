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


def _cleaned_header(*filters: str) -> dict:
    """A cleaned log's header with the given filter lines (none: the cleaning note alone)."""
    lines = ["; Note: THIS IS A CLEANED VERSION OF THE LOG!"]
    if filters:
        lines.append(";       The filters used to produce it were")
        lines += [f";         {f}" for f in filters]
    return parse_swf_header(lines)


def test_job_range_of_a_filter():
    from twinsweep.core.archive_cleaning import CleaningFilter

    assert CleaningFilter("user=50 and (job>=24439 and job<=64542)", 1).job_range() == (24439, 64542)
    assert CleaningFilter("job<=10", 1).job_range() == (-np.inf, 10)
    assert CleaningFilter("job>7", 1).job_range() == (8, np.inf)
    assert CleaningFilter("user=2", 1).job_range() == (-np.inf, np.inf)
    assert CleaningFilter("job<5 or job>100", 1).job_range() == (-np.inf, np.inf)  # not a conjunction


def test_cap_gaps_trims_the_largest_gaps_first():
    from twinsweep.core.archive_cleaning import cap_gaps

    g = removed_job_gaps([4, 5, 8, 9, 13, 14, 33], [40, 50, 80, 90, 130, 140, 330])  # gaps of 2, 3, 18
    assert g.count.tolist() == [2, 3, 18] and g.after_job.tolist() == [5, 9, 14] and g.first == 4 and g.last == 33
    # limit 5: level 1 (3 <= 5 < 6 at level 2), the 2 left over to the first two gaps: 2, 2, 1
    assert cap_gaps(g, 5).count.tolist() == [2, 2, 1]
    assert cap_gaps(g, 20).count.tolist() == [2, 3, 15]  # level 15: only the absurd gap is trimmed
    assert cap_gaps(g, 23) is g and cap_gaps(g, 99) is g
    z = cap_gaps(g, 0)
    assert z.total == 0 and len(z.after) == 0 and removed_in_window(z, 0, 1000) == 0.0


def test_header_totalling_0_counts_no_gap_as_removed_jobs():
    """`job<=0 (0 jobs removed)` and one job numbered 99999 after jobs 1..40: the 99,958 missing
    numbers are unexplained, not removed jobs (a tester's log said 'removed about 99,958 jobs')."""
    ids = list(range(1, 41)) + [99999]
    sub = [600.0 * i for i in range(1, 42)]
    s = cleaning_summary(_cleaned_header("job<=0 (0 jobs removed)"), ids, sub, 0, 10**6, also={"fit": (0, 12000)})
    assert s["cleaned"] and s["jobs_removed"] == 0 and s["stated_between_kept_jobs"] == 0
    assert s["missing_numbers_between_kept_jobs"] == 99958 and s["unexplained_number_gaps"] == 99958
    assert s["removed_between_kept_jobs"] == 0 and s["removed_in_window"] == 0 and s["removed_share_in_window"] == 0.0
    assert s["fit"] == {"removed_in_window": 0, "kept_in_window": 19, "removed_share_in_window": 0.0}
    assert s["largest_gap"] == {"jobs": 99958, "after_job": 40, "before_job": 99999, "share": 1.0}
    assert not s["removed_is_upper_bound"] and "none is counted as a removed job" in s["removed_basis"]


def test_header_totals_smaller_than_the_gaps_cap_them():
    """Filters totalling 12, of which `job<=3` (3) lies before the first kept job (4) and the range
    40..45 (4) after the last (33): 5 stated between kept jobs, 23 numbers missing (gaps 2, 3, 18).
    Counted: 2, 2, 1 (cap_gaps), 18 unexplained."""
    header = _cleaned_header("job<=3 (3 jobs removed)", "user=9 and (job>=40 and job<=45) (4 jobs removed)",
                             "user=7 (5 jobs removed)")
    ids = [4, 5, 8, 9, 13, 14, 33]
    s = cleaning_summary(header, ids, [10.0 * i for i in ids], 0, 135, also={"fitting": (135, 400)})
    assert s["jobs_removed"] == 12 and s["stated_between_kept_jobs"] == 5
    assert s["missing_numbers_between_kept_jobs"] == 23 and s["unexplained_number_gaps"] == 18
    assert s["removed_between_kept_jobs"] == 5
    # gaps [50, 80] (2) and [90, 130] (2 of 3) lie in [0, 135); [140, 330] (1 of 18) in [135, 400)
    assert s["removed_in_window"] == 4 and s["kept_in_window"] == 5 and s["removed_share_in_window"] == 4 / 9
    assert s["fitting"] == {"removed_in_window": 1, "kept_in_window": 2, "removed_share_in_window": 1 / 3}
    assert "state 5 jobs removed between kept jobs (12 in all, less 7 by job<=3" in s["removed_basis"]
    assert "the other 18 are numbers never used or a renumbering" in s["removed_basis"]
    # a filter range only partly outside the kept numbers is not taken off: 40..45 -> 30..45 states 9
    part = _cleaned_header("job<=3 (3 jobs removed)", "user=9 and (job>=30 and job<=45) (4 jobs removed)",
                           "user=7 (5 jobs removed)")
    assert cleaning_summary(part, ids, [10.0 * i for i in ids], 0, 400)["removed_between_kept_jobs"] == 9


def test_no_header_totals_and_one_huge_gap_is_an_upper_bound():
    """A cleaning note with no filter lines: every missing number is counted, as today, but the
    summary says the figure is an upper bound from the numbering alone and names the gap."""
    ids = list(range(1, 41)) + [99999]
    sub = [600.0 * i for i in range(1, 42)]  # the gap 40 -> 99999 lies in [24000, 24600]
    s = cleaning_summary(_cleaned_header(), ids, sub, 0, 24300)
    assert s["cleaned"] and s["filters"] == [] and s["stated_between_kept_jobs"] is None
    assert s["removed_between_kept_jobs"] == 99958 == s["missing_numbers_between_kept_jobs"]
    assert s["unexplained_number_gaps"] is None and s["removed_is_upper_bound"]
    assert s["removed_in_window"] == 49979 and s["kept_in_window"] == 40  # half the gap's interval
    assert "upper bound from the numbering alone" in s["removed_basis"]
    assert "one gap of 99,958 numbers (between jobs 40 and 99,999) holds 100 % of them" in s["removed_basis"]


def test_header_totals_consistent_with_the_gaps_change_nothing():
    """`job<=2` (2) before the first kept job 3, `user=3` (5) between: gaps of 2 and 3, all counted."""
    header = _cleaned_header("user=3 (5 jobs removed)", "job<=2 (2 jobs removed)")
    ids = [3, 4, 7, 8, 12]
    s = cleaning_summary(header, ids, [10.0 * i for i in ids], 0, 1000)
    assert s["stated_between_kept_jobs"] == 5 == s["missing_numbers_between_kept_jobs"]
    assert s["removed_between_kept_jobs"] == 5 == s["removed_in_window"] and s["unexplained_number_gaps"] == 0
    assert s["removed_share_in_window"] == 5 / 10 and not s["removed_is_upper_bound"]
    assert "as many as the 5 jobs" in s["removed_basis"]


def test_validate_does_not_warn_of_removed_jobs_the_header_does_not_state(tmp_path):
    """The tester's log: `job<=0 (0 jobs removed)`, jobs 1..40 and one job 99999: no cleaning
    warning, archive_cleaning counts 0 removed jobs and 99,958 unexplained numbers."""
    from twin_helpers import write_swf_rows
    from twinsweep.sweep.validate import validate

    rows = [(1 + i, 900 * i, 0, 600, 1 + i % 3) for i in range(40)] + [(99999, 900 * 40, 0, 600, 1)]
    log = write_swf_rows(tmp_path / "m-clean.swf", rows, max_nodes=4)
    log.write_text("; Note: THIS IS A CLEANED VERSION OF THE LOG!\n;         job<=0 (0 jobs removed)\n"
                   + log.read_text())
    v = validate(str(log), policy="fcfs", backfill="easy", noise_seeds=0, sensitivity=False, windows=0)
    ac = v["archive_cleaning"]
    assert ac["removed_between_kept_jobs"] == 0 and ac["removed_in_window"] == 0
    assert ac["unexplained_number_gaps"] == 99958 and ac["fitting"]["removed_in_window"] == 0
    assert not any("cleaning" in w for w in v["warnings"])


def test_every_filter_outside_the_kept_numbers_and_no_gap_is_said_plainly():
    """`job<=2` (2) before the first kept job 3 and no number missing between 3..7: the basis says
    so instead of "the 0 job numbers missing ... are as many as the 0 jobs"."""
    header = _cleaned_header("job<=2 (2 jobs removed)")
    ids = [3, 4, 5, 6, 7]
    s = cleaning_summary(header, ids, [10.0 * i for i in ids], 0, 1000)
    assert s["missing_numbers_between_kept_jobs"] == 0 == s["stated_between_kept_jobs"]
    assert s["removed_basis"] == ("no job number is missing between kept jobs: the 2 jobs the header's filters "
                                  "removed (job<=2) all lie before the first kept job or after the last")
    none = cleaning_summary(_cleaned_header("job<=0 (0 jobs removed)"), ids, [10.0 * i for i in ids], 0, 1000)
    assert none["removed_basis"] == "no job number is missing between kept jobs, and the header's filters removed none"
