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
"""

from __future__ import annotations

import io
import os
from datetime import datetime, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..errors import ConfigError, TraceFormatError
from ..workload import WORKLOAD_COLUMNS
from ._registry import TraceText
from ._swfcore import obj_array

#: Environment variable naming the IANA time zone of naive local timestamps (overrides the
#: loader's default zone).
TZ_ENV = "TWINSWEEP_TZ"

PARQUET_MAGIC = b"PAR1"


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
