"""The span of a trace and where a run's window lies in it (issue 11, item 3).

A window ``[start, start + duration)`` (s from the trace epoch) that starts after the trace's last
job has ended holds nothing: it would report 0 jobs and an idle machine's energy, and in a sweep
become a rank block that shifts every mean rank. That is an error (:meth:`TraceSpan.check_window`,
a :class:`core.errors.ConfigError` naming the trace's span as UTC dates and as offsets).

A window that extends past the trace's last *submission* holds the machine emptying out: its
utilisation and energy are averaged over time in which no job can arrive. It runs, with a warning,
and is flagged ``window_past_last_submit`` in ``stats.json`` and ``runs.parquet``
(:meth:`TraceSpan.past_last_submit`):

* a window with a duration is flagged when ``start + duration > last submission + 1`` (some second
  of the window lies after the second of the last submission). A window that also reaches past
  the trace's last job *end* is a case of it (every end is at or after its submission), so one
  flag covers both; ``trace_last_submit_s`` and ``trace_last_end_s`` in ``stats.json`` say how
  far the trace reaches;
* an open window (no duration) lasts until its last job ends, so it has no idle tail after its
  jobs; it is flagged only when it starts after the last submission (it then holds no
  submission at all, only jobs running at its start).

The span is that of the trace as recorded (before any seed's perturbation), so every seed of a
window gets the same verdict.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt

import numpy as np

from .errors import ConfigError

__all__ = ["TraceSpan", "trace_span", "utc_text", "gap_text"]


def utc_text(epoch: int, offset: float) -> str:
    """``epoch + offset`` (Unix s) as ``"YYYY-MM-DD HH:MM:SS UTC"``."""
    t = _dt.datetime.fromtimestamp(int(epoch) + int(offset), _dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def _days(s: float) -> str:
    """A position in the trace in days from its epoch (``400.00 d``)."""
    return f"{s / 86400:,.2f} d"


def gap_text(s: float) -> str:
    """A gap for people: s below an hour, h (1 decimal) below a day, else d (2 decimals); not
    "0.00 d" for 146 s."""
    if s < 3600:
        return f"{s:,.0f} s"
    if s < 86400:
        return f"{s / 3600:,.1f} h"
    return f"{s / 86400:,.2f} d"


@dataclasses.dataclass(frozen=True)
class TraceSpan:
    """What a trace covers, in s from its epoch (``epoch``: Unix s, UTC).

    ``first_submit_s`` / ``last_submit_s``: earliest / latest submission; ``last_end_s``: the
    latest end of a job as recorded (its recorded end, else its recorded start — or its submit
    time when it has none — plus its run time; a job that never ran ends at its submission).
    """

    epoch: int
    first_submit_s: int
    last_submit_s: int
    last_end_s: int

    def date(self, offset: float) -> str:
        """An offset as a UTC date (:func:`utc_text`)."""
        return utc_text(self.epoch, offset)

    def describe(self) -> str:
        """One line: the span as dates and as offsets (s and days)."""
        return (f"the trace's jobs are submitted from {self.date(self.first_submit_s)} to "
                f"{self.date(self.last_submit_s)} and the last one ends at {self.date(self.last_end_s)} "
                f"(offsets {self.first_submit_s:,} s to {self.last_submit_s:,} s, last end {self.last_end_s:,} s = "
                f"{_days(self.first_submit_s)} to {_days(self.last_submit_s)}, last end {_days(self.last_end_s)} "
                "from the trace epoch)")

    def outside(self, start: int | None, duration: int | None) -> str | None:
        """Why the window ``[start, start + duration)`` holds nothing of the trace, or None when it
        holds something: ``"before"`` when it ends at or before the first submission (nothing is
        submitted yet, so nothing runs), ``"after"`` when it starts after the last job has ended
        (``start >= last_end_s`` and ``start > last_submit_s``; a job occupies ``[start, end)``).
        ``start`` None = the trace's start, ``duration`` None = open: never outside on that side."""
        if start is not None and duration is not None and int(start) + int(duration) <= self.first_submit_s:
            return "before"
        if start is not None and int(start) >= self.last_end_s and int(start) > self.last_submit_s:
            return "after"
        return None

    def check_window(self, start: int | None, duration: int | None, where: str = "") -> None:
        """Raise ConfigError when the window holds nothing of the trace (:meth:`outside`): it ends
        before the first submission, or starts after the last job has ended; the message names the
        trace's span as dates and offsets. ``where`` prefixes the message (a file, a dataset/window
        name)."""
        side = self.outside(start, duration)
        if side is None:
            return
        pre = f"{where}: " if where else ""
        if side == "before":
            end = int(start) + int(duration)
            raise ConfigError(
                f"{pre}the window [{int(start):,}, {end:,}) s ({self.date(int(start))} to {self.date(end)}) ends before "
                f"the trace's first submission: nothing is submitted or running in it; {self.describe()}; choose a "
                f"window that ends after {self.first_submit_s:,} s (--start / --duration, a window's start and duration)")
        raise ConfigError(
            f"{pre}the window starts at {int(start):,} s ({_days(int(start))}, {self.date(int(start))}), after the "
            f"trace's last job has ended: nothing is submitted or running in it; {self.describe()}; choose a start "
            f"before {self.last_end_s:,} s (--start / a window's start)")

    def past_last_submit(self, t0: int, t1: int | None) -> bool:
        """True when the window ``[t0, t1)`` extends past the last submission (module docstring;
        ``t1`` None = an open window)."""
        if t1 is None:
            return int(t0) > self.last_submit_s
        return int(t1) > self.last_submit_s + 1

    def past_last_submit_warning(self, t0: int, t1: int | None, where: str = "") -> str | None:
        """The one-line warning for a window :meth:`past_last_submit` flags, else None."""
        if not self.past_last_submit(t0, t1):
            return None
        pre = f"{where}: " if where else ""
        if t1 is None:
            span = f"the open window from {t0:,} s ({self.date(t0)}) starts"
            tail = "it holds no submission, only the jobs running at its start"
        else:
            span = (f"the window [{t0:,}, {t1:,}) s ({self.date(t0)} to {self.date(t1)}) ends "
                    f"{gap_text(t1 - 1 - self.last_submit_s)}")
            tail = ("no job arrives in that time, so its utilisation and energy describe a machine emptying out"
                    + (" (and idle after the last job ends)" if t1 > self.last_end_s else ""))
        return (f"{pre}{span} after the trace's last submission at {self.last_submit_s:,} s "
                f"({self.date(self.last_submit_s)}); {tail}; flagged window_past_last_submit in stats.json")

    def before_first_submit_warning(self, t0: int, where: str = "") -> str | None:
        """The one-line warning for a window that starts before the trace's first submission
        (an idle lead-in: nothing can run before the first job arrives), else None."""
        if int(t0) >= self.first_submit_s:
            return None
        pre = f"{where}: " if where else ""
        return (f"{pre}the window starts at {int(t0):,} s ({self.date(t0)}), {gap_text(self.first_submit_s - int(t0))} "
                f"before the trace's first submission at {self.first_submit_s:,} s ({self.date(self.first_submit_s)}); "
                "the machine is idle until then, so its utilisation and energy are averaged over that idle lead-in")

    def window_warnings(self, t0: int, t1: int | None, where: str = "") -> list[str]:
        """The warnings of a window ``[t0, t1)`` (``t1`` None = open): an idle lead-in before the
        first submission (:meth:`before_first_submit_warning`), a tail past the last submission
        (:meth:`past_last_submit_warning`)."""
        return [w for w in (self.before_first_submit_warning(t0, where), self.past_last_submit_warning(t0, t1, where))
                if w]

    def stats(self, t0: int, t1: int | None) -> dict:
        """The ``stats.json`` entries of a run over ``[t0, t1)``: ``window_past_last_submit``
        (bool), ``trace_last_submit_s`` and ``trace_last_end_s`` (int s from the epoch)."""
        return {"window_past_last_submit": self.past_last_submit(t0, t1),
                "trace_last_submit_s": int(self.last_submit_s), "trace_last_end_s": int(self.last_end_s)}


def trace_span(workload) -> TraceSpan:
    """The :class:`TraceSpan` of a :class:`core.workload.Workload` (O(jobs), vectorised).
    Raises ConfigError for a trace without jobs."""
    jobs = workload.jobs
    if not len(jobs):
        raise ConfigError(f"{workload.source}: the trace holds no job lines")
    submit = jobs["submit_time"].to_numpy(dtype="float64")
    rec_start = jobs["recorded_start_time"].astype("float64").to_numpy()
    rec_end = jobs["recorded_end_time"].astype("float64").to_numpy()
    run = jobs["run_time"].astype("float64").to_numpy()
    start = np.maximum(np.where(np.isnan(rec_start), submit, rec_start), submit)
    end = np.where(np.isnan(rec_end), start + np.nan_to_num(run, nan=0.0), rec_end)
    end = np.where(np.isnan(run) & np.isnan(rec_end), submit, end)
    last_submit = float(submit.max())
    return TraceSpan(epoch=int(workload.epoch), first_submit_s=int(submit.min()), last_submit_s=int(last_submit),
                     last_end_s=int(max(float(np.nanmax(end)), last_submit)))
