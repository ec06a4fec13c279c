"""``swf``: Standard Workload Format of the Parallel Workloads Archive (PWA), version 2.x.

File: plain text or gzip (detected by magic bytes), ``;`` header comments (``; Key: value``), then
one job per line with 18 whitespace-separated numeric fields (-1 = unknown). Definition:
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html (Feitelson et al., JPDC 2014).

Mapping to Workload columns: see :func:`core.loaders._swfcore.swf_jobs_frame`. Times are seconds
since the header's ``UnixStartTime`` (``Workload.epoch``; 0 when the header has none or -1, said in
a warning). ``procs``
counts processors (``procs_unit = "cores"``); ``nodes`` is left <NA> until a system is chosen
(:meth:`core.workload.Workload.with_nodes`).

Choices:

* Lines are kept in file order (``trace_index`` = 0-based row number); out-of-order submit
  times are not sorted here (the engine orders events).
* Status: 1 completed, 0 failed, 5 cancelled, anything else (-1, unknown codes) ``unknown``.
  Checkpoint/swap partial-execution lines (status 2/3/4, SWF usage note) repeat a job that
  its summary line already describes, so they are dropped when a summary line with the same
  job number exists (count in ``header["loader_partial_lines_dropped"]`` and one warning in
  ``Workload.warnings``); orphan partial lines are kept with 3 -> completed, 4 -> failed,
  2 -> unknown. None of the shipped logs has any.
* Range checks (:func:`core.loaders._swfcore.swf_ranges`, the same on every parse path): times
  are whole seconds in ``[-1, 2^31 - 1]`` (-1 = unknown; the submit time ``>= 0``), processor
  counts in ``[-1, 2^31 - 1]``, every other number finite with ``|v| <= 2^53``; a value outside
  (a run time of -5 or 1e300, a submit time of 3e9) is an error naming the file, line and field
  (``--lenient``: the line is skipped and counted).
* Lines end at LF, CR LF or a lone CR (:func:`core.loaders._swfcore.lf_line_ends`), as an editor counts them.
* Header: numeric fields (``UnixStartTime``, ``MaxNodes``, ``MaxProcs`` …) are checked strictly
  (:func:`core.loaders._swfcore.read_swf_header`): a value that is not a whole number, out of range
  (a ``UnixStartTime`` before 1970 or after 2200, a ``MaxNodes`` of 0) or repeated with another value
  is an error naming the file, line and field. A leading UTF-8 byte-order mark is ignored.
* ``partition`` / ``queue`` hold the numeric codes of fields 16 / 15 as str; the header's
  ``Partition`` / ``Queue`` lines give their names (``header["Partition"]["4"] == "large"``).
"""

from __future__ import annotations

import numpy as np

from ..workload import Workload
from ._registry import TraceText, register_loader
from ._swfcore import (
    _NUM_RE, build_frame, drop_partial_lines, header_epoch, job_line_numbers, parse_swf_header, parse_table,
    provenance_pwa, read_swf_header, subset_cols, swf_content_warnings, swf_jobs_frame,
)

SWF_FIELDS = 18
_HEADER_KEYS = ("Version", "UnixStartTime", "MaxJobs", "MaxRecords", "MaxProcs", "MaxNodes")


def _share_with_fields(lines: list[str], nfields: int, numeric_upto: int | None = None) -> float:
    if not lines:
        return 0.0
    ok = 0
    for s in lines:
        toks = s.split(";", 1)[0].split()
        if len(toks) == nfields and all(_NUM_RE.match(t) for t in toks[: numeric_upto or nfields]):
            ok += 1
    return ok / len(lines)


#: Header keys that mark a file as SWF for detection even when its job lines are not 18 numeric
#: fields (its load then names the first bad line and its field count): the PWA SWF v2.2 header
#: fields no other format writes. Free-text keys (``Note``, ``Information`` …) do not count.
_DETECT_KEYS = (*_HEADER_KEYS, "MaxRuntime", "MaxMemory", "MaxQueues", "MaxPartitions", "TimeZone",
                "TimeZoneString", "Computer", "Installation", "Preemption", "AllowOveruse")


def detect_swf(trace: TraceText) -> float:
    """Score 1.0 when at least 80 % of the first job lines have 18 numeric fields; 0.5 for a
    file with no job lines but an SWF header (``; Version:``, ``; UnixStartTime:``, ``; MaxProcs:`` …);
    0.25 for a file whose leading ``;`` lines carry SWF header keys (:data:`_DETECT_KEYS`) but whose
    job lines are not 18 numeric fields (e.g. 17 or 19): below every dialect's score (Theta's 19
    fields score 2), so a dialect's own file is never taken, and :func:`load_swf` then names the
    first bad line and its field count instead of "cannot detect the trace format"."""
    jobs = trace.sample_jobs
    if jobs and _share_with_fields(jobs, SWF_FIELDS) >= 0.8:
        return 1.0
    hdr = parse_swf_header(trace.sample_comments)
    if jobs:
        return 0.25 if any(k in hdr for k in _DETECT_KEYS) else 0.0
    return 0.5 if any(k in hdr for k in _HEADER_KEYS) else 0.0


def load_swf(trace: TraceText, lenient: bool = False) -> Workload:
    """Load a standard SWF file (18 fields). See the module docstring for the mapping.

    Times are seconds from the header's ``UnixStartTime`` (``Workload.epoch``, Unix s; 0 when the
    header has none or gives -1, "unknown", which is said in ``Workload.warnings``).
    ``Workload.warnings`` also says: partial-execution lines dropped (status 2/3/4 lines of a job
    whose summary line is kept), job numbers still used by more than one kept line, time fields
    rounded to whole seconds.

    Raises:
        TraceFormatError: a bad header (a numeric field such as ``UnixStartTime`` or ``MaxNodes``
            that is not a whole number, is out of range, or is repeated with another value; file,
            line and field), checked first, lenient or not; a malformed or out-of-range job line
            (file, line, field) unless ``lenient``.
    """
    header, notes = read_swf_header(trace)
    df, skipped = parse_table(trace, SWF_FIELDS, (), lenient)
    a = df.to_numpy(dtype=np.float64)
    cols, code = swf_jobs_frame(a, 0)
    keep, dropped = drop_partial_lines(cols, code)
    lines: list = []  # row -> file line, computed once when a warning first needs it (a scan of the file)

    def line_of():
        if not lines:
            lines.append(job_line_numbers(trace.data, skipped))
        return lines[0]

    if dropped:
        rows = np.flatnonzero(~keep)
        first = int(line_of()[rows[0]])
        cols = subset_cols(cols, keep)
        header["loader_partial_lines_dropped"] = dropped
        notes.append(f"{trace.name}: {dropped:,} partial-execution line(s) (status 2/3/4, first: line {first}) dropped: "
                     "each details a checkpointed or swapped part of a job whose summary line (same job number) is kept "
                     "and describes the whole job")
    kept_rows = np.flatnonzero(keep)
    notes += swf_content_warnings(a[keep], trace.name, lambda i: int(line_of()[kept_rows[i]]))
    return Workload(
        jobs=build_frame(cols),
        epoch=header_epoch(header) or 0,
        checksum=trace.checksum,
        source=trace.path,
        format="swf",
        header=header,
        procs_unit="cores",
        skipped_lines=skipped,
        provenance=provenance_pwa(header, trace.name),
        finished_only=True,  # an SWF log records jobs as they end (twinsweep.core.workload)
        warnings=notes,
    )


register_loader("swf", detect_swf, load_swf)
