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


@dataclasses.dataclass(frozen=True)
class CleaningFilter:
    """One filter of a cleaned log's header: its expression as written and the jobs it removed."""

    expression: str
    jobs_removed: int


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
    side). ``numbered``: jobs with a numeric job id (the others are not placed)."""

    after: np.ndarray
    before: np.ndarray
    count: np.ndarray
    numbered: int

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
    return RemovedGaps(after=s[:-1][gap], before=s[1:][gap], count=step[gap], numbered=int(ok.sum()))


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
    name, from the same gaps (the ids are read once)."""
    filters = cleaning_filters(header)
    note = header.get("Note")
    cleaned = bool(filters) or (isinstance(note, str) and CLEANED_MARK in note)
    sub = np.asarray(submit_time, dtype=np.float64)
    # missing numbers mean removed jobs only where the header says jobs were removed: a log whose
    # ids are another counter (Slurm's, shared by several machines or by job steps) has gaps too
    gaps = removed_job_gaps(job_id, sub) if cleaned else None

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
        **in_window(t0, t1),
        **{name: in_window(a, b) for name, (a, b) in (also or {}).items()},
    }
