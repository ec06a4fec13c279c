"""Shared machinery of the SWF-family loaders: header parsing, fast table parsing, column mapping.

Parsing strategy (speed + exact error lines): the whole uncompressed file is handed to pandas'
C tokenizer (``read_csv(sep=r"\\s+", comment=";")``), which parses the 312,826-line CEA-Curie log in
well under a second. When that fails, or the result does not validate (wrong field count, a
non-numeric token, a missing field), a line-by-line pass finds the offending line(s): strict mode
raises :class:`~core.errors.TraceFormatError` with the 1-based line number of the first bad line;
lenient mode records every bad line and parses the remaining ones.
"""

from __future__ import annotations

import dataclasses
import io
import re
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import TraceFormatError
from ..system import header_number  # noqa: F401  (re-exported: the loaders' name for it)
from ._registry import TraceText

# --------------------------------------------------------------------------------------------
# header

#: ``; Key: value`` — a key starts with an upper-case letter right after ``;`` (at most one
#: space), so indented continuation lines such as ``;\tsee: http://...`` are not taken as keys.
_KEY_RE = re.compile(r"^; ?([A-Za-z][A-Za-z0-9_]*)\s*:\s?(.*)$")

#: The header fields of SWF v2.2 (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html), by
#: their lower-case spelling: a key written in another case (``; maxnodes: 64``) is read as the
#: standard one instead of continuing the previous field's text.
_STANDARD_KEYS = {k.lower(): k for k in (
    "Version", "Computer", "Installation", "Acknowledge", "Information", "Conversion", "MaxJobs", "MaxRecords",
    "Preemption", "UnixStartTime", "TimeZone", "TimeZoneString", "StartTime", "EndTime", "MaxNodes", "MaxProcs",
    "MaxRuntime", "MaxMemory", "AllowOveruse", "MaxQueues", "Queues", "Queue", "MaxPartitions", "Partitions",
    "Partition", "Note")}


def _key_value(body: str) -> tuple[str, str] | None:
    """``(key, value)`` of a ``; Key: value`` header line, else None (a continuation line). A
    standard field in any case gets its standard spelling (``MAXPROCS`` -> ``MaxProcs``); another
    key counts only when it starts in upper case (a continuation such as ``;   http://…`` is no key)."""
    m = _KEY_RE.match(body)
    if not m:
        return None
    key = _STANDARD_KEYS.get(m.group(1).lower())
    if key is None and not m.group(1)[0].isupper():
        return None
    return key or m.group(1), m.group(2)
_INT_RE = re.compile(r"^[+-]?\d+$")

#: Header keys whose repeated lines map an id to a name (``; Queue:  1  batch``).
_ID_MAP_KEYS = ("Queue", "Partition")


def lf_line_ends(trace: TraceText) -> bytes:
    """The trace's bytes with every line ended by LF, stored back in ``trace.data``: CR LF
    (Windows) and a lone CR (classic Mac OS) become LF. pandas' C tokenizer ends a line at each of
    them, so the header, the line-by-line pass and the line numbers of errors do too (a CR LF pair
    is one line end, a lone CR another, as ``str.splitlines`` and text editors count them).
    :func:`read_swf_header` and :func:`parse_table` call it first; a file without CR is left as
    it is (one byte search)."""
    data = trace.data
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        trace.data = data
    return data


def leading_comment_lines(data: bytes) -> list[str]:
    """The ``;`` lines (and blank lines) at the top of the file, before the first job line."""
    out: list[str] = []
    pos, n = 0, len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl
        line = data[pos:end].decode("utf-8", errors="replace").rstrip("\r")
        s = line.strip()
        if s and not s.startswith(";"):
            break
        out.append(s)
        pos = end + 1
    return out


def parse_swf_header(lines: Iterable[str]) -> dict:
    """Parse SWF header comments into a dict.

    * ``; Key: value`` -> ``header[Key] = value``; values that are plain integers become ``int``
      (``UnixStartTime``, ``MaxNodes``, ``MaxProcs``, ``MaxRuntime``, ``MaxJobs`` …); others stay
      ``str`` (``MaxNodes: 400 (48 interactive, …)`` stays a str; :func:`core.system.header_count`
      reads its first word as the machine's size, ``1,024`` included, and refuses other text).
    * A key given several times (``Note``, ``Information`` …) has its values joined with ``"\\n"``;
      indented ``;`` lines without a key continue the previous key's value (the same join).
    * ``Queue`` / ``Partition`` lines become ``{id: name}`` dicts (``; Partition: 2 batch`` ->
      ``header["Partition"]["2"] == "batch"``), so the numeric ``queue``/``partition`` columns can be
      translated for display.
    * A bare ``;`` line ends a continuation.
    * A standard field written in another case (``; maxnodes: 64``) is read under its standard
      name (until 2026-12-07 it continued the previous field's text, silently).

    No value is checked here (detection calls it on a file's first lines, and raises nothing); the
    loaders read a header through :func:`read_swf_header`, which checks the numeric fields and
    refuses a field repeated with another value, naming the file and lines.
    """
    header: dict = {}
    last: str | None = None
    for raw in lines:
        body = raw.strip()
        if not body.startswith(";"):
            continue
        kv = _key_value(body)
        if kv:
            key, val = kv[0], kv[1].strip()
            if key in _ID_MAP_KEYS:
                parts = val.split(None, 1)
                ident = parts[0] if parts else ""
                header.setdefault(key, {})[ident] = parts[1].strip() if len(parts) > 1 else ""
                last = None
                continue
            if key in header and not isinstance(header[key], dict):
                header[key] = f"{header[key]}\n{val}" if val else header[key]
            else:
                header[key] = val
            last = key
        else:
            txt = body[1:].strip()
            if not txt:
                last = None
            elif last is not None:
                header[last] = f"{header[last]}\n{txt}" if header[last] else txt
    for k, v in list(header.items()):
        if isinstance(v, str) and _INT_RE.match(v):
            header[k] = int(v)
    return header


def header_int(header: dict, key: str) -> int | None:
    """``header[key]`` as int, or None when absent. Strict: the whole value must be a whole number
    (``1500000000``, or an integral float such as ``1.5e9``; see :func:`header_number`), never the
    leading digits of other text. Raises ValueError for any other value (a header read by
    :func:`read_swf_header` has been checked already, with the file and line in the error)."""
    v = header.get(key)
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    x = header_number(str(v))
    if x is None:
        raise ValueError(f"SWF header field {key} is {str(v).strip()!r}, not a whole number")
    return x


def header_epoch(header: dict) -> int | None:
    """The header's ``UnixStartTime`` (Unix s, UTC) as int; None when absent or -1 (SWF's
    "unknown"). Raises ValueError as :func:`header_int`."""
    v = header_int(header, "UnixStartTime")
    return None if v == -1 else v


# --------------------------------------------------------------------------------------------
# strict header check (file + line in every error)

#: ``UnixStartTime`` must lie in ``[0, SWF_UNIX_START_MAX]`` (Unix s): 1970-01-01 to
#: 2200-01-01 00:00 UTC; -1 means unknown.
SWF_UNIX_START_MAX = 7_258_118_400


@dataclasses.dataclass(frozen=True)
class HeaderField:
    """What a numeric SWF header field may hold: a whole number in ``[lo, hi]``, or -1 (SWF's
    "unknown") when ``unknown_ok``. ``first_word``: only the value's first word is the number
    (``MaxNodes: 400 (48 interactive, 352 batch)``) and thousands separators are allowed
    (``1,024``); otherwise the whole value must be the number. ``what`` names it in errors."""

    lo: int
    hi: int
    unknown_ok: bool
    first_word: bool
    what: str


#: The numeric fields of an SWF header (PWA SWF v2.2 definition,
#: https://www.cs.huji.ac.il/labs/parallel/workload/swf.html), checked by :func:`read_swf_header`.
#: A machine has at least one node, one processor, a run-time limit of at least 1 s and some
#: memory (0 is refused: -1 is the format's "unknown"); job, record, queue and partition counts
#: may be 0. ``TimeZone`` is an offset from UTC in seconds, within one day.
SWF_HEADER_NUMERIC: dict[str, HeaderField] = {
    "UnixStartTime": HeaderField(0, SWF_UNIX_START_MAX, True, False,
                                 "a Unix time in s, 1970-01-01 to 2200-01-01 UTC"),
    "TimeZone": HeaderField(-86_400, 86_400, False, False, "an offset from UTC in s"),
    "MaxJobs": HeaderField(0, 2**53, True, True, "a count of jobs"),
    "MaxRecords": HeaderField(0, 2**53, True, True, "a count of lines"),
    "MaxNodes": HeaderField(1, 2**31 - 1, True, True, "a count of nodes"),
    "MaxProcs": HeaderField(1, 2**31 - 1, True, True, "a count of processors"),
    "MaxRuntime": HeaderField(1, 2**31 - 1, True, True, "a time limit in s"),
    "MaxMemory": HeaderField(1, 2**53, True, True, "an amount of memory in KB"),
    "MaxQueues": HeaderField(0, 2**31 - 1, True, True, "a count of queues"),
    "MaxPartitions": HeaderField(0, 2**31 - 1, True, True, "a count of partitions"),
}


def _late_header_fields(data: bytes, header_lines: int) -> list[tuple[int, str]]:
    """``(1-based line, key)`` of the numeric header fields (:data:`SWF_HEADER_NUMERIC`) written as
    ``; Key: value`` lines after the first job line (the file's first ``header_lines`` lines are
    its header): a search for ``;`` past the header (none in most logs), then one regular-expression
    search from the first one, the line counted for the matches only."""
    keys = b"|".join(re.escape(k.encode()) for k in SWF_HEADER_NUMERIC)
    out = []
    skip = 0
    for _ in range(header_lines):  # the offset just past the header's lines
        nl = data.find(b"\n", skip)
        if nl < 0:
            return []
        skip = nl + 1
    first = data.find(b";", skip)  # job lines hold no ';' (one memchr over a log of 40 MB: milliseconds)
    if first < 0:
        return []
    skip = data.rfind(b"\n", 0, first) + 1
    header_lines = data.count(b"\n", 0, skip)
    for m in re.finditer(rb"(?im)^[ \t]*;[ \t]*(" + keys + rb")[ \t]*:", data[skip:]):
        out.append((header_lines + data.count(b"\n", skip, skip + m.start()) + 1,
                    next(k for k in SWF_HEADER_NUMERIC if k.lower() == m.group(1).decode().lower())))
    return out


def read_swf_header(trace: TraceText, absent_means: str = "times count from time 0 = 1970-01-01 00:00 UTC",
                    ) -> tuple[dict, list[str]]:
    """The header of an SWF-family file (the ``;`` lines before the first job line), checked.

    The dict is :func:`parse_swf_header`'s, with the numeric fields of
    :data:`SWF_HEADER_NUMERIC` checked line by line:

    * each must be a whole number (:func:`header_number`; ``UnixStartTime: 1.5e9`` is accepted as
      1500000000 and stored as that int) within its range, or -1 ("unknown") where allowed;
    * a field given on several lines must give the same number each time (an identical repeat is
      kept once); free-text fields (``Note``, ``Information`` …) are joined as before;
    * ``UnixStartTime: -1`` is treated as absent (the epoch is then the loader's default,
      ``absent_means`` says which) and said in a warning;
    * numeric header fields written after the first job line are not read, and said in a warning
      naming the first such line (:func:`_late_header_fields`).

    Returns ``(header, warnings)``: warnings are one-line texts for ``Workload.warnings``.

    Raises:
        TraceFormatError: (whatever the lenient flag: the header is not a job line) a numeric
            field that is not a whole number or out of range, naming the file, the header line
            and the field; or a field repeated with a different value, naming both lines.
    """
    lines = leading_comment_lines(lf_line_ends(trace))
    header = parse_swf_header(lines)
    seen: dict[str, tuple[int, str, int]] = {}  # key -> (line, value as written, number)
    repeated: set[str] = set()
    for no, line in enumerate(lines, 1):
        kv = _key_value(line)
        if not kv or kv[0] not in SWF_HEADER_NUMERIC:
            continue
        key, raw = kv[0], kv[1].strip()
        spec = SWF_HEADER_NUMERIC[key]
        x = header_number(raw, spec.first_word)
        unknown = "; -1 = unknown" if spec.unknown_ok else ""
        if x is None:
            raise TraceFormatError(trace.path, no, f"header field {key} is {raw[:60]!r}, not a whole number "
                                   f"({spec.what}{unknown})", skippable=False)
        if not (spec.lo <= x <= spec.hi or (spec.unknown_ok and x == -1)):
            raise TraceFormatError(trace.path, no, f"header field {key} is {x}, outside [{spec.lo:,}, {spec.hi:,}] "
                                   f"({spec.what}{unknown})", skippable=False)
        if key in seen:
            first_no, first_raw, first_x = seen[key]
            if x != first_x:
                raise TraceFormatError(trace.path, no, f"header field {key} is given twice with different values: "
                                       f"line {first_no} says {first_raw[:40]!r}, line {no} says {raw[:40]!r}; "
                                       "keep the right one", skippable=False)
            repeated.add(key)
            continue
        seen[key] = (no, raw, x)
    for key, (no, raw, x) in seen.items():
        if not SWF_HEADER_NUMERIC[key].first_word:  # the whole value is the number: stored as int
            header[key] = x
        elif key in repeated:  # an identical repeat is kept once, as the first line wrote it
            header[key] = int(raw) if _INT_RE.match(raw) else raw
    warnings: list[str] = []
    late = _late_header_fields(trace.data, len(lines))
    if late:
        no, _ = late[0]
        keys = ", ".join(dict.fromkeys(k for _, k in late))
        warnings.append(f"{trace.name}: header field(s) {keys} stand after the first job line (line {no:,} first): an SWF "
                        "header comes before the jobs, so they are not read" + (
                            f" (the header read says: {', '.join(f'{k} {header[k]}' for k in dict.fromkeys(k for _, k in late) if k in header)})"
                            if any(k in header for _, k in late) else "; move them to the top of the file"))
    if "UnixStartTime" in seen and seen["UnixStartTime"][2] == -1:
        warnings.append(f"{trace.name}: header UnixStartTime is -1 (unknown, line {seen['UnixStartTime'][0]}): "
                        f"treated as absent, so {absent_means}")
    return header, warnings


# --------------------------------------------------------------------------------------------
# table

_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NUM_RE = re.compile(rf"^{_NUM}$")
#: A line holding something other than white space before its first ``;``: a job line (or a
#: malformed one). Used only to tell a file without job lines from one pandas misread as such.
_JOB_LINE_RE = re.compile(rb"(?m)^[^;\n]*[^\s;]")


#: What separates the fields of a job line: spaces and tabs, as for pandas' C tokenizer
#: (``sep=r"\s+"``); other white space (a vertical tab, a form feed, a no-break space) is part of a
#: field, so both passes read a line alike.
_SEP = "[ \t]"
_SEP_RE = re.compile(_SEP + "+")
_OTHER_SPACE_RE = re.compile(r"[^\S \t]")


def _line_regex(nfields: int, text_cols: Sequence[int]) -> re.Pattern:
    parts = [(r"[^ \t]+" if i in text_cols else _NUM) for i in range(nfields)]
    return re.compile(rf"^{_SEP}*" + rf"{_SEP}+".join(parts) + rf"{_SEP}*$")


def _read_fast(data: bytes, nfields: int, text_cols: Sequence[int], allow_nonfinite: bool = False) -> pd.DataFrame | None:
    """pandas C parse, numeric columns as float64; returns None when the result is not a valid
    ``nfields`` table (a missing field, a non-numeric token, a NaN; ±inf too unless
    ``allow_nonfinite``: an overflowing number such as ``1e400`` that the range check reports)."""
    dtype = {i: (object if i in text_cols else np.float64) for i in range(nfields)}
    try:
        df = pd.read_csv(
            io.BytesIO(data), sep=r"\s+", comment=";", header=None, engine="c", encoding="latin-1",
            keep_default_na=False, na_values=[], dtype=dtype,
        )
    except pd.errors.EmptyDataError:
        # pandas says "no columns to parse" for a file without job lines, but also for one whose
        # first line that is not a plain ``;`` comment is an indented comment (``  ; note``),
        # however many job lines follow: those go to the line-by-line pass
        if _JOB_LINE_RE.search(data):
            return None
        return pd.DataFrame({i: pd.Series(dtype=object if i in text_cols else np.float64) for i in range(nfields)})
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError):
        return None
    if df.shape[1] != nfields or list(df.columns) != list(range(nfields)):
        return None
    for i in range(nfields):
        col = df[i]
        if i in text_cols:
            if (col.astype(str) == "").any():
                return None
        else:
            if col.dtype.kind != "f":
                return None
            v = col.to_numpy()
            if np.isnan(v).any() or (not allow_nonfinite and np.isinf(v).any()):
                return None
    return df


def _diagnose(line: str, nfields: int, text_cols: Sequence[int]) -> str:
    """Why the job line ``line`` (its comment cut, stripped) is malformed."""
    tokens = _SEP_RE.split(line)
    for i, t in enumerate(tokens[:nfields]):
        odd = _OTHER_SPACE_RE.search(t)
        if odd and i not in text_cols:
            return (f"the line holds {odd.group()!r}, which separates no fields (only spaces and tabs do): "
                    f"field {i + 1} is not a number: {t[:40]!r}")
    if len(tokens) != nfields:
        return f"expected {nfields} whitespace-separated fields, found {len(tokens)}"
    for i, t in enumerate(tokens):
        if i not in text_cols and not _NUM_RE.match(t):
            return f"field {i + 1} is not a number: {t[:40]!r}"
    return "malformed line"


# --------------------------------------------------------------------------------------------
# range checks (one function for the fast and the slow path)

#: Largest time value (s) a SWF field may hold: 2^31 - 1, the signed 32-bit seconds of the SWF
#: files' integer fields (68 years; the Parallel Workloads Archive's longest log spans ~10 years,
#: and CEA-Curie uses exactly 2147483647 as an "unlimited" requested time).
SWF_TIME_MAX = 2**31 - 1
#: Largest magnitude of any numeric field: 2^53, the largest range in which float64 (the parse
#: type) holds every integer exactly; beyond it ids and counts are no longer exact and an int64
#: cast of a rounded value can overflow.
NUM_ABS_MAX = 2.0**53


@dataclasses.dataclass(frozen=True)
class FieldRange:
    """The allowed closed interval ``[lo, hi]`` of one numeric field; ``name`` and ``unit`` name it
    in errors (``"run time"``, ``"s"``)."""

    name: str
    lo: float
    hi: float
    unit: str = ""


def swf_ranges(absolute_submit: bool = False, negative_run_time: bool = False) -> dict[int, FieldRange]:
    """Range limits of the 18 SWF fields (0-based column -> :class:`FieldRange`), from the PWA SWF
    definition (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): times are whole
    seconds, -1 means "unknown", and nothing else may be negative. Times are at most
    :data:`SWF_TIME_MAX`; the submit time (field 2) counts from the log's start (>= 0), or with
    ``absolute_submit`` (dialects whose field 2 is a Unix time) lies in ``[0, 2^32 - 1]`` (the
    span from the trace start is guarded later by the timeline-size check of a run).
    ``negative_run_time`` allows run times down to ``-SWF_TIME_MAX`` for a dialect that writes
    "end never recorded" as a negative run time (MetaCentrum's ``-(submit + 1)``). Every other
    numeric field is only held to finiteness and ``|v| <= 2^53`` (:data:`NUM_ABS_MAX`).
    """
    t = SWF_TIME_MAX
    return {
        1: FieldRange("submit time", 0, 2**32 - 1 if absolute_submit else t, "s"),
        2: FieldRange("wait time", -1, t, "s"),
        3: FieldRange("run time", -t if negative_run_time else -1, t, "s"),
        4: FieldRange("allocated processors", -1, t),
        5: FieldRange("average CPU time", -1, t, "s"),
        7: FieldRange("requested processors", -1, t),
        8: FieldRange("requested time", -1, t, "s"),
    }


#: Limits of standard SWF (relative submit times).
SWF_RANGES = swf_ranges()


def job_line_numbers(data: bytes, skipped: Iterable[tuple[int, str]] = ()) -> np.ndarray:
    """1-based line numbers of the job lines of ``data`` (non-blank once a ``;`` comment is cut),
    leaving out the lines in ``skipped``; row ``i`` of a parsed table came from line ``out[i]``."""
    skip = {no for no, _ in skipped}
    out = []
    for no, line in enumerate(data.decode("latin-1").split("\n"), 1):
        if line.split(";", 1)[0].strip() and no not in skip:
            out.append(no)
    return np.asarray(out, dtype=np.int64)


def _fmt_value(v: float) -> str:
    return str(int(v)) if np.isfinite(v) and v == np.rint(v) and abs(v) < 2**63 else repr(float(v))


def check_field_ranges(df: pd.DataFrame, text_cols: Sequence[int], ranges: dict[int, FieldRange],
                       path: str, lines: Callable[[], np.ndarray], lenient: bool,
                       ) -> tuple[pd.DataFrame, list[tuple[int, str]]]:
    """Range-check every numeric field of a parsed job table (both parse paths call this).

    Checks, per row: every numeric field is finite and ``|v| <= 2^53``; the fields in ``ranges``
    lie in their ``[lo, hi]``. ``lines()`` gives the 1-based source line of each row (only called
    when a row fails).

    Returns ``(df, skipped)``: the table without the failing rows (lenient) and their
    ``(line_no, reason)``. Raises TraceFormatError naming the file, line and field of the first
    failing row (not lenient).
    """
    n = len(df)
    if n == 0:
        return df, []
    bad = np.zeros(n, dtype=bool)
    reasons: dict[int, str] = {}
    for c in df.columns:
        if c in text_cols:
            continue
        v = df[c].to_numpy(dtype=np.float64)
        rng = ranges.get(c)
        lo, hi = (rng.lo, rng.hi) if rng is not None else (-NUM_ABS_MAX, NUM_ABS_MAX)
        with np.errstate(invalid="ignore"):
            out = ~((v >= lo) & (v <= hi))
        for i in np.flatnonzero(out & ~bad):
            x = float(v[i])
            if not np.isfinite(x):
                reasons[i] = f"field {c + 1} is out of range: {x} is not a finite number"
            elif rng is None:
                reasons[i] = f"field {c + 1} is out of range: {_fmt_value(x)} exceeds 2^53 in magnitude"
            else:
                unit = f" {rng.unit}" if rng.unit else ""
                reasons[i] = (f"field {c + 1} is out of range: {rng.name} {_fmt_value(x)}{unit} is not in "
                              f"[{_fmt_value(rng.lo)}, {_fmt_value(rng.hi)}]")
        bad |= out
    if not bad.any():
        return df, []
    rows = np.flatnonzero(bad)
    line_of = lines()
    if not lenient:
        i = int(rows[0])
        raise TraceFormatError(path, int(line_of[i]), reasons[i])
    skipped = [(int(line_of[i]), reasons[int(i)]) for i in rows]
    return df.loc[~bad].reset_index(drop=True), skipped


def parse_table(trace: TraceText, nfields: int, text_cols: Sequence[int] = (),
                lenient: bool = False, ranges: dict[int, FieldRange] | None = None,
                ) -> tuple[pd.DataFrame, list[tuple[int, str]]]:
    """Parse the job lines of an SWF-like file.

    Job lines are the non-blank lines that do not start with ``;`` (a trailing ``; comment`` on a
    job line is ignored); a line ends at LF, CR LF or a lone CR (:func:`lf_line_ends`, which leaves
    ``trace.data`` with LF line ends for the caller's line numbers too). Every job line must have
    ``nfields`` whitespace-separated fields;
    fields not in ``text_cols`` (0-based) must be decimal numbers (ints or floats such as
    ``552.21``) within their range: :func:`check_field_ranges` with ``ranges`` (default
    :data:`SWF_RANGES`), applied alike whichever path parsed the file.

    Returns:
        ``(df, skipped)``: ``df`` has integer column labels ``0 … nfields-1``, numeric columns as
        float64 and text columns as ``str`` objects, one row per valid job line in file
        order; ``skipped`` is the list of ``(line_no, reason)`` of skipped lines (lenient only).

    Raises:
        TraceFormatError: (not lenient) the first malformed or out-of-range line: file, 1-based
            line number, field and what is wrong.
    """
    text_cols = tuple(text_cols)
    ranges = SWF_RANGES if ranges is None else ranges
    df = _read_fast(lf_line_ends(trace), nfields, text_cols)
    if df is not None:
        return check_field_ranges(df, text_cols, ranges, trace.path, lambda: job_line_numbers(trace.data), lenient)
    # slow path: find the malformed lines, parse the others
    line_re = _line_regex(nfields, text_cols)
    text = trace.data.decode("latin-1")
    good: list[str] = []
    good_no: list[int] = []
    skipped: list[tuple[int, str]] = []
    for no, line in enumerate(text.split("\n"), 1):
        s = line.split(";", 1)[0].strip()
        if not s:
            continue
        if line_re.match(s):
            good.append(s)
            good_no.append(no)
            continue
        reason = _diagnose(s, nfields, text_cols)
        if not lenient:
            before = _read_fast("\n".join(good).encode("latin-1"), nfields, text_cols, allow_nonfinite=True)
            if before is not None:  # an out-of-range value on an earlier line is the first error
                check_field_ranges(before, text_cols, ranges, trace.path, lambda: np.asarray(good_no), False)
            raise TraceFormatError(trace.path, no, f"{reason} (line starts {s[:60]!r})")
        skipped.append((no, reason))
    df = _read_fast("\n".join(good).encode("latin-1"), nfields, text_cols, allow_nonfinite=True)
    if df is None:
        raise TraceFormatError(trace.path, None, "job lines could not be parsed after validation")
    line_of = np.asarray(good_no, dtype=np.int64)
    df, bad = check_field_ranges(df, text_cols, ranges, trace.path, lambda: line_of, lenient)
    return df, sorted(skipped + bad)


# --------------------------------------------------------------------------------------------
# column helpers


def int_col(x: np.ndarray, valid: np.ndarray) -> pd.arrays.IntegerArray:
    """Nullable Int64 array: ``round(x)`` where ``valid``, <NA> elsewhere."""
    vals = np.where(valid, np.rint(np.where(valid, x, 0.0)), 0).astype(np.int64)
    return pd.arrays.IntegerArray(vals, ~np.asarray(valid, dtype=bool))


def _fmt_nums(u: np.ndarray) -> np.ndarray:
    """Object array of str for the float array ``u``: integral values as ints (``"87"``), others
    with their decimals (``"12.5"``)."""
    integral = np.isfinite(u) & (u == np.rint(u)) & (np.abs(u) < 2**62)
    out = np.empty(len(u), dtype=object)
    if integral.any():
        out[integral] = u[integral].astype(np.int64).astype(str).astype(object)
    for i in np.flatnonzero(~integral):
        out[i] = repr(float(u[i]))
    return out


def id_str_col(x: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Object array of ids as str (``"87"``; non-integral values keep their decimals), None where
    not ``valid``. Equal ids share one str object (memory)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(len(x), dtype=object)  # None-filled
    if valid is None:
        valid = np.ones(len(x), dtype=bool)
    if valid.any():
        uniq, inv = np.unique(x[valid], return_inverse=True)
        out[valid] = _fmt_nums(uniq)[inv]
    return out


def obj_array(items) -> np.ndarray:
    """1-D object array holding ``items`` as they are (lists stay list elements, never a 2-D array)."""
    items = list(items)
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


def obj_series(arr, index=None) -> pd.Series:
    """A plain ``object`` Series (not pandas' str dtype), so columns keep the Workload dtypes."""
    return pd.Series(np.asarray(arr, dtype=object), dtype=object, index=index)


#: SWF status codes (PWA SWF v2.2 field 11): 1 completed, 0 failed, 5 cancelled; partial-execution
#: lines 3 (last part, completed) and 4 (last part, failed), 2 (part to be continued) -> unknown.
SWF_STATUS = {1: "completed", 0: "failed", 5: "cancelled", 3: "completed", 4: "failed"}
#: SWF field 11's code of a cancelled job.
CANCELLED_CODE = 5


def status_col(code: np.ndarray) -> np.ndarray:
    """Object array of ``completed|failed|cancelled|unknown`` from SWF status codes."""
    names = np.array(["unknown", *SWF_STATUS.values()], dtype=object)
    idx = np.zeros(len(code), dtype=np.int64)
    for i, k in enumerate(SWF_STATUS, 1):
        idx[code == k] = i
    return names[idx]


def swf_jobs_frame(a: np.ndarray, submit_abs_offset: int = 0) -> tuple[dict, np.ndarray]:
    """Map the 18 SWF fields (columns 0..17 of the float array ``a``) to Workload columns.

    ``submit_time = field2 - submit_abs_offset`` (0 for standard SWF whose field 2 is already
    relative to ``UnixStartTime``; the epoch for dialects with absolute times). Returns the
    column dict and the raw status codes (for dialect-specific post-processing).

    Mapping (DESIGN.md §2; -1 = unknown in SWF):

    ============  =================================================================
    job_id        field 1 as str
    submit_time   field 2 (rounded to int s) - offset
    recorded_start_time  submit + field 3 (wait) when wait >= 0, else <NA>
    run_time      field 4 when >= 0, else <NA> — also <NA> for a cancelled job (status 5)
                  with run time 0 and no allocated processors (field 5 = -1): it never
                  started, and its wait is the time to its cancellation (CEA-Curie writes
                  9,786 jobs cancelled in the queue so, LLNL-Atlas 4,550; SDSC-SP2 and
                  SDSC Blue write run time -1; PWA's field definitions, "-1 = unknown")
    recorded_end_time    start + run when both known, else <NA>
    procs         field 5 (allocated) when > 0, else field 8 (requested) when > 0, else <NA>
    cpu_util      field 6 / field 4 (avg CPU time per processor / run time) clipped to
                  [0, 1]; NaN when field 6 < 0 or run <= 0
    time_limit    field 9 when > 0, else <NA>
    status        field 11: 1 completed, 0 failed, 5 cancelled, else unknown
                  (partial-execution codes: see :data:`SWF_STATUS`)
    user/account  field 12 / 13 as str, None when < 0
    queue         field 15 as str (extra column), None when < 0
    partition     field 16 as str, None when < 0
    req_procs     field 8 (extra column, Int64), <NA> when <= 0
    priority      NaN (SWF has none)
    ============  =================================================================
    """
    n = len(a)
    f = lambda k: a[:, k - 1]  # noqa: E731  (1-based SWF field)
    submit = np.rint(f(2)).astype(np.int64) - int(submit_abs_offset)
    wait, run = f(3), f(4)
    code = np.rint(f(11)).astype(np.int64)
    has_start = wait >= 0
    # a cancelled job with run time 0 to which no processor was ever allocated never started: its
    # wait (field 3) is the time to its cancellation, as a run time of -1 says in other logs
    has_run = (run >= 0) & ~((code == CANCELLED_CODE) & (run == 0) & (f(5) == -1))
    start = submit + np.rint(np.where(has_start, wait, 0)).astype(np.int64)
    run_i = np.rint(np.where(has_run, run, 0)).astype(np.int64)
    alloc, req = f(5), f(8)
    procs = np.where(alloc > 0, alloc, np.where(req > 0, req, np.nan))
    cpu = f(6)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where((cpu >= 0) & (run > 0), np.clip(cpu / np.where(run > 0, run, 1.0), 0.0, 1.0), np.nan)
    tl = f(9)
    cols = {
        "job_id": id_str_col(f(1)),
        "trace_index": np.arange(n, dtype=np.int64),
        "user": id_str_col(f(12), f(12) >= 0),
        "account": id_str_col(f(13), f(13) >= 0),
        "submit_time": submit,
        "recorded_start_time": int_col(start, has_start),
        "recorded_end_time": int_col(start + run_i, has_start & has_run),
        "run_time": int_col(run_i, has_run),
        "time_limit": int_col(tl, tl > 0),
        "procs": int_col(procs, ~np.isnan(procs)),
        "nodes": int_col(np.zeros(n), np.zeros(n, dtype=bool)),
        "cpu_util": util.astype(np.float64),
        "gpu_util": np.full(n, np.nan),
        "avg_power_w": np.full(n, np.nan),
        "energy_j": np.full(n, np.nan),
        "priority": np.full(n, np.nan),
        "partition": id_str_col(f(16), f(16) >= 0),
        "status": status_col(code),
        "node_ids": np.empty(n, dtype=object),  # None-filled
        "queue": id_str_col(f(15), f(15) >= 0),
        "req_procs": int_col(req, req > 0),
    }
    return cols, code


#: SWF time fields (1-based) whose values are whole seconds by the format's definition.
_SWF_TIME_FIELDS = {2: "submit", 3: "wait", 4: "run time", 9: "requested time"}


def swf_content_warnings(a: np.ndarray, name: str, line_of=None) -> list[str]:
    """One-line warnings about SWF content the loader accepts but changes or cannot tell apart,
    so that nothing is altered silently: time fields (2, 3, 4, 9) that are not whole seconds
    (the format defines them in seconds; they are rounded to the nearest second), and job
    numbers (field 1) used by more than one line (each line stays one job, told apart by
    ``trace_index``). ``a``: the float array of the job lines (columns 0..17 = fields 1..18);
    ``line_of``: row index -> its line in the file (called only for a first example to name),
    or None. Returns the warnings (empty when there is nothing to say)."""
    out = []
    for k, what in _SWF_TIME_FIELDS.items():
        v = a[:, k - 1]
        frac = np.isfinite(v) & (v != np.rint(v))
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            where = f"line {line_of(i)}" if line_of is not None else f"job line {i + 1}"
            out.append(f"{name}: {int(frac.sum()):,} job line(s) give a {what} (field {k}) that is not a whole number of "
                       f"seconds (first: {where}, {float(v[i])!r}); rounded to the nearest second")
    ids = a[:, 0]
    _, counts = np.unique(ids[np.isfinite(ids)], return_counts=True)
    dup = counts > 1
    if dup.any():
        out.append(f"{name}: {int(dup.sum()):,} job number(s) (field 1) appear on more than one line "
                   f"({int(counts[dup].sum()):,} lines); each line is kept as its own job (told apart by trace_index)")
    return out


def build_frame(cols: dict) -> pd.DataFrame:
    """DataFrame from a column dict, object arrays kept as ``object`` dtype."""
    out = {}
    for k, v in cols.items():
        if isinstance(v, np.ndarray) and v.dtype == object:
            out[k] = obj_series(v)
        else:
            out[k] = v
    return pd.DataFrame(out)


def drop_partial_lines(df_cols: dict, code: np.ndarray) -> tuple[np.ndarray, int]:
    """Rows to keep given SWF status codes: a job with a summary line (status 0/1/5/-1 …) and
    partial-execution lines (status 2/3/4) with the same job number is represented by its
    summary line only (PWA SWF definition: the summary line describes the whole job; the
    partial lines detail its checkpointed/swapped parts). Partial lines without a summary line
    are kept. Returns ``(keep_mask, dropped_count)``."""
    partial = np.isin(code, (2, 3, 4))
    if not partial.any():
        return np.ones(len(code), dtype=bool), 0
    ids = df_cols["job_id"]
    summary_ids = set(ids[~partial])
    drop = partial & np.fromiter((i in summary_ids for i in ids), dtype=bool, count=len(ids))
    return ~drop, int(drop.sum())


def subset_cols(cols: dict, keep: np.ndarray) -> dict:
    """Apply a row mask to every column and renumber ``trace_index``."""
    out = {k: v[keep] for k, v in cols.items()}
    out["trace_index"] = np.arange(int(keep.sum()), dtype=np.int64)
    return out


def provenance_pwa(header: dict, name: str) -> str:
    """Citation line for a PWA log: archive reference + installation + donor (``Acknowledge``)."""
    site = header.get("Installation") or header.get("Computer")
    ack = header.get("Acknowledge")
    pwa = bool(ack) or any("huji.ac.il" in str(header.get(k, "")) for k in ("Information", "Conversion"))
    if not pwa:
        return f"SWF trace {name}" + (f" ({str(site).splitlines()[0]})" if site else "")
    parts = ["Parallel Workloads Archive (Feitelson, Tsafrir & Krakov, J. Parallel Distrib. Comput. 74(10), 2014)",
             f"log {name}"]
    if site:
        parts.append(str(site).split("\n")[0])
    if ack:
        parts.append(f"donated by {str(ack).splitlines()[0]}")
    return "; ".join(parts)
