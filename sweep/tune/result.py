"""What a tune call did (:class:`TuneResult`), and what an interrupted call leaves in it."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from .study import counted, failed_count

__all__ = ["TuneResult", "record_interrupt"]


@dataclasses.dataclass
class TuneResult:
    """What a tune call did: ``out``, ``study_name``, ``storage`` (URL or journal path),
    ``complete`` (finished trials in the study), ``ran_trials`` (trials evaluated by this call),
    ``failed_trials`` (of those, the trials that failed: a run failed or a metric was undefined),
    ``failed_in_study`` (failed trials in the study, counted in ``complete``),
    ``executed`` (runs simulated by this call), ``best`` (list of dicts: number, params, values,
    test_values), ``files`` (name -> path), ``interrupted``, ``wall_s``."""

    out: Path
    study_name: str
    storage: str
    complete: int = 0
    ran_trials: int = 0
    failed_trials: int = 0
    failed_in_study: int = 0
    executed: int = 0
    best: list = dataclasses.field(default_factory=list)
    files: dict = dataclasses.field(default_factory=dict)
    interrupted: bool = False
    wall_s: float = 0.0
    worker_errors: list = dataclasses.field(default_factory=list)  # Slurm: workers that failed


def record_interrupt(res, ev, study, t_wall: float) -> None:
    """What an interrupted tune call leaves in its result: progress so far and its wall time."""
    res.interrupted = True
    res.executed, res.ran_trials, res.failed_trials = ev.executed, ev.told, ev.failed_trials
    res.complete, res.failed_in_study = counted(study), failed_count(study)
    res.wall_s = time.perf_counter() - t_wall
