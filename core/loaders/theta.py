"""``swf-theta``: ALCF Theta job sets converted to an SWF dialect for DRAS training.

Source: ALCF's public Theta job log (reports.alcf.anl.gov), converted by the
``dadyownes15/rl-hpc-scheduler`` project for DRAS comparisons (Fan et al., "DRAS: Deep
Reinforcement Learning for Cluster Scheduling in HPC", IEEE TPDS 2022). See the data folder's
PROVENANCE.md.

Differences from standard SWF:

* 19 fields: the 18 SWF fields plus a synthetic random "carbon consideration index" (ignored).
* Field 2 (submit) is an **absolute** Unix time, not relative to ``UnixStartTime``. The epoch is
  the header's ``UnixStartTime`` (the first submit in the shipped files; the smallest submit
  time when the header has none) and ``submit_time = field2 - epoch``; start/end follow.
* Fields 5 and 8 count **nodes** (``procs_unit = "nodes"``; ``nodes = procs``).
* Status is 1 (exit 0) or 0 (non-zero exit); user/group ids are salted hashes, not comparable
  across files.

Otherwise the standard SWF mapping applies (:func:`core.loaders._swfcore.swf_jobs_frame`).
"""

from __future__ import annotations

import numpy as np

from ..workload import Workload
from ._registry import TraceText, register_loader
from ._swfcore import (
    build_frame, header_epoch, int_col, parse_table, read_swf_header, swf_jobs_frame, swf_ranges,
)
from .swf import _share_with_fields

THETA_FIELDS = 19
PROVENANCE = (
    "ALCF Theta job log (Argonne Leadership Computing Facility, reports.alcf.anl.gov), SWF job sets "
    "prepared for DRAS (Fan et al., IEEE TPDS 2022) by dadyownes15/rl-hpc-scheduler"
)


def detect_theta(trace: TraceText) -> float:
    """Score 2.0 when >= 80 % of the first job lines have 19 fields (the first 18 numeric) and the
    header mentions Theta or DRAS."""
    text = "\n".join(trace.sample_comments).lower()
    if "theta" not in text and "dras" not in text:
        return 0.0
    return 2.0 if _share_with_fields(trace.sample_jobs, THETA_FIELDS, 18) >= 0.8 else 0.0


def load_theta(trace: TraceText, lenient: bool = False) -> Workload:
    """Load an ALCF Theta DRAS job set (19 fields, absolute submit times, node counts).

    Raises TraceFormatError(path, line, detail) on a bad header (a numeric field that is not a
    whole number, out of range or repeated with another value; see
    :func:`core.loaders._swfcore.read_swf_header`) and, unless ``lenient``, on a malformed job line.
    ``UnixStartTime: -1`` (unknown) is treated as absent, with a warning.
    """
    header, notes = read_swf_header(trace, "the smallest submit time is taken as the epoch")
    df, skipped = parse_table(trace, THETA_FIELDS, (), lenient, swf_ranges(absolute_submit=True))
    a = df.to_numpy(dtype=np.float64)[:, :18]
    epoch = header_epoch(header)
    if epoch is None:
        epoch = int(np.rint(a[:, 1].min())) if len(a) else 0
    cols, _ = swf_jobs_frame(a, epoch)
    procs = cols["procs"]
    cols["nodes"] = int_col(procs.to_numpy(dtype=np.float64, na_value=np.nan), ~procs.isna())
    return Workload(
        jobs=build_frame(cols),
        epoch=int(epoch),
        checksum=trace.checksum,
        source=trace.path,
        format="swf-theta",
        header=header,
        procs_unit="nodes",
        skipped_lines=skipped,
        provenance=PROVENANCE,
        finished_only=True,  # an SWF log records jobs as they end (twinsweep.core.workload)
        warnings=notes,
    )


register_loader("swf-theta", detect_theta, load_theta)
