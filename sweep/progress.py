"""A rich progress bar for sweeps: done / failed / running and ETA (no output when disabled)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)


class SweepProgress:
    """Context manager around :class:`rich.progress.Progress`.

    ``total``: runs to execute in this invocation; ``label``: the description shown;
    ``enabled``: False (tests, pipes) turns every method into a no-op; the bar goes to stderr
    unless ``console`` says otherwise.
    """

    def __init__(self, total: int, label: str = "sweep", enabled: bool = True, console: Console | None = None):
        self.enabled = enabled
        self.total = total
        self.done = self.failed = self.running = 0
        self._progress = None
        if enabled:
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

    def retry_round(self, n: int, attempt: int) -> None:
        """Announce a retry round of ``n`` failed runs (attempt number ``attempt``)."""
        if self._progress is not None:
            self._progress.console.print(f"retrying {n} failed run(s), attempt {attempt}")
