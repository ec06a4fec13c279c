"""The outdoor wet-bulb input of the cooling plant: a constant, or a CSV series averaged exactly
over each piece of the run (package :mod:`core.cooling`, docs/cooling.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError


def _parse_wetbulb(spec):
    """``None`` | float | CSV path from a RunConfig ``wetbulb`` value."""
    if spec is None or isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return None if spec is None else float(spec)
    s = str(spec).strip()
    try:
        return float(s)
    except ValueError:
        return s


def check_wetbulb(spec) -> None:
    """Check a RunConfig ``wetbulb`` value without running: None and numbers pass (their range is
    :class:`core.config.RunConfig`'s check); a CSV path must exist (as a run resolves it: from the
    working directory, else under the data folder) and be readable as :func:`wetbulb_bins` reads
    it (columns, numbers, ascending times, plausible °C). Raises ConfigError naming the file."""
    s = _parse_wetbulb(spec)
    if isinstance(s, str):
        _read_wetbulb_csv(s, 0)  # the epoch only shifts absolute times; every check is independent of it


def _read_wetbulb_csv(path: str, epoch: int) -> tuple[np.ndarray, np.ndarray, str]:
    from ..data import data_dir

    p = Path(path).expanduser()
    if not p.is_absolute() and not p.exists() and (data_dir() / p).exists():
        p = data_dir() / p
    if not p.exists():
        raise ConfigError(f"wetbulb: CSV file not found: {path}")
    raw = p.read_bytes()
    try:
        df = pd.read_csv(p, comment="#")
    except Exception as exc:  # pandas raises several types
        raise ConfigError(f"wetbulb: cannot read {p}: {exc}") from exc
    cols = {c.strip().lower(): c for c in df.columns}
    if "wetbulb_c" not in cols:
        raise ConfigError(f"wetbulb: {p} needs a column 'wetbulb_c' (°C), has {list(df.columns)}")
    v = pd.to_numeric(df[cols["wetbulb_c"]], errors="coerce").to_numpy(dtype="float64")
    if "time" in cols:
        t = pd.to_numeric(df[cols["time"]], errors="coerce").to_numpy(dtype="float64")
    elif "unix_time" in cols:
        t = pd.to_numeric(df[cols["unix_time"]], errors="coerce").to_numpy(dtype="float64") - float(epoch)
    elif "timestamp" in cols:
        ts = pd.to_datetime(df[cols["timestamp"]], utc=True, errors="coerce")
        t = ((ts - pd.Timestamp(0, tz="UTC")).dt.total_seconds() - float(epoch)).to_numpy(dtype="float64", na_value=np.nan)
    else:
        raise ConfigError(
            f"wetbulb: {p} needs a time column: 'time' (s from the trace epoch), 'unix_time' (s since "
            f"1970-01-01 UTC) or 'timestamp' (ISO 8601, UTC unless it says otherwise)")
    bad = ~(np.isfinite(t) & np.isfinite(v))
    if bad.any():
        raise ConfigError(f"wetbulb: {p} row {int(np.argmax(bad)) + 2}: time or wetbulb_c is missing or not a number")
    if len(t) == 0:
        raise ConfigError(f"wetbulb: {p} has no rows")
    if len(t) > 1 and not np.all(np.diff(t) > 0):
        raise ConfigError(f"wetbulb: {p} times must be strictly ascending")
    if v.min() < -60 or v.max() > 45:
        raise ConfigError(f"wetbulb: {p} values {v.min():.1f}..{v.max():.1f} are not wet-bulb °C (Fahrenheit or Kelvin?)")
    return t, v, hashlib.sha256(raw).hexdigest()


def _pl_integral(t: np.ndarray, v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∫_{t[0]}^{x} of the piecewise-linear interpolant of (t, v), held constant outside [t0, tn]."""
    x = np.asarray(x, dtype="float64")
    if len(t) == 1:
        return (x - t[0]) * v[0]
    cum = np.concatenate([[0.0], np.cumsum(np.diff(t) * (v[:-1] + v[1:]) / 2.0)])
    xc = np.clip(x, t[0], t[-1])
    i = np.clip(np.searchsorted(t, xc, side="right") - 1, 0, len(t) - 2)
    vx = np.interp(xc, t, v)
    inside = cum[i] + (xc - t[i]) * (v[i] + vx) / 2.0
    return inside + np.minimum(x - t[0], 0.0) * v[0] + np.maximum(x - t[-1], 0.0) * v[-1]


def wetbulb_bins(spec, bin_start, bin_end, epoch: int = 0, default: float = 23.0) -> tuple[np.ndarray, dict]:
    """Wet bulb per sample (°C, exact mean over ``[bin_start, bin_end)``) and a provenance dict.

    ``spec``: None (``default``, the plant's design wet bulb), a number (°C, constant), or a CSV
    path with a ``wetbulb_c`` column and one time column: ``time`` (s from the trace epoch),
    ``unix_time`` (s since 1970 UTC; ``epoch`` = the trace epoch in Unix s) or ``timestamp`` (ISO
    8601). The series is interpolated linearly between rows and held constant beyond its ends.
    """
    b0 = np.asarray(bin_start, dtype="float64")
    b1 = np.asarray(bin_end, dtype="float64")
    s = _parse_wetbulb(spec)
    if s is None or isinstance(s, float):
        val = float(default if s is None else s)
        if not (-60 <= val <= 45):
            raise ConfigError(f"wetbulb: {val} is not a wet-bulb temperature in °C (-60..45)")
        return np.full(len(b0), val), {"kind": "constant", "wetbulb_c": val,
                                        "source": "design" if s is None else "config"}
    t, v, sha = _read_wetbulb_csv(s, epoch)
    ref = b0[0] if len(b0) else 0.0  # integrate relative to the window start (no cancellation)
    tt = t - ref
    f0 = _pl_integral(tt, v, b0 - ref)
    f1 = _pl_integral(tt, v, b1 - ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (f1 - f0) / (b1 - b0)
    return mean, {"kind": "csv", "path": str(s), "sha256": sha, "rows": int(len(t))}
