"""Sweep progress: a rich progress bar (done / failed / running and ETA) on a terminal, one plain
line per tenth of the runs where stderr is not a terminal (a log file, CI, a Slurm job's output),
or nothing when disabled."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)


class SweepProgress:
    """Context manager around :class:`rich.progress.Progress`.

    ``total``: runs to execute in this invocation; ``label``: the description shown;
    ``enabled``: True (the bar), ``"lines"`` (a line ``label: 54/180 runs (30 %), 1 failed, 12 s``
    to stderr each time another tenth of the runs has ended, and at the end) or False (tests:
    every method a no-op); the bar goes to stderr unless ``console`` says otherwise.
    """

    def __init__(self, total: int, label: str = "sweep", enabled: bool | str = True, console: Console | None = None):
        if enabled not in (True, False, "lines"):
            raise ValueError(f"progress: expected True, False or 'lines', got {enabled!r}")
        self.enabled = bool(enabled)
        self.total = total
        self.label = label
        self.done = self.failed = self.running = 0
        self._progress = None
        self._lines = enabled == "lines"
        self._t0 = time.monotonic()
        self._tenth = 0  # tenths of the runs already announced
        if enabled is True:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("[green]done {task.fields[done]}"), TextColumn("[red]failed {task.fields[failed]}"),
                TextColumn("[cyan]running {task.fields[running]}"), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), console=console or Console(stderr=True), transient=False,
            )
            self._task = self._progress.add_task(label, total=total, done=0, failed=0, running=0)

    def __enter__(self):
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False

    def update(self, done: int | None = None, failed: int | None = None, running: int | None = None) -> None:
        """Set the counters (None keeps a value); the bar shows done + failed of ``total``."""
        if done is not None:
            self.done = done
        if failed is not None:
            self.failed = failed
        if running is not None:
            self.running = running
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done + self.failed, done=self.done,
                                  failed=self.failed, running=self.running)
        elif self._lines and self.total > 0:
            ended = self.done + self.failed
            tenth = min(10, ended * 10 // self.total)
            if tenth > self._tenth:
                self._tenth = tenth
                self._line(ended)

    def _line(self, ended: int) -> None:
        failed = f", {self.failed} failed" if self.failed else ""
        print(f"{self.label}: {ended}/{self.total} runs ({100 * ended // self.total} %){failed}, "
              f"{time.monotonic() - self._t0:.0f} s", file=sys.stderr, flush=True)

    def retry_round(self, n: int, attempt: int) -> None:
        """Announce a retry round of ``n`` failed runs (attempt number ``attempt``)."""
        if self._progress is not None:
            self._progress.console.print(f"retrying {n} failed run(s), attempt {attempt}")
        elif self._lines:
            print(f"{self.label}: retrying {n} failed run(s), attempt {attempt}", file=sys.stderr, flush=True)
