"""The result store of a sweep (DESIGN.md §6): append-only files, safe to kill at any moment.

Layout of an output folder::

    study.toml / study.json   the spec as given / as resolved (study.json names the study the
                              folder belongs to: a spec of another study is refused)
    datasets.json             provenance of every trace and the system (power model) it ran on
    plan.csv                  every run of the study: key, dataset, window, axes, seed
    runs/<key>/               one complete run: jobs.parquet, timeline.parquet, stats.json,
                              manifest.json (core.run.write_run) + sweep.json (grid coordinates)
    runs/.tmp-<key>-…/        a run being written (renamed to runs/<key> when complete)
    failed/<key>/error.json   a run that raised: error, traceback, attempts (removed on success)
    quarantine/<key>-<time>/  a run folder that could not be read completely, moved aside (with
                              reason.txt) so that it runs again; nothing in it is read any more
    runs.parquet              one row per run, sorted by key, rebuilt from runs/*/; its schema
                              metadata says whether it covers the whole plan (:meth:`ResultStore.table_info`)
    .cache/                   the local backend's dataset file (reused by the next sweep)
    .lock                     held (flock) by the sweep writing here; removed when it ends

Every file is written atomically and flushed to the disk first (:mod:`core.atomic`); a run
directory exists under its final name only once every file in it is written and synced (rename is
atomic on POSIX filesystems). "Done" = ``runs/<key>`` exists *and* :func:`check_run_dir` can read
it completely (files present, JSON parses, parquet footers and row counts consistent, manifest of
the current schema); a run folder that fails the check is moved to ``quarantine/`` with one warning
line and counted as missing, so a damaged run is run again instead of silently dropping out of the
table. Leftover temporary files of a killed sweep are removed at the next start: only twinsweep's
own (``runs/.tmp-*``, ``*.twinsweep-tmp-*``), never a file of the user's.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import math
import os
import re
import shutil
import socket
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from twinsweep.core.atomic import (TMP_MARK, atomic_write, atomic_write_text, commit_folder, disk_full_error,
                                     fsync_path, is_disk_full)
from twinsweep.core.errors import ConfigError, TwinError

RUNS_DIR = "runs"
FAILED_DIR = "failed"
QUARANTINE_DIR = "quarantine"
CACHE_DIR = ".cache"
TABLE = "runs.parquet"
SWEEP_JSON = "sweep.json"
TMP_PREFIX = ".tmp-"
#: Files every complete run directory holds.
RUN_DIR_FILES = ("jobs.parquet", "timeline.parquet", "stats.json", "manifest.json", SWEEP_JSON)
#: Key of runs.parquet's schema metadata describing the table (:meth:`ResultStore.table_info`).
TABLE_META_KEY = b"twinsweep"

#: Count fields of stats.json copied into runs.parquet as ``count_<name>``.
COUNT_PREFIX = "count_"

# temporary files an older version wrote in the results folder's root (cleaned like ours)
_LEGACY_ROOT_TMP = re.compile(r"^\.tmp-(runs\.parquet|study\.json|datasets\.json|plan\.csv|study\.toml)-[0-9a-f]+$")


class StoreBusyError(TwinError):
    """Another live process holds the output folder's lock."""


def dump_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, 1-space indent, trailing newline)."""
    return json.dumps(obj, sort_keys=True, indent=1, default=str) + "\n"


def run_is_committed(runs_dir: str | os.PathLike, key: str) -> bool:
    """True when ``runs_dir/<key>/`` exists (:func:`commit_run_dir` made it complete): a worker's
    check, which knows the store's ``runs/`` folder (a payload's ``runs_dir``) but not the store."""
    return (Path(runs_dir) / key).is_dir()


def commit_run_dir(runs_dir: str | os.PathLike, key: str, write: Callable[[Path], None]) -> str:
    """Write one run atomically: ``write(tmp_dir)`` fills a fresh ``runs/.tmp-<key>-…`` folder
    (its files written *staged*: ``core.atomic.atomic_write(..., staged=True)``, no rename or
    fsync of their own), which is then committed by :func:`core.atomic.commit_folder`: every file
    and the folder flushed to the disk (concurrently), the folder renamed to ``runs/<key>``, the
    runs folder flushed.

    Returns ``"written"``, or ``"exists"`` when ``runs/<key>`` was already complete (the new copy is
    discarded). If ``write`` raises, the temporary folder is removed and the error propagates (a
    full disk as :class:`core.errors.DiskFullError`).
    """
    runs = Path(runs_dir)
    final = runs / key
    if final.exists():
        return "exists"
    tmp = runs / f"{TMP_PREFIX}{key}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir(parents=True)
        write(tmp)
        if not commit_folder(tmp, final):  # someone else completed it first
            shutil.rmtree(tmp, ignore_errors=True)
            return "exists"
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if is_disk_full(exc):
            raise disk_full_error(final, exc) from exc
        raise
    return "written"


def _parquet_problem(path: Path) -> tuple[str | None, int]:
    """``(problem or None, rows)`` of a parquet file: the footer must parse, the row groups must
    add up to the footer's row count and every column chunk must lie inside the file."""
    import pyarrow.parquet as pq

    try:
        size = path.stat().st_size
        md = pq.read_metadata(path)
    except Exception as exc:  # noqa: BLE001 - ArrowInvalid, OSError ...: unreadable either way
        return f"{path.name}: not a readable parquet file ({type(exc).__name__}: {exc})", 0
    rows = 0
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        rows += rg.num_rows
        for j in range(rg.num_columns):
            c = rg.column(j)
            first = c.dictionary_page_offset if c.has_dictionary_page and c.dictionary_page_offset else c.data_page_offset
            if first is None or first < 0 or first + c.total_compressed_size > size:
                return f"{path.name}: column chunk {c.path_in_schema!r} lies outside the file (truncated?)", rows
    if rows != md.num_rows:
        return f"{path.name}: row groups hold {rows} rows, the footer says {md.num_rows}", rows
    return None, md.num_rows


#: Keys every version's stats.json ``system`` table holds (a metric added later may be absent
#: from an earlier run's, which is still complete): what :func:`check_run_dir` asks of it.
_STATS_ALWAYS = ("wait_mean_s", "bsld_mean", "utilization", "facility_energy_j")


def check_run_dir(run_dir: str | os.PathLike) -> str | None:
    """None when a run directory can be read completely, else one line saying what is wrong.

    Checks: every file of :data:`RUN_DIR_FILES` is present; stats.json, manifest.json and
    sweep.json parse as JSON objects; sweep.json's key is the folder's name; manifest.json has the
    current ``schema_version`` (:data:`core.run.MANIFEST_SCHEMA_VERSION`; older outputs have other
    column meanings); both parquet footers parse, their row groups add up and lie inside the file;
    jobs.parquet has ``stats.counts.jobs_in_window`` rows and timeline.parquet
    ``ceil((window end − start) / sample_period)`` rows; stats.json holds ``counts.jobs_in_window``
    and the system metrics every version writes (:data:`_STATS_ALWAYS`).
    """
    from twinsweep.core.run import MANIFEST_SCHEMA_VERSION

    d = Path(run_dir)
    missing = [f for f in RUN_DIR_FILES if not (d / f).is_file()]
    if missing:
        return f"missing {', '.join(missing)}"
    docs = {}
    for name in ("stats.json", "manifest.json", SWEEP_JSON):
        try:
            doc = json.loads((d / name).read_text())
        except (OSError, ValueError) as exc:
            return f"{name}: cannot be read as JSON ({exc})"
        if not isinstance(doc, dict):
            return f"{name}: not a JSON object"
        docs[name] = doc
    if docs[SWEEP_JSON].get("key") != d.name:
        return f"{SWEEP_JSON}: key {docs[SWEEP_JSON].get('key')!r} is not the folder's name"
    man = docs["manifest.json"]
    sv = man.get("schema_version")
    if not isinstance(sv, int) or sv < MANIFEST_SCHEMA_VERSION:
        return (f"manifest.json: schema_version {sv!r} is older than this version's {MANIFEST_SCHEMA_VERSION} "
                "(written by an earlier twinsweep)")
    problem, job_rows = _parquet_problem(d / "jobs.parquet")
    if problem:
        return problem
    problem, tl_rows = _parquet_problem(d / "timeline.parquet")
    if problem:
        return problem
    stats = docs["stats.json"]
    want_jobs = (stats.get("counts") or {}).get("jobs_in_window") if isinstance(stats.get("counts"), dict) else None
    system = stats.get("system")
    lacking = [k for k in _STATS_ALWAYS if not isinstance(system, dict) or k not in system]
    if not isinstance(want_jobs, int) or lacking:  # valid JSON, not a run's statistics (e.g. {"system": {}})
        what = "counts.jobs_in_window" if not isinstance(want_jobs, int) else f"system.{lacking[0]}"
        return f"stats.json: no {what} (not the statistics of a complete run)"
    if want_jobs != job_rows:
        return f"jobs.parquet: {job_rows} rows, stats.json counts {want_jobs} jobs in the window"
    win, period = man.get("window") or {}, (man.get("config") or {}).get("sample_period")
    if isinstance(win.get("start"), int) and isinstance(win.get("end"), int) and isinstance(period, int) and period > 0:
        want_bins = math.ceil((win["end"] - win["start"]) / period)
        if want_bins != tl_rows:
            return f"timeline.parquet: {tl_rows} rows, the window and sample period give {want_bins}"
    return None


def _flat(v: Any) -> Any:
    if isinstance(v, (list, dict, tuple)):
        return json.dumps(v, sort_keys=True)
    return v


#: Columns of runs.parquet taken from the top level of stats.json, with their Arrow type (the
#: window's place in its trace, :mod:`core.tracespan`): ``window_past_last_submit`` (bool: the
#: window extends past the trace's last submission; the report marks such blocks) and
#: ``trace_last_submit_s`` (int s from the trace epoch). None for runs written before they existed.
WINDOW_COLUMNS = {"window_past_last_submit": "bool", "trace_last_submit_s": "int64"}


def run_row(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The runs.parquet row of one run directory: coordinates (``sweep.json``), run options,
    ``stats["system"]`` metrics (as named there), ``stats["counts"]`` as ``count_<name>``,
    ``power_label`` and :data:`WINDOW_COLUMNS`. Never includes wall times (so the table is
    identical however it was produced).
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
    for k in WINDOW_COLUMNS:
        row[k] = stats.get(k)
    for k, v in (stats.get("system") or {}).items():
        row[k] = v
    for k, v in (stats.get("counts") or {}).items():
        row[COUNT_PREFIX + k] = v
    return row


def _uniform_column(values: pd.Series) -> pd.Series:
    """An object column with one Python type (str, bool or number) is returned as is; a column that
    mixes them (a grid axis such as ``wetbulb = [20.0, "wb.csv"]``) becomes text (``"20.0"``,
    ``"wb.csv"``), so that the table has one Arrow type per column. Numbers mixing int and float
    become float."""
    kinds = set()
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        kinds.add("bool" if isinstance(v, bool) else "num" if isinstance(v, (int, float)) else "str")
    if len(kinds) <= 1:
        if kinds == {"num"}:
            return pd.to_numeric(values)
        return values
    return values.map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))


def table_schema(df: pd.DataFrame):
    """The explicit Arrow schema of runs.parquet for ``df``: float64 metrics, int64 counts and
    integers, bool flags, and string for every text column (mixed-type grid axes included, see
    :func:`_uniform_column`), so that building the table never depends on Arrow's inference."""
    import pyarrow as pa

    fields = []
    fixed = {"bool": pa.bool_(), "int64": pa.int64()}
    for c in df.columns:
        dt = df[c].dtype
        if c in WINDOW_COLUMNS:
            t = fixed[WINDOW_COLUMNS[c]]
        elif pd.api.types.is_bool_dtype(dt):
            t = pa.bool_()
        elif pd.api.types.is_integer_dtype(dt):
            t = pa.int64()
        elif pd.api.types.is_float_dtype(dt):
            t = pa.float64()
        else:
            vals = [v for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))]
            t = pa.bool_() if vals and all(isinstance(v, bool) for v in vals) else pa.string()
        fields.append(pa.field(str(c), t))
    return pa.schema(fields)


class ResultStore:
    """An output folder (see the module docstring). ``root`` is created when missing.

    ``log``: called with one-line warnings (a damaged run moved to quarantine ...); default
    :func:`warnings.warn`.
    """

    def __init__(self, root: str | os.PathLike, log: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.runs_dir = self.root / RUNS_DIR
        self.failed_dir = self.root / FAILED_DIR
        self.quarantine_dir = self.root / QUARANTINE_DIR
        self.cache_dir = self.root / CACHE_DIR
        self._log = log
        self._lock_fh = None

    def warn(self, msg: str) -> None:
        """Report a one-line warning through ``log`` (or :func:`warnings.warn`)."""
        if self._log is not None:
            self._log(msg)
        else:
            warnings.warn(msg, RuntimeWarning, stacklevel=3)

    # ------------------------------------------------------------------ lifecycle
    def create(self) -> "ResultStore":
        """Create ``root``, ``runs/`` and ``failed/``. Returns self. Raises ConfigError naming the
        folder when ``root`` is a file or cannot be created."""
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"output folder {self.root} is a file, not a folder; choose another --out")
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            self.failed_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full_error(self.runs_dir, exc) from exc
            raise ConfigError(f"output folder {self.root}: cannot create it ({exc.strerror or exc})") from exc
        return self

    @contextlib.contextmanager
    def locked(self):
        """Hold an exclusive ``flock`` on ``root/.lock`` (released even on kill -9); the file is
        removed when the block ends normally or by an exception, so no stale ``.lock`` stays.

        Raises StoreBusyError when another process holds it (two sweeps must not share a folder).
        """
        self.create()
        path = self.root / ".lock"
        while True:
            fh = open(path, "a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.seek(0)
                who = fh.read().strip()
                fh.close()
                raise StoreBusyError(f"{self.root}: another sweep is writing here ({who or 'unknown process'})")
            try:  # the holder before us may have removed the file after we opened it: lock the live one
                same = os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()
        fh.seek(0)
        fh.truncate()
        fh.write(f"{socket.gethostname()}:{os.getpid()}\n")
        fh.flush()
        try:
            yield self
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()

    def clean_tmp(self) -> int:
        """Remove leftover temporary run folders/files of a killed sweep; returns how many.
        Only twinsweep's own: ``runs/.tmp-*``, ``failed/*/`` temporaries and, in the folder itself,
        files marked ``.twinsweep-tmp-`` (and the exact names an earlier version used). Call only
        while holding :meth:`locked`."""
        leftovers = []
        if self.runs_dir.exists():
            leftovers += [p for p in self.runs_dir.iterdir() if p.name.startswith(TMP_PREFIX) or TMP_MARK in p.name]
        if self.root.exists():
            leftovers += [p for p in self.root.iterdir() if TMP_MARK in p.name or _LEGACY_ROOT_TMP.match(p.name)]
        if self.failed_dir.exists():  # half-written error.json files
            leftovers += [p for p in self.failed_dir.glob("*/*")
                          if p.name.startswith(TMP_PREFIX) or TMP_MARK in p.name]
        for base in (self.cache_dir, self.root / "report"):
            if base.exists():
                leftovers += [p for p in base.iterdir() if TMP_MARK in p.name]
        for p in leftovers:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        return len(leftovers)

    # ------------------------------------------------------------------ runs
    def done_keys(self) -> set[str]:
        """Keys with a ``runs/<key>`` folder (complete by the atomic rename; whether its files can
        still be read is :meth:`check_runs`'s business)."""
        if not self.runs_dir.exists():
            return set()
        return {p.name for p in self.runs_dir.iterdir()
                if p.is_dir() and not p.name.startswith(TMP_PREFIX) and TMP_MARK not in p.name}

    def is_done(self, key: str) -> bool:
        """True when ``runs/<key>/`` exists (complete: folders appear only by atomic rename)."""
        return run_is_committed(self.runs_dir, key)

    def run_dir(self, key: str) -> Path:
        """Path of ``runs/<key>/`` (whether or not it exists)."""
        return self.runs_dir / key

    def run_file(self, key: str, name: str) -> Path:
        """Path of the file ``name`` (e.g. ``timeline.parquet``) of run ``key``: ``runs/<key>/<name>``,
        whether or not it exists. Raises ValueError when ``key`` or ``name`` is not a plain file name
        (empty, ``.``/``..`` or holding a path separator), so that no path outside the run's folder is
        ever formed."""
        for what, part in (("run key", key), ("file name", name)):
            if not part or part in (".", "..") or "/" in part or os.sep in part:
                raise ValueError(f"{what} must be a plain name, got {part!r}")
        return self.runs_dir / key / name


    def read_run_json(self, key: str, name: str) -> Any:
        """Parse a JSON file of run ``key`` (``stats.json``, ``manifest.json``, ``sweep.json``).
        Raises FileNotFoundError / ValueError naming the file."""
        path = self.run_file(key, name)
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc

    def read_run_table(self, key: str, name: str, columns: list[str] | None = None) -> pd.DataFrame:
        """A parquet table of run ``key`` (``jobs.parquet``, ``timeline.parquet``), only
        ``columns`` when given. Raises FileNotFoundError / the reader's error."""
        return pd.read_parquet(self.run_file(key, name), columns=columns)

    def check_runs(self, keys: Iterable[str] | None = None) -> tuple[set[str], dict[str, str]]:
        """``(readable, damaged)`` among the run folders (``keys``: only these): ``damaged`` maps a
        key to what :func:`check_run_dir` found wrong. Reads only; moves nothing."""
        done = self.done_keys()
        wanted = done if keys is None else set(keys) & done
        good, bad = set(), {}
        for k in sorted(wanted):
            problem = check_run_dir(self.runs_dir / k)
            if problem is None:
                good.add(k)
            else:
                bad[k] = problem
        return good, bad

    def quarantine(self, key: str, reason: str) -> Path:
        """Move ``runs/<key>`` to ``quarantine/<key>-<UTC time>/`` (with ``reason.txt``) and warn in
        one line; the run then counts as missing and runs again. Call while holding :meth:`locked`.
        Returns the new path."""
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        dest = self.quarantine_dir / f"{key}-{stamp}"
        n = 1
        while dest.exists():
            n += 1
            dest = self.quarantine_dir / f"{key}-{stamp}-{n}"
        os.rename(self.runs_dir / key, dest)
        try:
            (dest / "reason.txt").write_text(reason + "\n")
        except OSError:
            pass
        self.warn(f"run {key} cannot be read completely ({reason}): moved to {dest}; it counts as missing and "
                  "runs again")
        return dest

    def usable_keys(self, keys: Iterable[str] | None = None) -> set[str]:
        """The run folders that can be read completely; every damaged one among ``keys`` (all when
        None) is moved to quarantine with one warning line (:meth:`quarantine`). Call while holding
        :meth:`locked`."""
        good, bad = self.check_runs(keys)
        for k, reason in sorted(bad.items()):
            self.quarantine(k, reason)
        return good

    # ------------------------------------------------------------------ failures
    def record_failure(self, key: str, error: str, traceback: str | None, attempt: int,
                       info: dict[str, Any] | None = None, worker: str = "") -> Path:
        """Append an attempt to ``failed/<key>/error.json`` (written atomically); returns its path.

        The file holds ``key``, the last ``error`` and ``traceback``, ``attempts`` (list of
        ``{attempt, error, traceback, worker, time}``) and ``info`` (the run's coordinates/config).
        Raises DiskFullError when the disk is full.
        """
        d = self.failed_dir / key
        path = d / "error.json"
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full_error(path, exc) from exc
            raise
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
        atomic_write_text(path, dump_json(doc))
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

    def failure_dir(self, key: str) -> Path:
        """The folder of run ``key``'s failure record (``failed/<key>/``, whether or not it exists)."""
        return self.failed_dir / key

    def failures(self, keys: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """``{key: error.json content}`` of the runs that failed and are not (yet) complete (only
        ``keys`` when given), sorted by key; an unreadable record is left out (the run is retried
        anyway)."""
        want = self.failed_keys() if keys is None else self.failed_keys() & set(keys)
        out = {}
        for k in sorted(want):
            try:
                out[k] = self.failure(k)
            except (OSError, ValueError):
                continue
        return out

    # ------------------------------------------------------------------ table
    def build_table(self, keys: Iterable[str] | None = None, quarantine: bool = False) -> pd.DataFrame:
        """runs.parquet's content from the run folders (``keys``: only these, when given; missing
        ones are skipped). A folder that cannot be read completely (:func:`check_run_dir`) never
        gives a row: with ``quarantine`` (the caller holds the lock) it is moved aside
        (:meth:`quarantine`), else skipped with a warning. One row per run, sorted by key; metrics
        float64, counts Int64, grid axes of mixed types as text."""
        good, bad = self.check_runs(keys)
        for k, reason in sorted(bad.items()):
            if quarantine:
                self.quarantine(k, reason)
            else:
                self.warn(f"run {k} cannot be read completely ({reason}): left out of the table")
        rows = []
        for k in sorted(good):
            try:
                rows.append(run_row(self.runs_dir / k))
            except (OSError, ValueError, KeyError) as exc:  # not a sweep run folder (copied in by hand?)
                self.warn(f"{self.runs_dir / k}: skipped, not a complete sweep run ({exc})")
        df = pd.DataFrame(rows)
        if df.empty:
            return pd.DataFrame({"key": pd.Series(dtype="object")})
        from twinsweep.core.metrics import METRICS

        for c in df.columns:
            if c in METRICS:
                df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
            elif c.startswith(COUNT_PREFIX):
                df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
            elif df[c].dtype == object:
                df[c] = _uniform_column(df[c])
        for c in ("start", "duration", "submit_jitter_s", "seed", "trace_last_submit_s"):
            if c in df.columns:
                df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
        return df.sort_values("key", kind="mergesort").reset_index(drop=True)

    def write_table(self, keys: Iterable[str] | None = None, interrupted: bool = False,
                    quarantine: bool = True) -> Path:
        """Rebuild ``runs.parquet`` from the run folders (atomically, with an explicit Arrow
        schema, :func:`table_schema`); returns its path. ``keys``: the plan (its size is recorded);
        ``interrupted``: the sweep stopped early (Ctrl-C, disk full). The schema metadata records
        ``{"planned", "runs", "complete", "interrupted"}`` (:meth:`table_info`). With ``quarantine``
        (default; the caller holds the lock) unreadable run folders are moved aside."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        keys = None if keys is None else list(keys)
        df = self.build_table(keys, quarantine=quarantine)
        planned = len(set(keys)) if keys is not None else len(df)
        n = int(df["key"].notna().sum()) if "key" in df.columns else 0
        info = {"planned": planned, "runs": n, "complete": n == planned and not interrupted,
                "interrupted": bool(interrupted)}
        table = pa.Table.from_pandas(df, schema=table_schema(df), preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[TABLE_META_KEY] = json.dumps(info, sort_keys=True).encode()
        table = table.replace_schema_metadata(meta)
        return atomic_write(self.root / TABLE, lambda p: pq.write_table(table, p))

    def table_info(self) -> dict[str, Any] | None:
        """What runs.parquet covers: ``{"planned", "runs", "complete", "interrupted"}`` from its
        schema metadata; None when there is no table (or it predates this metadata)."""
        import pyarrow.parquet as pq

        try:
            meta = pq.read_schema(self.root / TABLE).metadata or {}
            return json.loads(meta[TABLE_META_KEY])
        except Exception:  # noqa: BLE001 - absent, unreadable or without the metadata: unknown
            return None

    @property
    def table_path(self) -> Path:
        """Path of ``runs.parquet`` (whether or not it exists)."""
        return self.root / TABLE

    def read_table(self, columns: list[str] | None = None) -> pd.DataFrame:
        """``runs.parquet`` as a DataFrame (only ``columns`` when given). Raises FileNotFoundError
        naming the folder when it was never built."""
        if not self.table_path.exists():
            raise FileNotFoundError(f"{self.root}: no sweep results here (missing {TABLE}); run `twinsweep sweep` first")
        return pd.read_parquet(self.table_path, columns=columns)

    def read_plan(self, columns: list[str] | None = None) -> pd.DataFrame | None:
        """``plan.csv`` (every planned run: key, dataset, window, axes, seed, in the spec's order) as
        a DataFrame of strings, every value as written (no NaN conversion: an axis value ``"none"``
        or ``""`` stays a string); only ``columns`` when given. None when the folder has no plan (a
        results folder of an older version, or one whose sweep was refused before planning).
        Raises ValueError (pandas) when a named column is missing."""
        path = self.root / "plan.csv"
        if not path.exists():
            return None
        return pd.read_csv(path, dtype=str, keep_default_na=False, usecols=columns)

    def has(self, name: str) -> bool:
        """True when the results folder holds ``name`` (``study.json``, ``plan.csv``, ...)."""
        return (self.root / name).exists()

    # ------------------------------------------------------------------ metadata
    def write_json(self, name: str, obj: Any) -> Path:
        """Write ``root/name`` atomically as deterministic JSON."""
        path = self.root / name
        atomic_write_text(path, dump_json(obj))
        return path

    def write_text(self, name: str, text: str) -> Path:
        """Write ``root/name`` atomically."""
        return atomic_write_text(self.root / name, text)

    def read_json(self, name: str) -> Any:
        """Parse ``root/name``. Raises FileNotFoundError / ValueError."""
        return json.loads((self.root / name).read_text())
