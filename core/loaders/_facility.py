"""Shared helpers of the facility-dataset loaders (PM100, Adastra, F-DATA, LAST, sacct, Eurora …).

* :func:`parquet_columns` / :func:`read_parquet_bytes`: parquet files arrive as a
  :class:`~core.loaders.TraceText` (the bytes of the file); detection reads only the footer.
* :func:`to_epoch_seconds`: timestamps (pandas datetimes, tz-aware or naive, or text) → int64
  Unix seconds; naive values are local times of a given IANA zone, resolved with
  :mod:`zoneinfo` (ambiguous times of a DST fall-back: the first occurrence unless told
  otherwise; non-existent times of a spring-forward gap: shifted forward by the gap).
* :func:`jobs_frame`: a Workload jobs table from column arrays, extra columns kept.
* :func:`env_timezone`: the ``TWINSWEEP_TZ`` override of a loader's default zone.
* :func:`resolve_timezone`: the zone of a trace's local times, by precedence: the command line
  (``twinsweep run --tz``) or a study's dataset ``tz`` key, a zone the file states (sacct's
  ``# tz:`` line), the system file's ``timezone``, ``$TWINSWEEP_TZ``, the loader's documented
  default for its dataset, UTC.
* :func:`check_elapsed`: count (and describe in one warning) the jobs whose ``End − Start``
  differs from their recorded elapsed time, the sign of a wrong time zone or a DST change.
* :func:`parse_naive_timestamp`: one strict ``YYYY-MM-DD[T ]HH:MM:SS`` wall-clock time (sacct,
  Eurora), a ValueError naming the field for anything else (``2014-13-45 …``, ``2024-02-30 …``).
* :func:`read_csv_rows`: a CSV table with the 1-based file line of every row; a row whose field
  count differs from the header's (a file cut mid-row) is an error naming its line, or skipped
  under ``lenient``.
* :class:`BadRows`: per-row problems found by column checks of a table loader (CSV or parquet):
  the first (in file order) raises TraceFormatError naming its line, or, under ``lenient``, every
  bad row is skipped and listed in ``Workload.skipped_lines``.
* :func:`numbers_checked` / :func:`epoch_seconds_checked`: a column as numbers / Unix seconds,
  with the mask of the rows whose value is present but not a number / not a time;
  :func:`job_times_checked`: a job table's submit, start and end times so checked, and in order.
"""

from __future__ import annotations

import csv
import io
import os
import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..errors import ConfigError, TraceFormatError
from ..workload import WORKLOAD_COLUMNS
from ._registry import PARQUET_MAGIC, TraceText
from ._swfcore import obj_array

#: Environment variable naming the IANA time zone of naive local timestamps (overrides the
#: loader's default zone).
TZ_ENV = "TWINSWEEP_TZ"


def env_timezone(default: str | None) -> str | None:
    """``$TWINSWEEP_TZ`` when set, else ``default``."""
    v = os.environ.get(TZ_ENV, "").strip()
    return v or default


def resolve_timezone(trace: TraceText, file_zone: str | None = None, default: str | None = None) -> tuple[str, str]:
    """``(zone name, where it came from)`` of a trace's local wall-clock times.

    Precedence: ``trace.tz`` (command line / spec: ``"requested"``), ``file_zone`` (the file's own
    statement: ``"file"``), ``trace.system_tz`` (``"system file"``), ``$TWINSWEEP_TZ``
    (``"$TWINSWEEP_TZ"``), ``default`` (the loader's documented zone of its dataset: ``"loader
    default"``), else ``"UTC"`` (``"default"``). Raises ConfigError for an unknown zone name.
    """
    for name, where in ((getattr(trace, "tz", None), "requested"), (file_zone, "file"),
                        (getattr(trace, "system_tz", None), "system file"), (env_timezone(None), f"${TZ_ENV}"),
                        (default, "loader default")):
        if name:
            zone(name)
            return str(name), where
    return "UTC", "default"


#: Largest |End − Start − elapsed| (s) not reported by :func:`check_elapsed` (rounding of the sources).
ELAPSED_TOLERANCE_S = 1


def check_elapsed(path: str, job_ids, start, end, elapsed, tz_name: str, tz_where: str) -> tuple[int, str | None]:
    """Jobs whose recorded ``End − Start`` differs from their recorded elapsed time by more than
    :data:`ELAPSED_TOLERANCE_S`: ``(count, one warning line or None)``.

    ``start``, ``end`` (Unix s or s since the epoch) and ``elapsed`` (s): float arrays, NaN where
    unknown; only jobs with all three are compared. A difference of whole hours is what a wrong time
    zone gives across a DST change (or a job suspended for that long: Slurm's ``Elapsed`` leaves
    suspended time out), so the warning names the zone used and where it came from.
    """
    s, e, el = (np.asarray(x, dtype="float64") for x in (start, end, elapsed))
    d = e - s - el
    bad = np.isfinite(d) & (np.abs(d) > ELAPSED_TOLERANCE_S)
    n = int(bad.sum())
    if not n:
        return 0, None
    i = int(np.flatnonzero(bad)[0])
    hours = bool(np.all(np.isclose(np.mod(np.abs(d[bad]), 3600.0), 0.0)))
    hint = (" (whole hours: the sign of local times read in the wrong zone across a DST change)" if hours else "")
    msg = (f"{path}: {n:,} job(s) have End − Start different from their recorded elapsed time, e.g. job "
           f"{list(job_ids)[i]}: {int(e[i] - s[i]):,} s against {int(el[i]):,} s{hint}; the times were read as "
           f"{tz_name} ({tz_where}); give the site's zone with --tz, a dataset's tz key or the system file's "
           "timezone if that is wrong")
    return n, msg


def zone(name: str | None):
    """ZoneInfo for ``name`` (None/"UTC" → UTC). Raises ConfigError for an unknown zone."""
    if name is None or str(name).upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"unknown time zone {name!r} (an IANA name such as 'Europe/Rome')") from exc


def is_parquet(trace: TraceText) -> bool:
    return trace.data[:4] == PARQUET_MAGIC and trace.data[-4:] == PARQUET_MAGIC


def parquet_columns(trace: TraceText) -> set[str]:
    """Column names of a parquet file held in ``trace`` (empty set when it is not parquet)."""
    if not is_parquet(trace):
        return set()
    cached = getattr(trace, "_pq_cols", None)
    if cached is not None:
        return cached
    try:
        cols = set(pq.read_schema(io.BytesIO(trace.data)).names)
    except Exception:  # noqa: BLE001 - not a readable parquet file: not ours
        cols = set()
    trace._pq_cols = cols  # type: ignore[attr-defined]
    return cols


def read_parquet_bytes(trace: TraceText, columns: list[str] | None = None) -> pd.DataFrame:
    """The parquet table in ``trace`` as a DataFrame (only ``columns`` that exist, when given)."""
    try:
        pf = pq.ParquetFile(io.BytesIO(trace.data))
        names = set(pf.schema_arrow.names)
        cols = None if columns is None else [c for c in columns if c in names]
        return pf.read(columns=cols).to_pandas()
    except Exception as exc:  # noqa: BLE001
        raise TraceFormatError(trace.path, None, f"cannot read parquet: {exc}") from exc


def _local_to_utc(naive: datetime, tz, fold: int = 0) -> tuple[float, bool]:
    """Unix time of a naive local datetime in ``tz`` (PEP 495 ``fold`` picks the occurrence of an
    ambiguous fall-back time: 0 = the first, 1 = the second). The second value is True when the
    wall time does not exist (spring-forward gap); it is then read with the offset before the
    transition (PEP 495), i.e. the instant the clock shows as the same distance past the jump."""
    if tz is timezone.utc:
        return naive.replace(tzinfo=timezone.utc).timestamp(), False
    t = naive.replace(tzinfo=tz, fold=fold).timestamp()
    back = datetime.fromtimestamp(t, tz).replace(tzinfo=None)
    return t, back != naive


def is_ambiguous(naive: datetime, tz) -> bool:
    """True when the naive local time occurs twice in ``tz`` (the DST fall-back hour)."""
    if tz is timezone.utc:
        return False
    t0, gap0 = _local_to_utc(naive, tz, 0)
    t1, gap1 = _local_to_utc(naive, tz, 1)
    return t0 != t1 and not gap0 and not gap1


def local_epoch(naive: datetime, tz, fold: int = 0) -> int:
    """Integer Unix seconds of a naive local time in ``tz`` (see :func:`_local_to_utc`)."""
    return int(round(_local_to_utc(naive, tz, fold)[0]))


def to_epoch_seconds(values, tz_name: str | None = "UTC") -> np.ndarray:
    """Float64 Unix seconds (NaN where missing) from datetimes, date-time strings or numbers.

    Tz-aware values (and strings with an offset) keep their own offset. Naive values are local
    times of ``tz_name`` (None = UTC), localised with pandas: an ambiguous fall-back time is
    taken as its first occurrence (DST), a non-existent spring-forward time is shifted forward
    to the end of the gap. Numbers are taken as Unix seconds already.
    """
    s = pd.Series(values)
    if len(s) == 0:
        return np.zeros(0, dtype="float64")
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        return pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        dt = s
    else:
        txt = s.astype("object").where(s.notna(), None)
        txt = txt.map(lambda v: None if v is None or str(v).strip().lower() in ("", "nat", "none", "unknown", "nan")
                      else str(v).strip())
        try:
            dt = pd.to_datetime(txt, errors="coerce", format="mixed")
        except (ValueError, TypeError):  # mixed offsets: convert each value to UTC
            dt = pd.to_datetime(txt, errors="coerce", format="mixed", utc=True)
    if not pd.api.types.is_datetime64_any_dtype(dt.dtype):  # object of mixed Timestamps
        dt = pd.to_datetime(dt, errors="coerce", utc=True)
    if getattr(dt.dt, "tz", None) is None:
        tz = zone(tz_name)
        key = "UTC" if tz is timezone.utc else tz
        dt = dt.dt.tz_localize(key, ambiguous=np.ones(len(dt), dtype=bool), nonexistent="shift_forward")
    utc = dt.dt.tz_convert("UTC").dt.tz_localize(None)
    ns = utc.to_numpy(dtype="datetime64[ns]").astype("int64").astype("float64")
    ns[utc.isna().to_numpy()] = np.nan
    return ns / 1e9


def int_or_na(x: np.ndarray) -> pd.arrays.IntegerArray:
    """Nullable Int64 from a float array (rounded; NaN → <NA>)."""
    x = np.asarray(x, dtype="float64")
    valid = np.isfinite(x)
    vals = np.where(valid, np.rint(np.where(valid, x, 0.0)), 0).astype(np.int64)
    return pd.arrays.IntegerArray(vals, ~valid)


def str_or_none(values) -> np.ndarray:
    """Object array of str (None where missing); integral floats print without ``.0``."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and not np.isfinite(v)) or v is pd.NA or v is pd.NaT:
            continue
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            out[i] = str(int(v))
        elif isinstance(v, (np.integer,)):
            out[i] = str(int(v))
        else:
            sv = str(v)
            out[i] = None if sv.lower() in ("nan", "none", "") else sv
    return out


def jobs_frame(cols: dict) -> pd.DataFrame:
    """Workload jobs table: every :data:`WORKLOAD_COLUMNS` entry with its dtype (missing ones
    filled with their "unknown" value), then the extra columns as given (object arrays stay
    ``object``). ``cols`` must hold ``job_id`` and ``submit_time``."""
    n = len(cols["submit_time"])
    out: dict[str, object] = {}
    for c, dt in WORKLOAD_COLUMNS.items():
        v = cols.get(c)
        if v is None:
            if c == "trace_index":
                v = np.arange(n, dtype=np.int64)
            elif dt == "Int64":
                v = pd.array([pd.NA] * n, dtype="Int64")
            elif dt == "float64":
                v = np.full(n, np.nan)
            else:
                v = np.empty(n, dtype=object)
        if dt == "object":
            out[c] = pd.Series(obj_array(v) if not isinstance(v, np.ndarray) or v.dtype != object else v,
                               dtype=object)
        elif dt == "Int64":
            out[c] = pd.array(v, dtype="Int64") if not isinstance(v, pd.arrays.IntegerArray) else v
        else:
            out[c] = np.asarray(v, dtype=dt)
    for c, v in cols.items():
        if c in out:
            continue
        if isinstance(v, np.ndarray) and v.dtype == object:
            out[c] = pd.Series(v, dtype=object)
        elif isinstance(v, list):
            out[c] = pd.Series(obj_array(v), dtype=object)
        else:
            out[c] = v
    return pd.DataFrame(out)


def status_from_slurm(state) -> str:
    """Workload status from a Slurm job state (``COMPLETED``, ``CANCELLED by 123``, ``TIMEOUT`` …).

    completed ← COMPLETED; cancelled ← CANCELLED*; failed ← FAILED, TIMEOUT, NODE_FAIL,
    OUT_OF_MEMORY, BOOT_FAIL, DEADLINE, PREEMPTED; running ← RUNNING, COMPLETING (still holding
    its nodes when the data was recorded); unknown otherwise (PENDING, REQUEUED, SUSPENDED, …).
    """
    if state is None:
        return "unknown"
    s = str(state).strip().upper()
    if not s:
        return "unknown"
    word = s.split()[0].rstrip("+")
    if word == "COMPLETED":
        return "completed"
    if word.startswith("CANCELLED") or word == "CA":
        return "cancelled"
    if word in ("FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "OOM", "BOOT_FAIL", "DEADLINE", "PREEMPTED",
                "F", "TO", "NF", "BF", "DL", "PR"):
        return "failed"
    if word in ("RUNNING", "COMPLETING", "R", "CG"):
        return "running"
    return "unknown"


def util_from_power(power_w: np.ndarray, units: float, idle_w: float, max_w: float) -> np.ndarray:
    """Utilisation in [0, 1] of ``units`` identical devices drawing ``power_w`` in total
    (linear model: ``P = units·(idle + u·(max − idle))``); NaN where power is NaN or the device
    has no dynamic range."""
    p = np.asarray(power_w, dtype="float64")
    if units <= 0 or max_w <= idle_w:
        return np.full(p.shape, np.nan)
    return np.clip((p / units - idle_w) / (max_w - idle_w), 0.0, 1.0)


_TS_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})$")


def parse_naive_timestamp(text, field: str, missing=frozenset({""})) -> datetime | None:
    """Naive datetime of a wall-clock time stamp ``YYYY-MM-DDTHH:MM:SS`` or ``YYYY-MM-DD HH:MM:SS``
    (what ``sacct`` and the Eurora traces print); None when ``text`` is None or, lower-cased and
    stripped, in ``missing``. Raises ValueError naming ``field`` and the text for another shape or an
    impossible date or time (month 13, February 30, hour 24)."""
    if text is None:
        return None
    s = str(text).strip()
    if s.lower() in missing:
        return None
    m = _TS_RE.match(s)
    if not m:
        raise ValueError(f"{field}: {s!r} is not a time stamp (YYYY-MM-DDTHH:MM:SS)")
    try:
        return datetime(*(int(x) for x in m.groups()))
    except ValueError as exc:  # e.g. "month must be in 1..12", "day is out of range for month"
        raise ValueError(f"{field}: {s!r} is not a valid date and time ({exc})") from None


class BadRows:
    """Rows of a table (CSV / parquet) that a loader found malformed, each with its first reason.

    ``lines[i]`` is the 1-based file line of row ``i`` (None for a parquet table: rows are then named
    ``row i+1`` in the detail, and the error carries no line). :meth:`add` marks rows; :meth:`resolve`
    raises TraceFormatError for the first bad row in file order unless ``lenient``, else returns the
    mask of the rows to keep and appends ``(line or row number, reason)`` of the others to ``skipped``
    (:attr:`core.workload.Workload.skipped_lines`).
    """

    def __init__(self, path: str, n: int, lines=None, ids=None):
        self.path, self.n = str(path), int(n)
        self.lines = None if lines is None else [int(x) for x in lines]
        self.ids = ids
        self.why: dict[int, str] = {}

    def detail(self, i: int) -> str:
        """The reason of row ``i``, after ``row i+1`` (parquet) and ``job <id>`` when known."""
        names = [f"row {i + 1}"] if self.lines is None else []
        if self.ids is not None and self.ids[i] is not None:
            names.append(f"job {self.ids[i]}")
        return f"{', '.join(names)}: {self.why[i]}" if names else self.why[i]

    def add(self, mask, detail) -> None:
        """Mark the rows where ``mask`` is True; ``detail(i)`` gives the reason of row ``i``."""
        for i in np.flatnonzero(np.asarray(mask, dtype=bool)):
            self.why.setdefault(int(i), detail(int(i)))

    def resolve(self, lenient: bool, skipped: list) -> np.ndarray:
        """Mask of the rows to keep (see the class docstring)."""
        keep = np.ones(self.n, dtype=bool)
        if not self.why:
            return keep
        rows = sorted(self.why)
        if not lenient:
            i = rows[0]
            raise TraceFormatError(self.path, None if self.lines is None else self.lines[i], self.detail(i))
        for i in rows:
            keep[i] = False
            skipped.append((i + 1 if self.lines is None else self.lines[i], self.detail(i)))
        return keep


def read_csv_rows(trace: TraceText, lenient: bool, skipped: list, **read_csv_kw) -> tuple[pd.DataFrame, np.ndarray]:
    """``(table, lines)``: the CSV in ``trace`` (first line = header) read with :func:`pandas.read_csv`
    (``read_csv_kw`` passed on), and the 1-based file line where each row starts.

    Each record's field count is checked against the header's first: a record with fewer fields (a
    file cut mid-row: pandas would fill the missing fields with NaN) or more is a TraceFormatError
    naming its line, or, under ``lenient``, skipped and listed in ``skipped``. Blank lines are not rows.
    Raises TraceFormatError (no line) when the text is not CSV at all.
    """
    text = trace.data.decode("utf-8", "replace")
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            raise TraceFormatError(trace.path, None, "empty CSV (no header line)", skippable=False)
        ncol = len(header)
        good: list[list[str]] = []
        lines: list[int] = []
        prev = reader.line_num
        bad = False
        for rec in reader:
            first, prev = prev + 1, reader.line_num
            if not rec or (len(rec) == 1 and not rec[0].strip()):
                continue
            if len(rec) != ncol:
                why = (f"expected {ncol} comma-separated fields (the header's), found {len(rec)}"
                       + (" (the line is cut short: a truncated file?)" if len(rec) < ncol else ""))
                if not lenient:
                    raise TraceFormatError(trace.path, first, why)
                skipped.append((first, why))
                bad = True
                continue
            good.append(rec)
            lines.append(first)
    except csv.Error as exc:
        raise TraceFormatError(trace.path, reader.line_num or None, f"cannot parse CSV: {exc}") from None
    try:
        if not bad:
            df = pd.read_csv(io.BytesIO(trace.data), **read_csv_kw)
        else:  # the good records only, re-read so that pandas infers the same types
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(header)
            w.writerows(good)
            buf.seek(0)
            df = pd.read_csv(buf, **read_csv_kw)
    except (ValueError, pd.errors.ParserError) as exc:
        raise TraceFormatError(trace.path, None, f"cannot parse CSV: {exc}") from exc
    if len(df) != len(lines):  # pandas and csv disagree on the records (should not happen)
        raise TraceFormatError(trace.path, None, f"cannot parse CSV: {len(df)} rows read, {len(lines)} records found")
    return df, np.asarray(lines, dtype=np.int64)


_MISSING_TEXT = frozenset({"", "nan", "nat", "none", "null", "na", "n/a", "unknown"})


def _present(values) -> np.ndarray:
    """True where a value is given (not None/NaN/NaT and not a missing-value word)."""
    s = pd.Series(values)
    given = s.notna().to_numpy()
    if s.dtype == object:
        given &= ~s.map(lambda v: isinstance(v, str) and v.strip().lower() in _MISSING_TEXT).to_numpy(dtype=bool)
    return given


def numbers_checked(values) -> tuple[np.ndarray, np.ndarray]:
    """``(float64 array, bad)``: the values as numbers (NaN where missing) and the mask of the values
    that are given but are not numbers (``"abc"``, ``"12x"``)."""
    x = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    return x, _present(values) & np.isnan(x)


def epoch_seconds_checked(values, tz_name: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``(Unix seconds, bad)``: :func:`to_epoch_seconds` of the values and the mask of the values
    that are given but are not a time (``2014-13-45 08:51:10``): NaN in the first array."""
    x = to_epoch_seconds(values, tz_name)
    return x, _present(values) & np.isnan(x)


def job_times_checked(df: pd.DataFrame, submit: str, start: str, end: str, tz_name: str | None, bad: BadRows,
                      others: tuple[str, ...] = ()) -> list[np.ndarray]:
    """Unix seconds (:func:`epoch_seconds_checked`) of a job table's ``submit``, ``start`` and
    ``end`` columns, then of ``others`` (an absent one is all NaN), every one read in ``tz_name``.
    Marked in ``bad``, naming the column and the value: a value given that is not a time, a missing
    submit time, an end before the start. Returns the arrays in that order."""
    out = []
    for col in (submit, start, end, *others):
        if col not in df.columns:
            out.append(np.full(len(df), np.nan))
            continue
        x, b = epoch_seconds_checked(df[col], tz_name)
        bad.add(b, lambda i, c=col: f"{c} '{df[c].iloc[i]}' is not a date and time")
        out.append(x)
    bad.add(~np.isfinite(out[0]), lambda i: f"{submit} is missing")
    bad.add(out[2] < out[1], lambda i: f"{end} {df[end].iloc[i]} is before {start} {df[start].iloc[i]}")
    return out
