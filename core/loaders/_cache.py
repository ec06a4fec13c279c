"""A cache of parsed traces: a loaded :class:`~core.workload.Workload` kept as an Arrow IPC file.

Parsing a text trace costs far more than reading its table back (KTH-SP2, 28,476 jobs: about
0.14 s to parse against about 0.02 s from the cache), and ``twinsweep run`` parses the same file at
every call. :func:`load_workload` (``core.loaders``) therefore keeps the Workload of a trace in a
user cache folder and reads it from there when the same file is loaded again by the same code.

Where: the user cache folder (:func:`core.usercache.cache_dir`: ``$TWINSWEEP_CACHE`` when set,
``off`` disables it, else ``~/.cache/twinsweep/workloads``).

Key: sha256 of the trace file's bytes as stored (compressed or not), its path, the requested
format (or "detected"), the lenient flag, the requested and the system's time zones, and a fingerprint of the code that parses it (the bytes of the loader's module, of
every module of ``core/loaders`` and of ``core/workload.py``): a changed trace or a changed parser
is a miss, never a stale table. Only formats that read nothing but the trace file are cached
(:data:`CACHED_FORMATS`: the SWF family); small files (< :data:`MIN_BYTES`) parse faster than the
cache would help and are not cached.

File: ``<key>.arrow``, the jobs table (Arrow IPC, uncompressed for speed) with the Workload's other
fields (epoch, checksum, format, header, procs unit, skipped lines, provenance, dump time,
finished-only flag, time zone, warnings) and each column's
pandas dtype in the schema metadata; reading restores the frame exactly (``tests/test_loaders.py``
checks cached and parsed Workloads equal column by column, dtypes and missing values included).
``source`` is always the path being loaded. A cache file that cannot be read is ignored and
rewritten; a cache that cannot be written (read-only home, full disk) only costs the parse.
Writes are atomic (``core.atomic``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from ..workload import Workload
from ..atomic import atomic_write
from ..usercache import cache_dir

#: formats whose Workload depends on the trace file alone (no side files, no per-job traces)
CACHED_FORMATS = frozenset({"swf", "swf-theta", "swf-metacentrum", "swf-frontier"})
#: files smaller than this (bytes as stored) are parsed every time
MIN_BYTES = 256 * 1024
#: bump when the cache file's layout changes (2: dump_time, finished_only, timezone, warnings; 3: repeated
#: strings dictionary-encoded)
LAYOUT = 3
_META = b"twinsweep.workload"


def _code_fingerprint(loader_load) -> bytes:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    files = sorted(here.glob("*.py")) + [here.parent / "workload.py"]
    mod = sys.modules.get(getattr(loader_load, "__module__", "") or "")
    extra = getattr(mod, "__file__", None)
    if extra and Path(extra).resolve().parent != here:
        files.append(Path(extra))
    for f in files:
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(str(f).encode())
    return h.digest()


def cache_path(source: str, raw: bytes, format: str | None, lenient: bool, loader_load=None,
               zones: tuple = (None, None)) -> Path | None:
    """Where the Workload of trace file ``source`` (stored bytes ``raw``) is cached, or None when it
    is not (cache off, a requested format not in :data:`CACHED_FORMATS`, a file below
    :data:`MIN_BYTES`). ``format`` None: detected (then only a detected format of
    :data:`CACHED_FORMATS` is written). The path is in the key too (loaders cite the file name),
    and ``zones`` (the requested and the system's time zone, see :func:`core.loaders.load_workload`)."""
    folder = cache_dir()
    if folder is None or (format is not None and format not in CACHED_FORMATS) or len(raw) < MIN_BYTES:
        return None
    h = hashlib.sha256()
    h.update(f"{LAYOUT}|{format or '(detected)'}|{bool(lenient)}|{source}|{zones[0]}|{zones[1]}|".encode())
    h.update(_code_fingerprint(loader_load))
    h.update(hashlib.sha256(raw).digest())
    return folder / f"{h.hexdigest()}.arrow"


def read_cached(path: Path, source: str) -> Workload | None:
    """The cached Workload at ``path`` (its ``source`` set to ``source``), or None when the file is
    missing or unreadable (then the caller parses the trace and rewrites it)."""
    try:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        with pa.memory_map(str(path), "r") as src:
            table = ipc.open_file(src).read_all()
        meta = json.loads(table.schema.metadata[_META])
        jobs = _to_frame(table, meta["dtypes"])
    except Exception:  # missing, truncated, foreign or older layout: parse again
        return None
    return Workload(jobs=jobs, epoch=meta["epoch"], checksum=meta["checksum"], source=source, format=meta["format"],
                    header=meta["header"], procs_unit=meta["procs_unit"],
                    skipped_lines=[tuple(x) for x in meta["skipped_lines"]], provenance=meta["provenance"],
                    dump_time=meta["dump_time"], finished_only=meta["finished_only"], timezone=meta["timezone"],
                    warnings=list(meta["warnings"]))


def write_cached(path: Path, wl: Workload) -> bool:
    """Store ``wl`` at ``path`` (atomic); False when it cannot (per-job traces, a column Arrow cannot
    hold, an unwritable folder): the cache is an optimisation, never a reason to fail a load."""
    if wl.traces:
        return False
    try:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        df = wl.jobs
        if not df.index.equals(_range_index(len(df))):
            return False
        meta = {"epoch": wl.epoch, "checksum": wl.checksum, "format": wl.format, "header": wl.header,
                "procs_unit": wl.procs_unit, "skipped_lines": [list(x) for x in wl.skipped_lines],
                "provenance": wl.provenance, "dump_time": wl.dump_time, "finished_only": wl.finished_only,
                "timezone": wl.timezone, "warnings": list(wl.warnings),
                "dtypes": {c: str(df[c].dtype) for c in df.columns}}
        table = _encoded(pa.Table.from_pandas(df, preserve_index=False))
        table = table.replace_schema_metadata({_META: json.dumps(meta).encode()})
        if _to_frame(table, meta["dtypes"]).equals(df) is False:  # a column that does not round-trip
            return False
        path.parent.mkdir(parents=True, exist_ok=True)

        def write(tmp: str) -> None:
            with ipc.new_file(tmp, table.schema) as w:
                w.write_table(table)

        atomic_write(path, write, sync=False)
        return True
    except Exception:
        return False


def _range_index(n: int):
    import pandas as pd

    return pd.RangeIndex(n)


def _to_frame(table, dtypes: dict):
    """The pandas frame of ``table`` with each column's recorded pandas dtype: object columns hold
    Python objects (``str``, ``None``, lists) as the loaders build them. String columns may be
    stored dictionary-encoded (:func:`_encoded`); nullable integers (``Int64``) are built from their
    values and validity directly (no ``pyarrow.pandas_compat``, whose import alone costs ~3 ms)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    import numpy as np

    cols = {}
    for name, dtype in dtypes.items():
        col = table.column(name)
        if dtype == "object":
            if col.null_count == len(col):
                cols[name] = pd.Series(np.full(len(col), None, dtype=object), dtype=object)
            elif pa.types.is_dictionary(col.type):  # str, None for nulls: one Python str per distinct value
                arr = col.combine_chunks()
                words = np.empty(len(arr.dictionary) + 1, dtype=object)
                words[:-1] = arr.dictionary.to_numpy(zero_copy_only=False)
                words[-1] = None
                codes = arr.indices.fill_null(len(arr.dictionary)) if arr.null_count else arr.indices
                cols[name] = pd.Series(words[codes.to_numpy()], dtype=object)
            elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):  # str, None for nulls
                cols[name] = pd.Series(col.to_numpy(zero_copy_only=False), dtype=object)
            else:
                cols[name] = pd.Series(col.to_pylist(), dtype=object)
        elif dtype == "Int64":
            arr = col.combine_chunks()
            mask = arr.is_null().to_numpy(zero_copy_only=False)
            if arr.null_count == len(arr):  # no value at all (Arrow may type the column null)
                values = np.zeros(len(arr), dtype=np.int64)
            else:
                values = (pc.fill_null(arr, 0) if arr.null_count else arr).to_numpy(zero_copy_only=False).astype(np.int64)
            cols[name] = pd.Series(pd.arrays.IntegerArray(values, mask), dtype="Int64")
        else:
            cols[name] = pd.Series(col.to_numpy(), dtype=dtype)
    return pd.DataFrame(cols, copy=False)  # the Series are ours: no copy into consolidated blocks (~10 ms for KTH-SP2)


def _encoded(table):
    """``table`` with each string column that repeats its values (fewer distinct values than half
    its rows: users, accounts, queues, statuses) dictionary-encoded, so that reading it builds one
    Python ``str`` per distinct value instead of one per row."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            enc = table.column(i).combine_chunks().dictionary_encode()
            if len(enc.dictionary) * 2 < len(enc):
                table = table.set_column(i, pa.field(field.name, enc.type), enc)
    return table
