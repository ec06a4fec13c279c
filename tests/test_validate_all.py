"""bench/validate_all.py writes its tables into the README and docs/validation.md (issue 15 item 5:
the figures are produced by one command): merge_block replaces the rows of the traces rendered
and keeps the others, in the script's trace order; a file without the markers is one error."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import validate_all as va  # noqa: E402


def _mode_rows(name, tag):
    return [f"| {name} (9 days) | fcfs + easy | {m} | {tag} | – | – | 0% | – | – | – |  | 10% | – / – |"
            for m in ("blind", "informed", "restart")]


def _rank_row(name, tag):
    return f"| {name} (9 days) | 4 | {tag} | met | – | – | 0 s | 0 | 0.0% | 1 s CPU | – / – | 0 |"


def test_merge_block_replaces_the_rendered_traces_and_keeps_the_others():
    old = ["intro", va.MARK_START, *va.HEAD_MODES, *_mode_rows("KTH-SP2-1996-2.1-cln", "old"),
           *_mode_rows("HPC2N-2002-2.2-cln", "old"), "", *va.HEAD_RANK, _rank_row("KTH-SP2-1996-2.1-cln", "old"),
           _rank_row("HPC2N-2002-2.2-cln", "old"), "", va.MARK_END, "after"]
    text = "\n".join(old) + "\n"
    new = va.merge_block(text, _mode_rows("KTH-SP2-1996-2.1-cln", "new") + _mode_rows("LANL-CM5-1994-4.1-cln", "new"),
                         [_rank_row("LANL-CM5-1994-4.1-cln", "new")], "doc")
    lines = new.splitlines()
    assert lines[0] == "intro" and lines[-1] == "after"
    body = [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| trace |")]
    # trace order of the script: KTH, LANL-CM5, HPC2N; each trace's modes in their order
    assert [(va._key(r), r.split("|")[3].strip(), r.split("|")[4].strip()) for r in body[:9]] == [
        ("KTH-SP2-1996-2.1-cln", "blind", "new"), ("KTH-SP2-1996-2.1-cln", "informed", "new"),
        ("KTH-SP2-1996-2.1-cln", "restart", "new"), ("LANL-CM5-1994-4.1-cln", "blind", "new"),
        ("LANL-CM5-1994-4.1-cln", "informed", "new"), ("LANL-CM5-1994-4.1-cln", "restart", "new"),
        ("HPC2N-2002-2.2-cln", "blind", "old"), ("HPC2N-2002-2.2-cln", "informed", "old"),
        ("HPC2N-2002-2.2-cln", "restart", "old")]
    assert [(va._key(r), r.split("|")[3].strip()) for r in body[9:]] == [
        ("KTH-SP2-1996-2.1-cln", "old"), ("LANL-CM5-1994-4.1-cln", "new"), ("HPC2N-2002-2.2-cln", "old")]
    assert va.merge_block(new, [], [], "doc") == new  # rendering nothing changes nothing
    with pytest.raises(SystemExit, match="README.md: no <!-- validate-all table -->"):
        va.merge_block("no markers\n", [], [], "README.md")


def test_a_kept_row_of_an_older_narrower_table_is_padded_not_dropped():
    """A row written before the table gained columns is kept, with "–" in the new cells."""
    short = "| HPC2N-2002-2.2-cln (9 days) | fcfs + easy | blind | old | – | – | 0% | – | – | – |  |"
    text = "\n".join([va.MARK_START, *va.HEAD_MODES, short, "", *va.HEAD_RANK, _rank_row("HPC2N-2002-2.2-cln", "old"),
                      va.MARK_END]) + "\n"
    new = va.merge_block(text, _mode_rows("KTH-SP2-1996-2.1-cln", "new"), [], "doc")
    kept = [ln for ln in new.splitlines() if ln.startswith("| HPC2N") and "blind" in ln]
    assert kept == [short + " – | – |"]
    assert kept[0].count("|") == va.HEAD_MODES[1].count("|")
    assert sum(ln.startswith("| HPC2N") for ln in new.splitlines()) == 2  # its rank row too


def test_render_puts_the_holds_diagnostic_in_the_per_trace_table_not_among_the_modes(tmp_path):
    """The 'holds' mode's held jobs are inputs, so its all-jobs figures are no test: it gets no row
    of the modes table, only its not-held errors in the per-trace table's last column."""
    from twin_helpers import write_swf_rows
    from twinsweep.sweep.validate import validate

    jobs = [(1, 0, 18000, 600, 2), (2, 10, 0, 600, 2), *[(3 + i, 40000 + 1000 * i, 0, 600, 2) for i in range(8)],
            (11, 50000, 18000, 600, 2), (12, 50010, 100, 600, 2)]
    log = write_swf_rows(tmp_path / "held.swf", jobs, max_nodes=8)
    v = validate(str(log), policy="fcfs", backfill="easy", noise_seeds=0, sensitivity=False, windows=0,
                 calibrate="0:45000", report_window="45000:60000", restart="1d", holds=True)
    out = va._render(v, va._label(v), "1 s CPU")
    assert [r.split("|")[3].strip() for r in out["rows"]] == ["blind", "informed", "restart"]
    assert all(r.count("|") == va.HEAD_MODES[1].count("|") for r in out["rows"])
    assert out["rank_row"].count("|") == va.HEAD_RANK[1].count("|")
    # not-held jobs with the holds given: job 12 waited 100 s in the log and 0 s in the twin
    cells = [c.strip() for c in out["rank_row"].strip(" |").split("|")]
    assert cells[-2] == "-100 % / -100 %"
    assert cells[-1] == "not a cleaned log"  # no cleaning note in the header: nothing to place


def test_removed_cell_reads_the_archive_cleaning_of_validation_json():
    assert va._removed(None) == "–"
    assert va._removed({"cleaned": True, "removed_in_window": None}) == "–"
    assert va._removed({"cleaned": False, "removed_in_window": None}) == "not a cleaned log"
    assert va._removed({"cleaned": True, "removed_in_window": 0, "removed_share_in_window": 0.0}) == "0"
    assert va._removed({"cleaned": True, "removed_in_window": 44615, "removed_share_in_window": 0.7181}) == "44,615 (72%)"
