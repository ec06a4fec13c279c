"""Loader registry, trace reading and format detection.

A loader is a trace format: a name and two callables,

* ``detect(trace: TraceText) -> float``: a score, 0 (or False) when the file is not in this
  format; the highest positive score wins, ties go to the loader registered first;
* ``load(trace: TraceText, lenient: bool) -> Workload``.

Loaders live in :data:`LOADERS`, a :class:`~twinsweep.core.registry.Registry` (the one plug-in
mechanism): built-ins register themselves with :func:`register_loader` when ``core.loaders``
imports them; an installed package adds a format through the ``twinsweep.loaders`` entry-point
group, whose object is a :class:`Loader`, or any object (a module, a class) with ``detect`` and
``load`` attributes, e.g. ``myformat = "mypkg.myformat"`` for a module that defines both
functions, or for a module that registers itself under the entry point's name with
:func:`register_loader` at import (docs/plugins.md, "Add a trace format"). A ``"module:object"``
path given as the format name works too (a module cannot be named alone: name an object of it,
e.g. the :class:`Loader` that :func:`register_loader` returns).

The file is read (and gunzipped) once into a :class:`TraceText`; both callables work on it.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import zlib
from pathlib import Path
from typing import Callable

from ..data import data_dir, resolve_data_path
from ..errors import ConfigError, TraceFormatError
from ..registry import Registry
from ..workload import WORKLOAD_COLUMNS, Workload, coerce_jobs_frame, jobs_problems, mark_running_at_dump

GZIP_MAGIC = b"\x1f\x8b"
#: The 4 bytes that start and end every Parquet file (Apache Parquet format specification, "File Format").
PARQUET_MAGIC = b"PAR1"
#: The UTF-8 byte-order mark some editors put at the start of a text file; :func:`read_trace`
#: removes it (after gunzipping), so every text format's first line reads as written.
UTF8_BOM = b"\xef\xbb\xbf"

#: How many job (non-comment) lines :attr:`TraceText.sample_jobs` holds.
SAMPLE_JOB_LINES = 20
#: How many bytes of the file detection looks at, at most.
SAMPLE_BYTES = 1 << 20


@dataclasses.dataclass
class TraceText:
    """A trace file read into memory.

    Attributes:
        path: the file's path (str), as opened.
        data: the uncompressed bytes, without a leading UTF-8 byte-order mark (:data:`UTF8_BOM`).
        checksum: ``"sha256:<hex>"`` of the uncompressed file bytes (a byte-order mark included,
            so it is the file's own checksum).
        compressed: True when the file was gzip-compressed (detected by its magic bytes).
        tz: the IANA zone the caller asks for (``twinsweep run --tz``, a dataset's ``tz`` key):
            wins over the zone the file itself states. None = not given.
        system_tz: the zone of the run's system file (``System.timezone``): used when neither
            ``tz`` nor the file states one, before ``$TWINSWEEP_TZ``
            (:func:`core.loaders._facility.resolve_timezone`). None = none.
    """

    path: str
    data: bytes
    checksum: str
    compressed: bool = False
    tz: str | None = None
    system_tz: str | None = None
    _sample: tuple[list[str], list[str]] | None = dataclasses.field(default=None, repr=False)

    def _make_sample(self) -> tuple[list[str], list[str]]:
        if self._sample is None:
            comments: list[str] = []
            jobs: list[str] = []
            text = self.data[:SAMPLE_BYTES].decode("utf-8", errors="replace")
            for line in text.splitlines():
                s = line.strip()
                if not s:
                    continue
                if s.startswith(";"):
                    if not jobs:
                        comments.append(line)
                    continue
                jobs.append(s)
                if len(jobs) >= SAMPLE_JOB_LINES:
                    break
            self._sample = (comments, jobs)
        return self._sample

    @property
    def sample_comments(self) -> list[str]:
        """The ``;`` comment lines before the first job line (within the first MiB)."""
        return self._make_sample()[0]

    @property
    def sample_jobs(self) -> list[str]:
        """The first :data:`SAMPLE_JOB_LINES` non-blank, non-comment lines, stripped."""
        return self._make_sample()[1]

    @property
    def name(self) -> str:
        """The file's base name."""
        return Path(self.path).name


def read_trace(path: str | os.PathLike) -> TraceText:
    """Read a trace file (plain or gzip, detected by the magic bytes ``1f 8b``) into memory; a
    leading UTF-8 byte-order mark of the (uncompressed) text is removed.

    Raises:
        TraceFormatError: the file cannot be opened or is a corrupt gzip stream (names the file).
    """
    return _trace_text(str(path), _read_stored(str(path)))


def _read_stored(p: str) -> bytes:
    """The file's bytes as stored; TraceFormatError naming it when it cannot be read."""
    try:
        with open(p, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise TraceFormatError(p, None, f"cannot read trace file: {exc.strerror or exc}") from exc


def _trace_text(p: str, raw: bytes) -> TraceText:
    compressed = raw[:2] == GZIP_MAGIC
    if compressed:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceFormatError(p, None, f"corrupt gzip data: {exc}") from exc
    checksum = "sha256:" + hashlib.sha256(raw).hexdigest()
    if raw[:3] == UTF8_BOM:  # a text editor's byte-order mark is not part of the first line
        raw = raw[3:]
    return TraceText(p, raw, checksum, compressed)


@dataclasses.dataclass(frozen=True)
class Loader:
    """A trace format: ``name``, ``detect(trace) -> score`` and ``load(trace, lenient) -> Workload``
    (see the module docstring)."""

    name: str
    detect: Callable[[TraceText], float]
    load: Callable[[TraceText, bool], Workload]


def _check_loader(name: str, obj) -> None:
    if not (callable(getattr(obj, "detect", None)) and callable(getattr(obj, "load", None))):
        raise ConfigError(f"loader {name!r}: expected an object with callables detect(trace) and "
                          f"load(trace, lenient) (a Loader, a module or a class), got {obj!r}")


#: Every trace format: built-in, installed (entry-point group ``twinsweep.loaders``) or given as
#: ``"module:object"``. Unknown names raise UnknownNameError("format", ...) listing the valid ones.
LOADERS: Registry = Registry("format", "twinsweep.loaders", check=_check_loader)


def register_loader(name: str, detect: Callable[[TraceText], float], load: Callable[..., Workload],
                    *, replace: bool = False) -> Loader:
    """Register a trace loader under ``name`` (in :data:`LOADERS`).

    Args:
        name: format name (``swf``, ``swf-theta`` …), as passed to ``load_workload(format=...)``.
        detect: ``detect(trace: TraceText) -> float`` score, 0/False = not this format.
        load: ``load(trace: TraceText, lenient: bool) -> Workload``.
        replace: allow overwriting an existing registration.

    Returns:
        The registered :class:`Loader` (a module may keep it, e.g. ``LOADER = register_loader(...)``,
        so that ``"module:LOADER"`` names the format without installing the module).

    Raises:
        ConfigError: empty name, non-callable detect/load, or a duplicate name without ``replace``.
    """
    if not name or not isinstance(name, str):
        raise ConfigError(f"loader name must be a non-empty str, got {name!r}")
    if not callable(detect) or not callable(load):
        raise ConfigError(f"loader {name!r}: detect and load must be callables")
    return LOADERS.register(name, Loader(name, detect, load), replace=replace)


def get_loader(name: str) -> Loader:
    """The :class:`Loader` of format ``name`` (an installed plug-in is loaded now).

    Raises UnknownNameError listing the valid formats, or ConfigError when an installed plug-in
    cannot be imported."""
    obj = LOADERS.get(name)
    return obj if isinstance(obj, Loader) else Loader(name, obj.detect, obj.load)


def available_formats() -> list[str]:
    """Names of the trace formats (registered and installed), sorted."""
    return LOADERS.names()


def detect_format(trace: TraceText) -> str:
    """The format name whose ``detect`` gives ``trace`` the highest positive score (ties: the
    loader registered first; installed plug-ins come after the built-ins).

    A detector that raises (or returns something that is not a number) scores 0: it does not
    break the detection by the others, and when no format is found the error names it and why.

    Raises:
        TraceFormatError: no loader recognises the file (lists the known formats, and the
            detectors that raised with their errors), or it is a Parquet file cut short (its
            magic bytes at the start, not at the end).
    """
    if not trace.data.strip():
        raise TraceFormatError(trace.path, None, "the file is empty (no job lines, no header): nothing to load")
    best, best_score = None, 0.0
    crashed: list[str] = []  # "name (Error: text)" of the detectors that raised
    for name, obj in LOADERS.in_order():
        try:
            score = float(obj.detect(trace) or 0)
        except Exception as exc:  # noqa: BLE001 - a plug-in's detector must not break detection of the others
            crashed.append(f"{name} ({type(exc).__name__}: {exc})")
            score = 0.0
        if score > best_score:
            best, best_score = name, score
    if best is None:
        if trace.data[:4] == PARQUET_MAGIC and trace.data[-4:] != PARQUET_MAGIC:
            raise TraceFormatError(trace.path, None, f"a Parquet file cut short: it starts with Parquet's magic bytes "
                                   f"but lacks the footer that ends every Parquet file ({len(trace.data):,} bytes; a "
                                   "truncated download or copy?)")
        why = (f"; {len(crashed)} detector(s) raised instead of scoring the file (a bug in that loader): "
               f"{'; '.join(crashed)}") if crashed else ""
        raise TraceFormatError(
            trace.path, None,
            f"cannot detect the trace format; known formats: {', '.join(available_formats())} (CLI: --format NAME; "
            f"API and specs: format=NAME){why}",
        )
    return best


def load_workload(path: str | os.PathLike, format: str | None = None, lenient: bool = False,
                  tz: str | None = None, system_tz: str | None = None) -> Workload:
    """Load a trace file into a :class:`~core.workload.Workload`.

    Args:
        path: trace file; a relative path that does not exist from the working directory is
            looked up under the data folder (:func:`core.data.resolve_data_path`). Plain or gzip.
        format: loader name (see :func:`available_formats`), or None to detect it from the
            file's first lines (see each loader's ``detect``).
        lenient: skip malformed job lines instead of failing; they are listed in
            ``Workload.skipped_lines`` as ``(line_no, reason)`` and said in one line of
            ``Workload.warnings`` (the count and the first three).
        tz: IANA zone of the trace's local wall-clock times, from the command line or a spec
            (wins over a zone the file states); system_tz: the system file's zone (used when
            neither ``tz`` nor the file gives one, before ``$TWINSWEEP_TZ``). Only formats
            with local times read them (:attr:`Workload.timezone` says which zone was used).

    Returns:
        The Workload (jobs in file order, ``trace_index`` = 0-based row position), with
        ``checksum`` = sha256 of the uncompressed bytes, and the jobs still running when the
        trace was recorded marked (:func:`core.workload.mark_running_at_dump`). The Workload of an SWF-family trace is
        kept in a user cache folder and read from there the next time the same file is loaded by
        the same code (:mod:`core.loaders._cache`; ``TWINSWEEP_CACHE=off`` disables it).

    Raises:
        UnknownNameError: ``format`` is not a registered loader (lists the valid names).
        TraceFormatError: the file is missing/unreadable, its format cannot be detected, (not
            lenient) a job line is malformed (names the file and the 1-based line number), or the
            loader gave jobs with impossible values (:func:`core.workload.jobs_problems`: a negative
            run time, limit, energy …; names the jobs).
    """
    loader = get_loader(format) if format is not None else None
    try:
        resolved = resolve_data_path(path)
    except ConfigError:
        raise TraceFormatError(
            str(path), None, f"cannot read trace file: not found (also looked under the data folder {data_dir()})"
        ) from None
    from . import _cache

    raw = _read_stored(str(resolved))
    cached = _cache.cache_path(str(resolved), raw, format, lenient, loader.load if loader else None, (tz, system_tz))
    if cached is not None and (wl := _cache.read_cached(cached, str(resolved))) is not None:
        return wl
    trace = _trace_text(str(resolved), raw)
    trace.tz, trace.system_tz = tz or None, system_tz or None
    if loader is None:
        loader = get_loader(detect_format(trace))
    wl = loader.load(trace, lenient)
    wl.jobs = coerce_jobs_frame(wl.jobs) if _needs_coerce(wl.jobs) else wl.jobs
    n_bad, first = jobs_problems(wl.jobs)
    if n_bad:  # a loader's bug (a built-in one rejects such lines itself): never simulated as if valid
        raise TraceFormatError(str(resolved), None, f"format {wl.format or getattr(loader, 'name', '?')!r} gave "
                               f"{n_bad:,} job(s) with impossible values, e.g. {'; '.join(first)}")
    wl = mark_running_at_dump(wl)
    if wl.skipped_lines and not len(wl.jobs):  # lenient skipped every job line: the format, not a few lines, is wrong
        n, why = wl.skipped_lines[0]
        raise TraceFormatError(str(resolved), n, f"every one of the {len(wl.skipped_lines):,} job line(s) is malformed "
                               f"under format {wl.format or getattr(loader, 'name', '?')!r}, so lenient skipped them "
                               f"all (this one: {why}): is it the right --format?")
    if wl.skipped_lines:  # lenient: the skipped lines are said, never dropped silently
        first = "; ".join(f"line {n}: {why}" for n, why in wl.skipped_lines[:3])
        more = f"; and {len(wl.skipped_lines) - 3:,} more" if len(wl.skipped_lines) > 3 else ""
        wl.warnings = [*wl.warnings, f"{Path(str(resolved)).name}: {len(wl.skipped_lines):,} malformed line(s) skipped "
                                     f"(lenient): {first}{more} (each one in Workload.skipped_lines; a run's stats.json counts "
                                     "them in counts.lenient_skipped_lines)"]
    if cached is not None and wl.format in _cache.CACHED_FORMATS:
        _cache.write_cached(cached, wl)
    return wl


def _needs_coerce(df) -> bool:
    for col, dtype in WORKLOAD_COLUMNS.items():
        if col not in df.columns or str(df[col].dtype) != dtype:
            return True
    return False
