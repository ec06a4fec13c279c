"""What the Parallel Workloads Archive's cleaning took out of a log, and when those jobs came.

The PWA publishes "cleaned" versions of many logs (``-cln``): jobs of flurries and anomalous users
removed, the filters listed in the header, each with its count (``; Note: THIS IS A CLEANED
VERSION OF THE LOG! ... user=174 (44617 jobs removed)``; D. G. Feitelson and D. Tsafrir,
"Workload sanitation for performance evaluation", ISPASS 2006, and the archive's cleaning page,
https://www.cs.huji.ac.il/labs/parallel/workload/logs.html#clean). The cleaning keeps the surviving
jobs' numbers, and the SWF job number (field 1) is a counter in submit order (SWF definition,
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html). So each number missing between two
kept jobs is a removed job, submitted between their two submit times: the removed jobs can be
placed in time (:func:`removed_job_gaps`) though not sized (their nodes and run times are gone).

On the ten cleaned logs of the data folder the numbers missing inside the kept range equal the
filters' counts exactly, less the filters that cut a prefix or suffix of the log (``job<=10``,
``submit<=2012-02-03``), e.g. SDSC-SP2 13,771 = 13,781 − 10 and OSC-Clust 44,615 of 44,617.

Why a backtest needs it: the recorded schedule (starts, waits, busy nodes) was made with the
removed jobs on the machine; a twin replaying the cleaned log runs without them in every mode, and
the recorded busy-node counts it may read in informed mode lack them too. Where the cleaning took
much of a window's jobs (OSC-Clust: user 174, 55 % of the log's jobs), the twin queues less than the
log did for a reason no machine model can recover. :func:`cleaning_summary` states it per window.

A missing number is a removed job only as far as the header accounts for it: a counter can also
skip numbers the site never used, or a log be renumbered (one job numbered 99999 after jobs 1..40).
Where the header's filters state how many jobs they removed, the count placed between kept jobs is
at most that total, less the filters whose job range lies wholly before the first kept number or
after the last (``job<=14``: they removed no job between kept ones); the missing numbers beyond it
are ``unexplained_number_gaps``, not removed jobs (:func:`cap_gaps` trims the largest gaps first:
a single absurd gap goes before the small ones a flurry leaves). Where the header states no count
(a cleaning note without filter lines), the missing numbers are all counted, as an upper bound from
the numbering alone, and the summary says so (``removed_is_upper_bound``, ``removed_basis``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pandas as pd

#: The cleaning note's marker in an SWF header's ``Note`` (PWA wording).
CLEANED_MARK = "THIS IS A CLEANED VERSION"
_FILTER_RE = re.compile(r"^(?P<expr>.+?)\s*\((?P<n>\d+) jobs? removed\)\s*$")
_JOB_BOUND_RE = re.compile(r"\bjob\s*(?P<op><=|>=|<|>|=)\s*(?P<n>\d+)\b")


@dataclasses.dataclass(frozen=True)
class CleaningFilter:
    """One filter of a cleaned log's header: its expression as written and the jobs it removed."""

    expression: str
    jobs_removed: int

    def job_range(self) -> tuple[float, float]:
        """The job numbers the filter can have removed, ``(lo, hi)`` inclusive, from the ``job``
        comparisons of an expression that is a conjunction (``user=50 and (job>=24439 and
        job<=64542)``, ``job<=10``); ``(-inf, inf)`` when it bounds none or has an ``or`` / ``not``."""
        lo, hi = -np.inf, np.inf
        if re.search(r"\b(or|not)\b|!|\|", self.expression, flags=re.IGNORECASE):
            return lo, hi
        for m in _JOB_BOUND_RE.finditer(self.expression):
            op, n = m.group("op"), float(m.group("n"))
            if op in ("<=", "="):
                hi = min(hi, n)
            if op in (">=", "="):
                lo = max(lo, n)
            if op == "<":
                hi = min(hi, n - 1)
            if op == ">":
                lo = max(lo, n + 1)
        return lo, hi


def cleaning_filters(header: dict[str, Any]) -> list[CleaningFilter]:
    """The cleaning filters of an SWF header (:func:`core.loaders._swfcore.parse_swf_header`'s dict):
    each ``<expression> (N jobs removed)`` line of its ``Note`` value, in header order. Empty when
    the log is not a cleaned one (no such line)."""
    note = header.get("Note")
    if not isinstance(note, str):
        return []
    out = []
    for line in note.splitlines():
        m = _FILTER_RE.match(line.strip())
        if m:
            out.append(CleaningFilter(m.group("expr"), int(m.group("n"))))
    return out


@dataclasses.dataclass(frozen=True)
class RemovedGaps:
    """Missing job numbers between kept jobs: ``count[i]`` jobs removed, submitted in
    ``[after[i], before[i]]`` (s from the trace epoch: the submit times of the kept jobs on either
    side). ``numbered``: jobs with a numeric job id (the others are not placed); ``first`` / ``last``:
    the lowest and highest job number (-1 when not given); ``after_job`` / ``before_job``: the
    kept job numbers on either side of each gap (None when not given)."""

    after: np.ndarray
    before: np.ndarray
    count: np.ndarray
    numbered: int
    first: int = -1
    last: int = -1
    after_job: np.ndarray | None = None
    before_job: np.ndarray | None = None

    @property
    def total(self) -> int:
        return int(self.count.sum())


def removed_job_gaps(job_id, submit_time) -> RemovedGaps | None:
    """The missing job numbers of a log (see the module docstring).

    ``job_id``: the jobs' ids (sequence of str or int; ``Workload.jobs["job_id"]``), ``submit_time``:
    their submit times (s). Returns None when fewer than 99 % of the ids are whole numbers, or when
    the numbers do not follow submit order (fewer than 99 % of consecutive numbers in
    non-decreasing submit order): then the ids are not the SWF counter and gaps mean nothing.
    Repeated numbers count once."""
    sub = np.asarray(submit_time, dtype=np.float64)
    if len(sub) == 0:
        return None
    val = pd.to_numeric(pd.Series(np.asarray(job_id, dtype=object)).astype(str).str.strip(),
                        errors="coerce").to_numpy(dtype=np.float64)
    ok = np.isfinite(val) & (val >= 0) & (val == np.floor(val))  # whole numbers only
    if ok.mean() < 0.99 or ok.sum() < 2:
        return None
    num = val[ok].astype(np.int64)
    order = np.argsort(num, kind="stable")
    n, s = num[order], sub[ok][order]
    keep = np.r_[True, np.diff(n) > 0]
    n, s = n[keep], s[keep]
    if (np.diff(s) >= 0).mean() < 0.99:
        return None
    step = np.diff(n) - 1
    gap = step > 0
    return RemovedGaps(after=s[:-1][gap], before=s[1:][gap], count=step[gap], numbered=int(ok.sum()),
                       first=int(n[0]), last=int(n[-1]), after_job=n[:-1][gap], before_job=n[1:][gap])


def cap_gaps(gaps: RemovedGaps, limit: int) -> RemovedGaps:
    """``gaps`` with at most ``limit`` missing numbers in all: the largest gaps trimmed first, each to a
    common level (the largest whole level ``L`` with ``sum(min(count, L)) <= limit``; the remainder,
    one each to the first trimmed gaps in submit order), so the total is exactly ``limit``. Gaps at
    or under the level keep their count; a gap trimmed to 0 is dropped. Unchanged when the gaps'
    total is within ``limit``."""
    c = gaps.count.astype(np.int64)
    limit = max(int(limit), 0)
    if int(c.sum()) <= limit:
        return gaps
    lo, hi = 0, int(c.max())  # sum(min(c, lo)) <= limit < sum(min(c, hi))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if int(np.minimum(c, mid).sum()) <= limit:
            lo = mid
        else:
            hi = mid
    new = np.minimum(c, lo)
    rest = limit - int(new.sum())
    trimmed = np.flatnonzero(c > lo)
    new[trimmed[:rest]] += 1
    keep = new > 0
    return dataclasses.replace(gaps, after=gaps.after[keep], before=gaps.before[keep], count=new[keep],
                               after_job=None if gaps.after_job is None else gaps.after_job[keep],
                               before_job=None if gaps.before_job is None else gaps.before_job[keep])


def removed_in_window(gaps: RemovedGaps, t0: float, t1: float) -> float:
    """Removed jobs submitted in ``[t0, t1)``: each gap's count, shared out in proportion to the part
    of its submit interval inside the window (all of it for a gap whose two neighbours were
    submitted at the same second inside the window). A count of jobs, not a whole number."""
    lo, hi, c = gaps.after, gaps.before, gaps.count.astype(np.float64)
    span = hi - lo
    inside = np.clip(np.minimum(hi, t1) - np.maximum(lo, t0), 0.0, None)
    frac = np.where(span > 0, inside / np.where(span > 0, span, 1.0), ((lo >= t0) & (lo < t1)).astype(float))
    return float((c * frac).sum())


def cleaning_summary(header: dict[str, Any], job_id, submit_time, t0: float, t1: float,
                     also: dict[str, tuple[float, float]] | None = None) -> dict[str, Any]:
    """What the archive removed, for a window ``[t0, t1)`` (s from the trace epoch):

    ``cleaned`` (the header has a cleaning note), ``filters`` ([{expression, jobs_removed}]),
    ``jobs_removed`` (their sum), ``removed_between_kept_jobs`` (missing numbers inside the kept
    range; None when the ids are not a counter, and for a log that is not a cleaned one: there a
    missing number is no evidence of a removed job — Slurm's job ids, for one, are shared by
    every job of a cluster and skip), ``removed_in_window`` (of those, submitted in the window,
    rounded to a whole job; None as before), ``kept_in_window`` (jobs of the log submitted in it)
    and ``removed_share_in_window`` = removed / (removed + kept) (None without both). ``also``: other
    windows by name, each summarised the same way (its three ``*_in_window`` figures) under its
    name, from the same gaps (the ids are read once).

    How far the header accounts for the missing numbers (the module docstring; all None when the
    ids are not placed): ``missing_numbers_between_kept_jobs`` (every missing number),
    ``stated_between_kept_jobs`` (the filters' total less the filters whose job range lies wholly
    outside the kept numbers; None when the header states no count), ``removed_between_kept_jobs``
    (the missing numbers, capped at the stated count: the figure every window's count comes from),
    ``unexplained_number_gaps`` (missing numbers beyond the stated count: never used, or a
    renumbering; None when nothing is stated), ``largest_gap`` ({jobs, after_job, before_job,
    share}: the largest run of missing numbers and its share of all of them),
    ``removed_is_upper_bound`` (no count stated: the figures are from the numbering alone) and
    ``removed_basis`` (the same, in words)."""
    filters = cleaning_filters(header)
    note = header.get("Note")
    cleaned = bool(filters) or (isinstance(note, str) and CLEANED_MARK in note)
    sub = np.asarray(submit_time, dtype=np.float64)
    # missing numbers mean removed jobs only where the header says jobs were removed: a log whose
    # ids are another counter (Slurm's, shared by several machines or by job steps) has gaps too
    gaps = removed_job_gaps(job_id, sub) if cleaned else None
    account = _accounting(filters, gaps)
    if gaps is not None and account["stated_between_kept_jobs"] is not None:
        gaps = cap_gaps(gaps, account["stated_between_kept_jobs"])

    def in_window(a: float, b: float) -> dict[str, Any]:
        kept = int(((sub >= a) & (sub < b)).sum())
        removed = None if gaps is None else int(round(removed_in_window(gaps, a, b)))
        share = None if removed is None or removed + kept == 0 else removed / (removed + kept)
        return {"removed_in_window": removed, "kept_in_window": kept, "removed_share_in_window": share}

    return {
        "cleaned": cleaned,
        "filters": [dataclasses.asdict(f) for f in filters],
        "jobs_removed": sum(f.jobs_removed for f in filters),
        "removed_between_kept_jobs": None if gaps is None else gaps.total,
        **account,
        **in_window(t0, t1),
        **{name: in_window(a, b) for name, (a, b) in (also or {}).items()},
    }


def _accounting(filters: list[CleaningFilter], gaps: RemovedGaps | None) -> dict[str, Any]:
    """:func:`cleaning_summary`'s fields on how far the header's counts account for the missing
    numbers of ``gaps`` (uncapped)."""
    keys = ("missing_numbers_between_kept_jobs", "stated_between_kept_jobs", "unexplained_number_gaps",
            "largest_gap", "removed_is_upper_bound", "removed_basis")
    if gaps is None:
        return dict.fromkeys(keys)
    missing = gaps.total
    largest = None
    if len(gaps.count):
        i = int(np.argmax(gaps.count))  # the first of the largest
        largest = {"jobs": int(gaps.count[i])}
        if gaps.after_job is not None:
            largest.update(after_job=int(gaps.after_job[i]), before_job=int(gaps.before_job[i]))
        largest["share"] = int(gaps.count[i]) / missing
    if not filters:
        text = (f"the header states no count of removed jobs: the {missing:,} job numbers missing between kept jobs "
                "are an upper bound from the numbering alone (numbers the site never used count too)")
        if largest and largest["share"] >= 0.5:
            text += (f"; one gap of {largest['jobs']:,} numbers"
                     + (f" (between jobs {largest['after_job']:,} and {largest['before_job']:,})"
                        if "after_job" in largest else "")
                     + f" holds {largest['share'] * 100:.0f} % of them")
        return {"missing_numbers_between_kept_jobs": missing, "stated_between_kept_jobs": None,
                "unexplained_number_gaps": None, "largest_gap": largest, "removed_is_upper_bound": True,
                "removed_basis": text}
    total = sum(f.jobs_removed for f in filters)
    outside = [f for f in filters if f.jobs_removed and gaps.first >= 0 and
               ((r := f.job_range())[1] < gaps.first or r[0] > gaps.last)]
    stated = total - sum(f.jobs_removed for f in outside)
    out_text = "" if not outside else (
        f" ({total:,} in all, less {sum(f.jobs_removed for f in outside):,} by "
        + ", ".join(f.expression for f in outside) + ", wholly before the first kept job or after the last)")
    if missing == 0 and stated == 0:
        text = "no job number is missing between kept jobs" + (
            f": the {total:,} jobs the header's filters removed (" + ", ".join(f.expression for f in outside)
            + ") all lie before the first kept job or after the last" if total else
            ", and the header's filters removed none")
    elif missing <= stated:
        text = (f"the {missing:,} job numbers missing between kept jobs are "
                + ("as many as" if missing == stated else "within") + f" the {stated:,} jobs the header's "
                f"filters state they removed between them{out_text}: each missing number is counted as a removed job")
    else:
        counted = (f"{stated:,} are counted as removed jobs (the largest gaps trimmed first) and the other "
                   f"{missing - stated:,}" if stated else "none is counted as a removed job: they")
        text = (f"the header's filters state {stated:,} jobs removed between kept jobs{out_text}, but {missing:,} job "
                f"numbers are missing there: {counted} are numbers never used or a renumbering, not removed jobs "
                "(unexplained_number_gaps)")
    return {"missing_numbers_between_kept_jobs": missing, "stated_between_kept_jobs": stated,
            "unexplained_number_gaps": max(missing - stated, 0), "largest_gap": largest,
            "removed_is_upper_bound": False, "removed_basis": text}
