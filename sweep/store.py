"""The result store of a sweep (DESIGN.md §6): append-only files, safe to kill at any moment.

Layout of an output folder::

    study.toml / study.json   the spec as given / as resolved
    datasets.json             provenance of every trace and the system (power model) it ran on
    plan.csv                  every run of the study: key, dataset, window, axes, seed
    runs/<key>/               one complete run: jobs.parquet, timeline.parquet, stats.json,
                              manifest.json (core.run.write_run) + sweep.json (grid coordinates)
    runs/.tmp-<key>-…/        a run being written (renamed to runs/<key> when complete)
    failed/<key>/error.json   a run that raised: error, traceback, attempts (removed on success)
    runs.parquet              one row per run, sorted by key, rebuilt from runs/*/
    .lock                     held (flock) by the sweep writing here

A run directory exists under its final name only once every file in it is written (rename is
atomic on POSIX filesystems), so "done" = "``runs/<key>`` exists" and a restarted sweep runs only
what is missing. Leftover ``.tmp-*`` directories of a killed sweep are removed at the next start.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import shutil
import socket
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from twinsweep.core.errors import TwinError

RUNS_DIR = "runs"
FAILED_DIR = "failed"
TABLE = "runs.parquet"
SWEEP_JSON = "sweep.json"
TMP_PREFIX = ".tmp-"

#: Count fields of stats.json copied into runs.parquet as ``count_<name>``.
COUNT_PREFIX = "count_"


class StoreBusyError(TwinError):
    """Another live process holds the output folder's lock."""


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}-{uuid.uuid4().hex[:8]}")
    tmp.write_text(text)
    os.replace(tmp, path)


def dump_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, 1-space indent, trailing newline)."""
    return json.dumps(obj, sort_keys=True, indent=1, default=str) + "\n"


def commit_run_dir(runs_dir: str | os.PathLike, key: str, write: Callable[[Path], None]) -> str:
    """Write one run atomically: ``write(tmp_dir)`` fills a fresh ``runs/.tmp-<key>-…`` folder
    which is then renamed to ``runs/<key>``.

    Returns ``"written"``, or ``"exists"`` when ``runs/<key>`` was already complete (the new copy is
    discarded). If ``write`` raises, the temporary folder is removed and the error propagates.
    """
    runs = Path(runs_dir)
    final = runs / key
    if final.exists():
        return "exists"
    tmp = runs / f"{TMP_PREFIX}{key}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        write(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if final.exists():  # someone else completed it first
                shutil.rmtree(tmp, ignore_errors=True)
                return "exists"
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return "written"


def _flat(v: Any) -> Any:
    if isinstance(v, (list, dict, tuple)):
        return json.dumps(v, sort_keys=True)
    return v


def run_row(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The runs.parquet row of one run directory: coordinates (``sweep.json``), run options,
    ``stats["system"]`` metrics (as named there), ``stats["counts"]`` as ``count_<name>`` and
    ``power_label``. Never includes wall times (so the table is identical however it was produced).
    """
    d = Path(run_dir)
    sw = json.loads((d / SWEEP_JSON).read_text())
    stats = json.loads((d / "stats.json").read_text())
    cfg = sw.get("config", {})
    pert = cfg.get("perturbation") or {}
    row: dict[str, Any] = {"key": sw["key"], "dataset": sw["dataset"], "window": sw["window"]}
    for k, v in sw.get("axes", {}).items():
        row[k] = _flat(v)
    row["seed"] = sw["seed"]
    row.update({
        "trace": cfg.get("data"), "system": cfg.get("system"), "start": cfg.get("start"),
        "duration": cfg.get("duration"), "runtime_sigma": pert.get("runtime_sigma"),
        "submit_jitter_s": pert.get("submit_jitter_s"), "workload_checksum": sw.get("workload_checksum"),
        "power_label": stats.get("power_label"),
    })
    for k, v in (stats.get("system") or {}).items():
        row[k] = v
    for k, v in (stats.get("counts") or {}).items():
        row[COUNT_PREFIX + k] = v
    return row


class ResultStore:
    """An output folder (see the module docstring). ``root`` is created when missing."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.runs_dir = self.root / RUNS_DIR
        self.failed_dir = self.root / FAILED_DIR
        self._lock_fh = None

    # ------------------------------------------------------------------ lifecycle
    def create(self) -> "ResultStore":
        """Create ``root``, ``runs/`` and ``failed/``. Returns self."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.failed_dir.mkdir(parents=True, exist_ok=True)
        return self

    @contextlib.contextmanager
    def locked(self):
        """Hold an exclusive ``flock`` on ``root/.lock`` (released even on kill -9).

        Raises StoreBusyError when another process holds it (two sweeps must not share a folder).
        """
        self.create()
        fh = open(self.root / ".lock", "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            who = fh.read().strip()
            fh.close()
            raise StoreBusyError(f"{self.root}: another sweep is writing here ({who or 'unknown process'})")
        fh.seek(0)
        fh.truncate()
        fh.write(f"{socket.gethostname()}:{os.getpid()}\n")
        fh.flush()
        try:
            yield self
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()

    def clean_tmp(self) -> int:
        """Remove leftover temporary run folders/files of a killed sweep; returns how many.
        Call only while holding :meth:`locked`."""
        leftovers = []
        for base in (self.root, self.runs_dir, self.failed_dir):
            if base.exists():
                leftovers += [p for p in base.iterdir() if p.name.startswith(TMP_PREFIX)]
        if self.failed_dir.exists():  # half-written error.json files
            leftovers += list(self.failed_dir.glob(f"*/{TMP_PREFIX}*"))
        for p in leftovers:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        return len(leftovers)

    # ------------------------------------------------------------------ runs
    def done_keys(self) -> set[str]:
        """Keys of the complete runs (``runs/<key>`` folders)."""
        if not self.runs_dir.exists():
            return set()
        return {p.name for p in self.runs_dir.iterdir() if p.is_dir() and not p.name.startswith(TMP_PREFIX)}

    def is_done(self, key: str) -> bool:
        """True when ``runs/<key>/`` exists (complete: folders appear only by atomic rename)."""
        return (self.runs_dir / key).is_dir()

    def run_dir(self, key: str) -> Path:
        """Path of ``runs/<key>/`` (whether or not it exists)."""
        return self.runs_dir / key

    # ------------------------------------------------------------------ failures
    def record_failure(self, key: str, error: str, traceback: str | None, attempt: int,
                       info: dict[str, Any] | None = None, worker: str = "") -> Path:
        """Append an attempt to ``failed/<key>/error.json`` (written atomically); returns its path.

        The file holds ``key``, the last ``error`` and ``traceback``, ``attempts`` (list of
        ``{attempt, error, traceback, worker, time}``) and ``info`` (the run's coordinates/config).
        """
        d = self.failed_dir / key
        d.mkdir(parents=True, exist_ok=True)
        path = d / "error.json"
        doc = {"key": key, "attempts": []}
        if path.exists():
            try:
                doc = json.loads(path.read_text())
            except ValueError:
                pass
        doc.setdefault("attempts", []).append({
            "attempt": attempt, "error": error, "traceback": traceback, "worker": worker,
            "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        })
        doc.update({"key": key, "error": error, "traceback": traceback, "info": info or doc.get("info")})
        _atomic_write_text(path, dump_json(doc))
        return path

    def clear_failure(self, key: str) -> None:
        """Forget a failure record (after the run succeeded)."""
        shutil.rmtree(self.failed_dir / key, ignore_errors=True)

    def failed_keys(self) -> set[str]:
        """Keys with a failure record whose run is not (yet) complete."""
        if not self.failed_dir.exists():
            return set()
        return {p.name for p in self.failed_dir.iterdir()
                if (p / "error.json").exists() and not self.is_done(p.name)}

    def failure(self, key: str) -> dict[str, Any]:
        """The parsed ``failed/<key>/error.json``. Raises FileNotFoundError when there is none."""
        return json.loads((self.failed_dir / key / "error.json").read_text())

    # ------------------------------------------------------------------ table
    def build_table(self, keys: Iterable[str] | None = None) -> pd.DataFrame:
        """runs.parquet's content from the run folders (``keys``: only these, when given; missing
        ones are skipped, and so are folders without sweep.json / stats.json, with a warning).
        One row per run, sorted by key; metrics float64, counts Int64."""
        done = self.done_keys()
        wanted = sorted(done if keys is None else set(keys) & done)
        rows = []
        for k in wanted:
            try:
                rows.append(run_row(self.runs_dir / k))
            except (OSError, ValueError, KeyError) as exc:  # not a sweep run folder (copied in by hand?)
                warnings.warn(f"{self.runs_dir / k}: skipped, not a complete sweep run ({exc})", RuntimeWarning,
                              stacklevel=2)
        df = pd.DataFrame(rows)
        if df.empty:
            return pd.DataFrame({"key": pd.Series(dtype="object")})
        from twinsweep.core.metrics import METRICS

        for c in df.columns:
            if c in METRICS:
                df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
            elif c.startswith(COUNT_PREFIX):
                df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
        for c in ("start", "duration", "submit_jitter_s", "seed"):
            if c in df.columns:
                df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
        return df.sort_values("key", kind="mergesort").reset_index(drop=True)

    def write_table(self, keys: Iterable[str] | None = None) -> Path:
        """Rebuild ``runs.parquet`` from the run folders (atomically); returns its path."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        df = self.build_table(keys)
        path = self.root / TABLE
        tmp = self.root / f"{TMP_PREFIX}{TABLE}-{uuid.uuid4().hex[:8]}"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)
        os.replace(tmp, path)
        return path

    def read_table(self) -> pd.DataFrame:
        """``runs.parquet`` as a DataFrame. Raises FileNotFoundError when it was never built."""
        return pd.read_parquet(self.root / TABLE)

    # ------------------------------------------------------------------ metadata
    def write_json(self, name: str, obj: Any) -> Path:
        """Write ``root/name`` atomically as deterministic JSON."""
        path = self.root / name
        _atomic_write_text(path, dump_json(obj))
        return path

    def read_json(self, name: str) -> Any:
        """Parse ``root/name``. Raises FileNotFoundError / ValueError."""
        return json.loads((self.root / name).read_text())
